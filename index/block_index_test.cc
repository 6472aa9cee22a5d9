#include "index/block_index.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "core/base/env.h"
#include "core/base/testutil.h"
#include "index/block_mapping_testutil.h"
#include "index/tc_kv_store_testutil.h"

namespace dedupv1 {
namespace {

constexpr uint32_t kBlock = 4096;

Fingerprint Fp(uint64_t id) {
  Fingerprint fp;
  fp.size = 20;
  fp.bytes[0] = 0x5A;
  for (int i = 0; i < 8; i++) fp.bytes[1 + i] = static_cast<uint8_t>(id >> (8 * i));
  return fp;
}

// A mapping whose first half is chunk |chunk| in |container| (the chunk
// offset encodes |tag| so versions are distinguishable) and second half zeros.
BlockMapping Mapping(ContainerId container, uint64_t chunk, uint32_t tag = 0) {
  BlockMapping m(kBlock);
  BlockMappingItem item;
  item.fp = Fp(chunk);
  item.container = container;
  item.chunk_offset = tag;
  item.size = kBlock / 2;
  EXPECT_TRUE(m.Overlay(0, {item}).ok());
  m.set_version(tag);
  return m;
}

// Mapping referencing two containers.
BlockMapping Mapping2(ContainerId c1, ContainerId c2) {
  BlockMapping m = Mapping(c1, 1);
  BlockMappingItem item;
  item.fp = Fp(2);
  item.container = c2;
  item.size = 100;
  EXPECT_TRUE(m.Overlay(kBlock - 100, {item}).ok());
  return m;
}

// Which containers are committed; thread-safe.
class CommitTracker {
 public:
  void Commit(ContainerId c) {
    std::lock_guard<std::mutex> lock(mu_);
    committed_.insert(c);
  }
  bool IsCommitted(ContainerId c) {
    std::lock_guard<std::mutex> lock(mu_);
    return committed_.count(c) > 0;
  }
  std::function<bool(ContainerId)> Fn() {
    return [this](ContainerId c) { return IsCommitted(c); };
  }

 private:
  std::mutex mu_;
  std::set<ContainerId> committed_;
};

// Controls for FaultyKvStore, kept by the test after the store moved into the index.
struct StoreFaults {
  std::mutex mu;
  std::condition_variable cv;
  Status fail_writes;      // returned by Write instead of writing, if not OK
  std::string hide_key;    // Get answers NotFound for this key (a lookup that lost its record)
  bool hold_writes = false;  // Write blocks until this is false again
  int writes_entered = 0;
};

// Wraps a real store and injects Write failures or stalls.
class FaultyKvStore : public KvStore {
 public:
  FaultyKvStore(std::unique_ptr<KvStore> base, std::shared_ptr<StoreFaults> faults)
      : base_(std::move(base)), faults_(std::move(faults)) {}
  Status Get(const std::string& key, std::string* value) override {
    {
      std::lock_guard<std::mutex> lock(faults_->mu);
      if (!faults_->hide_key.empty() && key == faults_->hide_key) return Status::NotFound("hidden by the test");
    }
    return base_->Get(key, value);
  }
  Status Write(const std::vector<WriteOp>& ops) override {
    {
      std::unique_lock<std::mutex> lock(faults_->mu);
      faults_->writes_entered++;
      faults_->cv.notify_all();
      faults_->cv.wait(lock, [&] { return !faults_->hold_writes; });
      if (!faults_->fail_writes.ok()) return faults_->fail_writes;
    }
    return base_->Write(ops);
  }
  Status Scan(const std::string& begin, const std::string& end,
              const std::function<bool(const std::string&, const std::string&)>& f) override {
    return base_->Scan(begin, end, f);
  }
  Status RemoveExactThenWrite(const std::vector<Record>& records, const std::vector<WriteOp>& ops,
                              uint64_t* removed) override {
    return base_->RemoveExactThenWrite(records, ops, removed);
  }
  Status Sync() override { return base_->Sync(); }
  uint64_t Count() override { return base_->Count(); }
  uint64_t SizeBytes() override { return base_->SizeBytes(); }

 private:
  std::unique_ptr<KvStore> base_;
  std::shared_ptr<StoreFaults> faults_;
};

// Polls |cond| for up to 20 s (a bound against hangs, not a speed check).
template <typename Cond>
bool Eventually(Cond cond) {
  for (int i = 0; i < 2000; i++) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

TEST(BlockKeyTest, EncodingOrdersByVolumeThenBlock) {
  std::vector<BlockId> ids = {{0, 0}, {0, 1}, {0, 255}, {0, 256}, {0, (1ull << 40) + 3},
                              {1, 0}, {1, 7}, {256, 0}, {std::numeric_limits<uint32_t>::max(),
                                                         std::numeric_limits<uint64_t>::max()}};
  for (size_t i = 0; i < ids.size(); i++) {
    std::string key = EncodeBlockKey(ids[i]);
    ASSERT_EQ(key.size(), 12u);
    BlockId back;
    ASSERT_TRUE(DecodeBlockKey(key, &back));
    EXPECT_EQ(back, ids[i]);
    if (i > 0) {
      EXPECT_LT(EncodeBlockKey(ids[i - 1]), key) << i;
    }
  }
  BlockId id;
  EXPECT_FALSE(DecodeBlockKey("short", &id));
}

class BlockIndexTest : public ::testing::TestWithParam<KvBackend> {
 protected:
  BlockIndexOptions Options() {
    BlockIndexOptions o;
    o.backend = GetParam();
    o.path = dir_.Sub("block-index");
    o.block_size = kBlock;
    o.aux_soft_limit = 1000;
    o.aux_hard_limit = 2000;
    return o;
  }
  void Open(const BlockIndexOptions& options) {
    index_.reset();
    Status s = BlockIndex::Open(options, Env::Default(), commits_.Fn(), &index_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // Opens on a FaultyKvStore controlled by faults_.
  void OpenFaulty(const BlockIndexOptions& options) {
    index_.reset();
    std::unique_ptr<KvStore> base;
    ASSERT_TRUE(OpenKvStore(options.backend, options.path, Env::Default(), &base).ok());
    std::unique_ptr<KvStore> store(new FaultyKvStore(std::move(base), faults_));
    Status s = BlockIndex::Open(options, std::move(store), commits_.Fn(), &index_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  BlockMapping MustGet(const BlockId& id) {
    BlockMapping m;
    Status s = index_->Get(id, &m);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return m;
  }

  test::TempDir dir_;
  CommitTracker commits_;
  std::shared_ptr<StoreFaults> faults_ = std::make_shared<StoreFaults>();
  std::unique_ptr<BlockIndex> index_;
};

TEST_P(BlockIndexTest, RejectsBadOptionsAndMappings) {
  BlockIndexOptions o = Options();
  o.aux_soft_limit = 10;
  o.aux_hard_limit = 5;
  std::unique_ptr<BlockIndex> index;
  EXPECT_TRUE(BlockIndex::Open(o, Env::Default(), nullptr, &index).IsInvalidArgument());
  o = Options();
  o.block_size = 0;
  EXPECT_TRUE(BlockIndex::Open(o, Env::Default(), nullptr, &index).IsInvalidArgument());
  o = Options();
  o.path = "";
  EXPECT_TRUE(BlockIndex::Open(o, Env::Default(), nullptr, &index).IsInvalidArgument());

  Open(Options());
  EXPECT_TRUE(index_->Put({1, 1}, BlockMapping(kBlock * 2)).IsInvalidArgument());
  EXPECT_TRUE(index_->Put({1, 1}, BlockMapping()).IsInvalidArgument());
}

TEST_P(BlockIndexTest, PutGetFromAux) {
  Open(Options());
  commits_.Commit(5);
  BlockMapping m;
  EXPECT_TRUE(index_->Get({1, 3}, &m).IsNotFound());
  ASSERT_TRUE(index_->Put({1, 3}, Mapping(5, 1, 11)).ok());
  EXPECT_EQ(MustGet({1, 3}), Mapping(5, 1, 11));
  EXPECT_TRUE(index_->Get({2, 3}, &m).IsNotFound());
  BlockIndexStats st = index_->stats();
  EXPECT_EQ(st.aux_mappings, 1u);
  EXPECT_EQ(st.aux_waiting_for_commit, 0u);
  EXPECT_EQ(st.persistent_mappings, 0u);  // nothing written on the request path
  EXPECT_EQ(st.reads, 3u);
  EXPECT_EQ(st.aux_hits, 1u);
  EXPECT_EQ(st.misses, 2u);
}

TEST_P(BlockIndexTest, WaitsForContainerCommitBeforePersisting) {
  Open(Options());
  commits_.Commit(1);
  ASSERT_TRUE(index_->Put({0, 10}, Mapping(7, 1, 1)).ok());  // 7 uncommitted
  ASSERT_TRUE(index_->Put({0, 11}, Mapping(1, 2, 2)).ok());  // committed
  ASSERT_TRUE(index_->Put({0, 12}, Mapping2(1, 8)).ok());    // 8 uncommitted
  ASSERT_TRUE(index_->Flush().ok());
  BlockIndexStats st = index_->stats();
  EXPECT_EQ(st.persistent_mappings, 1u);
  EXPECT_EQ(st.aux_mappings, 2u);
  EXPECT_EQ(st.aux_waiting_for_commit, 2u);
  EXPECT_EQ(MustGet({0, 10}), Mapping(7, 1, 1));  // still readable from aux

  // Committing an unrelated container changes nothing.
  commits_.Commit(9);
  index_->OnContainerCommitted(9);
  commits_.Commit(7);
  index_->OnContainerCommitted(7);
  ASSERT_TRUE(index_->Flush().ok());
  st = index_->stats();
  EXPECT_EQ(st.persistent_mappings, 2u);
  EXPECT_EQ(st.aux_mappings, 1u);
  EXPECT_EQ(st.aux_waiting_for_commit, 1u);

  ASSERT_TRUE(index_->Close().ok());
  // Reopen: block 12 waited for container 8 and is gone from memory (the log
  // replay would restore it); the others are persistent.
  Open(Options());
  EXPECT_EQ(MustGet({0, 10}), Mapping(7, 1, 1));
  EXPECT_EQ(MustGet({0, 11}), Mapping(1, 2, 2));
  BlockMapping m;
  EXPECT_TRUE(index_->Get({0, 12}, &m).IsNotFound());
  EXPECT_EQ(index_->stats().persistent_hits, 2u);
}

TEST_P(BlockIndexTest, NeedsAllContainersCommitted) {
  Open(Options());
  ASSERT_TRUE(index_->Put({0, 1}, Mapping2(3, 4)).ok());
  commits_.Commit(3);
  index_->OnContainerCommitted(3);
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->stats().persistent_mappings, 0u);
  commits_.Commit(4);
  index_->OnContainerCommitted(4);
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->stats().persistent_mappings, 1u);
  EXPECT_EQ(index_->stats().aux_mappings, 0u);
  // All-zero mappings reference nothing and are persistable at once.
  ASSERT_TRUE(index_->Put({0, 2}, BlockMapping(kBlock)).ok());
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->stats().persistent_mappings, 2u);
  EXPECT_TRUE(MustGet({0, 2}).IsAllZero());
}

TEST_P(BlockIndexTest, ReplacedMappingKeepsTheNewest) {
  Open(Options());
  commits_.Commit(1);
  commits_.Commit(2);
  ASSERT_TRUE(index_->Put({0, 5}, Mapping(1, 1, 1)).ok());
  ASSERT_TRUE(index_->Flush().ok());
  ASSERT_TRUE(index_->Put({0, 5}, Mapping(2, 2, 2)).ok());
  EXPECT_EQ(MustGet({0, 5}), Mapping(2, 2, 2));  // aux over the stored version
  // A waiting version replaced by a persistable one: the persistable one is
  // written; committing the old container later resurrects nothing.
  ASSERT_TRUE(index_->Put({0, 6}, Mapping(9, 3, 3)).ok());
  ASSERT_TRUE(index_->Put({0, 6}, Mapping(1, 4, 4)).ok());
  EXPECT_EQ(index_->stats().aux_waiting_for_commit, 0u);
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->stats().aux_mappings, 0u);
  commits_.Commit(9);
  index_->OnContainerCommitted(9);
  // A persistable version replaced by a waiting one: the stored version stays
  // the old one, reads see the new one.
  ASSERT_TRUE(index_->Put({0, 6}, Mapping(10, 5, 5)).ok());
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(MustGet({0, 6}), Mapping(10, 5, 5));
  ASSERT_TRUE(index_->Close().ok());
  Open(Options());
  EXPECT_EQ(MustGet({0, 5}), Mapping(2, 2, 2));
  EXPECT_EQ(MustGet({0, 6}), Mapping(1, 4, 4));
}

// The store must catch up with the committed versions of a block that keeps
// being rewritten: a persistable version that a waiting one replaces is kept
// and written back as the block's stable version. A waiting version replaced
// by another waiting one is gone from memory: OldestUnwrittenVersion keeps
// naming it (a checkpoint must not trim its log event) until a newer version
// is stored.
TEST_P(BlockIndexTest, OldestUnwrittenVersionCoversReplacedVersions) {
  constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
  OpenFaulty(Options());
  commits_.Commit(1);
  EXPECT_EQ(index_->OldestUnwrittenVersion(), kNone);
  ASSERT_TRUE(index_->Put({0, 7}, Mapping(1, 1, 10)).ok());
  EXPECT_EQ(index_->OldestUnwrittenVersion(), 10u);
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->OldestUnwrittenVersion(), kNone);

  ASSERT_TRUE(index_->Put({0, 7}, Mapping(1, 2, 20)).ok());  // persistable
  ASSERT_TRUE(index_->Put({0, 7}, Mapping(9, 3, 30)).ok());  // waits for 9
  EXPECT_EQ(index_->OldestUnwrittenVersion(), 20u);
  EXPECT_EQ(index_->stats().aux_waiting_for_commit, 1u);
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->OldestUnwrittenVersion(), 30u) << "the stable version 20 was written";
  EXPECT_EQ(MustGet({0, 7}), Mapping(9, 3, 30));  // reads see the newest

  // Two waiting versions: the first is replaced before its commit.
  ASSERT_TRUE(index_->Put({0, 8}, Mapping(12, 4, 40)).ok());
  ASSERT_TRUE(index_->Put({0, 8}, Mapping(13, 5, 50)).ok());
  commits_.Commit(12);
  index_->OnContainerCommitted(12);
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->OldestUnwrittenVersion(), 30u);
  commits_.Commit(9);
  index_->OnContainerCommitted(9);
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->OldestUnwrittenVersion(), 40u) << "version 40 is neither stored nor in memory";
  commits_.Commit(13);
  index_->OnContainerCommitted(13);
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->OldestUnwrittenVersion(), kNone);
  EXPECT_EQ(index_->stats().aux_mappings, 0u);

  // Replaced while being written: what was written is stored, the newer
  // version is not.
  ASSERT_TRUE(index_->Put({0, 9}, Mapping(1, 5, 50)).ok());
  int entered = 0;
  {
    std::lock_guard<std::mutex> lock(faults_->mu);
    faults_->hold_writes = true;
    entered = faults_->writes_entered;
  }
  Status flush_status;
  std::thread flusher([&] { flush_status = index_->Flush(); });
  {
    std::unique_lock<std::mutex> lock(faults_->mu);
    faults_->cv.wait(lock, [&] { return faults_->writes_entered > entered; });
  }
  ASSERT_TRUE(index_->Put({0, 9}, Mapping(11, 6, 60)).ok());  // waits for 11
  {
    std::lock_guard<std::mutex> lock(faults_->mu);
    faults_->hold_writes = false;
    faults_->cv.notify_all();
  }
  flusher.join();
  ASSERT_TRUE(flush_status.ok()) << flush_status.ToString();
  EXPECT_GT(index_->OldestUnwrittenVersion(), 50u);
  EXPECT_LE(index_->OldestUnwrittenVersion(), 60u);
  // Block 10's last version never commits: its stable one is stored.
  ASSERT_TRUE(index_->Put({0, 10}, Mapping(1, 7, 70)).ok());
  ASSERT_TRUE(index_->Put({0, 10}, Mapping(99, 8, 80)).ok());
  // Waiting versions are dropped at close (the log restores them); what was
  // stored is the newest committed version of each block.
  ASSERT_TRUE(index_->Close().ok());
  Open(Options());
  EXPECT_EQ(MustGet({0, 7}), Mapping(9, 3, 30));
  EXPECT_EQ(MustGet({0, 8}), Mapping(13, 5, 50));
  EXPECT_EQ(MustGet({0, 9}), Mapping(1, 5, 50));
  EXPECT_EQ(MustGet({0, 10}), Mapping(1, 7, 70));
}

// A Put landing while its older version is being written back keeps the
// newer version in aux (the write-back compares sequence numbers).
TEST_P(BlockIndexTest, ReplacementDuringWriteBackStaysInAux) {
  OpenFaulty(Options());
  commits_.Commit(1);
  ASSERT_TRUE(index_->Put({0, 1}, Mapping(1, 1, 1)).ok());
  {
    std::lock_guard<std::mutex> lock(faults_->mu);
    faults_->hold_writes = true;
  }
  Status flush_status;
  std::thread flusher([&] { flush_status = index_->Flush(); });
  {
    std::unique_lock<std::mutex> lock(faults_->mu);
    faults_->cv.wait(lock, [&] { return faults_->writes_entered == 1; });
  }
  ASSERT_TRUE(index_->Put({0, 1}, Mapping(1, 1, 2)).ok());
  {
    std::lock_guard<std::mutex> lock(faults_->mu);
    faults_->hold_writes = false;
    faults_->cv.notify_all();
  }
  flusher.join();
  ASSERT_TRUE(flush_status.ok()) << flush_status.ToString();
  EXPECT_EQ(index_->stats().aux_mappings, 1u);
  EXPECT_EQ(index_->stats().persistent_mappings, 1u);
  EXPECT_EQ(MustGet({0, 1}), Mapping(1, 1, 2));
  ASSERT_TRUE(index_->Close().ok());
  Open(Options());
  EXPECT_EQ(MustGet({0, 1}), Mapping(1, 1, 2));
}

TEST_P(BlockIndexTest, FailedWriteBackKeepsMappingsInAux) {
  OpenFaulty(Options());
  commits_.Commit(1);
  {
    std::lock_guard<std::mutex> lock(faults_->mu);
    faults_->fail_writes = Status::NoSpace("injected: disk full");
  }
  ASSERT_TRUE(index_->Put({0, 1}, Mapping(1, 1, 1)).ok());
  Status s = index_->Flush();
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  BlockIndexStats st = index_->stats();
  EXPECT_EQ(st.aux_mappings, 1u);
  EXPECT_NE(st.last_error.find("disk full"), std::string::npos) << st.last_error;
  EXPECT_EQ(MustGet({0, 1}), Mapping(1, 1, 1));
  {
    std::lock_guard<std::mutex> lock(faults_->mu);
    faults_->fail_writes = Status::OK();
  }
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->stats().aux_mappings, 0u);
  EXPECT_EQ(MustGet({0, 1}), Mapping(1, 1, 1));
}

TEST_P(BlockIndexTest, PutAtHardLimitFailsWhileWriteBackFails) {
  BlockIndexOptions o = Options();
  o.aux_soft_limit = 2;
  o.aux_hard_limit = 4;
  OpenFaulty(o);
  commits_.Commit(1);
  {
    std::lock_guard<std::mutex> lock(faults_->mu);
    faults_->fail_writes = Status::NoSpace("injected: disk full");
  }
  for (uint64_t b = 0; b < 4; b++) ASSERT_TRUE(index_->Put({0, b}, Mapping(1, b)).ok());
  Status s = index_->Put({0, 4}, Mapping(1, 4));
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  // Replacing a block already in aux does not grow it and still works.
  EXPECT_TRUE(index_->Put({0, 3}, Mapping(1, 33)).ok());
  {
    std::lock_guard<std::mutex> lock(faults_->mu);
    faults_->fail_writes = Status::OK();
  }
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_TRUE(index_->Put({0, 4}, Mapping(1, 4)).ok());
  EXPECT_EQ(MustGet({0, 3}), Mapping(1, 33));
}

TEST_P(BlockIndexTest, HardLimitIgnoredWhenAllWaitForCommits) {
  BlockIndexOptions o = Options();
  o.aux_soft_limit = 2;
  o.aux_hard_limit = 4;
  Open(o);
  for (uint64_t b = 0; b < 20; b++) ASSERT_TRUE(index_->Put({0, b}, Mapping(100 + b, b)).ok());
  EXPECT_EQ(index_->stats().aux_mappings, 20u);
  EXPECT_EQ(index_->stats().aux_waiting_for_commit, 20u);
  for (uint64_t b = 0; b < 20; b++) {
    commits_.Commit(100 + b);
    index_->OnContainerCommitted(100 + b);
  }
  // Above the soft limit: the background thread writes back without a Flush.
  ASSERT_TRUE(Eventually([&] { return index_->stats().aux_mappings <= 2; }));
  EXPECT_GE(index_->stats().persistent_mappings, 18u);
}

// With soft == hard nothing triggers the background thread except a Put
// waiting at the hard limit, so its return after a write-back shows it waited.
TEST_P(BlockIndexTest, PutWaitsAtHardLimitUntilWriteBack) {
  BlockIndexOptions o = Options();
  o.aux_soft_limit = 4;
  o.aux_hard_limit = 4;
  o.write_back_batch = 2;
  Open(o);
  commits_.Commit(1);
  for (uint64_t b = 0; b < 4; b++) ASSERT_TRUE(index_->Put({0, b}, Mapping(1, b)).ok());
  EXPECT_EQ(index_->stats().written_back, 0u);
  ASSERT_TRUE(index_->Put({0, 4}, Mapping(1, 4)).ok());
  EXPECT_GE(index_->stats().written_back, 1u);
  for (uint64_t b = 0; b <= 4; b++) EXPECT_EQ(MustGet({0, b}), Mapping(1, b));
}

TEST_P(BlockIndexTest, BackgroundWriteBackAtSoftLimit) {
  BlockIndexOptions o = Options();
  o.aux_soft_limit = 8;
  o.aux_hard_limit = 1000;
  o.write_back_batch = 4;
  Open(o);
  commits_.Commit(1);
  for (uint64_t b = 0; b < 8; b++) ASSERT_TRUE(index_->Put({0, b}, Mapping(1, b)).ok());
  EXPECT_EQ(index_->stats().written_back, 0u);  // at, not above, the soft limit
  for (uint64_t b = 8; b < 30; b++) ASSERT_TRUE(index_->Put({0, b}, Mapping(1, b)).ok());
  ASSERT_TRUE(Eventually([&] { return index_->stats().aux_mappings <= 8; }));
  BlockIndexStats st = index_->stats();
  EXPECT_GE(st.written_back, 22u);
  EXPECT_GE(st.write_back_batches, 6u);  // batches of at most 4
  EXPECT_EQ(st.persistent_mappings, 30u - st.aux_mappings);
  // Oldest first: the first blocks went to the store.
  for (uint64_t b = 0; b < 30; b++) EXPECT_EQ(MustGet({0, b}), Mapping(1, b));
  EXPECT_GE(index_->stats().persistent_hits, 20u);
}

TEST_P(BlockIndexTest, IdleWritesBackEverything) {
  Open(Options());
  commits_.Commit(1);
  for (uint64_t b = 0; b < 5; b++) ASSERT_TRUE(index_->Put({2, b}, Mapping(1, b)).ok());
  ASSERT_TRUE(index_->Put({2, 9}, Mapping(50, 9)).ok());  // waits for container 50
  index_->SetIdle(true);
  ASSERT_TRUE(Eventually([&] { return index_->stats().aux_mappings == 1; }));
  EXPECT_EQ(index_->stats().persistent_mappings, 5u);
  index_->SetIdle(false);
}

// A flush (what a checkpoint waits for) writes in large transactions, not in
// the background thread's small batches.
TEST_P(BlockIndexTest, FlushWritesInLargeBatches) {
  BlockIndexOptions o = Options();
  o.write_back_batch = 4;
  Open(o);
  commits_.Commit(1);
  for (uint64_t b = 0; b < 40; b++) ASSERT_TRUE(index_->Put({3, b}, Mapping(1, b)).ok());
  const uint64_t before = index_->stats().write_back_batches;
  ASSERT_TRUE(index_->Flush().ok());
  BlockIndexStats st = index_->stats();
  EXPECT_EQ(st.aux_mappings, 0u);
  EXPECT_EQ(st.persistent_mappings, 40u);
  EXPECT_EQ(st.write_back_batches - before, 1u);
}

TEST_P(BlockIndexTest, ForEachBlockMergesAuxOverPersistent) {
  Open(Options());
  commits_.Commit(1);
  const uint32_t last_volume = std::numeric_limits<uint32_t>::max();
  for (uint64_t b : {1, 3, 5, 7}) ASSERT_TRUE(index_->Put({1, b}, Mapping(1, b)).ok());
  ASSERT_TRUE(index_->Put({0, 4}, Mapping(1, 100)).ok());
  ASSERT_TRUE(index_->Put({2, 4}, Mapping(1, 200)).ok());
  ASSERT_TRUE(index_->Put({last_volume, 8}, Mapping(1, 300)).ok());
  ASSERT_TRUE(index_->Flush().ok());
  // Aux: a newer version of 3, new blocks 0, 4 and 9.
  ASSERT_TRUE(index_->Put({1, 3}, Mapping(1, 33)).ok());
  for (uint64_t b : {0, 4, 9}) ASSERT_TRUE(index_->Put({1, b}, Mapping(1, b)).ok());
  ASSERT_TRUE(index_->Put({last_volume, 2}, Mapping(1, 301)).ok());

  std::vector<std::pair<uint64_t, BlockMapping>> seen;
  auto collect = [&](uint64_t block, const BlockMapping& m) {
    seen.emplace_back(block, m);
    return true;
  };
  ASSERT_TRUE(index_->ForEachBlock(1, collect).ok());
  std::vector<std::pair<uint64_t, BlockMapping>> expected = {
      {0, Mapping(1, 0)}, {1, Mapping(1, 1)}, {3, Mapping(1, 33)}, {4, Mapping(1, 4)},
      {5, Mapping(1, 5)}, {7, Mapping(1, 7)}, {9, Mapping(1, 9)}};
  EXPECT_EQ(seen, expected);

  seen.clear();
  ASSERT_TRUE(index_->ForEachBlock(1, [&](uint64_t block, const BlockMapping& m) {
                      seen.emplace_back(block, m);
                      return seen.size() < 3;
                    })
                  .ok());
  EXPECT_EQ(seen.size(), 3u);

  seen.clear();
  ASSERT_TRUE(index_->ForEachBlock(last_volume, collect).ok());
  expected = {{2, Mapping(1, 301)}, {8, Mapping(1, 300)}};
  EXPECT_EQ(seen, expected);
  seen.clear();
  ASSERT_TRUE(index_->ForEachBlock(7, collect).ok());
  EXPECT_TRUE(seen.empty());
}

// Writes |value| under |key| straight into the closed index's store.
void WriteRaw(const BlockIndexOptions& o, const std::vector<std::pair<BlockId, std::string>>& records) {
  std::unique_ptr<KvStore> store;
  ASSERT_TRUE(OpenKvStore(o.backend, o.path, Env::Default(), &store).ok());
  std::vector<KvStore::WriteOp> ops;
  for (const auto& [key, value] : records) {
    KvStore::WriteOp op;
    op.key = EncodeBlockKey(key);
    op.value = value;
    ops.push_back(std::move(op));
  }
  ASSERT_TRUE(store->Write(ops).ok());
}

std::string Serialized(const BlockMapping& m, const BlockId& id) {
  std::string value;
  m.Serialize(id, &value);
  return value;
}

TEST_P(BlockIndexTest, CorruptStoredMappingIsCorruptionNamingTheBlock) {
  BlockIndexOptions o = Options();
  std::string value = Serialized(Mapping(1, 1), BlockId{4, 77});
  value[value.size() / 2] ^= 0x01;
  ASSERT_NO_FATAL_FAILURE(WriteRaw(o, {{{4, 77}, value}, {{4, 78}, Serialized(Mapping(1, 2, 3), BlockId{4, 78})}}));
  Open(o);
  BlockMapping m;
  Status s = index_->Get({4, 77}, &m);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("block 4/77"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(o.path), std::string::npos) << s.ToString();
  // A walk reports the damaged record and goes on to the next one.
  std::vector<uint64_t> seen;
  std::vector<std::string> skipped;
  ASSERT_TRUE(index_->ForEachBlock(
                        4, [&](uint64_t block, const BlockMapping&) { seen.push_back(block); return true; },
                        [&](const std::string& key, const Status& why) {
                          EXPECT_TRUE(why.IsCorruption());
                          skipped.push_back(key);
                        })
                  .ok());
  EXPECT_EQ(seen, std::vector<uint64_t>{78});
  EXPECT_EQ(skipped, std::vector<std::string>{EncodeBlockKey({4, 77})});
  // A new mapping replaces the damaged record.
  commits_.Commit(1);
  ASSERT_TRUE(index_->Put({4, 77}, Mapping(1, 1, 9)).ok());
  ASSERT_TRUE(index_->Flush().ok());
  Open(o);
  EXPECT_EQ(MustGet({4, 77}), Mapping(1, 1, 9));
}

// A record that is not a block key is reported, not fatal: the rest of the
// store is served.
TEST_P(BlockIndexTest, ForeignKeyIsReportedAndTheRestServed) {
  BlockIndexOptions o = Options();
  {
    std::unique_ptr<KvStore> store;
    ASSERT_TRUE(OpenKvStore(o.backend, o.path, Env::Default(), &store).ok());
    KvStore::WriteOp op;
    op.key = "not-a-block";
    op.value = "x";
    ASSERT_TRUE(store->Write({op}).ok());
  }
  ASSERT_NO_FATAL_FAILURE(WriteRaw(o, {{{1, 1}, Serialized(Mapping(1, 1, 4), BlockId{1, 1})}}));
  Open(o);
  EXPECT_EQ(MustGet({1, 1}), Mapping(1, 1, 4));
  BlockStoreScan scan;
  ASSERT_TRUE(index_->VerifyStore(&scan).ok());
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_EQ(scan.problems[0].kind, BlockStoreProblem::Kind::kMalformedKey);
  EXPECT_EQ(scan.problems[0].key, "not-a-block");
  EXPECT_NE(DescribeBlockStoreProblem(scan.problems[0]).find("is not a block key"), std::string::npos);
}

// The defect: block 1/100's record ends up under key 1/356 (a
// flipped key byte). Before the record carried its id, block 100 read as
// never written (zeros) and block 356 returned block 100's data.
TEST_P(BlockIndexTest, RecordUnderAnotherBlocksKeyIsRefusedAndRepaired) {
  BlockIndexOptions o = Options();
  const BlockMapping m100 = Mapping(1, 100, 7);
  ASSERT_NO_FATAL_FAILURE(WriteRaw(o, {{{1, 99}, Serialized(Mapping(1, 99, 5), BlockId{1, 99})},
                                       {{1, 356}, Serialized(m100, BlockId{1, 100})},
                                       {{1, 101}, Serialized(Mapping(1, 101, 6), BlockId{1, 101})}}));
  Open(o);
  BlockMapping m;
  Status s = index_->Get({1, 100}, &m);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("block 1/100"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("1/356"), std::string::npos) << s.ToString();
  s = index_->Get({1, 356}, &m);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("holds the record of block 1/100"), std::string::npos) << s.ToString();
  EXPECT_EQ(MustGet({1, 99}), Mapping(1, 99, 5));
  EXPECT_EQ(MustGet({1, 101}), Mapping(1, 101, 6));
  EXPECT_EQ(index_->stats().damaged_blocks, 2u);

  BlockStoreScan scan;
  ASSERT_TRUE(index_->VerifyStore(&scan).ok());
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_EQ(scan.problems[0].kind, BlockStoreProblem::Kind::kDisplaced);
  EXPECT_EQ(scan.problems[0].block, (BlockId{1, 356}));
  EXPECT_EQ(scan.problems[0].owner, (BlockId{1, 100}));
  ASSERT_EQ(scan.blocks.size(), 2u);
  EXPECT_TRUE(scan.blocks.at({1, 100}).displaced);
  EXPECT_TRUE(scan.blocks.at({1, 356}).ambiguous_key);

  std::vector<BlockId> repaired;
  BlockStoreScan after;
  ASSERT_TRUE(index_->RepairStore(&repaired, &after).ok());
  EXPECT_EQ(repaired.size(), 2u);
  EXPECT_TRUE(after.problems.empty());
  EXPECT_EQ(MustGet({1, 100}), m100);
  EXPECT_TRUE(index_->Get({1, 356}, &m).IsNotFound());  // it was never written
  EXPECT_EQ(index_->stats().damaged_blocks, 0u);
  Open(o);
  EXPECT_EQ(MustGet({1, 100}), m100);
  EXPECT_TRUE(index_->Get({1, 356}, &m).IsNotFound());
  EXPECT_EQ(index_->stats().persistent_mappings, 3u);
}

// A displaced record older than the block's own record is only a stray:
// the block is served from its own record, the repair drops the stray.
TEST_P(BlockIndexTest, StaleDisplacedRecordDoesNotHideTheNewerOwnRecord) {
  BlockIndexOptions o = Options();
  ASSERT_NO_FATAL_FAILURE(WriteRaw(o, {{{1, 100}, Serialized(Mapping(1, 100, 9), BlockId{1, 100})},
                                       {{1, 356}, Serialized(Mapping(1, 100, 7), BlockId{1, 100})}}));
  Open(o);
  EXPECT_EQ(MustGet({1, 100}), Mapping(1, 100, 9));
  BlockMapping m;
  EXPECT_TRUE(index_->Get({1, 356}, &m).IsCorruption());
  std::vector<BlockId> repaired;
  BlockStoreScan after;
  ASSERT_TRUE(index_->RepairStore(&repaired, &after).ok());
  EXPECT_TRUE(after.problems.empty());
  EXPECT_EQ(MustGet({1, 100}), Mapping(1, 100, 9));
  EXPECT_TRUE(index_->Get({1, 356}, &m).IsNotFound());
}

// A new mapping of the block whose record was displaced replaces it (the
// new data is right); after a reopen its own record is the newest.
TEST_P(BlockIndexTest, NewMappingReplacesADisplacedRecord) {
  BlockIndexOptions o = Options();
  ASSERT_NO_FATAL_FAILURE(WriteRaw(o, {{{1, 356}, Serialized(Mapping(1, 100, 7), BlockId{1, 100})}}));
  Open(o);
  commits_.Commit(2);
  ASSERT_TRUE(index_->Put({1, 100}, Mapping(2, 100, 8)).ok());
  EXPECT_EQ(MustGet({1, 100}), Mapping(2, 100, 8));
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->stats().aux_mappings, 0u);
  EXPECT_EQ(MustGet({1, 100}), Mapping(2, 100, 8));
  Open(o);
  EXPECT_EQ(MustGet({1, 100}), Mapping(2, 100, 8));
  BlockMapping m;
  EXPECT_TRUE(index_->Get({1, 356}, &m).IsCorruption());  // still holds the stray
}

// A mapping of a block whose key holds another block's record is served from
// memory but never written there (an update could replace the other
// block's only copy): it is held, and its version keeps the log, until the
// repair puts the store right.
TEST_P(BlockIndexTest, MappingUnderAnAmbiguousKeyIsHeldUntilTheRepair) {
  BlockIndexOptions o = Options();
  ASSERT_NO_FATAL_FAILURE(WriteRaw(o, {{{1, 356}, Serialized(Mapping(1, 100, 7), BlockId{1, 100})}}));
  Open(o);
  commits_.Commit(2);
  ASSERT_TRUE(index_->Put({1, 356}, Mapping(2, 356, 20)).ok());
  ASSERT_TRUE(index_->Flush().ok());
  BlockIndexStats st = index_->stats();
  EXPECT_EQ(st.aux_mappings, 1u);
  EXPECT_EQ(st.aux_held, 1u);
  EXPECT_EQ(st.aux_waiting_for_commit, 0u);
  EXPECT_EQ(index_->OldestUnwrittenVersion(), 20u);
  EXPECT_EQ(MustGet({1, 356}), Mapping(2, 356, 20));
  std::vector<BlockId> repaired;
  BlockStoreScan after;
  ASSERT_TRUE(index_->RepairStore(&repaired, &after).ok());
  EXPECT_EQ(index_->stats().aux_held, 0u);
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->stats().aux_mappings, 0u);
  Open(o);
  EXPECT_EQ(MustGet({1, 356}), Mapping(2, 356, 20));
  EXPECT_EQ(MustGet({1, 100}), Mapping(1, 100, 7));
  BlockStoreScan scan;
  ASSERT_TRUE(index_->VerifyStore(&scan).ok());
  EXPECT_TRUE(scan.problems.empty());
}

// A block the store lists whose lookup finds nothing (e.g. a damaged inner
// page sends the lookup astray) is Corruption, not a never-written block.
TEST_P(BlockIndexTest, ListedBlockWhoseLookupFindsNothingIsCorruption) {
  BlockIndexOptions o = Options();
  ASSERT_NO_FATAL_FAILURE(WriteRaw(o, {{{1, 5}, Serialized(Mapping(1, 5, 2), BlockId{1, 5})}}));
  faults_->hide_key = EncodeBlockKey({1, 5});
  OpenFaulty(o);
  BlockMapping m;
  Status s = index_->Get({1, 5}, &m);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("a lookup does not find it"), std::string::npos) << s.ToString();
  EXPECT_TRUE(index_->Get({1, 6}, &m).IsNotFound());
}

// Records of older builds (format 1, no block id) are read, and rewritten in
// format 2 at Open when the engine asks for it.
TEST_P(BlockIndexTest, OldFormatRecordsAreReadAndUpgradedAtOpen) {
  BlockIndexOptions o = Options();
  std::vector<std::pair<BlockId, std::string>> records;
  for (uint64_t b = 0; b < 50; b++) {
    records.push_back({BlockId{1, b}, test::SerializeFormatOne(Mapping(1, b, static_cast<uint32_t>(b)))});
  }
  ASSERT_NO_FATAL_FAILURE(WriteRaw(o, records));
  Open(o);  // upgrade_old_records off: an inspecting tool
  EXPECT_EQ(index_->stats().old_format_records, 50u);
  EXPECT_EQ(index_->stats().upgraded_at_open, 0u);
  for (uint64_t b = 0; b < 50; b++) EXPECT_EQ(MustGet({1, b}), Mapping(1, b, static_cast<uint32_t>(b)));
  o.upgrade_old_records = true;
  Open(o);
  EXPECT_EQ(index_->stats().upgraded_at_open, 50u);
  EXPECT_EQ(index_->stats().old_format_records, 0u);
  for (uint64_t b = 0; b < 50; b++) EXPECT_EQ(MustGet({1, b}), Mapping(1, b, static_cast<uint32_t>(b)));
  index_.reset();
  std::unique_ptr<KvStore> store;
  ASSERT_TRUE(OpenKvStore(o.backend, o.path, Env::Default(), &store).ok());
  size_t n = 0;
  ASSERT_TRUE(store
                  ->Scan("", "",
                         [&](const std::string& key, const std::string& value) {
                           BlockId id;
                           BlockMapping::RecordHeader h;
                           EXPECT_TRUE(DecodeBlockKey(key, &id));
                           EXPECT_TRUE(BlockMapping::ParseHeader(value, &h).ok());
                           EXPECT_TRUE(h.has_owner);
                           EXPECT_EQ(h.owner, id);
                           n++;
                           return true;
                         })
                  .ok());
  EXPECT_EQ(n, 50u);
}

// A store with a damaged key keeps its old records until it is repaired: an
// update under a damaged key could replace the wrong record.
TEST_P(BlockIndexTest, DamagedStoreIsNotUpgraded) {
  BlockIndexOptions o = Options();
  o.upgrade_old_records = true;
  ASSERT_NO_FATAL_FAILURE(WriteRaw(o, {{{1, 1}, test::SerializeFormatOne(Mapping(1, 1, 1))},
                                       {{1, 356}, Serialized(Mapping(1, 100, 7), BlockId{1, 100})}}));
  Open(o);
  EXPECT_EQ(index_->stats().upgraded_at_open, 0u);
  EXPECT_EQ(index_->stats().old_format_records, 1u);
  EXPECT_EQ(MustGet({1, 1}), Mapping(1, 1, 1));
}

// Never-written blocks are answered from the written-blocks bitmap, which is
// rebuilt from the store at Open: persisted mappings stay visible after a
// reopen and only blocks without a mapping skip the store.
TEST_P(BlockIndexTest, FreshBlocksSkipTheStoreAndReopenKnowsWrittenOnes) {
  commits_.Commit(5);
  Open(Options());
  ASSERT_TRUE(index_->Put({1, 3}, Mapping(5, 1, 11)).ok());
  ASSERT_TRUE(index_->Put({2, 40000}, Mapping(5, 2, 12)).ok());
  ASSERT_TRUE(index_->Flush().ok());
  Open(Options());
  BlockIndexStats before = index_->stats();
  EXPECT_EQ(before.aux_mappings, 0u);
  EXPECT_GT(before.written_bitmap_bytes, 0u);
  EXPECT_EQ(MustGet({1, 3}), Mapping(5, 1, 11));
  EXPECT_EQ(MustGet({2, 40000}), Mapping(5, 2, 12));
  BlockMapping m;
  EXPECT_TRUE(index_->Get({1, 4}, &m).IsNotFound());
  EXPECT_TRUE(index_->Get({2, 3}, &m).IsNotFound());
  BlockIndexStats st = index_->stats();
  EXPECT_EQ(st.persistent_hits, 2u);
  EXPECT_EQ(st.misses, 2u);
  EXPECT_EQ(st.fresh_misses, 2u);
}

TEST_P(BlockIndexTest, ClosedIndexRefusesCalls) {
  Open(Options());
  commits_.Commit(1);
  ASSERT_TRUE(index_->Put({0, 1}, Mapping(1, 1)).ok());
  ASSERT_TRUE(index_->Close().ok());
  EXPECT_TRUE(index_->Close().ok());
  BlockMapping m;
  EXPECT_TRUE(index_->Put({0, 2}, Mapping(1, 2)).IsAborted());
  EXPECT_TRUE(index_->Get({0, 1}, &m).IsAborted());
  EXPECT_TRUE(index_->Flush().IsAborted());
  EXPECT_EQ(index_->stats().persistent_mappings, 1u);
}

// Several threads put and get; each owns some blocks (and must read its own
// latest version back) and reads the others' blocks (any version is fine).
// Container commits run concurrently. Small limits force concurrent
// write-backs.
TEST_P(BlockIndexTest, ConcurrentPutGetAndCommits) {
  BlockIndexOptions o = Options();
  o.aux_soft_limit = 16;
  o.aux_hard_limit = 48;
  o.write_back_batch = 8;
  Open(o);
  const int kThreads = 4;
  const uint64_t kBlocksPerThread = 20;
  const int kOps = static_cast<int>(test::EnvKnob("DEDUPV1_TEST_OPS", 1500));
  const ContainerId kContainers = 200;
  std::atomic<bool> failed{false};
  std::vector<std::vector<uint32_t>> last_tag(kThreads,
                                               std::vector<uint32_t>(kBlocksPerThread, 0));
  std::thread committer([&] {
    for (ContainerId c = 1; c <= kContainers; c++) {
      commits_.Commit(c);
      index_->OnContainerCommitted(c);
      if (c % 10 == 0) std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 1; i <= kOps && !failed; i++) {
        uint64_t b = rng() % kBlocksPerThread;
        BlockId id{0, t * kBlocksPerThread + b};
        if (rng() % 2 == 0) {
          ContainerId c = 1 + rng() % kContainers;
          if (!index_->Put(id, Mapping(c, id.block, static_cast<uint32_t>(i))).ok()) failed = true;
          last_tag[t][b] = static_cast<uint32_t>(i);
        } else {
          BlockMapping m;
          Status s = index_->Get(id, &m);
          if (last_tag[t][b] == 0) {
            if (!s.IsNotFound()) failed = true;
          } else if (!s.ok() || m.version() != last_tag[t][b]) {
            failed = true;
          }
          // Someone else's block: any version or NotFound.
          BlockId other{0, rng() % (kThreads * kBlocksPerThread)};
          s = index_->Get(other, &m);
          if (!s.ok() && !s.IsNotFound()) failed = true;
          if (s.ok() && (!m.CheckInvariants().ok() || m.items()[0].fp != Fp(other.block))) {
            failed = true;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  committer.join();
  ASSERT_FALSE(failed);
  // Every container is committed now, so a Flush empties the aux index.
  ASSERT_TRUE(index_->Flush().ok());
  EXPECT_EQ(index_->stats().aux_mappings, 0u);
  EXPECT_GT(index_->stats().written_back, 0u);
  ASSERT_TRUE(index_->Close().ok());
  Open(o);
  for (int t = 0; t < kThreads; t++) {
    for (uint64_t b = 0; b < kBlocksPerThread; b++) {
      BlockMapping m;
      Status s = index_->Get({0, t * kBlocksPerThread + b}, &m);
      if (last_tag[t][b] == 0) {
        EXPECT_TRUE(s.IsNotFound());
      } else {
        ASSERT_TRUE(s.ok()) << s.ToString();
        EXPECT_EQ(m.version(), last_tag[t][b]);
      }
    }
  }
}

// A Tokyo Cabinet block index in |dir|.
BlockIndexOptions TcOptions(const test::TempDir& dir) {
  BlockIndexOptions o;
  o.backend = KvBackend::kTokyoCabinet;
  o.path = dir.Sub("block-index.tcb");
  o.block_size = kBlock;
  return o;
}

// Stores blocks 0..n-1 of volume 1 (block b: Mapping(1, b, b + 1); every
// container counts as committed), closes, and reads the file into |bytes|.
// Writes n blocks and returns the store file's bytes. |page_checksums|
// false: the store as a build before Tokyo Cabinet page checksums left it,
// whose damaged pages TC reads as they are (stores in the field).
void WriteBlocks(const BlockIndexOptions& o, uint64_t n, std::string* bytes, bool page_checksums = false) {
  std::unique_ptr<BlockIndex> index;
  ASSERT_TRUE(BlockIndex::Open(o, Env::Default(), nullptr, &index).ok());
  for (uint64_t b = 0; b < n; b++) {
    ASSERT_TRUE(index->Put({1, b}, Mapping(1, b, static_cast<uint32_t>(b + 1))).ok());
  }
  ASSERT_TRUE(index->Close().ok());
  if (!page_checksums) ASSERT_TRUE(test::RewriteTcStoreWithoutPageChecksums(Env::Default(), o.path).ok());
  ASSERT_TRUE(ReadFileToString(Env::Default(), o.path, bytes).ok());
}

// A store this build created checksums its pages: the same key flips as
// below refuse the open, naming the file, before any record is trusted.
TEST(BlockIndexDamageTest, FlippedKeyBitInAStoreWithPageChecksumsRefusesTheOpen) {
  test::TempDir dir;
  const BlockIndexOptions o = TcOptions(dir);
  std::string bytes;
  ASSERT_NO_FATAL_FAILURE(WriteBlocks(o, 300, &bytes, /*page_checksums=*/true));
  const std::string key = EncodeBlockKey({1, 100});
  const std::string record_start = Serialized(BlockMapping(kBlock), BlockId{1, 100}).substr(0, 13);
  const size_t at = bytes.find(key + record_start);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 11] = static_cast<char>(bytes[at + 11] ^ 1);
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), o.path, bytes).ok());
  std::unique_ptr<BlockIndex> index;
  Status s = BlockIndex::Open(o, Env::Default(), nullptr, &index);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(o.path), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("checksum"), std::string::npos) << s.ToString();
}

// The reproduction at the store level: one bit of a key flipped in
// the Tokyo Cabinet file itself (keys are stored raw in the leaf pages). A
// flip to a neighbour's key leaves two records under one key, where a lookup
// and an update may hit either; a flip to a far key leaves a key out of
// order. Every block then reads its own data or Corruption, never another
// block's data and never zeros; the repair restores every block.
TEST(BlockIndexDamageTest, FlippedKeyBitInATokyoCabinetFileIsFoundAndRepaired) {
  struct Flip {
    uint64_t block;
    int byte;      // of the 12-byte key
    uint8_t mask;
  };
  // 100 -> 101 (a key that exists, stray first), 101 -> 100 (stray after
  // the own record), 100 -> 356 (out of order), 100 -> 36, volume 1 -> 0.
  for (const Flip& flip : {Flip{100, 11, 1}, Flip{101, 11, 1}, Flip{100, 10, 1}, Flip{100, 11, 64}, Flip{100, 3, 1}}) {
    SCOPED_TRACE("block " + std::to_string(flip.block) + " byte " + std::to_string(flip.byte) + " mask " +
                 std::to_string(flip.mask));
    test::TempDir dir;
    const BlockIndexOptions o = TcOptions(dir);
    constexpr uint64_t kBlocks = 300;
    std::string bytes;
    ASSERT_NO_FATAL_FAILURE(WriteBlocks(o, kBlocks, &bytes));
    // The key in its leaf: followed by the record, which starts with the
    // format byte and the block's id (inner pages hold keys alone).
    const std::string key = EncodeBlockKey({1, flip.block});
    const std::string record_start = Serialized(BlockMapping(kBlock), BlockId{1, flip.block}).substr(0, 13);
    const size_t at = bytes.find(key + record_start);
    ASSERT_NE(at, std::string::npos);
    ASSERT_EQ(bytes.find(key + record_start, at + 1), std::string::npos);
    bytes[at + flip.byte] = static_cast<char>(bytes[at + flip.byte] ^ flip.mask);
    ASSERT_TRUE(WriteFileAtomically(Env::Default(), o.path, bytes).ok());
    BlockId flipped;
    ASSERT_TRUE(DecodeBlockKey(bytes.substr(at, 12), &flipped));

    std::unique_ptr<BlockIndex> index;
    ASSERT_TRUE(BlockIndex::Open(o, Env::Default(), nullptr, &index).ok());
    for (uint64_t b = 0; b < kBlocks; b++) {
      BlockMapping m;
      Status s = index->Get({1, b}, &m);
      if (b == flip.block || BlockId{1, b} == flipped) {
        EXPECT_TRUE(s.IsCorruption()) << b << ": " << s.ToString();
      } else {
        ASSERT_TRUE(s.ok()) << b << ": " << s.ToString();
        EXPECT_EQ(m, Mapping(1, b, static_cast<uint32_t>(b + 1))) << b;
      }
    }
    BlockMapping m;
    Status s = index->Get(flipped, &m);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();  // never block 100's data
    BlockStoreScan scan;
    ASSERT_TRUE(index->VerifyStore(&scan).ok());
    ASSERT_FALSE(scan.problems.empty());
    EXPECT_EQ(scan.problems[0].kind, BlockStoreProblem::Kind::kDisplaced);
    EXPECT_EQ(scan.problems[0].owner, (BlockId{1, flip.block}));

    // A write to the block under the damaged key before the repair: held
    // in memory, because writing it back could replace the displaced
    // record, block 100's only copy (TC's update finds the stray first
    // when it sorts after the block's own record).
    const BlockMapping rewritten = Mapping(1, 5000, 777);
    ASSERT_TRUE(index->Put(flipped, rewritten).ok());
    ASSERT_TRUE(index->Flush().ok());
    EXPECT_EQ(index->stats().aux_held, 1u);

    std::vector<BlockId> repaired;
    BlockStoreScan after;
    ASSERT_TRUE(index->RepairStore(&repaired, &after).ok());
    EXPECT_TRUE(after.problems.empty()) << DescribeBlockStoreProblem(after.problems[0]);
    ASSERT_TRUE(index->Flush().ok());
    EXPECT_EQ(index->stats().aux_mappings, 0u);
    for (int round = 0; round < 2; round++) {
      for (uint64_t b = 0; b < kBlocks; b++) {
        Status g = index->Get({1, b}, &m);
        ASSERT_TRUE(g.ok()) << b << ": " << g.ToString();
        EXPECT_EQ(m, (BlockId{1, b} == flipped ? rewritten : Mapping(1, b, static_cast<uint32_t>(b + 1)))) << b;
      }
      ASSERT_TRUE(index->Get(flipped, &m).ok());
      EXPECT_EQ(m, rewritten);
      const uint64_t extra = flipped.volume != 1 || flipped.block >= kBlocks ? 1 : 0;
      EXPECT_EQ(index->stats().persistent_mappings, kBlocks + extra);
      index.reset();
      ASSERT_TRUE(BlockIndex::Open(o, Env::Default(), nullptr, &index).ok());  // and after a reopen
    }
  }
}

// A flipped bit in an inner page's separator key sends some lookups to the
// wrong leaf. The scan of the leaves still lists every block, so a lookup
// that finds nothing is Corruption, never a never-written block (zeros).
TEST(BlockIndexDamageTest, FlippedSeparatorKeyNeverReadsAsZeros) {
  test::TempDir dir;
  const BlockIndexOptions o = TcOptions(dir);
  constexpr uint64_t kBlocks = 2000;
  std::string original;
  ASSERT_NO_FATAL_FAILURE(WriteBlocks(o, kBlocks, &original));
  // Keys not followed by their record are separators of inner pages. Every
  // key of the test shares its first 10 bytes (volume 1, block < 2^16).
  std::vector<size_t> separators;
  const std::string prefix = EncodeBlockKey({1, 0}).substr(0, 10);
  for (size_t at = original.find(prefix); at != std::string::npos && at + 12 <= original.size();
       at = original.find(prefix, at + 1)) {
    BlockId id;
    if (!DecodeBlockKey(original.substr(at, 12), &id) || id.block >= kBlocks) continue;
    const std::string record_start = Serialized(BlockMapping(kBlock), id).substr(0, 13);
    if (original.compare(at + 12, 13, record_start) != 0) separators.push_back(at);
  }
  ASSERT_FALSE(separators.empty());
  // (The file also holds stale copies of rewritten pages; a sample of the
  // candidates suffices.)
  uint64_t refused = 0;
  const size_t step = std::max<size_t>(1, separators.size() / 8);
  for (size_t i = 0; i < separators.size(); i += step) {
    const size_t at = separators[i];
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}}) {
      std::string bytes = original;
      bytes[at + 10] = static_cast<char>(bytes[at + 10] ^ mask);
      ASSERT_TRUE(WriteFileAtomically(Env::Default(), o.path, bytes).ok());
      std::unique_ptr<BlockIndex> index;
      ASSERT_TRUE(BlockIndex::Open(o, Env::Default(), nullptr, &index).ok());
      for (uint64_t b = 0; b < kBlocks; b++) {
        BlockMapping m;
        Status s = index->Get({1, b}, &m);
        if (s.ok()) {
          ASSERT_EQ(m, Mapping(1, b, static_cast<uint32_t>(b + 1))) << b;
        } else {
          ASSERT_TRUE(s.IsCorruption()) << b << ": " << s.ToString();
          refused++;
        }
      }
    }
  }
  std::printf("%zu flips: %llu reads refused, none wrong\n", 2 * ((separators.size() + step - 1) / step),
              static_cast<unsigned long long>(refused));
}

INSTANTIATE_TEST_SUITE_P(Backends, BlockIndexTest,
                         ::testing::Values(KvBackend::kTokyoCabinet, KvBackend::kLevelDb),
                         [](const ::testing::TestParamInfo<KvBackend>& info) {
                           return std::string(KvBackendName(info.param));
                         });

}  // namespace
}  // namespace dedupv1

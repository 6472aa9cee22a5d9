#include "core/engine/usage_counter.h"

#include <gtest/gtest.h>

#include "core/base/testutil.h"
#include "index/block_mapping.h"
#include "log/log_event.h"

namespace dedupv1 {
namespace {

constexpr uint32_t kBlockSize = 4096;

// A log, a chunk store with two committed chunks and a chunk index holding them.
class UsageCounterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OpenAll();
    for (uint64_t seed : {1, 2}) {
      std::vector<uint8_t> data = test::RandomBytes(1000, seed);
      Fingerprint fp;
      ComputeFingerprint(FingerprintType::kSha1, data.data(), data.size(), &fp);
      ContainerId id;
      ASSERT_TRUE(store_->StoreChunk(fp, data.data(), data.size(), 0, &id).ok());
      fps_.push_back(fp);
      containers_.push_back(id);
    }
    ASSERT_TRUE(store_->Flush().ok());
    for (size_t i = 0; i < fps_.size(); i++) ASSERT_TRUE(index_->PutNew(fps_[i], containers_[i]).ok());
  }

  void OpenAll() {
    ChunkStoreOptions so;
    so.dir = dir_.Sub("containers");
    ASSERT_TRUE(ChunkStore::Open(so, Env::Default(), &store_).ok());
    ChunkIndexOptions io;
    io.table.path = dir_.Sub("chunk-index");
    io.table.size_bytes = 1 << 20;
    ChunkStore* store = store_.get();
    ASSERT_TRUE(ChunkIndex::Open(io, Env::Default(), [store](ContainerId id) { return store->IsCommitted(id); },
                                 &index_)
                    .ok());
    OperationsLogOptions lo;
    lo.path = dir_.Sub("log");
    lo.size_bytes = 4 << 20;
    ASSERT_TRUE(OperationsLog::Open(lo, Env::Default(), &log_).ok());
  }

  // "Crash": everything is reopened; the log is not trimmed.
  void Reopen() {
    ASSERT_TRUE(index_->Flush().ok());
    ASSERT_TRUE(log_->Sync().ok());
    index_.reset();
    log_.reset();
    store_.reset();
    OpenAll();
  }

  // The serialized mapping of volume 1's |block| made of |chunks|.
  std::string Mapping(uint64_t block, const std::vector<std::pair<Fingerprint, ContainerId>>& chunks) {
    BlockMapping m(kBlockSize);
    std::vector<BlockMappingItem> items;
    for (const auto& [fp, c] : chunks) items.push_back({fp, c, 0, 1000});
    EXPECT_TRUE(m.Overlay(0, items).ok());
    std::string s;
    m.Serialize(BlockId{1, block}, &s);
    return s;
  }

  uint64_t Log(uint64_t block, const std::string& old_mapping, const std::string& new_mapping) {
    BlockMappingWrittenData d;
    d.block = BlockId{1, block};
    d.old_mapping = old_mapping;
    d.new_mapping = new_mapping;
    uint64_t id;
    EXPECT_TRUE(log_->Append(LogEventType::kBlockMappingWritten, d.Encode(), &id).ok());
    return id;
  }

  uint32_t Usage(size_t i) {
    ChunkIndexEntry e;
    EXPECT_TRUE(index_->Lookup(fps_[i], &e).ok());
    return e.usage_count;
  }

  test::TempDir dir_;
  std::unique_ptr<ChunkStore> store_;
  std::unique_ptr<ChunkIndex> index_;
  std::unique_ptr<OperationsLog> log_;
  std::vector<Fingerprint> fps_;
  std::vector<ContainerId> containers_;
};

TEST_F(UsageCounterTest, CountsOncePerBlockAndEventEvenWhenReplayedAfterACrash) {
  const auto x = std::make_pair(fps_[0], containers_[0]);
  const auto y = std::make_pair(fps_[1], containers_[1]);
  Log(1, "", Mapping(1, {x}));
  Log(2, "", Mapping(2, {x, y, x}));  // x twice in one block: counts once
  Log(1, Mapping(1, {x}), Mapping(1, {y}));
  Log(3, "", Mapping(3, {y}));
  ASSERT_TRUE(log_->Sync().ok());
  const uint64_t head = log_->head_id();
  {
    UsageCounter counter(log_.get(), index_.get(), store_.get(), head);
    ASSERT_TRUE(counter.CountUpTo(log_->last_id()).ok());
    EXPECT_EQ(Usage(0), 1u);  // block 2
    EXPECT_EQ(Usage(1), 3u);  // blocks 1, 2, 3
    EXPECT_EQ(counter.stats().events_counted, 4u);
    // Counting up to the same id again does nothing.
    ASSERT_TRUE(counter.CountUpTo(log_->last_id()).ok());
    EXPECT_EQ(Usage(1), 3u);
  }
  // A crash after the chunk index was written back but before the log was
  // trimmed: the next start counts the same events again.
  Reopen();
  UsageCounter counter(log_.get(), index_.get(), store_.get(), head);
  ASSERT_TRUE(counter.CountUpTo(log_->last_id()).ok());
  EXPECT_EQ(Usage(0), 1u);
  EXPECT_EQ(Usage(1), 3u);
  EXPECT_GT(counter.stats().changes_skipped, 0u);
  // Nothing is at 0 yet; unmapping block 2 makes x a candidate.
  EXPECT_EQ(counter.TakeCandidates().size(), 0u);
  Log(2, Mapping(2, {x, y, x}), Mapping(2, {}));
  ASSERT_TRUE(log_->Sync().ok());
  ASSERT_TRUE(counter.CountUpTo(log_->last_id()).ok());
  EXPECT_EQ(Usage(0), 0u);
  EXPECT_EQ(Usage(1), 2u);
  EXPECT_EQ(counter.TakeCandidates(), std::vector<Fingerprint>{fps_[0]});
}

// A mapping that lets go of a copy the chunk's entry does not name (a spare
// copy: stored again by rewriting or two writers) queues that copy's
// container for GC, though the chunk's usage stays above 0; letting go of the
// entry's own copy queues nothing (candidates cover it). A block moving from
// one copy to another of the same chunk queues the copy it left.
TEST_F(UsageCounterTest, ReleasedSpareCopiesAreQueuedForGc) {
  const std::vector<uint8_t> data = test::RandomBytes(1000, 1);  // fps_[0]'s bytes
  ContainerId spare;
  ASSERT_TRUE(store_->StoreChunk(fps_[0], data.data(), data.size(), 0, &spare).ok());
  ASSERT_TRUE(store_->Flush().ok());
  ASSERT_NE(spare, containers_[0]);
  const auto x = std::make_pair(fps_[0], containers_[0]);  // the entry's copy
  const auto x2 = std::make_pair(fps_[0], spare);          // a spare copy
  const auto y = std::make_pair(fps_[1], containers_[1]);
  Log(1, "", Mapping(1, {x2}));
  Log(2, "", Mapping(2, {x}));
  Log(3, "", Mapping(3, {y}));
  ASSERT_TRUE(log_->Sync().ok());
  UsageCounter counter(log_.get(), index_.get(), store_.get(), log_->head_id());
  ASSERT_TRUE(counter.CountUpTo(log_->last_id()).ok());
  EXPECT_EQ(Usage(0), 2u);
  EXPECT_EQ(counter.released_count(), 0u);
  // Block 1 lets go of the spare copy: x keeps usage 1 through block 2.
  Log(1, Mapping(1, {x2}), Mapping(1, {}));
  // Block 3 lets go of y's only copy, the entry's own: a candidate, not released.
  Log(3, Mapping(3, {y}), Mapping(3, {}));
  ASSERT_TRUE(log_->Sync().ok());
  ASSERT_TRUE(counter.CountUpTo(log_->last_id()).ok());
  EXPECT_EQ(Usage(0), 1u);
  EXPECT_EQ(counter.TakeReleasedCopies(), std::vector<ContainerId>{spare});
  EXPECT_EQ(counter.TakeCandidates(), std::vector<Fingerprint>{fps_[1]});
  EXPECT_EQ(counter.released_count(), 0u);
  // Block 2 moves from the entry's copy to the spare one and back: the copy
  // it leaves is queued each time, whatever the entry names.
  Log(2, Mapping(2, {x}), Mapping(2, {x2}));
  ASSERT_TRUE(log_->Sync().ok());
  ASSERT_TRUE(counter.CountUpTo(log_->last_id()).ok());
  EXPECT_EQ(counter.TakeReleasedCopies(), std::vector<ContainerId>{containers_[0]});
  Log(2, Mapping(2, {x2}), Mapping(2, {x}));
  ASSERT_TRUE(log_->Sync().ok());
  ASSERT_TRUE(counter.CountUpTo(log_->last_id()).ok());
  EXPECT_EQ(counter.TakeReleasedCopies(), std::vector<ContainerId>{spare});
  EXPECT_EQ(Usage(0), 1u);
  EXPECT_EQ(counter.stats().copies_released, 3u);
}

// An event naming a container that never committed is dropped (as Recover
// drops the mapping); the block's next event replaces what the block still
// has, not the dropped mapping.
TEST_F(UsageCounterTest, DroppedEventsAreNotCountedAndTheirBlockKeepsItsOldMapping) {
  const auto x = std::make_pair(fps_[0], containers_[0]);
  const auto y = std::make_pair(fps_[1], containers_[1]);
  Fingerprint lost_fp = fps_[0];
  lost_fp.bytes[0] ^= 0xff;
  const auto lost = std::make_pair(lost_fp, ContainerId{999});  // never committed
  Log(1, "", Mapping(1, {x}));
  Log(1, Mapping(1, {x}), Mapping(1, {y, lost}));  // dropped
  Log(1, Mapping(1, {y, lost}), Mapping(1, {y}));  // replaces x in truth
  ASSERT_TRUE(log_->Sync().ok());
  UsageCounter counter(log_.get(), index_.get(), store_.get(), log_->head_id());
  ASSERT_TRUE(counter.CountUpTo(log_->last_id()).ok());
  EXPECT_EQ(Usage(0), 0u);
  EXPECT_EQ(Usage(1), 1u);
  EXPECT_EQ(counter.stats().events_dropped, 1u);
}

// A mapping naming a chunk whose entry GC erased re-creates the entry.
TEST_F(UsageCounterTest, ReferenceToAnErasedChunkRestoresItsEntry) {
  const auto x = std::make_pair(fps_[0], containers_[0]);
  ASSERT_TRUE(index_->Erase(fps_[0]).ok());
  Log(1, "", Mapping(1, {x}));
  ASSERT_TRUE(log_->Sync().ok());
  UsageCounter counter(log_.get(), index_.get(), store_.get(), log_->head_id());
  ASSERT_TRUE(counter.CountUpTo(log_->last_id()).ok());
  EXPECT_EQ(Usage(0), 1u);
  EXPECT_EQ(counter.stats().entries_restored, 1u);
}

// A logged mapping carries its block's id: an event whose mapping belongs to
// another block (the event's block field or the mapping bytes damaged, yet
// both CRCs fine) is Corruption naming both, never counted against the
// wrong block.
TEST_F(UsageCounterTest, EventWhoseMappingBelongsToAnotherBlockIsCorruption) {
  const auto x = std::make_pair(fps_[0], containers_[0]);
  Log(1, "", Mapping(2, {x}));
  ASSERT_TRUE(log_->Sync().ok());
  UsageCounter counter(log_.get(), index_.get(), store_.get(), log_->head_id());
  Status s = counter.CountUpTo(log_->last_id());
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("block mapping of block 1/1"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("belongs to block 1/2"), std::string::npos) << s.ToString();
  EXPECT_EQ(Usage(0), 0u);  // not counted
}

}  // namespace
}  // namespace dedupv1

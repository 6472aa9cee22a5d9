#include "index/chunk_index.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/base/coding.h"
#include "core/base/env.h"
#include "core/base/fault_injection_env.h"
#include "core/base/fingerprint.h"
#include "core/base/testutil.h"
#include "index/disk_hash_table.h"

namespace dedupv1 {
namespace {

Fingerprint Fp(uint64_t seed) { return test::SeedFingerprint(seed); }

std::vector<Fingerprint> Fps(uint64_t first, uint64_t n) {
  std::vector<Fingerprint> v;
  for (uint64_t i = 0; i < n; i++) v.push_back(Fp(first + i));
  return v;
}

// Stands in for the chunk store's IsCommitted.
class CommitOracle {
 public:
  void Commit(ContainerId c) {
    std::lock_guard<std::mutex> l(mu_);
    committed_.insert(c);
  }
  bool IsCommitted(ContainerId c) const {
    std::lock_guard<std::mutex> l(mu_);
    return committed_.count(c) != 0;
  }
  std::function<bool(ContainerId)> Fn() {
    return [this](ContainerId c) { return IsCommitted(c); };
  }

 private:
  mutable std::mutex mu_;
  std::set<ContainerId> committed_;
};

class ChunkIndexTest : public ::testing::Test {
 protected:
  ChunkIndexOptions Options() {
    ChunkIndexOptions o;
    o.table.path = dir_.Sub("chunk-index");
    o.table.size_bytes = 1 << 20;
    o.table.page_size = 4096;
    o.aux_soft_limit = 1000;
    o.aux_hard_limit = 4000;
    return o;
  }

  // Options() with 8 buckets of 12 slots (512-byte pages), every slot
  // usable and no overflow pages: a bucket holds 12 entries, not one more.
  ChunkIndexOptions EightSingleBuckets() {
    ChunkIndexOptions o = Options();
    o.table.size_bytes = 512 * 9;
    o.table.page_size = 512;
    o.table.max_fill = 1.0;
    o.table.max_probe_pages = 1;
    return o;
  }

  std::unique_ptr<ChunkIndex> MustOpen(const ChunkIndexOptions& o, Env* env = Env::Default()) {
    std::unique_ptr<ChunkIndex> idx;
    Status s = ChunkIndex::Open(o, env, oracle_.Fn(), &idx);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return idx;
  }

  // Stores |fps| in |container|, commits it and writes them to the table.
  void StoreCommittedInTable(ChunkIndex* idx, const std::vector<Fingerprint>& fps, ContainerId container) {
    for (const Fingerprint& fp : fps) ASSERT_TRUE(idx->PutNew(fp, container).ok());
    oracle_.Commit(container);
    idx->OnContainerCommitted(container, fps);
    ASSERT_TRUE(idx->Flush().ok());
  }

  // Polls |cond| (the background thread works asynchronously); gives up after
  // a generous bound so a bug fails the test instead of hanging it.
  template <typename Cond>
  bool Eventually(Cond cond) {
    for (int i = 0; i < 6000; i++) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return cond();
  }

  test::TempDir dir_;
  CommitOracle oracle_;
};

TEST_F(ChunkIndexTest, PutNewIsServedFromAux) {
  auto idx = MustOpen(Options());
  ASSERT_TRUE(idx->PutNew(Fp(1), 5).ok());
  ChunkIndexEntry e;
  ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
  EXPECT_EQ(e.container, 5u);
  EXPECT_FALSE(e.committed);
  EXPECT_EQ(e.usage_count, 0u);
  EXPECT_TRUE(idx->Lookup(Fp(2), &e).IsNotFound());
  // First writer wins.
  ASSERT_TRUE(idx->PutNew(Fp(1), 6).ok());
  ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
  EXPECT_EQ(e.container, 5u);

  ChunkIndexStats st = idx->stats();
  EXPECT_EQ(st.aux_entries, 1u);
  EXPECT_EQ(st.aux_uncommitted, 1u);
  EXPECT_EQ(st.persistent_entries, 0u);
  EXPECT_EQ(st.lookups, 3u);
  EXPECT_EQ(st.aux_hits, 2u);
  EXPECT_EQ(st.misses, 1u);

  Fingerprint wrong = Fp(3);
  wrong.size = 32;
  EXPECT_TRUE(idx->PutNew(wrong, 1).IsInvalidArgument());
}

TEST_F(ChunkIndexTest, CommittedEntriesAreWrittenBackAndSurviveReopen) {
  auto o = Options();
  const auto fps = Fps(0, 100);
  {
    auto idx = MustOpen(o);
    for (const auto& fp : fps) ASSERT_TRUE(idx->PutNew(fp, 1).ok());
    oracle_.Commit(1);
    idx->OnContainerCommitted(1, fps);
    ChunkIndexEntry e;
    ASSERT_TRUE(idx->Lookup(fps[0], &e).ok());
    EXPECT_TRUE(e.committed);
    Status s = idx->Flush();
    ASSERT_TRUE(s.ok()) << s.ToString();
    ChunkIndexStats st = idx->stats();
    EXPECT_EQ(st.aux_entries, 0u);
    EXPECT_EQ(st.persistent_entries, 100u);
    EXPECT_EQ(st.written_back, 100u);
    EXPECT_GE(st.write_back_batches, 1u);
    ASSERT_TRUE(idx->Close().ok());
  }
  auto idx = MustOpen(o);
  for (const auto& fp : fps) {
    ChunkIndexEntry e;
    ASSERT_TRUE(idx->Lookup(fp, &e).ok());
    EXPECT_EQ(e.container, 1u);
    EXPECT_TRUE(e.committed);
  }
  EXPECT_EQ(idx->stats().disk_hits, 100u);
  uint64_t pages = 0;
  EXPECT_TRUE(idx->Verify(&pages).ok());
  EXPECT_GT(pages, 1u);
}

TEST_F(ChunkIndexTest, UncommittedEntriesNeverReachTheTable) {
  auto o = Options();
  oracle_.Commit(1);  // committed before the puts: entries are committed at once
  const auto committed = Fps(0, 50);
  const auto uncommitted = Fps(1000, 50);
  {
    auto idx = MustOpen(o);
    for (const auto& fp : committed) ASSERT_TRUE(idx->PutNew(fp, 1).ok());
    for (const auto& fp : uncommitted) ASSERT_TRUE(idx->PutNew(fp, 2).ok());
    // A commit notice for another container does not touch them.
    idx->OnContainerCommitted(3, uncommitted);
    EXPECT_EQ(idx->stats().aux_uncommitted, 50u);
    // Idle: the background thread writes back what it may, by itself.
    idx->SetIdle(true);
    EXPECT_TRUE(Eventually([&] { return idx->stats().aux_entries == 50; }));
    EXPECT_EQ(idx->stats().persistent_entries, 50u);
    ASSERT_TRUE(idx->Flush().ok());
    EXPECT_EQ(idx->stats().aux_entries, 50u);
    for (const auto& fp : uncommitted) {
      ChunkIndexEntry e;
      ASSERT_TRUE(idx->Lookup(fp, &e).ok());
      EXPECT_FALSE(e.committed);
    }
    ASSERT_TRUE(idx->Close().ok());
  }
  std::unique_ptr<DiskHashTable> table;
  ASSERT_TRUE(DiskHashTable::Open(o.table, Env::Default(), &table).ok());
  EXPECT_EQ(table->entry_count(), 50u);
  ChunkIndexEntry e;
  for (const auto& fp : committed) {
    ASSERT_TRUE(table->Get(fp, &e).ok());
    EXPECT_EQ(e.container, 1u);
    EXPECT_TRUE(e.committed);
  }
  for (const auto& fp : uncommitted) EXPECT_TRUE(table->Get(fp, &e).IsNotFound());
}

TEST_F(ChunkIndexTest, FailedContainerDropsItsUncommittedEntries) {
  auto idx = MustOpen(Options());
  const auto a = Fps(0, 10);
  const auto b = Fps(100, 10);
  for (const auto& fp : a) ASSERT_TRUE(idx->PutNew(fp, 1).ok());
  for (const auto& fp : b) ASSERT_TRUE(idx->PutNew(fp, 2).ok());
  oracle_.Commit(1);
  idx->OnContainerCommitted(1, a);
  // Failure notices for the wrong container or for committed entries change nothing.
  idx->OnContainerFailed(1, a);
  idx->OnContainerFailed(3, b);
  EXPECT_EQ(idx->stats().aux_entries, 20u);
  idx->OnContainerFailed(2, b);
  ChunkIndexStats st = idx->stats();
  EXPECT_EQ(st.aux_entries, 10u);
  EXPECT_EQ(st.aux_uncommitted, 0u);
  ChunkIndexEntry e;
  for (const auto& fp : b) EXPECT_TRUE(idx->Lookup(fp, &e).IsNotFound());
  for (const auto& fp : a) EXPECT_TRUE(idx->Lookup(fp, &e).ok());
}

TEST_F(ChunkIndexTest, HardLimitThrottlingDrainsWithoutDeadlock) {
  auto o = Options();
  o.aux_soft_limit = 16;
  o.aux_hard_limit = 64;
  oracle_.Commit(1);
  auto idx = MustOpen(o);
  const auto fps = Fps(0, 2000);
  for (const auto& fp : fps) ASSERT_TRUE(idx->PutNew(fp, 1).ok());
  // PutNew returns once the aux index is at most at the hard limit.
  EXPECT_LE(idx->stats().aux_entries, 64u);
  ASSERT_TRUE(idx->Flush().ok());
  ChunkIndexStats st = idx->stats();
  EXPECT_EQ(st.aux_entries, 0u);
  EXPECT_EQ(st.persistent_entries, 2000u);
  for (const auto& fp : fps) {
    ChunkIndexEntry e;
    ASSERT_TRUE(idx->Lookup(fp, &e).ok());
  }
}

TEST_F(ChunkIndexTest, HardLimitDoesNotWaitForUncommittedContainers) {
  auto o = Options();
  o.aux_soft_limit = 4;
  o.aux_hard_limit = 8;
  auto idx = MustOpen(o);
  const auto fps = Fps(0, 100);
  // Nothing is committed, so nothing can drain: PutNew must not block.
  for (const auto& fp : fps) ASSERT_TRUE(idx->PutNew(fp, 1).ok());
  EXPECT_EQ(idx->stats().aux_uncommitted, 100u);
  oracle_.Commit(1);
  idx->OnContainerCommitted(1, fps);
  // Above the soft limit now: the thread drains on its own.
  EXPECT_TRUE(Eventually([&] { return idx->stats().aux_entries <= 4; }));
  ASSERT_TRUE(idx->Flush().ok());
  EXPECT_EQ(idx->stats().persistent_entries, 100u);
}

TEST_F(ChunkIndexTest, ConcurrentPutNewAndLookup) {
  auto o = Options();
  o.aux_soft_limit = 32;
  o.aux_hard_limit = 128;
  auto idx = MustOpen(o);
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 400;
  constexpr uint64_t kPerContainer = 50;
  std::atomic<int> errors{0};
  std::atomic<uint64_t> published[kThreads] = {};
  std::atomic<bool> writers_done{false};
  // A reader that keeps checking every entry put so far: entries must stay
  // visible while the background thread moves them into the table.
  std::thread reader([&] {
    while (!writers_done.load()) {
      for (int t = 0; t < kThreads; t++) {
        const uint64_t n = published[t].load();
        for (uint64_t j = 0; j < n; j++) {
          ChunkIndexEntry e;
          Status s = idx->Lookup(Fp(static_cast<uint64_t>(t) * 100000 + j), &e);
          if (!s.ok() || e.container != static_cast<ContainerId>(t) * 1000 + j / kPerContainer + 1) {
            errors++;
          }
        }
      }
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      const uint64_t base = static_cast<uint64_t>(t) * 100000;
      std::vector<Fingerprint> open;
      for (uint64_t i = 0; i < kPerThread; i++) {
        const ContainerId c = static_cast<ContainerId>(t) * 1000 + i / kPerContainer + 1;
        const Fingerprint fp = Fp(base + i);
        if (!idx->PutNew(fp, c).ok()) errors++;
        published[t] = i + 1;
        open.push_back(fp);
        ChunkIndexEntry e;
        if (!idx->Lookup(fp, &e).ok() || e.container != c) errors++;
        // An older entry, possibly being written back right now, stays visible.
        if (i > 0) {
          const uint64_t j = (i * 7919 + 13) % i;
          if (!idx->Lookup(Fp(base + j), &e).ok() ||
              e.container != static_cast<ContainerId>(t) * 1000 + j / kPerContainer + 1) {
            errors++;
          }
        }
        if (open.size() == kPerContainer) {
          oracle_.Commit(c);
          idx->OnContainerCommitted(c, open);
          open.clear();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  writers_done = true;
  reader.join();
  EXPECT_EQ(errors.load(), 0);
  Status s = idx->Flush();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ChunkIndexStats st = idx->stats();
  EXPECT_EQ(st.aux_entries, 0u);
  EXPECT_EQ(st.persistent_entries, kThreads * kPerThread);
  uint64_t pages = 0;
  s = idx->Verify(&pages);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(ChunkIndexTest, FullIndexRefusesPutNew) {
  auto o = Options();
  o.table.size_bytes = 512 * 17;  // 16 buckets of 12 slots
  o.table.page_size = 512;
  o.aux_soft_limit = 1000;
  o.aux_hard_limit = 1000;
  o.grow_at = 0;  // no growth unless asked for
  uint64_t inserted = 0;
  uint64_t capacity = 0;
  {
    auto idx = MustOpen(o);
    capacity = idx->stats().capacity;
    ASSERT_EQ(capacity, static_cast<uint64_t>(16 * 12 * 0.7));
    Status s;
    for (uint64_t i = 0; i < 1000; i++) {
      s = idx->PutNew(Fp(i), 1);
      if (!s.ok()) break;
      inserted++;
    }
    EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
    EXPECT_NE(s.message().find("chunk index full: " + std::to_string(capacity) + " of " +
                               std::to_string(capacity) + " entries"),
              std::string::npos)
        << s.ToString();
    EXPECT_EQ(inserted, capacity);
    oracle_.Commit(1);
    idx->OnContainerCommitted(1, Fps(0, inserted));
    s = idx->Flush();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(idx->PutNew(Fp(5000), 1).IsNoSpace());
  }
  auto idx = MustOpen(o);
  EXPECT_EQ(idx->stats().persistent_entries, inserted);
  for (uint64_t i = 0; i < inserted; i++) {
    ChunkIndexEntry e;
    ASSERT_TRUE(idx->Lookup(Fp(i), &e).ok()) << i;
  }
  EXPECT_TRUE(idx->PutNew(Fp(5000), 1).IsNoSpace());
}

// A tiny table takes ten times its first capacity of new chunks: it grows
// online past grow_at, PutNew waits (never refuses) while a growth makes
// room, and every entry is found before and after a reopen.
TEST_F(ChunkIndexTest, TinyTableTakesTenTimesItsCapacityByGrowing) {
  auto o = Options();
  o.table.size_bytes = 512 * 9;  // 8 buckets of 12 slots: 67 entries
  o.table.page_size = 512;
  o.aux_soft_limit = 50;
  o.aux_hard_limit = 200;
  uint64_t first_capacity = 0;
  const uint64_t n = 700;
  {
    auto idx = MustOpen(o);
    first_capacity = idx->stats().capacity;
    ASSERT_EQ(first_capacity, 67u);
    for (uint64_t i = 0; i < n; i++) {
      const ContainerId c = 1 + i / 50;
      Status s = idx->PutNew(Fp(i), c);
      ASSERT_TRUE(s.ok()) << i << ": " << s.ToString();
      if (i % 50 == 49) {
        oracle_.Commit(c);
        idx->OnContainerCommitted(c, Fps(i - 49, 50));
      }
    }
    ASSERT_TRUE(idx->Flush().ok());
    ChunkIndexStats st = idx->stats();
    EXPECT_EQ(st.refused_puts, 0u);
    EXPECT_GE(st.capacity, n);
    EXPECT_GE(st.growth.growths_finished + (st.growth.growing ? 1 : 0), 3u);
    for (uint64_t i = 0; i < n; i++) {
      ChunkIndexEntry e;
      ASSERT_TRUE(idx->Lookup(Fp(i), &e).ok()) << i;
      EXPECT_EQ(e.container, 1 + i / 50);
    }
  }
  auto idx = MustOpen(o);
  EXPECT_EQ(idx->stats().persistent_entries, n);
  uint64_t pages = 0;
  ASSERT_TRUE(idx->Verify(&pages).ok());
  for (uint64_t i = 0; i < n; i++) {
    ChunkIndexEntry e;
    ASSERT_TRUE(idx->Lookup(Fp(i), &e).ok()) << i;
  }
  EXPECT_GE(n, 10 * first_capacity);
}

TEST_F(ChunkIndexTest, WriteBackErrorsKeepEntries) {
  FaultInjectionEnv fenv(Env::Default());
  auto o = Options();
  oracle_.Commit(1);
  const auto fps = Fps(0, 20);
  {
    auto idx = MustOpen(o, &fenv);
    FaultInjectionEnv::Rule rule;
    rule.op = FaultInjectionEnv::Op::kWrite;
    rule.path_substring = o.table.path;
    rule.fault = FaultInjectionEnv::Fault::kEIO;
    fenv.AddRule(rule);
    for (const auto& fp : fps) ASSERT_TRUE(idx->PutNew(fp, 1).ok());
    Status s = idx->Flush();
    EXPECT_TRUE(s.IsIOError()) << s.ToString();
    ChunkIndexStats st = idx->stats();
    EXPECT_EQ(st.aux_entries, 20u);
    EXPECT_FALSE(st.last_error.empty());
    EXPECT_GE(st.write_back_errors, 1u);
    for (const auto& fp : fps) {
      ChunkIndexEntry e;
      ASSERT_TRUE(idx->Lookup(fp, &e).ok());
    }
    fenv.ClearRules();
    s = idx->Flush();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(idx->stats().aux_entries, 0u);
    ASSERT_TRUE(idx->Close().ok());
  }
  auto idx = MustOpen(o);
  for (const auto& fp : fps) {
    ChunkIndexEntry e;
    ASSERT_TRUE(idx->Lookup(fp, &e).ok());
    EXPECT_EQ(e.container, 1u);
  }
}

// A fingerprint whose home bucket is |bucket| of 8 (the hash is its first 8
// bytes); |k| makes it unique.
Fingerprint FpInBucketOfEight(uint64_t bucket, uint64_t k) {
  Fingerprint fp;
  fp.size = 20;
  EncodeFixed64(fp.bytes, bucket + (k + 1) * 8);
  EncodeFixed64(fp.bytes + 8, k + 1);
  return fp;
}

TEST_F(ChunkIndexTest, FullBucketDoesNotBlockOtherEntries) {
  auto o = EightSingleBuckets();
  o.grow_at = 0;  // no growth: the chain stays full
  oracle_.Commit(1);
  auto idx = MustOpen(o);
  // 13 fingerprints homed in bucket 3 (one too many) and 5 in bucket 0.
  auto in_bucket = FpInBucketOfEight;
  std::vector<Fingerprint> fps;
  for (uint64_t k = 0; k < 13; k++) fps.push_back(in_bucket(3, k));
  for (uint64_t k = 0; k < 5; k++) fps.push_back(in_bucket(0, k));
  for (const auto& fp : fps) ASSERT_TRUE(idx->PutNew(fp, 1).ok());
  Status s = idx->Flush();
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_NE(s.message().find("bucket 3"), std::string::npos) << s.ToString();
  ChunkIndexStats st = idx->stats();
  EXPECT_EQ(st.persistent_entries, 17u);
  EXPECT_EQ(st.aux_entries, 1u);  // the one that does not fit stays in memory
  EXPECT_NE(st.last_error.find("bucket 3"), std::string::npos) << st.last_error;
  for (const auto& fp : fps) {
    ChunkIndexEntry e;
    ASSERT_TRUE(idx->Lookup(fp, &e).ok()) << fp.ToHex();
  }
  // Flush retries it and reports the error again rather than dropping it.
  EXPECT_TRUE(idx->Flush().IsNoSpace());
  EXPECT_EQ(idx->stats().aux_entries, 1u);
}

// A full bucket chain below the fill threshold makes the table grow: the
// entry that did not fit is written back into the larger table.
TEST_F(ChunkIndexTest, FullBucketChainGrowsTheTable) {
  auto o = EightSingleBuckets();
  oracle_.Commit(1);
  auto idx = MustOpen(o);
  // 13 fingerprints homed in bucket 3 of 8; of 16 buckets, in 3 and 11.
  std::vector<Fingerprint> fps;
  for (uint64_t k = 0; k < 13; k++) fps.push_back(FpInBucketOfEight(3, k));
  for (const auto& fp : fps) ASSERT_TRUE(idx->PutNew(fp, 1).ok());
  Status s = idx->Flush();  // one does not fit (yet)
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  for (int i = 0; i < 500 && idx->stats().growth.growths_finished == 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(idx->stats().growth.growths_finished, 1u) << idx->stats().growth.last_error;
  s = idx->Flush();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(idx->stats().aux_entries, 0u);
  EXPECT_EQ(idx->stats().persistent_entries, 13u);
  for (const auto& fp : fps) {
    ChunkIndexEntry e;
    ASSERT_TRUE(idx->Lookup(fp, &e).ok()) << fp.ToHex();
  }
}

TEST_F(ChunkIndexTest, AddUsageUpdatesAuxAndTable) {
  auto o = Options();
  oracle_.Commit(1);
  {
    auto idx = MustOpen(o);
    ASSERT_TRUE(idx->PutNew(Fp(1), 1).ok());
    ASSERT_TRUE(idx->PutNew(Fp(2), 1).ok());
    ASSERT_TRUE(idx->AddUsage(Fp(2), 4).ok());  // still in aux
    ASSERT_TRUE(idx->Flush().ok());
    ASSERT_EQ(idx->stats().aux_entries, 0u);
    ASSERT_TRUE(idx->AddUsage(Fp(1), 3).ok());  // loaded from the table
    ChunkIndexEntry e;
    ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
    EXPECT_EQ(e.usage_count, 3u);
    EXPECT_EQ(e.container, 1u);
    EXPECT_EQ(idx->stats().aux_entries, 1u);
    EXPECT_TRUE(idx->AddUsage(Fp(99), 1).IsNotFound());
    ASSERT_TRUE(idx->Close().ok());
  }
  auto idx = MustOpen(o);
  ChunkIndexEntry e;
  ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
  EXPECT_EQ(e.usage_count, 3u);
  ASSERT_TRUE(idx->Lookup(Fp(2), &e).ok());
  EXPECT_EQ(e.usage_count, 4u);
  EXPECT_EQ(idx->stats().persistent_entries, 2u);  // the reloaded entry is not counted twice
  ASSERT_TRUE(idx->AddUsage(Fp(1), -5).ok());
  ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
  EXPECT_EQ(e.usage_count, 0u);
}

TEST_F(ChunkIndexTest, AddUsageManyOnTheLocalTableKeepsEachFingerprintsChangesInOrder) {
  oracle_.Commit(1);
  auto idx = MustOpen(Options());
  ASSERT_TRUE(idx->PutNew(Fp(1), 1).ok());
  ASSERT_TRUE(idx->PutNew(Fp(2), 1).ok());
  ASSERT_TRUE(idx->Flush().ok());
  ASSERT_TRUE(idx->Erase(Fp(2)).ok());
  // Fp(3) has no entry: its first change finds none, its later ones are not
  // tried, so an entry created meanwhile (the local loop holds no lock across
  // changes) cannot take event 20 before a retry of event 10.
  std::vector<ChunkIndex::UsageChange> changes = {
      {Fp(3), 1, 10, 1}, {Fp(1), 2, 10, kNoContainer}, {Fp(2), -1, 10, kNoContainer},
      {Fp(3), 1, 20, 1}, {Fp(1), -1, 20, kNoContainer},
  };
  std::vector<ChunkIndex::UsageOutcome> out;
  ASSERT_TRUE(idx->AddUsageMany(changes, &out).ok());
  ASSERT_EQ(out.size(), 5u);
  EXPECT_TRUE(out[0].status.IsNotFound());
  EXPECT_TRUE(out[0].no_entry);
  ASSERT_TRUE(out[1].status.ok());
  EXPECT_EQ(out[1].usage, 2u);
  EXPECT_TRUE(out[2].status.IsNotFound());
  EXPECT_TRUE(out[2].no_entry) << "an erased entry is no entry";
  EXPECT_TRUE(out[3].status.IsNotFound());
  EXPECT_FALSE(out[3].no_entry) << "not tried behind the first change of its fingerprint";
  ASSERT_TRUE(out[4].status.ok());
  EXPECT_EQ(out[4].usage, 1u);
  EXPECT_TRUE(out[4].applied);
}

TEST_F(ChunkIndexTest, AddUsageWithEventIdCountsEachEventOnce) {
  auto o = Options();
  oracle_.Commit(1);
  {
    auto idx = MustOpen(o);
    ASSERT_TRUE(idx->PutNew(Fp(1), 1).ok());
    uint32_t usage = 0;
    bool applied = false;
    ASSERT_TRUE(idx->AddUsage(Fp(1), 1, 10, &usage, &applied).ok());
    EXPECT_TRUE(applied);
    EXPECT_EQ(usage, 1u);
    // The same event again (a replay): skipped.
    ASSERT_TRUE(idx->AddUsage(Fp(1), 1, 10, &usage, &applied).ok());
    EXPECT_FALSE(applied);
    EXPECT_EQ(usage, 1u);
    // An older one: skipped too (events are counted in order).
    ASSERT_TRUE(idx->AddUsage(Fp(1), 1, 7, &usage, &applied).ok());
    EXPECT_FALSE(applied);
    ASSERT_TRUE(idx->AddUsage(Fp(1), 2, 11, &usage, &applied).ok());
    EXPECT_TRUE(applied);
    EXPECT_EQ(usage, 3u);
    ASSERT_TRUE(idx->Close().ok());
  }
  // The last event id is persisted with the count: a replay after reopening
  // (a crash between write-back and log trim) still counts once.
  auto idx = MustOpen(o);
  ChunkIndexEntry e;
  ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
  EXPECT_EQ(e.usage_count, 3u);
  EXPECT_EQ(e.last_event_id, 11u);
  bool applied = true;
  ASSERT_TRUE(idx->AddUsage(Fp(1), 2, 11, nullptr, &applied).ok());
  EXPECT_FALSE(applied);
  EXPECT_EQ(idx->stats().aux_entries, 0u);  // nothing changed, nothing loaded
  ASSERT_TRUE(idx->AddUsage(Fp(1), -3, 12, nullptr, &applied).ok());
  EXPECT_TRUE(applied);
  ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
  EXPECT_EQ(e.usage_count, 0u);
}

TEST_F(ChunkIndexTest, EraseIsATombstoneUntilWrittenBack) {
  auto o = Options();
  oracle_.Commit(1);
  {
    auto idx = MustOpen(o);
    ASSERT_TRUE(idx->PutNew(Fp(1), 1).ok());
    ASSERT_TRUE(idx->PutNew(Fp(2), 1).ok());
    ASSERT_TRUE(idx->PutNew(Fp(3), 1).ok());
    ASSERT_TRUE(idx->Flush().ok());
    ASSERT_EQ(idx->stats().persistent_entries, 3u);
    ASSERT_TRUE(idx->AddUsage(Fp(2), 1, 5).ok());
    ASSERT_TRUE(idx->Erase(Fp(1)).ok());  // table only
    ASSERT_TRUE(idx->Erase(Fp(2)).ok());  // table + aux
    EXPECT_TRUE(idx->Erase(Fp(1)).IsNotFound());
    EXPECT_TRUE(idx->Erase(Fp(99)).IsNotFound());
    ChunkIndexEntry e;
    EXPECT_TRUE(idx->Lookup(Fp(1), &e).IsNotFound());
    EXPECT_TRUE(idx->Lookup(Fp(2), &e).IsNotFound());
    EXPECT_TRUE(idx->AddUsage(Fp(2), 1, 6).IsNotFound());
    ASSERT_TRUE(idx->Lookup(Fp(3), &e).ok());
    // An entry only in memory is erased too.
    ASSERT_TRUE(idx->PutNew(Fp(4), 1).ok());
    ASSERT_TRUE(idx->Erase(Fp(4)).ok());
    EXPECT_TRUE(idx->Lookup(Fp(4), &e).IsNotFound());
    // A new copy of an erased chunk replaces the tombstone and keeps the
    // events it counted.
    ASSERT_TRUE(idx->PutNew(Fp(2), 1).ok());
    ASSERT_TRUE(idx->Lookup(Fp(2), &e).ok());
    EXPECT_EQ(e.usage_count, 0u);
    EXPECT_EQ(e.last_event_id, 5u);
    ASSERT_TRUE(idx->Flush().ok());
    EXPECT_EQ(idx->stats().aux_entries, 0u);
    EXPECT_EQ(idx->stats().persistent_entries, 2u);
    ASSERT_TRUE(idx->Close().ok());
  }
  auto idx = MustOpen(o);
  ChunkIndexEntry e;
  EXPECT_TRUE(idx->Lookup(Fp(1), &e).IsNotFound());
  EXPECT_TRUE(idx->Lookup(Fp(4), &e).IsNotFound());
  EXPECT_TRUE(idx->Lookup(Fp(2), &e).ok());
  EXPECT_TRUE(idx->Lookup(Fp(3), &e).ok());
  EXPECT_EQ(idx->stats().persistent_entries, 2u);
}

// GC erased a chunk whose entry the table holds, and the chunk was stored
// again in a container not committed yet before the erasure was written
// back. The erasure must still reach the table: otherwise a crash (or the
// new container's failed commit) brings the table's old entry back, with a
// usage count whose later events the log no longer has and a container that
// may have dropped the chunk.
TEST_F(ChunkIndexTest, ErasureReachesTheTableWhenTheChunkIsStoredAgainUncommitted) {
  auto o = Options();
  oracle_.Commit(1);
  {
    auto idx = MustOpen(o);
    ASSERT_TRUE(idx->PutNew(Fp(1), 1).ok());
    ASSERT_TRUE(idx->AddUsage(Fp(1), 1, 10).ok());
    ASSERT_TRUE(idx->Flush().ok());  // the table: usage 1, event 10
    ASSERT_TRUE(idx->AddUsage(Fp(1), -1, 20).ok());
    ASSERT_TRUE(idx->Erase(Fp(1)).ok());
    ASSERT_TRUE(idx->PutNew(Fp(1), 2).ok());  // container 2 is not committed
    ASSERT_TRUE(idx->AddUsage(Fp(1), 1, 30).ok());
    ChunkIndexEntry e;
    ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
    EXPECT_EQ(e.container, 2u);
    EXPECT_FALSE(e.committed);
    EXPECT_EQ(e.usage_count, 1u);
    EXPECT_EQ(e.last_event_id, 30u);
    ASSERT_TRUE(idx->Flush().ok());
    // The log may now forget events 10..20. What a crash leaves behind:
    std::unique_ptr<DiskHashTable> table;
    ASSERT_TRUE(DiskHashTable::Open(o.table, Env::Default(), &table).ok());
    EXPECT_TRUE(table->Get(Fp(1), &e).IsNotFound())
        << "the table still has the erased entry: container " << e.container << ", usage " << e.usage_count;
    table.reset();
    // The new entry itself stays in memory until its container commits.
    ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
    EXPECT_EQ(e.container, 2u);
    EXPECT_EQ(idx->stats().aux_uncommitted, 1u);
    oracle_.Commit(2);
    idx->OnContainerCommitted(2, {Fp(1)});
    ASSERT_TRUE(idx->Flush().ok());
    EXPECT_EQ(idx->stats().aux_entries, 0u);
    EXPECT_EQ(idx->stats().persistent_entries, 1u);
    ASSERT_TRUE(idx->Close().ok());
  }
  auto idx = MustOpen(o);
  ChunkIndexEntry e;
  ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
  EXPECT_EQ(e.container, 2u);
  EXPECT_EQ(e.usage_count, 1u);
  EXPECT_EQ(e.last_event_id, 30u);
}

// The same, but the new container's commit fails: the chunk is gone again,
// and the table's old entry must not come back in its place.
TEST_F(ChunkIndexTest, FailedCommitOfAChunkStoredAgainLeavesItErased) {
  auto o = Options();
  oracle_.Commit(1);
  auto idx = MustOpen(o);
  ASSERT_TRUE(idx->PutNew(Fp(1), 1).ok());
  ASSERT_TRUE(idx->AddUsage(Fp(1), 1, 10).ok());
  ASSERT_TRUE(idx->Flush().ok());
  ASSERT_TRUE(idx->AddUsage(Fp(1), -1, 20).ok());
  ASSERT_TRUE(idx->Erase(Fp(1)).ok());
  ASSERT_TRUE(idx->PutNew(Fp(1), 2).ok());
  idx->OnContainerFailed(2, {Fp(1)});
  ChunkIndexEntry e;
  EXPECT_TRUE(idx->Lookup(Fp(1), &e).IsNotFound()) << "the erased entry is back: container " << e.container;
  EXPECT_TRUE(idx->AddUsage(Fp(1), 1, 30).IsNotFound());
  EXPECT_EQ(idx->stats().aux_uncommitted, 0u);
  ASSERT_TRUE(idx->Flush().ok());
  EXPECT_EQ(idx->stats().persistent_entries, 0u);
  // Stored once more (committed at once), it starts from usage 0.
  ASSERT_TRUE(idx->PutNew(Fp(1), 1).ok());
  ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
  EXPECT_EQ(e.usage_count, 0u);
}

// A counted mapping found an older, committed copy of a chunk while the
// chunk's entry names a newer copy whose container is not committed: the
// entry moves to the committed copy, so the count reaches the table with the
// next flush (the log forgets the event after it).
TEST_F(ChunkIndexTest, CountedIncrementMovesAnUncommittedEntryToTheCommittedCopy) {
  auto o = Options();
  oracle_.Commit(1);
  {
    auto idx = MustOpen(o);
    ASSERT_TRUE(idx->PutNew(Fp(1), 2).ok());  // container 2: not committed
    uint32_t usage = 0;
    bool applied = false;
    // Without a committed copy the entry stays where it is.
    ASSERT_TRUE(idx->AddUsage(Fp(1), 1, 10, &usage, &applied).ok());
    ChunkIndexEntry e;
    ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
    EXPECT_EQ(e.container, 2u);
    EXPECT_FALSE(e.committed);
    ASSERT_TRUE(idx->AddUsage(Fp(1), 1, 11, &usage, &applied, /*committed_copy=*/1).ok());
    EXPECT_TRUE(applied);
    EXPECT_EQ(usage, 2u);
    ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
    EXPECT_EQ(e.container, 1u);
    EXPECT_TRUE(e.committed);
    EXPECT_EQ(idx->stats().aux_uncommitted, 0u);
    // The newer copy's commit or failure no longer concerns the entry.
    idx->OnContainerFailed(2, {Fp(1)});
    ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
    EXPECT_EQ(e.container, 1u);
    ASSERT_TRUE(idx->Flush().ok());
    EXPECT_EQ(idx->stats().aux_entries, 0u);
    // No close: what a crash leaves behind.
    std::unique_ptr<DiskHashTable> table;
    ASSERT_TRUE(DiskHashTable::Open(o.table, Env::Default(), &table).ok());
    ASSERT_TRUE(table->Get(Fp(1), &e).ok());
    EXPECT_EQ(e.container, 1u);
    EXPECT_EQ(e.usage_count, 2u);
    EXPECT_EQ(e.last_event_id, 11u);
  }
}

// Container rewriting moves an entry to a newer copy: the table keeps the
// old entry until the new container commits; a failed commit names the old
// copy again; usage counts survive either way.
TEST_F(ChunkIndexTest, MoveKeepsCountsAndReachesTheTableOnlyOnceTheNewCopyCommits) {
  auto o = Options();
  auto idx = MustOpen(o);
  StoreCommittedInTable(idx.get(), {Fp(1), Fp(2)}, 1);
  ASSERT_TRUE(idx->AddUsage(Fp(1), 3, 10).ok());
  ASSERT_TRUE(idx->AddUsage(Fp(2), 2, 11).ok());
  ASSERT_TRUE(idx->Flush().ok());

  bool moved = false;
  ContainerId from = kNoContainer;
  ASSERT_TRUE(idx->Move(Fp(1), 5, &moved, &from).ok());
  EXPECT_TRUE(moved);
  EXPECT_EQ(from, 1u);  // the copy it moved off
  ASSERT_TRUE(idx->Move(Fp(2), 6, &moved).ok());
  EXPECT_TRUE(moved);
  ChunkIndexEntry e;
  ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
  EXPECT_EQ(e.container, 5u);
  EXPECT_FALSE(e.committed);
  EXPECT_EQ(e.usage_count, 3u);
  EXPECT_EQ(e.last_event_id, 10u);
  // An uncommitted entry does not move again.
  ASSERT_TRUE(idx->Move(Fp(1), 7, &moved, &from).ok());
  EXPECT_FALSE(moved);
  EXPECT_EQ(from, kNoContainer);
  EXPECT_TRUE(idx->Move(Fp(99), 7, &moved).IsNotFound());
  EXPECT_EQ(idx->stats().aux_uncommitted, 2u);
  ASSERT_TRUE(idx->Flush().ok());
  {
    // What a crash now leaves: the table still names the old copy.
    std::unique_ptr<DiskHashTable> table;
    ASSERT_TRUE(DiskHashTable::Open(o.table, Env::Default(), &table).ok());
    ASSERT_TRUE(table->Get(Fp(1), &e).ok());
    EXPECT_EQ(e.container, 1u);
    EXPECT_EQ(e.usage_count, 3u);
  }
  // Counted while moved: the count goes with the entry.
  ASSERT_TRUE(idx->AddUsage(Fp(1), 1, 12).ok());
  ASSERT_TRUE(idx->AddUsage(Fp(2), -1, 13).ok());
  oracle_.Commit(5);
  idx->OnContainerCommitted(5, {Fp(1)});
  idx->OnContainerFailed(6, {Fp(2)});
  EXPECT_EQ(idx->stats().aux_uncommitted, 0u);
  ASSERT_TRUE(idx->Lookup(Fp(2), &e).ok());
  EXPECT_EQ(e.container, 1u);  // its new copy failed: the old one again
  EXPECT_TRUE(e.committed);
  ASSERT_TRUE(idx->Flush().ok());
  EXPECT_EQ(idx->stats().aux_entries, 0u);
  std::unique_ptr<DiskHashTable> table;
  ASSERT_TRUE(DiskHashTable::Open(o.table, Env::Default(), &table).ok());
  ASSERT_TRUE(table->Get(Fp(1), &e).ok());
  EXPECT_EQ(e.container, 5u);
  EXPECT_EQ(e.usage_count, 4u);
  EXPECT_EQ(e.last_event_id, 12u);
  ASSERT_TRUE(table->Get(Fp(2), &e).ok());
  EXPECT_EQ(e.container, 1u);
  EXPECT_EQ(e.usage_count, 1u);
  EXPECT_EQ(e.last_event_id, 13u);
}

// A count made before the move and one made while moved reach the table
// with the next flush, naming the former copy (a checkpoint trims the events
// it counted once the flush returns): a crash before the new copy commits
// loses no count.
TEST_F(ChunkIndexTest, FlushWhileMovedPersistsTheCountsWithTheFormerCopy) {
  auto o = Options();
  auto idx = MustOpen(o);
  StoreCommittedInTable(idx.get(), {Fp(1)}, 1);
  ASSERT_TRUE(idx->AddUsage(Fp(1), 1, 10).ok());  // in memory only
  bool moved = false;
  ASSERT_TRUE(idx->Move(Fp(1), 5, &moved).ok());
  ASSERT_TRUE(moved);
  ASSERT_TRUE(idx->AddUsage(Fp(1), 1, 11).ok());
  ASSERT_TRUE(idx->Flush().ok());
  ChunkIndexEntry e;
  {
    std::unique_ptr<DiskHashTable> table;
    ASSERT_TRUE(DiskHashTable::Open(o.table, Env::Default(), &table).ok());
    ASSERT_TRUE(table->Get(Fp(1), &e).ok());
    EXPECT_EQ(e.container, 1u);
    EXPECT_EQ(e.usage_count, 2u);
    EXPECT_EQ(e.last_event_id, 11u);
  }
  // Still moved in memory: lookups see the new copy until it commits.
  ASSERT_TRUE(idx->Lookup(Fp(1), &e).ok());
  EXPECT_EQ(e.container, 5u);
  EXPECT_FALSE(e.committed);
  EXPECT_EQ(idx->stats().aux_entries, 1u);
  // Closing before the commit leaves the former copy in the table.
  ASSERT_TRUE(idx->Close().ok());
  std::unique_ptr<DiskHashTable> table;
  ASSERT_TRUE(DiskHashTable::Open(o.table, Env::Default(), &table).ok());
  ASSERT_TRUE(table->Get(Fp(1), &e).ok());
  EXPECT_EQ(e.container, 1u);
  EXPECT_EQ(e.usage_count, 2u);
}

TEST_F(ChunkIndexTest, PutNewAfterCloseIsAborted) {
  auto idx = MustOpen(Options());
  ASSERT_TRUE(idx->Close().ok());
  EXPECT_TRUE(idx->PutNew(Fp(1), 1).IsAborted());
  EXPECT_TRUE(idx->Close().ok());
}

TEST_F(ChunkIndexTest, RejectsBadLimits) {
  auto o = Options();
  o.aux_soft_limit = 10;
  o.aux_hard_limit = 5;
  std::unique_ptr<ChunkIndex> idx;
  EXPECT_TRUE(ChunkIndex::Open(o, Env::Default(), oracle_.Fn(), &idx).IsInvalidArgument());
  EXPECT_TRUE(ChunkIndex::Open(Options(), Env::Default(), nullptr, &idx).IsInvalidArgument());
}

// The pass garbage collection counts entries with: every entry once, in its
// newest version, whether it lives in the table, in the auxiliary index or in
// both; erased entries are left out even while the table still holds them.
TEST_F(ChunkIndexTest, ForEachEntrySeesEveryEntryOnceInItsNewestVersion) {
  auto idx = MustOpen(Options());
  StoreCommittedInTable(idx.get(), Fps(0, 100), 1);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(idx->stats().persistent_entries, 100u);
  for (uint64_t i = 0; i < 10; i++) ASSERT_TRUE(idx->AddUsage(Fp(i), 2).ok());  // newer in aux
  for (uint64_t i = 10; i < 15; i++) ASSERT_TRUE(idx->Erase(Fp(i)).ok());      // tombstones
  for (uint64_t i = 200; i < 210; i++) ASSERT_TRUE(idx->PutNew(Fp(i), 2).ok());  // aux only
  auto check = [&](const char* when) {
    std::map<Fingerprint, std::pair<int, ChunkIndexEntry>> seen;
    ASSERT_TRUE(idx->ForEachEntry([&](const Fingerprint& fp, const ChunkIndexEntry& e) {
                     seen[fp].first++;
                     seen[fp].second = e;
                   }).ok());
    EXPECT_EQ(seen.size(), 105u) << when;
    for (const auto& [fp, v] : seen) EXPECT_EQ(v.first, 1) << when << ": " << fp.ToHex() << " seen twice";
    for (uint64_t i = 0; i < 10; i++) EXPECT_EQ(seen[Fp(i)].second.usage_count, 2u) << when << " " << i;
    for (uint64_t i = 10; i < 15; i++) EXPECT_EQ(seen.count(Fp(i)), 0u) << when << ": erased " << i << " seen";
    for (uint64_t i = 15; i < 100; i++) EXPECT_EQ(seen[Fp(i)].second.container, 1u) << when;
    for (uint64_t i = 200; i < 210; i++) {
      EXPECT_EQ(seen[Fp(i)].second.container, 2u) << when;
      EXPECT_FALSE(seen[Fp(i)].second.committed) << when;
    }
  };
  check("before write-back");
  ASSERT_TRUE(idx->Flush().ok());  // usage and erasures reach the table; container 2 stays in aux
  check("after write-back");
}

// An entry erased before the pass whose deletion write-back removes it from
// the table and from the auxiliary index after its page was read, but before
// the pass looked it up in the auxiliary index, is not counted: the stale
// table version would make garbage collection count a chunk it erased.
TEST_F(ChunkIndexTest, ForEachEntrySkipsAnErasedEntryWrittenBackDuringThePass) {
  auto idx = MustOpen(Options());
  StoreCommittedInTable(idx.get(), Fps(0, 10000), 1);
  ASSERT_FALSE(HasFatalFailure());
  // The table is one run of pages; the pass looks entries up in the
  // auxiliary index in batches of 4096, so the entry at position 6000 is read
  // before the first batch is handed out and looked up after it.
  std::vector<Fingerprint> order;
  ASSERT_TRUE(idx->ForEachEntry([&](const Fingerprint& fp, const ChunkIndexEntry&) { order.push_back(fp); }).ok());
  ASSERT_EQ(order.size(), 10000u);
  const Fingerprint victim = order[6000];
  ASSERT_TRUE(idx->Erase(victim).ok());
  bool flushed = false;
  size_t seen = 0;
  bool victim_seen = false;
  ASSERT_TRUE(idx->ForEachEntry([&](const Fingerprint& fp, const ChunkIndexEntry&) {
                   if (!flushed) {
                     flushed = true;
                     ASSERT_TRUE(idx->Flush().ok());  // the deletion reaches the table, the tombstone goes
                   }
                   seen++;
                   victim_seen |= fp == victim;
                 }).ok());
  EXPECT_TRUE(flushed);
  EXPECT_FALSE(victim_seen) << "the erased entry was counted from its stale table version";
  EXPECT_EQ(seen, 9999u);
}

}  // namespace
}  // namespace dedupv1

// Tests of RadosChunkTable and of ChunkIndex on it. They need the Ceph
// cluster whose conf DEDUPV1_TEST_CEPH_CONF names (pools dedupv1-data,
// dedupv1-index); each test works in a RADOS namespace of its own and
// removes its objects at the end.
#include "index/rados_chunk_table.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "core/base/coding.h"
#include "core/base/env.h"
#include "core/base/testutil.h"
#include "index/chunk_index.h"

namespace dedupv1 {
namespace {

Fingerprint Fp(uint64_t seed) { return test::SeedFingerprint(seed); }

std::vector<Fingerprint> Fps(uint64_t first, uint64_t n) {
  std::vector<Fingerprint> v;
  for (uint64_t i = 0; i < n; i++) v.push_back(Fp(first + i));
  return v;
}

ChunkIndexEntry Entry(ContainerId c, uint32_t usage = 0, uint64_t event = 0) {
  ChunkIndexEntry e;
  e.container = c;
  e.usage_count = usage;
  e.committed = true;
  e.last_event_id = event;
  return e;
}

std::string Hex(const Fingerprint& fp) { return fp.ToHex(); }

class RadosChunkTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* conf = std::getenv("DEDUPV1_TEST_CEPH_CONF");
    ASSERT_NE(conf, nullptr) << "DEDUPV1_TEST_CEPH_CONF is not set: these tests need a Ceph cluster "
                                "(scripts/ceph-dev start; ctest -L ceph sets it)";
    static std::atomic<int> n{0};
    rados_.conf_file = conf;
    rados_.store = "t-" + std::to_string(getpid()) + "-" + std::to_string(n++) + "-ci";
    rados_.op_timeout_s = 30;
    ASSERT_TRUE(RadosCluster::Shared(rados_, &cluster_).ok());
  }

  void TearDown() override {
    if (!cluster_) return;
    // Removes this test's objects (its namespace only).
    librados::IoCtx& io = cluster_->index();
    std::vector<std::string> names;
    for (auto it = io.nobjects_begin(); it != io.nobjects_end(); ++it) names.push_back(it->get_oid());
    for (const auto& name : names) io.remove(name);
  }

  RadosChunkTableOptions Options(uint32_t shards = 16) {
    RadosChunkTableOptions o;
    o.rados = rados_;
    o.shards = shards;
    o.key_size = 20;
    return o;
  }

  std::unique_ptr<RadosChunkTable> MustOpen(const RadosChunkTableOptions& o) {
    std::unique_ptr<RadosChunkTable> t;
    Status s = RadosChunkTable::Open(o, &t);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return t;
  }

  RadosOptions rados_;
  std::shared_ptr<RadosCluster> cluster_;
};

TEST_F(RadosChunkTableTest, ShardNamesAndPrefixes) {
  Fingerprint fp;
  fp.size = 20;
  fp.bytes[0] = 0xab;
  fp.bytes[1] = 0xcd;
  EXPECT_EQ(RadosChunkTable::ShardOf(fp, 0), 0u);
  EXPECT_EQ(RadosChunkTable::ShardOf(fp, 4), 0xau);
  EXPECT_EQ(RadosChunkTable::ShardOf(fp, 6), 0xab >> 2);
  EXPECT_EQ(RadosChunkTable::ShardOf(fp, 12), 0xabcu);
  EXPECT_EQ(RadosChunkTable::ShardObject(0, 0), "ci.0");
  EXPECT_EQ(RadosChunkTable::ShardObject(0x2a, 6), "ci.2a");
  EXPECT_EQ(RadosChunkTable::ShardObject(0xab, 8), "ci.ab");
  EXPECT_EQ(RadosChunkTable::ShardObject(0x1ab, 12), "ci.1ab");
}

TEST_F(RadosChunkTableTest, PutGetEraseAcrossShardsAndReopen) {
  const auto fps = Fps(0, 500);
  {
    auto t = MustOpen(Options());
    ASSERT_TRUE(t);
    EXPECT_TRUE(t->batched());
    EXPECT_EQ(t->entry_count(), 0u);
    ChunkIndexEntry e;
    EXPECT_TRUE(t->Get(fps[0], &e).IsNotFound());

    std::vector<ChunkTable::Op> ops;
    for (size_t i = 0; i < fps.size(); i++) ops.push_back({fps[i], Entry(100 + i, i, 7 * i), false});
    ASSERT_TRUE(t->Apply(ops).ok());
    EXPECT_EQ(t->entry_count(), 500u);
    // Idempotent: the same batch again changes nothing.
    ASSERT_TRUE(t->Apply(ops).ok());
    EXPECT_EQ(t->entry_count(), 500u);

    ASSERT_TRUE(t->Get(fps[42], &e).ok());
    EXPECT_EQ(e, Entry(142, 42, 294));

    // Erase 100, overwrite 100, and in the same batch a put then an erase of
    // one more (the later op wins) and an erase of an unknown key.
    ops.clear();
    for (size_t i = 0; i < 100; i++) ops.push_back({fps[i], ChunkIndexEntry(), true});
    for (size_t i = 100; i < 200; i++) ops.push_back({fps[i], Entry(1, 5, 9), false});
    ops.push_back({fps[300], Entry(3), false});
    ops.push_back({fps[300], ChunkIndexEntry(), true});
    ops.push_back({Fp(99999), ChunkIndexEntry(), true});
    ASSERT_TRUE(t->Apply(ops).ok());
    EXPECT_EQ(t->entry_count(), 399u);
    EXPECT_TRUE(t->Get(fps[5], &e).IsNotFound());
    EXPECT_TRUE(t->Get(fps[300], &e).IsNotFound());
    ASSERT_TRUE(t->Get(fps[150], &e).ok());
    EXPECT_EQ(e, Entry(1, 5, 9));
  }
  // Reopen: counts and entries are read back from the cluster.
  auto t = MustOpen(Options());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->entry_count(), 399u);
  std::vector<Fingerprint> probe = fps;
  probe.push_back(Fp(123456));
  std::vector<ChunkIndexEntry> entries;
  std::vector<bool> found;
  ASSERT_TRUE(t->GetMany(probe, &entries, &found).ok());
  ASSERT_EQ(found.size(), probe.size());
  for (size_t i = 0; i < fps.size(); i++) {
    const bool want = i >= 100 && i != 300;
    ASSERT_EQ(found[i], want) << i;
    if (i >= 100 && i < 200) EXPECT_EQ(entries[i], Entry(1, 5, 9));
    if (i >= 200 && i != 300) EXPECT_EQ(entries[i], Entry(100 + i, i, 7 * i));
  }
  EXPECT_FALSE(found.back());

  uint64_t pages = 0;
  uint64_t visited = 0;
  ASSERT_TRUE(t->Verify(&pages, [&](const Fingerprint&, const ChunkIndexEntry&) { visited++; }).ok());
  EXPECT_EQ(visited, 399u);
  EXPECT_GE(pages, 1u + 16u);
  std::set<Fingerprint> seen;
  ASSERT_TRUE(t->ForEachEntry([&](const Fingerprint& fp, const ChunkIndexEntry&) {
    EXPECT_TRUE(seen.insert(fp).second);
  }).ok());
  EXPECT_EQ(seen.size(), 399u);
}

TEST_F(RadosChunkTableTest, HeaderMismatchIsInvalidArgumentNamingBoth) {
  ASSERT_TRUE(MustOpen(Options(16)));
  std::unique_ptr<RadosChunkTable> t;
  Status s = RadosChunkTable::Open(Options(64), &t);
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.ToString().find("created with 16 shards"), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find("asks for 64 shards"), std::string::npos) << s.ToString();
  auto o = Options(16);
  o.key_size = 32;
  s = RadosChunkTable::Open(o, &t);
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.ToString().find("SHA-1"), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find("SHA-256"), std::string::npos) << s.ToString();
  o = Options(12);
  EXPECT_TRUE(RadosChunkTable::Open(o, &t).IsInvalidArgument());
}

TEST_F(RadosChunkTableTest, DamagedValueIsCorruptionNamingShardAndKey) {
  auto t = MustOpen(Options());
  ASSERT_TRUE(t);
  const auto fps = Fps(0, 50);
  std::vector<ChunkTable::Op> ops;
  for (const auto& fp : fps) ops.push_back({fp, Entry(7), false});
  ASSERT_TRUE(t->Apply(ops).ok());

  // One value with a flipped bit (CRC mismatch), one value of a wrong length.
  const std::string object = RadosChunkTable::ShardObject(RadosChunkTable::ShardOf(fps[3], 4), 4);
  const std::string key(reinterpret_cast<const char*>(fps[3].bytes), 20);
  std::string value = RadosChunkTable::EncodeValue(fps[3], Entry(7));
  value[3] ^= 1;
  std::map<std::string, librados::bufferlist> bad;
  bad[key].append(value);
  ASSERT_EQ(cluster_->index().omap_set(object, bad), 0);

  ChunkIndexEntry e;
  Status s = t->Get(fps[3], &e);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find(object), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find(Hex(fps[3])), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find("CRC"), std::string::npos) << s.ToString();
  std::vector<ChunkIndexEntry> entries;
  std::vector<bool> found;
  EXPECT_TRUE(t->GetMany(fps, &entries, &found).IsCorruption());
  uint64_t pages;
  EXPECT_TRUE(t->Verify(&pages).IsCorruption());
  EXPECT_TRUE(t->ForEachEntry([](const Fingerprint&, const ChunkIndexEntry&) {}).IsCorruption());
  // The others are still served.
  ASSERT_TRUE(t->Get(fps[4], &e).ok());

  // A valid value under another key does not check out either (the CRC covers the key).
  bad.clear();
  bad[key].append(RadosChunkTable::EncodeValue(fps[4], Entry(7)));
  ASSERT_EQ(cluster_->index().omap_set(object, bad), 0);
  EXPECT_TRUE(t->Get(fps[3], &e).IsCorruption());

  bad.clear();
  bad[key].append("short");
  ASSERT_EQ(cluster_->index().omap_set(object, bad), 0);
  s = t->Get(fps[3], &e);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find(object), std::string::npos) << s.ToString();

  // Rewriting the entry repairs it; the count was not disturbed.
  ASSERT_TRUE(t->Apply({{fps[3], Entry(8), false}}).ok());
  ASSERT_TRUE(t->Get(fps[3], &e).ok());
  EXPECT_EQ(e.container, 8u);
  ASSERT_TRUE(t->Verify(&pages).ok());
  EXPECT_EQ(t->entry_count(), 50u);
}

TEST_F(RadosChunkTableTest, VerifyFindsAWrongCount) {
  auto t = MustOpen(Options(1));
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Apply({{Fp(1), Entry(1), false}, {Fp(2), Entry(2), false}}).ok());
  // A key added behind the table's back.
  std::map<std::string, librados::bufferlist> extra;
  extra[std::string(reinterpret_cast<const char*>(Fp(3).bytes), 20)].append(RadosChunkTable::EncodeValue(Fp(3), Entry(3)));
  ASSERT_EQ(cluster_->index().omap_set("ci.0", extra), 0);
  uint64_t pages;
  Status s = t->Verify(&pages);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("holds 3 entries, its count says 2"), std::string::npos) << s.ToString();
}

// Gateway mode (fence_on_lease_loss): a lease that lapses while an Apply
// runs stops its later shard writes; before, only the start was checked and
// the whole batch was written after the lease had passed to another gateway.
TEST_F(RadosChunkTableTest, LeaseLapsingDuringApplyStopsLaterShardWrites) {
  RadosChunkTableOptions o = Options(1024);
  o.rados.store = rados_.store + "-lease";
  o.rados.fence_on_lease_loss = true;
  o.rados.lock_duration_s = 1;
  o.max_in_flight = 1;  // one shard op at a time: the Apply takes > 1024 round trips
  std::shared_ptr<RadosCluster> cluster;
  ASSERT_TRUE(RadosCluster::Shared(o.rados, &cluster).ok());
  auto t = MustOpen(o);
  ASSERT_TRUE(t);
  // A lease taken 800 ms ago: 200 ms are left when the Apply starts.
  const int token = 0;
  cluster->LeaseRenewed(&token, std::chrono::steady_clock::now() - std::chrono::milliseconds(800));
  std::vector<ChunkTable::Op> ops;
  for (uint64_t i = 0; i < 8192; i++) ops.push_back({Fp(i), Entry(i + 1), false});
  const auto start = std::chrono::steady_clock::now();
  Status s = t->Apply(ops);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(s.ok()) << "an Apply of " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                       << " ms wrote every shard after the lease had lapsed";
  EXPECT_NE(s.ToString().find("fenced"), std::string::npos) << s.ToString();
  EXPECT_TRUE(cluster->fenced());
  // Shards written before the lapse hold their entries; the rest none.
  std::set<std::string> written;
  for (auto it = cluster->index().nobjects_begin(); it != cluster->index().nobjects_end(); ++it) {
    if (it->get_oid().rfind("ci.", 0) == 0 && it->get_oid() != RadosChunkTable::kHeaderObject) {
      written.insert(it->get_oid());
    }
  }
  EXPECT_LT(written.size(), 1024u);
  for (const std::string& name : written) cluster->index().remove(name);
  cluster->index().remove(RadosChunkTable::kHeaderObject);
  cluster->LeaseReleased(&token);
}

// ChunkIndex with table_backend = rados: the invariants of chunk_index.h hold.
class RadosChunkIndexTest : public RadosChunkTableTest {
 protected:
  ChunkIndexOptions IndexOptions() {
    ChunkIndexOptions o;
    o.table_backend = "rados";
    o.rados = rados_;
    o.rados_shards = 16;
    o.table.key_size = 20;
    o.aux_soft_limit = 1000;
    o.aux_hard_limit = 4000;
    return o;
  }
  std::unique_ptr<ChunkIndex> MustOpenIndex() {
    std::unique_ptr<ChunkIndex> idx;
    Status s = ChunkIndex::Open(IndexOptions(), Env::Default(), [this](ContainerId c) { return Committed(c); }, &idx);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return idx;
  }
  bool Committed(ContainerId c) {
    std::lock_guard<std::mutex> l(mu_);
    return committed_.count(c) > 0;
  }
  void Commit(ContainerId c) {
    std::lock_guard<std::mutex> l(mu_);
    committed_.insert(c);
  }
  std::mutex mu_;
  std::set<ContainerId> committed_;
};

TEST_F(RadosChunkIndexTest, PutNewCommitWriteBackLookupAndLookupMany) {
  const auto fps = Fps(0, 300);
  {
    auto idx = MustOpenIndex();
    ASSERT_TRUE(idx);
    EXPECT_TRUE(idx->batched_table());
    for (size_t i = 0; i < 200; i++) ASSERT_TRUE(idx->PutNew(fps[i], 10).ok());
    for (size_t i = 200; i < 300; i++) ASSERT_TRUE(idx->PutNew(fps[i], 11).ok());
    Commit(10);
    idx->OnContainerCommitted(10, std::vector<Fingerprint>(fps.begin(), fps.begin() + 200));
    ASSERT_TRUE(idx->Flush().ok());
    ChunkIndexStats st = idx->stats();
    EXPECT_EQ(st.persistent_entries, 200u);
    EXPECT_EQ(st.aux_entries, 100u);  // container 11 is not committed: stays in memory
    EXPECT_GT(st.capacity, uint64_t{1} << 40);

    ChunkIndexEntry e;
    bool from_table = false;
    ASSERT_TRUE(idx->Lookup(fps[5], &e, &from_table).ok());
    EXPECT_TRUE(from_table);
    EXPECT_EQ(e.container, 10u);
    EXPECT_TRUE(e.committed);
    ASSERT_TRUE(idx->Lookup(fps[250], &e, &from_table).ok());
    EXPECT_FALSE(from_table);

    // Batched: aux first, the rest in one GetMany.
    std::vector<Fingerprint> probe = fps;
    probe.push_back(Fp(77777));
    std::vector<ChunkIndexEntry> entries;
    std::vector<bool> found, table;
    ASSERT_TRUE(idx->LookupMany(probe, &entries, &found, &table).ok());
    for (size_t i = 0; i < 300; i++) {
      ASSERT_TRUE(found[i]) << i;
      EXPECT_EQ(entries[i].container, i < 200 ? 10u : 11u);
      EXPECT_EQ(table[i], i < 200);
    }
    EXPECT_FALSE(found.back());

    // Erase and usage counts go through the table too.
    ASSERT_TRUE(idx->Erase(fps[0]).ok());
    ASSERT_TRUE(idx->AddUsage(fps[1], 3, 17).ok());
    ASSERT_TRUE(idx->Flush().ok());
    EXPECT_EQ(idx->stats().persistent_entries, 199u);
    uint64_t pages;
    ASSERT_TRUE(idx->Verify(&pages).ok());
    ASSERT_TRUE(idx->Close().ok());
  }
  // Reopen: only committed entries survived.
  auto idx = MustOpenIndex();
  ASSERT_TRUE(idx);
  ChunkIndexEntry e;
  EXPECT_TRUE(idx->Lookup(fps[0], &e).IsNotFound());
  ASSERT_TRUE(idx->Lookup(fps[1], &e).ok());
  EXPECT_EQ(e.usage_count, 3u);
  EXPECT_EQ(e.last_event_id, 17u);
  EXPECT_TRUE(idx->Lookup(fps[250], &e).IsNotFound());
  uint64_t n = 0;
  ASSERT_TRUE(idx->ForEachEntry([&](const Fingerprint&, const ChunkIndexEntry&) { n++; }).ok());
  EXPECT_EQ(n, 199u);
}

TEST_F(RadosChunkIndexTest, PrefetchedAnswersAreUsedOnlyWhileCurrent) {
  auto idx = MustOpenIndex();
  ASSERT_TRUE(idx);
  const auto fps = Fps(1000, 100);
  for (const auto& fp : fps) ASSERT_TRUE(idx->PutNew(fp, 20).ok());
  Commit(20);
  idx->OnContainerCommitted(20, fps);
  ASSERT_TRUE(idx->Flush().ok());

  const RadosStats before = cluster_->stats();
  std::vector<Fingerprint> run = fps;
  run.push_back(Fp(5555));  // unknown
  idx->Prefetch(run);
  const uint64_t prefetch_ops = cluster_->stats().TotalOps() - before.TotalOps();
  EXPECT_LE(prefetch_ops, 16u);  // one omap read per shard
  ChunkIndexEntry e;
  bool from_table = false;
  for (const auto& fp : fps) {
    ASSERT_TRUE(idx->Lookup(fp, &e, &from_table).ok());
    EXPECT_TRUE(from_table);
    EXPECT_EQ(e.container, 20u);
  }
  EXPECT_TRUE(idx->Lookup(run.back(), &e).IsNotFound());
  EXPECT_EQ(cluster_->stats().TotalOps() - before.TotalOps(), prefetch_ops) << "lookups went to the cluster";
  idx->DropPrefetch(run);

  // A prefetched "not found" is stale once a write-back moved the entry from
  // memory to the table: Lookup must not believe it.
  const Fingerprint late = Fp(6000);
  idx->Prefetch({late});  // reads "not found"
  ASSERT_TRUE(idx->PutNew(late, 21).ok());
  Commit(21);
  idx->OnContainerCommitted(21, {late});
  ASSERT_TRUE(idx->Flush().ok());  // entry now only in the table
  EXPECT_EQ(idx->stats().aux_entries, 0u);
  ASSERT_TRUE(idx->Lookup(late, &e).ok());
  EXPECT_EQ(e.container, 21u);
}

TEST_F(RadosChunkIndexTest, PrefetchStopsWhenLookupsRarelyNeedTheTable) {
  auto idx = MustOpenIndex();
  ASSERT_TRUE(idx);
  // Runs whose chunks the filters before the chunk index answer (as the
  // container cache does in a next generation): offered, never looked up.
  for (uint64_t run = 0; run < 20; run++) idx->Prefetch(Fps(run * 1000, 200));
  const uint64_t before = cluster_->stats().TotalOps();
  idx->Prefetch(Fps(50000, 200));
  EXPECT_EQ(cluster_->stats().TotalOps(), before) << "a prefetch that saves nothing was made";
  // Lookups that do need the table bring it back.
  for (const auto& fp : Fps(60000, 4000)) {
    ChunkIndexEntry e;
    ASSERT_TRUE(idx->Lookup(fp, &e).IsNotFound());
  }
  const uint64_t after_lookups = cluster_->stats().TotalOps();
  idx->Prefetch(Fps(70000, 200));
  EXPECT_GT(cluster_->stats().TotalOps(), after_lookups);
}

TEST_F(RadosChunkIndexTest, AddUsageManyLoadsTheEntriesInOneReadPerShard) {
  const auto fps = Fps(80000, 1000);
  {
    auto idx = MustOpenIndex();
    ASSERT_TRUE(idx);
    for (const auto& fp : fps) ASSERT_TRUE(idx->PutNew(fp, 30).ok());
    Commit(30);
    idx->OnContainerCommitted(30, fps);
    ASSERT_TRUE(idx->Flush().ok());
    ASSERT_EQ(idx->stats().aux_entries, 0u);  // every entry only in the table
    ASSERT_TRUE(idx->Erase(fps[999]).ok());   // a tombstone in memory

    std::vector<ChunkIndex::UsageChange> changes;
    for (const auto& fp : fps) changes.push_back({fp, 2, 5, kNoContainer});
    for (size_t i = 0; i < 10; i++) changes.push_back({fps[i], -1, 6, kNoContainer});
    changes.push_back({Fp(99999), 1, 6, 30});  // no entry
    std::vector<ChunkIndex::UsageOutcome> out;
    const uint64_t before = cluster_->stats().TotalOps();
    ASSERT_TRUE(idx->AddUsageMany(changes, &out).ok());
    EXPECT_LE(cluster_->stats().TotalOps() - before, 16u) << "one omap read per shard at most";
    ASSERT_EQ(out.size(), changes.size());
    for (size_t i = 0; i < 999; i++) {
      ASSERT_TRUE(out[i].status.ok()) << i << ": " << out[i].status.ToString();
      EXPECT_TRUE(out[i].applied);
      EXPECT_EQ(out[i].usage, 2u);
    }
    EXPECT_TRUE(out[999].status.IsNotFound()) << "an erased entry is not counted";
    for (size_t i = 1000; i < 1010; i++) {
      ASSERT_TRUE(out[i].status.ok());
      EXPECT_EQ(out[i].usage, 1u);
    }
    EXPECT_TRUE(out.back().status.IsNotFound());

    // The same events again (a replay after a crash): counted once.
    ASSERT_TRUE(idx->Flush().ok());
    ASSERT_TRUE(idx->AddUsageMany(changes, &out).ok());
    for (size_t i = 0; i < 1010; i++) {
      if (i == 999) continue;
      ASSERT_TRUE(out[i].status.ok()) << i;
      EXPECT_FALSE(out[i].applied) << i;
    }
    ASSERT_TRUE(idx->Close().ok());
  }
  auto idx = MustOpenIndex();
  ASSERT_TRUE(idx);
  ChunkIndexEntry e;
  ASSERT_TRUE(idx->Lookup(fps[0], &e).ok());
  EXPECT_EQ(e.usage_count, 1u);
  EXPECT_EQ(e.last_event_id, 6u);
  ASSERT_TRUE(idx->Lookup(fps[500], &e).ok());
  EXPECT_EQ(e.usage_count, 2u);
  EXPECT_EQ(e.last_event_id, 5u);
  EXPECT_TRUE(idx->Lookup(fps[999], &e).IsNotFound());
}

// Figures, not a timed test: run with --gtest_also_run_disabled_tests.
TEST_F(RadosChunkTableTest, DISABLED_MeasureKeysPerSecond) {
  const size_t n = 100000;
  std::mt19937_64 rng(42);
  std::vector<Fingerprint> fps(n);
  for (auto& fp : fps) {
    fp.size = 20;
    for (size_t i = 0; i < 20; i += 8) {
      uint64_t r = rng();
      std::memcpy(fp.bytes + i, &r, std::min<size_t>(8, 20 - i));
    }
  }
  for (uint32_t shards : {64u, 256u}) {
    auto o = Options(shards);
    o.rados.store = rados_.store + "-" + std::to_string(shards);
    std::shared_ptr<RadosCluster> cluster;
    ASSERT_TRUE(RadosCluster::Shared(o.rados, &cluster).ok());
    auto t = MustOpen(o);
    ASSERT_TRUE(t);
    for (size_t batch : {size_t{16384}, size_t{65536}}) {
      // Apply in ChunkIndex-sized batches, then GetMany in the same batches.
      double apply_s = 0, get_s = 0;
      uint64_t apply_ops = 0, get_ops = 0;
      for (size_t i = 0; i < n; i += batch) {
        std::vector<ChunkTable::Op> ops;
        for (size_t j = i; j < std::min(n, i + batch); j++) ops.push_back({fps[j], Entry(j), false});
        const uint64_t o0 = cluster->stats().TotalOps();
        auto t0 = std::chrono::steady_clock::now();
        ASSERT_TRUE(t->Apply(ops).ok());
        apply_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        apply_ops += cluster->stats().TotalOps() - o0;
      }
      for (size_t i = 0; i < n; i += batch) {
        std::vector<Fingerprint> keys(fps.begin() + i, fps.begin() + std::min(n, i + batch));
        std::vector<ChunkIndexEntry> entries;
        std::vector<bool> found;
        const uint64_t o0 = cluster->stats().TotalOps();
        auto t0 = std::chrono::steady_clock::now();
        ASSERT_TRUE(t->GetMany(keys, &entries, &found).ok());
        get_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        get_ops += cluster->stats().TotalOps() - o0;
        for (bool f : found) ASSERT_TRUE(f);
      }
      std::printf("shards %u batch %zu: Apply (%s) %.0f keys/s (%.4f ops/key, %.1f keys/op), GetMany %.0f keys/s "
                  "(%.4f ops/key, %.1f keys/op)\n",
                  shards, batch, batch == 16384 ? "new keys" : "overwrites", n / apply_s, double(apply_ops) / n, double(n) / apply_ops, n / get_s,
                  double(get_ops) / n, double(n) / get_ops);
    }
    {
      uint64_t seen = 0;
      const uint64_t o0 = cluster->stats().TotalOps();
      auto t0 = std::chrono::steady_clock::now();
      ASSERT_TRUE(t->ForEachEntry([&](const Fingerprint&, const ChunkIndexEntry&) { seen++; }).ok());
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_EQ(seen, n);
      std::printf("shards %u ForEachEntry: %.0f entries/s (%llu ops)\n", shards, seen / s,
                  static_cast<unsigned long long>(cluster->stats().TotalOps() - o0));
    }
    // Small batches, as a write run's prefetch makes them (1 MiB of 8 KiB chunks).
    const size_t small = 128;
    uint64_t ops0 = cluster->stats().TotalOps();
    auto t0 = std::chrono::steady_clock::now();
    size_t done = 0;
    for (size_t i = 0; i + small <= 20000; i += small, done += small) {
      std::vector<Fingerprint> keys(fps.begin() + i, fps.begin() + i + small);
      std::vector<ChunkIndexEntry> entries;
      std::vector<bool> found;
      ASSERT_TRUE(t->GetMany(keys, &entries, &found).ok());
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("shards %u GetMany of %zu keys: %.0f keys/s (%.3f ops/key)\n", shards, small, done / s,
                double(cluster->stats().TotalOps() - ops0) / done);
    // Cleanup of this namespace.
    librados::IoCtx& io = cluster->index();
    std::vector<std::string> names;
    for (auto it = io.nobjects_begin(); it != io.nobjects_end(); ++it) names.push_back(it->get_oid());
    for (const auto& name : names) io.remove(name);
  }
}

}  // namespace
}  // namespace dedupv1

// Cluster-wide dedup (storage.rados.dedup-scope = cluster, docs/design-15.md
// 2.3-2.5): gateway slots of one store share the chunk index, so a chunk
// stored through one slot is found by every other. Two DedupSystems (slots
// gw-a and gw-b) in one process, each in a namespace of its own per test.
// Needs the test cluster (DEDUPV1_TEST_CEPH_CONF).
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "core/base/testutil.h"
#include "core/engine/cluster_testutil.h"
#include "core/engine/system_testutil.h"
#include "core/engine/usage_counter.h"
#include "core/rados/rados_env_testutil.h"
#include "index/block_index.h"
#include "index/rados_shared_chunk_table.h"

namespace dedupv1 {
namespace {

constexpr uint64_t kMiB = 1 << 20;

using test::ClusterOptions;
using test::OpenStoreOrFail;

// A backup of |mib| MiB: random MiB pieces, every fourth one a repeat of an
// earlier one (dedup inside the backup too).
std::vector<uint8_t> Piece(uint64_t seed, uint64_t i) {
  return test::RandomBytes(kMiB, seed * 1000 + (i % 4 == 3 ? i / 2 : i));
}

Status WriteBackup(DedupSystem* sys, const std::string& volume, uint64_t seed, uint64_t mib) {
  Volume* v = nullptr;
  Status s = sys->GetVolume(volume, &v);
  for (uint64_t i = 0; s.ok() && i < mib; i++) {
    const std::vector<uint8_t> d = Piece(seed, i);
    s = v->Write(i * kMiB, kMiB, d.data(), false);
  }
  if (s.ok()) s = v->Sync();
  return s;
}

::testing::AssertionResult BackupReadsBack(DedupSystem* sys, const std::string& volume, uint64_t seed, uint64_t mib) {
  Volume* v = test::Vol(sys, volume);
  if (v == nullptr) return ::testing::AssertionFailure() << "no volume " << volume;
  for (uint64_t i = 0; i < mib; i++) {
    ::testing::AssertionResult r = test::ReadsBack(v, i * kMiB, Piece(seed, i));
    if (!r) return r << " (" << volume << ", MiB " << i << ")";
  }
  return ::testing::AssertionSuccess();
}

// Per fingerprint the containers the volume's block mappings name, and how
// many mappings reference it (the usage counting rule).
struct References {
  std::map<Fingerprint, std::set<ContainerId>> containers;
  std::map<Fingerprint, int64_t> count;
};

void AddReferences(DedupSystem* sys, const std::string& volume, References* refs) {
  Volume* v = test::Vol(sys, volume);
  ASSERT_NE(v, nullptr);
  const uint32_t bs = sys->options().block_size;
  for (uint64_t b = 0; b < v->size() / bs; b++) {
    BlockMapping m;
    Status s = sys->block_index()->Get(BlockId{v->id(), b}, &m);
    if (s.IsNotFound()) continue;
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::map<Fingerprint, ContainerId> fps;
    ReferencedChunks(m, &fps);
    for (const auto& [fp, c] : fps) refs->count[fp]++;
    for (const BlockMappingItem& item : m.items()) {
      if (!item.IsZero()) refs->containers[item.fp].insert(item.container);
    }
  }
}

class GatewayClusterDedup : public test::ClusterStoreTest {
 protected:
  // A read-only view of the shared table (slot 0).
  std::unique_ptr<RadosSharedChunkTable> SharedTable() {
    RadosSharedChunkTableOptions o;
    o.rados = rados_;
    o.shards = 8;
    std::unique_ptr<RadosSharedChunkTable> t;
    Status s = RadosSharedChunkTable::Open(o, &t);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return t;
  }
};

TEST_F(GatewayClusterDedup, SameBackupThroughASecondGatewayStoresUnderOnePercent) {
  constexpr uint64_t kBackupMiB = 32;
  test::TempDir dir_a, dir_b;
  const Options a_opts = ClusterOptions(dir_a.path(), rados_, "gw-a", 40 * kMiB);
  const Options b_opts = ClusterOptions(dir_b.path(), rados_, "gw-b", 40 * kMiB);
  ASSERT_FALSE(HasFailure());
  {
    std::unique_ptr<DedupSystem> a = OpenStoreOrFail(a_opts);
    ASSERT_TRUE(a);
    Status s = WriteBackup(a.get(), "vol-gw-a", 7, kBackupMiB);
    ASSERT_TRUE(s.ok()) << s.ToString();
    const uint64_t a_new = a->stats().bytes_new.load();
    EXPECT_GT(a_new, kBackupMiB * kMiB / 2);  // the backup's distinct pieces were stored by A

    std::unique_ptr<DedupSystem> b = OpenStoreOrFail(b_opts);
    ASSERT_TRUE(b);
    s = WriteBackup(b.get(), "vol-gw-b", 7, kBackupMiB);
    ASSERT_TRUE(s.ok()) << s.ToString();
    const uint64_t b_new = b->stats().bytes_new.load();
    EXPECT_LT(b_new, kBackupMiB * kMiB / 100) << "B stored " << b_new << " new bytes of a " << kBackupMiB
                                             << " MiB backup A had stored";
    const ChunkClaimsStats bc = b->chunk_index()->stats().claims;
    EXPECT_GT(bc.foreign_hits, 0u);
    std::printf("backup %llu bytes: A stored %llu new bytes, B %llu (foreign hits %llu, flips on behalf %llu)\n",
                (unsigned long long)(kBackupMiB * kMiB), (unsigned long long)a_new, (unsigned long long)b_new,
                (unsigned long long)bc.foreign_hits, (unsigned long long)bc.flips_on_behalf);
    EXPECT_TRUE(BackupReadsBack(a.get(), "vol-gw-a", 7, kBackupMiB));
    EXPECT_TRUE(BackupReadsBack(b.get(), "vol-gw-b", 7, kBackupMiB));
    // B's mappings name A's containers.
    References refs;
    AddReferences(b.get(), "vol-gw-b", &refs);
    size_t foreign = 0;
    for (const auto& [fp, cs] : refs.containers) {
      for (ContainerId c : cs) foreign += (c >> 48) == a->gateway_record().slot ? 1 : 0;
    }
    EXPECT_GT(foreign, refs.containers.size() * 9 / 10);
    ASSERT_TRUE(a->Close().ok());
    ASSERT_TRUE(b->Close().ok());
  }
  // Reopened (B first: its mappings name A's containers while A is closed).
  std::unique_ptr<DedupSystem> b = OpenStoreOrFail(b_opts);
  ASSERT_TRUE(b);
  EXPECT_TRUE(BackupReadsBack(b.get(), "vol-gw-b", 7, kBackupMiB));
  std::unique_ptr<DedupSystem> a = OpenStoreOrFail(a_opts);
  ASSERT_TRUE(a);
  EXPECT_TRUE(BackupReadsBack(a.get(), "vol-gw-a", 7, kBackupMiB));
  EXPECT_EQ(b->recovery().mappings_dropped, 0u);
  ASSERT_TRUE(b->Close().ok());
  ASSERT_TRUE(a->Close().ok());
}

TEST_F(GatewayClusterDedup, ConcurrentSameNewDataKeepsOneIndexedCopy) {
  constexpr uint64_t kMiBs = 12;
  test::TempDir dir_a, dir_b;
  const Options a_opts = ClusterOptions(dir_a.path(), rados_, "gw-a", 16 * kMiB);
  const Options b_opts = ClusterOptions(dir_b.path(), rados_, "gw-b", 16 * kMiB);
  ASSERT_FALSE(HasFailure());
  std::unique_ptr<DedupSystem> a = OpenStoreOrFail(a_opts), b = OpenStoreOrFail(b_opts);
  ASSERT_TRUE(a && b);
  Status wa, wb;
  std::thread ta([&] { wa = WriteBackup(a.get(), "vol-gw-a", 11, kMiBs); });
  std::thread tb([&] { wb = WriteBackup(b.get(), "vol-gw-b", 11, kMiBs); });
  ta.join();
  tb.join();
  ASSERT_TRUE(wa.ok()) << wa.ToString();
  ASSERT_TRUE(wb.ok()) << wb.ToString();
  EXPECT_TRUE(BackupReadsBack(a.get(), "vol-gw-a", 11, kMiBs));
  EXPECT_TRUE(BackupReadsBack(b.get(), "vol-gw-b", 11, kMiBs));
  // Counted and flipped: every durable event's usage is in the slots' keys.
  ASSERT_TRUE(a->Checkpoint().ok());
  ASSERT_TRUE(b->Checkpoint().ok());

  References refs;
  AddReferences(a.get(), "vol-gw-a", &refs);
  AddReferences(b.get(), "vol-gw-b", &refs);
  ASSERT_FALSE(refs.count.empty());
  std::unique_ptr<RadosSharedChunkTable> table = SharedTable();
  ASSERT_TRUE(table);
  std::vector<Fingerprint> fps;
  for (const auto& [fp, n] : refs.count) fps.push_back(fp);
  std::vector<std::optional<SharedEntry>> entries;
  ASSERT_TRUE(table->LookupMany(fps, &entries).ok());
  size_t mapped_elsewhere = 0;
  for (size_t i = 0; i < fps.size(); i++) {
    ASSERT_TRUE(entries[i].has_value()) << fps[i].ToHex();
    EXPECT_EQ(entries[i]->state, SharedEntry::State::kCommitted) << entries[i]->ToString();
    // Both slots' mappings name the entry's container (one indexed copy),
    // unless a claim was taken over after the hold (then the slot keeps its
    // own committed copy: counted below, must be rare).
    for (ContainerId c : refs.containers[fps[i]]) mapped_elsewhere += c != entries[i]->container ? 1 : 0;
    int64_t sum = 0;
    ASSERT_TRUE(table->UsageSum(fps[i], &sum).ok());
    EXPECT_EQ(sum, refs.count[fps[i]]) << fps[i].ToHex();
  }
  const ChunkClaimsStats ca = a->chunk_index()->stats().claims, cb = b->chunk_index()->stats().claims;
  EXPECT_EQ(mapped_elsewhere, ca.takeovers + cb.takeovers);
  EXPECT_EQ(ca.usage_of_missing_entry + cb.usage_of_missing_entry, 0u);
  // The slots stored the same new data at once: both found the other's
  // chunks (as lost claims or as lookups) and neither lost data.
  std::printf("claims a=%llu (lost %llu, waits %llu, %llu bytes wasted) b=%llu (lost %llu, waits %llu, %llu bytes wasted); "
              "foreign hits a=%llu b=%llu\n",
              (unsigned long long)ca.claims, (unsigned long long)ca.claims_lost, (unsigned long long)ca.claim_waits,
              (unsigned long long)ca.bytes_wasted, (unsigned long long)cb.claims, (unsigned long long)cb.claims_lost,
              (unsigned long long)cb.claim_waits, (unsigned long long)cb.bytes_wasted,
              (unsigned long long)ca.foreign_hits, (unsigned long long)cb.foreign_hits);
  EXPECT_GT(ca.claims_lost + cb.claims_lost + ca.foreign_hits + cb.foreign_hits, 0u);
  ASSERT_TRUE(a->Close().ok());
  ASSERT_TRUE(b->Close().ok());
}

// index/lookup_skip_policy.h: after a stretch of new data, B reads only a
// probe of each run and claims the rest without looking it up. Meeting a
// backup A stored, the probe finds A's chunks and the run is looked up in
// full: B maps A's copies and stores (almost) nothing twice; everything
// reads back, also after a reopen.
TEST_F(GatewayClusterDedup, ClaimsWithoutLookupStillMapTheExistingCopies) {
  constexpr uint64_t kNewMiB = 40, kBackupMiB = 12;
  test::TempDir dir_a, dir_b;
  const Options a_opts = ClusterOptions(dir_a.path(), rados_, "gw-a", 16 * kMiB);
  const Options b_opts = ClusterOptions(dir_b.path(), rados_, "gw-b", 56 * kMiB);
  ASSERT_FALSE(HasFailure());
  std::unique_ptr<DedupSystem> a = OpenStoreOrFail(a_opts), b = OpenStoreOrFail(b_opts);
  ASSERT_TRUE(a && b);
  Status s = WriteBackup(a.get(), "vol-gw-a", 7, kBackupMiB);
  ASSERT_TRUE(s.ok()) << s.ToString();
  // B: new data only (its lookups all miss), then A's backup behind it.
  Volume* v = test::Vol(b.get(), "vol-gw-b");
  ASSERT_NE(v, nullptr);
  for (uint64_t i = 0; i < kNewMiB; i++) {
    const std::vector<uint8_t> d = test::RandomBytes(kMiB, 900000 + i);
    ASSERT_TRUE(v->Write(i * kMiB, kMiB, d.data(), false).ok());
  }
  ASSERT_TRUE(v->Sync().ok());
  const ChunkIndexStats after_new = b->chunk_index()->stats();
  EXPECT_GT(after_new.lookups_skipped, 0u) << kNewMiB << " MiB of new data did not make B skip lookups";
  std::printf("B after %llu MiB of new data: %llu lookups, %llu of them skipped\n", (unsigned long long)kNewMiB,
              (unsigned long long)after_new.lookups, (unsigned long long)after_new.lookups_skipped);
  for (uint64_t i = 0; i < kBackupMiB; i++) {
    const std::vector<uint8_t> d = Piece(7, i);
    ASSERT_TRUE(v->Write((kNewMiB + i) * kMiB, kMiB, d.data(), false).ok());
  }
  ASSERT_TRUE(v->Sync().ok());
  const ChunkIndexStats st = b->chunk_index()->stats();
  // The first run into A's backup finds A's chunks in its probe and is
  // looked up in full: (almost) nothing is stored twice.
  EXPECT_GT(st.disk_hits, after_new.disk_hits) << "B never looked up again";
  std::printf("B skipped %llu lookups, %llu of those chunks existed (%llu bytes wasted); table hits after %llu\n",
              (unsigned long long)st.lookups_skipped, (unsigned long long)st.skipped_that_existed,
              (unsigned long long)st.claims.bytes_wasted, (unsigned long long)(st.disk_hits - after_new.disk_hits));
  EXPECT_LT(st.claims.bytes_wasted, kBackupMiB * kMiB / 20);
  // Every chunk of A's backup in B's volume names A's copy.
  References a_refs, b_refs;
  AddReferences(a.get(), "vol-gw-a", &a_refs);
  AddReferences(b.get(), "vol-gw-b", &b_refs);
  size_t checked = 0;
  for (const auto& [fp, cs] : a_refs.containers) {
    auto it = b_refs.containers.find(fp);
    if (it == b_refs.containers.end()) continue;  // a chunk cut differently at the piece borders
    checked++;
    EXPECT_EQ(it->second, cs) << fp.ToHex() << " has a copy of B's own";
  }
  EXPECT_GT(checked, a_refs.containers.size() * 9 / 10);
  for (uint64_t i = 0; i < kBackupMiB; i++) {
    EXPECT_TRUE(test::ReadsBack(v, (kNewMiB + i) * kMiB, Piece(7, i))) << "MiB " << i;
  }
  ASSERT_TRUE(b->Close().ok());
  b.reset();
  b = OpenStoreOrFail(b_opts);
  ASSERT_TRUE(b);
  v = test::Vol(b.get(), "vol-gw-b");
  ASSERT_NE(v, nullptr);
  for (uint64_t i = 0; i < kBackupMiB; i++) {
    EXPECT_TRUE(test::ReadsBack(v, (kNewMiB + i) * kMiB, Piece(7, i))) << "MiB " << i << " after reopen";
  }
  ASSERT_TRUE(b->Close().ok());
  ASSERT_TRUE(a->Close().ok());
}

TEST_F(GatewayClusterDedup, ScopeIsFixedAtCreation) {
  test::TempDir dir_a, dir_b;
  {
    std::unique_ptr<DedupSystem> a = OpenStoreOrFail(ClusterOptions(dir_a.path(), rados_, "gw-a", 4 * kMiB));
    ASSERT_TRUE(a);
    Status s = WriteBackup(a.get(), "vol-gw-a", 3, 1);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(a->Close().ok());
  }
  // A gateway-scope slot on the cluster-scope store is refused, naming the key.
  Options b_opts = ClusterOptions(dir_b.path(), rados_, "gw-b", 4 * kMiB);
  b_opts.chunk_index.cluster_scope = false;
  std::unique_ptr<DedupSystem> b;
  Status s = DedupSystem::OpenStore(b_opts, Env::Default(), &b);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("storage.rados.dedup-scope"), std::string::npos) << s.ToString();
  // And GC runs the cluster rule set (core/engine/cluster_gc_rules.h): a
  // slot that lost no claim and has no dead inbox has nothing to reclaim.
  std::unique_ptr<DedupSystem> a = OpenStoreOrFail(ClusterOptions(dir_a.path(), rados_, "gw-a", 4 * kMiB));
  ASSERT_TRUE(a);
  s = a->RunGc();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(a->gc_stats().containers_deleted + a->gc_stats().containers_merged, 0u);
  EXPECT_TRUE(BackupReadsBack(a.get(), "vol-gw-a", 3, 1));
  ASSERT_TRUE(a->Close().ok());
}

}  // namespace
}  // namespace dedupv1

// Container rewriting through the whole engine (core/engine/rewrite_policy.h):
// a backup that takes a little from many old containers stores those chunks
// again next to its new data, within the budget; every read stays correct;
// once the old backup is gone, garbage collection gives the old copies back
// (core/engine/spare_copies.h) and the usage counts match a recount.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "core/base/testutil.h"
#include "core/engine/crash_testutil.h"
#include "core/engine/dedup_system.h"
#include "core/engine/system_testutil.h"

namespace dedupv1 {
namespace {

constexpr uint64_t kVolumeSize = 16 << 20;
constexpr size_t kContainerSize = 1 << 20;
constexpr uint64_t kPiece = 64 << 10;  // what the second backup takes from the first, per MiB

Options RewriteOptionsFor(const std::string& dir, bool rewrite) {
  Options o = test::GcTestOptions(dir);
  EXPECT_EQ(o.chunk_store.container_size, kContainerSize);
  o.volumes = {{"first", kVolumeSize}, {"second", kVolumeSize}};
  o.rewrite.enabled = rewrite;
  o.rewrite.sparse_bytes = 256 << 10;
  o.rewrite.limit = 0.1;
  EXPECT_TRUE(o.Finish().ok());
  return o;
}

// The second backup: new data, with kPiece bytes of |first| copied in per
// MiB, from far-apart places of it (each piece from another container).
std::vector<uint8_t> SecondBackup(const std::vector<uint8_t>& first) {
  std::vector<uint8_t> second = test::RandomBytes(kVolumeSize, 2);
  for (uint64_t mib = 0; mib < kVolumeSize >> 20; mib++) {
    const uint64_t from = ((mib * 7) % (kVolumeSize >> 20)) << 20;
    std::memcpy(second.data() + (mib << 20) + 100000, first.data() + from + 300000, kPiece);
  }
  return second;
}

// Writes |first| into volume "first", then |second| into "second", each synced.
void WriteBothBackups(DedupSystem* sys, const std::vector<uint8_t>& first, const std::vector<uint8_t>& second) {
  Volume* a = test::Vol(sys, "first");
  Volume* b = test::Vol(sys, "second");
  ASSERT_TRUE(a->Write(0, kVolumeSize, first.data(), false).ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(b->Write(0, kVolumeSize, second.data(), false).ok());
  ASSERT_TRUE(b->Sync().ok());
}

TEST(ContainerRewriteTest, SparseDuplicatesAreStoredAgainAndTheirOldCopiesGivenBackOnceUnused) {
  test::TempDir dir;
  const Options o = RewriteOptionsFor(dir.path(), true);
  const std::vector<uint8_t> first = test::RandomBytes(kVolumeSize, 1);
  const std::vector<uint8_t> second = SecondBackup(first);
  uint64_t used_end = 0;
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* a = test::Vol(sys.get(), "first");
    Volume* b = test::Vol(sys.get(), "second");
    ASSERT_TRUE(a->Write(0, kVolumeSize, first.data(), false).ok());
    ASSERT_TRUE(a->Sync().ok());
    EXPECT_EQ(sys->stats().chunks_rewritten.load(), 0u);  // nothing known, nothing to rewrite
    ASSERT_TRUE(b->Write(0, kVolumeSize, second.data(), false).ok());
    ASSERT_TRUE(b->Sync().ok());
    const uint64_t rewritten = sys->stats().bytes_rewritten.load();
    // 16 pieces of 64 KiB, each from a container of its own (sparse): the
    // whole chunks inside each are known, and all of them fit the budget
    // (10% of the second volume's 16 MiB).
    EXPECT_GE(sys->stats().chunks_rewritten.load(), 16u);
    EXPECT_GT(rewritten, 16 * kPiece / 4);  // a piece holds about two thirds of its bytes in whole chunks
    EXPECT_LE(rewritten, kVolumeSize / 10);
    EXPECT_TRUE(test::ReadsBack(a, 0, first));
    EXPECT_TRUE(test::ReadsBack(b, 0, second));

    // While the first backup is there, a round gives no copy back.
    ASSERT_TRUE(sys->RunGc().ok());
    EXPECT_EQ(sys->gc_stats().spare_copies_dead, 0u);
    EXPECT_TRUE(test::ReadsBack(a, 0, first));

    // The first backup goes: its chunks are garbage, and so are the old
    // copies of the rewritten ones, although the second backup still uses
    // their fingerprints (through the new copies).
    ASSERT_TRUE(a->Unmap(0, kVolumeSize).ok());
    ASSERT_TRUE(a->Sync().ok());
    ASSERT_TRUE(sys->RunGc().ok());
    const GcStats gc = sys->gc_stats();
    EXPECT_GE(gc.spare_copies_dead, 16u);
    EXPECT_LE(gc.spare_copies_dead, sys->stats().chunks_rewritten.load());
    // Only the second backup's data is left (plus its rewritten copies and
    // a container of slack at the ends).
    used_end = test::UsedBytes(sys.get());
    EXPECT_LE(used_end, kVolumeSize + 2 * kContainerSize);
    EXPECT_TRUE(test::ReadsBack(b, 0, second));
    ExpectUsageMatchesRecount(sys.get());
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = test::OpenSystemOrDie(o);
  Volume* b = test::Vol(sys.get(), "second");
  EXPECT_TRUE(test::ReadsBack(b, 0, second));
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_LE(test::UsedBytes(sys.get()), used_end);
  EXPECT_TRUE(test::ReadsBack(b, 0, second));
  ExpectUsageMatchesRecount(sys.get());
}

// A spare copy in a container that holds no GC candidate: the first backup
// replaces exactly the chunks the second one had stored again (their old
// copies' only references), so no fingerprint reaches usage 0 and no
// container holds a candidate. The usage counter queues the old copies'
// containers (UsageCounter::TakeReleasedCopies), and the next round gives
// every such copy back without waiting for the full scan after a restart.
TEST(ContainerRewriteTest, OldCopiesLetGoOfAreGivenBackWithoutACandidate) {
  test::TempDir dir;
  const Options o = RewriteOptionsFor(dir.path(), true);
  const std::vector<uint8_t> first = test::RandomBytes(kVolumeSize, 1);
  std::vector<uint8_t> now = first;  // what the first volume holds
  const std::vector<uint8_t> second = SecondBackup(first);
  auto sys = test::OpenSystemOrDie(o);
  Volume* a = test::Vol(sys.get(), "first");
  Volume* b = test::Vol(sys.get(), "second");
  WriteBothBackups(sys.get(), first, second);
  ASSERT_GE(sys->stats().chunks_rewritten.load(), 16u);
  ASSERT_TRUE(sys->RunGc().ok());  // the full scan after open: every spare copy still mapped
  EXPECT_EQ(sys->gc_stats().spare_copies_dead, 0u);
  // A deferred round would leave its containers pending for the next one,
  // which would then scan them without the usage counter's queue.
  ASSERT_EQ(sys->gc_stats().rounds_deferred, 0u);

  // The first volume's items naming a copy the chunk index does not name.
  struct Range {
    uint64_t offset;
    uint32_t size;
  };
  std::vector<Range> spare_refs;  // a chunk across a block boundary is two items, one copy
  std::set<std::pair<ContainerId, Fingerprint>> spare_copies;
  ASSERT_TRUE(sys->block_index()
                  ->ForEachBlock([&](const BlockId& id, const BlockMapping& m) {
                    if (id.volume != a->id()) return true;
                    uint32_t pos = 0;
                    for (const BlockMappingItem& item : m.items()) {
                      ChunkIndexEntry entry;
                      if (!item.IsZero() && sys->chunk_index()->Lookup(item.fp, &entry).ok() &&
                          sys->chunk_store()->Resolve(entry.container) != sys->chunk_store()->Resolve(item.container)) {
                        spare_refs.push_back({id.block * o.block_size + pos, item.size});
                        spare_copies.insert({sys->chunk_store()->Resolve(item.container), item.fp});
                      }
                      pos += item.size;
                    }
                    return true;
                  })
                  .ok());
  ASSERT_GE(spare_copies.size(), 16u);
  uint64_t seed = 100;
  for (const Range& r : spare_refs) {
    const std::vector<uint8_t> fresh = test::RandomBytes(r.size, seed++);
    std::memcpy(now.data() + r.offset, fresh.data(), r.size);
    ASSERT_TRUE(a->Write(r.offset, r.size, fresh.data(), false).ok());
  }
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(sys->Checkpoint().ok());
  EXPECT_EQ(sys->gc_stats().candidates, 0u) << "a candidate would lead GC there anyway: nothing to prove";
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_EQ(sys->gc_stats().spare_copies_dead, spare_copies.size());
  EXPECT_TRUE(test::ReadsBack(a, 0, now));
  EXPECT_TRUE(test::ReadsBack(b, 0, second));
  ExpectUsageMatchesRecount(sys.get());
  ASSERT_TRUE(sys->Close().ok());
  sys = test::OpenSystemOrDie(o);
  EXPECT_TRUE(test::ReadsBack(test::Vol(sys.get(), "first"), 0, now));
  EXPECT_TRUE(test::ReadsBack(test::Vol(sys.get(), "second"), 0, second));
}

// Without rewriting the same two backups leave the old containers in place
// once the first backup is gone: the second one's pieces keep them.
TEST(ContainerRewriteTest, WithoutRewritingTheOldContainersStay) {
  test::TempDir dir;
  const Options o = RewriteOptionsFor(dir.path(), false);
  const std::vector<uint8_t> first = test::RandomBytes(kVolumeSize, 1);
  const std::vector<uint8_t> second = SecondBackup(first);
  auto sys = test::OpenSystemOrDie(o);
  Volume* a = test::Vol(sys.get(), "first");
  Volume* b = test::Vol(sys.get(), "second");
  WriteBothBackups(sys.get(), first, second);
  EXPECT_EQ(sys->stats().chunks_rewritten.load(), 0u);
  ASSERT_TRUE(a->Unmap(0, kVolumeSize).ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_EQ(sys->gc_stats().spare_copies_dead, 0u);
  EXPECT_TRUE(test::ReadsBack(b, 0, second));
  ExpectUsageMatchesRecount(sys.get());
}

TEST(ContainerRewriteTest, ClusterScopeRefusesTheOption) {
  Options o;
  o.data_dir = "/nonexistent";
  o.storage_backend = "rados";
  o.rados.gateway = "a";
  o.chunk_index.cluster_scope = true;
  o.rewrite.enabled = true;
  Status s = o.Finish();
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.ToString().find("dedup.rewrite"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace dedupv1

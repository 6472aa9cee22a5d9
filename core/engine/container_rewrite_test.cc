// Container rewriting through the whole engine (core/engine/rewrite_policy.h):
// a backup that takes a little from many old containers stores those chunks
// again next to its new data, within the budget; every read stays correct;
// once the old backup is gone, garbage collection gives the old copies back
// (core/engine/spare_copies.h) and the usage counts match a recount.
#include <gtest/gtest.h>

#include <cstring>

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
  ASSERT_TRUE(a->Write(0, kVolumeSize, first.data(), false).ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(b->Write(0, kVolumeSize, second.data(), false).ok());
  ASSERT_TRUE(b->Sync().ok());
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

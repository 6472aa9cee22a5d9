// Volumes of policy out-of-band (core/engine/background_dedup.h) through the
// whole engine: writes land unshared (known chunks stored beside the copy
// the index names, which stays), the pass remaps cold blocks to the index's
// copies, GC gives the volume's own copies back, the hotspot rule holds
// blocks written in the current or previous period back, and a write
// between a pass's read and its install wins; reads, usage recount and
// reopen check out.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include "core/base/testutil.h"
#include "core/engine/crash_testutil.h"
#include "core/engine/dedup_system.h"
#include "core/engine/system_testutil.h"

namespace dedupv1 {
namespace {

constexpr uint64_t kSize = 8 << 20;

Options OutOfBandOptions(const std::string& dir) {
  Options o = test::GcTestOptions(dir);
  o.volumes = {{"inline-a", kSize}, {"oob-b", kSize, DedupPolicy::kOutOfBand}};
  // Periods start only when a test says so (StartBackgroundDedupPeriod).
  o.background.period_ms = 24ull * 3600 * 1000;
  EXPECT_TRUE(o.Finish().ok());
  return o;
}

TEST(BackgroundDedupTest, WritesLandUnsharedAndThePassSharesThemWithGcGivingTheCopiesBack) {
  test::TempDir dir;
  const Options o = OutOfBandOptions(dir.path());
  const std::vector<uint8_t> data = test::RandomBytes(kSize / 2, 11);
  auto sys = test::OpenSystemOrDie(o);
  Volume* a = test::Vol(sys.get(), "inline-a");
  Volume* b = test::Vol(sys.get(), "oob-b");
  EXPECT_EQ(b->policy(), DedupPolicy::kOutOfBand);
  ASSERT_TRUE(sys->RunGc().ok());  // the full scan after open, out of the way

  ASSERT_TRUE(a->Write(0, kSize / 2, data.data(), false).ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(sys->Checkpoint().ok());
  const uint64_t after_a = test::UsedBytes(sys.get());
  // The out-of-band volume writes the same data: stored again, unshared.
  ASSERT_TRUE(b->Write(0, kSize / 2, data.data(), false).ok());
  ASSERT_TRUE(b->Sync().ok());
  ASSERT_TRUE(sys->Checkpoint().ok());
  EXPECT_GE(sys->stats().bytes_stored_again.load(), kSize / 2 - (64 << 10)) << "all but the chunks at the edges";
  const uint64_t after_b = test::UsedBytes(sys.get());
  EXPECT_GE(after_b - after_a, kSize / 2 - (64 << 10));
  // The index still names a's copies: a GC round now frees nothing of b's.
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_GE(test::UsedBytes(sys.get()), after_b - (256 << 10));
  EXPECT_TRUE(test::ReadsBack(b, 0, data));

  // The pass (every block taken for cold) remaps b's blocks to a's copies.
  ASSERT_TRUE(sys->RunBackgroundDedup(/*ignore_hotspots=*/true).ok());
  const BackgroundDedup::Stats st = sys->background_dedup_stats();
  const uint64_t blocks = (kSize / 2) / o.block_size;
  EXPECT_GE(st.blocks_examined, blocks);
  EXPECT_GE(st.blocks_remapped, blocks - 1);
  EXPECT_GE(st.bytes_remapped, kSize / 2 - (64 << 10));
  EXPECT_EQ(st.last_error, "");
  EXPECT_TRUE(test::ReadsBack(b, 0, data));
  ExpectUsageMatchesRecount(sys.get());
  // GC gives b's own copies back (the usage counter queued them).
  ASSERT_TRUE(sys->RunGc().ok());
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_LE(test::UsedBytes(sys.get()), after_a + o.chunk_store.container_size)
      << "b's copies must be given back once the pass remapped its blocks";
  EXPECT_TRUE(test::ReadsBack(a, 0, data));
  EXPECT_TRUE(test::ReadsBack(b, 0, data));
  ExpectUsageMatchesRecount(sys.get());

  // A second pass finds nothing more to do.
  ASSERT_TRUE(sys->RunBackgroundDedup(true).ok());
  EXPECT_EQ(sys->background_dedup_stats().blocks_remapped, st.blocks_remapped);
  ASSERT_TRUE(sys->Close().ok());

  sys = test::OpenSystemOrDie(o);
  EXPECT_TRUE(test::ReadsBack(test::Vol(sys.get(), "inline-a"), 0, data));
  EXPECT_TRUE(test::ReadsBack(test::Vol(sys.get(), "oob-b"), 0, data));
  ExpectUsageMatchesRecount(sys.get());
}

// DEDIS's hotspot rule: a block written in the current or the previous
// period is left alone; two period starts later it is cold and remapped. A
// block rewritten meanwhile stays hot for two more periods.
TEST(BackgroundDedupTest, BlocksWrittenInTheCurrentOrPreviousPeriodAreLeftForLater) {
  test::TempDir dir;
  const Options o = OutOfBandOptions(dir.path());
  const std::vector<uint8_t> data = test::RandomBytes(1 << 20, 12);
  auto sys = test::OpenSystemOrDie(o);
  Volume* a = test::Vol(sys.get(), "inline-a");
  Volume* b = test::Vol(sys.get(), "oob-b");
  const uint64_t blocks = data.size() / o.block_size;
  ASSERT_TRUE(a->Write(0, data.size(), data.data(), false).ok());
  // Committed first: a chunk found in a container not committed yet is
  // shared at once (policy off's rule), not stored beside it.
  ASSERT_TRUE(sys->Sync().ok());
  ASSERT_TRUE(b->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(sys->Sync().ok());

  ASSERT_TRUE(sys->RunBackgroundDedup(false).ok());
  EXPECT_EQ(sys->background_dedup_stats().blocks_remapped, 0u) << "written in the current period";
  EXPECT_EQ(sys->background_dedup_stats().hot_blocks_left, blocks);
  sys->StartBackgroundDedupPeriod();
  ASSERT_TRUE(sys->RunBackgroundDedup(false).ok());
  EXPECT_EQ(sys->background_dedup_stats().blocks_remapped, 0u) << "written in the previous period";
  // Block 0 is written again in this period.
  ASSERT_TRUE(b->Write(0, o.block_size, data.data(), false).ok());
  ASSERT_TRUE(sys->Sync().ok());
  sys->StartBackgroundDedupPeriod();
  ASSERT_TRUE(sys->RunBackgroundDedup(false).ok());
  EXPECT_EQ(sys->background_dedup_stats().blocks_remapped, blocks - 1) << "all but the block written again";
  // (The pass's own thread may have run this round first: then the blocks it
  // remapped count as hot too in this call's walk.)
  EXPECT_GE(sys->background_dedup_stats().hot_blocks_left, 1u);
  sys->StartBackgroundDedupPeriod();
  ASSERT_TRUE(sys->RunBackgroundDedup(false).ok());
  EXPECT_EQ(sys->background_dedup_stats().blocks_remapped, blocks);
  EXPECT_EQ(sys->background_dedup_stats().periods, 3u);
  EXPECT_TRUE(test::ReadsBack(b, 0, data));
  ASSERT_TRUE(sys->Checkpoint().ok());  // counts the logged events
  ExpectUsageMatchesRecount(sys.get());
}

// The guard of a remap: a write between the pass's read of a block and its
// install wins (the remap is dropped, the new data reads back), and the
// other blocks are remapped.
TEST(BackgroundDedupTest, AWriteBetweenThePassesReadAndItsInstallWins) {
  test::TempDir dir;
  Options o = OutOfBandOptions(dir.path());
  const std::vector<uint8_t> data = test::RandomBytes(4 * o.block_size, 16);
  const std::vector<uint8_t> other = test::RandomBytes(o.block_size, 17);
  Volume* b = nullptr;
  int hooked = 0;
  o.background.before_remap_install = [&](const BlockId& id) {
    if (hooked++ > 0) return;
    // The first block the pass is about to remap is written meanwhile.
    EXPECT_EQ(id.block, 0u);
    EXPECT_TRUE(b->Write(id.block * o.block_size, o.block_size, other.data(), false).ok());
    EXPECT_TRUE(b->Sync().ok());
  };
  auto sys = test::OpenSystemOrDie(o);
  Volume* a = test::Vol(sys.get(), "inline-a");
  b = test::Vol(sys.get(), "oob-b");
  ASSERT_TRUE(a->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(sys->Sync().ok());
  ASSERT_TRUE(b->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(sys->Sync().ok());
  ASSERT_TRUE(sys->RunBackgroundDedup(true).ok());
  const BackgroundDedup::Stats st = sys->background_dedup_stats();
  EXPECT_EQ(st.blocks_lost_to_writes, 1u);
  EXPECT_EQ(st.blocks_remapped, 3u);
  std::vector<uint8_t> want = data;
  std::copy(other.begin(), other.end(), want.begin());
  EXPECT_TRUE(test::ReadsBack(b, 0, want));
  ASSERT_TRUE(sys->Checkpoint().ok());
  ExpectUsageMatchesRecount(sys.get());
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_TRUE(test::ReadsBack(b, 0, want));
  EXPECT_TRUE(test::ReadsBack(a, 0, data));
}

// Inline volumes are never examined; an out-of-band volume whose data no
// other volume holds has nothing to remap.
TEST(BackgroundDedupTest, OnlyOutOfBandBlocksNamingAnotherCopyAreRemapped) {
  test::TempDir dir;
  const Options o = OutOfBandOptions(dir.path());
  const std::vector<uint8_t> x = test::RandomBytes(1 << 20, 13);
  const std::vector<uint8_t> y = test::RandomBytes(1 << 20, 14);
  auto sys = test::OpenSystemOrDie(o);
  Volume* a = test::Vol(sys.get(), "inline-a");
  Volume* b = test::Vol(sys.get(), "oob-b");
  ASSERT_TRUE(a->Write(0, x.size(), x.data(), false).ok());
  ASSERT_TRUE(b->Write(0, y.size(), y.data(), false).ok());
  ASSERT_TRUE(sys->Sync().ok());
  ASSERT_TRUE(sys->RunBackgroundDedup(true).ok());
  const BackgroundDedup::Stats st = sys->background_dedup_stats();
  EXPECT_EQ(st.blocks_examined, y.size() / o.block_size) << "b's blocks only";
  EXPECT_EQ(st.blocks_remapped, 0u);
  EXPECT_TRUE(test::ReadsBack(a, 0, x));
  EXPECT_TRUE(test::ReadsBack(b, 0, y));
}

// Passes racing writes of the same blocks: a remap is installed only if the
// block is unchanged since the pass read it, so every write's data wins and
// the usage counts stay exact. Bounded: 40 rounds of writes.
TEST(BackgroundDedupTest, PassesRacingWritesLoseToThem) {
  test::TempDir dir;
  const Options o = OutOfBandOptions(dir.path());
  auto sys = test::OpenSystemOrDie(o);
  Volume* a = test::Vol(sys.get(), "inline-a");
  Volume* b = test::Vol(sys.get(), "oob-b");
  // A pool of block contents the inline volume holds, so b's writes of them
  // are known and every pass has remaps to do.
  std::vector<std::vector<uint8_t>> pool;
  for (int i = 0; i < 8; i++) pool.push_back(test::RandomBytes(o.block_size, 100 + i));
  for (size_t i = 0; i < pool.size(); i++) {
    ASSERT_TRUE(a->Write(i * o.block_size, o.block_size, pool[i].data(), false).ok());
  }
  ASSERT_TRUE(a->Sync().ok());
  const uint64_t blocks = 32;
  std::vector<size_t> content(blocks, SIZE_MAX);
  std::atomic<bool> done{false};
  std::thread passes([&] {
    while (!done.load()) {
      Status s = sys->RunBackgroundDedup(true);
      EXPECT_TRUE(s.ok()) << s.ToString();
      if (!s.ok()) break;
    }
  });
  std::mt19937_64 rng(15);
  for (int round = 0; round < 40; round++) {
    for (int w = 0; w < 8; w++) {
      const uint64_t block = rng() % blocks;
      const size_t c = rng() % pool.size();
      ASSERT_TRUE(b->Write(block * o.block_size, o.block_size, pool[c].data(), false).ok());
      content[block] = c;
    }
    ASSERT_TRUE(b->Sync().ok());
  }
  done = true;
  passes.join();
  ASSERT_TRUE(sys->RunBackgroundDedup(true).ok());
  const BackgroundDedup::Stats st = sys->background_dedup_stats();
  std::printf("passes: %llu rounds, %llu blocks remapped, %llu remaps lost to writes\n",
              (unsigned long long)st.rounds, (unsigned long long)st.blocks_remapped,
              (unsigned long long)st.blocks_lost_to_writes);
  EXPECT_GT(st.blocks_remapped, 0u);
  EXPECT_EQ(st.last_error, "");
  ASSERT_TRUE(sys->Checkpoint().ok());  // counts the logged events
  for (uint64_t block = 0; block < blocks; block++) {
    if (content[block] == SIZE_MAX) continue;
    EXPECT_TRUE(test::ReadsBack(b, block * o.block_size, pool[content[block]])) << "block " << block;
  }
  ExpectUsageMatchesRecount(sys.get());
  ASSERT_TRUE(sys->RunGc().ok());
  ASSERT_TRUE(sys->RunGc().ok());
  for (uint64_t block = 0; block < blocks; block++) {
    if (content[block] == SIZE_MAX) continue;
    EXPECT_TRUE(test::ReadsBack(b, block * o.block_size, pool[content[block]])) << "block " << block << " after GC";
  }
  // Everything b holds is shared with a: at most a container of slack is left.
  EXPECT_LE(test::UsedBytes(sys.get()), pool.size() * o.block_size + 2 * o.chunk_store.container_size);
  ExpectUsageMatchesRecount(sys.get());
}

}  // namespace
}  // namespace dedupv1

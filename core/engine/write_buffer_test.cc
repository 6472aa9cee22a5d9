#include "core/engine/write_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

constexpr uint32_t kBlock = 4096;

WriteBuffer::ClaimPolicy Ready(size_t min_ready = 1 << 30) {
  WriteBuffer::ClaimPolicy p;
  p.min_ready_bytes = min_ready;
  p.flush_delay = std::chrono::hours(1);
  return p;
}

TEST(IntervalSetTest, AddMergesRemoveSplits) {
  IntervalSet s;
  s.Add(10, 20);
  s.Add(30, 40);
  s.Add(20, 30);
  ASSERT_EQ(s.ranges().size(), 1u);
  EXPECT_EQ(s.ranges()[0], IntervalSet::Range(10, 40));
  s.Remove(15, 25);
  ASSERT_EQ(s.ranges().size(), 2u);
  EXPECT_EQ(s.bytes(), 20u);
  EXPECT_TRUE(s.Covers(25, 40));
  EXPECT_FALSE(s.Covers(14, 16));
  EXPECT_TRUE(s.Intersects(14, 16));
  EXPECT_FALSE(s.Intersects(15, 25));
}

TEST(WriteBufferTest, OverlayReturnsNewestBytesAndCoverage) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(100, 1);
  buf.Put(3, 50, a.data(), 100, 1);
  std::vector<uint8_t> out(200, 0xEE);
  EXPECT_FALSE(buf.Overlay(3, 0, 200, out.data()));
  EXPECT_EQ(out[49], 0xEE);
  EXPECT_EQ(std::memcmp(out.data() + 50, a.data(), 100), 0);
  EXPECT_TRUE(buf.Overlay(3, 60, 20, out.data()));
  EXPECT_EQ(budget.used(), kBlock + WriteBuffer::kBlockBookkeeping);
  buf.Discard(3, 0, kBlock);
  EXPECT_EQ(buf.dirty_blocks(), 0u);
  EXPECT_EQ(budget.used(), 0u);
}

TEST(WriteBufferTest, ShortRunWaitsUnlessAgedOrForced) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(1000, 2);
  buf.Put(0, 0, a.data(), 1000, 5);
  WriteBuffer::Run run;
  EXPECT_FALSE(buf.ClaimRun(Ready(), WriteBuffer::Clock::now(), &run));
  // Aged.
  auto p = Ready();
  p.flush_delay = std::chrono::milliseconds(0);
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
  EXPECT_TRUE(run.final);
  EXPECT_EQ(run.data.size(), 1000u);
  buf.Unclaim(run);
  // Forced by a sync epoch that covers the block's epoch.
  p = Ready();
  p.force_epoch = 4;
  EXPECT_FALSE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
  p.force_epoch = 5;
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
  EXPECT_TRUE(run.final);
  EXPECT_TRUE(buf.HasDirtyUpTo(5));
  EXPECT_FALSE(buf.HasDirtyUpTo(4));
}

// A run that failed for want of chunk-index space is parked: readable, never
// claimed again, and the bytes after it form runs of their own (before, the
// failed run was claimed first every time and kept the rest waiting).
TEST(WriteBufferTest, ParkedRunIsReadableButNotClaimedAndDoesNotBlockTheRest) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(4 * kBlock, 7);
  for (uint64_t b = 0; b < 4; b++) buf.Put(b, 0, a.data() + b * kBlock, kBlock, 3);
  auto p = Ready(0);
  p.force_epoch = 3;
  WriteBuffer::Run run;
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
  ASSERT_EQ(run.start, 0u);
  ASSERT_EQ(run.data.size(), 4u * kBlock);
  buf.SealClaim(run, 2 * kBlock);  // chunked up to the end of block 1, then failed
  buf.Park(run);
  EXPECT_EQ(buf.parked_bytes(), 2u * kBlock);
  EXPECT_TRUE(buf.HasPendingUpTo(3));  // blocks 2 and 3
  // Blocks 2-3 start a run although the bytes before them are dirty (parked).
  WriteBuffer::Run rest;
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &rest));
  EXPECT_EQ(rest.start, 2u * kBlock);
  EXPECT_EQ(rest.data.size(), 2u * kBlock);
  for (size_t i = 0; i < rest.blocks.size(); i++) {
    EXPECT_TRUE(buf.ClearIfUnchanged(rest.blocks[i], rest.seqs[i], 0, kBlock));
  }
  buf.Unclaim(rest);
  EXPECT_FALSE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &rest));  // only parked bytes left
  EXPECT_FALSE(buf.HasPendingUpTo(3));
  EXPECT_TRUE(buf.HasDirtyUpTo(3));
  bool pending = true, parked = false;
  buf.PendingAndParkedUpTo(3, &pending, &parked);
  EXPECT_FALSE(pending);
  EXPECT_TRUE(parked);
  buf.PendingAndParkedUpTo(2, &pending, &parked);  // nothing dirtied up to epoch 2
  EXPECT_FALSE(pending);
  EXPECT_FALSE(parked);
  std::vector<uint8_t> out(2 * kBlock);
  EXPECT_TRUE(buf.Overlay(0, 0, kBlock, out.data()));
  EXPECT_EQ(std::memcmp(out.data(), a.data(), kBlock), 0);

  // New bytes over parked ones may need no new entry: unparked.
  buf.Put(1, 0, a.data(), 100, 4);
  EXPECT_EQ(buf.parked_bytes(), 2u * kBlock - 100);
  // A sync of epoch 3 drops block 0 (not written since), not block 1 (written
  // at epoch 4: a later sync reports it).
  EXPECT_EQ(buf.ParkedBlocksUpTo(3), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(buf.DropParked(0, 3), uint64_t{kBlock});
  EXPECT_EQ(buf.DropParked(1, 3), 0u);
  EXPECT_FALSE(buf.Intersects(0, 0, kBlock));
  EXPECT_TRUE(buf.UnparkAll());
  EXPECT_EQ(buf.parked_bytes(), 0u);
  p.force_epoch = 4;
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
  EXPECT_EQ(run.start, 1u * kBlock);
  buf.Unclaim(run);
}

TEST(WriteBufferTest, RunSpansContiguousBlocksAndStartsAtTheStreamStart) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(3 * kBlock, 3);
  // Written out of order: the run still starts at byte 100 of block 0.
  buf.Put(2, 0, a.data() + 2 * kBlock, 1000, 1);
  buf.Put(1, 0, a.data() + kBlock, kBlock, 1);
  buf.Put(0, 100, a.data() + 100, kBlock - 100, 1);
  WriteBuffer::Run run;
  ASSERT_TRUE(buf.ClaimRun(Ready(1), WriteBuffer::Clock::now(), &run));
  EXPECT_EQ(run.start, 100u);
  EXPECT_EQ(run.blocks, (std::vector<uint64_t>{0, 1, 2}));
  ASSERT_EQ(run.data.size(), 2 * kBlock - 100 + 1000);
  EXPECT_EQ(std::memcmp(run.data.data(), a.data() + 100, run.data.size()), 0);
  EXPECT_FALSE(run.final);
  // Claimed bytes are not handed out twice.
  WriteBuffer::Run other;
  EXPECT_FALSE(buf.ClaimRun(Ready(1), WriteBuffer::Clock::now(), &other));
}

// Request edges (selective volumes): where requests began and ended,
// across block boundaries, with an overwrite making a request of its own;
// forgotten once the block's bytes are done; capped per block.
TEST(WriteBufferTest, RunCarriesTheRequestEdgesInsideIt) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(3 * kBlock, 5);
  using E = WriteBuffer::RequestEdges;
  // Request 1: [0, 6000) over blocks 0 and 1; request 2: [6000, 3 blocks);
  // request 3 overwrites [1000, 2000) of request 1. Unmarked Puts add none.
  buf.Put(0, 0, a.data(), kBlock, 1, E{true, false});
  buf.Put(1, 0, a.data() + kBlock, 6000 - kBlock, 1, E{false, true});
  buf.Put(1, 6000 - kBlock, a.data() + 6000, 2 * kBlock - 6000, 1, E{true, false});
  buf.Put(2, 0, a.data() + 2 * kBlock, kBlock, 1, E{false, true});
  buf.Put(0, 1000, a.data() + 1000, 1000, 1, E{true, true});
  buf.Put(0, 3000, a.data() + 3000, 10, 1);
  WriteBuffer::Run run;
  ASSERT_TRUE(buf.ClaimRun(Ready(1), WriteBuffer::Clock::now(), &run));
  EXPECT_EQ(run.start, 0u);
  ASSERT_EQ(run.data.size(), 3 * kBlock);
  // The run's own start and end are no edges inside it.
  EXPECT_EQ(run.request_edges, (std::vector<uint64_t>{1000, 2000, 6000}));
  buf.Unclaim(run);

  // A request ending at a block's end, the next beginning at the next
  // block's start: one edge, recorded on both sides, carried once.
  WriteBuffer other(kBlock, &budget);
  other.Put(4, 0, a.data(), kBlock, 1, E{true, true});
  other.Put(5, 0, a.data(), kBlock, 1, E{true, true});
  ASSERT_TRUE(other.ClaimRun(Ready(1), WriteBuffer::Clock::now(), &run));
  EXPECT_EQ(run.request_edges, (std::vector<uint64_t>{5 * kBlock}));
  other.Unclaim(run);
  // Its bytes done while its run still holds the block, the block forgets
  // its edges at the next Put: new bytes start afresh.
  WriteBuffer again(kBlock, &budget);
  again.Put(6, 0, a.data(), 1000, 1, E{true, true});
  again.Put(6, 1000, a.data(), kBlock - 1000, 1, E{true, true});
  ASSERT_TRUE(again.ClaimRun(Ready(1), WriteBuffer::Clock::now(), &run));
  EXPECT_EQ(run.request_edges, (std::vector<uint64_t>{6 * kBlock + 1000}));
  ASSERT_TRUE(again.ClearIfUnchanged(6, run.seqs[0], 0, kBlock));
  again.Put(6, 0, a.data(), kBlock, 1);
  again.Unclaim(run);
  WriteBuffer::Run later;
  ASSERT_TRUE(again.ClaimRun(Ready(1), WriteBuffer::Clock::now(), &later));
  EXPECT_EQ(later.start, 6 * kBlock);
  EXPECT_TRUE(later.request_edges.empty());
  again.Unclaim(later);

  // At most kMaxRequestEdges per block; later requests merge.
  WriteBuffer many(kBlock, &budget);
  for (uint32_t i = 0; i < kBlock / 16; i++) many.Put(0, i * 16, a.data(), 16, 1, E{true, true});
  ASSERT_TRUE(many.ClaimRun(Ready(1), WriteBuffer::Clock::now(), &run));
  EXPECT_EQ(run.request_edges.size(), WriteBuffer::kMaxRequestEdges - 1) << "edge 0 is the run's start";
  many.Unclaim(run);
}

TEST(WriteBufferTest, LongRunsAreCutAndNotFinal) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(kBlock, 4);
  for (uint64_t b = 0; b < 10; b++) buf.Put(b, 0, a.data(), kBlock, 1);
  auto p = Ready(1);
  p.max_run_bytes = 3 * kBlock;
  p.force_all = true;
  WriteBuffer::Run run;
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
  EXPECT_EQ(run.blocks.size(), 3u);
  EXPECT_FALSE(run.final);  // the data goes on: its last chunk must not be forced
}

TEST(WriteBufferTest, NewerWriteSurvivesAWorkerThatCopiedOlderBytes) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(kBlock, 5);
  auto b = test::RandomBytes(kBlock, 6);
  buf.Put(0, 0, a.data(), kBlock, 1);
  WriteBuffer::Run run;
  ASSERT_TRUE(buf.ClaimRun(Ready(1), WriteBuffer::Clock::now(), &run));
  buf.Put(0, 0, b.data(), kBlock, 1);  // rewritten while the worker works
  EXPECT_FALSE(buf.ClearIfUnchanged(0, run.seqs[0], 0, kBlock));
  buf.Unclaim(run);
  std::vector<uint8_t> out(kBlock);
  EXPECT_TRUE(buf.Overlay(0, 0, kBlock, out.data()));
  EXPECT_EQ(out, b);
  // An unchanged block is cleared and freed.
  ASSERT_TRUE(buf.ClaimRun(Ready(1), WriteBuffer::Clock::now(), &run));
  EXPECT_TRUE(buf.ClearIfUnchanged(0, run.seqs[0], 0, kBlock));
  buf.Unclaim(run);
  EXPECT_EQ(buf.dirty_blocks(), 0u);
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace dedupv1

namespace dedupv1 {
namespace {

TEST(WriteBufferTest, PressureFlushesShortRunsButKeepsTailsOfLongOnes) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(kBlock, 8);
  buf.Put(0, 0, a.data(), 100, 1);           // a short run
  for (uint64_t b = 10; b < 13; b++) buf.Put(b, 0, a.data(), kBlock, 1);  // a long one
  auto p = Ready(2 * kBlock);
  p.flush_short_runs = true;
  WriteBuffer::Run run;
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
  EXPECT_EQ(run.data.size(), 100u);
  EXPECT_TRUE(run.final);
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
  EXPECT_EQ(run.blocks.size(), 3u);
  EXPECT_FALSE(run.final);
}

}  // namespace
}  // namespace dedupv1

namespace dedupv1 {
namespace {

TEST(WriteBufferTest, SealedClaimLetsTheNextRunStartAtTheBoundary) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(4 * kBlock, 9);
  for (uint64_t b = 0; b < 4; b++) buf.Put(b, 0, a.data() + b * kBlock, kBlock, 1);
  auto p = Ready(1);
  p.max_run_bytes = 2 * kBlock;
  WriteBuffer::Run r1, r2;
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &r1));
  ASSERT_EQ(r1.start, 0u);
  // While r1 is not sealed, nothing may start right after it.
  EXPECT_FALSE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &r2));
  // r1 chunked up to byte 5000 of block 1: the rest is the next run's.
  buf.SealClaim(r1, kBlock + 5000);
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &r2));
  EXPECT_EQ(r2.start, kBlock + 5000u);
  EXPECT_EQ(std::memcmp(r2.data.data(), a.data() + kBlock + 5000, r2.data.size()), 0);
  // Both clear their own bytes of the shared block 1.
  EXPECT_TRUE(buf.ClearIfUnchanged(1, r1.seqs[1], 0, 5000));
  EXPECT_TRUE(buf.ClearIfUnchanged(1, r2.seqs[0], 5000, kBlock));
  buf.Unclaim(r1);
  buf.Unclaim(r2);
  EXPECT_FALSE(buf.Intersects(1, 0, kBlock));
  EXPECT_TRUE(buf.Intersects(3, 0, kBlock));  // r2 did not clear its later bytes
}


// The budget counts the 4 KiB pages a block was written in, not whole
// blocks, and gets pages back as their bytes are deduplicated.
TEST(WriteBufferTest, BudgetCountsWrittenPagesNotWholeBlocks) {
  constexpr uint32_t kBig = 32 * PagePool::kPageSize;
  constexpr uint64_t kPage = PagePool::kPageSize;
  constexpr uint64_t kMeta = WriteBuffer::kBlockBookkeeping;
  WriteBufferBudget budget(64 << 20);
  WriteBuffer buf(kBig, &budget);
  auto a = test::RandomBytes(3 * kPage, 10);
  for (uint64_t b = 0; b < 10; b++) buf.Put(b, static_cast<uint32_t>(b * kPage), a.data(), kPage, 1);
  EXPECT_EQ(budget.used(), 10 * kPage + 10 * kMeta);
  buf.Put(20, kPage - 10, a.data(), 20, 1);  // straddles two pages
  EXPECT_EQ(budget.used(), 12 * kPage + 11 * kMeta);
  buf.Put(30, 0, a.data(), 3 * kPage, 1);
  EXPECT_EQ(budget.used(), 15 * kPage + 12 * kMeta);
  std::vector<uint8_t> out(3 * kPage);
  EXPECT_TRUE(buf.Overlay(30, 0, 3 * kPage, out.data()));
  EXPECT_EQ(out, a);

  auto p = Ready();
  p.force_epoch = 1;
  WriteBuffer::Run run;
  std::vector<WriteBuffer::Run> others;  // claimed on the way, left dirty
  for (;;) {  // find block 30's run
    ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
    if (run.blocks[0] == 30) break;
    others.push_back(run);
  }
  EXPECT_EQ(run.data, a);
  // Its first two pages done: their memory goes back at once.
  ASSERT_TRUE(buf.ClearIfUnchanged(30, run.seqs[0], 0, 2 * kPage));
  EXPECT_EQ(budget.used(), 13 * kPage + 12 * kMeta);
  EXPECT_TRUE(buf.Overlay(30, 2 * kPage, kPage, out.data()));
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + kPage, a.begin() + 2 * kPage));
  ASSERT_TRUE(buf.ClearIfUnchanged(30, run.seqs[0], 2 * kPage, 3 * kPage));
  buf.Unclaim(run);
  EXPECT_EQ(budget.used(), 12 * kPage + 11 * kMeta);
  for (const auto& r : others) buf.Unclaim(r);
  buf.Discard(20, 0, kBig);
  EXPECT_EQ(budget.used(), 10 * kPage + 10 * kMeta);
}

// Put reports the stretch of dirty bytes a write now lies in, into the
// neighbouring blocks, so writers wake the workers only for a stream's.
TEST(WriteBufferTest, PutReturnsTheDirtyStretchIntoTheNeighbours) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(kBlock, 11);
  EXPECT_EQ(buf.Put(1, 0, a.data(), 1000, 1), 1000u);
  EXPECT_EQ(buf.Put(1, 2000, a.data(), 100, 1), 100u);
  EXPECT_EQ(buf.Put(0, kBlock - 500, a.data(), 500, 1), 1500u);  // joins block 1's first 1000
  EXPECT_EQ(buf.Put(1, 1000, a.data(), 1000, 1), 500u + 2100u);  // 0..2100 of block 1 and 500 before
  EXPECT_EQ(buf.Put(1, 2100, a.data(), kBlock - 2100, 1), 500u + kBlock);
  // Block 1 is dirty whole: a stretch reaching into it is long.
  EXPECT_EQ(buf.Put(2, 0, a.data(), 10, 1), WriteBuffer::kLongStretch);
  EXPECT_EQ(buf.Put(5, 10, a.data(), 10, 1), 10u);
}

// ClaimRun searches from where it last found a run and wraps around: every
// ready run is found, also one written behind the search.
TEST(WriteBufferTest, ClaimsEveryReadyRunWhereverTheSearchStands) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(kBlock, 12);
  for (uint64_t b : {1, 5, 9}) buf.Put(b, 0, a.data(), 100, 1);
  buf.Put(7, 0, a.data(), 100, 2);  // not forced below
  auto p = Ready();
  p.force_epoch = 1;
  WriteBuffer::Run run;
  std::vector<uint64_t> found;
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
  found.push_back(run.blocks[0]);
  ASSERT_TRUE(buf.ClearIfUnchanged(run.blocks[0], run.seqs[0], 0, 100));
  buf.Unclaim(run);  // block 1 leaves the buffer and frees the first place of the search
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
  found.push_back(run.blocks[0]);
  buf.Put(0, 0, a.data(), 100, 1);  // takes that place: behind the search
  while (buf.ClaimRun(p, WriteBuffer::Clock::now(), &run)) found.push_back(run.blocks[0]);
  EXPECT_EQ(found, (std::vector<uint64_t>{1, 5, 9, 0}));
}

// A young short stretch is passed over cheaply, but not a young one long
// enough for a chunk, nor one that goes on into the next block.
TEST(WriteBufferTest, YoungRunsAreClaimedWhenLongEnoughAlsoAcrossABlockEdge) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(2 * kBlock, 13);
  WriteBuffer::Run run;
  buf.Put(4, 0, a.data(), 1000, 1);
  EXPECT_FALSE(buf.ClaimRun(Ready(2000), WriteBuffer::Clock::now(), &run));
  buf.Put(4, 1000, a.data() + 1000, 2000, 1);
  ASSERT_TRUE(buf.ClaimRun(Ready(2000), WriteBuffer::Clock::now(), &run));
  EXPECT_EQ(run.start, 4 * kBlock);
  EXPECT_EQ(run.data.size(), 3000u);
  buf.Unclaim(run);
  // 1000 bytes at the end of block 0 and 1500 at the start of block 1: one
  // run of 2500 that starts in block 0.
  buf.Put(0, kBlock - 1000, a.data(), 1000, 1);
  buf.Put(1, 0, a.data() + 1000, 1500, 1);
  ASSERT_TRUE(buf.ClaimRun(Ready(2000), WriteBuffer::Clock::now(), &run));
  if (run.start == 4 * kBlock) {  // block 4's run again (not cleared above)
    ASSERT_TRUE(buf.ClaimRun(Ready(2000), WriteBuffer::Clock::now(), &run));
  }
  EXPECT_EQ(run.start, kBlock - 1000);
  EXPECT_EQ(run.blocks, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(std::memcmp(run.data.data(), a.data(), 2500), 0);
}
// The search reads a summary of each block kept beside the blocks; blocks
// that leave give their summary's place to the next ones. What a block was
// before must not hide what the block now there is.
TEST(WriteBufferTest, BlocksTakingFreedPlacesInTheSearchAreFoundAsTheyAreNow) {
  WriteBufferBudget budget(1 << 20);
  WriteBuffer buf(kBlock, &budget);
  auto a = test::RandomBytes(kBlock, 14);
  WriteBuffer::Run run;
  for (uint64_t b = 0; b < 20; b++) buf.Put(b * 2, 0, a.data(), 3000, 1);  // each a ready run
  for (int i = 0; i < 20; i++) {
    ASSERT_TRUE(buf.ClaimRun(Ready(2000), WriteBuffer::Clock::now(), &run));
    ASSERT_TRUE(buf.ClearIfUnchanged(run.blocks[0], run.seqs[0], 0, 3000));
    buf.Unclaim(run);
  }
  EXPECT_EQ(buf.dirty_blocks(), 0u);
  // Young and short now: nothing is ready, whatever stood in those places.
  for (uint64_t b = 100; b < 110; b++) buf.Put(b, 0, a.data(), 100, 2);
  buf.Put(200, 0, a.data(), 100, 2);
  buf.Discard(200, 0, 100);
  EXPECT_EQ(buf.dirty_blocks(), 10u);
  EXPECT_FALSE(buf.ClaimRun(Ready(2000), WriteBuffer::Clock::now(), &run));
  // Each becomes ready in its own way: long enough, going on into the next
  // block (1000 + 1100 bytes), forced by a sync of its epoch, aged.
  buf.Put(101, 100, a.data() + 100, 2000, 2);
  buf.Put(103, kBlock - 1000, a.data(), 1000, 2);
  buf.Put(104, 100, a.data(), 1000, 2);
  auto p = Ready(2000);
  std::vector<uint64_t> found;
  while (buf.ClaimRun(p, WriteBuffer::Clock::now(), &run)) found.push_back(run.start);
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (std::vector<uint64_t>{101 * kBlock, 103 * kBlock + kBlock - 1000}));
  // Block 103's first 100 bytes are a run of their own.
  p.force_epoch = 2;
  found.clear();
  while (buf.ClaimRun(p, WriteBuffer::Clock::now(), &run)) found.push_back(run.start / kBlock);
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (std::vector<uint64_t>{100, 102, 103, 105, 106, 107, 108, 109}));
  buf.Put(300, 0, a.data(), 100, 3);
  p.force_epoch = 0;
  EXPECT_FALSE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
  p.flush_delay = std::chrono::milliseconds(0);
  ASSERT_TRUE(buf.ClaimRun(p, WriteBuffer::Clock::now(), &run));
  EXPECT_EQ(run.start, 300 * kBlock);
}

}  // namespace
}  // namespace dedupv1

#include "index/written_blocks.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace dedupv1 {
namespace {

TEST(WrittenBlocksTest, EmptyKnowsNothing) {
  WrittenBlocks w;
  EXPECT_FALSE(w.MayBeWritten(BlockId{0, 0}));
  EXPECT_FALSE(w.MayBeWritten(BlockId{7, ~uint64_t{0}}));
  EXPECT_EQ(w.MemoryBytes(), 0u);
}

TEST(WrittenBlocksTest, MarkedBlocksAndOnlyThoseAreWritten) {
  WrittenBlocks w;
  std::mt19937_64 rng(42);
  std::set<std::pair<uint32_t, uint64_t>> marked;
  for (int i = 0; i < 2000; i++) {
    BlockId id{static_cast<uint32_t>(rng() % 3), rng() % 200000};
    w.Mark(id);
    marked.insert({id.volume, id.block});
  }
  for (uint32_t v = 0; v < 4; v++) {
    for (uint64_t b = 0; b < 200000; b++) {
      ASSERT_EQ(w.MayBeWritten(BlockId{v, b}), marked.count({v, b}) > 0) << v << "/" << b;
    }
  }
}

TEST(WrittenBlocksTest, VolumesAndPageEdgesAreSeparate) {
  WrittenBlocks w;
  const uint64_t edge = WrittenBlocks::kBlocksPerPage;
  w.Mark(BlockId{1, edge - 1});
  w.Mark(BlockId{1, edge});
  EXPECT_TRUE(w.MayBeWritten(BlockId{1, edge - 1}));
  EXPECT_TRUE(w.MayBeWritten(BlockId{1, edge}));
  EXPECT_FALSE(w.MayBeWritten(BlockId{1, edge + 1}));
  EXPECT_FALSE(w.MayBeWritten(BlockId{2, edge}));
  EXPECT_FALSE(w.MayBeWritten(BlockId{0, edge - 1}));
  // Far-away blocks cost one page each, not a bitmap up to them.
  w.Mark(BlockId{1, uint64_t{1} << 40});
  EXPECT_TRUE(w.MayBeWritten(BlockId{1, uint64_t{1} << 40}));
  EXPECT_LE(w.MemoryBytes(), 3 * (WrittenBlocks::kBlocksPerPage / 8));
}

}  // namespace
}  // namespace dedupv1

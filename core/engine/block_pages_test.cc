#include "core/engine/block_pages.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

constexpr uint32_t kPage = PagePool::kPageSize;

TEST(BlockPagesTest, TakesPagesOnlyWhereWrittenAndReadsAcrossPageEdges) {
  PagePool pool(16);
  BlockPages block(32 * kPage);
  EXPECT_EQ(block.pages(), 0u);
  auto a = test::RandomBytes(100, 1);
  EXPECT_EQ(block.Write(kPage - 50, a.data(), 100, &pool), 2u);  // straddles pages 0 and 1
  auto b = test::RandomBytes(kPage, 2);
  EXPECT_EQ(block.Write(20 * kPage, b.data(), kPage, &pool), 1u);
  EXPECT_EQ(block.Write(kPage - 10, a.data(), 10, &pool), 0u);  // page 0 exists
  EXPECT_EQ(block.pages(), 3u);

  std::vector<uint8_t> out(100);
  block.Read(kPage - 50, 40, out.data());
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 40, out.begin()));
  block.Read(kPage - 10, 60, out.data());
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 10, out.begin()));   // the newer write
  EXPECT_TRUE(std::equal(a.begin() + 50, a.end(), out.begin() + 10));
  std::vector<uint8_t> page(kPage);
  block.Read(20 * kPage, kPage, page.data());
  EXPECT_EQ(page, b);
}

TEST(BlockPagesTest, ReleasesPagesOutsideTheKeptBytesToThePool) {
  PagePool pool(1);
  BlockPages block(8 * kPage);
  auto a = test::RandomBytes(4 * kPage, 3);
  EXPECT_EQ(block.Write(0, a.data(), 4 * kPage, &pool), 4u);
  IntervalSet keep;
  keep.Add(kPage + 1, kPage + 2);       // one byte in page 1
  keep.Add(3 * kPage, 3 * kPage + 10);  // page 3
  EXPECT_EQ(block.ReleaseOutside(keep, &pool), 2u);
  EXPECT_EQ(block.pages(), 2u);
  std::vector<uint8_t> out(10);
  block.Read(3 * kPage, 10, out.data());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), a.begin() + 3 * kPage));
  // Page 0 comes back from the pool (which kept one of the two) and is written anew.
  auto c = test::RandomBytes(kPage, 4);
  EXPECT_EQ(block.Write(0, c.data(), kPage, &pool), 1u);
  std::vector<uint8_t> page(kPage);
  block.Read(0, kPage, page.data());
  EXPECT_EQ(page, c);
  EXPECT_EQ(block.ReleaseOutside(IntervalSet(), &pool), 3u);
  EXPECT_EQ(block.pages(), 0u);
}

}  // namespace
}  // namespace dedupv1

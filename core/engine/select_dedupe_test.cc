// Select-Dedupe's rule and the grouping of a run's chunks into requests
// (select_dedupe.h), and static chunking at volume offsets.
#include "core/engine/select_dedupe.h"

#include <gtest/gtest.h>

#include "core/base/static_chunker.h"

namespace dedupv1 {
namespace {

TEST(SelectDedupeTest, CategoriesAtTheThreshold) {
  EXPECT_EQ(ClassifyRequest(16, 0, 0, 3), RequestCategory::kAllNew);
  EXPECT_EQ(ClassifyRequest(16, 16, 0, 3), RequestCategory::kFullDedup);
  EXPECT_EQ(ClassifyRequest(16, 1, 0, 3), RequestCategory::kWrittenInFull);
  EXPECT_EQ(ClassifyRequest(16, 2, 0, 3), RequestCategory::kWrittenInFull);
  EXPECT_EQ(ClassifyRequest(16, 3, 0, 3), RequestCategory::kPartialDedup);
  EXPECT_EQ(ClassifyRequest(16, 15, 0, 3), RequestCategory::kPartialDedup);
  // A request of one chunk is either all known or all new.
  EXPECT_EQ(ClassifyRequest(1, 1, 0, 3), RequestCategory::kFullDedup);
  EXPECT_EQ(ClassifyRequest(1, 0, 0, 3), RequestCategory::kAllNew);
  // Two chunks, one known, threshold 3: few scattered duplicates.
  EXPECT_EQ(ClassifyRequest(2, 1, 0, 3), RequestCategory::kWrittenInFull);
  // Threshold 1: any known chunk is deduplicated.
  EXPECT_EQ(ClassifyRequest(16, 1, 0, 1), RequestCategory::kPartialDedup);
  // Zero chunks: a request of zeros only is fully known (holes); zeros
  // among new chunks count toward nothing; among known ones they do not
  // lift the count to the threshold.
  EXPECT_EQ(ClassifyRequest(16, 16, 16, 3), RequestCategory::kFullDedup);
  EXPECT_EQ(ClassifyRequest(16, 2, 2, 3), RequestCategory::kAllNew);
  EXPECT_EQ(ClassifyRequest(16, 5, 3, 3), RequestCategory::kWrittenInFull);
  EXPECT_EQ(ClassifyRequest(16, 6, 3, 3), RequestCategory::kPartialDedup);
  EXPECT_EQ(ClassifyRequest(16, 16, 14, 3), RequestCategory::kFullDedup);
  EXPECT_STREQ(RequestCategoryName(RequestCategory::kWrittenInFull), "written_in_full");
}

TEST(SelectDedupeTest, ChunksBelongToTheRequestTheyStartIn) {
  // A run at 8192 of four 4 KiB chunks: [8192, 12288) ... [20480, 24576).
  const std::vector<size_t> ends = {4096, 8192, 12288, 16384};
  EXPECT_EQ(RequestOfChunks(8192, ends, {}), (std::vector<uint32_t>{0, 0, 0, 0}));
  // Edges at the run's start and before it split nothing.
  EXPECT_EQ(RequestOfChunks(8192, ends, {0, 4096, 8192}), (std::vector<uint32_t>{0, 0, 0, 0}));
  EXPECT_EQ(RequestOfChunks(8192, ends, {16384}), (std::vector<uint32_t>{0, 0, 1, 1}));
  EXPECT_EQ(RequestOfChunks(8192, ends, {12288, 16384, 20480, 24576}), (std::vector<uint32_t>{0, 1, 2, 3}));
  // An edge inside a chunk: the chunk stays with the request it starts in,
  // the next chunk starts the next request.
  EXPECT_EQ(RequestOfChunks(8192, ends, {13000}), (std::vector<uint32_t>{0, 0, 1, 1}));
  // Two edges between one chunk start and the next: one new request.
  EXPECT_EQ(RequestOfChunks(8192, ends, {13000, 14000}), (std::vector<uint32_t>{0, 0, 1, 1}));
  EXPECT_TRUE(RequestOfChunks(0, {}, {100}).empty());
}

TEST(SelectDedupeTest, StaticChunksLineUpWithVolumeOffsets) {
  std::vector<size_t> ends;
  SplitAtAlignedOffsets(8192, 10000, false, 4096, &ends);
  EXPECT_EQ(ends, (std::vector<size_t>{4096, 8192}));  // 1808 bytes wait for more
  ends.clear();
  SplitAtAlignedOffsets(8192, 10000, true, 4096, &ends);
  EXPECT_EQ(ends, (std::vector<size_t>{4096, 8192, 10000}));
  // Unaligned: the first chunk ends at the next multiple of 4 KiB.
  ends.clear();
  SplitAtAlignedOffsets(5000, 10000, false, 4096, &ends);
  EXPECT_EQ(ends, (std::vector<size_t>{3192, 7288}));
  ends.clear();
  SplitAtAlignedOffsets(5000, 1000, false, 4096, &ends);
  EXPECT_TRUE(ends.empty());
  SplitAtAlignedOffsets(5000, 1000, true, 4096, &ends);
  EXPECT_EQ(ends, (std::vector<size_t>{1000}));
  // The tail split again with more bytes gives the same boundaries.
  std::vector<size_t> whole, tail;
  SplitAtAlignedOffsets(5000, 20000, false, 4096, &whole);
  SplitAtAlignedOffsets(5000 + 7288, 20000 - 7288, false, 4096, &tail);
  ASSERT_GE(whole.size(), 2u);
  for (size_t i = 0; i < tail.size(); i++) EXPECT_EQ(tail[i] + 7288, whole[i + 2]);
  EXPECT_EQ(tail.size() + 2, whole.size());
}

}  // namespace
}  // namespace dedupv1

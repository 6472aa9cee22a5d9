// The rewrite policy's choice: sparse containers only, sparsest first, whole
// containers, within each volume's budget.
#include "core/engine/rewrite_policy.h"

#include <gtest/gtest.h>

namespace dedupv1 {
namespace {

RewriteOptions On(uint64_t sparse_bytes, double limit) {
  RewriteOptions o;
  o.enabled = true;
  o.sparse_bytes = sparse_bytes;
  o.limit = limit;
  return o;
}

// |n| chunks of |size| bytes from |container|.
void Add(std::vector<RewritePolicy::Chunk>* chunks, ContainerId container, int n, size_t size = 1000) {
  for (int i = 0; i < n; i++) chunks->push_back(RewritePolicy::Chunk{size, container});
}

TEST(RewritePolicyTest, OffChoosesNothing) {
  RewritePolicy p{RewriteOptions()};
  std::vector<RewritePolicy::Chunk> chunks;
  Add(&chunks, 7, 1);
  EXPECT_TRUE(p.Choose(1, 1 << 20, chunks).empty());
}

TEST(RewritePolicyTest, ChoosesEveryChunkOfSparseContainersOnly) {
  RewritePolicy p(On(/*sparse_bytes=*/5000, /*limit=*/0.5));
  std::vector<RewritePolicy::Chunk> chunks;
  Add(&chunks, 1, 10);           // 10,000 bytes: dense
  Add(&chunks, 2, 2);            // 2,000: sparse
  Add(&chunks, kNoContainer, 3);  // new or zero chunks: never
  Add(&chunks, 3, 4);            // 4,000: sparse
  Add(&chunks, 2, 1);            // container 2 again: 3,000 in all, still sparse
  const std::vector<size_t> want = {10, 11, 15, 16, 17, 18, 19};
  EXPECT_EQ(p.Choose(1, 100000, chunks), want);
}

TEST(RewritePolicyTest, TheBudgetTakesTheSparsestContainersFirstAndIsPerVolume) {
  RewritePolicy p(On(/*sparse_bytes=*/10000, /*limit=*/0.05));
  std::vector<RewritePolicy::Chunk> chunks;
  Add(&chunks, 1, 4);  // 4,000
  Add(&chunks, 2, 1);  // 1,000
  Add(&chunks, 3, 2);  // 2,000
  // 100,000 bytes written: 5,000 may be rewritten. Sparsest first: 2 (1,000),
  // then 3 (2,000); 1 (4,000) no longer fits.
  EXPECT_EQ(p.Choose(1, 100000, chunks), (std::vector<size_t>{4, 5, 6}));
  // 2,000 of the volume's budget are left after another 0 bytes; with the
  // next 100,000 bytes 7,000: container 1 fits, 2 and 3 too (1,000 + 2,000 +
  // 4,000 = 7,000).
  EXPECT_EQ(p.Choose(1, 100000, chunks), (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6}));
  // Spent to the byte: the next run of this volume gets nothing new...
  EXPECT_TRUE(p.Choose(1, 0, chunks).empty());
  // ...while another volume's budget is its own.
  EXPECT_EQ(p.Choose(2, 20000, chunks), (std::vector<size_t>{4}));
}

// A failed run gives its charge back (it is charged again when redone), and
// chosen bytes not stored again return to the budget.
TEST(RewritePolicyTest, RefundsGiveTheBudgetBack) {
  RewritePolicy p(On(/*sparse_bytes=*/10000, /*limit=*/0.05));
  std::vector<RewritePolicy::Chunk> chunks;
  Add(&chunks, 1, 5);  // 5,000
  EXPECT_EQ(p.Choose(1, 100000, chunks).size(), 5u);
  EXPECT_TRUE(p.Choose(1, 0, chunks).empty());  // spent
  p.Refund(1, 100000, 5000);                     // the run failed
  EXPECT_TRUE(p.Choose(1, 0, chunks).empty());  // nothing written counts now
  EXPECT_EQ(p.Choose(1, 100000, chunks).size(), 5u);  // the redone run
  p.Refund(1, 0, 5000);  // none of them stored after all
  EXPECT_EQ(p.Choose(1, 0, chunks).size(), 5u);
}

}  // namespace
}  // namespace dedupv1

// CompoundResult (core/rados/op_result.h): a failed sub-operation of a
// compound op that itself reported success is an error, never an empty
// result.
#include "core/rados/op_result.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace dedupv1 {
namespace {

TEST(CompoundResultTest, FailedSubOperationIsTheResult) {
  EXPECT_EQ(0, CompoundResult(0, {0, 0}));
  EXPECT_EQ(3, CompoundResult(3, {}));
  EXPECT_EQ(-EIO, CompoundResult(0, {0, -EIO}));
  EXPECT_EQ(-EIO, CompoundResult(0, {-EIO, -ENOENT}));  // the first failure
  EXPECT_EQ(-ETIMEDOUT, CompoundResult(-ETIMEDOUT, {-EIO}));  // the op's own error wins
}

}  // namespace
}  // namespace dedupv1

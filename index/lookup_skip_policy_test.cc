#include "index/lookup_skip_policy.h"

#include <gtest/gtest.h>

namespace dedupv1 {
namespace {

TEST(LookupSkipPolicyTest, LooksUpWithoutHistory) {
  LookupSkipPolicy p(0.01);
  EXPECT_FALSE(p.Skip());
  p.CountLookups(LookupSkipPolicy::kMinHistory - 1, 0);
  EXPECT_FALSE(p.Skip()) << "fewer answers than kMinHistory";
  p.CountLookups(1, 0);
  EXPECT_TRUE(p.Skip());
}

TEST(LookupSkipPolicyTest, SkipsOnlyWhileAlmostNothingIsFound) {
  LookupSkipPolicy p(0.01);
  p.CountLookups(4000, 50);  // 1.25% found
  EXPECT_FALSE(p.Skip());
  p.CountLookups(4000, 0);  // 0.6%
  EXPECT_TRUE(p.Skip());
}

TEST(LookupSkipPolicyTest, OneRunOfExistingChunksEndsSkipping) {
  LookupSkipPolicy p(0.01);
  for (int i = 0; i < 100; i++) p.CountLookups(1000, 0);  // a long history of new data
  ASSERT_TRUE(p.Skip());
  // One run of 300 chunks claimed without a lookup, all of which existed.
  p.CountSkippedClaims(300, 300);
  EXPECT_FALSE(p.Skip());
  // Lookups of new data again: skipping comes back once the share ages out.
  for (int i = 0; i < 100 && !p.Skip(); i++) p.CountLookups(1000, 0);
  EXPECT_TRUE(p.Skip());
}

TEST(LookupSkipPolicyTest, ThresholdZeroNeverSkips) {
  LookupSkipPolicy p(0);
  p.CountLookups(100000, 0);
  EXPECT_FALSE(p.Skip());
}

}  // namespace
}  // namespace dedupv1

#include "filters/filter_registry.h"

#include <gtest/gtest.h>

#include "filters/bloom_set.h"
#include "filters/chunk_index_filter.h"
#include "filters/filter_chain.h"

namespace dedupv1 {
namespace {

TEST(FilterRegistryTest, EveryNameBuildsTheFilterOfThatName) {
  std::unique_ptr<BloomSet> bloom;
  ASSERT_TRUE(BloomSet::Create(1000, 0.01, &bloom).ok());
  FilterInputs inputs;  // the factories only keep the pointers
  inputs.bloom = bloom.get();
  inputs.container_cache_containers = 4;
  const std::vector<std::string> names = FilterNames();
  ASSERT_TRUE(CheckFilterNames(names).ok());
  FilterChain chain;
  ASSERT_TRUE(BuildFilterChain(names, inputs, &chain).ok());
  ASSERT_EQ(chain.size(), names.size());
  for (size_t i = 0; i < names.size(); i++) EXPECT_EQ(names[i], chain.filter(i).name());
}

TEST(FilterRegistryTest, BloomFilterLeftOutWithoutATrustedSet) {
  FilterChain chain;
  ASSERT_TRUE(BuildFilterChain({"bloom", ChunkIndexFilter::kName}, FilterInputs(), &chain).ok());
  ASSERT_EQ(chain.size(), 1u);
  EXPECT_TRUE(chain.Contains(ChunkIndexFilter::kName));
  EXPECT_FALSE(chain.Contains("bloom"));
}

TEST(FilterRegistryTest, DefaultChainIsValid) {
  const std::vector<std::string> chain = DefaultFilterChain();
  EXPECT_TRUE(CheckFilterNames(chain).ok());
  EXPECT_TRUE(CheckRequiredFilters(chain).ok());
}

TEST(FilterRegistryTest, RefusesUnknownTwiceAndMissingRequired) {
  Status s = CheckFilterNames({"zero-chunk", "nonsense"});
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("unknown filter 'nonsense'"), std::string::npos) << s.ToString();
  for (const auto& n : FilterNames()) EXPECT_NE(s.message().find(n), std::string::npos) << n;
  s = CheckFilterNames({"bloom", "bloom"});
  EXPECT_NE(s.message().find("filter 'bloom' listed twice"), std::string::npos) << s.ToString();
  s = CheckRequiredFilters({"zero-chunk"});
  EXPECT_NE(s.message().find("must include chunk-index"), std::string::npos) << s.ToString();
  FilterChain chain;
  EXPECT_TRUE(BuildFilterChain({"nonsense"}, FilterInputs(), &chain).IsInvalidArgument());
}

}  // namespace
}  // namespace dedupv1

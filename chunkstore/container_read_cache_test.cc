#include "chunkstore/container_read_cache.h"

#include <gtest/gtest.h>

namespace dedupv1 {
namespace {

std::shared_ptr<const Container> Make(ContainerId id) {
  return std::make_shared<Container>(id, 4096, FingerprintType::kSha1);
}

TEST(ContainerReadCacheTest, EvictsLeastRecentlyUsed) {
  ContainerReadCache cache(2);
  cache.Insert(1, Make(1));
  cache.Insert(2, Make(2));
  ASSERT_NE(cache.Lookup(1), nullptr);  // 1 is now more recent than 2
  cache.Insert(3, Make(3));             // evicts 2
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Lookup(2), nullptr);
  ASSERT_NE(cache.Lookup(1), nullptr);
  ASSERT_NE(cache.Lookup(3), nullptr);
  EXPECT_EQ(cache.Lookup(3)->id(), 3u);
  EXPECT_EQ(cache.hits(), 4u);
  EXPECT_EQ(cache.misses(), 1u);
}

TEST(ContainerReadCacheTest, ReplaceEraseAndDisabled) {
  ContainerReadCache cache(4);
  auto a = Make(5);
  cache.Insert(5, a);
  auto b = Make(5);
  cache.Insert(5, b);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.Lookup(5), b);
  cache.Erase(5);
  EXPECT_EQ(cache.Lookup(5), nullptr);
  EXPECT_EQ(cache.size(), 0u);

  ContainerReadCache off(0);
  off.Insert(1, Make(1));
  EXPECT_EQ(off.Lookup(1), nullptr);
  EXPECT_EQ(off.size(), 0u);
}

TEST(ContainerReadCacheTest, EvictedEntryStaysValidForHolder) {
  ContainerReadCache cache(1);
  cache.Insert(1, Make(1));
  std::shared_ptr<const Container> held = cache.Lookup(1);
  cache.Insert(2, Make(2));
  EXPECT_EQ(cache.Lookup(1), nullptr);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->id(), 1u);
}

}  // namespace
}  // namespace dedupv1

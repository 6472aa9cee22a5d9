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

// iCache's read side: the capacity changes at run time (shrinking evicts
// at once), and a miss on a container evicted lately is a ghost hit (the
// ghosts: a tenth of the capacity, at least one); an erased container is
// forgotten, ghost too.
TEST(ContainerReadCacheTest, ResizesAndCountsGhostHits) {
  ContainerReadCache cache(20);  // 2 ghosts
  for (ContainerId id = 1; id <= 23; id++) cache.Insert(id, Make(id));  // evicts 1, 2, 3
  EXPECT_EQ(cache.Lookup(1), nullptr);  // evicted too long ago
  EXPECT_EQ(cache.Lookup(3), nullptr);  // a ghost hit
  EXPECT_EQ(cache.Lookup(3), nullptr);  // counted once
  EXPECT_EQ(cache.ghost_hits(), 1u);
  cache.SetCapacity(5);
  EXPECT_EQ(cache.capacity(), 5u);
  EXPECT_EQ(cache.size(), 5u);
  EXPECT_NE(cache.Lookup(23), nullptr);
  EXPECT_EQ(cache.Lookup(4), nullptr);  // evicted by the shrink, but the ghosts hold only 1 now
  cache.Erase(18);                      // the last one the shrink evicted: forgotten
  EXPECT_EQ(cache.Lookup(18), nullptr);
  EXPECT_EQ(cache.ghost_hits(), 1u);
  cache.SetCapacity(0);
  cache.Insert(30, Make(30));
  EXPECT_EQ(cache.size(), 0u);
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

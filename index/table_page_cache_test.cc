#include "index/table_page_cache.h"

#include <gtest/gtest.h>

#include <string>

namespace dedupv1 {
namespace {

std::string Page(char c) { return std::string(4096, c); }

TEST(TablePageCacheTest, KeepsTheMostRecentlyUsedPagesWithinItsBytes) {
  TablePageCache cache(3 * 4096, 4096);
  const uint64_t t = TablePageCache::NewTableId();
  std::string got;
  EXPECT_FALSE(cache.Lookup(t, 1, &got));
  cache.Insert(t, 1, Page('a'));
  cache.Insert(t, 2, Page('b'));
  cache.Insert(t, 3, Page('c'));
  ASSERT_TRUE(cache.Lookup(t, 1, &got));  // 1 is now the most recent
  EXPECT_EQ(got, Page('a'));
  cache.Insert(t, 4, Page('d'));  // evicts 2
  EXPECT_FALSE(cache.Lookup(t, 2, &got));
  EXPECT_TRUE(cache.Lookup(t, 3, &got));
  cache.Insert(t, 3, Page('C'));  // a newer image replaces the cached one
  ASSERT_TRUE(cache.Lookup(t, 3, &got));
  EXPECT_EQ(got, Page('C'));
  TablePageCache::Counters c = cache.counters();
  EXPECT_EQ(c.hits, 3u);
  EXPECT_EQ(c.misses, 2u);
  EXPECT_EQ(c.used_bytes, 3u * 4096);
  EXPECT_EQ(c.capacity_bytes, 3u * 4096);
  // Pages of another table never answer for this one's.
  EXPECT_FALSE(cache.Lookup(TablePageCache::NewTableId(), 3, &got));
  // A batch replacing pages 3 and 9 (not cached) makes the cache forget 3.
  cache.Erase(t, {3, 9});
  EXPECT_FALSE(cache.Lookup(t, 3, &got));
  EXPECT_EQ(cache.counters().used_bytes, 2u * 4096);
  EXPECT_TRUE(cache.Lookup(t, 1, &got));
}

TEST(TablePageCacheTest, MissesOfPagesEvictedLatelyAreGhostHits) {
  TablePageCache cache(20 * 4096, 4096);  // ghosts: a tenth, 2 pages
  const uint64_t t = TablePageCache::NewTableId();
  for (uint64_t p = 0; p < 23; p++) cache.Insert(t, p, Page('x'));  // evicts 0, 1, 2
  std::string got;
  EXPECT_FALSE(cache.Lookup(t, 0, &got));  // forgotten: only the last 2 evicted are remembered
  EXPECT_FALSE(cache.Lookup(t, 2, &got));
  EXPECT_FALSE(cache.Lookup(t, 2, &got));  // counted once: a ghost is taken by its hit
  EXPECT_EQ(cache.counters().ghost_hits, 1u);
  EXPECT_EQ(cache.counters().misses, 3u);
}

TEST(TablePageCacheTest, ShrinkingEvictsAtOnceAndZeroHoldsNothing) {
  TablePageCache cache(10 * 4096, 4096);
  const uint64_t t = TablePageCache::NewTableId();
  for (uint64_t p = 0; p < 10; p++) cache.Insert(t, p, Page('y'));
  cache.SetCapacity(4 * 4096);
  EXPECT_EQ(cache.counters().used_bytes, 4u * 4096);
  std::string got;
  EXPECT_TRUE(cache.Lookup(t, 9, &got));
  EXPECT_FALSE(cache.Lookup(t, 0, &got));
  cache.SetCapacity(0);
  EXPECT_EQ(cache.counters().used_bytes, 0u);
  cache.Insert(t, 1, Page('z'));
  EXPECT_FALSE(cache.Lookup(t, 1, &got));
}

}  // namespace
}  // namespace dedupv1

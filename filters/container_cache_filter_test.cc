#include "filters/container_cache_filter.h"

#include <gtest/gtest.h>

#include <list>

#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

class ContainerCacheFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ChunkStoreOptions o;
    o.dir = dir_.path();
    o.container_size = 64 << 10;
    o.open_containers = 1;
    o.commit_timeout_ms = 600000;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &store_).ok());
  }
  // Stores |n| distinct 1000-byte chunks and commits them; returns their requests.
  std::vector<ChunkRequest> StoreChunks(int first, int n) {
    std::vector<ChunkRequest> out;
    for (int i = first; i < first + n; i++) {
      data_.push_back(test::RandomBytes(1000, static_cast<uint64_t>(i)));
      ChunkRequest c;
      c.data = data_.back().data();
      c.size = data_.back().size();
      ComputeFingerprint(FingerprintType::kSha1, c.data, c.size, &c.fp);
      EXPECT_TRUE(store_->StoreChunk(c.fp, c.data, c.size, 0, &c.container).ok());
      out.push_back(c);
    }
    EXPECT_TRUE(store_->Flush().ok());
    return out;
  }

  test::TempDir dir_;
  std::unique_ptr<ChunkStore> store_;
  std::list<std::vector<uint8_t>> data_;
};

TEST_F(ContainerCacheFilterTest, LoadsOnlyAfterDiskLookupsThenAnswersNeighbours) {
  std::vector<ChunkRequest> chunks = StoreChunks(0, 20);
  ASSERT_EQ(chunks.front().container, chunks.back().container);
  ContainerCacheFilter filter(store_.get(), 4);
  Status error;
  ChunkRequest probe = chunks[5];
  probe.container = kNoContainer;
  EXPECT_EQ(filter.Check(&probe, &error), FilterResult::kWeakMaybe);

  // Found in memory by the chunk index: no load.
  ChunkRequest known = chunks[0];
  known.found_on_disk = false;
  ASSERT_TRUE(filter.UpdateKnown(known).ok());
  EXPECT_EQ(filter.loads(), 0u);
  EXPECT_EQ(filter.Check(&probe, &error), FilterResult::kWeakMaybe);

  // Found on disk: the whole container's fingerprints come into the cache.
  known.found_on_disk = true;
  ASSERT_TRUE(filter.UpdateKnown(known).ok());
  EXPECT_EQ(filter.loads(), 1u);
  for (const ChunkRequest& c : chunks) {
    ChunkRequest p = c;
    p.container = kNoContainer;
    ASSERT_EQ(filter.Check(&p, &error), FilterResult::kStrongMaybe);
    EXPECT_EQ(p.container, c.container);
  }
  // Loaded once, not again.
  ASSERT_TRUE(filter.UpdateKnown(known).ok());
  EXPECT_EQ(filter.loads(), 1u);
}

TEST_F(ContainerCacheFilterTest, EvictsLeastRecentlyUsedContainer) {
  // Three containers (each 64 KiB holds ~60 chunks of 1000 bytes).
  std::vector<ChunkRequest> chunks = StoreChunks(100, 150);
  std::vector<ChunkRequest> firsts;
  for (const ChunkRequest& c : chunks) {
    if (firsts.empty() || firsts.back().container != c.container) firsts.push_back(c);
  }
  ASSERT_GE(firsts.size(), 3u);
  ContainerCacheFilter filter(store_.get(), 2);
  Status error;
  for (size_t i = 0; i < 3; i++) {
    ChunkRequest k = firsts[i];
    k.found_on_disk = true;
    ASSERT_TRUE(filter.UpdateKnown(k).ok());
  }
  EXPECT_EQ(filter.cached_containers(), 2u);
  ChunkRequest p = firsts[0];
  p.container = kNoContainer;
  EXPECT_EQ(filter.Check(&p, &error), FilterResult::kWeakMaybe);  // evicted
  for (size_t i = 1; i < 3; i++) {
    p = firsts[i];
    p.container = kNoContainer;
    EXPECT_EQ(filter.Check(&p, &error), FilterResult::kStrongMaybe) << i;
  }
  // A container that does not exist is not an error (the cache is only an optimisation).
  ChunkRequest missing = firsts[0];
  missing.container = firsts.back().container + 100;
  missing.found_on_disk = true;
  EXPECT_TRUE(filter.UpdateKnown(missing).ok());
}

}  // namespace
}  // namespace dedupv1

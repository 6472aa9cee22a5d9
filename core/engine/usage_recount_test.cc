#include "core/engine/usage_recount.h"

#include <gtest/gtest.h>

#include "core/engine/crash_testutil.h"
#include "core/engine/dedup_system.h"
#include "core/engine/system_testutil.h"
#include "core/base/testutil.h"

namespace dedupv1 {

// garbage_collector_test.cc (same test binary).


namespace {

class UsageRecountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = test::SmallSystemOptions(dir_.path());
    options_.volumes = {{"vol1", 8 << 20}, {"vol2", 8 << 20}};
    options_.idle.period_ms = 3600 * 1000;
    ASSERT_TRUE(options_.Finish().ok());
    {
      auto sys = test::OpenSystemOrDie(options_);
      Volume *v1, *v2;
      ASSERT_TRUE(sys->GetVolume("vol1", &v1).ok());
      ASSERT_TRUE(sys->GetVolume("vol2", &v2).ok());
      auto a = test::RandomBytes(2 << 20, 1);
      ASSERT_TRUE(v1->Write(0, a.size(), a.data(), false).ok());
      ASSERT_TRUE(v2->Write(0, 1 << 20, a.data(), false).ok());  // shared with vol1
      auto b = test::RandomBytes(1 << 20, 2);
      ASSERT_TRUE(v2->Write(4 << 20, b.size(), b.data(), false).ok());
      ASSERT_TRUE(sys->Close().ok());
    }
    sys_ = test::OpenSystemOrDie(options_);
    ASSERT_NE(nullptr, sys_);
  }

  // The first chunk of volume |volume|'s block 0 and the container it names.
  std::pair<Fingerprint, ContainerId> FirstChunk(uint32_t volume) {
    BlockMapping m;
    EXPECT_TRUE(sys_->block_index()->Get(BlockId{volume, 0}, &m).ok());
    return {m.items()[0].fp, m.items()[0].container};
  }

  test::TempDir dir_;
  Options options_;
  std::unique_ptr<DedupSystem> sys_;
};

// Counts made wrong the ways lost log events make them (too high, too low,
// an entry GC erased although a block references the chunk) are all set
// back to the number of mappings that reference each chunk.
TEST_F(UsageRecountTest, SetsEveryCountToTheMappingsReferencingTheChunk) {
  ChunkIndex* index = sys_->chunk_index();
  const Fingerprint shared = FirstChunk(1).first;  // vol1 and vol2 block 0 start alike
  ASSERT_TRUE(shared == FirstChunk(2).first);
  BlockMapping m;
  ASSERT_TRUE(sys_->block_index()->Get(BlockId{2, 32}, &m).ok());  // vol2's own data at 4 MiB
  const Fingerprint own = m.items()[0].fp;
  const ContainerId own_container = m.items()[0].container;
  ASSERT_TRUE(sys_->block_index()->Get(BlockId{1, 9}, &m).ok());
  const Fingerprint erased = m.items()[1].fp;
  const uint64_t big = 1 << 30;  // an event id above everything so far
  ASSERT_TRUE(index->AddUsage(shared, 5, big).ok());
  ASSERT_TRUE(index->AddUsage(own, -1, big).ok());
  ASSERT_TRUE(index->Erase(erased).ok());
  ASSERT_TRUE(index->Flush().ok());
  ASSERT_TRUE(sys_->block_index()->Flush().ok());

  UsageRecount recount(sys_->block_index(), index, sys_->chunk_store());
  // A volume left out (a volume table missing a line) is refused: its
  // chunks would lose their counts.
  Status s = recount.Scan({1});
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("volume is missing")) << s.ToString();

  ASSERT_TRUE(recount.Scan({1, 2}).ok());
  EXPECT_GE(recount.stats().newest_id, big);
  EXPECT_TRUE(recount.Apply(recount.stats().newest_id).IsInvalidArgument());
  ASSERT_TRUE(recount.Apply(recount.stats().newest_id + 1).ok());
  EXPECT_EQ(1u, recount.stats().entries_restored);
  EXPECT_GE(recount.stats().counts_lowered, 1u);
  EXPECT_GE(recount.stats().counts_raised, 1u);
  EXPECT_EQ(0u, recount.stats().unresolved);
  ExpectUsageMatchesRecount(sys_.get(), /*expect_entries=*/true);
  ChunkIndexEntry e;
  ASSERT_TRUE(index->Lookup(shared, &e).ok());
  EXPECT_EQ(2u, e.usage_count);
  ASSERT_TRUE(index->Lookup(own, &e).ok());
  EXPECT_EQ(own_container, sys_->chunk_store()->Resolve(e.container));
  // Tagged with the recount's id (DedupSystem restarts the log above it).
  EXPECT_EQ(recount.stats().newest_id + 1, e.last_event_id);
}

TEST_F(UsageRecountTest, MappingsStillInMemoryAreRefused) {
  Volume* v;
  ASSERT_TRUE(sys_->GetVolume("vol1", &v).ok());
  auto c = test::RandomBytes(1 << 20, 4);
  ASSERT_TRUE(v->Write(0, c.size(), c.data(), false).ok());
  ASSERT_TRUE(sys_->Sync().ok());
  // Write-back waits for the soft limit or idleness (an hour here).
  ASSERT_GT(sys_->block_index()->stats().aux_mappings, 0u);
  UsageRecount recount(sys_->block_index(), sys_->chunk_index(), sys_->chunk_store());
  Status s = recount.Scan({1, 2});
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  ASSERT_TRUE(sys_->block_index()->Flush().ok());
  EXPECT_TRUE(recount.Scan({1, 2}).ok());
}

}  // namespace
}  // namespace dedupv1

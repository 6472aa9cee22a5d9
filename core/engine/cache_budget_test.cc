#include "core/engine/cache_budget.h"

#include <gtest/gtest.h>

#include "core/base/testutil.h"
#include "core/engine/dedup_system.h"
#include "core/engine/system_testutil.h"

namespace dedupv1 {
namespace {

using Side = CacheBudget::Side;

TEST(CacheBudgetTest, TheSplitMovesTowardTheSideWithMoreGhostHitsPerByte) {
  CacheBudget b(64 << 20);
  EXPECT_EQ(b.index_bytes(), 32u << 20);
  EXPECT_EQ(b.read_bytes(), 32u << 20);
  Side index, read;
  // Fewer than 4096 accesses since the last step: no decision.
  index.misses = 2000;
  index.ghost_hits = 500;
  read.hits = 2000;
  EXPECT_FALSE(b.Step(index, read));
  EXPECT_EQ(b.steps(), 0u);
  // Now 4096: the index side's ghosts were hit, the read side's not.
  read.hits += 96;
  EXPECT_TRUE(b.Step(index, read));
  EXPECT_EQ(b.index_bytes(), (32u << 20) + (2u << 20));  // one step: budget / 32
  EXPECT_EQ(b.moves_to_index(), 1u);
  // Counters are differences since the last step: nothing new, no move.
  read.hits += 4096;
  EXPECT_FALSE(b.Step(index, read));
  EXPECT_EQ(b.steps(), 2u);
  // Per byte: equal ghost hits, the index share is the larger one, so the
  // read side's ghosts weigh more.
  index.misses += 4096;
  index.ghost_hits += 100;
  read.ghost_hits += 100;
  EXPECT_TRUE(b.Step(index, read));
  EXPECT_EQ(b.index_bytes(), 32u << 20);
  EXPECT_EQ(b.moves_to_read(), 1u);
}

TEST(CacheBudgetTest, NeitherSideGoesBelowAnEighth) {
  CacheBudget b(64 << 20);
  Side index, read;
  for (int i = 0; i < 40; i++) {
    read.misses += 4096;
    read.ghost_hits += 50;
    b.Step(index, read);
  }
  EXPECT_EQ(b.index_bytes(), (64u << 20) / 8);
  EXPECT_EQ(b.read_bytes(), (64u << 20) - (64u << 20) / 8);
  EXPECT_EQ(b.moves_to_read(), 12u);  // 32 MiB -> 8 MiB in 2 MiB steps
  for (int i = 0; i < 40; i++) {
    index.misses += 4096;
    index.ghost_hits += 50;
    b.Step(index, read);
  }
  EXPECT_EQ(b.read_bytes(), (64u << 20) / 8);
  EXPECT_EQ(b.index_bytes() + b.read_bytes(), 64u << 20);
}

// Through the engine (cache.budget): the budget is split in half at open,
// the read cache takes its share in containers, the chunk index's lookups
// of chunks written back to its table go through the page cache (a second
// write of the same data hits the pages the first one read), the checkpoint
// thread's steps come once 4096 lookups passed, and the data reads back.
// (Which way a step moves is the rule's, tested above: the read path reads
// container ranges and leaves the read cache to commits and merges.)
TEST(CacheBudgetTest, TheEngineSplitsItsBudgetAndLooksUpThroughThePageCache) {
  test::TempDir dir;
  Options o = test::GcTestOptions(dir.path());  // 1 MiB containers
  o.volumes = {{"a", 16 << 20}, {"b", 16 << 20}, {"c", 16 << 20}};
  o.cache_budget = 32 << 20;
  ASSERT_TRUE(o.Finish().ok());
  auto sys = test::OpenSystemOrDie(o);
  DedupSystem::CacheInfo info = sys->cache_info();
  ASSERT_TRUE(info.enabled);
  EXPECT_EQ(info.budget_bytes, 32u << 20);
  EXPECT_EQ(info.index_bytes, 16u << 20);
  EXPECT_EQ(info.read_bytes, 16u << 20);
  EXPECT_EQ(info.read_capacity_containers, 16u);
  const std::vector<uint8_t> data = test::RandomBytes(12 << 20, 31);
  ASSERT_TRUE(test::Vol(sys.get(), "a")->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(sys->Sync().ok());
  ASSERT_TRUE(sys->Checkpoint().ok());
  ASSERT_TRUE(sys->chunk_index()->Flush().ok());  // the entries go to the table
  for (const char* name : {"b", "c"}) {
    ASSERT_TRUE(test::Vol(sys.get(), name)->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(sys->Sync().ok());
    ASSERT_TRUE(sys->Checkpoint().ok());
    ASSERT_TRUE(sys->chunk_index()->Flush().ok());
  }
  std::vector<uint8_t> got(data.size());
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_TRUE(test::Vol(sys.get(), name)->Read(0, got.size(), got.data()).ok());
    EXPECT_TRUE(got == data) << name;
  }
  sys->StepCacheBudget();
  info = sys->cache_info();
  std::printf("index pages: %llu hits, %llu misses, %llu ghost hits, %llu bytes; read cache: %llu hits, %llu misses; "
              "%llu steps\n",
              (unsigned long long)info.index.hits, (unsigned long long)info.index.misses,
              (unsigned long long)info.index.ghost_hits, (unsigned long long)info.index.used_bytes,
              (unsigned long long)info.read_hits, (unsigned long long)info.read_misses,
              (unsigned long long)info.steps);
  EXPECT_GT(info.index.misses, 0u) << "lookups read table pages";
  EXPECT_GT(info.index.hits, 0u) << "the second write of the data found its pages cached";
  // (The last write-back replaced the pages it wrote: they are read again when next looked up.)
  EXPECT_LE(info.index.used_bytes, info.index_bytes);
  EXPECT_GE(info.steps, 1u) << "more than 4096 lookups passed";
  EXPECT_EQ(info.index_bytes + info.read_bytes, 32u << 20);
  EXPECT_EQ(info.read_capacity_containers, info.read_bytes / (1 << 20));
  ASSERT_TRUE(sys->Close().ok());
}

// A budget too small for the read cache's floor (an eighth: one container)
// is refused, naming the key.
TEST(CacheBudgetTest, ABudgetBelowEightContainersIsRefused) {
  Options o;
  o.data_dir = "/tmp/unused";
  o.cache_budget = 8 << 20;  // 4 MiB containers: needs 32 MiB
  Status s = o.Finish();
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.ToString().find("cache.budget"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace dedupv1

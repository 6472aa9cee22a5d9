// Volumes of policy off (core/engine/dedup_policy.h) through the whole
// engine: every known chunk is stored again next to the volume's data, the
// chunk index follows the newest copy, an inline volume deduplicates against
// it, zero chunks stay holes, and once the off volume lets go of its copies
// GC gives them back (spare copies, found through the usage counter's queue
// of released copies); reads, recount and reopen check out.
#include <gtest/gtest.h>

#include "core/base/testutil.h"
#include "core/engine/crash_testutil.h"
#include "core/engine/dedup_system.h"
#include "core/engine/system_testutil.h"

namespace dedupv1 {
namespace {

constexpr uint64_t kSize = 8 << 20;

Options PolicyOptions(const std::string& dir) {
  Options o = test::GcTestOptions(dir);
  o.volumes = {{"inline-a", kSize}, {"off-b", kSize, DedupPolicy::kOff}, {"inline-c", kSize}};
  EXPECT_TRUE(o.Finish().ok());
  return o;
}

TEST(DedupPolicyTest, OffVolumeStoresKnownChunksAgainAndGivesThemBackOnceUnused) {
  test::TempDir dir;
  const Options o = PolicyOptions(dir.path());
  const std::vector<uint8_t> data = test::RandomBytes(kSize / 2, 1);
  std::vector<uint8_t> with_zeros = data;
  with_zeros.resize(kSize, 0);  // the second half zeros: holes
  auto sys = test::OpenSystemOrDie(o);
  Volume* a = test::Vol(sys.get(), "inline-a");
  Volume* b = test::Vol(sys.get(), "off-b");
  Volume* c = test::Vol(sys.get(), "inline-c");
  EXPECT_EQ(b->policy(), DedupPolicy::kOff);
  EXPECT_EQ(a->policy(), DedupPolicy::kInline);

  ASSERT_TRUE(a->Write(0, kSize / 2, data.data(), false).ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(sys->Checkpoint().ok());
  const uint64_t after_a = test::UsedBytes(sys.get());
  // The off volume writes the same data: every chunk is stored again.
  ASSERT_TRUE(b->Write(0, kSize, with_zeros.data(), false).ok());
  ASSERT_TRUE(b->Sync().ok());
  ASSERT_TRUE(sys->Checkpoint().ok());
  const uint64_t again = sys->stats().bytes_stored_again.load();
  EXPECT_GE(again, kSize / 2 - (64 << 10)) << "all but the chunks at the edges";
  EXPECT_LE(again, kSize / 2);
  EXPECT_EQ(sys->stats().chunks_rewritten.load(), 0u);  // not container rewriting's counter
  const uint64_t after_b = test::UsedBytes(sys.get());
  EXPECT_GE(after_b - after_a, kSize / 2 - (64 << 10));
  // An inline volume writing the same data stores (almost) nothing new: it
  // finds the copies, which the index now names in the off volume's containers.
  ASSERT_TRUE(c->Write(0, kSize / 2, data.data(), false).ok());
  ASSERT_TRUE(c->Sync().ok());
  ASSERT_TRUE(sys->Checkpoint().ok());
  EXPECT_EQ(sys->stats().bytes_stored_again.load(), again);
  EXPECT_LT(test::UsedBytes(sys.get()) - after_b, 256u << 10);
  EXPECT_TRUE(test::ReadsBack(a, 0, data));
  EXPECT_TRUE(test::ReadsBack(b, 0, with_zeros));
  EXPECT_TRUE(test::ReadsBack(c, 0, data));
  ExpectUsageMatchesRecount(sys.get());

  // The inline volumes go: their chunks' old copies (in a's containers)
  // are named by nothing now; the off volume's copies stay live.
  ASSERT_TRUE(a->Unmap(0, kSize).ok());
  ASSERT_TRUE(c->Unmap(0, kSize).ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(sys->RunGc().ok());  // the first round: a full scan
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_GE(sys->gc_stats().spare_copies_dead, (kSize / 2) / (16 << 10)) << "a's old copies";
  EXPECT_LE(test::UsedBytes(sys.get()), after_b - after_a + (2 << 20));
  EXPECT_TRUE(test::ReadsBack(b, 0, with_zeros));
  ExpectUsageMatchesRecount(sys.get());
  ASSERT_TRUE(sys->Close().ok());

  sys = test::OpenSystemOrDie(o);
  b = test::Vol(sys.get(), "off-b");
  EXPECT_EQ(b->policy(), DedupPolicy::kOff);
  EXPECT_TRUE(test::ReadsBack(b, 0, with_zeros));
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_TRUE(test::ReadsBack(b, 0, with_zeros));
  ExpectUsageMatchesRecount(sys.get());
}

// An off volume rewriting its own data stores it again each time; the copies
// it let go of are found without a restart (no fingerprint reaches usage 0,
// so no candidate leads GC there: the usage counter's queue does).
TEST(DedupPolicyTest, OffVolumeRewritingItsDataLeavesNoGarbageBehind) {
  test::TempDir dir;
  const Options o = PolicyOptions(dir.path());
  const std::vector<uint8_t> data = test::RandomBytes(kSize / 2, 2);
  auto sys = test::OpenSystemOrDie(o);
  Volume* b = test::Vol(sys.get(), "off-b");
  ASSERT_TRUE(b->Write(0, kSize / 2, data.data(), false).ok());
  ASSERT_TRUE(b->Sync().ok());
  ASSERT_TRUE(sys->RunGc().ok());  // the full scan after open, out of the way
  const uint64_t once = test::UsedBytes(sys.get());
  for (int round = 0; round < 3; round++) {
    ASSERT_TRUE(b->Write(0, kSize / 2, data.data(), false).ok());
    ASSERT_TRUE(b->Sync().ok());
    ASSERT_TRUE(sys->RunGc().ok());
    EXPECT_TRUE(test::ReadsBack(b, 0, data)) << "round " << round;
  }
  EXPECT_GE(sys->stats().bytes_stored_again.load(), 3 * (kSize / 2 - (64 << 10)));
  EXPECT_GE(sys->gc_stats().spare_copies_dead, 3 * ((kSize / 2) / (16 << 10)));
  // What is left: one copy of the data and at most a container of slack per round.
  EXPECT_LE(test::UsedBytes(sys.get()), once + 3 * o.chunk_store.container_size);
  ExpectUsageMatchesRecount(sys.get());
}

// The same data written to other blocks of an off volume, with an overwrite
// in between: each write moves the chunks' entries to the newest copy, and
// the copy moved off that no mapping names any more (no counted event lets
// go of it: its block was overwritten while the entry named it) is queued
// for GC by the move itself (UsageCounter::NoteCopyReplaced).
TEST(DedupPolicyTest, OffVolumeCopiesMovedOffAreGivenBackWithoutARestart) {
  test::TempDir dir;
  const Options o = PolicyOptions(dir.path());
  const std::vector<uint8_t> x = test::RandomBytes(1 << 20, 3);
  const std::vector<uint8_t> y = test::RandomBytes(1 << 20, 4);
  auto sys = test::OpenSystemOrDie(o);
  Volume* b = test::Vol(sys.get(), "off-b");
  ASSERT_TRUE(sys->RunGc().ok());  // the full scan after open, out of the way
  auto write = [&](uint64_t at, const std::vector<uint8_t>& data) {
    ASSERT_TRUE(b->Write(at, data.size(), data.data(), false).ok());
    ASSERT_TRUE(b->Sync().ok());
    ASSERT_TRUE(sys->Checkpoint().ok());
  };
  write(0, x);  // copy 1 (new)
  const uint64_t x_chunks = sys->stats().chunks_new.load();
  write(2 << 20, x);  // copy 2: the entries move to it
  write(2 << 20, y);  // copy 2 named by nothing now, yet copy 1 keeps x in use
  write(4 << 20, x);  // copy 3: the entries move off copy 2
  ASSERT_TRUE(sys->RunGc().ok());
  ASSERT_TRUE(sys->RunGc().ok());  // a copy moved to a container committed since is judged here
  EXPECT_GE(sys->gc_stats().spare_copies_dead, x_chunks - 2) << "copy 2 of every chunk of x but the edges";
  std::vector<uint8_t> want(6 << 20, 0);
  std::copy(x.begin(), x.end(), want.begin());
  std::copy(y.begin(), y.end(), want.begin() + (2 << 20));
  std::copy(x.begin(), x.end(), want.begin() + (4 << 20));
  EXPECT_TRUE(test::ReadsBack(b, 0, want));
  ExpectUsageMatchesRecount(sys.get());
}

// A volume's policy changes with the config applied to the open system: the
// runs after the change follow it.
TEST(DedupPolicyTest, PolicyChangesOnlineWithTheConfig) {
  test::TempDir dir;
  Options o = PolicyOptions(dir.path());
  const std::vector<uint8_t> data = test::RandomBytes(1 << 20, 5);
  auto sys = test::OpenSystemOrDie(o);
  Volume* a = test::Vol(sys.get(), "inline-a");
  Volume* c = test::Vol(sys.get(), "inline-c");
  ASSERT_TRUE(a->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(c->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(c->Sync().ok());
  EXPECT_EQ(sys->stats().chunks_stored_again.load(), 0u);

  o.volumes[2].policy = DedupPolicy::kOff;
  std::vector<std::string> changed;
  ASSERT_TRUE(sys->ApplyVolumes(o.volumes, &changed).ok());
  EXPECT_EQ(changed, std::vector<std::string>{"inline-c"});
  EXPECT_EQ(c->policy(), DedupPolicy::kOff);
  ASSERT_TRUE(c->Write(2 << 20, data.size(), data.data(), false).ok());
  ASSERT_TRUE(c->Sync().ok());
  const uint64_t again = sys->stats().chunks_stored_again.load();
  EXPECT_GT(again, 0u);

  o.volumes[2].policy = DedupPolicy::kInline;
  changed.clear();
  ASSERT_TRUE(sys->ApplyVolumes(o.volumes, &changed).ok());
  EXPECT_EQ(changed, std::vector<std::string>{"inline-c"});
  ASSERT_TRUE(c->Write(4 << 20, data.size(), data.data(), false).ok());
  ASSERT_TRUE(c->Sync().ok());
  EXPECT_EQ(sys->stats().chunks_stored_again.load(), again);
  changed.clear();
  ASSERT_TRUE(sys->ApplyVolumes(o.volumes, &changed).ok());
  EXPECT_TRUE(changed.empty());  // nothing changed
}

// Select-Dedupe on a selective volume (select_dedupe.h), one request of
// each category, through the write buffer: the identical rewrite of an
// address writes no container, the request with two known chunks among
// fourteen new ones is written in full (its two known chunks stored again),
// the one with eight known deduplicates them. Reads, recount and a reopen
// check out.
TEST(DedupPolicyTest, SelectiveVolumeDecidesPerRequest) {
  test::TempDir dir;
  Options o = test::GcTestOptions(dir.path());
  o.volumes = {{"inline-a", kSize}, {"sel-s", kSize, DedupPolicy::kSelective}};
  ASSERT_TRUE(o.Finish().ok());
  constexpr size_t kRequest = 64 << 10;  // 16 chunks of 4 KiB
  const std::vector<uint8_t> d = test::RandomBytes(kRequest, 11);
  auto sys = test::OpenSystemOrDie(o);
  Volume* s = test::Vol(sys.get(), "sel-s");
  EXPECT_EQ(s->policy(), DedupPolicy::kSelective);
  const SystemStats& st = sys->stats();
  std::vector<uint8_t> want(kSize, 0);
  auto write = [&](uint64_t at, const std::vector<uint8_t>& data) {
    ASSERT_TRUE(s->Write(at, data.size(), data.data(), false).ok());
    std::copy(data.begin(), data.end(), want.begin() + static_cast<long>(at));
  };
  write(0, d);
  ASSERT_TRUE(s->Sync().ok());
  ASSERT_TRUE(sys->Checkpoint().ok());
  EXPECT_EQ(st.requests_all_new.load(), 1u);
  EXPECT_EQ(st.chunks_new.load(), 16u) << "4 KiB chunks at volume offsets";

  // The identical rewrite of the same address: no container write.
  const uint64_t used = test::UsedBytes(sys.get());
  write(0, d);
  ASSERT_TRUE(s->Sync().ok());
  ASSERT_TRUE(sys->Checkpoint().ok());
  EXPECT_EQ(st.requests_full_dedup.load(), 1u);
  EXPECT_EQ(st.chunks_new.load(), 16u);
  EXPECT_EQ(st.chunks_stored_again.load(), 0u);
  EXPECT_EQ(test::UsedBytes(sys.get()), used);

  // Three requests back to back, one sync: the buffer keeps their edges.
  std::vector<uint8_t> few = test::RandomBytes(kRequest, 12);    // 2 of d's chunks, 14 new
  std::copy(d.begin(), d.begin() + (8 << 10), few.begin());
  std::vector<uint8_t> many = test::RandomBytes(kRequest, 13);   // 8 of d's chunks, 8 new
  std::copy(d.begin(), d.begin() + (32 << 10), many.begin());
  const std::vector<uint8_t> fresh = test::RandomBytes(kRequest, 14);
  write(1 << 20, few);
  write((1 << 20) + kRequest, many);
  write((1 << 20) + 2 * kRequest, fresh);
  ASSERT_TRUE(s->Sync().ok());
  ASSERT_TRUE(sys->Checkpoint().ok());
  EXPECT_EQ(st.requests_written_in_full.load(), 1u);
  EXPECT_EQ(st.requests_partial_dedup.load(), 1u);
  EXPECT_EQ(st.requests_all_new.load(), 2u);
  EXPECT_EQ(st.bytes_written_in_full.load(), kRequest);
  EXPECT_EQ(st.chunks_stored_again.load(), 2u) << "the written-in-full request's two known chunks";
  EXPECT_EQ(st.bytes_stored_again.load(), 8u << 10);
  EXPECT_EQ(st.chunks_new.load(), 16u + 14 + 8 + 16);
  EXPECT_TRUE(test::ReadsBack(s, 0, want));
  ExpectUsageMatchesRecount(sys.get());

  // d again at another address: fully known, nothing stored.
  write(4 << 20, d);
  ASSERT_TRUE(s->Sync().ok());
  EXPECT_EQ(st.requests_full_dedup.load(), 2u);
  EXPECT_EQ(st.chunks_new.load(), 16u + 14 + 8 + 16);
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_TRUE(test::ReadsBack(s, 0, want));
  ExpectUsageMatchesRecount(sys.get());
  ASSERT_TRUE(sys->Close().ok());

  sys = test::OpenSystemOrDie(o);
  s = test::Vol(sys.get(), "sel-s");
  EXPECT_EQ(s->policy(), DedupPolicy::kSelective);
  EXPECT_TRUE(test::ReadsBack(s, 0, want));
  ExpectUsageMatchesRecount(sys.get());
}

// A chunk stored again in one request (written in full) and met in another
// request of the same run (deduplicated there) names one copy in both: the
// new one. (Were the second left on the old copy, the old copy would be
// named beside the new one, and GC, following a block's first mention of a
// fingerprint, would miss it once that block is overwritten.)
TEST(DedupPolicyTest, SelectiveChunkInTwoRequestsOfARunNamesOneCopy) {
  test::TempDir dir;
  Options o = test::GcTestOptions(dir.path());
  o.volumes = {{"sel-s", kSize, DedupPolicy::kSelective}};
  ASSERT_TRUE(o.Finish().ok());
  ASSERT_EQ(o.block_size, 64u << 10);
  const std::vector<uint8_t> d = test::RandomBytes(64 << 10, 31);
  std::vector<uint8_t> one = test::RandomBytes(64 << 10, 32);  // d's first chunk among 15 new
  std::copy(d.begin(), d.begin() + (4 << 10), one.begin());
  std::vector<uint8_t> eight = test::RandomBytes(64 << 10, 33);  // d's first 8 chunks among 8 new
  std::copy(d.begin(), d.begin() + (32 << 10), eight.begin());
  auto sys = test::OpenSystemOrDie(o);
  Volume* s = test::Vol(sys.get(), "sel-s");
  ASSERT_TRUE(s->Write(0, d.size(), d.data(), false).ok());
  ASSERT_TRUE(s->Sync().ok());
  ASSERT_TRUE(s->Write(1 << 20, one.size(), one.data(), false).ok());
  ASSERT_TRUE(s->Write((1 << 20) + (64 << 10), eight.size(), eight.data(), false).ok());
  ASSERT_TRUE(s->Sync().ok());
  EXPECT_EQ(sys->stats().requests_written_in_full.load(), 1u);
  EXPECT_EQ(sys->stats().requests_partial_dedup.load(), 1u);
  BlockMapping first, second, original;
  ASSERT_TRUE(sys->block_index()->Get(BlockId{s->id(), 0}, &original).ok());
  ASSERT_TRUE(sys->block_index()->Get(BlockId{s->id(), 16}, &first).ok());
  ASSERT_TRUE(sys->block_index()->Get(BlockId{s->id(), 17}, &second).ok());
  const BlockMappingItem& old_copy = original.items().front();
  const BlockMappingItem& in_one = first.items().front();
  const BlockMappingItem& in_eight = second.items().front();
  ASSERT_EQ(in_one.fp, old_copy.fp);
  ASSERT_EQ(in_eight.fp, old_copy.fp);
  EXPECT_NE(in_one.container, old_copy.container) << "stored again in the request written in full";
  EXPECT_EQ(in_eight.container, in_one.container) << "the run's other request names the same new copy";
  EXPECT_TRUE(test::ReadsBack(s, 1 << 20, one));
  EXPECT_TRUE(test::ReadsBack(s, (1 << 20) + (64 << 10), eight));
  ASSERT_TRUE(sys->Checkpoint().ok());
  ExpectUsageMatchesRecount(sys.get());
}

// dedup.selective.threshold moves the line between written in full and
// deduplicated: at 1, a request with any known chunk is deduplicated.
TEST(DedupPolicyTest, SelectiveThresholdOneDeduplicatesEveryKnownChunk) {
  test::TempDir dir;
  Options o = test::GcTestOptions(dir.path());
  o.volumes = {{"sel-s", kSize, DedupPolicy::kSelective}};
  o.selective_threshold = 1;
  ASSERT_TRUE(o.Finish().ok());
  const std::vector<uint8_t> d = test::RandomBytes(64 << 10, 21);
  std::vector<uint8_t> few = test::RandomBytes(64 << 10, 22);
  std::copy(d.begin(), d.begin() + (4 << 10), few.begin());
  auto sys = test::OpenSystemOrDie(o);
  Volume* s = test::Vol(sys.get(), "sel-s");
  ASSERT_TRUE(s->Write(0, d.size(), d.data(), false).ok());
  ASSERT_TRUE(s->Sync().ok());
  ASSERT_TRUE(s->Write(1 << 20, few.size(), few.data(), false).ok());
  ASSERT_TRUE(s->Sync().ok());
  EXPECT_EQ(sys->stats().requests_partial_dedup.load(), 1u);
  EXPECT_EQ(sys->stats().requests_written_in_full.load(), 0u);
  EXPECT_EQ(sys->stats().chunks_stored_again.load(), 0u);
  EXPECT_TRUE(test::ReadsBack(s, 1 << 20, few));
}

}  // namespace
}  // namespace dedupv1

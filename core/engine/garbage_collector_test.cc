// Garbage collection through the whole engine: overwritten and unmapped data
// gives its space back, usage counts match a recount from the block mappings,
// and every read stays correct, also after reopening.
#include "core/engine/garbage_collector.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "chunkstore/container_summary_file.h"
#include "core/engine/crash_testutil.h"
#include "core/engine/dedup_system.h"
#include "core/engine/system_testutil.h"
#include "core/base/testutil.h"

namespace dedupv1 {

// Every chunk-index entry's usage count equals the number of blocks whose
// mapping names its fingerprint (the rule of core/engine/usage_counter.h), and every
// referenced chunk has an entry. Also used by crash_test.cc.
// |expect_entries|: fail if there was nothing to compare (a test that wrote data).

namespace {

constexpr uint64_t kVolumeSize = 24 << 20;
constexpr size_t kContainerSize = 1 << 20;

Options GcOptions(const std::string& dir) {
  Options o = test::GcTestOptions(dir);
  EXPECT_EQ(o.chunk_store.container_size, kContainerSize);
  o.volumes = {{"vol1", kVolumeSize}};
  EXPECT_TRUE(o.Finish().ok());
  return o;
}

}  // namespace

namespace {

void ExpectContent(Volume* v, const std::vector<uint8_t>& want) {
  std::vector<uint8_t> got(want.size());
  for (uint64_t off = 0; off < want.size(); off += 1 << 20) {
    const uint64_t n = std::min<uint64_t>(1 << 20, want.size() - off);
    ASSERT_TRUE(v->Read(off, n, got.data() + off).ok());
  }
  for (uint64_t off = 0; off < want.size(); off += 4096) {
    ASSERT_EQ(0, std::memcmp(got.data() + off, want.data() + off, std::min<uint64_t>(4096, want.size() - off)))
        << "at offset " << off;
  }
}

// The test: overwrite a volume three times and unmap half of it;
// after idle processing the stored bytes drop accordingly, the usage counts
// check out and every read is correct (dedupv1_check's checker runs on the
// same scenario in target/tools/gc_check_test.cc).
TEST(GarbageCollectorTest, OverwriteThreeTimesAndUnmapHalfGivesTheSpaceBack) {
  test::TempDir dir;
  const Options o = GcOptions(dir.path());
  std::vector<uint8_t> expected;
  uint64_t used_after = 0;
  uint64_t marks_kept = 0;  // garbage kept in containers at least half live
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    for (uint64_t generation = 0; generation < 4; generation++) {
      expected = test::RandomBytes(kVolumeSize, 100 + generation);
      ASSERT_TRUE(v->Write(0, kVolumeSize, expected.data(), false).ok());
      ASSERT_TRUE(v->Sync().ok());
    }
    ASSERT_TRUE(v->Unmap(0, kVolumeSize / 2).ok());
    std::fill(expected.begin(), expected.begin() + kVolumeSize / 2, 0);
    ASSERT_TRUE(v->Sync().ok());
    const uint64_t used_before = test::UsedBytes(sys.get());
    // Four generations of incompressible data are stored.
    EXPECT_GE(used_before, 4 * kVolumeSize);

    ASSERT_TRUE(sys->RunGc().ok());  // what the idle checkpoint thread runs
    used_after = test::UsedBytes(sys.get());
    const GcStats st = sys->gc_stats();
    EXPECT_EQ(st.runs, 1u) << "an idle round ran during the test? it would be harmless but unexpected";
    EXPECT_GT(st.chunks_deleted, 0u);
    EXPECT_GT(st.containers_deleted, 0u);
    EXPECT_EQ(st.bytes_reclaimed, used_before - used_after);
    EXPECT_FALSE(st.running);
    // The bound: the live data is half the volume. Containers at least half
    // live are kept with their garbage, but here garbage comes in whole
    // generations, so only the containers at the unmap boundary and at the
    // ends of generations hold any: live data + 4 containers.
    const uint64_t live = kVolumeSize / 2;
    EXPECT_GE(used_after, live);
    EXPECT_LE(used_after, live + 4 * kContainerSize) << "before " << used_before;
    EXPECT_GE(st.live_bytes, live);
    ExpectContent(v, expected);
    ExpectUsageMatchesRecount(sys.get());
    // A second round finds nothing more to do.
    ASSERT_TRUE(sys->RunGc().ok());
    EXPECT_EQ(sys->gc_stats().chunks_deleted, st.chunks_deleted);
    EXPECT_LE(test::UsedBytes(sys.get()), used_after);
    used_after = test::UsedBytes(sys.get());
    ASSERT_EQ(sys->gc_stats().rounds_deferred, 0u) << "the marks would wait for a later round";
    EXPECT_EQ(sys->chunk_store()->stats().dead_marks_unpersisted, 0u);
    marks_kept = sys->chunk_store()->stats().dead_chunks_marked;
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  EXPECT_EQ(test::UsedBytes(sys.get()), used_after);
  // The first round after a start scans every container from the summaries
  // taken at commit and after the marks (nothing is left to collect or
  // merge): no container is read, not even its metadata.
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_EQ(sys->chunk_store()->stats().container_reads, 0u);
  EXPECT_EQ(sys->chunk_store()->stats().metadata_reads, 0u);
  EXPECT_EQ(sys->gc_stats().containers_summarized, sys->gc_stats().containers_scanned);
  EXPECT_EQ(test::UsedBytes(sys.get()), used_after);
  // The garbage kept in containers at least half live was marked dead
  // persistently, so every container holds as many chunks as index entries
  // name it (merged ones through their old ids too): no container needs a
  // chunk-by-chunk look and no garbage is found again.
  EXPECT_EQ(sys->chunk_store()->stats().dead_marks_loaded, marks_kept);
  EXPECT_GT(sys->gc_stats().containers_scanned, 4u);
  EXPECT_EQ(sys->gc_stats().containers_looked_up, 0u);
  EXPECT_EQ(sys->gc_stats().orphans_found, 0u);
  ExpectContent(v, expected);
  ExpectUsageMatchesRecount(sys.get());
  // Writing the live half again deduplicates against the survivors.
  const uint64_t stored = sys->chunk_store()->stats().bytes_stored;
  ASSERT_TRUE(v->Write(kVolumeSize / 2, kVolumeSize / 2, expected.data() + kVolumeSize / 2, false).ok());
  ASSERT_TRUE(v->Sync().ok());
  EXPECT_LT(sys->chunk_store()->stats().bytes_stored - stored, kVolumeSize / 16);
  ExpectContent(v, expected);
}

// Writes |a| at offset 0 of |v|, then |b| over it (each synced), and counts
// the logged events: a's chunks that b does not share are at usage 0 after.
void WriteThenOverwrite(DedupSystem* sys, Volume* v, const std::vector<uint8_t>& a,
                        const std::vector<uint8_t>& b) {
  ASSERT_TRUE(v->Write(0, a.size(), a.data(), false).ok());
  ASSERT_TRUE(v->Sync().ok());
  ASSERT_TRUE(v->Write(0, b.size(), b.data(), false).ok());
  ASSERT_TRUE(v->Sync().ok());
  ASSERT_TRUE(sys->Checkpoint().ok());
}

// Unmaps |length| bytes at |start| within every four blocks of |v| (of size
// |bs|), over the first expected->size() bytes, and zeroes them in |expected|.
void UnmapInEveryFourBlocks(Volume* v, uint64_t bs, uint64_t start, uint64_t length,
                            std::vector<uint8_t>* expected) {
  for (uint64_t off = start; off < expected->size(); off += 4 * bs) {
    ASSERT_TRUE(v->Unmap(off, length).ok());
    std::fill(expected->begin() + off, expected->begin() + off + length, 0);
  }
}

// Hold and recheck: a chunk that reached usage 0 but is referenced again
// before the GC round (the new mapping not counted yet) survives the round.
TEST(GarbageCollectorTest, CandidateReferencedAgainBeforeTheRoundSurvives) {
  test::TempDir dir;
  const Options o = GcOptions(dir.path());
  const std::vector<uint8_t> a = test::RandomBytes(2 << 20, 1);
  const std::vector<uint8_t> b = test::RandomBytes(2 << 20, 2);
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    WriteThenOverwrite(sys.get(), v, a, b);  // a's chunks are at usage 0 now
    ASSERT_FALSE(HasFatalFailure());
    const uint64_t candidates = sys->gc_stats().candidates;
    EXPECT_GT(candidates, 0u);
    // a again, elsewhere: known to the chunk index, so only referenced.
    const uint64_t new_before = sys->stats().chunks_new.load();
    ASSERT_TRUE(v->Write(8 << 20, a.size(), a.data(), false).ok());
    ASSERT_TRUE(v->Sync().ok());
    EXPECT_EQ(sys->stats().chunks_new.load(), new_before) << "a was stored again, the test proves nothing";
    ASSERT_TRUE(sys->RunGc().ok());
    const GcStats st = sys->gc_stats();
    EXPECT_GE(st.chunks_survived, candidates);
    EXPECT_EQ(st.chunks_deleted, 0u);
    std::vector<uint8_t> got(a.size());
    ASSERT_TRUE(v->Read(8 << 20, got.size(), got.data()).ok());
    EXPECT_EQ(got, a);
    ExpectUsageMatchesRecount(sys.get());
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  std::vector<uint8_t> got(a.size());
  ASSERT_TRUE(v->Read(8 << 20, got.size(), got.data()).ok());
  EXPECT_EQ(got, a);
  ASSERT_TRUE(v->Read(0, got.size(), got.data()).ok());
  EXPECT_EQ(got, b);
}

// Garbage kept in containers that stay at least half live is remembered
// across a restart (the dead marks are persisted once the round's erasures
// are): the first round after the start looks no chunk up and finds nothing
// again; when more of those containers dies later, merges leave the old
// garbage out.
TEST(GarbageCollectorTest, GarbageKeptInHalfLiveContainersIsRememberedAcrossARestart) {
  test::TempDir dir;
  Options o = GcOptions(dir.path());
  // Containers are committed when full (and at the Sync), never by age: a
  // write stalled past the commit timeout on a loaded host would commit a
  // container of a few chunks, which one unmapped block can leave less than
  // half live, and its merge is not what this test is about.
  o.chunk_store.commit_timeout_ms = 3600 * 1000;
  // One worker filling one open container at a time: chunks land in
  // containers in the order they were written. With two workers and four
  // open containers a loaded host could gather the chunks of a few unmapped
  // blocks in the small container the Sync commits (seen once in CI: one
  // merge, 7 chunks gone with it instead of being marked).
  o.dedup_threads = 1;
  o.chunk_store.open_containers = 1;
  const uint64_t bs = o.block_size;
  const std::vector<uint8_t> data = test::RandomBytes(8 << 20, 21);
  std::vector<uint8_t> expected = data;
  uint64_t marks = 0;
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(v->Sync().ok());
    // One block in four: every container keeps three quarters.
    ASSERT_NO_FATAL_FAILURE(UnmapInEveryFourBlocks(v, bs, 0, bs, &expected));
    ASSERT_TRUE(v->Sync().ok());
    ASSERT_TRUE(sys->RunGc().ok());
    const GcStats st = sys->gc_stats();
    EXPECT_GT(st.chunks_deleted, 0u);
    EXPECT_EQ(st.containers_merged, 0u);
    ASSERT_EQ(st.rounds_deferred, 0u) << "the marks would wait for a later round";
    marks = sys->chunk_store()->stats().dead_chunks_marked;
    EXPECT_EQ(marks, st.chunks_deleted);
    EXPECT_EQ(sys->chunk_store()->stats().dead_marks_unpersisted, 0u);
    ExpectContent(v, expected);
    ASSERT_TRUE(sys->Close().ok());
  }
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    EXPECT_EQ(sys->chunk_store()->stats().dead_marks_loaded, marks);
    ASSERT_TRUE(sys->RunGc().ok());
    const GcStats st = sys->gc_stats();
    EXPECT_GT(st.containers_scanned, 4u);
    EXPECT_EQ(st.containers_looked_up, 0u);
    // The summaries taken after the marks (the round's recount) fit them: no
    // container's metadata is read either.
    EXPECT_EQ(st.containers_summarized, st.containers_scanned);
    EXPECT_EQ(sys->chunk_store()->stats().metadata_reads, 0u);
    EXPECT_EQ(st.orphans_found, 0u);
    EXPECT_EQ(st.chunks_deleted, 0u);
    ExpectContent(v, expected);
    ExpectUsageMatchesRecount(sys.get());
    // Now one and a half blocks more in four: the containers fall below half
    // and are merged, without the garbage of the first round.
    const uint64_t before = test::UsedBytes(sys.get());
    ASSERT_NO_FATAL_FAILURE(UnmapInEveryFourBlocks(v, bs, 2 * bs, bs + bs / 2, &expected));
    ASSERT_TRUE(v->Sync().ok());
    ASSERT_TRUE(sys->RunGc().ok());
    EXPECT_GT(sys->gc_stats().containers_merged, 1u);
    EXPECT_LT(test::UsedBytes(sys.get()), before * 3 / 4);
    ExpectContent(v, expected);
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  ExpectContent(v, expected);
  ExpectUsageMatchesRecount(sys.get());
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_EQ(sys->gc_stats().containers_looked_up, 0u);
  ExpectContent(v, expected);
}

// The first round after a start judges containers whose chunks all have an
// index entry from the summaries recorded at commit, without reading their
// metadata. Summaries lost (file deleted or damaged) are learned again from
// the metadata by the next full scan.
TEST(GarbageCollectorTest, FirstRoundAfterAStartReadsNoMetadataOfAllLiveContainers) {
  test::TempDir dir;
  const Options o = GcOptions(dir.path());
  const std::vector<uint8_t> data = test::RandomBytes(8 << 20, 31);
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(v->Sync().ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  const std::string file = JoinPath(o.chunk_store.dir, kContainerSummaryFileName);
  // |summarized|: how many of the scanned containers the round judged by summary.
  auto restart_round = [&](const char* what, bool all_summarized) {
    SCOPED_TRACE(what);
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    ASSERT_TRUE(sys->RunGc().ok());
    const GcStats st = sys->gc_stats();
    EXPECT_GT(st.containers_scanned, 4u);
    EXPECT_EQ(st.containers_looked_up, 0u);
    if (all_summarized) {
      EXPECT_EQ(st.containers_summarized, st.containers_scanned);
      EXPECT_EQ(sys->chunk_store()->stats().metadata_reads, 0u);
    } else {
      EXPECT_LT(st.containers_summarized, st.containers_scanned);
      EXPECT_GT(sys->chunk_store()->stats().metadata_reads, 0u);
    }
    ExpectContent(v, data);
    ASSERT_TRUE(sys->Close().ok());
  };
  ASSERT_NO_FATAL_FAILURE(restart_round("summaries recorded at commit", true));
  ASSERT_TRUE(Env::Default()->DeleteFile(file).ok());
  ASSERT_NO_FATAL_FAILURE(restart_round("file deleted", false));
  ASSERT_NO_FATAL_FAILURE(restart_round("learned again from the metadata", true));
  std::string bytes;
  ASSERT_TRUE(ReadFileToString(Env::Default(), file, &bytes).ok());
  ASSERT_GE(bytes.size(), 2 * ContainerSummaryFile::kRecordSize);
  bytes[ContainerSummaryFile::kRecordSize + 3] ^= 0x40;  // the second record's id
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), file, bytes).ok());
  ASSERT_NO_FATAL_FAILURE(restart_round("one record damaged", false));
  ASSERT_NO_FATAL_FAILURE(restart_round("learned again", true));
}

// Merged containers answer to their old ids through the engine, also after a
// reopen: nothing in the chunk index or the block index is rewritten.
TEST(GarbageCollectorTest, MergeKeepsOldIdsReadable) {
  test::TempDir dir;
  const Options o = GcOptions(dir.path());
  // Interleave two files block by block, so every container holds both; then
  // overwrite one of them: every container is about half garbage.
  const uint64_t bs = o.block_size;
  std::vector<uint8_t> data = test::RandomBytes(8 << 20, 5);
  std::vector<uint8_t> expected = data;
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(v->Sync().ok());
    // Unmap every other pair of blocks: 50% of each container is garbage,
    // then a bit more so they fall below half.
    ASSERT_NO_FATAL_FAILURE(UnmapInEveryFourBlocks(v, bs, 0, 2 * bs + bs / 2, &expected));
    ASSERT_TRUE(v->Sync().ok());
    const uint64_t before = test::UsedBytes(sys.get());
    ASSERT_TRUE(sys->RunGc().ok());
    const GcStats st = sys->gc_stats();
    EXPECT_GT(st.containers_merged, 1u);
    EXPECT_GT(st.containers_written, 0u);
    EXPECT_LT(st.containers_written, st.containers_merged);
    EXPECT_LT(test::UsedBytes(sys.get()), before * 6 / 10);
    ExpectContent(v, expected);
    ExpectUsageMatchesRecount(sys.get());
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  ExpectContent(v, std::vector<uint8_t>(expected.begin(), expected.end()));
  ExpectUsageMatchesRecount(sys.get());
  // The full scan counts the entries naming the old ids for the merged
  // containers: none needs a chunk-by-chunk look, and the merged containers'
  // summaries spare reading their metadata. (The reads above read some.)
  const uint64_t metadata_reads = sys->chunk_store()->stats().metadata_reads;
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_GT(sys->gc_stats().containers_scanned, 0u);
  EXPECT_EQ(sys->gc_stats().containers_looked_up, 0u);
  EXPECT_EQ(sys->gc_stats().containers_summarized, sys->gc_stats().containers_scanned);
  EXPECT_EQ(sys->chunk_store()->stats().metadata_reads, metadata_reads);
  ExpectContent(v, std::vector<uint8_t>(expected.begin(), expected.end()));
}

// A round interrupted after its erasures reached the chunk index (step 4)
// but before it deleted or merged anything leaves chunks without an entry.
// The full scan after the restart finds their containers (fewer entries than
// chunks), confirms the orphans and gives the space back; the other chunks
// at usage 0 are found by the index pass.
TEST(GarbageCollectorTest, FullScanAfterRestartFindsOrphansAndCandidates) {
  test::TempDir dir;
  const Options o = GcOptions(dir.path());
  const std::vector<uint8_t> a = test::RandomBytes(3 << 20, 11);
  const std::vector<uint8_t> b = test::RandomBytes(3 << 20, 12);
  uint64_t used_with_a = 0;
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    WriteThenOverwrite(sys.get(), v, a, b);  // a's chunks are at usage 0 now
    ASSERT_FALSE(HasFatalFailure());
    std::vector<Fingerprint> unused;
    ASSERT_TRUE(sys->chunk_index()
                    ->ForEachEntry([&](const Fingerprint& fp, const ChunkIndexEntry& e) {
                      if (e.usage_count == 0) unused.push_back(fp);
                    })
                    .ok());
    ASSERT_GT(unused.size(), 2u);
    // What the interrupted round did: two of them erased, persistently.
    ASSERT_TRUE(sys->chunk_index()->Erase(unused[0]).ok());
    ASSERT_TRUE(sys->chunk_index()->Erase(unused[1]).ok());
    ASSERT_TRUE(sys->chunk_index()->Flush().ok());
    used_with_a = test::UsedBytes(sys.get());
    EXPECT_EQ(sys->gc_stats().runs, 0u);
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  ASSERT_TRUE(sys->RunGc().ok());
  const GcStats st = sys->gc_stats();
  EXPECT_EQ(st.orphans_found, 2u);
  EXPECT_GT(st.chunks_deleted, 0u);  // the rest of a, candidates again after the restart
  EXPECT_GE(st.containers_looked_up, 1u);
  EXPECT_LT(st.containers_looked_up, st.containers_scanned) << "b's containers need no lookups";
  // a's containers held only a: all of it is given back.
  EXPECT_LE(test::UsedBytes(sys.get()), used_with_a - a.size());
  ExpectContent(v, b);
  ExpectUsageMatchesRecount(sys.get());
}

// Idle processing: after writes stop, the checkpoint thread's quiet-period
// checkpoint is followed by a GC round without anyone asking.
TEST(GarbageCollectorTest, IdleProcessingCollectsWithoutBeingAsked) {
  test::TempDir dir;
  Options o = GcOptions(dir.path());
  o.idle.period_ms = 2000;
  ASSERT_TRUE(o.Finish().ok());
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  std::vector<uint8_t> data;
  for (uint64_t generation = 0; generation < 2; generation++) {
    data = test::RandomBytes(8 << 20, 300 + generation);
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(v->Sync().ok());
  }
  const uint64_t before = test::UsedBytes(sys.get());
  // The idle round comes about 2 s after the last write; poll for what it
  // gives back. (A stall between the generations may start an earlier round
  // that finds only part of the garbage; idle ticks run rounds while there
  // is work, so the rest follows.)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  GcStats st;
  uint64_t used = before;
  for (;;) {
    st = sys->gc_stats();
    used = test::UsedBytes(sys.get());
    if (st.chunks_deleted > 0 && !st.running && used < before * 6 / 10) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "idle GC did not give back the first generation within 60 s: " << st.chunks_deleted
        << " chunks deleted, " << used << " of " << before << " bytes still used";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(st.failed_runs, 0u) << st.last_error;
  std::vector<uint8_t> got(data.size());
  ASSERT_TRUE(v->Read(0, got.size(), got.data()).ok());
  EXPECT_EQ(got, data);
}

// Rounds running back to back while writers overwrite slots with contents
// that come and go (so chunks drop to 0 and are referenced again while they
// are candidates): every slot reads its last version, the counts match.
// Whether |s| failed (said on stderr, for a test's failure message).
bool Failed(const Status& s) {
  if (!s.ok()) std::fprintf(stderr, "failed: %s\n", s.ToString().c_str());
  return !s.ok();
}

// Two writers overwrite, unmap and rewrite slots of recurring contents while
// GC rounds run back to back; every slot reads its last content, before and
// after reopening, and the usage counts match a recount. Returns the
// system's final stats.
void OverwriteDuringRounds(const Options& o, SystemStats* dedup_out, GcStats* gc_out) {
  constexpr uint64_t kSlot = 192 << 10;  // three blocks
  constexpr uint64_t kSlots = 64;
  constexpr int kWriters = 2;
  auto content = [](uint64_t slot, uint64_t version) {
    return test::RandomBytes(kSlot, slot * 1000 + version % 4);  // four contents per slot, recurring
  };
  std::vector<uint64_t> last(kSlots, 0);
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    std::atomic<bool> stop{false};
    std::atomic<int> errors{0};
    std::atomic<uint64_t> rounds{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kWriters; t++) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(t + 1);
        // At least 300 writes each, and on until two rounds ran during them
        // (a slow host may need more; bounded).
        for (int i = 0; (i < 300 || rounds < 2) && i < 20000 && errors == 0; i++) {
          const uint64_t slot = t + kWriters * (rng() % (kSlots / kWriters));  // disjoint slots per writer
          const uint64_t version = last[slot] + 1 + rng() % 3;
          auto data = content(slot, version);
          if (Failed(v->Write(slot * kSlot, kSlot, data.data(), false))) errors++;
          last[slot] = version;
          if (rng() % 10 == 0 && Failed(v->Sync())) errors++;
          if (rng() % 8 == 0) {
            // Unmap and write the same content again: its chunks lose their
            // last reference and get it back, maybe around a round.
            if (Failed(v->Unmap(slot * kSlot, kSlot))) errors++;
            if (Failed(v->Sync())) errors++;
            if (Failed(v->Write(slot * kSlot, kSlot, data.data(), false))) errors++;
          }
        }
      });
    }
    std::thread gc([&] {
      while (!stop) {
        Status r = sys->RunGc();
        if (!r.ok()) {
          std::fprintf(stderr, "GC round failed: %s\n", r.ToString().c_str());
          errors++;
        }
        rounds++;
      }
    });
    for (auto& t : threads) t.join();
    stop = true;
    gc.join();
    ASSERT_EQ(errors.load(), 0);
    EXPECT_GE(rounds, 2u);
    ASSERT_TRUE(v->Sync().ok());
    ASSERT_TRUE(sys->RunGc().ok());
    EXPECT_GT(sys->gc_stats().chunks_deleted, 0u);
    std::fprintf(stderr, "rounds %llu, chunks deleted %llu, survived the recheck %llu\n", (unsigned long long)rounds.load(),
                 (unsigned long long)sys->gc_stats().chunks_deleted, (unsigned long long)sys->gc_stats().chunks_survived);
    std::vector<uint8_t> got(kSlot);
    for (uint64_t slot = 0; slot < kSlots; slot++) {
      ASSERT_TRUE(v->Read(slot * kSlot, kSlot, got.data()).ok());
      if (last[slot] == 0) continue;
      ASSERT_TRUE(got == content(slot, last[slot])) << "slot " << slot;
    }
    ExpectUsageMatchesRecount(sys.get());
    dedup_out->chunks_rewritten = sys->stats().chunks_rewritten.load();
    dedup_out->bytes_rewritten = sys->stats().bytes_rewritten.load();
    dedup_out->bytes_chunked = sys->stats().bytes_chunked.load();
    *gc_out = sys->gc_stats();
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  std::vector<uint8_t> got(kSlot);
  for (uint64_t slot = 0; slot < kSlots; slot++) {
    if (last[slot] == 0) continue;
    ASSERT_TRUE(v->Read(slot * kSlot, kSlot, got.data()).ok());
    ASSERT_TRUE(got == content(slot, last[slot])) << "slot " << slot << " after reopen";
  }
  ExpectUsageMatchesRecount(sys.get());
  // The round after a start scans every container: copies of chunks stored
  // twice are judged by a walk of all mappings, and no read changes.
  ASSERT_TRUE(sys->RunGc().ok());
  for (uint64_t slot = 0; slot < kSlots; slot++) {
    if (last[slot] == 0) continue;
    ASSERT_TRUE(v->Read(slot * kSlot, kSlot, got.data()).ok());
    ASSERT_TRUE(got == content(slot, last[slot])) << "slot " << slot << " after the round after reopen";
  }
  ExpectUsageMatchesRecount(sys.get());
}

TEST(GarbageCollectorTest, RoundsDuringConcurrentOverwritesLoseNothing) {
  test::TempDir dir;
  SystemStats dedup;
  GcStats gc;
  OverwriteDuringRounds(GcOptions(dir.path()), &dedup, &gc);
  EXPECT_EQ(dedup.chunks_rewritten.load(), 0u);
}

// The same with container rewriting at a high limit: slots written again
// take their chunks from sparse old containers, so many are stored twice,
// and the rounds judge the spare copies while mappings come and go.
TEST(GarbageCollectorTest, RoundsDuringConcurrentOverwritesWithContainerRewritingLoseNothing) {
  test::TempDir dir;
  Options o = GcOptions(dir.path());
  o.rewrite.enabled = true;
  o.rewrite.sparse_bytes = kContainerSize;  // a 192 KiB slot is always sparse
  o.rewrite.limit = 0.5;
  SystemStats dedup;
  GcStats gc;
  OverwriteDuringRounds(o, &dedup, &gc);
  std::fprintf(stderr, "rewritten %llu chunks (%llu of %llu bytes), spare copies given back %llu\n",
               (unsigned long long)dedup.chunks_rewritten.load(), (unsigned long long)dedup.bytes_rewritten.load(),
               (unsigned long long)dedup.bytes_chunked.load(), (unsigned long long)gc.spare_copies_dead);
  EXPECT_GT(dedup.chunks_rewritten.load(), 0u);
  EXPECT_LE(dedup.bytes_rewritten.load(), dedup.bytes_chunked.load() / 2);
  EXPECT_GT(gc.spare_copies_dead, 0u);
}

// Reads of many blocks at once read their chunks without block locks
// (Volume::ReadPieces) and read a block again when its mapping changed
// meanwhile: readers of whole slots beside overwrites, unmaps and GC rounds
// get, block by block, one of the contents the block had, never an error or
// other bytes.
TEST(GarbageCollectorTest, ManyBlockReadsBesideOverwritesAndRoundsGetWholeBlocks) {
  test::TempDir dir;
  const Options o = GcOptions(dir.path());
  const uint64_t block = o.block_size;
  const uint64_t slot_size = 3 * block;
  constexpr uint64_t kSlots = 16;
  auto content = [&](uint64_t slot, uint64_t version) { return test::RandomBytes(slot_size, slot * 1000 + version % 4); };
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  for (uint64_t slot = 0; slot < kSlots; slot++) ASSERT_TRUE(v->Write(slot * slot_size, slot_size, content(slot, 0).data(), false).ok());
  ASSERT_TRUE(v->Sync().ok());
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0}, wrong{0};
  std::atomic<uint64_t> reads{0};
  std::thread writer([&] {
    std::mt19937_64 rng(7);
    for (int i = 0; i < 600 && errors == 0; i++) {
      const uint64_t slot = rng() % kSlots;
      if (!v->Write(slot * slot_size, slot_size, content(slot, rng()).data(), false).ok()) errors++;
      if (rng() % 4 == 0 && !v->Sync().ok()) errors++;
      if (rng() % 8 == 0 && !(v->Unmap(slot * slot_size, slot_size).ok() && v->Sync().ok())) errors++;
    }
    stop = true;
  });
  std::thread gc([&] {
    while (!stop) {
      if (!sys->RunGc().ok()) errors++;
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; t++) {
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      std::vector<uint8_t> got(slot_size);
      const std::vector<uint8_t> zeros(block, 0);
      while (!stop) {
        const uint64_t slot = rng() % kSlots;
        Status s = v->Read(slot * slot_size, slot_size, got.data());
        reads++;
        if (!s.ok()) {
          errors++;
          ADD_FAILURE() << s.ToString();
          return;
        }
        for (uint64_t b = 0; b < 3; b++) {
          const uint8_t* at = got.data() + b * block;
          bool known = std::memcmp(at, zeros.data(), block) == 0;
          for (uint64_t version = 0; version < 4 && !known; version++) {
            known = std::memcmp(at, content(slot, version).data() + b * block, block) == 0;
          }
          if (!known) wrong++;
        }
      }
    });
  }
  writer.join();
  gc.join();
  for (auto& r : readers) r.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(reads.load(), 0u);
  std::fprintf(stderr, "reads %llu, blocks read again %llu, GC chunks deleted %llu\n", (unsigned long long)reads.load(),
               (unsigned long long)sys->stats().reads_redone.load(), (unsigned long long)sys->gc_stats().chunks_deleted);
  ASSERT_TRUE(sys->Close().ok());
}

// A running round tells what it does (the monitor's /gc shows it): every
// look at the stats during rounds sees a known phase and a scan progress
// that does not run past its total; after the round the phase is cleared.
TEST(GarbageCollectorTest, RunningRoundReportsItsPhaseAndProgress) {
  test::TempDir dir;
  const Options o = GcOptions(dir.path());
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  const std::vector<uint8_t> data = test::RandomBytes(16 << 20, 21);
  ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(v->Sync().ok());
  const std::set<std::string> phases = {"checkpoint", "index pass", "scan", "recheck", "persist", "space"};
  std::atomic<bool> stop{false};
  std::set<std::string> seen;
  std::string bad;
  std::thread watcher([&] {
    while (!stop.load()) {
      const GcStats st = sys->gc_stats();
      if (!st.running) continue;
      if (phases.count(st.phase) == 0) bad = "unknown phase '" + st.phase + "'";
      if (st.scan_containers_done > st.scan_containers_total) bad = "scan progress past its total";
      seen.insert(st.phase);
    }
  });
  for (int round = 0; round < 40 && seen.count("scan") == 0; round++) {
    // Each round has work: 4 MiB overwritten since the last one.
    ASSERT_TRUE(v->Write(0, 4 << 20, test::RandomBytes(4 << 20, 100 + round).data(), false).ok());
    ASSERT_TRUE(v->Sync().ok());
    ASSERT_TRUE(sys->RunGc().ok());
  }
  stop = true;
  watcher.join();
  EXPECT_EQ(bad, "");
  EXPECT_GT(seen.count("scan") + seen.count("checkpoint"), 0u) << "no running round was ever observed";
  const GcStats after = sys->gc_stats();
  EXPECT_FALSE(after.running);
  EXPECT_EQ(after.phase, "");
}

}  // namespace
}  // namespace dedupv1

// DedupSystem's idle work: forcing idle runs the checkpoint (log replay into
// usage counts and indexes, log trim) and a GC round; forcing busy or pausing
// replay keeps the log untouched although the detector would call the system
// idle. Waits are for conditions (bounded), never for a time to pass.
#include "core/engine/dedup_system.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "core/engine/system_testutil.h"
#include "index/chunk_index.h"
#include "index/chunk_table.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

Options IdleTestOptions(const std::string& dir, uint64_t period_ms, uint64_t threshold) {
  Options o = test::SmallSystemOptions(dir);
  o.volumes = {{"vol1", 64 << 20}};
  o.idle.period_ms = period_ms;
  o.idle.throughput_threshold = threshold;
  // Only throughput decides: a write slower than the latency threshold on a
  // loaded host would end idleness for a window and skew the tick counts.
  o.idle.latency_threshold_ms = 0;
  EXPECT_TRUE(o.Finish().ok());
  return o;
}

// Polls |done| until it holds or 60 s pass (a hang guard, not a timing).
bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Writes 1 MiB and syncs: the log then holds the mapping events. Returns the
// id of the last event.
uint64_t WriteAndSync(DedupSystem* sys, uint64_t seed) {
  Volume* v;
  EXPECT_TRUE(sys->GetVolume("vol1", &v).ok());
  auto data = test::RandomBytes(1 << 20, seed);
  EXPECT_TRUE(v->Write(seed * (1 << 20), data.size(), data.data(), false).ok());
  EXPECT_TRUE(v->Sync().ok());
  EXPECT_GE(sys->log()->last_id(), sys->log()->head_id()) << "the sync left no events in the log";
  return sys->log()->last_id();
}

// The loop has taken |n| more samples than when this was called.
void WaitTicks(DedupSystem* sys, uint64_t n) {
  const uint64_t start = sys->idle_info().loop_ticks;
  ASSERT_TRUE(WaitFor([&] { return sys->idle_info().loop_ticks >= start + n; }));
}

TEST(DedupSystemIdleTest, ForcedIdleReplaysTheLogAndRunsGc) {
  test::TempDir dir;
  // A period of an hour: the system never becomes idle by itself here.
  std::unique_ptr<DedupSystem> sys;
  ASSERT_TRUE(DedupSystem::Open(IdleTestOptions(dir.path(), 3600 * 1000, 1 << 20), Env::Default(), &sys).ok());
  const uint64_t last = WriteAndSync(sys.get(), 1);
  WaitTicks(sys.get(), 2);
  DedupSystem::IdleInfo info = sys->idle_info();
  EXPECT_FALSE(info.detector.idle);
  EXPECT_FALSE(info.forced);
  EXPECT_EQ(info.detector.mode, IdleMode::kAuto);
  EXPECT_EQ(info.idle_checkpoints, 0u);
  EXPECT_EQ(sys->gc_stats().runs, 0u);
  EXPECT_LE(sys->log()->head_id(), last) << "the log was trimmed without idle";

  sys->ForceIdle(IdleMode::kIdle);
  ASSERT_TRUE(WaitFor([&] {
    DedupSystem::IdleInfo i = sys->idle_info();
    return i.idle_checkpoints >= 1 && i.idle_gc_runs >= 1;
  })) << "forced idle did not checkpoint and run GC";
  info = sys->idle_info();
  EXPECT_TRUE(info.detector.idle);
  EXPECT_TRUE(info.forced);
  EXPECT_EQ(info.detector.mode, IdleMode::kIdle);
  EXPECT_EQ(info.detector.starts, 1u);
  EXPECT_GT(info.idle_since_unix, 0);
  EXPECT_GT(sys->log()->head_id(), last) << "idle replay trimmed the log past the mapping events";
  EXPECT_GE(sys->gc_stats().runs, 1u);
  EXPECT_GE(sys->gc_stats().usage.applied_id, last) << "the events were counted into the usage counts";

  // Released: the detector says busy (the period is an hour), so idle ends.
  sys->ForceIdle(IdleMode::kAuto);
  ASSERT_TRUE(WaitFor([&] { return sys->idle_info().detector.ends == 1; }));
  info = sys->idle_info();
  EXPECT_FALSE(info.detector.idle);
  EXPECT_FALSE(info.forced);
  EXPECT_EQ(info.idle_since_unix, 0);
  ASSERT_TRUE(sys->Close().ok());
}

TEST(DedupSystemIdleTest, ForcedBusyPreventsIdleWork) {
  test::TempDir dir;
  // Period 0 and a huge threshold: without a force the system is idle at
  // every sample, and every sample is an idle tick.
  std::unique_ptr<DedupSystem> sys;
  ASSERT_TRUE(DedupSystem::Open(IdleTestOptions(dir.path(), 0, 1ull << 40), Env::Default(), &sys).ok());
  ASSERT_TRUE(WaitFor([&] { return sys->idle_info().detector.idle && sys->idle_info().idle_gc_runs >= 1; }));

  sys->ForceIdle(IdleMode::kBusy);
  ASSERT_TRUE(WaitFor([&] { return !sys->idle_info().detector.idle; }));
  const DedupSystem::IdleInfo before = sys->idle_info();
  EXPECT_EQ(before.detector.ends, 1u);
  EXPECT_TRUE(before.forced);
  const uint64_t gc_runs = sys->gc_stats().runs;
  const uint64_t last = WriteAndSync(sys.get(), 2);
  WaitTicks(sys.get(), 4);
  DedupSystem::IdleInfo after = sys->idle_info();
  EXPECT_FALSE(after.detector.idle);
  EXPECT_EQ(after.detector.starts, before.detector.starts);
  EXPECT_EQ(after.idle_checkpoints, before.idle_checkpoints) << "forced busy still checkpointed at idle";
  EXPECT_EQ(sys->gc_stats().runs, gc_runs);
  EXPECT_LE(sys->log()->head_id(), last) << "forced busy: the log must not be replayed and trimmed";

  // Released: idle again at once, and the idle checkpoint trims the log.
  sys->ForceIdle(IdleMode::kAuto);
  // The counter is bumped just after the checkpoint trims the log.
  ASSERT_TRUE(WaitFor([&] {
    return sys->log()->head_id() > last && sys->idle_info().idle_checkpoints > before.idle_checkpoints;
  }));
  ASSERT_TRUE(sys->Close().ok());
}

// The chunk index lost the entries of every stored chunk (say, damaged
// pages; dedupv1_check --repair re-adds them from the containers). A GC
// round trusts the index: at the daemon's idle it frees the chunks, and the
// volume's blocks fail to read. An offline tool's open (background_work
// false, as target/tools/tool_util.cc sets it) never turns idle by itself,
// so the chunks stay until the check's repair has re-added their entries.
TEST(DedupSystemIdleTest, AnOfflineToolsOpenRunsNoIdleWork) {
  test::TempDir dir;
  // Period 0 and a huge threshold: left alone, every sample is an idle tick.
  Options o = IdleTestOptions(dir.path(), 0, 1ull << 40);
  o.background_work = false;
  const auto data = test::RandomBytes(4 << 20, 7);
  {
    std::unique_ptr<DedupSystem> sys;
    ASSERT_TRUE(DedupSystem::Open(o, Env::Default(), &sys).ok());
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  auto lose_every_entry = [&] {
    std::unique_ptr<ChunkTable> table;
    ASSERT_TRUE(ChunkIndex::OpenTable(o.chunk_index, Env::Default(), &table).ok());
    std::vector<ChunkTable::Op> erase;
    ASSERT_TRUE(table->ForEachEntry([&](const Fingerprint& fp, const ChunkIndexEntry&) {
                       ChunkTable::Op op;
                       op.fp = fp;
                       op.erase = true;
                       erase.push_back(op);
                     }).ok());
    ASSERT_GT(erase.size(), 100u);
    ASSERT_TRUE(table->Apply(erase).ok());
    ASSERT_TRUE(table->Sync().ok());
  };
  auto reads_back = [&](DedupSystem* sys) {
    Volume* v;
    EXPECT_TRUE(sys->GetVolume("vol1", &v).ok());
    std::vector<uint8_t> out(data.size());
    Status s = v->Read(0, out.size(), out.data());
    return s.ok() && out == data;
  };
  lose_every_entry();
  {
    std::unique_ptr<DedupSystem> sys;
    ASSERT_TRUE(DedupSystem::Open(o, Env::Default(), &sys).ok());
    WaitTicks(sys.get(), 8);
    const DedupSystem::IdleInfo info = sys->idle_info();
    EXPECT_FALSE(info.detector.idle);
    EXPECT_EQ(info.detector.starts, 0u);
    EXPECT_EQ(info.idle_checkpoints, 0u);
    EXPECT_EQ(info.idle_gc_runs, 0u);
    EXPECT_EQ(sys->gc_stats().runs, 0u);
    EXPECT_EQ(sys->background_dedup_stats().rounds, 0u);
    EXPECT_TRUE(reads_back(sys.get())) << "the tool's open freed chunks";
    ASSERT_TRUE(sys->Close().ok());
  }
  // The same store opened as the daemon opens it: the first idle tick's
  // round frees every chunk the index does not name.
  o.background_work = true;
  std::unique_ptr<DedupSystem> sys;
  ASSERT_TRUE(DedupSystem::Open(o, Env::Default(), &sys).ok());
  ASSERT_TRUE(WaitFor([&] { return sys->idle_info().idle_gc_runs >= 1; }));
  EXPECT_FALSE(reads_back(sys.get())) << "GC kept chunks the index does not name (the test shows nothing)";
  ASSERT_TRUE(sys->Close().ok());
}

TEST(DedupSystemIdleTest, PausedReplaySkipsIdleCheckpointsUntilResumed) {
  test::TempDir dir;
  std::unique_ptr<DedupSystem> sys;
  ASSERT_TRUE(DedupSystem::Open(IdleTestOptions(dir.path(), 0, 1ull << 40), Env::Default(), &sys).ok());
  ASSERT_TRUE(WaitFor([&] { return sys->idle_info().detector.idle && sys->idle_info().idle_gc_runs >= 1; }));

  sys->PauseReplay(true);
  EXPECT_TRUE(sys->idle_info().replay_paused);
  WaitTicks(sys.get(), 1);  // the loop has seen the pause
  const uint64_t checkpoints = sys->idle_info().idle_checkpoints;
  const uint64_t last = WriteAndSync(sys.get(), 3);
  WaitTicks(sys.get(), 4);
  DedupSystem::IdleInfo info = sys->idle_info();
  EXPECT_TRUE(info.detector.idle) << "pausing replay does not change the idle state";
  EXPECT_EQ(info.idle_checkpoints, checkpoints);
  EXPECT_GE(info.skipped_paused, 4u);
  EXPECT_LE(sys->log()->head_id(), last) << "paused: the log must not be replayed and trimmed";

  sys->PauseReplay(false);
  EXPECT_FALSE(sys->idle_info().replay_paused);
  ASSERT_TRUE(WaitFor([&] { return sys->log()->head_id() > last; }));
  // Close checkpoints whatever the pause state.
  sys->PauseReplay(true);
  ASSERT_TRUE(sys->Close().ok());
}

// Paused replay must not deadlock writers: a writer that finds the log near
// its hard limit checkpoints itself (WaitForLogSpace). A 1 MiB log (about 250
// 4 KiB slots, one per mapping event) fills within one 64 MiB pass.
TEST(DedupSystemIdleTest, PausedReplayStillCheckpointsAtTheHardLimit) {
  test::TempDir dir;
  Options o = IdleTestOptions(dir.path(), 3600 * 1000, 1 << 20);
  o.log.size_bytes = 1 << 20;
  ASSERT_TRUE(o.Finish().ok());
  std::unique_ptr<DedupSystem> sys;
  ASSERT_TRUE(DedupSystem::Open(o, Env::Default(), &sys).ok());
  sys->PauseReplay(true);
  const uint64_t head = sys->log()->head_id();
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  const auto block = test::RandomBytes(1 << 20, 9);
  for (int pass = 0; pass < 3; pass++) {
    for (uint64_t i = 0; i < 64; i++) {
      Status s = v->Write(i << 20, block.size(), block.data(), false);
      ASSERT_TRUE(s.ok()) << "pass " << pass << " MiB " << i << ": " << s.ToString();
    }
    Status s = v->Sync();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  EXPECT_GT(sys->log()->head_id(), head) << "the hard-limit checkpoint trimmed the log";
  const DedupSystem::IdleInfo info = sys->idle_info();
  EXPECT_TRUE(info.replay_paused);
  EXPECT_EQ(info.idle_checkpoints + info.soft_limit_checkpoints, 0u) << "the paused checkpoint thread checkpointed";
  std::vector<uint8_t> out(block.size());
  ASSERT_TRUE(v->Read(63 << 20, out.size(), out.data()).ok());
  EXPECT_EQ(out, block);
  ASSERT_TRUE(sys->Close().ok());
}

// Between the log's soft limit and the point where writers checkpoint
// themselves, every dedup run is slowed down (and wakes the checkpoint
// thread). Replay is paused so the fill stays there: a 4 MiB log has 1024
// slots, the soft limit is at 512, writers checkpoint near 640; two passes
// over 64 MiB log 1024 mapping events.
TEST(DedupSystemIdleTest, WritersAreSlowedDownAboveTheSoftLimit) {
  test::TempDir dir;
  Options o = IdleTestOptions(dir.path(), 3600 * 1000, 1 << 20);
  o.log.size_bytes = 4 << 20;
  ASSERT_TRUE(o.Finish().ok());
  std::unique_ptr<DedupSystem> sys = test::OpenSystemOrDie(o);
  ASSERT_NE(sys, nullptr);
  sys->PauseReplay(true);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  const auto data = test::RandomBytes(1 << 20, 11);
  for (int pass = 0; pass < 2; pass++) {
    for (uint64_t i = 0; i < 64; i++) ASSERT_TRUE(v->Write(i << 20, data.size(), data.data(), false).ok());
    ASSERT_TRUE(v->Sync().ok());
  }
  const DedupSystem::IdleInfo info = sys->idle_info();
  EXPECT_GT(info.soft_limit_throttles, 0u);
  EXPECT_EQ(info.soft_limit_checkpoints, 0u) << "the paused checkpoint thread checkpointed";
  std::vector<uint8_t> out(data.size());
  ASSERT_TRUE(v->Read(5 << 20, out.size(), out.data()).ok());
  EXPECT_EQ(out, data);
  ASSERT_TRUE(sys->Close().ok());
}

TEST(DedupSystemIdleTest, IdleKeysAreParsed) {
  Config c;
  ASSERT_TRUE(Config::Parse("volume = v 1G\nidle.throughput-threshold = 4M\nidle.period = 2s\nidle.window = 500ms\n", "test", &c).ok());
  Options o;
  ASSERT_TRUE(Options::FromConfig(c, &o).ok());
  EXPECT_EQ(o.idle.throughput_threshold, 4u << 20);
  EXPECT_EQ(o.idle.period_ms, 2000u);
  EXPECT_EQ(o.idle.window_ms, 500u);
  ASSERT_TRUE(Config::Parse("volume = v 1G\nidle.window = 0\n", "test", &c).ok());
  EXPECT_TRUE(Options::FromConfig(c, &o).IsInvalidArgument());
}

}  // namespace
}  // namespace dedupv1

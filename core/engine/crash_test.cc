// Crash tests with real processes: a child opens the system, works, and is
// killed with SIGKILL (or crashes by itself); the parent reopens the store
// and checks what recovery made of it. The kill -9 cycles of the whole
// system are in core/engine/crash_testutil.h (shared with the run on Ceph,
// crash_rados_test.cc).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "core/engine/crash_testutil.h"
#include "core/engine/dedup_system.h"
#include "log/log_slot.h"
#include "core/engine/system_testutil.h"
#include "core/base/testutil.h"
#include "index/tc_kv_store_testutil.h"

namespace dedupv1 {

namespace {

// The kill -9 cycles (core/engine/crash_testutil.h) on a local store:
// DEDUPV1_CRASH_CYCLES cycles (default 50), bounded by DEDUPV1_CRASH_SECONDS.
TEST(CrashTest, KillNineKeepsEverySyncedWrite) {
  const uint64_t cycles = test::EnvKnob("DEDUPV1_CRASH_CYCLES", 50);
  const uint64_t budget_s = test::EnvKnob("DEDUPV1_CRASH_SECONDS", 240);
  test::TempDir dir;
  const uint64_t done = RunKillNineCycles(KillNineOptions(dir.path()), cycles, budget_s);
  EXPECT_GE(done, std::min<uint64_t>(cycles, 10));
}

// Kill -9 cycles of a store that stores known chunks again (|what|: container
// rewriting or a policy that does): at least |min_done| cycles, and the
// children must have stored some chunk again, or the test did not test
// |what|. Returns what the cycles did.
KillNineTotals RunCyclesThatStoreAgain(const Options& o, uint64_t cycles, uint64_t budget_s, uint64_t min_done,
                                       const char* what) {
  KillNineTotals totals;
  const uint64_t done = RunKillNineCycles(o, cycles, budget_s, nullptr, &totals);
  EXPECT_GE(done, std::min<uint64_t>(cycles, min_done));
  std::printf("%s: chunks stored again by the children: %llu, blocks remapped by their passes: %llu, "
              "spare copies given back by the parent's rounds: %llu\n",
              what, (unsigned long long)totals.chunks_rewritten, (unsigned long long)totals.blocks_remapped,
              (unsigned long long)totals.spare_copies_dead);
  EXPECT_GT(totals.chunks_rewritten, 0u) << "no chunk was stored again: the test did not test " << what;
  return totals;
}

// The kill -9 cycles with container rewriting at a high limit: slots whose
// content recurs take their chunks from old containers, which are sparse for
// a 48 KiB slot, so kills land while chunks are stored again and their
// entries moved (ChunkIndex::Move) and while GC rounds judge the old copies.
// DEDUPV1_REWRITE_CRASH_CYCLES cycles (default 12), bounded by 150 s.
TEST(CrashTest, KillNineWithContainerRewritingKeepsEverySyncedWrite) {
  const uint64_t cycles = test::EnvKnob("DEDUPV1_REWRITE_CRASH_CYCLES", 12);
  test::TempDir dir;
  Options o = KillNineOptions(dir.path());
  o.rewrite.enabled = true;
  o.rewrite.sparse_bytes = 1 << 20;
  o.rewrite.limit = 0.5;
  ASSERT_TRUE(o.Finish().ok());
  RunCyclesThatStoreAgain(o, cycles, 150, 5, "rewriting");
}

// The kill -9 cycles on a volume of policy off (core/engine/dedup_policy.h):
// every known chunk is stored again and its entry moved, so kills land in
// the middle of that on every run, and GC rounds give the copies let go of
// back. DEDUPV1_POLICY_CRASH_CYCLES cycles (default 8), bounded by 120 s.
TEST(CrashTest, KillNineOnAnOffVolumeKeepsEverySyncedWrite) {
  const uint64_t cycles = test::EnvKnob("DEDUPV1_POLICY_CRASH_CYCLES", 8);
  test::TempDir dir;
  Options o = KillNineOptions(dir.path());
  ASSERT_EQ(o.volumes.size(), 1u);
  o.volumes[0].policy = DedupPolicy::kOff;
  ASSERT_TRUE(o.Finish().ok());
  RunCyclesThatStoreAgain(o, cycles, 120, 4, "policy off");
}

// The kill -9 cycles on a volume of policy selective (select_dedupe.h):
// 4 KiB chunks at volume offsets, and the slots whose first 8 KiB recur
// among new bytes are written in full (their known chunks stored again and
// their entries moved), so kills land in that as in policy off.
// DEDUPV1_POLICY_CRASH_CYCLES cycles (default 8), bounded by 120 s.
TEST(CrashTest, KillNineOnASelectiveVolumeKeepsEverySyncedWrite) {
  const uint64_t cycles = test::EnvKnob("DEDUPV1_POLICY_CRASH_CYCLES", 8);
  test::TempDir dir;
  Options o = KillNineOptions(dir.path());
  ASSERT_EQ(o.volumes.size(), 1u);
  o.volumes[0].policy = DedupPolicy::kSelective;
  ASSERT_TRUE(o.Finish().ok());
  RunCyclesThatStoreAgain(o, cycles, 120, 4, "policy selective");
}

// The kill -9 cycles on a volume of policy out-of-band
// (core/engine/background_dedup.h): known chunks stored again beside the
// index's copy, and in the children passes every few milliseconds that
// remap blocks to the index's copies, so kills land before, inside and
// after remap events; usage counts must match a recount after every open
// (a remap counts -1 and +1 of the same chunks). DEDUPV1_POLICY_CRASH_CYCLES
// cycles (default 8), bounded by 120 s.
TEST(CrashTest, KillNineOnAnOutOfBandVolumeDuringPassesKeepsEverySyncedWrite) {
  const uint64_t cycles = test::EnvKnob("DEDUPV1_POLICY_CRASH_CYCLES", 8);
  test::TempDir dir;
  Options o = KillNineOptions(dir.path());
  ASSERT_EQ(o.volumes.size(), 1u);
  o.volumes[0].policy = DedupPolicy::kOutOfBand;
  ASSERT_TRUE(o.Finish().ok());
  const KillNineTotals totals = RunCyclesThatStoreAgain(o, cycles, 120, 4, "policy out-of-band");
  EXPECT_GT(totals.blocks_remapped, 0u) << "no pass remapped a block: the test did not test the pass";
}

// The kill -9 cycles on a store whose chunk index starts tiny (8 buckets,
// 554 entries) and grows online while the children write (and write back
// often): kills land before, during and after growths, and every synced
// write, usage count and GC round must come out as without growth.
// DEDUPV1_GROW_CRASH_CYCLES cycles (default 12), bounded by 150 s.
TEST(CrashTest, KillNineWhileTheChunkIndexGrowsKeepsEverySyncedWrite) {
  const uint64_t cycles = test::EnvKnob("DEDUPV1_GROW_CRASH_CYCLES", 12);
  test::TempDir dir;
  Options o = KillNineOptions(dir.path());
  o.chunk_index.table.size_bytes = 9 * 4096;
  o.chunk_index.aux_soft_limit = 256;
  o.chunk_index.aux_hard_limit = 4096;
  o.chunk_index.grow_step_pages = 1;  // slow growths, so kills land inside them
  ASSERT_TRUE(o.Finish().ok());
  const std::string next = o.chunk_index.table.path + ".next";
  int killed_while_growing = 0;
  const uint64_t done = RunKillNineCycles(o, cycles, 150, [&](uint64_t) {
    killed_while_growing += Env::Default()->FileExists(next) ? 1 : 0;
  });
  EXPECT_GE(done, std::min<uint64_t>(cycles, 6));
  std::unique_ptr<DedupSystem> sys;
  ASSERT_TRUE(DedupSystem::Open(o, Env::Default(), &sys).ok());
  const ChunkIndexStats st = sys->chunk_index()->stats();
  std::printf("chunk index: %llu entries, table %llu bytes (created with %llu), %d kills during a growth\n",
              (unsigned long long)st.persistent_entries, (unsigned long long)st.growth.table_bytes,
              (unsigned long long)o.chunk_index.table.size_bytes, killed_while_growing);
  EXPECT_GT(st.persistent_entries, 554u * 4) << "the test wrote too few chunks to grow the index";
  EXPECT_GE(st.growth.table_bytes, 8 * 8 * 4096u);
  EXPECT_EQ(st.refused_puts, 0u);
  ASSERT_TRUE(sys->Close().ok());
}

}  // namespace
}  // namespace dedupv1

namespace dedupv1 {
namespace {

// Forks a child that opens the system at |o|, runs |body| on it and its
// volume and kills itself with SIGKILL; |body| returns 0, or an exit code
// that fails the test.
void KillAfter(const Options& o, const std::function<int(DedupSystem*, Volume*)>& body) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::unique_ptr<DedupSystem> sys;
    if (!DedupSystem::Open(o, Env::Default(), &sys).ok()) _exit(10);
    Volume* v;
    if (!sys->GetVolume("crash", &v).ok()) _exit(11);
    const int code = body(sys.get(), v);
    if (code != 0) _exit(code);
    kill(getpid(), SIGKILL);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with code " << WEXITSTATUS(status);
}

// KillAfter, then runs |before_reopen| (if set) and opens the system again
// (an unclean start).
void CrashAfter(const Options& o, const std::function<int(DedupSystem*, Volume*)>& body,
                std::unique_ptr<DedupSystem>* reopened, Volume** volume,
                const std::function<void()>& before_reopen = nullptr) {
  ASSERT_NO_FATAL_FAILURE(KillAfter(o, body));
  if (before_reopen) before_reopen();
  Status s = DedupSystem::Open(o, Env::Default(), reopened);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE((*reopened)->recovery().dirty_start);
  ASSERT_TRUE((*reopened)->GetVolume("crash", volume).ok());
}

// After an unclean stop the bloom filter is rebuilt from the chunk index, so
// data written before the crash still deduplicates.
TEST(CrashTest, BloomFilterIsRebuiltAfterUncleanStop) {
  test::TempDir dir;
  Options o = KillNineOptions(dir.path());
  auto data = test::RandomBytes(8 << 20, 99);
  std::unique_ptr<DedupSystem> sys;
  Volume* v = nullptr;
  CrashAfter(
      o,
      [&](DedupSystem*, Volume* cv) {
        return cv->Write(0, data.size(), data.data(), false).ok() && cv->Sync().ok() ? 0 : 12;
      },
      &sys, &v);
  ASSERT_FALSE(HasFatalFailure());
  bool has_bloom = false;
  for (size_t i = 0; i < sys->filter_chain().size(); i++) {
    has_bloom |= std::string(sys->filter_chain().filter(i).name()) == "bloom";
  }
  EXPECT_TRUE(has_bloom);
  uint64_t before = sys->chunk_store()->stats().bytes_stored;
  ASSERT_TRUE(v->Write(16 << 20, data.size(), data.data(), false).ok());
  ASSERT_TRUE(v->Sync().ok());
  uint64_t added = sys->chunk_store()->stats().bytes_stored - before;
  EXPECT_LT(added, data.size() / 50) << "data written before the crash was stored again";
  std::vector<uint8_t> out(data.size());
  ASSERT_TRUE(v->Read(0, out.size(), out.data()).ok());
  EXPECT_EQ(out, data);
}

// An open that fails after the log and the indexes are open (here: the
// config shrinks a volume) must leave the store as it found it. It used to
// close the half-open system like a running one: a final checkpoint trimmed
// the log events it had not replayed and wrote the clean marker, so the next
// open started clean and the synced writes read as zeros (issue 19, found by
// the corruption suite).
TEST(CrashTest, RefusedOpenAfterAnUncleanStopKeepsTheLog) {
  test::TempDir dir;
  Options o = KillNineOptions(dir.path());
  auto data = test::RandomBytes(1 << 20, 77);
  ASSERT_NO_FATAL_FAILURE(KillAfter(o, [&](DedupSystem* cs, Volume* cv) {
    cs->PauseReplay(true);  // the mappings stay in the log only
    return cv->Write(0, data.size(), data.data(), false).ok() && cv->Sync().ok() ? 0 : 12;
  }));
  Options shrunk = o;
  shrunk.volumes[0].size /= 2;
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::Open(shrunk, Env::Default(), &sys);
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_FALSE(Env::Default()->FileExists(JoinPath(o.data_dir, "clean")));

  ASSERT_TRUE(DedupSystem::Open(o, Env::Default(), &sys).ok());
  EXPECT_TRUE(sys->recovery().dirty_start);
  EXPECT_GT(sys->recovery().mappings_applied, 0u);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("crash", &v).ok());
  std::vector<uint8_t> got(data.size());
  ASSERT_TRUE(v->Read(0, got.size(), got.data()).ok());
  EXPECT_TRUE(got == data) << "the synced megabyte was lost";
}

// The block index store's record of a block is damaged (a flipped value
// byte) while the log still holds a newer synced mapping of the block: the
// dirty start installs the logged mapping (it is at least as new as any
// record) instead of failing the open on the unreadable record.
TEST(CrashTest, DirtyStartReplacesAnUnreadableStoredMappingWithTheLoggedOne) {
  test::TempDir dir;
  Options o = KillNineOptions(dir.path());
  const uint32_t block = o.block_size;
  auto first = test::RandomBytes(block, 1);
  auto second = test::RandomBytes(block, 2);
  std::unique_ptr<DedupSystem> sys;
  Volume* v = nullptr;
  uint32_t volume_id = 0;
  CrashAfter(
      o,
      [&](DedupSystem* cs, Volume* cv) {
        if (!cv->Write(0, block, first.data(), false).ok() || !cv->Sync().ok()) return 12;
        if (!cs->Checkpoint().ok()) return 13;  // the first version is in the store
        return cv->Write(0, block, second.data(), false).ok() && cv->Sync().ok() ? 0 : 14;
      },
      &sys, &v,
      [&] {
        // A store as a build before Tokyo Cabinet page checksums left it: in
        // one this build created, the flipped page refuses the whole open.
        ASSERT_TRUE(test::RewriteTcStoreWithoutPageChecksums(Env::Default(), o.block_index.path).ok());
        std::string bytes;
        ASSERT_TRUE(ReadFileToString(Env::Default(), o.block_index.path, &bytes).ok());
        // The volume's first block: key volume id (big endian) + block 0,
        // followed by its record (format 2, the same id, little endian).
        size_t at = std::string::npos;
        for (uint32_t id = 1; id < 8 && at == std::string::npos; id++) {
          std::string key(12, '\0');
          key[3] = static_cast<char>(id);
          std::string record_start(1, '\x02');
          record_start += std::string(1, static_cast<char>(id)) + std::string(11, '\0');
          at = bytes.find(key + record_start);
          if (at != std::string::npos) volume_id = id;
        }
        ASSERT_NE(at, std::string::npos);
        bytes[at + 12 + 30] = static_cast<char>(bytes[at + 12 + 30] ^ 0x5a);  // inside the value
        ASSERT_TRUE(WriteFileAtomically(Env::Default(), o.block_index.path, bytes).ok());
      });
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(v->id(), volume_id);
  EXPECT_GE(sys->recovery().mappings_applied, 1u);
  std::vector<uint8_t> got(block);
  ASSERT_TRUE(v->Read(0, block, got.data()).ok());
  EXPECT_TRUE(got == second);
  // The logged mapping replaced the damaged record for good.
  ASSERT_TRUE(sys->Close().ok());
  sys.reset();
  ASSERT_TRUE(DedupSystem::Open(o, Env::Default(), &sys).ok());
  ASSERT_TRUE(sys->GetVolume("crash", &v).ok());
  ASSERT_TRUE(v->Read(0, block, got.data()).ok());
  EXPECT_TRUE(got == second);
}

// A block's synced mapping that is still only in memory when a newer
// mapping of the block, waiting for its container, replaces it: a checkpoint
// must keep the synced mapping's log event (the block index store still has
// the version before it), so a crash that loses the waiting mapping brings
// the synced data back instead of the older store copy.
TEST(CrashTest, CheckpointKeepsEventsOfMappingsReplacedInMemory) {
  test::TempDir dir;
  Options o = KillNineOptions(dir.path());
  const uint32_t block = o.block_size;
  auto first = test::RandomBytes(block, 1);
  auto second = test::RandomBytes(block, 2);
  std::unique_ptr<DedupSystem> sys;
  Volume* v = nullptr;
  CrashAfter(
      o,
      [&](DedupSystem* cs, Volume* cv) {
        // The first version reaches the store, the second only memory.
        if (!cv->Write(0, block, first.data(), false).ok() || !cv->Sync().ok()) return 12;
        if (!cs->Checkpoint().ok()) return 13;
        if (!cv->Write(0, block, second.data(), false).ok() || !cv->Sync().ok()) return 14;
        // A newer mapping of the block whose container is not committed (as a
        // run installs one whose chunks went to a container opened after the
        // checkpoint's commit): it replaces the synced one in memory.
        BlockMapping waiting(block);
        BlockMappingItem item;
        ComputeFingerprint(o.fingerprint, second.data(), 100, &item.fp);
        item.container = cs->chunk_store()->last_allocated_id() + 1000;
        item.size = block;
        if (!waiting.Overlay(0, {item}).ok()) return 15;
        waiting.set_version(cs->log()->last_id() + 1000);
        if (!cs->block_index()->Put(BlockId{cv->id(), 0}, waiting).ok()) return 16;
        return cs->Checkpoint().ok() ? 0 : 17;
      },
      &sys, &v);
  ASSERT_FALSE(HasFatalFailure());
  std::vector<uint8_t> got(block);
  ASSERT_TRUE(v->Read(0, block, got.data()).ok());
  EXPECT_TRUE(got == second) << (got == first ? "the synced write was lost: the block reads its older version"
                                              : "the block reads neither version");
}

// An unmap of a whole block is logged as the mapping's deletion, of part of
// a block as a mapping change; after kill -9 both are replayed (the blocks
// read zeros where unmapped) and counted (usage counts equal a recount).
TEST(CrashTest, UnmapIsLoggedAndRecoveredAfterKill) {
  test::TempDir dir;
  Options o = KillNineOptions(dir.path());
  o.idle.period_ms = 3600 * 1000;  // an idle checkpoint would trim the events counted below
  ASSERT_TRUE(o.Finish().ok());
  const uint64_t block = o.block_size;
  auto data = test::RandomBytes(4 * block, 5);
  std::unique_ptr<DedupSystem> sys;
  Volume* v = nullptr;
  CrashAfter(
      o,
      [&](DedupSystem* cs, Volume* cv) {
        if (!cv->Write(0, data.size(), data.data(), false).ok() || !cv->Sync().ok()) return 12;
        if (!cs->Checkpoint().ok()) return 13;
        if (!cv->Unmap(block, block).ok() || !cv->Unmap(2 * block, block / 2).ok() || !cv->Sync().ok()) return 14;
        uint64_t deleted = 0, written = 0;
        Status s = cs->log()->Replay(cs->log()->head_id(), [&](const LogEvent& e) {
          deleted += e.type == LogEventType::kBlockMappingDeleted;
          written += e.type == LogEventType::kBlockMappingWritten;
          return Status::OK();
        });
        if (!s.ok()) return 15;
        if (deleted != 1 || written != 1) {
          std::fprintf(stderr, "logged %llu deletions, %llu mapping writes\n", (unsigned long long)deleted,
                       (unsigned long long)written);
          return 16;
        }
        return 0;
      },
      &sys, &v);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(sys->recovery().mappings_applied, 2u);
  ExpectUsageMatchesRecount(sys.get(), /*expect_entries=*/true);
  std::vector<uint8_t> want = data;
  std::fill(want.begin() + block, want.begin() + 2 * block + block / 2, 0);
  std::vector<uint8_t> got(want.size());
  ASSERT_TRUE(v->Read(0, got.size(), got.data()).ok());
  EXPECT_TRUE(got == want);
}

// Issue 19, defect 2: with replay paused, synced writes whose events are
// still in the log, kill -9, then 8 payload bytes of a mapping slot in the
// middle of the log flipped. The open must refuse, naming the log and the
// slot (it used to succeed and read half the synced data back as zeros).
// Accepting the damage (options.log.accept_damage, as dedupv1_replay
// --accept-log-damage does) loses exactly the damaged event: its block reads
// the data written there before, every other block its synced data; the
// usage counts equal a recount, and a GC round makes nothing unreadable.
TEST(CrashTest, DamagedLogSlotIsRefusedAndAcceptingItLosesOnlyItsEvent) {
  test::TempDir dir;
  Options o = KillNineOptions(dir.path());
  o.idle.period_ms = 3600 * 1000;  // no idle checkpoint
  ASSERT_TRUE(o.Finish().ok());
  const uint64_t block = o.block_size;
  constexpr uint64_t kWrites = 64, kWriteBlocks = 2;
  const uint64_t write_size = kWriteBlocks * block;
  auto version = [&](uint64_t i, uint64_t v) { return test::RandomBytes(write_size, v * 1000 + i); };
  {
    // Version 1 of every block, checkpointed into the block index.
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("crash", &v).ok());
    for (uint64_t i = 0; i < kWrites; i++) ASSERT_TRUE(v->Write(i * write_size, write_size, version(i, 1).data(), false).ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  int fd = -1;
  const pid_t pid = test::ForkWithPipe(
      [&](int report) {
        std::unique_ptr<DedupSystem> sys;
        if (!DedupSystem::Open(o, Env::Default(), &sys).ok()) _exit(10);
        sys->PauseReplay(true);
        Volume* v;
        if (!sys->GetVolume("crash", &v).ok()) _exit(11);
        for (uint64_t i = 0; i < kWrites; i++) {
          if (!v->Write(i * write_size, write_size, version(i, 2).data(), false).ok() || !v->Sync().ok()) _exit(12);
        }
        if (write(report, "s", 1) != 1) _exit(13);
        kill(getpid(), SIGKILL);
      },
      &fd);
  ASSERT_GE(pid, 0);
  char c = 0;
  ASSERT_EQ(1, read(fd, &c, 1)) << "the child failed before its writes were synced";
  close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  // The mapping events in the log, and the slot of the one in the middle.
  std::vector<std::pair<uint64_t, BlockId>> mappings;  // event id, block
  uint64_t damaged_offset = 0;
  {
    std::unique_ptr<OperationsLog> log;
    ASSERT_TRUE(OperationsLog::Open(o.log, Env::Default(), &log).ok());
    ASSERT_TRUE(log->Replay(0, [&](const LogEvent& e) {
                     BlockMappingWrittenData data;
                     if (e.type == LogEventType::kBlockMappingWritten &&
                         BlockMappingWrittenData::Decode(e.payload, &data).ok()) {
                       mappings.emplace_back(e.id, data.block);
                     }
                     return Status::OK();
                   }).ok());
    // At least one event per block (runs that end inside a block log it twice).
    ASSERT_GE(mappings.size(), kWrites * kWriteBlocks) << "replay was not paused: the events were trimmed";
    log.reset();
  }
  const auto [lost_id, lost_block] = mappings[mappings.size() / 2];
  {
    std::unique_ptr<File> f;
    ASSERT_TRUE(Env::Default()->OpenFile(o.log.path, OpenMode::kReadWrite, &f).ok());
    uint64_t size = 0;
    ASSERT_TRUE(f->Size(&size).ok());
    std::string slot(o.log.slot_size, '\0');
    for (uint64_t off = 2 * o.log.slot_size; off < size && damaged_offset == 0; off += o.log.slot_size) {
      ASSERT_TRUE(f->Read(off, slot.size(), slot.data()).ok());
      LogSlotHeader h;
      std::string why;
      if (DecodeLogSlot(reinterpret_cast<const uint8_t*>(slot.data()), o.log.slot_size - kLogSlotHeaderBytes, &h,
                        &why) &&
          h.id == lost_id && h.fragment_index == 0) {
        damaged_offset = off;
      }
    }
    ASSERT_NE(0u, damaged_offset);
    std::string bytes(8, '\0');
    ASSERT_TRUE(f->Read(damaged_offset + kLogSlotHeaderBytes + 16, 8, bytes.data()).ok());
    for (char& b : bytes) b = static_cast<char>(b ^ 0xff);
    ASSERT_TRUE(f->Write(damaged_offset + kLogSlotHeaderBytes + 16, bytes.data(), 8).ok());
    ASSERT_TRUE(f->Sync().ok());
  }

  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::Open(o, Env::Default(), &sys);
  ASSERT_TRUE(s.IsCorruption()) << "a damaged log was opened: " << s.ToString();
  const std::string slot_name = "slot " + std::to_string(damaged_offset / o.log.slot_size) + " (";
  EXPECT_NE(std::string::npos, s.message().find(o.log.path + " is damaged")) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find(slot_name)) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("offset " + std::to_string(damaged_offset))) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("events from " + std::to_string(lost_id) + " on")) << s.ToString();
  // Refused again: the refusal changed nothing.
  ASSERT_TRUE(DedupSystem::Open(o, Env::Default(), &sys).IsCorruption());

  // What accepting would cost, as the tools list it: exactly that event.
  {
    OperationsLogOptions lo = o.log;
    lo.accept_damage = true;
    std::unique_ptr<OperationsLog> log;
    ASSERT_TRUE(OperationsLog::Open(lo, Env::Default(), &log).ok());
    const LogDamage& d = log->damage();
    ASSERT_EQ(1u, d.gaps.size());
    EXPECT_EQ(lost_id, d.gaps[0].first_lost_id);
    EXPECT_EQ(1u, d.lost_events());
    EXPECT_EQ(lost_id + 1, d.salvaged.front().id);
  }

  Options accept = o;
  accept.log.accept_damage = true;
  s = DedupSystem::Open(accept, Env::Default(), &sys);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const DedupSystem::RecoveryInfo& rec = sys->recovery();
  EXPECT_TRUE(rec.log_damage_accepted);
  EXPECT_EQ(1u, rec.events_lost);
  EXPECT_GT(rec.events_salvaged, kWrites / 2);
  EXPECT_GT(rec.log_restarted_at, mappings.back().first);
  auto check_reads = [&](DedupSystem* system, const char* when) {
    Volume* v;
    ASSERT_TRUE(system->GetVolume("crash", &v).ok());
    std::vector<uint8_t> got(block);
    for (uint64_t i = 0; i < kWrites; i++) {
      const auto v1 = version(i, 1), v2 = version(i, 2);
      for (uint64_t b = 0; b < kWriteBlocks; b++) {
        const uint64_t number = i * kWriteBlocks + b;
        ASSERT_TRUE(v->Read(number * block, block, got.data()).ok()) << when << " block " << number;
        if (number != lost_block.block) {
          ASSERT_TRUE(std::equal(got.begin(), got.end(), v2.begin() + b * block)) << when << ": block " << number;
          continue;
        }
        // The block whose event was lost: what was written there before
        // (version 1, or an earlier event's part of version 2).
        for (uint64_t k = 0; k < block; k++) {
          ASSERT_TRUE(got[k] == v1[b * block + k] || got[k] == v2[b * block + k])
              << when << ": block " << number << " (its event was lost) byte " << k;
        }
      }
    }
  };
  check_reads(sys.get(), "after accepting the damage");
  ExpectUsageMatchesRecount(sys.get(), /*expect_entries=*/true);
  ASSERT_TRUE(sys->RunGc().ok());
  check_reads(sys.get(), "after a GC round");
  // New writes get versions above every recovered one.
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("crash", &v).ok());
  ASSERT_TRUE(v->Write(0, write_size, version(0, 2).data(), false).ok());
  ASSERT_TRUE(v->Sync().ok());
  ASSERT_TRUE(sys->Close().ok());
  sys.reset();
  sys = test::OpenSystemOrDie(o);  // no damage left
  ASSERT_NE(nullptr, sys);
  EXPECT_FALSE(sys->recovery().dirty_start);
  check_reads(sys.get(), "after a clean reopen");
  ExpectUsageMatchesRecount(sys.get(), /*expect_entries=*/true);
  ASSERT_TRUE(sys->Close().ok());
}

// A kill at any moment of the very first open (every file of the data
// directory being created) leaves a directory the next open starts from,
// without a manual step; a write synced before the kill is there.
TEST(CrashTest, KillDuringFirstOpenLeavesAStartableSystem) {
  const uint64_t cycles = test::EnvKnob("DEDUPV1_CREATE_CRASH_CYCLES", 30);
  // How long creating a system takes here (the fastest of three), to spread
  // the kills over it.
  uint64_t create_us = UINT64_MAX;
  for (int i = 0; i < 3; i++) {
    test::TempDir dir;
    const auto start = std::chrono::steady_clock::now();
    auto sys = test::OpenSystemOrDie(KillNineOptions(dir.path()));
    create_us = std::min<uint64_t>(
        create_us,
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
    ASSERT_TRUE(sys->Close().ok());
  }
  std::mt19937_64 rng(777);
  uint64_t opened_before_kill = 0, synced_before_kill = 0;
  const std::vector<uint8_t> data = CrashSlotData(3, 5);
  for (uint64_t cycle = 0; cycle < cycles; cycle++) {
    test::TempDir dir;
    const Options o = KillNineOptions(dir.path());
    int report_fd = -1;
    const pid_t pid = test::ForkWithPipe(
        [&](int fd) {
          std::unique_ptr<DedupSystem> sys;
          if (!DedupSystem::Open(o, Env::Default(), &sys).ok()) _exit(10);
          if (write(fd, "o", 1) != 1) _exit(12);
          Volume* v;
          if (!sys->GetVolume("crash", &v).ok()) _exit(11);
          if (!v->Write(3 * kCrashSlot, kCrashSlot, data.data(), false).ok() || !v->Sync().ok()) _exit(13);
          if (write(fd, "s", 1) != 1) _exit(12);
          for (;;) pause();
        },
        &report_fd);
    ASSERT_GE(pid, 0);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % (create_us * 5 / 4 + 1)));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early with code " << WEXITSTATUS(status);
    char buf[2];
    const ssize_t got = read(report_fd, buf, sizeof(buf));
    close(report_fd);
    opened_before_kill += got >= 1;
    const bool synced = got == 2;
    synced_before_kill += synced;

    std::unique_ptr<DedupSystem> sys;
    Status s = DedupSystem::Open(o, Env::Default(), &sys);
    ASSERT_TRUE(s.ok()) << "cycle " << cycle << " (kill " << (got >= 1 ? "after" : "during")
                        << " the first open): " << s.ToString();
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("crash", &v).ok());
    std::vector<uint8_t> read_back(kCrashSlot);
    ASSERT_TRUE(v->Read(3 * kCrashSlot, kCrashSlot, read_back.data()).ok());
    if (synced) {
      ASSERT_TRUE(read_back == data) << "cycle " << cycle << ": the synced write is lost";
    } else {
      ASSERT_TRUE(read_back == data || read_back == std::vector<uint8_t>(kCrashSlot, 0)) << "cycle " << cycle;
    }
    ASSERT_TRUE(v->Write(0, kCrashSlot, data.data(), false).ok());
    ASSERT_TRUE(v->Sync().ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  std::printf("first-open kills: %llu (creation took %llu us), after the open: %llu, after a synced write: %llu\n",
              (unsigned long long)cycles, (unsigned long long)create_us, (unsigned long long)opened_before_kill,
              (unsigned long long)synced_before_kill);
  EXPECT_LT(opened_before_kill, cycles) << "no kill landed inside the first open: the test proved nothing";
}

}  // namespace
}  // namespace dedupv1

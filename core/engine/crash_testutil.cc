// The kill -9 crash test of a whole system, shared by the local run
// (crash_test.cc) and the run on Ceph RADOS (crash_rados_test.cc): a child
// process opens the system and writes on several threads, syncing now and
// then and reporting through a pipe which writes a sync acknowledged; the
// parent kills it with SIGKILL at a random moment, reopens the system (an
// unclean start: recovery replays the log), and checks every slot: it must
// hold the last acknowledged version or a version written after it, never
// anything else. In every other cycle the child also runs garbage collection
// rounds in a loop (so kills land inside rounds), and after each reopen the
// usage counts must equal a recount from the block mappings.
#include "core/engine/crash_testutil.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "core/base/testutil.h"
#include "index/rados_shared_chunk_table.h"

namespace dedupv1 {

void ExpectUsageMatchesRecount(DedupSystem* sys, bool expect_entries) {
  std::map<Fingerprint, uint64_t> recount;
  for (Volume* v : sys->volumes()) {
    ASSERT_TRUE(sys->block_index()
                    ->ForEachBlock(v->id(),
                                   [&](uint64_t, const BlockMapping& m) {
                                     std::set<Fingerprint> seen;
                                     for (const auto& item : m.items()) {
                                       if (!item.IsZero() && seen.insert(item.fp).second) recount[item.fp]++;
                                     }
                                     return true;
                                   })
                    .ok());
  }
  if (sys->chunk_index()->cluster_scope()) {
    // The shared table is not listed entry by entry: every referenced chunk
    // has an entry and the sum of its usage keys (one slot here) equals
    // the recount; an unreferenced one may have any state GC left it in
    // whose sum is 0.
    RadosSharedChunkTable* table = sys->chunk_index()->shared_table();
    for (const auto& [fp, n] : recount) {
      SharedRecord r;
      Status s = table->ReadRecord(fp, &r);
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_TRUE(r.entry.has_value()) << "referenced chunk without entry " << fp.ToHex();
      int64_t sum = 0;
      for (const auto& [slot, usage] : r.usage) sum += usage.count;
      EXPECT_EQ(sum, static_cast<int64_t>(n)) << fp.ToHex() << " " << (r.entry ? r.entry->ToString() : "");
    }
    if (expect_entries) EXPECT_GT(recount.size(), 0u);
    return;
  }
  std::vector<Fingerprint> fps;
  ASSERT_TRUE(sys->chunk_index()->ForEachFingerprint([&](const Fingerprint& fp) { fps.push_back(fp); }).ok());
  size_t checked = 0;
  for (const Fingerprint& fp : fps) {
    ChunkIndexEntry e;
    Status s = sys->chunk_index()->Lookup(fp, &e);
    if (s.IsNotFound()) continue;  // erased; the table scan may still list it
    ASSERT_TRUE(s.ok()) << s.ToString();
    auto it = recount.find(fp);
    EXPECT_EQ(e.usage_count, it == recount.end() ? 0u : it->second) << fp.ToHex();
    checked++;
  }
  for (const auto& [fp, n] : recount) {
    ChunkIndexEntry e;
    EXPECT_TRUE(sys->chunk_index()->Lookup(fp, &e).ok()) << "referenced chunk without entry " << fp.ToHex();
  }
  if (expect_entries) {
    EXPECT_GT(checked, 0u);
  }
}

namespace {

constexpr uint64_t kSlots = 640;       // 30 MiB volume
constexpr int kThreads = 3;


}  // namespace

std::vector<uint8_t> CrashSlotData(uint64_t slot, uint64_t version) {
  if (version == 0) return std::vector<uint8_t>(kCrashSlot, 0);
  std::vector<uint8_t> data =
      test::RandomBytes(kCrashSlot, (version % 7 == 0) ? slot * 1000003 : slot * 7919 + version * 104729);
  if (version % 7 == 3) {
    // The slot's recurring content in the first 8 KiB only: a request with
    // a few known chunks among new ones (Select-Dedupe writes it in full).
    const std::vector<uint8_t> recurring = test::RandomBytes(8 << 10, slot * 1000003);
    std::copy(recurring.begin(), recurring.end(), data.begin());
  }
  return data;
}

Options KillNineOptions(const std::string& dir) {
  Options o;
  o.data_dir = dir;
  o.chunk_index.table.size_bytes = 32 << 20;
  o.filters.bloom_expected_chunks = 1 << 18;
  o.write_buffer_size = 8 << 20;
  o.write_buffer_flush_delay_ms = 20;
  o.chunk_store.commit_timeout_ms = 300;
  o.log.size_bytes = 8 << 20;
  o.volumes = {{"crash", kCrashSlot * kSlots}};
  EXPECT_TRUE(o.Finish().ok());
  return o;
}

namespace {

struct Record {
  // 'O' the store is open, 'W' write issued, 'A' acknowledged by a sync, 'R'
  // the chunks the child rewrote so far (version; container rewriting), 'P'
  // the blocks its out-of-band passes remapped so far (version)
  char kind;
  uint32_t slot;
  uint64_t version;
};

[[noreturn]] void ChildMain(const Options& o, int fd, uint64_t version_base, uint64_t seed) {
  std::unique_ptr<DedupSystem> sys;
  if (!DedupSystem::OpenStore(o, Env::Default(), &sys).ok()) _exit(10);
  Volume* v;
  if (!sys->GetVolume("crash", &v).ok()) _exit(11);
  std::atomic<uint64_t> next_version{version_base};
  auto send = [fd](const Record& r) {
    if (write(fd, &r, sizeof(r)) != sizeof(r)) _exit(12);
  };
  send({'O', 0, 0});
  std::vector<std::thread> threads;
  if (seed % 2 == 1) {
    threads.emplace_back([&] {
      std::mt19937_64 rng(seed);
      for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 100));
        Status s = sys->RunGc();
        if (!s.ok()) {
          std::fprintf(stderr, "child GC failed: %s\n", s.ToString().c_str());
          _exit(15);
        }
      }
    });
  }
  if (v->policy() == DedupPolicy::kOutOfBand) {
    // Passes over every block written so far (no hotspot wait), often, so
    // kills land inside remaps.
    threads.emplace_back([&] {
      std::mt19937_64 rng(seed + 7);
      for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 40));
        Status s = sys->RunBackgroundDedup(/*ignore_hotspots=*/true);
        if (!s.ok()) {
          std::fprintf(stderr, "child pass failed: %s\n", s.ToString().c_str());
          _exit(16);
        }
        send({'P', 0, sys->background_dedup_stats().blocks_remapped});
      }
    });
  }
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed * 31 + t);
      std::vector<Record> unacked;
      for (;;) {
        uint32_t slot = static_cast<uint32_t>(t + kThreads * (rng() % (kSlots / kThreads)));
        uint64_t version = next_version++;
        send({'W', slot, version});
        auto data = CrashSlotData(slot, version);
        if (Status s = v->Write(slot * kCrashSlot, kCrashSlot, data.data(), rng() % 20 == 0); !s.ok()) {
          std::fprintf(stderr, "child write failed: %s\n", s.ToString().c_str());
          _exit(13);
        }
        unacked.push_back({'A', slot, version});
        if (rng() % 6 == 0) {
          if (Status s = v->Sync(); !s.ok()) {
            std::fprintf(stderr, "child sync failed: %s\n", s.ToString().c_str());
            _exit(14);
          }
          for (const auto& r : unacked) send(r);
          unacked.clear();
          send({'R', 0, sys->stats().chunks_rewritten.load() + sys->stats().chunks_stored_again.load()});
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  _exit(0);
}

// Reads the killed child's records until the pipe ends: writes issued into
// |written|, acknowledged versions into |acked|; returns the chunks it
// reported rewritten last; |remapped| gets the blocks its passes remapped.
uint64_t ReadChildRecords(int fd, std::vector<std::set<uint64_t>>* written, std::vector<uint64_t>* acked,
                          uint64_t* remapped) {
  Record r;
  uint64_t rewritten = 0;
  *remapped = 0;
  while (read(fd, &r, sizeof(r)) == sizeof(r)) {
    if (r.kind == 'W') {
      (*written)[r.slot].insert(r.version);
    } else if (r.kind == 'R') {
      rewritten = std::max(rewritten, r.version);
    } else if (r.kind == 'P') {
      *remapped = std::max(*remapped, r.version);
    } else if (r.version > (*acked)[r.slot]) {
      (*acked)[r.slot] = r.version;
    }
  }
  return rewritten;
}

}  // namespace

void RunKillNineCyclesInto(const Options& o, uint64_t cycles, uint64_t budget_s,
                           const std::function<void(uint64_t cycle)>& after_kill, uint64_t* done_out,
                           KillNineTotals* totals) {
  std::vector<uint64_t> acked(kSlots, 0);             // last acknowledged version per slot
  std::vector<std::set<uint64_t>> written(kSlots);    // versions written after it
  std::mt19937_64 rng(4242);
  auto start = std::chrono::steady_clock::now();
  uint64_t done = 0, dirty_starts = 0, mappings_applied = 0, gc_rounds = 0, marks_loaded = 0;
  for (uint64_t cycle = 0; cycle < cycles; cycle++) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(budget_s)) break;
    int report_fd = -1;
    const pid_t pid =
        test::ForkWithPipe([&](int fd) { ChildMain(o, fd, (cycle + 1) * 1000000, cycle); }, &report_fd);
    ASSERT_GE(pid, 0);
    // The kill lands while the store is open (every start after it is an
    // unclean one), however long the open takes on a loaded machine.
    Record opened{};
    const bool open = read(report_fd, &opened, sizeof(opened)) == sizeof(opened) && opened.kind == 'O';
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 700));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status)) << "child exited early with code " << WEXITSTATUS(status);
    ASSERT_TRUE(open) << "cycle " << cycle << ": the child did not report its store open";
    uint64_t child_remapped = 0;
    const uint64_t child_rewritten = ReadChildRecords(report_fd, &written, &acked, &child_remapped);
    close(report_fd);
    if (totals != nullptr) totals->chunks_rewritten += child_rewritten;
    if (totals != nullptr) totals->blocks_remapped += child_remapped;
    if (after_kill) after_kill(cycle);

    std::unique_ptr<DedupSystem> sys;
    Status s = DedupSystem::OpenStore(o, Env::Default(), &sys);
    ASSERT_TRUE(s.ok()) << "cycle " << cycle << ": " << s.ToString();
    dirty_starts += sys->recovery().dirty_start;
    mappings_applied += sys->recovery().mappings_applied;
    // GC's persisted dead marks (rounds in the children and the parent): the
    // parent's rounds and the next cycle's reads check that none was wrong.
    marks_loaded += sys->chunk_store()->stats().dead_marks_loaded;
    // The usage counts the recovery replayed are exact. (A child killed before
    // its first chunk was stored leaves nothing to compare.) A mismatch fails
    // the test after the read check below, so a failure also tells whether
    // the data was right.
    ExpectUsageMatchesRecount(sys.get(), /*expect_entries=*/false);
    if (::testing::Test::HasFatalFailure()) FAIL() << "usage check failed after cycle " << cycle;
    const bool usage_wrong = ::testing::Test::HasNonfatalFailure();
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("crash", &v).ok());
    std::vector<uint8_t> got(kCrashSlot);
    for (uint64_t slot = 0; slot < kSlots; slot++) {
      ASSERT_TRUE(v->Read(slot * kCrashSlot, kCrashSlot, got.data()).ok());
      // Candidates: the acknowledged version, or any version written after it.
      std::vector<uint64_t> candidates{acked[slot]};
      for (uint64_t w : written[slot]) {
        if (w > acked[slot]) candidates.push_back(w);
      }
      // Byte-wise: each byte must come from one of the candidates (writes are
      // not atomic across a crash, but never invent bytes).
      std::vector<std::vector<uint8_t>> datas;
      for (uint64_t c : candidates) datas.push_back(CrashSlotData(slot, c));
      uint64_t matched_version = 0;
      bool whole = false;
      for (size_t i = 0; i < datas.size(); i++) {
        if (datas[i] == got) {
          matched_version = candidates[i];
          whole = true;
          break;
        }
      }
      if (!whole) {
        for (uint64_t b = 0; b < kCrashSlot; b++) {
          bool ok = false;
          for (const auto& d : datas) ok |= d[b] == got[b];
          ASSERT_TRUE(ok) << "cycle " << cycle << " slot " << slot << " byte " << b
                          << ": a byte that no acknowledged or later write put there (acked version "
                          << acked[slot] << ")";
        }
        // Mixed content: not a consistent version, but every byte is legal;
        // the acknowledged version itself must win where nothing newer was written.
        ASSERT_GT(candidates.size(), 1u) << "cycle " << cycle << " slot " << slot
                                         << ": acknowledged data was lost";
        matched_version = UINT64_MAX;  // unknown mix: rewrite below
      }
      if (matched_version == UINT64_MAX) {
        // Give the slot a known content again (acknowledged by the clean close).
        auto data = CrashSlotData(slot, acked[slot]);
        ASSERT_TRUE(v->Write(slot * kCrashSlot, kCrashSlot, data.data(), false).ok());
        matched_version = acked[slot];
      }
      acked[slot] = matched_version;
      written[slot].clear();
    }
    ASSERT_FALSE(usage_wrong) << "usage counts wrong after cycle " << cycle << " (every slot read back right)";
    if (cycle % 3 == 2) {
      // A round in the parent too, then everything must still read back.
      ASSERT_TRUE(sys->RunGc().ok());
      gc_rounds++;
      if (totals != nullptr) totals->spare_copies_dead += sys->gc_stats().spare_copies_dead;
      for (uint64_t slot = 0; slot < kSlots; slot += 7) {
        ASSERT_TRUE(v->Read(slot * kCrashSlot, kCrashSlot, got.data()).ok());
        ASSERT_TRUE(got == CrashSlotData(slot, acked[slot])) << "cycle " << cycle << " slot " << slot << " after GC";
      }
    }
    ASSERT_TRUE(sys->Close().ok());
    done++;
    *done_out = done;
  }
  std::printf("crash cycles: %llu, unclean starts detected: %llu, block mappings restored from the log: %llu, "
              "GC rounds in the parent: %llu, dead marks loaded at the opens: %llu\n",
              (unsigned long long)done, (unsigned long long)dirty_starts, (unsigned long long)mappings_applied,
              (unsigned long long)gc_rounds, (unsigned long long)marks_loaded);
  EXPECT_EQ(dirty_starts, done);
  *done_out = done;
}


uint64_t RunKillNineCycles(const Options& o, uint64_t cycles, uint64_t budget_s,
                           const std::function<void(uint64_t cycle)>& after_kill, KillNineTotals* totals) {
  uint64_t done = 0;
  RunKillNineCyclesInto(o, cycles, budget_s, after_kill, &done, totals);
  return done;
}

}  // namespace dedupv1

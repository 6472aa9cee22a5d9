#include "index/growable_hash_table.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "core/base/coding.h"
#include "core/base/env.h"
#include "core/base/fault_injection_env.h"
#include "core/base/fingerprint.h"
#include "core/base/testutil.h"
#include "index/chunk_table_testutil.h"

namespace dedupv1 {
namespace {

Fingerprint Fp(uint64_t seed) { return test::SeedFingerprint(seed); }

using test::Entry;
using test::Erase;
using test::Put;

// 512-byte pages of 12 slots; |buckets| buckets (capacity 8.4 per bucket).
GrowableHashTableOptions Options(const std::string& path, uint64_t buckets = 8) {
  GrowableHashTableOptions o;
  o.table.path = path;
  o.table.page_size = 512;
  o.table.size_bytes = (buckets + 1) * 512;
  o.table.max_probe_pages = 4;
  o.step_pages = 2;
  o.grow_in_background = false;
  return o;
}

std::unique_ptr<GrowableHashTable> MustOpen(const GrowableHashTableOptions& o, Env* env = Env::Default()) {
  std::unique_ptr<GrowableHashTable> t;
  Status s = GrowableHashTable::Open(o, env, &t);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return t;
}

using Model = std::map<Fingerprint, ChunkIndexEntry>;

void Expect(ChunkTable* t, const Model& model, const std::vector<Fingerprint>& absent = {}) {
  for (const auto& [fp, want] : model) {
    ChunkIndexEntry got;
    Status s = t->Get(fp, &got);
    ASSERT_TRUE(s.ok()) << fp.ToHex() << ": " << s.ToString();
    EXPECT_EQ(got, want) << fp.ToHex();
  }
  for (const Fingerprint& fp : absent) {
    ChunkIndexEntry got;
    EXPECT_TRUE(t->Get(fp, &got).IsNotFound()) << fp.ToHex();
  }
  uint64_t pages = 0;
  Model seen;
  Status s = t->Verify(&pages, [&](const Fingerprint& fp, const ChunkIndexEntry& e) {
    EXPECT_TRUE(seen.emplace(fp, e).second) << "seen twice " << fp.ToHex();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(seen, model);
}

// Puts |e| under |fp| straight into the growth table beside the table of
// |o|, as a crash between a move's insert and its erase (and an update after
// it) leaves it.
void PutIntoNext(const GrowableHashTableOptions& o, const Fingerprint& fp, const ChunkIndexEntry& e) {
  DiskHashTableOptions n = o.table;
  n.path = GrowableHashTable::NextPath(o.table.path);
  n.adopt_file_size = true;
  std::unique_ptr<DiskHashTable> next;
  ASSERT_TRUE(DiskHashTable::Open(n, Env::Default(), &next).ok());
  ASSERT_TRUE(next->Apply({Put(fp, e)}).ok());
}

// Steps until the growth is over (bounded).
void StepToEnd(GrowableHashTable* t) {
  bool growing = true;
  for (int i = 0; i < 100000 && growing; i++) {
    Status s = t->Step(&growing);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  ASSERT_FALSE(growing);
}

class GrowableHashTableTest : public ::testing::Test {
 protected:
  std::string Path() const { return dir_.Sub("chunk-index"); }
  // A growth step by step with puts, updates and erases between the steps.
  void GrowWhileApplying(const GrowableHashTableOptions& o);
  test::TempDir dir_;
};

// A growth step by step while puts, updates and erases go on: every step
// leaves every entry readable with its newest value, and the grown table
// replaces the old one under its name.
TEST_F(GrowableHashTableTest, GrowsWhileApplyGoesOnAndKeepsEveryEntry) { GrowWhileApplying(Options(Path())); }

// The same with a page cache (iCache) shared by both tables of the growth:
// no lookup answers from a page of the wrong table or an older batch.
TEST_F(GrowableHashTableTest, GrowsWithAPageCacheAndKeepsEveryEntry) {
  auto o = Options(Path());
  o.table.page_cache = std::make_shared<TablePageCache>(64 << 10, 512);
  GrowWhileApplying(o);
  EXPECT_GT(o.table.page_cache->counters().hits, 0u);
}

void GrowableHashTableTest::GrowWhileApplying(const GrowableHashTableOptions& o) {
  auto t = MustOpen(o);
  Model model;
  std::vector<Fingerprint> gone;
  for (uint64_t i = 0; i < 60; i++) {
    ASSERT_TRUE(t->Apply({Put(Fp(i), Entry(i + 1))}).ok());
    model[Fp(i)] = Entry(i + 1);
  }
  const uint64_t first_capacity = t->capacity();
  EXPECT_EQ(first_capacity, static_cast<uint64_t>(8 * 12 * 0.7));
  ASSERT_TRUE(t->Grow(0).ok());
  EXPECT_TRUE(t->growth().requested);
  bool growing = false;
  ASSERT_TRUE(t->Step(&growing).ok());  // begins
  ASSERT_TRUE(growing);
  EXPECT_TRUE(Env::Default()->FileExists(GrowableHashTable::NextPath(Path())));
  EXPECT_EQ(t->capacity(), static_cast<uint64_t>(16 * 12 * 0.7));
  uint64_t next = 60;
  int steps = 0;
  while (growing) {
    // One step's worth of changes: a new entry, an update, an erase.
    ASSERT_TRUE(t->Apply({Put(Fp(next), Entry(next + 1))}).ok());
    model[Fp(next)] = Entry(next + 1);
    next++;
    const Fingerprint upd = Fp(steps * 3 % 60);
    if (model.count(upd)) {
      ASSERT_TRUE(t->Apply({Put(upd, Entry(900 + steps, steps))}).ok());
      model[upd] = Entry(900 + steps, steps);
    }
    const Fingerprint del = Fp(steps * 7 % 60 + 1);
    ASSERT_TRUE(t->Apply({Erase(del)}).ok());
    if (model.erase(del)) gone.push_back(del);
    ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model, gone));
    EXPECT_EQ(t->entry_count(), model.size());
    ASSERT_TRUE(t->Step(&growing).ok());
    steps++;
    ASSERT_LT(steps, 100);
  }
  EXPECT_GE(steps, 4);  // 8 pages, 2 per step
  EXPECT_FALSE(Env::Default()->FileExists(GrowableHashTable::NextPath(Path())));
  EXPECT_FALSE(Env::Default()->FileExists(DiskHashTable::JournalPath(GrowableHashTable::NextPath(Path()))));
  ChunkTableGrowth g = t->growth();
  EXPECT_FALSE(g.growing);
  EXPECT_EQ(g.growths_finished, 1u);
  EXPECT_EQ(g.table_bytes, 17u * 512);
  ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model, gone));
  t.reset();
  // The file on its own: the grown table, whatever the config's size says.
  t = MustOpen(o);
  EXPECT_EQ(t->growth().table_bytes, 17u * 512);
  EXPECT_FALSE(t->growth().requested);
  ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model, gone));
}

// A restart in the middle of a growth resumes it: the pass starts over and
// finds every entry where the last process left it.
TEST_F(GrowableHashTableTest, ReopenResumesAGrowthUnderWay) {
  auto o = Options(Path());
  Model model;
  {
    auto t = MustOpen(o);
    for (uint64_t i = 0; i < 50; i++) {
      ASSERT_TRUE(t->Apply({Put(Fp(i), Entry(i + 1))}).ok());
      model[Fp(i)] = Entry(i + 1);
    }
    ASSERT_TRUE(t->Grow(4 * 9 * 512).ok());  // at least 35 buckets: 5 x 8 = 40
    ASSERT_TRUE(t->Step().ok());
    ASSERT_TRUE(t->Step().ok());
    ASSERT_TRUE(t->Step().ok());
    EXPECT_TRUE(t->growth().growing);
    EXPECT_EQ(t->growth().pages_moved, 4u);
  }
  auto t = MustOpen(o);
  ChunkTableGrowth g = t->growth();
  EXPECT_TRUE(g.growing);
  EXPECT_EQ(g.table_bytes, 41u * 512);
  EXPECT_EQ(g.from_bytes, 9u * 512);
  ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model));
  ASSERT_NO_FATAL_FAILURE(StepToEnd(t.get()));
  ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model));
  EXPECT_EQ(t->growth().table_bytes, 41u * 512);
}

// A crash between a move's insert into next and its erase from old leaves
// an entry in both; next's version (newer) wins in Get, scans and the move.
TEST_F(GrowableHashTableTest, EntryInBothTablesReadsAsNextsVersion) {
  auto o = Options(Path());
  {
    auto t = MustOpen(o);
    for (uint64_t i = 0; i < 20; i++) ASSERT_TRUE(t->Apply({Put(Fp(i), Entry(1))}).ok());
    ASSERT_TRUE(t->Grow(0).ok());
    ASSERT_TRUE(t->Step().ok());  // next exists, nothing moved
  }
  // What a crash mid-move leaves (plus a newer version: an update that
  // went to next after the move).
  ASSERT_NO_FATAL_FAILURE(PutIntoNext(o, Fp(3), Entry(7, 5)));
  Model model;
  for (uint64_t i = 0; i < 20; i++) model[Fp(i)] = Entry(1);
  model[Fp(3)] = Entry(7, 5);
  auto t = MustOpen(o);
  EXPECT_EQ(t->entry_count(), 21u);  // counted twice until the pass reaches it
  ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model));
  Model scanned;
  ASSERT_TRUE(t->ForEachEntry([&](const Fingerprint& fp, const ChunkIndexEntry& e) {
                 EXPECT_TRUE(scanned.emplace(fp, e).second) << "seen twice " << fp.ToHex();
               }).ok());
  EXPECT_EQ(scanned, model);
  ASSERT_NO_FATAL_FAILURE(StepToEnd(t.get()));
  EXPECT_EQ(t->entry_count(), 20u);
  ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model));
}

// An erase of an entry held twice (left by a crash mid-move, then updated in
// next) that fails half way, in either table, never brings back old's older
// version: old is erased first.
TEST_F(GrowableHashTableTest, AHalfDoneEraseOfAnEntryHeldTwiceNeverBringsBackTheOlderVersion) {
  for (const char* failing : {"chunk-index.next.journal", "chunk-index.journal"}) {
    SCOPED_TRACE(failing);
    test::TempDir dir;
    auto o = Options(dir.Sub("chunk-index"));
    const Fingerprint x = Fp(3);
    {
      auto t = MustOpen(o);
      for (uint64_t i = 0; i < 20; i++) ASSERT_TRUE(t->Apply({Put(Fp(i), Entry(1))}).ok());
      ASSERT_TRUE(t->Grow(0).ok());
      ASSERT_TRUE(t->Step().ok());
    }
    // What a crash between a move's insert and erase leaves, then an
    // update that went to next.
    ASSERT_NO_FATAL_FAILURE(PutIntoNext(o, x, Entry(7, 5)));
    FaultInjectionEnv env(Env::Default());
    {
      auto t = MustOpen(o, &env);
      env.AddRule({FaultInjectionEnv::Op::kWrite, failing, FaultInjectionEnv::Fault::kEIO, 0, 1});
      EXPECT_FALSE(t->Apply({Erase(x)}).ok());
      ChunkIndexEntry got;
      Status s = t->Get(x, &got);
      if (s.ok()) {
        EXPECT_EQ(got, Entry(7, 5));  // before the erase, never old's version
      } else {
        EXPECT_TRUE(s.IsNotFound()) << s.ToString();
      }
    }
    auto t = MustOpen(o);
    ChunkIndexEntry got;
    Status s = t->Get(x, &got);
    if (s.ok()) EXPECT_EQ(got, Entry(7, 5));
    else EXPECT_TRUE(s.IsNotFound()) << s.ToString();
    ASSERT_NO_FATAL_FAILURE(StepToEnd(t.get()));
    s = t->Get(x, &got);
    if (s.ok()) EXPECT_EQ(got, Entry(7, 5));
    else EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  }
}

// Requests merge (the larger target wins) and round up to whole pages; a
// configured size that is no whole number of pages opens and grows.
TEST_F(GrowableHashTableTest, RequestsMergeAndRoundUpAndOddSizesOpen) {
  auto o = Options(Path());
  o.table.size_bytes = 9 * 512 + 100;  // 8 buckets and a bit
  Model model;
  {
    auto t = MustOpen(o);
    for (uint64_t i = 0; i < 30; i++) {
      ASSERT_TRUE(t->Apply({Put(Fp(i), Entry(i + 1))}).ok());
      model[Fp(i)] = Entry(i + 1);
    }
    ASSERT_TRUE(t->Grow(0).ok());
    ASSERT_TRUE(t->Grow(20 * 512 + 1).ok());  // 21 pages: 20 buckets -> 3 x 8 = 24
    ASSERT_NO_FATAL_FAILURE(StepToEnd(t.get()));
    EXPECT_EQ(t->growth().table_bytes, 25u * 512);
    ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model));
  }
  o.table.size_bytes = 60 * 512 + 7;  // raised, odd again: 59 buckets -> 3 x 24 = 72
  o.grow_in_background = true;
  auto t = MustOpen(o);
  for (int i = 0; i < 2000 && t->growth().growths_finished == 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(t->growth().table_bytes, 73u * 512) << t->growth().last_error;
  ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model));
}

// chunk-index.size raised above the file's size: the table grows to it at
// the next open.
TEST_F(GrowableHashTableTest, ConfiguredSizeAboveTheFileGrowsItAtOpen) {
  auto o = Options(Path());
  Model model;
  {
    auto t = MustOpen(o);
    for (uint64_t i = 0; i < 30; i++) {
      ASSERT_TRUE(t->Apply({Put(Fp(i), Entry(i + 1))}).ok());
      model[Fp(i)] = Entry(i + 1);
    }
  }
  o.table.size_bytes = 33 * 512;  // 32 buckets: 4 x 8
  o.grow_in_background = true;
  auto t = MustOpen(o);
  for (int i = 0; i < 2000 && t->growth().growths_finished == 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(t->growth().growths_finished, 1u) << t->growth().last_error;
  EXPECT_EQ(t->growth().table_bytes, 33u * 512);
  ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model));
  // A config below the file's size is no mismatch: the table grew.
  t.reset();
  o.table.size_bytes = 9 * 512;
  t = MustOpen(o);
  EXPECT_EQ(t->growth().table_bytes, 33u * 512);
  EXPECT_FALSE(t->growth().requested);
}

// Page size, key size and probe range still must match.
TEST_F(GrowableHashTableTest, RefusesGeometryMismatchAndStrayFiles) {
  auto o = Options(Path());
  { auto t = MustOpen(o); }
  auto bad = o;
  bad.table.max_probe_pages = 5;
  std::unique_ptr<GrowableHashTable> t;
  Status s = GrowableHashTable::Open(bad, Env::Default(), &t);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.ToString().find("max probe pages"), std::string::npos) << s.ToString();

  // A next file that is no k-fold of the table.
  {
    DiskHashTableOptions n = o.table;
    n.path = GrowableHashTable::NextPath(Path());
    n.size_bytes = 12 * 512;  // 11 buckets
    std::unique_ptr<DiskHashTable> next;
    ASSERT_TRUE(DiskHashTable::Open(n, Env::Default(), &next).ok());
  }
  s = GrowableHashTable::Open(o, Env::Default(), &t);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("not a multiple"), std::string::npos) << s.ToString();

  // A next file without its table.
  ASSERT_TRUE(Env::Default()->DeleteFile(Path()).ok());
  s = GrowableHashTable::Open(o, Env::Default(), &t);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("but not the table"), std::string::npos) << s.ToString();
}

// A full disk when the growth begins: a clear error in growth(), the table
// keeps working, and the growth begins once space is back.
TEST_F(GrowableHashTableTest, NoSpaceForTheLargerTableIsReportedAndRetried) {
  FaultInjectionEnv env(Env::Default());
  auto o = Options(Path());
  auto t = MustOpen(o, &env);
  Model model;
  for (uint64_t i = 0; i < 40; i++) {
    ASSERT_TRUE(t->Apply({Put(Fp(i), Entry(i + 1))}).ok());
    model[Fp(i)] = Entry(i + 1);
  }
  env.AddRule({FaultInjectionEnv::Op::kAllocate, ".next", FaultInjectionEnv::Fault::kENOSPC, 0, 1});
  ASSERT_TRUE(t->Grow(0).ok());
  Status s = t->Step();
  EXPECT_FALSE(s.ok());
  ChunkTableGrowth g = t->growth();
  EXPECT_FALSE(g.growing);
  EXPECT_TRUE(g.requested);
  EXPECT_NE(g.last_error.find("creating chunk index file"), std::string::npos) << g.last_error;
  EXPECT_FALSE(env.FileExists(GrowableHashTable::NextPath(Path())));
  ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model));
  ASSERT_NO_FATAL_FAILURE(StepToEnd(t.get()));
  EXPECT_EQ(t->growth().growths_finished, 1u);
  EXPECT_TRUE(t->growth().last_error.empty());
  ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model));
}

// Every write of the growth failing in turn (EIO on the n-th write, sync or
// rename): the failing step reports it, and a reopen (what a restart does)
// finds every entry and finishes the growth.
TEST_F(GrowableHashTableTest, AFailureAtAnyWriteOfTheGrowthLosesNothing) {
  Model model;
  for (uint64_t i = 0; i < 55; i++) model[Fp(i)] = Entry(i + 1, static_cast<uint32_t>(i));
  for (FaultInjectionEnv::Op op :
       {FaultInjectionEnv::Op::kWrite, FaultInjectionEnv::Op::kSync, FaultInjectionEnv::Op::kRename}) {
    for (int skip = 0; skip < 200; skip++) {
      SCOPED_TRACE("op " + std::to_string(static_cast<int>(op)) + " skip " + std::to_string(skip));
      test::TempDir dir;
      auto o = Options(dir.Sub("chunk-index"));
      {
        auto t = MustOpen(o);
        std::vector<ChunkTable::Op> ops;
        for (const auto& [fp, e] : model) ops.push_back(Put(fp, e));
        ASSERT_TRUE(t->Apply(ops).ok());
      }
      FaultInjectionEnv env(Env::Default());
      env.AddRule({op, "", FaultInjectionEnv::Fault::kEIO, skip, 1});
      bool failed = false;
      {
        std::unique_ptr<GrowableHashTable> t;
        ASSERT_TRUE(GrowableHashTable::Open(o, &env, &t).ok());
        ASSERT_TRUE(t->Grow(0).ok());
        bool growing = true;
        for (int i = 0; i < 100 && (growing || t->growth().requested) && !failed; i++) {
          failed = !t->Step(&growing).ok();
        }
      }
      if (env.faults_fired() == 0) break;  // the growth has fewer such operations
      EXPECT_TRUE(failed);
      auto t = MustOpen(o);
      ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model));
      if (!t->growth().growing) ASSERT_TRUE(t->Grow(0).ok());
      ASSERT_NO_FATAL_FAILURE(StepToEnd(t.get()));
      ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model));
      EXPECT_EQ(t->growth().table_bytes, 17u * 512);
    }
  }
}

// The batch of ops number |b| of the kill -9 test (deterministic, so the
// parent recomputes what the child applied): puts of new and known
// fingerprints, updates and erases.
std::vector<ChunkTable::Op> KillBatch(uint64_t b) {
  std::mt19937_64 rng(b * 7919 + 1);
  std::vector<ChunkTable::Op> ops;
  for (int i = 0; i < 6; i++) {
    const uint64_t r = rng();
    if (r % 5 == 0 && b > 0) {
      ops.push_back(Erase(Fp(rng() % (b * 4))));
    } else if (r % 5 == 1 && b > 0) {
      ops.push_back(Put(Fp(rng() % (b * 4)), Entry(b, static_cast<uint32_t>(i))));
    } else {
      ops.push_back(Put(Fp(b * 4 + i % 4), Entry(b + 1000, static_cast<uint32_t>(i))));
    }
  }
  return ops;
}

void ApplyToModel(const std::vector<ChunkTable::Op>& ops, Model* model) {
  for (const auto& op : ops) {
    if (op.erase) model->erase(op.fp);
    else (*model)[op.fp] = op.entry;
  }
}

// kill -9 of a process applying batches while its table grows in the
// background (a growth whenever it is over half full): after each kill
// every batch whose Apply returned reads back, the one in flight either
// whole or not at all per fingerprint, nothing else; the table opens,
// verifies and goes on growing. Bounded: DEDUPV1_GROW_KILL_CYCLES cycles
// (default 25).
TEST_F(GrowableHashTableTest, KillNineAtAnyPointOfTheGrowthLosesNothing) {
  const uint64_t cycles = test::EnvKnob("DEDUPV1_GROW_KILL_CYCLES", 25);
  auto o = Options(Path(), 4);
  o.step_pages = 1;
  o.grow_in_background = true;
  uint64_t batches_done = 0;  // acknowledged over all cycles
  Model model;
  std::mt19937_64 rng(42);
  int kills_while_growing = 0;
  std::set<uint64_t> sizes;  // of the table new entries go to, at each reopen
  for (uint64_t cycle = 0; cycle < cycles; cycle++) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const uint64_t start = batches_done;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      std::unique_ptr<GrowableHashTable> t;
      if (!GrowableHashTable::Open(o, Env::Default(), &t).ok()) _exit(3);
      for (uint64_t b = start;; b++) {
        if (t->entry_count() * 2 > t->capacity()) (void)t->Grow(0);
        Status s = t->Apply(KillBatch(b));
        // Full while the growth catches up: wait, as ChunkIndex::PutNew does.
        for (int i = 0; i < 2500 && s.IsNoSpace(); i++) {
          (void)t->Grow(0);
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          s = t->Apply(KillBatch(b));
        }
        if (!s.ok()) {
          fprintf(stderr, "batch %lu: %s\n", static_cast<unsigned long>(b), s.ToString().c_str());
          _exit(4);
        }
        uint64_t done = b + 1;
        if (write(fds[1], &done, sizeof(done)) != sizeof(done)) _exit(5);
        if (b - start > 20000) _exit(6);  // bounded even if never killed
      }
    }
    close(fds[1]);
    const auto wait = std::chrono::microseconds(2000 + rng() % 60000);
    std::this_thread::sleep_for(wait);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
    uint64_t done = start, v = 0;
    while (read(fds[0], &v, sizeof(v)) == sizeof(v)) done = v;
    close(fds[0]);
    for (uint64_t b = batches_done; b < done; b++) ApplyToModel(KillBatch(b), &model);
    batches_done = done;
    // The batch in flight may have reached the table in part (per table):
    // each of its fingerprints reads as before it or after it.
    Model after = model;
    const auto in_flight = KillBatch(done);
    ApplyToModel(in_flight, &after);
    if (Env::Default()->FileExists(GrowableHashTable::NextPath(Path()))) kills_while_growing++;
    auto o2 = o;
    o2.grow_in_background = false;
    auto t = MustOpen(o2);
    ASSERT_TRUE(t);
    sizes.insert(t->growth().table_bytes);
    std::set<Fingerprint> touched;
    for (const auto& op : in_flight) touched.insert(op.fp);
    Model seen;
    uint64_t pages = 0;
    Status s = t->Verify(&pages, [&](const Fingerprint& fp, const ChunkIndexEntry& e) { seen[fp] = e; });
    ASSERT_TRUE(s.ok()) << "cycle " << cycle << ": " << s.ToString();
    std::set<Fingerprint> all;
    for (const auto& [fp, e] : model) all.insert(fp);
    for (const auto& [fp, e] : after) all.insert(fp);
    for (const auto& [fp, e] : seen) all.insert(fp);
    for (const Fingerprint& fp : all) {
      ChunkIndexEntry got;
      Status g = t->Get(fp, &got);
      ASSERT_TRUE(g.ok() || g.IsNotFound()) << g.ToString();
      auto want = model.find(fp);
      const bool ok_before = g.ok() ? (want != model.end() && want->second == got) : want == model.end();
      auto want2 = after.find(fp);
      const bool ok_after = g.ok() ? (want2 != after.end() && want2->second == got) : want2 == after.end();
      ASSERT_TRUE(ok_before || (touched.count(fp) && ok_after))
          << "cycle " << cycle << " fp " << fp.ToHex() << (g.ok() ? " has container " + std::to_string(got.container) : " is missing");
    }
    // Continue from what the table holds: the in-flight batch's outcome per
    // fingerprint becomes the model.
    Model now;
    for (const Fingerprint& fp : all) {
      ChunkIndexEntry got;
      if (t->Get(fp, &got).ok()) now[fp] = got;
    }
    model = now;
    batches_done = done + 1;
  }
  std::printf("%lu cycles, %lu batches, %d kills during a growth, %zu table sizes\n",
              static_cast<unsigned long>(cycles), static_cast<unsigned long>(batches_done), kills_while_growing,
              sizes.size());
  EXPECT_GE(sizes.size(), 3u);  // growths finished and new ones begun
  EXPECT_GT(batches_done, cycles);
  // The point of the test: some kills must land during a growth.
  EXPECT_GT(kills_while_growing, 0);
  auto t = MustOpen(o);
  ASSERT_NO_FATAL_FAILURE(Expect(t.get(), model));
  EXPECT_GT(t->growth().table_bytes, 5u * 512);
}

}  // namespace
}  // namespace dedupv1

// A data directory that holds a store but lacks a file its data depends on
// is refused naming the file (issue 19 defect 6); a fresh one is created as
// before, and a creation that failed half way is resumed.
#include "core/engine/data_dir.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chunkstore/chunk_store.h"
#include "chunkstore/local_container_catalog.h"
#include "core/engine/dedup_system.h"
#include "core/base/fault_injection_env.h"
#include "core/engine/system_testutil.h"
#include "core/base/testutil.h"
#include "index/disk_hash_table.h"

namespace dedupv1 {
namespace {

Options StoreOptions(const std::string& dir, uint32_t block_size = 128 << 10) {
  Options o = test::SmallSystemOptions(dir);
  o.block_size = block_size;
  o.volumes = {{"vol1", 16 << 20}, {"vol2", 16 << 20}};
  o.idle.period_ms = 3600 * 1000;  // no idle work unless a test asks
  Status s = o.Finish();
  EXPECT_TRUE(s.ok()) << s.ToString();
  return o;
}

using test::ReadsBack;
using test::Vol;

bool Contains(const Status& s, const std::string& what) { return s.message().find(what) != std::string::npos; }

// Writes and syncs different data to both volumes, then closes cleanly.
void WriteStore(const Options& o, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  auto sys = test::OpenSystemOrDie(o);
  ASSERT_TRUE(sys);
  ASSERT_TRUE(Vol(sys.get(), "vol1")->Write(0, a.size(), a.data(), false).ok());
  ASSERT_TRUE(Vol(sys.get(), "vol2")->Write(0, b.size(), b.data(), false).ok());
  ASSERT_TRUE(sys->Sync().ok());
  ASSERT_TRUE(sys->Close().ok());
}

Status OpenStatus(const Options& o) {
  std::unique_ptr<DedupSystem> sys;
  return DedupSystem::Open(o, Env::Default(), &sys);
}

// Moves |path| aside, expects the open to be refused naming it, moves it back.
void ExpectRefusedWithout(const Options& o, const std::string& path, const std::string& advice) {
  SCOPED_TRACE(path);
  Env* env = Env::Default();
  ASSERT_TRUE(env->FileExists(path));
  ASSERT_TRUE(env->RenameFile(path, path + ".aside").ok());
  Status s = OpenStatus(o);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE(Contains(s, path + " is missing")) << s.ToString();
  EXPECT_TRUE(Contains(s, advice)) << s.ToString();
  // Nothing was recreated in its place.
  EXPECT_FALSE(env->FileExists(path));
  ASSERT_TRUE(env->RenameFile(path + ".aside", path).ok());
}

TEST(DataDirTest, EachRequiredFileMissingIsRefusedNamingIt) {
  test::TempDir dir;
  const Options o = StoreOptions(dir.path());
  const auto a = test::RandomBytes(2 << 20, 1), b = test::RandomBytes(2 << 20, 2);
  WriteStore(o, a, b);
  ExpectRefusedWithout(o, dir.Sub("system"), "block-size");
  ExpectRefusedWithout(o, dir.Sub("volumes"), "'ID NAME SIZE'");
  ExpectRefusedWithout(o, o.log.path, "event ids");
  ExpectRefusedWithout(o, o.chunk_index.table.path, "garbage");
  ExpectRefusedWithout(o, o.block_index.path, "read zeros");
  ExpectRefusedWithout(o, o.chunk_store.dir, "stored chunks");
  ExpectRefusedWithout(o, JoinPath(o.chunk_store.dir, kContainerIdFileName), "could get ids");
  // After a clean stop the chunk-index journal is empty and may go.
  const std::string journal = DiskHashTable::JournalPath(o.chunk_index.table.path);
  ASSERT_TRUE(Env::Default()->DeleteFile(journal).ok());
  {
    auto sys = test::OpenSystemOrDie(o);
    ASSERT_TRUE(sys);
    EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol1"), 0, a));
    EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol2"), 0, b));
    // Killed: no clean marker; the journal may then hold pages to redo.
    const std::string clean = dir.Sub("clean");
    ASSERT_TRUE(sys->Close().ok());
    ASSERT_TRUE(Env::Default()->DeleteFile(clean).ok());
  }
  ExpectRefusedWithout(o, journal, "dedupv1_check");
  // Everything back in place: the store opens with its data.
  auto sys = test::OpenSystemOrDie(o);
  ASSERT_TRUE(sys);
  EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol1"), 0, a));
  EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol2"), 0, b));
}

TEST(DataDirTest, EveryMissingFileIsNamedAtOnce) {
  test::TempDir dir;
  const Options o = StoreOptions(dir.path());
  WriteStore(o, test::RandomBytes(1 << 20, 3), test::RandomBytes(1 << 20, 4));
  ASSERT_TRUE(Env::Default()->DeleteFile(dir.Sub("system")).ok());
  ASSERT_TRUE(Env::Default()->DeleteFile(dir.Sub("volumes")).ok());
  Status s = OpenStatus(o);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE(Contains(s, dir.Sub("system") + " is missing")) << s.ToString();
  EXPECT_TRUE(Contains(s, dir.Sub("volumes") + " is missing")) << s.ToString();
}

// The first scenario: without the volume table, ids would follow the
// config's order and the volumes would swap data.
TEST(DataDirTest, MissingVolumeTableWithReorderedConfigIsRefused) {
  test::TempDir dir;
  Options o = StoreOptions(dir.path());
  const auto a = test::RandomBytes(1 << 20, 5), b = test::RandomBytes(1 << 20, 6);
  WriteStore(o, a, b);
  Options reordered = o;
  std::swap(reordered.volumes[0], reordered.volumes[1]);
  {
    // With the table, the order of the config lines does not matter.
    auto sys = test::OpenSystemOrDie(reordered);
    ASSERT_TRUE(sys);
    EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol1"), 0, a));
    EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol2"), 0, b));
  }
  ASSERT_TRUE(Env::Default()->DeleteFile(dir.Sub("volumes")).ok());
  Status s = OpenStatus(reordered);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE(Contains(s, dir.Sub("volumes") + " is missing")) << s.ToString();
  EXPECT_FALSE(Env::Default()->FileExists(dir.Sub("volumes")));
}

// The second scenario: a recreated system file would take the new
// block size and misread every stored mapping.
TEST(DataDirTest, MissingSystemFileWithChangedBlockSizeIsRefused) {
  test::TempDir dir;
  const Options o = StoreOptions(dir.path());
  const auto a = test::RandomBytes(1 << 20, 7), b = test::RandomBytes(1 << 20, 8);
  WriteStore(o, a, b);
  ASSERT_TRUE(Env::Default()->DeleteFile(dir.Sub("system")).ok());
  Status s = OpenStatus(StoreOptions(dir.path(), 64 << 10));
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE(Contains(s, dir.Sub("system") + " is missing")) << s.ToString();
  EXPECT_FALSE(Env::Default()->FileExists(dir.Sub("system")));
  // Written back by hand with the values the store was created with, it opens.
  ASSERT_TRUE(
      WriteFileAtomically(Env::Default(), dir.Sub("system"), "format = 2\nblock-size = 131072\nfingerprint = sha1\n")
          .ok());
  auto sys = test::OpenSystemOrDie(o);
  ASSERT_TRUE(sys);
  EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol1"), 0, a));
}

TEST(DataDirTest, ContainersAloneAreAStore) {
  test::TempDir dir;
  const Options o = StoreOptions(dir.path());
  WriteStore(o, test::RandomBytes(1 << 20, 9), test::RandomBytes(1 << 20, 10));
  Env* env = Env::Default();
  // Every file but the containers themselves gone.
  for (const std::string& f :
       {dir.Sub("system"), dir.Sub("volumes"), dir.Sub("clean"), dir.Sub("checkpoint"), dir.Sub("bloom"),
        o.log.path, o.chunk_index.table.path, DiskHashTable::JournalPath(o.chunk_index.table.path),
        o.block_index.path, JoinPath(o.chunk_store.dir, kContainerIdFileName),
        JoinPath(o.chunk_store.dir, kContainerAliasFileName),
        JoinPath(o.chunk_store.dir, kContainerSummaryFileName)}) {
    if (env->FileExists(f)) ASSERT_TRUE(env->DeleteFile(f).ok()) << f;
  }
  DataDirState state;
  Status s = InspectDataDir(env, o, &state);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE(Contains(s, ".ctr exists")) << s.ToString();
  EXPECT_TRUE(Contains(s, dir.Sub("system") + " is missing")) << s.ToString();
  EXPECT_TRUE(Contains(s, JoinPath(o.chunk_store.dir, kContainerIdFileName) + " is missing")) << s.ToString();
  EXPECT_TRUE(OpenStatus(o).IsCorruption());
}

TEST(DataDirTest, FreshStoreIsCreatedInAnEmptyOrMissingDirectory) {
  test::TempDir dir;
  for (const std::string& path : {dir.path(), dir.Sub("not/there/yet")}) {
    SCOPED_TRACE(path);
    Options o = StoreOptions(path);
    o.volumes.clear();  // even without volumes the table is written
    DataDirState state;
    ASSERT_TRUE(InspectDataDir(Env::Default(), o, &state).ok());
    EXPECT_EQ(state, DataDirState::kFresh);
    {
      auto sys = test::OpenSystemOrDie(o);
      ASSERT_TRUE(sys);
      EXPECT_FALSE(sys->recovery().dirty_start);
      EXPECT_FALSE(Env::Default()->FileExists(JoinPath(path, kCreatingFileName)));
      for (const char* f : {kSystemFileName, kVolumesFileName}) {
        EXPECT_TRUE(Env::Default()->FileExists(JoinPath(path, f))) << f;
      }
      EXPECT_TRUE(Env::Default()->FileExists(JoinPath(o.chunk_store.dir, kContainerAliasFileName)));
    }
    ASSERT_TRUE(InspectDataDir(Env::Default(), o, &state).ok());
    EXPECT_EQ(state, DataDirState::kStore);
    auto sys = test::OpenSystemOrDie(o);
    EXPECT_TRUE(sys);
  }
}

// A full disk while the chunk index is preallocated fails the first open
// half way; the next open finishes the creation instead of refusing a store
// that lacks its chunk index and volume table.
TEST(DataDirTest, FailedCreationIsResumed) {
  test::TempDir dir;
  const Options o = StoreOptions(dir.path());
  FaultInjectionEnv fenv(Env::Default());
  fenv.AddRule({FaultInjectionEnv::Op::kAllocate, "chunk-index", FaultInjectionEnv::Fault::kENOSPC});
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::Open(o, &fenv, &sys);
  ASSERT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_TRUE(Env::Default()->FileExists(dir.Sub(kCreatingFileName)));
  EXPECT_TRUE(Env::Default()->FileExists(dir.Sub(kSystemFileName)));
  EXPECT_FALSE(Env::Default()->FileExists(o.chunk_index.table.path));
  DataDirState state;
  ASSERT_TRUE(InspectDataDir(Env::Default(), o, &state).ok());
  EXPECT_EQ(state, DataDirState::kCreating);

  // The config corrected meanwhile (another block size): nothing is stored
  // yet, so the system file is rewritten.
  const Options corrected = StoreOptions(dir.path(), 64 << 10);
  fenv.ClearRules();
  sys = test::OpenSystemOrDie(corrected);
  ASSERT_TRUE(sys);
  EXPECT_FALSE(Env::Default()->FileExists(dir.Sub(kCreatingFileName)));
  const auto data = test::RandomBytes(1 << 20, 11);
  ASSERT_TRUE(Vol(sys.get(), "vol1")->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(sys->Close().ok());
  sys = test::OpenSystemOrDie(corrected);
  ASSERT_TRUE(sys);
  EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol1"), 0, data));
}

// Writes each damaged text to |path| and expects the open to be refused with
// Corruption naming |path| followed by the case's text (and |advice|).
struct DamagedText {
  const char* text;
  const char* expect;
};
void ExpectDamagedFileRefused(const Options& o, const std::string& path, const std::vector<DamagedText>& cases,
                              const std::string& advice) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, c.text).ok());
    Status s = OpenStatus(o);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_TRUE(Contains(s, path + c.expect)) << s.ToString();
    EXPECT_TRUE(Contains(s, advice)) << s.ToString();
  }
}

TEST(DataDirTest, DamagedSystemFileIsRefusedNamingTheLine) {
  test::TempDir dir;
  const Options o = StoreOptions(dir.path());
  WriteStore(o, test::RandomBytes(256 << 10, 12), test::RandomBytes(256 << 10, 13));
  const std::string path = dir.Sub("system");
  ExpectDamagedFileRefused(o, path, {
      {"format = 2\nblock-size = 131072\nfingerprint = sha1\nextra = 1\n", ":4: unknown key 'extra'"},
      {"format = 2\nblock-size = 131072\nblock-size = 131072\nfingerprint = sha1\n", ":3: block-size again"},
      {"format = 2\nfingerprint = sha1\n", ": no block-size line"},
      {"", ": no block-size line"},
      {"format = 2\nblock-size = 12x\nfingerprint = sha1\n", ":2: block-size '12x' is not a number"},
      {"format = 2\nblock-size = 131072\nfingerprint = md5\n", ":3: unknown fingerprint 'md5'"},
      {"format = 2\nblock-size 131072\nfingerprint = sha1\n", ":2: expected 'key = value'"},
  }, "restore it from a backup");
  // A well-formed file of another block size is a config change, refused as before.
  ASSERT_TRUE(
      WriteFileAtomically(Env::Default(), path, "format = 2\nblock-size = 65536\nfingerprint = sha1\n").ok());
  EXPECT_TRUE(OpenStatus(o).IsInvalidArgument());
  ASSERT_TRUE(
      WriteFileAtomically(Env::Default(), path, "format = 2\nblock-size = 131072\nfingerprint = sha1\n").ok());
  EXPECT_TRUE(OpenStatus(o).ok());
}

TEST(DataDirTest, DamagedVolumeTableIsRefusedNamingTheEntries) {
  test::TempDir dir;
  const Options o = StoreOptions(dir.path());
  WriteStore(o, test::RandomBytes(256 << 10, 14), test::RandomBytes(256 << 10, 15));
  ExpectDamagedFileRefused(o, dir.Sub("volumes"), {
      {"1 vol1 16777216\n1 vol2 16777216\n", ": id 1 is given twice ('1 vol1' and '1 vol2')"},
      {"1 vol1 16777216\n2 vol1 16777216\n", ": volume vol1 is listed twice"},
      {"0 vol1 16777216\n2 vol2 16777216\n", ": volume vol1 has id 0"},
      {"1 vol1 16777216\n2 vol2\n", ":2: expected 'id name size uid'"},
  }, "");
}

// After a GC merge the merged container answers to the old ids only through
// containers/container-aliases; a store that never merged gets an empty file
// written when it lacks one (a store created before the file was written at
// creation).
TEST(DataDirTest, AliasFileIsRequiredOnceContainersWereMerged) {
  test::TempDir dir;
  Options o = test::SmallSystemOptions(dir.path());
  o.volumes = {{"vol1", 16 << 20}};
  o.chunk_store.container_size = 1 << 20;
  o.idle.period_ms = 3600 * 1000;
  ASSERT_TRUE(o.Finish().ok());
  const std::string aliases = JoinPath(o.chunk_store.dir, kContainerAliasFileName);
  auto data = test::RandomBytes(8 << 20, 16);
  {
    auto sys = test::OpenSystemOrDie(o);
    ASSERT_TRUE(sys);
    Volume* v = Vol(sys.get(), "vol1");
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(sys->Sync().ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  // Never merged: the missing file is written again, empty.
  ASSERT_TRUE(Env::Default()->DeleteFile(aliases).ok());
  {
    auto sys = test::OpenSystemOrDie(o);
    ASSERT_TRUE(sys);
    EXPECT_TRUE(Env::Default()->FileExists(aliases));
    Volume* v = Vol(sys.get(), "vol1");
    // Unmap 5 of every 8 blocks: every container is less than half live.
    const uint64_t bs = o.block_size;
    for (uint64_t off = 0; off < data.size(); off += 8 * bs) {
      ASSERT_TRUE(v->Unmap(off, 5 * bs).ok());
      std::fill(data.begin() + off, data.begin() + off + 5 * bs, 0);
    }
    ASSERT_TRUE(sys->Sync().ok());
    ASSERT_TRUE(sys->RunGc().ok());
    ASSERT_GT(sys->gc_stats().containers_written, 0u);
    ASSERT_TRUE(sys->Close().ok());
  }
  ExpectRefusedWithout(o, aliases, "was merged by garbage collection");
  auto sys = test::OpenSystemOrDie(o);
  ASSERT_TRUE(sys);
  EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol1"), 0, data));
}

// The clean marker tells the next open whether recovery (container
// re-import, the journal rule above) is needed. An open that fails must not
// write it: before, the Close run by the failed open marked an uncleanly
// stopped store clean (and, failing after the indexes were open, checkpointed
// and trimmed log events recovery had not applied).
TEST(DataDirTest, FailedOpenLeavesAnUncleanStopUnclean) {
  test::TempDir dir;
  const Options o = StoreOptions(dir.path());
  WriteStore(o, test::RandomBytes(256 << 10, 17), test::RandomBytes(256 << 10, 18));
  ASSERT_TRUE(Env::Default()->DeleteFile(dir.Sub(kCleanFileName)).ok());  // as after kill -9
  FaultInjectionEnv fenv(Env::Default());
  fenv.AddRule({FaultInjectionEnv::Op::kOpen, "chunk-index", FaultInjectionEnv::Fault::kEIO});
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::Open(o, &fenv, &sys);
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_FALSE(Env::Default()->FileExists(dir.Sub(kCleanFileName)));
  fenv.ClearRules();
  sys = test::OpenSystemOrDie(o);
  ASSERT_TRUE(sys);
  EXPECT_TRUE(sys->recovery().dirty_start);
}

}  // namespace
}  // namespace dedupv1

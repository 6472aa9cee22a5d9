// System-level fault tests: the whole engine (DedupSystem, volumes, chunk
// store, both indexes) runs on a FaultInjectionEnv or on files damaged behind
// its back. The contract under test:
//  - a container or index page whose CRC does not match is an error naming the
//    object (container id, file and page), never wrong data;
//  - a full disk (ENOSPC) or a full chunk index fails the write with a clear
//    error and leaves everything stored before intact;
//  - I/O errors and torn writes are reported, nothing acknowledged is lost,
//    and the system recovers once the cause is gone.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/base/coding.h"
#include "core/engine/dedup_system.h"
#include "core/base/fault_injection_env.h"
#include "core/engine/system_testutil.h"
#include "core/base/testutil.h"
#include "index/block_index.h"
#include "index/kv_store.h"

namespace dedupv1 {
namespace {

using FaultOp = FaultInjectionEnv::Op;
using Fault = FaultInjectionEnv::Fault;

// Small, fast settings. Containers are committed when full or on Sync (the
// commit timer is long so it never races the faults a test injects).
Options FaultOptions(const std::string& dir) {
  Options o;
  o.data_dir = dir;
  o.chunk_index.table.size_bytes = 8 << 20;
  o.filters.bloom_expected_chunks = 1 << 16;
  o.write_buffer_size = 64 << 20;
  o.write_buffer_flush_delay_ms = 20;
  o.chunk_store.commit_timeout_ms = 10000;
  o.volumes = {{"vol1", 32 << 20}, {"vol2", 32 << 20}};
  o.idle.period_ms = 3600 * 1000;  // no idle checkpoint or GC round unless a test runs one
  return o;
}

Options Finished(Options o) {
  Status s = o.Finish();
  EXPECT_TRUE(s.ok()) << s.ToString();
  return o;
}

std::unique_ptr<DedupSystem> OpenOrDie(const Options& o, Env* env) {
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::Open(o, env, &sys);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return sys;
}

using test::ReadsBack;
using test::Vol;

// Sync until it succeeds or |limit| passes: after a fault is cleared, the
// workers and the chunk store retry on their own schedule (worker back-off
// 200 ms, commit retry up to 1 s); the limit is generous for a loaded CI host.
Status SyncWithin(DedupSystem* sys, std::chrono::milliseconds limit = std::chrono::milliseconds(30000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  Status s;
  for (;;) {
    s = sys->Sync();
    if (s.ok() || std::chrono::steady_clock::now() > deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Whether each of the first |n| bytes at |offset| reads as |data| or as zero
// (never other data).
::testing::AssertionResult ReadsDataOrZeros(Volume* v, uint64_t offset, const std::vector<uint8_t>& data,
                                            uint64_t n) {
  std::vector<uint8_t> got(n);
  Status s = v->Read(offset, got.size(), got.data());
  if (!s.ok()) return ::testing::AssertionFailure() << "read failed: " << s.ToString();
  for (uint64_t i = 0; i < n; i++) {
    if (got[i] != 0 && got[i] != data[i]) {
      return ::testing::AssertionFailure() << "byte " << offset + i << " is neither the data written nor zero";
    }
  }
  return ::testing::AssertionSuccess();
}

bool Contains(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Every file under the container directory's subdirectories whose name ends
// with |suffix|, as path -> name.
std::map<std::string, std::string> ContainerDirFiles(const Options& o, const std::string& suffix) {
  std::map<std::string, std::string> out;
  Env* env = Env::Default();
  std::vector<std::string> subs;
  EXPECT_TRUE(env->GetChildren(o.chunk_store.dir, &subs).ok());
  for (const auto& sub : subs) {
    std::vector<std::string> names;
    if (!env->GetChildren(JoinPath(o.chunk_store.dir, sub), &names).ok()) continue;  // a plain file
    for (const auto& n : names) {
      if (EndsWith(n, suffix)) out[JoinPath(JoinPath(o.chunk_store.dir, sub), n)] = n;
    }
  }
  return out;
}

Status ReadWholeFile(const std::string& path, std::string* data) {
  return ReadFileToString(Env::Default(), path, data);
}

Status WriteAt(const std::string& path, uint64_t offset, const std::string& bytes) {
  std::unique_ptr<File> f;
  DEDUPV1_RETURN_IF_ERROR(Env::Default()->OpenFile(path, OpenMode::kReadWrite, &f));
  DEDUPV1_RETURN_IF_ERROR(f->Write(offset, bytes.data(), bytes.size()));
  return f->Sync();
}

// For the GC tests: 1 MiB containers, so 8 MiB of data fill several.
Options GcFaultOptions(const std::string& dir) {
  Options o = FaultOptions(dir);
  o.chunk_store.container_size = 1 << 20;
  return Finished(o);
}

// 1. ENOSPC while committing containers.
TEST(DedupSystemFaultTest, DiskFullOnContainerWriteFailsCleanlyAndRecovers) {
  test::TempDir dir;
  const Options o = Finished(FaultOptions(dir.path()));
  FaultInjectionEnv fenv(Env::Default());
  const auto a = test::RandomBytes(2 << 20, 101);
  const auto b = test::RandomBytes(6 << 20, 102);  // more than one 4 MiB container
  const auto c = test::RandomBytes(1 << 20, 103);
  const uint64_t a_off = 0, b_off = 8 << 20, c_off = 20 << 20;
  {
    auto sys = OpenOrDie(o, &fenv);
    Volume* v = Vol(sys.get(), "vol1");
    ASSERT_TRUE(v->Write(a_off, a.size(), a.data(), false).ok());
    ASSERT_TRUE(sys->Sync().ok());

    fenv.AddRule({FaultOp::kWrite, ".ctr", Fault::kENOSPC});
    // One request, so it is accepted before any commit can fail.
    Status s = v->Write(b_off, b.size(), b.data(), false);
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = sys->Sync();
    ASSERT_TRUE(s.IsNoSpace()) << s.ToString();
    EXPECT_TRUE(Contains(s, "full")) << "the message should say what is full: " << s.ToString();
    EXPECT_TRUE(Contains(s, "container")) << s.ToString();
    EXPECT_GT(fenv.faults_fired(), 0);
    // Each failed commit attempt is recorded in the log (a record only).
    int commit_failed = 0;
    ASSERT_TRUE(sys->log()->Replay(sys->log()->head_id(), [&](const LogEvent& e) {
      if (e.type == LogEventType::kContainerCommitFailed) {
        ContainerEventData d;
        EXPECT_TRUE(ContainerEventData::Decode(e.payload, &d).ok());
        EXPECT_NE(d.container, kNoContainer);
        commit_failed++;
      }
      return Status::OK();
    }).ok());
    EXPECT_GT(commit_failed, 0) << "no CONTAINER_COMMIT_FAILED event logged";

    // What was synced before is intact, and the acknowledged B is readable
    // (from memory) even though it could not be committed.
    EXPECT_TRUE(ReadsBack(v, a_off, a));
    EXPECT_TRUE(ReadsBack(v, b_off, b));

    // While the disk stays full, new data is refused with the reason.
    s = v->Write(c_off, c.size(), c.data(), false);
    EXPECT_TRUE(s.IsNoSpace()) << "a write while the disk is full: " << s.ToString();
    s = sys->Sync();
    EXPECT_TRUE(s.IsNoSpace()) << "a second sync while the disk is full: " << s.ToString();

    fenv.ClearRules();
    s = SyncWithin(sys.get());
    ASSERT_TRUE(s.ok()) << "sync after the disk has space again: " << s.ToString();
    EXPECT_TRUE(ReadsBack(v, a_off, a));
    EXPECT_TRUE(ReadsBack(v, b_off, b));
    // Writes are accepted again.
    s = v->Write(c_off, c.size(), c.data(), false);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(sys->Sync().ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = OpenOrDie(o, Env::Default());
  Volume* v = Vol(sys.get(), "vol1");
  EXPECT_TRUE(ReadsBack(v, a_off, a));
  EXPECT_TRUE(ReadsBack(v, b_off, b));
  EXPECT_TRUE(ReadsBack(v, c_off, c));
}

// 1b. The same with a small write: the failing commit is the one Sync itself
// starts (nothing filled a container during deduplication).
TEST(DedupSystemFaultTest, DiskFullOnSyncCommitRefusesLaterWrites) {
  test::TempDir dir;
  const Options o = Finished(FaultOptions(dir.path()));
  FaultInjectionEnv fenv(Env::Default());
  const auto a = test::RandomBytes(1 << 20, 111);
  const auto b = test::RandomBytes(512 << 10, 112);
  const auto c = test::RandomBytes(512 << 10, 113);
  auto sys = OpenOrDie(o, &fenv);
  Volume* v = Vol(sys.get(), "vol1");
  ASSERT_TRUE(v->Write(0, a.size(), a.data(), false).ok());
  ASSERT_TRUE(sys->Sync().ok());
  fenv.AddRule({FaultOp::kWrite, ".ctr", Fault::kENOSPC});
  ASSERT_TRUE(v->Write(4 << 20, b.size(), b.data(), false).ok());
  Status s = sys->Sync();
  ASSERT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_TRUE(Contains(s, "full")) << s.ToString();
  s = v->Write(8 << 20, c.size(), c.data(), false);
  EXPECT_TRUE(s.IsNoSpace()) << "a write right after a sync failed for lack of space: " << s.ToString();
  EXPECT_TRUE(ReadsBack(v, 0, a));
  EXPECT_TRUE(ReadsBack(v, 4 << 20, b));
  fenv.ClearRules();
  s = SyncWithin(sys.get());
  ASSERT_TRUE(s.ok()) << s.ToString();
  // Once a sync succeeded, writes are accepted again.
  s = v->Write(8 << 20, c.size(), c.data(), false);
  ASSERT_TRUE(s.ok()) << "a write after the disk has space again: " << s.ToString();
  ASSERT_TRUE(sys->Sync().ok());
  ASSERT_TRUE(sys->Close().ok());
  sys = OpenOrDie(o, Env::Default());
  v = Vol(sys.get(), "vol1");
  EXPECT_TRUE(ReadsBack(v, 0, a));
  EXPECT_TRUE(ReadsBack(v, 4 << 20, b));
  EXPECT_TRUE(ReadsBack(v, 8 << 20, c));
}

// 2. A chunk index too small for the data.
TEST(DedupSystemFaultTest, FullChunkIndexFailsWritesAndKeepsSyncedData) {
  test::TempDir dir;
  Options o = FaultOptions(dir.path());
  o.chunk_index.table.size_bytes = 64 << 10;  // 15 buckets of 4K: ~1300 entries
  o.chunk_index.grow_at = 0;  // no online growth: the index fills
  o.chunk_index.table.page_size = 4096;
  // A write buffer smaller than one request: writers wait for the workers,
  // which can never drain it once the index is full.
  o.write_buffer_size = 1 << 20;
  o = Finished(o);
  const auto a = test::RandomBytes(1 << 20, 201);        // ~128 chunks: fits
  const auto b = test::RandomBytes(24 << 20, 202);       // ~3000 chunks: does not
  const uint64_t b_off = 2 << 20;
  uint64_t acknowledged = 0;
  {
    auto sys = OpenOrDie(o, Env::Default());
    Volume* v = Vol(sys.get(), "vol1");
    ASSERT_TRUE(v->Write(0, a.size(), a.data(), false).ok());
    ASSERT_TRUE(sys->Sync().ok());

    // Stream B as a backup client would, until the system refuses. A write
    // must fail, not wait for ever for buffer space that never frees up.
    Status first_error;
    std::atomic<bool> done{false};
    std::thread writer([&] {
      for (uint64_t off = 0; off < b.size(); off += 1 << 20) {
        Status s = v->Write(b_off + off, 1 << 20, b.data() + off, false);
        if (!s.ok()) {
          first_error = s;
          break;
        }
        acknowledged = off + (1 << 20);
      }
      done = true;
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!done) {
      ADD_FAILURE() << "a Write blocked for 20 s waiting for write-buffer space instead of failing";
      (void)v->Unmap(b_off, b.size());  // frees the buffer so the writer can finish
    }
    writer.join();
    Status s = sys->Sync();
    ASSERT_FALSE(s.ok()) << "24 MiB of unique data cannot fit a 64 KiB chunk index";
    EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
    EXPECT_TRUE(Contains(s, "chunk index full")) << s.ToString();
    if (!first_error.ok()) {
      EXPECT_TRUE(first_error.IsNoSpace()) << first_error.ToString();
      EXPECT_TRUE(Contains(first_error, "chunk index full")) << first_error.ToString();
    }
    // Still full: a further write of new data fails, refused at once or by
    // the sync that covers it.
    s = v->Write(30 << 20, 4096, b.data(), false);
    if (s.ok()) s = sys->Sync();
    EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
    EXPECT_TRUE(Contains(s, "chunk index full")) << s.ToString();

    EXPECT_TRUE(ReadsBack(v, 0, a));
    // The failed sync gave up what it could not store: those bytes read what
    // they held before (zeros), as after a crash; the rest reads B.
    EXPECT_TRUE(ReadsDataOrZeros(v, b_off, b, acknowledged));
    sys->Close();  // may report the error; what was synced must survive
  }
  auto sys = OpenOrDie(o, Env::Default());
  Volume* v = Vol(sys.get(), "vol1");
  EXPECT_TRUE(ReadsBack(v, 0, a));
  // B was never synced; whatever of it is stored must be B, never other data.
  EXPECT_TRUE(ReadsDataOrZeros(v, b_off, b, acknowledged));
}

// While the chunk index is full only data that needs a new entry fails:
// known and zero data are written and synced as usual (issue 19; before,
// every write was refused once a run had failed). The sync that covers a
// write whose data could not be stored fails and gives its bytes up; the
// next sync does not report them again. Nothing stored is lost.
TEST(DedupSystemFaultTest, FullChunkIndexFailsOnlyWritesThatNeedANewEntry) {
  test::TempDir dir;
  Options o = FaultOptions(dir.path());
  o.chunk_index.table.size_bytes = 64 << 10;  // 15 buckets of 4K: ~1,000 entries
  o.chunk_index.grow_at = 0;  // no online growth: the index fills
  o.chunk_index.table.page_size = 4096;
  o = Finished(o);
  const auto a = test::RandomBytes(1 << 20, 211);   // ~128 chunks: fits
  const auto b = test::RandomBytes(24 << 20, 212);  // ~3,000 chunks: does not
  const auto c = test::RandomBytes(1 << 20, 213);   // new data after the index filled
  const std::vector<uint8_t> zeros(1 << 20, 0);
  const std::vector<uint8_t> before_c(1 << 20, 0);  // what c's range held before
  const uint64_t b_off = 2 << 20, a_copy = 28 << 20, zero_off = 30 << 20, c_off = 26 << 20;
  {
    auto sys = OpenOrDie(o, Env::Default());
    Volume* v = Vol(sys.get(), "vol1");
    ASSERT_TRUE(v->Write(0, a.size(), a.data(), false).ok());
    ASSERT_TRUE(sys->Sync().ok());
    // Fill the index: B is acknowledged (the buffer holds it) but cannot all
    // be stored.
    for (uint64_t off = 0; off < b.size(); off += 1 << 20) {
      if (!v->Write(b_off + off, 1 << 20, b.data() + off, false).ok()) break;
    }
    Status s = v->Sync();  // the initiator's SYNCHRONIZE CACHE
    ASSERT_TRUE(s.IsNoSpace()) << s.ToString();
    EXPECT_TRUE(Contains(s, "chunk index full")) << s.ToString();

    // Known data (A again, in place and at another offset) and zeros need no
    // entry: written and synced.
    ASSERT_TRUE(v->Write(0, a.size(), a.data(), false).ok());
    ASSERT_TRUE(v->Write(a_copy, a.size(), a.data(), false).ok());
    ASSERT_TRUE(v->Write(zero_off, zeros.size(), zeros.data(), false).ok());
    s = sys->Sync();
    EXPECT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(v->Write(zero_off, zeros.size(), zeros.data(), true).ok());  // FUA

    // New data fails: refused at once, or by the sync that covers it.
    s = v->Write(c_off, c.size(), c.data(), false);
    if (s.ok()) s = v->Sync();
    EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
    EXPECT_TRUE(Contains(s, "chunk index full")) << s.ToString();
    // Reported once: the next sync, after more known data, succeeds.
    ASSERT_TRUE(v->Write(a_copy, a.size(), a.data(), false).ok());
    s = v->Sync();
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(ReadsBack(v, c_off, before_c)) << "C was given up: its range reads what it held before";

    EXPECT_TRUE(ReadsBack(v, 0, a));
    EXPECT_TRUE(ReadsBack(v, a_copy, a));
    EXPECT_TRUE(ReadsBack(v, zero_off, zeros));
    EXPECT_EQ(v->buffer().dirty_bytes(), 0u);
    EXPECT_TRUE(sys->Close().ok());
  }
  auto sys = OpenOrDie(o, Env::Default());
  Volume* v = Vol(sys.get(), "vol1");
  EXPECT_TRUE(ReadsBack(v, 0, a));
  EXPECT_TRUE(ReadsBack(v, a_copy, a));
  EXPECT_TRUE(ReadsBack(v, zero_off, zeros));
}

// Data given up for want of chunk-index space is reported to the initiator
// of the volume that wrote it, even when another volume's sync gave it up:
// that initiator's next SYNCHRONIZE CACHE must not succeed as if its writes
// were durable.
TEST(DedupSystemFaultTest, GivenUpWritesFailTheNextSyncOfTheirVolume) {
  test::TempDir dir;
  Options o = FaultOptions(dir.path());
  o.chunk_index.table.size_bytes = 64 << 10;  // ~1,000 entries
  o.chunk_index.grow_at = 0;  // no online growth: the index fills
  o.chunk_index.table.page_size = 4096;
  o = Finished(o);
  const auto b = test::RandomBytes(24 << 20, 214);  // ~3,000 chunks: does not fit
  auto sys = OpenOrDie(o, Env::Default());
  Volume* v1 = Vol(sys.get(), "vol1");
  Volume* v2 = Vol(sys.get(), "vol2");
  for (uint64_t off = 0; off < b.size(); off += 1 << 20) {
    if (!v1->Write(off, 1 << 20, b.data() + off, false).ok()) break;
  }
  // vol2's initiator syncs first: the sync gives vol1's parked bytes up (it
  // covers every volume) and fails.
  Status s = v2->Sync();
  ASSERT_TRUE(s.IsNoSpace()) << s.ToString();
  // vol1's initiator syncs after that: it is told, once.
  s = v1->Sync();
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_TRUE(Contains(s, "volume vol1")) << s.ToString();
  EXPECT_TRUE(Contains(s, "chunk index full")) << s.ToString();
  s = v1->Sync();
  EXPECT_TRUE(s.ok()) << s.ToString();
  // vol2 lost nothing: its next sync has nothing to report.
  s = v2->Sync();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(sys->Close().ok());
}

// A block whose stored mapping cannot be read (its record damaged) reads as
// an I/O error; a write covering the whole block replaces it (the backup
// case: whole blocks written in order), so one damaged record does not stop
// every write of the target. (A partial write needs the old mapping and
// fails naming the block.)
TEST(DedupSystemFaultTest, WholeBlockWriteReplacesAnUnreadableStoredMapping) {
  test::TempDir dir;
  const Options o = Finished(FaultOptions(dir.path()));
  const uint64_t bs = o.block_size;
  const auto data = test::RandomBytes(4 * bs, 301);
  const auto fresh = test::RandomBytes(bs, 302);
  uint32_t vol_id = 0;
  {
    auto sys = OpenOrDie(o, Env::Default());
    Volume* v = Vol(sys.get(), "vol1");
    vol_id = v->id();
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(sys->Sync().ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  {
    // Block 1's record damaged (the bytes a flipped value would leave).
    std::unique_ptr<KvStore> store;
    ASSERT_TRUE(OpenKvStore(o.block_index.backend, o.block_index.path, Env::Default(), &store).ok());
    std::string value;
    ASSERT_TRUE(store->Get(EncodeBlockKey({vol_id, 1}), &value).ok());
    value[value.size() / 2] = static_cast<char>(value[value.size() / 2] ^ 0x5a);
    ASSERT_TRUE(store->Write({{EncodeBlockKey({vol_id, 1}), value, false}}).ok());
  }
  // A long flush delay: a worker takes the write as a run that is not final,
  // whose last unfinished chunk would stay in the buffer, cutting the block in
  // two (the pipeline then chunks it up to the block's end instead).
  Options late = o;
  late.write_buffer_flush_delay_ms = 60 * 1000;
  auto sys = OpenOrDie(late, Env::Default());
  Volume* v = Vol(sys.get(), "vol1");
  std::vector<uint8_t> out(bs);
  Status s = v->Read(bs, bs, out.data());
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  const uint64_t runs_before = sys->stats().runs.load();
  ASSERT_TRUE(v->Write(bs, bs, fresh.data(), false).ok());
  // A whole block wakes the workers today (a stream's stretch); a smaller
  // block or larger chunks would leave it to their own look after 15 s.
  for (int i = 0; i < 2000 && sys->stats().runs.load() == runs_before; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(sys->stats().runs.load(), runs_before) << "no worker took the write before the sync";
  s = v->Sync();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(sys->stats().damaged_mappings_overwritten.load(), 1u);
  ASSERT_TRUE(v->Read(bs, bs, out.data()).ok());
  EXPECT_TRUE(out == fresh);
  // Other blocks stay as they were, and new writes go on.
  std::vector<uint8_t> all(data.size());
  ASSERT_TRUE(v->Read(0, all.size(), all.data()).ok());
  EXPECT_TRUE(std::equal(all.begin(), all.begin() + bs, data.begin()));
  EXPECT_TRUE(std::equal(all.begin() + 2 * bs, all.end(), data.begin() + 2 * bs));
  ASSERT_TRUE(v->Write(8 * bs, bs, fresh.data(), false).ok());
  ASSERT_TRUE(v->Sync().ok());
  // The replacement is persistent.
  ASSERT_TRUE(sys->Close().ok());
  sys = OpenOrDie(o, Env::Default());
  v = Vol(sys.get(), "vol1");
  ASSERT_TRUE(v->Read(bs, bs, out.data()).ok());
  EXPECT_TRUE(out == fresh);
}

struct ContainerFile {
  std::string path;
  ContainerId id;
};

std::vector<ContainerFile> ListContainers(const Options& o) {
  std::vector<ContainerFile> out;
  for (const auto& [path, name] : ContainerDirFiles(o, ".ctr")) {
    out.push_back({path, std::stoull(name.substr(0, 16), nullptr, 16)});
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.id < y.id; });
  return out;
}

// 3. A container damaged on disk.
TEST(DedupSystemFaultTest, CorruptedContainerIsAnErrorNamingItNeverData) {
  test::TempDir dir;
  Options o = FaultOptions(dir.path());
  o.chunk_store.container_size = 256 << 10;  // several containers for 2 MiB
  o = Finished(o);
  const auto data = test::RandomBytes(2 << 20, 301);
  {
    auto sys = OpenOrDie(o, Env::Default());
    Volume* v = Vol(sys.get(), "vol1");
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  auto files = ListContainers(o);
  ASSERT_GE(files.size(), 4u) << "expected the data to spread over several containers";
  const ContainerFile victim = files[files.size() / 2];
  {
    std::string bytes;
    ASSERT_TRUE(ReadWholeFile(victim.path, &bytes).ok());
    ASSERT_GE(bytes.size(), Container::kHeaderSize);
    const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
    const uint8_t fp_size = p[14];
    const uint32_t items = DecodeFixed32(p + 24);
    const uint32_t aliases = DecodeFixed32(p + 28);
    const uint64_t data_size = DecodeFixed64(p + 32);
    const uint64_t data_start =
        Container::kHeaderSize + aliases * 8ULL + items * Container::ItemSize(fp_size);
    ASSERT_GT(data_size, 0u);
    ASSERT_EQ(data_start + data_size, bytes.size()) << "unexpected container layout";
    const uint64_t at = data_start + data_size / 2;
    std::string flipped(1, static_cast<char>(bytes[at] ^ 0x40));
    ASSERT_TRUE(WriteAt(victim.path, at, flipped).ok());
  }

  auto sys = OpenOrDie(o, Env::Default());
  Volume* v = Vol(sys.get(), "vol1");
  const uint64_t piece = o.block_size;
  int corrupt = 0, intact = 0;
  std::vector<uint8_t> got(piece);
  for (uint64_t off = 0; off < data.size(); off += piece) {
    std::fill(got.begin(), got.end(), 0xEE);
    Status s = v->Read(off, piece, got.data());
    if (s.ok()) {
      intact++;
      EXPECT_EQ(std::memcmp(got.data(), data.data() + off, piece), 0)
          << "a read that succeeded returned wrong data at " << off;
    } else {
      corrupt++;
      EXPECT_TRUE(s.IsCorruption()) << "at " << off << ": " << s.ToString();
      EXPECT_TRUE(Contains(s, "container " + std::to_string(victim.id)))
          << "the error should name container " << victim.id << ": " << s.ToString();
    }
  }
  EXPECT_GE(corrupt, 1) << "no read touched the damaged container " << victim.id;
  EXPECT_GE(intact, 1) << "ranges in other containers should still read";
  // Reading again (the damaged container must not have entered a cache).
  std::vector<uint8_t> all(data.size());
  Status s = v->Read(0, all.size(), all.data());
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
}

// 3b. A damaged chunk index page: a lookup that needs it fails with an error
// naming the file and page; stored data stays readable.
TEST(DedupSystemFaultTest, CorruptedChunkIndexPageIsAnErrorNamingThePage) {
  test::TempDir dir;
  Options o = FaultOptions(dir.path());
  o.filter_chain = {"zero-chunk", "chunk-index"};  // every chunk is looked up in the index
  o = Finished(o);
  const auto data = test::RandomBytes(2 << 20, 351);
  {
    auto sys = OpenOrDie(o, Env::Default());
    Volume* v = Vol(sys.get(), "vol1");
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  // Damage the first bucket page that holds entries.
  const std::string table_path = o.chunk_index.table.path;
  std::string table;
  ASSERT_TRUE(ReadWholeFile(table_path, &table).ok());
  const size_t page_size = o.chunk_index.table.page_size;
  uint64_t damaged = 0;
  for (uint64_t page = 1; page * page_size < table.size(); page++) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(table.data()) + page * page_size;
    if (!IsAllZero(p, page_size) && DecodeFixed16(p + 4) > 0) {  // entry count
      damaged = page;
      break;
    }
  }
  ASSERT_NE(damaged, 0u) << "no bucket page holds entries";
  const uint64_t at = damaged * page_size + 16;  // first key byte
  ASSERT_TRUE(WriteAt(table_path, at, std::string(1, static_cast<char>(table[at] ^ 0x01))).ok());

  auto sys = OpenOrDie(o, Env::Default());
  Volume* v1 = Vol(sys.get(), "vol1");
  Volume* v2 = Vol(sys.get(), "vol2");
  ASSERT_TRUE(v2->Write(0, data.size(), data.data(), false).ok());
  Status s = sys->Sync();
  ASSERT_FALSE(s.ok()) << "a lookup through damaged page " << damaged << " must not succeed";
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE(Contains(s, table_path)) << s.ToString();
  EXPECT_TRUE(Contains(s, "page " + std::to_string(damaged))) << s.ToString();
  // Stored data is unaffected; the acknowledged copy is still readable.
  EXPECT_TRUE(ReadsBack(v1, 0, data));
  EXPECT_TRUE(ReadsBack(v2, 0, data));
}

// 4. EIO reading the chunk index table during a lookup.
TEST(DedupSystemFaultTest, ChunkIndexReadErrorSurfacesInSyncAndRecovers) {
  test::TempDir dir;
  Options o = FaultOptions(dir.path());
  // Neither the container cache nor the bloom/block-index filters may answer
  // before the chunk index is consulted.
  o.filter_chain = {"zero-chunk", "chunk-index"};
  o = Finished(o);
  const auto data = test::RandomBytes(2 << 20, 401);
  {
    auto sys = OpenOrDie(o, Env::Default());
    Volume* v = Vol(sys.get(), "vol1");
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(sys->Close().ok());  // writes the chunk index back to its table
  }
  FaultInjectionEnv fenv(Env::Default());
  {
    auto sys = OpenOrDie(o, &fenv);  // the auxiliary index starts empty
    ASSERT_EQ(sys->chunk_index()->stats().aux_entries, 0u);
    Volume* v1 = Vol(sys.get(), "vol1");
    Volume* v2 = Vol(sys.get(), "vol2");
    fenv.AddRule({FaultOp::kRead, "chunk-index", Fault::kEIO});
    ASSERT_TRUE(v2->Write(0, data.size(), data.data(), false).ok());
    Status s = sys->Sync();
    ASSERT_TRUE(s.IsIOError()) << s.ToString();
    EXPECT_TRUE(Contains(s, o.chunk_index.table.path)) << "the error should name the file: " << s.ToString();
    EXPECT_GT(fenv.faults_fired(), 0);
    // Nothing is lost: the stored copy and the acknowledged one both read.
    EXPECT_TRUE(ReadsBack(v1, 0, data));
    EXPECT_TRUE(ReadsBack(v2, 0, data));

    fenv.ClearRules();
    const uint64_t stored_before = sys->chunk_store()->stats().bytes_stored;
    s = SyncWithin(sys.get());
    ASSERT_TRUE(s.ok()) << "sync after the read error is gone: " << s.ToString();
    EXPECT_TRUE(ReadsBack(v1, 0, data));
    EXPECT_TRUE(ReadsBack(v2, 0, data));
    // The retried lookups found the chunks: vol2 deduplicated against vol1.
    EXPECT_LT(sys->chunk_store()->stats().bytes_stored - stored_before, data.size() / 10);
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = OpenOrDie(o, Env::Default());
  EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol1"), 0, data));
  EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol2"), 0, data));
}

// 5. A torn container write (the write stores a prefix, then fails).
TEST(DedupSystemFaultTest, TornContainerWriteFailsSyncAndLeavesNoTempFiles) {
  test::TempDir dir;
  const Options o = Finished(FaultOptions(dir.path()));
  FaultInjectionEnv fenv(Env::Default());
  const auto a = test::RandomBytes(1 << 20, 501);
  const auto b = test::RandomBytes(1 << 20, 502);
  {
    auto sys = OpenOrDie(o, &fenv);
    Volume* v = Vol(sys.get(), "vol1");
    ASSERT_TRUE(v->Write(0, a.size(), a.data(), false).ok());
    ASSERT_TRUE(sys->Sync().ok());
    FaultInjectionEnv::Rule torn{FaultOp::kWrite, ".ctr", Fault::kTorn};
    torn.torn_bytes = 4096;
    fenv.AddRule(torn);
    ASSERT_TRUE(v->Write(4 << 20, b.size(), b.data(), false).ok());
    Status s = sys->Sync();
    ASSERT_FALSE(s.ok()) << "a torn container write must fail the sync";
    EXPECT_TRUE(s.IsIOError()) << s.ToString();
    EXPECT_TRUE(Contains(s, "container")) << s.ToString();
    EXPECT_TRUE(ReadsBack(v, 0, a));
    EXPECT_TRUE(ReadsBack(v, 4 << 20, b));
    fenv.ClearRules();
    s = SyncWithin(sys.get());
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(sys->Close().ok());
  }
  // A crash in the middle of a Put would leave a temp file behind: plant one.
  const std::string stray = JoinPath(JoinPath(o.chunk_store.dir, "07"), "0000000000000107.ctr.tmp");
  {
    std::unique_ptr<File> f;
    ASSERT_TRUE(Env::Default()->OpenFile(stray, OpenMode::kCreate, &f).ok());
    ASSERT_TRUE(f->Write(0, std::string(3000, 'x').data(), 3000).ok());
  }
  ASSERT_FALSE(ContainerDirFiles(o, ".tmp").empty());

  auto sys = OpenOrDie(o, Env::Default());
  Volume* v = Vol(sys.get(), "vol1");
  EXPECT_TRUE(ReadsBack(v, 0, a));
  EXPECT_TRUE(ReadsBack(v, 4 << 20, b));
  auto tmps = ContainerDirFiles(o, ".tmp");
  EXPECT_TRUE(tmps.empty()) << "left over: " << tmps.begin()->first;
}

// A GC round whose merge cannot write its container (disk full) or its alias
// record (I/O error) fails with the reason and changes nothing that reads
// depend on; once the disk is fine, the next round merges.
TEST(DedupSystemFaultTest, GcMergeFailuresChangeNothingAndTheNextRoundMerges) {
  test::TempDir dir;
  const Options o = GcFaultOptions(dir.path());
  FaultInjectionEnv fenv(Env::Default());
  auto data = test::RandomBytes(8 << 20, 77);
  const uint64_t bs = o.block_size;
  {
    auto sys = OpenOrDie(o, &fenv);
    Volume* v = Vol(sys.get(), "vol1");
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(sys->Sync().ok());
    // Unmap 5 of every 8 blocks: every container is less than half live.
    for (uint64_t off = 0; off < data.size(); off += 8 * bs) {
      ASSERT_TRUE(v->Unmap(off, 5 * bs).ok());
      std::fill(data.begin() + off, data.begin() + off + 5 * bs, 0);
    }
    ASSERT_TRUE(sys->Sync().ok());

    for (const FaultInjectionEnv::Rule& rule :
         {FaultInjectionEnv::Rule{FaultOp::kWrite, ".ctr", Fault::kENOSPC},
          FaultInjectionEnv::Rule{FaultOp::kWrite, "container-aliases", Fault::kEIO}}) {
      const int fired = fenv.faults_fired();
      fenv.AddRule(rule);
      Status s = sys->RunGc();
      EXPECT_FALSE(s.ok()) << "rule on " << rule.path_substring;
      EXPECT_GT(fenv.faults_fired(), fired) << rule.path_substring;
      EXPECT_EQ(sys->gc_stats().containers_written, 0u);
      EXPECT_FALSE(sys->gc_stats().last_error.empty());
      fenv.ClearRules();
      EXPECT_TRUE(ReadsBack(v, 0, data)) << "after a failed merge (" << rule.path_substring << ")";
    }
    ASSERT_TRUE(sys->RunGc().ok());
    EXPECT_GT(sys->gc_stats().containers_written, 0u);
    EXPECT_TRUE(sys->gc_stats().last_error.empty());
    EXPECT_TRUE(ReadsBack(v, 0, data));
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = OpenOrDie(o, Env::Default());
  EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol1"), 0, data));
}

// Disk full while a round writes its dead marks: the round still gives the
// space back (merges and deletions read the marks in memory) and reports the
// error naming the file; the next round writes the marks.
TEST(DedupSystemFaultTest, GcMarksThatCannotBeWrittenStillFreeSpace) {
  test::TempDir dir;
  const Options o = GcFaultOptions(dir.path());
  FaultInjectionEnv fenv(Env::Default());
  auto data = test::RandomBytes(8 << 20, 78);
  const uint64_t bs = o.block_size;
  uint64_t marks = 0;
  {
    auto sys = OpenOrDie(o, &fenv);
    Volume* v = Vol(sys.get(), "vol1");
    // The first 2 MiB are written and synced on their own, so their chunks
    // fill containers of their own whatever the workers' timing: unmapped,
    // those containers are whole garbage (written in one request, the first
    // 2 MiB could share containers with later data under load, and no
    // container would be deleted).
    ASSERT_TRUE(v->Write(0, 2 << 20, data.data(), false).ok());
    ASSERT_TRUE(sys->Sync().ok());
    ASSERT_TRUE(v->Write(2 << 20, data.size() - (2 << 20), data.data() + (2 << 20), false).ok());
    ASSERT_TRUE(sys->Sync().ok());
    // The first 2 MiB go (whole containers), then one block in four (kept).
    ASSERT_TRUE(v->Unmap(0, 2 << 20).ok());
    std::fill(data.begin(), data.begin() + (2 << 20), 0);
    for (uint64_t off = 2 << 20; off < data.size(); off += 4 * bs) {
      ASSERT_TRUE(v->Unmap(off, bs).ok());
      std::fill(data.begin() + off, data.begin() + off + bs, 0);
    }
    ASSERT_TRUE(sys->Sync().ok());
    fenv.AddRule({FaultOp::kWrite, "dead-chunks", Fault::kENOSPC});
    Status s = sys->RunGc();
    EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
    EXPECT_NE(s.ToString().find("dead-chunks"), std::string::npos) << s.ToString();
    EXPECT_GT(sys->gc_stats().containers_deleted, 0u);
    EXPECT_GT(sys->gc_stats().bytes_reclaimed, 0u);
    marks = sys->chunk_store()->stats().dead_chunks_marked;
    EXPECT_GT(marks, 0u);
    EXPECT_EQ(sys->chunk_store()->stats().dead_marks_unpersisted, marks);
    EXPECT_TRUE(ReadsBack(v, 0, data));
    fenv.ClearRules();
    s = sys->RunGc();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(sys->chunk_store()->stats().dead_marks_unpersisted, 0u);
    EXPECT_TRUE(ReadsBack(v, 0, data));
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = OpenOrDie(o, Env::Default());
  EXPECT_EQ(sys->chunk_store()->stats().dead_marks_loaded, marks);
  EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol1"), 0, data));
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_EQ(sys->gc_stats().containers_looked_up, 0u);
  EXPECT_TRUE(ReadsBack(Vol(sys.get(), "vol1"), 0, data));
}

}  // namespace
}  // namespace dedupv1

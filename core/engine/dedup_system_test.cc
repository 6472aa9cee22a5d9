#include "core/engine/dedup_system.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "core/base/crc_text.h"
#include "core/engine/system_testutil.h"
#include "core/base/testutil.h"
#include "index/block_index.h"
#include "index/block_mapping_testutil.h"

namespace dedupv1 {
namespace {

Options SmallOptions(const std::string& dir) {
  Options o = test::SmallSystemOptions(dir);
  o.volumes = {{"vol1", 64 << 20}, {"vol2", 512 << 20}, {"vol3", 512 << 20}};
  EXPECT_TRUE(o.Finish().ok());
  return o;
}

TEST(DedupSystemTest, UnwrittenDataReadsAsZeros) {
  test::TempDir dir;
  auto sys = test::OpenSystemOrDie(SmallOptions(dir.path()));
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  std::vector<uint8_t> out(300000, 0xAB);
  ASSERT_TRUE(v->Read(12345, out.size(), out.data()).ok());
  EXPECT_TRUE(IsAllZero(out.data(), out.size()));
}

TEST(DedupSystemTest, UnknownVolumeAndOutOfRangeAreErrors) {
  test::TempDir dir;
  auto sys = test::OpenSystemOrDie(SmallOptions(dir.path()));
  Volume* v;
  Status s = sys->GetVolume("nope", &v);
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_NE(s.message().find("vol1"), std::string::npos) << s.ToString();
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  std::vector<uint8_t> buf(4096);
  EXPECT_TRUE(v->Read(v->size() - 100, 4096, buf.data()).IsInvalidArgument());
  EXPECT_TRUE(v->Write(v->size(), 1, buf.data(), false).IsInvalidArgument());
  EXPECT_TRUE(v->Write(UINT64_MAX - 10, 4096, buf.data(), false).IsInvalidArgument());
  EXPECT_TRUE(v->Unmap(v->size() - 1, 2).IsInvalidArgument());
  EXPECT_TRUE(v->Read(v->size(), 0, buf.data()).ok());
}

TEST(DedupSystemTest, WriteSyncReopenRead) {
  test::TempDir dir;
  Options o = SmallOptions(dir.path());
  auto data = test::RandomBytes(3 << 20, 7);
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    ASSERT_TRUE(v->Write(1000, data.size(), data.data(), false).ok());
    std::vector<uint8_t> out(data.size());
    ASSERT_TRUE(v->Read(1000, out.size(), out.data()).ok());  // from the buffer
    EXPECT_EQ(out, data);
    ASSERT_TRUE(v->Sync().ok());
    EXPECT_EQ(v->buffer().dirty_bytes(), 0u);
    ASSERT_TRUE(v->Read(1000, out.size(), out.data()).ok());  // from containers
    EXPECT_EQ(out, data);
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  std::vector<uint8_t> out(data.size() + 2000);
  ASSERT_TRUE(v->Read(0, out.size(), out.data()).ok());
  EXPECT_TRUE(IsAllZero(out.data(), 1000));
  EXPECT_EQ(std::memcmp(out.data() + 1000, data.data(), data.size()), 0);
  EXPECT_TRUE(IsAllZero(out.data() + 1000 + data.size(), 1000));
}

// The bloom filter saved at a clean stop is a cache: a damaged one is
// rebuilt from the chunk index, and the open says so, naming the file
// (issue 19: damage on disk is never passed over in silence). The rebuilt
// filter knows every stored chunk, so the same data written again is not
// stored again.
// A stream's write (a stretch several chunks long) wakes the workers: with a
// flush delay of a minute they would otherwise look only every 15 s.
TEST(DedupSystemTest, AStreamsWriteWakesTheWorkers) {
  test::TempDir dir;
  Options o = SmallOptions(dir.path());
  o.write_buffer_flush_delay_ms = 60 * 1000;
  auto sys = test::OpenSystemOrDie(o);
  ASSERT_NE(sys, nullptr);
  Volume* v = test::Vol(sys.get(), "vol1");
  ASSERT_NE(v, nullptr);
  auto data = test::RandomBytes(1 << 20, 8);
  ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
  // All but the unfinished last chunk is processed.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (v->buffer().dirty_bytes() >= data.size() / 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_LT(v->buffer().dirty_bytes(), data.size() / 2);
}

TEST(DedupSystemTest, DamagedBloomFileIsNamedAndRebuilt) {
  test::TempDir dir;
  Options o = SmallOptions(dir.path());
  auto data = test::RandomBytes(1 << 20, 8);
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  const std::string bloom = JoinPath(o.data_dir, "bloom");
  std::string bytes;
  ASSERT_TRUE(ReadFileToString(Env::Default(), bloom, &bytes).ok());
  ASSERT_GT(bytes.size(), 1000u);
  bytes[bytes.size() / 2] ^= 0x10;  // a bit of the bit array
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), bloom, bytes).ok());

  ::testing::internal::CaptureStderr();
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::Open(o, Env::Default(), &sys);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(err.find(bloom + ": bit array checksum mismatch; rebuilding the bloom filter"), std::string::npos)
      << err;
  uint64_t used = 0, used_after = 0;
  ASSERT_TRUE(sys->chunk_store()->UsedBytes(&used).ok());
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol2", &v).ok());
  ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(v->Sync().ok());
  ASSERT_TRUE(sys->chunk_store()->UsedBytes(&used_after).ok());
  EXPECT_LT(used_after - used, data.size() / 10);
}

TEST(DedupSystemTest, RefusesConfigChangesThatWouldMisreadData) {
  test::TempDir dir;
  Options o = SmallOptions(dir.path());
  { auto sys = test::OpenSystemOrDie(o); }
  Options changed = o;
  changed.block_size = 64 << 10;
  ASSERT_TRUE(changed.Finish().ok());
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::Open(changed, Env::Default(), &sys);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("block-size"), std::string::npos) << s.ToString();
  Options shrunk = o;
  shrunk.volumes[0].size = 32 << 20;
  s = DedupSystem::Open(shrunk, Env::Default(), &sys);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("shrinking"), std::string::npos) << s.ToString();
}

// Each volume keeps its id and uid when the config's volume lines are
// reordered or one is removed, and the data directory keeps its instance id.
TEST(DedupSystemTest, VolumesKeepIdsAndUidsAndTheDirectoryItsInstanceId) {
  test::TempDir dir;
  Options o = SmallOptions(dir.path());
  std::map<std::string, std::pair<uint32_t, Id128>> first;
  Id128 instance{};
  {
    auto sys = test::OpenSystemOrDie(o);
    for (Volume* v : sys->volumes()) first[v->name()] = {v->id(), v->uid()};
    instance = sys->instance_id();
  }
  ASSERT_EQ(first.size(), 3u);
  EXPECT_FALSE(IsZero(instance));
  EXPECT_NE(first["vol1"].second, first["vol2"].second);
  Options reordered = o;
  reordered.volumes = {o.volumes[2], o.volumes[0]};  // vol3, vol1; vol2 removed
  ASSERT_TRUE(reordered.Finish().ok());
  auto sys = test::OpenSystemOrDie(reordered);
  EXPECT_EQ(sys->instance_id(), instance);
  ASSERT_EQ(sys->volumes().size(), 2u);
  for (Volume* v : sys->volumes()) {
    EXPECT_EQ(v->id(), first[v->name()].first) << v->name();
    EXPECT_EQ(v->uid(), first[v->name()].second) << v->name();
  }
  test::TempDir other;
  auto sys2 = test::OpenSystemOrDie(SmallOptions(other.path()));
  EXPECT_NE(sys2->instance_id(), instance);
}

// A format 1 directory (before persisted dead marks) opens and is marked
// format 2, so older builds refuse it from then on; an unknown newer format is
// refused with the formats this build reads.
// Rewrites every record of the closed block index store in mapping format 1
// (as builds before data directory format 3 wrote them); returns how many.
size_t RewriteBlockIndexInFormatOne(const Options& o) {
  std::unique_ptr<KvStore> store;
  EXPECT_TRUE(OpenKvStore(o.block_index.backend, o.block_index.path, Env::Default(), &store).ok());
  std::vector<KvStore::WriteOp> ops;
  EXPECT_TRUE(store
                  ->Scan("", "",
                         [&](const std::string& key, const std::string& value) {
                           BlockId id;
                           BlockMapping m;
                           EXPECT_TRUE(DecodeBlockKey(key, &id));
                           EXPECT_TRUE(BlockMapping::Parse(value, id, &m).ok());
                           ops.push_back({key, test::SerializeFormatOne(m), false});
                           return true;
                         })
                  .ok());
  EXPECT_TRUE(store->Write(ops).ok());
  return ops.size();
}

// Formats of every record of the closed block index store.
std::map<uint8_t, size_t> BlockIndexFormats(const Options& o) {
  std::unique_ptr<KvStore> store;
  EXPECT_TRUE(OpenKvStore(o.block_index.backend, o.block_index.path, Env::Default(), &store).ok());
  std::map<uint8_t, size_t> formats;
  EXPECT_TRUE(store
                  ->Scan("", "",
                         [&](const std::string&, const std::string& value) {
                           BlockMapping::RecordHeader h;
                           EXPECT_TRUE(BlockMapping::ParseHeader(value, &h).ok());
                           formats[h.format]++;
                           return true;
                         })
                  .ok());
  return formats;
}

TEST(DedupSystemTest, OlderFormatIsUpgradedNewerOneRefused) {
  test::TempDir dir;
  Options o = SmallOptions(dir.path());
  std::vector<uint8_t> data = test::RandomBytes(256 << 10, 4);
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(v->Sync().ok());
  }
  auto ExpectData = [&](DedupSystem* sys) {
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    std::vector<uint8_t> out(data.size());
    ASSERT_TRUE(v->Read(0, out.size(), out.data()).ok());
    EXPECT_EQ(out, data);
  };
  const std::string path = JoinPath(dir.path(), "system");
  std::string text;
  ASSERT_TRUE(ReadFileToString(Env::Default(), path, &text).ok());
  ASSERT_NE(text.find("format = 4\n"), std::string::npos) << text;
  // The file as a build of format |f| wrote it: older ones without the
  // checksum line (format 3 brought it), others with one that fits.
  const std::string body = text.substr(0, text.rfind("crc "));
  auto with_format = [&](const std::string& f) {
    std::string t = body;
    t.replace(t.find("format = 4"), 10, "format = " + f);
    return f == "1" || f == "2" ? t : AppendCrcLine(t);
  };
  // Formats 1 and 2 wrote block mappings without their block id: the
  // directory is upgraded at open, the system file first, then the records.
  for (const std::string older : {"1", "2"}) {
    ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, with_format(older)).ok());
    const size_t records = RewriteBlockIndexInFormatOne(o);
    ASSERT_GE(records, 2u);
    ASSERT_EQ(BlockIndexFormats(o), (std::map<uint8_t, size_t>{{1, records}}));
    {
      auto sys = test::OpenSystemOrDie(o);
      EXPECT_EQ(sys->block_index()->stats().upgraded_at_open, records);
      ExpectData(sys.get());
    }
    std::string upgraded;
    ASSERT_TRUE(ReadFileToString(Env::Default(), path, &upgraded).ok());
    EXPECT_EQ(upgraded, text);
    EXPECT_EQ(BlockIndexFormats(o), (std::map<uint8_t, size_t>{{2, records}}));
  }
  // Format 3 differs only in the containers it wrote (format 1, read as they
  // are): the system file is rewritten, nothing else.
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, with_format("3")).ok());
  {
    auto sys = test::OpenSystemOrDie(o);
    ExpectData(sys.get());
  }
  std::string upgraded;
  ASSERT_TRUE(ReadFileToString(Env::Default(), path, &upgraded).ok());
  EXPECT_EQ(upgraded, text);
  for (const std::string f : {"5", "0", "x"}) {
    ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, with_format(f)).ok());
    std::unique_ptr<DedupSystem> sys;
    Status s = DedupSystem::Open(o, Env::Default(), &sys);
    EXPECT_TRUE(s.IsInvalidArgument()) << f << ": " << s.ToString();
    EXPECT_NE(s.message().find("has format " + f), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("reads formats 1 to 4"), std::string::npos) << s.ToString();
  }
  // A newer build may say things this one does not know after its format
  // line (another key, a fingerprint name): the directory is refused as a
  // newer one, not as damaged (restoring a healthy directory would be wrong).
  const std::string newer =
      AppendCrcLine("format = 5\nblock-size = 131072\nfingerprint = blake3\nchunk-layout = v2\n");
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, newer).ok());
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::Open(o, Env::Default(), &sys);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("has format 5"), std::string::npos) << s.ToString();
}

TEST(DedupSystemTest, SecondProcessCannotOpenTheSameDataDir) {
  test::TempDir dir;
  Options o = SmallOptions(dir.path());
  auto sys = test::OpenSystemOrDie(o);
  std::unique_ptr<DedupSystem> other;
  EXPECT_TRUE(DedupSystem::Open(o, Env::Default(), &other).IsBusy());
}

TEST(DedupSystemTest, UnmapReadsZerosAndThinStatus) {
  test::TempDir dir;
  auto sys = test::OpenSystemOrDie(SmallOptions(dir.path()));
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  auto data = test::RandomBytes(1 << 20, 9);
  ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(v->Sync().ok());
  ASSERT_TRUE(v->Unmap(128 << 10, 256 << 10).ok());
  std::vector<uint8_t> out(data.size());
  ASSERT_TRUE(v->Read(0, out.size(), out.data()).ok());
  EXPECT_EQ(std::memcmp(out.data(), data.data(), 128 << 10), 0);
  EXPECT_TRUE(IsAllZero(out.data() + (128 << 10), 256 << 10));
  EXPECT_EQ(std::memcmp(out.data() + (384 << 10), data.data() + (384 << 10), data.size() - (384 << 10)), 0);
  bool mapped;
  uint64_t run;
  ASSERT_TRUE(v->IsMapped(0, 1 << 20, &mapped, &run).ok());
  EXPECT_TRUE(mapped);
  EXPECT_EQ(run, 128u << 10);
  ASSERT_TRUE(v->IsMapped(128 << 10, 1 << 20, &mapped, &run).ok());
  EXPECT_FALSE(mapped);
  EXPECT_EQ(run, 256u << 10);
  ASSERT_TRUE(v->IsMapped(4 << 20, 1 << 20, &mapped, &run).ok());
  EXPECT_FALSE(mapped);
}

// Random reads, writes and unmaps (unaligned, sub-block, cross-block) from
// several threads on disjoint ranges, checked against a plain in-memory
// model; then close, reopen and compare every byte.
TEST(DedupSystemTest, DifferentialAgainstInMemoryModel) {
  const uint64_t total_ops = test::EnvKnob("DEDUPV1_DIFF_OPS", 100000);
  const int threads = 4;
  test::TempDir dir;
  Options o = SmallOptions(dir.path());
  const uint64_t vol_size = 64 << 20;
  std::vector<uint8_t> model(vol_size, 0);
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    std::atomic<int> failures{0};
    auto worker = [&](int t) {
      const uint64_t region = vol_size / threads;
      const uint64_t base = region * t;
      std::mt19937_64 rng(1000 + t);
      // A small pool of patterns so data repeats and dedups.
      std::vector<std::vector<uint8_t>> pool;
      for (int i = 0; i < 8; i++) pool.push_back(test::RandomBytes(300 << 10, 77 + i));
      std::vector<uint8_t> buf(300 << 10);
      for (uint64_t op = 0; op < total_ops / threads && failures.load() < 5; op++) {
        uint64_t kind = rng() % 100;
        uint64_t len = (rng() % 4 == 0) ? 1 + rng() % (256 << 10) : 1 + rng() % 9000;
        uint64_t off = base + rng() % (region - len);
        if (kind < 45) {
          const auto& src = pool[rng() % pool.size()];
          const uint8_t* p = src.data() + rng() % (src.size() - len);
          if (rng() % 8 == 0) {
            std::memset(buf.data(), 0, len);
            p = buf.data();
          }
          Status s = v->Write(off, len, p, rng() % 500 == 0);
          if (!s.ok()) { ADD_FAILURE() << s.ToString(); failures++; continue; }
          std::memcpy(model.data() + off, p, len);
        } else if (kind < 90) {
          Status s = v->Read(off, len, buf.data());
          if (!s.ok()) { ADD_FAILURE() << s.ToString(); failures++; continue; }
          if (std::memcmp(buf.data(), model.data() + off, len) != 0) {
            ADD_FAILURE() << "thread " << t << " op " << op << ": read of " << len << " at " << off
                          << " differs from the model";
            failures++;
          }
        } else if (kind < 99 || rng() % 4 != 0) {
          Status s = v->Unmap(off, len);
          if (!s.ok()) { ADD_FAILURE() << s.ToString(); failures++; continue; }
          std::memset(model.data() + off, 0, len);
        } else {
          Status s = v->Sync();
          if (!s.ok()) { ADD_FAILURE() << s.ToString(); failures++; }
        }
      }
    };
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) ts.emplace_back(worker, t);
    for (auto& t : ts) t.join();
    ASSERT_EQ(failures.load(), 0);
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  std::vector<uint8_t> out(4 << 20);
  for (uint64_t off = 0; off < vol_size; off += out.size()) {
    ASSERT_TRUE(v->Read(off, out.size(), out.data()).ok());
    ASSERT_EQ(std::memcmp(out.data(), model.data() + off, out.size()), 0) << "after reopen at " << off;
  }
}

uint64_t StoredBytes(DedupSystem* sys) { return sys->chunk_store()->stats().bytes_stored; }

// Writes |data| to |v| in 1 MiB requests, as a backup client would.
void WriteStream(Volume* v, const std::vector<uint8_t>& data) {
  for (uint64_t off = 0; off < data.size(); off += 1 << 20) {
    uint64_t len = std::min<uint64_t>(1 << 20, data.size() - off);
    ASSERT_TRUE(v->Write(off, len, data.data() + off, false).ok());
  }
  ASSERT_TRUE(v->Sync().ok());
}

TEST(DedupSystemTest, SameStreamInSecondVolumeStoresAlmostNothing) {
  test::TempDir dir;
  auto sys = test::OpenSystemOrDie(SmallOptions(dir.path()));
  auto data = test::RandomBytes(256 << 20, 11);
  Volume *v2, *v3;
  ASSERT_TRUE(sys->GetVolume("vol2", &v2).ok());
  ASSERT_TRUE(sys->GetVolume("vol3", &v3).ok());
  WriteStream(v2, data);
  uint64_t first = StoredBytes(sys.get());
  EXPECT_GE(first, data.size() * 99 / 100);
  WriteStream(v3, data);
  uint64_t second = StoredBytes(sys.get()) - first;
  EXPECT_LT(second, first * 2 / 100) << "second volume stored " << second << " bytes";
  std::vector<uint8_t> out(1 << 20);
  ASSERT_TRUE(v3->Read(100 << 20, out.size(), out.data()).ok());
  EXPECT_EQ(std::memcmp(out.data(), data.data() + (100 << 20), out.size()), 0);
}

TEST(DedupSystemTest, OneInsertedByteStoresLittleMore) {
  test::TempDir dir;
  auto sys = test::OpenSystemOrDie(SmallOptions(dir.path()));
  auto data = test::RandomBytes(256 << 20, 12);
  Volume *v2, *v3;
  ASSERT_TRUE(sys->GetVolume("vol2", &v2).ok());
  ASSERT_TRUE(sys->GetVolume("vol3", &v3).ok());
  WriteStream(v2, data);
  uint64_t first = StoredBytes(sys.get());
  data.insert(data.begin() + 1000, 0x5A);
  data.pop_back();
  WriteStream(v3, data);
  uint64_t second = StoredBytes(sys.get()) - first;
  EXPECT_LT(second, first * 5 / 100) << "shifted stream stored " << second << " bytes";
}

TEST(DedupSystemTest, ZeroWritesStoreNothing) {
  test::TempDir dir;
  auto sys = test::OpenSystemOrDie(SmallOptions(dir.path()));
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol2", &v).ok());
  std::vector<uint8_t> zeros(64 << 20, 0);
  WriteStream(v, zeros);
  EXPECT_EQ(StoredBytes(sys.get()), 0u);
  EXPECT_GT(sys->stats().chunks_zero.load(), 0u);
  std::vector<uint8_t> out(1 << 20, 1);
  ASSERT_TRUE(v->Read(5 << 20, out.size(), out.data()).ok());
  EXPECT_TRUE(IsAllZero(out.data(), out.size()));
}

}  // namespace
}  // namespace dedupv1

namespace dedupv1 {
namespace {

// Without the zero-chunk filter, zero data is ordinary data: stored once,
// read back as zeros.
TEST(DedupSystemTest, ZeroDataWithoutZeroChunkFilter) {
  test::TempDir dir;
  Options o = SmallOptions(dir.path());
  o.filter_chain = {"block-index", "chunk-index"};
  ASSERT_TRUE(o.Finish().ok());
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol2", &v).ok());
  std::vector<uint8_t> zeros(8 << 20, 0);
  WriteStream(v, zeros);
  EXPECT_EQ(sys->stats().chunks_zero.load(), 0u);
  EXPECT_GT(StoredBytes(sys.get()), 0u);
  EXPECT_LT(StoredBytes(sys.get()), 64u << 10);  // one max-size chunk, deduplicated
  std::vector<uint8_t> out(1 << 20, 1);
  ASSERT_TRUE(v->Read(3 << 20, out.size(), out.data()).ok());
  EXPECT_TRUE(IsAllZero(out.data(), out.size()));
}

}  // namespace
}  // namespace dedupv1

namespace dedupv1 {
namespace {

// Writers storing the same new data at the same time (into different
// volumes): each round, three threads write the same new 1 MiB piece and
// sync together, so workers chunk identical runs side by side; the data must
// be stored once and read back everywhere. (The fingerprint lock that makes
// decide + store + update atomic is what guarantees "once"; the workers drift
// apart by more than the microseconds a chunk takes, so this test does not
// catch that lock missing: it checks dedup and correctness under concurrency.)
TEST(DedupSystemTest, ConcurrentWritersOfTheSameNewDataStoreItOnce) {
  test::TempDir dir;
  Options o = SmallOptions(dir.path());
  o.dedup_threads = 3;
  o.write_buffer_flush_delay_ms = 10000;  // runs are processed when the syncs force them
  ASSERT_TRUE(o.Finish().ok());
  auto sys = test::OpenSystemOrDie(o);
  std::vector<Volume*> vols(3);
  ASSERT_TRUE(sys->GetVolume("vol1", &vols[0]).ok());
  ASSERT_TRUE(sys->GetVolume("vol2", &vols[1]).ok());
  ASSERT_TRUE(sys->GetVolume("vol3", &vols[2]).ok());
  const int rounds = 40;
  const uint64_t piece = 1 << 20;
  std::vector<std::vector<uint8_t>> data;
  for (int r = 0; r < rounds; r++) data.push_back(test::RandomBytes(piece, 1000 + r));
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0, generation = 0;
  auto barrier = [&] {
    std::unique_lock<std::mutex> l(mu);
    int g = generation;
    if (++arrived == 3) {
      arrived = 0;
      generation++;
      cv.notify_all();
    } else {
      cv.wait(l, [&] { return generation != g; });
    }
  };
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; t++) {
    writers.emplace_back([&, t] {
      for (int r = 0; r < rounds; r++) {
        ASSERT_TRUE(vols[t]->Write(r * piece, piece, data[r].data(), false).ok());
        barrier();
        ASSERT_TRUE(vols[t]->Sync().ok());
      }
    });
  }
  for (auto& w : writers) w.join();
  uint64_t stored = StoredBytes(sys.get());
  EXPECT_LT(stored, rounds * piece * 102 / 100) << "the same new chunks were stored more than once";
  std::vector<uint8_t> out(piece);
  for (int t = 0; t < 3; t++) {
    for (int r = 0; r < rounds; r += 7) {
      ASSERT_TRUE(vols[t]->Read(r * piece, piece, out.data()).ok());
      ASSERT_EQ(out, data[r]) << "volume " << t << " round " << r;
    }
  }
}

// The whole engine on the LevelDB block index backend.
// Memory stays bounded during a long write: each auxiliary index holds at
// most its hard limit plus entries that had to stay in memory because their
// container was not committed yet (bounded by the containers open or
// committing), and write-back really ran during the write.
TEST(DedupSystemTest, AuxiliaryIndexesObeyTheirLimitsDuringALongWrite) {
  test::TempDir dir;
  Options o = SmallOptions(dir.path());
  o.chunk_index.aux_soft_limit = 1000;
  o.chunk_index.aux_hard_limit = 2000;
  o.block_index.aux_soft_limit = 32;
  o.block_index.aux_hard_limit = 64;
  o.chunk_store.container_size = 256 << 10;  // small containers keep the uncommitted bound tight
  o.volumes = {{"vol1", 256 << 20}};
  ASSERT_TRUE(o.Finish().ok());
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());

  std::atomic<bool> done{false};
  uint64_t max_chunk_aux = 0, max_block_aux = 0;
  std::thread sampler([&] {
    while (!done.load()) {
      max_chunk_aux = std::max(max_chunk_aux, sys->chunk_index()->stats().aux_entries);
      max_block_aux = std::max(max_block_aux, sys->block_index()->stats().aux_mappings);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  constexpr uint64_t kRequest = 1 << 20;
  constexpr uint64_t kTotal = 192 << 20;  // ~19K new chunks, 1536 blocks
  for (uint64_t off = 0; off < kTotal; off += kRequest) {
    std::vector<uint8_t> data = test::RandomBytes(kRequest, 1000 + off / kRequest);
    ASSERT_TRUE(v->Write(off, kRequest, data.data(), false).ok());
  }
  ASSERT_TRUE(v->Sync().ok());
  done = true;
  sampler.join();

  // Containers that can be uncommitted at once: open ones and those queued
  // for or in commit (StoreChunk waits beyond that), plus one being handed over.
  const uint64_t containers =
      static_cast<uint64_t>(o.chunk_store.open_containers + 2 * o.chunk_store.writer_threads + 1);
  const uint64_t uncommitted_chunks = containers * (o.chunk_store.container_size / o.chunking.min_size);
  const uint64_t uncommitted_blocks = containers * (o.chunk_store.container_size / o.block_size + 2);
  // Concurrent inserts may each pass the limit check once before waiting.
  const uint64_t slack = static_cast<uint64_t>(o.dedup_threads) + 1;
  EXPECT_LE(max_chunk_aux, o.chunk_index.aux_hard_limit + uncommitted_chunks + slack);
  EXPECT_LE(max_block_aux, o.block_index.aux_hard_limit + uncommitted_blocks + slack);
  EXPECT_LT(o.chunk_index.aux_hard_limit + uncommitted_chunks, 19000u / 2);  // the bound means something
  // Write-back ran during the write (the final Sync does not write the
  // indexes back; only passing the soft limits does).
  EXPECT_GT(sys->chunk_index()->stats().written_back, 0u);
  EXPECT_GT(sys->block_index()->stats().written_back, 0u);
  // And the data is all there.
  for (uint64_t off = 0; off < kTotal; off += 37 * kRequest) {
    std::vector<uint8_t> want = test::RandomBytes(kRequest, 1000 + off / kRequest);
    std::vector<uint8_t> got(kRequest);
    ASSERT_TRUE(v->Read(off, kRequest, got.data()).ok());
    ASSERT_EQ(got, want) << "at " << off;
  }
}

TEST(DedupSystemTest, LevelDbBlockIndexBackend) {
  test::TempDir dir;
  Options o = SmallOptions(dir.path());
  o.block_index.backend = KvBackend::kLevelDb;
  o.block_index_path_set_ = false;
  ASSERT_TRUE(o.Finish().ok());
  EXPECT_NE(o.block_index.path.find("leveldb"), std::string::npos);
  auto data = test::RandomBytes(6 << 20, 22);
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    ASSERT_TRUE(v->Write(777, data.size(), data.data(), false).ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = test::OpenSystemOrDie(o);
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
  std::vector<uint8_t> out(data.size());
  ASSERT_TRUE(v->Read(777, out.size(), out.data()).ok());
  EXPECT_EQ(out, data);
}

}  // namespace
}  // namespace dedupv1

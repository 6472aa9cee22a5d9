#include "chunkstore/chunk_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "chunkstore/container_summary_file.h"
#include "chunkstore/container_testutil.h"
#include "chunkstore/local_container_store.h"
#include "core/base/fault_injection_env.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

struct Chunk {
  Fingerprint fp;
  std::string data;
  ContainerId id = kNoContainer;
};

// Chunk with |seed|: a random part and, if |compressible|, a long run of one
// byte so zlib/bzip2 shrink it.
Chunk MakeChunk(uint64_t seed, size_t size, bool compressible = false) {
  Chunk c;
  std::vector<uint8_t> r = test::RandomBytes(size, seed);
  c.data.assign(r.begin(), r.end());
  if (compressible) std::fill(c.data.begin() + size / 8, c.data.end(), 'z');
  ComputeFingerprint(FingerprintType::kSha1, reinterpret_cast<const uint8_t*>(c.data.data()),
                     c.data.size(), &c.fp);
  return c;
}

Status Store(ChunkStore* cs, Chunk* c, uint64_t stream = 0) {
  return cs->StoreChunk(c->fp, reinterpret_cast<const uint8_t*>(c->data.data()), c->data.size(),
                        stream, &c->id);
}

void ExpectReadable(ChunkStore* cs, const std::vector<Chunk>& chunks) {
  for (const Chunk& c : chunks) {
    std::string data;
    Status s = cs->ReadChunk(c.id, c.fp, &data);
    ASSERT_TRUE(s.ok()) << "container " << c.id << ": " << s.ToString();
    ASSERT_EQ(data, c.data) << "container " << c.id;
  }
}

ChunkStoreOptions SmallOptions(const std::string& dir) {
  ChunkStoreOptions o;
  o.dir = dir;
  o.container_size = 32 << 10;
  o.open_containers = 4;
  o.writer_threads = 2;
  o.commit_timeout_ms = 600000;  // no timer commits unless a test wants them
  o.read_cache_containers = 8;
  return o;
}

// Records every listener call.
struct ListenerLog {
  std::mutex mu;
  std::map<ContainerId, int> calls;
  std::map<Fingerprint, ContainerId> fp_to_id;
  std::vector<ContainerId> not_committed_when_called;
  void Attach(ChunkStore* cs) {
    cs->SetCommitListener([this, cs](ContainerId id, const std::vector<Fingerprint>& fps) {
      bool committed = cs->IsCommitted(id);
      std::lock_guard<std::mutex> l(mu);
      if (!committed) not_committed_when_called.push_back(id);
      calls[id]++;
      for (const Fingerprint& fp : fps) fp_to_id[fp] = id;
    });
  }
};

TEST(ChunkStoreTest, ConcurrentStoreReadBeforeAndAfterCommit) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  ListenerLog log;
  log.Attach(cs.get());

  constexpr int kThreads = 4;
  constexpr int kPerThread = 120;
  std::vector<std::vector<Chunk>> per_thread(kThreads);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; i++) {
        Chunk c = MakeChunk(t * 100000 + i, 1024 + (i * 331) % 4096);
        if (!Store(cs.get(), &c, t).ok()) errors++;
        // Read back at once: usually from an open container.
        std::string data;
        if (!cs->ReadChunk(c.id, c.fp, &data).ok() || data != c.data) errors++;
        per_thread[t].push_back(std::move(c));
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(errors.load(), 0);

  std::vector<Chunk> all;
  for (auto& v : per_thread) all.insert(all.end(), v.begin(), v.end());
  // Before Flush: a mix of open, in-flight and committed containers.
  ExpectReadable(cs.get(), all);

  // One stream's chunks stay together: ids used by stream 0 and 1 are disjoint.
  std::set<ContainerId> ids0, ids1;
  for (const Chunk& c : per_thread[0]) ids0.insert(c.id);
  for (const Chunk& c : per_thread[1]) ids1.insert(c.id);
  for (ContainerId id : ids0) EXPECT_EQ(ids1.count(id), 0u);

  ASSERT_TRUE(cs->Flush().ok());
  std::set<ContainerId> ids;
  for (const Chunk& c : all) {
    ids.insert(c.id);
    EXPECT_TRUE(cs->IsCommitted(c.id)) << c.id;
  }
  ExpectReadable(cs.get(), all);
  {
    std::lock_guard<std::mutex> l(log.mu);
    EXPECT_TRUE(log.not_committed_when_called.empty());
    EXPECT_EQ(log.calls.size(), ids.size());
    for (const auto& [id, n] : log.calls) {
      EXPECT_EQ(n, 1) << "container " << id;
      EXPECT_EQ(ids.count(id), 1u);
    }
    for (const Chunk& c : all) EXPECT_EQ(log.fp_to_id[c.fp], c.id);
  }
  ChunkStoreStats st = cs->stats();
  EXPECT_EQ(st.chunks_stored, all.size());
  EXPECT_EQ(st.containers_committed, ids.size());
  EXPECT_EQ(st.containers_failed, 0u);
  EXPECT_EQ(st.open_containers, 0u);
  EXPECT_EQ(st.containers_in_flight, 0u);
  EXPECT_GT(ids.size(), 8u);  // really spread over many containers

  std::vector<Fingerprint> fps;
  ASSERT_TRUE(cs->GetFingerprints(all[0].id, &fps).ok());
  EXPECT_TRUE(std::binary_search(fps.begin(), fps.end(), all[0].fp));
  ASSERT_TRUE(cs->Close().ok());

  // Reopen: everything committed and readable, new ids are larger.
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  for (ContainerId id : ids) EXPECT_TRUE(cs->IsCommitted(id)) << id;
  ExpectReadable(cs.get(), all);
  Chunk extra = MakeChunk(999, 2000);
  ASSERT_TRUE(Store(cs.get(), &extra).ok());
  EXPECT_GT(extra.id, *ids.rbegin());
  EXPECT_FALSE(cs->IsCommitted(extra.id));
  EXPECT_FALSE(cs->IsCommitted(extra.id + 1));
  ASSERT_TRUE(cs->Close().ok());
}

TEST(ChunkStoreTest, CompressionShrinksAndReadsBack) {
  for (Compression comp : {Compression::kZlib, Compression::kBzip2}) {
    test::TempDir dir;
    ChunkStoreOptions o = SmallOptions(dir.path());
    o.compression = comp;
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
    std::vector<Chunk> chunks;
    for (int i = 0; i < 40; i++) {
      chunks.push_back(MakeChunk(i, 4096, /*compressible=*/i % 2 == 0));
      ASSERT_TRUE(Store(cs.get(), &chunks.back()).ok());
    }
    ExpectReadable(cs.get(), chunks);
    ChunkStoreStats st = cs->stats();
    EXPECT_LT(st.bytes_stored, st.bytes_raw);
    ASSERT_TRUE(cs->Close().ok());
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
    ExpectReadable(cs.get(), chunks);  // each compressed chunk read alone
    EXPECT_EQ(cs->stats().chunk_reads, chunks.size());
  }
}

TEST(ChunkStoreTest, TimerCommitsIdleContainer) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  o.commit_timeout_ms = 50;
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  ListenerLog log;
  log.Attach(cs.get());
  Chunk c = MakeChunk(1, 1000);
  ASSERT_TRUE(Store(cs.get(), &c).ok());
  // Wait (bounded, generously) for the timer; nothing else commits it.
  for (int i = 0; i < 1000 && !cs->IsCommitted(c.id); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(cs->IsCommitted(c.id));
  for (int i = 0; i < 1000 && cs->stats().containers_in_flight > 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  {
    std::lock_guard<std::mutex> l(log.mu);
    EXPECT_EQ(log.calls[c.id], 1);
  }
  EXPECT_EQ(cs->stats().open_containers, 0u);
  ExpectReadable(cs.get(), {c});
}

TEST(ChunkStoreTest, ReadCacheAndStoreReads) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  Chunk a = MakeChunk(1, 1000), b = MakeChunk(2, 1000);
  ASSERT_TRUE(Store(cs.get(), &a).ok());
  ASSERT_TRUE(Store(cs.get(), &b).ok());
  ASSERT_EQ(a.id, b.id);
  ASSERT_TRUE(cs->Close().ok());

  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  // After a reopen nothing is cached: each chunk is read alone (never the
  // whole container), its container's metadata once.
  ExpectReadable(cs.get(), {a, b, a});
  ChunkStoreStats st = cs->stats();
  EXPECT_EQ(st.container_reads, 0u);
  EXPECT_EQ(st.metadata_reads, 1u);
  EXPECT_EQ(st.chunk_reads, 3u);
  EXPECT_EQ(st.read_cache_misses, 3u);
  // Containers committed in this run are in the read cache.
  Chunk c = MakeChunk(4, 1000);
  ASSERT_TRUE(Store(cs.get(), &c).ok());
  ASSERT_TRUE(cs->Flush().ok());
  ExpectReadable(cs.get(), {c});
  EXPECT_EQ(cs->stats().read_cache_hits, 1u);
  EXPECT_EQ(cs->stats().chunk_reads, 3u);

  std::string data;
  Chunk missing = MakeChunk(3, 100);
  EXPECT_TRUE(cs->ReadChunk(a.id, missing.fp, &data).IsNotFound());
  EXPECT_TRUE(cs->ReadChunk(a.id + 100, a.fp, &data).IsNotFound());
  EXPECT_TRUE(cs->ReadChunk(kZeroContainer, a.fp, &data).IsInvalidArgument());
}

TEST(ChunkStoreTest, CorruptContainerIsReportedNotReturned) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  Chunk a = MakeChunk(1, 5000);
  ASSERT_TRUE(Store(cs.get(), &a).ok());
  ASSERT_TRUE(cs->Close().ok());
  cs.reset();

  std::unique_ptr<LocalContainerStore> store;
  ASSERT_TRUE(LocalContainerStore::Open(Env::Default(), dir.path(), &store).ok());
  std::string bytes;
  ASSERT_TRUE(store->Get(a.id, &bytes).ok());
  bytes[bytes.size() - 100] ^= 0x10;  // inside a's data
  ASSERT_TRUE(store->Put(a.id, bytes).ok());
  store.reset();

  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  std::string data;
  Status s = cs->ReadChunk(a.id, a.fp, &data);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("container " + std::to_string(a.id)), std::string::npos)
      << s.message();
  // The fingerprints come from the metadata alone, which is intact; a
  // damaged metadata byte is reported.
  std::vector<Fingerprint> fps;
  EXPECT_TRUE(cs->GetFingerprintsVerified(a.id, &fps).IsCorruption());
  ASSERT_TRUE(cs->GetFingerprints(a.id, &fps).ok());
  EXPECT_EQ(fps, std::vector<Fingerprint>{a.fp});
  ASSERT_TRUE(cs->Close().ok());
  cs.reset();
  ASSERT_TRUE(LocalContainerStore::Open(Env::Default(), dir.path(), &store).ok());
  bytes[Container::kHeaderSize + 2] ^= 0x10;  // inside a's item
  ASSERT_TRUE(store->Put(a.id, bytes).ok());
  store.reset();
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  s = cs->GetFingerprints(a.id, &fps);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("metadata checksum"), std::string::npos) << s.message();
}

// The container cache filter asks for fingerprints: only the container's
// head is read (the read cache is left alone), also when the metadata is
// larger than the first guess.
TEST(ChunkStoreTest, FingerprintsComeFromTheMetadataOnly) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  o.container_size = 4 << 20;
  o.open_containers = 1;
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  // 3000 chunks of 100 bytes: ~100 KiB of metadata, above the 64 KiB guess.
  std::vector<Chunk> chunks;
  for (int i = 0; i < 3000; i++) {
    chunks.push_back(MakeChunk(1000 + i, 100));
    ASSERT_TRUE(Store(cs.get(), &chunks.back()).ok());
  }
  ASSERT_TRUE(cs->Close().ok());
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  std::vector<Fingerprint> fps;
  ASSERT_TRUE(cs->GetFingerprints(chunks[0].id, &fps).ok());
  std::vector<Fingerprint> want;
  for (const Chunk& c : chunks) {
    if (c.id == chunks[0].id) want.push_back(c.fp);
  }
  std::sort(want.begin(), want.end());
  EXPECT_GT(want.size(), 2500u);
  EXPECT_EQ(fps, want);
  ChunkStoreStats st = cs->stats();
  EXPECT_EQ(st.metadata_reads, 1u);
  EXPECT_EQ(st.container_reads, 0u);
  EXPECT_TRUE(cs->GetFingerprints(chunks[0].id + 1000, &fps).IsNotFound());
}

TEST(ChunkStoreTest, FullStoreIsStickyUntilRetrySucceeds) {
  test::TempDir dir;
  FaultInjectionEnv env(Env::Default());
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, &env, &cs).ok());
  ListenerLog log;
  log.Attach(cs.get());

  std::vector<Chunk> before;
  for (int i = 0; i < 10; i++) {
    before.push_back(MakeChunk(i, 3000));
    ASSERT_TRUE(Store(cs.get(), &before.back(), i % 2).ok());
  }
  env.AddRule({FaultInjectionEnv::Op::kWrite, ".ctr", FaultInjectionEnv::Fault::kENOSPC, 0, -1});

  // Stored until the first failed commit becomes visible.
  std::vector<Chunk> acked;
  Status s;
  for (int i = 0; i < 200; i++) {
    Chunk c = MakeChunk(1000 + i, 3000);
    s = Store(cs.get(), &c, i % 3);
    if (!s.ok()) break;
    acked.push_back(std::move(c));
  }
  Status f = cs->Flush();
  ASSERT_TRUE(f.IsNoSpace()) << f.ToString();
  EXPECT_NE(f.message().find("container store full"), std::string::npos) << f.message();
  Chunk refused = MakeChunk(5000, 3000);
  s = Store(cs.get(), &refused);
  ASSERT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_NE(s.message().find("cannot commit container"), std::string::npos) << s.message();

  // Everything acknowledged is still readable from memory, nothing committed.
  ExpectReadable(cs.get(), before);
  ExpectReadable(cs.get(), acked);
  for (const Chunk& c : acked) EXPECT_FALSE(cs->IsCommitted(c.id));
  EXPECT_GT(cs->stats().containers_failed, 0u);
  EXPECT_GT(cs->stats().containers_in_flight, 0u);
  {
    std::lock_guard<std::mutex> l(log.mu);
    for (const Chunk& c : acked) EXPECT_EQ(log.calls.count(c.id), 0u);
  }

  // Space comes back: Flush retries and succeeds, writes are accepted again.
  env.ClearRules();
  ASSERT_TRUE(cs->Flush().ok());
  for (const Chunk& c : acked) EXPECT_TRUE(cs->IsCommitted(c.id));
  Chunk after = MakeChunk(6000, 3000);
  ASSERT_TRUE(Store(cs.get(), &after).ok());
  ASSERT_TRUE(cs->Close().ok());
  {
    std::lock_guard<std::mutex> l(log.mu);
    for (const auto& [id, n] : log.calls) EXPECT_EQ(n, 1) << "container " << id;
    for (const Chunk& c : acked) EXPECT_EQ(log.calls.count(c.id), 1u);
  }
  cs.reset();

  // Durable: a fresh store on the plain Env reads everything.
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  ExpectReadable(cs.get(), before);
  ExpectReadable(cs.get(), acked);
  ExpectReadable(cs.get(), {after});
}

// A ContainerStore whose Puts can be made to fail, to simulate a crash
// before containers are committed.
class FailingStore : public ContainerStore {
 public:
  FailingStore(std::unique_ptr<ContainerStore> base, std::atomic<bool>* fail)
      : base_(std::move(base)), fail_(fail) {}
  Status Put(ContainerId id, const std::string& bytes) override {
    if (fail_->load()) return Status::IOError("simulated crash");
    return base_->Put(id, bytes);
  }
  Status Get(ContainerId id, std::string* bytes) override { return base_->Get(id, bytes); }
  Status Delete(ContainerId id) override { return base_->Delete(id); }
  Status List(std::vector<ContainerId>* ids) override { return base_->List(ids); }
  Status UsedBytes(uint64_t* bytes) override { return base_->UsedBytes(bytes); }

 private:
  std::unique_ptr<ContainerStore> base_;
  std::atomic<bool>* fail_;
};

TEST(ChunkStoreTest, IdsOfLostContainersAreNeverReused) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::atomic<bool> fail{false};
  std::unique_ptr<LocalContainerStore> local;
  ASSERT_TRUE(LocalContainerStore::Open(Env::Default(), dir.path(), &local).ok());
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(),
                               std::make_unique<FailingStore>(std::move(local), &fail), &cs)
                  .ok());
  Chunk kept = MakeChunk(1, 2000);
  ASSERT_TRUE(Store(cs.get(), &kept).ok());
  ASSERT_TRUE(cs->Flush().ok());
  fail = true;
  std::vector<Chunk> lost;
  for (int i = 0; i < 30; i++) {
    Chunk c = MakeChunk(100 + i, 3000);
    if (!Store(cs.get(), &c, i).ok()) break;
    lost.push_back(std::move(c));
  }
  ASSERT_FALSE(lost.empty());
  Status s = cs->Close();
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find("cannot commit container"), std::string::npos);
  EXPECT_TRUE(Store(cs.get(), &kept).IsAborted());
  EXPECT_EQ(cs->Close().code(), s.code());  // idempotent
  cs.reset();

  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  EXPECT_TRUE(cs->IsCommitted(kept.id));
  ContainerId max_lost = 0;
  for (const Chunk& c : lost) {
    EXPECT_FALSE(cs->IsCommitted(c.id)) << c.id;
    std::string data;
    EXPECT_TRUE(cs->ReadChunk(c.id, c.fp, &data).IsNotFound());
    max_lost = std::max(max_lost, c.id);
  }
  Chunk next = MakeChunk(7, 2000);
  ASSERT_TRUE(Store(cs.get(), &next).ok());
  EXPECT_GT(next.id, max_lost);
  EXPECT_GE(cs->last_allocated_id(), next.id);
}

TEST(ChunkStoreTest, RejectsBadInputAndCorruptIdMark) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  Chunk big = MakeChunk(1, o.container_size);
  EXPECT_TRUE(Store(cs.get(), &big).IsInvalidArgument());
  Chunk c = MakeChunk(2, 100);
  Fingerprint short_fp = c.fp;
  short_fp.size = 8;
  ContainerId id;
  EXPECT_TRUE(cs->StoreChunk(short_fp, reinterpret_cast<const uint8_t*>(c.data.data()),
                             c.data.size(), 0, &id)
                  .IsInvalidArgument());
  ASSERT_TRUE(Store(cs.get(), &c).ok());
  ASSERT_TRUE(cs->Close().ok());
  cs.reset();

  ChunkStoreOptions bad = o;
  bad.open_containers = 0;
  EXPECT_TRUE(ChunkStore::Open(bad, Env::Default(), &cs).IsInvalidArgument());

  ASSERT_TRUE(WriteFileAtomically(Env::Default(), dir.Sub("container-id"), "garbage").ok());
  Status s = ChunkStore::Open(o, Env::Default(), &cs);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("container-id"), std::string::npos);
}

TEST(ChunkStoreTest, FullDiskWhileReservingIdsIsNoSpace) {
  test::TempDir dir;
  FaultInjectionEnv env(Env::Default());
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, &env, &cs).ok());
  env.AddRule({FaultInjectionEnv::Op::kWrite, "container-id", FaultInjectionEnv::Fault::kENOSPC,
               0, 1});
  Chunk c = MakeChunk(1, 1000);
  Status s = Store(cs.get(), &c);
  ASSERT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_NE(s.message().find("reserve container ids"), std::string::npos) << s.message();
  // The fault is gone: the next attempt reserves and stores.
  ASSERT_TRUE(Store(cs.get(), &c).ok());
  ASSERT_TRUE(cs->Flush().ok());
  ExpectReadable(cs.get(), {c});
}

// Stores |n| chunks of |size| bytes (2 KiB unless said) into one stream (so
// they fill containers in order) and commits them.
std::vector<Chunk> StoreMany(ChunkStore* cs, uint64_t seed, int n, size_t size = 2048) {
  std::vector<Chunk> chunks;
  for (int i = 0; i < n; i++) {
    Chunk c = MakeChunk(seed + i, size);
    EXPECT_TRUE(Store(cs, &c).ok());
    chunks.push_back(std::move(c));
  }
  EXPECT_TRUE(cs->Flush().ok());
  return chunks;
}

// Marks every odd chunk dead; returns the even ones.
std::vector<Chunk> KeepEven(ChunkStore* cs, const std::vector<Chunk>& chunks) {
  std::vector<Chunk> kept;
  for (size_t i = 0; i < chunks.size(); i++) {
    if (i % 2 == 0) {
      kept.push_back(chunks[i]);
    } else {
      cs->MarkDead(chunks[i].id, {chunks[i].fp});
    }
  }
  return kept;
}

std::string ReadFileOrDie(const std::string& path) {
  std::string s;
  EXPECT_TRUE(ReadFileToString(Env::Default(), path, &s).ok()) << path;
  return s;
}

TEST(ChunkStoreGcTest, MergedContainerAnswersToOldIdsBeforeAndAfterReopen) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::vector<Chunk> chunks;
  std::vector<ContainerId> sources;
  ContainerId merged = kNoContainer;
  uint64_t used_before = 0, used_after = 0;
  {
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
    chunks = StoreMany(cs.get(), 1000, 40);  // 2 KiB chunks, 32 KiB containers: 3 containers
    std::set<ContainerId> ids;
    for (const auto& c : chunks) ids.insert(c.id);
    ASSERT_GE(ids.size(), 3u);
    sources.assign(ids.begin(), ids.end());
    sources.resize(2);
    // Three quarters of the chunks of the first two containers are garbage.
    std::vector<Chunk> live;
    for (size_t i = 0; i < chunks.size(); i++) {
      const bool in_sources = chunks[i].id == sources[0] || chunks[i].id == sources[1];
      if (in_sources && i % 4 != 0) {
        cs->MarkDead(chunks[i].id, {chunks[i].fp});
      } else {
        live.push_back(chunks[i]);
      }
    }
    // Dead chunks are no longer listed (the container-cache filter reads this).
    std::vector<Fingerprint> fps;
    ASSERT_TRUE(cs->GetFingerprints(sources[0], &fps).ok());
    EXPECT_LT(fps.size(), 5u);
    ASSERT_TRUE(cs->UsedBytes(&used_before).ok());
    ASSERT_TRUE(cs->MergeContainers(sources, &merged).ok());
    ASSERT_TRUE(cs->UsedBytes(&used_after).ok());
    EXPECT_LT(used_after, used_before);
    EXPECT_GT(merged, sources[1]);
    EXPECT_EQ(cs->Resolve(sources[0]), merged);
    EXPECT_EQ(cs->Resolve(sources[1]), merged);
    EXPECT_TRUE(cs->IsCommitted(sources[0]));
    std::vector<ContainerId> listed;
    ASSERT_TRUE(cs->ListCommitted(&listed).ok());
    EXPECT_EQ(std::count(listed.begin(), listed.end(), sources[0]), 0);
    ExpectReadable(cs.get(), live);  // through the old ids
    chunks = live;
    ASSERT_TRUE(cs->Close().ok());
  }
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  EXPECT_EQ(cs->Resolve(sources[0]), merged);
  EXPECT_TRUE(cs->IsCommitted(sources[1]));
  ExpectReadable(cs.get(), chunks);
  // Merging the merged container again keeps every old id answering.
  ContainerId again;
  ASSERT_TRUE(cs->MergeContainers({merged}, &again).ok());
  EXPECT_EQ(cs->Resolve(sources[0]), again);
  EXPECT_EQ(cs->Resolve(merged), again);
  ExpectReadable(cs.get(), chunks);
  ASSERT_TRUE(cs->Close().ok());
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  EXPECT_EQ(cs->Resolve(sources[0]), again);
  ExpectReadable(cs.get(), chunks);
}

// A crash after the merged container committed but before the sources were
// deleted: Open finds the sources superseded and deletes them.
TEST(ChunkStoreGcTest, SupersededSourcesAreDeletedAtOpen) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::vector<Chunk> chunks;
  std::vector<ContainerId> sources;
  std::map<ContainerId, std::string> saved;
  ContainerId merged;
  {
    std::unique_ptr<LocalContainerStore> local;
    ASSERT_TRUE(LocalContainerStore::Open(Env::Default(), o.dir, &local).ok());
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
    chunks = StoreMany(cs.get(), 5000, 20);
    std::set<ContainerId> ids;
    for (const auto& c : chunks) ids.insert(c.id);
    sources.assign(ids.begin(), ids.end());
    for (ContainerId id : sources) saved[id] = ReadFileOrDie(local->ContainerPath(id));
    chunks = KeepEven(cs.get(), chunks);  // all 20 do not fit one container
    ASSERT_TRUE(cs->MergeContainers(sources, &merged).ok());
    ASSERT_TRUE(cs->Close().ok());
    // "Undo" the deletions, as if the crash came before them.
    for (const auto& [id, bytes] : saved) ASSERT_TRUE(local->Put(id, bytes).ok());
  }
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  std::vector<ContainerId> listed;
  ASSERT_TRUE(cs->ListCommitted(&listed).ok());
  EXPECT_EQ(listed, std::vector<ContainerId>{merged});
  for (ContainerId id : sources) EXPECT_EQ(cs->Resolve(id), merged);
  ExpectReadable(cs.get(), chunks);
}

// A crash after the alias record was written but before the merged container
// was stored: the record is dropped and the sources stay in use.
TEST(ChunkStoreGcTest, MergeThatNeverCommittedIsForgottenAtOpen) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::vector<Chunk> chunks;
  std::map<ContainerId, std::string> saved;
  ContainerId merged;
  {
    std::unique_ptr<LocalContainerStore> local;
    ASSERT_TRUE(LocalContainerStore::Open(Env::Default(), o.dir, &local).ok());
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
    chunks = StoreMany(cs.get(), 9000, 20);
    std::set<ContainerId> ids;
    for (const auto& c : chunks) ids.insert(c.id);
    for (ContainerId id : ids) saved[id] = ReadFileOrDie(local->ContainerPath(id));
    chunks = KeepEven(cs.get(), chunks);
    ASSERT_TRUE(cs->MergeContainers(std::vector<ContainerId>(ids.begin(), ids.end()), &merged).ok());
    ASSERT_TRUE(cs->Close().ok());
    for (const auto& [id, bytes] : saved) ASSERT_TRUE(local->Put(id, bytes).ok());
    ASSERT_TRUE(local->Delete(merged).ok());
  }
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  for (const auto& [id, bytes] : saved) EXPECT_EQ(cs->Resolve(id), id);
  EXPECT_FALSE(cs->IsCommitted(merged));
  ExpectReadable(cs.get(), chunks);
}

TEST(ChunkStoreGcTest, DeleteContainerForgetsItAndItsAliases) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  std::vector<Chunk> chunks = StoreMany(cs.get(), 20000, 10);
  const ContainerId id = chunks[0].id;
  ContainerId merged;
  ASSERT_TRUE(cs->MergeContainers({id}, &merged).ok());
  ASSERT_TRUE(cs->DeleteContainer(merged).ok());
  EXPECT_FALSE(cs->IsCommitted(merged));
  EXPECT_FALSE(cs->IsCommitted(id));
  std::string data;
  EXPECT_TRUE(cs->ReadChunk(id, chunks[0].fp, &data).IsNotFound());
  uint64_t used = 1;
  ASSERT_TRUE(cs->UsedBytes(&used).ok());
  EXPECT_EQ(used, 0u);
}

size_t FootprintCount(ChunkStore* cs, ContainerId id) {
  std::vector<ChunkStore::ChunkFootprint> chunks;
  uint64_t total = 0;
  Status s = cs->GetChunkFootprints(id, &chunks, &total);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return chunks.size();
}

// Persisted marks are applied again after a reopen; marks not persisted yet
// are not (GC finds that garbage again).
TEST(ChunkStoreGcTest, PersistedDeadMarksSurviveAReopen) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::vector<Chunk> chunks;
  std::map<ContainerId, size_t> per_container;
  ContainerId a, b;
  size_t marked_in_a = 0;
  {
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
    chunks = StoreMany(cs.get(), 30000, 40);
    for (const auto& c : chunks) per_container[c.id]++;
    ASSERT_GE(per_container.size(), 2u);
    a = per_container.begin()->first;
    b = std::next(per_container.begin())->first;
    for (size_t i = 0; i < chunks.size(); i += 2) {
      if (chunks[i].id == a) {
        cs->MarkDead(a, {chunks[i].fp});
        marked_in_a++;
      }
    }
    EXPECT_EQ(cs->stats().dead_marks_unpersisted, marked_in_a);
    ASSERT_TRUE(cs->PersistDeadMarks().ok());
    EXPECT_EQ(cs->stats().dead_marks_unpersisted, 0u);
    for (const auto& c : chunks) {
      if (c.id == b) {
        cs->MarkDead(b, {c.fp});  // never persisted
        break;
      }
    }
    EXPECT_EQ(cs->stats().dead_chunks_marked, marked_in_a + 1);
    ASSERT_TRUE(cs->Close().ok());
  }
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  EXPECT_EQ(cs->stats().dead_marks_loaded, marked_in_a);
  EXPECT_EQ(FootprintCount(cs.get(), a), per_container[a] - marked_in_a);
  EXPECT_EQ(FootprintCount(cs.get(), b), per_container[b]);
  std::vector<Chunk> live;
  for (size_t i = 0; i < chunks.size(); i++) {
    if (!(chunks[i].id == a && i % 2 == 0)) live.push_back(chunks[i]);
  }
  ExpectReadable(cs.get(), live);
  // A merge leaves the persisted dead chunks out.
  ContainerId merged;
  ASSERT_TRUE(cs->MergeContainers({a}, &merged).ok());
  ASSERT_NE(merged, kNoContainer);
  EXPECT_EQ(FootprintCount(cs.get(), merged), per_container[a] - marked_in_a);
  ExpectReadable(cs.get(), live);
}

// The marks of a merge source describe the source only. Here the merged
// container holds a live copy of a chunk that was dead in one of its sources;
// after a reopen that copy must still be there.
TEST(ChunkStoreGcTest, DeadMarksOfAMergeSourceDoNotApplyToTheMergedContainer) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  Chunk dup_in_a = MakeChunk(40000, 2048);
  Chunk dup_in_b = dup_in_a;
  std::vector<Chunk> live;
  ContainerId merged;
  {
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
    ASSERT_TRUE(Store(cs.get(), &dup_in_a, 0).ok());
    ASSERT_TRUE(Store(cs.get(), &dup_in_b, 1).ok());  // another stream: another container
    ASSERT_NE(dup_in_a.id, dup_in_b.id);
    for (int i = 0; i < 4; i++) {
      Chunk c = MakeChunk(40100 + i, 2048);
      ASSERT_TRUE(Store(cs.get(), &c, i % 2).ok());
      live.push_back(c);
    }
    ASSERT_TRUE(cs->Flush().ok());
    cs->MarkDead(dup_in_a.id, {dup_in_a.fp});
    ASSERT_TRUE(cs->PersistDeadMarks().ok());
    ASSERT_TRUE(cs->MergeContainers({dup_in_a.id, dup_in_b.id}, &merged).ok());
    ASSERT_NE(merged, kNoContainer);
    ASSERT_TRUE(cs->Close().ok());
  }
  live.push_back(dup_in_b);
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  EXPECT_EQ(cs->stats().dead_marks_loaded, 0u);
  EXPECT_EQ(FootprintCount(cs.get(), merged), live.size());
  ExpectReadable(cs.get(), live);
  // The stale record is gone from the file.
  std::string data;
  ASSERT_TRUE(ReadFileToString(Env::Default(), JoinPath(o.dir, "dead-chunks"), &data).ok());
  EXPECT_TRUE(data.empty());
  ContainerId again;
  ASSERT_TRUE(cs->MergeContainers({merged}, &again).ok());
  ExpectReadable(cs.get(), live);
}

// A failed write of the marks is an error; the marks stay pending and the
// next call writes them (rewriting the file, which may end in a torn record).
TEST(ChunkStoreGcTest, FailedPersistKeepsTheMarksPending) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  FaultInjectionEnv fenv(Env::Default());
  std::vector<Chunk> chunks;
  {
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, &fenv, &cs).ok());
    chunks = StoreMany(cs.get(), 50000, 10);
    cs->MarkDead(chunks[0].id, {chunks[0].fp});
    ASSERT_TRUE(cs->PersistDeadMarks().ok());
    cs->MarkDead(chunks[1].id, {chunks[1].fp});
    fenv.AddRule({FaultInjectionEnv::Op::kWrite, "dead-chunks", FaultInjectionEnv::Fault::kTorn, 0, 1, 10});
    Status s = cs->PersistDeadMarks();
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.ToString().find("dead-chunks"), std::string::npos) << s.ToString();
    EXPECT_EQ(cs->stats().dead_marks_unpersisted, 1u);
    s = cs->PersistDeadMarks();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(cs->stats().dead_marks_unpersisted, 0u);
    ASSERT_TRUE(cs->Close().ok());
  }
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  EXPECT_EQ(cs->stats().dead_marks_loaded, 2u);
  std::vector<Chunk> live(chunks.begin() + 2, chunks.end());
  ExpectReadable(cs.get(), live);
}

// Passes everything to a LocalContainerStore but fails the deletion of one
// container (a disk error at that moment).
class DeleteFailingStore : public ContainerStore {
 public:
  DeleteFailingStore(std::unique_ptr<ContainerStore> base, ContainerId fail) : base_(std::move(base)), fail_(fail) {}
  Status Put(ContainerId id, const std::string& bytes) override { return base_->Put(id, bytes); }
  Status Get(ContainerId id, std::string* bytes) override { return base_->Get(id, bytes); }
  Status Delete(ContainerId id) override {
    if (id == fail_) return Status::IOError("injected: cannot delete container " + std::to_string(id));
    return base_->Delete(id);
  }
  Status List(std::vector<ContainerId>* ids) override { return base_->List(ids); }
  Status UsedBytes(uint64_t* bytes) override { return base_->UsedBytes(bytes); }

 private:
  std::unique_ptr<ContainerStore> base_;
  ContainerId fail_;
};

// A merge whose source deletion fails has its alias record on disk already;
// a later rewrite of the alias file (the next merge) must keep it, or the
// old ids would resolve to nothing after a reopen.
TEST(ChunkStoreGcTest, FailedSourceDeletionKeepsTheMergeRecord) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::vector<Chunk> chunks;
  std::vector<ContainerId> ids;
  ContainerId merged = kNoContainer;
  {
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
    chunks = StoreMany(cs.get(), 60000, 40);  // 3 containers
    std::set<ContainerId> set;
    for (const auto& c : chunks) set.insert(c.id);
    ids.assign(set.begin(), set.end());
    ASSERT_GE(ids.size(), 3u);
    ASSERT_TRUE(cs->Close().ok());
  }
  {
    std::unique_ptr<LocalContainerStore> local;
    ASSERT_TRUE(LocalContainerStore::Open(Env::Default(), o.dir, &local).ok());
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), std::make_unique<DeleteFailingStore>(std::move(local), ids[1]),
                                 &cs)
                    .ok());
    chunks = KeepEven(cs.get(), chunks);
    Status s = cs->MergeContainers({ids[0], ids[1]}, &merged);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.ToString().find("injected"), std::string::npos) << s.ToString();
    merged = cs->Resolve(ids[0]);
    ASSERT_NE(merged, ids[0]);
    ContainerId again;
    ASSERT_TRUE(cs->MergeContainers({ids[2]}, &again).ok());  // rewrites the alias file
    ExpectReadable(cs.get(), chunks);
    ASSERT_TRUE(cs->Close().ok());
  }
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  EXPECT_EQ(cs->Resolve(ids[0]), merged);
  EXPECT_EQ(cs->Resolve(ids[1]), merged);
  ExpectReadable(cs.get(), chunks);
  std::vector<ContainerId> listed;
  ASSERT_TRUE(cs->ListCommitted(&listed).ok());
  EXPECT_EQ(std::count(listed.begin(), listed.end(), ids[1]), 0) << "the source left behind is deleted at open";
}

// An entry naming a marked chunk removes the mark, in memory and, at the next
// persist, from the file.
TEST(ChunkStoreGcTest, UnmarkIfDeadRemovesTheMarkForGood) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::vector<Chunk> chunks;
  {
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
    chunks = StoreMany(cs.get(), 70000, 6);
    ASSERT_EQ(chunks[0].id, chunks[2].id);
    EXPECT_FALSE(cs->UnmarkIfDead(chunks[0].id, chunks[0].fp));
    cs->MarkDead(chunks[0].id, {chunks[0].fp, chunks[1].fp});
    ASSERT_TRUE(cs->PersistDeadMarks().ok());
    EXPECT_EQ(FootprintCount(cs.get(), chunks[0].id), chunks.size() - 2);  // takes a summary with 2 marks
    ContainerSummary summary;
    ASSERT_TRUE(cs->GetSummary(chunks[0].id, &summary));
    EXPECT_TRUE(cs->UnmarkIfDead(chunks[0].id, chunks[0].fp));
    EXPECT_FALSE(cs->UnmarkIfDead(chunks[0].id, chunks[0].fp));
    EXPECT_EQ(cs->stats().dead_chunks_marked, 1u);
    // Back to two marks, but other ones: the old summary must not fit again.
    cs->MarkDead(chunks[2].id, {chunks[2].fp});
    EXPECT_FALSE(cs->GetSummary(chunks[0].id, &summary));
    ASSERT_TRUE(cs->PersistDeadMarks().ok());
    ASSERT_TRUE(cs->Close().ok());
  }
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  EXPECT_EQ(cs->stats().dead_marks_loaded, 2u);
  ContainerSummary summary;
  EXPECT_FALSE(cs->GetSummary(chunks[0].id, &summary)) << "the withdrawn summary came back from the file";
  EXPECT_EQ(FootprintCount(cs.get(), chunks[0].id), chunks.size() - 2);
  std::vector<Chunk> live(chunks);
  live.erase(live.begin() + 2);
  live.erase(live.begin() + 1);
  ContainerId merged;
  ASSERT_TRUE(cs->MergeContainers({chunks[0].id}, &merged).ok());
  ExpectReadable(cs.get(), live);
}

// A marks file that cannot be read keeps no store from opening: it is deleted
// (marks are hints) and rewritten whole by the next persist.
TEST(ChunkStoreGcTest, UnreadableMarksFileIsDeletedAtOpen) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  FaultInjectionEnv fenv(Env::Default());
  std::vector<Chunk> chunks;
  {
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
    chunks = StoreMany(cs.get(), 80000, 6);
    cs->MarkDead(chunks[0].id, {chunks[0].fp});
    ASSERT_TRUE(cs->PersistDeadMarks().ok());
    ASSERT_TRUE(cs->Close().ok());
  }
  fenv.AddRule({FaultInjectionEnv::Op::kRead, "dead-chunks", FaultInjectionEnv::Fault::kEIO});
  {
    std::unique_ptr<ChunkStore> cs;
    Status s = ChunkStore::Open(o, &fenv, &cs);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_GT(fenv.faults_fired(), 0);
    EXPECT_FALSE(Env::Default()->FileExists(JoinPath(o.dir, "dead-chunks")));
    EXPECT_EQ(cs->stats().dead_marks_loaded, 0u);
    ExpectReadable(cs.get(), chunks);
    fenv.ClearRules();
    cs->MarkDead(chunks[1].id, {chunks[1].fp});
    ASSERT_TRUE(cs->PersistDeadMarks().ok());
    ASSERT_TRUE(cs->Close().ok());
  }
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  EXPECT_EQ(cs->stats().dead_marks_loaded, 1u);
}

// A damaged summary record is dropped at open (GC reads the container's
// metadata instead), and the open names the file and says how many records
// it dropped (issue 19: damage on disk is never passed over in silence).
TEST(ChunkStoreGcTest, DamagedSummaryRecordIsDroppedAndNamed) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::vector<Chunk> chunks;
  {
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
    chunks = StoreMany(cs.get(), 90000, 40);
    ASSERT_TRUE(cs->Close().ok());
  }
  const std::string path = JoinPath(o.dir, kContainerSummaryFileName);
  std::string data;
  ASSERT_TRUE(ReadFileToString(Env::Default(), path, &data).ok());
  ASSERT_GE(data.size(), 2 * ContainerSummaryFile::kRecordSize);
  data[ContainerSummaryFile::kRecordSize + 9] ^= 0x04;  // the second record's footprint
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, data).ok());

  ::testing::internal::CaptureStderr();
  std::unique_ptr<ChunkStore> cs;
  Status s = ChunkStore::Open(o, Env::Default(), &cs);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(err.find(path + ": 1 damaged or cut-short records dropped"), std::string::npos) << err;
  EXPECT_EQ(cs->stats().summaries_loaded, data.size() / ContainerSummaryFile::kRecordSize - 1);
  ExpectReadable(cs.get(), chunks);
}

// Committed and merged containers get summaries that match their metadata;
// merged and deleted ones lose them, and the file forgets them at open.
TEST(ChunkStoreGcTest, SummariesDescribeCommittedAndMergedContainers) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  std::vector<Chunk> chunks;
  std::vector<ContainerId> ids;
  ContainerId merged = kNoContainer;
  // The live chunks as the metadata lists them (without the dead marks).
  auto expect_matches_metadata = [](ChunkStore* cs, ContainerId id) {
    std::vector<ChunkStore::ChunkFootprint> footprints;
    uint64_t total = 0;
    ASSERT_TRUE(cs->GetChunkFootprints(id, &footprints, &total).ok());
    ContainerSummary summary;
    ASSERT_TRUE(cs->GetSummary(id, &summary)) << "container " << id;
    uint64_t sum = 0;
    for (const auto& f : footprints) sum += f.bytes;
    EXPECT_EQ(summary.chunks, footprints.size()) << "container " << id;
    EXPECT_EQ(summary.footprint_bytes, sum) << "container " << id;
    EXPECT_EQ(summary.serialized_bytes, total) << "container " << id;
  };
  {
    std::unique_ptr<ChunkStore> cs;
    ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
    chunks = StoreMany(cs.get(), 90000, 40);
    std::set<ContainerId> set;
    for (const auto& c : chunks) set.insert(c.id);
    ids.assign(set.begin(), set.end());
    ASSERT_GE(ids.size(), 3u);
    for (ContainerId id : ids) expect_matches_metadata(cs.get(), id);
    chunks = KeepEven(cs.get(), chunks);
    ContainerSummary summary;
    EXPECT_FALSE(cs->GetSummary(ids[0], &summary)) << "the summary was taken before the marks";
    expect_matches_metadata(cs.get(), ids[0]);  // reading the metadata takes one that fits them
    ASSERT_TRUE(cs->GetSummary(ids[0], &summary));
    EXPECT_GT(summary.dead_chunks, 0u);
    ASSERT_TRUE(cs->MergeContainers({ids[0], ids[1]}, &merged).ok());
    ASSERT_NE(merged, kNoContainer);
    expect_matches_metadata(cs.get(), merged);
    EXPECT_FALSE(cs->GetSummary(ids[0], &summary));
    ASSERT_TRUE(cs->Close().ok());
  }
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  // The merged container and the third one (its dead marks were not persisted).
  EXPECT_EQ(cs->stats().summaries_loaded, ids.size() - 1);
  expect_matches_metadata(cs.get(), merged);
  ContainerSummary summary;
  EXPECT_FALSE(cs->GetSummary(ids[0], &summary));
  std::string data;
  ASSERT_TRUE(ReadFileToString(Env::Default(), JoinPath(o.dir, kContainerSummaryFileName), &data).ok());
  EXPECT_EQ(data.size(), (ids.size() - 1) * ContainerSummaryFile::kRecordSize) << "stale records rewritten away";
  ExpectReadable(cs.get(), chunks);
}

// ---- ReadChunks: a batch of chunks read together ----

// Reads |chunks| in one batch and checks every byte; returns the batch's
// status.
Status ReadBatch(ChunkStore* cs, const std::vector<Chunk>& chunks) {
  ChunkReadBatch batch;
  std::vector<size_t> at;
  for (const Chunk& c : chunks) at.push_back(batch.Add(c.id, c.fp));
  Status s = cs->ReadChunks(&batch);
  if (!s.ok()) return s;
  for (size_t i = 0; i < chunks.size(); i++) {
    EXPECT_EQ(batch.data(at[i]), chunks[i].data) << "chunk " << i << " of container " << chunks[i].id;
  }
  return s;
}

// Chunks stored side by side are read with one range; a gap of more than a
// few KiB starts another; each chunk is still checked (below).
TEST(ChunkStoreReadBatchTest, NeighboursAreReadWithOneRange) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  o.container_size = 1 << 20;  // all 40 chunks in one container
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  std::vector<Chunk> chunks;
  for (int i = 0; i < 40; i++) {
    chunks.push_back(MakeChunk(100 + i, 1000));
    ASSERT_TRUE(Store(cs.get(), &chunks.back()).ok());
  }
  ASSERT_TRUE(cs->Close().ok());
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  for (const Chunk& c : chunks) ASSERT_EQ(c.id, chunks[0].id);

  // Chunks 0-9 and 12-14 (a gap of 2 KB: one range), then 35-39 (a gap of
  // 20 KB: a second range); chunk 3 twice.
  std::vector<Chunk> wanted(chunks.begin(), chunks.begin() + 10);
  wanted.insert(wanted.end(), chunks.begin() + 12, chunks.begin() + 15);
  wanted.insert(wanted.end(), chunks.begin() + 35, chunks.end());
  wanted.push_back(chunks[3]);
  std::reverse(wanted.begin(), wanted.end());  // the order of the batch does not matter
  ASSERT_TRUE(ReadBatch(cs.get(), {chunks[20]}).ok());  // reads the metadata, one range
  const ChunkStoreStats before = cs->stats();
  EXPECT_EQ(before.range_reads, 1u);
  ASSERT_TRUE(ReadBatch(cs.get(), wanted).ok());
  ChunkStoreStats st = cs->stats();
  EXPECT_EQ(st.range_reads - before.range_reads, 2u);
  EXPECT_EQ(st.metadata_reads, 1u);
  EXPECT_EQ(st.container_reads, 0u);
  EXPECT_EQ(st.chunk_reads, 0u);
  // 15 chunks, with the 2 of the gap, and 5 chunks.
  EXPECT_EQ(st.bytes_read - before.bytes_read, 20u * 1000);

  ChunkReadBatch batch;
  EXPECT_EQ(batch.Add(chunks[1].id, chunks[1].fp), 0u);
  EXPECT_EQ(batch.Add(chunks[2].id, chunks[2].fp), 1u);
  EXPECT_EQ(batch.Add(chunks[1].id, chunks[1].fp), 0u);
  EXPECT_EQ(batch.size(), 2u);
}

// Six 1000-byte chunks from |seed| stored in one container of a store in
// |o|'s dir, which is then closed.
std::vector<Chunk> StoreSixAndClose(const ChunkStoreOptions& o, uint64_t seed) {
  std::unique_ptr<ChunkStore> cs;
  EXPECT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  std::vector<Chunk> chunks;
  for (int i = 0; i < 6; i++) {
    chunks.push_back(MakeChunk(seed + i, 1000));
    EXPECT_TRUE(Store(cs.get(), &chunks.back()).ok());
  }
  EXPECT_TRUE(cs->Close().ok());
  return chunks;
}

// Container |id| of the closed store in |dir| stored again as |change|
// leaves its bytes.
void RewriteContainer(const std::string& dir, ContainerId id, const std::function<void(std::string*)>& change) {
  std::unique_ptr<LocalContainerStore> store;
  ASSERT_TRUE(LocalContainerStore::Open(Env::Default(), dir, &store).ok());
  std::string bytes;
  ASSERT_TRUE(store->Get(id, &bytes).ok());
  change(&bytes);
  ASSERT_TRUE(store->Put(id, bytes).ok());
}

// Flips a byte |into| bytes into |chunk|'s data in |bytes|.
void FlipInside(const Chunk& chunk, size_t into, std::string* bytes) {
  const size_t at = bytes->find(chunk.data.substr(0, 64));
  ASSERT_NE(at, std::string::npos);
  (*bytes)[at + into] ^= 0x01;
}

// A damaged byte in a chunk read by range is Corruption naming the
// container and the chunk, never other bytes; the chunks around it read (a
// container is never read whole for a batch, so its data CRC does not stand
// in the way of its intact chunks).
TEST(ChunkStoreReadBatchTest, DamagedChunkInARangeIsCorruptionNamingIt) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  const std::vector<Chunk> chunks = StoreSixAndClose(o, 300);
  RewriteContainer(dir.path(), chunks[0].id, [&](std::string* b) { FlipInside(chunks[3], 500, b); });

  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  ChunkReadBatch batch;
  for (const Chunk& c : chunks) batch.Add(c.id, c.fp);
  Status s = cs->ReadChunks(&batch);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("container " + std::to_string(chunks[0].id)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(chunks[3].fp.ToHex()), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("does not match its checksum"), std::string::npos) << s.message();
  for (int round = 0; round < 4; round++) {
    ASSERT_TRUE(ReadBatch(cs.get(), {chunks[0], chunks[1], chunks[2], chunks[4], chunks[5]}).ok()) << round;
  }
  EXPECT_EQ(cs->stats().container_reads, 0u);
}

// A container of format 1 (written before each chunk had its CRC32C) is read
// by ranges too; a damaged chunk in it is found by its fingerprint, alone
// and in a batch, and the others read.
TEST(ChunkStoreReadBatchTest, FormatOneContainerIsCheckedByFingerprints) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  const std::vector<Chunk> chunks = StoreSixAndClose(o, 400);
  RewriteContainer(dir.path(), chunks[0].id, [](std::string* b) { *b = test::ContainerInFormatOne(*b); });

  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  ASSERT_TRUE(ReadBatch(cs.get(), chunks).ok());
  for (const Chunk& c : chunks) {
    std::string out;
    ASSERT_TRUE(cs->ReadChunk(c.id, c.fp, &out).ok());
    EXPECT_EQ(out, c.data);
  }
  ASSERT_TRUE(cs->Close().ok());
  cs.reset();

  RewriteContainer(dir.path(), chunks[0].id, [&](std::string* b) { FlipInside(chunks[2], 300, b); });
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  ChunkReadBatch batch;
  for (const Chunk& c : chunks) batch.Add(c.id, c.fp);
  Status s = cs->ReadChunks(&batch);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(chunks[2].fp.ToHex() + " does not match its fingerprint"), std::string::npos)
      << s.message();
  std::string out;
  s = cs->ReadChunk(chunks[2].id, chunks[2].fp, &out);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  ASSERT_TRUE(ReadBatch(cs.get(), {chunks[0], chunks[1], chunks[3], chunks[4], chunks[5]}).ok());
}

// Compressed chunks, chunks of open and committing containers, of the read
// cache and of merged containers (through their old ids) in one batch; a
// chunk a container does not hold is NotFound, a pseudo container
// InvalidArgument.
TEST(ChunkStoreReadBatchTest, EveryKindOfChunkInOneBatch) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  o.compression = Compression::kZlib;
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  std::vector<Chunk> stored = StoreMany(cs.get(), 400, 40);  // 3+ committed containers
  std::set<ContainerId> ids;
  for (const Chunk& c : stored) ids.insert(c.id);
  ASSERT_GE(ids.size(), 3u);
  std::vector<ContainerId> sources(ids.begin(), ids.end());
  sources.resize(2);
  ContainerId merged = kNoContainer;
  ASSERT_TRUE(cs->MergeContainers(sources, &merged).ok());
  ASSERT_TRUE(cs->Close().ok());
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());

  std::vector<Chunk> batch_chunks = stored;  // old ids of merged containers among them
  for (int i = 0; i < 3; i++) {
    Chunk c = MakeChunk(500 + i, 4000, /*compressible=*/true);
    ASSERT_TRUE(Store(cs.get(), &c).ok());  // in an open container
    batch_chunks.push_back(c);
  }
  ASSERT_TRUE(ReadBatch(cs.get(), batch_chunks).ok());
  ASSERT_TRUE(cs->Flush().ok());  // now committed, in the read cache
  ASSERT_TRUE(ReadBatch(cs.get(), batch_chunks).ok());

  ChunkReadBatch batch;
  batch.Add(stored[0].id, MakeChunk(999, 100).fp);
  EXPECT_TRUE(cs->ReadChunks(&batch).IsNotFound());
  batch.Reset();
  batch.Add(kZeroContainer, stored[0].fp);
  EXPECT_TRUE(cs->ReadChunks(&batch).IsInvalidArgument());
}

// Chunks a reader places (ChunkReadBatch::Place) are read straight into its
// output where they follow each other in their container and in the
// output; the others (a chunk cut at the output's edge, one the reader puts
// in two places) go through a buffer; every chunk is checked where it lands.
TEST(ChunkStoreReadBatchTest, PlacedChunksAreReadStraightIntoTheOutput) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  const std::vector<Chunk> chunks = StoreSixAndClose(o, 600);
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());

  // The output holds chunks 1-4 back to back, without chunk 1's first 100
  // bytes; chunk 3 is also wanted a second time, at the output's end (so it
  // has two places); chunk 0 is wanted in a buffer (not placed).
  const size_t n = 1000;
  std::string out(4 * n - 100 + n, '\0');
  uint8_t* base = reinterpret_cast<uint8_t*>(out.data());
  ChunkReadBatch batch;
  size_t at[6];
  at[1] = batch.Add(chunks[1].id, chunks[1].fp);
  batch.Place(at[1], base, 100, n - 100);
  for (int i = 2; i <= 4; i++) {
    at[i] = batch.Add(chunks[i].id, chunks[i].fp);
    batch.Place(at[i], base + (i - 1) * n - 100, 0, n);
  }
  batch.Place(at[3], base + 4 * n - 100, 0, n);
  at[0] = batch.Add(chunks[0].id, chunks[0].fp);
  EXPECT_EQ(batch.placement(at[2], n), base + n - 100);
  EXPECT_EQ(batch.placement(at[2], n + 1), nullptr) << "a chunk longer than what is copied is not placed";
  EXPECT_EQ(batch.placement(at[1], n), nullptr) << "cut at the output's start";
  EXPECT_EQ(batch.placement(at[3], n), nullptr) << "two places";
  {
    // A damaged mapping copying beyond the chunk's end: as many bytes as the
    // chunk has, but not [0, n) of it. Never placed (the read would land
    // before the output).
    ChunkReadBatch damaged;
    const size_t d = damaged.Add(chunks[5].id, chunks[5].fp);
    damaged.Place(d, base, 100, n);
    EXPECT_EQ(damaged.placement(d, n), nullptr);
  }

  ASSERT_TRUE(cs->ReadChunks(&batch).ok());
  for (int i : {0, 1, 2, 3, 4}) EXPECT_EQ(batch.data(at[i]), chunks[i].data) << i;
  EXPECT_EQ(batch.data(at[2]).data(), out.data() + n - 100) << "chunk 2 was read in place";
  EXPECT_EQ(batch.data(at[4]).data(), out.data() + 3 * n - 100) << "chunk 4 was read in place";
  EXPECT_EQ(out.substr(n - 100, n), chunks[2].data);
  EXPECT_EQ(out.substr(3 * n - 100, n), chunks[4].data);
  // Nothing else of the output was written (the reader copies the rest).
  EXPECT_EQ(out.substr(0, n - 100), std::string(n - 100, '\0'));
  EXPECT_EQ(out.substr(2 * n - 100, n), std::string(n, '\0'));
  EXPECT_EQ(out.substr(4 * n - 100), std::string(n, '\0'));
  EXPECT_EQ(cs->stats().chunks_read_in_place, 2u);
  // Chunks 0 and 1 share a range into a buffer, chunk 3 (between the placed
  // 2 and 4) has one of its own: four ranges.
  EXPECT_EQ(cs->stats().range_reads, 4u);

  // Chunks 2, 3 and 4 placed back to back: one range straight into place.
  std::string out2(3 * n, '\0');
  uint8_t* base2 = reinterpret_cast<uint8_t*>(out2.data());
  ChunkReadBatch run;
  for (int i = 2; i <= 4; i++) run.Place(run.Add(chunks[i].id, chunks[i].fp), base2 + (i - 2) * n, 0, n);
  const ChunkStoreStats before_run = cs->stats();
  ASSERT_TRUE(cs->ReadChunks(&run).ok());
  EXPECT_EQ(out2, chunks[2].data + chunks[3].data + chunks[4].data);
  for (size_t i = 0; i < 3; i++) EXPECT_EQ(run.data(i).data(), out2.data() + i * n) << i;
  EXPECT_EQ(cs->stats().range_reads - before_run.range_reads, 1u);
  EXPECT_EQ(cs->stats().chunks_read_in_place - before_run.chunks_read_in_place, 3u);
  ASSERT_TRUE(cs->Close().ok());
  cs.reset();

  // A damaged chunk read in place is Corruption naming it; no other bytes
  // are taken for it.
  RewriteContainer(dir.path(), chunks[0].id, [&](std::string* b) { FlipInside(chunks[2], 10, b); });
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  ChunkReadBatch again;
  const size_t i2 = again.Add(chunks[2].id, chunks[2].fp);
  again.Place(i2, base, 0, n);
  Status s = cs->ReadChunks(&again);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(chunks[2].fp.ToHex() + " does not match its checksum"), std::string::npos)
      << s.message();
  EXPECT_EQ(cs->stats().range_reads, 1u) << "read in place (one range), then refused";
  EXPECT_EQ(cs->stats().chunks_read_in_place, 0u) << "a chunk that fails its check is not counted";
}

// A store that copies anyway (not ReadsIntoPlace: the memory store, RADOS)
// keeps neighbours in one coalesced range, placed or not.
TEST(ChunkStoreReadBatchTest, StoresThatCopyAnywayKeepCoalescedRanges) {
  test::TempDir dir;
  ChunkStoreOptions o = SmallOptions(dir.path());
  o.backend = "memory";
  o.container_size = 1 << 20;
  o.read_cache_containers = 0;  // every read goes to the backend
  std::unique_ptr<ChunkStore> cs;
  ASSERT_TRUE(ChunkStore::Open(o, Env::Default(), &cs).ok());
  const size_t n = 1000;
  const std::vector<Chunk> chunks = StoreMany(cs.get(), 700, 5, n);
  std::string out(5 * n - 100, '\0');
  uint8_t* base = reinterpret_cast<uint8_t*>(out.data());
  ChunkReadBatch batch;
  batch.Place(batch.Add(chunks[0].id, chunks[0].fp), base, 100, n - 100);
  for (size_t i = 1; i < 5; i++) batch.Place(batch.Add(chunks[i].id, chunks[i].fp), base + i * n - 100, 0, n);
  const ChunkStoreStats before = cs->stats();
  ASSERT_TRUE(cs->ReadChunks(&batch).ok());
  for (size_t i = 0; i < 5; i++) EXPECT_EQ(batch.data(i), chunks[i].data) << i;
  EXPECT_EQ(cs->stats().range_reads - before.range_reads, 1u);
  EXPECT_EQ(cs->stats().chunks_read_in_place, 0u);
}

}  // namespace
}  // namespace dedupv1

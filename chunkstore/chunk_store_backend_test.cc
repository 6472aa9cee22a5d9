// The chunk store's life cycle on every storage backend (value-parameterized
// over chunkstore/storage_backend_registry.h): what it keeps in the
// ContainerStore and the ContainerCatalog across a reopen is the same
// whichever backend holds it. The detailed behaviour is tested on the local
// backend in chunk_store_test.cc.
#include "chunkstore/chunk_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "chunkstore/storage_backend_testutil.h"

namespace dedupv1 {
namespace {

struct Chunk {
  Fingerprint fp;
  std::string data;
  ContainerId id = kNoContainer;
};

class ChunkStoreBackendTest : public test::StorageBackendTest {
 protected:
  ChunkStoreBackendTest() {
    options_.container_size = 32 << 10;
    options_.writer_threads = 2;
    options_.commit_timeout_ms = 600000;
    options_.read_cache_containers = 0;  // every read goes to the backend
  }

  std::unique_ptr<ChunkStore> OpenStore() {
    std::unique_ptr<ChunkStore> cs;
    Status s = ChunkStore::Open(options_, Env::Default(), &cs);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return cs;
  }

  // |n| chunks of 2000 bytes, committed; about 15 per container.
  std::vector<Chunk> StoreMany(ChunkStore* cs, uint64_t seed, int n) {
    std::vector<Chunk> chunks;
    for (int i = 0; i < n; i++) {
      Chunk c;
      std::vector<uint8_t> r = test::RandomBytes(2000, seed + i);
      c.data.assign(r.begin(), r.end());
      ComputeFingerprint(FingerprintType::kSha1, r.data(), r.size(), &c.fp);
      EXPECT_TRUE(cs->StoreChunk(c.fp, r.data(), r.size(), 0, &c.id).ok());
      chunks.push_back(std::move(c));
    }
    EXPECT_TRUE(cs->Flush().ok());
    return chunks;
  }

  void ExpectReadable(ChunkStore* cs, const std::vector<Chunk>& chunks) {
    for (const Chunk& c : chunks) {
      std::string data;
      Status s = cs->ReadChunk(c.id, c.fp, &data);
      ASSERT_TRUE(s.ok()) << "container " << c.id << ": " << s.ToString();
      ASSERT_EQ(data, c.data) << "container " << c.id;
    }
  }
};

TEST_P(ChunkStoreBackendTest, ContainersAndCatalogSurviveAReopen) {
  std::vector<Chunk> chunks;
  std::vector<ContainerId> sources;
  ContainerId merged = kNoContainer;
  ContainerId last = kNoContainer;
  {
    std::unique_ptr<ChunkStore> cs = OpenStore();
    chunks = StoreMany(cs.get(), 1, 60);
    std::set<ContainerId> ids;
    for (const auto& c : chunks) ids.insert(c.id);
    ASSERT_GE(ids.size(), 3u);
    sources = {*ids.begin(), *std::next(ids.begin())};
    // Two of three chunks of each source are garbage: marked, persisted, and
    // left out of the merge.
    std::vector<Chunk> live;
    std::map<ContainerId, int> seen;
    uint64_t marked = 0;
    for (const Chunk& c : chunks) {
      const bool in_source = c.id == sources[0] || c.id == sources[1];
      if (in_source && seen[c.id]++ % 3 != 0) {
        cs->MarkDead(c.id, {c.fp});
        marked++;
      } else {
        live.push_back(c);
      }
    }
    EXPECT_EQ(cs->stats().dead_chunks_marked, marked);
    ASSERT_TRUE(cs->PersistDeadMarks().ok());
    ASSERT_TRUE(cs->MergeContainers(sources, &merged).ok());
    ASSERT_NE(merged, kNoContainer);
    for (ContainerId src : sources) EXPECT_EQ(cs->Resolve(src), merged);
    chunks = live;
    ExpectReadable(cs.get(), chunks);
    last = cs->last_allocated_id();
    ASSERT_TRUE(cs->Close().ok());
  }
  std::unique_ptr<ChunkStore> cs = OpenStore();
  // The merge records: the old ids still answer.
  for (ContainerId src : sources) {
    EXPECT_EQ(cs->Resolve(src), merged);
    EXPECT_TRUE(cs->IsCommitted(src));
  }
  std::vector<ContainerId> listed;
  ASSERT_TRUE(cs->ListCommitted(&listed).ok());
  for (ContainerId src : sources) EXPECT_EQ(std::count(listed.begin(), listed.end(), src), 0);
  ExpectReadable(cs.get(), chunks);
  // The dead marks of merged containers are gone with them; the summaries
  // of the stored containers were kept.
  EXPECT_EQ(cs->stats().dead_marks_loaded, 0u);
  EXPECT_EQ(cs->stats().summaries_loaded, listed.size());
  ContainerSummary summary;
  ASSERT_TRUE(cs->GetSummary(merged, &summary));
  EXPECT_EQ(summary.chunks, static_cast<uint64_t>(std::count_if(
                                chunks.begin(), chunks.end(), [&](const Chunk& c) { return cs->Resolve(c.id) == merged; })));
  // The id mark: no id is handed out twice.
  std::vector<Chunk> more = StoreMany(cs.get(), 1000, 1);
  EXPECT_GT(more[0].id, last);
  // Deleting the merged container forgets its old ids, also after a reopen.
  ASSERT_TRUE(cs->DeleteContainer(merged).ok());
  EXPECT_FALSE(cs->IsCommitted(sources[0]));
  ASSERT_TRUE(cs->Close().ok());
  cs = OpenStore();
  EXPECT_EQ(cs->Resolve(sources[0]), sources[0]);
  EXPECT_FALSE(cs->IsCommitted(sources[0]));
  EXPECT_FALSE(cs->IsCommitted(merged));
  ExpectReadable(cs.get(), more);
}

INSTANTIATE_TEST_SUITE_P(Backends, ChunkStoreBackendTest, ::testing::ValuesIn(test::BackendsWithoutCluster()),
                         test::BackendName);

TEST(ChunkStoreBackendRegistryTest, UnknownBackendIsRefused) {
  test::TempDir dir;
  ChunkStoreOptions o;
  o.dir = dir.path();
  o.backend = "tape";
  std::unique_ptr<ChunkStore> cs;
  Status s = ChunkStore::Open(o, Env::Default(), &cs);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("'tape'"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("local, memory"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace dedupv1

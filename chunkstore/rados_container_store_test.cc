// The "rados" storage backend against a real Ceph cluster: the container
// store contract (the same assertions container_store_test.cc makes for the
// backends without a cluster), a whole ChunkStore on it, a pool over its
// quota and damaged objects. Needs DEDUPV1_TEST_CEPH_CONF (a cluster with
// the pools dedupv1-data and dedupv1-index); fails without it. Every test
// uses a RADOS namespace of its own and removes its objects afterwards.
#include "chunkstore/rados_container_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

#include "chunkstore/chunk_store.h"
#include "chunkstore/rados_storage_backend.h"
#include "chunkstore/storage_backend_registry.h"
#include "core/base/testutil.h"
#include "core/rados/rados_env_testutil.h"

namespace dedupv1 {
namespace {

std::string CephConf() {
  const char* conf = std::getenv("DEDUPV1_TEST_CEPH_CONF");
  return conf ? conf : "";
}

// A namespace no other test run uses.
std::string UniqueStore() { return test::UniqueTestNamespace(); }

// Runs the ceph CLI on the test cluster; its exit code.
int Ceph(const std::string& args) {
  const std::string cmd = "ceph -c '" + CephConf() + "' " + args + " >/dev/null 2>&1";
  return std::system(cmd.c_str());
}

class RadosBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(CephConf().empty()) << "DEDUPV1_TEST_CEPH_CONF is not set: these tests need a Ceph cluster "
                                        "(run them through ctest -L ceph, which starts one)";
    options_.backend = "rados";
    options_.dir = dir_.Sub("catalog");
    options_.rados.conf_file = CephConf();
    options_.rados.store = UniqueStore();
    options_.rados.op_timeout_s = 20;
    ASSERT_TRUE(RadosCluster::Shared(options_.rados, &cluster_).ok());
  }

  void TearDown() override {
    if (!cluster_) return;
    RemoveAll(cluster_.get());
  }

  // Removes every object of the cluster's namespace in its data pool.
  static void RemoveAll(RadosCluster* cluster) {
    librados::IoCtx& io = cluster->data();
    std::vector<std::string> names;
    for (auto it = io.nobjects_begin(); it != io.nobjects_end(); ++it) names.push_back(it->get_oid());
    for (const std::string& name : names) io.remove(name);
  }

  void Open(StorageOpenMode mode = StorageOpenMode::kCreate) {
    storage_ = StorageBackend();
    Status s = OpenStorageBackend(options_, Env::Default(), mode, &storage_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Writes |bytes| over a container's object behind the store's back.
  void OverwriteObject(ContainerId id, const std::string& bytes) {
    librados::bufferlist bl;
    bl.append(bytes.data(), bytes.size());
    ASSERT_EQ(cluster_->data().write_full(RadosContainerStore::ObjectName(id), bl), 0);
  }

  test::TempDir dir_;
  ChunkStoreOptions options_;
  std::shared_ptr<RadosCluster> cluster_;
  StorageBackend storage_;
};

TEST_F(RadosBackendTest, ObjectNamesAreFixedWidthAndForeignNamesAreNotContainers) {
  EXPECT_EQ(RadosContainerStore::ObjectName(0x105), "c.0000000000000105");
  ContainerId id = 0;
  EXPECT_TRUE(RadosContainerStore::ParseObjectName("c.ffffffffffffffff", &id));
  EXPECT_EQ(id, ~0ull);
  for (const char* foreign : {"c.105", "c.000000000000010G", "c.0000000000000105.tmp", "d.0000000000000105",
                              "C.0000000000000105", kRadosStoreMarkerObject}) {
    EXPECT_FALSE(RadosContainerStore::ParseObjectName(foreign, &id)) << foreign;
  }
}

TEST_F(RadosBackendTest, PutGetDeleteListAndUsedBytes) {
  Open();
  ContainerStore* store = storage_.containers.get();
  ASSERT_TRUE(store->Put(1, "one").ok());
  ASSERT_TRUE(store->Put(0x105, "two-hundred-sixty-one").ok());
  ASSERT_TRUE(store->Put(7, "seven").ok());
  // A foreign object in the namespace is no container.
  librados::bufferlist foreign;
  foreign.append("x");
  ASSERT_EQ(cluster_->data().write_full("not-a-container", foreign), 0);

  std::string bytes;
  ASSERT_TRUE(store->Get(0x105, &bytes).ok());
  EXPECT_EQ(bytes, "two-hundred-sixty-one");
  Status s = store->Get(2, &bytes);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find("container 2"), std::string::npos) << s.ToString();
  EXPECT_EQ(store->Where(2), "rados:dedupv1-data/" + options_.rados.store + "/c.0000000000000002");

  std::vector<ContainerId> ids;
  ASSERT_TRUE(store->List(&ids).ok());
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<ContainerId>{1, 7, 0x105}));

  uint64_t used = 0;
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 3u + 21u + 5u);

  // Overwrite replaces the content and the accounting.
  ASSERT_TRUE(store->Put(7, "SEVEN!!").ok());
  ASSERT_TRUE(store->Get(7, &bytes).ok());
  EXPECT_EQ(bytes, "SEVEN!!");
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 3u + 21u + 7u);
  // A new one is added to the kept total.
  ASSERT_TRUE(store->Put(8, "eight").ok());
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 3u + 21u + 7u + 5u);

  ASSERT_TRUE(store->Delete(1).ok());
  s = store->Delete(1);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_TRUE(store->Get(1, &bytes).IsNotFound());
  ASSERT_TRUE(store->List(&ids).ok());
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<ContainerId>{7, 8, 0x105}));
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 21u + 7u + 5u);

  // Reopen: same content, same accounting (counted again from the objects).
  Open();
  store = storage_.containers.get();
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 21u + 7u + 5u);
  ASSERT_TRUE(store->Get(0x105, &bytes).ok());
  EXPECT_EQ(bytes, "two-hundred-sixty-one");
}

// PutNew (what commits use) never replaces: its own bytes again are OK (a
// retry after a timeout that had landed), other bytes fail naming the object.
TEST_F(RadosBackendTest, PutNewAcceptsItsOwnBytesAndRefusesOthers) {
  Open();
  ContainerStore* store = storage_.containers.get();
  ASSERT_TRUE(store->PutNew(9, "nine").ok());
  uint64_t used = 0;
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 4u);
  ASSERT_TRUE(store->PutNew(9, "nine").ok());
  Status s = store->PutNew(9, "NINE");
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find("another writer owns this id"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(store->Where(9)), std::string::npos) << s.ToString();
  std::string bytes;
  ASSERT_TRUE(store->Get(9, &bytes).ok());
  EXPECT_EQ(bytes, "nine");
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 4u);
}

TEST_F(RadosBackendTest, ListPagesThroughManyContainers) {
  Open();
  ContainerStore* store = storage_.containers.get();
  const RadosStats before = cluster_->stats();
  for (ContainerId id = 1; id <= 1100; id++) ASSERT_TRUE(store->Put(id, "x").ok());
  const RadosStats after_puts = cluster_->stats();
  const int write = static_cast<int>(RadosOpKind::kWrite);
  EXPECT_EQ(after_puts.kinds[write].ops - before.kinds[write].ops, 1100u) << "one op per new container";
  std::vector<ContainerId> ids;
  ASSERT_TRUE(store->List(&ids).ok());
  EXPECT_EQ(ids.size(), 1100u);
  EXPECT_EQ(std::set<ContainerId>(ids.begin(), ids.end()).size(), 1100u);
  const int list = static_cast<int>(RadosOpKind::kList);
  EXPECT_GE(cluster_->stats().kinds[list].ops - after_puts.kinds[list].ops, 2u) << "more than one page";
  uint64_t used = 0;
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 1100u);
}

TEST_F(RadosBackendTest, HeadAndRangeReadPartsOfAContainer) {
  Open();
  ContainerStore* store = storage_.containers.get();
  ASSERT_TRUE(store->Put(3, "0123456789").ok());
  const RadosStats before = cluster_->stats();
  std::string bytes;
  ASSERT_TRUE(store->GetHead(3, 4, &bytes).ok());
  EXPECT_EQ(bytes, "0123");
  ASSERT_TRUE(store->GetHead(3, 100, &bytes).ok());  // a head longer than the container is all of it
  EXPECT_EQ(bytes, "0123456789");
  ASSERT_TRUE(store->GetRange(3, 6, 4, &bytes).ok());
  EXPECT_EQ(bytes, "6789");
  const RadosStats after = cluster_->stats();
  const int read = static_cast<int>(RadosOpKind::kRead);
  EXPECT_EQ(after.kinds[read].ops - before.kinds[read].ops, 3u) << "one op per read";
  EXPECT_EQ(after.kinds[read].bytes - before.kinds[read].bytes, 4u + 10u + 4u) << "only the ranges travel";
  Status s = store->GetRange(3, 8, 4, &bytes);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("container 3"), std::string::npos) << s.ToString();
  s = store->GetRange(3, 20, 4, &bytes);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE(store->GetHead(4, 4, &bytes).IsNotFound());
  EXPECT_TRUE(store->GetRange(4, 0, 1, &bytes).IsNotFound());
}

TEST_F(RadosBackendTest, GetRangesHasManyReadsInFlightEachWithItsResult) {
  Open();
  ContainerStore* store = storage_.containers.get();
  std::string content;
  for (int i = 0; i < 1000; i++) content += static_cast<char>('a' + i % 26);
  for (ContainerId id = 1; id <= 10; id++) ASSERT_TRUE(store->Put(id, std::to_string(id) + content).ok());
  std::vector<ContainerStore::RangeRead> reads;
  for (int i = 0; i < 200; i++) {
    ContainerStore::RangeRead r;
    r.id = 1 + i % 10;
    r.offset = i;
    r.n = 100;
    reads.push_back(r);
  }
  reads.push_back({});
  reads.back().id = 11;  // absent
  reads.back().n = 1;
  reads.push_back({});
  reads.back().id = 1;  // past the end
  reads.back().offset = 990;
  reads.back().n = 20;
  const RadosStats before = cluster_->stats();
  store->GetRanges(&reads);
  const int read = static_cast<int>(RadosOpKind::kRead);
  EXPECT_EQ(cluster_->stats().kinds[read].ops - before.kinds[read].ops, 202u);
  for (int i = 0; i < 200; i++) {
    ASSERT_TRUE(reads[i].status.ok()) << i << ": " << reads[i].status.ToString();
    EXPECT_EQ(reads[i].bytes, (std::to_string(1 + i % 10) + content).substr(i, 100)) << i;
  }
  EXPECT_TRUE(reads[200].status.IsNotFound()) << reads[200].status.ToString();
  EXPECT_TRUE(reads[201].status.IsCorruption()) << reads[201].status.ToString();
  EXPECT_NE(reads[201].status.message().find("container 1"), std::string::npos);
}

TEST_F(RadosBackendTest, ExistingModeFindsOnlyACreatedStore) {
  StorageBackend existing;
  Status s = OpenStorageBackend(options_, Env::Default(), StorageOpenMode::kExisting, &existing);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find(options_.rados.store), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("dedupv1-data"), std::string::npos) << s.ToString();
  // kExisting created nothing.
  EXPECT_TRUE(OpenStorageBackend(options_, Env::Default(), StorageOpenMode::kExisting, &existing).IsNotFound());
  // Created, even empty, it exists.
  Open();
  s = OpenStorageBackend(options_, Env::Default(), StorageOpenMode::kExisting, &existing);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(storage_.containers->Put(5, "five").ok());
  std::string bytes;
  ASSERT_TRUE(existing.containers->Get(5, &bytes).ok());
  EXPECT_EQ(bytes, "five");
  std::vector<ContainerId> ids;
  ASSERT_TRUE(existing.containers->List(&ids).ok());
  EXPECT_EQ(ids, (std::vector<ContainerId>{5}));  // the marker is not a container
}

TEST_F(RadosBackendTest, WrongPoolIsANamedError) {
  options_.rados.data_pool = "no-such-pool-" + std::to_string(getpid());
  StorageBackend b;
  Status s = OpenStorageBackend(options_, Env::Default(), StorageOpenMode::kCreate, &b);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find(options_.rados.data_pool), std::string::npos) << s.ToString();
}

// A whole ChunkStore on the rados backend.
class RadosChunkStoreTest : public RadosBackendTest {
 protected:
  struct Chunk {
    Fingerprint fp;
    std::string data;
    ContainerId id = kNoContainer;
  };

  void SetUp() override {
    RadosBackendTest::SetUp();
    options_.container_size = 32 << 10;
    options_.writer_threads = 2;
    options_.commit_timeout_ms = 600000;
    options_.read_cache_containers = 0;  // every read goes to RADOS
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
    Status s = cs->Flush();
    EXPECT_TRUE(s.ok()) << s.ToString();
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

TEST_F(RadosChunkStoreTest, WriteReadReopenMergeAndDelete) {
  std::vector<Chunk> chunks;
  std::set<ContainerId> ids;
  {
    std::unique_ptr<ChunkStore> cs = OpenStore();
    chunks = StoreMany(cs.get(), 1, 60);
    for (const auto& c : chunks) ids.insert(c.id);
    ASSERT_GE(ids.size(), 3u);
    ExpectReadable(cs.get(), chunks);
    ASSERT_TRUE(cs->Close().ok());
  }
  // Every container is an object of the data pool.
  for (ContainerId id : ids) {
    uint64_t size = 0;
    EXPECT_EQ(cluster_->data().stat(RadosContainerStore::ObjectName(id), &size, nullptr), 0) << id;
  }
  std::unique_ptr<ChunkStore> cs = OpenStore();
  ExpectReadable(cs.get(), chunks);
  std::vector<ContainerId> listed;
  ASSERT_TRUE(cs->ListCommitted(&listed).ok());
  EXPECT_EQ(std::set<ContainerId>(listed.begin(), listed.end()), ids);

  // GC: two of three chunks of two containers are garbage; merge what is
  // left of them into a new container, then delete that one.
  const std::vector<ContainerId> sources = {*ids.begin(), *std::next(ids.begin())};
  std::vector<Chunk> live;
  std::map<ContainerId, int> seen;
  for (const Chunk& c : chunks) {
    const bool in_source = c.id == sources[0] || c.id == sources[1];
    if (in_source && seen[c.id]++ % 3 != 0) {
      cs->MarkDead(c.id, {c.fp});
    } else {
      live.push_back(c);
    }
  }
  ASSERT_TRUE(cs->PersistDeadMarks().ok());
  ContainerId merged = kNoContainer;
  ASSERT_TRUE(cs->MergeContainers(sources, &merged).ok());
  ASSERT_NE(merged, kNoContainer);
  ExpectReadable(cs.get(), live);
  for (ContainerId src : sources) {
    uint64_t size = 0;
    EXPECT_EQ(cluster_->data().stat(RadosContainerStore::ObjectName(src), &size, nullptr), -ENOENT) << src;
  }
  uint64_t used_before = 0, used_after = 0;
  ASSERT_TRUE(cs->UsedBytes(&used_before).ok());
  ASSERT_TRUE(cs->DeleteContainer(merged).ok());
  ASSERT_TRUE(cs->UsedBytes(&used_after).ok());
  EXPECT_LT(used_after, used_before);
  EXPECT_FALSE(cs->IsCommitted(merged));
  uint64_t size = 0;
  EXPECT_EQ(cluster_->data().stat(RadosContainerStore::ObjectName(merged), &size, nullptr), -ENOENT);
  ASSERT_TRUE(cs->Close().ok());
  cs = OpenStore();
  EXPECT_FALSE(cs->IsCommitted(merged));
  EXPECT_FALSE(cs->IsCommitted(sources[0]));
}

// Another writer's container under the id this store commits next (a
// paused old incarnation of the slot, a second store on the namespace): the
// commit fails naming it and the other container stays as it was; it was
// replaced before.
TEST_F(RadosChunkStoreTest, CommitNeverReplacesAnotherWritersContainer) {
  std::unique_ptr<ChunkStore> cs = OpenStore();
  ASSERT_TRUE(cs);
  const ContainerId next = 1;  // a fresh store's first id
  const std::string theirs = "a container of another writer";
  OverwriteObject(next, theirs);
  Chunk c;
  std::vector<uint8_t> r = test::RandomBytes(2000, 5);
  c.data.assign(r.begin(), r.end());
  ComputeFingerprint(FingerprintType::kSha1, r.data(), r.size(), &c.fp);
  ASSERT_TRUE(cs->StoreChunk(c.fp, r.data(), r.size(), 0, &c.id).ok());
  ASSERT_EQ(next, c.id);
  Status s = cs->Flush();
  ASSERT_FALSE(s.ok()) << "the commit replaced another writer's container";
  EXPECT_NE(s.message().find("another writer owns this id"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(RadosContainerStore::ObjectName(next)), std::string::npos) << s.ToString();
  librados::bufferlist bl;
  ASSERT_EQ(cluster_->data().read(RadosContainerStore::ObjectName(next), bl, 0, 0), static_cast<int>(theirs.size()));
  EXPECT_EQ(bl.to_str(), theirs);
  cs->Close();
}

TEST_F(RadosChunkStoreTest, DamagedObjectsAreCorruptionNeverWrongData) {
  std::unique_ptr<ChunkStore> cs = OpenStore();
  std::vector<Chunk> chunks = StoreMany(cs.get(), 7, 40);
  const ContainerId victim = chunks.front().id;
  std::string original;
  Open();
  ASSERT_TRUE(storage_.containers->Get(victim, &original).ok());

  // A flipped byte in the chunk data: the chunk's fingerprint catches it.
  std::string damaged = original;
  damaged[damaged.size() - 1] ^= 0x40;
  OverwriteObject(victim, damaged);
  int corrupt = 0;
  for (const Chunk& c : chunks) {
    std::string data;
    Status s = cs->ReadChunk(c.id, c.fp, &data);
    if (c.id == victim && !s.ok()) {
      EXPECT_TRUE(s.IsCorruption()) << s.ToString();
      corrupt++;
      continue;
    }
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(data, c.data);
  }
  EXPECT_EQ(corrupt, 1);

  // A flipped byte in the metadata: its CRC catches it.
  damaged = original;
  damaged[Container::kHeaderSize + 2] ^= 0x01;
  OverwriteObject(victim, damaged);
  ASSERT_TRUE(cs->Close().ok());
  cs = OpenStore();  // nothing cached
  std::string data;
  Status s = cs->ReadChunk(victim, chunks.front().fp, &data);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();

  // Cut short: the chunk's range is missing.
  OverwriteObject(victim, original.substr(0, original.size() - 100));
  ASSERT_TRUE(cs->Close().ok());
  cs = OpenStore();
  corrupt = 0;
  for (const Chunk& c : chunks) {
    if (c.id != victim) continue;
    s = cs->ReadChunk(c.id, c.fp, &data);
    if (!s.ok()) {
      EXPECT_TRUE(s.IsCorruption()) << s.ToString();
      corrupt++;
    } else {
      EXPECT_EQ(data, c.data);
    }
  }
  EXPECT_GE(corrupt, 1);
}

// A pool over its quota: NoSpace naming the pool, and what was stored still
// reads back. The pool is the test's own and is deleted afterwards.
class RadosQuotaTest : public RadosChunkStoreTest {
 protected:
  void SetUp() override {
    ASSERT_FALSE(CephConf().empty()) << "DEDUPV1_TEST_CEPH_CONF is not set: these tests need a Ceph cluster";
    pool_ = "t-quota-" + std::to_string(getpid());
    ASSERT_EQ(Ceph("osd pool create " + pool_ + " 8"), 0) << "cannot create pool " << pool_;
    created_ = true;
    ASSERT_EQ(Ceph("osd pool application enable " + pool_ + " rados"), 0);
    RadosChunkStoreTest::SetUp();
  }
  void TearDown() override {
    quota_cluster_.reset();
    RadosChunkStoreTest::TearDown();
    if (created_) Ceph("osd pool delete " + pool_ + " " + pool_ + " --yes-i-really-really-mean-it");
  }

  std::string pool_;
  bool created_ = false;
  std::shared_ptr<RadosCluster> quota_cluster_;
};

TEST_F(RadosQuotaTest, FullPoolIsNoSpaceNamingThePoolAndStoredDataReadsBack) {
  options_.rados.data_pool = pool_;
  // Not shorter: the put that meets the new "full" map waits until the OSD
  // has that map too, which took over 10 s once on this loaded machine.
  options_.rados.op_timeout_s = 30;
  ASSERT_TRUE(RadosCluster::Shared(options_.rados, &quota_cluster_).ok());
  std::unique_ptr<ChunkStore> cs = OpenStore();
  ASSERT_TRUE(cs);
  std::vector<Chunk> stored = StoreMany(cs.get(), 100, 30);
  ASSERT_EQ(Ceph("osd pool set-quota " + pool_ + " max_objects 1"), 0);
  // The monitors mark the pool full once the OSDs have reported its object
  // count: bounded wait, one container per try.
  Status s;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  Open();
  int tries = 0;
  for (ContainerId id = 1000000; std::chrono::steady_clock::now() < deadline; id++, tries++) {
    s = storage_.containers->Put(id, std::string(4096, 'q'));
    if (!s.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_TRUE(s.IsNoSpace()) << "after " << tries << " puts: " << s.ToString();
  EXPECT_NE(s.message().find("'" + pool_ + "'"), std::string::npos) << s.ToString();
  // The chunk store's own commit fails the same way.
  std::vector<uint8_t> r = test::RandomBytes(2000, 99999);
  Fingerprint fp;
  ComputeFingerprint(FingerprintType::kSha1, r.data(), r.size(), &fp);
  ContainerId id = kNoContainer;
  ASSERT_TRUE(cs->StoreChunk(fp, r.data(), r.size(), 0, &id).ok());
  s = cs->Flush();
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_NE(s.message().find(pool_), std::string::npos) << s.ToString();
  // Nothing stored is lost.
  ExpectReadable(cs.get(), stored);
  // Deleting still works in a full pool (GC frees space).
  s = storage_.containers->Delete(1000000);
  EXPECT_TRUE(s.ok()) << s.ToString();
  // Raising the quota lets the store go on.
  ASSERT_EQ(Ceph("osd pool set-quota " + pool_ + " max_objects 0"), 0);
}

}  // namespace
}  // namespace dedupv1

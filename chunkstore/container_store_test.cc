// ContainerStore's contract, run against every storage backend: the same
// assertions hold for the local files and for memory. Local-only behaviour
// (file names, temp files, fault injection) is in local_container_store_test.cc.
#include "chunkstore/container_store.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "chunkstore/storage_backend_testutil.h"

namespace dedupv1 {
namespace {

class ContainerStoreTest : public test::StorageBackendTest {};

TEST_P(ContainerStoreTest, PutGetDeleteList) {
  Reopen();
  ContainerStore* store = storage_.containers.get();
  ASSERT_TRUE(store->Put(1, "one").ok());
  ASSERT_TRUE(store->Put(0x105, "two-hundred-sixty-one").ok());
  ASSERT_TRUE(store->Put(7, "seven").ok());

  std::string bytes;
  ASSERT_TRUE(store->Get(0x105, &bytes).ok());
  EXPECT_EQ(bytes, "two-hundred-sixty-one");
  Status s = store->Get(2, &bytes);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find("container 2"), std::string::npos);

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

  ASSERT_TRUE(store->Delete(1).ok());
  EXPECT_TRUE(store->Delete(1).IsNotFound());
  EXPECT_TRUE(store->Get(1, &bytes).IsNotFound());
  ASSERT_TRUE(store->List(&ids).ok());
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<ContainerId>{7, 0x105}));

  // Reopen: same content, same accounting.
  Reopen();
  store = storage_.containers.get();
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 21u + 7u);
  ASSERT_TRUE(store->Get(0x105, &bytes).ok());
  EXPECT_EQ(bytes, "two-hundred-sixty-one");
}

TEST_P(ContainerStoreTest, HeadAndRangeReadPartsOfAContainer) {
  Reopen();
  ContainerStore* store = storage_.containers.get();
  ASSERT_TRUE(store->Put(3, "0123456789").ok());
  std::string bytes;
  ASSERT_TRUE(store->GetHead(3, 4, &bytes).ok());
  EXPECT_EQ(bytes, "0123");
  ASSERT_TRUE(store->GetHead(3, 100, &bytes).ok());  // a head longer than the container is all of it
  EXPECT_EQ(bytes, "0123456789");
  ASSERT_TRUE(store->GetRange(3, 6, 4, &bytes).ok());
  EXPECT_EQ(bytes, "6789");
  Status s = store->GetRange(3, 8, 4, &bytes);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("container 3"), std::string::npos) << s.ToString();
  EXPECT_TRUE(store->GetHead(4, 4, &bytes).IsNotFound());
  EXPECT_TRUE(store->GetRange(4, 0, 1, &bytes).IsNotFound());
}

TEST_P(ContainerStoreTest, GetRangesGivesEachRangeItsOwnResult) {
  Reopen();
  ContainerStore* store = storage_.containers.get();
  ASSERT_TRUE(store->Put(3, "0123456789").ok());
  ASSERT_TRUE(store->Put(4, "abcdef").ok());
  std::vector<ContainerStore::RangeRead> reads(4);
  reads[0].id = 3, reads[0].offset = 6, reads[0].n = 4;
  reads[1].id = 4, reads[1].offset = 1, reads[1].n = 2;
  reads[2].id = 5, reads[2].offset = 0, reads[2].n = 1;  // absent
  reads[3].id = 4, reads[3].offset = 4, reads[3].n = 4;  // short
  store->GetRanges(&reads);
  ASSERT_TRUE(reads[0].status.ok()) << reads[0].status.ToString();
  EXPECT_EQ(reads[0].bytes, "6789");
  ASSERT_TRUE(reads[1].status.ok()) << reads[1].status.ToString();
  EXPECT_EQ(reads[1].bytes, "bc");
  EXPECT_TRUE(reads[2].status.IsNotFound()) << reads[2].status.ToString();
  EXPECT_TRUE(reads[3].status.IsCorruption()) << reads[3].status.ToString();
}

TEST_P(ContainerStoreTest, ExistingModeFindsOnlyWhatWasCreated) {
  StorageBackend existing;
  Status s = OpenStorageBackend(options_, Env::Default(), StorageOpenMode::kExisting, &existing);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  Reopen();
  ASSERT_TRUE(storage_.containers->Put(5, "five").ok());
  s = OpenStorageBackend(options_, Env::Default(), StorageOpenMode::kExisting, &existing);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::string bytes;
  ASSERT_TRUE(existing.containers->Get(5, &bytes).ok());
  EXPECT_EQ(bytes, "five");
}

// PutNew, as commits use it, agrees with the rados backend's: the same
// bytes again are OK, other bytes are refused and change nothing.
TEST_P(ContainerStoreTest, PutNewAcceptsItsOwnBytesAndRefusesOthers) {
  Reopen();
  ContainerStore* store = storage_.containers.get();
  ASSERT_TRUE(store->PutNew(9, "nine").ok());
  ASSERT_TRUE(store->PutNew(9, "nine").ok());
  Status s = store->PutNew(9, "NINE");
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find("another writer owns this id"), std::string::npos) << s.ToString();
  std::string bytes;
  ASSERT_TRUE(store->Get(9, &bytes).ok());
  EXPECT_EQ(bytes, "nine");
  uint64_t used = 0;
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 4u);
}

INSTANTIATE_TEST_SUITE_P(Backends, ContainerStoreTest, ::testing::ValuesIn(test::BackendsWithoutCluster()),
                         test::BackendName);

TEST(StorageBackendRegistryTest, UnknownBackendIsRefusedNamingTheKnownOnes) {
  ChunkStoreOptions o;
  o.backend = "tape";
  o.dir = "/nonexistent";
  StorageBackend b;
  Status s = OpenStorageBackend(o, Env::Default(), StorageOpenMode::kCreate, &b);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("tape"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("local, memory, rados"), std::string::npos) << s.ToString();
  EXPECT_EQ(StorageBackendNames(), (std::vector<std::string>{"local", "memory", "rados"}));
  EXPECT_EQ(DurableStorageBackendNameList(), "local, rados");
  EXPECT_TRUE(StorageBackendNeedsCluster("rados"));
  EXPECT_FALSE(StorageBackendNeedsCluster("local"));
  EXPECT_EQ(test::BackendsWithoutCluster(), (std::vector<std::string>{"local", "memory"}));
}

}  // namespace
}  // namespace dedupv1

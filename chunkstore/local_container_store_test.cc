#include "chunkstore/local_container_store.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/base/fault_injection_env.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

// The contract every backend keeps (put, get, delete, list, accounting,
// reopen) is tested in container_store_test.cc; here what is local.
TEST(LocalContainerStoreTest, ContainerFileIsInTheSubdirectoryOfItsLowByte) {
  test::TempDir dir;
  Env* env = Env::Default();
  std::unique_ptr<LocalContainerStore> store;
  ASSERT_TRUE(LocalContainerStore::Open(env, dir.Sub("c"), &store).ok());
  ASSERT_TRUE(store->Put(0x105, "two-hundred-sixty-one").ok());
  EXPECT_EQ(store->ContainerPath(0x105), dir.Sub("c") + "/05/0000000000000105.ctr");
  EXPECT_EQ(store->Where(0x105), store->ContainerPath(0x105));
  EXPECT_TRUE(env->FileExists(store->ContainerPath(0x105)));
}

TEST(LocalContainerStoreTest, LeftoverTempFilesAreRemovedAtOpen) {
  test::TempDir dir;
  Env* env = Env::Default();
  std::unique_ptr<LocalContainerStore> store;
  ASSERT_TRUE(LocalContainerStore::Open(env, dir.path(), &store).ok());
  ASSERT_TRUE(store->Put(3, "three").ok());
  const std::string tmp = store->ContainerPath(4) + ".tmp";
  ASSERT_TRUE(WriteFileAtomically(env, tmp, "half a container").ok());
  const std::string foreign = dir.Sub("03/notes.txt");
  ASSERT_TRUE(WriteFileAtomically(env, foreign, "not a container").ok());
  store.reset();

  ASSERT_TRUE(LocalContainerStore::Open(env, dir.path(), &store).ok());
  EXPECT_FALSE(env->FileExists(tmp));
  EXPECT_TRUE(env->FileExists(foreign));  // only our own temp files are removed
  std::vector<ContainerId> ids;
  ASSERT_TRUE(store->List(&ids).ok());
  EXPECT_EQ(ids, (std::vector<ContainerId>{3}));
  uint64_t used = 0;
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 5u);
}

TEST(LocalContainerStoreTest, FullDiskKeepsOldContentAndLeavesNoTempFile) {
  test::TempDir dir;
  FaultInjectionEnv env(Env::Default());
  std::unique_ptr<LocalContainerStore> store;
  ASSERT_TRUE(LocalContainerStore::Open(&env, dir.path(), &store).ok());
  ASSERT_TRUE(store->Put(9, "old").ok());

  env.AddRule({FaultInjectionEnv::Op::kWrite, ".ctr", FaultInjectionEnv::Fault::kENOSPC, 0, -1});
  Status s = store->Put(9, "new content");
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_NE(s.message().find("container 9"), std::string::npos) << s.message();
  s = store->Put(10, "ten");
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_FALSE(env.FileExists(store->ContainerPath(9) + ".tmp"));
  EXPECT_FALSE(env.FileExists(store->ContainerPath(10) + ".tmp"));
  EXPECT_FALSE(env.FileExists(store->ContainerPath(10)));

  env.ClearRules();
  std::string bytes;
  ASSERT_TRUE(store->Get(9, &bytes).ok());
  EXPECT_EQ(bytes, "old");
  uint64_t used = 0;
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 3u);
}

TEST(LocalContainerStoreTest, TornWriteIsNeverVisible) {
  test::TempDir dir;
  FaultInjectionEnv env(Env::Default());
  std::unique_ptr<LocalContainerStore> store;
  ASSERT_TRUE(LocalContainerStore::Open(&env, dir.path(), &store).ok());
  env.AddRule({FaultInjectionEnv::Op::kWrite, ".ctr", FaultInjectionEnv::Fault::kTorn, 0, 1, 4});
  EXPECT_FALSE(store->Put(11, "complete container").ok());
  std::string bytes;
  EXPECT_TRUE(store->Get(11, &bytes).IsNotFound());
  ASSERT_TRUE(store->Put(11, "complete container").ok());
  ASSERT_TRUE(store->Get(11, &bytes).ok());
  EXPECT_EQ(bytes, "complete container");
}

}  // namespace
}  // namespace dedupv1

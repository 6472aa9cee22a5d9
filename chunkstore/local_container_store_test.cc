#include "chunkstore/local_container_store.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/fault_injection_env.h"
#include "core/testutil.h"

namespace dedupv1 {
namespace {

TEST(LocalContainerStoreTest, PutGetDeleteList) {
  test::TempDir dir;
  Env* env = Env::Default();
  std::unique_ptr<LocalContainerStore> store;
  ASSERT_TRUE(LocalContainerStore::Open(env, dir.Sub("c"), &store).ok());

  ASSERT_TRUE(store->Put(1, "one").ok());
  ASSERT_TRUE(store->Put(0x105, "two-hundred-sixty-one").ok());
  ASSERT_TRUE(store->Put(7, "seven").ok());
  EXPECT_EQ(store->ContainerPath(0x105), dir.Sub("c") + "/05/0000000000000105.ctr");
  EXPECT_TRUE(env->FileExists(store->ContainerPath(0x105)));

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
  store.reset();
  ASSERT_TRUE(LocalContainerStore::Open(env, dir.Sub("c"), &store).ok());
  ASSERT_TRUE(store->UsedBytes(&used).ok());
  EXPECT_EQ(used, 21u + 7u);
  ASSERT_TRUE(store->Get(0x105, &bytes).ok());
  EXPECT_EQ(bytes, "two-hundred-sixty-one");
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

// The key-value stores reach files through the Env they are given: LevelDB
// entirely (index/leveldb_env_adapter.h), Tokyo Cabinet for the file handling
// around the library (index/tc_kv_store.h). A fault injected through
// FaultInjectionEnv reaches them and comes back as LevelDB's or our error.
#include "index/leveldb_env_adapter.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/base/env.h"
#include "core/base/fault_injection_env.h"
#include "core/base/testutil.h"
#include "index/kv_store.h"

namespace dedupv1 {
namespace {

using Op = FaultInjectionEnv::Op;
using Fault = FaultInjectionEnv::Fault;

class LevelDbEnvAdapterTest : public ::testing::Test {
 protected:
  Status Open() {
    store_.reset();
    return OpenKvStore(KvBackend::kLevelDb, path_, &env_, &store_);
  }

  test::TempDir dir_;
  const std::string path_ = dir_.Sub("store");
  FaultInjectionEnv env_{Env::Default()};
  std::unique_ptr<KvStore> store_;
};

TEST_F(LevelDbEnvAdapterTest, StoreWorksThroughTheAdapter) {
  ASSERT_TRUE(Open().ok());
  ASSERT_TRUE(store_->Write({{"a", "1"}, {"b", "2"}, {"c", "3", true}}).ok());
  ASSERT_TRUE(Open().ok());  // the records come back from the files written through the Env
  std::string v;
  ASSERT_TRUE(store_->Get("b", &v).ok());
  EXPECT_EQ(v, "2");
  EXPECT_TRUE(store_->Get("c", &v).IsNotFound());
  EXPECT_EQ(store_->Count(), 2u);
  EXPECT_GT(store_->SizeBytes(), 0u);
  EXPECT_TRUE(env_.FileExists(JoinPath(path_, "CURRENT")));
  EXPECT_TRUE(env_.FileExists(JoinPath(path_, "LOG")));  // LevelDB's info log, through the Env too
  EXPECT_EQ(env_.faults_fired(), 0);
}

TEST_F(LevelDbEnvAdapterTest, WriteErrorOfTheLogReachesLevelDb) {
  ASSERT_TRUE(Open().ok());
  env_.AddRule({Op::kWrite, ".log", Fault::kEIO});
  Status s = store_->Write({{"a", "1"}});
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.ToString().find(path_), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find("(injected)"), std::string::npos) << s.ToString();
  EXPECT_GE(env_.faults_fired(), 1);
}

TEST_F(LevelDbEnvAdapterTest, SyncErrorReachesLevelDb) {
  ASSERT_TRUE(Open().ok());
  env_.AddRule({Op::kSync, ".log", Fault::kEIO});
  Status s = store_->Write({{"a", "1"}});
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_GE(env_.faults_fired(), 1);
}

TEST_F(LevelDbEnvAdapterTest, FullDiskIsReportedAsNoSpace) {
  ASSERT_TRUE(Open().ok());
  env_.AddRule({Op::kWrite, ".log", Fault::kENOSPC});
  Status s = store_->Write({{"a", "1"}});
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
}

TEST_F(LevelDbEnvAdapterTest, CreationFailsWhenTheManifestCannotBeWritten) {
  env_.AddRule({Op::kWrite, "MANIFEST", Fault::kEIO});
  Status s = Open();
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_GE(env_.faults_fired(), 1);
}

TEST_F(LevelDbEnvAdapterTest, ReadErrorOfATableReachesLevelDb) {
  ASSERT_TRUE(Open().ok());
  ASSERT_TRUE(store_->Write({{"a", "1"}}).ok());
  ASSERT_TRUE(Open().ok());  // recovery moves the log's records into a table (.ldb)
  env_.AddRule({Op::kRead, ".ldb", Fault::kEIO});
  std::string v;
  Status s = store_->Get("a", &v);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_GE(env_.faults_fired(), 1);
  env_.ClearRules();
  ASSERT_TRUE(store_->Get("a", &v).ok());
  EXPECT_EQ(v, "1");
}

TEST_F(LevelDbEnvAdapterTest, SecondOpenOfTheSameStoreIsRefused) {
  ASSERT_TRUE(Open().ok());
  std::unique_ptr<KvStore> second;
  EXPECT_FALSE(OpenKvStore(KvBackend::kLevelDb, path_, &env_, &second).ok());
}

// Tokyo Cabinet writes its file itself, but the creation of a store around it
// (sync of the new file, the link giving it its name) goes through the Env.
TEST(TcKvStoreEnvTest, CreationGoesThroughTheEnv) {
  test::TempDir dir;
  FaultInjectionEnv env(Env::Default());
  env.AddRule({Op::kRename, "store", Fault::kEIO});  // LinkFile faults as a rename of its target
  std::unique_ptr<KvStore> store;
  Status s = OpenKvStore(KvBackend::kTokyoCabinet, dir.Sub("store"), &env, &store);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_EQ(env.faults_fired(), 1);
  EXPECT_FALSE(env.FileExists(dir.Sub("store")));

  env.ClearRules();
  env.AddRule({Op::kSync, "store.creating", Fault::kEIO});
  s = OpenKvStore(KvBackend::kTokyoCabinet, dir.Sub("store"), &env, &store);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();

  env.ClearRules();
  ASSERT_TRUE(OpenKvStore(KvBackend::kTokyoCabinet, dir.Sub("store"), &env, &store).ok());
  ASSERT_TRUE(store->Write({{"a", "1"}}).ok());
}

}  // namespace
}  // namespace dedupv1

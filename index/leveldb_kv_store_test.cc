// LevelDbKvStore after a failed write of LevelDB's own log: LevelDB keeps
// such a failure as a permanent background error, so without help every
// later write fails until the process reopens the database. On RADOS that is
// what a cluster outage during a block-index write-back produces; the store
// must serve again once the storage does.
#include "index/leveldb_kv_store.h"

#include <gtest/gtest.h>

#include "core/base/fault_injection_env.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

TEST(LevelDbKvStoreTest, WritesSucceedAgainAfterTheStorageRecovers) {
  test::TempDir dir;
  FaultInjectionEnv env(Env::Default());
  std::unique_ptr<KvStore> store;
  ASSERT_TRUE(OpenLevelDbKvStore(dir.path() + "/db", &env, &store).ok());
  ASSERT_TRUE(store->Write({{"a", "1", false}}).ok());
  // The storage fails: the next write's log sync is refused.
  env.AddRule({FaultInjectionEnv::Op::kSync, ".log", FaultInjectionEnv::Fault::kEIO, 0, -1});
  EXPECT_FALSE(store->Write({{"b", "2", false}}).ok());
  // The storage is back.
  env.ClearRules();
  Status s = store->Write({{"c", "3", false}});
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::string v;
  ASSERT_TRUE(store->Get("a", &v).ok());
  EXPECT_EQ(v, "1");
  ASSERT_TRUE(store->Get("c", &v).ok());
  EXPECT_EQ(v, "3");
  // Reopened, everything acknowledged is there.
  store.reset();
  ASSERT_TRUE(OpenLevelDbKvStore(dir.path() + "/db", &env, &store).ok());
  ASSERT_TRUE(store->Get("a", &v).ok());
  ASSERT_TRUE(store->Get("c", &v).ok());
}

}  // namespace
}  // namespace dedupv1

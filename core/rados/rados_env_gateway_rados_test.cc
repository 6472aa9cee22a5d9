// RadosEnv with an object directory (a gateway slot's "gw.NAME",
// core/rados/rados_env.h): every object it makes is named under it, and two
// slots with the same paths share nothing. Needs the test cluster
// (DEDUPV1_TEST_CEPH_CONF).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/rados/rados_env.h"
#include "core/rados/rados_env_testutil.h"

namespace dedupv1 {
namespace {

const std::string kRoot = "/var/lib/dedupv1-gw";  // need not exist locally

Status WriteFile(Env* env, const std::string& path, const std::string& data) {
  std::unique_ptr<File> f;
  DEDUPV1_RETURN_IF_ERROR(env->OpenFile(path, OpenMode::kTruncate, &f));
  DEDUPV1_RETURN_IF_ERROR(f->Write(0, data.data(), data.size()));
  return f->Sync();
}

std::string ReadFile(Env* env, const std::string& path) {
  std::unique_ptr<File> f;
  if (!env->OpenFile(path, OpenMode::kReadOnly, &f).ok()) return "<missing>";
  uint64_t size = 0;
  if (!f->Size(&size).ok()) return "<no size>";
  std::string out(size, '\0');
  if (!f->Read(0, size, out.data()).ok()) return "<unreadable>";
  return out;
}

TEST(GatewayRadosEnvTest, SlotsNameEveryObjectUnderTheirDirectory) {
  std::shared_ptr<RadosCluster> cluster;
  Status s = test::ConnectTestRados(&cluster);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::unique_ptr<Env> a, b;
  ASSERT_TRUE(NewRadosEnv(cluster, kRoot, "gw.a", &a).ok());
  ASSERT_TRUE(NewRadosEnv(cluster, kRoot, "gw.b", &b).ok());
  std::unique_ptr<Env> bad;
  EXPECT_TRUE(NewRadosEnv(cluster, kRoot, "gw/a", &bad).IsInvalidArgument());
  for (Env* env : {a.get(), b.get()}) {
    ASSERT_TRUE(env->CreateDirs(kRoot + "/containers/sub").ok());
    EXPECT_TRUE(env->FileExists(kRoot));
  }
  ASSERT_TRUE(WriteFile(a.get(), kRoot + "/log", "log of a").ok());
  ASSERT_TRUE(WriteFile(b.get(), kRoot + "/log", "log of b").ok());
  ASSERT_TRUE(WriteFile(a.get(), kRoot + "/containers/tmp", "catalog").ok());
  ASSERT_TRUE(a->RenameFile(kRoot + "/containers/tmp", kRoot + "/containers/ids").ok());
  EXPECT_EQ(ReadFile(a.get(), kRoot + "/log"), "log of a");
  EXPECT_EQ(ReadFile(b.get(), kRoot + "/log"), "log of b");
  EXPECT_EQ(ReadFile(a.get(), kRoot + "/containers/ids"), "catalog");
  EXPECT_FALSE(b->FileExists(kRoot + "/containers/ids"));
  std::vector<std::string> names;
  ASSERT_TRUE(a->GetChildren(kRoot, &names).ok());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"containers", "log"}));
  ASSERT_TRUE(a->GetChildren(kRoot + "/containers", &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"ids", "sub"}));
  {
    std::unique_ptr<FileLock> lock_a, lock_b;
    ASSERT_TRUE(a->LockFile(kRoot + "/LOCK", &lock_a).ok());
    ASSERT_TRUE(b->LockFile(kRoot + "/LOCK", &lock_b).ok());  // another slot's lock: no conflict
  }
  ASSERT_TRUE(a->DeleteFile(kRoot + "/log").ok());
  EXPECT_EQ(ReadFile(b.get(), kRoot + "/log"), "log of b");
  std::unique_ptr<File> root;
  EXPECT_TRUE(a->OpenFile(kRoot, OpenMode::kCreate, &root).IsInvalidArgument());

  const std::set<std::string> objects = test::IndexObjects(cluster.get());
  for (const std::string& name : objects) {
    EXPECT_TRUE(name.rfind("gw.a/", 0) == 0 || name.rfind("gw.b/", 0) == 0) << "outside the slots: " << name;
  }
  for (const std::string name : {"gw.a/", "gw.a/containers/", "gw.a/containers/sub/", "gw.a/containers/ids",
                                 "gw.a/LOCK", "gw.b/", "gw.b/log", "gw.b/LOCK"}) {
    EXPECT_EQ(objects.count(name), 1u) << name;
  }
  EXPECT_EQ(objects.count("gw.a/log"), 0u);
  // The names code without an Env computes (a takeover's fence) are these.
  EXPECT_EQ(objects.count(RadosEnvDirObject("gw.a", "")), 1u);
  EXPECT_EQ(objects.count(RadosEnvDirObject("gw.a", "containers/sub")), 1u);
  EXPECT_EQ(objects.count(RadosEnvFileObject("gw.a", "containers/ids")), 1u);
  EXPECT_EQ(objects.count(RadosEnvFileObject("gw.b", "log")), 1u);
  test::RemoveIndexObjects(cluster.get());
}

// Without an object directory the names are the single-gateway layout's.
TEST(GatewayRadosEnvTest, ObjectNamesWithoutAnEnv) {
  EXPECT_EQ(RadosEnvDirObject("", ""), "/");
  EXPECT_EQ(RadosEnvDirObject("", "containers"), "containers/");
  EXPECT_EQ(RadosEnvFileObject("", "log"), "log");
  EXPECT_EQ(RadosEnvDirObject("gw.a", ""), "gw.a/");
  EXPECT_EQ(RadosEnvFileObject("gw.a", "block-index.leveldb/LOCK"), "gw.a/block-index.leveldb/LOCK");
}

}  // namespace
}  // namespace dedupv1

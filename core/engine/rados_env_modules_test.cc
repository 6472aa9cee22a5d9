// The engine's modules unchanged on RadosEnv (core/rados/rados_env.h): the
// LevelDB block index store, the chunk index table, the operations log,
// each written, closed, reopened and read back through RADOS objects
// (cluster from DEDUPV1_TEST_CEPH_CONF). Here in core/engine because only
// the engine layer may use all of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/base/fingerprint.h"
#include "core/rados/rados_env.h"
#include "core/rados/rados_env_testutil.h"
#include "index/disk_hash_table.h"
#include "index/kv_store.h"
#include "log/log_event.h"
#include "log/operations_log.h"

namespace dedupv1 {
namespace {

const std::string kRoot = "/var/lib/dedupv1-rados-modules-test";  // need not exist locally

class RadosEnvModulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = test::ConnectTestRados(&cluster_, 64 << 10, 3);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(NewRadosEnv(cluster_, kRoot, &env_).ok());
    ASSERT_TRUE(env_->CreateDirs(kRoot).ok());
  }
  void TearDown() override {
    env_.reset();
    if (cluster_ != nullptr) {
      std::printf("%s: %llu RADOS operations\n", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                  static_cast<unsigned long long>(cluster_->stats().TotalOps()));
    }
    if (cluster_ != nullptr) test::RemoveIndexObjects(cluster_.get());
  }

  std::shared_ptr<RadosCluster> cluster_;
  std::unique_ptr<Env> env_;
};

std::string Key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "k%08d", i);
  return buf;
}

TEST_F(RadosEnvModulesTest, LevelDbKvStoreWriteReopenScan) {
  const std::string path = kRoot + "/block-index";
  {
    std::unique_ptr<KvStore> kv;
    Status s = OpenKvStore(KvBackend::kLevelDb, path, env_.get(), &kv);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (int batch = 0; batch < 20; batch++) {
      std::vector<KvStore::WriteOp> ops;
      for (int i = batch * 100; i < (batch + 1) * 100; i++) ops.push_back({Key(i), std::string(100, 'a' + i % 26)});
      ASSERT_TRUE(kv->Write(ops).ok());
    }
    ASSERT_TRUE(kv->Write({{Key(7), "", true}}).ok());
    ASSERT_TRUE(kv->Sync().ok());
    // A second open of the same store is refused while this one holds it.
    std::unique_ptr<Env> other;
    ASSERT_TRUE(NewRadosEnv(cluster_, kRoot, &other).ok());
    std::unique_ptr<KvStore> second;
    s = OpenKvStore(KvBackend::kLevelDb, path, other.get(), &second);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(std::string::npos, s.message().find("locked")) << s.ToString();
  }
  std::unique_ptr<KvStore> kv;
  Status s = OpenKvStore(KvBackend::kLevelDb, path, env_.get(), &kv);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::string value;
  ASSERT_TRUE(kv->Get(Key(1999), &value).ok());
  EXPECT_EQ(std::string(100, 'a' + 1999 % 26), value);
  EXPECT_TRUE(kv->Get(Key(7), &value).IsNotFound());
  int n = 0;
  std::string last;
  ASSERT_TRUE(kv->Scan(Key(0), "", [&](const std::string& k, const std::string&) {
                 EXPECT_LT(last, k);
                 last = k;
                 n++;
                 return true;
               }).ok());
  EXPECT_EQ(1999, n);
  std::vector<std::string> names;
  ASSERT_TRUE(env_->GetChildren(path, &names).ok());
  EXPECT_NE(names.end(), std::find(names.begin(), names.end(), "CURRENT"));
}

Fingerprint Fp(int i) {
  Fingerprint fp;
  std::string data = "chunk " + std::to_string(i);
  ComputeFingerprint(FingerprintType::kSha1, reinterpret_cast<const uint8_t*>(data.data()), data.size(), &fp);
  return fp;
}

TEST_F(RadosEnvModulesTest, DiskHashTableOpenApplyGetReopen) {
  DiskHashTableOptions o;
  o.path = kRoot + "/chunk-index";
  o.size_bytes = 1 << 20;  // 16 stripes, mostly never written: read as zeros
  o.page_size = 4096;
  {
    std::unique_ptr<DiskHashTable> t;
    Status s = DiskHashTable::Open(o, env_.get(), &t);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::vector<DiskHashTable::Op> ops;
    for (int i = 0; i < 500; i++) {
      DiskHashTable::Op op;
      op.fp = Fp(i);
      op.entry.container = 1000 + i;
      op.entry.usage_count = i % 7;
      op.entry.committed = true;
      ops.push_back(op);
    }
    ASSERT_TRUE(t->Apply(ops).ok());
    ASSERT_TRUE(t->Apply({DiskHashTable::Op{Fp(3), {}, true}}).ok());
  }
  std::unique_ptr<DiskHashTable> t;
  Status s = DiskHashTable::Open(o, env_.get(), &t);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(499u, t->entry_count());
  ChunkIndexEntry e;
  ASSERT_TRUE(t->Get(Fp(42), &e).ok());
  EXPECT_EQ(1042u, e.container);
  EXPECT_EQ(42u % 7, e.usage_count);
  EXPECT_TRUE(t->Get(Fp(3), &e).IsNotFound());
  uint64_t pages = 0;
  s = t->Verify(&pages);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ((1u << 20) / 4096, pages);
}

TEST_F(RadosEnvModulesTest, OperationsLogAppendSyncReopenReplay) {
  OperationsLogOptions o;
  o.path = kRoot + "/log/operations";
  o.size_bytes = 1 << 20;
  o.slot_size = 4096;
  ASSERT_TRUE(env_->CreateDirs(kRoot + "/log").ok());
  std::map<uint64_t, std::string> appended;
  {
    std::unique_ptr<OperationsLog> log;
    Status s = OperationsLog::Open(o, env_.get(), &log);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (int i = 0; i < 100; i++) {
      uint64_t id = 0;
      const std::string payload(1 + i * 37 % 3000, static_cast<char>('A' + i % 26));
      ASSERT_TRUE(log->Append(LogEventType::kContainerCommitted, payload, &id).ok());
      appended[id] = payload;
      if (i % 10 == 9) ASSERT_TRUE(log->Sync().ok());
    }
    ASSERT_TRUE(log->Sync().ok());
  }
  std::unique_ptr<OperationsLog> log;
  Status s = OperationsLog::Open(o, env_.get(), &log);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::map<uint64_t, std::string> replayed;
  ASSERT_TRUE(log->Replay(0, [&](const LogEvent& e) {
                   replayed[e.id] = e.payload;
                   return Status::OK();
                 }).ok());
  EXPECT_EQ(appended, replayed);
}

}  // namespace
}  // namespace dedupv1

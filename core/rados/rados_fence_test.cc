// Fencing one gateway from another (core/rados/rados_fence.h) and the
// "lost for good" lock policy (RadosOptions::fence_on_lease_loss), against a
// live cluster (DEDUPV1_TEST_CEPH_CONF). Two independent connections of one
// process play the victim (a gateway paused and resumed) and the fencer (the
// taker); both work in the same fresh namespace.
#include "core/rados/rados_fence.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "core/base/testutil.h"
#include "core/rados/rados_env.h"
#include "core/rados/rados_env_testutil.h"
#include "core/rados/rados_lock.h"

namespace dedupv1 {
namespace {

const std::string kRoot = "/srv/dedupv1-fence-test";  // need not exist locally
constexpr uint32_t kBlocklistS = 300;                  // long enough for a test, short enough to vanish

// Polls |done| every 50 ms for at most |limit|; true once it held.
bool WaitFor(std::chrono::milliseconds limit, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

int RawWrite(RadosCluster* cluster, const std::string& oid, const std::string& data) {
  librados::bufferlist bl;
  bl.append(data);
  return cluster->index().write(oid, bl, bl.length(), 0);
}

class GatewayFence : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(Open(/*lease_s=*/3, /*policy=*/true)); }

  void Open(uint32_t lease_s, bool policy) {
    locks_.clear();
    envs_.clear();
    victim_.reset();
    fencer_.reset();
    Status s = test::TestRadosOptions(&options_, 64 << 10, lease_s);
    ASSERT_TRUE(s.ok()) << s.ToString();
    options_.fence_on_lease_loss = policy;
    s = RadosCluster::Unshared(options_, &victim_);
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = RadosCluster::Unshared(options_, &fencer_);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_NE(BareAddress(victim_->client_address()), BareAddress(fencer_->client_address()));
  }

  void TearDown() override {
    locks_.clear();
    envs_.clear();
    victim_.reset();
    if (fencer_ != nullptr) test::RemoveIndexObjects(fencer_.get());
  }

  Env* NewEnv(const std::shared_ptr<RadosCluster>& cluster) {
    std::unique_ptr<Env> env;
    EXPECT_TRUE(NewRadosEnv(cluster, kRoot, &env).ok());
    EXPECT_TRUE(env->CreateDirs(kRoot).ok());
    envs_.push_back(std::move(env));
    return envs_.back().get();
  }

  Status Lock(Env* env) {
    std::unique_ptr<FileLock> lock;
    Status s = env->LockFile(kRoot + "/LOCK", &lock);
    if (s.ok()) locks_.push_back(std::move(lock));
    return s;
  }

  Status WriteFile(Env* env, const std::string& name, const std::string& data) {
    std::unique_ptr<File> f;
    DEDUPV1_RETURN_IF_ERROR(env->OpenFile(kRoot + "/" + name, OpenMode::kTruncate, &f));
    DEDUPV1_RETURN_IF_ERROR(f->Write(0, data.data(), data.size()));
    return f->Sync();
  }

  RadosOptions options_;
  std::shared_ptr<RadosCluster> victim_, fencer_;
  std::vector<std::unique_ptr<Env>> envs_;
  std::vector<std::unique_ptr<FileLock>> locks_;
};

// The victim holds the store lock and writes; once fenced, its next write to
// a touched object fails ESHUTDOWN (blocklisted), its renewal fails the same
// way, which fences its connection for good: RadosEnv writes then fail with
// the fenced message, even ones that never reach the cluster.
TEST_F(GatewayFence, FencedClientCannotWriteAndSelfFences) {
  Env* env = NewEnv(victim_);
  ASSERT_TRUE(Lock(env).ok());
  ASSERT_TRUE(WriteFile(env, "log", std::string(4096, 'a')).ok());
  std::unique_ptr<File> log;
  ASSERT_TRUE(env->OpenFile(kRoot + "/log", OpenMode::kReadWrite, &log).ok());

  const std::string addr = victim_->client_address();
  ASSERT_FALSE(addr.empty());
  Status s = Fence(fencer_.get(), addr, kBlocklistS, {"LOCK", "log"});
  ASSERT_TRUE(s.ok()) << s.ToString();

  // Right after Fence: a raw write of the victim to a touched object.
  EXPECT_EQ(-ESHUTDOWN, RawWrite(victim_.get(), "log", "late"));
  // And through RadosEnv (lease still valid locally: the OSD refuses it).
  s = log->Write(0, "late", 4);
  if (s.ok()) s = log->Sync();
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.ToString().find("is blocklisted: another gateway fenced it"), std::string::npos) << s.ToString();

  // The next renewal (every lease/3 = 1 s) fails ESHUTDOWN: fenced for good.
  ASSERT_TRUE(WaitFor(std::chrono::seconds(10), [&] { return victim_->fenced(); }));
  s = victim_->CheckLease();
  ASSERT_TRUE(s.IsIOError());
  EXPECT_NE(s.ToString().find("gateway lost its store lock (fenced): renewing the store lock"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.ToString().find("blocklisted"), std::string::npos) << s.ToString();
  s = log->Write(0, "late", 4);
  EXPECT_TRUE(s.IsIOError());
  EXPECT_NE(s.ToString().find("gateway lost its store lock (fenced)"), std::string::npos) << s.ToString();
  // A new file (its open's stat is refused by the OSD already).
  EXPECT_FALSE(WriteFile(env, "new", "x").ok());
  // No re-take: the lock cannot be taken again on this connection.
  std::unique_ptr<FileLock> again;
  s = RadosLock::Acquire(victim_, "LOCK", kRoot + "/LOCK", &again);
  EXPECT_NE(s.ToString().find("gateway lost its store lock (fenced)"), std::string::npos) << s.ToString();

  // The fencer's connection is untouched and sees the victim's last good write.
  Env* fenv = NewEnv(fencer_);
  std::string back;
  ASSERT_TRUE(ReadFileToString(fenv, kRoot + "/log", &back).ok());
  EXPECT_EQ(std::string(4096, 'a'), back);
  EXPECT_FALSE(fencer_->fenced());
}

// Not blocklisted, but the lock was broken and taken by another gateway: the
// renewal answered EBUSY fences the connection for good. Every write path
// then fails before sending anything; reads still work.
TEST_F(GatewayFence, RenewalRefusedFencesForGoodReadsStillWork) {
  Env* env = NewEnv(victim_);
  ASSERT_TRUE(Lock(env).ok());
  ASSERT_TRUE(WriteFile(env, "log", "before").ok());
  std::vector<RadosLockHolder> holders;
  ASSERT_TRUE(ListLockHolders(fencer_.get(), "LOCK", RadosLock::kLockName, &holders).ok());
  ASSERT_EQ(1u, holders.size());
  ASSERT_TRUE(BreakLock(fencer_.get(), "LOCK", RadosLock::kLockName, holders[0]).ok());
  Env* fenv = NewEnv(fencer_);
  ASSERT_TRUE(Lock(fenv).ok());

  ASSERT_TRUE(WaitFor(std::chrono::seconds(10), [&] { return victim_->fenced(); }));
  Status s = victim_->CheckLease();
  EXPECT_NE(s.ToString().find("gateway lost its store lock (fenced): renewing the store lock"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.ToString().find("now held by client."), std::string::npos) << s.ToString();
  const uint64_t writes_before = victim_->stats().kinds[static_cast<int>(RadosOpKind::kWrite)].ops;
  for (const Status& w : {WriteFile(env, "log", "late"), WriteFile(env, "new", "late"), env->DeleteFile(kRoot + "/log"),
                          env->RenameFile(kRoot + "/log", kRoot + "/moved")}) {
    EXPECT_TRUE(w.IsIOError()) << w.ToString();
    EXPECT_NE(w.ToString().find("gateway lost its store lock (fenced)"), std::string::npos) << w.ToString();
  }
  EXPECT_EQ(writes_before, victim_->stats().kinds[static_cast<int>(RadosOpKind::kWrite)].ops);
  // Still fenced after the lease would have been renewable again.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_TRUE(victim_->CheckLease().IsIOError());
  ASSERT_TRUE(ListLockHolders(fencer_.get(), "LOCK", RadosLock::kLockName, &holders).ok());
  ASSERT_EQ(1u, holders.size());
  EXPECT_EQ(BareAddress(fencer_->client_address()), BareAddress(holders[0].address));
  std::string back;
  s = ReadFileToString(env, kRoot + "/log", &back);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ("before", back);
}

// Forced takeover: the victim's lease (30 s) still runs; FenceLockHolder
// fences and breaks it, and the fencer takes the lock at once.
TEST_F(GatewayFence, ForcedTakeoverOfAHeldLock) {
  ASSERT_NO_FATAL_FAILURE(Open(/*lease_s=*/30, /*policy=*/true));
  Env* env = NewEnv(victim_);
  ASSERT_TRUE(Lock(env).ok());
  ASSERT_TRUE(WriteFile(env, "log", "before").ok());

  std::vector<RadosLockHolder> holders;
  ASSERT_TRUE(ListLockHolders(fencer_.get(), "LOCK", RadosLock::kLockName, &holders).ok());
  ASSERT_EQ(1u, holders.size());
  EXPECT_EQ(BareAddress(victim_->client_address()), BareAddress(holders[0].address));

  const auto start = std::chrono::steady_clock::now();
  std::vector<RadosLockHolder> fenced;
  Status s = FenceLockHolder(fencer_.get(), "LOCK", RadosLock::kLockName, kBlocklistS, {"log"}, &fenced);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(1u, fenced.size());
  EXPECT_EQ(holders[0].cookie, fenced[0].cookie);
  Env* fenv = NewEnv(fencer_);
  s = Lock(fenv);
  ASSERT_TRUE(s.ok()) << s.ToString();
  // Far less than the victim's lease: nobody waited for it.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_TRUE(ListLockHolders(fencer_.get(), "LOCK", RadosLock::kLockName, &holders).ok());
  ASSERT_EQ(1u, holders.size());
  EXPECT_EQ(BareAddress(fencer_->client_address()), BareAddress(holders[0].address));

  EXPECT_EQ(-ESHUTDOWN, RawWrite(victim_.get(), "log", "late"));
  EXPECT_EQ(-ESHUTDOWN, RawWrite(victim_.get(), "LOCK", "late"));
  ASSERT_TRUE(WriteFile(fenv, "log", "after").ok());
  std::string back;
  ASSERT_TRUE(ReadFileToString(fenv, kRoot + "/log", &back).ok());
  EXPECT_EQ("after", back);
}

// A gateway paused past its lease: the lock is free, list_lockers no longer
// knows its address, and its late write would still succeed. Fencing the
// address it recorded at open makes that write fail.
TEST_F(GatewayFence, LateWriteAfterLeaseExpiryRefusedByRecordedAddress) {
  const std::string recorded = victim_->client_address();
  struct timeval lease = {1, 0};
  ASSERT_EQ(0, victim_->index().lock_exclusive("LOCK", RadosLock::kLockName, "victim", "", &lease, 0));
  ASSERT_EQ(0, RawWrite(victim_.get(), "obj", "early"));
  std::vector<RadosLockHolder> holders;
  ASSERT_TRUE(WaitFor(std::chrono::seconds(10), [&] {
    return ListLockHolders(fencer_.get(), "LOCK", RadosLock::kLockName, &holders).ok() && holders.empty();
  }));
  // Without a fence the expired lease stops nothing.
  ASSERT_EQ(0, RawWrite(victim_.get(), "obj", "unfenced"));

  Status s = Fence(fencer_.get(), recorded, kBlocklistS, {"LOCK", "obj"});
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::unique_ptr<FileLock> lock;
  s = RadosLock::Acquire(fencer_, "LOCK", "LOCK", &lock);
  ASSERT_TRUE(s.ok()) << s.ToString();

  const int r = RawWrite(victim_.get(), "obj", "late!!!!");
  EXPECT_EQ(-ESHUTDOWN, r);
  s = victim_->ToStatus(r, "write", victim_->index_pool(), "obj");
  EXPECT_TRUE(s.IsIOError());
  EXPECT_NE(s.ToString().find("is blocklisted: another gateway fenced it"), std::string::npos) << s.ToString();
  EXPECT_EQ(-ESHUTDOWN, victim_->index().lock_exclusive("LOCK", RadosLock::kLockName, "victim", "", &lease,
                                                        LIBRADOS_LOCK_FLAG_MAY_RENEW));
  // The fencer sees the last write the victim made before the fence.
  librados::bufferlist bl;
  ASSERT_EQ(8, fencer_->index().read("obj", bl, 8, 0));
  EXPECT_EQ("unfenced", bl.to_str());
}

// A lease found lapsed by CheckLease fences for good with the policy (a
// later renewal does not make the process a writer again); without it the
// refusal lasts only while the lease is lapsed.
TEST_F(GatewayFence, LapsedLeaseFencesOnlyWithThePolicy) {
  for (bool policy : {true, false}) {
    ASSERT_NO_FATAL_FAILURE(Open(/*lease_s=*/3, policy));
    const int lock = 0;
    victim_->LeaseRenewed(&lock, std::chrono::steady_clock::now() - std::chrono::seconds(4));
    Status s = victim_->CheckLease();
    EXPECT_TRUE(s.IsIOError()) << s.ToString();
    EXPECT_EQ(policy, s.ToString().find("gateway lost its store lock (fenced): the store's lock in RADOS") !=
                          std::string::npos)
        << s.ToString();
    victim_->LeaseRenewed(&lock, std::chrono::steady_clock::now());
    EXPECT_EQ(policy, !victim_->CheckLease().ok()) << "policy " << policy;
    EXPECT_EQ(policy, victim_->fenced());
    victim_->LeaseReleased(&lock);
  }
}

// Fencing oneself would stop this very process: refused.
TEST_F(GatewayFence, OwnAddressIsRefused) {
  Status s = Fence(victim_.get(), victim_->client_address(), kBlocklistS, {});
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  s = Fence(victim_.get(), "v1:" + victim_->client_address(), kBlocklistS, {});
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(0, RawWrite(victim_.get(), "obj", "still"));
}

// Policy off (today's behaviour): a renewal refused because another
// gateway took the lock does not fence the connection; CheckLease fails once
// the lease ran out and says renewal goes on; once the lock is free again,
// renewal re-takes it and writes are allowed again.
TEST_F(GatewayFence, PolicyOffKeepsTodaysLeaseBehaviour) {
  ASSERT_NO_FATAL_FAILURE(Open(/*lease_s=*/3, /*policy=*/false));
  Env* env = NewEnv(victim_);
  ASSERT_TRUE(Lock(env).ok());
  std::vector<RadosLockHolder> holders;
  ASSERT_TRUE(ListLockHolders(fencer_.get(), "LOCK", RadosLock::kLockName, &holders).ok());
  ASSERT_EQ(1u, holders.size());
  ASSERT_TRUE(BreakLock(fencer_.get(), "LOCK", RadosLock::kLockName, holders[0]).ok());
  std::unique_ptr<FileLock> taken;
  ASSERT_TRUE(RadosLock::Acquire(fencer_, "LOCK", kRoot + "/LOCK", &taken).ok());
  Status s;
  ASSERT_TRUE(WaitFor(std::chrono::seconds(10), [&] {
    s = victim_->CheckLease();
    return !s.ok();
  }));
  EXPECT_NE(s.ToString().find("renewal goes on"), std::string::npos) << s.ToString();
  EXPECT_FALSE(victim_->fenced());
  taken.reset();
  ASSERT_TRUE(WaitFor(std::chrono::seconds(10), [&] { return victim_->CheckLease().ok(); }));
  ASSERT_TRUE(ListLockHolders(fencer_.get(), "LOCK", RadosLock::kLockName, &holders).ok());
  ASSERT_EQ(1u, holders.size());
  EXPECT_EQ(BareAddress(victim_->client_address()), BareAddress(holders[0].address));
  EXPECT_TRUE(WriteFile(env, "log", "again").ok());
}

// A user with mon 'allow r' only: the message names the user and the cap.
TEST_F(GatewayFence, MissingMonCapIsNamed) {
  const std::string user = "client.dedupv1-fence-nocap-" + std::to_string(::getpid());
  const std::string create = R"({"prefix": "auth get-or-create", "entity": ")" + user +
                             R"(", "caps": ["mon", "allow r", "osd", "allow rwx pool=)" + options_.index_pool +
                             ", allow rwx pool=" + options_.data_pool + R"("]})";
  librados::bufferlist in, out;
  std::string outs;
  ASSERT_EQ(0, fencer_->rados().mon_command(create, in, &out, &outs)) << outs;
  test::TempDir dir;
  const std::string keyring = dir.path() + "/keyring";
  {
    std::ofstream f(keyring);
    f << out.to_str();
  }
  RadosOptions o = options_;
  o.client_name = user;
  o.keyring = keyring;
  std::shared_ptr<RadosCluster> nocap;
  const Status connected = RadosCluster::Unshared(o, &nocap);
  Status s;
  if (connected.ok()) {
    s = Fence(nocap.get(), victim_->client_address(), kBlocklistS, {});
    EXPECT_TRUE(s.IsIOError()) << s.ToString();
    EXPECT_NE(s.ToString().find("user " + user + " lacks the mon cap"), std::string::npos) << s.ToString();
    EXPECT_NE(s.ToString().find(R"(mon 'allow r, allow command "osd blocklist"')"), std::string::npos)
        << s.ToString();
    EXPECT_NE(s.ToString().find("profile rbd"), std::string::npos) << s.ToString();
    nocap.reset();
  }
  const std::string del = R"({"prefix": "auth del", "entity": ")" + user + R"("})";
  EXPECT_EQ(0, fencer_->rados().mon_command(del, in, &out, &outs)) << outs;
  ASSERT_TRUE(connected.ok()) << "connecting as " << user << ": " << connected.ToString();
  // Not fenced: the victim still writes.
  EXPECT_EQ(0, RawWrite(victim_.get(), "obj", "still"));
}

}  // namespace
}  // namespace dedupv1

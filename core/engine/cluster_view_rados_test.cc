// ReadClusterView (core/engine/cluster_view.h) against the live Ceph cluster
// named by DEDUPV1_TEST_CEPH_CONF: registry, lock, heartbeat and volume table
// of slots built here by hand, each test in a RADOS namespace of its own.
#include "core/engine/cluster_view.h"

#include <gtest/gtest.h>

#include "core/rados/rados_env.h"
#include "core/rados/rados_env_testutil.h"
#include "core/rados/rados_lock.h"

namespace dedupv1 {
namespace {

class GatewayClusterViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = test::ConnectTestRados(&cluster_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void TearDown() override {
    if (cluster_) test::RemoveIndexObjects(cluster_.get());
  }
  const SlotView* Find(const ClusterView& v, const std::string& name) {
    for (const auto& s : v.slots) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }
  std::shared_ptr<RadosCluster> cluster_;
};

TEST_F(GatewayClusterViewTest, ShowsHolderLockHeartbeatAndVolumesPerSlot) {
  GatewayRegistry reg(cluster_);
  GatewayRecord a, b;
  ASSERT_TRUE(reg.Register("gw-a", &a).ok());
  ASSERT_TRUE(reg.Register("gw-b", &b).ok());
  ASSERT_TRUE(reg.BeginIncarnation("gw-a", false, &a).ok());
  std::unique_ptr<FileLock> lock;
  ASSERT_TRUE(RadosLock::Acquire(cluster_, "gw.gw-a/LOCK", "/d/LOCK", &lock).ok());
  GatewayHeartbeat hb;
  hb.beat = 1;
  hb.incarnation = a.incarnation;
  hb.state = kHeartbeatServing;
  hb.portal = "127.0.0.1:3261";
  ASSERT_TRUE(WriteGatewayHeartbeat(cluster_.get(), "gw-a", hb).ok());
  std::unique_ptr<Env> env;
  ASSERT_TRUE(NewRadosEnv(cluster_, "/d", "gw.gw-a", &env).ok());
  VolumeRecord vol;
  vol.id = 1;
  vol.name = "vol1";
  vol.size = 32 << 20;
  vol.uid = NewRandomId128();
  ASSERT_TRUE(env->CreateDirs("/d").ok());
  Status s = WriteVolumeTable(env.get(), "/d/volumes", {vol});
  ASSERT_TRUE(s.ok()) << s.ToString();

  ClusterView view;
  ASSERT_TRUE(ReadClusterView(cluster_, &view).ok());
  ASSERT_EQ(view.slots.size(), 2u);
  const SlotView* sa = Find(view, "gw-a");
  const SlotView* sb = Find(view, "gw-b");
  ASSERT_TRUE(sa != nullptr && sb != nullptr);
  EXPECT_TRUE(sa->lock_held());
  EXPECT_EQ(sa->State(), "serving");
  EXPECT_EQ(sa->record.incarnation, 1u);
  EXPECT_EQ(sa->record.address, cluster_->client_address());
  ASSERT_TRUE(sa->has_heartbeat);
  EXPECT_EQ(sa->heartbeat.portal, "127.0.0.1:3261");
  ASSERT_EQ(sa->volumes.size(), 1u);
  EXPECT_EQ(sa->volumes[0].name, "vol1");
  EXPECT_EQ(sa->volumes[0].uid, vol.uid);
  EXPECT_EQ(sa->problem, "");
  EXPECT_FALSE(sb->lock_held());
  EXPECT_EQ(sb->State(), "new");
  EXPECT_TRUE(sb->volumes.empty());
  EXPECT_NE(FormatClusterView(view).find("vol1 -> gw-a"), std::string::npos) << FormatClusterView(view);

  lock.reset();  // released: the holder is gone without saying so
  SlotView slot;
  ASSERT_TRUE(ReadSlotView(cluster_, "gw-a", &slot).ok());
  EXPECT_FALSE(slot.lock_held());
  EXPECT_EQ(slot.State(), "down");
  hb.beat = 2;
  hb.state = kHeartbeatStopped;
  ASSERT_TRUE(WriteGatewayHeartbeat(cluster_.get(), "gw-a", hb).ok());
  ASSERT_TRUE(ReadSlotView(cluster_, "gw-a", &slot).ok());
  EXPECT_EQ(slot.State(), "stopped");
  EXPECT_TRUE(ReadSlotView(cluster_, "gw-c", &slot).IsNotFound());
}

TEST_F(GatewayClusterViewTest, ADamagedHeartbeatIsAProblemOfItsSlotOnly) {
  GatewayRegistry reg(cluster_);
  GatewayRecord a, b;
  ASSERT_TRUE(reg.Register("gw-a", &a).ok());
  ASSERT_TRUE(reg.Register("gw-b", &b).ok());
  librados::bufferlist junk;
  junk.append("not a heartbeat record at all, just bytes");
  ASSERT_EQ(cluster_->index().write_full("gw.gw-a.state", junk), 0);
  ClusterView view;
  ASSERT_TRUE(ReadClusterView(cluster_, &view).ok());
  ASSERT_EQ(view.slots.size(), 2u);
  EXPECT_NE(Find(view, "gw-a")->problem.find("damaged"), std::string::npos) << Find(view, "gw-a")->problem;
  EXPECT_EQ(Find(view, "gw-b")->problem, "");
  EXPECT_NE(FormatClusterView(view).find("problem: gw-a"), std::string::npos);
}

// Cluster scope's GC epochs in the view: the epoch, each slot's safe epoch
// for its current incarnation only, and the slots GC waits for.
TEST_F(GatewayClusterViewTest, ShowsTheGcEpochAndWhichSlotsGcWaitsFor) {
  GatewayRegistry reg(cluster_);
  GatewayRecord a, b, c;
  ASSERT_TRUE(reg.Register("gw-a", &a).ok());
  ASSERT_TRUE(reg.Register("gw-b", &b).ok());
  ASSERT_TRUE(reg.Register("gw-c", &c).ok());
  ClusterView view;
  ASSERT_TRUE(ReadClusterView(cluster_, &view).ok());
  EXPECT_FALSE(view.has_gc) << "no epoch raised, no slot published: no GC line";
  EXPECT_EQ(FormatClusterView(view).find("gc epoch"), std::string::npos);
  ASSERT_TRUE(reg.BeginIncarnation("gw-a", false, &a).ok());
  ASSERT_TRUE(reg.BeginIncarnation("gw-c", false, &c).ok());
  for (uint64_t e = 0; e < 2; e++) {
    bool bumped = false;
    ASSERT_TRUE(BumpGcEpoch(cluster_.get(), e, &bumped).ok());
    ASSERT_TRUE(bumped);
  }
  ASSERT_TRUE(PublishSafeEpoch(cluster_.get(), "gw-a", a.incarnation, 2).ok());
  ASSERT_TRUE(PublishSafeEpoch(cluster_.get(), "gw-b", b.incarnation, kSafeEpochClosed).ok());
  ASSERT_TRUE(PublishSafeEpoch(cluster_.get(), "gw-c", c.incarnation - 1, 2).ok());  // an earlier incarnation's
  ASSERT_TRUE(ReadClusterView(cluster_, &view).ok());
  EXPECT_TRUE(view.has_gc);
  EXPECT_EQ(view.gc_epoch, 2u);
  EXPECT_TRUE(Find(view, "gw-a")->has_safe_epoch);
  EXPECT_EQ(Find(view, "gw-a")->safe_epoch, 2u);
  EXPECT_EQ(Find(view, "gw-b")->safe_epoch, kSafeEpochClosed);
  EXPECT_FALSE(Find(view, "gw-c")->has_safe_epoch);
  EXPECT_EQ(view.GcBehind(), std::vector<std::string>({"gw-c"}));
  const std::string t = FormatClusterView(view);
  EXPECT_NE(t.find("gc epoch: 2; safe: gw-a 2, gw-b closed, gw-c -; GC waits for: gw-c"), std::string::npos) << t;
}

}  // namespace
}  // namespace dedupv1

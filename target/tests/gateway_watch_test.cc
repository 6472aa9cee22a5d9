// GatewayWatch's verdicts (target/gateway_watch.h) and the /cluster JSON
// (target/monitor/cluster_json.h) on views built by hand: no cluster.
#include "target/gateway_watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "target/monitor/cluster_json.h"

namespace dedupv1 {
namespace {

SlotView Slot(bool held, uint64_t beat, const std::string& state, uint32_t incarnation = 3) {
  SlotView s;
  s.name = "gw-a";
  s.record.slot = 1;
  s.record.incarnation = incarnation;
  s.record.takeovers = 1;
  s.record.host = "host-a";
  s.record.pid = 77;
  s.record.address = "127.0.0.1:0/99";
  if (held) s.holders.push_back({"client.4100", "cookie", "v1:127.0.0.1:0/99"});
  s.has_heartbeat = true;
  s.heartbeat.beat = beat;
  s.heartbeat.incarnation = incarnation;
  s.heartbeat.state = state;
  s.heartbeat.portal = "127.0.0.1:3260";
  return s;
}

TEST(GatewayWatchTest, TakesOverOnlyAfterTwoLooksAtAFreeLockAndAStillHeartbeat) {
  GatewayWatch w;
  std::string why;
  EXPECT_EQ(w.Judge(Slot(true, 10, kHeartbeatServing), &why), WatchVerdict::kServed);
  EXPECT_NE(why.find("client.4100"), std::string::npos) << why;
  EXPECT_EQ(w.Judge(Slot(false, 11, kHeartbeatServing), &why), WatchVerdict::kSuspect);
  EXPECT_EQ(w.Judge(Slot(false, 11, kHeartbeatServing), &why), WatchVerdict::kTakeOver);
  EXPECT_NE(why.find("host-a pid 77"), std::string::npos) << why;
}

TEST(GatewayWatchTest, AMovingHeartbeatOrAHeldLockStartsAfresh) {
  GatewayWatch w;
  EXPECT_EQ(w.Judge(Slot(false, 11, kHeartbeatServing), nullptr), WatchVerdict::kSuspect);
  EXPECT_EQ(w.Judge(Slot(false, 12, kHeartbeatServing), nullptr), WatchVerdict::kSuspect);  // it beats
  EXPECT_EQ(w.Judge(Slot(true, 13, kHeartbeatServing), nullptr), WatchVerdict::kServed);
  EXPECT_EQ(w.Judge(Slot(false, 13, kHeartbeatServing), nullptr), WatchVerdict::kSuspect);  // not two looks yet
  // A new incarnation between the looks (someone else took it) starts afresh.
  EXPECT_EQ(w.Judge(Slot(false, 13, kHeartbeatServing, 4), nullptr), WatchVerdict::kSuspect);
  w.Reset();
  EXPECT_EQ(w.Judge(Slot(false, 13, kHeartbeatServing, 4), nullptr), WatchVerdict::kSuspect);
}

TEST(GatewayWatchTest, CleanStopsAndNeverOpenedSlotsAreLeftAlone) {
  GatewayWatch w;
  std::string why;
  // The holder released its lock just before it wrote "stopped": the second
  // look sees the stop.
  EXPECT_EQ(w.Judge(Slot(false, 20, kHeartbeatServing), &why), WatchVerdict::kSuspect);
  EXPECT_EQ(w.Judge(Slot(false, 21, kHeartbeatStopped), &why), WatchVerdict::kStopped);
  EXPECT_EQ(w.Judge(Slot(false, 21, kHeartbeatStopped), &why), WatchVerdict::kStopped);
  EXPECT_NE(why.find("admin"), std::string::npos) << why;
  SlotView fresh = Slot(false, 0, "", 0);
  fresh.has_heartbeat = false;
  EXPECT_EQ(w.Judge(fresh, nullptr), WatchVerdict::kStopped);
  EXPECT_EQ(w.Judge(fresh, nullptr), WatchVerdict::kStopped);
  // A fenced holder with a free lock is down: taken over.
  EXPECT_EQ(w.Judge(Slot(false, 5, kHeartbeatFenced), nullptr), WatchVerdict::kSuspect);
  EXPECT_EQ(w.Judge(Slot(false, 5, kHeartbeatFenced), nullptr), WatchVerdict::kTakeOver);
  // A crashed holder that never wrote a heartbeat: taken over too.
  SlotView silent = Slot(false, 0, "", 2);
  silent.has_heartbeat = false;
  GatewayWatch w2;
  EXPECT_EQ(w2.Judge(silent, nullptr), WatchVerdict::kSuspect);
  EXPECT_EQ(w2.Judge(silent, nullptr), WatchVerdict::kTakeOver);
}

// A holder that fenced itself and keeps running still beats ("fenced"):
// its changing beat must not keep the slot from being taken over.
TEST(GatewayWatchTest, AFencedHolderThatStillBeatsIsTakenOver) {
  GatewayWatch w;
  EXPECT_EQ(w.Judge(Slot(false, 5, kHeartbeatFenced), nullptr), WatchVerdict::kSuspect);
  EXPECT_EQ(w.Judge(Slot(false, 6, kHeartbeatFenced), nullptr), WatchVerdict::kTakeOver);
  // A serving beat that moves is a live holder (its renewal is late).
  GatewayWatch w2;
  EXPECT_EQ(w2.Judge(Slot(false, 5, kHeartbeatServing), nullptr), WatchVerdict::kSuspect);
  EXPECT_EQ(w2.Judge(Slot(false, 6, kHeartbeatServing), nullptr), WatchVerdict::kSuspect);
}

// The looks that decide are at least the gap apart (one lease in dedupv1d
// watch): two quick looks that both miss a slow beat are not enough.
TEST(GatewayWatchTest, TakesOverOnlyOnceTheLockWasFreeForTheGap) {
  GatewayWatch w(std::chrono::milliseconds(300));
  const auto began = std::chrono::steady_clock::now();
  EXPECT_EQ(w.Judge(Slot(false, 11, kHeartbeatServing), nullptr), WatchVerdict::kSuspect);
  std::string why;
  WatchVerdict v = w.Judge(Slot(false, 11, kHeartbeatServing), &why);
  if (std::chrono::steady_clock::now() - began < std::chrono::milliseconds(300)) {
    EXPECT_EQ(v, WatchVerdict::kSuspect) << why;
  }
  // The first sighting is kept while the beat stands still.
  for (int i = 0; i < 40 && v != WatchVerdict::kTakeOver; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    v = w.Judge(Slot(false, 11, kHeartbeatServing), &why);
  }
  EXPECT_EQ(v, WatchVerdict::kTakeOver) << why;
  EXPECT_GE(std::chrono::steady_clock::now() - began, std::chrono::milliseconds(300));
}

// A look that could not read the lock (or the heartbeat) never counts.
TEST(GatewayWatchTest, AnUnreadableLockIsNotAFreeOne) {
  GatewayWatch w;
  SlotView unread = Slot(false, 11, kHeartbeatServing);
  unread.problem = "lock: IO error: timed out";
  EXPECT_EQ(w.Judge(unread, nullptr), WatchVerdict::kSuspect);
  EXPECT_EQ(w.Judge(unread, nullptr), WatchVerdict::kSuspect);
  EXPECT_EQ(w.Judge(Slot(false, 11, kHeartbeatServing), nullptr), WatchVerdict::kSuspect);
  EXPECT_EQ(w.Judge(Slot(false, 11, kHeartbeatServing), nullptr), WatchVerdict::kTakeOver);
}

TEST(ClusterJsonTest, OneDocumentWithSlotsVolumeOwnersAndTakeovers) {
  ClusterView view;
  view.store = "ns1";
  SlotView a = Slot(true, 10, kHeartbeatServing);
  VolumeRecord v;
  v.id = 1;
  v.name = "vol1";
  v.size = 1 << 20;
  a.volumes.push_back(v);
  a.heartbeat.volumes = {"vol1"};
  SlotView b = Slot(false, 0, "", 0);
  b.name = "gw-b";
  b.record.slot = 2;
  b.record.takeovers = 2;
  b.has_heartbeat = false;
  b.problem = "volume table: damaged";
  view.slots = {a, b};
  const auto j = ClusterViewJson(view);
  EXPECT_EQ(j["store"], "ns1");
  ASSERT_EQ(j["gateways"].size(), 2u);
  EXPECT_EQ(j["gateways"][0]["gateway"], "gw-a");
  EXPECT_EQ(j["gateways"][0]["state"], "serving");
  EXPECT_EQ(j["gateways"][0]["lock_held"], true);
  EXPECT_EQ(j["gateways"][0]["lock_holders"][0]["client"], "client.4100");
  EXPECT_EQ(j["gateways"][0]["holder"]["host"], "host-a");
  EXPECT_EQ(j["gateways"][0]["holder"]["pid"], 77);
  EXPECT_EQ(j["gateways"][0]["heartbeat"]["beat"], 10);
  EXPECT_EQ(j["gateways"][0]["heartbeat"]["portal"], "127.0.0.1:3260");
  EXPECT_EQ(j["gateways"][0]["volumes"][0]["size_bytes"], 1 << 20);
  EXPECT_EQ(j["gateways"][1]["state"], "new");
  EXPECT_TRUE(j["gateways"][1]["heartbeat"].is_null());
  EXPECT_EQ(j["gateways"][1]["problem"], "volume table: damaged");
  EXPECT_EQ(j["volumes"]["vol1"], "gw-a");
  EXPECT_EQ(j["takeovers"], 3);
}

// Heartbeats with load figures (cluster scope): per gateway claims pending
// and shard max/mean, the cluster's total of claims and its busiest gateway.
ClusterView ViewWithLoad() {
  ClusterView view;
  view.store = "ns1";
  SlotView a = Slot(true, 10, kHeartbeatServing);
  a.heartbeat.has_load = true;
  a.heartbeat.claims_pending = 5;
  a.heartbeat.shards = 4;
  a.heartbeat.shard_ops_total = 100;
  a.heartbeat.shard_ops_max = 30;  // max/mean 1.2
  SlotView b = Slot(true, 4, kHeartbeatServing);
  b.name = "gw-b";
  b.heartbeat.has_load = true;
  b.heartbeat.claims_pending = 7;
  b.heartbeat.shards = 4;
  b.heartbeat.shard_ops_total = 40;
  b.heartbeat.shard_ops_max = 10;  // max/mean 1.0
  SlotView c = Slot(false, 2, kHeartbeatStopped);  // an older build: no load figures
  c.name = "gw-c";
  view.slots = {a, b, c};
  return view;
}

TEST(ClusterJsonTest, LoadFiguresPerGatewayAndForTheCluster) {
  const ClusterView view = ViewWithLoad();
  EXPECT_EQ(view.ClaimsPending(), 12u);
  EXPECT_DOUBLE_EQ(view.ShardMaxOverMean(), 1.2);
  const auto j = ClusterViewJson(view);
  EXPECT_EQ(j["gateways"][0]["heartbeat"]["claims_pending"], 5);
  EXPECT_EQ(j["gateways"][0]["heartbeat"]["shard_ops_total"], 100);
  EXPECT_EQ(j["gateways"][0]["heartbeat"]["shard_ops_max"], 30);
  EXPECT_DOUBLE_EQ(j["gateways"][0]["heartbeat"]["shard_max_over_mean"].get<double>(), 1.2);
  EXPECT_EQ(j["gateways"][1]["heartbeat"]["claims_pending"], 7);
  EXPECT_FALSE(j["gateways"][2]["heartbeat"].contains("claims_pending"));
  EXPECT_EQ(j["claims_pending"], 12);
  EXPECT_DOUBLE_EQ(j["shard_max_over_mean"].get<double>(), 1.2);
}

TEST(ClusterJsonTest, GcEpochSafeEpochsAndWhomGcWaitsFor) {
  ClusterView view = ViewWithLoad();
  EXPECT_FALSE(ClusterViewJson(view).contains("gc_epoch")) << "no GC epochs: no keys";
  view.has_gc = true;
  view.gc_epoch = 4;
  view.slots[0].has_safe_epoch = true;
  view.slots[0].safe_epoch = kSafeEpochClosed;
  const auto j = ClusterViewJson(view);
  EXPECT_EQ(j["gc_epoch"], 4);
  EXPECT_EQ(j["gateways"][0]["safe_epoch"], "closed");
  EXPECT_FALSE(j["gateways"][1].contains("safe_epoch"));
  // Every other slot has said nothing: GC waits for each of them.
  ASSERT_EQ(j["gc_waits_for"].size(), view.slots.size() - 1);
  for (size_t i = 1; i < view.slots.size(); i++) EXPECT_EQ(j["gc_waits_for"][i - 1], view.slots[i].name);
}

TEST(ClusterViewFormatTest, TableShowsClaimsPendingAndShardLoad) {
  const std::string t = FormatClusterView(ViewWithLoad());
  EXPECT_NE(t.find("CLAIMS"), std::string::npos) << t;
  EXPECT_NE(t.find("100 ops, max/mean 1.20"), std::string::npos) << t;
  EXPECT_NE(t.find("40 ops, max/mean 1.00"), std::string::npos) << t;
  EXPECT_NE(t.find("claims pending: 12 (all gateways); shard load max/mean: 1.20"), std::string::npos) << t;
}

TEST(ClusterViewFormatTest, TableHasARowPerSlotAndVolumeOwners) {
  ClusterView view;
  view.store = "ns1";
  SlotView a = Slot(true, 10, kHeartbeatServing);
  VolumeRecord v;
  v.id = 1;
  v.name = "vol1";
  v.size = 4096;
  a.volumes.push_back(v);
  SlotView b = Slot(false, 9, kHeartbeatStopped, 2);
  b.name = "gw-b";
  view.slots = {a, b};
  const std::string t = FormatClusterView(view);
  EXPECT_NE(t.find("store ns1: 2 gateway slots"), std::string::npos) << t;
  EXPECT_NE(t.find("GATEWAY"), std::string::npos) << t;
  EXPECT_NE(t.find("gw-a  "), std::string::npos) << t;
  EXPECT_NE(t.find("serving"), std::string::npos) << t;
  EXPECT_NE(t.find("stopped"), std::string::npos) << t;
  EXPECT_NE(t.find("10@3"), std::string::npos) << t;
  EXPECT_NE(t.find("host-a pid 77 127.0.0.1:0/99"), std::string::npos) << t;
  EXPECT_NE(t.find("vol1 -> gw-a (id 1, 4096 bytes"), std::string::npos) << t;
  EXPECT_EQ(t.find("problem"), std::string::npos) << t;
}

}  // namespace
}  // namespace dedupv1

// Tests of the gateway heartbeat (core/rados/gateway_heartbeat.h) against the
// live Ceph cluster named by DEDUPV1_TEST_CEPH_CONF; each test in a RADOS
// namespace of its own.
#include "core/rados/gateway_heartbeat.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "core/rados/rados_test_fixture.h"

namespace dedupv1 {
namespace {

using std::chrono::milliseconds;

GatewayHeartbeat Sample(uint32_t incarnation) {
  GatewayHeartbeat hb;
  hb.beat = 7;
  hb.incarnation = incarnation;
  hb.takeovers = 2;
  hb.pid = 4242;
  hb.state = kHeartbeatServing;
  hb.host = "host-b";
  hb.portal = "127.0.0.1:3260";
  hb.volumes = {"vol1", "vol2"};
  return hb;
}

class GatewayHeartbeatTest : public test::RadosNamespaceTest {};

TEST_F(GatewayHeartbeatTest, EncodingRoundTripsAndDetectsDamage) {
  const GatewayHeartbeat hb = Sample(3);
  const std::string v = EncodeGatewayHeartbeat("gw-a", hb);
  GatewayHeartbeat back;
  ASSERT_TRUE(DecodeGatewayHeartbeat("here", "gw-a", v, &back).ok());
  EXPECT_EQ(back, hb);
  // The name is in the CRC: another slot's record is not this slot's.
  EXPECT_TRUE(DecodeGatewayHeartbeat("here", "gw-b", v, &back).IsCorruption());
  for (size_t i = 0; i < v.size(); i++) {
    std::string bad = v;
    bad[i] ^= 0x20;
    Status s = DecodeGatewayHeartbeat("here", "gw-a", bad, &back);
    EXPECT_TRUE(s.IsCorruption()) << "flipped byte " << i << ": " << s.ToString();
  }
  EXPECT_TRUE(DecodeGatewayHeartbeat("here", "gw-a", v.substr(0, 10), &back).IsCorruption());
}

// Version 2 carries the load figures (cluster scope); a record without them
// stays version 1, so readers of either build decode what the other wrote.
TEST_F(GatewayHeartbeatTest, LoadFiguresRoundTripAsVersionTwo) {
  GatewayHeartbeat hb = Sample(3);
  const std::string v1 = EncodeGatewayHeartbeat("gw-a", hb);
  EXPECT_EQ(v1[0], 1);
  hb.has_load = true;
  hb.claims_pending = 17;
  hb.shards = 64;
  hb.shard_ops_total = 6400;
  hb.shard_ops_max = 110;
  const std::string v2 = EncodeGatewayHeartbeat("gw-a", hb);
  EXPECT_EQ(v2[0], 2);
  GatewayHeartbeat back;
  ASSERT_TRUE(DecodeGatewayHeartbeat("here", "gw-a", v2, &back).ok());
  EXPECT_EQ(back, hb);
  EXPECT_DOUBLE_EQ(back.ShardMaxOverMean(), 1.1);
  ASSERT_TRUE(DecodeGatewayHeartbeat("here", "gw-a", v1, &back).ok());
  EXPECT_FALSE(back.has_load);
  EXPECT_EQ(back.claims_pending, 0u);
  for (size_t i = 0; i < v2.size(); i++) {
    std::string bad = v2;
    bad[i] ^= 0x20;
    EXPECT_TRUE(DecodeGatewayHeartbeat("here", "gw-a", bad, &back).IsCorruption()) << "flipped byte " << i;
  }
}

TEST_F(GatewayHeartbeatTest, WriterPublishesTheLoadSourcesFigures) {
  std::unique_ptr<GatewayHeartbeatWriter> w;
  ASSERT_TRUE(GatewayHeartbeatWriter::Start(cluster_, "gw-a", Sample(1), milliseconds(100), &w).ok());
  std::atomic<uint64_t> pending{3};
  w->SetLoadSource([&pending](GatewayHeartbeat* hb) {
    hb->has_load = true;
    hb->claims_pending = pending.load();
    hb->shards = 8;
    hb->shard_ops_total = 80;
    hb->shard_ops_max = 12;
  });
  GatewayHeartbeat got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    std::this_thread::sleep_for(milliseconds(50));
    ASSERT_TRUE(ReadGatewayHeartbeat(cluster_.get(), "gw-a", &got).ok());
  } while (!got.has_load && std::chrono::steady_clock::now() < deadline);
  ASSERT_TRUE(got.has_load);
  EXPECT_EQ(got.claims_pending, 3u);
  EXPECT_DOUBLE_EQ(got.ShardMaxOverMean(), 1.2);
  w->SetLoadSource(nullptr);  // returns with no call in progress: |pending| may go
  ASSERT_TRUE(w->Stop(kHeartbeatStopped).ok());
  ASSERT_TRUE(ReadGatewayHeartbeat(cluster_.get(), "gw-a", &got).ok());
  EXPECT_FALSE(got.has_load);  // the last beat after the source went
}

TEST_F(GatewayHeartbeatTest, WriteReadAndNoneIsNotFound) {
  GatewayHeartbeat got;
  Status s = ReadGatewayHeartbeat(cluster_.get(), "gw-a", &got);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  s = WriteGatewayHeartbeat(cluster_.get(), "gw-a", Sample(1));
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(ReadGatewayHeartbeat(cluster_.get(), "gw-a", &got).ok());
  EXPECT_EQ(got, Sample(1));
  EXPECT_TRUE(test::IndexObjects(cluster_.get()).count("gw.gw-a.state"));
}

TEST_F(GatewayHeartbeatTest, AnOlderIncarnationNeverOverwritesANewerOne) {
  ASSERT_TRUE(WriteGatewayHeartbeat(cluster_.get(), "gw-a", Sample(5)).ok());
  GatewayHeartbeat old = Sample(4);
  old.state = kHeartbeatFenced;
  Status s = WriteGatewayHeartbeat(cluster_.get(), "gw-a", old);
  EXPECT_TRUE(s.IsAborted()) << s.ToString();
  EXPECT_NE(s.ToString().find("gw.gw-a.state"), std::string::npos) << s.ToString();
  GatewayHeartbeat got;
  ASSERT_TRUE(ReadGatewayHeartbeat(cluster_.get(), "gw-a", &got).ok());
  EXPECT_EQ(got, Sample(5));
  // The same and a newer incarnation may write.
  GatewayHeartbeat same = Sample(5);
  same.beat = 8;
  ASSERT_TRUE(WriteGatewayHeartbeat(cluster_.get(), "gw-a", same).ok());
  ASSERT_TRUE(WriteGatewayHeartbeat(cluster_.get(), "gw-a", Sample(6)).ok());
  ASSERT_TRUE(ReadGatewayHeartbeat(cluster_.get(), "gw-a", &got).ok());
  EXPECT_EQ(got.incarnation, 6u);
}

TEST_F(GatewayHeartbeatTest, WriterBeatsUntilStoppedThenSaysStopped) {
  std::unique_ptr<GatewayHeartbeatWriter> w;
  GatewayHeartbeat first = Sample(2);
  first.beat = 0;
  ASSERT_TRUE(GatewayHeartbeatWriter::Start(cluster_, "gw-a", first, milliseconds(100), &w).ok());
  GatewayHeartbeat got;
  ASSERT_TRUE(ReadGatewayHeartbeat(cluster_.get(), "gw-a", &got).ok());
  EXPECT_EQ(got.beat, 1u);  // written before Start returned
  EXPECT_EQ(got.state, kHeartbeatServing);
  w->SetVolumes({"only"});
  // The beat moves: what a watcher judges liveness by (bounded poll).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((got.beat < 4 || got.volumes != std::vector<std::string>{"only"}) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
    ASSERT_TRUE(ReadGatewayHeartbeat(cluster_.get(), "gw-a", &got).ok());
  }
  EXPECT_GE(got.beat, 4u);
  EXPECT_EQ(got.volumes, std::vector<std::string>{"only"});
  ASSERT_TRUE(w->Stop(kHeartbeatStopped).ok());
  ASSERT_TRUE(ReadGatewayHeartbeat(cluster_.get(), "gw-a", &got).ok());
  EXPECT_EQ(got.state, kHeartbeatStopped);
  const uint64_t last = got.beat;
  std::this_thread::sleep_for(milliseconds(300));  // three intervals: nothing may beat any more
  ASSERT_TRUE(ReadGatewayHeartbeat(cluster_.get(), "gw-a", &got).ok());
  EXPECT_EQ(got.beat, last);
}

TEST_F(GatewayHeartbeatTest, ChangedVolumesAreWrittenAtOnceNotAtTheNextInterval) {
  std::unique_ptr<GatewayHeartbeatWriter> w;
  ASSERT_TRUE(GatewayHeartbeatWriter::Start(cluster_, "gw-a", Sample(1), std::chrono::seconds(120), &w).ok());
  w->SetVolumes({"new-lun"});
  GatewayHeartbeat got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    std::this_thread::sleep_for(milliseconds(50));
    ASSERT_TRUE(ReadGatewayHeartbeat(cluster_.get(), "gw-a", &got).ok());
  } while (got.volumes != std::vector<std::string>{"new-lun"} && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(got.volumes, std::vector<std::string>{"new-lun"});
  EXPECT_LE(w->beats(), 2u);  // the first and the nudged one at most: the interval (120 s) never ran out
}

TEST_F(GatewayHeartbeatTest, WriterOfAnOldIncarnationStopsWhenSuperseded) {
  std::unique_ptr<GatewayHeartbeatWriter> w;
  ASSERT_TRUE(GatewayHeartbeatWriter::Start(cluster_, "gw-a", Sample(1), milliseconds(100), &w).ok());
  ASSERT_TRUE(WriteGatewayHeartbeat(cluster_.get(), "gw-a", Sample(2)).ok());  // the taker
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!w->last_error().IsAborted() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(w->last_error().IsAborted()) << w->last_error().ToString();
  EXPECT_TRUE(w->Stop(kHeartbeatStopped).IsAborted());
  GatewayHeartbeat got;
  ASSERT_TRUE(ReadGatewayHeartbeat(cluster_.get(), "gw-a", &got).ok());
  EXPECT_EQ(got, Sample(2));
}

}  // namespace
}  // namespace dedupv1

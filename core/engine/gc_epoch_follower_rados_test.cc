// GcEpochFollower (core/engine/gc_epoch_follower.h) and the GC epochs on
// the gc object (core/rados/gc_epochs.h): a slot sets a newer epoch as its
// runs' tag before the checkpoint that counts what older runs logged, and
// publishes "safe" only after that checkpoint succeeded; a lost record is
// published again. Needs the test cluster (DEDUPV1_TEST_CEPH_CONF); a
// namespace of its own per test.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <rados/librados.hpp>

#include "core/engine/gc_epoch_follower.h"
#include "core/rados/gc_epochs.h"
#include "core/rados/gc_leader_lease.h"
#include "core/rados/rados_test_fixture.h"

namespace dedupv1 {
namespace {

class GatewayGcEpochs : public test::RadosNamespaceTest {
 protected:
  GatewayGcEpochs() : RadosNamespaceTest(64 << 10, /*lock_duration_s=*/5) {}

  std::unique_ptr<GcEpochFollower> Follower(std::chrono::milliseconds republish = std::chrono::seconds(60)) {
    GcEpochFollower::Hooks hooks;
    hooks.set_epoch = [this](uint64_t e) { calls_.push_back("set " + std::to_string(e)); };
    hooks.checkpoint = [this] {
      calls_.push_back("checkpoint");
      return checkpoint_result_;
    };
    return std::make_unique<GcEpochFollower>(cluster_, "gw-x", 4, hooks, std::chrono::milliseconds(50), republish);
  }
  // gw-x's record, or none (incarnation 0).
  SlotSafeEpoch Record() {
    GcEpochState state;
    Status s = ReadGcEpochState(cluster_.get(), &state);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(state.damaged.empty());
    auto it = state.safe.find("gw-x");
    return it == state.safe.end() ? SlotSafeEpoch{} : it->second;
  }
  void Raise() {
    uint64_t e = 0;
    ASSERT_TRUE(ReadGcEpoch(cluster_.get(), &e).ok());
    bool bumped = false;
    ASSERT_TRUE(BumpGcEpoch(cluster_.get(), e, &bumped).ok());
    ASSERT_TRUE(bumped);
  }

  std::vector<std::string> calls_;
  Status checkpoint_result_;
};

TEST_F(GatewayGcEpochs, TagSetBeforeTheCheckpointAndSafePublishedAfterIt) {
  std::unique_ptr<GcEpochFollower> f = Follower();
  ASSERT_TRUE(f->Open().ok());
  EXPECT_EQ(calls_, std::vector<std::string>({"set 0"}));
  EXPECT_EQ(Record().incarnation, 0u) << "Open publishes nothing: the log is not counted yet";
  // The first look counts the log and says "safe at 0".
  ASSERT_TRUE(f->Follow().ok());
  EXPECT_EQ(calls_, std::vector<std::string>({"set 0", "checkpoint"}));
  EXPECT_EQ(Record().incarnation, 4u);
  EXPECT_EQ(Record().safe, 0u);
  // Unchanged epoch: nothing more, however often it looks.
  for (int i = 0; i < 3; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    ASSERT_TRUE(f->Follow().ok());
  }
  EXPECT_EQ(calls_.size(), 2u);
  // Raised twice (the absent xattr counts as 0): the new tag, then the
  // checkpoint, then "safe at 2".
  Raise();
  Raise();
  ASSERT_TRUE(f->Advance().ok());
  EXPECT_EQ(calls_, std::vector<std::string>({"set 0", "checkpoint", "set 2", "checkpoint"}));
  EXPECT_EQ(f->epoch(), 2u);
  EXPECT_EQ(f->published(), 2u);
  EXPECT_EQ(Record().safe, 2u);
  // A failed checkpoint publishes nothing (the tag moves on: runs from now
  // on are tagged 3 either way) and the next look tries again.
  Raise();
  checkpoint_result_ = Status::IOError("injected");
  EXPECT_FALSE(f->Advance().ok());
  EXPECT_EQ(f->epoch(), 3u);
  EXPECT_EQ(Record().safe, 2u);
  checkpoint_result_ = Status::OK();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  ASSERT_TRUE(f->Follow().ok());
  EXPECT_EQ(Record().safe, 3u);
  EXPECT_EQ(calls_.back(), "checkpoint");
  EXPECT_EQ(calls_[calls_.size() - 3], "set 3");
  // A clean close blocks nothing any more.
  ASSERT_TRUE(f->PublishClosed().ok());
  EXPECT_EQ(Record().safe, kSafeEpochClosed);
}

TEST_F(GatewayGcEpochs, ALostOrDamagedRecordIsPublishedAgainAndADamagedOneIsReported) {
  std::unique_ptr<GcEpochFollower> f = Follower(std::chrono::milliseconds(100));
  ASSERT_TRUE(f->Open().ok());
  ASSERT_TRUE(f->Follow().ok());
  ASSERT_EQ(Record().incarnation, 4u);
  // Damage the record: reported, never trusted.
  librados::bufferlist junk;
  junk.append("not a record");
  librados::ObjectWriteOperation op;
  op.omap_set({{SafeEpochKey("gw-x"), junk}});
  ASSERT_EQ(cluster_->index().operate(GcLeaderLease::kObject, &op), 0);
  GcEpochState state;
  ASSERT_TRUE(ReadGcEpochState(cluster_.get(), &state).ok());
  EXPECT_EQ(state.safe.count("gw-x"), 0u);
  ASSERT_EQ(state.damaged.size(), 1u);
  EXPECT_NE(state.damaged[0].find("gw-x"), std::string::npos) << state.damaged[0];
  // Said again within the republish interval and a poll, without a checkpoint.
  const size_t checkpoints = calls_.size();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  ASSERT_TRUE(f->Follow().ok());
  EXPECT_EQ(Record().incarnation, 4u);
  EXPECT_EQ(calls_.size(), checkpoints);
}

}  // namespace
}  // namespace dedupv1

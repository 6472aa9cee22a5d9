// Tests of ChunkClaims' waits against the test cluster of
// DEDUPV1_TEST_CEPH_CONF: two gateway slots (two shared-table instances on
// connections of their own) in one RADOS namespace per test.
#include "index/chunk_claims.h"

#include <chrono>
#include <set>

#include <gtest/gtest.h>

#include "core/base/testutil.h"
#include "core/rados/rados_test_fixture.h"

namespace dedupv1 {
namespace {

constexpr uint16_t kSlotA = 1, kSlotB = 2;
constexpr ContainerId kContainerA = (ContainerId{kSlotA} << 48) + 1;  // never written
constexpr ContainerId kContainerB = (ContainerId{kSlotB} << 48) + 1;

class GatewayChunkClaims : public test::RadosNamespaceTest {
 protected:
  void TearDown() override {
    a_.reset();
    b_.reset();
    RadosNamespaceTest::TearDown();
  }
  // Slot |slot|'s claims; no container exists (none was written).
  std::unique_ptr<ChunkClaims> MustOpen(uint16_t slot, const std::string& gateway, uint64_t hold_ms) {
    RadosSharedChunkTableOptions t;
    t.rados = rados_;
    t.rados.gateway = gateway;
    t.shards = 16;
    t.slot = slot;
    t.incarnation = 1;
    ChunkClaimsOptions o;
    o.claim_hold_ms = hold_ms;
    o.container_exists = [](ContainerId, bool* exists) {
      *exists = false;
      return Status::OK();
    };
    std::unique_ptr<ChunkClaims> c;
    Status s = ChunkClaims::Open(t, o, &c);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return c;
  }

  std::unique_ptr<ChunkClaims> a_, b_;
};

// A run of B that lost many claims to a gateway A that died before writing
// its container (the claims' container never appears) waits one claim hold
// for all of them, then takes every one over: not a hold per claim (40 holds
// of 1 s here; with the default hold of 30 s a stalled write of minutes).
TEST_F(GatewayChunkClaims, ManyLostClaimsOfADeadClaimerWaitOneHold) {
  constexpr uint64_t kHoldMs = 1000;
  constexpr size_t kChunks = 40;
  a_ = MustOpen(kSlotA, "gw-a", kHoldMs);
  b_ = MustOpen(kSlotB, "gw-b", kHoldMs);
  ASSERT_TRUE(a_ && b_);
  const std::vector<Fingerprint> fps = test::RandomFingerprints(kChunks, 15);
  std::vector<ChunkClaims::NewChunk> of_a, of_b;
  for (const Fingerprint& fp : fps) {
    of_a.push_back({fp, kContainerA, 8192});
    of_b.push_back({fp, kContainerB, 8192});
  }
  std::vector<ContainerId> use;
  Status s = a_->Claim(of_a, &use);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(std::vector<ContainerId>(kChunks, kContainerA), use);
  a_.reset();  // A dies: its container is never written

  const auto start = std::chrono::steady_clock::now();
  s = b_->Claim(of_b, &use);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(std::vector<ContainerId>(kChunks, kContainerB), use);
  const ChunkClaimsStats st = b_->stats();
  EXPECT_EQ(kChunks, st.takeovers);
  EXPECT_EQ(0u, st.claims_lost);
  EXPECT_GE(ms, static_cast<int64_t>(kHoldMs)) << "taken over before the hold ended";
  // A hold per claim would take 40 s; one hold plus the cluster's round
  // trips stays far below 10 s even on a loaded machine.
  EXPECT_LT(ms, static_cast<int64_t>(10 * kHoldMs)) << "more than one hold for one round of claims";
  // The table names B's copies now.
  std::vector<std::optional<SharedEntry>> entries;
  s = b_->table()->LookupMany(fps, &entries);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (size_t i = 0; i < kChunks; i++) {
    ASSERT_TRUE(entries[i].has_value()) << i;
    EXPECT_EQ(kContainerB, entries[i]->container) << i;
    EXPECT_EQ(kSlotB, entries[i]->claimer_slot) << i;
  }
}

}  // namespace
}  // namespace dedupv1

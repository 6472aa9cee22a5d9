// ClaimCombiner against the test cluster of DEDUPV1_TEST_CEPH_CONF: claims
// of concurrent callers go in shared rounds, and each caller gets exactly
// its own results, also when two callers claim the same fingerprint.
#include "index/claim_combiner.h"

#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "core/base/types.h"
#include "core/rados/rados_test_fixture.h"

namespace dedupv1 {
namespace {

constexpr uint16_t kSlot = 1;

Fingerprint MakeFp(std::mt19937_64* rng) {
  Fingerprint fp;
  fp.size = 20;
  for (size_t b = 0; b < fp.size; b++) fp.bytes[b] = static_cast<uint8_t>((*rng)());
  return fp;
}

class GatewayClaimCombiner : public test::RadosNamespaceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(RadosNamespaceTest::SetUp());
    RadosSharedChunkTableOptions o;
    o.rados = rados_;
    o.rados.gateway = "gw-a";
    o.shards = 16;
    o.slot = kSlot;
    o.incarnation = 1;
    Status s = RadosSharedChunkTable::Open(o, &table_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void TearDown() override {
    table_.reset();
    RadosNamespaceTest::TearDown();
  }

  std::unique_ptr<RadosSharedChunkTable> table_;
};

TEST_F(GatewayClaimCombiner, ConcurrentCallersShareRoundsAndGetTheirOwnResults) {
  constexpr int kCallers = 12;
  constexpr size_t kPerCaller = 40;
  std::mt19937_64 rng(77);
  const Fingerprint shared = MakeFp(&rng);  // claimed by callers 0 and 1
  std::vector<std::vector<SharedClaim>> claims(kCallers);
  for (int c = 0; c < kCallers; c++) {
    for (size_t i = 0; i < kPerCaller; i++) {
      const Fingerprint fp = (c < 2 && i == 7) ? shared : MakeFp(&rng);
      claims[c].push_back(SharedClaim{fp, (ContainerId{kSlot} << 48) + 100 + c});
    }
  }
  ClaimCombiner combiner(table_.get());
  std::vector<std::vector<SharedCasResult>> results(kCallers);
  std::vector<Status> statuses(kCallers);
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  std::vector<std::thread> threads;
  for (int c = 0; c < kCallers; c++) {
    threads.emplace_back([&, c] {
      {
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return go; });
      }
      statuses[c] = combiner.ClaimMany(claims[c], 3, &results[c]);
    });
  }
  {
    std::lock_guard<std::mutex> l(mu);
    go = true;
  }
  cv.notify_all();
  for (std::thread& t : threads) t.join();
  int shared_won = 0;
  for (int c = 0; c < kCallers; c++) {
    ASSERT_TRUE(statuses[c].ok()) << statuses[c].ToString();
    ASSERT_EQ(results[c].size(), kPerCaller);
    for (size_t i = 0; i < kPerCaller; i++) {
      const SharedCasResult& r = results[c][i];
      ASSERT_TRUE(r.current.has_value()) << c << "/" << i;
      if (claims[c][i].fp == shared) {
        shared_won += r.won ? 1 : 0;
        continue;
      }
      EXPECT_TRUE(r.won) << c << "/" << i;
      EXPECT_EQ(r.current->container, claims[c][i].container) << "caller " << c << " got another's result";
      EXPECT_EQ(r.current->epoch, 3u);
    }
  }
  EXPECT_EQ(shared_won, 1) << "the fingerprint two callers claimed has one winner";
  std::vector<std::optional<SharedEntry>> stored;
  ASSERT_TRUE(table_->LookupMany({shared}, &stored).ok());
  ASSERT_TRUE(stored[0].has_value());
  const bool first_won = results[0][7].won;
  EXPECT_EQ(stored[0]->container, claims[first_won ? 0 : 1][7].container);
  EXPECT_EQ(*results[first_won ? 1 : 0][7].current, *stored[0]) << "the loser learns the winner's entry";
  EXPECT_EQ(combiner.requests(), static_cast<uint64_t>(kCallers));
  std::printf("%d callers: %llu rounds\n", kCallers, (unsigned long long)combiner.rounds());
  // Twelve callers released at once against one round trip of ~1 ms or more:
  // those arriving during the first round share the next.
  EXPECT_LT(combiner.rounds(), combiner.requests());
}

TEST_F(GatewayClaimCombiner, ARefusedRequestFailsAloneAndTheCombinerGoesOn) {
  ClaimCombiner combiner(table_.get());
  std::mt19937_64 rng(78);
  std::vector<SharedClaim> claims = {{MakeFp(&rng), 1}};
  claims[0].fp.size = 8;  // not the table's fingerprint size
  std::vector<SharedCasResult> results;
  Status s = combiner.ClaimMany(claims, 0, &results);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  // The combiner goes on.
  claims[0].fp = MakeFp(&rng);
  s = combiner.ClaimMany(claims, 0, &results);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(results[0].won);
}

}  // namespace
}  // namespace dedupv1

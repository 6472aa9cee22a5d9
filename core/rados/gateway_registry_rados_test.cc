// Tests of GatewayRegistry (the "gateways" object of gateway slots) against
// the live Ceph cluster named by DEDUPV1_TEST_CEPH_CONF; each test in a RADOS
// namespace of its own.
#include "core/rados/gateway_registry.h"

#include <unistd.h>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/rados/rados_test_fixture.h"

namespace dedupv1 {
namespace {

class GatewayRegistryTest : public test::RadosNamespaceTest {
 protected:
  // A second, independent connection to the same namespace (a different
  // gateway name makes a different connection key).
  std::shared_ptr<RadosCluster> OtherConnection(const std::string& tag) {
    RadosOptions o = rados_;
    o.gateway = tag;
    std::shared_ptr<RadosCluster> c;
    Status s = RadosCluster::Shared(o, &c);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return c;
  }

};

TEST_F(GatewayRegistryTest, RegisterKeepsNumbersAndListsAll) {
  GatewayRegistry reg(cluster_);
  GatewayRecord a, b, again;
  ASSERT_TRUE(reg.Register("gw-a", &a).ok());
  ASSERT_TRUE(reg.Register("gw-b", &b).ok());
  EXPECT_EQ(a.slot, 1);
  EXPECT_EQ(b.slot, 2);
  EXPECT_EQ(a.incarnation, 0u);
  ASSERT_TRUE(reg.Register("gw-a", &again).ok());
  EXPECT_EQ(again.slot, 1);
  std::map<std::string, GatewayRecord> all;
  ASSERT_TRUE(reg.List(&all).ok());
  ASSERT_EQ(all.size(), 2u);  // the "#next" counter is not a slot
  EXPECT_EQ(all["gw-a"].slot, 1);
  EXPECT_EQ(all["gw-b"].slot, 2);
  GatewayRecord missing;
  Status s = reg.Lookup("gw-c", &missing);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find("gateways"), std::string::npos) << s.ToString();
  EXPECT_TRUE(reg.Register("Bad_Name", &missing).IsInvalidArgument());
  EXPECT_TRUE(reg.Register("", &missing).IsInvalidArgument());
  EXPECT_TRUE(reg.Register(std::string(33, 'a'), &missing).IsInvalidArgument());
}

TEST_F(GatewayRegistryTest, ALostSlotCounterNeverReusesANumber) {
  GatewayRegistry reg(cluster_);
  GatewayRecord a, b, c;
  ASSERT_TRUE(reg.Register("gw-a", &a).ok());
  ASSERT_TRUE(reg.Register("gw-b", &b).ok());
  // The counter key removed (damage, a hand edit): the next number must
  // still be above every slot in use.
  std::set<std::string> keys = {"#next"};
  ASSERT_EQ(cluster_->index().omap_rm_keys("gateways", keys), 0);
  ASSERT_TRUE(reg.Register("gw-c", &c).ok());
  EXPECT_EQ(c.slot, 3);
  EXPECT_NE(c.slot, a.slot);
  EXPECT_NE(c.slot, b.slot);
}

TEST_F(GatewayRegistryTest, RacingRegistrationsGetDistinctNumbers) {
  std::shared_ptr<RadosCluster> c1 = OtherConnection("racer-1"), c2 = OtherConnection("racer-2");
  ASSERT_TRUE(c1 && c2);
  ASSERT_NE(c1.get(), c2.get());
  constexpr int kEach = 15;
  // Each racer registers its own names and a set of common ones, in opposite
  // orders, so that they contend for the counter and for the same names.
  std::map<std::string, uint16_t> got[2];
  Status status[2];
  auto run = [&](int i, std::shared_ptr<RadosCluster> c) {
    GatewayRegistry reg(c);
    for (int n = 0; n < kEach; n++) {
      const std::string names[2] = {"own-" + std::to_string(i) + "-" + std::to_string(n),
                                    "common-" + std::to_string(i == 0 ? n : kEach - 1 - n)};
      for (const std::string& name : names) {
        GatewayRecord r;
        Status s = reg.Register(name, &r);
        if (!s.ok()) {
          status[i] = s;
          return;
        }
        got[i][name] = r.slot;
      }
    }
  };
  std::thread t0(run, 0, c1), t1(run, 1, c2);
  t0.join();
  t1.join();
  ASSERT_TRUE(status[0].ok()) << status[0].ToString();
  ASSERT_TRUE(status[1].ok()) << status[1].ToString();
  for (int n = 0; n < kEach; n++) {
    const std::string common = "common-" + std::to_string(n);
    EXPECT_EQ(got[0][common], got[1][common]) << common << ": both racers must see one number";
  }
  GatewayRegistry reg(cluster_);
  std::map<std::string, GatewayRecord> all;
  ASSERT_TRUE(reg.List(&all).ok());
  ASSERT_EQ(all.size(), static_cast<size_t>(3 * kEach));
  std::set<uint16_t> numbers;
  for (const auto& [name, r] : all) numbers.insert(r.slot);
  // Distinct, and no number lost: exactly 1 .. 3 * kEach.
  ASSERT_EQ(numbers.size(), all.size());
  EXPECT_EQ(*numbers.begin(), 1);
  EXPECT_EQ(*numbers.rbegin(), 3 * kEach);
}

TEST_F(GatewayRegistryTest, IncarnationBumpsAndRecordsTheHolder) {
  GatewayRegistry reg(cluster_);
  GatewayRecord r;
  ASSERT_TRUE(reg.Register("gw-a", &r).ok());
  GatewayRecord first, second, stored;
  ASSERT_TRUE(reg.BeginIncarnation("gw-a", false, &first).ok());
  EXPECT_EQ(first.slot, r.slot);
  EXPECT_EQ(first.incarnation, 1u);
  EXPECT_EQ(first.takeovers, 0u);
  EXPECT_EQ(first.pid, static_cast<uint32_t>(::getpid()));
  EXPECT_EQ(first.address, cluster_->client_address());
  EXPECT_NE(first.address.find(':'), std::string::npos) << first.address;
  EXPECT_FALSE(first.host.empty());
  // A takeover from another client: its address replaces the holder's.
  std::shared_ptr<RadosCluster> other = OtherConnection("taker");
  GatewayRegistry reg2(other);
  ASSERT_TRUE(reg2.BeginIncarnation("gw-a", true, &second).ok());
  EXPECT_EQ(second.incarnation, 2u);
  EXPECT_EQ(second.takeovers, 1u);
  EXPECT_EQ(second.address, other->client_address());
  EXPECT_NE(second.address, first.address);
  ASSERT_TRUE(reg.Lookup("gw-a", &stored).ok());
  EXPECT_TRUE(stored == second);
  // A compare-and-set against a stale record changes nothing.
  GatewayRecord stale_next = first;
  stale_next.incarnation = 99;
  Status s = reg.CompareAndSet("gw-a", first, stale_next);
  EXPECT_TRUE(s.IsAborted()) << s.ToString();
  ASSERT_TRUE(reg.Lookup("gw-a", &stored).ok());
  EXPECT_EQ(stored.incarnation, 2u);
  GatewayRecord renumbered = second;
  renumbered.slot = 7;
  EXPECT_TRUE(reg.CompareAndSet("gw-a", second, renumbered).IsInvalidArgument());
  EXPECT_TRUE(reg.BeginIncarnation("gw-unknown", false, &stored).IsNotFound());
}

TEST_F(GatewayRegistryTest, DamagedRecordIsCorruptionNamingObjectAndKey) {
  GatewayRegistry reg(cluster_);
  GatewayRecord r;
  ASSERT_TRUE(reg.Register("gw-a", &r).ok());
  ASSERT_TRUE(reg.BeginIncarnation("gw-a", false, &r).ok());
  // One flipped byte in the stored record.
  std::string value = GatewayRegistry::Encode("gw-a", r);
  value[3] ^= 0x01;
  std::map<std::string, librados::bufferlist> set;
  set["gw-a"].append(value);
  set["gw-short"].append(std::string("xy"));
  librados::ObjectWriteOperation op;
  op.omap_set(set);
  ASSERT_EQ(cluster_->index().operate(GatewayRegistry::kObject, &op), 0);
  for (const std::string key : {"gw-a", "gw-short"}) {
    Status s = reg.Lookup(key, &r);
    EXPECT_TRUE(s.IsCorruption()) << key << ": " << s.ToString();
    EXPECT_NE(s.message().find(rados_.store + "/gateways"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("key " + key), std::string::npos) << s.ToString();
  }
  std::map<std::string, GatewayRecord> all;
  EXPECT_TRUE(reg.List(&all).IsCorruption());
  EXPECT_TRUE(reg.BeginIncarnation("gw-a", false, &r).IsCorruption());
  // A record stored under another key does not pass for this one (the CRC
  // covers the key).
  GatewayRecord b;
  ASSERT_TRUE(GatewayRegistry::Decode("x", "gw-b", GatewayRegistry::Encode("gw-b", r), &b).ok());
  EXPECT_TRUE(GatewayRegistry::Decode("x", "gw-c", GatewayRegistry::Encode("gw-b", r), &b).IsCorruption());
}

}  // namespace
}  // namespace dedupv1

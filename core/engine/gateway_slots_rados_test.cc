// Gateway slots (storage.rados.gateway, docs/ceph.md): several gateways on
// one RADOS store, each with its own files under "gw.NAME/", its own chunk
// index table, container id range and registry record. Needs the test
// cluster (DEDUPV1_TEST_CEPH_CONF).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

#include "core/base/testutil.h"
#include "core/engine/store_env.h"
#include "core/engine/system_testutil.h"
#include "core/rados/gateway_registry.h"
#include "core/rados/rados_test_fixture.h"

namespace dedupv1 {
namespace {

constexpr uint64_t kVolumeSize = 16 << 20;
constexpr uint64_t kWrite = 1 << 20;

// Options of gateway |gateway| ("" = no slots) of the store |rados| with a
// local directory |dir| and one volume "vol-<gateway>".
Options SlotOptions(const std::string& dir, RadosOptions rados, const std::string& gateway) {
  Options o = test::SmallSystemOptions(dir);
  o.storage_backend = "rados";
  rados.gateway = gateway;
  o.rados = rados;
  o.chunk_store.container_size = 256 << 10;
  o.chunk_index.rados_shards = 8;
  o.volumes.push_back({"vol-" + (gateway.empty() ? std::string("single") : gateway), kVolumeSize});
  EXPECT_TRUE(o.DerivePathsFrom(dir).ok());
  return o;
}

std::vector<uint8_t> Data(int gateway, uint64_t i) { return test::RandomBytes(kWrite, 1000 * gateway + i); }

std::unique_ptr<DedupSystem> OpenOrFail(const Options& o) {
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::OpenStore(o, Env::Default(), &sys);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return sys;
}

class GatewaySlotsTest : public test::RadosNamespaceTest {
 protected:
  GatewaySlotsTest() : RadosNamespaceTest(4 << 20, /*lock_duration_s=*/5) {}

  // Writes 8 MiB of data of its own to gateway |g|'s volume, half of it
  // twice (dedup inside the slot), and syncs.
  static void WriteSlot(DedupSystem* sys, const std::string& volume, int g, Status* out) {
    Volume* v = nullptr;
    Status s = sys->GetVolume(volume, &v);
    for (uint64_t i = 0; s.ok() && i < 8; i++) {
      const std::vector<uint8_t> d = Data(g, i % 6);
      s = v->Write(i * kWrite, kWrite, d.data(), false);
    }
    if (s.ok()) s = v->Sync();
    *out = s;
  }
  static ::testing::AssertionResult SlotReadsBack(DedupSystem* sys, const std::string& volume, int g) {
    Volume* v = test::Vol(sys, volume);
    if (v == nullptr) return ::testing::AssertionFailure() << "no volume " << volume;
    for (uint64_t i = 0; i < 8; i++) {
      ::testing::AssertionResult r = test::ReadsBack(v, i * kWrite, Data(g, i % 6));
      if (!r) return r;
    }
    return test::ReadsBack(v, 8 * kWrite, std::vector<uint8_t>(kWrite, 0));  // never written: zeros
  }
  static std::vector<ContainerId> Containers(DedupSystem* sys) {
    std::vector<ContainerId> ids;
    Status s = sys->chunk_store()->ListCommitted(&ids);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return ids;
  }

};

TEST_F(GatewaySlotsTest, TwoGatewaysShareOneStore) {
  test::TempDir dir_a, dir_b, dir_a2;
  const Options a_opts = SlotOptions(dir_a.path(), rados_, "gw-a");
  const Options b_opts = SlotOptions(dir_b.path(), rados_, "gw-b");
  ASSERT_FALSE(HasFailure());
  std::vector<ContainerId> ids_a, ids_b;
  {
    std::unique_ptr<DedupSystem> a = OpenOrFail(a_opts), b = OpenOrFail(b_opts);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->gateway_record().incarnation, 1u);
    EXPECT_NE(a->gateway_record().slot, b->gateway_record().slot);
    // A second engine of slot gw-a (another local directory) is refused by
    // the slot's lock in RADOS while gw-a is open.
    std::unique_ptr<DedupSystem> again;
    Status s = DedupSystem::OpenStore(SlotOptions(dir_a2.path(), rados_, "gw-a"), Env::Default(), &again);
    EXPECT_TRUE(s.IsBusy()) << s.ToString();
    EXPECT_NE(s.message().find(rados_.store + "/gw.gw-a/LOCK"), std::string::npos) << s.ToString();

    Status wa, wb;
    std::thread ta(WriteSlot, a.get(), "vol-gw-a", 1, &wa), tb(WriteSlot, b.get(), "vol-gw-b", 2, &wb);
    ta.join();
    tb.join();
    ASSERT_TRUE(wa.ok()) << wa.ToString();
    ASSERT_TRUE(wb.ok()) << wb.ToString();
    EXPECT_TRUE(SlotReadsBack(a.get(), "vol-gw-a", 1));
    EXPECT_TRUE(SlotReadsBack(b.get(), "vol-gw-b", 2));
    // Each slot's volume is its own: gw-a has no volume of gw-b.
    Volume* none = nullptr;
    EXPECT_FALSE(a->GetVolume("vol-gw-b", &none).ok());
    ASSERT_TRUE(a->Close().ok());
    ASSERT_TRUE(b->Close().ok());
  }

  GatewayRegistry registry(cluster_);
  std::map<std::string, GatewayRecord> slots;
  ASSERT_TRUE(registry.List(&slots).ok());
  ASSERT_EQ(slots.size(), 2u);
  const uint16_t slot_a = slots["gw-a"].slot, slot_b = slots["gw-b"].slot;
  EXPECT_NE(slot_a, slot_b);
  EXPECT_EQ(slots["gw-a"].incarnation, 1u);  // the refused open did not count

  // Reopened: everything reads back; each sees only its own containers, all
  // in its own id range.
  std::unique_ptr<DedupSystem> a = OpenOrFail(a_opts), b = OpenOrFail(b_opts);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->gateway_record().incarnation, 2u);
  EXPECT_EQ(a->gateway_record().slot, slot_a);
  EXPECT_TRUE(SlotReadsBack(a.get(), "vol-gw-a", 1));
  EXPECT_TRUE(SlotReadsBack(b.get(), "vol-gw-b", 2));
  ids_a = Containers(a.get());
  ids_b = Containers(b.get());
  ASSERT_FALSE(ids_a.empty());
  ASSERT_FALSE(ids_b.empty());
  for (ContainerId id : ids_a) {
    EXPECT_TRUE(id > GatewaySlotIdBase(slot_a) && id < GatewaySlotIdEnd(slot_a)) << std::hex << id;
  }
  for (ContainerId id : ids_b) {
    EXPECT_TRUE(id > GatewaySlotIdBase(slot_b) && id < GatewaySlotIdEnd(slot_b)) << std::hex << id;
  }
  // Both ranges together are every container of the store's namespace.
  std::set<std::string> data_objects;
  for (auto it = cluster_->data().nobjects_begin(); it != cluster_->data().nobjects_end(); ++it) {
    if (it->get_oid().rfind("c.", 0) == 0) data_objects.insert(it->get_oid());
  }
  EXPECT_EQ(data_objects.size(), ids_a.size() + ids_b.size());
  // Each slot's own chunk index table and files.
  const std::set<std::string> index = test::IndexObjects(cluster_.get());
  for (const std::string gw : {"gw.gw-a/", "gw.gw-b/"}) {
    for (const std::string name : {"LOCK", "log", "volumes", "system", "ci.header", "containers/"}) {
      EXPECT_EQ(index.count(gw + name), 1u) << gw + name;
    }
  }
  for (const std::string& name : index) {
    EXPECT_TRUE(name.rfind("gw.gw-a/", 0) == 0 || name.rfind("gw.gw-b/", 0) == 0 ||
                name == GatewayRegistry::kObject)
        << "an object outside the slots: " << name;
  }

  // GC of gw-a after an overwrite: it collects only its own containers and
  // gw-b reads back unchanged.
  Volume* va = test::Vol(a.get(), "vol-gw-a");
  ASSERT_NE(va, nullptr);
  for (uint64_t i = 0; i < 8; i++) {
    std::vector<uint8_t> zeros(kWrite, 0);
    ASSERT_TRUE(va->Write(i * kWrite, kWrite, zeros.data(), false).ok());
  }
  ASSERT_TRUE(va->Sync().ok());
  ASSERT_TRUE(a->RunGc().ok());
  ASSERT_TRUE(a->RunGc().ok());
  const GcStats gc = a->gc_stats();
  EXPECT_GT(gc.chunks_deleted, 0u);
  EXPECT_LE(gc.containers_scanned, 2 * ids_a.size());
  for (ContainerId id : Containers(a.get())) EXPECT_EQ(id >> 48, slot_a) << std::hex << id;
  EXPECT_EQ(Containers(b.get()), ids_b);
  EXPECT_TRUE(SlotReadsBack(b.get(), "vol-gw-b", 2));
  ASSERT_TRUE(a->Close().ok());
  ASSERT_TRUE(b->Close().ok());
}

// Without a gateway the store keeps its single-gateway names: no "gw."
// prefix, no registry, container ids from 1.
TEST_F(GatewaySlotsTest, StoreWithoutGatewayKeepsItsObjectNames) {
  test::TempDir dir;
  const Options o = SlotOptions(dir.path(), rados_, "");
  ASSERT_FALSE(HasFailure());
  {
    std::unique_ptr<DedupSystem> sys = OpenOrFail(o);
    ASSERT_TRUE(sys);
    Status w;
    WriteSlot(sys.get(), "vol-single", 3, &w);
    ASSERT_TRUE(w.ok()) << w.ToString();
    for (ContainerId id : Containers(sys.get())) EXPECT_LT(id, 1000u);
    EXPECT_EQ(sys->gateway_record().slot, 0);
    ASSERT_TRUE(sys->Close().ok());
  }
  const std::set<std::string> index = test::IndexObjects(cluster_.get());
  for (const std::string name : {"/", "LOCK", "log", "volumes", "system", "clean", "ci.header", "containers/"}) {
    EXPECT_EQ(index.count(name), 1u) << name;
  }
  for (const std::string& name : index) {
    EXPECT_NE(name.rfind("gw.", 0), 0u) << name;
    EXPECT_NE(name, GatewayRegistry::kObject);
  }
  // Its namespace takes no gateway slots.
  test::TempDir slot_dir;
  std::unique_ptr<DedupSystem> slot;
  Status s = DedupSystem::OpenStore(SlotOptions(slot_dir.path(), rados_, "gw-a"), Env::Default(), &slot);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find(rados_.store + "//"), std::string::npos) << s.ToString();
  for (const std::string& name : test::IndexObjects(cluster_.get())) {
    EXPECT_NE(name.rfind("gw.", 0), 0u) << "the refused slot created " << name;
    EXPECT_NE(name, GatewayRegistry::kObject);
  }
}

// The other way round: a namespace with gateway slots takes no store
// without slots, neither through the engine nor through StoreEnv (the tools,
// dedupv1d); the refusal names the namespace and storage.rados.gateway and
// creates nothing. Before, the store without slots was created beside them.
TEST_F(GatewaySlotsTest, NamespaceWithSlotsRefusesAStoreWithoutSlots) {
  test::TempDir dir_a, dir_single;
  {
    std::unique_ptr<DedupSystem> a = OpenOrFail(SlotOptions(dir_a.path(), rados_, "gw-a"));
    ASSERT_TRUE(a);
    ASSERT_TRUE(a->Close().ok());
  }
  const std::set<std::string> before = test::IndexObjects(cluster_.get());
  ASSERT_EQ(before.count(GatewayRegistry::kObject), 1u);
  const Options single = SlotOptions(dir_single.path(), rados_, "");
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::OpenStore(single, Env::Default(), &sys);
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("storage.rados.gateway"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("'" + rados_.store + "'"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(rados_.store + "/gateways"), std::string::npos) << s.ToString();
  std::unique_ptr<StoreEnv> env;
  s = StoreEnv::Open(single, Env::Default(), &env);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(before, test::IndexObjects(cluster_.get())) << "the refused store created objects";
  // And a slot's StoreEnv is refused beside a store without slots, as the
  // engine's open is (StoreWithoutGatewayKeepsItsObjectNames).
  librados::ObjectWriteOperation root;
  root.create(false);
  ASSERT_EQ(0, cluster_->index().operate("/", &root));
  s = StoreEnv::Open(SlotOptions(dir_a.path(), rados_, "gw-a"), Env::Default(), &env);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("storage.rados.gateway = gw-a"), std::string::npos) << s.ToString();
}

TEST(GatewayOptionsTest, GatewayNameIsValidated) {
  for (const std::string& bad : std::vector<std::string>{"A", "gw_a", "gw.a", "gw/a", std::string(33, 'a')}) {
    Config c;
    c.Set("storage.backend", "rados");
    c.Set("storage.rados.gateway", bad);
    Options o;
    Status s = Options::FromConfig(c, &o);
    EXPECT_TRUE(s.IsInvalidArgument()) << bad;
    EXPECT_NE(s.message().find("storage.rados.gateway"), std::string::npos) << s.ToString();
  }
  Config c;
  c.Set("storage.backend", "rados");
  c.Set("storage.rados.gateway", "gw-0a");
  Options o;
  ASSERT_TRUE(Options::FromConfig(c, &o).ok());
  EXPECT_EQ(o.rados.gateway, "gw-0a");
  EXPECT_EQ(o.chunk_store.rados.gateway, "gw-0a");
  EXPECT_EQ(o.chunk_index.rados.gateway, "gw-0a");
  RadosOptions other = o.rados;
  other.gateway = "gw-0b";
  EXPECT_NE(o.rados.ConnectionKey(), other.ConnectionKey());
  Config local;
  local.Set("storage.rados.gateway", "gw-0a");
  EXPECT_TRUE(Options::FromConfig(local, &o).IsInvalidArgument());  // needs storage.backend = rados
}

}  // namespace
}  // namespace dedupv1

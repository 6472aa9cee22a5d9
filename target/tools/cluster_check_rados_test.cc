// dedupv1_check --cluster (target/tools/cluster_checker.h) on a cluster-scope
// store of two gateway slots (gw-a, gw-b) written through DedupSystem: clean
// as written, and each damage injected into the shared chunk index or the
// data pool is found and named (kind, fingerprint, slot, container). Runs the
// real binary. Needs the test cluster (DEDUPV1_TEST_CEPH_CONF).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chunkstore/rados_container_store.h"
#include "core/base/testutil.h"
#include "core/engine/dedup_system.h"
#include "core/rados/gateway_registry.h"
#include "core/rados/rados_env_testutil.h"
#include "index/block_index.h"
#include "index/rados_chunk_table.h"
#include "index/rados_shared_chunk_table.h"
#include "target/tools/tool_run_testutil.h"

namespace dedupv1 {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint32_t kShards = 8;

class GatewayClusterCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = test::TestRadosOptions(&rados_, 4 << 20, 5);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (int g = 0; g < 2; g++) configs_[g] = WriteConfig(kNames[g]);
    // A writes "shared"; B writes "shared" too (deduplicated against A's
    // containers) and data of its own.
    WriteThrough(0, {1, 2});
    WriteThrough(1, {1, 3});
    ASSERT_TRUE(RadosCluster::Shared(rados_, &cluster_).ok());
  }

  std::string WriteConfig(const std::string& name) {
    const std::string path = dir_.Sub(name + ".conf");
    std::ofstream(path) << "data-dir = " << dir_.Sub("data-" + name) << "\n"
                        << "storage.backend = rados\n"
                        << "storage.rados.conf = " << rados_.conf_file << "\n"
                        << "storage.rados.store = " << rados_.store << "\n"
                        << "storage.rados.gateway = " << name << "\n"
                        << "storage.rados.dedup-scope = cluster\n"
                        << "storage.rados.claim-hold = 1s\n"
                        << "storage.rados.lock-lease = 5s\n"
                        << "storage.rados.index-shards = " << kShards << "\n"
                        << "chunk-index.size = 4M\n"
                        << "bloom.expected-chunks = 64K\n"
                        << "log.size = 4M\n"
                        << "write-buffer.size = 8M\n"
                        << "container.size = 256K\n"
                        << "container.commit-timeout = 200ms\n"
                        << "monitor.enabled = false\n"
                        << "volume = vol-" << name << " 8M\n";
    return path;
  }

  void TearDown() override {
    if (cluster_) test::RemoveStoreObjects(cluster_.get());
  }

  // Writes one MiB of data |seed| per MiB of the slot's volume, synced, closed.
  void WriteThrough(int g, const std::vector<uint64_t>& seeds) { WriteThrough(configs_[g], kNames[g], seeds, g == 1); }
  void WriteThrough(const std::string& config, const std::string& name, const std::vector<uint64_t>& seeds,
                    bool note_own_chunk) {
    std::unique_ptr<DedupSystem> sys;
    Status s = DedupSystem::OpenConfigFile(config, "", Env::Default(), &sys);
    ASSERT_TRUE(s.ok()) << s.ToString();
    Volume* v = nullptr;
    ASSERT_TRUE(sys->GetVolume("vol-" + name, &v).ok());
    for (size_t i = 0; i < seeds.size(); i++) {
      auto bytes = test::RandomBytes(kMiB, seeds[i]);
      ASSERT_TRUE(v->Write(i * kMiB, kMiB, bytes.data(), false).ok());
    }
    ASSERT_TRUE(sys->Sync().ok());
    if (note_own_chunk) {
      // A chunk only B references, in B's own container (for the damage tests).
      ASSERT_TRUE(sys->block_index()
                      ->ForEachBlock([&](const BlockId&, const BlockMapping& m) {
                        for (const auto& item : m.items()) {
                          if (!item.IsZero() && (item.container >> 48) == SlotOf("gw-b") && own_b_ == kNoContainer) {
                            own_b_ = item.container;
                            own_b_fp_ = item.fp;
                          }
                        }
                        return true;
                      })
                      .ok());
    }
    ASSERT_TRUE(sys->Close().ok());
  }

  uint16_t SlotOf(const std::string& name) {
    std::shared_ptr<RadosCluster> c;
    EXPECT_TRUE(RadosCluster::Shared(rados_, &c).ok());
    GatewayRecord r;
    EXPECT_TRUE(GatewayRegistry(c).Lookup(name, &r).ok());
    return r.slot;
  }

  std::unique_ptr<RadosSharedChunkTable> Table(uint16_t slot, uint32_t incarnation) {
    RadosSharedChunkTableOptions o;
    o.rados = rados_;
    o.shards = kShards;
    o.slot = slot;
    o.incarnation = incarnation;
    std::unique_ptr<RadosSharedChunkTable> t;
    Status s = RadosSharedChunkTable::Open(o, &t);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return t;
  }

  std::string Shard(const Fingerprint& fp) {
    return RadosChunkTable::ShardObject(RadosChunkTable::ShardOf(fp, RadosChunkTable::ShardBits(kShards)),
                                        RadosChunkTable::ShardBits(kShards));
  }

  void SetKey(const std::string& oid, const std::string& key, const std::string& value) {
    librados::ObjectWriteOperation op;
    op.create(false);
    std::map<std::string, librados::bufferlist> kv;
    kv[key].append(value);
    op.omap_set(kv);
    ASSERT_EQ(cluster_->index().operate(oid, &op), 0);
  }

  // Runs dedupv1_check --cluster --json; |json| is its report.
  int CheckCluster(nlohmann::json* json) {
    test::ToolRun r = test::RunTool(DEDUPV1_CHECK_BINARY, {"--cluster", "--json", "--config", configs_[0]},
                                    dir_.Sub("check.out"), 120);
    const size_t brace = r.out.find('{');
    if (brace == std::string::npos) {
      ADD_FAILURE() << "no JSON report:\n" << r.out;
      return r.code;
    }
    *json = nlohmann::json::parse(r.out.substr(brace), nullptr, false);
    EXPECT_FALSE(json->is_discarded()) << r.out;
    return r.code;
  }

  // The problems of |kind| in |report|.
  static std::vector<nlohmann::json> Problems(const nlohmann::json& report, const std::string& kind) {
    std::vector<nlohmann::json> out;
    for (const auto& p : report["problems"]) {
      if (p["kind"] == kind) out.push_back(p);
    }
    return out;
  }

  static Fingerprint NewFp(uint64_t seed) {
    auto bytes = test::RandomBytes(64, seed);
    Fingerprint fp;
    ComputeFingerprint(FingerprintType::kSha1, bytes.data(), bytes.size(), &fp);
    return fp;
  }

  const std::string kNames[2] = {"gw-a", "gw-b"};
  RadosOptions rados_;
  test::TempDir dir_;
  std::string configs_[2];
  std::shared_ptr<RadosCluster> cluster_;
  ContainerId own_b_ = kNoContainer;
  Fingerprint own_b_fp_;
};

TEST_F(GatewayClusterCheck, TwoSlotsWithSharedAndOwnDataAreClean) {
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 0) << report.dump(2);
  EXPECT_TRUE(report["clean"].get<bool>()) << report.dump(2);
  ASSERT_EQ(report["slots"].size(), 2u);
  // B deduplicated its first MiB against A's containers.
  EXPECT_EQ(report["slots"][0]["foreign_references"].get<uint64_t>(), 0u);
  EXPECT_GT(report["slots"][1]["foreign_references"].get<uint64_t>(), 0u) << report.dump(2);
  EXPECT_GT(report["usage_counts"]["matching"].get<uint64_t>(), 0u);
  EXPECT_EQ(report["usage_counts"]["mismatches"].get<uint64_t>(), 0u);
  EXPECT_GT(report["shared_index"]["committed"].get<uint64_t>(), 0u);
  EXPECT_EQ(report["shared_index"]["uncommitted"].get<uint64_t>(), 0u);
}

// A slot that found every chunk in other slots' containers allocated no
// container id of its own: its store is complete all the same.
TEST_F(GatewayClusterCheck, SlotWithoutOwnContainersIsClean) {
  WriteThrough(WriteConfig("gw-c"), "gw-c", {1, 2}, false);
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 0) << report.dump(2);
  ASSERT_EQ(report["slots"].size(), 3u) << report.dump(2);
  EXPECT_EQ(report["slots"][2]["containers"].get<uint64_t>(), 0u) << report.dump(2);
  EXPECT_GT(report["slots"][2]["foreign_references"].get<uint64_t>(), 0u) << report.dump(2);
}

TEST_F(GatewayClusterCheck, ChangedUsageKeyIsFound) {
  ASSERT_NE(own_b_, kNoContainer);
  GatewayRecord b;
  ASSERT_TRUE(GatewayRegistry(cluster_).Lookup("gw-b", &b).ok());
  auto table = Table(b.slot, b.incarnation);
  int64_t sum = 0;
  std::map<uint16_t, SharedSlotUsage> per_slot;
  ASSERT_TRUE(table->UsageSum(own_b_fp_, &sum, &per_slot).ok());
  const int64_t before = per_slot[b.slot].count;
  ASSERT_GT(before, 0);
  std::vector<SharedUsageOutcome> outcomes;
  ASSERT_TRUE(table->AddUsageMany({{own_b_fp_, 1, uint64_t{1} << 60}}, 0, &outcomes).ok());
  ASSERT_EQ(outcomes[0], SharedUsageOutcome::kApplied);
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 1);
  auto found = Problems(report, "usage-count-mismatch");
  ASSERT_EQ(found.size(), 1u) << report.dump(2);
  EXPECT_EQ(found[0]["fingerprint"], own_b_fp_.ToHex());
  EXPECT_EQ(found[0]["slot"], "gw-b");
  EXPECT_NE(found[0]["message"].get<std::string>().find(fmt::format("usage key says {} but {} ", before + 1, before)), std::string::npos)
      << found[0].dump();
}

TEST_F(GatewayClusterCheck, CommittedEntryOfMissingContainerIsFound) {
  const Fingerprint fp = NewFp(77);
  SharedEntry e;
  e.state = SharedEntry::State::kCommitted;
  e.container = (uint64_t{SlotOf("gw-a")} << 48) + 999999;
  e.claimer_slot = SlotOf("gw-a");
  e.claimer_incarnation = 1;
  SetKey(Shard(fp), RadosSharedChunkTable::EntryKey(fp), RadosSharedChunkTable::EncodeEntry(fp, e));
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 1);
  auto found = Problems(report, "index-entry-dangling");
  ASSERT_EQ(found.size(), 1u) << report.dump(2);
  EXPECT_EQ(found[0]["fingerprint"], fp.ToHex());
  EXPECT_EQ(found[0]["container"].get<uint64_t>(), e.container);
  EXPECT_NE(found[0]["message"].get<std::string>().find("does not exist"), std::string::npos) << found[0].dump();
  EXPECT_EQ(report["problems"].size(), 1u) << report.dump(2);
}

TEST_F(GatewayClusterCheck, StaleClaimOfAClosedIncarnationIsFound) {
  const Fingerprint fp = NewFp(78);
  SharedEntry e;
  e.state = SharedEntry::State::kUncommitted;
  e.container = (uint64_t{SlotOf("gw-a")} << 48) + 888888;
  e.claimer_slot = SlotOf("gw-a");
  e.claimer_incarnation = 1;  // A was opened since: not current
  SetKey(Shard(fp), RadosSharedChunkTable::EntryKey(fp), RadosSharedChunkTable::EncodeEntry(fp, e));
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 1);
  auto found = Problems(report, "stale-claim");
  ASSERT_EQ(found.size(), 1u) << report.dump(2);
  EXPECT_EQ(found[0]["fingerprint"], fp.ToHex());
  EXPECT_EQ(found[0]["slot"], "gw-a");
  EXPECT_EQ(found[0]["container"].get<uint64_t>(), e.container);
  EXPECT_GE(report["claims"]["wait_ms"].get<uint64_t>(), 2000u);  // 2 x claim-hold
  EXPECT_EQ(report["problems"].size(), 1u) << report.dump(2);
}

TEST_F(GatewayClusterCheck, OrphanUsageKeyIsFound) {
  // The entry of a chunk B references goes; its usage key stays.
  ASSERT_NE(own_b_, kNoContainer);
  std::set<std::string> keys = {RadosSharedChunkTable::EntryKey(own_b_fp_)};
  librados::ObjectWriteOperation op;
  op.omap_rm_keys(keys);
  ASSERT_EQ(cluster_->index().operate(Shard(own_b_fp_), &op), 0);
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 1);
  auto orphans = Problems(report, "usage-key-orphan");
  ASSERT_EQ(orphans.size(), 1u) << report.dump(2);
  EXPECT_EQ(orphans[0]["fingerprint"], own_b_fp_.ToHex());
  EXPECT_EQ(orphans[0]["slot"], "gw-b");
  auto missing = Problems(report, "index-entry-missing");
  ASSERT_EQ(missing.size(), 1u) << report.dump(2);
  EXPECT_EQ(missing[0]["fingerprint"], own_b_fp_.ToHex());
}

TEST_F(GatewayClusterCheck, MappingToMissingContainerIsFound) {
  ASSERT_NE(own_b_, kNoContainer);
  ASSERT_EQ(cluster_->data().remove(RadosContainerStore::ObjectName(own_b_)), 0);
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 1);
  auto found = Problems(report, "mapping-unrecoverable");
  ASSERT_FALSE(found.empty()) << report.dump(2);
  bool named = false;
  for (const auto& p : found) {
    EXPECT_EQ(p["slot"], "gw-b") << p.dump();
    EXPECT_EQ(p["container"].get<uint64_t>(), own_b_) << p.dump();
    named = named || p["fingerprint"] == own_b_fp_.ToHex();
  }
  EXPECT_TRUE(named) << report.dump(2);
  EXPECT_FALSE(Problems(report, "index-entry-dangling").empty()) << report.dump(2);
}

}  // namespace
}  // namespace dedupv1

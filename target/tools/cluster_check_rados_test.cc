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
#include "core/rados/gateway_heartbeat.h"
#include "core/rados/gateway_registry.h"
#include "core/rados/rados_env_testutil.h"
#include "index/block_index.h"
#include "index/dead_inbox.h"
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

  // Every key and value of shard |shard| of the shared table.
  std::map<std::string, std::string> ShardKeysOf(uint32_t shard) {
    const int bits = RadosChunkTable::ShardBits(kShards);
    std::map<std::string, std::string> out;
    std::string after;
    for (int page = 0; page < 10000; page++) {
      std::map<std::string, librados::bufferlist> kv;
      bool more = false;
      int r = 0;
      librados::ObjectReadOperation op;
      op.omap_get_vals2(after, 1000, &kv, &more, &r);
      const int rc = cluster_->index().operate(RadosChunkTable::ShardObject(shard, bits), &op, nullptr);
      if (rc == -ENOENT) break;
      EXPECT_EQ(rc, 0);
      if (rc != 0) break;
      for (auto& [k, v] : kv) out[k] = v.to_str();
      if (!more || kv.empty()) break;
      after = kv.rbegin()->first;
    }
    return out;
  }
  std::map<std::string, std::string> ShardKeys() {
    std::map<std::string, std::string> out;
    for (uint32_t shard = 0; shard < kShards; shard++) {
      for (auto& [k, v] : ShardKeysOf(shard)) out[std::to_string(shard) + "/" + k] = v;
    }
    return out;
  }

  // The other slots' containers the mappings of |sys| name.
  static std::set<ContainerId> ForeignMapped(DedupSystem* sys) {
    std::set<ContainerId> out;
    EXPECT_TRUE(sys->block_index()
                    ->ForEachBlock([&](const BlockId&, const BlockMapping& m) {
                      for (const auto& item : m.items()) {
                        if (!item.IsZero() && sys->chunk_store()->IsForeign(item.container)) out.insert(item.container);
                      }
                      return true;
                    })
                    .ok());
    return out;
  }

  // Stores an entry of |fp| in |state| naming |container|, claimed by
  // incarnation 1 of slot |claimer| (closed since: the fixture reopened it).
  SharedEntry PutEntry(const Fingerprint& fp, SharedEntry::State state, ContainerId container,
                       const std::string& claimer) {
    SharedEntry e;
    e.state = state;
    e.container = container;
    e.claimer_slot = SlotOf(claimer);
    e.claimer_incarnation = 1;
    SetKey(Shard(fp), RadosSharedChunkTable::EntryKey(fp), RadosSharedChunkTable::EncodeEntry(fp, e));
    return e;
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
  const SharedEntry e = PutEntry(fp, SharedEntry::State::kCommitted, (uint64_t{SlotOf("gw-a")} << 48) + 999999, "gw-a");
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
  const SharedEntry e = PutEntry(fp, SharedEntry::State::kUncommitted, (uint64_t{SlotOf("gw-a")} << 48) + 888888, "gw-a");
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 1);
  auto found = Problems(report, "stale-claim");
  ASSERT_EQ(found.size(), 1u) << report.dump(2);
  EXPECT_EQ(found[0]["fingerprint"], fp.ToHex());
  EXPECT_EQ(found[0]["slot"], "gw-a");
  EXPECT_EQ(found[0]["container"].get<uint64_t>(), e.container);
  EXPECT_EQ(report["claims"]["container_exists"].get<uint64_t>(), 0u);
  EXPECT_EQ(report["problems"].size(), 1u) << report.dump(2);
}

// A closed incarnation's claim on a container that exists is GC backlog
// (cluster GC flips it): counted, not damage.
TEST_F(GatewayClusterCheck, ClosedClaimOnExistingContainerIsInformation) {
  ASSERT_NE(own_b_, kNoContainer);
  const Fingerprint fp = NewFp(79);
  PutEntry(fp, SharedEntry::State::kUncommitted, own_b_, "gw-b");
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 0) << report.dump(2);
  EXPECT_TRUE(report["clean"].get<bool>()) << report.dump(2);
  EXPECT_EQ(report["claims"]["closed_incarnations"].get<uint64_t>(), 1u) << report.dump(2);
  EXPECT_EQ(report["claims"]["container_exists"].get<uint64_t>(), 1u) << report.dump(2);
}

// The check runs no GC of its own (review 38, 1): with idle after 100 ms its
// open slots would otherwise run index and container GC rounds. The shared
// table is the same before and after, and the stale claim is reported.
TEST_F(GatewayClusterCheck, CheckChangesNoSharedTableAndRunsNoGc) {
  std::ofstream(configs_[0], std::ios::app) << "idle.period = 100ms\nidle.window = 100ms\n";
  const Fingerprint fp = NewFp(80);
  PutEntry(fp, SharedEntry::State::kUncommitted, (uint64_t{SlotOf("gw-a")} << 48) + 777777, "gw-a");
  const auto before = ShardKeys();
  ASSERT_FALSE(before.empty());
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 1);
  auto found = Problems(report, "stale-claim");
  ASSERT_EQ(found.size(), 1u) << report.dump(2);
  EXPECT_EQ(found[0]["fingerprint"], fp.ToHex());
  const auto after = ShardKeys();
  EXPECT_EQ(before.size(), after.size());
  for (const auto& [key, value] : before) {
    auto it = after.find(key);
    EXPECT_TRUE(it != after.end() && it->second == value) << "shard key changed by the check: " << key;
  }
}

// After a check every slot's heartbeat says "stopped" for the incarnation the
// check's open made (review 38, 6): a watcher sees no slot down.
TEST_F(GatewayClusterCheck, CheckLeavesStoppedHeartbeats) {
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 0) << report.dump(2);
  for (const std::string& name : kNames) {
    GatewayRecord r;
    ASSERT_TRUE(GatewayRegistry(cluster_).Lookup(name, &r).ok());
    GatewayHeartbeat hb;
    Status s = ReadGatewayHeartbeat(cluster_.get(), name, &hb);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(hb.state, kHeartbeatStopped) << name;
    EXPECT_EQ(hb.incarnation, r.incarnation) << name;
  }
}

// A fresh "serving" heartbeat whose holder's lock lapsed (a paused holder):
// the check refuses the slot instead of replaying its log under it.
TEST_F(GatewayClusterCheck, FreshServingHeartbeatIsRefused) {
  GatewayRecord r;
  ASSERT_TRUE(GatewayRegistry(cluster_).Lookup("gw-b", &r).ok());
  GatewayHeartbeat hb;
  hb.beat = 7;
  hb.incarnation = r.incarnation;
  hb.state = kHeartbeatServing;
  hb.pid = 4242;
  hb.host = "paused-host";
  ASSERT_TRUE(WriteGatewayHeartbeat(cluster_.get(), "gw-b", hb).ok());
  test::ToolRun run = test::RunTool(DEDUPV1_CHECK_BINARY, {"--cluster", "--config", configs_[0]},
                                    dir_.Sub("check.out"), 120);
  EXPECT_EQ(run.code, 3) << run.out;
  EXPECT_NE(run.out.find("gw-b"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("paused-host"), std::string::npos) << run.out;
  GatewayRecord after;
  ASSERT_TRUE(GatewayRegistry(cluster_).Lookup("gw-b", &after).ok());
  EXPECT_EQ(after.incarnation, r.incarnation) << "the refused slot was opened";
}

// A's containers merged (container GC of slot A, fed by its dead inbox) while
// B maps chunks in them: B's mappings and the C entries name merged ids,
// found behind the `ca.` aliases; the check stays clean and counts a merged
// id and its target as one copy (review 38, 2).
TEST_F(GatewayClusterCheck, MergedContainersOfAnotherSlotAreFollowed) {
  constexpr uint64_t kPiece = 128 << 10, kPieces = 48, kFirst = 16;  // 6 MiB from 2 MiB on
  auto piece = [](const std::string& pattern, uint64_t i) {
    const char kind = pattern[i % pattern.size()];
    if (kind == '0') return std::vector<uint8_t>(kPiece, 0);
    return test::RandomBytes(kPiece, 500000 + (kind == '1' ? 0 : 50000) + i);
  };
  std::unique_ptr<DedupSystem> sys[2];
  for (int g = 0; g < 2; g++) {
    Status s = DedupSystem::OpenConfigFile(configs_[g], "", Env::Default(), &sys[g]);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  auto write = [&](int g, const std::string& pattern) {
    Volume* v = nullptr;
    ASSERT_TRUE(sys[g]->GetVolume("vol-" + kNames[g], &v).ok());
    for (uint64_t i = 0; i < kPieces; i++) {
      const std::vector<uint8_t> d = piece(pattern, i);
      ASSERT_TRUE(v->Write((kFirst + i) * kPiece, kPiece, d.data(), false).ok());
    }
    ASSERT_TRUE(v->Sync().ok());
  };
  write(0, "122");
  ASSERT_TRUE(sys[0]->Checkpoint().ok());
  write(1, "122");
  write(0, "100");
  write(1, "100");
  ASSERT_TRUE(sys[0]->Checkpoint().ok());
  ASSERT_TRUE(sys[1]->Checkpoint().ok());
  // The '2' chunks: usage 0, entries in A's containers: A's dead inbox.
  const uint16_t slot_a = SlotOf("gw-a");
  RadosSharedChunkTableOptions to;
  to.rados = rados_;
  to.shards = kShards;
  std::unique_ptr<RadosSharedChunkTable> table;
  ASSERT_TRUE(RadosSharedChunkTable::Open(to, &table).ok());
  std::vector<DeadChunk> dead;
  std::set<Fingerprint> seen;
  for (uint32_t shard = 0; shard < kShards; shard++) {
    const std::map<std::string, std::string> shard_keys = ShardKeysOf(shard);
    std::set<std::string> erase;
    for (const auto& [key, value] : shard_keys) {
      if (key.size() < 2 || key[0] != 'e') continue;
      const Fingerprint fp(reinterpret_cast<const uint8_t*>(key.data() + 1), key.size() - 1);
      if (!seen.insert(fp).second) continue;
      int64_t sum = -1;
      ASSERT_TRUE(table->UsageSum(fp, &sum).ok());
      SharedRecord rec;
      ASSERT_TRUE(table->ReadRecord(fp, &rec).ok());
      if (sum != 0 || !rec.entry || rec.entry->state != SharedEntry::State::kCommitted ||
          (rec.entry->container >> 48) != slot_a) {
        continue;
      }
      dead.push_back(DeadChunk{rec.entry->container, fp});
      // As index GC does before it feeds the inbox: the chunk's keys go.
      for (const auto& [other, v] : shard_keys) {
        if (other.size() > key.size() - 1 && other.compare(1, key.size() - 1, key, 1, key.size() - 1) == 0) {
          erase.insert(other);
        }
      }
    }
    if (erase.empty()) continue;
    librados::ObjectWriteOperation op;
    op.omap_rm_keys(erase);
    ASSERT_EQ(cluster_->index().operate(RadosChunkTable::ShardObject(shard, RadosChunkTable::ShardBits(kShards)), &op), 0);
  }
  ASSERT_GT(dead.size(), 10u);
  ASSERT_TRUE(RadosDeadInbox(cluster_).Append("gw-a", dead).ok());
  Status s = sys[0]->RunGc();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_GT(sys[0]->gc_stats().containers_merged, 0u);
  const std::set<ContainerId> foreign = ForeignMapped(sys[1].get());
  for (auto& one : sys) {
    ASSERT_TRUE(one->Close().ok());
    one.reset();
  }
  // B maps chunks of merged (gone) ids of A.
  size_t gone = 0;
  for (const ContainerId id : foreign) {
    if (cluster_->data().stat(RadosContainerStore::ObjectName(id), nullptr, nullptr) == -ENOENT) gone++;
  }
  ASSERT_GT(gone, 0u) << "B maps no chunk of a merged container: nothing to prove";
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 0) << report.dump(2);
  EXPECT_TRUE(report["clean"].get<bool>()) << report.dump(2);
  EXPECT_EQ(report["duplicates"]["fingerprints"].get<uint64_t>(), 0u) << report.dump(2);
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

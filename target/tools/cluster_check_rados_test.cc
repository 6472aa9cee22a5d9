// dedupv1_check --cluster (target/tools/cluster_checker.h) on a cluster-scope
// store of two gateway slots (gw-a, gw-b) written through DedupSystem: clean
// as written, and each damage injected into the shared chunk index or the
// data pool is found and named (kind, fingerprint, slot, container). Runs the
// real binary. Needs the test cluster (DEDUPV1_TEST_CEPH_CONF).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
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
    SetKey(Shard(fp), SharedEntryKey(fp), EncodeSharedEntry(fp, e));
    return e;
  }

  // Removes every key of |fp| from the shared table (entry, usage, hint),
  // as index GC's erase does.
  void EraseChunkKeys(const Fingerprint& fp) {
    const uint32_t shard = RadosChunkTable::ShardOf(fp, RadosChunkTable::ShardBits(kShards));
    const std::string entry = SharedEntryKey(fp);
    std::set<std::string> erase;
    for (const auto& [key, value] : ShardKeysOf(shard)) {
      if (key.size() >= entry.size() && key.compare(1, entry.size() - 1, entry, 1, entry.size() - 1) == 0) {
        erase.insert(key);
      }
    }
    ASSERT_FALSE(erase.empty()) << fp.ToHex();
    librados::ObjectWriteOperation op;
    op.omap_rm_keys(erase);
    ASSERT_EQ(cluster_->index().operate(Shard(fp), &op), 0);
  }

  // B's own copies (in gw-b's containers) that its mappings name.
  std::set<std::pair<ContainerId, Fingerprint>> OwnCopiesOfB(DedupSystem* sys) {
    std::set<std::pair<ContainerId, Fingerprint>> out;
    const uint16_t slot_b = SlotOf("gw-b");
    EXPECT_TRUE(sys->block_index()
                    ->ForEachBlock([&](const BlockId&, const BlockMapping& m) {
                      for (const auto& item : m.items()) {
                        if (!item.IsZero() && (item.container >> 48) == slot_b) out.insert({item.container, item.fp});
                      }
                      return true;
                    })
                    .ok());
    return out;
  }

  // B overwrites its second MiB (seed 3, its own data) with |*fresh|: the
  // copies of B's containers that B's mappings named before and no longer do.
  std::set<std::pair<ContainerId, Fingerprint>> OverwriteOwnDataOfB(std::vector<uint8_t>* fresh) {
    std::set<std::pair<ContainerId, Fingerprint>> unused;
    std::unique_ptr<DedupSystem> b;
    Status s = DedupSystem::OpenConfigFile(configs_[1], "", Env::Default(), &b);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) return unused;
    const auto before = OwnCopiesOfB(b.get());
    Volume* v = nullptr;
    EXPECT_TRUE(b->GetVolume("vol-gw-b", &v).ok());
    *fresh = test::RandomBytes(kMiB, 4);
    EXPECT_TRUE(v->Write(kMiB, kMiB, fresh->data(), false).ok());
    EXPECT_TRUE(b->Sync().ok());
    const auto after = OwnCopiesOfB(b.get());
    EXPECT_TRUE(b->Close().ok());
    for (const auto& copy : before) {
      if (after.count(copy) == 0) unused.insert(copy);
    }
    return unused;
  }

  // The pieces of MergeUnusedChunksOf: 128 KiB each, from 2 MiB on.
  static constexpr uint64_t kPiece = 128 << 10, kPieces = 48, kFirst = 16;
  static std::vector<uint8_t> Piece(const std::string& pattern, uint64_t i) {
    const char kind = pattern[i % pattern.size()];
    if (kind == '0') return std::vector<uint8_t>(kPiece, 0);
    return test::RandomBytes(kPiece, 500000 + (kind == '1' ? 0 : 50000) + i);
  }

  // Slot |owner| writes 6 MiB of pieces "122", the other slot the same (its
  // mappings then name the owner's containers), then both "100". The '2'
  // chunks, unused now, go to the owner's dead inbox as index GC sends them
  // (their keys erased first), and the owner's GC round merges its
  // containers. |before_gc| (if set) sees the other slot's system just
  // before that round. Returns the owner's containers the other slot maps;
  // both systems are closed.
  std::set<ContainerId> MergeUnusedChunksOf(int owner, const std::function<void(DedupSystem*)>& before_gc) {
    const int other = 1 - owner;
    std::set<ContainerId> foreign;
    std::unique_ptr<DedupSystem> sys[2];
    for (int g = 0; g < 2; g++) {
      Status s = DedupSystem::OpenConfigFile(configs_[g], "", Env::Default(), &sys[g]);
      EXPECT_TRUE(s.ok()) << s.ToString();
      if (!s.ok()) return foreign;
    }
    auto write = [&](int g, const std::string& pattern) {
      Volume* v = nullptr;
      ASSERT_TRUE(sys[g]->GetVolume("vol-" + kNames[g], &v).ok());
      for (uint64_t i = 0; i < kPieces; i++) {
        const std::vector<uint8_t> d = Piece(pattern, i);
        ASSERT_TRUE(v->Write((kFirst + i) * kPiece, kPiece, d.data(), false).ok());
      }
      ASSERT_TRUE(v->Sync().ok());
    };
    write(owner, "122");
    EXPECT_TRUE(sys[owner]->Checkpoint().ok());
    write(other, "122");
    write(owner, "100");
    write(other, "100");
    EXPECT_TRUE(sys[owner]->Checkpoint().ok());
    EXPECT_TRUE(sys[other]->Checkpoint().ok());
    // The '2' chunks: usage 0, entries in the owner's containers.
    const uint16_t owner_slot = SlotOf(kNames[owner]);
    RadosSharedChunkTableOptions to;
    to.rados = rados_;
    to.shards = kShards;
    std::unique_ptr<RadosSharedChunkTable> table;
    EXPECT_TRUE(RadosSharedChunkTable::Open(to, &table).ok());
    std::vector<DeadChunk> dead;
    std::set<Fingerprint> seen;
    for (uint32_t shard = 0; shard < kShards && table; shard++) {
      for (const auto& [key, value] : ShardKeysOf(shard)) {
        if (key.size() < 2 || key[0] != 'e') continue;
        const Fingerprint fp(reinterpret_cast<const uint8_t*>(key.data() + 1), key.size() - 1);
        if (!seen.insert(fp).second) continue;
        int64_t sum = -1;
        EXPECT_TRUE(table->UsageSum(fp, &sum).ok());
        SharedRecord rec;
        EXPECT_TRUE(table->ReadRecord(fp, &rec).ok());
        if (sum != 0 || !rec.entry || rec.entry->state != SharedEntry::State::kCommitted ||
            (rec.entry->container >> 48) != owner_slot) {
          continue;
        }
        dead.push_back(DeadChunk{rec.entry->container, fp});
      }
    }
    EXPECT_GT(dead.size(), 10u);
    for (const DeadChunk& c : dead) EraseChunkKeys(c.fp);  // as index GC does before it feeds the inbox
    EXPECT_TRUE(RadosDeadInbox(cluster_).Append(kNames[owner], dead).ok());
    if (before_gc) before_gc(sys[other].get());
    Status s = sys[owner]->RunGc();
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_GT(sys[owner]->gc_stats().containers_merged, 0u);
    foreign = ForeignMapped(sys[other].get());
    for (auto& one : sys) {
      EXPECT_TRUE(one->Close().ok());
      one.reset();
    }
    return foreign;
  }

  // Whether slot |g|'s volume holds the "100" pieces from 2 MiB on.
  void ExpectPiecesReadBack(int g) {
    std::unique_ptr<DedupSystem> sys;
    Status s = DedupSystem::OpenConfigFile(configs_[g], "", Env::Default(), &sys);
    ASSERT_TRUE(s.ok()) << s.ToString();
    Volume* v = nullptr;
    ASSERT_TRUE(sys->GetVolume("vol-" + kNames[g], &v).ok());
    std::vector<uint8_t> got(kPiece);
    for (uint64_t i = 0; i < kPieces; i++) {
      s = v->Read((kFirst + i) * kPiece, kPiece, got.data());
      ASSERT_TRUE(s.ok()) << kNames[g] << " piece " << i << ": " << s.ToString();
      EXPECT_TRUE(got == Piece("100", i)) << kNames[g] << " piece " << i;
    }
    ASSERT_TRUE(sys->Close().ok());
  }

  // The bytes of data-pool object |oid|.
  std::string ReadObject(const std::string& oid) {
    uint64_t size = 0;
    EXPECT_EQ(cluster_->data().stat(oid, &size, nullptr), 0) << oid;
    librados::bufferlist bl;
    EXPECT_EQ(cluster_->data().read(oid, bl, size, 0), static_cast<int>(size)) << oid;
    return bl.to_str();
  }

  // Runs dedupv1_check --cluster --json (and |extra| arguments); |json| is
  // its report.
  int CheckCluster(nlohmann::json* json, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--cluster", "--json", "--config", configs_[0]};
    args.insert(args.end(), extra.begin(), extra.end());
    test::ToolRun r = test::RunTool(DEDUPV1_CHECK_BINARY, args, dir_.Sub("check.out"), 120);
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
  EXPECT_EQ(report["orphans"]["copies"].get<uint64_t>(), 0u) << report.dump(2);
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
  const std::set<ContainerId> foreign = MergeUnusedChunksOf(0, nullptr);
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
  // A's dead chunks were marked by its GC round (merged away or kept dead):
  // none of them is an orphan.
  EXPECT_EQ(report["orphans"]["copies"].get<uint64_t>(), 0u) << report.dump(2);
}

// A merge source its owner had not deleted yet (a crash between storing the
// merged container and deleting the sources; the owner's next open deletes
// it): the slot walked first (gw-a) finds B's merged id still there, so its
// mappings and the entries name that id while B lists only the merged
// container. The orphan scan must keep those copies (review: marking them
// dead lost every chunk A and B map there).
TEST_F(GatewayClusterCheck, LeftoverMergeSourceKeepsTheMergedCopies) {
  std::map<ContainerId, std::string> saved;
  MergeUnusedChunksOf(1, [&](DedupSystem* a) {
    for (ContainerId id : ForeignMapped(a)) saved[id] = ReadObject(RadosContainerStore::ObjectName(id));
  });
  size_t restored = 0;
  for (const auto& [id, bytes] : saved) {
    const std::string oid = RadosContainerStore::ObjectName(id);
    if (cluster_->data().stat(oid, nullptr, nullptr) != -ENOENT) continue;
    librados::bufferlist bl;
    bl.append(bytes);
    ASSERT_EQ(cluster_->data().write_full(oid, bl), 0);
    restored++;
  }
  ASSERT_GT(restored, 0u) << "no source of B's merges that A maps: nothing to prove";
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report, {"--repair"}), 0) << report.dump(2);
  EXPECT_TRUE(report["clean"].get<bool>()) << report.dump(2);
  EXPECT_EQ(report["orphans"]["copies"].get<uint64_t>(), 0u) << report.dump(2);
  EXPECT_EQ(report["orphans"]["reclaimed"].get<uint64_t>(), 0u) << report.dump(2);
  // A GC round of B would act on any mark; both volumes read back after it.
  {
    std::unique_ptr<DedupSystem> b;
    Status s = DedupSystem::OpenConfigFile(configs_[1], "", Env::Default(), &b);
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = b->RunGc();
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(b->Close().ok());
  }
  ExpectPiecesReadBack(0);
  ExpectPiecesReadBack(1);
}

// Orphan copies (target/tools/orphan_copies.h): B overwrites its own data,
// then the chunks' keys go as index GC erases them; a third of them reach B's
// dead inbox, the others' append is lost (the crash window of design-15
// 2.6). The check reports those as orphans with their bytes (the inbox's
// are not); --repair marks them dead; a second check finds none; B's next GC
// round (taking the inbox too) gives the space back; every volume reads back.
TEST_F(GatewayClusterCheck, OrphanCopiesAreFoundAndReclaimedByRepair) {
  std::vector<uint8_t> fresh;
  const auto unused = OverwriteOwnDataOfB(&fresh);
  ASSERT_GT(unused.size(), 50u);
  // Unmapped, but their entries (C, usage 0: index GC's to judge) still name
  // them: not orphans.
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report), 0) << report.dump(2);
  EXPECT_EQ(report["orphans"]["copies"].get<uint64_t>(), 0u) << report.dump(2);
  // Every third one reached B's dead inbox before the keys went (the
  // normal end of index GC): those are not orphans.
  std::vector<DeadChunk> inboxed;
  size_t n = 0;
  for (const auto& [container, fp] : unused) {
    EraseChunkKeys(fp);
    if (n++ % 3 == 0) inboxed.push_back({container, fp});
  }
  ASSERT_FALSE(inboxed.empty());
  ASSERT_TRUE(RadosDeadInbox(cluster_).Append("gw-b", inboxed).ok());
  const uint64_t orphans = unused.size() - inboxed.size();

  EXPECT_EQ(CheckCluster(&report), 0) << report.dump(2);
  EXPECT_TRUE(report["clean"].get<bool>()) << report.dump(2);
  EXPECT_EQ(report["orphans"]["copies"].get<uint64_t>(), orphans) << report.dump(2);
  EXPECT_GT(report["orphans"]["bytes"].get<uint64_t>(), orphans * 1024) << report.dump(2);
  EXPECT_EQ(report["orphans"]["reclaimed"].get<uint64_t>(), 0u);
  ASSERT_EQ(report["slots"].size(), 2u);
  EXPECT_EQ(report["slots"][0]["orphan_copies"].get<uint64_t>(), 0u) << report.dump(2);
  EXPECT_EQ(report["slots"][1]["orphan_copies"].get<uint64_t>(), orphans) << report.dump(2);
  EXPECT_EQ(report["slots"][1]["inbox_chunks"].get<uint64_t>(), inboxed.size()) << report.dump(2);

  EXPECT_EQ(CheckCluster(&report, {"--repair"}), 0) << report.dump(2);
  EXPECT_EQ(report["orphans"]["reclaimed"].get<uint64_t>(), orphans) << report.dump(2);
  EXPECT_EQ(report["orphans"]["reclaim_refused"], "") << report.dump(2);
  EXPECT_EQ(CheckCluster(&report), 0) << report.dump(2);
  EXPECT_EQ(report["orphans"]["copies"].get<uint64_t>(), 0u) << report.dump(2);

  // B's next GC round deletes or merges the containers of the marked copies.
  std::unique_ptr<DedupSystem> b;
  Status s = DedupSystem::OpenConfigFile(configs_[1], "", Env::Default(), &b);
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = b->RunGc();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GT(b->gc_stats().containers_deleted + b->gc_stats().containers_merged, 0u);
  EXPECT_GT(b->gc_stats().bytes_reclaimed, 0u);
  Volume* v = nullptr;
  ASSERT_TRUE(b->GetVolume("vol-gw-b", &v).ok());
  std::vector<uint8_t> got(kMiB);
  ASSERT_TRUE(v->Read(0, kMiB, got.data()).ok());
  EXPECT_TRUE(got == test::RandomBytes(kMiB, 1));
  ASSERT_TRUE(v->Read(kMiB, kMiB, got.data()).ok());
  EXPECT_TRUE(got == fresh);
  ASSERT_TRUE(b->Close().ok());
  b.reset();
  std::unique_ptr<DedupSystem> a;
  s = DedupSystem::OpenConfigFile(configs_[0], "", Env::Default(), &a);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(a->GetVolume("vol-gw-a", &v).ok());
  for (uint64_t i = 0; i < 2; i++) {
    ASSERT_TRUE(v->Read(i * kMiB, kMiB, got.data()).ok());
    EXPECT_TRUE(got == test::RandomBytes(kMiB, i + 1)) << "A's MiB " << i;
  }
  ASSERT_TRUE(a->Close().ok());
  a.reset();
  EXPECT_EQ(CheckCluster(&report), 0) << report.dump(2);
  EXPECT_EQ(report["orphans"]["copies"].get<uint64_t>(), 0u) << report.dump(2);
}

// --repair reclaims nothing from a store with problems: a stale claim (the
// recount may be right, but the judgement wants a view without damage).
TEST_F(GatewayClusterCheck, RepairReclaimsNoOrphanFromAStoreWithProblems) {
  std::vector<uint8_t> fresh;
  const auto unused = OverwriteOwnDataOfB(&fresh);
  ASSERT_FALSE(unused.empty());
  EraseChunkKeys(unused.begin()->second);
  PutEntry(NewFp(81), SharedEntry::State::kUncommitted, (uint64_t{SlotOf("gw-a")} << 48) + 666666, "gw-a");
  nlohmann::json report;
  EXPECT_EQ(CheckCluster(&report, {"--repair"}), 1) << report.dump(2);
  EXPECT_EQ(Problems(report, "stale-claim").size(), 1u) << report.dump(2);
  EXPECT_GE(report["orphans"]["copies"].get<uint64_t>(), 1u) << report.dump(2);
  EXPECT_EQ(report["orphans"]["reclaimed"].get<uint64_t>(), 0u) << report.dump(2);
  EXPECT_NE(report["orphans"]["reclaim_refused"].get<std::string>().find("problems"), std::string::npos)
      << report.dump(2);
  const uint64_t orphans = report["orphans"]["copies"].get<uint64_t>();
  EXPECT_EQ(CheckCluster(&report), 1) << report.dump(2);
  EXPECT_EQ(report["orphans"]["copies"].get<uint64_t>(), orphans) << "marked although refused";
}

TEST_F(GatewayClusterCheck, OrphanUsageKeyIsFound) {
  // The entry of a chunk B references goes; its usage key stays.
  ASSERT_NE(own_b_, kNoContainer);
  std::set<std::string> keys = {SharedEntryKey(own_b_fp_)};
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

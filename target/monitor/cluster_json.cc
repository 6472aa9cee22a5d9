#include "target/monitor/cluster_json.h"

namespace dedupv1 {
namespace {

nlohmann::ordered_json HeartbeatJson(const GatewayHeartbeat& hb) {
  nlohmann::ordered_json j;
  j["beat"] = hb.beat;
  j["incarnation"] = hb.incarnation;
  j["state"] = hb.state;
  j["portal"] = hb.portal;
  j["host"] = hb.host;
  j["pid"] = hb.pid;
  j["volumes"] = hb.volumes;
  if (hb.has_load) {  // cluster scope (heartbeat version 2)
    j["claims_pending"] = hb.claims_pending;
    j["shards"] = hb.shards;
    j["shard_ops_total"] = hb.shard_ops_total;
    j["shard_ops_max"] = hb.shard_ops_max;
    j["shard_max_over_mean"] = hb.ShardMaxOverMean();
  }
  return j;
}

nlohmann::ordered_json SlotJson(const SlotView& s) {
  nlohmann::ordered_json j;
  j["gateway"] = s.name;
  j["slot"] = s.record.slot;
  j["state"] = s.State();
  j["incarnation"] = s.record.incarnation;
  j["takeovers"] = s.record.takeovers;
  j["lock_held"] = s.lock_held();
  j["lock_holders"] = nlohmann::ordered_json::array();
  for (const auto& h : s.holders) {
    j["lock_holders"].push_back({{"client", h.client}, {"address", h.address}, {"cookie", h.cookie}});
  }
  j["holder"] = {{"host", s.record.host}, {"pid", s.record.pid}, {"address", s.record.address}};
  j["heartbeat"] = s.has_heartbeat ? HeartbeatJson(s.heartbeat) : nlohmann::ordered_json();
  j["volumes"] = nlohmann::ordered_json::array();
  for (const auto& v : s.volumes) {
    j["volumes"].push_back({{"name", v.name}, {"id", v.id}, {"size_bytes", v.size}, {"uid", Id128ToHex(v.uid)}});
  }
  j["problem"] = s.problem;
  if (s.has_safe_epoch) {
    if (s.safe_epoch == kSafeEpochClosed) j["safe_epoch"] = "closed";
    else j["safe_epoch"] = s.safe_epoch;
  }
  return j;
}

}  // namespace

nlohmann::ordered_json ClusterViewJson(const ClusterView& view) {
  nlohmann::ordered_json doc;
  doc["store"] = view.store;
  doc["gateways"] = nlohmann::ordered_json::array();
  nlohmann::ordered_json owners = nlohmann::ordered_json::object();
  uint64_t takeovers = 0;
  for (const SlotView& s : view.slots) {
    doc["gateways"].push_back(SlotJson(s));
    for (const auto& v : s.volumes) owners[v.name] = s.name;
    takeovers += s.record.takeovers;
  }
  doc["volumes"] = owners;
  doc["takeovers"] = takeovers;
  doc["claims_pending"] = view.ClaimsPending();
  doc["shard_max_over_mean"] = view.ShardMaxOverMean();
  if (view.has_gc) {
    doc["gc_epoch"] = view.gc_epoch;
    doc["gc_waits_for"] = view.GcBehind();
  }
  return doc;
}

nlohmann::ordered_json ShardKeysJson(const std::vector<ShardKeyCounts>& tables) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ShardKeyCounts& t : tables) {
    out.push_back({{"table", t.table},
                   {"shards", t.keys.size()},
                   {"keys", t.Total()},
                   {"min", t.Min()},
                   {"max", t.Max()},
                   {"mean", t.Mean()},
                   {"max_over_mean", t.MaxOverMean()}});
  }
  return out;
}

}  // namespace dedupv1

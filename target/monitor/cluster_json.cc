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
  return doc;
}

}  // namespace dedupv1

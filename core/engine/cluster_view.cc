#include "core/engine/cluster_view.h"

#include <algorithm>
#include <cstdio>

#include "core/base/env.h"
#include "core/rados/rados_env.h"
#include "core/rados/rados_lock.h"

namespace dedupv1 {
namespace {

// The root a slot's RadosEnv is opened with to read its files: any absolute
// path works, object names are relative to it.
constexpr char kViewRoot[] = "/cluster-view";

void AddProblem(SlotView* slot, const std::string& what) {
  slot->problem += (slot->problem.empty() ? "" : "; ") + what;
}

// The slot's volume table through a RadosEnv of its own object directory.
// A slot that never opened has none: no volumes, no problem.
void ReadSlotVolumes(const std::shared_ptr<RadosCluster>& cluster, SlotView* slot) {
  RadosOptions slot_options = cluster->options();
  slot_options.gateway = slot->name;
  std::unique_ptr<Env> env;
  Status s = NewRadosEnv(cluster, kViewRoot, slot_options.GatewayDir(), &env);
  if (s.ok()) s = ReadVolumeTable(env.get(), JoinPath(kViewRoot, "volumes"), &slot->volumes);
  if (s.IsNotFound()) return;
  if (!s.ok()) AddProblem(slot, "volume table: " + s.ToString());
}

std::string Holder(const SlotView& s) {
  if (s.record.host.empty() && s.record.address.empty()) return "-";
  return s.record.host + " pid " + std::to_string(s.record.pid) + " " + s.record.address;
}

std::string Pad(const std::string& s, size_t width) { return s.size() >= width ? s : s + std::string(width - s.size(), ' '); }

}  // namespace

std::string SlotView::State() const {
  if (has_heartbeat && heartbeat.incarnation == record.incarnation && heartbeat.state == kHeartbeatFenced) {
    return "fenced";
  }
  if (lock_held()) return "serving";
  if (record.incarnation == 0) return "new";
  if (has_heartbeat && heartbeat.incarnation == record.incarnation && heartbeat.state == kHeartbeatStopped) {
    return "stopped";
  }
  return "down";
}

Status ReadSlotView(const std::shared_ptr<RadosCluster>& cluster, const std::string& name, SlotView* slot) {
  GatewayRegistry registry(cluster);
  SlotView out;
  out.name = name;
  DEDUPV1_RETURN_IF_ERROR(registry.Lookup(name, &out.record));
  RadosOptions slot_options = cluster->options();
  slot_options.gateway = name;
  Status s = ListLockHolders(cluster.get(), slot_options.ObjectPrefix() + "LOCK", RadosLock::kLockName, &out.holders);
  if (!s.ok()) AddProblem(&out, "lock: " + s.ToString());
  s = ReadGatewayHeartbeat(cluster.get(), name, &out.heartbeat);
  out.has_heartbeat = s.ok();
  if (!s.ok() && !s.IsNotFound()) AddProblem(&out, "heartbeat: " + s.ToString());
  ReadSlotVolumes(cluster, &out);
  *slot = std::move(out);
  return Status::OK();
}

Status ReadClusterView(const std::shared_ptr<RadosCluster>& cluster, ClusterView* view) {
  GatewayRegistry registry(cluster);
  std::map<std::string, GatewayRecord> records;
  DEDUPV1_RETURN_IF_ERROR(registry.List(&records));
  ClusterView out;
  out.store = cluster->options().store;
  for (const auto& [name, record] : records) {
    SlotView slot;
    Status s = ReadSlotView(cluster, name, &slot);
    if (!s.ok()) {  // unregistered between the list and the lookup, or the registry failed now
      slot.name = name;
      slot.record = record;
      AddProblem(&slot, "registry: " + s.ToString());
    }
    out.slots.push_back(std::move(slot));
  }
  // The GC epochs: one read; a failure is said per slot, never fatal.
  GcEpochState gc;
  Status s = ReadGcEpochState(cluster.get(), &gc);
  if (s.ok()) {
    out.has_gc = gc.epoch > 0 || !gc.safe.empty();
    out.gc_epoch = gc.epoch;
    for (SlotView& slot : out.slots) {
      auto it = gc.safe.find(slot.name);
      slot.has_safe_epoch = it != gc.safe.end() && it->second.incarnation == slot.record.incarnation;
      if (slot.has_safe_epoch) slot.safe_epoch = it->second.safe;
    }
    for (const std::string& d : gc.damaged) {
      if (!out.slots.empty()) AddProblem(&out.slots.front(), "gc: " + d);
    }
  } else if (!out.slots.empty()) {
    AddProblem(&out.slots.front(), "gc epochs: " + s.ToString());
  }
  *view = std::move(out);
  return Status::OK();
}

std::vector<std::string> ClusterView::GcBehind() const {
  std::vector<std::string> behind;
  if (!has_gc) return behind;
  for (const SlotView& s : slots) {
    if (!s.has_safe_epoch || s.safe_epoch < gc_epoch) behind.push_back(s.name);
  }
  return behind;
}

uint64_t ClusterView::ClaimsPending() const {
  uint64_t n = 0;
  for (const SlotView& s : slots) {
    if (s.has_heartbeat && s.heartbeat.has_load) n += s.heartbeat.claims_pending;
  }
  return n;
}

double ClusterView::ShardMaxOverMean() const {
  double m = 0;
  for (const SlotView& s : slots) {
    if (s.has_heartbeat && s.heartbeat.has_load) m = std::max(m, s.heartbeat.ShardMaxOverMean());
  }
  return m;
}

namespace {

std::string FormatRatio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", r);
  return buf;
}

// The CLAIMS and SHARDS columns: "-" without load figures (gateway scope, an
// older build).
std::string ClaimsCell(const SlotView& s) {
  return s.has_heartbeat && s.heartbeat.has_load ? std::to_string(s.heartbeat.claims_pending) : "-";
}
std::string ShardsCell(const SlotView& s) {
  if (!s.has_heartbeat || !s.heartbeat.has_load) return "-";
  return std::to_string(s.heartbeat.shard_ops_total) + " ops, max/mean " + FormatRatio(s.heartbeat.ShardMaxOverMean());
}

// "gc epoch: E; safe: gw-a E, gw-b closed, gw-c -; GC waits for: gw-c".
std::string FormatGcLine(const ClusterView& view) {
  std::string out = "gc epoch: " + std::to_string(view.gc_epoch) + "; safe:";
  for (const SlotView& s : view.slots) {
    out += " " + s.name + " " +
           (!s.has_safe_epoch ? std::string("-")
                              : s.safe_epoch == kSafeEpochClosed ? std::string("closed") : std::to_string(s.safe_epoch));
    if (&s != &view.slots.back()) out += ",";
  }
  const std::vector<std::string> behind = view.GcBehind();
  out += "; GC waits for: ";
  if (behind.empty()) out += "nobody";
  for (size_t i = 0; i < behind.size(); i++) out += (i == 0 ? "" : ", ") + behind[i];
  return out + "\n";
}

}  // namespace

std::string FormatClusterView(const ClusterView& view) {
  const std::vector<std::string> head = {"GATEWAY", "SLOT", "STATE", "INC",    "TAKEOVERS", "LOCK",
                                         "BEAT",    "CLAIMS", "SHARD LOAD", "PORTAL", "HOLDER"};
  std::vector<std::vector<std::string>> rows = {head};
  for (const SlotView& s : view.slots) {
    const bool beat = s.has_heartbeat;
    rows.push_back({s.name, std::to_string(s.record.slot), s.State(), std::to_string(s.record.incarnation),
                    std::to_string(s.record.takeovers), s.lock_held() ? "held" : "free",
                    beat ? std::to_string(s.heartbeat.beat) + "@" + std::to_string(s.heartbeat.incarnation) : "-",
                    ClaimsCell(s), ShardsCell(s), beat && !s.heartbeat.portal.empty() ? s.heartbeat.portal : "-",
                    Holder(s)});
  }
  std::vector<size_t> width(head.size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); i++) width[i] = std::max(width[i], row[i].size());
  }
  std::string out = "store " + view.store + ": " + std::to_string(view.slots.size()) + " gateway slot" +
                    (view.slots.size() == 1 ? "" : "s") + "\n";
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); i++) line += (i == 0 ? "" : "  ") + Pad(row[i], i + 1 < row.size() ? width[i] : 0);
    out += line + "\n";
  }
  out += "claims pending: " + std::to_string(view.ClaimsPending()) + " (all gateways); shard load max/mean: " +
         FormatRatio(view.ShardMaxOverMean()) + " (busiest gateway's chunk index operations)\n";
  if (view.has_gc) out += FormatGcLine(view);
  bool any_volume = false;
  for (const SlotView& s : view.slots) {
    for (const VolumeRecord& v : s.volumes) {
      if (!any_volume) out += "volumes:\n";
      any_volume = true;
      out += "  " + v.name + " -> " + s.name + " (id " + std::to_string(v.id) + ", " + std::to_string(v.size) +
             " bytes, uid " + Id128ToHex(v.uid) + ")\n";
    }
  }
  for (const SlotView& s : view.slots) {
    if (!s.problem.empty()) out += "problem: " + s.name + ": " + s.problem + "\n";
  }
  return out;
}

}  // namespace dedupv1

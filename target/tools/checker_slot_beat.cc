#include "target/tools/checker_slot_beat.h"

#include <unistd.h>

#include <ctime>

#include <fmt/format.h>

#include "core/base/host_name.h"
#include "core/rados/gateway_heartbeat.h"

namespace dedupv1 {
namespace tools {

Status RefuseLiveHolder(RadosCluster* cluster, const std::string& name, uint32_t lease_s) {
  GatewayHeartbeat hb;
  Status s = ReadGatewayHeartbeat(cluster, name, &hb);
  if (s.IsNotFound()) return Status::OK();
  if (s.ok() && hb.state != kHeartbeatServing) return Status::OK();
  if (!s.ok() && !s.IsCorruption()) return s.WithContext("gateway slot " + name);
  // Serving, or undecodable (never judged dead on doubt): its age decides.
  const std::string oid = GatewayHeartbeatObject(name);
  uint64_t size = 0;
  time_t mtime = 0;
  RadosOpTimer timer(cluster, RadosOpKind::kStat);
  const int r = cluster->index().stat(oid, &size, &mtime);
  timer.Done(r == -ENOENT ? 0 : r, 0);
  if (r == -ENOENT) return Status::OK();
  if (r < 0) return cluster->ToStatus(r, "stat gateway heartbeat", cluster->index_pool(), oid);
  const int64_t age = static_cast<int64_t>(std::time(nullptr)) - static_cast<int64_t>(mtime);
  const int64_t limit = 2 * static_cast<int64_t>(lease_s);
  if (age >= limit) return Status::OK();
  return Status::Busy(fmt::format(
      "gateway slot {}: its heartbeat ({}) says {} and was written {} s ago (less than 2 x the lease, {} s): its "
      "holder (pid {} on {}) may be alive or paused; stop it, wait, or take the slot over (dedupv1d takeover) first",
      name, cluster->Where(cluster->index_pool(), oid), s.ok() ? hb.state : "nothing readable (" + s.ToString() + ")",
      age, limit, hb.pid, hb.host.empty() ? "?" : hb.host));
}

Status WriteStoppedBeat(RadosCluster* cluster, const std::string& name, const GatewayRecord& record) {
  GatewayHeartbeat hb;
  hb.beat = 1;
  hb.incarnation = record.incarnation;
  hb.takeovers = record.takeovers;
  hb.pid = static_cast<uint32_t>(::getpid());
  hb.state = kHeartbeatStopped;
  hb.host = HostName();
  return WriteGatewayHeartbeat(cluster, name, hb).WithContext("write the stopped heartbeat of gateway slot " + name);
}

}  // namespace tools
}  // namespace dedupv1

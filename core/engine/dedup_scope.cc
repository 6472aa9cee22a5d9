#include "core/engine/dedup_scope.h"

#include <cerrno>
#include <ctime>
#include <map>
#include <string>

#include "core/rados/gateway_registry.h"

namespace dedupv1 {
namespace {

constexpr char kHeader[] = "ci.header";

Status ObjectExists(RadosCluster* cluster, const std::string& oid, bool* exists) {
  uint64_t size = 0;
  time_t mtime = 0;
  RadosOpTimer timer(cluster, RadosOpKind::kStat);
  const int r = cluster->index().stat(oid, &size, &mtime);
  timer.Done(r == -ENOENT ? 0 : r, 0);
  *exists = r == 0;
  if (r < 0 && r != -ENOENT) return cluster->ToStatus(r, "check the store's dedup scope", cluster->index_pool(), oid);
  return Status::OK();
}

}  // namespace

Status CheckDedupScope(const std::shared_ptr<RadosCluster>& cluster, const RadosOptions& options, bool cluster_scope) {
  if (options.gateway.empty()) return Status::OK();
  if (!cluster_scope) {
    bool shared = false;
    DEDUPV1_RETURN_IF_ERROR(ObjectExists(cluster.get(), kHeader, &shared));
    if (!shared) return Status::OK();
    return Status::InvalidArgument("storage.rados.dedup-scope = gateway, but store '" + options.store +
                                   "' was created with storage.rados.dedup-scope = cluster (its shared chunk index " +
                                   cluster->Where(cluster->index_pool(), kHeader) + " exists)");
  }
  GatewayRegistry registry(cluster);
  std::map<std::string, GatewayRecord> slots;
  DEDUPV1_RETURN_IF_ERROR(registry.List(&slots));
  for (const auto& [name, record] : slots) {
    const std::string oid = "gw." + name + "/" + kHeader;
    bool own = false;
    DEDUPV1_RETURN_IF_ERROR(ObjectExists(cluster.get(), oid, &own));
    if (!own) continue;
    return Status::InvalidArgument("storage.rados.dedup-scope = cluster, but store '" + options.store +
                                   "' was created with storage.rados.dedup-scope = gateway (gateway slot " + name +
                                   " has a chunk index of its own: " + cluster->Where(cluster->index_pool(), oid) +
                                   ")");
  }
  return Status::OK();
}

}  // namespace dedupv1

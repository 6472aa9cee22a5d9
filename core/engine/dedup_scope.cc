#include "core/engine/dedup_scope.h"

#include <map>
#include <string>

#include "core/rados/gateway_registry.h"
#include "index/rados_chunk_table.h"
#include "index/rados_shared_chunk_table.h"

namespace dedupv1 {
namespace {

// The shared chunk index's header: the store's cluster scope.
constexpr const char* kHeader = RadosSharedChunkTable::kHeaderObject;

}  // namespace

Status CheckDedupScope(const std::shared_ptr<RadosCluster>& cluster, const RadosOptions& options, bool cluster_scope) {
  if (options.gateway.empty()) return Status::OK();
  if (!cluster_scope) {
    bool shared = false;
    DEDUPV1_RETURN_IF_ERROR(cluster->IndexObjectExists(kHeader, "check the store's dedup scope", &shared));
    if (!shared) return Status::OK();
    return Status::InvalidArgument("storage.rados.dedup-scope = gateway, but store '" + options.store +
                                   "' was created with storage.rados.dedup-scope = cluster (its shared chunk index " +
                                   cluster->Where(cluster->index_pool(), kHeader) + " exists)");
  }
  GatewayRegistry registry(cluster);
  std::map<std::string, GatewayRecord> slots;
  DEDUPV1_RETURN_IF_ERROR(registry.List(&slots));
  for (const auto& [name, record] : slots) {
    RadosOptions slot = options;
    slot.gateway = name;
    const std::string oid = RadosChunkTable::HeaderObjectOf(slot);
    bool own = false;
    DEDUPV1_RETURN_IF_ERROR(cluster->IndexObjectExists(oid, "check the store's dedup scope", &own));
    if (!own) continue;
    return Status::InvalidArgument("storage.rados.dedup-scope = cluster, but store '" + options.store +
                                   "' was created with storage.rados.dedup-scope = gateway (gateway slot " + name +
                                   " has a chunk index of its own: " + cluster->Where(cluster->index_pool(), oid) +
                                   ")");
  }
  return Status::OK();
}

}  // namespace dedupv1

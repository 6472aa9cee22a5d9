#include "core/rados/store_layout.h"

#include "core/rados/gateway_registry.h"
#include "core/rados/rados_env.h"

namespace dedupv1 {

Status CheckStoreLayout(RadosCluster* cluster, const RadosOptions& rados) {
  bool exists = false;
  if (!rados.gateway.empty()) {
    const std::string root = RadosEnvDirObject("", "");
    DEDUPV1_RETURN_IF_ERROR(cluster->IndexObjectExists(root, "look for a store without gateway slots", &exists));
    if (!exists) return Status::OK();
    return Status::InvalidArgument("storage.rados.gateway = " + rados.gateway + ": RADOS namespace '" + rados.store +
                                   "' holds a store without gateway slots (" +
                                   cluster->Where(cluster->index_pool(), root) +
                                   "); gateway slots need a namespace of their own (storage.rados.store)");
  }
  DEDUPV1_RETURN_IF_ERROR(
      cluster->IndexObjectExists(GatewayRegistry::kObject, "look for gateway slots of the store", &exists));
  if (!exists) return Status::OK();
  return Status::InvalidArgument("RADOS namespace '" + rados.store + "' holds the gateway slots of a store (" +
                                 cluster->Where(cluster->index_pool(), GatewayRegistry::kObject) +
                                 "): opened without storage.rados.gateway, a store would share their pools and "
                                 "namespace without seeing their files; set storage.rados.gateway = NAME to open a "
                                 "slot, or give this store a namespace of its own (storage.rados.store)");
}

}  // namespace dedupv1

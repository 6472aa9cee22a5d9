#include "chunkstore/rados_storage_backend.h"

#include "chunkstore/local_container_catalog.h"
#include "chunkstore/rados_container_store.h"
#include "core/rados/gateway_registry.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

Status OpenRadosStorageBackend(const ChunkStoreOptions& options, Env* env, StorageOpenMode mode,
                               StorageBackend* out) {
  if (options.dir.empty()) return Status::InvalidArgument("chunk store: no catalog directory given");
  std::shared_ptr<RadosCluster> cluster;
  DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(options.rados, &cluster));
  const bool create = mode == StorageOpenMode::kCreate;
  // A store without slots lists ids below 1 << 48 only: should slots ever be
  // opened on its namespace, its GC and recovery never take their
  // containers for its own.
  ContainerId first = 0, end = GatewaySlotIdBase(1);
  if (!options.rados.gateway.empty()) {
    // A slot's range comes from its number in the registry: the engine
    // registers the slot when it opens it; a tool finds an unregistered
    // slot to hold nothing.
    GatewayRegistry registry(cluster);
    GatewayRecord record;
    DEDUPV1_RETURN_IF_ERROR(create ? registry.Register(options.rados.gateway, &record)
                                   : registry.Lookup(options.rados.gateway, &record));
    first = GatewaySlotIdBase(record.slot);
    end = GatewaySlotIdEnd(record.slot);
  }
  auto store = std::make_unique<RadosContainerStore>(cluster, first, end);
  bool exists = false;
  DEDUPV1_RETURN_IF_ERROR(store->CheckMarker(create, &exists));
  if (!exists) {
    return Status::NotFound("no container store '" + options.rados.store + "' in Ceph pool '" +
                            options.rados.data_pool + "' (no " +
                            cluster->Where(cluster->data_pool(), kRadosStoreMarkerObject) + ")");
  }
  if (create) DEDUPV1_RETURN_IF_ERROR(env->CreateDirs(options.dir));
  out->containers = std::move(store);
  out->id_base = first;
  out->catalog = std::make_unique<LocalContainerCatalog>(env, options.dir, FingerprintSize(options.fp_type));
  return Status::OK();
}

}  // namespace dedupv1

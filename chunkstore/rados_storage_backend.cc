#include "chunkstore/rados_storage_backend.h"

#include "chunkstore/local_container_catalog.h"
#include "chunkstore/rados_container_store.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

Status OpenRadosStorageBackend(const ChunkStoreOptions& options, Env* env, StorageOpenMode mode,
                               StorageBackend* out) {
  if (options.dir.empty()) return Status::InvalidArgument("chunk store: no catalog directory given");
  std::shared_ptr<RadosCluster> cluster;
  DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(options.rados, &cluster));
  auto store = std::make_unique<RadosContainerStore>(cluster);
  const bool create = mode == StorageOpenMode::kCreate;
  bool exists = false;
  DEDUPV1_RETURN_IF_ERROR(store->CheckMarker(create, &exists));
  if (!exists) {
    return Status::NotFound("no container store '" + options.rados.store + "' in Ceph pool '" +
                            options.rados.data_pool + "' (no " +
                            cluster->Where(cluster->data_pool(), kRadosStoreMarkerObject) + ")");
  }
  if (create) DEDUPV1_RETURN_IF_ERROR(env->CreateDirs(options.dir));
  out->containers = std::move(store);
  out->catalog = std::make_unique<LocalContainerCatalog>(env, options.dir, FingerprintSize(options.fp_type));
  return Status::OK();
}

}  // namespace dedupv1

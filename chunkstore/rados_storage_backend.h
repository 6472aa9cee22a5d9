// The "rados" storage backend (chunkstore/storage_backend_registry.h):
// containers are objects of the data pool of the Ceph cluster that
// ChunkStoreOptions::rados names (RadosContainerStore), in the store's RADOS
// namespace; the catalog is a LocalContainerCatalog in ChunkStoreOptions::dir
// of the Env the factory is given. The engine passes an Env whose files are
// RADOS objects of the index pool, so the whole store is in the cluster;
// with Env::Default the catalog stays in local files (tests).
//
// What "exists" means (StorageOpenMode::kExisting): a namespace holds no
// directory that could say so, so the first kCreate open writes a small
// marker object (kRadosStoreMarkerObject) into the store's namespace of the
// data pool. A store exists iff that marker does: an empty store that was
// created exists, and a namespace that only ever saw foreign objects does
// not. kExisting creates nothing; it is NotFound naming the pool and the
// store otherwise.
//
// Gateway slots (ChunkStoreOptions::rados.gateway): the containers are the
// slot's id range ((slot << 48) + sequence, core/rados/gateway_registry.h):
// listed only there, new ids handed out there (StorageBackend::id_base).
// kCreate registers the slot if it is not yet; kExisting of a slot that is
// not registered is NotFound.
#pragma once

#include "chunkstore/storage_backend_registry.h"

namespace dedupv1 {

// Connects through RadosCluster::Shared (one connection per cluster and
// store in a process), so opening is bounded by RadosOptions::op_timeout_s.
Status OpenRadosStorageBackend(const ChunkStoreOptions& options, Env* env, StorageOpenMode mode,
                               StorageBackend* out);

}  // namespace dedupv1

// The storage backends of the chunk store, by name: each makes the
// ContainerStore (container bytes, chunkstore/container_store.h) and the
// ContainerCatalog (id mark, merge records, dead marks, summaries,
// chunkstore/container_catalog.h) for a ChunkStoreOptions. The config key
// container.backend names one (docs/configuration.md); ChunkStore::Open and
// the tools open storage only through here.
//
//   local   files under ChunkStoreOptions::dir (local_storage_backend.h);
//           the default
//   memory  in memory, NOT DURABLE: for tests and tools that need a store
//           without a disk (memory_storage_backend.h)
//   rados   containers as objects of a Ceph cluster's data pool
//           (ChunkStoreOptions::rados; rados_storage_backend.h)
//
// Adding a backend means new files (its ContainerStore, its
// ContainerCatalog and a function making both, like local_storage_backend.h)
// plus one line in the table in storage_backend_registry.cc (with the
// #include of its header). No other code lists the backends.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chunkstore/chunk_store_options.h"
#include "chunkstore/container_catalog.h"
#include "chunkstore/container_store.h"
#include "core/base/env.h"
#include "core/base/status.h"

namespace dedupv1 {

enum class StorageOpenMode {
  kCreate,    // create the storage if it does not exist (the chunk store)
  kExisting,  // NotFound naming it if it does not exist; create nothing (tools)
};

// What a backend makes.
struct StorageBackend {
  std::unique_ptr<ContainerStore> containers;
  std::unique_ptr<ContainerCatalog> catalog;
  // Ids this store hands out start above it: 0, or a gateway slot's
  // (slot << 48) (rados backend with RadosOptions::gateway).
  ContainerId id_base = 0;
};

// A backend's factory: opens the containers and the catalog |options| name
// (options.dir, options.fp_type). Both or neither are set in |out|.
using StorageBackendFactory = Status (*)(const ChunkStoreOptions& options, Env* env, StorageOpenMode mode,
                                         StorageBackend* out);

// Opens the backend named options.backend. InvalidArgument naming the known
// backends if there is none of that name.
Status OpenStorageBackend(const ChunkStoreOptions& options, Env* env, StorageOpenMode mode, StorageBackend* out);

// Whether |name| is a registered backend, and all names, in registry order.
bool IsStorageBackend(const std::string& name);
std::vector<std::string> StorageBackendNames();
// "local, memory, rados": for messages.
std::string StorageBackendNameList();
// Whether |name| is a registered backend that keeps its data across
// processes. Only such a backend may be named in a config file: a store
// opened once on a non-durable one would acknowledge synced writes it then
// forgets, and hand out container ids the indexes already use.
bool IsDurableStorageBackend(const std::string& name);
// "local, rados": the durable ones, for messages.
std::string DurableStorageBackendNameList();
// Whether |name| needs a running Ceph cluster to open. Tests that run over
// every backend without a cluster leave these out; the tests needing a
// cluster (*rados*_test.cc) cover them.
bool StorageBackendNeedsCluster(const std::string& name);

}  // namespace dedupv1

// The "local" storage backend (chunkstore/storage_backend_registry.h): a
// LocalContainerStore and a LocalContainerCatalog, both in
// ChunkStoreOptions::dir. The default.
#pragma once

#include "chunkstore/storage_backend_registry.h"

namespace dedupv1 {

// kCreate creates the directory (and the store's subdirectories); kExisting
// is NotFound if the directory does not exist. Either way opening the
// container store removes leftover temp files of an interrupted Put
// (local_container_store.h).
Status OpenLocalStorageBackend(const ChunkStoreOptions& options, Env* env, StorageOpenMode mode,
                               StorageBackend* out);

}  // namespace dedupv1

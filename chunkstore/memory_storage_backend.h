// The "memory" storage backend (chunkstore/storage_backend_registry.h): a
// MemoryContainerStore and a MemoryContainerCatalog. NOT DURABLE: for tests
// and tools only. The storage is named by ChunkStoreOptions::dir and lives
// in this process until DropMemoryStorage: opening the same name again
// (a chunk store "restarted" in one process) finds what was left there, the
// way a local directory would after a clean stop.
#pragma once

#include <string>

#include "chunkstore/storage_backend_registry.h"

namespace dedupv1 {

// kCreate makes the storage |options.dir| names if there is none yet;
// kExisting is NotFound if there is none.
Status OpenMemoryStorageBackend(const ChunkStoreOptions& options, Env* env, StorageOpenMode mode,
                                StorageBackend* out);
// Frees the storage named |name| (stores still open keep their contents).
void DropMemoryStorage(const std::string& name);

}  // namespace dedupv1

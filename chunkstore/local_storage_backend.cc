#include "chunkstore/local_storage_backend.h"

#include "chunkstore/local_container_catalog.h"
#include "chunkstore/local_container_store.h"

namespace dedupv1 {

Status OpenLocalStorageBackend(const ChunkStoreOptions& options, Env* env, StorageOpenMode mode,
                               StorageBackend* out) {
  if (options.dir.empty()) return Status::InvalidArgument("chunk store: no container directory given");
  if (mode == StorageOpenMode::kExisting && !env->FileExists(options.dir)) {
    return Status::NotFound("no container directory " + options.dir);
  }
  std::unique_ptr<LocalContainerStore> store;
  DEDUPV1_RETURN_IF_ERROR(LocalContainerStore::Open(env, options.dir, &store));
  out->containers = std::move(store);
  out->catalog = std::make_unique<LocalContainerCatalog>(env, options.dir, FingerprintSize(options.fp_type));
  return Status::OK();
}

}  // namespace dedupv1

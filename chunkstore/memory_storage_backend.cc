#include "chunkstore/memory_storage_backend.h"

#include <map>
#include <memory>
#include <mutex>

#include "chunkstore/memory_container_catalog.h"
#include "chunkstore/memory_container_store.h"

namespace dedupv1 {
namespace {

struct MemoryStorage {
  std::shared_ptr<MemoryContainerStore::Contents> containers = std::make_shared<MemoryContainerStore::Contents>();
  std::shared_ptr<MemoryContainerCatalog::Contents> catalog = std::make_shared<MemoryContainerCatalog::Contents>();
};

// The process's memory storages by name. Never destroyed: stores may be
// closed by static destructors after it would be.
std::mutex& StoragesMutex() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
std::map<std::string, MemoryStorage>& Storages() {
  static auto* storages = new std::map<std::string, MemoryStorage>;
  return *storages;
}

}  // namespace

Status OpenMemoryStorageBackend(const ChunkStoreOptions& options, Env* env, StorageOpenMode mode,
                                StorageBackend* out) {
  if (options.dir.empty()) return Status::InvalidArgument("chunk store: no container directory given");
  MemoryStorage storage;
  {
    std::lock_guard<std::mutex> l(StoragesMutex());
    auto it = Storages().find(options.dir);
    if (it == Storages().end()) {
      if (mode == StorageOpenMode::kExisting) return Status::NotFound("no memory storage " + options.dir);
      it = Storages().emplace(options.dir, MemoryStorage()).first;
    }
    storage = it->second;
  }
  out->containers = std::make_unique<MemoryContainerStore>(options.dir, storage.containers);
  out->catalog =
      std::make_unique<MemoryContainerCatalog>(options.dir, FingerprintSize(options.fp_type), storage.catalog);
  return Status::OK();
}

void DropMemoryStorage(const std::string& name) {
  std::lock_guard<std::mutex> l(StoragesMutex());
  Storages().erase(name);
}

}  // namespace dedupv1

#include "chunkstore/storage_backend_registry.h"

#include "chunkstore/local_storage_backend.h"
#include "chunkstore/memory_storage_backend.h"
#include "chunkstore/rados_storage_backend.h"

namespace dedupv1 {
namespace {

struct RegisteredBackend {
  const char* name;
  StorageBackendFactory open;
  bool durable;        // keeps what it stores across processes: a config may name it
  bool needs_cluster;  // needs a running Ceph cluster (ChunkStoreOptions::rados)
};

// One line per backend.
constexpr RegisteredBackend kBackends[] = {
    {"local", &OpenLocalStorageBackend, true, false},
    {"memory", &OpenMemoryStorageBackend, false, false},
    {"rados", &OpenRadosStorageBackend, true, true},
};

}  // namespace

Status OpenStorageBackend(const ChunkStoreOptions& options, Env* env, StorageOpenMode mode, StorageBackend* out) {
  for (const RegisteredBackend& b : kBackends) {
    if (options.backend == b.name) return b.open(options, env, mode, out);
  }
  return Status::InvalidArgument("unknown chunk store backend '" + options.backend + "' (known: " +
                                 StorageBackendNameList() + ")");
}

bool IsStorageBackend(const std::string& name) {
  for (const RegisteredBackend& b : kBackends) {
    if (name == b.name) return true;
  }
  return false;
}

bool IsDurableStorageBackend(const std::string& name) {
  for (const RegisteredBackend& b : kBackends) {
    if (name == b.name) return b.durable;
  }
  return false;
}

bool StorageBackendNeedsCluster(const std::string& name) {
  for (const RegisteredBackend& b : kBackends) {
    if (name == b.name) return b.needs_cluster;
  }
  return false;
}

std::string DurableStorageBackendNameList() {
  std::string list;
  for (const RegisteredBackend& b : kBackends) {
    if (b.durable) list += (list.empty() ? "" : ", ") + std::string(b.name);
  }
  return list;
}

std::vector<std::string> StorageBackendNames() {
  std::vector<std::string> names;
  for (const RegisteredBackend& b : kBackends) names.push_back(b.name);
  return names;
}

std::string StorageBackendNameList() {
  std::string list;
  for (const RegisteredBackend& b : kBackends) list += (list.empty() ? "" : ", ") + std::string(b.name);
  return list;
}

}  // namespace dedupv1

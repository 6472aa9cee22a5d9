// ChunkStoreOptions: how a ChunkStore (chunkstore/chunk_store.h) is laid out
// and tuned, and which storage backend holds its containers and catalog.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "chunkstore/compression.h"
#include "core/base/fingerprint.h"
#include "core/rados/rados_options.h"

namespace dedupv1 {

struct ChunkStoreOptions {
  // Storage backend by name (chunkstore/storage_backend_registry.h): "local"
  // (files under dir), "rados" (containers in a Ceph cluster) or "memory"
  // (tests; not durable).
  std::string backend = "local";
  std::string dir;                         // container directory (also holds the catalog files)
  RadosOptions rados;                      // the cluster, pools and store of backend "rados"
  size_t container_size = 4 << 20;         // serialized size limit of a container
  Compression compression = Compression::kNone;
  int open_containers = 4;                 // containers open for writing at once
  int writer_threads = 1;                  // background commit threads
  uint64_t commit_timeout_ms = 4000;       // a container open longer than this is committed
  size_t read_cache_containers = 32;       // LRU of parsed containers for reads
  FingerprintType fp_type = FingerprintType::kSha1;
};

}  // namespace dedupv1

// StoreInspector prints the parts of a stopped store for dedupv1_debug. It
// opens the components it needs directly (the containers and the catalog
// through the storage backend registry, the chunk index's DiskHashTable, the
// BlockIndex, the OperationsLog), never a
// DedupSystem: nothing is replayed, trimmed, checkpointed or re-imported, so
// a store left by a crash is shown as it is. (Opening still does each
// component's own crash repair: the log's new generation superblock, the
// hash table's journal redo, removal of half-written *.tmp container files.
// A damaged log is opened accepting the damage, which writes nothing.)
// The caller holds the data directory lock (DataDirLock).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "core/base/env.h"
#include "core/base/fingerprint.h"
#include "core/engine/options.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {
namespace tools {

class StoreInspector {
 public:
  StoreInspector(const Options& options, Env* env, std::ostream& out, bool progress)
      : options_(options), env_(env), out_(out), progress_(progress) {}

  // Header, CRC verdict and items of container |id|. NotFound if it does not
  // exist; Corruption (after printing what can be decoded) if it is damaged.
  Status PrintContainer(ContainerId id);
  // The chunk-index entry of |fp| and its item in the container it names. If
  // the table has no entry, searches every container for the chunk and
  // returns NotFound.
  Status PrintChunk(const Fingerprint& fp);
  // The stored mapping of block |block| of |volume| (name or id), item by
  // item, and the log events about this block not yet checkpointed.
  Status PrintBlock(const std::string& volume, uint64_t block);
  // Log geometry and the events with ids in [from, to] (to = 0: up to the
  // newest), one line each: id, type, decoded payload.
  Status PrintLog(uint64_t from, uint64_t to);
  // The volume table with the config's view and the mapped block counts.
  Status PrintVolumes();

 private:
  const Options& options_;
  Env* const env_;
  std::ostream& out_;
  const bool progress_;
};

}  // namespace tools
}  // namespace dedupv1

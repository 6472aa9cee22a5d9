// The volume table of a data directory: DATA-DIR/volumes, one "id name size"
// line per volume ever created. Ids key the block index and are never reused;
// a volume no longer in the config keeps its line (and its data).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/status.h"

namespace dedupv1 {

struct VolumeRecord {
  uint32_t id = 0;
  std::string name;
  uint64_t size = 0;  // bytes
};

// Reads the table at |path| in file order. A missing file is NotFound: it is
// written when the store is created, and recreating it from the config could
// give volumes each other's ids (core/data_dir.h). A malformed line is
// Corruption naming the file and line; an id or name given twice, or id 0,
// is Corruption naming the file and both entries.
Status ReadVolumeTable(Env* env, const std::string& path, std::vector<VolumeRecord>* records);
// Replaces the table at |path| atomically.
Status WriteVolumeTable(Env* env, const std::string& path, const std::vector<VolumeRecord>& records);

}  // namespace dedupv1

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

// Reads the table at |path| in file order. A missing file is an empty table;
// a malformed line is Corruption naming the file and line.
Status ReadVolumeTable(Env* env, const std::string& path, std::vector<VolumeRecord>* records);
// Replaces the table at |path| atomically.
Status WriteVolumeTable(Env* env, const std::string& path, const std::vector<VolumeRecord>& records);

}  // namespace dedupv1

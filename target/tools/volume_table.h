// The volume table of a data directory: DATA-DIR/volumes, one "id name size"
// line per volume ever created (docs/architecture.md 3.6). Volumes that are
// no longer in the config keep their line and their data, so the tools read
// this file rather than the config to see every volume that can hold block
// mappings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/env.h"
#include "core/engine/options.h"
#include "core/base/status.h"

namespace dedupv1 {
namespace tools {

struct VolumeEntry {
  uint32_t id = 0;
  std::string name;
  uint64_t size = 0;        // bytes, as recorded in the table
  bool configured = false;  // named in the config (served by the target)
  std::string uid;          // 32 hex digits; "" for a line of an older build
};

// Reads options.data_dir/volumes, sorted by id. A missing file is NotFound
// (LoadToolOptions has refused such a store already); a malformed line is
// Corruption naming file and line.
Status ReadVolumeTable(Env* env, const Options& options, std::vector<VolumeEntry>* volumes);

// The volume named |name_or_id| (a name, or a decimal id). NotFound listing
// the known volumes.
Status FindVolume(const std::vector<VolumeEntry>& volumes, const std::string& name_or_id,
                  VolumeEntry* out);

}  // namespace tools
}  // namespace dedupv1

#include "target/tools/volume_table.h"

#include <algorithm>

#include "core/base/config.h"
#include "core/engine/data_dir.h"
#include "core/engine/volume_table.h"

namespace dedupv1 {
namespace tools {

Status ReadVolumeTable(Env* env, const Options& options, std::vector<VolumeEntry>* volumes) {
  volumes->clear();
  std::vector<VolumeRecord> records;
  DEDUPV1_RETURN_IF_ERROR(dedupv1::ReadVolumeTable(env, JoinPath(options.data_dir, kVolumesFileName), &records));
  for (const auto& r : records) {
    VolumeEntry v;
    v.id = r.id;
    v.name = r.name;
    v.size = r.size;
    if (!IsZero(r.uid)) v.uid = Id128ToHex(r.uid);
    for (const auto& c : options.volumes) {
      if (c.name == v.name) v.configured = true;
    }
    volumes->push_back(v);
  }
  std::sort(volumes->begin(), volumes->end(),
            [](const VolumeEntry& a, const VolumeEntry& b) { return a.id < b.id; });
  return Status::OK();
}

Status FindVolume(const std::vector<VolumeEntry>& volumes, const std::string& name_or_id,
                  VolumeEntry* out) {
  for (const auto& v : volumes) {
    if (v.name == name_or_id) {
      *out = v;
      return Status::OK();
    }
  }
  uint64_t id;
  if (ParseUint(name_or_id, &id).ok()) {
    for (const auto& v : volumes) {
      if (v.id == id) {
        *out = v;
        return Status::OK();
      }
    }
  }
  std::string known;
  for (const auto& v : volumes) known += (known.empty() ? "" : ", ") + v.name + " (id " + std::to_string(v.id) + ")";
  return Status::NotFound("no volume '" + name_or_id + "'; known volumes: " + (known.empty() ? "none" : known));
}

}  // namespace tools
}  // namespace dedupv1

#include "core/volume_table.h"

#include <map>
#include <sstream>

namespace dedupv1 {
namespace {

// Ids key the block index: two volumes sharing one would share data.
Status CheckVolumeTable(const std::string& path, const std::vector<VolumeRecord>& records) {
  std::map<uint32_t, const VolumeRecord*> by_id;
  std::map<std::string, const VolumeRecord*> by_name;
  auto entry = [](const VolumeRecord& r) { return "'" + std::to_string(r.id) + " " + r.name + "'"; };
  for (const VolumeRecord& r : records) {
    if (r.id == 0) return Status::Corruption(path + ": volume " + r.name + " has id 0 (ids start at 1)");
    auto [id_it, new_id] = by_id.emplace(r.id, &r);
    if (!new_id) {
      return Status::Corruption(path + ": id " + std::to_string(r.id) + " is given twice (" + entry(*id_it->second) +
                                " and " + entry(r) + "); restore the file from a backup");
    }
    auto [name_it, new_name] = by_name.emplace(r.name, &r);
    if (!new_name) {
      return Status::Corruption(path + ": volume " + r.name + " is listed twice (" + entry(*name_it->second) +
                                " and " + entry(r) + "); restore the file from a backup");
    }
  }
  return Status::OK();
}

}  // namespace

Status ReadVolumeTable(Env* env, const std::string& path, std::vector<VolumeRecord>* records) {
  records->clear();
  if (!env->FileExists(path)) return Status::NotFound("volume table " + path + " does not exist");
  std::string text;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env, path, &text));
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    line_no++;
    if (line.empty()) continue;
    std::istringstream fields(line);
    VolumeRecord r;
    if (!(fields >> r.id >> r.name >> r.size)) {
      return Status::Corruption(path + ":" + std::to_string(line_no) + ": expected 'id name size'");
    }
    records->push_back(r);
  }
  return CheckVolumeTable(path, *records);
}

Status WriteVolumeTable(Env* env, const std::string& path, const std::vector<VolumeRecord>& records) {
  std::ostringstream out;
  for (const auto& r : records) out << r.id << " " << r.name << " " << r.size << "\n";
  return WriteFileAtomically(env, path, out.str());
}

}  // namespace dedupv1

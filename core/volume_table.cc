#include "core/volume_table.h"

#include <sstream>

namespace dedupv1 {

Status ReadVolumeTable(Env* env, const std::string& path, std::vector<VolumeRecord>* records) {
  records->clear();
  if (!env->FileExists(path)) return Status::OK();
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
  return Status::OK();
}

Status WriteVolumeTable(Env* env, const std::string& path, const std::vector<VolumeRecord>& records) {
  std::ostringstream out;
  for (const auto& r : records) out << r.id << " " << r.name << " " << r.size << "\n";
  return WriteFileAtomically(env, path, out.str());
}

}  // namespace dedupv1

#include "core/engine/volume_table.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/base/crc_text.h"

namespace dedupv1 {
namespace {

constexpr char kHeader[] = "# dedupv1 volume table: id name size uid\n";

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

Status ReadVolumeTable(Env* env, const std::string& path, std::vector<VolumeRecord>* records,
                       bool* needs_rewrite) {
  records->clear();
  if (!env->FileExists(path)) return Status::NotFound("volume table " + path + " does not exist");
  std::string text;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env, path, &text));
  // A table with the header has its checksum line; one without either was
  // written by an older build and is rewritten with both at the next open.
  std::string body;
  bool had_crc = false;
  const bool has_header = text.compare(0, sizeof(kHeader) - 1, kHeader) == 0;
  DEDUPV1_RETURN_IF_ERROR(StripCrcLine(path, text, has_header, &body, &had_crc));
  if (needs_rewrite != nullptr) *needs_rewrite = !had_crc;
  std::istringstream in(body);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    line_no++;
    if (line.empty() || (line_no == 1 && has_header)) continue;
    std::istringstream fields(line);
    VolumeRecord r;
    std::string uid, extra;
    if (!(fields >> r.id >> r.name >> r.size)) {
      return Status::Corruption(path + ":" + std::to_string(line_no) + ": expected 'id name size uid'");
    }
    if (fields >> uid && (!ParseId128Hex(uid, &r.uid) || IsZero(r.uid) || fields >> extra)) {
      return Status::Corruption(path + ":" + std::to_string(line_no) +
                                ": expected 'id name size uid' with a uid of 32 hex digits");
    }
    records->push_back(r);
  }
  return CheckVolumeTable(path, *records);
}

Status WriteVolumeTable(Env* env, const std::string& path, const std::vector<VolumeRecord>& records) {
  std::ostringstream out;
  out << kHeader;
  for (const auto& r : records) {
    out << r.id << " " << r.name << " " << r.size;
    if (!IsZero(r.uid)) out << " " << Id128ToHex(r.uid);
    out << "\n";
  }
  return WriteFileAtomically(env, path, AppendCrcLine(out.str()));
}

Status ApplyConfiguredVolumes(const std::vector<VolumeOptions>& configured, std::vector<VolumeRecord>* records,
                              bool* changed) {
  *changed = false;
  uint32_t next_id = 1;
  for (const auto& r : *records) next_id = std::max(next_id, r.id + 1);
  for (const auto& v : configured) {
    auto it = std::find_if(records->begin(), records->end(),
                           [&](const VolumeRecord& r) { return r.name == v.name; });
    if (it == records->end()) {
      records->push_back({next_id++, v.name, v.size, NewRandomId128()});
      *changed = true;
    } else if (v.size < it->size) {
      return Status::InvalidArgument("volume " + v.name + " holds " + std::to_string(it->size) +
                                     " bytes but the config says " + std::to_string(v.size) +
                                     "; shrinking a volume would lose data");
    } else if (v.size > it->size) {
      it->size = v.size;  // growing is safe
      *changed = true;
    }
  }
  for (auto& r : *records) {
    if (IsZero(r.uid)) {
      r.uid = NewRandomId128();
      *changed = true;
    }
  }
  if (*changed) {
    std::sort(records->begin(), records->end(),
              [](const VolumeRecord& a, const VolumeRecord& b) { return a.name < b.name; });
  }
  return Status::OK();
}

}  // namespace dedupv1

#include "chunkstore/local_container_catalog.h"

#include <charconv>
#include <system_error>

#include "core/base/coding.h"
#include "core/base/crc_text.h"

namespace dedupv1 {
namespace {

// The id mark file is the next free id (u64) followed by its CRC32C.
constexpr size_t kIdMarkSize = 12;

// Parses the body of the alias file (its crc line stripped). Every field of
// a merge line must be a container id in decimal, the target a real one and
// at least one source: a line that says less is refused, not half read (its
// crc holding, such a line would come from a bug, and a merge read wrong
// sends reads of the old ids to the wrong container).
Status ParseMergeRecords(const std::string& path, const std::string& body, std::vector<MergeRecord>* records) {
  size_t pos = 0;
  int line_no = 0;
  while (pos < body.size()) {
    size_t eol = body.find('\n', pos);
    if (eol == std::string::npos) eol = body.size();
    const std::string line = body.substr(pos, eol - pos);
    pos = eol + 1;
    line_no++;
    if (line.empty() || line[0] == '#') continue;
    auto bad = [&](const std::string& why) {
      return Status::Corruption("container alias file " + path + ":" + std::to_string(line_no) + ": " + why +
                                " in '" + line + "'");
    };
    if (line.compare(0, 6, "merge ") != 0) return bad("not a merge line");
    std::vector<ContainerId> ids;
    for (size_t at = 6; at <= line.size();) {
      size_t end = line.find(' ', at);
      if (end == std::string::npos) end = line.size();
      ContainerId id = 0;
      const auto [ptr, ec] = std::from_chars(line.data() + at, line.data() + end, id);
      if (end == at || ec != std::errc() || ptr != line.data() + end) return bad("a field that is not a container id");
      ids.push_back(id);
      at = end + 1;
    }
    if (ids.size() < 2) return bad("a merge without sources");
    if (ids[0] == kNoContainer) return bad("target container 0");
    MergeRecord r;
    r.target = ids[0];
    r.sources.assign(ids.begin() + 1, ids.end());
    records->push_back(std::move(r));
  }
  return Status::OK();
}

}  // namespace

LocalContainerCatalog::LocalContainerCatalog(Env* env, const std::string& dir, size_t fingerprint_size)
    : env_(env),
      id_mark_path_(JoinPath(dir, kContainerIdFileName)),
      alias_path_(JoinPath(dir, kContainerAliasFileName)),
      dead_file_(env, JoinPath(dir, kDeadChunkFileName), fingerprint_size),
      summary_file_(env, JoinPath(dir, kContainerSummaryFileName)) {}

std::string LocalContainerCatalog::Where(CatalogPart part) const {
  switch (part) {
    case CatalogPart::kIdMark:
      return id_mark_path_;
    case CatalogPart::kMergeRecords:
      return alias_path_;
    case CatalogPart::kDeadMarks:
      return dead_file_.path();
    case CatalogPart::kSummaries:
      return summary_file_.path();
  }
  return "";
}

bool LocalContainerCatalog::Exists(CatalogPart part) { return env_->FileExists(Where(part)); }

Status LocalContainerCatalog::ReadIdMark(ContainerId* next_free, bool* found) {
  std::lock_guard<std::mutex> l(id_mark_mu_);
  *found = false;
  if (!env_->FileExists(id_mark_path_)) return Status::OK();
  std::string buf;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env_, id_mark_path_, &buf));
  const uint8_t* p = reinterpret_cast<const uint8_t*>(buf.data());
  if (buf.size() != kIdMarkSize || Crc32c(p, 8) != DecodeFixed32(p + 8)) {
    return Status::Corruption("container id mark file " + id_mark_path_ + " is corrupt");
  }
  *next_free = DecodeFixed64(p);
  *found = true;
  return Status::OK();
}

Status LocalContainerCatalog::WriteIdMark(ContainerId next_free) {
  std::lock_guard<std::mutex> l(id_mark_mu_);
  std::string buf;
  PutFixed64(&buf, next_free);
  PutFixed32(&buf, Crc32c(buf.data(), 8));
  Status s = WriteFileAtomically(env_, id_mark_path_, buf);
  if (s.ok()) return s;
  if (s.IsNoSpace()) {
    return Status::NoSpace("cannot reserve container ids in " + id_mark_path_ + ": " + s.message());
  }
  return s.WithContext("cannot reserve container ids in " + id_mark_path_);
}

Status LocalContainerCatalog::ReadMergeRecords(std::vector<MergeRecord>* records) {
  std::lock_guard<std::mutex> l(alias_mu_);
  records->clear();
  if (!env_->FileExists(alias_path_)) return Status::OK();
  std::string text;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env_, alias_path_, &text));
  std::string body;
  bool had_crc = false;
  DEDUPV1_RETURN_IF_ERROR(StripCrcLine("container alias file " + alias_path_, text, true, &body, &had_crc));
  return ParseMergeRecords(alias_path_, body, records);
}

// One line "merge TARGET SOURCE..." per record, then "crc HEX" (CRC32C of
// everything before that line).
Status LocalContainerCatalog::WriteMergeRecords(const std::vector<MergeRecord>& records) {
  std::lock_guard<std::mutex> l(alias_mu_);
  std::string text = "# dedupv1 container aliases: merge <target> <sources...>\n";
  for (const auto& r : records) {
    text += "merge " + std::to_string(r.target);
    for (ContainerId src : r.sources) text += " " + std::to_string(src);
    text += "\n";
  }
  Status s = WriteFileAtomically(env_, alias_path_, AppendCrcLine(std::move(text)));
  if (!s.ok()) return s.WithContext("write container alias file " + alias_path_);
  return Status::OK();
}

Status LocalContainerCatalog::ReadDeadMarks(DeadMarks* marks, bool* intact) {
  std::lock_guard<std::mutex> l(dead_mu_);
  return dead_file_.Read(marks, intact);
}

Status LocalContainerCatalog::AppendDeadMarks(const DeadMarks& marks) {
  std::lock_guard<std::mutex> l(dead_mu_);
  return dead_file_.Append(marks);
}

Status LocalContainerCatalog::RewriteDeadMarks(const DeadMarks& marks) {
  std::lock_guard<std::mutex> l(dead_mu_);
  return dead_file_.Rewrite(marks);
}

Status LocalContainerCatalog::DeleteDeadMarks() {
  std::lock_guard<std::mutex> l(dead_mu_);
  Status d = env_->DeleteFile(dead_file_.path());
  if (!d.ok() && env_->FileExists(dead_file_.path())) return d;
  return Status::OK();
}

uint64_t LocalContainerCatalog::DeadMarkBytes() const {
  std::lock_guard<std::mutex> l(dead_mu_);
  return dead_file_.size();
}

Status LocalContainerCatalog::ReadSummaries(ContainerSummaryMap* summaries, uint64_t* records, uint64_t* skipped) {
  std::lock_guard<std::mutex> l(summary_mu_);
  return summary_file_.Read(summaries, records, skipped);
}

Status LocalContainerCatalog::AppendSummaries(const std::vector<std::pair<ContainerId, ContainerSummary>>& records) {
  std::lock_guard<std::mutex> l(summary_mu_);
  return summary_file_.Append(records);
}

Status LocalContainerCatalog::RewriteSummaries(const ContainerSummaryMap& summaries) {
  std::lock_guard<std::mutex> l(summary_mu_);
  return summary_file_.Rewrite(summaries);
}

}  // namespace dedupv1

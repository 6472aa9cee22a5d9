#include "chunkstore/memory_container_catalog.h"

namespace dedupv1 {
namespace {

// A dead-mark record's bytes besides its marks in the local file
// (chunkstore/dead_chunk_file.h): length, CRC, container id, count.
constexpr uint64_t kDeadRecordOverhead = 20;

}  // namespace

MemoryContainerCatalog::MemoryContainerCatalog(std::string name, size_t fingerprint_size,
                                               std::shared_ptr<Contents> contents)
    : name_(std::move(name)),
      fingerprint_size_(fingerprint_size),
      contents_(contents ? std::move(contents) : std::make_shared<Contents>()) {}

bool MemoryContainerCatalog::Exists(CatalogPart part) {
  std::lock_guard<std::mutex> l(contents_->mu);
  switch (part) {
    case CatalogPart::kIdMark:
      return contents_->has_id_mark;
    case CatalogPart::kMergeRecords:
      return contents_->has_merge_records;
    case CatalogPart::kDeadMarks:
      return contents_->has_dead_marks;
    case CatalogPart::kSummaries:
      return contents_->has_summaries;
  }
  return false;
}

std::string MemoryContainerCatalog::Where(CatalogPart part) const {
  switch (part) {
    case CatalogPart::kIdMark:
      return "memory:" + name_ + "/id-mark";
    case CatalogPart::kMergeRecords:
      return "memory:" + name_ + "/merge-records";
    case CatalogPart::kDeadMarks:
      return "memory:" + name_ + "/dead-marks";
    case CatalogPart::kSummaries:
      return "memory:" + name_ + "/summaries";
  }
  return "memory:" + name_;
}

Status MemoryContainerCatalog::ReadIdMark(ContainerId* next_free, bool* found) {
  std::lock_guard<std::mutex> l(contents_->mu);
  *found = contents_->has_id_mark;
  if (*found) *next_free = contents_->id_mark;
  return Status::OK();
}

Status MemoryContainerCatalog::WriteIdMark(ContainerId next_free) {
  std::lock_guard<std::mutex> l(contents_->mu);
  contents_->has_id_mark = true;
  contents_->id_mark = next_free;
  return Status::OK();
}

Status MemoryContainerCatalog::ReadMergeRecords(std::vector<MergeRecord>* records) {
  std::lock_guard<std::mutex> l(contents_->mu);
  *records = contents_->merge_records;
  return Status::OK();
}

Status MemoryContainerCatalog::WriteMergeRecords(const std::vector<MergeRecord>& records) {
  std::lock_guard<std::mutex> l(contents_->mu);
  contents_->has_merge_records = true;
  contents_->merge_records = records;
  return Status::OK();
}

Status MemoryContainerCatalog::ReadDeadMarks(DeadMarks* marks, bool* intact) {
  std::lock_guard<std::mutex> l(contents_->mu);
  marks->clear();
  *intact = true;
  for (const auto& [id, fps] : contents_->dead_records) {
    auto& out = (*marks)[id];
    out.insert(out.end(), fps.begin(), fps.end());
  }
  return Status::OK();
}

void MemoryContainerCatalog::AppendDeadLocked(const DeadMarks& marks) {
  for (const auto& [id, fps] : marks) {
    if (fps.empty()) continue;  // as in the file: no record
    contents_->has_dead_marks = true;
    contents_->dead_records.emplace_back(id, fps);
    contents_->dead_bytes += kDeadRecordOverhead + fps.size() * fingerprint_size_;
  }
}

Status MemoryContainerCatalog::AppendDeadMarks(const DeadMarks& marks) {
  std::lock_guard<std::mutex> l(contents_->mu);
  AppendDeadLocked(marks);
  return Status::OK();
}

Status MemoryContainerCatalog::RewriteDeadMarks(const DeadMarks& marks) {
  std::lock_guard<std::mutex> l(contents_->mu);
  contents_->dead_records.clear();
  contents_->dead_bytes = 0;
  contents_->has_dead_marks = true;
  AppendDeadLocked(marks);
  return Status::OK();
}

Status MemoryContainerCatalog::DeleteDeadMarks() {
  std::lock_guard<std::mutex> l(contents_->mu);
  contents_->dead_records.clear();
  contents_->dead_bytes = 0;
  contents_->has_dead_marks = false;
  return Status::OK();
}

uint64_t MemoryContainerCatalog::DeadMarkBytes() const {
  std::lock_guard<std::mutex> l(contents_->mu);
  return contents_->dead_bytes;
}

Status MemoryContainerCatalog::ReadSummaries(ContainerSummaryMap* summaries, uint64_t* records,
                                             uint64_t* skipped) {
  std::lock_guard<std::mutex> l(contents_->mu);
  summaries->clear();
  for (const auto& [id, summary] : contents_->summary_records) (*summaries)[id] = summary;
  *records = contents_->summary_records.size();
  *skipped = 0;
  return Status::OK();
}

Status MemoryContainerCatalog::AppendSummaries(
    const std::vector<std::pair<ContainerId, ContainerSummary>>& records) {
  if (records.empty()) return Status::OK();
  std::lock_guard<std::mutex> l(contents_->mu);
  contents_->has_summaries = true;
  contents_->summary_records.insert(contents_->summary_records.end(), records.begin(), records.end());
  return Status::OK();
}

Status MemoryContainerCatalog::RewriteSummaries(const ContainerSummaryMap& summaries) {
  std::lock_guard<std::mutex> l(contents_->mu);
  contents_->has_summaries = true;
  contents_->summary_records.assign(summaries.begin(), summaries.end());
  return Status::OK();
}

}  // namespace dedupv1

#include "chunkstore/container_summary_file.h"

#include "core/base/coding.h"

namespace dedupv1 {

ContainerSummaryFile::ContainerSummaryFile(Env* env, std::string path) : env_(env), path_(std::move(path)) {}

void ContainerSummaryFile::EncodeRecord(ContainerId id, const ContainerSummary& s, std::string* out) {
  const size_t start = out->size();
  PutFixed64(out, id);
  PutFixed64(out, s.footprint_bytes);
  PutFixed64(out, s.serialized_bytes);
  PutFixed32(out, static_cast<uint32_t>(s.chunks));
  PutFixed32(out, static_cast<uint32_t>(s.dead_chunks));
  PutFixed32(out, Crc32c(out->data() + start, kRecordSize - 4));
}

Status ContainerSummaryFile::Read(Summaries* summaries, uint64_t* records, uint64_t* skipped) {
  summaries->clear();
  *records = 0;
  *skipped = 0;
  size_ = 0;
  file_.reset();  // the next append opens the file as it is now
  if (!env_->FileExists(path_)) return Status::OK();
  std::string data;
  Status s = ReadFileToString(env_, path_, &data);
  if (!s.ok()) return s.WithContext("read container summaries " + path_);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data.data());
  const size_t whole = data.size() / kRecordSize * kRecordSize;
  for (size_t pos = 0; pos < whole; pos += kRecordSize) {
    const uint8_t* r = p + pos;
    if (Crc32c(r, kRecordSize - 4) != DecodeFixed32(r + kRecordSize - 4)) {
      (*skipped)++;
      continue;
    }
    ContainerSummary summary;
    summary.footprint_bytes = DecodeFixed64(r + 8);
    summary.serialized_bytes = DecodeFixed64(r + 16);
    summary.chunks = DecodeFixed32(r + 24);
    summary.dead_chunks = DecodeFixed32(r + 28);
    (*summaries)[DecodeFixed64(r)] = summary;
    (*records)++;
  }
  if (whole != data.size()) (*skipped)++;  // a record cut short
  size_ = whole;  // appends overwrite a cut-short tail
  return Status::OK();
}

Status ContainerSummaryFile::Append(const std::vector<std::pair<ContainerId, ContainerSummary>>& records) {
  if (records.empty()) return Status::OK();
  std::string bytes;
  for (const auto& [id, summary] : records) EncodeRecord(id, summary, &bytes);
  Status s;
  if (!file_) s = env_->OpenFile(path_, OpenMode::kCreate, &file_);
  if (s.ok()) s = file_->Write(size_, bytes.data(), bytes.size());
  if (!s.ok()) {
    file_.reset();  // reopened (and the tail overwritten) by the next append
    return s.WithContext("append container summaries to " + path_);
  }
  size_ += bytes.size();
  return Status::OK();
}

Status ContainerSummaryFile::Rewrite(const Summaries& summaries) {
  std::string bytes;
  for (const auto& [id, summary] : summaries) EncodeRecord(id, summary, &bytes);
  file_.reset();
  Status s = WriteFileAtomically(env_, path_, bytes);
  if (!s.ok()) return s.WithContext("rewrite container summaries " + path_);
  size_ = bytes.size();
  return Status::OK();
}

}  // namespace dedupv1

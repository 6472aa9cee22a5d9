#include "chunkstore/dead_chunk_file.h"

#include "core/base/coding.h"

namespace dedupv1 {
namespace {

constexpr size_t kRecordHeader = 8;   // length, CRC
constexpr size_t kPayloadHeader = 12;  // container id, count

}  // namespace

DeadChunkFile::DeadChunkFile(Env* env, std::string path, size_t fingerprint_size)
    : env_(env), path_(std::move(path)), fingerprint_size_(fingerprint_size) {}

Status DeadChunkFile::Read(Marks* marks, bool* intact) {
  marks->clear();
  *intact = true;
  size_ = 0;
  if (!env_->FileExists(path_)) return Status::OK();
  std::string data;
  Status s = ReadFileToString(env_, path_, &data);
  if (!s.ok()) return s.WithContext("read dead chunk marks " + path_);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t pos = 0;
  while (pos < data.size()) {
    if (data.size() - pos < kRecordHeader + kPayloadHeader) break;
    const uint32_t length = DecodeFixed32(p + pos);
    const uint32_t crc = DecodeFixed32(p + pos + 4);
    if (length < kPayloadHeader || length > data.size() - pos - kRecordHeader) break;
    const uint8_t* payload = p + pos + kRecordHeader;
    if (Crc32c(payload, length) != crc) break;
    const ContainerId id = DecodeFixed64(payload);
    const uint32_t count = DecodeFixed32(payload + 8);
    if (static_cast<uint64_t>(count) * fingerprint_size_ != length - kPayloadHeader) break;
    auto& fps = (*marks)[id];
    for (uint32_t i = 0; i < count; i++) {
      fps.emplace_back(payload + kPayloadHeader + i * fingerprint_size_, fingerprint_size_);
    }
    pos += kRecordHeader + length;
  }
  *intact = pos == data.size();
  size_ = pos;
  return Status::OK();
}

std::string DeadChunkFile::Encode(const Marks& marks) const {
  std::string out;
  for (const auto& [id, fps] : marks) {
    if (fps.empty()) continue;
    std::string payload;
    PutFixed64(&payload, id);
    PutFixed32(&payload, static_cast<uint32_t>(fps.size()));
    for (const Fingerprint& fp : fps) payload.append(reinterpret_cast<const char*>(fp.bytes), fingerprint_size_);
    PutFixed32(&out, static_cast<uint32_t>(payload.size()));
    PutFixed32(&out, Crc32c(payload.data(), payload.size()));
    out += payload;
  }
  return out;
}

Status DeadChunkFile::Append(const Marks& marks) {
  const std::string bytes = Encode(marks);
  if (bytes.empty()) return Status::OK();
  const bool created = !env_->FileExists(path_);
  std::unique_ptr<File> f;
  Status s = env_->OpenFile(path_, OpenMode::kCreate, &f);
  if (s.ok()) s = f->Write(size_, bytes.data(), bytes.size());
  if (s.ok()) s = f->Sync();
  if (s.ok() && created) s = env_->SyncDir(DirName(path_));
  if (!s.ok()) return s.WithContext("append dead chunk marks to " + path_);
  size_ += bytes.size();
  return Status::OK();
}

Status DeadChunkFile::Rewrite(const Marks& marks) {
  const std::string bytes = Encode(marks);
  Status s = WriteFileAtomically(env_, path_, bytes);
  if (!s.ok()) return s.WithContext("rewrite dead chunk marks " + path_);
  size_ = bytes.size();
  return Status::OK();
}

}  // namespace dedupv1

#include "log/log_event.h"

#include "core/base/coding.h"

namespace dedupv1 {

const char* LogEventTypeName(LogEventType t) {
  switch (t) {
    case LogEventType::kSystemStart: return "SYSTEM_START";
    case LogEventType::kSystemRun: return "SYSTEM_RUN";
    case LogEventType::kVolumeAttached: return "VOLUME_ATTACHED";
    case LogEventType::kVolumeDetached: return "VOLUME_DETACHED";
    case LogEventType::kContainerOpened: return "CONTAINER_OPENED";
    case LogEventType::kContainerCommitted: return "CONTAINER_COMMITTED";
    case LogEventType::kContainerCommitFailed: return "CONTAINER_COMMIT_FAILED";
    case LogEventType::kContainerMerged: return "CONTAINER_MERGED";
    case LogEventType::kContainerDeleted: return "CONTAINER_DELETED";
    case LogEventType::kBlockMappingWritten: return "BLOCK_MAPPING_WRITTEN";
    case LogEventType::kBlockMappingDeleted: return "BLOCK_MAPPING_DELETED";
    case LogEventType::kReplayStarted: return "REPLAY_STARTED";
    case LogEventType::kReplayStopped: return "REPLAY_STOPPED";
  }
  return "UNKNOWN";
}

const char* ReplayModeName(ReplayMode m) {
  switch (m) {
    case ReplayMode::kDirect: return "direct";
    case ReplayMode::kBackground: return "background";
    case ReplayMode::kDirtyStart: return "dirty-start";
  }
  return "unknown";
}

void PayloadWriter::PutU32(uint32_t v) { PutFixed32(&buf_, v); }
void PayloadWriter::PutU64(uint64_t v) { PutFixed64(&buf_, v); }
void PayloadWriter::PutBytes(const std::string& s) {
  PutFixed32(&buf_, static_cast<uint32_t>(s.size()));
  buf_.append(s);
}

Status PayloadReader::Error(const std::string& why) const {
  return Status::Corruption(std::string("log event payload (") + what_ + "): " + why);
}

Status PayloadReader::Need(size_t n) {
  if (!format_checked_) {
    if (data_.empty()) return Error("empty");
    uint8_t format = static_cast<uint8_t>(data_[0]);
    if (format != kLogPayloadFormat) {
      return Error("unknown format byte " + std::to_string(format));
    }
    pos_ = 1;
    format_checked_ = true;
  }
  if (data_.size() - pos_ < n) {
    return Error("truncated: need " + std::to_string(n) + " bytes at offset " +
                 std::to_string(pos_) + " of " + std::to_string(data_.size()));
  }
  return Status::OK();
}

Status PayloadReader::GetU8(uint8_t* v) {
  DEDUPV1_RETURN_IF_ERROR(Need(1));
  *v = static_cast<uint8_t>(data_[pos_]);
  pos_ += 1;
  return Status::OK();
}

Status PayloadReader::GetU32(uint32_t* v) {
  DEDUPV1_RETURN_IF_ERROR(Need(4));
  *v = DecodeFixed32(reinterpret_cast<const uint8_t*>(data_.data()) + pos_);
  pos_ += 4;
  return Status::OK();
}

Status PayloadReader::GetU64(uint64_t* v) {
  DEDUPV1_RETURN_IF_ERROR(Need(8));
  *v = DecodeFixed64(reinterpret_cast<const uint8_t*>(data_.data()) + pos_);
  pos_ += 8;
  return Status::OK();
}

Status PayloadReader::GetBytes(std::string* s) {
  uint32_t n = 0;
  DEDUPV1_RETURN_IF_ERROR(GetU32(&n));
  DEDUPV1_RETURN_IF_ERROR(Need(n));
  s->assign(data_, pos_, n);
  pos_ += n;
  return Status::OK();
}

Status PayloadReader::Finish() {
  DEDUPV1_RETURN_IF_ERROR(Need(0));
  if (pos_ != data_.size()) {
    return Error(std::to_string(data_.size() - pos_) + " trailing bytes");
  }
  return Status::OK();
}

std::string SystemEventData::Encode() const {
  PayloadWriter w;
  w.PutU8(dirty_start ? 1 : 0);
  return w.Release();
}

Status SystemEventData::Decode(const std::string& payload, SystemEventData* out) {
  PayloadReader r(payload, "system event");
  uint8_t dirty = 0;
  DEDUPV1_RETURN_IF_ERROR(r.GetU8(&dirty));
  DEDUPV1_RETURN_IF_ERROR(r.Finish());
  if (dirty > 1) return Status::Corruption("log event payload (system event): bad dirty flag");
  out->dirty_start = dirty == 1;
  return Status::OK();
}

std::string VolumeEventData::Encode() const {
  PayloadWriter w;
  w.PutU32(volume_id);
  w.PutBytes(name);
  w.PutU64(size);
  return w.Release();
}

Status VolumeEventData::Decode(const std::string& payload, VolumeEventData* out) {
  PayloadReader r(payload, "volume event");
  VolumeEventData d;
  DEDUPV1_RETURN_IF_ERROR(r.GetU32(&d.volume_id));
  DEDUPV1_RETURN_IF_ERROR(r.GetBytes(&d.name));
  DEDUPV1_RETURN_IF_ERROR(r.GetU64(&d.size));
  DEDUPV1_RETURN_IF_ERROR(r.Finish());
  *out = std::move(d);
  return Status::OK();
}

std::string ContainerEventData::Encode() const {
  PayloadWriter w;
  w.PutU64(container);
  return w.Release();
}

Status ContainerEventData::Decode(const std::string& payload, ContainerEventData* out) {
  PayloadReader r(payload, "container event");
  ContainerEventData d;
  DEDUPV1_RETURN_IF_ERROR(r.GetU64(&d.container));
  DEDUPV1_RETURN_IF_ERROR(r.Finish());
  *out = d;
  return Status::OK();
}

std::string ContainerMergedData::Encode() const {
  PayloadWriter w;
  w.PutU64(result);
  w.PutU32(static_cast<uint32_t>(sources.size()));
  for (ContainerId id : sources) w.PutU64(id);
  return w.Release();
}

Status ContainerMergedData::Decode(const std::string& payload, ContainerMergedData* out) {
  PayloadReader r(payload, "container merged");
  ContainerMergedData d;
  uint32_t n = 0;
  DEDUPV1_RETURN_IF_ERROR(r.GetU64(&d.result));
  DEDUPV1_RETURN_IF_ERROR(r.GetU32(&n));
  // Bound the reservation by what the payload can hold, so a corrupt count
  // cannot allocate gigabytes.
  if (n > payload.size() / 8) {
    return Status::Corruption("log event payload (container merged): source count " +
                              std::to_string(n) + " exceeds the payload");
  }
  d.sources.resize(n);
  for (uint32_t i = 0; i < n; i++) DEDUPV1_RETURN_IF_ERROR(r.GetU64(&d.sources[i]));
  DEDUPV1_RETURN_IF_ERROR(r.Finish());
  *out = std::move(d);
  return Status::OK();
}

std::string BlockMappingWrittenData::Encode() const {
  PayloadWriter w;
  w.PutU32(block.volume);
  w.PutU64(block.block);
  w.PutBytes(old_mapping);
  w.PutBytes(new_mapping);
  return w.Release();
}

Status BlockMappingWrittenData::Decode(const std::string& payload, BlockMappingWrittenData* out) {
  PayloadReader r(payload, "block mapping written");
  BlockMappingWrittenData d;
  DEDUPV1_RETURN_IF_ERROR(r.GetU32(&d.block.volume));
  DEDUPV1_RETURN_IF_ERROR(r.GetU64(&d.block.block));
  DEDUPV1_RETURN_IF_ERROR(r.GetBytes(&d.old_mapping));
  DEDUPV1_RETURN_IF_ERROR(r.GetBytes(&d.new_mapping));
  DEDUPV1_RETURN_IF_ERROR(r.Finish());
  *out = std::move(d);
  return Status::OK();
}

std::string BlockMappingDeletedData::Encode() const {
  PayloadWriter w;
  w.PutU32(block.volume);
  w.PutU64(block.block);
  w.PutBytes(old_mapping);
  return w.Release();
}

Status BlockMappingDeletedData::Decode(const std::string& payload, BlockMappingDeletedData* out) {
  PayloadReader r(payload, "block mapping deleted");
  BlockMappingDeletedData d;
  DEDUPV1_RETURN_IF_ERROR(r.GetU32(&d.block.volume));
  DEDUPV1_RETURN_IF_ERROR(r.GetU64(&d.block.block));
  DEDUPV1_RETURN_IF_ERROR(r.GetBytes(&d.old_mapping));
  DEDUPV1_RETURN_IF_ERROR(r.Finish());
  *out = std::move(d);
  return Status::OK();
}

std::string ReplayEventData::Encode() const {
  PayloadWriter w;
  w.PutU8(static_cast<uint8_t>(mode));
  w.PutU64(from_id);
  w.PutU64(to_id);
  return w.Release();
}

Status ReplayEventData::Decode(const std::string& payload, ReplayEventData* out) {
  PayloadReader r(payload, "replay event");
  ReplayEventData d;
  uint8_t mode = 0;
  DEDUPV1_RETURN_IF_ERROR(r.GetU8(&mode));
  DEDUPV1_RETURN_IF_ERROR(r.GetU64(&d.from_id));
  DEDUPV1_RETURN_IF_ERROR(r.GetU64(&d.to_id));
  DEDUPV1_RETURN_IF_ERROR(r.Finish());
  if (mode < 1 || mode > 3) {
    return Status::Corruption("log event payload (replay event): unknown mode " +
                              std::to_string(mode));
  }
  d.mode = static_cast<ReplayMode>(mode);
  *out = d;
  return Status::OK();
}

}  // namespace dedupv1

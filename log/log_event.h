// Event types of the operations log (paper section 3.6) and the binary
// payloads of the events the engine logs.
//
// The OperationsLog stores a payload as opaque bytes; the helpers here give
// every event type one documented encoding (docs/formats.md, "Operations
// log") so the component that logs an event and the components that replay it
// agree. Every payload starts with a format byte (kLogPayloadFormat) so an
// encoding can evolve. A decoder refuses an unknown format byte, a short
// payload or trailing bytes with Corruption naming the payload kind; it never
// returns partly decoded data.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

// The numbers are stored on disk: never renumber, only add.
enum class LogEventType : uint16_t {
  kSystemStart = 1,
  kSystemRun = 2,
  kVolumeAttached = 3,
  kVolumeDetached = 4,
  kContainerOpened = 10,
  kContainerCommitted = 11,
  kContainerCommitFailed = 12,
  kContainerMerged = 13,
  kContainerDeleted = 14,
  kBlockMappingWritten = 20,
  kBlockMappingDeleted = 21,
  kReplayStarted = 30,
  kReplayStopped = 31,
};

// "CONTAINER_COMMITTED" etc.; "UNKNOWN" for a value not listed above.
const char* LogEventTypeName(LogEventType t);

// One event as replayed from the log. |id| is assigned by OperationsLog::Append.
struct LogEvent {
  uint64_t id = 0;
  LogEventType type = LogEventType::kSystemStart;
  std::string payload;
};

// First byte of every payload encoded here.
constexpr uint8_t kLogPayloadFormat = 1;

// Appends little-endian fields to a payload.
class PayloadWriter {
 public:
  PayloadWriter() { buf_.push_back(static_cast<char>(kLogPayloadFormat)); }
  void PutU8(uint8_t v) { buf_.push_back(static_cast<char>(v)); }
  void PutU32(uint32_t v);
  void PutU64(uint64_t v);
  // u32 length, then the bytes.
  void PutBytes(const std::string& s);
  const std::string& data() const { return buf_; }
  std::string Release() { return std::move(buf_); }

 private:
  std::string buf_;
};

// Reads what PayloadWriter wrote; |what| names the payload kind in errors.
// The constructor does not check anything; the first Get reports a bad format
// byte.
class PayloadReader {
 public:
  PayloadReader(const std::string& data, const char* what) : data_(data), what_(what) {}
  Status GetU8(uint8_t* v);
  Status GetU32(uint32_t* v);
  Status GetU64(uint64_t* v);
  Status GetBytes(std::string* s);
  // Corruption if bytes are left over (or the format byte was never read).
  Status Finish();

 private:
  Status Need(size_t n);
  Status Error(const std::string& why) const;
  const std::string& data_;
  const char* what_;
  size_t pos_ = 0;
  bool format_checked_ = false;
};

// kSystemStart (at open, after recovery), kSystemRun (when the system starts
// serving). |dirty_start|: the previous run did not stop cleanly, so the log
// was replayed to rebuild in-memory state.
struct SystemEventData {
  bool dirty_start = false;
  std::string Encode() const;
  static Status Decode(const std::string& payload, SystemEventData* out);
};

// kVolumeAttached (at open, once per served volume), kVolumeDetached (at
// close): the volume's id, name and size in bytes.
struct VolumeEventData {
  uint32_t volume_id = 0;
  std::string name;
  uint64_t size = 0;
  std::string Encode() const;
  static Status Decode(const std::string& payload, VolumeEventData* out);
};

// kContainerOpened, kContainerCommitted, kContainerCommitFailed, kContainerDeleted.
// (A failed commit is retried; kContainerCommitFailed is logged per failed
// attempt.)
struct ContainerEventData {
  ContainerId container = kNoContainer;
  std::string Encode() const;
  static Status Decode(const std::string& payload, ContainerEventData* out);
};

// kContainerMerged: the containers |sources| were merged into one container
// that answers to |result| and to every source id.
struct ContainerMergedData {
  ContainerId result = kNoContainer;
  std::vector<ContainerId> sources;
  std::string Encode() const;
  static Status Decode(const std::string& payload, ContainerMergedData* out);
};

// kBlockMappingWritten: the block's mapping before and after a write, both in
// BlockMapping::Serialize form (the log does not parse them). An empty
// |old_mapping| means the block had no stored mapping (it read as zeros).
// Each serialized mapping carries |block|'s id inside its own checksum, so
// decoders parse them with BlockMapping::Parse(mapping, block, ...), which
// refuses a mapping of another block with Corruption.
struct BlockMappingWrittenData {
  BlockId block;
  std::string old_mapping;
  std::string new_mapping;
  std::string Encode() const;
  static Status Decode(const std::string& payload, BlockMappingWrittenData* out);
};

// kBlockMappingDeleted: an unmap left nothing of the block's mapping (the
// block reads zeros and references no chunk); |old_mapping| as in
// BlockMappingWrittenData. An unmap of part of a block logs
// kBlockMappingWritten with the block's hole mapping instead.
struct BlockMappingDeletedData {
  BlockId block;
  std::string old_mapping;
  std::string Encode() const;
  static Status Decode(const std::string& payload, BlockMappingDeletedData* out);
};

// kReplayStarted, kReplayStopped: a replay of events [from_id, to_id].
enum class ReplayMode : uint8_t {
  kDirect = 1,      // replayed at once, in memory
  kBackground = 2,  // replayed when idle or when the log fills; replayed events are trimmed
  kDirtyStart = 3,  // after an unclean stop: every un-replayed event, to rebuild state
};
const char* ReplayModeName(ReplayMode m);

struct ReplayEventData {
  ReplayMode mode = ReplayMode::kBackground;
  uint64_t from_id = 0;
  uint64_t to_id = 0;
  std::string Encode() const;
  static Status Decode(const std::string& payload, ReplayEventData* out);
};

}  // namespace dedupv1

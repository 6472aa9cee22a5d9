// The data slots of the operations log file (docs/formats.md "Operations
// log", "Data slot"): the slot header codec and reading slots by slot
// sequence number. Shared by OperationsLog (appends, replay) and LogRecovery
// (what an open finds in the file).
//
// Every slot carries a CRC over its payload and header, its slot sequence
// number, event id, fragment, the generation of the open that wrote it, and
// (since the damage check, flag kLogSlotHasWatermark) a durable watermark:
// every slot with a lower sequence number had been fdatasync'ed when this
// slot was appended. Slots of older builds have the flag clear.
//
// A sync marker is a slot of its own magic that holds no event: after every
// fdatasync the log writes one (without syncing it) at the next slot
// sequence number, carrying the new durable point as its watermark, so the
// slots of the last sync before a crash are proven durable even when
// nothing was appended after it. The next append overwrites it. Older
// builds see a bad magic there, i.e. the end of the log.
#pragma once

#include <cstdint>
#include <string>

#include "core/base/env.h"
#include "core/base/status.h"

namespace dedupv1 {

constexpr uint32_t kLogSlotHeaderBytes = 48;
constexpr uint64_t kLogSuperblockSlots = 2;  // slots 0 and 1 of the file
// Bit of the header's flags field (bytes 30..31): the watermark is present.
constexpr uint16_t kLogSlotHasWatermark = 1;

struct LogSlotHeader {
  uint64_t seq = 0;
  uint64_t id = 0;
  uint32_t generation = 0;
  uint16_t type = 0;
  uint32_t fragment_index = 0;
  uint32_t fragment_count = 0;
  uint32_t payload_length = 0;
  // Durable watermark W <= seq: slots below W were durable at the append.
  // Encoded as seq - W, clamped at UINT32_MAX (a lower W only claims less).
  bool has_watermark = false;
  uint64_t watermark = 0;
  // A sync marker (no event: id, type and fragment fields are 0, no payload;
  // it always has a watermark).
  bool marker = false;
};

// Fills the header of |slot| (the payload must already be in place) with the
// CRC; |payload_crc| is Crc32c of the payload bytes, so appenders can compute
// it before taking the log lock.
void EncodeLogSlotHeader(uint8_t* slot, const LogSlotHeader& h, uint32_t payload_crc);

// Checks what can be checked about one slot on its own (magic, field ranges,
// CRC). Returns false with the reason in |why|. A sync marker decodes with
// h->marker set: callers that want an event must check it.
bool DecodeLogSlot(const uint8_t* slot, uint32_t payload_per_slot, LogSlotHeader* h, std::string* why);

// Recomputes the CRC of |slot| over the payload length its header claims, as
// EncodeLogSlotHeader writes it, leaving every other byte as it is: for tests
// that make slots whose fields lie while their CRC holds. False (nothing
// changed) if the claimed length exceeds |payload_per_slot|.
bool ResealLogSlot(uint8_t* slot, uint32_t payload_per_slot);

// The slot sequence number the header claims, unchecked (no CRC): for scans
// that skip slots too old to matter without hashing them. False if the magic
// is neither a data slot's nor a sync marker's.
bool PeekLogSlotSequence(const uint8_t* slot, uint64_t* seq);

// Where the slots of one log file are, and reads of them by slot sequence
// number (data slot 2 + seq % data_slots). Not thread-safe (one reader).
class LogSlotReader {
 public:
  LogSlotReader(File* file, uint32_t slot_size, uint64_t data_slots)
      : file_(file), slot_size_(slot_size), data_slots_(data_slots) {}

  uint64_t FileSlot(uint64_t seq) const { return kLogSuperblockSlots + seq % data_slots_; }
  uint64_t Offset(uint64_t seq) const { return FileSlot(seq) * slot_size_; }

  // Reads |n| slots starting at sequence |seq| (wrapping around the ring).
  Status Read(uint64_t seq, uint64_t n, std::string* out) const;

  // The slot with sequence |seq|, from a read-ahead window of about 1 MiB
  // that never extends to |limit_seq| or beyond. Valid until the next call.
  Status Get(uint64_t seq, uint64_t limit_seq, const uint8_t** slot);

 private:
  File* const file_;
  const uint32_t slot_size_;
  const uint64_t data_slots_;
  uint64_t first_seq_ = 0;  // read-ahead window
  uint64_t count_ = 0;
  std::string buf_;
};

}  // namespace dedupv1

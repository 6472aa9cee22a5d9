#include "log/log_slot.h"

#include <algorithm>

#include "core/base/coding.h"

namespace dedupv1 {
namespace {

constexpr uint32_t kSlotMagic = 0x534c5644;    // "DVLS" little endian
constexpr uint32_t kMarkerMagic = 0x4d4c5644;  // "DVLM" little endian
constexpr size_t kReadAheadBytes = 1 << 20;

// The slot CRC covers the fragment payload first, then header bytes 8..47.
uint32_t SlotCrc(const uint8_t* slot, uint32_t payload_crc) {
  return Crc32c(slot + 8, kLogSlotHeaderBytes - 8, payload_crc);
}

}  // namespace

void EncodeLogSlotHeader(uint8_t* slot, const LogSlotHeader& h, uint32_t payload_crc) {
  EncodeFixed32(slot + 0, h.marker ? kMarkerMagic : kSlotMagic);
  EncodeFixed64(slot + 8, h.seq);
  EncodeFixed64(slot + 16, h.id);
  EncodeFixed32(slot + 24, h.generation);
  EncodeFixed16(slot + 28, h.type);
  EncodeFixed16(slot + 30, h.has_watermark || h.marker ? kLogSlotHasWatermark : 0);
  EncodeFixed32(slot + 32, h.fragment_index);
  EncodeFixed32(slot + 36, h.fragment_count);
  EncodeFixed32(slot + 40, h.payload_length);
  uint32_t distance = 0;
  if (h.has_watermark || h.marker) {
    const uint64_t d = h.seq - std::min(h.watermark, h.seq);
    distance = static_cast<uint32_t>(std::min<uint64_t>(d, UINT32_MAX));
  }
  EncodeFixed32(slot + 44, distance);
  EncodeFixed32(slot + 4, SlotCrc(slot, payload_crc));
}

bool DecodeLogSlot(const uint8_t* slot, uint32_t payload_per_slot, LogSlotHeader* h, std::string* why) {
  const uint32_t magic = DecodeFixed32(slot);
  if (magic != kSlotMagic && magic != kMarkerMagic) {
    *why = "bad slot magic";
    return false;
  }
  h->marker = magic == kMarkerMagic;
  h->seq = DecodeFixed64(slot + 8);
  h->id = DecodeFixed64(slot + 16);
  h->generation = DecodeFixed32(slot + 24);
  h->type = DecodeFixed16(slot + 28);
  h->fragment_index = DecodeFixed32(slot + 32);
  h->fragment_count = DecodeFixed32(slot + 36);
  h->payload_length = DecodeFixed32(slot + 40);
  if (h->payload_length > payload_per_slot) {
    *why = "payload length " + std::to_string(h->payload_length) + " exceeds the slot";
    return false;
  }
  uint32_t crc = SlotCrc(slot, Crc32c(slot + kLogSlotHeaderBytes, h->payload_length));
  if (crc != DecodeFixed32(slot + 4)) {
    *why = "checksum mismatch";
    return false;
  }
  if (h->marker) {
    if (h->payload_length != 0 || h->fragment_count != 0 || h->id != 0) {
      *why = "bad sync marker";
      return false;
    }
  } else if (h->fragment_count == 0 || h->fragment_index >= h->fragment_count ||
      (h->fragment_index + 1 < h->fragment_count && h->payload_length != payload_per_slot)) {
    *why = "bad fragment " + std::to_string(h->fragment_index) + " of " + std::to_string(h->fragment_count) +
           " with " + std::to_string(h->payload_length) + " bytes";
    return false;
  }
  // Older builds wrote 0 into both fields (and do not check them).
  h->has_watermark = h->marker || (DecodeFixed16(slot + 30) & kLogSlotHasWatermark) != 0;
  const uint32_t distance = DecodeFixed32(slot + 44);
  h->watermark = h->has_watermark && distance <= h->seq ? h->seq - distance : 0;
  return true;
}

bool ResealLogSlot(uint8_t* slot, uint32_t payload_per_slot) {
  const uint32_t length = DecodeFixed32(slot + 40);
  if (length > payload_per_slot) return false;
  EncodeFixed32(slot + 4, SlotCrc(slot, Crc32c(slot + kLogSlotHeaderBytes, length)));
  return true;
}

bool PeekLogSlotSequence(const uint8_t* slot, uint64_t* seq) {
  const uint32_t magic = DecodeFixed32(slot);
  if (magic != kSlotMagic && magic != kMarkerMagic) return false;
  *seq = DecodeFixed64(slot + 8);
  return true;
}

Status LogSlotReader::Read(uint64_t seq, uint64_t n, std::string* out) const {
  out->resize(n * slot_size_);
  char* p = out->data();
  while (n > 0) {
    uint64_t k = std::min(n, data_slots_ - seq % data_slots_);
    DEDUPV1_RETURN_IF_ERROR(file_->Read(Offset(seq), k * slot_size_, p).WithContext("operations log"));
    seq += k;
    n -= k;
    p += k * slot_size_;
  }
  return Status::OK();
}

Status LogSlotReader::Get(uint64_t seq, uint64_t limit_seq, const uint8_t** slot) {
  if (count_ == 0 || seq < first_seq_ || seq >= first_seq_ + count_) {
    uint64_t n = std::min<uint64_t>(kReadAheadBytes / slot_size_, limit_seq > seq ? limit_seq - seq : 1);
    n = std::max<uint64_t>(n, 1);
    count_ = 0;
    DEDUPV1_RETURN_IF_ERROR(Read(seq, n, &buf_));
    first_seq_ = seq;
    count_ = n;
  }
  *slot = reinterpret_cast<const uint8_t*>(buf_.data()) + (seq - first_seq_) * slot_size_;
  return Status::OK();
}

}  // namespace dedupv1

// Fuzz harness of the operations log's decoders (core/base/fuzz_check.h): a
// log slot read back damaged must be refused by DecodeLogSlot or decode to a
// header whose fields are in range, and an event payload must decode as
// Corruption or to an event that encodes back to a payload decoding alike
// (replay acts on what it decodes: a payload that changes meaning when
// re-encoded would be applied as something it is not).
//
// Input: a selector byte, then the bytes. Selector % 8: 0-6 one of the event
// payload decoders, 7 a whole slot (header and 64 bytes of payload; selector
// bit 3 recomputes the slot's CRC first, so mutations reach the checks after
// it).
#include <string>
#include <vector>

#include "core/base/coding.h"
#include "core/base/fuzz_check.h"
#include "log/log_event.h"
#include "log/log_slot.h"

namespace dedupv1 {
namespace {

constexpr uint32_t kPayloadPerSlot = 64;

// Decode, then Encode and Decode again: the second decode succeeds and
// encodes to the same bytes as the first.
template <typename Event>
void CheckPayload(const std::string& payload) {
  Event event;
  Status s = Event::Decode(payload, &event);
  FUZZ_CHECK(s.ok() || s.IsCorruption(), "Decode: " + s.ToString());
  if (!s.ok()) return;
  const std::string encoded = event.Encode();
  Event again;
  Status s2 = Event::Decode(encoded, &again);
  FUZZ_CHECK(s2.ok(), "a decoded event encodes to a payload Decode refuses: " + s2.ToString());
  FUZZ_CHECK(again.Encode() == encoded, "an event changed through Encode and Decode");
}

void CheckSlot(std::string slot, bool fix_crc) {
  slot.resize(kLogSlotHeaderBytes + kPayloadPerSlot, '\0');
  uint8_t* p = reinterpret_cast<uint8_t*>(slot.data());
  if (fix_crc) ResealLogSlot(p, kPayloadPerSlot);
  LogSlotHeader h;
  std::string why;
  if (!DecodeLogSlot(p, kPayloadPerSlot, &h, &why)) {
    FUZZ_CHECK(!why.empty(), "a refused slot without a reason");
    return;
  }
  FUZZ_CHECK(h.payload_length <= kPayloadPerSlot, "payload longer than the slot");
  if (h.marker) {
    FUZZ_CHECK(h.payload_length == 0 && h.id == 0 && h.has_watermark, "a sync marker with an event");
  } else {
    FUZZ_CHECK(h.fragment_index < h.fragment_count, "fragment index out of range");
    if (h.fragment_index + 1 < h.fragment_count) {
      FUZZ_CHECK(h.payload_length == kPayloadPerSlot, "a fragment before the last is not full");
    }
  }
}

std::string Seed(uint8_t selector, const std::string& bytes) { return std::string(1, static_cast<char>(selector)) + bytes; }

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  seeds->push_back(Seed(0, SystemEventData{true}.Encode()));
  seeds->push_back(Seed(1, VolumeEventData{7, "backup-volume", 1ull << 40}.Encode()));
  seeds->push_back(Seed(2, ContainerEventData{1234}.Encode()));
  seeds->push_back(Seed(3, ContainerMergedData{90, {11, 12, 13}}.Encode()));
  BlockMappingWrittenData written;
  written.block = BlockId{2, 99};
  written.old_mapping = std::string(40, 'o');
  written.new_mapping = std::string(77, 'n');
  seeds->push_back(Seed(4, written.Encode()));
  BlockMappingDeletedData deleted;
  deleted.block = BlockId{2, 100};
  deleted.old_mapping = std::string(33, 'd');
  seeds->push_back(Seed(5, deleted.Encode()));
  seeds->push_back(Seed(6, ReplayEventData{ReplayMode::kDirtyStart, 5, 900}.Encode()));
  // Slots: an event's last fragment and a sync marker.
  for (bool marker : {false, true}) {
    std::string slot(kLogSlotHeaderBytes + kPayloadPerSlot, '\0');
    LogSlotHeader h;
    h.seq = 1000;
    h.marker = marker;
    h.has_watermark = true;
    h.watermark = 990;
    if (!marker) {
      h.id = 500;
      h.generation = 3;
      h.type = 4;
      h.fragment_index = 1;
      h.fragment_count = 2;
      h.payload_length = 20;
      for (size_t i = 0; i < 20; i++) slot[kLogSlotHeaderBytes + i] = static_cast<char>('a' + i);
    }
    uint8_t* p = reinterpret_cast<uint8_t*>(slot.data());
    EncodeLogSlotHeader(p, h, Crc32c(p + kLogSlotHeaderBytes, h.payload_length));
    AddSeedBothWays(seeds, 7, 8, slot);
  }
}

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dedupv1;
  uint8_t selector = 0;
  std::string bytes;
  if (!test::SplitFuzzInput(data, size, &selector, &bytes)) return 0;
  switch (selector % 8) {
    case 0: CheckPayload<SystemEventData>(bytes); break;
    case 1: CheckPayload<VolumeEventData>(bytes); break;
    case 2: CheckPayload<ContainerEventData>(bytes); break;
    case 3: CheckPayload<ContainerMergedData>(bytes); break;
    case 4: CheckPayload<BlockMappingWrittenData>(bytes); break;
    case 5: CheckPayload<BlockMappingDeletedData>(bytes); break;
    case 6: CheckPayload<ReplayEventData>(bytes); break;
    default: CheckSlot(bytes, (selector & 8) != 0); break;
  }
  return 0;
}

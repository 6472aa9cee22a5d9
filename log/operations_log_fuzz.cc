// Fuzz harness of the operations log's recovery (core/base/fuzz_check.h): one
// slot of a real log file (log/operations_log.h: 2 superblocks and 30 data
// slots of 512 bytes holding 12 synced events, some of several fragments) is
// replaced by the input, then the log is opened and replayed. Every event
// was synced, so losing one silently would lose acknowledged writes:
//  - without a recomputed CRC, the open fails (Corruption or IOError: damage
//    named), or the replay gives every event as appended. Even the last
//    event's slots are covered: the sync marker after them says they were
//    durable, so their loss is damage, not a torn tail; and a damaged marker
//    leaves the events themselves intact;
//  - with one (a slot that lies but whose CRC holds), no crash: the open and
//    the replay end in OK or an error.
//
// Input: a flags byte (bit 0: recompute the slot's CRC, data slots only;
// bits 1-5: which slot of the file, 0 and 1 the superblocks), then the slot's
// new bytes (cut or zero-padded to 512).
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/coding.h"
#include "core/base/env.h"
#include "core/base/fuzz_check.h"
#include "log/log_slot.h"
#include "log/operations_log.h"

namespace dedupv1 {
namespace {

constexpr uint32_t kSlotSize = 512;
constexpr uint64_t kSlots = 32;  // 2 superblocks + 30 data slots
constexpr int kEvents = 12;

OperationsLogOptions LogOptions(const std::string& path) {
  OperationsLogOptions o;
  o.path = path;
  o.size_bytes = kSlotSize * kSlots;
  o.slot_size = kSlotSize;
  o.append_wait_ms = 0;
  return o;
}

// The log every input damages, made once: its file image, its events, and
// what each slot of the file holds (an event id, or 0 for anything else).
struct BaseLog {
  std::string dir;
  std::string image;
  std::vector<LogEvent> events;
  std::map<uint64_t, uint64_t> event_of_slot;
  uint64_t marker_slot = 0;  // the sync marker after the last event
};

void MapSlots(BaseLog* b) {
  const uint32_t payload = kSlotSize - kLogSlotHeaderBytes;
  for (uint64_t i = kLogSuperblockSlots; i < kSlots; i++) {
    LogSlotHeader h;
    std::string why;
    if (!DecodeLogSlot(reinterpret_cast<const uint8_t*>(b->image.data()) + i * kSlotSize, payload, &h, &why)) continue;
    if (h.marker) {
      b->marker_slot = i;
    } else {
      b->event_of_slot[i] = h.id;
    }
  }
}

const BaseLog& Base() {
  static const BaseLog base = [] {
    BaseLog b;
    b.dir = test::FuzzTempDir("fuzz-log");
    const std::string path = b.dir + "/base";
    std::unique_ptr<OperationsLog> log;
    Status s = OperationsLog::Open(LogOptions(path), Env::Default(), &log);
    const size_t sizes[] = {0, 10, kSlotSize - kLogSlotHeaderBytes, kSlotSize - kLogSlotHeaderBytes + 1, 1000};
    for (int i = 0; s.ok() && i < kEvents; i++) {
      LogEvent e;
      e.type = LogEventType::kBlockMappingWritten;
      e.payload.assign(sizes[i % 5], static_cast<char>('a' + i));
      s = log->Append(e.type, e.payload, &e.id);
      b.events.push_back(e);
    }
    if (s.ok()) s = log->Sync();
    if (s.ok()) s = log->Close();
    FUZZ_CHECK(s.ok(), "the base log: " + s.ToString());
    log.reset();
    if (s.ok()) s = ReadFileToString(Env::Default(), path, &b.image);
    FUZZ_CHECK(s.ok(), "reading the base log: " + s.ToString());
    FUZZ_CHECK(b.image.size() == kSlotSize * kSlots, "the base log's size");
    ::unlink(path.c_str());
    MapSlots(&b);
    FUZZ_CHECK(b.marker_slot != 0, "the base log has no sync marker after its last event");
    return b;
  }();
  return base;
}

// The replayed events are the base's, all of them, in order.
void CheckReplayed(const std::vector<LogEvent>& got, uint64_t slot) {
  const BaseLog& base = Base();
  for (size_t i = 0; i < std::min(got.size(), base.events.size()); i++) {
    FUZZ_CHECK(got[i].id == base.events[i].id && got[i].type == base.events[i].type &&
                   got[i].payload == base.events[i].payload,
               "event " + std::to_string(base.events[i].id) + " replays as another");
  }
  FUZZ_CHECK(got.size() == base.events.size(),
             std::to_string(got.size()) + " of " + std::to_string(base.events.size()) +
                 " synced events replayed without an error (slot " + std::to_string(slot) + " damaged)");
}

void CheckDamagedLog(uint64_t slot, bool fix_crc, std::string bytes) {
  const BaseLog& base = Base();
  bytes.resize(kSlotSize, '\0');
  fix_crc = fix_crc && slot >= kLogSuperblockSlots;  // superblocks: the damage as it is
  if (fix_crc) ResealLogSlot(reinterpret_cast<uint8_t*>(bytes.data()), kSlotSize - kLogSlotHeaderBytes);
  std::string image = base.image;
  image.replace(slot * kSlotSize, kSlotSize, bytes);
  const bool changed = image != base.image;
  const std::string path = base.dir + "/log";
  Status w = WriteFileAtomically(Env::Default(), path, image);
  FUZZ_CHECK(w.ok(), "writing the damaged log: " + w.ToString());
  std::unique_ptr<OperationsLog> log;
  Status s = OperationsLog::Open(LogOptions(path), Env::Default(), &log);
  if (!s.ok()) {
    FUZZ_CHECK(s.IsCorruption() || s.IsIOError() || (fix_crc && s.IsInvalidArgument()), "Open: " + s.ToString());
    FUZZ_CHECK(changed, "the undamaged log does not open: " + s.ToString());
  } else {
    std::vector<LogEvent> got;
    Status r = log->Replay(0, [&got](const LogEvent& e) {
      got.push_back(e);
      return Status::OK();
    });
    FUZZ_CHECK(r.ok() || r.IsCorruption() || r.IsIOError(), "Replay: " + r.ToString());
    if (!fix_crc && r.ok()) CheckReplayed(got, slot);
    if (!changed) FUZZ_CHECK(r.ok() && got.size() == base.events.size(), "the undamaged log replays otherwise");
    log.reset();
  }
  ::unlink(path.c_str());
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  const BaseLog& base = Base();
  for (uint64_t slot = 0; slot < kSlots; slot++) {
    const bool used = slot < kLogSuperblockSlots || base.event_of_slot.count(slot) || slot == base.marker_slot;
    if (!used) continue;
    AddSeedBothWays(seeds, static_cast<uint8_t>(slot << 1), 1, base.image.substr(slot * kSlotSize, kSlotSize));
  }
}

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dedupv1;
  uint8_t flags = 0;
  std::string bytes;
  if (!test::SplitFuzzInput(data, size, &flags, &bytes)) return 0;
  CheckDamagedLog((flags >> 1) & 0x1f, (flags & 1) != 0, bytes);
  return 0;
}

// Fuzz harness of the shared chunk index's records (index/shared_table_records.h;
// core/base/fuzz_check.h): the entry, usage and hint values every gateway
// of a cluster-scope store reads from the shard objects, which another
// gateway wrote. A damaged entry read as another one would send a lookup to
// another container or make GC judge a chunk by a state it does not have; a
// damaged usage value would miscount a chunk GC then frees.
//
// The input is a key and a value (test::KeyValueInput), decoded as
// the record its flags byte names (bits 1-2: entry, usage, hint):
//  - with the CRC as the damage left it (flag bit 0 clear), a record that
//    decodes is exactly one the real encoder wrote (a seed), key and value;
//  - with the CRC recomputed over the damaged key and value (flag bit 0),
//    a record that decodes has a valid state, and its fields encode back to
//    the same key and value.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/base/fuzz_check.h"
#include "index/shared_table_records.h"

namespace dedupv1 {
namespace {

constexpr size_t kFpSize = 20;
enum Kind : uint8_t { kEntry = 0, kUsage = 1, kHint = 2 };

Fingerprint SeedFp(uint8_t salt) {
  uint8_t bytes[kFpSize];
  for (size_t i = 0; i < kFpSize; i++) bytes[i] = static_cast<uint8_t>(salt * 31 + i * 7 + 1);
  return Fingerprint(bytes, kFpSize);
}

// Every (kind, key, value) the seeds hold, as the encoders wrote them.
struct SeedRecord {
  Kind kind;
  std::string key;
  std::string value;
};

std::vector<SeedRecord> SeedRecords() {
  std::vector<SeedRecord> out;
  const SharedEntry::State states[] = {SharedEntry::State::kUncommitted, SharedEntry::State::kCommitted,
                                       SharedEntry::State::kDead};
  for (uint8_t i = 0; i < 3; i++) {
    const Fingerprint fp = SeedFp(i);
    SharedEntry e{states[i], 1000u + i * 77u, static_cast<uint16_t>(i + 1), 3u + i, 40u + i};
    out.push_back({kEntry, SharedEntryKey(fp), EncodeSharedEntry(fp, e)});
    const std::string ukey = SharedUsageKey(fp, static_cast<uint16_t>(0x102 * (i + 1)));
    out.push_back({kUsage, ukey, EncodeSharedUsage(ukey, SharedSlotUsage{i == 2 ? -1 : 5 + i, 90000u + i})});
    const char why = i == 1 ? kSharedHintDecremented : kSharedHintClaimed;
    out.push_back({kHint, SharedHintKey(fp), EncodeSharedHint(fp, why, static_cast<uint16_t>(i + 2), 7u + i)});
  }
  return out;
}

bool IsSeed(Kind kind, const std::string& key, const std::string& value) {
  static const std::vector<SeedRecord> seeds = SeedRecords();
  for (const SeedRecord& s : seeds) {
    if (s.kind == kind && s.key == key && s.value == value) return true;
  }
  return false;
}

Fingerprint FpOfKey(const std::string& key) {
  return Fingerprint(reinterpret_cast<const uint8_t*>(key.data()) + 1, kFpSize);
}

void CheckRecord(Kind kind, const std::string& key, std::string value, bool reseal) {
  if (reseal) value = test::ResealKeyed(key, std::move(value));
  Status s;
  bool round_trips = false;
  switch (kind) {
    case kEntry: {
      SharedEntry e;
      s = DecodeSharedEntry(key, value, kFpSize, &e);
      if (!s.ok()) break;
      FUZZ_CHECK(e.state == SharedEntry::State::kUncommitted || e.state == SharedEntry::State::kCommitted ||
                     e.state == SharedEntry::State::kDead,
                 "an entry of state " + std::to_string(static_cast<int>(e.state)));
      round_trips = SharedEntryKey(FpOfKey(key)) == key && EncodeSharedEntry(FpOfKey(key), e) == value;
      break;
    }
    case kUsage: {
      uint16_t slot = 0;
      SharedSlotUsage u;
      s = DecodeSharedUsage(key, value, kFpSize, &slot, &u);
      if (!s.ok()) break;
      round_trips = SharedUsageKey(FpOfKey(key), slot) == key && EncodeSharedUsage(key, u) == value;
      break;
    }
    case kHint: {
      SharedHint h;
      s = DecodeSharedHint(key, value, kFpSize, &h);
      if (!s.ok()) break;
      round_trips = h.value == value && SharedHintKey(h.fp) == key &&
                    EncodeSharedHint(h.fp, h.why, h.slot, h.epoch) == value;
      break;
    }
  }
  FUZZ_CHECK(s.ok() || s.IsCorruption(), "a decoder's error other than Corruption: " + s.ToString());
  if (!s.ok()) return;
  FUZZ_CHECK(round_trips, "a decoded record that does not encode back to its key and value");
  if (!reseal) FUZZ_CHECK(IsSeed(kind, key, value), "a damaged record decoded as another one without an error");
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  for (const SeedRecord& r : SeedRecords()) {
    AddSeedBothWays(seeds, static_cast<uint8_t>(r.kind << 1), 1, KeyValueInput(r.key, r.value));
  }
}

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dedupv1;
  uint8_t flags = 0;
  std::string key, value;
  if (!test::SplitKeyValueInput(data, size, &flags, &key, &value)) return 0;
  const Kind kind = static_cast<Kind>(((flags >> 1) & 3) % 3);
  CheckRecord(kind, key, std::move(value), (flags & 1) != 0);
  return 0;
}

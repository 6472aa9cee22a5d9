// Fuzz harness of the claim journal's records (index/claim_journal.h;
// core/base/fuzz_check.h): the GC leader reads another slot's records to
// learn which chunks that slot claimed and may never have flipped or
// counted. A damaged record read as another list would send GC to look at
// the wrong chunks and leave a dead incarnation's claims unexamined (a
// leak that nothing else finds online).
//
// The input is a key and a value (test::KeyValueInput), read as ReadPage
// reads each record (ParseKey, then DecodeValue):
//  - with the CRC as the damage left it (flag bit 0 clear), a record that
//    reads is exactly one the real encoder wrote (a seed), key and value;
//  - with the CRC recomputed over the damaged key and body (flag bit 0), a
//    record that reads lists fingerprints of one valid size, whose number
//    the value's length bears out, and encodes back to the same value.
#include <string>
#include <vector>

#include "core/base/fuzz_check.h"
#include "index/claim_journal.h"

namespace dedupv1 {
namespace {

struct SeedRecord {
  std::string key;
  std::string value;
};

std::vector<SeedRecord> SeedRecords() {
  std::vector<SeedRecord> out;
  const size_t sizes[] = {20, 32, 20};
  const size_t counts[] = {0, 3, 17};
  for (size_t r = 0; r < 3; r++) {
    std::vector<Fingerprint> fps;
    for (size_t i = 0; i < counts[r]; i++) {
      uint8_t bytes[32];
      for (size_t j = 0; j < sizes[r]; j++) bytes[j] = static_cast<uint8_t>(r * 101 + i * 13 + j * 3 + 1);
      fps.emplace_back(bytes, sizes[r]);
    }
    SeedRecord s;
    s.key = RadosClaimJournal::KeyOf(static_cast<uint32_t>(2 + r), 0x1234567800000001ull + r);
    const Status st = RadosClaimJournal::EncodeValue(s.key, fps, &s.value);
    FUZZ_CHECK(st.ok(), "the seed record: " + st.ToString());
    out.push_back(s);
  }
  return out;
}

bool IsSeed(const std::string& key, const std::string& value) {
  static const std::vector<SeedRecord> seeds = SeedRecords();
  for (const SeedRecord& s : seeds) {
    if (s.key == key && s.value == value) return true;
  }
  return false;
}

void CheckRecord(const std::string& key, std::string value, bool reseal) {
  if (reseal) value = test::ResealKeyed(key, std::move(value));
  uint32_t incarnation = 0;
  uint64_t seq = 0;
  std::vector<Fingerprint> fps;
  if (!RadosClaimJournal::ParseKey(key, &incarnation, &seq)) return;
  FUZZ_CHECK(RadosClaimJournal::KeyOf(incarnation, seq) == key, "a key that parses but is not KeyOf's");
  if (!RadosClaimJournal::DecodeValue(key, value, &fps)) return;
  for (const Fingerprint& fp : fps) {
    FUZZ_CHECK(fp.size == fps[0].size && fp.size > 0 && fp.size <= Fingerprint::kMaxSize,
               "a record of fingerprints of " + std::to_string(fp.size) + " and " + std::to_string(fps[0].size) +
                   " bytes");
  }
  FUZZ_CHECK(value.size() == 1 + 1 + 4 + fps.size() * (fps.empty() ? 0 : fps[0].size) + 4,
             "a record listing " + std::to_string(fps.size()) + " fingerprints in " + std::to_string(value.size()) +
                 " bytes");
  std::string again;
  if (fps.empty()) {
    // An empty record names no size (EncodeValue writes 1), and any stored
    // size decodes alike: the bytes that still must hold are version 1 and
    // a size a fingerprint can have.
    const auto* p = reinterpret_cast<const uint8_t*>(value.data());
    FUZZ_CHECK(p[0] == 1 && p[1] >= 1 && p[1] <= Fingerprint::kMaxSize,
               "an empty record of version " + std::to_string(p[0]) + " and size " + std::to_string(p[1]));
  } else {
    FUZZ_CHECK(RadosClaimJournal::EncodeValue(key, fps, &again).ok() && again == value,
               "a record that does not encode back to its value");
  }
  if (!reseal) FUZZ_CHECK(IsSeed(key, value), "a damaged record read as another one without an error");
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  for (const SeedRecord& r : SeedRecords()) AddSeedBothWays(seeds, 0, 1, KeyValueInput(r.key, r.value));
}

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dedupv1;
  uint8_t flags = 0;
  std::string key, value;
  if (!test::SplitKeyValueInput(data, size, &flags, &key, &value)) return 0;
  CheckRecord(key, std::move(value), (flags & 1) != 0);
  return 0;
}

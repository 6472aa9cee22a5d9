// Fuzz harness of the chunk index's records on RADOS, table format 1 (one
// gateway's table: index/rados_chunk_table.h; core/base/fuzz_check.h): an
// entry read as another would map a chunk to a container that does not
// hold it, or miscount its usage and let GC free it; a shard's entry count
// decides when the table is full.
//
// The input is a key and a value (test::KeyValueInput), decoded as its
// flags byte says (bit 1: an entry under its fingerprint key, or a shard's
// count, whose key is empty):
//  - with the CRC as the damage left it (flag bit 0 clear), what decodes is
//    exactly what the real encoder wrote (a seed);
//  - with the CRC recomputed (flag bit 0), what decodes encodes back to the
//    same value (no flag bit or field that the encoder would not write).
#include <string>
#include <vector>

#include "core/base/coding.h"
#include "core/base/fuzz_check.h"
#include "index/rados_chunk_table.h"

namespace dedupv1 {
namespace {

constexpr size_t kFpSize = 20;
enum Kind : uint8_t { kEntry = 0, kCount = 1 };

struct SeedRecord {
  Kind kind;
  std::string key;
  std::string value;
};

std::vector<SeedRecord> SeedRecords() {
  std::vector<SeedRecord> out;
  for (uint8_t i = 0; i < 3; i++) {
    uint8_t bytes[kFpSize];
    for (size_t j = 0; j < kFpSize; j++) bytes[j] = static_cast<uint8_t>(i * 59 + j * 11 + 2);
    const Fingerprint fp(bytes, kFpSize);
    ChunkIndexEntry e;
    e.container = 17u + i * 1000u;
    e.usage_count = i == 2 ? 0 : 3u + i;
    e.committed = i != 0;
    e.last_event_id = 5000u + i;
    out.push_back({kEntry, fp.ToBytes(),
                   RadosChunkTable::EncodeValue(fp, e)});
  }
  out.push_back({kCount, "", RadosChunkTable::EncodeCount(0)});
  out.push_back({kCount, "", RadosChunkTable::EncodeCount(123456)});
  return out;
}

bool IsSeed(Kind kind, const std::string& key, const std::string& value) {
  static const std::vector<SeedRecord> seeds = SeedRecords();
  for (const SeedRecord& s : seeds) {
    // A count has no key (it is the shard object's omap header).
    if (s.kind == kind && (kind == kCount || s.key == key) && s.value == value) return true;
  }
  return false;
}

void CheckRecord(Kind kind, const std::string& key, std::string value, bool reseal) {
  if (reseal && kind == kEntry) value = test::ResealKeyed(key, std::move(value));
  if (reseal && kind == kCount && value.size() >= 4) {  // the count's CRC covers its own bytes only
    value.resize(value.size() - 4);
    PutFixed32(&value, Crc32c(value.data(), value.size()));
  }
  Status s;
  std::string again;
  if (kind == kEntry) {
    ChunkIndexEntry e;
    s = RadosChunkTable::DecodeValue(key, value, kFpSize, &e);
    if (s.ok()) again = RadosChunkTable::EncodeValue(Fingerprint(reinterpret_cast<const uint8_t*>(key.data()), kFpSize), e);
  } else {
    uint64_t count = 0;
    s = RadosChunkTable::DecodeCount(value, &count);
    // An empty header is an object without keys yet: count 0, nothing stored.
    if (s.ok()) again = value.empty() ? value : RadosChunkTable::EncodeCount(count);
  }
  FUZZ_CHECK(s.ok() || s.IsCorruption(), "a decoder's error other than Corruption: " + s.ToString());
  if (!s.ok()) return;
  FUZZ_CHECK(again == value, "a decoded record that does not encode back to its value");
  if (!reseal && !value.empty()) {
    FUZZ_CHECK(IsSeed(kind, key, value), "a damaged record decoded as another one without an error");
  }
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
  CheckRecord(static_cast<Kind>((flags >> 1) & 1), key, std::move(value), (flags & 1) != 0);
  return 0;
}

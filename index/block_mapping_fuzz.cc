// Fuzz harness of BlockMapping's decoders (core/base/fuzz_check.h): a block
// index record or a logged mapping read back damaged must parse as
// Corruption or as a mapping that keeps every invariant the read path relies
// on (items cover the block exactly, none empty, canonical zero items).
//
// Input: a flags byte, then the serialized mapping. Flag 1: the trailing
// CRC32C is recomputed first, so mutations reach the checks behind it.
// Flag 2: the expected block is the one the record names (format 2), else
// the seeds' block.
#include <string>
#include <vector>

#include "core/base/coding.h"
#include "core/base/fuzz_check.h"
#include "index/block_mapping.h"

namespace dedupv1 {
namespace {

constexpr BlockId kSeedBlock{3, 41};

void FixChecksum(std::string* record) {
  if (record->size() < 4) return;
  uint8_t* p = reinterpret_cast<uint8_t*>(record->data());
  const size_t n = record->size() - 4;
  EncodeFixed32(p + n, Crc32c(p, n));
}

void CheckMapping(const std::string& record, const BlockId& id) {
  BlockMapping m;
  Status s = BlockMapping::Parse(record, id, &m);
  FUZZ_CHECK(s.ok() || s.IsCorruption(), "Parse: " + s.ToString());
  BlockMapping::RecordHeader header;
  Status sh = BlockMapping::ParseHeader(record, &header);
  FUZZ_CHECK(sh.ok() || sh.IsCorruption(), "ParseHeader: " + sh.ToString());
  if (!s.ok()) return;
  FUZZ_CHECK(sh.ok(), "Parse accepts a record ParseHeader refuses: " + sh.ToString());
  FUZZ_CHECK(header.version == m.version(), "ParseHeader reads another version than Parse");
  if (header.has_owner) FUZZ_CHECK(header.owner == id, "a record of another block parsed");
  Status inv = m.CheckInvariants();
  FUZZ_CHECK(inv.ok(), "a parsed mapping breaks an invariant: " + inv.ToString());
  uint64_t covered = 0;
  for (const BlockMappingItem& item : m.items()) {
    FUZZ_CHECK(item.size > 0, "an empty item");
    FUZZ_CHECK(item.container != kNoContainer, "an item names no container");
    covered += item.size;
  }
  FUZZ_CHECK(covered == m.block_size(), "items do not cover the block");
  std::string again;
  m.Serialize(id, &again);
  BlockMapping back;
  Status sb = BlockMapping::Parse(again, id, &back);
  FUZZ_CHECK(sb.ok(), "a parsed mapping serializes to a record Parse refuses: " + sb.ToString());
  FUZZ_CHECK(back == m, "a mapping changed through Serialize and Parse");
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  for (uint32_t block_size : {4096u, 131072u}) {
    BlockMapping m(block_size);
    m.set_version(77);
    std::vector<BlockMappingItem> items;
    for (uint32_t i = 0; i < 3; i++) {
      const std::string data = "chunk " + std::to_string(i);
      BlockMappingItem item;
      ComputeFingerprint(i == 2 ? FingerprintType::kSha256 : FingerprintType::kSha1,
                         reinterpret_cast<const uint8_t*>(data.data()), data.size(), &item.fp);
      item.container = 10 + i;
      item.chunk_offset = 100 * i;
      item.size = block_size / 8;
      items.push_back(item);
    }
    // A hole between the chunks, then the chunks again after it.
    if (!m.Overlay(0, items).ok() || !m.Overlay(block_size / 2, items).ok()) continue;
    std::string record;
    m.Serialize(kSeedBlock, &record);
    AddSeedBothWays(seeds, 0, 1, record);
  }
  BlockMapping empty(8192);
  std::string record;
  empty.Serialize(kSeedBlock, &record);
  AddSeedBothWays(seeds, 0, 1, record);
}

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dedupv1;
  uint8_t flags = 0;
  std::string record;
  if (!test::SplitFuzzInput(data, size, &flags, &record)) return 0;
  if (flags & 1) FixChecksum(&record);
  BlockId id = kSeedBlock;
  if ((flags & 2) && record.size() >= 13 && record[0] == 2) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(record.data());
    id = BlockId{DecodeFixed32(p + 1), DecodeFixed64(p + 5)};
  }
  CheckMapping(record, id);
  return 0;
}

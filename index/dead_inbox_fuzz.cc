// Fuzz harness of the dead chunk inbox's keys (index/dead_inbox.h;
// core/base/fuzz_check.h): index GC appends (container, fingerprint) to the
// inbox of the slot that owns the container, and that slot marks the chunk
// dead, so its next merge drops it. A damaged key read as another chunk
// would make a slot drop a chunk that is still mapped: data loss.
//
// The input is a key and its value (test::KeyValueInput), read as ReadPage
// reads each one (RadosDeadInbox::Decode):
//  - with the value as the damage left it (flag bit 0 clear), a key that
//    reads names exactly a chunk the real encoder wrote (a seed);
//  - with the value recomputed for the damaged key (flag bit 0), a key that
//    reads names a fingerprint of 1 to Fingerprint::kMaxSize bytes and
//    encodes back to the same key.
#include <string>
#include <vector>

#include "core/base/fuzz_check.h"
#include "index/dead_inbox.h"

namespace dedupv1 {
namespace {

std::vector<DeadChunk> SeedChunks() {
  std::vector<DeadChunk> out;
  const uint64_t containers[] = {1, 0x0000010000000203ull, 0xfedcba9876543210ull};
  const size_t sizes[] = {20, 20, 32};
  for (size_t i = 0; i < 3; i++) {
    uint8_t bytes[32];
    for (size_t j = 0; j < sizes[i]; j++) bytes[j] = static_cast<uint8_t>(i * 77 + j * 5 + 3);
    out.push_back(DeadChunk{containers[i], Fingerprint(bytes, sizes[i])});
  }
  return out;
}

bool IsSeed(const DeadChunk& chunk) {
  static const std::vector<DeadChunk> seeds = SeedChunks();
  for (const DeadChunk& s : seeds) {
    if (s == chunk) return true;
  }
  return false;
}

void CheckKey(const std::string& key, std::string value, bool reseal) {
  if (reseal) value = RadosDeadInbox::ValueOf(key);
  DeadChunk chunk;
  if (!RadosDeadInbox::Decode(key, value, &chunk)) return;
  FUZZ_CHECK(chunk.fp.size > 0 && chunk.fp.size <= Fingerprint::kMaxSize,
             "a dead chunk of a " + std::to_string(chunk.fp.size) + "-byte fingerprint");
  FUZZ_CHECK(RadosDeadInbox::KeyOf(chunk) == key, "a key that does not encode back from the chunk it names");
  if (!reseal) FUZZ_CHECK(IsSeed(chunk), "a damaged key read as another dead chunk without an error");
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  for (const DeadChunk& c : SeedChunks()) {
    const std::string key = RadosDeadInbox::KeyOf(c);
    AddSeedBothWays(seeds, 0, 1, KeyValueInput(key, RadosDeadInbox::ValueOf(key)));
  }
}

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dedupv1;
  uint8_t flags = 0;
  std::string key, value;
  if (!test::SplitKeyValueInput(data, size, &flags, &key, &value)) return 0;
  CheckKey(key, std::move(value), (flags & 1) != 0);
  return 0;
}

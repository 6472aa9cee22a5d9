// Fuzz harness of the volume table (core/engine/volume_table.h; core/base/
// fuzz_check.h): DATA-DIR/volumes maps volume names to the ids that key the
// block index, so a damaged table read as another valid one would serve a
// LUN another volume's blocks, or none (issue 19: a flipped byte in a name
// gave the volume a new, empty id). The file is replaced by the input and
// read:
//  - as written by WriteVolumeTable with its header (flag bit 0 clear: the
//    crc line as the damage left it), the read fails as Corruption or gives
//    the volumes written, unless the damage took the header with it (then
//    the file reads as an older build's, without a checksum, and each line
//    must still parse);
//  - with the crc line recomputed (flag bit 0, test::ResealCrcLine), the
//    read gives records that satisfy the table's rules (ids from 1, no id or
//    name twice) or fails.
#include <unistd.h>

#include <string>
#include <vector>

#include "core/base/env.h"
#include "core/base/fuzz_check.h"
#include "core/engine/volume_table.h"

namespace dedupv1 {
namespace {

constexpr char kHeader[] = "# dedupv1 volume table: id name size uid\n";

std::vector<VolumeRecord> SeedRecords() {
  std::vector<VolumeRecord> records = {{1, "backup", 1ull << 40, {}}, {2, "vm-images", 64ull << 30, {}},
                                       {5, "mail", 10ull << 30, {}}};
  for (size_t i = 0; i < records.size(); i++) {
    for (size_t j = 0; j < records[i].uid.size(); j++) records[i].uid[j] = static_cast<uint8_t>(17 * i + j + 1);
  }
  return records;
}

bool SameRecords(const std::vector<VolumeRecord>& a, const std::vector<VolumeRecord>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    if (a[i].id != b[i].id || a[i].name != b[i].name || a[i].size != b[i].size || !(a[i].uid == b[i].uid)) return false;
  }
  return true;
}

void CheckVolumeTable(std::string text, bool fix_crc) {
  static const std::string dir = test::FuzzTempDir("fuzz-volumes");
  const std::string path = dir + "/volumes";
  if (fix_crc) text = test::ResealCrcLine(std::move(text));
  Env* env = Env::Default();
  FUZZ_CHECK(WriteFileAtomically(env, path, text).ok(), "writing the damaged table");
  std::vector<VolumeRecord> records;
  Status s = ReadVolumeTable(env, path, &records);
  ::unlink(path.c_str());
  FUZZ_CHECK(s.ok() || s.IsCorruption(), "ReadVolumeTable: " + s.ToString());
  if (!s.ok()) return;
  for (size_t i = 0; i < records.size(); i++) {
    FUZZ_CHECK(records[i].id != 0, "a volume with id 0");
    for (size_t j = 0; j < i; j++) {
      FUZZ_CHECK(records[i].id != records[j].id && records[i].name != records[j].name, "an id or name given twice");
    }
  }
  const bool has_header = text.compare(0, sizeof(kHeader) - 1, kHeader) == 0;
  if (!fix_crc && has_header) {
    FUZZ_CHECK(SameRecords(records, SeedRecords()), "a damaged table read as other volumes without an error");
  }
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  static const std::string dir = FuzzTempDir("fuzz-volumes-seed");
  const std::string path = dir + "/volumes";
  std::string text;
  Status s = WriteVolumeTable(Env::Default(), path, SeedRecords());
  if (s.ok()) s = ReadFileToString(Env::Default(), path, &text);
  ::unlink(path.c_str());
  FUZZ_CHECK(s.ok(), "the seed table: " + s.ToString());
  AddSeedBothWays(seeds, 0, 1, text);
}

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dedupv1;
  uint8_t flags = 0;
  std::string text;
  if (!test::SplitFuzzInput(data, size, &flags, &text)) return 0;
  CheckVolumeTable(text, (flags & 1) != 0);
  return 0;
}

// Fuzz harness of the system file (core/engine/system_file.h;
// core/base/fuzz_check.h): DATA-DIR/system records the format, block size
// and fingerprint the stored data was written with; read as another block
// size or fingerprint, every block of every volume would be misread.
// ParseSystemFile is fed damaged files:
//  - with the checksum line as the damage left it (flag bit 0 clear), a file
//    that parses with a checksum line says exactly what a seed said; one
//    without (an older build's file, which has none) must say an older
//    format, or what it says of this build's format is refused as missing
//    its checksum line;
//  - with the checksum line recomputed (flag bit 0), a file that parses
//    names a block size and a known fingerprint as its text says, and
//    says the same once written again by EncodeSystemFile and parsed back.
#include <string>
#include <vector>

#include "core/base/config.h"
#include "core/base/crc_text.h"
#include "core/base/fuzz_check.h"
#include "core/engine/system_file.h"

namespace dedupv1 {
namespace {

constexpr char kPath[] = "/fuzz/system";

std::vector<std::string> SeedFiles() {
  return {EncodeSystemFile(131072, FingerprintType::kSha1), EncodeSystemFile(4096, FingerprintType::kSha256),
          // What format 2 builds wrote (no checksum line), read for the upgrade.
          "format = 2\nblock-size = 131072\nfingerprint = sha1\n",
          // A format-3 file with a comment (crc lines came with format 3).
          AppendCrcLine("# written by hand\nformat = 3\nblock-size = 65536\nfingerprint = sha256\n")};
}

bool SameFields(const SystemFileFields& a, const SystemFileFields& b) {
  return a.format == b.format && a.block_size == b.block_size && a.block_size_text == b.block_size_text &&
         a.fingerprint == b.fingerprint && a.fingerprint_text == b.fingerprint_text && a.had_crc == b.had_crc;
}

bool IsSeed(const SystemFileFields& f) {
  static const std::vector<SystemFileFields> seeds = [] {
    std::vector<SystemFileFields> out;
    for (const std::string& text : SeedFiles()) {
      SystemFileFields s;
      const Status st = ParseSystemFile(kPath, text, &s);
      FUZZ_CHECK(st.ok(), "a seed that does not parse: " + st.ToString());
      out.push_back(s);
    }
    return out;
  }();
  for (const SystemFileFields& s : seeds) {
    if (SameFields(s, f)) return true;
  }
  return false;
}

void CheckSystemFile(std::string text, bool fix_crc) {
  if (fix_crc) {
    const size_t crc_line = text.rfind("crc ");
    text = AppendCrcLine(crc_line == std::string::npos ? text : text.substr(0, crc_line));
  }
  SystemFileFields f;
  const Status s = ParseSystemFile(kPath, text, &f);
  FUZZ_CHECK(s.ok() || s.IsCorruption(), "ParseSystemFile: " + s.ToString());
  if (!s.ok()) {
    FUZZ_CHECK(s.ToString().find(kPath) != std::string::npos, "a refusal that does not name the file: " + s.ToString());
    return;
  }
  uint64_t block_size = 0;
  FingerprintType fingerprint;
  FUZZ_CHECK(ParseUint(f.block_size_text, &block_size).ok() && block_size == f.block_size,
             "a block size '" + f.block_size_text + "' read as " + std::to_string(f.block_size));
  FUZZ_CHECK(ParseFingerprintType(f.fingerprint_text, &fingerprint).ok() && fingerprint == f.fingerprint,
             "a fingerprint '" + f.fingerprint_text + "' read as " + FingerprintTypeName(f.fingerprint));
  uint64_t format = 0;
  const bool format_read = ParseUint(f.format, &format).ok();
  if (!f.had_crc) {
    FUZZ_CHECK(!format_read || format != kStoreFormat, "this build's format read without its checksum line");
  } else if (!fix_crc) {
    FUZZ_CHECK(IsSeed(f), "a damaged file read as other values without an error");
  }
  // What parses also survives being written again (the upgrade rewrites it).
  SystemFileFields again;
  const Status a = ParseSystemFile(kPath, EncodeSystemFile(f.block_size, f.fingerprint), &again);
  FUZZ_CHECK(a.ok() && again.block_size == f.block_size && again.fingerprint == f.fingerprint,
             "parsed values that do not read back once written: " + a.ToString());
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  for (const std::string& text : SeedFiles()) AddSeedBothWays(seeds, 0, 1, text);
}

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dedupv1;
  uint8_t flags = 0;
  std::string text;
  if (!test::SplitFuzzInput(data, size, &flags, &text)) return 0;
  CheckSystemFile(std::move(text), (flags & 1) != 0);
  return 0;
}

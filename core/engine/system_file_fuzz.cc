// Fuzz harness of the system file (core/engine/system_file.h;
// core/base/fuzz_check.h): DATA-DIR/system records the format, block size
// and fingerprint the stored data was written with; read as another block
// size or fingerprint, every block of every volume would be misread.
// ParseSystemFile is fed damaged files:
//  - with the checksum line as the damage left it (flag bit 0 clear), a file
//    that reads with a checksum line says exactly what a seed was written
//    with; one without (an older build's file, which has none) never passes
//    for this build's format;
//  - with the checksum line recomputed (flag bit 0: test::ResealCrcLine), a
//    file that reads has each of its three keys exactly once and no other
//    (Config's own reading of the body is the oracle), values as their text
//    says, and a format this build reads; one whose format it does not read
//    is returned as such, for the caller to refuse as a newer build's.
#include <map>
#include <string>
#include <vector>

#include "core/base/config.h"
#include "core/base/crc_text.h"
#include "core/base/fuzz_check.h"
#include "core/engine/system_file.h"

namespace dedupv1 {
namespace {

constexpr char kPath[] = "/fuzz/system";

struct Seed {
  std::string format;
  uint64_t block_size;
  FingerprintType fingerprint;
  std::string text;
};

std::vector<Seed> Seeds() {
  return {{std::to_string(kStoreFormat), 131072, FingerprintType::kSha1,
           EncodeSystemFile(131072, FingerprintType::kSha1)},
          {std::to_string(kStoreFormat), 4096, FingerprintType::kSha256,
           EncodeSystemFile(4096, FingerprintType::kSha256)},
          // What format 2 builds wrote (no checksum line), read for the upgrade.
          {"2", 131072, FingerprintType::kSha1, "format = 2\nblock-size = 131072\nfingerprint = sha1\n"},
          // A format-3 file in another order, with a comment (crc lines came with format 3).
          {"3", 65536, FingerprintType::kSha256,
           AppendCrcLine("# written by hand\nfingerprint = sha256\nformat = 3\nblock-size = 65536\n")}};
}

bool IsSeed(const SystemFileFields& f) {
  static const std::vector<Seed> seeds = Seeds();
  for (const Seed& s : seeds) {
    if (f.format == s.format && f.block_size == s.block_size && f.fingerprint == s.fingerprint) return true;
  }
  return false;
}

// Each key of the body exactly once, and no other, as Config reads it.
bool EachKeyOnce(const std::string& text) {
  std::string body;
  bool had_crc = false;
  Config config;
  if (!StripCrcLine(kPath, text, false, &body, &had_crc).ok() || !Config::Parse(body, kPath, &config).ok()) {
    return false;
  }
  std::map<std::string, int> seen;
  for (const auto& e : config.entries()) seen[e.key]++;
  return seen == std::map<std::string, int>{{"block-size", 1}, {"fingerprint", 1}, {"format", 1}};
}

void CheckSystemFile(std::string text, bool fix_crc) {
  if (fix_crc) text = test::ResealCrcLine(std::move(text));
  SystemFileFields f;
  const Status s = ParseSystemFile(kPath, text, &f);
  FUZZ_CHECK(s.ok() || s.IsCorruption(), "ParseSystemFile: " + s.ToString());
  if (!s.ok()) {
    FUZZ_CHECK(s.ToString().find(kPath) != std::string::npos, "a refusal that does not name the file: " + s.ToString());
    return;
  }
  uint64_t format = 0;
  const bool readable =
      ParseUint(f.format, &format).ok() && format >= kOldestStoreFormatRead && format <= kStoreFormat;
  FUZZ_CHECK(readable == f.format_readable, "format '" + f.format + "' judged otherwise");
  if (!f.format_readable) return;  // a newer build's: the caller refuses it
  FUZZ_CHECK(format == f.format_number, "format '" + f.format + "' read as " + std::to_string(f.format_number));
  uint64_t block_size = 0;
  FingerprintType fingerprint;
  FUZZ_CHECK(ParseUint(f.block_size_text, &block_size).ok() && block_size == f.block_size,
             "a block size '" + f.block_size_text + "' read as " + std::to_string(f.block_size));
  FUZZ_CHECK(ParseFingerprintType(f.fingerprint_text, &fingerprint).ok() && fingerprint == f.fingerprint,
             "a fingerprint '" + f.fingerprint_text + "' read as " + FingerprintTypeName(f.fingerprint));
  FUZZ_CHECK(EachKeyOnce(text), "a file read although its keys are not each there once");
  if (!f.had_crc) {
    FUZZ_CHECK(f.format_number < kStoreFormat, "this build's format read without its checksum line");
  } else if (!fix_crc) {
    FUZZ_CHECK(IsSeed(f), "a damaged file read as other values without an error");
  }
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  for (const Seed& s : Seeds()) {
    SystemFileFields f;
    const Status st = ParseSystemFile(kPath, s.text, &f);
    FUZZ_CHECK(st.ok() && IsSeed(f) && f.format == s.format && f.block_size == s.block_size &&
                   f.fingerprint == s.fingerprint,
               "a seed that does not read as written: " + st.ToString());
    AddSeedBothWays(seeds, 0, 1, s.text);
  }
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

// What a fuzz harness (a *_fuzz.cc file: a decoder of durable bytes fed with
// damaged input) needs besides LLVMFuzzerTestOneInput: a check that aborts
// with a message naming the input, and the seeds it starts from. Test code:
// only the harness programs include it (core/base/fuzz_driver_main.cc runs
// them, in ctest and in the campaigns of scripts/fuzz).
//
// The property every harness checks is the storage rule "damage is an error,
// never wrong data": a decoder given arbitrary bytes returns an error or a
// value that satisfies the invariants its users rely on, and never crashes,
// reads out of bounds or loops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/coding.h"
#include "core/base/crc_text.h"

namespace dedupv1 {
namespace test {

// Valid encodings made with the real encoders; defined by each harness.
void DedupV1FuzzSeeds(std::vector<std::string>* seeds);

// The harnesses' seeds in both modes of a flag bit (|bit| clear and set:
// checksums kept as the damage leaves them, and recomputed), so that the
// driver's mutations, which rarely touch the flags byte, exercise both.
inline void AddSeedBothWays(std::vector<std::string>* seeds, uint8_t flags, uint8_t bit, const std::string& bytes) {
  seeds->push_back(std::string(1, static_cast<char>(flags & ~bit)) + bytes);
  seeds->push_back(std::string(1, static_cast<char>(flags | bit)) + bytes);
}

// The input of a harness whose first byte chooses what to do with the rest
// (which decoder, whether checksums are recomputed): false for an empty one.
inline bool SplitFuzzInput(const uint8_t* data, size_t size, uint8_t* flags, std::string* bytes) {
  if (size == 0) return false;
  *flags = data[0];
  bytes->assign(reinterpret_cast<const char*>(data + 1), size - 1);
  return true;
}

// The input of a harness of a key-value record (an omap key and its value),
// after the flags byte: one byte the key's length, the key, the value.
// KeyValueInput makes the part after the flags byte (a key longer than 255
// bytes is cut there); SplitKeyValueInput reads a whole input back (false
// for an empty one, or one whose length byte says more than there is).
inline std::string KeyValueInput(const std::string& key, const std::string& value) {
  const size_t n = key.size() < 255 ? key.size() : 255;
  return std::string(1, static_cast<char>(n)) + key.substr(0, n) + value;
}
inline bool SplitKeyValueInput(const uint8_t* data, size_t size, uint8_t* flags, std::string* key,
                               std::string* value) {
  std::string bytes;
  if (!SplitFuzzInput(data, size, flags, &bytes)) return false;
  if (bytes.empty() || static_cast<uint8_t>(bytes[0]) > bytes.size() - 1) return false;
  const size_t n = static_cast<uint8_t>(bytes[0]);
  *key = bytes.substr(1, n);
  *value = bytes.substr(1 + n);
  return true;
}

// |value| with its last four bytes replaced by the CRC32C over |key| and the
// bytes before them: the seal of the RADOS records (omap values, whose CRC
// covers their key, so a value under another key does not check out).
// Values shorter than four bytes are left as they are.
inline std::string ResealKeyed(const std::string& key, std::string value) {
  if (value.size() < 4) return value;
  value.resize(value.size() - 4);
  PutFixed32(&value, Crc32cKeyed(key, value));
  return value;
}

// |text| with its checksum line (core/base/crc_text.h) recomputed as
// StripCrcLine finds it: the last line, if it is one, goes, a body cut
// short of its final newline gets one, and the crc line of what is left is
// appended.
inline std::string ResealCrcLine(std::string text) {
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') end--;
  const size_t nl = end == 0 ? std::string::npos : text.rfind('\n', end - 1);
  const size_t last = nl == std::string::npos ? 0 : nl + 1;
  if (text.compare(last, 4, "crc ") == 0) text.resize(last);
  if (!text.empty() && text.back() != '\n') text.push_back('\n');
  return AppendCrcLine(std::move(text));
}

// A fresh folder for a harness's files, in memory (/dev/shm) where there is
// one, so the syncs of the file-level harnesses cost nothing; removed at exit
// (the harness leaves it empty).
std::string FuzzTempDir(const char* name);

// Reports a failed check and the input it failed on, keeps that input in a
// file (./fuzz-failure-NAME-HASH, or in $DEDUPV1_FUZZ_FAILURES), removes
// the harness's temporary folders and aborts (core/base/fuzz_driver_main.cc).
[[noreturn]] void FuzzCheckFailed(const char* file, int line, const char* cond, const std::string& what);

}  // namespace test
}  // namespace dedupv1

// Aborts (a failed ctest, a finding of a campaign) unless |cond|.
#define FUZZ_CHECK(cond, what)                                                   \
  do {                                                                           \
    if (!(cond)) ::dedupv1::test::FuzzCheckFailed(__FILE__, __LINE__, #cond, (what)); \
  } while (0)

// Fuzz harness of the dead-chunk file (chunkstore/dead_chunk_file.h;
// core/base/fuzz_check.h). A dead mark lets a merge leave a chunk out of the
// merged container, so a mark read that was never written loses the data of
// every block naming that chunk. Losing marks is harmless (GC finds the
// garbage again). The file written by DeadChunkFile::Append is replaced by
// the input, then read:
//  - with the damage as it is, every mark read was written (the same
//    container, the same fingerprint); the undamaged file reads whole;
//  - with the records' CRCs recomputed (flag bit 0: a record that lies while
//    its CRC holds), Read ends in OK or an error, and every fingerprint read
//    has the file's fingerprint size.
#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "chunkstore/dead_chunk_file.h"
#include "core/base/coding.h"
#include "core/base/env.h"
#include "core/base/fuzz_check.h"

namespace dedupv1 {
namespace {

constexpr size_t kFpSize = 20;

DeadChunkFile::Marks SeedMarks() {
  DeadChunkFile::Marks marks;
  for (ContainerId c : {3, 17, 40}) {
    for (int i = 0; i < 3 + static_cast<int>(c % 4); i++) {
      const std::string data = "chunk " + std::to_string(c) + "/" + std::to_string(i);
      Fingerprint fp;
      ComputeFingerprint(FingerprintType::kSha1, reinterpret_cast<const uint8_t*>(data.data()), data.size(), &fp);
      marks[c].push_back(fp);
    }
  }
  return marks;
}

// Recomputes the CRC of every record whose length fits what is left.
void FixRecordCrcs(std::string* file) {
  size_t at = 0;
  while (at + 8 <= file->size()) {
    uint8_t* p = reinterpret_cast<uint8_t*>(file->data()) + at;
    const uint64_t length = DecodeFixed32(p);
    if (length > file->size() - at - 8) return;
    EncodeFixed32(p + 4, Crc32c(p + 8, length));
    at += 8 + length;
  }
}

// The file two GC rounds' Appends write for SeedMarks: a record per
// container and round.
const std::string& SeedFile() {
  static const std::string bytes = [] {
    const std::string path = test::FuzzTempDir("fuzz-dead-chunks-seed") + "/" + kDeadChunkFileName;
    DeadChunkFile file(Env::Default(), path, kFpSize);
    DeadChunkFile::Marks first, second;
    for (const auto& [c, fps] : SeedMarks()) {
      first[c].assign(fps.begin(), fps.begin() + 2);
      second[c].assign(fps.begin() + 2, fps.end());
    }
    std::string out;
    Status s = file.Append(first);
    if (s.ok()) s = file.Append(second);
    if (s.ok()) s = ReadFileToString(Env::Default(), path, &out);
    ::unlink(path.c_str());
    FUZZ_CHECK(s.ok(), "the seed file: " + s.ToString());
    return out;
  }();
  return bytes;
}

void CheckDeadChunkFile(std::string bytes, bool fix_crc) {
  static const std::string dir = test::FuzzTempDir("fuzz-dead-chunks");
  static const DeadChunkFile::Marks written = SeedMarks();
  const std::string path = dir + "/" + kDeadChunkFileName;
  if (fix_crc) FixRecordCrcs(&bytes);
  Env* env = Env::Default();
  FUZZ_CHECK(WriteFileAtomically(env, path, bytes).ok(), "writing the damaged file");
  DeadChunkFile file(env, path, kFpSize);
  DeadChunkFile::Marks marks;
  bool intact = true;
  Status s = file.Read(&marks, &intact);
  ::unlink(path.c_str());
  FUZZ_CHECK(s.ok() || s.IsCorruption() || s.IsIOError(), "Read: " + s.ToString());
  if (!s.ok()) return;
  size_t read = 0;
  for (const auto& [container, fps] : marks) {
    for (const Fingerprint& fp : fps) {
      FUZZ_CHECK(fp.size == kFpSize, "a mark of another fingerprint size");
      read++;
      if (fix_crc) continue;
      auto it = written.find(container);
      const bool was_written = it != written.end() && std::find(it->second.begin(), it->second.end(), fp) != it->second.end();
      FUZZ_CHECK(was_written, "a dead mark read that was never written (container " + std::to_string(container) + ")");
    }
  }
  if (bytes == SeedFile()) {
    FUZZ_CHECK(intact && marks == written, "the undamaged file reads otherwise");
  }
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) { AddSeedBothWays(seeds, 0, 1, SeedFile()); }

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dedupv1;
  uint8_t flags = 0;
  std::string bytes;
  if (!test::SplitFuzzInput(data, size, &flags, &bytes)) return 0;
  CheckDeadChunkFile(bytes, (flags & 1) != 0);
  return 0;
}

// Fuzz harness of the container summary file (chunkstore/container_summary_file.h;
// core/base/fuzz_check.h). A summary lets GC's full scan judge a container
// without reading it; the file's rule is that a damaged record is skipped
// (the container's metadata is then read again), never read as another
// container's or another state's summary. The file two GC rounds' Appends
// write is replaced by the input, then read:
//  - with the damage as it is, every summary read is one written for that
//    container (a later record replaces an earlier one, so a damaged later
//    record may leave the earlier one: both were written), and the undamaged
//    file reads as the last record of each container;
//  - with every record's CRC recomputed (flag bit 0: records that lie while
//    their CRC holds), Read ends in OK and accounts for every byte: the
//    records read and skipped are the file's whole records, plus one for a
//    cut-short tail.
#include <unistd.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chunkstore/container_summary_file.h"
#include "core/base/coding.h"
#include "core/base/env.h"
#include "core/base/fuzz_check.h"

namespace dedupv1 {
namespace {

constexpr size_t kRecord = ContainerSummaryFile::kRecordSize;

using Written = std::vector<std::pair<ContainerId, ContainerSummary>>;

// Two rounds of appends: every container once, then some again with more
// dead chunks, one withdrawn.
std::vector<Written> SeedRounds() {
  Written first, second;
  for (ContainerId id : {ContainerId{1}, ContainerId{2}, ContainerId{9}, ContainerId{0x0001000000000005ull}}) {
    first.push_back({id, ContainerSummary{100 + id % 7, 4000000 + id % 13, 4194304, 0}});
  }
  second.push_back({2, ContainerSummary{60, 2500000, 4194304, 40}});
  second.push_back({9, ContainerSummary{0, 0, 0, kSummaryWithdrawn}});
  return {first, second};
}

bool SameSummary(const ContainerSummary& a, const ContainerSummary& b) {
  return a.chunks == b.chunks && a.footprint_bytes == b.footprint_bytes && a.serialized_bytes == b.serialized_bytes &&
         a.dead_chunks == b.dead_chunks;
}

bool WasWritten(ContainerId id, const ContainerSummary& s) {
  static const std::vector<Written> rounds = SeedRounds();
  for (const Written& round : rounds) {
    for (const auto& [wid, ws] : round) {
      if (wid == id && SameSummary(ws, s)) return true;
    }
  }
  return false;
}

const std::string& SeedFile() {
  static const std::string bytes = [] {
    const std::string path = test::FuzzTempDir("fuzz-summaries-seed") + "/" + kContainerSummaryFileName;
    ContainerSummaryFile file(Env::Default(), path);
    Status s;
    for (const Written& round : SeedRounds()) {
      if (s.ok()) s = file.Append(round);
    }
    std::string out;
    if (s.ok()) s = ReadFileToString(Env::Default(), path, &out);
    ::unlink(path.c_str());
    FUZZ_CHECK(s.ok(), "the seed file: " + s.ToString());
    return out;
  }();
  return bytes;
}

void CheckSummaryFile(std::string bytes, bool fix_crc) {
  static const std::string dir = test::FuzzTempDir("fuzz-summaries");
  const std::string path = dir + "/" + kContainerSummaryFileName;
  if (fix_crc) {
    for (size_t at = 0; at + kRecord <= bytes.size(); at += kRecord) {
      uint8_t* p = reinterpret_cast<uint8_t*>(bytes.data()) + at;
      EncodeFixed32(p + kRecord - 4, Crc32c(p, kRecord - 4));
    }
  }
  Env* env = Env::Default();
  FUZZ_CHECK(WriteFileAtomically(env, path, bytes).ok(), "writing the damaged file");
  ContainerSummaryFile file(env, path);
  ContainerSummaryFile::Summaries summaries;
  uint64_t records = 0, skipped = 0;
  Status s = file.Read(&summaries, &records, &skipped);
  ::unlink(path.c_str());
  FUZZ_CHECK(s.ok(), "Read: " + s.ToString());
  const uint64_t whole = bytes.size() / kRecord;
  FUZZ_CHECK(records + skipped == whole + (bytes.size() % kRecord != 0 ? 1 : 0),
             std::to_string(records) + " records and " + std::to_string(skipped) + " skipped in a file of " +
                 std::to_string(bytes.size()) + " bytes");
  FUZZ_CHECK(file.size() == whole * kRecord, "appends would not go after the last whole record");
  if (fix_crc) return;
  for (const auto& [id, summary] : summaries) {
    FUZZ_CHECK(WasWritten(id, summary), "a summary read that was never written (container " + std::to_string(id) + ")");
  }
  if (bytes == SeedFile()) {
    std::map<ContainerId, ContainerSummary> last;
    for (const Written& round : SeedRounds()) {
      for (const auto& [id, summary] : round) last[id] = summary;
    }
    bool same = summaries.size() == last.size() && skipped == 0;
    for (const auto& [id, summary] : last) same = same && summaries.count(id) && SameSummary(summaries[id], summary);
    FUZZ_CHECK(same, "the undamaged file reads otherwise");
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
  CheckSummaryFile(std::move(bytes), (flags & 1) != 0);
  return 0;
}

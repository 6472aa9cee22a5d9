#include "bench/fiu_trace.h"

#include <cstring>
#include <sstream>

namespace dedupv1 {
namespace bench {

const char kZeroBlockMd5[] = "620f0b67a91f7f74151bc5be745b7110";

namespace {

bool ParseU64(const std::string& s, uint64_t* v) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 19) return false;
  *v = std::stoull(s);
  return true;
}

uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

Status ParseFiuLine(const std::string& line, FiuRecord* record) {
  std::istringstream in(line);
  std::string ts, pid, process, lba, size, op, major, minor, md5, extra;
  if (!(in >> ts >> pid >> process >> lba >> size >> op >> major >> minor >> md5) || (in >> extra)) {
    return Status::InvalidArgument("want 9 fields: TIMESTAMP PID PROCESS LBA SIZE OP MAJOR MINOR MD5");
  }
  uint64_t sectors = 0;
  if (!ParseU64(ts, &record->timestamp)) return Status::InvalidArgument("timestamp '" + ts + "' is not a number");
  if (!ParseU64(lba, &record->lba)) return Status::InvalidArgument("LBA '" + lba + "' is not a number");
  if (!ParseU64(size, &sectors) || sectors == 0 || sectors % 8 != 0 || sectors > (1u << 20)) {
    return Status::InvalidArgument("size '" + size + "' is not a multiple of 8 sectors (4 KiB)");
  }
  if (record->lba % 8 != 0) return Status::InvalidArgument("LBA " + lba + " is not 4 KiB aligned");
  record->sectors = static_cast<uint32_t>(sectors);
  if (op != "W" && op != "R") return Status::InvalidArgument("op '" + op + "' is neither W nor R");
  record->write = op == "W";
  if (md5.size() != 32 || md5.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Status::InvalidArgument("MD5 '" + md5 + "' is not 32 lower-case hex digits");
  }
  record->md5 = md5;
  return Status::OK();
}

Status ReadFiuTrace(std::istream& in, std::vector<FiuRequest>* requests) {
  std::string line;
  uint64_t number = 0, last_timestamp = 0;
  while (std::getline(in, line)) {
    number++;
    if (line.empty() || line[0] == '#') continue;
    FiuRecord r;
    Status s = ParseFiuLine(line, &r);
    if (!s.ok()) return Status::InvalidArgument("trace line " + std::to_string(number) + ": " + s.message());
    const uint64_t offset = r.lba * 512, bytes = uint64_t{r.sectors} * 512;
    FiuRequest* last = requests->empty() ? nullptr : &requests->back();
    if (last != nullptr && r.timestamp == last_timestamp && r.write == last->write &&
        offset == last->offset + last->length) {
      last->length += bytes;
    } else {
      requests->push_back(FiuRequest{offset, bytes, r.write, {}, {}});
      last = &requests->back();
    }
    last->md5s.push_back(r.md5);
    last->record_bytes.push_back(static_cast<uint32_t>(bytes));
    last_timestamp = r.timestamp;
  }
  return Status::OK();
}

void FillFromMd5(const std::string& md5, uint8_t* out, size_t n) {
  if (md5 == kZeroBlockMd5) {
    std::memset(out, 0, n);
    return;
  }
  // Both halves of the MD5 seed the generator (a xor of them would give
  // every MD5 with equal halves the same bytes).
  uint64_t state = std::stoull(md5.substr(0, 16), nullptr, 16) * 0x9e3779b97f4a7c15ull +
                   std::stoull(md5.substr(16, 16), nullptr, 16);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = SplitMix(&state);
    std::memcpy(out + i, &v, 8);
  }
  if (i < n) {
    const uint64_t v = SplitMix(&state);
    std::memcpy(out + i, &v, n - i);
  }
}

}  // namespace bench
}  // namespace dedupv1

// Block traces in the FIU format (the SyLab traces of FIU's servers, used by
// POD, seed 002): one line per record,
//   TIMESTAMP PID PROCESS LBA SIZE OP MAJOR MINOR MD5
// with LBA and SIZE in 512-byte sectors, OP "W" or "R", and the MD5 of the
// record's content (hex). Records of one request share a timestamp and
// follow each other on the disk; ReadFiuTrace joins them into requests. No
// such trace ships in a Debian package: bench/fiu-trace-gen writes one with
// the published traces' shape. A replayer writes each record's bytes from
// its MD5 (FillFromMd5: the same MD5, the same bytes), so a trace's
// duplicates are duplicates on the LUN.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace dedupv1 {
namespace bench {

struct FiuRecord {
  uint64_t timestamp = 0;
  uint64_t lba = 0;      // 512-byte sectors
  uint32_t sectors = 0;  // a multiple of 8 (4 KiB)
  bool write = false;
  std::string md5;       // 32 hex digits
};

// One line; InvalidArgument naming the field that is wrong.
Status ParseFiuLine(const std::string& line, FiuRecord* record);

struct FiuRequest {
  uint64_t offset = 0;  // bytes
  uint64_t length = 0;  // bytes
  bool write = false;
  std::vector<std::string> md5s;  // per record, in order (writes)
  std::vector<uint32_t> record_bytes;
};

// The trace's requests in order. Empty lines and lines starting with '#'
// are skipped; a bad line fails naming its number.
Status ReadFiuTrace(std::istream& in, std::vector<FiuRequest>* requests);

// |n| bytes of content for a record with |md5|: zeros for the MD5 of a
// zero-filled 4 KiB block, else bytes from a generator seeded by the MD5.
void FillFromMd5(const std::string& md5, uint8_t* out, size_t n);

// The MD5 (hex) of 4096 zero bytes: a trace's holes.
extern const char kZeroBlockMd5[];

}  // namespace bench
}  // namespace dedupv1

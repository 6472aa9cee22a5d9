// Test helper: block mappings in the format older builds wrote.
#pragma once

#include <string>

#include "core/base/coding.h"
#include "index/block_mapping.h"

namespace dedupv1 {
namespace test {

// |m| in mapping format 1 (builds before the block id): the format-2 bytes
// without the 12-byte id, format byte 1, resealed with a new CRC.
inline std::string SerializeFormatOne(const BlockMapping& m) {
  std::string v2;
  m.Serialize(BlockId{0, 0}, &v2);
  std::string v1 = std::string(1, '\x01') + v2.substr(13, v2.size() - 13 - 4);
  PutFixed32(&v1, Crc32c(v1.data(), v1.size()));
  return v1;
}

}  // namespace test
}  // namespace dedupv1

#include "chunkstore/container_testutil.h"

#include "chunkstore/container.h"
#include "core/base/coding.h"

namespace dedupv1 {
namespace test {

std::string ContainerInFormatOne(const std::string& bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t fp_size = p[14];
  const uint64_t items = DecodeFixed32(p + 24);
  const uint64_t aliases = DecodeFixed32(p + 28);
  const size_t items_begin = Container::kHeaderSize + aliases * 8;
  const size_t v2 = Container::ItemSize(fp_size, 2), v1 = Container::ItemSize(fp_size, 1);
  std::string out = bytes.substr(0, items_begin);
  for (uint64_t i = 0; i < items; i++) out += bytes.substr(items_begin + i * v2, v1);
  const size_t meta_end = out.size();
  out += bytes.substr(items_begin + items * v2);
  auto* q = reinterpret_cast<uint8_t*>(out.data());
  EncodeFixed16(q + 12, 1);
  EncodeFixed32(q + 4, Crc32c(q + 8, meta_end - 8));
  return out;
}

}  // namespace test
}  // namespace dedupv1

// Crc32c (core/base/coding.h) against a bit-by-bit reference: every stored
// checksum (containers, log records, block mappings, metadata files) depends
// on it giving the same value whatever path (three-way pieces of 8 KiB or
// 256 bytes, eight bytes, single bytes) a buffer takes.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/base/coding.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

uint32_t ReferenceCrc32c(const uint8_t* p, size_t n, uint32_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int b = 0; b < 8; b++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

TEST(Crc32cTest, KnownValues) {
  const char* check = "123456789";
  EXPECT_EQ(Crc32c(check, 9), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(Crc32c(check, 0), 0u);
  const std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4
}

TEST(Crc32cTest, EveryLengthAndPathMatchesTheReference) {
  const std::vector<uint8_t> data = test::RandomBytes(3 * 8192 * 3 + 1000, 11);
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 2100; n++) lengths.push_back(n);
  for (size_t n : {767u, 768u, 769u, 3 * 256u + 7, 8191u, 24575u, 24576u, 24577u, 30000u, 49152u + 768u + 9,
                   static_cast<unsigned>(data.size())}) {
    lengths.push_back(n);
  }
  for (size_t n : lengths) {
    for (size_t offset : {size_t{0}, size_t{3}}) {
      if (offset + n > data.size()) continue;
      ASSERT_EQ(Crc32c(data.data() + offset, n), ReferenceCrc32c(data.data() + offset, n, 0))
          << "length " << n << " offset " << offset;
    }
  }
}

TEST(Crc32cTest, ContinuingEqualsOneGo) {
  const std::vector<uint8_t> data = test::RandomBytes(100000, 12);
  const uint32_t whole = Crc32c(data.data(), data.size());
  EXPECT_EQ(whole, ReferenceCrc32c(data.data(), data.size(), 0));
  for (size_t cut : {size_t{1}, size_t{255}, size_t{8193}, size_t{24576}, size_t{50001}, size_t{99999}}) {
    const uint32_t first = Crc32c(data.data(), cut);
    EXPECT_EQ(Crc32c(data.data() + cut, data.size() - cut, first), whole) << cut;
  }
}

}  // namespace
}  // namespace dedupv1

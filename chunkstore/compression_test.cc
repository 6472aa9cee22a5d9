#include "chunkstore/compression.h"

#include <gtest/gtest.h>

#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

std::string CompressibleText(size_t n) {
  std::string s;
  while (s.size() < n) s += "dedupv1 stores each chunk once; ";
  s.resize(n);
  return s;
}

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

class CompressionRoundTrip : public ::testing::TestWithParam<Compression> {};

TEST_P(CompressionRoundTrip, CompressibleDataIsKeptAndRestored) {
  const std::string raw = CompressibleText(8192);
  std::string packed;
  ASSERT_TRUE(Compress(GetParam(), Bytes(raw), raw.size(), &packed));
  EXPECT_LT(packed.size(), raw.size());
  std::string back;
  ASSERT_TRUE(Decompress(GetParam(), Bytes(packed), packed.size(), raw.size(), &back).ok());
  EXPECT_EQ(back, raw);
}

TEST_P(CompressionRoundTrip, RandomDataIsNotKept) {
  std::vector<uint8_t> raw = test::RandomBytes(8192, 7);
  std::string packed;
  EXPECT_FALSE(Compress(GetParam(), raw.data(), raw.size(), &packed));
}

TEST_P(CompressionRoundTrip, GarbageOrWrongSizeIsCorruption) {
  const std::string raw = CompressibleText(4096);
  std::string packed;
  ASSERT_TRUE(Compress(GetParam(), Bytes(raw), raw.size(), &packed));
  std::string back;
  EXPECT_TRUE(Decompress(GetParam(), Bytes(packed), packed.size(), raw.size() + 1, &back)
                  .IsCorruption());
  std::string garbage = packed;
  for (size_t i = 0; i < garbage.size(); i += 3) garbage[i] ^= 0x5a;
  EXPECT_TRUE(Decompress(GetParam(), Bytes(garbage), garbage.size(), raw.size(), &back)
                  .IsCorruption());
}

INSTANTIATE_TEST_SUITE_P(Types, CompressionRoundTrip,
                         ::testing::Values(Compression::kZlib, Compression::kBzip2));

TEST(CompressionTest, NoneNeverKeepsAndCopiesOnDecompress) {
  const std::string raw = CompressibleText(1000);
  std::string packed;
  EXPECT_FALSE(Compress(Compression::kNone, Bytes(raw), raw.size(), &packed));
  std::string back;
  ASSERT_TRUE(Decompress(Compression::kNone, Bytes(raw), raw.size(), raw.size(), &back).ok());
  EXPECT_EQ(back, raw);
  EXPECT_TRUE(Decompress(Compression::kNone, Bytes(raw), raw.size(), 999, &back).IsCorruption());
}

TEST(CompressionTest, TinyInputIsNotKept) {
  const uint8_t one = 'a';
  std::string packed;
  EXPECT_FALSE(Compress(Compression::kZlib, &one, 1, &packed));
  EXPECT_FALSE(Compress(Compression::kBzip2, &one, 1, &packed));
  EXPECT_FALSE(Compress(Compression::kZlib, &one, 0, &packed));
}

// Found by chunkstore/container_fuzz.cc: an item whose checksums hold but
// whose raw size says 4 GiB made every read of it allocate and zero 4 GiB.
TEST(CompressionTest, ARawSizeBeyondTheLargestChunkIsCorruptionNotAnAllocation) {
  std::string raw(kMaxCompressedRawSize, 'a');
  std::string packed;
  ASSERT_TRUE(Compress(Compression::kZlib, Bytes(raw), raw.size(), &packed));
  std::string back;
  ASSERT_TRUE(Decompress(Compression::kZlib, Bytes(packed), packed.size(), raw.size(), &back).ok());
  EXPECT_EQ(back, raw);
  for (Compression type : {Compression::kZlib, Compression::kBzip2}) {
    Status s = Decompress(type, Bytes(packed), packed.size(), 0xffffffffu, &back);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.ToString().find("4294967295 raw bytes"), std::string::npos) << s.ToString();
  }
  // A longer chunk than that is kept raw, so what is written stays readable.
  raw.push_back('a');
  EXPECT_FALSE(Compress(Compression::kZlib, Bytes(raw), raw.size(), &packed));
  EXPECT_FALSE(Compress(Compression::kBzip2, Bytes(raw), raw.size(), &packed));
}

TEST(CompressionTest, ParseNames) {
  Compression c;
  ASSERT_TRUE(ParseCompression("none", &c).ok());
  EXPECT_EQ(c, Compression::kNone);
  ASSERT_TRUE(ParseCompression("zlib", &c).ok());
  EXPECT_EQ(c, Compression::kZlib);
  ASSERT_TRUE(ParseCompression("bzip2", &c).ok());
  EXPECT_EQ(c, Compression::kBzip2);
  EXPECT_TRUE(ParseCompression("lz4", &c).IsInvalidArgument());
  EXPECT_STREQ(CompressionName(Compression::kBzip2), "bzip2");
  EXPECT_TRUE(IsValidCompression(2));
  EXPECT_FALSE(IsValidCompression(3));
}

}  // namespace
}  // namespace dedupv1

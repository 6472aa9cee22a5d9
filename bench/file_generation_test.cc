#include "bench/file_generation.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "core/base/testutil.h"

namespace dedupv1 {
namespace bench {
namespace {

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

TEST(FileGenerationTest, ReadsTheFileThenZerosUpToAWholeBlock) {
  test::TempDir dir;
  const std::vector<uint8_t> bytes = test::RandomBytes(5000, 7);
  WriteFile(dir.Sub("gen1.tar"), bytes);
  std::unique_ptr<FileGeneration> gen;
  ASSERT_TRUE(FileGeneration::Open(dir.Sub("gen1.tar"), &gen).ok());
  EXPECT_EQ(gen->file_bytes(), 5000u);
  EXPECT_EQ(gen->size(), 8192u);

  std::vector<uint8_t> out(gen->size(), 0xAA);
  gen->Read(0, out.size(), out.data());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), out.begin()));
  for (size_t i = bytes.size(); i < out.size(); i++) ASSERT_EQ(out[i], 0) << i;

  // A piece across the file's end, and one wholly in the padding.
  std::vector<uint8_t> piece(200, 0xAA);
  gen->Read(4900, piece.size(), piece.data());
  EXPECT_TRUE(std::equal(bytes.begin() + 4900, bytes.end(), piece.begin()));
  for (size_t i = 100; i < piece.size(); i++) ASSERT_EQ(piece[i], 0) << i;
  gen->Read(6000, piece.size(), piece.data());
  for (uint8_t b : piece) ASSERT_EQ(b, 0);
}

TEST(FileGenerationTest, AWholeBlockFileIsNotPadded) {
  test::TempDir dir;
  WriteFile(dir.Sub("g"), test::RandomBytes(8192, 1));
  std::unique_ptr<FileGeneration> gen;
  ASSERT_TRUE(FileGeneration::Open(dir.Sub("g"), &gen).ok());
  EXPECT_EQ(gen->size(), 8192u);
}

TEST(FileGenerationTest, MissingAndEmptyFilesAreRefusedByName) {
  test::TempDir dir;
  std::unique_ptr<FileGeneration> gen;
  Status s = FileGeneration::Open(dir.Sub("missing.tar"), &gen);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find("missing.tar"), std::string::npos) << s.ToString();
  WriteFile(dir.Sub("empty.tar"), {});
  s = FileGeneration::Open(dir.Sub("empty.tar"), &gen);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("empty.tar"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace bench
}  // namespace dedupv1

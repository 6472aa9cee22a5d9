#include "chunkstore/dead_chunk_file.h"

#include <gtest/gtest.h>

#include "core/base/fault_injection_env.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

constexpr size_t kFpSize = 20;

Fingerprint Fp(uint8_t seed) {
  uint8_t bytes[kFpSize];
  for (size_t i = 0; i < kFpSize; i++) bytes[i] = static_cast<uint8_t>(seed * 31 + i);
  return Fingerprint(bytes, kFpSize);
}

std::string Path(const test::TempDir& dir) { return JoinPath(dir.path(), "dead-chunks"); }

TEST(DeadChunkFileTest, MissingFileIsEmpty) {
  test::TempDir dir;
  DeadChunkFile f(Env::Default(), Path(dir), kFpSize);
  DeadChunkFile::Marks marks;
  bool intact = false;
  ASSERT_TRUE(f.Read(&marks, &intact).ok());
  EXPECT_TRUE(marks.empty());
  EXPECT_TRUE(intact);
  EXPECT_EQ(f.size(), 0u);
}

TEST(DeadChunkFileTest, AppendsOfOneContainerAddUp) {
  test::TempDir dir;
  {
    DeadChunkFile f(Env::Default(), Path(dir), kFpSize);
    DeadChunkFile::Marks marks;
    bool intact;
    ASSERT_TRUE(f.Read(&marks, &intact).ok());
    ASSERT_TRUE(f.Append({{7, {Fp(1), Fp(2)}}, {9, {Fp(3)}}}).ok());
    ASSERT_TRUE(f.Append({{7, {Fp(4)}}}).ok());
  }
  DeadChunkFile f(Env::Default(), Path(dir), kFpSize);
  DeadChunkFile::Marks marks;
  bool intact = false;
  ASSERT_TRUE(f.Read(&marks, &intact).ok());
  EXPECT_TRUE(intact);
  const DeadChunkFile::Marks want = {{7, {Fp(1), Fp(2), Fp(4)}}, {9, {Fp(3)}}};
  EXPECT_EQ(marks, want);
  uint64_t size = 0;
  ASSERT_TRUE(Env::Default()->GetFileSize(Path(dir), &size).ok());
  EXPECT_EQ(f.size(), size);
}

// A record cut short (a crash during an append) or with a flipped bit ends
// the read: the marks before it are kept, none after it is trusted.
TEST(DeadChunkFileTest, TornOrCorruptRecordEndsTheRead) {
  for (const bool torn : {true, false}) {
    SCOPED_TRACE(torn ? "torn" : "corrupt");
    test::TempDir dir;
    DeadChunkFile f(Env::Default(), Path(dir), kFpSize);
    ASSERT_TRUE(f.Append({{3, {Fp(1)}}}).ok());
    const uint64_t first = f.size();
    ASSERT_TRUE(f.Append({{4, {Fp(2), Fp(3)}}}).ok());
    ASSERT_TRUE(f.Append({{5, {Fp(4)}}}).ok());
    std::string data;
    ASSERT_TRUE(ReadFileToString(Env::Default(), Path(dir), &data).ok());
    if (torn) {
      data.resize(first + 30);  // into the second record's fingerprints
    } else {
      data[first + 8 + 12 + 5] ^= 0x10;  // a fingerprint byte of the second record
    }
    ASSERT_TRUE(WriteFileAtomically(Env::Default(), Path(dir), data).ok());
    DeadChunkFile::Marks marks;
    bool intact = true;
    ASSERT_TRUE(f.Read(&marks, &intact).ok());
    EXPECT_FALSE(intact);
    const DeadChunkFile::Marks want = {{3, {Fp(1)}}};
    EXPECT_EQ(marks, want);
    EXPECT_EQ(f.size(), first);
    // After a rewrite the file reads back intact.
    ASSERT_TRUE(f.Rewrite(marks).ok());
    ASSERT_TRUE(f.Read(&marks, &intact).ok());
    EXPECT_TRUE(intact);
    EXPECT_EQ(marks, want);
  }
}

TEST(DeadChunkFileTest, RewriteReplacesEverything) {
  test::TempDir dir;
  DeadChunkFile f(Env::Default(), Path(dir), kFpSize);
  ASSERT_TRUE(f.Append({{1, {Fp(1)}}, {2, {Fp(2)}}}).ok());
  ASSERT_TRUE(f.Rewrite({{2, {Fp(2)}}, {8, {}}}).ok());
  DeadChunkFile::Marks marks;
  bool intact = false;
  ASSERT_TRUE(f.Read(&marks, &intact).ok());
  EXPECT_TRUE(intact);
  const DeadChunkFile::Marks want = {{2, {Fp(2)}}};  // an empty list writes no record
  EXPECT_EQ(marks, want);
}

TEST(DeadChunkFileTest, FailedAppendIsAnErrorNamingTheFile) {
  test::TempDir dir;
  FaultInjectionEnv fenv(Env::Default());
  DeadChunkFile f(&fenv, Path(dir), kFpSize);
  ASSERT_TRUE(f.Append({{1, {Fp(1)}}}).ok());
  const uint64_t before = f.size();
  fenv.AddRule({FaultInjectionEnv::Op::kWrite, "dead-chunks", FaultInjectionEnv::Fault::kENOSPC});
  Status s = f.Append({{2, {Fp(2)}}});
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_NE(s.ToString().find(Path(dir)), std::string::npos) << s.ToString();
  EXPECT_EQ(f.size(), before);
}

}  // namespace
}  // namespace dedupv1

#include "core/base/env.h"

#include <gtest/gtest.h>

#include "core/base/coding.h"
#include "core/base/fault_injection_env.h"
#include "core/base/fingerprint.h"
#include "core/base/testutil.h"

namespace dedupv1 {

TEST(EnvTest, WriteReadSizeAndShortRead) {
  test::TempDir dir;
  Env* env = Env::Default();
  std::unique_ptr<File> f;
  ASSERT_TRUE(env->OpenFile(dir.Sub("a"), OpenMode::kCreate, &f).ok());
  ASSERT_TRUE(f->Write(10, "hello", 5).ok());
  uint64_t size;
  ASSERT_TRUE(f->Size(&size).ok());
  EXPECT_EQ(size, 15u);
  char buf[5];
  ASSERT_TRUE(f->Read(10, 5, buf).ok());
  EXPECT_EQ(std::string(buf, 5), "hello");
  Status s = f->Read(12, 5, buf);
  EXPECT_TRUE(s.IsIOError());
  EXPECT_NE(s.message().find("short read"), std::string::npos);
}

TEST(EnvTest, AtomicWriteAndLock) {
  test::TempDir dir;
  Env* env = Env::Default();
  ASSERT_TRUE(WriteFileAtomically(env, dir.Sub("f"), "content").ok());
  std::string data;
  ASSERT_TRUE(ReadFileToString(env, dir.Sub("f"), &data).ok());
  EXPECT_EQ(data, "content");
  std::unique_ptr<FileLock> l1, l2;
  ASSERT_TRUE(env->LockFile(dir.Sub("LOCK"), &l1).ok());
  EXPECT_TRUE(env->LockFile(dir.Sub("LOCK"), &l2).IsBusy());
  l1.reset();
  EXPECT_TRUE(env->LockFile(dir.Sub("LOCK"), &l2).ok());
}

TEST(EnvTest, FaultInjectionFiresAfterSkipAndTearsWrites) {
  test::TempDir dir;
  FaultInjectionEnv env(Env::Default());
  env.AddRule({FaultInjectionEnv::Op::kWrite, "target", FaultInjectionEnv::Fault::kENOSPC, 1, 1, 0});
  std::unique_ptr<File> f;
  ASSERT_TRUE(env.OpenFile(dir.Sub("target"), OpenMode::kCreate, &f).ok());
  EXPECT_TRUE(f->Write(0, "abcd", 4).ok());
  EXPECT_TRUE(f->Write(0, "efgh", 4).IsNoSpace());
  EXPECT_TRUE(f->Write(0, "ijkl", 4).ok());
  EXPECT_EQ(env.faults_fired(), 1);

  env.AddRule({FaultInjectionEnv::Op::kWrite, "target", FaultInjectionEnv::Fault::kTorn, 0, 1, 2});
  EXPECT_TRUE(f->Write(0, "wxyz", 4).IsIOError());
  char buf[4];
  ASSERT_TRUE(f->Read(0, 4, buf).ok());
  EXPECT_EQ(std::string(buf, 4), "wxkl");  // only the first two bytes landed
}

TEST(FingerprintTest, Sha1AndSha256KnownValues) {
  Fingerprint fp;
  ComputeFingerprint(FingerprintType::kSha1, reinterpret_cast<const uint8_t*>("abc"), 3, &fp);
  EXPECT_EQ(fp.ToHex(), "a9993e364706816aba3e25717850c26c9cd0d89d");
  ComputeFingerprint(FingerprintType::kSha256, reinterpret_cast<const uint8_t*>("abc"), 3, &fp);
  EXPECT_EQ(fp.ToHex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Fingerprint back;
  ASSERT_TRUE(Fingerprint::FromHex(fp.ToHex(), &back).ok());
  EXPECT_EQ(back, fp);
  EXPECT_TRUE(Fingerprint::Zero(FingerprintType::kSha1).IsZero());
  EXPECT_FALSE(fp.IsZero());
}

TEST(CodingTest, Crc32cKnownValue) {
  // RFC 3720 test vector: 32 bytes of zeros.
  uint8_t zeros[32] = {};
  EXPECT_EQ(Crc32c(zeros, 32), 0x8A9136AAu);
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  // Incremental equals one-shot.
  EXPECT_EQ(Crc32c("6789", 4, Crc32c("12345", 5)), 0xE3069283u);
}

}  // namespace dedupv1

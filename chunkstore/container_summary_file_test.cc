#include "chunkstore/container_summary_file.h"

#include <gtest/gtest.h>

#include "core/base/fault_injection_env.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

ContainerSummary Summary(uint64_t n) { return {n, n * 8000, n * 8000 + 900}; }

bool Same(const ContainerSummary& a, const ContainerSummary& b) {
  return a.chunks == b.chunks && a.footprint_bytes == b.footprint_bytes && a.serialized_bytes == b.serialized_bytes;
}

std::string Path(const test::TempDir& dir) { return JoinPath(dir.path(), kContainerSummaryFileName); }

TEST(ContainerSummaryFileTest, AppendsReadBackAndALaterRecordWins) {
  test::TempDir dir;
  {
    ContainerSummaryFile f(Env::Default(), Path(dir));
    ContainerSummaryFile::Summaries s;
    uint64_t records = 0;
    uint64_t skipped = 1;
    ASSERT_TRUE(f.Read(&s, &records, &skipped).ok());
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(skipped, 0u);
    ASSERT_TRUE(f.Append({{5, Summary(3)}, {9, Summary(400)}}).ok());
    ASSERT_TRUE(f.Append({{5, Summary(4)}}).ok());
    EXPECT_EQ(f.size(), 3 * ContainerSummaryFile::kRecordSize);
  }
  ContainerSummaryFile f(Env::Default(), Path(dir));
  ContainerSummaryFile::Summaries s;
  uint64_t records = 0;
  uint64_t skipped = 1;
  ASSERT_TRUE(f.Read(&s, &records, &skipped).ok());
  EXPECT_EQ(skipped, 0u);
  EXPECT_EQ(records, 3u);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(Same(s[5], Summary(4)));
  EXPECT_TRUE(Same(s[9], Summary(400)));
}

// Unsynced appends may leave a record cut short or zeroed after a crash: the
// record is skipped, the others are kept, and the next append overwrites a
// cut-short tail.
TEST(ContainerSummaryFileTest, DamagedRecordsAreSkippedOthersKept) {
  test::TempDir dir;
  ContainerSummaryFile f(Env::Default(), Path(dir));
  ASSERT_TRUE(f.Append({{1, Summary(1)}, {2, Summary(2)}, {3, Summary(3)}}).ok());
  std::string data;
  ASSERT_TRUE(ReadFileToString(Env::Default(), Path(dir), &data).ok());
  std::fill(data.begin() + ContainerSummaryFile::kRecordSize, data.begin() + 2 * ContainerSummaryFile::kRecordSize,
            '\0');                    // record 2 zeroed
  data.resize(data.size() - 5);       // record 3 cut short
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), Path(dir), data).ok());
  ContainerSummaryFile::Summaries s;
  uint64_t records = 0;
  uint64_t skipped = 0;
  ASSERT_TRUE(f.Read(&s, &records, &skipped).ok());
  EXPECT_EQ(skipped, 2u);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(Same(s[1], Summary(1)));
  ASSERT_TRUE(f.Append({{4, Summary(4)}}).ok());
  ASSERT_TRUE(f.Read(&s, &records, &skipped).ok());
  EXPECT_EQ(skipped, 1u);  // the zeroed one
  EXPECT_EQ(s.size(), 2u);
  EXPECT_TRUE(Same(s[4], Summary(4)));
  ASSERT_TRUE(f.Rewrite(s).ok());
  ASSERT_TRUE(f.Read(&s, &records, &skipped).ok());
  EXPECT_EQ(skipped, 0u);
  EXPECT_EQ(s.size(), 2u);
}

TEST(ContainerSummaryFileTest, FailedAppendIsAnErrorAndTheNextOneWorks) {
  test::TempDir dir;
  FaultInjectionEnv fenv(Env::Default());
  ContainerSummaryFile f(&fenv, Path(dir));
  ASSERT_TRUE(f.Append({{1, Summary(1)}}).ok());
  fenv.AddRule({FaultInjectionEnv::Op::kWrite, kContainerSummaryFileName, FaultInjectionEnv::Fault::kTorn, 0, 1, 7});
  Status s = f.Append({{2, Summary(2)}});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find(Path(dir)), std::string::npos) << s.ToString();
  ASSERT_TRUE(f.Append({{3, Summary(3)}}).ok());
  ContainerSummaryFile::Summaries read;
  uint64_t records = 0;
  uint64_t skipped = 0;
  ASSERT_TRUE(f.Read(&read, &records, &skipped).ok());
  EXPECT_EQ(skipped, 0u);
  EXPECT_EQ(read.size(), 2u);
  EXPECT_EQ(read.count(2), 0u);
}

}  // namespace
}  // namespace dedupv1

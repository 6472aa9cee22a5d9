// ContainerCatalog's contract, run against every storage backend: the same
// assertions hold for the local files and for memory. Local-only behaviour
// (file formats, damage naming the file) is at the end.
#include "chunkstore/container_catalog.h"

#include <gtest/gtest.h>

#include "chunkstore/container.h"
#include "chunkstore/local_container_catalog.h"
#include "chunkstore/storage_backend_testutil.h"
#include "core/base/crc_text.h"

namespace dedupv1 {
namespace {

Fingerprint Fp(uint8_t seed) {
  uint8_t bytes[20];
  for (int i = 0; i < 20; i++) bytes[i] = static_cast<uint8_t>(seed + i);
  return Fingerprint(bytes, 20);
}

ContainerSummary Summary(uint64_t chunks, uint64_t dead) {
  ContainerSummary s;
  s.chunks = chunks;
  s.footprint_bytes = chunks * 8192;
  s.serialized_bytes = chunks * 8300;
  s.dead_chunks = dead;
  return s;
}

bool Same(const ContainerSummary& a, const ContainerSummary& b) {
  return a.chunks == b.chunks && a.footprint_bytes == b.footprint_bytes &&
         a.serialized_bytes == b.serialized_bytes && a.dead_chunks == b.dead_chunks;
}

class ContainerCatalogTest : public test::StorageBackendTest {
 protected:
  ContainerCatalog* catalog() { return storage_.catalog.get(); }
};

TEST_P(ContainerCatalogTest, IdMarkIsAbsentThenWhatWasWritten) {
  Reopen();
  EXPECT_FALSE(catalog()->Exists(CatalogPart::kIdMark));
  ContainerId mark = 77;
  bool found = true;
  ASSERT_TRUE(catalog()->ReadIdMark(&mark, &found).ok());
  EXPECT_FALSE(found);
  EXPECT_EQ(mark, 77u);
  ASSERT_TRUE(catalog()->WriteIdMark(1025).ok());
  ASSERT_TRUE(catalog()->WriteIdMark(2049).ok());
  Reopen();
  EXPECT_TRUE(catalog()->Exists(CatalogPart::kIdMark));
  ASSERT_TRUE(catalog()->ReadIdMark(&mark, &found).ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(mark, 2049u);
}

TEST_P(ContainerCatalogTest, MergeRecordsAreReplacedWhole) {
  Reopen();
  EXPECT_FALSE(catalog()->Exists(CatalogPart::kMergeRecords));
  std::vector<MergeRecord> records = {{9, {}}};
  ASSERT_TRUE(catalog()->ReadMergeRecords(&records).ok());
  EXPECT_TRUE(records.empty());
  ASSERT_TRUE(catalog()->WriteMergeRecords({}).ok());
  EXPECT_TRUE(catalog()->Exists(CatalogPart::kMergeRecords)) << "written empty still exists";
  ASSERT_TRUE(catalog()->WriteMergeRecords({{10, {3, 4}}, {12, {5, 6, 7}}}).ok());
  Reopen();
  ASSERT_TRUE(catalog()->ReadMergeRecords(&records).ok());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].target, 10u);
  EXPECT_EQ(records[0].sources, (std::vector<ContainerId>{3, 4}));
  EXPECT_EQ(records[1].target, 12u);
  EXPECT_EQ(records[1].sources, (std::vector<ContainerId>{5, 6, 7}));
  ASSERT_TRUE(catalog()->WriteMergeRecords({{12, {5}}}).ok());
  ASSERT_TRUE(catalog()->ReadMergeRecords(&records).ok());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].sources, (std::vector<ContainerId>{5}));
}

TEST_P(ContainerCatalogTest, DeadMarksAppendRewriteAndDelete) {
  Reopen();
  EXPECT_FALSE(catalog()->Exists(CatalogPart::kDeadMarks));
  EXPECT_EQ(catalog()->DeadMarkSize(), 20u);
  DeadMarks marks;
  bool intact = false;
  ASSERT_TRUE(catalog()->ReadDeadMarks(&marks, &intact).ok());
  EXPECT_TRUE(marks.empty());
  EXPECT_TRUE(intact);

  ASSERT_TRUE(catalog()->AppendDeadMarks({{7, {Fp(1), Fp(2)}}, {8, {}}}).ok());
  EXPECT_EQ(catalog()->DeadMarkBytes(), 20u + 2 * 20u) << "one record: 20 bytes besides its marks";
  ASSERT_TRUE(catalog()->AppendDeadMarks({{7, {Fp(4)}}, {9, {Fp(3)}}}).ok());
  EXPECT_EQ(catalog()->DeadMarkBytes(), 3 * 20u + 4 * 20u);
  Reopen();
  ASSERT_TRUE(catalog()->ReadDeadMarks(&marks, &intact).ok());
  EXPECT_TRUE(intact);
  const DeadMarks want = {{7, {Fp(1), Fp(2), Fp(4)}}, {9, {Fp(3)}}};  // an empty list writes no record
  EXPECT_EQ(marks, want);
  EXPECT_EQ(catalog()->DeadMarkBytes(), 3 * 20u + 4 * 20u);

  ASSERT_TRUE(catalog()->RewriteDeadMarks({{9, {Fp(3)}}}).ok());
  EXPECT_EQ(catalog()->DeadMarkBytes(), 20u + 20u);
  ASSERT_TRUE(catalog()->ReadDeadMarks(&marks, &intact).ok());
  EXPECT_EQ(marks, (DeadMarks{{9, {Fp(3)}}}));

  ASSERT_TRUE(catalog()->DeleteDeadMarks().ok());
  EXPECT_FALSE(catalog()->Exists(CatalogPart::kDeadMarks));
  ASSERT_TRUE(catalog()->DeleteDeadMarks().ok()) << "deleting what is gone is fine";
  ASSERT_TRUE(catalog()->ReadDeadMarks(&marks, &intact).ok());
  EXPECT_TRUE(marks.empty());
}

TEST_P(ContainerCatalogTest, SummariesLaterRecordWinsAndRewriteReplaces) {
  Reopen();
  EXPECT_FALSE(catalog()->Exists(CatalogPart::kSummaries));
  ASSERT_TRUE(catalog()->AppendSummaries({{1, Summary(10, 0)}, {2, Summary(20, 0)}}).ok());
  ContainerSummary withdrawn;
  withdrawn.dead_chunks = kSummaryWithdrawn;
  ASSERT_TRUE(catalog()->AppendSummaries({{1, Summary(9, 1)}, {3, withdrawn}}).ok());
  Reopen();
  ContainerSummaryMap read;
  uint64_t records = 0, skipped = 9;
  ASSERT_TRUE(catalog()->ReadSummaries(&read, &records, &skipped).ok());
  EXPECT_EQ(records, 4u);
  EXPECT_EQ(skipped, 0u);
  ASSERT_EQ(read.size(), 3u);
  EXPECT_TRUE(Same(read[1], Summary(9, 1)));
  EXPECT_TRUE(Same(read[2], Summary(20, 0)));
  EXPECT_EQ(read[3].dead_chunks, kSummaryWithdrawn) << "a withdrawal is returned as it is";

  ASSERT_TRUE(catalog()->RewriteSummaries({{2, Summary(20, 0)}}).ok());
  ASSERT_TRUE(catalog()->AppendSummaries({{4, Summary(4, 0)}}).ok());
  ASSERT_TRUE(catalog()->ReadSummaries(&read, &records, &skipped).ok());
  EXPECT_EQ(records, 2u);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_TRUE(Same(read[2], Summary(20, 0)));
  EXPECT_TRUE(Same(read[4], Summary(4, 0)));
}

TEST_P(ContainerCatalogTest, CheckCompleteRequiresTheIdMarkAndTheMergeRecordsOnceNeeded) {
  Reopen();
  // Nothing stored, no ids handed out: nothing is required.
  EXPECT_TRUE(catalog()->CheckComplete(storage_.containers.get(), {}, false).ok());
  Status s = catalog()->CheckComplete(storage_.containers.get(), {}, /*ids_handed_out=*/true);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(catalog()->Where(CatalogPart::kIdMark) + " is missing"), std::string::npos)
      << s.ToString();

  // A merged container: its header counts the ids it answers to.
  Container merged(5, 64 << 10, FingerprintType::kSha1);
  ASSERT_TRUE(merged.SetAliases({2, 3}));
  std::string bytes;
  ASSERT_TRUE(merged.Serialize(&bytes).ok());
  ASSERT_TRUE(storage_.containers->Put(5, bytes).ok());
  ASSERT_TRUE(catalog()->WriteIdMark(1025).ok());
  s = catalog()->CheckComplete(storage_.containers.get(), {5}, false);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(catalog()->Where(CatalogPart::kMergeRecords) + " is missing"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("container 5 was merged"), std::string::npos) << s.ToString();

  ASSERT_TRUE(catalog()->WriteMergeRecords({{5, {2, 3}}}).ok());
  EXPECT_TRUE(catalog()->CheckComplete(storage_.containers.get(), {5}, true).ok());
}

INSTANTIATE_TEST_SUITE_P(Backends, ContainerCatalogTest, ::testing::ValuesIn(test::BackendsWithoutCluster()),
                         test::BackendName);

// ---- Local files: the formats of docs/formats.md, damage names the file ----

TEST(LocalContainerCatalogTest, PartsAreTheFilesBesideTheContainers) {
  test::TempDir dir;
  LocalContainerCatalog catalog(Env::Default(), dir.path(), 20);
  EXPECT_EQ(catalog.Where(CatalogPart::kIdMark), dir.Sub("container-id"));
  EXPECT_EQ(catalog.Where(CatalogPart::kMergeRecords), dir.Sub("container-aliases"));
  EXPECT_EQ(catalog.Where(CatalogPart::kDeadMarks), dir.Sub("dead-chunks"));
  EXPECT_EQ(catalog.Where(CatalogPart::kSummaries), dir.Sub("container-summaries"));

  ASSERT_TRUE(catalog.WriteIdMark(0x0102).ok());
  std::string text;
  ASSERT_TRUE(ReadFileToString(Env::Default(), dir.Sub("container-id"), &text).ok());
  EXPECT_EQ(text.size(), 12u);  // fixed64 mark, fixed32 CRC32C
  EXPECT_EQ(static_cast<uint8_t>(text[0]), 0x02);

  ASSERT_TRUE(catalog.WriteMergeRecords({{10, {3, 4}}}).ok());
  ASSERT_TRUE(ReadFileToString(Env::Default(), dir.Sub("container-aliases"), &text).ok());
  EXPECT_NE(text.find("\nmerge 10 3 4\ncrc "), std::string::npos) << text;
}

TEST(LocalContainerCatalogTest, DamagedIdMarkAndMergeRecordsNameTheFile) {
  test::TempDir dir;
  LocalContainerCatalog catalog(Env::Default(), dir.path(), 20);
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), dir.Sub("container-id"), "garbage").ok());
  ContainerId mark = 0;
  bool found = false;
  Status s = catalog.ReadIdMark(&mark, &found);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(dir.Sub("container-id")), std::string::npos) << s.ToString();

  ASSERT_TRUE(catalog.WriteMergeRecords({{10, {3, 4}}}).ok());
  std::string text;
  ASSERT_TRUE(ReadFileToString(Env::Default(), dir.Sub("container-aliases"), &text).ok());
  text[text.find("merge 10") + 6] = '7';  // the target, without fixing the crc line
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), dir.Sub("container-aliases"), text).ok());
  std::vector<MergeRecord> records;
  s = catalog.ReadMergeRecords(&records);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(dir.Sub("container-aliases")), std::string::npos) << s.ToString();
}

// A merge line whose crc holds but which says less than a merge (a bug's
// output, not damage) is refused naming the line, not half read: "merge x"
// was read as a merge into container 0, "merge 5 7x 8" as one of 7 alone.
TEST(LocalContainerCatalogTest, MergeLinesThatSayLessThanAMergeAreRefused) {
  test::TempDir dir;
  LocalContainerCatalog catalog(Env::Default(), dir.path(), 20);
  const std::string header = "# dedupv1 container aliases: merge <target> <sources...>\n";
  for (const char* line : {"merge x 3", "merge 5 7x 8", "merge 0 3", "merge 5", "merge 5  3", "merge -1 3",
                           "merge 99999999999999999999 3", "merge 5 3 ", "merg 5 3"}) {
    ASSERT_TRUE(WriteFileAtomically(Env::Default(), dir.Sub("container-aliases"),
                                    AppendCrcLine(header + line + "\n"))
                    .ok());
    std::vector<MergeRecord> records;
    Status s = catalog.ReadMergeRecords(&records);
    EXPECT_TRUE(s.IsCorruption()) << line << ": " << s.ToString();
    EXPECT_NE(s.message().find(dir.Sub("container-aliases") + ":2"), std::string::npos) << s.ToString();
  }
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), dir.Sub("container-aliases"),
                                  AppendCrcLine(header + "merge 18446744073709551615 3 4\n"))
                  .ok());
  std::vector<MergeRecord> records;
  ASSERT_TRUE(catalog.ReadMergeRecords(&records).ok());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].target, 18446744073709551615ull);
  EXPECT_EQ(records[0].sources, (std::vector<ContainerId>{3, 4}));
}

}  // namespace
}  // namespace dedupv1

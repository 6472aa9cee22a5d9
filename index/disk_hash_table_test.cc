#include "index/disk_hash_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "core/base/coding.h"
#include "core/base/env.h"
#include "core/base/fault_injection_env.h"
#include "core/base/fingerprint.h"
#include "core/base/testutil.h"
#include "index/chunk_table_testutil.h"

namespace dedupv1 {
namespace {

Fingerprint FpFromSeed(uint64_t seed) { return test::SeedFingerprint(seed); }

// A 20-byte fingerprint whose home bucket is |bucket| (of |buckets|); |k|
// makes it unique.
Fingerprint FpInBucket(uint64_t bucket, uint64_t k, uint64_t buckets) {
  Fingerprint fp;
  fp.size = 20;
  EncodeFixed64(fp.bytes, bucket + (k + 1) * buckets);
  EncodeFixed64(fp.bytes + 8, k * 7919 + 13);
  return fp;
}

using test::Entry;
using test::Erase;
using test::Put;

// Puts of the fingerprints of seeds [from, to), seed i with Entry(i + 1),
// appended to |ops| and noted in |want|.
void PutSeeds(uint64_t from, uint64_t to, std::map<uint64_t, ChunkIndexEntry>* want,
              std::vector<DiskHashTable::Op>* ops) {
  for (uint64_t i = from; i < to; i++) {
    (*want)[i] = Entry(i + 1);
    ops->push_back(Put(FpFromSeed(i), (*want)[i]));
  }
}

class DiskHashTableTest : public ::testing::Test {
 protected:
  DiskHashTableOptions Options(uint64_t size = 1 << 20, size_t page = 4096) {
    DiskHashTableOptions o;
    o.path = dir_.Sub("table");
    o.size_bytes = size;
    o.page_size = page;
    return o;
  }

  std::unique_ptr<DiskHashTable> MustOpen(const DiskHashTableOptions& o, Env* env = Env::Default()) {
    std::unique_ptr<DiskHashTable> t;
    Status s = DiskHashTable::Open(o, env, &t);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return t;
  }

  void ExpectEntry(DiskHashTable* t, const Fingerprint& fp, const ChunkIndexEntry& want) {
    ChunkIndexEntry got;
    Status s = t->Get(fp, &got);
    ASSERT_TRUE(s.ok()) << fp.ToHex() << ": " << s.ToString();
    EXPECT_EQ(got, want) << fp.ToHex();
  }

  void CopyFile(const std::string& from, const std::string& to) {
    std::string data;
    ASSERT_TRUE(ReadFileToString(Env::Default(), from, &data).ok());
    std::unique_ptr<File> f;
    ASSERT_TRUE(Env::Default()->OpenFile(to, OpenMode::kTruncate, &f).ok());
    ASSERT_TRUE(f->Write(0, data.data(), data.size()).ok());
  }

  test::TempDir dir_;
};

TEST_F(DiskHashTableTest, CreateReopenKeepsEntries) {
  auto o = Options();
  std::map<uint64_t, ChunkIndexEntry> want;
  {
    auto t = MustOpen(o);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->bucket_count(), (1u << 20) / 4096 - 1);
    EXPECT_EQ(t->entry_count(), 0u);
    std::vector<DiskHashTable::Op> ops;
    for (uint64_t i = 0; i < 200; i++) {
      want[i] = Entry(i + 1, static_cast<uint32_t>(i % 5));
      ops.push_back(Put(FpFromSeed(i), want[i]));
    }
    ASSERT_TRUE(t->Apply(ops).ok());
    EXPECT_EQ(t->entry_count(), 200u);
  }
  auto t = MustOpen(o);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->entry_count(), 200u);
  for (auto& [i, e] : want) ExpectEntry(t.get(), FpFromSeed(i), e);
  ChunkIndexEntry e;
  EXPECT_TRUE(t->Get(FpFromSeed(1000), &e).IsNotFound());
  uint64_t pages = 0;
  Status s = t->Verify(&pages);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(pages, t->bucket_count() + 1);
}

// With a page cache (iCache, index/table_page_cache.h): lookups of pages
// read before are hits, and every batch's new page images replace the
// cached ones, so no lookup ever answers from an older page; a table of its
// own (another id) shares the cache without mixing pages; a cache too small
// for the table evicts and counts ghost hits.
TEST_F(DiskHashTableTest, PageCacheAnswersAsTheFileDoesAcrossBatches) {
  auto o = Options();
  o.page_cache = std::make_shared<TablePageCache>(1 << 20, 4096);
  auto t = MustOpen(o);
  ASSERT_TRUE(t);
  std::map<uint64_t, ChunkIndexEntry> want;
  std::vector<DiskHashTable::Op> ops;
  PutSeeds(0, 300, &want, &ops);
  ASSERT_TRUE(t->Apply(ops).ok());
  for (auto& [i, e] : want) ExpectEntry(t.get(), FpFromSeed(i), e);
  const TablePageCache::Counters first = o.page_cache->counters();
  EXPECT_GT(first.hits, 0u) << "pages read once answer the lookups of their other entries";
  // Change every entry, erase some, many times: each Get must see the last batch.
  for (int round = 0; round < 5; round++) {
    ops.clear();
    for (uint64_t i = 0; i < 300; i++) {
      if ((i + round) % 7 == 0) {
        ops.push_back(Erase(FpFromSeed(i)));
        want.erase(i);
      } else {
        want[i] = Entry(1000 * (round + 1) + i, static_cast<uint32_t>(round));
        ops.push_back(Put(FpFromSeed(i), want[i]));
      }
    }
    ASSERT_TRUE(t->Apply(ops).ok());
    for (uint64_t i = 0; i < 300; i++) {
      ChunkIndexEntry got;
      if (want.count(i) > 0) {
        ExpectEntry(t.get(), FpFromSeed(i), want[i]);
      } else {
        EXPECT_TRUE(t->Get(FpFromSeed(i), &got).IsNotFound()) << "round " << round << " seed " << i;
      }
    }
  }
  // The file says the same (reopened without the cache).
  t.reset();
  auto plain = MustOpen(Options());
  for (auto& [i, e] : want) ExpectEntry(plain.get(), FpFromSeed(i), e);
  plain.reset();

  // Another table in the same cache: its pages are its own.
  auto other_options = Options();
  other_options.path = dir_.Sub("other");
  other_options.page_cache = o.page_cache;
  auto other = MustOpen(other_options);
  ChunkIndexEntry got;
  for (uint64_t i = 0; i < 300; i++) EXPECT_TRUE(other->Get(FpFromSeed(i), &got).IsNotFound());

  // A cache of 8 pages for a table of 255: evictions, and ghost hits on pages read again.
  o.page_cache->SetCapacity(8 * 4096);
  auto again = MustOpen(o);
  for (int pass = 0; pass < 2; pass++) {
    for (auto& [i, e] : want) ExpectEntry(again.get(), FpFromSeed(i), e);
  }
  const TablePageCache::Counters c = o.page_cache->counters();
  EXPECT_LE(c.used_bytes, 8u * 4096);
  EXPECT_GT(c.ghost_hits, 0u);
}

TEST_F(DiskHashTableTest, RefusesOptionMismatch) {
  auto o = Options();
  {
    auto t = MustOpen(o);
    ASSERT_TRUE(t->Apply({Put(FpFromSeed(1), Entry(7))}).ok());
  }
  std::unique_ptr<DiskHashTable> t;
  auto bad = o;
  bad.page_size = 2048;
  Status s = DiskHashTable::Open(bad, Env::Default(), &t);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("was created with page size 4096, config says 2048"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find(o.path), std::string::npos);

  bad = o;
  bad.key_size = 32;
  s = DiskHashTable::Open(bad, Env::Default(), &t);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("key size 20, config says 32"), std::string::npos) << s.ToString();

  bad = o;
  bad.size_bytes = 2 << 20;
  s = DiskHashTable::Open(bad, Env::Default(), &t);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("size 1048576, config says 2097152"), std::string::npos)
      << s.ToString();

  bad = o;
  bad.max_probe_pages = 4;
  s = DiskHashTable::Open(bad, Env::Default(), &t);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();

  // The refused opens changed nothing.
  t = MustOpen(o);
  ExpectEntry(t.get(), FpFromSeed(1), Entry(7));
}

TEST_F(DiskHashTableTest, RejectsBadOptions) {
  std::unique_ptr<DiskHashTable> t;
  auto o = Options();
  o.page_size = 1000;
  EXPECT_TRUE(DiskHashTable::Open(o, Env::Default(), &t).IsInvalidArgument());
  o = Options();
  o.page_size = 256;
  EXPECT_TRUE(DiskHashTable::Open(o, Env::Default(), &t).IsInvalidArgument());
  o = Options(4096, 4096);  // no room for a bucket
  EXPECT_TRUE(DiskHashTable::Open(o, Env::Default(), &t).IsInvalidArgument());
  o = Options();
  o.max_fill = 1.5;
  EXPECT_TRUE(DiskHashTable::Open(o, Env::Default(), &t).IsInvalidArgument());
  EXPECT_FALSE(Env::Default()->FileExists(o.path));
}

TEST_F(DiskHashTableTest, WrongKeySizeIsInvalidArgument) {
  auto t = MustOpen(Options());
  Fingerprint fp = FpFromSeed(1);
  fp.size = 32;
  ChunkIndexEntry e;
  EXPECT_TRUE(t->Get(fp, &e).IsInvalidArgument());
  EXPECT_TRUE(t->Apply({Put(fp, Entry(1))}).IsInvalidArgument());
}

TEST_F(DiskHashTableTest, FillUntilNoSpaceThenReopen) {
  auto o = Options(512 * 33, 512);  // 32 buckets of 12 slots
  std::vector<uint64_t> inserted;
  uint64_t capacity = 0;
  {
    auto t = MustOpen(o);
    ASSERT_EQ(t->slots_per_page(), 12u);
    capacity = t->capacity();
    EXPECT_EQ(capacity, static_cast<uint64_t>(32 * 12 * 0.7));
    Status s;
    for (uint64_t i = 0; i < 1000; i++) {
      s = t->Apply({Put(FpFromSeed(i), Entry(i + 1))});
      if (!s.ok()) break;
      inserted.push_back(i);
    }
    EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
    EXPECT_NE(s.message().find("chunk index full"), std::string::npos) << s.ToString();
    EXPECT_EQ(inserted.size(), capacity) << s.ToString();
    EXPECT_EQ(t->entry_count(), inserted.size());
    // Updating an existing entry still works when full.
    EXPECT_TRUE(t->Apply({Put(FpFromSeed(0), Entry(99))}).ok());
  }
  auto t = MustOpen(o);
  EXPECT_EQ(t->entry_count(), inserted.size());
  for (uint64_t i : inserted) ExpectEntry(t.get(), FpFromSeed(i), Entry(i == 0 ? 99 : i + 1));
  uint64_t pages = 0;
  Status s = t->Verify(&pages);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(t->Apply({Put(FpFromSeed(5000), Entry(1))}).IsNoSpace());
}

TEST_F(DiskHashTableTest, BucketOverflowProbing) {
  auto o = Options(512 * 9, 512);  // 8 buckets of 12 slots
  o.max_fill = 1.0;
  o.max_probe_pages = 2;
  auto t = MustOpen(o);
  const uint64_t buckets = t->bucket_count();
  ASSERT_EQ(buckets, 8u);
  const size_t slots = t->slots_per_page();

  // Two pages' worth of entries homed in bucket 3: the second half overflows into bucket 4.
  for (uint64_t k = 0; k < 2 * slots; k++) {
    Status s = t->Apply({Put(FpInBucket(3, k, buckets), Entry(k + 1))});
    ASSERT_TRUE(s.ok()) << k << ": " << s.ToString();
  }
  for (uint64_t k = 0; k < 2 * slots; k++) ExpectEntry(t.get(), FpInBucket(3, k, buckets), Entry(k + 1));

  Status s = t->Apply({Put(FpInBucket(3, 100, buckets), Entry(1))});
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  EXPECT_NE(s.message().find("chunk index full: bucket 3 and its overflow pages are full"),
            std::string::npos)
      << s.ToString();
  // Bucket 4 is full of bucket 3's entries; its own entries overflow to 5.
  ASSERT_TRUE(t->Apply({Put(FpInBucket(4, 0, buckets), Entry(400))}).ok());
  ExpectEntry(t.get(), FpInBucket(4, 0, buckets), Entry(400));

  // All-or-nothing: one op fits, one does not -> neither is applied.
  const uint64_t count = t->entry_count();
  s = t->Apply({Put(FpInBucket(0, 0, buckets), Entry(500)), Put(FpInBucket(3, 101, buckets), Entry(1))});
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  ChunkIndexEntry e;
  EXPECT_TRUE(t->Get(FpInBucket(0, 0, buckets), &e).IsNotFound());
  EXPECT_EQ(t->entry_count(), count);

  // Erasing from bucket 3's own page makes it non-full; entries that
  // overflowed into bucket 4 must still be found.
  ASSERT_TRUE(t->Apply({Erase(FpInBucket(3, 0, buckets))}).ok());
  EXPECT_TRUE(t->Get(FpInBucket(3, 0, buckets), &e).IsNotFound());
  for (uint64_t k = 1; k < 2 * slots; k++) ExpectEntry(t.get(), FpInBucket(3, k, buckets), Entry(k + 1));
  // The freed slot is reused.
  ASSERT_TRUE(t->Apply({Put(FpInBucket(3, 200, buckets), Entry(200))}).ok());
  ExpectEntry(t.get(), FpInBucket(3, 200, buckets), Entry(200));

  // The last bucket wraps around into bucket 0.
  for (uint64_t k = 0; k < slots + 1; k++) {
    ASSERT_TRUE(t->Apply({Put(FpInBucket(7, k, buckets), Entry(700 + k))}).ok());
  }
  for (uint64_t k = 0; k < slots + 1; k++) ExpectEntry(t.get(), FpInBucket(7, k, buckets), Entry(700 + k));

  uint64_t pages = 0;
  s = t->Verify(&pages);
  EXPECT_TRUE(s.ok()) << s.ToString();
  t.reset();
  t = MustOpen(o);
  for (uint64_t k = 1; k < 2 * slots; k++) ExpectEntry(t.get(), FpInBucket(3, k, buckets), Entry(k + 1));
  for (uint64_t k = 0; k < slots + 1; k++) ExpectEntry(t.get(), FpInBucket(7, k, buckets), Entry(700 + k));
  ExpectEntry(t.get(), FpInBucket(4, 0, buckets), Entry(400));
}

TEST_F(DiskHashTableTest, EraseAndUpdate) {
  auto o = Options();
  {
    auto t = MustOpen(o);
    std::vector<DiskHashTable::Op> ops;
    for (uint64_t i = 0; i < 10; i++) ops.push_back(Put(FpFromSeed(i), Entry(i + 1)));
    ASSERT_TRUE(t->Apply(ops).ok());
    ops.clear();
    for (uint64_t i = 0; i < 5; i++) ops.push_back(Erase(FpFromSeed(i)));
    ops.push_back(Erase(FpFromSeed(77)));           // absent: no-op
    ops.push_back(Put(FpFromSeed(9), Entry(90, 3)));  // update
    ASSERT_TRUE(t->Apply(ops).ok());
    EXPECT_EQ(t->entry_count(), 5u);
    // Within one batch the later op on a fingerprint wins.
    ASSERT_TRUE(t->Apply({Put(FpFromSeed(50), Entry(1)), Erase(FpFromSeed(50))}).ok());
    EXPECT_EQ(t->entry_count(), 5u);
  }
  auto t = MustOpen(o);
  EXPECT_EQ(t->entry_count(), 5u);
  ChunkIndexEntry e;
  for (uint64_t i = 0; i < 5; i++) EXPECT_TRUE(t->Get(FpFromSeed(i), &e).IsNotFound());
  EXPECT_TRUE(t->Get(FpFromSeed(50), &e).IsNotFound());
  for (uint64_t i = 5; i < 9; i++) ExpectEntry(t.get(), FpFromSeed(i), Entry(i + 1));
  ExpectEntry(t.get(), FpFromSeed(9), Entry(90, 3));
  uint64_t pages;
  EXPECT_TRUE(t->Verify(&pages).ok());
}

TEST_F(DiskHashTableTest, CorruptedPageIsReportedNotReturned) {
  auto o = Options();
  uint64_t page_no = 0;
  const Fingerprint fp = FpFromSeed(42);
  {
    auto t = MustOpen(o);
    ASSERT_TRUE(t->Apply({Put(fp, Entry(5)), Put(FpFromSeed(43), Entry(6))}).ok());
    page_no = fp.Hash64() % t->bucket_count() + 1;
  }
  {
    std::unique_ptr<File> f;
    ASSERT_TRUE(Env::Default()->OpenFile(o.path, OpenMode::kReadWrite, &f).ok());
    uint8_t b;
    const uint64_t off = page_no * o.page_size + 16 + 21;  // inside the first entry's container id
    ASSERT_TRUE(f->Read(off, 1, &b).ok());
    b ^= 0x40;
    ASSERT_TRUE(f->Write(off, &b, 1).ok());
  }
  auto t = MustOpen(o);
  ChunkIndexEntry e;
  Status s = t->Get(fp, &e);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  const std::string where = "page " + std::to_string(page_no) + " checksum mismatch";
  EXPECT_NE(s.message().find(where), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(o.path), std::string::npos) << s.ToString();
  // A write to the damaged page is refused too, not silently repaired.
  EXPECT_TRUE(t->Apply({Put(fp, Entry(6))}).IsCorruption());
  uint64_t pages = 0;
  s = t->Verify(&pages);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find(where), std::string::npos) << s.ToString();
}

TEST_F(DiskHashTableTest, TornPageWriteIsRedoneFromJournal) {
  FaultInjectionEnv fenv(Env::Default());
  auto o = Options();
  std::map<uint64_t, ChunkIndexEntry> want;
  {
    auto t = MustOpen(o, &fenv);
    std::vector<DiskHashTable::Op> ops;
    PutSeeds(0, 30, &want, &ops);
    ASSERT_TRUE(t->Apply(ops).ok());

    // The batch's first write (the journal) goes through; every in-place
    // page write after it is torn after 8 bytes.
    FaultInjectionEnv::Rule rule;
    rule.op = FaultInjectionEnv::Op::kWrite;
    rule.path_substring = o.path;
    rule.fault = FaultInjectionEnv::Fault::kTorn;
    rule.skip = 1;
    rule.count = -1;
    rule.torn_bytes = 8;
    fenv.AddRule(rule);
    ops.clear();
    PutSeeds(30, 60, &want, &ops);
    ops.push_back(Put(FpFromSeed(0), Entry(1000, 2)));
    want[0] = Entry(1000, 2);
    ops.push_back(Erase(FpFromSeed(1)));
    want.erase(1);
    Status s = t->Apply(ops);
    EXPECT_TRUE(s.IsIOError()) << s.ToString();
    EXPECT_GT(fenv.faults_fired(), 0);
    // The batch is durable in the journal; readers see it meanwhile.
    for (auto& [i, e] : want) ExpectEntry(t.get(), FpFromSeed(i), e);
    // Destroying the table cannot finish the batch either (rule still active).
  }
  fenv.ClearRules();
  uint64_t journal_size = 0;
  ASSERT_TRUE(Env::Default()->GetFileSize(o.path + ".journal", &journal_size).ok());
  EXPECT_GT(journal_size, 0u);

  // Without the journal the torn page is detected, never read as data.
  auto copy = o;
  copy.path = dir_.Sub("copy");
  CopyFile(o.path, copy.path);
  {
    std::unique_ptr<DiskHashTable> c;
    Status s = DiskHashTable::Open(copy, Env::Default(), &c);
    uint64_t pages;
    if (s.ok()) s = c->Verify(&pages);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  }

  auto t = MustOpen(o);
  EXPECT_EQ(t->entry_count(), want.size());
  for (auto& [i, e] : want) ExpectEntry(t.get(), FpFromSeed(i), e);
  ChunkIndexEntry e;
  EXPECT_TRUE(t->Get(FpFromSeed(1), &e).IsNotFound());
  uint64_t pages = 0;
  Status s = t->Verify(&pages);
  EXPECT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(Env::Default()->GetFileSize(o.path + ".journal", &journal_size).ok());
  EXPECT_EQ(journal_size, 0u);
}

// A batch whose journal is written in several pieces (more than 1 MiB of
// page images) is redone whole after its in-place writes were torn: the
// CRC taken piece by piece checks out.
TEST_F(DiskHashTableTest, LargeBatchJournalInPiecesIsRedone) {
  FaultInjectionEnv fenv(Env::Default());
  auto o = Options(4 << 20);  // 1023 buckets
  std::map<uint64_t, ChunkIndexEntry> want;
  {
    auto t = MustOpen(o, &fenv);
    std::vector<DiskHashTable::Op> ops;
    PutSeeds(0, 900, &want, &ops);
    // ~600 pages (2.4 MB): the journal goes out in three writes of about
    // 1 MiB, then every in-place page write is torn.
    fenv.AddRule({FaultInjectionEnv::Op::kWrite, o.path, FaultInjectionEnv::Fault::kTorn, /*skip=*/3, /*count=*/-1,
                  /*torn_bytes=*/8});
    EXPECT_TRUE(t->Apply(ops).IsIOError());
    EXPECT_GT(fenv.faults_fired(), 0);
  }
  fenv.ClearRules();
  uint64_t journal_size = 0;
  ASSERT_TRUE(Env::Default()->GetFileSize(o.path + ".journal", &journal_size).ok());
  EXPECT_GT(journal_size, 2u << 20);
  EXPECT_LT(journal_size, 3u << 20);
  auto t = MustOpen(o);
  EXPECT_EQ(t->entry_count(), want.size());
  for (auto& [i, e] : want) ExpectEntry(t.get(), FpFromSeed(i), e);
  uint64_t pages = 0;
  Status s = t->Verify(&pages);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(DiskHashTableTest, TornPageWriteIsFinishedByNextApply) {
  FaultInjectionEnv fenv(Env::Default());
  auto o = Options();
  {
    auto t = MustOpen(o, &fenv);
    FaultInjectionEnv::Rule rule;
    rule.op = FaultInjectionEnv::Op::kWrite;
    rule.path_substring = o.path;
    rule.fault = FaultInjectionEnv::Fault::kTorn;
    rule.skip = 1;
    rule.count = 1;
    rule.torn_bytes = 8;
    fenv.AddRule(rule);
    std::vector<DiskHashTable::Op> ops;
    for (uint64_t i = 0; i < 20; i++) ops.push_back(Put(FpFromSeed(i), Entry(i + 1)));
    EXPECT_TRUE(t->Apply(ops).IsIOError());
    ASSERT_TRUE(t->Apply({Put(FpFromSeed(100), Entry(101))}).ok());
    uint64_t pages;
    Status s = t->Verify(&pages);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  auto t = MustOpen(o);
  EXPECT_EQ(t->entry_count(), 21u);
  for (uint64_t i = 0; i < 20; i++) ExpectEntry(t.get(), FpFromSeed(i), Entry(i + 1));
  ExpectEntry(t.get(), FpFromSeed(100), Entry(101));
}

TEST_F(DiskHashTableTest, TornJournalWriteIsIgnored) {
  FaultInjectionEnv fenv(Env::Default());
  auto o = Options();
  {
    auto t = MustOpen(o, &fenv);
    std::vector<DiskHashTable::Op> ops;
    for (uint64_t i = 0; i < 30; i++) ops.push_back(Put(FpFromSeed(i), Entry(i + 1)));
    ASSERT_TRUE(t->Apply(ops).ok());

    FaultInjectionEnv::Rule rule;
    rule.op = FaultInjectionEnv::Op::kWrite;
    rule.path_substring = ".journal";
    rule.fault = FaultInjectionEnv::Fault::kTorn;
    rule.count = 1;
    rule.torn_bytes = 1000;
    fenv.AddRule(rule);
    ops.clear();
    for (uint64_t i = 30; i < 60; i++) ops.push_back(Put(FpFromSeed(i), Entry(i + 1)));
    ops.push_back(Erase(FpFromSeed(0)));
    Status s = t->Apply(ops);
    EXPECT_TRUE(s.IsIOError()) << s.ToString();
    // Nothing of the failed batch is visible.
    ChunkIndexEntry e;
    EXPECT_TRUE(t->Get(FpFromSeed(30), &e).IsNotFound());
    ExpectEntry(t.get(), FpFromSeed(0), Entry(1));
    EXPECT_EQ(t->entry_count(), 30u);
  }
  uint64_t journal_size = 0;
  ASSERT_TRUE(Env::Default()->GetFileSize(o.path + ".journal", &journal_size).ok());
  EXPECT_EQ(journal_size, 1000u);  // the torn journal is what a crash would leave

  auto t = MustOpen(o);
  EXPECT_EQ(t->entry_count(), 30u);
  for (uint64_t i = 0; i < 30; i++) ExpectEntry(t.get(), FpFromSeed(i), Entry(i + 1));
  ChunkIndexEntry e;
  EXPECT_TRUE(t->Get(FpFromSeed(30), &e).IsNotFound());
  uint64_t pages = 0;
  Status s = t->Verify(&pages);
  EXPECT_TRUE(s.ok()) << s.ToString();
  // And the table takes writes again.
  ASSERT_TRUE(t->Apply({Put(FpFromSeed(30), Entry(31))}).ok());
  ExpectEntry(t.get(), FpFromSeed(30), Entry(31));
}

TEST_F(DiskHashTableTest, JournalOfMissingTableIsDiscarded) {
  auto o = Options();
  {
    std::unique_ptr<File> f;
    ASSERT_TRUE(Env::Default()->OpenFile(o.path + ".journal", OpenMode::kTruncate, &f).ok());
    ASSERT_TRUE(f->Write(0, "garbage", 7).ok());
  }
  auto t = MustOpen(o);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->entry_count(), 0u);
}

TEST_F(DiskHashTableTest, GetsRunConcurrentlyWithApply) {
  auto o = Options();
  auto t = MustOpen(o);
  std::vector<DiskHashTable::Op> ops;
  for (uint64_t i = 0; i < 200; i++) ops.push_back(Put(FpFromSeed(i), Entry(i + 1)));
  ASSERT_TRUE(t->Apply(ops).ok());

  std::atomic<bool> done{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; r++) {
    readers.emplace_back([&, r] {
      uint64_t i = r;
      while (!done.load()) {
        ChunkIndexEntry e;
        Status s = t->Get(FpFromSeed(i % 200), &e);
        if (!s.ok() || e.container != i % 200 + 1) errors++;
        i += 7;
      }
    });
  }
  for (uint64_t round = 0; round < 30; round++) {
    ops.clear();
    for (uint64_t i = 0; i < 20; i++) ops.push_back(Put(FpFromSeed(1000 + round * 20 + i), Entry(1)));
    ASSERT_TRUE(t->Apply(ops).ok());
  }
  done = true;
  for (auto& th : readers) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(t->entry_count(), 200u + 600u);
}

// ForEachEntry sees every entry once with its value, also while batches are
// applied between its runs of pages: entries present before the pass are
// each seen exactly once (in one of their versions), inserted ones at most
// once.
TEST_F(DiskHashTableTest, ForEachEntrySeesEachEntryOnceWhileApplyRuns) {
  auto o = Options();
  auto t = MustOpen(o);
  std::vector<DiskHashTable::Op> ops;
  for (uint64_t i = 0; i < 2000; i++) ops.push_back(Put(FpFromSeed(i), Entry(i + 1, 1)));
  ASSERT_TRUE(t->Apply(ops).ok());

  std::map<Fingerprint, ChunkIndexEntry> quiet;
  ASSERT_TRUE(t->ForEachEntry([&](const Fingerprint& fp, const ChunkIndexEntry& e) {
                 EXPECT_TRUE(quiet.emplace(fp, e).second) << "seen twice: " << fp.ToHex();
               }).ok());
  ASSERT_EQ(quiet.size(), 2000u);
  for (uint64_t i = 0; i < 2000; i++) EXPECT_EQ(quiet[FpFromSeed(i)], Entry(i + 1, 1)) << i;

  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (uint64_t round = 0; !done.load() && round < 200; round++) {
      std::vector<DiskHashTable::Op> batch;
      for (uint64_t i = 0; i < 10; i++) {
        batch.push_back(Put(FpFromSeed((round * 10 + i) % 2000), Entry((round * 10 + i) % 2000 + 1, 2)));
        batch.push_back(Put(FpFromSeed(100000 + round * 10 + i), Entry(7)));
      }
      ASSERT_TRUE(t->Apply(batch).ok());
    }
  });
  for (int pass = 0; pass < 5; pass++) {
    std::map<Fingerprint, int> seen;
    ASSERT_TRUE(t->ForEachEntry([&](const Fingerprint& fp, const ChunkIndexEntry& e) {
                   seen[fp]++;
                   if (e.container != 7) {
                     EXPECT_GE(e.usage_count, 1u);
                   }
                 }).ok());
    for (uint64_t i = 0; i < 2000; i++) ASSERT_EQ(seen[FpFromSeed(i)], 1) << "pass " << pass << " entry " << i;
    for (const auto& [fp, n] : seen) ASSERT_EQ(n, 1) << "pass " << pass << ": " << fp.ToHex() << " seen twice";
  }
  done = true;
  writer.join();
}

}  // namespace
}  // namespace dedupv1

// Fuzz harness of the chunk index's on-disk table (core/base/fuzz_check.h):
// one page of a real table file (index/disk_hash_table.h, 16 pages of 512
// bytes, 40 entries) is replaced by the input, then the table is opened, every
// entry looked up and the whole table verified. The rule checked is the one a
// wrong entry would break silently (a chunk deduplicated against the wrong
// container): a damaged page is an error, never other entries.
//  - Without recomputed checksums, every lookup answers the entry stored or an
//    error (NotFound only if the page now reads all zeros: a page never
//    written, by the table's own rule), and Verify reports a page that
//    changed and is not all zeros as Corruption.
//  - With them (the page lies but its CRC holds), Open, Get and Verify still
//    end in OK or an error, never a crash or a read outside the page.
//
// Input: a flags byte (bit 0: recompute the page's CRC; bits 1-4: which page,
// 0 the header), then the page's new bytes (cut or zero-padded to 512).
// With flag bit 5 the bytes are instead the table's journal, left as if a
// batch was interrupted before its pages were written in place (bit 0:
// recompute the journal's CRC). Without it a damaged journal is a torn one,
// ignored, and every entry reads as stored; with it, no crash.
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/base/coding.h"
#include "core/base/env.h"
#include "core/base/fuzz_check.h"
#include "index/disk_hash_table.h"

namespace dedupv1 {
namespace {

constexpr size_t kPageSize = 512;
constexpr uint64_t kPages = 16;
constexpr int kEntries = 40;
// The header page's CRC covers its first 56 bytes and stands after them
// (docs/formats.md); the rest of page 0 is unused.
constexpr size_t kHeaderBytesUsed = 60;

DiskHashTableOptions TableOptions(const std::string& path) {
  DiskHashTableOptions o;
  o.path = path;
  o.size_bytes = kPageSize * kPages;
  o.page_size = kPageSize;
  o.key_size = 20;
  o.max_probe_pages = 4;
  return o;
}

// The table every input damages, made once: its file image and entries.
struct BaseTable {
  std::string dir;
  std::string image;
  std::vector<ChunkTable::Op> entries;
};

const BaseTable& Base() {
  static const BaseTable base = [] {
    BaseTable b;
    b.dir = test::FuzzTempDir("fuzz-table");
    for (int i = 0; i < kEntries; i++) {
      ChunkTable::Op op;
      const std::string data = "chunk " + std::to_string(i);
      ComputeFingerprint(FingerprintType::kSha1, reinterpret_cast<const uint8_t*>(data.data()), data.size(), &op.fp);
      op.entry.container = 100 + i;
      op.entry.usage_count = 1 + i % 5;
      op.entry.committed = i % 7 != 0;
      op.entry.last_event_id = 1000 + i;
      b.entries.push_back(op);
    }
    const std::string path = b.dir + "/base";
    std::unique_ptr<DiskHashTable> t;
    Status s = DiskHashTable::Open(TableOptions(path), Env::Default(), &t);
    if (s.ok()) s = t->Apply(b.entries);
    if (s.ok()) s = t->Sync();
    FUZZ_CHECK(s.ok(), "the base table: " + s.ToString());
    t.reset();
    s = ReadFileToString(Env::Default(), path, &b.image);
    FUZZ_CHECK(s.ok(), "reading the base table: " + s.ToString());
    FUZZ_CHECK(b.image.size() == kPageSize * kPages, "the base table's size");
    ::unlink(path.c_str());
    ::unlink(DiskHashTable::JournalPath(path).c_str());
    return b;
  }();
  return base;
}

// A complete journal of pages 3 and 5 as the base table has them (the format
// of docs/formats.md: magic, page size, page count, page number + image per
// page, CRC32C), so that replaying it changes nothing. Made once.
const std::string& SeedJournal() {
  static const std::string journal = [] {
    const BaseTable& base = Base();
    std::string j("DDV1CIJN", 8);
    PutFixed32(&j, kPageSize);
    PutFixed32(&j, 0);
    PutFixed64(&j, 2);
    for (uint64_t page : {3, 5}) {
      PutFixed64(&j, page);
      j += base.image.substr(page * kPageSize, kPageSize);
    }
    PutFixed32(&j, Crc32c(j.data(), j.size()));
    return j;
  }();
  return journal;
}

// Puts |bytes| at |path| (the table or its journal) for the next Open.
void Place(const std::string& path, const std::string& bytes) {
  Status s = WriteFileAtomically(Env::Default(), path, bytes);
  FUZZ_CHECK(s.ok(), "writing " + path + ": " + s.ToString());
}

bool AllZero(const std::string& page) { return page.find_first_not_of('\0') == std::string::npos; }

// Opens the base table with |journal| beside it, as an interrupted batch leaves it.
void CheckJournal(std::string journal, bool fix_crc) {
  const BaseTable& base = Base();
  if (fix_crc && journal.size() >= 4) {
    EncodeFixed32(reinterpret_cast<uint8_t*>(journal.data()) + journal.size() - 4,
                  Crc32c(journal.data(), journal.size() - 4));
  }
  const std::string path = base.dir + "/table";
  Place(path, base.image);
  Place(DiskHashTable::JournalPath(path), journal);
  std::unique_ptr<DiskHashTable> t;
  Status s = DiskHashTable::Open(TableOptions(path), Env::Default(), &t);
  const bool intact = journal == SeedJournal();
  if (!s.ok()) {
    FUZZ_CHECK(s.IsCorruption() || s.IsInvalidArgument(), "Open: " + s.ToString());
    FUZZ_CHECK(fix_crc && !intact, "a journal the table must ignore (torn) or replay stops the open: " + s.ToString());
  } else {
    for (const ChunkTable::Op& op : base.entries) {
      ChunkIndexEntry entry;
      Status g = t->Get(op.fp, &entry);
      FUZZ_CHECK(g.ok() || g.IsNotFound() || g.IsCorruption(), "Get: " + g.ToString());
      if (!fix_crc || intact) FUZZ_CHECK(g.ok() && entry == op.entry, "an entry changed by a journal to ignore");
    }
    uint64_t pages = 0;
    Status v = t->Verify(&pages);
    FUZZ_CHECK(v.ok() || v.IsCorruption(), "Verify: " + v.ToString());
  }
  t.reset();
  ::unlink(path.c_str());
  ::unlink(DiskHashTable::JournalPath(path).c_str());
}

void CheckDamagedTable(uint64_t page_no, bool fix_crc, std::string page) {
  const BaseTable& base = Base();
  page.resize(kPageSize, '\0');
  fix_crc = fix_crc && page_no > 0;  // the header page: the damage as it is
  if (fix_crc) {
    uint8_t* p = reinterpret_cast<uint8_t*>(page.data());
    EncodeFixed32(p, Crc32c(p + 4, kPageSize - 4));
  }
  const std::string before = base.image.substr(page_no * kPageSize, kPageSize);
  const size_t used = page_no == 0 ? kHeaderBytesUsed : kPageSize;
  const bool changed = page.compare(0, used, before, 0, used) != 0;
  std::string image = base.image;
  image.replace(page_no * kPageSize, kPageSize, page);
  const std::string path = base.dir + "/table";
  Place(path, image);
  std::unique_ptr<DiskHashTable> t;
  Status s = DiskHashTable::Open(TableOptions(path), Env::Default(), &t);
  if (!s.ok()) {
    FUZZ_CHECK(s.IsCorruption() || s.IsInvalidArgument(), "Open: " + s.ToString());
    FUZZ_CHECK(changed, "the undamaged table does not open: " + s.ToString());
  } else {
    const bool strict = !fix_crc;
    for (const ChunkTable::Op& op : base.entries) {
      ChunkIndexEntry entry;
      Status g = t->Get(op.fp, &entry);
      FUZZ_CHECK(g.ok() || g.IsNotFound() || g.IsCorruption(), "Get: " + g.ToString());
      if (!strict) continue;
      if (g.ok()) FUZZ_CHECK(entry == op.entry, "a damaged table answers another entry than the one stored");
      if (g.IsNotFound()) FUZZ_CHECK(changed && AllZero(page), "an entry lost without a damaged page saying so");
    }
    uint64_t pages = 0;
    Status v = t->Verify(&pages);
    FUZZ_CHECK(v.ok() || v.IsCorruption(), "Verify: " + v.ToString());
    // A page zeroed by the damage reads as never written, but if it held
    // entries the header's entry count no longer adds up.
    const bool held_entries = page_no > 0 && DecodeFixed16(reinterpret_cast<const uint8_t*>(before.data()) + 4) > 0;
    if (strict && changed && (!AllZero(page) || held_entries)) FUZZ_CHECK(!v.ok(), "Verify passes a damaged page");
    if (!changed) FUZZ_CHECK(v.ok(), "Verify refuses the undamaged table: " + v.ToString());
  }
  t.reset();
  ::unlink(path.c_str());
  ::unlink(DiskHashTable::JournalPath(path).c_str());
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  const BaseTable& base = Base();
  for (uint64_t page = 0; page < kPages; page++) {
    AddSeedBothWays(seeds, static_cast<uint8_t>(page << 1), 1, base.image.substr(page * kPageSize, kPageSize));
  }
  AddSeedBothWays(seeds, 1 << 5, 1, SeedJournal());
}

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dedupv1;
  uint8_t flags = 0;
  std::string page;
  if (!test::SplitFuzzInput(data, size, &flags, &page)) return 0;
  if (flags & (1 << 5)) {
    CheckJournal(page, (flags & 1) != 0);
  } else {
    CheckDamagedTable((flags >> 1) & 0xf, (flags & 1) != 0, page);
  }
  return 0;
}

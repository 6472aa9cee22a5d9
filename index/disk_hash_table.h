// DiskHashTable is the persistent part of the chunk index: a paged on-disk hash
// table made for SSDs, keyed by chunk fingerprint. Fingerprints are
// cryptographic hashes without locality, so a hash table (one random page read
// per lookup) beats an ordered structure here.
//
// Layout: a preallocated file of fixed-size pages. Page 0 is the header
// (format, geometry, entry count). Bucket b is page b + 1; a fingerprint's
// home bucket is fp.Hash64() mod bucket_count. A bucket page holds a small
// header (CRC32C over the page, entry count, flags, own page number) followed
// by fixed-width entries: key, container id (8), usage count (4), flags (1),
// last event id (8) (format version 2).
//
// Invariants:
//  - A full bucket overflows into the following pages (linear probing, at most
//    max_probe_pages pages, wrapping around). Every page an insert passed
//    because it was full is flagged "overflowed" and the flag is never
//    cleared, so a lookup may stop at the first page that is neither full nor
//    overflowed even after erases made earlier pages non-full.
//  - Pages are changed only by Apply, in batches: the new page images (and the
//    header, when the entry count changes) are first written to a journal
//    (path + ".journal") with a CRC and synced, then written in place and
//    synced, then the journal is emptied. Open re-applies a valid journal and
//    ignores a torn one (whose pages were not touched in place yet), so a torn
//    page write can never survive a restart.
//  - A page whose CRC, page number or entry count does not check out is
//    reported as Corruption naming the file and page; its data is never used.
//    A page that reads all zeros was never written (the file is preallocated)
//    and counts as empty.
//  - The entry count lives in the header and changes atomically with the pages
//    (it is part of the same journaled batch), so opening needs no full scan.
//
// Thread-safety: all methods are thread-safe. Apply calls are serialized;
// Get runs concurrently with Apply (pread-based; a reader-writer lock is taken
// exclusively only for the moment a batch is installed or retired).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "core/base/env.h"
#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "index/chunk_index_entry.h"
#include "index/chunk_table.h"
#include "index/table_page_cache.h"

namespace dedupv1 {

struct DiskHashTableOptions {
  std::string path;
  uint64_t size_bytes = 64 << 20;  // file size; bucket count = size / page_size - 1
  size_t page_size = 4096;         // power of two, 512 .. 65536
  size_t key_size = 20;            // 20 for SHA-1, 32 for SHA-256
  double max_fill = 0.7;           // inserts beyond this share of all slots are refused
  int max_probe_pages = 8;         // pages a bucket may overflow into (incl. its own); fixed at creation
  // An existing file keeps the size its header names (it may have grown
  // online, index/growable_hash_table.h): size_bytes then only sizes a new
  // file. Without it a size that differs from the header is refused.
  bool adopt_file_size = false;
  // Bucket pages kept in memory (iCache, index/table_page_cache.h); shared
  // by the tables of a growth. Null: every page is read from the file.
  std::shared_ptr<TablePageCache> page_cache;
};

class DiskHashTable : public ChunkTable {
 public:
  using Op = ChunkTable::Op;

  // Creates the file (preallocated) if missing, else opens it, re-applies a
  // valid journal, and checks that page size, key size, size (unless
  // adopt_file_size) and probe limit match the options (InvalidArgument
  // naming the mismatch).
  static Status Open(const DiskHashTableOptions& options, Env* env,
                     std::unique_ptr<DiskHashTable>* out);

  // Entries one bucket page holds (docs/formats.md: key, container, usage,
  // flags, last event id per slot). For sizing tables.
  static size_t SlotsPerPage(size_t page_size, size_t key_size);
  // The journal of the table at |table_path| (docs/architecture.md 3.3).
  static std::string JournalPath(const std::string& table_path) { return table_path + ".journal"; }

  // Finishes a batch whose in-place write failed earlier, if possible; if not,
  // the journal stays and the next Open redoes it.
  ~DiskHashTable() override;
  DiskHashTable(const DiskHashTable&) = delete;
  DiskHashTable& operator=(const DiskHashTable&) = delete;

  // NotFound if |fp| has no entry; Corruption if a page on its probe path is damaged.
  Status Get(const Fingerprint& fp, ChunkIndexEntry* entry) override;

  // Applies puts and erases in order (a later op on the same fingerprint wins),
  // grouped by page: each page is read, changed in memory and written once,
  // torn-write safe. All-or-nothing with respect to NoSpace: if any insert
  // would not fit (fill limit or full bucket chain), nothing is applied.
  // On an I/O error the batch may or may not be applied; re-applying the same
  // batch is always safe (puts and erases are idempotent).
  Status Apply(const std::vector<Op>& ops) override;

  uint64_t entry_count() const override { return entry_count_.load(); }
  // Entries the fill limit admits: total slots * max_fill.
  uint64_t capacity() const override { return capacity_; }
  uint64_t bucket_count() const { return bucket_count_; }
  // The file's size: options.size_bytes, or the existing file's (adopt_file_size).
  uint64_t size_bytes() const { return size_bytes_; }
  uint64_t batch_units() const override { return bucket_count_; }
  std::string Where() const override { return options_.path; }
  size_t slots_per_page() const { return slots_per_page_; }
  const std::string& path() const { return options_.path; }

  // Reads every page and checks CRCs, page numbers, that each entry is within
  // the probe range of its home bucket, and that the header's entry count
  // equals the entries found. |pages_checked| counts the header page too.
  // |visit|, if given, sees every entry in the table, once: Apply waits until
  // the pass is over, so the table does not change under it.
  Status Verify(uint64_t* pages_checked, const Visitor& visit = nullptr) override;

  // Visits every entry, reading the table in order in runs of pages, each run
  // under the page lock a Get takes, so Apply goes on between runs (Verify
  // holds Apply off for the whole pass). Pages are checked as in Get. An
  // entry changed during the pass is seen in one of its versions; one
  // inserted into a page already read is missed; entries never move between
  // pages, so none is seen twice unless it is deleted and inserted again
  // during the pass.
  Status ForEachEntry(const Visitor& visit) override;

  // Makes every applied batch durable (Apply already syncs; this also retries
  // a batch whose in-place write failed).
  Status Sync() override;

  // The entries stored on the bucket pages [first, first + n) (pages are
  // numbered from 1), read and checked as in Get. The growth of a table
  // moves entries page run by page run with it.
  Status EntriesOfPages(uint64_t first, uint64_t n, std::vector<std::pair<Fingerprint, ChunkIndexEntry>>* out);

 private:
  DiskHashTable(const DiskHashTableOptions& options, Env* env);

  static Status ValidateOptions(const DiskHashTableOptions& options);
  // Checks the geometry a header names against the options (adopting its
  // size if allowed).
  Status CheckGeometry(uint32_t page_size, uint32_t key_size, uint32_t max_probe_pages, uint64_t size_bytes,
                       uint64_t bucket_count);
  // Sets the size and everything derived from it (bucket count, capacity,
  // probe range).
  void SetGeometry(uint64_t size_bytes);
  Status Create();
  Status Recover();
  // |max_pages|: a complete journal naming a page at or beyond it is
  // Corruption.
  Status ReadJournal(uint64_t max_pages, bool* valid, std::map<uint64_t, std::string>* images);
  Status WriteJournal(const std::map<uint64_t, std::string>& images);
  // Writes pending_ in place, syncs, empties the journal. Requires apply_mu_.
  Status FinishPendingLocked();
  Status WriteImagesInPlace(const std::map<uint64_t, std::string>& images);

  // Reads bucket page |page_no| from the file and checks it (an all-zero page
  // becomes a formatted empty page).
  Status ReadPage(uint64_t page_no, std::string* page) const;
  // ReadPage through the page cache (if any): its image if cached, else the
  // file's, which the cache then keeps. The caller holds apply_mu_ or
  // pages_mu_ (shared), so no install of the page runs meanwhile (the
  // cache's invariant, index/table_page_cache.h).
  Status ReadPageCached(uint64_t page_no, std::string* page) const;
  Status CheckPage(uint64_t page_no, std::string* page) const;
  // Pages per sequential read of Verify and ForEachEntry.
  static constexpr uint64_t kRunPages = 256;
  // Reads the run of |n| pages from |first| with one read (pending_ images
  // preferred), checks each and calls |page_fn| with its number and image.
  // The caller holds apply_mu_ or pages_mu_ (shared), so pending_ is stable.
  Status ReadRun(uint64_t first, uint64_t n, std::string* run,
                 const std::function<Status(uint64_t page_no, const std::string& page)>& page_fn) const;
  std::string EncodeHeader(uint64_t entry_count) const;

  uint64_t PageOffset(uint64_t page_no) const { return page_no * options_.page_size; }
  uint64_t HomeBucket(const Fingerprint& fp) const { return fp.Hash64() % bucket_count_; }
  // Page number of the |i|-th page on the probe path starting at |home|.
  uint64_t ProbePage(uint64_t home, int i) const { return (home + i) % bucket_count_ + 1; }
  Status CheckKey(const Fingerprint& fp) const;

  const DiskHashTableOptions options_;
  Env* const env_;
  const uint64_t table_id_;  // this table's pages in options_.page_cache
  const std::string journal_path_;
  uint64_t size_bytes_ = 0;
  uint64_t bucket_count_ = 0;
  size_t entry_size_ = 0;
  size_t slots_per_page_ = 0;
  uint64_t capacity_ = 0;
  int probe_pages_ = 0;  // min(max_probe_pages, bucket_count)

  std::unique_ptr<File> table_;
  std::unique_ptr<File> journal_;
  std::atomic<uint64_t> entry_count_{0};

  // Serializes Apply, Verify, Sync and the retirement of pending_.
  std::mutex apply_mu_;
  // Guards pending_; readers hold it shared across their page reads so a page
  // is never read while it is being written in place.
  mutable std::shared_mutex pages_mu_;
  // Page images of the last batch: durable in the journal, possibly not (or
  // not completely) in place yet. Reads prefer these to the file.
  std::map<uint64_t, std::string> pending_;
};

}  // namespace dedupv1

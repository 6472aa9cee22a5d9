// GrowableHashTable is the local chunk index table that grows online: a
// DiskHashTable that, when asked (a fill threshold in ChunkIndex, an admin
// command, or a configured size above the file's), moves its entries into a
// larger DiskHashTable while Get and Apply go on, then takes that table's
// place. A store created with a tiny index thus keeps taking new chunks.
//
// Files: the table at |path|; while growing also the larger one at
// NextPath(path) (with its own journal). Growing is exactly "the next file
// exists": it is created whole (DiskHashTable::Create builds it under a
// temporary name) and leaves only by its rename over |path|, so kill -9 at
// any point leaves a state Open resumes. No other growth state is stored;
// after a restart the pass starts over at page 1 and skips the pages already
// emptied at the cost of reading them.
//
// Invariants while growing (old = |path|, next = NextPath):
//  - next has k times old's buckets (k >= 2): an old bucket b's entries go to
//    next's buckets b + j * old_buckets, so a run of old pages is moved with a
//    few runs of next's pages, not with a page write per entry.
//  - An entry lives in old or in next. Both hold it only after a crash
//    between a move's insert into next and its erase from old; next's version
//    is then the newer, so Get prefers next, a move never overwrites an entry
//    next already holds, and the pass erases old's copy.
//  - Apply: an erase goes to both (old first, so a crash in between never
//    leaves only old's older version); a put updates the entry where it is
//    (next first) and inserts a new one into next. So only moves carry
//    entries from old to next.
//  - Get reads old, then next (next wins): a move writes next before it
//    erases old, so a concurrent Get never misses an entry in flight.
//  - Moves do not run while ForEachEntry runs, so a scan sees no entry twice.
//  - Finishing: when a pass leaves old empty, both tables are synced and
//    closed, both journals emptied durably, then next is renamed over |path|
//    (one atomic step) and its journal file removed.
//
// Thread-safety: all methods are thread-safe. Apply, moves, Verify and the
// finish are serialized (apply_mu_); Get and ForEachEntry run concurrently
// with Apply; the background thread does the moves a step at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/base/env.h"
#include "index/chunk_table.h"
#include "index/disk_hash_table.h"

namespace dedupv1 {

struct GrowableHashTableOptions {
  // path, geometry; size_bytes sizes a new table, and an existing smaller
  // table grows to it when opened (the admin raised chunk-index.size).
  DiskHashTableOptions table;
  uint32_t grow_factor = 2;        // Grow(0) multiplies the bucket count by this (>= 2)
  uint64_t step_pages = 64;        // old bucket pages moved per step
  bool grow_in_background = true;  // false: only Step() moves entries (tests)
};

class GrowableHashTable : public ChunkTable {
 public:
  // Opens (or creates) the table at options.table.path and, if a growth was
  // under way, resumes it. Corruption if the next file exists without the
  // table, or does not fit it.
  static Status Open(const GrowableHashTableOptions& options, Env* env, std::unique_ptr<GrowableHashTable>* out);
  // The larger table of a growth under way.
  static std::string NextPath(const std::string& path) { return path + ".next"; }

  ~GrowableHashTable() override;  // stops the growth between steps
  GrowableHashTable(const GrowableHashTable&) = delete;
  GrowableHashTable& operator=(const GrowableHashTable&) = delete;

  Status Get(const Fingerprint& fp, ChunkIndexEntry* entry) override;
  Status Apply(const std::vector<Op>& ops) override;
  // Both tables' entries (one held twice after a crash counts twice until
  // the pass reaches it).
  uint64_t entry_count() const override;
  // The larger table's while growing: every entry ends there.
  uint64_t capacity() const override;
  uint64_t batch_units() const override;
  std::string Where() const override { return options_.table.path; }
  // Both tables' pages; |visit| sees an entry held twice once (next's).
  Status Verify(uint64_t* pages_checked, const Visitor& visit = nullptr) override;
  // Old, then next, with moves held off; an entry held twice is seen once.
  Status ForEachEntry(const Visitor& visit) override;
  Status Sync() override;

  // Begins a growth to at least |min_bytes| (0: grow_factor times the
  // buckets) on the background thread. While a growth runs, a request for
  // more than its target (0: always) is queued and begins once it finishes.
  Status Grow(uint64_t min_bytes) override;
  ChunkTableGrowth growth() const override;

  // Runs one step now: begins a requested growth, or moves the next run of
  // pages (finishing after the last). |growing| (optional) tells whether a
  // growth is still under way afterwards. The background thread calls it;
  // tests call it with grow_in_background = false.
  Status Step(bool* growing = nullptr);

 private:
  GrowableHashTable(const GrowableHashTableOptions& options, Env* env);

  DiskHashTableOptions TableOptions(const std::string& path, uint64_t size_bytes) const;
  // What every call answers while the tables are closed (a finish whose
  // reopen failed; Step retries it).
  Status ClosedError() const;
  // |visit| for old's entries, without those |next| holds too (after a
  // crash mid-move; next's version counts); a failed lookup is kept in
  // |lookup| (first only). |visit| and |lookup| must outlive the visitor.
  static Visitor SkipHeldByNext(DiskHashTable* next, const Visitor& visit, Status* lookup);
  // Creates the next table (apply_mu_ held).
  Status BeginLocked(uint64_t min_bytes);
  // Moves the next run of old pages (apply_mu_ held).
  Status MoveLocked();
  // Moves old's pages [first, first + n) into next (apply_mu_ held).
  Status MoveRunLocked(uint64_t first, uint64_t n);
  // Opens the table at |path| and the next file if it exists (both null on
  // failure); touches no member.
  Status OpenTables(std::unique_ptr<DiskHashTable>* old_table, std::unique_ptr<DiskHashTable>* next_table);
  // OpenTables into old_ and next_ (apply_mu_ held): retries a finish whose
  // reopen failed.
  Status ReopenLocked();
  // Puts next in old's place (apply_mu_ held, old empty).
  Status FinishLocked();
  void GrowthThread();

  const GrowableHashTableOptions options_;
  Env* const env_;
  const std::string next_path_;

  // Serializes Apply, steps, Verify, Sync and the start of scans.
  mutable std::mutex apply_mu_;
  // Guards the table pointers: shared by readers, exclusive to swap them.
  mutable std::shared_mutex tables_mu_;
  std::unique_ptr<DiskHashTable> old_;   // the table at |path| (null only after a failed finish)
  std::unique_ptr<DiskHashTable> next_;  // while growing

  std::atomic<uint64_t> cursor_{1};       // the next old page to move
  std::atomic<uint64_t> pages_moved_{0};  // by this process in this growth
  std::atomic<uint64_t> entries_moved_in_pass_{0};
  std::atomic<uint64_t> growths_finished_{0};
  std::atomic<int> scans_{0};             // ForEachEntry passes running: moves wait

  mutable std::mutex state_mu_;  // guards the members below
  std::condition_variable state_cv_;
  uint64_t requested_bytes_ = 0;  // a growth asked for (0 with requested_: by the factor)
  bool requested_ = false;
  bool stop_ = false;
  std::string last_error_;

  std::thread thread_;
};

}  // namespace dedupv1

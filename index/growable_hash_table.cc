#include "index/growable_hash_table.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "core/base/thread_name.h"

namespace dedupv1 {
namespace {

// Pause after a failed step, so a lasting error (a full disk) is no busy loop.
constexpr auto kErrorBackoff = std::chrono::seconds(1);
// Pause between steps, so Apply (waiting for apply_mu_) gets its turn.
constexpr auto kStepPause = std::chrono::milliseconds(1);
// Poll interval while a scan holds moves off.
constexpr auto kScanPoll = std::chrono::milliseconds(10);
// Bound of the pages of next one move step may rewrite (MoveLocked).
constexpr uint64_t kMaxNextPagesPerStep = 4096;

}  // namespace

GrowableHashTable::GrowableHashTable(const GrowableHashTableOptions& options, Env* env)
    : options_(options), env_(env), next_path_(NextPath(options.table.path)) {}

DiskHashTableOptions GrowableHashTable::TableOptions(const std::string& path, uint64_t size_bytes) const {
  DiskHashTableOptions o = options_.table;
  o.path = path;
  o.size_bytes = size_bytes;
  o.adopt_file_size = true;
  return o;
}

Status GrowableHashTable::Open(const GrowableHashTableOptions& options, Env* env,
                               std::unique_ptr<GrowableHashTable>* out) {
  if (options.grow_factor < 2) {
    return Status::InvalidArgument("chunk index grow factor must be at least 2, got " +
                                   std::to_string(options.grow_factor));
  }
  if (options.step_pages < 1) return Status::InvalidArgument("chunk index growth step must be at least one page");
  std::unique_ptr<GrowableHashTable> t(new GrowableHashTable(options, env));
  const std::string& path = options.table.path;
  const bool next_exists = env->FileExists(t->next_path_);
  if (next_exists && !env->FileExists(path)) {
    return Status::Corruption("chunk index: found " + t->next_path_ + " (a growth under way) but not the table " +
                              path + " it grows; restore " + path);
  }
  DEDUPV1_RETURN_IF_ERROR(DiskHashTable::Open(t->TableOptions(path, options.table.size_bytes), env, &t->old_));
  if (next_exists) {
    DEDUPV1_RETURN_IF_ERROR(
        DiskHashTable::Open(t->TableOptions(t->next_path_, options.table.size_bytes), env, &t->next_));
    const uint64_t b0 = t->old_->bucket_count();
    const uint64_t b1 = t->next_->bucket_count();
    if (b1 <= b0 || b1 % b0 != 0) {
      return Status::Corruption("chunk index growth table " + t->next_path_ + " has " + std::to_string(b1) +
                                " buckets, not a multiple of the " + std::to_string(b0) + " of " + path);
    }
  } else {
    // Left by a finished growth (its journal, emptied before the rename) or
    // by a creation a crash cut short (DiskHashTable::Create's temporary).
    for (const std::string& stale : {DiskHashTable::JournalPath(t->next_path_), t->next_path_ + ".tmp"}) {
      if (env->FileExists(stale)) DEDUPV1_RETURN_IF_ERROR(env->DeleteFile(stale));
    }
    if (t->old_->size_bytes() < options.table.size_bytes) {
      t->requested_ = true;
      t->requested_bytes_ = options.table.size_bytes;
    }
  }
  if (options.grow_in_background) t->thread_ = std::thread([p = t.get()] {
      NameThisThread("dd-ci-growth");
      p->GrowthThread();
    });
  *out = std::move(t);
  return Status::OK();
}

GrowableHashTable::~GrowableHashTable() {
  {
    std::lock_guard<std::mutex> l(state_mu_);
    stop_ = true;
  }
  state_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status GrowableHashTable::Get(const Fingerprint& fp, ChunkIndexEntry* entry) {
  std::shared_lock<std::shared_mutex> l(tables_mu_);
  if (!old_) return ClosedError();
  if (!next_) return old_->Get(fp, entry);
  // Old first: a move inserts into next before it erases from old, so an
  // entry that left old before this read is in next by the read of next.
  // A damaged page of old does not hide an entry next holds (moved, or
  // newer): next's answer wins whenever it has one.
  ChunkIndexEntry in_old;
  Status s_old = old_->Get(fp, &in_old);
  Status s_next = next_->Get(fp, entry);
  if (!s_next.IsNotFound()) return s_next;
  if (s_old.ok()) *entry = in_old;
  return s_old;
}

Status GrowableHashTable::Apply(const std::vector<Op>& ops) {
  std::lock_guard<std::mutex> l(apply_mu_);
  if (!old_) return ClosedError();
  if (!next_) return old_->Apply(ops);
  // Route each put to where its entry is before the batch (next first);
  // new entries go to next. Erases go to both. Each table's ops keep their
  // order, so a later op on a fingerprint still wins.
  std::unordered_map<Fingerprint, bool, FingerprintHasher> in_old;
  std::vector<Op> to_old, to_next;
  uint64_t new_entries = 0;
  for (const Op& op : ops) {
    if (op.erase) {
      to_old.push_back(op);
      to_next.push_back(op);
      continue;
    }
    auto it = in_old.find(op.fp);
    if (it == in_old.end()) {
      ChunkIndexEntry e;
      bool old_holds = false;
      Status s = next_->Get(op.fp, &e);
      if (s.IsNotFound()) {
        s = old_->Get(op.fp, &e);
        if (s.ok()) old_holds = true;
        else if (s.IsNotFound()) new_entries++;
        else return s;
      } else if (!s.ok()) {
        return s;
      }
      it = in_old.emplace(op.fp, old_holds).first;
    }
    (it->second ? to_old : to_next).push_back(op);
  }
  // Old's entries all move into next: new ones must leave them room, or the
  // growth would stall with next full.
  const uint64_t count = old_->entry_count() + next_->entry_count();
  if (count + new_entries > next_->capacity()) {
    return Status::NoSpace("chunk index full while it grows: " + std::to_string(count) + " of " +
                           std::to_string(next_->capacity()) + " entries (the growth makes room as it goes)");
  }
  // Old first: it only takes updates of entries next does not hold and
  // erases. An erase of an entry held twice (a crash between a move's insert
  // and erase) must leave old before next, or a crash in between would bring
  // old's older version back. A crash between the two leaves each
  // fingerprint as before the batch or after it.
  if (!to_old.empty()) DEDUPV1_RETURN_IF_ERROR(old_->Apply(to_old));
  if (!to_next.empty()) DEDUPV1_RETURN_IF_ERROR(next_->Apply(to_next));
  return Status::OK();
}

uint64_t GrowableHashTable::entry_count() const {
  std::shared_lock<std::shared_mutex> l(tables_mu_);
  return (old_ ? old_->entry_count() : 0) + (next_ ? next_->entry_count() : 0);
}

uint64_t GrowableHashTable::capacity() const {
  std::shared_lock<std::shared_mutex> l(tables_mu_);
  if (next_) return next_->capacity();
  return old_ ? old_->capacity() : 0;
}

uint64_t GrowableHashTable::batch_units() const {
  std::shared_lock<std::shared_mutex> l(tables_mu_);
  if (next_) return next_->batch_units();
  return old_ ? old_->batch_units() : 1;
}

Status GrowableHashTable::ClosedError() const {
  return Status::IOError("chunk index " + options_.table.path + " is closed after a failed growth");
}

ChunkTable::Visitor GrowableHashTable::SkipHeldByNext(DiskHashTable* next, const Visitor& visit, Status* lookup) {
  return [next, &visit, lookup](const Fingerprint& fp, const ChunkIndexEntry& e) {
    ChunkIndexEntry newer;
    Status s = next->Get(fp, &newer);
    if (s.ok()) return;  // held twice after a crash: next's version counts
    if (!s.IsNotFound()) {
      if (lookup->ok()) *lookup = s;
      return;
    }
    visit(fp, e);
  };
}

Status GrowableHashTable::Verify(uint64_t* pages_checked, const Visitor& visit) {
  std::lock_guard<std::mutex> l(apply_mu_);
  *pages_checked = 0;
  if (!old_) return ClosedError();
  if (!next_) return old_->Verify(pages_checked, visit);
  uint64_t old_pages = 0, next_pages = 0;
  Status lookup;
  DEDUPV1_RETURN_IF_ERROR(
      old_->Verify(&old_pages, visit ? SkipHeldByNext(next_.get(), visit, &lookup) : Visitor()));
  DEDUPV1_RETURN_IF_ERROR(lookup);
  DEDUPV1_RETURN_IF_ERROR(next_->Verify(&next_pages, visit));
  *pages_checked = old_pages + next_pages;
  return Status::OK();
}

Status GrowableHashTable::ForEachEntry(const Visitor& visit) {
  DiskHashTable* old_table;
  DiskHashTable* next_table;
  {
    // Under apply_mu_: no move is half done, and none starts until the scan
    // ends (MoveLocked checks scans_), so the pointers stay valid and no
    // entry changes tables under the scan.
    std::lock_guard<std::mutex> l(apply_mu_);
    if (!old_) return ClosedError();
    scans_++;
    old_table = old_.get();
    next_table = next_.get();
  }
  Status lookup;
  Status s = old_table->ForEachEntry(next_table ? SkipHeldByNext(next_table, visit, &lookup) : visit);
  if (s.ok()) s = lookup;
  if (s.ok() && next_table != nullptr) s = next_table->ForEachEntry(visit);
  scans_--;
  return s;
}

Status GrowableHashTable::Sync() {
  std::lock_guard<std::mutex> l(apply_mu_);
  if (!old_) return ClosedError();
  if (next_) DEDUPV1_RETURN_IF_ERROR(next_->Sync());
  return old_->Sync();
}

Status GrowableHashTable::Grow(uint64_t min_bytes) {
  {
    std::lock_guard<std::mutex> l(state_mu_);
    if (requested_) {
      // One request at a time: the larger target wins (0, the factor, is
      // replaced by an explicit size).
      if (min_bytes > requested_bytes_) requested_bytes_ = min_bytes;
      return Status::OK();
    }
    std::shared_lock<std::shared_mutex> t(tables_mu_);
    if (!old_) return Status::OK();
    // While growing, a request beyond the growth's target is queued: it
    // begins as soon as this one finishes.
    const uint64_t size = next_ ? next_->size_bytes() : old_->size_bytes();
    if (min_bytes != 0 && min_bytes <= size) return Status::OK();
    requested_ = true;
    requested_bytes_ = min_bytes;
  }
  state_cv_.notify_all();
  return Status::OK();
}

ChunkTableGrowth GrowableHashTable::growth() const {
  ChunkTableGrowth g;
  // state_mu_ first (the order Grow and the thread use), held throughout:
  // BeginLocked sets next_ and then clears requested_ under it, so a reader
  // never sees a growth that has begun as neither running nor requested.
  std::lock_guard<std::mutex> st(state_mu_);
  {
    std::shared_lock<std::shared_mutex> l(tables_mu_);
    if (next_) {
      g.table_bytes = next_->size_bytes();
      g.growing = true;
      g.from_bytes = old_ ? old_->size_bytes() : 0;
      g.pages_total = old_ ? old_->bucket_count() : 0;
      g.pages_moved = std::min(pages_moved_.load(), g.pages_total);
    } else if (old_) {
      g.table_bytes = old_->size_bytes();
    }
  }
  g.growths_finished = growths_finished_.load();
  g.requested = requested_;
  g.last_error = last_error_;
  return g;
}

Status GrowableHashTable::Step(bool* growing) {
  std::lock_guard<std::mutex> l(apply_mu_);
  Status s;
  if (!old_) {
    s = ReopenLocked();  // a finish whose reopen failed: try again
  } else if (next_) {
    s = MoveLocked();
  } else {
    uint64_t min_bytes = 0;
    bool requested = false;
    {
      std::lock_guard<std::mutex> st(state_mu_);
      requested = requested_;
      min_bytes = requested_bytes_;
    }
    if (requested) s = BeginLocked(min_bytes);
  }
  {
    std::lock_guard<std::mutex> st(state_mu_);
    if (!s.ok()) {
      last_error_ = s.ToString();
    } else {
      last_error_.clear();
    }
  }
  if (growing != nullptr) {
    std::shared_lock<std::shared_mutex> t(tables_mu_);
    *growing = next_ != nullptr;
  }
  return s;
}

Status GrowableHashTable::BeginLocked(uint64_t min_bytes) {
  const uint64_t page = options_.table.page_size;
  const uint64_t b0 = old_->bucket_count();
  uint64_t k = options_.grow_factor;
  if (min_bytes != 0) {
    const uint64_t want_buckets = std::max<uint64_t>((min_bytes + page - 1) / page, 2) - 1;
    k = std::max<uint64_t>(2, (want_buckets + b0 - 1) / b0);
  }
  const uint64_t new_bytes = (k * b0 + 1) * page;
  uint64_t free_bytes = 0;
  const std::string dir = DirName(options_.table.path);
  DEDUPV1_RETURN_IF_ERROR(env_->GetFreeSpace(dir, &free_bytes));
  if (free_bytes < new_bytes) {
    return Status::NoSpace("growing the chunk index " + options_.table.path + " from " +
                           std::to_string(old_->size_bytes()) + " to " + std::to_string(new_bytes) +
                           " bytes needs " + std::to_string(new_bytes) + " free bytes in " + dir + ", " +
                           std::to_string(free_bytes) + " are free");
  }
  std::unique_ptr<DiskHashTable> next;
  DEDUPV1_RETURN_IF_ERROR(DiskHashTable::Open(TableOptions(next_path_, new_bytes), env_, &next));
  if (next->bucket_count() != k * b0) {
    // An earlier next file of another size: not ours to fill.
    return Status::Corruption("chunk index growth table " + next_path_ + " has " +
                              std::to_string(next->bucket_count()) + " buckets, expected " + std::to_string(k * b0));
  }
  cursor_ = 1;
  pages_moved_ = 0;
  entries_moved_in_pass_ = 0;
  std::lock_guard<std::mutex> st(state_mu_);
  {
    std::unique_lock<std::shared_mutex> t(tables_mu_);
    next_ = std::move(next);
  }
  requested_ = false;
  requested_bytes_ = 0;
  last_error_.clear();
  return Status::OK();
}

Status GrowableHashTable::MoveLocked() {
  if (scans_.load() > 0) return Status::OK();  // a scan must not see entries change tables
  const uint64_t buckets = old_->bucket_count();
  const uint64_t first = cursor_.load();
  if (first > buckets) {
    if (old_->entry_count() == 0) return FinishLocked();
    if (entries_moved_in_pass_.load() == 0) {
      return Status::Corruption("chunk index " + options_.table.path + ": its header counts " +
                                std::to_string(old_->entry_count()) +
                                " entries, but a whole pass over its pages found none to move");
    }
    // Entries counted twice after a crash were erased as the pass went;
    // another pass confirms the table is empty.
    cursor_ = 1;
    entries_moved_in_pass_ = 0;
    return Status::OK();
  }
  // A step rewrites about k pages of next per old page (k = its share of
  // next's buckets): bound what one step holds in memory and in the journal.
  const uint64_t k = next_->bucket_count() / buckets;
  const uint64_t step = std::max<uint64_t>(1, std::min(options_.step_pages, kMaxNextPagesPerStep / k));
  const uint64_t n = std::min(step, buckets + 1 - first);
  const std::string what = "growing the chunk index " + options_.table.path + " from " +
                           std::to_string(old_->size_bytes()) + " to " + std::to_string(next_->size_bytes()) +
                           " bytes, moving its pages " + std::to_string(first) + ".." +
                           std::to_string(first + n - 1);
  Status s = MoveRunLocked(first, n);
  if (!s.ok()) return s.WithContext(what);
  return Status::OK();
}

Status GrowableHashTable::MoveRunLocked(uint64_t first, uint64_t n) {
  std::vector<std::pair<Fingerprint, ChunkIndexEntry>> entries;
  DEDUPV1_RETURN_IF_ERROR(old_->EntriesOfPages(first, n, &entries));
  std::vector<Op> inserts, erases;
  for (const auto& [fp, entry] : entries) {
    erases.push_back(Op{fp, ChunkIndexEntry(), true});
    ChunkIndexEntry newer;
    Status s = next_->Get(fp, &newer);
    if (s.ok()) continue;  // next's version is newer: never overwritten by a move
    if (!s.IsNotFound()) return s;
    inserts.push_back(Op{fp, entry, false});
  }
  // Insert before erase: Get reads old before next, so an entry in flight is
  // always found in one of them; a crash in between leaves it in both.
  if (!inserts.empty()) DEDUPV1_RETURN_IF_ERROR(next_->Apply(inserts));
  if (!erases.empty()) DEDUPV1_RETURN_IF_ERROR(old_->Apply(erases));
  cursor_ = first + n;
  pages_moved_ += n;
  entries_moved_in_pass_ += entries.size();
  return Status::OK();
}

Status GrowableHashTable::FinishLocked() {
  const std::string& path = options_.table.path;
  DEDUPV1_RETURN_IF_ERROR(next_->Sync());
  DEDUPV1_RETURN_IF_ERROR(old_->Sync());
  std::unique_lock<std::shared_mutex> t(tables_mu_);
  next_.reset();
  old_.reset();
  // Both journals empty and durably so: after the rename |path|'s journal is
  // the new table's, and a batch of the old table redone there would write
  // its pages into the wrong table.
  Status s = [&]() -> Status {
    for (const std::string& journal : {DiskHashTable::JournalPath(path), DiskHashTable::JournalPath(next_path_)}) {
      std::unique_ptr<File> f;
      DEDUPV1_RETURN_IF_ERROR(env_->OpenFile(journal, OpenMode::kCreate, &f));
      DEDUPV1_RETURN_IF_ERROR(f->Truncate(0));
      DEDUPV1_RETURN_IF_ERROR(f->Sync());
    }
    DEDUPV1_RETURN_IF_ERROR(env_->RenameFile(next_path_, path));
    DEDUPV1_RETURN_IF_ERROR(env_->SyncDir(DirName(path)));
    // Only a leftover now (Open removes it too).
    (void)env_->DeleteFile(DiskHashTable::JournalPath(next_path_));
    return Status::OK();
  }();
  // Reopen whatever |path| now is (the grown table, or, the rename failed,
  // the old one with next beside it to resume) before readers go on: they
  // wait on tables_mu_ meanwhile, and never find the tables closed. If it
  // fails, Step retries it (ReopenLocked).
  Status reopen = OpenTables(&old_, &next_);
  if (!reopen.ok()) return reopen;
  if (!s.ok()) {
    cursor_ = 1;
    return s.WithContext("finishing the growth of the chunk index " + path);
  }
  growths_finished_++;
  pages_moved_ = 0;
  return Status::OK();
}

Status GrowableHashTable::OpenTables(std::unique_ptr<DiskHashTable>* old_table,
                                     std::unique_ptr<DiskHashTable>* next_table) {
  const std::string& path = options_.table.path;
  old_table->reset();
  next_table->reset();
  Status s = DiskHashTable::Open(TableOptions(path, options_.table.size_bytes), env_, old_table);
  if (s.ok() && env_->FileExists(next_path_)) {
    s = DiskHashTable::Open(TableOptions(next_path_, options_.table.size_bytes), env_, next_table);
  }
  if (!s.ok()) {
    old_table->reset();
    next_table->reset();
    return s.WithContext("reopening the chunk index " + path +
                         " after its growth (retried every second; a restart of the target resumes it)");
  }
  return Status::OK();
}

Status GrowableHashTable::ReopenLocked() {
  std::unique_ptr<DiskHashTable> old_table, next_table;
  DEDUPV1_RETURN_IF_ERROR(OpenTables(&old_table, &next_table));
  std::unique_lock<std::shared_mutex> t(tables_mu_);
  old_ = std::move(old_table);
  next_ = std::move(next_table);
  return Status::OK();
}

void GrowableHashTable::GrowthThread() {
  std::unique_lock<std::mutex> l(state_mu_);
  while (!stop_) {
    bool work = requested_;
    if (!work) {
      std::shared_lock<std::shared_mutex> t(tables_mu_);
      work = next_ != nullptr || old_ == nullptr;  // growing, or a failed reopen to retry
    }
    if (!work) {
      state_cv_.wait(l);
      continue;
    }
    l.unlock();
    Status s;
    if (scans_.load() > 0) {
      std::this_thread::sleep_for(kScanPoll);
    } else {
      s = Step();
    }
    l.lock();
    if (stop_) break;
    state_cv_.wait_for(l, s.ok() ? std::chrono::duration_cast<std::chrono::milliseconds>(kStepPause)
                                 : std::chrono::duration_cast<std::chrono::milliseconds>(kErrorBackoff),
                       [this] { return stop_; });
  }
}

}  // namespace dedupv1

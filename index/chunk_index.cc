#include "index/chunk_index.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <unordered_set>

#include "core/base/thread_name.h"
#include "index/growable_hash_table.h"
#include "index/rados_chunk_table.h"

namespace dedupv1 {
namespace {

// Pause of the write-back thread after a failed batch, so a persistent I/O
// error does not become a busy loop.
constexpr auto kErrorBackoff = std::chrono::milliseconds(500);

// Errors that retrying will not cure for this entry (its bucket chain is full,
// the index is full, or a page on its probe path is damaged). Such entries are
// parked so they neither block the rest nor keep the thread busy.
bool IsEntryError(const Status& s) { return s.IsNoSpace() || s.IsCorruption(); }

}  // namespace

ChunkIndex::ChunkIndex(const ChunkIndexOptions& options, std::unique_ptr<ChunkTable> table,
                       std::function<bool(ContainerId)> is_committed)
    : options_(options), table_(std::move(table)), is_committed_(std::move(is_committed)),
      write_back_batch_(static_cast<size_t>(std::clamp<uint64_t>(
          4 * table_->batch_units(), kMinWriteBackBatch, kMaxWriteBackBatch))) {
  thread_ = std::thread([this] {
    NameThisThread("dd-ci-writeback");
    WriteBackThread();
  });
}

ChunkIndex::~ChunkIndex() { (void)Close(); }

Status ChunkIndex::OpenTable(const ChunkIndexOptions& options, Env* env, std::unique_ptr<ChunkTable>* out) {
  if (options.table_backend == "disk") {
    GrowableHashTableOptions go;
    go.table = options.table;
    go.grow_factor = options.grow_factor;
    go.step_pages = options.grow_step_pages;
    go.grow_in_background = options.grow_in_background;
    std::unique_ptr<GrowableHashTable> disk;
    DEDUPV1_RETURN_IF_ERROR(GrowableHashTable::Open(go, env, &disk));
    *out = std::move(disk);
    return Status::OK();
  }
  if (options.table_backend == "rados") {
    RadosChunkTableOptions ro;
    ro.rados = options.rados;
    ro.shards = options.rados_shards;
    ro.key_size = options.table.key_size;
    std::unique_ptr<RadosChunkTable> rados;
    DEDUPV1_RETURN_IF_ERROR(RadosChunkTable::Open(ro, &rados));
    *out = std::move(rados);
    return Status::OK();
  }
  return Status::InvalidArgument("chunk index: unknown table backend '" + options.table_backend + "' (disk or rados)");
}

Status ChunkIndex::TableExists(const ChunkIndexOptions& options, Env* env, bool* exists) {
  if (options.cluster_scope) return SharedTableExists(options, exists);
  if (options.table_backend == "rados") {
    RadosChunkTableOptions ro;
    ro.rados = options.rados;
    return RadosChunkTable::Exists(ro, exists);
  }
  *exists = env->FileExists(options.table.path);
  return Status::OK();
}

std::string ChunkIndex::TableWhere(const ChunkIndexOptions& options) {
  if (options.cluster_scope) {
    return "the shared chunk index table (rados:" + options.rados.index_pool + "/" + options.rados.store + "/" +
           RadosSharedChunkTable::kHeaderObject + " and its shards)";
  }
  if (options.table_backend == "rados") {
    return "the chunk index table (rados:" + options.rados.index_pool + "/" + options.rados.store + "/" +
           options.rados.ObjectPrefix() + RadosChunkTable::kHeaderObject + " and its shards)";
  }
  return options.table.path;
}

Status ChunkIndex::Open(const ChunkIndexOptions& options, Env* env,
                        std::function<bool(ContainerId)> is_committed,
                        std::unique_ptr<ChunkIndex>* out) {
  if (!is_committed) return Status::InvalidArgument("chunk index: no commit oracle given");
  if (options.aux_hard_limit < 1 || options.aux_hard_limit < options.aux_soft_limit) {
    return Status::InvalidArgument("chunk index: aux hard limit " +
                                   std::to_string(options.aux_hard_limit) +
                                   " must be at least 1 and not below the soft limit " +
                                   std::to_string(options.aux_soft_limit));
  }
  std::unique_ptr<ChunkTable> table;
  std::shared_ptr<ChunkClaims> claims;
  if (options.cluster_scope) DEDUPV1_RETURN_IF_ERROR(OpenShared(options, &claims, &table));
  else DEDUPV1_RETURN_IF_ERROR(OpenTable(options, env, &table));
  out->reset(new ChunkIndex(options, std::move(table), std::move(is_committed)));
  (*out)->claims_ = std::move(claims);
  if ((*out)->claims_) (*out)->skip_ = std::make_unique<LookupSkipPolicy>(options.skip_lookups_below);
  return Status::OK();
}

Status ChunkIndex::Lookup(const Fingerprint& fp, ChunkIndexEntry* entry, bool* from_table) {
  lookups_++;
  if (from_table != nullptr) *from_table = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = aux_.find(fp);
    if (it != aux_.end() && !StaleClaimLocked(it->second)) {
      if (it->second.erased) {
        misses_++;
        return Status::NotFound("chunk " + fp.ToHex() + " was erased");
      }
      *entry = it->second.entry;
      aux_hits_++;
      return Status::OK();
    }
    table_reads_++;
    auto p = prefetch_.find(fp);
    if (p != prefetch_.end()) {
      const Prefetched got = p->second;
      // A "none" read at the current table generation stays for a second
      // decision of the chunk in the same run (the write path's second pass
      // with container rewriting; a chunk stored meanwhile is found in the
      // auxiliary index first); DropPrefetch forgets it when the run ends.
      if (got.skipped || got.found || got.generation != table_generation_) prefetch_.erase(p);
      if (got.skipped) {
        if (skipped_.size() >= kMaxPrefetched) skipped_.clear();  // runs that never claimed
        skipped_.insert(fp);
        lookups_skipped_++;
        misses_++;
        return Status::NotFound("chunk " + fp.ToHex() + " taken as new without a lookup");
      }
      // A write-back since the read may have changed the table. In cluster
      // scope a "none" stays usable all the same: the chunk is then stored
      // and claimed, and a claim of a chunk that exists by then is lost and
      // maps the winner's copy (as a skipped lookup does,
      // index/lookup_skip_policy.h); reading it again one by one cost a
      // round trip per chunk whenever a write-back ran during a run.
      if (got.generation == table_generation_ || (claims_ && !got.found)) {
        if (!got.found) {
          misses_++;
          return Status::NotFound("chunk " + fp.ToHex() + " not in the chunk index");
        }
        *entry = got.entry;
        disk_hits_++;
        if (from_table != nullptr) *from_table = true;
        return Status::OK();
      }
    }
  }
  // Not holding mu_: an entry written back meanwhile is in the table before
  // it leaves the auxiliary index.
  Status s = table_->Get(fp, entry);
  if (s.ok()) {
    disk_hits_++;
    if (from_table != nullptr) *from_table = true;
  } else if (s.IsNotFound()) {
    misses_++;
  }
  if (skip_ && (s.ok() || s.IsNotFound())) skip_->CountLookups(1, s.ok() ? 1 : 0);
  return s;
}

Status ChunkIndex::LookupMany(const std::vector<Fingerprint>& fps, std::vector<ChunkIndexEntry>* entries,
                              std::vector<bool>* found, std::vector<bool>* from_table) {
  lookups_ += fps.size();
  entries->assign(fps.size(), ChunkIndexEntry());
  found->assign(fps.size(), false);
  if (from_table != nullptr) from_table->assign(fps.size(), false);
  std::vector<size_t> rest;
  std::vector<Fingerprint> rest_fps;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (size_t i = 0; i < fps.size(); i++) {
      auto it = aux_.find(fps[i]);
      if (it == aux_.end() || StaleClaimLocked(it->second)) {
        rest.push_back(i);
        rest_fps.push_back(fps[i]);
      } else if (it->second.erased) {
        misses_++;
      } else {
        (*entries)[i] = it->second.entry;
        (*found)[i] = true;
        aux_hits_++;
      }
    }
  }
  if (rest.empty()) return Status::OK();
  // As in Lookup: the table is read after the auxiliary index, and write-back
  // writes the table before it drops an auxiliary entry.
  std::vector<ChunkIndexEntry> got;
  std::vector<bool> got_found;
  DEDUPV1_RETURN_IF_ERROR(table_->GetMany(rest_fps, &got, &got_found));
  if (skip_) skip_->CountLookups(rest.size(), std::count(got_found.begin(), got_found.end(), true));
  for (size_t j = 0; j < rest.size(); j++) {
    if (!got_found[j]) {
      misses_++;
      continue;
    }
    disk_hits_++;
    (*entries)[rest[j]] = got[j];
    (*found)[rest[j]] = true;
    if (from_table != nullptr) (*from_table)[rest[j]] = true;
  }
  return Status::OK();
}

bool ChunkIndex::ProbeRun(uint64_t generation, std::vector<Fingerprint>* rest) {
  // The probe: the chunks whose fingerprints share the first one's top four
  // bits, a sixteenth of the run in one shard object of 16 (shards are the
  // first fingerprint bits), so one read.
  std::vector<Fingerprint> probe, others;
  const uint8_t top = (*rest)[0].bytes[0] >> 4;
  for (const Fingerprint& fp : *rest) ((fp.bytes[0] >> 4) == top ? probe : others).push_back(fp);
  std::vector<ChunkIndexEntry> got;
  std::vector<bool> got_found;
  if (!table_->GetMany(probe, &got, &got_found).ok()) return false;  // Lookup reads and reports
  const auto hits = static_cast<uint64_t>(std::count(got_found.begin(), got_found.end(), true));
  skip_->CountLookups(probe.size(), hits);
  std::lock_guard<std::mutex> l(mu_);
  if (prefetch_.size() + rest->size() > kMaxPrefetched) return false;
  KeepPrefetchedLocked(probe, got, got_found, generation);
  if (hits > 0) {  // the run meets stored data: the others are looked up too
    *rest = std::move(others);
    return !rest->empty();
  }
  for (const Fingerprint& fp : others) {
    Prefetched& p = prefetch_[fp];
    p.found = false;
    p.skipped = true;
  }
  return false;
}

void ChunkIndex::Prefetch(const std::vector<Fingerprint>& fps) {
  if (!table_->batched()) return;
  uint64_t generation;
  bool probe = true;  // cluster scope, skipping: only a probe of the run is read first
  std::vector<Fingerprint> rest;
  {
    std::lock_guard<std::mutex> l(mu_);
    generation = table_generation_;
    for (const Fingerprint& fp : fps) {
      if (aux_.count(fp) == 0 && prefetch_.count(fp) == 0) rest.push_back(fp);
    }
    if (rest.empty()) return;
    if (!(skip_ && skip_->Skip())) {
      // Without history every offered fingerprint is assumed to need the table.
      const double share = offered_ < 1 ? 1.0 : std::min(1.0, table_reads_ / offered_);
      offered_ += static_cast<double>(rest.size());
      if (offered_ > kPrefetchHistory) {
        offered_ /= 2;
        table_reads_ /= 2;
      }
      if (share * static_cast<double>(rest.size()) < table_->GetManyCost(rest.size())) return;
      probe = false;
    }
  }
  if (probe && !ProbeRun(generation, &rest)) return;
  std::vector<ChunkIndexEntry> got;
  std::vector<bool> got_found;
  if (!table_->GetMany(rest, &got, &got_found).ok()) return;
  if (skip_) skip_->CountLookups(rest.size(), std::count(got_found.begin(), got_found.end(), true));
  std::lock_guard<std::mutex> l(mu_);
  if (prefetch_.size() + rest.size() > kMaxPrefetched) return;
  KeepPrefetchedLocked(rest, got, got_found, generation);
}

void ChunkIndex::KeepPrefetchedLocked(const std::vector<Fingerprint>& fps, const std::vector<ChunkIndexEntry>& got,
                                      const std::vector<bool>& found, uint64_t generation) {
  for (size_t i = 0; i < fps.size(); i++) {
    Prefetched& p = prefetch_[fps[i]];
    p.entry = got[i];
    p.found = found[i];
    p.generation = generation;
  }
}

void ChunkIndex::DropPrefetch(const std::vector<Fingerprint>& fps) {
  std::lock_guard<std::mutex> l(mu_);
  if (prefetch_.empty()) return;
  for (const Fingerprint& fp : fps) prefetch_.erase(fp);
}

void ChunkIndex::EnqueueLocked(const Fingerprint& fp, AuxEntry* e) {
  if (e->queued || e->stuck || !WritableLocked(*e)) return;
  e->queued = true;
  ready_.push_back(fp);
}

void ChunkIndex::EraseLocked(AuxMap::iterator it) {
  const AuxEntry& e = it->second;
  if (!e.entry.committed) aux_uncommitted_--;
  if (!e.in_table) aux_new_--;
  if (e.stuck) stuck_--;
  aux_.erase(it);
}

bool ChunkIndex::WorkAvailableLocked() const {
  if (ready_.empty()) return false;
  return idle_ || throttled_ > 0 || aux_.size() > options_.aux_soft_limit;
}

Status ChunkIndex::PutNew(const Fingerprint& fp, ContainerId container) {
  if (claims_) return Status::OK();  // cluster scope: ClaimNew records the chunks whose claims we won
  return PutNewEntry(fp, container);
}

Status ChunkIndex::PutNewEntry(const Fingerprint& fp, ContainerId container, uint64_t claim_epoch) {
  if (fp.size != options_.table.key_size) {
    return Status::InvalidArgument("fingerprint size " + std::to_string(fp.size) +
                                   " does not match chunk index key size " +
                                   std::to_string(options_.table.key_size));
  }
  std::unique_lock<std::mutex> l(mu_);
  if (stop_) return Status::Aborted("chunk index is closed");
  if (aux_.size() >= options_.aux_hard_limit) {
    bool counted = false;
    while (aux_.size() >= options_.aux_hard_limit && DrainableLocked() > 0 &&
           !write_back_failing_ && !stop_) {
      if (!counted) throttled_puts_++;
      counted = true;
      throttled_++;
      work_cv_.notify_one();
      space_cv_.wait(l);
      throttled_--;
    }
    if (stop_) return Status::Aborted("chunk index is closed");
  }
  auto it = aux_.find(fp);
  if (it != aux_.end() && !it->second.erased) return Status::OK();

  uint64_t persistent = table_->entry_count();
  uint64_t capacity = table_->capacity();
  if (growable() && options_.grow_at > 0 &&
      static_cast<double>(persistent + aux_new_ + 1) > options_.grow_at * static_cast<double>(capacity)) {
    (void)table_->Grow(0);  // asynchronous; OK without effect while a growth runs
  }
  if (persistent + aux_new_ + 1 > capacity && growable()) {
    // Full while the table grows (or is about to): wait for the capacity to
    // rise rather than refuse the write.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.grow_wait_ms);
    bool counted = false;
    while (persistent + aux_new_ + 1 > capacity && !stop_ && std::chrono::steady_clock::now() < deadline) {
      if (options_.grow_at > 0) (void)table_->Grow(0);  // queued behind a growth that makes too little room
      const ChunkTableGrowth g = table_->growth();
      if (!g.growing && !g.requested) break;
      // A growth that cannot begin (no room for the larger table): its
      // error, not a minute's wait per new chunk.
      if (!g.growing && !g.last_error.empty()) break;
      if (!counted) growth_waits_++;
      counted = true;
      space_cv_.wait_for(l, std::chrono::milliseconds(20));
      persistent = table_->entry_count();
      capacity = table_->capacity();
    }
    if (stop_) return Status::Aborted("chunk index is closed");
    it = aux_.find(fp);
    if (it != aux_.end() && !it->second.erased) return Status::OK();
    persistent = table_->entry_count();
    capacity = table_->capacity();
  }
  if (persistent + aux_new_ + 1 > capacity) {
    std::string why;
    if (growable()) {
      const ChunkTableGrowth g = table_->growth();
      if (!g.last_error.empty()) why = "; it cannot grow: " + g.last_error;
    }
    Status full = Status::NoSpace("chunk index full: " + std::to_string(persistent + aux_new_) + " of " +
                                  std::to_string(capacity) + " entries" + why);
    refused_puts_++;
    last_error_ = full.ToString();  // the monitor's /index shows it
    return full;
  }
  AuxEntry e;
  e.entry.container = container;
  e.entry.committed = is_committed_(container);
  e.version = ++next_version_;
  e.claim_epoch = claim_epoch;
  if (it != aux_.end()) {
    // Replaces a tombstone: the events it counted stay counted. The table may
    // still hold the erased entry, with counts whose events the log may trim
    // once the erasure is written back: an uncommitted new entry must not
    // hold that deletion back until its container commits (or fails).
    e.entry.last_event_id = it->second.entry.last_event_id;
    e.in_table = it->second.in_table;
    e.queued = it->second.queued;
    e.table_delete = !e.entry.committed;
    if (it->second.stuck) stuck_--;
    it->second = e;
    if (!e.in_table) aux_new_++;
  } else {
    aux_new_++;
  }
  auto ins = aux_.find(fp);
  if (it == aux_.end()) ins = aux_.emplace(fp, e).first;
  if (!ins->second.entry.committed) aux_uncommitted_++;
  EnqueueLocked(fp, &ins->second);
  if (WorkAvailableLocked()) work_cv_.notify_one();
  return Status::OK();
}

void ChunkIndex::OnContainerCommitted(ContainerId container, const std::vector<Fingerprint>& fps) {
  std::lock_guard<std::mutex> l(mu_);
  for (const Fingerprint& fp : fps) {
    auto it = aux_.find(fp);
    if (it == aux_.end()) continue;
    AuxEntry& e = it->second;
    if (e.entry.container != container || e.entry.committed) continue;
    e.entry.committed = true;
    e.moved_from = kNoContainer;
    e.table_delete = false;  // writing the entry replaces the table's older one
    e.version = ++next_version_;
    aux_uncommitted_--;
    EnqueueLocked(fp, &e);
  }
  if (WorkAvailableLocked()) work_cv_.notify_one();
}

void ChunkIndex::OnContainerFailed(ContainerId container, const std::vector<Fingerprint>& fps) {
  std::lock_guard<std::mutex> l(mu_);
  for (const Fingerprint& fp : fps) {
    auto it = aux_.find(fp);
    if (it == aux_.end()) continue;
    AuxEntry& e = it->second;
    if (e.entry.container != container || e.entry.committed) continue;
    if (e.moved_from != kNoContainer) {
      // Moved to a copy that never became durable: the former copy, with the
      // counts changed meanwhile, is the entry again.
      e.entry.container = e.moved_from;
      e.entry.committed = true;
      e.moved_from = kNoContainer;
      e.version = ++next_version_;
      aux_uncommitted_--;
      EnqueueLocked(fp, &e);
      continue;
    }
    if (e.table_delete) {
      // It replaced a tombstone whose deletion may not be written yet: it
      // is that tombstone again (the table's older entry must go).
      e.table_delete = false;
      e.erased = true;
      e.entry.committed = true;
      e.entry.usage_count = 0;
      e.version = ++next_version_;
      aux_uncommitted_--;
      EnqueueLocked(fp, &e);
      continue;
    }
    EraseLocked(it);
  }
  space_cv_.notify_all();
}

namespace {

uint32_t AddSaturating(uint32_t v, int64_t delta) {
  int64_t r = static_cast<int64_t>(v) + delta;
  r = std::clamp<int64_t>(r, 0, std::numeric_limits<uint32_t>::max());
  return static_cast<uint32_t>(r);
}

}  // namespace

namespace {

// Applies |delta| for |event_id| to |e| (see AddUsage); returns whether it did.
bool ApplyUsageTo(ChunkIndexEntry* e, int64_t delta, uint64_t event_id) {
  if (event_id != 0) {
    if (e->last_event_id >= event_id) return false;
    e->last_event_id = event_id;
  }
  e->usage_count = AddSaturating(e->usage_count, delta);
  return true;
}

}  // namespace

void ChunkIndex::ApplyUsageLocked(const Fingerprint& fp, AuxEntry* e, const UsageChange& change,
                                  UsageOutcome* outcome) {
  const bool changed = ApplyUsageTo(&e->entry, change.delta, change.event_id);
  outcome->applied = changed;
  outcome->usage = e->entry.usage_count;
  outcome->entry_container = e->entry.container;
  if (!changed) return;
  if (!e->entry.committed && change.committed_copy != kNoContainer && is_committed_(change.committed_copy)) {
    e->entry.container = change.committed_copy;
    e->entry.committed = true;
    e->moved_from = kNoContainer;
    e->table_delete = false;  // writing the entry replaces the table's older one
    aux_uncommitted_--;
    outcome->entry_container = e->entry.container;
  }
  e->version = ++next_version_;
  EnqueueLocked(fp, e);
  if (WorkAvailableLocked()) work_cv_.notify_one();
}

void ChunkIndex::ApplyUsageToLoadedLocked(const Fingerprint& fp, const ChunkIndexEntry& loaded,
                                          const UsageChange& change, UsageOutcome* outcome) {
  AuxEntry e;
  e.entry = loaded;
  e.entry.committed = true;  // only committed entries ever reach the table
  e.in_table = true;
  outcome->entry_container = loaded.container;
  if (!ApplyUsageTo(&e.entry, change.delta, change.event_id)) {
    // Already counted: nothing to write back.
    outcome->applied = false;
    outcome->usage = loaded.usage_count;
    return;
  }
  outcome->applied = true;
  outcome->usage = e.entry.usage_count;
  e.version = ++next_version_;
  auto [ins, inserted] = aux_.emplace(fp, e);
  EnqueueLocked(fp, &ins->second);
  if (WorkAvailableLocked()) work_cv_.notify_one();
}

Status ChunkIndex::AddUsage(const Fingerprint& fp, int64_t delta, uint64_t event_id, uint32_t* usage,
                            bool* applied, ContainerId committed_copy) {
  UsageOutcome outcome;
  DEDUPV1_RETURN_IF_ERROR(AddUsageOne(UsageChange{fp, delta, event_id, committed_copy}, &outcome));
  if (applied != nullptr) *applied = outcome.applied;
  if (usage != nullptr) *usage = outcome.usage;
  return Status::OK();
}

Status ChunkIndex::AddUsageOne(const UsageChange& change, UsageOutcome* outcome) {
  const Fingerprint& fp = change.fp;
  if (claims_) {
    std::vector<UsageOutcome> outcomes;
    DEDUPV1_RETURN_IF_ERROR(AddUsageShared({change}, &outcomes));
    *outcome = outcomes[0];
    return Status::OK();
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = aux_.find(fp);
    if (it != aux_.end()) {
      if (it->second.erased) return Status::NotFound("chunk " + fp.ToHex() + " was erased");
      ApplyUsageLocked(fp, &it->second, change, outcome);
      return Status::OK();
    }
  }
  // Load from the table. Holding write_back_mu_ keeps a write-back from
  // changing the table entry between this read and the insert below.
  std::lock_guard<std::mutex> wb(write_back_mu_);
  ChunkIndexEntry loaded;
  Status s = table_->Get(fp, &loaded);
  std::lock_guard<std::mutex> l(mu_);
  auto it = aux_.find(fp);
  if (it != aux_.end()) {
    // Someone put it into the auxiliary index meanwhile; that version is newer.
    if (it->second.erased) return Status::NotFound("chunk " + fp.ToHex() + " was erased");
    ApplyUsageLocked(fp, &it->second, change, outcome);
    return Status::OK();
  }
  DEDUPV1_RETURN_IF_ERROR(s);
  ApplyUsageToLoadedLocked(fp, loaded, change, outcome);
  return Status::OK();
}

Status ChunkIndex::AddUsageMany(const std::vector<UsageChange>& changes, std::vector<UsageOutcome>* outcomes) {
  outcomes->assign(changes.size(), UsageOutcome());
  if (claims_) return AddUsageShared(changes, outcomes);
  if (!table_->batched()) return AddUsageEach(changes, outcomes);
  // Held from before the auxiliary index is read until the loaded entries
  // are in it: no write-back round drops an entry the batch found in memory,
  // nor changes an entry in the table between its load and its insert.
  std::lock_guard<std::mutex> wb(write_back_mu_);
  std::vector<Fingerprint> to_load;
  {
    std::lock_guard<std::mutex> l(mu_);
    std::unordered_set<Fingerprint, FingerprintHasher> seen;
    for (const UsageChange& c : changes) {
      if (aux_.count(c.fp) == 0 && seen.insert(c.fp).second) to_load.push_back(c.fp);
    }
  }
  std::unordered_map<Fingerprint, ChunkIndexEntry, FingerprintHasher> loaded;
  if (!to_load.empty()) {
    std::vector<ChunkIndexEntry> got;
    std::vector<bool> found;
    DEDUPV1_RETURN_IF_ERROR(table_->GetMany(to_load, &got, &found));
    for (size_t i = 0; i < to_load.size(); i++) {
      if (found[i]) loaded.emplace(to_load[i], got[i]);
    }
  }
  // One hold of mu_ for the whole batch: a fingerprint then either has an
  // entry for all of its changes or for none (all NotFound), so a caller
  // that retries the NotFound ones one by one keeps each entry's changes in
  // order. (Messages are made after it: formatting is no work for the lock.)
  {
    std::lock_guard<std::mutex> l(mu_);
    aux_.reserve(aux_.size() + loaded.size());
    for (size_t i = 0; i < changes.size(); i++) {
      const UsageChange& c = changes[i];
      UsageOutcome& o = (*outcomes)[i];
      auto it = aux_.find(c.fp);
      if (it != aux_.end()) {
        if (it->second.erased) {
          o.no_entry = true;
        } else {
          ApplyUsageLocked(c.fp, &it->second, c, &o);
        }
        continue;
      }
      auto got = loaded.find(c.fp);
      if (got == loaded.end()) {
        o.no_entry = true;  // neither in memory nor in the table
        continue;
      }
      ApplyUsageToLoadedLocked(c.fp, got->second, c, &o);
    }
  }
  for (size_t i = 0; i < changes.size(); i++) {
    UsageOutcome& o = (*outcomes)[i];
    if (o.no_entry) o.status = Status::NotFound("chunk " + changes[i].fp.ToHex() + " has no entry");
  }
  return Status::OK();
}

Status ChunkIndex::AddUsageEach(const std::vector<UsageChange>& changes, std::vector<UsageOutcome>* outcomes) {
  // One Get per load costs what a GetMany would: the plain loop keeps the
  // local table's write-back waiting no longer than one read at a time. The
  // lock is not held across the loop, so an entry may appear between two
  // changes of one fingerprint (PutNew): once a change found none, the later
  // ones of that fingerprint are not tried (NotFound, no_entry false), and
  // the caller's retries in order keep the entry's changes in order.
  std::unordered_set<Fingerprint, FingerprintHasher> without_entry;
  for (size_t i = 0; i < changes.size(); i++) {
    const UsageChange& c = changes[i];
    UsageOutcome& o = (*outcomes)[i];
    if (without_entry.count(c.fp) != 0) {
      o.status = Status::NotFound("chunk " + c.fp.ToHex() + ": an earlier change found no entry");
      continue;
    }
    o.status = AddUsageOne(c, &o);
    if (o.status.IsNotFound()) {
      o.no_entry = true;
      without_entry.insert(c.fp);
    } else if (!o.status.ok()) {
      return o.status;
    }
  }
  return Status::OK();
}

Status ChunkIndex::FindOrLoadLocked(const Fingerprint& fp, std::unique_lock<std::mutex>* l, AuxMap::iterator* out) {
  auto it = aux_.find(fp);
  if (it == aux_.end()) {
    l->unlock();
    ChunkIndexEntry loaded;
    Status s = table_->Get(fp, &loaded);
    l->lock();
    DEDUPV1_RETURN_IF_ERROR(s);
    it = aux_.find(fp);
    if (it == aux_.end()) {
      AuxEntry e;
      e.entry = loaded;
      e.entry.committed = true;  // only committed entries ever reach the table
      e.in_table = true;
      it = aux_.emplace(fp, e).first;
    }
  }
  *out = it;
  return Status::OK();
}

Status ChunkIndex::Move(const Fingerprint& fp, ContainerId container, bool* moved, ContainerId* from) {
  *moved = false;
  if (from != nullptr) *from = kNoContainer;
  if (claims_) return Status::NotSupported("chunk index move of " + fp.ToHex() + " in cluster scope");
  // As Erase: holding write_back_mu_ keeps a write-back from changing the
  // table entry between the read below and the insert.
  std::lock_guard<std::mutex> wb(write_back_mu_);
  std::unique_lock<std::mutex> l(mu_);
  if (stop_) return Status::Aborted("chunk index is closed");
  AuxMap::iterator it;
  DEDUPV1_RETURN_IF_ERROR(FindOrLoadLocked(fp, &l, &it));
  AuxEntry& e = it->second;
  if (e.erased) return Status::NotFound("chunk " + fp.ToHex() + " was erased");
  if (!e.entry.committed || e.table_delete || e.entry.container == container) return Status::OK();
  const ContainerId former = e.entry.container;
  e.entry.container = container;
  e.entry.committed = is_committed_(container);
  if (!e.entry.committed) {
    e.moved_from = former;
    aux_uncommitted_++;
    if (e.stuck) {  // only committed entries are stuck; Flush retries it once committed
      e.stuck = false;
      stuck_--;
    }
  }
  e.version = ++next_version_;
  EnqueueLocked(fp, &e);
  if (WorkAvailableLocked()) work_cv_.notify_one();
  *moved = true;
  if (from != nullptr) *from = former;
  return Status::OK();
}

Status ChunkIndex::Erase(const Fingerprint& fp) {
  if (claims_) {
    return Status::NotSupported("chunk index erase of " + fp.ToHex() +
                                ": garbage collection of a cluster-scope store comes with cluster GC "
                                "(design-15 phase 5)");
  }
  std::lock_guard<std::mutex> wb(write_back_mu_);
  std::unique_lock<std::mutex> l(mu_);
  AuxMap::iterator it;
  DEDUPV1_RETURN_IF_ERROR(FindOrLoadLocked(fp, &l, &it));
  AuxEntry& e = it->second;
  if (e.erased) return Status::NotFound("chunk " + fp.ToHex() + " was erased");
  e.table_delete = false;  // the tombstone deletes the table's entry
  if (!e.entry.committed) {
    // Written back once committed: as a tombstone it must go out now.
    e.entry.committed = true;
    e.moved_from = kNoContainer;
    aux_uncommitted_--;
  }
  if (!e.in_table) {
    // A tombstone is no new entry; the table may or may not hold it (a
    // write-back may be in flight), the delete is harmless either way.
    e.in_table = true;
    aux_new_--;
  }
  if (e.stuck) {
    e.stuck = false;
    stuck_--;
  }
  e.erased = true;
  e.entry.usage_count = 0;
  e.version = ++next_version_;
  EnqueueLocked(fp, &e);
  if (WorkAvailableLocked()) work_cv_.notify_one();
  space_cv_.notify_all();
  return Status::OK();
}

void ChunkIndex::SetIdle(bool idle) {
  std::lock_guard<std::mutex> l(mu_);
  idle_ = idle;
  if (WorkAvailableLocked()) work_cv_.notify_one();
}

Status ChunkIndex::WriteBack(const std::vector<Fingerprint>& fps) {
  std::lock_guard<std::mutex> wb(write_back_mu_);
  std::vector<ChunkTable::Op> ops;
  std::vector<uint64_t> versions;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const Fingerprint& fp : fps) {
      auto it = aux_.find(fp);
      if (it == aux_.end()) continue;
      const AuxEntry& e = it->second;
      if (!WritableLocked(e)) continue;
      ChunkTable::Op op;
      op.fp = fp;
      op.entry = e.entry;
      if (e.moved_from != kNoContainer) {
        // Moved to a copy not committed yet: the table gets the entry's
        // counts with the copy it names durably (Move).
        op.entry.container = e.moved_from;
        op.entry.committed = true;
      }
      op.erase = e.erased || e.table_delete;
      ops.push_back(op);
      versions.push_back(e.version);
    }
  }
  if (ops.empty()) return Status::OK();

  // Table I/O without mu_: lookups and PutNew continue meanwhile.
  Status batch = table_->Apply(ops);
  std::vector<Status> results(ops.size(), batch);
  if (IsEntryError(batch) && ops.size() > 1) {
    // Apply is all-or-nothing; one full bucket chain or damaged page must not
    // hold back the rest of the batch.
    for (size_t i = 0; i < ops.size(); i++) results[i] = table_->Apply({ops[i]});
  }

  std::lock_guard<std::mutex> l(mu_);
  table_generation_++;  // the table changed (or may have): prefetched answers are stale
  Status first;
  uint64_t ok_count = 0;
  for (size_t i = 0; i < ops.size(); i++) {
    auto it = aux_.find(ops[i].fp);
    if (results[i].ok()) {
      ok_count++;
      if (it == aux_.end()) continue;
      if (ops[i].erase && !it->second.erased) {
        // A deletion (a tombstone's, or one under a newer uncommitted entry)
        // that PutNew overtook: the table's entry is gone, the live entry in
        // memory is not written yet (it is once committed).
        AuxEntry& e = it->second;
        e.table_delete = false;
        if (e.in_table) {
          e.in_table = false;
          aux_new_++;
        }
        EnqueueLocked(ops[i].fp, &e);
        continue;
      }
      if (it->second.moved_from != kNoContainer) {
        // Written with its former copy; it stays here until its new copy
        // commits (and is written then).
        if (!it->second.in_table) {
          it->second.in_table = true;
          aux_new_--;
        }
        if (it->second.version != versions[i]) EnqueueLocked(ops[i].fp, &it->second);
      } else if (it->second.version == versions[i]) {
        EraseLocked(it);
      } else {
        // Changed while being written: the table holds an older version now.
        if (!it->second.in_table) {
          it->second.in_table = true;
          aux_new_--;
        }
        EnqueueLocked(ops[i].fp, &it->second);
      }
      continue;
    }
    if (first.ok()) first = results[i];
    if (it == aux_.end()) continue;
    if (IsEntryError(results[i])) {
      // Parked until the next Flush. An uncommitted entry's table deletion
      // is simply not re-queued (Flush retries it too), so stuck entries
      // stay committed ones and DrainableLocked counts each blocked entry once.
      if (!it->second.entry.committed) continue;
      if (!it->second.stuck) {
        it->second.stuck = true;
        stuck_++;
      }
    } else {
      EnqueueLocked(ops[i].fp, &it->second);
    }
  }
  if (growable() && options_.grow_at > 0) {
    // A full bucket chain (fingerprints piling up in a few buckets) is full
    // below the fill threshold: the larger table spreads them.
    for (const Status& r : results) {
      if (r.IsNoSpace()) {
        (void)table_->Grow(0);
        break;
      }
    }
  }
  written_back_ += ok_count;
  write_back_batches_++;
  if (!first.ok()) {
    last_error_ = first.ToString();
    write_back_errors_++;
    // Entry errors are parked as stuck; only other (I/O) errors stop progress.
    write_back_failing_ = !IsEntryError(first);
  } else {
    write_back_failing_ = false;
  }
  space_cv_.notify_all();
  return first;
}

void ChunkIndex::WriteBackThread() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    if (write_back_failing_) {
      work_cv_.wait_for(l, kErrorBackoff, [this] { return stop_; });
      if (stop_) break;
    }
    if (!WorkAvailableLocked()) {
      work_cv_.wait(l, [this] { return stop_ || WorkAvailableLocked(); });
      continue;
    }
    std::vector<Fingerprint> batch;
    while (!ready_.empty() && batch.size() < write_back_batch_) {
      Fingerprint fp = ready_.front();
      ready_.pop_front();
      auto it = aux_.find(fp);
      if (it == aux_.end() || !it->second.queued) continue;  // stale name
      it->second.queued = false;
      const AuxEntry& e = it->second;
      if (WritableLocked(e) && !e.stuck) batch.push_back(fp);
    }
    if (batch.empty()) continue;
    l.unlock();
    (void)WriteBack(batch);  // errors are recorded in last_error_
    l.lock();
  }
}

Status ChunkIndex::Grow(uint64_t min_bytes) {
  if (!growable()) {
    return Status::NotSupported("the chunk index table " + TableWhere(options_) +
                                " grows by itself (RADOS omap shards have no fixed capacity)");
  }
  return table_->Grow(min_bytes);
}

Status ChunkIndex::Flush() {
  std::vector<Fingerprint> fps;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [fp, e] : aux_) {
      if (!WritableLocked(e)) continue;
      if (e.stuck) {  // Flush retries entries the thread gave up on
        e.stuck = false;
        stuck_--;
      }
      fps.push_back(fp);
    }
  }
  Status first;
  for (size_t i = 0; i < fps.size(); i += write_back_batch_) {
    std::vector<Fingerprint> part(fps.begin() + i,
                                  fps.begin() + std::min(fps.size(), i + write_back_batch_));
    Status s = WriteBack(part);
    if (!s.ok() && first.ok()) first = s;
  }
  Status s = table_->Sync();
  if (!s.ok() && first.ok()) first = s;
  if (!first.ok()) return first.WithContext("chunk index flush");
  return Status::OK();
}

Status ChunkIndex::Close() {
  std::lock_guard<std::mutex> close_lock(close_mu_);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return close_status_;
    stop_ = true;
  }
  work_cv_.notify_all();
  space_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Status s = Flush();
  std::lock_guard<std::mutex> l(mu_);
  closed_ = true;
  close_status_ = s;
  return s;
}

ChunkIndexStats ChunkIndex::stats() const {
  ChunkIndexStats st;
  {
    std::lock_guard<std::mutex> l(mu_);
    st.aux_entries = aux_.size();
    st.aux_uncommitted = aux_uncommitted_;
    st.written_back = written_back_;
    st.write_back_batches = write_back_batches_;
    st.write_back_errors = write_back_errors_;
    st.throttled_puts = throttled_puts_;
    st.refused_puts = refused_puts_;
    st.growth_waits = growth_waits_;
    st.last_error = last_error_;
    st.new_entries = aux_new_;
  }
  st.persistent_entries = table_->entry_count();
  st.capacity = table_->capacity();
  st.growth = table_->growth();
  st.lookups = lookups_.load();
  st.aux_hits = aux_hits_.load();
  st.disk_hits = disk_hits_.load();
  st.misses = misses_.load();
  {
    std::lock_guard<std::mutex> l(mu_);
    st.lookups_skipped = lookups_skipped_;
    st.skipped_that_existed = skipped_that_existed_;
  }
  if (claims_) st.claims = claims_->stats();
  return st;
}

Status ChunkIndex::Verify(uint64_t* pages_checked) { return table_->Verify(pages_checked); }

Status ChunkIndex::ForEachFingerprint(const std::function<void(const Fingerprint&)>& f) {
  uint64_t pages;
  DEDUPV1_RETURN_IF_ERROR(table_->Verify(&pages, [&f](const Fingerprint& fp, const ChunkIndexEntry&) { f(fp); }));
  std::vector<Fingerprint> aux;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [fp, entry] : aux_) {
      if (!entry.erased) aux.push_back(fp);
    }
  }
  for (const auto& fp : aux) f(fp);
  return Status::OK();
}

Status ChunkIndex::ForEachEntry(const std::function<void(const Fingerprint&, const ChunkIndexEntry&)>& f) {
  // Hashes of the table entries an auxiliary version replaced: the second
  // pass skips them even if their in_table flag is not set yet (a write-back
  // whose Apply finished before their page was read may not have updated
  // it). A hash collision makes an entry missed, never seen twice.
  std::vector<uint64_t> replaced;
  // Hashes of the entries erased when the pass starts (tombstones, and
  // uncommitted entries that replaced one): the table may still hold their
  // old version, and write-back may delete it and drop the auxiliary entry
  // between the read of its page and the look into the auxiliary index
  // below. Such a table version is not counted unless the auxiliary index
  // has a live version when it is visited. (Nothing is erased during the
  // pass: only garbage collection erases, and it runs the pass.)
  std::vector<uint64_t> erased;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [fp, e] : aux_) {
      if (e.erased || e.table_delete) erased.push_back(fp.Hash64());
    }
  }
  std::sort(erased.begin(), erased.end());
  std::vector<std::pair<Fingerprint, ChunkIndexEntry>> batch;
  std::vector<bool> skip;
  auto visit_batch = [&] {
    skip.assign(batch.size(), false);
    {
      std::lock_guard<std::mutex> l(mu_);
      for (size_t i = 0; i < batch.size(); i++) {
        auto it = aux_.find(batch[i].first);
        if (it == aux_.end()) {
          skip[i] = std::binary_search(erased.begin(), erased.end(), batch[i].first.Hash64());
          continue;
        }
        replaced.push_back(batch[i].first.Hash64());
        if (it->second.erased) {
          skip[i] = true;
        } else {
          batch[i].second = it->second.entry;
        }
      }
    }
    for (size_t i = 0; i < batch.size(); i++) {
      if (!skip[i]) f(batch[i].first, batch[i].second);
    }
    batch.clear();
  };
  DEDUPV1_RETURN_IF_ERROR(table_->ForEachEntry([&](const Fingerprint& fp, const ChunkIndexEntry& entry) {
    batch.emplace_back(fp, entry);
    if (batch.size() >= 4096) visit_batch();
  }));
  visit_batch();
  std::sort(replaced.begin(), replaced.end());
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [fp, e] : aux_) {
      if (e.erased || e.in_table || std::binary_search(replaced.begin(), replaced.end(), fp.Hash64())) continue;
      batch.emplace_back(fp, e.entry);
    }
  }
  for (const auto& [fp, entry] : batch) f(fp, entry);
  return Status::OK();
}

}  // namespace dedupv1

// ChunkIndex maps chunk fingerprints to their ChunkIndexEntry (paper 3.4). It
// combines a persistent ChunkTable (the local DiskHashTable, or the
// RadosChunkTable sharded over a Ceph index pool) with an in-memory auxiliary
// index in front of it, LSM-like: writes on the request path only touch
// memory; a background thread moves entries into the table later.
//
// Invariants:
//  - An entry whose container is not committed stays in the auxiliary index
//    and is never written to the table (after a crash such a container may be
//    gone; the engine re-imports committed containers' chunks instead).
//  - An entry leaves the auxiliary index only after the table write holding
//    it succeeded, so every entry is readable at all times (aux first, then
//    table). Write-back errors keep entries in the auxiliary index; they are
//    reported by Flush() and stats().last_error.
//  - Write-back happens when the auxiliary index holds more than
//    aux_soft_limit entries, when the system is idle, on Flush and on Close.
//    Above aux_hard_limit PutNew waits for the write-back thread, but only
//    while that thread can make progress (committed entries exist and
//    write-back is not failing), so throttling never deadlocks against
//    containers that have not committed yet.
//
// Thread-safety: all methods are thread-safe. |is_committed| is called with
// the auxiliary index lock held: it must not call back into the ChunkIndex,
// and the caller of OnContainerCommitted/OnContainerFailed must not hold a lock
// that |is_committed| takes (lock order: aux lock, then the chunk store's).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/base/env.h"
#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/base/types.h"
#include "core/rados/rados_options.h"
#include "index/chunk_claims.h"
#include "index/chunk_index_entry.h"
#include "index/chunk_table.h"
#include "index/disk_hash_table.h"
#include "index/lookup_skip_policy.h"

namespace dedupv1 {

struct ChunkIndexOptions {
  // "disk": the DiskHashTable at table.path; "rados": a RadosChunkTable in
  // rados' index pool (table.key_size still gives the fingerprint size).
  std::string table_backend = "disk";
  DiskHashTableOptions table;
  RadosOptions rados;
  uint32_t rados_shards = 64;  // power of two; fixed when the table is created
  uint64_t aux_soft_limit = 1 << 20;  // entries: above this the background thread writes back
  uint64_t aux_hard_limit = 4 << 20;  // entries: PutNew waits (throttles) above this
  // Table "disk" only (index/growable_hash_table.h): above this share of the
  // capacity in use the table grows online by grow_factor (0: only on
  // request, ChunkIndex::Grow). While a growth runs, a PutNew that finds the
  // index full waits up to grow_wait_ms for the capacity to rise.
  double grow_at = 0.75;
  uint32_t grow_factor = 2;
  uint64_t grow_wait_ms = 60000;
  uint64_t grow_step_pages = 64;  // old pages moved per step (GrowableHashTableOptions::step_pages)
  // False for the tools (dedupv1_check, dedupv1_debug): they read the table
  // as it is, and a growth under way stays as it was until the engine runs.
  bool grow_in_background = true;
  // Cluster scope (storage.rados.dedup-scope = cluster, index/chunk_claims.h):
  // the table is the store's shared one (ci.*, not gw.NAME/ci.*), opened with
  // this gateway slot's number and incarnation (the engine sets both from
  // the gateway registry); usage goes to this slot's keys in it.
  bool cluster_scope = false;
  uint16_t slot = 0;
  uint32_t slot_incarnation = 0;
  ChunkClaimsOptions claims;  // claim hold, container probe
  // Cluster scope: below this share of table answers that found the chunk,
  // runs claim their unknown chunks without looking them up
  // (storage.rados.skip-lookups-below, index/lookup_skip_policy.h; 0: never).
  double skip_lookups_below = 0.01;
};

struct ChunkIndexStats {
  uint64_t aux_entries = 0;
  uint64_t aux_uncommitted = 0;
  uint64_t persistent_entries = 0;
  // Auxiliary entries not in the table yet: they count against the capacity
  // as much as persistent ones (until write-back they are the only count
  // that grows, so a full index may show few persistent entries).
  uint64_t new_entries = 0;
  uint64_t capacity = 0;
  uint64_t lookups = 0;
  uint64_t aux_hits = 0;
  uint64_t disk_hits = 0;
  uint64_t misses = 0;
  // Cluster scope: lookups answered "new" without reading the table
  // (index/lookup_skip_policy.h), and how many of those chunks then turned
  // out to exist (their claims were lost: a copy wasted, no dedup lost).
  uint64_t lookups_skipped = 0;
  uint64_t skipped_that_existed = 0;
  uint64_t written_back = 0;
  uint64_t write_back_batches = 0;
  uint64_t write_back_errors = 0;
  uint64_t throttled_puts = 0;  // PutNew calls that had to wait at the hard limit
  uint64_t refused_puts = 0;    // PutNew calls refused because the index is full
  uint64_t growth_waits = 0;    // PutNew calls that found the index full and waited for its growth
  ChunkTableGrowth growth;      // the table's online growth (table "disk")
  // The last error: a failed write-back, or a new chunk refused because the
  // index is full ("chunk index full: N of M entries"); empty if none yet.
  std::string last_error;
  ChunkClaimsStats claims;  // cluster scope only

  // Entries counted against the capacity: what PutNew compares with it.
  uint64_t used_entries() const { return persistent_entries + new_entries; }
  // used_entries / capacity: 1.0 (or a hair below) means full.
  double fill_ratio() const {
    return capacity == 0 ? 0.0 : static_cast<double>(used_entries()) / static_cast<double>(capacity);
  }
};

class ChunkIndex {
 public:
  // |is_committed| tells whether a container is durably committed (the chunk
  // store's IsCommitted). Starts the write-back thread.
  // The persistent table |options| name (table_backend): the DiskHashTable
  // at table.path through |env|, or the RadosChunkTable in the index pool.
  // The tools open it alone with this.
  static Status OpenTable(const ChunkIndexOptions& options, Env* env, std::unique_ptr<ChunkTable>* out);
  // Whether that table exists (nothing is created), and where it is, for
  // messages.
  static Status TableExists(const ChunkIndexOptions& options, Env* env, bool* exists);
  static std::string TableWhere(const ChunkIndexOptions& options);
  static Status Open(const ChunkIndexOptions& options, Env* env,
                     std::function<bool(ContainerId)> is_committed,
                     std::unique_ptr<ChunkIndex>* out);
  ~ChunkIndex();  // Close()
  ChunkIndex(const ChunkIndex&) = delete;
  ChunkIndex& operator=(const ChunkIndex&) = delete;

  // Auxiliary index first, then the table. NotFound if neither has |fp|.
  // |from_table| (optional) tells whether the entry came from the table.
  // A table answer fetched by Prefetch is used if no write-back dropped an
  // auxiliary entry since it was read (see prefetch_).
  Status Lookup(const Fingerprint& fp, ChunkIndexEntry* entry, bool* from_table = nullptr);

  // Lookup of many fingerprints: the auxiliary index first, the rest in one
  // ChunkTable::GetMany. (*found)[i] tells whether (*entries)[i] is the entry
  // of fps[i]; (*from_table)[i] (optional) whether it came from the table. An
  // error of the table fails the call.
  Status LookupMany(const std::vector<Fingerprint>& fps, std::vector<ChunkIndexEntry>* entries,
                    std::vector<bool>* found, std::vector<bool>* from_table = nullptr);

  // Whether the table batches lookups (ChunkTable::batched): only then is
  // Prefetch worth calling.
  bool batched_table() const { return table_->batched(); }
  // Reads the table's answers for those of |fps| the auxiliary index does not
  // hold, in one GetMany, for Lookup to use (the write pipeline prefetches a
  // run before deciding its chunks one by one). Errors are not reported here:
  // Lookup then reads the table itself and reports them. Does nothing for a
  // table that does not batch, nor when the batch would cost more round trips
  // than the lookups it is expected to save: of the fingerprints offered
  // here, only the share that Lookup then had to read from the table
  // (table_reads_ / offered_) would have cost a round trip each; in a backup's
  // next generation the container cache answers most of a run after the first
  // table hit per container, and a prefetch of the whole run would cost far
  // more operations than those few lookups.
  //
  // Cluster scope, while the skip policy says lookups find nothing
  // (index/lookup_skip_policy.h): only a probe of the run is read (a
  // sixteenth, one shard object of 16); if none of it exists, the rest is
  // answered "new" without a read (Prefetched::skipped) and claimed at once;
  // if any does, the rest is read as usual.
  void Prefetch(const std::vector<Fingerprint>& fps);
  // Forgets the prefetched answers for |fps| that Lookup did not use.
  void DropPrefetch(const std::vector<Fingerprint>& fps);

  // Records a chunk just stored in |container| (a fingerprint Lookup reported
  // NotFound). Goes to the auxiliary index only. Its committed flag is
  // is_committed(container) evaluated under the aux lock, so a commit racing
  // with PutNew is never missed. If |fp| already has an auxiliary entry, that
  // entry is kept (first writer wins). NoSpace if persistent + new auxiliary
  // entries would exceed the table's capacity ("chunk index full: N of M
  // entries"). Aborted after Close. In cluster scope it records nothing:
  // ClaimNew records the chunks whose claims this slot won, so no lookup of
  // this process finds a copy before its claim is decided.
  Status PutNew(const Fingerprint& fp, ContainerId container);

  // Marks the auxiliary entries of these fingerprints that point to
  // |container| committed (eligible for write-back).
  void OnContainerCommitted(ContainerId container, const std::vector<Fingerprint>& fps);
  // Drops uncommitted auxiliary entries of |container|, whose commit failed for
  // good; one that replaced a tombstone becomes that tombstone again.
  void OnContainerFailed(ContainerId container, const std::vector<Fingerprint>& fps);

  // Adds |delta| to the usage count (saturating at 0 and UINT32_MAX), in the
  // auxiliary index, loading the entry from the table if needed. NotFound if
  // the fingerprint is unknown (or erased). With |event_id| != 0 the change
  // belongs to that log event: it is skipped if the entry already counted an
  // event at or after it (entry.last_event_id >= event_id), else recorded as
  // the entry's last_event_id, so replaying an event twice counts it once.
  // |usage| (optional) receives the count afterwards; |applied| (optional)
  // whether the change was made.
  //
  // |committed_copy| (optional): a committed container holding a copy of the
  // chunk, the one the counted mapping names. If the entry itself is not
  // committed (the chunk was stored again in a newer container, while the
  // mapping found the older copy), it is pointed to that copy when the change
  // is applied, so the count is persistable at the next flush: a checkpoint
  // trims the counted event, and a count that waited in memory for the newer
  // container would be lost in a crash.
  Status AddUsage(const Fingerprint& fp, int64_t delta, uint64_t event_id = 0,
                  uint32_t* usage = nullptr, bool* applied = nullptr,
                  ContainerId committed_copy = kNoContainer);

  // One change of AddUsageMany: AddUsage's arguments.
  struct UsageChange {
    Fingerprint fp;
    int64_t delta = 0;
    uint64_t event_id = 0;
    ContainerId committed_copy = kNoContainer;
  };
  // What AddUsage reported for one change.
  struct UsageOutcome {
    Status status;
    uint32_t usage = 0;
    bool applied = false;
    // NotFound because this change found no entry (none in memory or the
    // table, or an erased one), as opposed to one not tried because an
    // earlier change of its fingerprint in the batch found none.
    bool no_entry = false;
    // The container the entry names after the change, if the change found
    // one (kNoContainer otherwise, and always in cluster scope).
    ContainerId entry_container = kNoContainer;
  };
  // AddUsage of one change, with the whole outcome (its status is the
  // return value; local tables leave |outcome->status| alone, cluster scope
  // fills the outcome whole).
  Status AddUsageOne(const UsageChange& change, UsageOutcome* outcome);
  // AddUsage for each change, in order, with the entries the auxiliary index
  // does not hold loaded from the table in one GetMany (a batching table:
  // one round trip per shard instead of one per entry; otherwise a loop of
  // AddUsage). Write-back waits meanwhile. (*outcomes)[i] is what AddUsage
  // would have reported for changes[i]; NotFound outcomes are not errors of
  // the call. For each fingerprint the changes applied are a prefix of its
  // changes in the batch (with a batching table: all or none) and the rest
  // are NotFound, so a caller that re-creates a missing entry can retry the
  // NotFound ones with AddUsage in order. An error of the table fails the
  // call; changes made before it stay made (event-tagged ones count once
  // when retried).
  Status AddUsageMany(const std::vector<UsageChange>& changes, std::vector<UsageOutcome>* outcomes);

  // Points the entry of |fp| to a newer copy of its chunk in |container|
  // (container rewriting, core/engine/rewrite_policy.h), keeping its usage
  // count and last event id. Only a committed entry moves (*moved = false
  // otherwise, e.g. a copy stored by another run that has not committed).
  // Until |container| commits, lookups see the new copy (uncommitted), while
  // write-back writes the entry, with its current counts, naming the former
  // copy: the table never names an uncommitted copy, and a flush still
  // persists every count (a checkpoint trims the events counted), so a crash
  // leaves the entry on the former copy, which still exists. Once |container|
  // commits the entry is written naming it. A usage change of a mapping that
  // names the former copy before that points the entry back there
  // (AddUsage's |committed_copy|), as does OnContainerFailed. NotFound if
  // there is no entry. Not in cluster scope (NotSupported).
  // |from| (if given) receives the container the entry named before a move
  // (kNoContainer without one).
  Status Move(const Fingerprint& fp, ContainerId container, bool* moved, ContainerId* from = nullptr);

  // Removes the entry of |fp| (garbage collection). In memory an erased entry
  // is a tombstone in the auxiliary index (Lookup reports NotFound at once);
  // write-back deletes it from the table. NotFound if there is no entry. A
  // later PutNew of the same fingerprint replaces the tombstone and keeps its
  // last_event_id; if the new copy's container is not committed yet, the
  // deletion still goes to the table (the new entry follows once committed),
  // so neither a crash nor the new container's failed commit brings the
  // erased entry back from the table.
  Status Erase(const Fingerprint& fp);

  // Grows the table online to at least |min_bytes| (0: by grow_factor);
  // returns once the growth is under way or queued (stats().growth shows
  // it). NotSupported for a table that cannot grow (rados).
  Status Grow(uint64_t min_bytes);

  // While idle, the background thread writes back every committed entry.
  void SetIdle(bool idle);

  // Writes back every committed auxiliary entry (and the table deletions under
  // uncommitted entries that replaced tombstones) now and syncs the table;
  // returns the first error (entries that failed stay in the auxiliary index).
  Status Flush();

  // Stops the thread and flushes. Uncommitted entries are not persisted (by
  // design). Idempotent; later PutNew calls return Aborted.
  Status Close();

  // Cluster scope (chunk_index_cluster.cc): whether this index shares the
  // store's table; ClaimNew claims a run's new chunks (stored, not yet
  // mapped), tells per chunk the container its mappings must name, and puts
  // the chunks whose claims it won into the auxiliary index (PutNew's
  // entry); lost ones are found in the table.
  bool cluster_scope() const { return claims_ != nullptr; }
  // Cluster scope: the shared table (this slot's writer instance), for the
  // index GC rounds (core/engine/cluster_gc.h); null otherwise.
  RadosSharedChunkTable* shared_table() const { return claims_ ? claims_->table() : nullptr; }
  // |ticket| (optional): the claim journal's record of the call
  // (ChunkClaims::Claim), to hand back with ReleaseClaims.
  Status ClaimNew(const std::vector<ChunkClaims::NewChunk>& chunks, std::vector<ContainerId>* use,
                  ClaimTicket* ticket = nullptr);
  // Cluster scope, the claim journal (ChunkClaims::ReleaseClaims,
  // ClaimsReleased, RetireClaims); no-ops otherwise.
  void ReleaseClaims(ClaimTicket ticket, bool referenced);
  uint64_t ClaimsReleased() const;
  Status RetireClaims(uint64_t up_to);
  // Cluster scope: this slot's GC epoch from now on (ChunkClaims::SetEpoch;
  // the engine calls it holding the GC barrier exclusively). Forgets
  // prefetched answers, which were read under the previous epoch. An own
  // claim in the auxiliary index answers a lookup only while its epoch is at
  // most one behind (design-15 2.4); an older one is looked up in the table,
  // where GC may have marked it dead since.
  void SetGcEpoch(uint64_t epoch);

  ChunkIndexStats stats() const;
  Status Verify(uint64_t* pages_checked);
  // Calls |f| for every fingerprint in the persistent table and the auxiliary
  // index (a fingerprint may be seen twice; an erased one may still be seen
  // until its deletion is written back). Reads the whole table.
  Status ForEachFingerprint(const std::function<void(const Fingerprint&)>& f);
  // Calls |f| at most once per fingerprint that has an entry, with the newest
  // version at the moment it is visited: one sequential pass over the table
  // (DiskHashTable::ForEachEntry; write-back goes on), each table entry
  // replaced by its auxiliary version if there is one (an erased one is
  // skipped), then the auxiliary entries the table does not hold. An entry created, changed or written
  // back during the pass may be missed or seen in its older version; none is
  // seen twice unless it is erased and created again during the pass.
  // Garbage collection counts entries per container with it.
  Status ForEachEntry(const std::function<void(const Fingerprint&, const ChunkIndexEntry&)>& f);

 private:
  struct AuxEntry {
    ChunkIndexEntry entry;
    uint64_t version = 0;   // bumped on every change; write-back erases only the version it wrote
    bool in_table = false;  // the table already holds (a version of) it: not a new entry
    bool queued = false;    // in ready_
    bool stuck = false;     // write-back failed with NoSpace/Corruption; retried only by Flush
    bool erased = false;    // tombstone: write-back deletes the table entry
    // An uncommitted entry that replaced a tombstone (whose deletion may or
    // may not have reached the table): write-back deletes the table's entry
    // now, without writing this one (see PutNew). Never set on committed
    // entries: their own write replaces the table's entry.
    bool table_delete = false;
    uint64_t claim_epoch = 0;  // cluster scope: the GC epoch of our claim (ChunkClaims::Claim)
    // Set while an entry Move pointed to an uncommitted container: the
    // committed copy it named before, named again if that container fails.
    ContainerId moved_from = kNoContainer;
  };
  using AuxMap = std::unordered_map<Fingerprint, AuxEntry, FingerprintHasher>;

  ChunkIndex(const ChunkIndexOptions& options, std::unique_ptr<ChunkTable> table,
             std::function<bool(ContainerId)> is_committed);

  // AddUsage's change to an entry of the auxiliary index, and to one loaded
  // from the table (inserted into the auxiliary index if the change applies).
  // AddUsageMany for a table that does not batch.
  Status AddUsageEach(const std::vector<UsageChange>& changes, std::vector<UsageOutcome>* outcomes);
  // Whether the table grows online (table "disk", not cluster scope).
  bool growable() const { return options_.table_backend == "disk" && !options_.cluster_scope; }
  // Cluster scope: the table and claims (chunk_index_cluster.cc), and
  // AddUsage(Many) sent to this slot's usage keys of the shared table.
  Status PutNewEntry(const Fingerprint& fp, ContainerId container, uint64_t claim_epoch = 0);
  // Cluster scope: whether auxiliary entry |e| is an own claim too old to
  // answer a lookup from memory (SetGcEpoch).
  bool StaleClaimLocked(const AuxEntry& e) const;
  static Status SharedTableExists(const ChunkIndexOptions& options, bool* exists);
  static Status OpenShared(const ChunkIndexOptions& options, std::shared_ptr<ChunkClaims>* claims,
                           std::unique_ptr<ChunkTable>* table);
  Status AddUsageShared(const std::vector<UsageChange>& changes, std::vector<UsageOutcome>* outcomes);
  void ApplyUsageLocked(const Fingerprint& fp, AuxEntry* e, const UsageChange& change, UsageOutcome* outcome);
  void ApplyUsageToLoadedLocked(const Fingerprint& fp, const ChunkIndexEntry& loaded, const UsageChange& change,
                                UsageOutcome* outcome);
  void WriteBackThread();
  // Writes the current versions of the committed entries among |fps| to the
  // table (deletes, for tombstones and table_delete entries) and drops them
  // from the auxiliary index if unchanged meanwhile.
  Status WriteBack(const std::vector<Fingerprint>& fps);
  bool WorkAvailableLocked() const;
  // Entries the write-back thread can move now (committed, not stuck; only
  // committed entries are ever stuck).
  uint64_t DrainableLocked() const { return aux_.size() - aux_uncommitted_ - stuck_; }
  // Prefetch's probe of |rest| (not empty) while skipping: records the
  // probe's answers (read at |generation|) and either marks the others
  // skipped (false: done) or leaves them in |rest| to be read (true).
  bool ProbeRun(uint64_t generation, std::vector<Fingerprint>* rest);
  // Records table answers read at |generation| for Lookup (mu_ held).
  void KeepPrefetchedLocked(const std::vector<Fingerprint>& fps, const std::vector<ChunkIndexEntry>& got,
                            const std::vector<bool>& found, uint64_t generation);
  void EnqueueLocked(const Fingerprint& fp, AuxEntry* e);
  // The auxiliary entry of |fp|, loaded from the table (as a committed entry
  // already in it) if memory has none; NotFound if neither has it. Holds
  // *l (on mu_) on return; releases it for the table read, so the caller
  // holds write_back_mu_ to keep the table entry from changing meanwhile.
  Status FindOrLoadLocked(const Fingerprint& fp, std::unique_lock<std::mutex>* l, AuxMap::iterator* out);
  // Whether write-back writes |e| to the table: committed entries, table
  // deletions, and moved entries (with their former copy, see Move).
  static bool WritableLocked(const AuxEntry& e) {
    return e.entry.committed || e.table_delete || e.moved_from != kNoContainer;
  }
  void EraseLocked(AuxMap::iterator it);

  // Entries per table batch. Every batch rewrites (journal + in place) each
  // page it touches, and fingerprints spread uniformly over the pages, so a
  // batch of a few entries per page costs little more I/O than one of a
  // single entry per page: batches of 4 entries per bucket page, within
  // [kMinWriteBackBatch, kMaxWriteBackBatch]. The upper bound caps the page
  // images a batch holds in memory at ~16K pages (64 MiB at 4 KiB): in a
  // table of more buckets than that a batch touches about one page per
  // entry anyway, so larger batches save only fsyncs, and cost memory that
  // grew with the stored data until the cap (issue 17 item 6: 64K entries
  // held ~460 MB at the peak with a 1 GiB table).
  static constexpr size_t kMinWriteBackBatch = 1024;
  static constexpr size_t kMaxWriteBackBatch = 1 << 14;

  const ChunkIndexOptions options_;
  const std::unique_ptr<ChunkTable> table_;
  const std::function<bool(ContainerId)> is_committed_;
  std::shared_ptr<ChunkClaims> claims_;  // cluster scope only; set by Open
  std::unique_ptr<LookupSkipPolicy> skip_;  // cluster scope only; set by Open
  const size_t write_back_batch_;  // after table_: computed from its geometry

  std::mutex close_mu_;  // serializes Close

  // Serializes write-back rounds (thread and Flush) and AddUsage's table load;
  // taken before mu_.
  std::mutex write_back_mu_;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable work_cv_;   // wakes the write-back thread
  std::condition_variable space_cv_;  // wakes PutNew callers throttled at the hard limit
  AuxMap aux_;
  std::deque<Fingerprint> ready_;  // committed and table_delete entries awaiting write-back (may hold stale names)
  uint64_t aux_uncommitted_ = 0;
  uint64_t aux_new_ = 0;  // entries not in the table yet (count against capacity)
  uint64_t stuck_ = 0;
  uint64_t next_version_ = 0;
  int throttled_ = 0;  // PutNew callers waiting right now
  bool idle_ = false;
  bool stop_ = false;
  bool closed_ = false;
  bool write_back_failing_ = false;
  Status close_status_;
  std::string last_error_;
  uint64_t written_back_ = 0;
  uint64_t write_back_batches_ = 0;
  uint64_t write_back_errors_ = 0;
  uint64_t throttled_puts_ = 0;
  uint64_t refused_puts_ = 0;
  uint64_t growth_waits_ = 0;

  // A table answer read by Prefetch, and table_generation_ before that read.
  struct Prefetched {
    ChunkIndexEntry entry;
    bool found = false;
    uint64_t generation = 0;
    // Not read: the skip policy took the chunk as new. Valid in any
    // generation (a wrong guess only loses the claim, never maps a copy).
    bool skipped = false;
  };
  // Bumped by every write-back round when it updates the auxiliary index
  // after its table write. A prefetched answer was read before Lookup looks
  // into the auxiliary index (the other way round from a plain Lookup), so it
  // is only valid if no write-back dropped an entry in between: same
  // generation, and an entry written by a round not finished yet is still in
  // the auxiliary index.
  uint64_t table_generation_ = 0;
  std::unordered_map<Fingerprint, Prefetched, FingerprintHasher> prefetch_;
  // Fingerprints a Lookup answered "new" without the table (Prefetched::
  // skipped), until ClaimNew learns whether they existed (the skip policy's
  // evidence). Bounded like prefetch_.
  std::unordered_set<Fingerprint, FingerprintHasher> skipped_;
  uint64_t lookups_skipped_ = 0;
  uint64_t skipped_that_existed_ = 0;
  static constexpr size_t kMaxPrefetched = 1 << 20;  // bounds prefetch_ (runs that never finish)
  // Fingerprints offered to Prefetch that the auxiliary index did not hold,
  // and Lookups that missed the auxiliary index (answered by the table or a
  // prefetch): their ratio estimates the share of offered fingerprints that
  // need the table. Both halve now and then, so the estimate follows the
  // workload.
  static constexpr double kPrefetchHistory = 1 << 16;
  double offered_ = 0;
  double table_reads_ = 0;

  std::atomic<uint64_t> lookups_{0};
  std::atomic<uint64_t> aux_hits_{0};
  std::atomic<uint64_t> disk_hits_{0};
  std::atomic<uint64_t> misses_{0};

  std::thread thread_;
};

}  // namespace dedupv1

#include "core/engine/garbage_collector.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <shared_mutex>
#include <vector>

#include "chunkstore/chunk_store.h"
#include "core/engine/cluster_gc_rules.h"
#include "core/engine/spare_copies.h"
#include "index/chunk_index.h"
#include "log/operations_log.h"
#include "log/log_event.h"

namespace dedupv1 {
namespace {

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// What the scan found in one container. Only sums are kept per container,
// plus the suspects: a full scan looks at every stored chunk, and a map entry
// per chunk would cost about 100 bytes of memory per 8 KiB stored (12 GiB for
// 1 TiB). The round's erasures are not subtracted one by one; a container
// that lost chunks is recounted after the barrier (step 5).
struct GarbageCollector::ContainerScan {
  uint64_t total_bytes = 0;  // serialized size
  uint64_t live_bytes = 0;   // footprints of the chunks with an index entry
  uint64_t live_chunks = 0;
  std::vector<std::pair<Fingerprint, size_t>> suspects;  // no index entry at scan time
  bool recount = false;  // chunks were marked dead after the scan

  // Every chunk of |chunks| counts as live.
  void SetAllLive(const std::vector<ChunkStore::ChunkFootprint>& chunks) {
    live_bytes = 0;
    for (const auto& c : chunks) live_bytes += c.bytes;
    live_chunks = chunks.size();
  }
};

Status GarbageCollector::Run() {
  std::lock_guard<std::mutex> run(run_mu_);
  {
    std::lock_guard<std::mutex> l(stats_mu_);
    SetPhase("checkpoint");
    scan_done_ = 0;
    scan_total_ = 0;
    stats_.running = true;
  }
  const auto start = std::chrono::steady_clock::now();
  GcStats round;
  Status s = RunLocked(&round);
  const uint64_t ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
  std::lock_guard<std::mutex> l(stats_mu_);
  stats_.running = false;
  SetPhase("");  // under stats_mu_, so stats() never sees a running round without a phase
  stats_.runs++;
  stats_.chunks_deleted += round.chunks_deleted;
  stats_.chunks_survived += round.chunks_survived;
  stats_.orphans_found += round.orphans_found;
  stats_.spare_copies_dead += round.spare_copies_dead;
  stats_.inbox_chunks += round.inbox_chunks;
  stats_.inbox_foreign_keys += round.inbox_foreign_keys;
  stats_.inbox_damaged_keys += round.inbox_damaged_keys;
  stats_.bytes_reclaimed += round.bytes_reclaimed;
  stats_.containers_merged += round.containers_merged;
  stats_.containers_written += round.containers_written;
  stats_.containers_deleted += round.containers_deleted;
  stats_.containers_scanned += round.containers_scanned;
  stats_.containers_looked_up += round.containers_looked_up;
  stats_.containers_summarized += round.containers_summarized;
  stats_.rounds_deferred += round.rounds_deferred;
  if (round.used_bytes != 0 || s.ok()) stats_.used_bytes = round.used_bytes;
  stats_.live_bytes = round.live_bytes;
  stats_.last_run_unix = UnixNow();
  stats_.last_run_ms = ms;
  if (!s.ok()) {
    // Candidates and pending containers taken by the failed round are found
    // again by a full scan.
    full_scan_done_ = false;
    stats_.failed_runs++;
    stats_.last_error = s.ToString();
    return s.WithContext("garbage collection");
  }
  stats_.last_error.clear();
  return Status::OK();
}

// One round's working state, handed from step to step.
struct GarbageCollector::Round {
  explicit Round(GcStats* s) : stats(s) {}
  GcStats* const stats;  // what this round did
  bool full_scan = false;
  // 2a: the containers to scan (sorted for a full scan) and, for a full
  // scan, the index entries naming each (parallel to |ids|).
  std::vector<ContainerId> ids;
  std::vector<uint64_t> entries_in;
  // 2b: what the scan found, per container; step 4 empties it when the
  // round defers its containers.
  std::map<ContainerId, ContainerScan> scans;
  // 3: the chunks marked dead, per container, and the newest event counted.
  std::map<ContainerId, std::vector<Fingerprint>> dead;
  uint64_t logged = 0;
  // 4: whether the dead marks were persisted (reported after step 5).
  Status marks_persisted;
  // 5a: containers less than half live, with their live bytes.
  std::vector<std::pair<ContainerId, uint64_t>> underfilled;
  // 2b-2c: copies the chunk index does not name (it names another copy),
  // and whether the walk of the block index saw every mapping.
  std::unique_ptr<SpareCopies> spares;
  bool spares_walked = false;
};

namespace {

// Registers a round's spare copies with the usage counter for as long as it
// lives (core/engine/spare_copies.h).
class SpareCopyWatch {
 public:
  SpareCopyWatch(UsageCounter* usage, SpareCopies* copies) : usage_(usage) { usage_->WatchSpareCopies(copies); }
  ~SpareCopyWatch() { usage_->WatchSpareCopies(nullptr); }
  SpareCopyWatch(const SpareCopyWatch&) = delete;
  SpareCopyWatch& operator=(const SpareCopyWatch&) = delete;

 private:
  UsageCounter* const usage_;
};

}  // namespace

Status GarbageCollector::RunLocked(GcStats* stats) {
  ChunkStore* store = host_->chunk_store();
  uint64_t used_before = 0;
  DEDUPV1_RETURN_IF_ERROR(store->UsedBytes(&used_before));
  Round round(stats);
  round.spares = std::make_unique<SpareCopies>(store);

  ClusterGcRules* rules = host_->cluster_rules();
  if (rules != nullptr) {
    // Cluster scope judges only dead marks; released copies are not its
    // way to garbage (cluster_gc_rules.h), and the queue must not grow.
    if (host_->usage() != nullptr) host_->usage()->TakeReleasedCopies();
    DEDUPV1_RETURN_IF_ERROR(RunClusterRound(rules, &round));
  } else {
    // 1. Usage counts catch up; the log is trimmed.
    DEDUPV1_RETURN_IF_ERROR(host_->Checkpoint());
    // 2. Scan: every committed container once after open, then only those
    // holding candidates or unscanned garbage.
    round.full_scan = !full_scan_done_.load();
    DEDUPV1_RETURN_IF_ERROR(ListContainersToScan(&round));
    DEDUPV1_RETURN_IF_ERROR(ScanContainers(&round));
    // Copies the index does not name are watched from here until they are
    // judged under the barrier: the walk sees the mappings installed so
    // far, the usage counter those logged later.
    std::unique_ptr<SpareCopyWatch> watch;
    if (!round.spares->empty()) {
      watch = std::make_unique<SpareCopyWatch>(host_->usage(), round.spares.get());
      DEDUPV1_RETURN_IF_ERROR(WalkMappings(&round));
    }
    // 3. Hold and recheck under the barrier.
    DEDUPV1_RETURN_IF_ERROR(RecheckUnderBarrier(&round));
    watch.reset();
    // 4. The erasures become persistent and the log forgets the garbage.
    DEDUPV1_RETURN_IF_ERROR(PersistErasures(&round));
  }
  // 5. Space: delete empty containers, merge under-filled ones.
  SetPhase("space");
  DEDUPV1_RETURN_IF_ERROR(DeleteEmptyContainers(&round));
  DEDUPV1_RETURN_IF_ERROR(MergeUnderfilledContainers(&round));
  if (stats->containers_deleted + stats->containers_written > 0) DEDUPV1_RETURN_IF_ERROR(host_->log()->Sync());

  if (round.full_scan) full_scan_done_ = true;
  uint64_t used_after = 0;
  DEDUPV1_RETURN_IF_ERROR(store->UsedBytes(&used_after));
  stats->used_bytes = used_after;
  stats->bytes_reclaimed = used_before > used_after ? used_before - used_after : 0;
  if (rules != nullptr && round.marks_persisted.ok()) rules->RoundDone();
  return round.marks_persisted;
}

// Cluster scope, instead of steps 1-4; no lock held. Before: nothing. After:
// the usage counts caught up (checkpoint), the host's index-GC seam ran, the
// dead inbox is in the dead marks and every mark is persistent (what a
// merge leaves out survives a crash as garbage, never as a lost chunk: each
// mark was proven unreferenced when it was made), and round->scans holds
// this slot's committed containers with marks, judged by their unmarked
// chunks. No chunk-index entry is erased or looked up: another slot may
// reference any chunk (cluster_gc_rules.h).
Status GarbageCollector::RunClusterRound(ClusterGcRules* rules, Round* round) {
  DEDUPV1_RETURN_IF_ERROR(host_->Checkpoint());
  DEDUPV1_RETURN_IF_ERROR(host_->BeforeContainerRound());
  SetPhase("dead inbox");
  ClusterGcRules::InboxTaken taken;
  DEDUPV1_RETURN_IF_ERROR(rules->TakeDeadInbox(&taken));
  round->stats->inbox_chunks += taken.marked;
  round->stats->inbox_foreign_keys += taken.foreign;
  round->stats->inbox_damaged_keys += taken.damaged;
  if (taken.marked > 0) host_->OnChunksMarkedDead();
  // The snapshot this round acts on, taken under the GC barrier (briefly,
  // exclusively): every dedup run that stored into a container now committed
  // has logged its mappings, so its claim step's UnmarkIfDead (a won copy an
  // earlier run had marked) is in the marks persisted here; cluster_gc_rules.cc
  // says why no later unmark can hit a container listed here.
  std::vector<ContainerId> ids;
  {
    SetPhase("snapshot");
    GcBarrier::Exclusive barrier(host_->gc_barrier());
    DEDUPV1_RETURN_IF_ERROR(host_->chunk_store()->PersistDeadMarks());
    ids = rules->ContainersWithGarbage();
  }
  return ScanMarkedContainers(ids, round);
}

// Cluster scope, the scan: each container with marks, by its summary if it
// has one taken with its present marks, else by its metadata.
Status GarbageCollector::ScanMarkedContainers(const std::vector<ContainerId>& ids, Round* round) {
  ChunkStore* store = host_->chunk_store();
  scan_total_ = ids.size();
  SetPhase("scan");
  for (size_t i = 0; i < ids.size(); i++) {
    scan_done_ = i;
    ContainerScan scan;
    ContainerSummary summary;
    round->stats->containers_scanned++;
    if (store->GetSummary(ids[i], &summary)) {
      scan.total_bytes = summary.serialized_bytes;
      scan.live_bytes = summary.footprint_bytes;
      scan.live_chunks = summary.chunks;
      round->stats->containers_summarized++;
    } else {
      std::vector<ChunkStore::ChunkFootprint> chunks;
      Status s = store->GetChunkFootprints(ids[i], &chunks, &scan.total_bytes);
      if (s.IsNotFound()) continue;  // deleted meanwhile
      if (!s.ok()) return s.WithContext("scan container " + std::to_string(ids[i]));
      scan.SetAllLive(chunks);
    }
    round->scans.emplace(ids[i], std::move(scan));
  }
  scan_done_ = ids.size();
  return Status::OK();
}

// Step 2a, no lock held. Before: the usage counts are caught up (step 1).
// After: round->ids holds the committed containers to scan: every one for a
// full scan (with round->entries_in counted in one sequential pass over the
// chunk index instead of one random lookup per stored chunk, and every usage
// 0 entry a candidate), else those holding a candidate, pending garbage
// (pending_containers_ is then empty: taken by this round) or a copy the
// usage counter saw released (UsageCounter::TakeReleasedCopies).
Status GarbageCollector::ListContainersToScan(Round* round) {
  ChunkStore* store = host_->chunk_store();
  ChunkIndex* index = host_->chunk_index();
  UsageCounter* usage = host_->usage();
  std::vector<ContainerId>& ids = round->ids;
  uint64_t marks_repaired = 0;
  if (round->full_scan) {
    usage->TakeReleasedCopies();  // every container is scanned anyway
    DEDUPV1_RETURN_IF_ERROR(store->ListCommitted(&ids));  // sorted
    std::vector<uint64_t>& entries_in = round->entries_in;
    entries_in.assign(ids.size(), 0);
    SetPhase("index pass");
    DEDUPV1_RETURN_IF_ERROR(index->ForEachEntry([&](const Fingerprint& fp, const ChunkIndexEntry& entry) {
      // An entry wins over a dead mark for its chunk (see UnmarkIfDead); the
      // first round after an open runs before any merge could act on one.
      bool unmarked = false;
      const ContainerId holder = store->ResolveEntry(entry.container, fp, &unmarked);
      if (unmarked) marks_repaired++;
      auto it = std::lower_bound(ids.begin(), ids.end(), holder);
      if (it == ids.end() || *it != holder) return;  // not committed when listed
      entries_in[it - ids.begin()]++;
      if (entry.usage_count == 0) usage->AddCandidate(fp);
    }));
  } else {
    std::set<ContainerId> wanted;
    {
      std::lock_guard<std::mutex> l(pending_mu_);
      wanted.swap(pending_containers_);
    }
    // Copies mappings let go of whose entry names another copy (or none):
    // spare copies that may be garbage with no candidate in their container.
    // Resolved now: queued before a merge that folded them into another
    // container, they answer to that one (scanned under an alias id, every
    // live chunk would look like a copy the index does not name).
    for (ContainerId id : usage->TakeReleasedCopies()) wanted.insert(store->Resolve(id));
    for (const Fingerprint& fp : usage->Candidates()) {
      ChunkIndexEntry entry;
      Status l = index->Lookup(fp, &entry);
      if (l.IsNotFound()) continue;
      DEDUPV1_RETURN_IF_ERROR(l);
      wanted.insert(store->Resolve(entry.container));
    }
    for (ContainerId id : wanted) {
      if (store->IsCommitted(id)) ids.push_back(id);
    }
  }
  if (marks_repaired > 0) {
    std::fprintf(stderr, "dedupv1: GC removed %llu dead marks of chunks that have an index entry\n",
                 static_cast<unsigned long long>(marks_repaired));
  }
  return Status::OK();
}

// Step 2b, no lock held (dedup runs go on). Before: round->ids (2a). After:
// round->scans holds each container still there with its size, its chunks
// with an index entry (live; a chunk whose entry names another copy is kept
// too, a mapping may name this copy) and its chunks without one (suspects);
// chunks at usage 0 whose entry names this container are candidates. A scan
// result may be outdated by the barrier: step 3 rechecks.
Status GarbageCollector::ScanContainers(Round* round) {
  ChunkStore* store = host_->chunk_store();
  ChunkIndex* index = host_->chunk_index();
  GcStats* stats = round->stats;
  const std::vector<ContainerId>& ids = round->ids;
  scan_total_ = ids.size();
  SetPhase("scan");
  for (size_t i = 0; i < ids.size(); i++) {
    scan_done_ = i;
    const ContainerId id = ids[i];
    // Only a container's own id: under an id a merge folded into another,
    // the entries name the other id and the chunks would pass for spare
    // copies. (The lists above hold resolved ids; skipping scans no garbage.)
    if (store->Resolve(id) != id) continue;
    ContainerScan scan;
    ContainerSummary summary;
    if (round->full_scan && store->GetSummary(id, &summary) && round->entries_in[i] == summary.chunks) {
      // As below, every chunk has its own entry; the summary recorded at
      // commit says the rest, so the container's metadata is not read.
      scan.total_bytes = summary.serialized_bytes;
      scan.live_bytes = summary.footprint_bytes;
      scan.live_chunks = summary.chunks;
      stats->containers_scanned++;
      stats->containers_summarized++;
      round->scans.emplace(id, std::move(scan));
      continue;
    }
    std::vector<ChunkStore::ChunkFootprint> chunks;
    Status s = store->GetChunkFootprints(id, &chunks, &scan.total_bytes);
    if (s.IsNotFound()) continue;  // deleted meanwhile
    if (!s.ok()) return s.WithContext("scan container " + std::to_string(id));
    stats->containers_scanned++;
    if (round->full_scan && round->entries_in[i] == chunks.size()) {
      // As many entries name this container as it holds chunks (an entry
      // names the container that holds its chunk): every chunk has its own
      // entry, none is garbage, and the pass above found the candidates. An
      // entry missed by the pass makes the count lower, never higher, so a
      // container with garbage always takes the lookups below.
      scan.SetAllLive(chunks);
      round->scans.emplace(id, std::move(scan));
      continue;
    }
    stats->containers_looked_up++;
    for (const auto& c : chunks) {
      ChunkIndexEntry entry;
      Status l = index->Lookup(c.fp, &entry);
      if (l.IsNotFound()) {
        scan.suspects.emplace_back(c.fp, c.bytes);
        continue;
      }
      DEDUPV1_RETURN_IF_ERROR(l);
      // An entry naming another copy: this copy is kept while a mapping
      // names it (2c and step 3 find out).
      scan.live_bytes += c.bytes;
      scan.live_chunks++;
      if (store->Resolve(entry.container) != id) {
        round->spares->Add(id, c.fp, c.bytes);
      } else if (entry.usage_count == 0) {
        host_->usage()->AddCandidate(c.fp);
      }
    }
    round->scans.emplace(id, std::move(scan));
  }
  scan_done_ = ids.size();
  return Status::OK();
}

// Step 2c, no lock held (dedup runs go on), with the round's spare copies
// watched by the usage counter. Before: round->spares holds the copies the
// scan found unnamed by their entries. After: every mapping installed before
// the walk began is noted; round->spares_walked says whether the walk read
// every stored mapping (a damaged record may name a copy: then none is
// judged).
Status GarbageCollector::WalkMappings(Round* round) {
  SetPhase("mappings");
  // Events counted before the watch began were logged before it: once
  // installed, the walk below sees their mappings.
  host_->WaitForInstalledMappings();
  SpareCopies* spares = round->spares.get();
  bool complete = false;
  DEDUPV1_RETURN_IF_ERROR(
      host_->ForEachMapping([spares](const BlockMapping& mapping) { spares->NoteMapping(mapping); }, &complete));
  round->spares_walked = complete;
  if (!complete) {
    std::fprintf(stderr,
                 "dedupv1: GC keeps %zu copies of chunks stored twice: a block mapping could not be read "
                 "(dedupv1_check names it)\n",
                 spares->size());
  }
  return Status::OK();
}

// Step 3. Takes the GC barrier exclusively (no dedup run is between its
// filter-chain decision and its mappings being logged) and, inside it, one
// fingerprint lock at a time. Before: the scan's results. After: every event
// up to round->logged is durable and counted; each candidate still at usage 0
// lost its chunk-index entry, each suspect still without one is confirmed,
// and both are in round->dead and marked dead in the chunk store (a
// container with garbage that was not scanned is pending for the next
// round); filters that cache chunk locations forgot them. Nothing removed so
// far is persistent.
Status GarbageCollector::RecheckUnderBarrier(Round* round) {
  SetPhase("recheck");
  GcBarrier::Exclusive barrier(host_->gc_barrier());
  // Every dedup run's mapping is logged now. The id is read before the
  // sync: only events the sync covers may be counted (an unmap, which does
  // not take the barrier, may append meanwhile; it is counted next time).
  round->logged = host_->log()->last_id();
  DEDUPV1_RETURN_IF_ERROR(host_->Persist());
  DEDUPV1_RETURN_IF_ERROR(host_->usage()->CountUpTo(round->logged));
  DEDUPV1_RETURN_IF_ERROR(EraseUnusedCandidates(round));
  DEDUPV1_RETURN_IF_ERROR(ConfirmSuspects(round));
  DEDUPV1_RETURN_IF_ERROR(JudgeSpareCopies(round));
  MarkGarbageDead(round);
  return Status::OK();
}

// Step 3, under the barrier: each candidate under its fingerprint lock.
Status GarbageCollector::EraseUnusedCandidates(Round* round) {
  ChunkStore* store = host_->chunk_store();
  ChunkIndex* index = host_->chunk_index();
  for (const Fingerprint& fp : host_->usage()->TakeCandidates()) {
    std::lock_guard<std::mutex> fp_lock(host_->fingerprint_locks()->For(fp));
    ChunkIndexEntry entry;
    Status l = index->Lookup(fp, &entry);
    if (l.IsNotFound()) continue;
    DEDUPV1_RETURN_IF_ERROR(l);
    if (entry.usage_count != 0) {
      round->stats->chunks_survived++;
      continue;
    }
    DEDUPV1_RETURN_IF_ERROR(index->Erase(fp));
    round->stats->chunks_deleted++;
    const ContainerId c = store->Resolve(entry.container);
    round->dead[c].push_back(fp);
    auto scan = round->scans.find(c);
    if (scan != round->scans.end()) scan->second.recount = true;
  }
  return Status::OK();
}

// Step 3, under the barrier: a suspect with an entry again is live.
Status GarbageCollector::ConfirmSuspects(Round* round) {
  ChunkIndex* index = host_->chunk_index();
  for (auto& [id, scan] : round->scans) {
    for (const auto& [fp, bytes] : scan.suspects) {
      ChunkIndexEntry entry;
      Status l = index->Lookup(fp, &entry);
      if (l.ok()) {
        // Referenced again since the scan (its entry was re-created).
        scan.live_bytes += bytes;
        scan.live_chunks++;
        continue;
      }
      if (!l.IsNotFound()) return l;
      round->dead[id].push_back(fp);
      round->stats->orphans_found++;
    }
  }
  return Status::OK();
}

// Step 3, under the barrier, after every logged event was counted (so
// noted by the watch): a spare copy no mapping named is garbage if its entry
// still names another committed copy, or none (its chunk is unused). Under
// the barrier no run is between its decision and its logged mapping, and an
// unmap only drops items: no mapping can come to name such a copy.
Status GarbageCollector::JudgeSpareCopies(Round* round) {
  if (round->spares->empty() || !round->spares_walked) return Status::OK();
  ChunkStore* store = host_->chunk_store();
  ChunkIndex* index = host_->chunk_index();
  for (const SpareCopies::Copy& copy : round->spares->Unreferenced()) {
    std::lock_guard<std::mutex> fp_lock(host_->fingerprint_locks()->For(copy.fp));
    ChunkIndexEntry entry;
    Status l = index->Lookup(copy.fp, &entry);
    if (l.ok() && !entry.committed) {
      // Moved to a copy whose container is not committed yet (stored again
      // moments ago): judged by a later round, which must look here again.
      std::lock_guard<std::mutex> pl(pending_mu_);
      pending_containers_.insert(copy.container);
      continue;
    }
    if (l.ok() && store->Resolve(entry.container) == copy.container) continue;
    if (!l.ok() && !l.IsNotFound()) return l;
    round->dead[copy.container].push_back(copy.fp);
    round->stats->spare_copies_dead++;
    auto scan = round->scans.find(copy.container);
    if (scan != round->scans.end()) scan->second.recount = true;
  }
  return Status::OK();
}

// Step 3, under the barrier.
void GarbageCollector::MarkGarbageDead(Round* round) {
  ChunkStore* store = host_->chunk_store();
  for (const auto& [id, fps] : round->dead) {
    store->MarkDead(id, fps);
    if (round->scans.count(id) == 0) {
      std::lock_guard<std::mutex> l(pending_mu_);
      pending_containers_.insert(id);
    }
  }
  host_->OnChunksMarkedDead();
}

// Step 4, no lock held. Before: erasures and marks in memory (step 3).
// After: the erasures are persistent (checkpoint + chunk-index flush) and,
// unless the round is deferred, no log event naming the garbage remains and
// the dead marks are persisted (round->marks_persisted says whether).
// Deferred (the checkpoint kept counted events): round->scans is empty, its
// containers are pending and step 5 touches none.
Status GarbageCollector::PersistErasures(Round* round) {
  SetPhase("persist");
  DEDUPV1_RETURN_IF_ERROR(host_->Checkpoint());
  DEDUPV1_RETURN_IF_ERROR(host_->chunk_index()->Flush());
  if (host_->log()->head_id() <= round->logged) {
    // The checkpoint kept some of the counted events (a block's older
    // mapping had not reached the block index store, see
    // DedupSystem::Checkpoint). Replayed after a crash they may name the
    // garbage, so its containers stay until a later round finds the log
    // trimmed past them. (Containers with garbage that were not scanned are
    // pending already, step 3.)
    std::lock_guard<std::mutex> l(pending_mu_);
    for (const auto& [id, scan] : round->scans) {
      pending_containers_.insert(id);
      round->stats->live_bytes += scan.live_bytes;
    }
    round->stats->rounds_deferred++;
    round->scans.clear();
  } else {
    // The erasures are persistent and no event left in the log names the
    // garbage: its marks may outlive this run, so the first round after the
    // next start does not have to look the containers' chunks up again. (A
    // deferred round's marks wait for a later round's trimmed log.) Merges
    // read the marks in memory: a failure here is reported after the space
    // work, not instead of it.
    round->marks_persisted = host_->chunk_store()->PersistDeadMarks();
  }
  return Status::OK();
}

// Step 5a, no lock held. Before: step 4 completed (nothing a crash could
// replay names the garbage). After: every scanned container without live
// chunks is deleted (kContainerDeleted logged, a record only); those less
// than half live are in round->underfilled.
Status GarbageCollector::DeleteEmptyContainers(Round* round) {
  ChunkStore* store = host_->chunk_store();
  const uint64_t capacity = store->options().container_size;
  const uint64_t budget = capacity - capacity / 8;  // room for aliases and rounding
  for (auto& [id, scan] : round->scans) {
    if (scan.recount || scan.live_chunks == 0) {
      // What is left once this round's garbage is marked dead (the chunk
      // store leaves dead chunks out; only GC marks them, one round at a
      // time). Also before deleting a container judged empty: counting in
      // step 3 re-creates the entry of a chunk a mapping references again
      // and removes its dead mark, so it holds a live chunk after all.
      // (Nothing is known to hand out a marked chunk; this keeps a delete
      // from trusting a judgement made before the barrier.)
      std::vector<ChunkStore::ChunkFootprint> chunks;
      Status s = store->GetChunkFootprints(id, &chunks, &scan.total_bytes);
      if (!s.ok()) return s.WithContext("recount container " + std::to_string(id));
      scan.SetAllLive(chunks);
    }
    const uint64_t live = scan.live_bytes;
    round->stats->live_bytes += live;
    if (scan.live_chunks == 0) {
      DEDUPV1_RETURN_IF_ERROR(store->DeleteContainer(id));
      ContainerEventData event;
      event.container = id;
      uint64_t event_id;
      (void)host_->log()->Append(LogEventType::kContainerDeleted, event.Encode(), &event_id);  // a record only
      round->stats->containers_deleted++;
    } else if (live * 2 < scan.total_bytes && live < budget) {
      round->underfilled.emplace_back(id, live);
    }
  }
  return Status::OK();
}

// Step 5b, no lock held. Before: round->underfilled (5a). After: runs of
// them that fit one container are merged into a new container answering to
// their ids (ChunkStore::MergeContainers, ordered by its alias record;
// kContainerMerged logged, a record only); a group that did not fit after
// all is left as it is.
Status GarbageCollector::MergeUnderfilledContainers(Round* round) {
  ChunkStore* store = host_->chunk_store();
  const uint64_t capacity = store->options().container_size;
  const uint64_t budget = capacity - capacity / 8;  // room for aliases and rounding
  const auto& underfilled = round->underfilled;
  size_t i = 0;
  while (i < underfilled.size()) {
    std::vector<ContainerId> group;
    uint64_t sum = 0;
    while (i < underfilled.size() && (group.empty() || sum + underfilled[i].second <= budget)) {
      group.push_back(underfilled[i].first);
      sum += underfilled[i].second;
      i++;
    }
    ContainerId merged;
    DEDUPV1_RETURN_IF_ERROR(store->MergeContainers(group, &merged));
    if (merged == kNoContainer) continue;  // did not fit after all: left as they are
    ContainerMergedData event;
    event.result = merged;
    event.sources = group;
    uint64_t event_id;
    (void)host_->log()->Append(LogEventType::kContainerMerged, event.Encode(), &event_id);  // a record only
    round->stats->containers_merged += group.size();
    round->stats->containers_written++;
  }
  return Status::OK();
}

bool GarbageCollector::HasWork() const {
  if (ClusterGcRules* rules = host_->cluster_rules()) return rules->HasWork();
  if (!full_scan_done_.load()) return true;
  UsageCounter* usage = host_->usage();
  if (usage != nullptr && (usage->candidate_count() > 0 || usage->released_count() > 0)) return true;
  std::lock_guard<std::mutex> l(pending_mu_);
  return !pending_containers_.empty();
}

void GarbageCollector::SetPhase(const char* phase) { phase_.store(phase); }

GcStats GarbageCollector::stats() const {
  GcStats st;
  {
    std::lock_guard<std::mutex> l(stats_mu_);
    st = stats_;
    if (st.running) {
      st.phase = phase_.load();
      st.scan_containers_done = scan_done_.load();
      st.scan_containers_total = scan_total_.load();
    }
  }
  if (UsageCounter* usage = host_->usage()) {
    st.usage = usage->stats();
    st.candidates = usage->candidate_count();
  }
  return st;
}

}  // namespace dedupv1

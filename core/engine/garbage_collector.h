// GarbageCollector gives the space of chunks no block mapping references any
// more back (docs/architecture.md "Garbage collection"). One round:
//
//  1. Checkpoint: usage counts catch up with the logged mapping events
//     (UsageCounter) and the log is trimmed.
//  2. Scan (no lock): the chunks of the containers in question are looked up
//     in the chunk index. The first round after open scans every committed
//     container (usage 0 entries become candidates, so candidates lost in a
//     restart are found again, and garbage of a round interrupted by a crash
//     is found as chunks without an entry); it first counts the index entries
//     per container in one sequential pass over the index (finding the usage
//     0 entries too) and looks chunks up only in containers holding more
//     chunks than entries name them. Later rounds scan only the containers
//     holding a candidate or garbage the last round marked but did not scan.
//     A chunk whose entry resolves to this container is live; a chunk without
//     an entry is suspected garbage; a chunk whose entry names another copy
//     (container rewriting, or two writers at once) is a spare copy, live
//     while a mapping names it.
//  2c. Spare copies (if the scan found any): watched by the usage counter,
//     then a walk of the block index notes the mappings that name them
//     (core/engine/spare_copies.h).
//  3. Hold and recheck, under the system's GC barrier (exclusive: no dedup
//     run is between its filter-chain decision and its mapping being logged):
//     containers committed and the log synced, every logged event counted,
//     then each candidate is rechecked under its fingerprint lock and its
//     chunk-index entry erased only if its usage is still 0; suspects still
//     without an entry are confirmed; spare copies no mapping named whose
//     entry still names another committed copy (or is gone) are garbage. The garbage is marked dead in the chunk
//     store (the container-cache filter, cleared here, cannot find it again).
//  4. Checkpoint + chunk-index flush: the erasures are persistent and no log
//     event naming garbage remains before any container is touched.
//  5. Space: containers without live chunks are deleted (kContainerDeleted
//     logged); containers less than half live are merged, several into one
//     where they fit, into a new container that answers to their ids
//     (ChunkStore::MergeContainers; kContainerMerged logged).
//
// A round is crash-safe at every step: before 4 completes nothing persistent
// was removed; erasures are persisted before containers change; merges are
// ordered by the chunk store's alias record. Rounds run one at a time.
//
// Cluster scope (GcHost::cluster_rules, core/engine/cluster_gc_rules.h says
// why): steps 2-4 are replaced by the slot's rule set (checkpoint; the
// host's BeforeContainerRound; the dead inbox moved into persisted dead
// marks; the containers with marks judged by what is left unmarked), then
// step 5 as above, on this slot's containers only.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/engine/gc_host.h"
#include "core/base/status.h"
#include "core/base/types.h"
#include "core/engine/cluster_gc_stats.h"
#include "core/engine/usage_counter.h"

namespace dedupv1 {


struct GcStats {
  bool running = false;
  // While running: what the round does now ("checkpoint", "index pass",
  // "scan", "recheck", "persist", "space") and, in the scan, how far it got.
  std::string phase;
  uint64_t scan_containers_done = 0;
  uint64_t scan_containers_total = 0;
  uint64_t runs = 0;
  uint64_t failed_runs = 0;
  uint64_t candidates = 0;          // chunks at usage 0 waiting for the next round
  uint64_t chunks_deleted = 0;      // chunk-index entries erased
  uint64_t chunks_survived = 0;     // candidates re-referenced before the recheck
  uint64_t orphans_found = 0;       // stored chunks without an index entry, marked dead
  uint64_t spare_copies_dead = 0;   // copies no mapping names whose entry names another copy, marked dead
  uint64_t inbox_chunks = 0;        // cluster scope: chunks taken from the slot's dead inbox, marked dead
  uint64_t inbox_foreign_keys = 0;  // cluster scope: inbox keys naming another slot's container, dropped (logged)
  uint64_t inbox_damaged_keys = 0;  // cluster scope: inbox keys failing their checksum, dropped (logged)
  uint64_t bytes_reclaimed = 0;     // drop of the container store's used bytes
  uint64_t containers_merged = 0;   // source containers folded into merged ones
  uint64_t containers_written = 0;  // merged containers written
  uint64_t containers_deleted = 0;  // containers deleted without a merge
  uint64_t rounds_deferred = 0;     // rounds that left their containers to a later one (log not trimmed yet)
  uint64_t containers_scanned = 0;  // containers judged by the scans (metadata read or summarized)
  uint64_t containers_looked_up = 0;  // of those, checked chunk by chunk in the chunk index
  uint64_t containers_summarized = 0;  // of those, judged by their summary: no metadata read
  uint64_t used_bytes = 0;          // container store bytes after the last round
  uint64_t live_bytes = 0;          // live chunk bytes found by the last round's scan
  int64_t last_run_unix = 0;        // end of the last round (seconds since the epoch), 0 = never
  uint64_t last_run_ms = 0;         // its duration
  std::string last_error;           // of the last failed round, "" if none
  UsageCounterStats usage;
  ClusterGcStats cluster_index;  // cluster scope: the index rounds (core/engine/cluster_gc.h)
};

class GarbageCollector {
 public:
  explicit GarbageCollector(GcHost* host) : host_(host) {}

  // Runs one round (waits for a running one to finish first).
  Status Run();
  // Whether a round would find anything to do: no full scan since open yet,
  // candidates waiting, or containers with garbage not looked at yet.
  bool HasWork() const;
  GcStats stats() const;

 private:
  struct ContainerScan;
  struct Round;  // one round's working state, handed from step to step

  // The steps of a round, in order (the numbers of the comment above); each
  // states what holds before and after it in garbage_collector.cc.
  Status RunLocked(GcStats* stats);
  Status ListContainersToScan(Round* round);   // 2a
  Status ScanContainers(Round* round);         // 2b
  Status WalkMappings(Round* round);           // 2c
  Status RecheckUnderBarrier(Round* round);    // 3
  Status EraseUnusedCandidates(Round* round);  // 3, under the barrier
  Status ConfirmSuspects(Round* round);        // 3, under the barrier
  Status JudgeSpareCopies(Round* round);       // 3, under the barrier
  void MarkGarbageDead(Round* round);          // 3, under the barrier
  Status PersistErasures(Round* round);        // 4
  Status DeleteEmptyContainers(Round* round);  // 5a
  Status MergeUnderfilledContainers(Round* round);  // 5b
  // Cluster scope: the round instead of steps 1-4, and its scan.
  Status RunClusterRound(ClusterGcRules* rules, Round* round);
  Status ScanMarkedContainers(const std::vector<ContainerId>& ids, Round* round);
  void SetPhase(const char* phase);

  GcHost* const host_;
  std::mutex run_mu_;
  std::atomic<bool> full_scan_done_{false};
  // Containers a round marked garbage in without having scanned them (their
  // candidates appeared under the barrier): the next round scans them.
  mutable std::mutex pending_mu_;
  std::set<ContainerId> pending_containers_;
  std::atomic<bool> running_{false};
  std::atomic<const char*> phase_{""};  // string literals only
  std::atomic<uint64_t> scan_done_{0};
  std::atomic<uint64_t> scan_total_{0};
  mutable std::mutex stats_mu_;
  GcStats stats_;
};

}  // namespace dedupv1

// UsageCounter keeps the chunk index's usage counts in step with the block
// mappings by replaying kBlockMappingWritten events of the operations log
// (garbage collection, docs/architecture.md "Garbage collection").
//
// Counting rule (the same one dedupv1_check recounts with): a chunk's usage
// count is the number of block mappings that reference it, where a mapping
// counts a fingerprint once however many of its items name it, and zero items
// (kZeroContainer: zero chunks, unmapped holes) count for nothing. An event
// replacing mapping OLD by NEW therefore adds, per fingerprint, 1 if NEW
// references it minus 1 if OLD does.
//
// Invariants:
//  - Only durable events are counted: callers pass an |up_to| that the log has
//    synced and whose containers are committed (Checkpoint and the GC round
//    sync first). A count lowered by an event a crash then loses could free a
//    chunk that is still mapped.
//  - Idempotent per entry: each change is tagged with its event id and an
//    entry skips events at or below its last_event_id, so events replayed
//    again after a crash between the chunk-index write-back and the log trim
//    count once.
//  - The same drop decision as DedupSystem::Recover: an event whose new
//    mapping names a container that is not committed was dropped from the
//    block index and is not counted either; the block keeps the mapping the
//    event replaced, which is what the block's next event then decrements.
//  - A fingerprint that reaches 0 becomes a GC candidate (kept in memory;
//    after a restart the GC round finds usage-0 entries by its scan).
//
// Thread-safe (one replay at a time).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chunkstore/chunk_store.h"
#include "core/base/status.h"
#include "core/engine/spare_copies.h"
#include "index/block_mapping.h"
#include "index/chunk_index.h"
#include "log/operations_log.h"

namespace dedupv1 {

// The fingerprints |mapping| counts for (the counting rule above: each once,
// zero items not at all), each with the container of its first item.
void ReferencedChunks(const BlockMapping& mapping, std::map<Fingerprint, ContainerId>* out);

// Whether every container |mapping| references (zero items aside) is
// committed. Recovery drops a logged mapping that fails this (it describes
// data no sync covered), and usage counting drops the same events.
bool AllContainersCommitted(const BlockMapping& mapping, const ChunkStore& store);

struct UsageCounterStats {
  uint64_t events_counted = 0;    // mapping events applied to usage counts
  uint64_t events_dropped = 0;    // events skipped like Recover drops them
  uint64_t changes_skipped = 0;   // per-entry changes already counted (replayed twice)
  uint64_t missing_entries = 0;   // decrements of chunks without an entry
  uint64_t entries_restored = 0;  // increments that re-created an erased entry
  uint64_t copies_released = 0;   // containers queued for GC: a mapping let go of a copy the entry does not name
  uint64_t applied_id = 0;        // every event up to this id is counted
};

class UsageCounter {
 public:
  // Events before |first_uncounted| are counted already (the log head at open).
  UsageCounter(OperationsLog* log, ChunkIndex* index, ChunkStore* store, uint64_t first_uncounted);

  // Counts the mapping events in (applied_id, up_to]. Stops at the first error
  // (the events counted so far stay counted; a retry skips them per entry).
  Status CountUpTo(uint64_t up_to);

  // Takes the fingerprints that reached usage 0 since the last call.
  std::vector<Fingerprint> TakeCandidates();
  // The current candidates, left in place.
  std::vector<Fingerprint> Candidates() const;
  // Adds candidates found otherwise (e.g. by a GC scan after a restart).
  void AddCandidate(const Fingerprint& fp);
  size_t candidate_count() const;

  // Containers holding a copy that a counted event let go of while the
  // chunk's entry names another container (a spare copy: rewriting, two
  // writers at once) or none: the copy may be garbage now, though its
  // fingerprint's usage did not reach 0, so no candidate leads GC there.
  // Also a copy a block's mapping moved away from (same chunk, another
  // container). Resolved ids; taken by GC's next round.
  std::vector<ContainerId> TakeReleasedCopies();
  size_t released_count() const;
  // A writer stored a chunk again and moved its entry off the copy in
  // container |old| (rewriting, policy off): that copy may be named by no
  // mapping, and no counted event would tell. Queued like the above.
  void NoteCopyReplaced(ContainerId old);

  // While set (not null), every mapping event this counter collects from
  // now on, dropped ones too, notes its new mapping in |copies| (garbage
  // collection's spare copies, core/engine/spare_copies.h). Unset with null
  // before |copies| goes away.
  void WatchSpareCopies(SpareCopies* copies);

  UsageCounterStats stats() const;

 private:
  // Changes collected from consecutive events, counted together.
  struct Batch {
    std::vector<ChunkIndex::UsageChange> changes;
    std::vector<ContainerId> released;  // per change: a decrement's copy (kNoContainer for increments)
    std::vector<ContainerId> moved_away;  // copies a mapping moved away from (same chunk)
    uint64_t last_id = 0;  // the last event collected
    uint64_t events_counted = 0;
    uint64_t events_dropped = 0;
  };
  // Changes per AddUsageMany: loading up to this many entries from a
  // sharded table costs one round trip per shard (64 by default), ~0.1 per
  // 100 changes. The batch holds ~5 MB; lookups and new chunks wait while
  // it applies under the chunk index's lock (tens of ms at most: a hash
  // lookup or insert per change), write-back while it loads.
  static constexpr size_t kBatchChanges = 1 << 16;

  // Adds the usage changes of mapping event |e| to |batch| (none if Recover
  // would drop it; dropped_ is updated either way).
  Status CollectEvent(const LogEvent& e, Batch* batch);
  Status ApplyBatch(const Batch& batch);
  // One change whose entry the batch did not find: AddUsage alone, and the
  // entry re-created for an increment if GC had erased it (|restored|).
  // |counted| is false if the change found no entry (counted in the stats
  // here).
  Status ApplyAlone(const ChunkIndex::UsageChange& c, ChunkIndex::UsageOutcome* o, bool* counted, bool* restored);
  // Queues |released| (a decrement's copy) unless the entry names it.
  void NoteReleasedLocked(ContainerId released, ContainerId entry_container);
  void QueueReleasedLocked(ContainerId copy);

  OperationsLog* const log_;
  ChunkIndex* const index_;
  ChunkStore* const store_;

  std::mutex replay_mu_;  // one CountUpTo at a time
  mutable std::mutex mu_;  // guards the members below
  uint64_t applied_id_;
  std::unordered_set<Fingerprint, FingerprintHasher> candidates_;
  std::unordered_set<ContainerId> released_;  // TakeReleasedCopies
  // Blocks whose latest event was dropped: the serialized mapping they still
  // have (what their next counted event replaces).
  std::unordered_map<BlockId, std::string, BlockIdHasher> dropped_;
  UsageCounterStats stats_;
  SpareCopies* spare_copies_ = nullptr;
};

}  // namespace dedupv1

// ClusterGcStats: what the index GC rounds of a cluster-scope store did
// (core/engine/cluster_gc.h), as the engine's GC stats carry them. In a
// header of its own so GcStats does not pull in the shared table.
#pragma once

#include <cstdint>
#include <string>

namespace dedupv1 {

struct ClusterGcStats {
  uint64_t rounds = 0;                // index rounds this slot led
  uint64_t rounds_skipped = 0;        // another slot held the leader lease
  uint64_t hints_seen = 0;            // hints read, over all rounds
  uint64_t stale_claims_flipped = 0;  // U whose container exists, flipped to C
  uint64_t stale_claims_pending = 0;  // now: dead incarnations' claims waiting for their recheck
  uint64_t stale_claims_erased = 0;   // dead incarnations' claims erased after the recheck
  uint64_t hints_dropped = 0;         // of C entries in use (and leftover hints)
  uint64_t journal_records = 0;       // claim journal records of ended incarnations turned into hints (or damaged, removed)
  uint64_t journal_failures = 0;      // slots whose claim journal could not be read or cleared in a round
  uint64_t races = 0;                 // compare-and-sets that met a change (looked at again next round)
  uint64_t claims_not_held = 0;       // U whose existing container lacks the chunk (not flipped)
  uint64_t damaged_skipped = 0;       // damaged hints, records or heartbeats skipped
  std::string last_damage;            // the last of them, naming object and key
  uint64_t rounds_cut = 0;            // rounds ended by the budget or stop (the next resumes)
  uint64_t passes = 0;                // passes over every shard's hints completed
  uint64_t remembered = 0;            // now: hints whose first sighting is remembered
  uint64_t remember_full = 0;         // hints not remembered (max_remembered reached)
  uint64_t failed_rounds = 0;         // rounds that ended with an error (the next one starts over)
  std::string last_error;             // of the last failed round, "" if none
  // Unused chunks (design-15 2.6 steps 4-7):
  uint64_t dead_marked = 0;     // C entries with usage 0 marked dead (D)
  uint64_t dead_finalized = 0;  // D entries erased, their chunk handed to the owner's dead inbox
  uint64_t dead_unmarked = 0;   // D entries found in use again, back to C
  uint64_t dead_waiting = 0;    // now: D entries waiting for every slot's safe epoch
  uint64_t young = 0;           // last round: C entries with usage 0 not two epochs old yet
  uint64_t epoch_bumps = 0;     // GC epochs raised by this slot's rounds
  uint64_t epoch = 0;           // the epoch the last round read
  std::string waiting_for;      // last round: the slot whose safe epoch held finalization back, "" if none
  uint64_t unsent = 0;          // now: erased chunks whose owner's inbox append failed (retried each round)
  // This slot's part (core/engine/gc_epoch_follower.h), filled by the engine:
  uint64_t slot_epoch = 0;        // the tag of this slot's runs
  uint64_t slot_safe_epoch = 0;   // last safe epoch this slot published
  std::string follow_error;       // of the last failed attempt to follow the epoch, "" if none
};

}  // namespace dedupv1

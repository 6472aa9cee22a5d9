// GC epochs of a cluster-scope store (docs/design-15.md 2.6): what lets the
// index GC leader prove that no gateway slot still holds an uncounted
// reference to a chunk whose entry it marked dead (D), before it erases it.
//
// Both live on the store's index-pool object "gc" (where the leader lease,
// core/rados/gc_leader_lease.h, lives too):
//  - xattr "epoch": the current GC epoch, decimal (absent = 0). Raised by
//    one, only by the leader, with a compare-and-set (BumpGcEpoch).
//  - omap key "s." + slot name: that slot's safe epoch, written by the slot
//    itself (PublishSafeEpoch): incarnation u32, safe epoch u64, CRC32C over
//    key and value. "Safe at E" says: this incarnation tags every run it
//    starts with its cached epoch, which is E or later, and every reference
//    made by a run tagged below E is counted in the shared usage keys.
//    kSafeEpochClosed says the incarnation closed cleanly (everything
//    counted, no run will start): it blocks no finalization.
//
// Invariants: the epoch never goes down (only BumpGcEpoch changes it, from
// exactly the value read); a slot's record names the incarnation that wrote
// it, so a reader ignores the record of an earlier incarnation (a slot taken
// over is safe only once its taker says so). A damaged record is reported,
// never trusted.
//
// Every call goes through the RadosCluster (counted; errors name pool and
// object; bounded by its op timeout); writes check the lease first, so a
// fenced gateway publishes nothing. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

// A slot's safe epoch that blocks nothing: closed cleanly.
constexpr uint64_t kSafeEpochClosed = UINT64_MAX;

struct SlotSafeEpoch {
  uint32_t incarnation = 0;
  uint64_t safe = 0;
};

struct GcEpochState {
  uint64_t epoch = 0;
  std::map<std::string, SlotSafeEpoch> safe;  // by slot name
  std::vector<std::string> damaged;           // records that failed their check, as Corruption texts
};

// The current epoch only (one read; 0 while the object or xattr is absent).
Status ReadGcEpoch(RadosCluster* cluster, uint64_t* epoch);
// The epoch and every slot's safe epoch in one read.
Status ReadGcEpochState(RadosCluster* cluster, GcEpochState* state);
// Raises the epoch from |from| to |from| + 1 if it still is |from|;
// *bumped false if it was not (another leader moved it; nothing changed).
Status BumpGcEpoch(RadosCluster* cluster, uint64_t from, bool* bumped);
// Records |slot|'s safe epoch for |incarnation|.
Status PublishSafeEpoch(RadosCluster* cluster, const std::string& slot, uint32_t incarnation, uint64_t safe);

// Stored forms, for tests and tools.
std::string SafeEpochKey(const std::string& slot);
std::string EncodeSafeEpoch(const std::string& slot, const SlotSafeEpoch& record);

}  // namespace dedupv1

// ClusterIndexGc: the index GC round of a cluster-scope store
// (storage.rados.dedup-scope = cluster, docs/design-15.md 2.6 "Index GC
// round"), run by whichever gateway slot holds the GC leader lease
// (core/rados/gc_leader_lease.h); a slot that does not get it skips the
// round. Built: the stale-claim part (steps 1-3 and the "usage > 0" half of
// step 4). Not built: D marks, epochs and finalization (steps 4-7).
//
// A round pages the "z" hints of every shard (one read per page) and, per
// hint older than the claim hold by this process's monotonic clock (first
// seen -> remembered in memory; a new leader starts afresh, which only
// delays), reads the fingerprint's record and acts:
//  - U{X}, container X exists: flip to C on the claimer's behalf (containers
//    are written whole, so existing = durable; seed 004's consistency check).
//  - U{X}, X missing, and the claimer's incarnation is no longer current (the
//    registry names a later one: taken over; or its heartbeat of that
//    incarnation says stopped or fenced): remember the exact entry; a later
//    round at least one more hold on that finds the same entry and X still
//    missing erases entry, usage keys and hint with one guarded
//    compare-and-set. That incarnation cannot flip any more (fenced or
//    closed), and a taker's claim changes the entry, which fails the erase.
//  - U of a current incarnation: never touched (its owner flips it, or
//    another slot's claim takes it over after the hold, index/chunk_claims.h).
//  - C with usage sum > 0: the hint goes (compare-and-set on entry, usage
//    keys and hint as read, so a decrement in between keeps it).
//  - C with usage sum 0, D: left for steps 4-7 (not built).
//  - No entry: a leftover hint goes.
// Every change is a compare-and-set of what was read: two leaders (a stalled
// one whose lease ran out) cannot undo each other; the lease is checked
// before every change.
//
// Thread-safe: rounds are serialized; stats() may be called at any time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/base/types.h"
#include "core/engine/cluster_gc_stats.h"
#include "core/rados/rados_cluster.h"
#include "index/rados_shared_chunk_table.h"

namespace dedupv1 {

struct ClusterGcOptions {
  uint64_t claim_hold_ms = 30000;  // storage.rados.claim-hold
  uint64_t hint_page = 256;        // hints per read
  // Whether container |id| (any slot's) exists (ChunkStore::ContainerExists).
  std::function<Status(ContainerId id, bool* exists)> container_exists;
};


class ClusterIndexGc {
 public:
  // |table|: this slot's writer instance of the shared table (it must
  // outlive this); |cluster|: its connection.
  ClusterIndexGc(std::shared_ptr<RadosCluster> cluster, RadosSharedChunkTable* table, ClusterGcOptions options);

  // One round if this slot gets the leader lease (else counted as skipped).
  Status RunRound();
  // RunRound unless one ran less than half a claim hold ago (idle GC).
  Status RunRoundIfDue();

  ClusterGcStats stats() const;

 private:
  struct Seen {
    std::string hint;  // the hint's value when first seen
    std::chrono::steady_clock::time_point since;
  };
  struct Pending {
    SharedEntry entry;  // the dead incarnation's claim as found missing
    std::chrono::steady_clock::time_point since;
  };
  class Round;

  Status RunLocked();
  // Incarnations whose claims may still flip: per slot number the current
  // incarnation, unless its heartbeat says it stopped or was fenced; and
  // every registered slot number.
  Status ReadLiveSlots(std::map<uint16_t, uint32_t>* live, std::vector<uint16_t>* slots);
  Status Act(Round* round, const SharedHint& hint);
  Status ActOnClaim(Round* round, const Fingerprint& fp, const SharedRecord& record);
  bool Old(std::chrono::steady_clock::time_point since, std::chrono::steady_clock::time_point now) const;

  const std::shared_ptr<RadosCluster> cluster_;
  RadosSharedChunkTable* const table_;
  const ClusterGcOptions options_;

  std::mutex round_mu_;  // one round at a time; guards the maps
  std::map<std::string, Seen> seen_;        // by fingerprint bytes
  std::map<std::string, Pending> pending_;  // by fingerprint bytes
  std::chrono::steady_clock::time_point last_round_{};
  bool ran_ = false;

  mutable std::mutex stats_mu_;
  ClusterGcStats stats_;
};

}  // namespace dedupv1

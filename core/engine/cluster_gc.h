// ClusterIndexGc: the index GC round of a cluster-scope store
// (storage.rados.dedup-scope = cluster, docs/design-15.md 2.6 "Index GC
// round"), run by whichever gateway slot holds the GC leader lease
// (core/rados/gc_leader_lease.h); a slot that does not get it skips the
// round. Steps 1-3 collect stale claims, steps 4-7 unused chunks.
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
//  - C with usage sum 0 whose epoch is at least two behind the round's
//    (read at its start, core/rados/gc_epochs.h): marked dead, D (guarded
//    by entry and usage keys as read). Younger: counted, and the round
//    raises the epoch so that they age.
//  - D: its "sighting" is an epoch read after the D entry was read (the
//    round's last read); a round that made one raises the epoch from it.
//    Once every registered slot published a safe epoch above the sighting
//    (gc_epoch_follower.h), every reference made by a run tagged at most
//    the sighting is counted, and a run tagged later either read the D (and
//    revived it, changing the entry) or took the chunk from a block's
//    mapping whose count, coming after the sighting, changed the usage keys
//    (a new sighting): the entry is erased if entry and usage keys are
//    still exactly as sighted (usage 0), then (container, fingerprint) goes
//    to the inbox of the slot owning the container (index/dead_inbox.h),
//    whose container GC frees the bytes. Erase first: a crash in between
//    leaks one chunk (never frees one in use); a failed append is retried
//    by later rounds. A D found in use again goes back to C. A sighting
//    uses no assumption about who marked the entry or when, so a stalled
//    former leader's late mark is as safe as this round's.
//  - No entry: a leftover hint goes.
// Before the hints, a round reads every registered slot's claim journal
// (index/claim_journal.h): the records of incarnations that can no longer
// flip or count (an earlier incarnation than the registry's, or the
// registry's whose heartbeat says stopped or fenced) become "claimed" hints
// for their fingerprints, then go. (Claims carry no hint of their own; the
// live incarnation retires its records after the checkpoints that flip and
// count them.) A damaged record of an ended incarnation (or with a key that
// is not a record's) is removed and counted as damage: its fingerprints are
// lost, a leak at worst. A journal that cannot be read is counted
// (journal_failures) and the round goes on.
// A round is bounded (ClusterGcOptions round budgets, stop): it ends between
// pages and the next round resumes at the same shard and key; sightings of
// hints that went are forgotten once a whole pass ends.
// Every change is a compare-and-set of what was read: two leaders (a stalled
// one whose lease ran out) cannot undo each other; the lease is checked
// before every change.
//
// Damage (a hint, record or heartbeat that fails its checksum) is skipped
// and counted, never acted on: one bad key must not stop every later round,
// and an unreadable heartbeat counts as live (never erase on doubt).
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
#include "index/claim_journal.h"
#include "index/dead_inbox.h"
#include "index/rados_shared_chunk_table.h"

namespace dedupv1 {

struct ClusterGcOptions {
  uint64_t claim_hold_ms = 30000;  // storage.rados.claim-hold
  uint64_t hint_page = 256;        // hints per read
  // A round ends after the page during which this much time passed (0: no
  // bound), or after this many hints (0: no bound); the next round resumes
  // where it ended, so each round's work stays bounded as the store grows.
  uint64_t round_budget_ms = 5000;
  uint64_t round_hint_budget = 0;
  // Hints whose first sighting is remembered at most (seen_ and pending_);
  // beyond it a hint is seen again later (only delays, never acts early).
  size_t max_remembered = 1 << 20;
  // Whether container |id| (any slot's) exists (ChunkStore::ContainerExists).
  std::function<Status(ContainerId id, bool* exists)> container_exists;
  // Optional: whether existing container |id| holds chunk |fp| (a claim is
  // flipped only then; without it existence alone decides).
  std::function<Status(ContainerId id, const Fingerprint& fp, bool* holds)> container_holds;
  // Optional: true once the owner closes; a running round ends at the next
  // hint (and resumes in the next round, if any).
  std::function<bool()> stop;
  // Tests: called between reading a D entry's record and erasing it.
  std::function<void(const Fingerprint& fp)> before_finalize;
  // The epoch is raised at most this often (0: the claim hold): each raise
  // makes every slot checkpoint once (core/engine/gc_epoch_follower.h).
  uint64_t min_raise_interval_ms = 0;
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
  // Times are taken at each observation (not once per round), so a hold is
  // never shortened by the length of the round that first saw something.
  struct Seen {
    std::string hint;  // the hint's value when first seen
    std::chrono::steady_clock::time_point since;
    uint64_t pass = 0;  // the pass that last saw the hint
  };
  struct Pending {
    SharedEntry entry;  // the dead incarnation's claim as found missing
    std::chrono::steady_clock::time_point since;
  };
  // A D entry with its usage keys as last read, and the epoch read after
  // that (kUnsighted until the round that read it reads the epoch). Any
  // difference later (a count came in, even one that left the sum at 0) is
  // a new sighting: a run tagged after the old one may have taken the chunk
  // from a block's mapping counted since (the block-index filter), without
  // reading the D.
  static constexpr uint64_t kUnsighted = UINT64_MAX;
  struct Dead {
    SharedRecord record;
    uint64_t sighting = kUnsighted;
    uint64_t pass = 0;
  };
  // Where the pass over every shard's hints stands between rounds.
  struct Cursor {
    uint32_t shard = 0;
    std::string after;  // hint key to continue after ("" = the shard's first)
  };
  class Round;

  Status RunLocked();
  // Pages hints from the cursor on until the pass ends, the budget is spent
  // or stop() says so; *pass_done when every shard was paged to its end.
  Status Page(Round* round, bool* pass_done);
  // End of a pass: sighting of hints that went are forgotten (a hint that
  // comes back starts its age afresh).
  void EndPass();
  bool Stopping() const { return options_.stop && options_.stop(); }
  void CountDamage(Round* round, const Status& s);
  // Acts on the hints of one page (paged in key order from one shard): the
  // records of those old enough read in one batch, hint drops batched;
  // |stopped| when stop() said so before the page was done.
  Status ActOnPage(Round* round, const std::vector<SharedHint>& hints, bool* stopped);
  // Whether |hint| was seen, unchanged, longer than the claim hold ago
  // (remembers it when first seen).
  bool Due(Round* round, const SharedHint& hint);
  // Drops the hints of |drops| (records as read) in batched guarded writes,
  // the lease checked before each.
  Status DropHints(Round* round, std::vector<std::pair<Fingerprint, SharedRecord>> drops);
  // What the hint's record asks for; |drop|: the hint should go (the chunk
  // is in use, or has no entry), which the caller batches.
  Status ActOnRecord(Round* round, const Fingerprint& fp, const SharedRecord& record, bool* drop);
  // Incarnations whose claims may still flip: per slot number the current
  // incarnation, unless its heartbeat says it stopped or was fenced; and
  // every registered slot number.
  // An undecodable heartbeat counts as live (and as damage).
  Status ReadLiveSlots(Round* round);
  // The epoch and the lowest safe epoch over every registered slot (a slot
  // without a record of its current incarnation counts as 0), and which
  // slot that is.
  Status ReadEpochs(Round* round);
  // Claim journals of ended incarnations into hints (see the header); a
  // slot whose journal fails is counted and logged, the round goes on.
  Status HintEndedJournals(Round* round);
  Status HintEndedJournal(Round* round, RadosClaimJournal* journals, uint16_t slot, const std::string& name);
  // After the pages: sightings of this round's D entries, and the epoch
  // raised if they or young entries need it.
  Status EndRound(Round* round);
  // C with usage 0 (step 4) and D (steps 6-7).
  Status MarkUnused(Round* round, const Fingerprint& fp, const SharedRecord& record);
  Status ActOnDead(Round* round, const Fingerprint& fp, const SharedRecord& record, int64_t sum);
  Status Finalize(Round* round, const Fingerprint& fp, const SharedRecord& record);
  void SendUnsent();
  Status ActOnClaim(Round* round, const Fingerprint& fp, const SharedRecord& record);
  bool Old(std::chrono::steady_clock::time_point since, std::chrono::steady_clock::time_point now) const;

  const std::shared_ptr<RadosCluster> cluster_;
  RadosSharedChunkTable* const table_;
  const ClusterGcOptions options_;

  std::mutex round_mu_;  // one round at a time; guards the maps
  std::map<std::string, Seen> seen_;        // by fingerprint bytes
  std::map<std::string, Pending> pending_;  // by fingerprint bytes
  std::map<std::string, Dead> dead_;        // by fingerprint bytes
  // Chunks erased whose inbox append failed: sent again before the next
  // round acts (a crash loses them: a leak, never a chunk in use).
  std::vector<std::pair<std::string, DeadChunk>> unsent_;  // owner slot name, chunk
  std::chrono::steady_clock::time_point last_raise_{};
  bool raised_ = false;
  Cursor cursor_;
  uint64_t pass_ = 0;  // passes completed
  std::chrono::steady_clock::time_point last_round_{};
  bool ran_ = false;

  mutable std::mutex stats_mu_;
  ClusterGcStats stats_;
};

}  // namespace dedupv1

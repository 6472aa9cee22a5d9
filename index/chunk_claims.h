// ChunkClaims is the chunk index's protocol in cluster scope
// (storage.rados.dedup-scope = cluster, docs/design-15.md 2.4): every gateway
// slot of a store shares one RadosSharedChunkTable, so a chunk stored through
// any slot is found by every other. ChunkIndex stays the engine's facade; it
// reads through SharedTableView (index/shared_table_view.h) and calls these
// for claims, flips and usage.
//
// The protocol, per fingerprint:
//  - Resolve (lookup): C{X} -> use X (X may be another slot's container);
//    U{X} -> use X if the container object exists (containers are written
//    whole, so existing = durable) and flip the entry to C on the claimer's
//    behalf, else treat the chunk as new (the caller stores its own copy and
//    its claim tells what to do); D{X} -> Revive (compare-and-set) and use X.
//  - Claim (after the run stored its new chunks, before any mapping naming
//    them is logged): won -> map our copy. Lost -> map the winner's container
//    if its entry is C (or U with an existing object); otherwise wait with a
//    bounded backoff up to |claim_hold_ms| for it to appear, then take the
//    claim over (one hold per Claim call, however many of its claims it
//    lost). A claim of an earlier incarnation of this slot whose
//    container is missing is taken over at once (that incarnation is dead:
//    this one holds the slot's lock). Our copy of a lost claim is marked
//    dead by the engine's claim step at once (core/engine/claim_step.h) and
//    collected by the slot's container GC (core/engine/cluster_gc_rules.h);
//    it is counted in claims_lost and bytes_wasted.
//  - Flip (write-back once our container committed): U{ours} -> C. A lost
//    flip (taken over after a hold, or erased) leaves our blocks valid: they
//    name our container, which exists and is committed (written whole), and
//    ChunkStore::IsCommitted answers for it as before; only the table names
//    another copy.
//  - Usage: per-slot keys of this slot's log (design 2.5), counted once per
//    event id; a usage of a missing entry is counted, not an error.
//  - Claim journal (with options.journal_slot, index/claim_journal.h): each
//    Claim call's fingerprints are one record of this slot's journal,
//    written before the claims; the claims carry no GC hint. The run hands
//    its ticket back once (ReleaseClaims: referenced, or not); a checkpoint
//    begun after that retires it (RetireClaims): a record whose run was not
//    fully referenced gets hints for its fingerprints first, then the
//    records go. So GC finds a chunk that may need it either by a hint or in
//    a journal that outlived its incarnation.
//
// GC epochs (design-15 2.6, core/rados/gc_epochs.h): every claim, flip,
// take-over and revive carries this slot's current epoch (SetEpoch), which
// the engine changes only while no run is between its lookups and its
// logged mappings (the GC barrier), so it is the tag of every run in flight.
// The index GC leader marks a C entry dead only once its epoch is two
// behind the current one; Claim reports the epoch of its claims, so the
// chunk index trusts its own claims from memory only within one epoch
// (2.4, ChunkIndex::Lookup).
//
// Thread-safe: the table is; the counters are atomic.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/base/types.h"
#include "index/claim_combiner.h"
#include "index/claim_journal.h"
#include "index/rados_shared_chunk_table.h"
#include "index/shard_load.h"

namespace dedupv1 {

struct ChunkClaimsOptions {
  uint64_t claim_hold_ms = 30000;  // storage.rados.claim-hold: how long a foreign claim is waited for
  // Whether container |id| (any slot's) exists in the data pool. Set by the
  // engine (ChunkStore::ContainerExists); index/ may not see chunkstore/.
  std::function<Status(ContainerId id, bool* exists)> container_exists;
  // This slot's name (storage.rados.gateway): claims are journaled in
  // gw.<name>.claims instead of hinted one by one. "": hints (no journal).
  std::string journal_slot;
};

// What one Claim call journaled: its record's key ("" = none) and the
// fingerprints it lists. Handed back with ChunkClaims::ReleaseClaims.
struct ClaimTicket {
  std::string key;
  std::vector<Fingerprint> fps;
};

struct ChunkClaimsStats {
  uint64_t claims = 0;          // claims sent
  uint64_t claim_rounds = 0;    // ClaimMany rounds of Claim (ClaimCombiner): one write per shard each
  uint64_t claim_requests = 0;  // Claim calls those rounds carried (> rounds: runs combined)
  uint64_t claims_lost = 0;     // our copy stayed unused (another slot's entry won)
  uint64_t bytes_wasted = 0;    // bytes of the copies of lost claims
  uint64_t claim_waits = 0;     // lost claims that waited for the winner's container
  uint64_t takeovers = 0;       // stale claims taken over (after the hold, or of a dead incarnation)
  uint64_t flips = 0;           // our claims flipped to C
  uint64_t flips_lost = 0;      // flips that found the entry taken over or erased
  uint64_t flips_on_behalf = 0; // U entries with an existing container flipped by a lookup
  uint64_t revives = 0;         // D entries revived by a lookup
  uint64_t foreign_hits = 0;    // lookups answered with another slot's container
  uint64_t usage_of_missing_entry = 0;
  // Our U entries not flipped yet: claims (and take-overs) won, minus flips
  // sent for them (won or lost). A gauge for the cluster view.
  uint64_t claims_pending = 0;
  // Claim journal (index/claim_journal.h): records retired after a
  // checkpoint; of those, records whose run was not fully referenced (their
  // fingerprints got GC hints); records handed back and not yet retired.
  uint64_t journal_retired = 0;
  uint64_t journal_hinted = 0;
  uint64_t journal_waiting = 0;
  ShardLoadSummary shard_load;  // operations per shard of the shared table since open
  SharedTableStepCounts table_steps;  // operations and keys per protocol step since open
};

class ChunkClaims {
 public:
  static Status Open(const RadosSharedChunkTableOptions& table_options, const ChunkClaimsOptions& options,
                     std::unique_ptr<ChunkClaims>* out);

  // Per fingerprint the container to use, or kNoContainer: store it anew.
  Status Resolve(const std::vector<Fingerprint>& fps, std::vector<ContainerId>* containers);

  struct NewChunk {
    Fingerprint fp;
    ContainerId container = kNoContainer;  // where this slot stored it
    uint64_t size = 0;                     // its bytes (bytes_wasted if the claim is lost)
  };
  // Claims |chunks| (distinct fingerprints) at the current epoch; (*use)[i]
  // is the container the mappings must name: ours if won, else the
  // winner's. (*epochs)[i] (optional), where ours: the epoch our U value
  // holds (an earlier one if a repeated claim of the same copy found its
  // own earlier claim).
  // With a journal, |ticket| gets the record written for this call, also
  // when the call then fails (some claims may be applied); the caller hands
  // it back with ReleaseClaims. Without |ticket| the record is handed back
  // at once as not referenced (its chunks get hints).
  Status Claim(const std::vector<NewChunk>& chunks, std::vector<ContainerId>* use,
               std::vector<uint64_t>* epochs = nullptr, ClaimTicket* ticket = nullptr);

  // A run hands its ticket back: |referenced| once every block mapping of
  // the run is logged (each chunk it claimed is then counted by the next
  // checkpoint); false on any other end (an error, a block rewritten
  // meanwhile): its fingerprints get hints before the record goes.
  void ReleaseClaims(ClaimTicket ticket, bool referenced);
  // How many tickets were handed back so far: a checkpoint reads this before
  // it reads the last applied event, and after it succeeded retires every
  // ticket up to that count (RetireClaims). On an error the tickets stay for
  // the next checkpoint.
  uint64_t ClaimsReleased() const;
  Status RetireClaims(uint64_t up_to);

  // Flips this slot's claims U{container} to C; lost flips are counted.
  Status Flip(const std::vector<std::pair<Fingerprint, ContainerId>>& claimed);

  // Usage deltas of this slot's log. (*applied)[i]: counted now (false:
  // counted before, or no entry).
  Status AddUsage(const std::vector<SharedUsageDelta>& deltas, std::vector<bool>* applied);

  // The GC epoch of this slot: the tag of every run from now on (see above).
  void SetEpoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }

  ChunkClaimsStats stats() const;
  RadosSharedChunkTable* table() const { return table_.get(); }

 private:
  ChunkClaims(const ChunkClaimsOptions& options, std::unique_ptr<RadosSharedChunkTable> table,
              std::unique_ptr<RadosClaimJournal> journal, uint32_t incarnation);

  // The U value this slot's claim of |container| at |epoch| stored.
  SharedEntry OurClaim(ContainerId container, uint64_t epoch) const;
  Status Exists(ContainerId id, bool* exists);
  // After a lost claim: what |current| (the entry that beat us) lets us map;
  // a claim whose container is missing is taken over once |hold_end| passed.
  // *our_epoch: the epoch of our U value when *use is ours.
  Status ResolveLost(const Fingerprint& fp, ContainerId ours, std::optional<SharedEntry> current,
                     std::chrono::steady_clock::time_point hold_end, uint64_t epoch, ContainerId* use,
                     uint64_t* our_epoch);
  // One step of ResolveLost: *use set when decided; else |current| is what
  // the step found now (and the caller waits before the next).
  Status ResolveLostStep(const Fingerprint& fp, ContainerId ours, bool hold_over, uint64_t epoch,
                         std::optional<SharedEntry>* current, ContainerId* use, uint64_t* our_epoch);
  Status FlipOnBehalf(const Fingerprint& fp, const SharedEntry& entry);

  const ChunkClaimsOptions options_;
  const std::unique_ptr<RadosSharedChunkTable> table_;
  const std::unique_ptr<RadosClaimJournal> journal_;  // null without options.journal_slot
  ClaimCombiner combiner_;  // Claim's rounds, combined across concurrent runs
  const uint32_t incarnation_;  // this slot's, recorded in its claims

  std::atomic<uint64_t> claims_{0}, claims_lost_{0}, bytes_wasted_{0}, claim_waits_{0}, takeovers_{0};
  std::atomic<uint64_t> flips_{0}, flips_lost_{0}, flips_on_behalf_{0}, revives_{0}, foreign_hits_{0};
  std::atomic<uint64_t> usage_of_missing_entry_{0};
  std::atomic<uint64_t> epoch_{0};
  // Claims this process won and has not flipped yet (fingerprint bytes,
  // container) -> the epoch of the claim, which the U value holds (a flip
  // compares it): the claims_pending gauge. A map, so a flip of a claim this
  // process never counted (a replayed log's) subtracts nothing.
  mutable std::mutex pending_mu_;
  std::map<std::pair<std::string, ContainerId>, uint64_t> pending_;

  // Tickets handed back and not yet retired, in the order they came
  // (ClaimsReleased counts them).
  struct Released {
    uint64_t order = 0;
    ClaimTicket ticket;
    bool referenced = false;
  };
  mutable std::mutex released_mu_;
  std::deque<Released> released_;
  uint64_t released_count_ = 0;  // guarded by released_mu_
  std::atomic<uint64_t> journal_retired_{0}, journal_hinted_{0};
};

}  // namespace dedupv1

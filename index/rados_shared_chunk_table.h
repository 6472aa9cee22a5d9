// RadosSharedChunkTable is the chunk index table that every gateway slot of
// one store shares (table format 2, docs/design-15.md 2.4 and 2.5): a chunk
// stored through any gateway is found by every other by its fingerprint, and
// a new chunk's entry is claimed atomically, uncommitted (U), flipped to
// committed (C) once its container is durable, marked dead (D) by GC.
//
// Layout: the store's index-pool objects "ci.header" (format 2, shard count,
// fingerprint size, CRC; exclusive create) and the shards "ci.<hex>" (the
// shard function and names of RadosChunkTable: first k fingerprint bits),
// never under a slot's "gw.NAME/" prefix. Omap keys are typed by their first
// byte, so all keys of one fingerprint share its shard (one op covers them
// atomically) and a prefix read finds them: the entry "e"+fp, each slot's
// usage "u"+fp+slot, the GC hint "z"+fp (index/shared_table_records.h has
// their stored form). Every value carries a CRC32C over key and value (as
// format 1); one that does not check out is Corruption naming pool, object
// and key, never used.
//
// Invariants:
//  - Every change is a compare-and-set inside one write operation per shard:
//    create(false) first (a shard object appears with its first claim),
//    omap_cmp of every key it depends on, then the sets. A failed comparison
//    fails the whole operation (-ECANCELED) with nothing applied; the shard's
//    keys are read again, the fingerprints that lost learn what beat them,
//    the others are retried (bounded rounds).
//  - A claim is won only on an absent entry; a flip, take-over, revive or
//    replace only on exactly the value expected. A value equal to what the
//    call would store counts as won, so a call repeated after a timeout
//    (that may have been applied) reports the same outcome.
//  - Usage keys are written by their own slot only (this instance's slot),
//    each with the last event id of that slot's log: an event at or below it
//    is skipped, so a replayed log counts once per slot. A usage write
//    asserts that the entry exists (omap_cmp(e GT "")): a usage of a missing
//    entry is reported and not applied, so late writes cannot resurrect a
//    chunk GC removed.
//  - A call that fails on one shard (an error, not a lost race) may have been
//    applied on others: its results are then unknown, and the caller
//    repeats it; a repeated claim, flip or compare-and-set reports what is
//    stored as won, a repeated usage update skips the events already counted.
//  - Writes call RadosCluster::CheckLease first: a fenced gateway never
//    writes. Every operation is counted; every error names pool and object.
//
// Batched per shard, asynchronous, up to max_in_flight operations at once:
// a LookupMany costs one read per shard touched, a ClaimMany or FlipMany one
// write per shard touched (plus a read and a write per shard that lost a
// race), an AddUsageMany one read and one write per shard touched.
//
// Thread-safe: no state besides the connection; concurrent calls (of this or
// other instances, slots or processes) are arbitrated by the compares.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/rados/rados_cluster.h"
#include "core/rados/rados_options.h"
#include "index/shard_load.h"
#include "index/shared_table_records.h"
#include "index/shared_table_steps.h"

namespace dedupv1 {

struct RadosSharedChunkTableOptions {
  RadosOptions rados;         // cluster, index pool, store namespace (the gateway name only keys the connection)
  uint32_t shards = 64;       // power of two, 1 .. 65536; fixed at creation
  size_t key_size = 20;       // fingerprint bytes: 20 (SHA-1), 32 (SHA-256)
  size_t max_in_flight = 64;  // asynchronous operations at once
  uint16_t slot = 0;          // this gateway's slot number (GatewayRegistry); 0 = read-only instance
  uint32_t incarnation = 0;   // this gateway's incarnation of the slot, recorded in its claims
  // Whether ClaimMany writes a "claimed" hint next to each entry. False when
  // the claimer keeps a claim journal instead (index/claim_journal.h).
  bool claim_hints = true;
};

// The outcome of one compare-and-set (claim, flip, take-over, revive,
// replace) of a fingerprint's entry.
struct SharedCasResult {
  bool won = false;                    // the value asked for is stored
  std::optional<SharedEntry> current;  // the entry now: ours if won, else what beat us (nullopt: none)
};

struct SharedClaim {
  Fingerprint fp;
  uint64_t container = 0;  // where this gateway stored the chunk
};

struct SharedFlip {
  Fingerprint fp;
  SharedEntry claimed;  // the U value this gateway's claim stored
};

struct SharedUsageDelta {
  Fingerprint fp;
  int64_t delta = 0;
  uint64_t event_id = 0;  // of this slot's log; counted once
};

enum class SharedUsageOutcome {
  kApplied,              // counted now
  kAlreadyCounted,       // event id at or below the key's last event id: skipped
  kUsageOfMissingEntry,  // no entry for the fingerprint: not applied
};

// Everything stored for one fingerprint (GC reads it in one operation).
struct SharedRecord {
  std::optional<SharedEntry> entry;
  std::map<uint16_t, SharedSlotUsage> usage;  // by slot
  bool hinted = false;                        // a "z" hint exists
  std::string hint;                           // its stored value ("" if none): GC compares it
};

class RadosSharedChunkTable {
 public:
  static constexpr char kHeaderObject[] = "ci.header";

  // Connects (RadosCluster::Shared), creates the header object if missing or
  // checks it: a format-1 table or other shard count / fingerprint size is
  // InvalidArgument naming both.
  static Status Open(const RadosSharedChunkTableOptions& options, std::unique_ptr<RadosSharedChunkTable>* out);

  // Per fingerprint its entry, or nullopt if it has none.
  Status LookupMany(const std::vector<Fingerprint>& fps, std::vector<std::optional<SharedEntry>>* entries);

  // Claims each fingerprint for this slot: U{container, slot, incarnation,
  // epoch} (and a "claimed" hint, with options.claim_hints), if it has no entry. Per claim: won, or lost
  // with the entry that was there. A fingerprint may appear once per call.
  Status ClaimMany(const std::vector<SharedClaim>& claims, uint64_t epoch, std::vector<SharedCasResult>* results);

  // Flips each of this slot's claims to C (same container and claimer, the
  // larger of |epoch| and the claim's epoch) if its entry still is the U
  // value claimed; lost: taken over or removed (current says which).
  Status FlipMany(const std::vector<SharedFlip>& flips, uint64_t epoch, std::vector<SharedCasResult>* results);

  // Takes a stale claim of another slot over: U{container, this slot, ...}
  // if the entry still is |expected| (a U value).
  Status TakeOver(const Fingerprint& fp, const SharedEntry& expected, uint64_t container, uint64_t epoch,
                  SharedCasResult* result);
  // A dead entry (D, |expected|) back to C at |epoch|, same container.
  Status Revive(const Fingerprint& fp, const SharedEntry& expected, uint64_t epoch, SharedCasResult* result);
  // The general compare-and-set GC's state changes use (C -> D): |next| if
  // the entry still is |expected|.
  Status Replace(const Fingerprint& fp, const SharedEntry& expected, const SharedEntry& next, SharedCasResult* result);

  // GC's guarded change of one fingerprint (design 2.6 steps 3, 4, 7): if
  // its entry and usage keys are still exactly as |seen| (a ReadRecord) and
  // no slot of |slots| has a usage key |seen| lacks, stores |next|, or with
  // nullopt erases the entry, its usage keys and its hint. |done| false: a
  // change came in between (read again); nothing was applied.
  Status ReplaceIfUnchanged(const Fingerprint& fp, const SharedRecord& seen, const std::vector<uint16_t>& slots,
                            const std::optional<SharedEntry>& next, bool* done);

  // Removes the hint of |fp| if its entry, usage keys and hint are still
  // exactly as |seen| (a ReadRecord with a hint) and no slot of |slots| has
  // a usage key |seen| lacks (design 2.6 step 4: a chunk still in use). A
  // decrement in between rewrites the hint or a usage key, so its hint stays.
  Status DropHintIfUnchanged(const Fingerprint& fp, const SharedRecord& seen, const std::vector<uint16_t>& slots,
                             bool* done);
  // GC's batched forms (one operation per shard touched instead of one per
  // fingerprint): ReadRecord of many fingerprints, with a status per record
  // (Corruption names the damaged key of that record only); and
  // DropHintIfUnchanged of many (record as read) with the union of their
  // comparisons: |done| per item; a shard where any item changed applies
  // nothing, and its items are listed in |cancelled| (indices into |seen|)
  // for the caller to read again.
  Status ReadRecords(const std::vector<Fingerprint>& fps, std::vector<SharedRecord>* records,
                     std::vector<Status>* statuses);
  Status DropHintsIfUnchanged(const std::vector<std::pair<Fingerprint, SharedRecord>>& seen,
                              const std::vector<uint16_t>& slots, std::vector<bool>* done,
                              std::vector<size_t>* cancelled);
  // Sets a "claimed" hint for each fingerprint (one unguarded write per
  // shard touched; an existing hint is overwritten): GC's way to look at the
  // chunks of a claim journal's record (index/claim_journal.h). A hint only
  // makes GC read the record, so no comparison is needed. Counted under
  // |step| (GC's, or the journal's when its owner retires records).
  Status AddHints(const std::vector<Fingerprint>& fps, uint64_t epoch, SharedTableStep step = SharedTableStep::kGc);
  // A page of shard |shard|'s hints (0 <= shard < shards()) in key order,
  // after key |after| ("" = from the first), at most |max| in one read;
  // |last| is the key to continue after, |more| whether more may follow.
  // A damaged hint is Corruption naming the object and key; with |damaged|
  // given it is skipped instead (|last| moves past it) and its Corruption
  // text appended there, so one bad key cannot stop every later GC round.
  Status ReadHints(uint32_t shard, const std::string& after, uint64_t max, std::vector<SharedHint>* hints,
                   std::string* last, bool* more, std::vector<std::string>* damaged = nullptr);

  // Adds usage deltas of this slot's log (per delta an outcome).
  // A decrement also sets a "decremented" hint for GC.
  Status AddUsageMany(const std::vector<SharedUsageDelta>& deltas, uint64_t epoch,
                      std::vector<SharedUsageOutcome>* outcomes);
  // The usage of |fp| summed over every slot's key (one prefix read), and per
  // slot if |per_slot| is given.
  Status UsageSum(const Fingerprint& fp, int64_t* sum, std::map<uint16_t, SharedSlotUsage>* per_slot = nullptr);
  // Entry, usage keys and hint of |fp| in one read.
  Status ReadRecord(const Fingerprint& fp, SharedRecord* record);

  uint32_t shards() const { return shards_; }
  size_t key_size() const { return options_.key_size; }
  uint16_t slot() const { return options_.slot; }
  // Operations sent per shard since this instance opened (the monitor's and
  // the heartbeat's shard load).
  ShardLoadSummary shard_load() const { return load_.Summary(); }
  // Operations and keys sent per protocol step since this instance opened.
  SharedTableStepCounts step_counts() const { return steps_.Snapshot(); }
  // Where this slot's claim journal counts its operations (kJournal), so
  // step_counts() covers them too.
  SharedTableSteps* steps() { return &steps_; }
  RadosCluster* cluster() const { return cluster_.get(); }
  // The shard object holding |fp| ("ci.<hex>").
  std::string ShardOid(const Fingerprint& fp) const;

 private:
  struct CasItem;
  struct UsageWork;
  class ShardOps;

  RadosSharedChunkTable(const RadosSharedChunkTableOptions& options, std::shared_ptr<RadosCluster> cluster);

  Status OpenHeader();
  Status CheckFps(const std::vector<Fingerprint>& fps, bool distinct) const;
  // CheckFps, and that this instance may write now (a slot; the lease).
  Status CheckWrite(const std::vector<Fingerprint>& fps, bool distinct) const;
  // Compare-and-sets of entries, batched per shard, in rounds until each is
  // decided (won or lost).
  Status CasMany(SharedTableStep step, std::vector<CasItem>* items, std::vector<SharedCasResult>* results);
  Status CasOne(const Fingerprint& fp, const std::string& expected, const SharedEntry& next, SharedCasResult* result);
  // The comparisons of a guarded GC change: entry, usage keys and hint as
  // |seen|, no usage key of |slots| that |seen| lacks. |keys| gets every key
  // of |seen|.
  void GuardOf(const Fingerprint& fp, const SharedRecord& seen, const std::vector<uint16_t>& slots,
               std::map<std::string, std::pair<librados::bufferlist, int>>* cmp, std::set<std::string>* keys) const;
  // Sends |op| (guarded by |cmp_rval|'s omap_cmp) to |fp|'s shard: |done|
  // false if a comparison failed (nothing applied), an error naming |what|.
  Status GuardedWrite(const Fingerprint& fp, librados::ObjectWriteOperation* op, const int* cmp_rval,
                      const std::string& what, bool* done);
  // One round of AddUsageMany on the fingerprints of |work| still pending.
  Status UsageRound(const std::vector<SharedUsageDelta>& deltas, std::vector<UsageWork>* work, uint64_t epoch,
                    std::vector<SharedUsageOutcome>* outcomes);

  // Fills |record| from the values of one fingerprint's keys as read.
  Status DecodeRecord(const std::string& oid, const Fingerprint& fp,
                      const std::map<std::string, librados::bufferlist>& fixed,
                      const std::map<std::string, librados::bufferlist>& usage, SharedRecord* record,
                      std::string* last_usage_key) const;
  // |decoded| (a decoder's Corruption) naming pool, object and key.
  Status Located(const Status& decoded, const std::string& oid, const std::string& key) const;
  Status Corruption(const std::string& oid, const std::string& key, const std::string& what) const;
  Status OpError(int r, const std::string& what, const std::string& oid) const;
  std::string ShardOidOf(uint32_t shard) const;

  const RadosSharedChunkTableOptions options_;
  const std::shared_ptr<RadosCluster> cluster_;
  const uint32_t shards_;
  const int shard_bits_;
  ShardLoad load_;
  SharedTableSteps steps_;
};

}  // namespace dedupv1

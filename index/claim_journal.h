// RadosClaimJournal: one gateway slot's list of the fingerprints it claimed
// in the shared chunk index and has not yet seen flipped and counted
// (docs/design-15.md 2.4, "Claim journal"). It replaces the GC hint ("z"
// key) that every claim used to write next to its entry: one record per run
// instead of one key per new chunk in every shard.
//
// Why GC needs it: a claim that is never flipped (its incarnation died) and
// a committed chunk that is never referenced (its run failed or was
// overwritten before its mappings were logged) are garbage only the index GC
// leader can find. A record names those chunks until the slot has proven
// otherwise; GC turns the records of incarnations that can no longer flip or
// count (core/engine/cluster_gc.h) into "claimed" hints and the usual hint
// rules decide.
//
// Invariants:
//  - A run's record is written before any of its claims (ChunkClaims'
//    combiner appends every record of a round in one write, then claims).
//  - The owner removes a record only after a checkpoint proved its chunks
//    flipped and counted: the run handed its ticket back (after its
//    mappings were logged and applied) before the checkpoint read the
//    tickets and then the last applied event, and the checkpoint's usage
//    count and chunk index flush succeeded (or, if it had nothing to trim,
//    the earlier checkpoint that trimmed those events did both). A run that
//    did not end with every block's mapping logged gets hints for its
//    fingerprints before its record goes. A crash leaves records behind;
//    none goes early.
//  - Keys are unique per writer: one writer per (slot, incarnation) (the
//    slot's lock), and a sequence that starts at a random high value, so
//    even a second writer of the same incarnation would not overwrite.
//  - GC reads only records of incarnations that are not the slot's live one
//    (registry and heartbeat), writes hints for their fingerprints, then
//    removes them. Hints are only "look here": an extra one costs a read.
//
// Layout: one omap object per slot, "gw.<slot name>.claims", in the index
// pool and the store's namespace (next to gw.<name>.dead). Key =
// "<incarnation, 8 hex>.<sequence, 16 hex>" (records of one incarnation in
// append order); value = version 1, fingerprint size, count u32, the
// fingerprints, CRC32C over key and the rest. A value that does not check
// out is reported as damaged, never used.
//
// Writes check the lease first (a fenced gateway writes nothing); errors
// name pool and object. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/rados/rados_cluster.h"
#include "index/shared_table_steps.h"

namespace dedupv1 {

struct ClaimJournalRecord {
  std::string key;
  uint32_t incarnation = 0;
  uint64_t seq = 0;
  std::vector<Fingerprint> fps;
};

class RadosClaimJournal {
 public:
  // |incarnation|: the writer's (Append's keys carry it). |steps| (optional)
  // counts operations under SharedTableStep::kJournal.
  RadosClaimJournal(std::shared_ptr<RadosCluster> cluster, std::string slot_name, uint32_t incarnation,
                    SharedTableSteps* steps = nullptr);

  // "gw.<slot_name>.claims".
  static std::string ObjectName(const std::string& slot_name);
  static std::string KeyOf(uint32_t incarnation, uint64_t seq);
  // The incarnation and sequence of a key KeyOf made; false for any other key.
  static bool ParseKey(const std::string& key, uint32_t* incarnation, uint64_t* seq);
  // The stored value of a record of |fps| under |key| (InvalidArgument for
  // fingerprints of two sizes), and the inverse: false for a value that does
  // not check out (index/claim_journal_fuzz.cc feeds it damaged ones).
  static Status EncodeValue(const std::string& key, const std::vector<Fingerprint>& fps, std::string* value);
  static bool DecodeValue(const std::string& key, const std::string& value, std::vector<Fingerprint>* fps);

  // Appends one record per element of |records| to this slot's journal in
  // one write; (*keys)[i] is the key of records[i].
  Status Append(const std::vector<std::vector<Fingerprint>>& records, std::vector<std::string>* keys);

  // Up to |max| records of |slot_name|'s journal after |after_key| ("" =
  // from the start), in key order; |last_key| = the last key read (damaged
  // ones included), "" if none. A damaged key or value goes to |damaged|
  // (its key) instead of failing the page. Fewer than |max| keys read means
  // the journal ends here. An absent object is an empty journal.
  Status ReadPage(const std::string& slot_name, const std::string& after_key, size_t max,
                  std::vector<ClaimJournalRecord>* records, std::string* last_key, std::vector<std::string>* damaged);

  // Removes |keys| from |slot_name|'s journal in one write (absent keys and
  // an absent object are fine).
  Status Remove(const std::string& slot_name, const std::vector<std::string>& keys);

  const std::string& slot_name() const { return slot_name_; }
  // "pool/namespace/gw.<slot_name>.claims", for messages.
  std::string Where(const std::string& slot_name) const;

 private:
  void Count(uint64_t keys) {
    if (steps_ != nullptr) steps_->Count(SharedTableStep::kJournal, keys);
  }

  const std::shared_ptr<RadosCluster> cluster_;
  const std::string slot_name_;
  const uint32_t incarnation_;
  SharedTableSteps* const steps_;
  std::atomic<uint64_t> next_seq_;
};

}  // namespace dedupv1

// ClusterGcRules: what garbage is to one gateway slot's container GC in
// cluster scope (storage.rados.dedup-scope = cluster, docs/design-15.md 2.6
// "Container GC"). GarbageCollector runs this rule set instead of the local
// one when its host has it (GcHost::cluster_rules).
//
// The local rules derive garbage from the chunk index (usage-0 candidates
// erased under the barrier, chunks without an entry, "an entry naming another
// copy: kept"). None of them holds in cluster scope: another slot may
// reference any chunk at any time without this slot knowing, and this slot's
// own blocks may name a copy whose claim another slot took over. So garbage
// is only what is marked dead (ChunkStore::MarkDead), by two proofs:
//  - our copies of lost claims and second copies within a run, marked by the
//    write pipeline's claim step (core/engine/claim_step.h says why no
//    mapping can name them);
//  - the slot's dead inbox (index/dead_inbox.h): chunks index GC erased from
//    the shared chunk index after proving that no slot references them.
// Containers without a live (unmarked) chunk are deleted; those less than
// half live are merged, with foreign aliases for the other slots' reads
// (chunkstore/foreign_containers.h).
//
// Order that keeps a crash safe: the inbox's chunks are marked, every mark
// (the claim step's too) is persisted, and only then are the inbox keys
// removed; a crash in between marks them again next round.
//
// What a round deletes or merges is fixed by a snapshot taken under the GC
// barrier (GarbageCollector::RunClusterRound): the containers committed
// with marks at that moment, their marks persisted. cluster_gc_rules.cc
// says why no dedup run can still map a marked copy of those.
//
// Inbox keys that are not this slot's to act on are removed, counted and
// logged, never silently: a key naming another slot's container (index GC
// filed it wrongly: that copy stays, a leak) and a damaged key (checksum
// mismatch: its chunk stays, a leak; the warning names object and key).
//
// Thread-safe for HasWork; TakeDeadInbox and RoundDone are called by one GC
// round at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/base/types.h"
#include "index/dead_inbox.h"

namespace dedupv1 {

class ChunkStore;

class ClusterGcRules {
 public:
  // |slot_name|: this gateway's name (storage.rados.gateway), whose inbox is
  // gw.<slot_name>.dead. |inbox_poll|: how long an idle system goes without
  // looking at the inbox.
  ClusterGcRules(ChunkStore* store, std::shared_ptr<RadosCluster> cluster, std::string slot_name,
                 std::chrono::seconds inbox_poll = std::chrono::seconds(60));

  struct InboxTaken {
    uint64_t marked = 0;   // chunks marked dead from the inbox
    uint64_t foreign = 0;  // keys naming another slot's container: dropped, not marked
    uint64_t damaged = 0;  // keys failing their checksum: dropped, not marked
  };
  // Moves the dead inbox into dead marks, page by page: MarkDead, then
  // PersistDeadMarks (with every other pending mark), then the keys go
  // (foreign and damaged ones too, each logged to stderr).
  Status TakeDeadInbox(InboxTaken* taken);
  // This slot's committed containers with garbage, sorted. Called under the
  // GC barrier, exclusively: the round's snapshot.
  std::vector<ContainerId> ContainersWithGarbage() const;

  // Whether a round may find work: the first round since open, marks made
  // since the last round, or the inbox not read for |inbox_poll|.
  bool HasWork() const;
  // A round finished (successfully): what HasWork compares against.
  void RoundDone();

  // Inbox keys dropped without a mark since open (see the header).
  uint64_t foreign_keys_dropped() const { return foreign_.load(); }
  uint64_t damaged_keys_dropped() const { return damaged_.load(); }

 private:
  static constexpr size_t kPage = 1024;      // inbox keys per read
  static constexpr int kMaxPages = 1 << 16;  // per round; the rest waits for the next

  // Counts and logs an inbox key removed without a mark.
  void WarnDropped(const char* what, const std::string& key, std::atomic<uint64_t>* counter);

  ChunkStore* const store_;
  RadosDeadInbox inbox_;
  const std::string slot_name_;
  const std::chrono::seconds inbox_poll_;
  std::atomic<bool> ran_{false};
  std::atomic<uint64_t> marks_at_round_{0};  // the store's dead marks after the last round
  std::atomic<int64_t> inbox_read_at_ns_{0};  // steady clock of the last inbox read
  std::atomic<uint64_t> foreign_{0};
  std::atomic<uint64_t> damaged_{0};
};

}  // namespace dedupv1

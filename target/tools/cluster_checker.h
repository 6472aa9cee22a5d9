// ClusterChecker is `dedupv1_check --cluster`: it checks a cluster-scope
// store (storage.rados.dedup-scope = cluster, docs/design-15.md 2.4-2.7) as
// a whole, every registered gateway slot of the `gateways` registry against
// the shared chunk index:
//  - recount: per fingerprint, the references of every slot's block mappings
//    (a block counts a fingerprint once: core/engine/usage_counter.h) equal
//    that slot's `u` key, and their sum the sum of the `u` keys; a negative
//    sum is damage of its own;
//  - every C entry names a container that exists and holds the fingerprint
//    (container metadata, verified by its checksum);
//  - a U entry of a claimer incarnation that is not current in the registry
//    names a container that exists (GC backlog, counted as information), else
//    it is a "stale claim";
//  - every mapping item of every slot names a container (its own or another
//    slot's; merged ones followed through the open slot's catalog aliases and
//    the `ca.` aliases of merges) that exists and holds the chunk;
//  - no `u` key without an `e` entry, none of a slot the registry lacks;
//  - a fingerprint referenced in more than one container is counted as
//    information (allowed after a crash, design-15 4), not damage;
//  - orphan copies (target/tools/orphan_copies.h): chunks of a slot's
//    committed container that no mapping, no entry and no dead inbox names,
//    left by a crash in a narrow window; information (a leak, not damage),
//    with their bytes. ReclaimOrphans marks them dead in their slots.
//
// Offline semantics, like the single-slot check: it takes every slot's lock
// (the local LOCK of a temporary gateway directory and gw.NAME/LOCK in RADOS)
// and holds them all until it is done, so it refuses (Busy) while any gateway
// serves a slot, and nothing changes under it: the slots are opened without
// idle work (IdleMode::kBusy), so no GC round of the check's own runs either.
// It also refuses a slot whose heartbeat says serving and is younger than
// 2 x the lease (a paused holder, target/tools/checker_slot_beat.h), and
// after closing a slot writes a "stopped" beat of the incarnation its open
// made, so a stopped slot stays stopped for the watchers. Each slot is opened as a
// DedupSystem in turn (its log replayed after an unclean stop, as the
// single-slot check does, which also bumps its incarnation), walked, and
// closed; the last one stays open until the table checks are done, for the
// probes of containers no slot lists. Check repairs nothing; ReclaimOrphans,
// called after it with every lock still held, changes only dead marks.
//
// Memory: per referenced fingerprint one counter per slot and the set of
// containers named, per container its sorted fingerprints, and every
// fingerprint of the shared table.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/engine/dedup_system.h"
#include "core/engine/options.h"
#include "core/rados/gateway_registry.h"
#include "chunkstore/rados_container_store.h"
#include "index/rados_shared_chunk_table.h"
#include "target/tools/cluster_check_report.h"
#include "target/tools/orphan_copies.h"

namespace dedupv1 {
namespace tools {

class DataDirLock;

class ClusterChecker {
 public:
  // |options|: the config of any slot of the store (its gateway name only
  // picks the connection; every registered slot is checked).
  explicit ClusterChecker(const Options& options);
  ~ClusterChecker();

  // Runs every check into |report|. Fails only if checking itself cannot
  // proceed (a slot is in use: Busy; the registry or a shard unreadable).
  Status Check(ClusterCheckReport* report);
  // After a Check that found no problem and a complete recount: marks every
  // orphan copy it found dead in its slot (each slot reopened in turn,
  // ChunkStore::MarkDead, PersistDeadMarks, closed); the slot's next GC round
  // gives the space back. Aborted, changing nothing, if |report| has
  // problems: the judgement needs a view without damage.
  Status ReclaimOrphans(ClusterCheckReport* report);

 private:
  struct ContainerFps {
    bool exists = false;
    ContainerId at = kNoContainer;  // where it was found (a merge target for a merged id)
    std::string error;              // why it could not be read ("" if it could)
    std::vector<Fingerprint> fps;   // sorted
  };
  struct SlotRefs {
    std::map<uint16_t, int64_t> by_slot;  // references per slot
    std::set<ContainerId> containers;     // where the chunks the mappings name are (mappings that hold)
  };

  Status LockSlots(const std::map<std::string, GatewayRecord>& slots);
  // Opens slot |name|, the |index|th locked.
  Status OpenSlot(const std::string& name, size_t index, std::unique_ptr<DedupSystem>* out);
  // Closes |*sys| and writes the stopped beat of its incarnation.
  Status CloseSlot(std::unique_ptr<DedupSystem>* sys);
  // Lists and verifies the slot's own containers, walks its block index.
  Status CheckSlot(const std::string& name, uint16_t slot, DedupSystem* sys, ClusterCheckReport* report);
  // The fingerprints of container |id|: a listed one from the listing, any
  // other read through |sys|'s chunk store (once, cached).
  const ContainerFps& Container(DedupSystem* sys, ContainerId id);
  // Follows the `ca.` aliases from |*at| to the container that exists (at
  // most ForeignContainers::kMaxHops); NotFound if there is none.
  Status Locate(ContainerId* at);
  bool Holds(DedupSystem* sys, ContainerId id, const Fingerprint& fp, std::string* why);
  // Lists container |id| of slot |slot| (verified) for the recount and the
  // orphan scan.
  void ListContainer(const std::string& name, uint16_t slot, ChunkStore* store, ContainerId id,
                     ClusterSlotReport* sr, ClusterCheckReport* report);
  // The chunks in |name|'s dead inbox reach their copies (orphan scan).
  Status ReadDeadInbox(const std::string& name, DedupSystem* sys, ClusterSlotReport* sr);
  // After every slot's walk: a mapping that names a chunk its owner marked
  // dead is damage (the walk's probe of another slot's container cannot see
  // that slot's marks).
  void CheckMappedCopiesLive(ClusterCheckReport* report);
  // Fills the report's orphan figures from orphans_.
  void ReportOrphans(ClusterCheckReport* report);
  // Every fingerprint with a key in the shared table's shards.
  Status ScanTableKeys(RadosSharedChunkTable* table, std::set<Fingerprint>* fps);
  Status CheckTable(DedupSystem* sys, RadosSharedChunkTable* table, ClusterCheckReport* report);
  void CheckRecord(DedupSystem* sys, const Fingerprint& fp, const SharedRecord& record, ClusterCheckReport* report);
  // Judges the U entries of closed incarnations by their containers.
  Status CheckStaleClaims(DedupSystem* sys, ClusterCheckReport* report);

  const Options options_;
  std::shared_ptr<RadosCluster> cluster_;
  std::unique_ptr<RadosContainerStore> aliases_;  // probes heads and reads the `ca.` aliases of merges
  std::map<std::string, GatewayRecord> slots_;  // the registry, read at the start
  std::map<uint16_t, std::string> slot_names_;  // by number
  std::vector<std::string> temp_dirs_;
  std::vector<std::unique_ptr<DataDirLock>> locks_;  // one per slot, held to the end
  std::vector<Options> slot_options_;                 // per slot, same order
  std::vector<std::string> locked_;                   // the slots' names, same order
  std::map<ContainerId, ContainerFps> containers_;
  std::map<Fingerprint, SlotRefs> refs_;
  struct Claim {
    Fingerprint fp;
    SharedEntry entry;
  };
  std::vector<Claim> closed_claims_;  // U entries of incarnations not current
  bool recount_complete_ = true;
  OrphanCopies orphans_;
  std::vector<OrphanCopies::Orphan> found_orphans_;
};

}  // namespace tools
}  // namespace dedupv1

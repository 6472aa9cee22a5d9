// ClusterCheckReport is what `dedupv1_check --cluster` found in a
// cluster-scope store (target/tools/cluster_checker.h): per gateway slot what
// its open and walk saw, the shared chunk index's figures, the recount, and
// the problems (CheckProblem, each naming fingerprint, slot and container).
// Duplicates (a fingerprint referenced in more than one container) are
// information, not problems. Rendered as text or JSON (docs/tools.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/dedup_system.h"
#include "target/tools/check_report.h"

namespace dedupv1 {
namespace tools {

struct ClusterSlotReport {
  std::string name;
  uint16_t slot = 0;
  uint32_t incarnation = 0;  // the check's own open of the slot
  DedupSystem::RecoveryInfo recovery;
  uint64_t volumes = 0;
  uint64_t containers = 0;          // the slot's own, listed
  uint64_t containers_ok = 0;       // ... whose checksums verified
  uint64_t blocks_mapped = 0;
  uint64_t chunk_references = 0;    // non-zero mapping items
  uint64_t foreign_references = 0;  // ... naming another slot's container
  uint64_t inbox_chunks = 0;        // in its dead inbox, waiting for its GC
  uint64_t orphan_copies = 0;       // copies nothing reaches (a leak)
  uint64_t orphan_bytes = 0;
  uint64_t orphans_reclaimed = 0;   // of them, marked dead by ReclaimOrphans
};

struct ClusterCheckReport {
  std::string store;  // storage.rados.store (the RADOS namespace)
  std::vector<ClusterSlotReport> slots;

  // The shared chunk index.
  uint64_t shards = 0;
  uint64_t table_fingerprints = 0;  // fingerprints with any key
  uint64_t entries_committed = 0;   // C
  uint64_t entries_uncommitted = 0; // U
  uint64_t entries_dead = 0;        // D
  uint64_t usage_keys = 0;

  // The recount.
  uint64_t referenced_chunks = 0;  // distinct fingerprints referenced by any slot's mappings
  uint64_t usage_matching = 0;     // fingerprints whose every slot's key equals its recount
  uint64_t usage_mismatches = 0;
  bool recount_complete = true;    // every block index record could be read
  // Information: fingerprints referenced in more than one container, and the
  // extra copies (allowed after a crash, design-15 4).
  uint64_t duplicate_fingerprints = 0;
  uint64_t duplicate_copies = 0;
  // U entries of claimer incarnations that are not current, and those of
  // them whose container exists (GC backlog: information, not damage).
  uint64_t closed_claims = 0;
  uint64_t closed_claims_container_exists = 0;
  // Information: copies in the slots' containers that no mapping, entry or
  // dead inbox names (target/tools/orphan_copies.h), and how many of them
  // --repair marked dead (given back by each slot's next GC round).
  uint64_t orphan_copies = 0;
  uint64_t orphan_bytes = 0;
  uint64_t orphan_containers = 0;  // containers holding any
  bool orphan_reclaim_requested = false;
  uint64_t orphans_reclaimed = 0;
  uint64_t orphan_bytes_reclaimed = 0;
  std::string orphan_reclaim_refused;  // why --repair reclaimed nothing ("" if it ran)

  std::vector<CheckProblem> problems;

  bool Clean() const { return problems.empty(); }
};

std::string FormatClusterReportText(const ClusterCheckReport& report, size_t max_per_kind = 50);
std::string FormatClusterReportJson(const ClusterCheckReport& report);

}  // namespace tools
}  // namespace dedupv1

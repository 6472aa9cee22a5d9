// CheckReport is what dedupv1_check found: counts per part of the store and
// the problems, each naming the object (container id, fingerprint, volume /
// block / byte range) and saying whether --repair can fix it and whether it
// did. Rendered as readable text or as JSON (docs/tools.md lists the fields).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/engine/dedup_system.h"
#include "core/base/types.h"

namespace dedupv1 {
namespace tools {

struct CheckProblem {
  // container-corrupt, container-unreadable, chunk-corrupt, index-corrupt,
  // index-entry-missing, index-entry-dangling, block-index-corrupt,
  // block-record-displaced, block-key-duplicate, block-key-out-of-order,
  // block-key-malformed, block-volume-unknown, mapping-relocatable, mapping-unrecoverable,
  // usage-count-mismatch; with --cluster also (target/tools/cluster_checker.h):
  // usage-sum-negative, stale-claim, usage-key-orphan, usage-key-unknown-slot.
  std::string kind;
  std::string message;      // one sentence naming the object
  bool repairable = false;  // --repair knows a fix
  bool repaired = false;    // --repair applied the fix
  // A fix exists but is not made: it would lower a usage count or erase an
  // index entry, and some block mappings could not be read (they may
  // reference the chunk), so the recount is incomplete.
  bool held_back = false;
  std::string repair;       // what the fix is / was, or why there is none
  // Details for --json; unset fields are omitted.
  ContainerId container = kNoContainer;
  std::string slot;         // gateway slot name (dedupv1_check --cluster); "" for a single store
  std::string fingerprint;  // hex
  std::vector<std::string> fingerprints;  // hex; problems about a group of chunks
  bool has_block = false;
  std::string volume;
  uint32_t volume_id = 0;
  uint64_t block = 0;
  uint32_t offset = 0;  // byte range [offset, offset + length) within the block
  uint32_t length = 0;
  uint64_t volume_offset = 0;  // byte offset of the range within the volume
};

struct CheckReport {
  std::string data_dir;
  DedupSystem::RecoveryInfo recovery;
  bool repair_requested = false;
  // --rebuild-index (index_rebuild.h): the check ran on a new, empty chunk
  // index; the old table was kept as |index_replaced| ("" if there was
  // none); |index_rebuilt| once the repairs filled it and the marker went.
  bool index_rebuild = false;
  std::string index_replaced;
  bool index_rebuilt = false;

  // Containers.
  uint64_t containers = 0;       // listed in the container store
  uint64_t containers_ok = 0;    // parsed with good CRCs
  uint64_t chunks = 0;           // items of the good containers
  uint64_t chunk_bytes_raw = 0;  // their size after decompression (0 unless data_verified)
  bool data_verified = false;    // every chunk was decompressed and re-fingerprinted

  // Chunk index.
  bool index_pages_verified = false;  // ChunkIndex::Verify passed
  uint64_t index_pages = 0;
  uint64_t index_entries = 0;
  uint64_t index_usage_nonzero = 0;   // entries with a usage count other than 0
  uint64_t duplicate_copies = 0;      // stored chunks whose index entry names another good container

  // Block index.
  uint64_t volumes = 0;
  uint64_t blocks_mapped = 0;
  uint64_t chunk_references = 0;  // non-zero mapping items
  uint64_t zero_ranges = 0;       // zero mapping items
  uint64_t block_records = 0;     // records in the block index store
  uint64_t old_format_records = 0;  // ... of mapping format 1 (no block id)
  // Records whose mapping could not be read (so their chunks are unknown);
  // if any, the recount is incomplete and repairs only raise counts.
  uint64_t unreadable_records = 0;

  // Usage counts: recount from the block mappings, compared with the entries.
  uint64_t referenced_chunks = 0;    // distinct fingerprints referenced by block mappings
  uint64_t unreferenced_chunks = 0;  // distinct stored chunks no block mapping references
  bool usage_checked = false;        // every entry's count was compared (index pages verified)
  uint64_t usage_matching = 0;       // entries whose count equals the recount
  uint64_t usage_mismatches = 0;     // entries whose count does not (each is a problem)
  uint64_t garbage_chunks = 0;       // stored chunks without entry or reference: awaiting GC

  std::vector<CheckProblem> problems;

  size_t Repaired() const;
  size_t Unrepaired() const { return problems.size() - Repaired(); }
  // No problem, or every problem repaired.
  bool Clean() const { return Unrepaired() == 0; }
};

// Readable summary; at most |max_per_kind| problems of each kind are listed
// (0 = all), the rest counted.
std::string FormatReportText(const CheckReport& report, size_t max_per_kind = 50);
// The "problems: N" section of the text: unrepairable ones first, at most
// |max_per_kind| of each kind (0 = all).
std::string FormatProblemsText(const std::vector<CheckProblem>& problems, bool repair_requested, size_t max_per_kind);
// One problem as --json lists it.
nlohmann::json ProblemToJson(const CheckProblem& p);
// The whole report as one JSON object (every problem listed).
std::string FormatReportJson(const CheckReport& report);

}  // namespace tools
}  // namespace dedupv1

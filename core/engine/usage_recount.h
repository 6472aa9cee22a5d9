// UsageRecount sets every chunk-index usage count to the number of block
// mappings that reference the chunk now (the counting rule of
// core/engine/usage_counter.h), read from the block index, instead of from log
// events. It is what accepting a damaged operations log needs
// (DedupSystem, docs/durability.md "Damage"): with events lost, the counts
// that event replay keeps are unreliable (a later event's old mapping may
// decrement chunks whose increment was in a lost event, and GC would then
// delete live data).
//
// Two passes: Scan reads every block mapping of the given volumes and every
// index entry and changes nothing; it fails if any mapping cannot be read or
// the store holds mappings of volumes not given, so a count is never lowered
// from incomplete information. Apply then sets
// the counts that differ. Each change is tagged with an event id above every
// id any entry or mapping has seen, so no older event is counted on top.
// The caller flushes the block index before Scan (Scan refuses mappings
// still in memory: a crash must find what the recount counted, and the
// store's record count must be comparable) and the chunk index after Apply. Nothing else may change mappings or counts
// meanwhile (it runs inside DedupSystem::Open). Memory: one counter and
// container id per referenced chunk, one entry per index entry.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chunkstore/chunk_store.h"
#include "core/base/status.h"
#include "index/block_index.h"
#include "index/chunk_index.h"

namespace dedupv1 {

struct UsageRecountStats {
  uint64_t blocks = 0;             // block mappings read
  uint64_t referenced_chunks = 0;  // distinct fingerprints referenced
  uint64_t entries = 0;            // chunk index entries read
  uint64_t counts_raised = 0;
  uint64_t counts_lowered = 0;
  uint64_t entries_restored = 0;   // referenced chunks without an entry, re-added for their container
  uint64_t unresolved = 0;         // referenced chunks with neither an entry nor a committed container
  uint64_t newest_id = 0;          // highest mapping version or entry last_event_id seen
};

class UsageRecount {
 public:
  UsageRecount(BlockIndex* blocks, ChunkIndex* chunks, ChunkStore* store)
      : blocks_(blocks), chunks_(chunks), store_(store) {}

  // Pass 1: reads the mappings of every volume in |volumes| and every index
  // entry. Changes nothing.
  Status Scan(const std::vector<uint32_t>& volumes);

  // Pass 2: sets every count that differs from the recount, tagged with
  // |event_id|, which must be above stats().newest_id.
  Status Apply(uint64_t event_id);

  const UsageRecountStats& stats() const { return stats_; }

 private:
  struct Reference {
    uint64_t blocks = 0;
    ContainerId container = kNoContainer;  // of the first item naming the chunk
  };

  BlockIndex* const blocks_;
  ChunkIndex* const chunks_;
  ChunkStore* const store_;
  std::unordered_map<Fingerprint, Reference, FingerprintHasher> references_;
  std::vector<std::pair<Fingerprint, ChunkIndexEntry>> entries_;
  UsageRecountStats stats_;
};

}  // namespace dedupv1

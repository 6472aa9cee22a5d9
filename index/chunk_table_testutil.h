// Test helpers for ChunkTable implementations (DiskHashTable,
// GrowableHashTable): committed entries and the ops of an Apply batch.
#pragma once

#include "core/base/fingerprint.h"
#include "core/base/types.h"
#include "index/chunk_index_entry.h"
#include "index/chunk_table.h"

namespace dedupv1 {
namespace test {

// A committed entry in container |c| with usage count |usage|.
inline ChunkIndexEntry Entry(ContainerId c, uint32_t usage = 0) {
  ChunkIndexEntry e;
  e.container = c;
  e.usage_count = usage;
  e.committed = true;
  return e;
}

inline ChunkTable::Op Put(const Fingerprint& fp, const ChunkIndexEntry& e) { return ChunkTable::Op{fp, e, false}; }
inline ChunkTable::Op Erase(const Fingerprint& fp) { return ChunkTable::Op{fp, ChunkIndexEntry(), true}; }

}  // namespace test
}  // namespace dedupv1

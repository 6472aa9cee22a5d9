// ChunkIndexEntry is the value the chunk index keeps per chunk fingerprint:
// where the chunk is stored and how many block mappings reference it.
// Invariant: an entry with committed == false is never written to the
// persistent table (its container may still be lost in a crash); such entries
// live only in the in-memory auxiliary index.
#pragma once

#include <cstdint>

#include "core/types.h"

namespace dedupv1 {

struct ChunkIndexEntry {
  ContainerId container = kNoContainer;
  uint32_t usage_count = 0;  // maintained by GC later (block mappings referencing the chunk)
  bool committed = false;    // the container holding the chunk is durably committed

  bool operator==(const ChunkIndexEntry& o) const {
    return container == o.container && usage_count == o.usage_count && committed == o.committed;
  }
  bool operator!=(const ChunkIndexEntry& o) const { return !(*this == o); }
};

}  // namespace dedupv1

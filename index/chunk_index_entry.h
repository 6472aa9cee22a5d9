// ChunkIndexEntry is the value the chunk index keeps per chunk fingerprint:
// where the chunk is stored and how many block mappings reference it.
// The usage count is maintained by replaying block-mapping events of the
// operations log (core/engine/usage_counter.h); |last_event_id| is the newest event
// already counted into it, so replaying an event twice counts it once.
// Invariant: an entry with committed == false is never written to the
// persistent table (its container may still be lost in a crash); such entries
// live only in the in-memory auxiliary index.
#pragma once

#include <cstdint>

#include "core/base/types.h"

namespace dedupv1 {

struct ChunkIndexEntry {
  ContainerId container = kNoContainer;
  uint32_t usage_count = 0;    // block mappings referencing the chunk (each block counts once)
  bool committed = false;      // the container holding the chunk is durably committed
  uint64_t last_event_id = 0;  // newest log event counted into usage_count

  bool operator==(const ChunkIndexEntry& o) const {
    return container == o.container && usage_count == o.usage_count && committed == o.committed &&
           last_event_id == o.last_event_id;
  }
  bool operator!=(const ChunkIndexEntry& o) const { return !(*this == o); }
};

}  // namespace dedupv1

// ContainerSummary is what garbage collection's full scan needs to judge a
// committed container without reading its metadata: its live chunks, their
// footprint sum, its serialized size, and how many of its chunks were marked
// dead when the summary was taken (the summary applies only while the
// container has exactly that many dead marks). The catalog keeps them
// (chunkstore/container_catalog.h); the local catalog's file format is in
// chunkstore/container_summary_file.h.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "core/base/types.h"

namespace dedupv1 {

// dead_chunks of a record that withdraws the container's earlier records.
constexpr uint64_t kSummaryWithdrawn = 0xFFFFFFFF;

struct ContainerSummary {
  uint64_t chunks = 0;           // live chunks: not marked dead
  uint64_t footprint_bytes = 0;  // sum of Container::FootprintOf over the live chunks
  uint64_t serialized_bytes = 0;
  uint64_t dead_chunks = 0;      // chunks marked dead when the summary was taken
};

using ContainerSummaryMap = std::unordered_map<ContainerId, ContainerSummary>;

}  // namespace dedupv1

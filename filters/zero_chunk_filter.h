// ZeroChunkFilter recognises all-zero chunks: EXISTING at no cost, and nothing
// is ever stored for them (they map to kZeroContainer and read back as zeros).
#pragma once

#include "filters/filter.h"

namespace dedupv1 {

class ZeroChunkFilter : public Filter {
 public:
  // The name the config's filter-chain key gives (filters/filter_registry.cc).
  static constexpr char kName[] = "zero-chunk";
  const char* name() const override { return kName; }
  FilterResult MaxResult() const override { return FilterResult::kExisting; }
  FilterResult Check(ChunkRequest* chunk, Status* error) override {
    if (!chunk->is_zero) return FilterResult::kWeakMaybe;
    chunk->container = kZeroContainer;
    return FilterResult::kExisting;
  }
  bool Settles(const ChunkRequest& chunk) const override { return chunk.is_zero; }
};

}  // namespace dedupv1

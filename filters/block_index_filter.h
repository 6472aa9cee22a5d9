// BlockIndexFilter compares a chunk with the chunks that the blocks being
// overwritten referenced before (paper: "block index filter"). Rewriting the
// same data to the same place is recognised without any index I/O.
#pragma once

#include "filters/filter.h"

namespace dedupv1 {

class BlockIndexFilter : public Filter {
 public:
  // The name the config's filter-chain key gives (filters/filter_registry.cc).
  static constexpr char kName[] = "block-index";
  const char* name() const override { return kName; }
  FilterResult MaxResult() const override { return FilterResult::kStrongMaybe; }
  FilterResult Check(ChunkRequest* chunk, Status* error) override {
    if (chunk->previous_chunks == nullptr) return FilterResult::kWeakMaybe;
    auto it = chunk->previous_chunks->find(chunk->fp);
    if (it == chunk->previous_chunks->end() || it->second == kZeroContainer) {
      return FilterResult::kWeakMaybe;
    }
    chunk->container = it->second;
    return FilterResult::kStrongMaybe;
  }
  bool Settles(const ChunkRequest& chunk) const override {
    if (chunk.previous_chunks == nullptr) return false;
    auto it = chunk.previous_chunks->find(chunk.fp);
    return it != chunk.previous_chunks->end() && it->second != kZeroContainer;
  }
};

}  // namespace dedupv1

// BloomFilter answers NOT-EXISTING for chunks that were certainly never stored
// (saving the chunk-index lookup for new data) and WEAK-MAYBE otherwise. It
// must see every stored chunk: UpdateNew adds it. If the bloom set could not be
// trusted at start (e.g. after an unclean stop) the system does not put this
// filter in the chain.
#pragma once

#include "filters/bloom_set.h"
#include "filters/filter.h"

namespace dedupv1 {

class BloomFilter : public Filter {
 public:
  explicit BloomFilter(BloomSet* set) : set_(set) {}
  // The name the config's filter-chain key gives (filters/filter_registry.cc).
  static constexpr char kName[] = "bloom";
  const char* name() const override { return kName; }
  FilterResult MaxResult() const override { return FilterResult::kNotExisting; }
  FilterResult Check(ChunkRequest* chunk, Status* error) override {
    return set_->MightContain(chunk->fp) ? FilterResult::kWeakMaybe : FilterResult::kNotExisting;
  }
  bool Settles(const ChunkRequest& chunk) const override { return !set_->MightContain(chunk.fp); }
  Status UpdateNew(const ChunkRequest& chunk) override {
    set_->Add(chunk.fp);
    return Status::OK();
  }

 private:
  BloomSet* set_;  // owned by the system
};

}  // namespace dedupv1

// ByteCompareFilter reads the stored chunk that a previous filter matched by
// fingerprint and compares it byte for byte: EXISTING when equal. A mismatch is
// a fingerprint collision; the write fails rather than risk wrong data.
#pragma once

#include "chunkstore/chunk_store.h"
#include "filters/filter.h"

namespace dedupv1 {

class ByteCompareFilter : public Filter {
 public:
  explicit ByteCompareFilter(ChunkStore* store) : store_(store) {}
  // The name the config's filter-chain key gives (filters/filter_registry.cc).
  static constexpr char kName[] = "byte-compare";
  const char* name() const override { return kName; }
  FilterResult MaxResult() const override { return FilterResult::kExisting; }
  FilterResult Check(ChunkRequest* chunk, Status* error) override;

 private:
  ChunkStore* store_;
};

}  // namespace dedupv1

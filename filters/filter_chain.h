// FilterChain runs a configured sequence of filters over a chunk and decides
// whether it is known (paper section 3.2):
//  - EXISTING or NOT-EXISTING stops the chain;
//  - after STRONG-MAYBE only filters whose MaxResult is EXISTING still run;
//  - WEAK-MAYBE continues;
//  - ERROR stops the chain and fails the chunk.
// The chunk is known if the final result is EXISTING or STRONG-MAYBE; anything
// else (NOT-EXISTING, or WEAK-MAYBE when no filter could decide) means new.
// After the caller stored a new chunk it calls UpdateNew so every filter can
// record it; known chunks get UpdateKnown, known chunks stored again
// (container rewriting) UpdateMoved. The chain does not lock: the caller
// holds the chunk's fingerprint lock across Decide, store and Update so two
// writers of the same new chunk never both store it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "filters/filter.h"

namespace dedupv1 {

class FilterChain {
 public:
  FilterChain() = default;
  void Add(std::unique_ptr<Filter> filter);

  // Runs the chain. Returns the final result; on kError |error| is set.
  // |counted| false: a second decision of the same chunk in one run (the
  // write path's second pass with container rewriting) leaves the per-filter
  // counters as they are, so they count each chunk once.
  FilterResult Decide(ChunkRequest* chunk, Status* error, bool counted = true);
  static bool IsKnown(FilterResult r) {
    return r == FilterResult::kExisting || r == FilterResult::kStrongMaybe;
  }
  Status UpdateNew(const ChunkRequest& chunk);
  Status UpdateKnown(const ChunkRequest& chunk);
  Status UpdateMoved(ChunkRequest* chunk);
  // Run-level batching (Filter::WantsRun): hands each filter that wants it
  // the chunks of |chunks| no earlier filter Settles, and on destruction of
  // the result calls its FinishRun with the same chunks. Null (and no work at
  // all) if no filter wants it. |chunks| must outlive the result.
  class PreparedRun {
   public:
    using Prepared = std::vector<std::pair<Filter*, std::vector<const ChunkRequest*>>>;
    explicit PreparedRun(Prepared prepared) : prepared_(std::move(prepared)) {}
    ~PreparedRun();
    PreparedRun(const PreparedRun&) = delete;
    PreparedRun& operator=(const PreparedRun&) = delete;

   private:
    const Prepared prepared_;
  };
  std::unique_ptr<PreparedRun> PrepareRun(const std::vector<ChunkRequest>& chunks);

  // Tells every filter (Filter::OnChunksMarkedDead).
  void OnChunksMarkedDead();

  size_t size() const { return filters_.size(); }
  const Filter& filter(size_t i) const { return *filters_[i]; }
  const FilterCounters& counters(size_t i) const { return *counters_[i]; }
  // Whether a filter named |name| is in the chain.
  bool Contains(const std::string& name) const;
  // Filter names in order, comma separated.
  std::string Describe() const;

 private:
  std::vector<std::unique_ptr<Filter>> filters_;
  std::vector<std::unique_ptr<FilterCounters>> counters_;
};

}  // namespace dedupv1

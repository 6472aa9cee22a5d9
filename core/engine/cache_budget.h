// CacheBudget splits one memory budget (cache.budget) between the chunk
// index's table page cache (index/table_page_cache.h) and the container read
// cache (chunkstore/container_read_cache.h): POD's iCache (seed 002,
// docs/design-18.md section 4). Each cache keeps a ghost list of what it
// evicted lately; a miss on a ghost means a somewhat larger share would have
// hit. Every kStepAccesses accesses of both caches together, the split moves
// one step (1/32 of the budget) toward the side whose ghosts were hit more
// per byte of its share since the last step; neither side goes below 1/8 of
// the budget. Ties (both without ghost hits, or equal) leave it alone.
//
// Pure bookkeeping over the caches' cumulative counters, which the caller
// reads and passes in; it applies the shares to the caches itself. Not
// thread-safe (DedupSystem's checkpoint thread owns it).
#pragma once

#include <cstdint>

namespace dedupv1 {

class CacheBudget {
 public:
  static constexpr uint64_t kStepAccesses = 4096;
  static constexpr uint64_t kStepDivisor = 32;   // a step moves budget / 32
  static constexpr uint64_t kFloorDivisor = 8;   // a side keeps at least budget / 8

  // One cache's counters since it was made (cumulative).
  struct Side {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t ghost_hits = 0;
  };

  // Starts with the budget split in half.
  explicit CacheBudget(uint64_t budget_bytes);

  uint64_t budget() const { return budget_; }
  uint64_t index_bytes() const { return index_bytes_; }
  uint64_t read_bytes() const { return budget_ - index_bytes_; }

  // Looks at the counters now: once kStepAccesses accesses passed since the
  // last step, decides one (which may leave the split alone). True if the
  // split moved.
  bool Step(const Side& index, const Side& read);

  uint64_t steps() const { return steps_; }                  // decisions taken
  uint64_t moves_to_index() const { return moves_to_index_; }
  uint64_t moves_to_read() const { return moves_to_read_; }

 private:
  const uint64_t budget_;
  uint64_t index_bytes_;
  Side last_index_, last_read_;  // the counters at the last step
  uint64_t steps_ = 0;
  uint64_t moves_to_index_ = 0;
  uint64_t moves_to_read_ = 0;
};

}  // namespace dedupv1

#include "core/engine/cache_budget.h"

#include <algorithm>

namespace dedupv1 {

CacheBudget::CacheBudget(uint64_t budget_bytes) : budget_(budget_bytes), index_bytes_(budget_bytes / 2) {}

bool CacheBudget::Step(const Side& index, const Side& read) {
  const uint64_t accesses = (index.hits + index.misses - last_index_.hits - last_index_.misses) +
                            (read.hits + read.misses - last_read_.hits - last_read_.misses);
  if (accesses < kStepAccesses) return false;
  const uint64_t index_ghosts = index.ghost_hits - last_index_.ghost_hits;
  const uint64_t read_ghosts = read.ghost_hits - last_read_.ghost_hits;
  last_index_ = index;
  last_read_ = read;
  steps_++;
  // Ghost hits per byte of each share, compared without dividing:
  // index_ghosts / index_bytes vs read_ghosts / read_bytes.
  const long double index_weight = static_cast<long double>(index_ghosts) * read_bytes();
  const long double read_weight = static_cast<long double>(read_ghosts) * index_bytes_;
  const uint64_t step = budget_ / kStepDivisor;
  const uint64_t floor = budget_ / kFloorDivisor;
  if (index_weight > read_weight && read_bytes() > floor) {
    index_bytes_ += std::min(step, read_bytes() - floor);
    moves_to_index_++;
    return true;
  }
  if (read_weight > index_weight && index_bytes_ > floor) {
    index_bytes_ -= std::min(step, index_bytes_ - floor);
    moves_to_read_++;
    return true;
  }
  return false;
}

}  // namespace dedupv1

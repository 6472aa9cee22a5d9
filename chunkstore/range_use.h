// RangeUse remembers how many bytes readers took lately from each committed
// container by reading ranges of it (ChunkStore::ReadChunks), so a container
// a restore walks through is read whole once much of it proved wanted, while
// one that only lends a few chunks to a fragmented restore is never read
// whole. Bounded: past |max_entries| containers it starts afresh (what it
// forgets costs a few more range reads). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "core/base/types.h"

namespace dedupv1 {

class RangeUse {
 public:
  explicit RangeUse(size_t max_entries = 4096) : max_entries_(max_entries) {}

  // Adds |bytes| to container |id|'s use and returns its use so far.
  uint64_t Add(ContainerId id, uint64_t bytes) {
    std::lock_guard<std::mutex> l(mu_);
    if (used_.size() >= max_entries_ && used_.count(id) == 0) used_.clear();
    return used_[id] += bytes;
  }
  void Forget(ContainerId id) {
    std::lock_guard<std::mutex> l(mu_);
    used_.erase(id);
  }

 private:
  const size_t max_entries_;
  std::mutex mu_;
  std::unordered_map<ContainerId, uint64_t> used_;
};

}  // namespace dedupv1

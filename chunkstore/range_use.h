// RangeUse remembers how many bytes readers took lately from each committed
// container by reading ranges of it (ChunkStore::ReadChunks), so a container
// a restore walks through is read whole once much of it proved wanted, while
// one that only lends a few chunks to a fragmented restore is never read
// whole. Bounded: past |max_entries| containers it starts afresh (what it
// forgets costs a few more range reads). A container whose whole read failed
// its checks (a damaged chunk in it) is never read whole again: its other
// chunks are read by ranges, each checked on its own. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/base/types.h"

namespace dedupv1 {

class RangeUse {
 public:
  explicit RangeUse(size_t max_entries = 4096) : max_entries_(max_entries) {}

  // Adds |bytes| to container |id|'s use and returns its use so far (0 for
  // a container never to be read whole).
  uint64_t Add(ContainerId id, uint64_t bytes) {
    std::lock_guard<std::mutex> l(mu_);
    if (refused_.count(id) != 0) return 0;
    if (used_.size() >= max_entries_ && used_.count(id) == 0) used_.clear();
    return used_[id] += bytes;
  }
  // Container |id| is not to be read whole any more.
  void RefuseWhole(ContainerId id) {
    std::lock_guard<std::mutex> l(mu_);
    used_.erase(id);
    if (refused_.size() >= max_entries_) refused_.clear();
    refused_.insert(id);
  }
  void Forget(ContainerId id) {
    std::lock_guard<std::mutex> l(mu_);
    used_.erase(id);
  }

 private:
  const size_t max_entries_;
  std::mutex mu_;
  std::unordered_map<ContainerId, uint64_t> used_;
  std::unordered_set<ContainerId> refused_;
};

}  // namespace dedupv1

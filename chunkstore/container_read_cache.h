// ContainerReadCache keeps the most recently used parsed containers in
// memory so that reading several chunks of one container (the common case:
// a stream's chunks are stored together) costs one container read and one
// CRC check. Least recently used containers are evicted beyond |capacity|
// entries; capacity 0 disables the cache. Entries are immutable and shared, so
// an evicted container stays valid for readers still holding it. The
// capacity may change at run time (iCache, core/engine/cache_budget.h); a
// ghost list remembers the ids evicted lately (about a tenth of the
// capacity), and a miss on one counts as a ghost hit: a somewhat larger
// cache would have held it.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "chunkstore/container.h"
#include "core/base/ghost_lru.h"
#include "core/base/types.h"

namespace dedupv1 {

class ContainerReadCache {
 public:
  explicit ContainerReadCache(size_t capacity);

  // The cached container for |id| (marked most recently used), or null.
  // Counts a hit or a miss.
  std::shared_ptr<const Container> Lookup(ContainerId id);
  // Adds or replaces the entry for |id|, evicting the least recently used one
  // if the cache is full.
  void Insert(ContainerId id, std::shared_ptr<const Container> container);
  void Erase(ContainerId id);
  // At most |capacity| containers from now on (shrinking evicts at once).
  void SetCapacity(size_t capacity);

  size_t size() const;
  size_t capacity() const;
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  uint64_t ghost_hits() const { return ghost_hits_.load(std::memory_order_relaxed); }

 private:
  using Evicted = std::vector<std::shared_ptr<const Container>>;  // released after the lock

  mutable std::mutex mu_;
  GhostLru<ContainerId, std::shared_ptr<const Container>> lru_;  // guarded by mu_; charge 1 per container
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
  std::atomic<uint64_t> ghost_hits_{0};
};

}  // namespace dedupv1

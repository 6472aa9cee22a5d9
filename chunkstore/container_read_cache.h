// ContainerReadCache keeps the most recently used parsed containers in
// memory so that reading several chunks of one container (the common case:
// a stream's chunks are stored together) costs one container read and one
// CRC check. Least recently used containers are evicted beyond |capacity|
// entries; capacity 0 disables the cache. Entries are immutable and shared, so
// an evicted container stays valid for readers still holding it.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "chunkstore/container.h"
#include "core/base/types.h"

namespace dedupv1 {

class ContainerReadCache {
 public:
  explicit ContainerReadCache(size_t capacity) : capacity_(capacity) {}

  // The cached container for |id| (marked most recently used), or null.
  // Counts a hit or a miss.
  std::shared_ptr<const Container> Lookup(ContainerId id);
  // Adds or replaces the entry for |id|, evicting the least recently used one
  // if the cache is full.
  void Insert(ContainerId id, std::shared_ptr<const Container> container);
  void Erase(ContainerId id);

  size_t size() const;
  size_t capacity() const { return capacity_; }
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  using Entry = std::pair<ContainerId, std::shared_ptr<const Container>>;

  const size_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // front = most recently used
  std::unordered_map<ContainerId, std::list<Entry>::iterator> map_;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

}  // namespace dedupv1

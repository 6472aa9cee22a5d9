#include "chunkstore/container_read_cache.h"

#include <algorithm>

namespace dedupv1 {
namespace {

// The ghost list remembers about a tenth of the cache (at least one id).
size_t GhostCapacity(size_t capacity) { return std::max<size_t>(1, capacity / 10); }

}  // namespace

ContainerReadCache::ContainerReadCache(size_t capacity) : capacity_(capacity), ghosts_(GhostCapacity(capacity)) {}

std::shared_ptr<const Container> ContainerReadCache::Lookup(ContainerId id) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = map_.find(id);
  if (it == map_.end()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    if (ghosts_.Take(id)) ghost_hits_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void ContainerReadCache::Insert(ContainerId id, std::shared_ptr<const Container> container) {
  std::vector<std::shared_ptr<const Container>> evicted;  // released after the lock
  std::lock_guard<std::mutex> l(mu_);
  if (capacity_ == 0) return;
  auto it = map_.find(id);
  if (it != map_.end()) {
    it->second->second = std::move(container);
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  ghosts_.Erase(id);
  lru_.emplace_front(id, std::move(container));
  map_[id] = lru_.begin();
  EvictLocked(&evicted);
}

void ContainerReadCache::Erase(ContainerId id) {
  std::lock_guard<std::mutex> l(mu_);
  ghosts_.Erase(id);  // gone from the store: a later miss says nothing about the cache's size
  auto it = map_.find(id);
  if (it == map_.end()) return;
  lru_.erase(it->second);
  map_.erase(it);
}

void ContainerReadCache::SetCapacity(size_t capacity) {
  std::vector<std::shared_ptr<const Container>> evicted;  // released after the lock
  std::lock_guard<std::mutex> l(mu_);
  capacity_ = capacity;
  ghosts_.set_capacity(GhostCapacity(capacity));
  EvictLocked(&evicted);
}

void ContainerReadCache::EvictLocked(std::vector<std::shared_ptr<const Container>>* out) {
  while (lru_.size() > capacity_) {
    out->push_back(std::move(lru_.back().second));
    ghosts_.Add(lru_.back().first);
    map_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

size_t ContainerReadCache::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return lru_.size();
}

size_t ContainerReadCache::capacity() const {
  std::lock_guard<std::mutex> l(mu_);
  return capacity_;
}

}  // namespace dedupv1

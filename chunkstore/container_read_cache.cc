#include "chunkstore/container_read_cache.h"

namespace dedupv1 {

std::shared_ptr<const Container> ContainerReadCache::Lookup(ContainerId id) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = map_.find(id);
  if (it == map_.end()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void ContainerReadCache::Insert(ContainerId id, std::shared_ptr<const Container> container) {
  if (capacity_ == 0) return;
  std::shared_ptr<const Container> evicted;  // released after the lock
  std::lock_guard<std::mutex> l(mu_);
  auto it = map_.find(id);
  if (it != map_.end()) {
    it->second->second = std::move(container);
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(id, std::move(container));
  map_[id] = lru_.begin();
  if (lru_.size() > capacity_) {
    evicted = std::move(lru_.back().second);
    map_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

void ContainerReadCache::Erase(ContainerId id) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = map_.find(id);
  if (it == map_.end()) return;
  lru_.erase(it->second);
  map_.erase(it);
}

size_t ContainerReadCache::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return lru_.size();
}

}  // namespace dedupv1

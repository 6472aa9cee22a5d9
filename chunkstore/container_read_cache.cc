#include "chunkstore/container_read_cache.h"

#include <algorithm>

namespace dedupv1 {
namespace {

// The ghost list remembers about a tenth of the cache (at least one id).
size_t GhostCapacity(size_t capacity) { return std::max<size_t>(1, capacity / 10); }

}  // namespace

ContainerReadCache::ContainerReadCache(size_t capacity) : lru_(capacity, GhostCapacity(capacity)) {}

std::shared_ptr<const Container> ContainerReadCache::Lookup(ContainerId id) {
  std::lock_guard<std::mutex> l(mu_);
  bool ghost_hit = false;
  std::shared_ptr<const Container>* c = lru_.Lookup(id, &ghost_hit);
  if (c == nullptr) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    if (ghost_hit) ghost_hits_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  return *c;
}

void ContainerReadCache::Insert(ContainerId id, std::shared_ptr<const Container> container) {
  Evicted evicted;
  std::lock_guard<std::mutex> l(mu_);
  lru_.Insert(id, std::move(container), 1, &evicted);
}

void ContainerReadCache::Erase(ContainerId id) {
  std::lock_guard<std::mutex> l(mu_);
  lru_.ForgetGhost(id);  // gone from the store: a later miss says nothing about the cache's size
  lru_.Erase(id);
}

void ContainerReadCache::SetCapacity(size_t capacity) {
  Evicted evicted;
  std::lock_guard<std::mutex> l(mu_);
  lru_.SetCapacity(capacity, GhostCapacity(capacity), &evicted);
}

size_t ContainerReadCache::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return lru_.size();
}

size_t ContainerReadCache::capacity() const {
  std::lock_guard<std::mutex> l(mu_);
  return lru_.capacity();
}

}  // namespace dedupv1

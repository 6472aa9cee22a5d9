// GhostList remembers the keys a cache evicted most recently, without their
// data, so the cache can tell how often a somewhat larger share of memory
// would have hit: a miss on a remembered key is a ghost hit (ARC's ghost
// lists; POD's iCache splits its memory by them, core/engine/cache_budget.h).
// Bounded by a number of keys, the oldest forgotten first. Not thread-safe:
// the owning cache's lock guards it.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <unordered_map>

namespace dedupv1 {

template <typename Key, typename Hash = std::hash<Key>>
class GhostList {
 public:
  explicit GhostList(size_t capacity = 0) : capacity_(capacity) {}

  // At most |capacity| keys from now on (the oldest go).
  void set_capacity(size_t capacity) {
    capacity_ = capacity;
    Trim();
  }
  size_t capacity() const { return capacity_; }
  size_t size() const { return map_.size(); }

  // |key| was just evicted.
  void Add(const Key& key) {
    if (capacity_ == 0) return;
    Erase(key);
    order_.push_front(key);
    map_[key] = order_.begin();
    Trim();
  }
  // Whether |key| was remembered (a ghost hit); it is forgotten either way,
  // as the cache is about to hold it again.
  bool Take(const Key& key) {
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    order_.erase(it->second);
    map_.erase(it);
    return true;
  }
  void Erase(const Key& key) { (void)Take(key); }

 private:
  void Trim() {
    while (map_.size() > capacity_) {
      map_.erase(order_.back());
      order_.pop_back();
    }
  }

  size_t capacity_;
  std::list<Key> order_;  // front = evicted last
  std::unordered_map<Key, typename std::list<Key>::iterator, Hash> map_;
};

}  // namespace dedupv1

// GhostLru keeps values by key in least-recently-used order within a
// capacity counted in charges (each value's charge: 1 for a count of
// entries, or its bytes), and remembers the keys it evicted lately in a
// GhostList (core/base/ghost_list.h), so a miss can tell whether a somewhat
// larger capacity would have hit (iCache, core/engine/cache_budget.h). The
// LRU mechanics of the container read cache and the chunk index's table page
// cache; each keeps its own lock, counters and key meaning.
//
// Invariant: used() <= capacity() after every call; a value whose charge
// exceeds the capacity is not kept. Not thread-safe: the owner's lock
// guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base/ghost_list.h"

namespace dedupv1 {

template <typename Key, typename Value, typename Hash = std::hash<Key>>
class GhostLru {
 public:
  GhostLru(uint64_t capacity, size_t ghost_capacity) : capacity_(capacity), ghosts_(ghost_capacity) {}

  // The value of |key|, now the most recently used, or null. On a miss,
  // |*ghost_hit| tells whether |key| was evicted lately (it is forgotten).
  Value* Lookup(const Key& key, bool* ghost_hit) {
    *ghost_hit = false;
    auto it = map_.find(key);
    if (it == map_.end()) {
      *ghost_hit = ghosts_.Take(key);
      return nullptr;
    }
    lru_.splice(lru_.begin(), lru_, it->second);
    return &it->second->value;
  }

  // Adds or replaces |key|'s value, the most recently used from now on, and
  // evicts beyond the capacity: the evicted values go to |evicted| (so the
  // caller can release them after its lock).
  void Insert(const Key& key, Value value, uint64_t charge, std::vector<Value>* evicted) {
    if (charge > capacity_) return;  // no room for it at all
    auto it = map_.find(key);
    if (it != map_.end()) {
      used_ -= it->second->charge;
      it->second->value = std::move(value);
      it->second->charge = charge;
      lru_.splice(lru_.begin(), lru_, it->second);
    } else {
      ghosts_.Erase(key);
      lru_.push_front(Entry{key, std::move(value), charge});
      map_[key] = lru_.begin();
    }
    used_ += charge;
    Evict(evicted);
  }

  // Drops |key|'s value (not an eviction: no ghost is left).
  void Erase(const Key& key) {
    auto it = map_.find(key);
    if (it == map_.end()) return;
    used_ -= it->second->charge;
    lru_.erase(it->second);
    map_.erase(it);
  }
  // Forgets that |key| was evicted lately.
  void ForgetGhost(const Key& key) { ghosts_.Erase(key); }

  // A new capacity and ghost capacity; shrinking evicts at once (into |evicted|).
  void SetCapacity(uint64_t capacity, size_t ghost_capacity, std::vector<Value>* evicted) {
    capacity_ = capacity;
    ghosts_.set_capacity(ghost_capacity);
    Evict(evicted);
  }

  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  size_t size() const { return map_.size(); }

 private:
  struct Entry {
    Key key;
    Value value;
    uint64_t charge;
  };

  void Evict(std::vector<Value>* evicted) {
    while (used_ > capacity_ && !lru_.empty()) {
      Entry& last = lru_.back();
      used_ -= last.charge;
      ghosts_.Add(last.key);
      evicted->push_back(std::move(last.value));
      map_.erase(last.key);
      lru_.pop_back();
    }
  }

  uint64_t capacity_;
  uint64_t used_ = 0;
  std::list<Entry> lru_;  // front = most recently used
  std::unordered_map<Key, typename std::list<Entry>::iterator, Hash> map_;
  GhostList<Key, Hash> ghosts_;
};

}  // namespace dedupv1

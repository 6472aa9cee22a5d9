#include "index/table_page_cache.h"

#include <algorithm>
#include <atomic>

namespace dedupv1 {

TablePageCache::TablePageCache(uint64_t capacity_bytes, size_t page_size)
    : page_bytes_(std::max<uint64_t>(1, page_size)), capacity_bytes_(capacity_bytes) {
  std::lock_guard<std::mutex> l(mu_);
  SizeGhostsLocked();
}

uint64_t TablePageCache::NewTableId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

bool TablePageCache::Lookup(uint64_t table, uint64_t page_no, std::string* page) {
  const Key key{table, page_no};
  std::lock_guard<std::mutex> l(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) {
    counters_.misses++;
    if (ghosts_.Take(key)) counters_.ghost_hits++;
    return false;
  }
  counters_.hits++;
  lru_.splice(lru_.begin(), lru_, it->second);
  *page = it->second->page;
  return true;
}

void TablePageCache::Insert(uint64_t table, uint64_t page_no, const std::string& page) {
  const Key key{table, page_no};
  std::lock_guard<std::mutex> l(mu_);
  if (capacity_bytes_ < page.size()) return;  // no room for even one page
  auto it = map_.find(key);
  if (it != map_.end()) {
    used_bytes_ -= it->second->page.size();
    it->second->page = page;
    lru_.splice(lru_.begin(), lru_, it->second);
  } else {
    ghosts_.Erase(key);
    lru_.push_front(Entry{key, page});
    map_[key] = lru_.begin();
  }
  used_bytes_ += page.size();
  EvictLocked();
}

void TablePageCache::Erase(uint64_t table, const std::vector<uint64_t>& page_nos) {
  std::lock_guard<std::mutex> l(mu_);
  for (uint64_t page_no : page_nos) {
    auto it = map_.find(Key{table, page_no});
    if (it == map_.end()) continue;
    used_bytes_ -= it->second->page.size();
    lru_.erase(it->second);
    map_.erase(it);
  }
}

void TablePageCache::SetCapacity(uint64_t bytes) {
  std::lock_guard<std::mutex> l(mu_);
  capacity_bytes_ = bytes;
  EvictLocked();
  SizeGhostsLocked();
}

void TablePageCache::EvictLocked() {
  while (used_bytes_ > capacity_bytes_ && !lru_.empty()) {
    Entry& last = lru_.back();
    used_bytes_ -= last.page.size();
    ghosts_.Add(last.key);
    map_.erase(last.key);
    lru_.pop_back();
  }
}

void TablePageCache::SizeGhostsLocked() {
  // A tenth of the share, in pages (at least one).
  ghosts_.set_capacity(std::max<uint64_t>(1, capacity_bytes_ / page_bytes_ / 10));
}

TablePageCache::Counters TablePageCache::counters() const {
  std::lock_guard<std::mutex> l(mu_);
  Counters c = counters_;
  c.capacity_bytes = capacity_bytes_;
  c.used_bytes = used_bytes_;
  return c;
}

}  // namespace dedupv1

#include "index/table_page_cache.h"

#include <algorithm>
#include <atomic>

namespace dedupv1 {

TablePageCache::TablePageCache(uint64_t capacity_bytes, size_t page_size)
    : page_bytes_(std::max<uint64_t>(1, page_size)), lru_(capacity_bytes, GhostPages(capacity_bytes)) {}

uint64_t TablePageCache::NewTableId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

size_t TablePageCache::GhostPages(uint64_t capacity_bytes) const {
  return std::max<uint64_t>(1, capacity_bytes / page_bytes_ / 10);
}

bool TablePageCache::Lookup(uint64_t table, uint64_t page_no, std::string* page) {
  std::lock_guard<std::mutex> l(mu_);
  bool ghost_hit = false;
  const std::string* cached = lru_.Lookup(Key{table, page_no}, &ghost_hit);
  if (cached == nullptr) {
    counters_.misses++;
    if (ghost_hit) counters_.ghost_hits++;
    return false;
  }
  counters_.hits++;
  *page = *cached;
  return true;
}

void TablePageCache::Insert(uint64_t table, uint64_t page_no, const std::string& page) {
  std::vector<std::string> evicted;
  std::lock_guard<std::mutex> l(mu_);
  lru_.Insert(Key{table, page_no}, page, page.size(), &evicted);
}

void TablePageCache::Erase(uint64_t table, const std::vector<uint64_t>& page_nos) {
  std::lock_guard<std::mutex> l(mu_);
  for (uint64_t page_no : page_nos) lru_.Erase(Key{table, page_no});
}

void TablePageCache::SetCapacity(uint64_t bytes) {
  std::vector<std::string> evicted;
  std::lock_guard<std::mutex> l(mu_);
  lru_.SetCapacity(bytes, GhostPages(bytes), &evicted);
}

TablePageCache::Counters TablePageCache::counters() const {
  std::lock_guard<std::mutex> l(mu_);
  Counters c = counters_;
  c.capacity_bytes = lru_.capacity();
  c.used_bytes = lru_.used();
  return c;
}

}  // namespace dedupv1

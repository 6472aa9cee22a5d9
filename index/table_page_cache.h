// TablePageCache keeps pages of the chunk index's disk hash table
// (index/disk_hash_table.h) in memory, the least recently used evicted
// beyond a byte capacity, so a lookup that meets a page read before costs no
// read (iCache's index side, docs/design-18.md section 4). Keys are (table
// id, page number): the tables of an online growth share one cache, and a
// table's id is never reused.
//
// Invariant: an entry is the page's current content. A table erases the
// pages of each batch it installs (DiskHashTable::Apply, under its exclusive
// page lock; until the batch is in place its reads take the batch's images)
// and inserts a page read from its file only under its shared page lock (or
// while no batch is pending), so a read of an older image can never land
// after the install.
//
// Counts hits, misses and ghost hits (misses of pages evicted lately: the
// cache's share would have held them had it been ~10% larger), which
// core/engine/cache_budget.h weighs against the container read cache's.
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/ghost_lru.h"

namespace dedupv1 {

class TablePageCache {
 public:
  struct Counters {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t ghost_hits = 0;
    uint64_t capacity_bytes = 0;
    uint64_t used_bytes = 0;
  };

  // |page_size|: the tables' page size (sizes the ghost list).
  TablePageCache(uint64_t capacity_bytes, size_t page_size);
  TablePageCache(const TablePageCache&) = delete;
  TablePageCache& operator=(const TablePageCache&) = delete;

  // A fresh table id (process-wide, never reused).
  static uint64_t NewTableId();

  // Copies page |page_no| of table |table| into |*page| and returns true if
  // cached (counted as a hit), else false (a miss; a ghost hit too if the
  // page was evicted lately).
  bool Lookup(uint64_t table, uint64_t page_no, std::string* page);
  // Adds or replaces the page (most recently used), evicting beyond capacity.
  void Insert(uint64_t table, uint64_t page_no, const std::string& page);
  // Forgets the pages |page_nos| of table |table| (a batch is replacing them).
  void Erase(uint64_t table, const std::vector<uint64_t>& page_nos);

  // The cache holds at most |bytes| from now on (shrinking evicts at once);
  // its ghost list remembers about a tenth of that in pages.
  void SetCapacity(uint64_t bytes);
  Counters counters() const;

 private:
  struct Key {
    uint64_t table;
    uint64_t page_no;
    bool operator==(const Key& o) const { return table == o.table && page_no == o.page_no; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<uint64_t>()(k.table * 0x9e3779b97f4a7c15ull ^ k.page_no); }
  };
  // The ghost list: a tenth of |capacity_bytes| in pages (at least one).
  size_t GhostPages(uint64_t capacity_bytes) const;

  const uint64_t page_bytes_;  // for sizing the ghost list
  mutable std::mutex mu_;
  GhostLru<Key, std::string, KeyHash> lru_;  // guarded by mu_; charge: the page's bytes
  Counters counters_;
};

}  // namespace dedupv1

// TablePageCache keeps pages of the chunk index's disk hash table
// (index/disk_hash_table.h) in memory, the least recently used evicted
// beyond a byte capacity, so a lookup that meets a page read before costs no
// read (iCache's index side, docs/design-18.md section 4). Keys are (table
// id, page number): the tables of an online growth share one cache, and a
// table's id is never reused.
//
// Invariant: an entry is the page's current content. A table inserts each
// page image it installs (DiskHashTable::Apply, under its exclusive page
// lock) and inserts a page read from its file only under its shared page
// lock, so a read of an older image can never land after the install.
//
// Counts hits, misses and ghost hits (misses of pages evicted lately: the
// cache's share would have held them had it been ~10% larger), which
// core/engine/cache_budget.h weighs against the container read cache's.
// Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/base/ghost_list.h"

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

  explicit TablePageCache(uint64_t capacity_bytes);
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

  // The cache holds at most |bytes| from now on (shrinking evicts at once);
  // its ghost list remembers about a tenth of that in pages.
  void SetCapacity(uint64_t bytes);
  Counters counters() const;

 private:
  struct Entry {
    uint64_t key;
    std::string page;
  };
  static uint64_t Key(uint64_t table, uint64_t page_no) { return (table << 40) | page_no; }
  void EvictLocked();
  void SizeGhostsLocked();

  mutable std::mutex mu_;
  uint64_t capacity_bytes_;
  uint64_t used_bytes_ = 0;
  uint64_t page_bytes_ = 4096;  // the last page size seen, for sizing the ghost list
  std::list<Entry> lru_;  // front = most recently used
  std::unordered_map<uint64_t, std::list<Entry>::iterator> map_;
  GhostList<uint64_t> ghosts_;
  Counters counters_;
};

}  // namespace dedupv1

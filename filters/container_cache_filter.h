// ContainerCacheFilter keeps the fingerprint lists of recently used containers
// in an LRU cache (Zhu et al.'s locality-preserved caching). A hit gives
// STRONG-MAYBE without any chunk-index I/O. After the chain found a chunk by
// other means, namely a chunk-index lookup that had to read the on-disk table,
// UpdateKnown loads the fingerprints of that chunk's container (its metadata
// only), betting that its neighbours come next, as they do in the next
// generation of a backup. Chunks found in the in-memory auxiliary index do
// not trigger a load: that lookup is already cheaper than loading a list.
#pragma once

#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "chunkstore/chunk_store.h"
#include "filters/filter.h"

namespace dedupv1 {

class ContainerCacheFilter : public Filter {
 public:
  ContainerCacheFilter(ChunkStore* store, size_t max_containers)
      : store_(store), max_containers_(max_containers) {}
  // The name the config's filter-chain key gives (filters/filter_registry.cc).
  static constexpr char kName[] = "container-cache";
  const char* name() const override { return kName; }
  FilterResult MaxResult() const override { return FilterResult::kStrongMaybe; }
  FilterResult Check(ChunkRequest* chunk, Status* error) override;
  Status UpdateKnown(const ChunkRequest& chunk) override;
  bool Settles(const ChunkRequest& chunk) const override;

  size_t cached_containers() const;
  // Forgets every cached container (garbage collection marked chunks dead:
  // reloaded lists no longer name them).
  void Clear();
  void OnChunksMarkedDead() override { Clear(); }
  uint64_t loads() const { return loads_; }

 private:
  void InsertLocked(ContainerId id, std::vector<Fingerprint> fps);

  ChunkStore* store_;
  const size_t max_containers_;
  mutable std::mutex mu_;
  // LRU order of cached containers, most recent first, with their fingerprints.
  std::list<std::pair<ContainerId, std::vector<Fingerprint>>> lru_;
  std::unordered_map<ContainerId, decltype(lru_)::iterator> by_container_;
  std::unordered_map<Fingerprint, ContainerId, FingerprintHasher> by_fp_;
  uint64_t loads_ = 0;
};

}  // namespace dedupv1

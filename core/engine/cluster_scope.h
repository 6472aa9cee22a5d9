// What the engine leaves out in cluster scope (storage.rados.dedup-scope =
// cluster, docs/design-15.md 2.4 and 2.6), in one place.
//  - Filters: the bloom filter only knows this slot's chunks (it would call
//    another slot's chunk new without asking the shared table), and the
//    container-cache filter answers from container metadata without the
//    index (it could hand out a chunk the table no longer names). Both are
//    left out of the chain; the chunk-index filter reads the shared table.
//  - Garbage collection: a slot's GC round runs the cluster rule set
//    (core/engine/cluster_gc_rules.h): only chunks marked dead are garbage.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "filters/bloom_filter.h"
#include "filters/container_cache_filter.h"

namespace dedupv1 {

// |names| (the configured filter chain) without the filters cluster scope leaves out.
inline std::vector<std::string> ClusterScopeFilterChain(std::vector<std::string> names) {
  names.erase(std::remove_if(names.begin(), names.end(),
                             [](const std::string& n) {
                               return n == BloomFilter::kName || n == ContainerCacheFilter::kName;
                             }),
              names.end());
  return names;
}

}  // namespace dedupv1

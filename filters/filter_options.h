// FilterOptions: the settings of the filters that hold state of their own
// (the bloom filter's size and the container cache's capacity). Which
// filters run, and in what order, is the engine's filter-chain setting
// (core/engine/options.h); the config keys are bloom.* and container-cache.*.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dedupv1 {

struct FilterOptions {
  // The bloom filter is sized for this many distinct chunks at this false
  // positive rate (0 < rate < 0.5); beyond it the rate rises.
  uint64_t bloom_expected_chunks = 16 << 20;
  double bloom_false_positive_rate = 0.01;
  // Containers whose fingerprint lists the container cache filter keeps.
  size_t container_cache_containers = 1024;
};

}  // namespace dedupv1

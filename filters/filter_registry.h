// The filter registry: every filter the config's `filter-chain` key can name,
// with the factory that builds it. It is the one list of filter names: the
// options check a configured chain against it, the engine builds its chain
// from it, and docs/configuration.md points here.
//
// Adding a filter: its class in filters/ (with `static constexpr char
// kName[]`, returned by name()), and one line in filter_registry.cc saying
// what it is built from.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace dedupv1 {

class BloomSet;
class ChunkIndex;
class ChunkStore;
class FilterChain;

// Everything a filter may be built from; the engine fills every field.
struct FilterInputs {
  ChunkStore* chunk_store = nullptr;
  ChunkIndex* chunk_index = nullptr;
  // Null when the bloom set cannot be trusted (no current saved filter and
  // none rebuilt): the bloom filter is then left out of the chain.
  BloomSet* bloom = nullptr;
  size_t container_cache_containers = 0;  // container-cache: LRU capacity
};

// Every registered filter name, in the registry's order.
std::vector<std::string> FilterNames();
// The chain used when the config names none, in order.
std::vector<std::string> DefaultFilterChain();
// Checks a configured chain's names: each registered, none listed twice
// (InvalidArgument naming the filter and, if unknown, the known ones).
Status CheckFilterNames(const std::vector<std::string>& names);
// Checks that every filter the engine cannot work without is in |names|.
Status CheckRequiredFilters(const std::vector<std::string>& names);
// Appends the filters |names| (already checked) to |chain| in order. A
// filter whose input is missing (bloom without a trusted set) is left out.
Status BuildFilterChain(const std::vector<std::string>& names, const FilterInputs& inputs, FilterChain* chain);

}  // namespace dedupv1

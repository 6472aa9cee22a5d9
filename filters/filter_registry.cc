#include "filters/filter_registry.h"

#include <functional>
#include <memory>
#include <set>

#include "filters/block_index_filter.h"
#include "filters/bloom_filter.h"
#include "filters/byte_compare_filter.h"
#include "filters/chunk_index_filter.h"
#include "filters/container_cache_filter.h"
#include "filters/filter_chain.h"
#include "filters/zero_chunk_filter.h"

namespace dedupv1 {
namespace {

struct FilterRegistration {
  const char* name;
  bool in_default_chain;
  // Non-empty: the engine cannot work without this filter, for this reason.
  const char* required_because;
  // Null result: the filter is left out (its input is missing).
  std::function<std::unique_ptr<Filter>(const FilterInputs&)> create;
};

// In the order of the default chain; optional filters after it.
const std::vector<FilterRegistration>& Registry() {
  static const std::vector<FilterRegistration> registry = {
      {ZeroChunkFilter::kName, true, "", [](const FilterInputs&) { return std::make_unique<ZeroChunkFilter>(); }},
      {BlockIndexFilter::kName, true, "", [](const FilterInputs&) { return std::make_unique<BlockIndexFilter>(); }},
      {ContainerCacheFilter::kName, true, "",
       [](const FilterInputs& in) {
         return std::make_unique<ContainerCacheFilter>(in.chunk_store, in.container_cache_containers);
       }},
      {BloomFilter::kName, true, "",
       [](const FilterInputs& in) -> std::unique_ptr<Filter> {
         if (in.bloom == nullptr) return nullptr;
         return std::make_unique<BloomFilter>(in.bloom);
       }},
      {ChunkIndexFilter::kName, true, "it records every stored chunk",
       [](const FilterInputs& in) { return std::make_unique<ChunkIndexFilter>(in.chunk_index); }},
      {ByteCompareFilter::kName, false, "",
       [](const FilterInputs& in) { return std::make_unique<ByteCompareFilter>(in.chunk_store); }},
  };
  return registry;
}

const FilterRegistration* Find(const std::string& name) {
  for (const auto& r : Registry()) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> FilterNames() {
  std::vector<std::string> names;
  for (const auto& r : Registry()) names.push_back(r.name);
  return names;
}

std::vector<std::string> DefaultFilterChain() {
  std::vector<std::string> names;
  for (const auto& r : Registry()) {
    if (r.in_default_chain) names.push_back(r.name);
  }
  return names;
}

Status CheckFilterNames(const std::vector<std::string>& names) {
  std::set<std::string> seen;
  for (const auto& n : names) {
    if (Find(n) == nullptr) {
      std::string known;
      for (const auto& r : Registry()) known += (known.empty() ? "" : ", ") + std::string(r.name);
      return Status::InvalidArgument("unknown filter '" + n + "' (known: " + known + ")");
    }
    if (!seen.insert(n).second) return Status::InvalidArgument("filter '" + n + "' listed twice");
  }
  return Status::OK();
}

Status CheckRequiredFilters(const std::vector<std::string>& names) {
  for (const auto& r : Registry()) {
    if (*r.required_because == '\0') continue;
    bool listed = false;
    for (const auto& n : names) listed |= (n == r.name);
    if (!listed) {
      return Status::InvalidArgument(std::string("filter-chain must include ") + r.name + " (" +
                                     r.required_because + ")");
    }
  }
  return Status::OK();
}

Status BuildFilterChain(const std::vector<std::string>& names, const FilterInputs& inputs, FilterChain* chain) {
  for (const auto& n : names) {
    const FilterRegistration* r = Find(n);
    if (r == nullptr) return CheckFilterNames({n});
    std::unique_ptr<Filter> filter = r->create(inputs);
    if (filter != nullptr) chain->Add(std::move(filter));
  }
  return Status::OK();
}

}  // namespace dedupv1

#include "core/engine/select_dedupe.h"

#include <algorithm>

namespace dedupv1 {

const char* RequestCategoryName(RequestCategory category) {
  switch (category) {
    case RequestCategory::kAllNew: return "all_new";
    case RequestCategory::kFullDedup: return "full_dedup";
    case RequestCategory::kWrittenInFull: return "written_in_full";
    case RequestCategory::kPartialDedup: return "partial_dedup";
  }
  return "?";
}

RequestCategory ClassifyRequest(size_t chunks, size_t known, size_t zero, uint32_t threshold) {
  if (known >= chunks) return RequestCategory::kFullDedup;
  const size_t stored_elsewhere = known - zero;
  if (stored_elsewhere == 0) return RequestCategory::kAllNew;
  return stored_elsewhere < threshold ? RequestCategory::kWrittenInFull : RequestCategory::kPartialDedup;
}

std::vector<uint32_t> RequestOfChunks(uint64_t run_start, const std::vector<size_t>& ends,
                                      const std::vector<uint64_t>& edges) {
  std::vector<uint32_t> request(ends.size(), 0);
  // The edges at or before the run's first byte do not split it.
  auto edge = std::upper_bound(edges.begin(), edges.end(), run_start);
  uint32_t current = 0;
  for (size_t i = 0; i < ends.size(); i++) {
    const uint64_t first = run_start + (i == 0 ? 0 : ends[i - 1]);
    bool crossed = false;
    while (edge != edges.end() && *edge <= first) {
      crossed = true;
      ++edge;
    }
    if (crossed && i > 0) current++;
    request[i] = current;
  }
  return request;
}

}  // namespace dedupv1

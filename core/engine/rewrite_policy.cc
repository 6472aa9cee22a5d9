#include "core/engine/rewrite_policy.h"

#include <algorithm>
#include <map>

namespace dedupv1 {

std::vector<size_t> RewritePolicy::Choose(uint32_t volume, uint64_t run_bytes, const std::vector<Chunk>& chunks) {
  if (!options_.enabled) return {};
  // Bytes each container supplies to this run.
  std::map<ContainerId, uint64_t> supplied;
  for (const Chunk& c : chunks) {
    if (c.container != kNoContainer) supplied[c.container] += c.size;
  }
  // Sparse containers, sparsest first (ties: lower id first, so the choice
  // does not depend on hash order).
  std::vector<std::pair<uint64_t, ContainerId>> sparse;
  for (const auto& [container, bytes] : supplied) {
    if (bytes < options_.sparse_bytes) sparse.emplace_back(bytes, container);
  }
  std::sort(sparse.begin(), sparse.end());

  std::vector<ContainerId> chosen;
  {
    std::lock_guard<std::mutex> l(mu_);
    Budget& b = budgets_[volume];
    b.written += run_bytes;
    const double allowed = options_.limit * static_cast<double>(b.written);
    for (const auto& [bytes, container] : sparse) {
      if (static_cast<double>(b.rewritten + bytes) > allowed) break;
      b.rewritten += bytes;
      chosen.push_back(container);
    }
  }
  std::vector<size_t> out;
  if (chosen.empty()) return out;
  std::sort(chosen.begin(), chosen.end());
  for (size_t i = 0; i < chunks.size(); i++) {
    if (chunks[i].container != kNoContainer &&
        std::binary_search(chosen.begin(), chosen.end(), chunks[i].container)) {
      out.push_back(i);
    }
  }
  return out;
}

void RewritePolicy::Refund(uint32_t volume, uint64_t written, uint64_t rewritten) {
  std::lock_guard<std::mutex> l(mu_);
  Budget& b = budgets_[volume];
  b.written -= std::min(b.written, written);
  b.rewritten -= std::min(b.rewritten, rewritten);
}

}  // namespace dedupv1

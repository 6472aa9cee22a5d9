#include "target/tools/orphan_copies.h"

#include <algorithm>

namespace dedupv1 {
namespace tools {

void OrphanCopies::AddContainer(uint16_t slot, ContainerId id, std::vector<Chunk> chunks) {
  std::sort(chunks.begin(), chunks.end(), [](const Chunk& a, const Chunk& b) { return a.fp < b.fp; });
  listed_.emplace(id, Listing{slot, std::move(chunks)});
}

void OrphanCopies::Reach(ContainerId at, const Fingerprint& fp) {
  std::vector<ContainerId>& at_list = reached_[fp];
  if (std::find(at_list.begin(), at_list.end(), at) == at_list.end()) at_list.push_back(at);
}

bool OrphanCopies::Holds(ContainerId id, const Fingerprint& fp) const {
  auto it = listed_.find(id);
  if (it == listed_.end()) return false;
  const std::vector<Chunk>& chunks = it->second.chunks;
  auto at = std::lower_bound(chunks.begin(), chunks.end(), fp, [](const Chunk& c, const Fingerprint& f) { return c.fp < f; });
  return at != chunks.end() && at->fp == fp;
}

std::vector<OrphanCopies::Orphan> OrphanCopies::Find() const {
  std::vector<Orphan> out;
  for (const auto& [id, listed] : listed_) {
    for (const Chunk& chunk : listed.chunks) {
      auto it = reached_.find(chunk.fp);
      if (it != reached_.end()) {
        const std::vector<ContainerId>& at = it->second;
        const bool kept = std::any_of(at.begin(), at.end(), [&](ContainerId r) { return r == id || !Listed(r); });
        if (kept) continue;
      }
      out.push_back({listed.slot, id, chunk.fp, chunk.bytes});
    }
  }
  return out;
}

}  // namespace tools
}  // namespace dedupv1

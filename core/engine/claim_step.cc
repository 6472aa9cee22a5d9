#include "core/engine/claim_step.h"

#include <unordered_map>

#include "index/chunk_index.h"

namespace dedupv1 {

Status ClaimNewChunks(ChunkIndex* index, const std::vector<size_t>& stored, std::vector<ChunkRequest>* chunks) {
  if (stored.empty()) return Status::OK();
  // One claim per fingerprint: a fingerprint stored twice in one run (the
  // second store raced with the first's auxiliary entry) is claimed with its
  // first copy; the other copies are rewritten like lost claims below.
  std::unordered_map<Fingerprint, size_t, FingerprintHasher> first;
  std::vector<ChunkClaims::NewChunk> claims;
  for (size_t i : stored) {
    const ChunkRequest& c = (*chunks)[i];
    if (!first.emplace(c.fp, claims.size()).second) continue;
    claims.push_back(ChunkClaims::NewChunk{c.fp, c.container, c.size});
  }
  std::vector<ContainerId> use;
  DEDUPV1_RETURN_IF_ERROR(index->ClaimNew(claims, &use));
  // Every chunk of the run naming a fingerprint's stored copy that is not
  // the one to use (the claim was lost, or a second copy) maps the one to use.
  std::unordered_map<Fingerprint, ContainerId, FingerprintHasher> remap;
  for (size_t k = 0; k < claims.size(); k++) remap.emplace(claims[k].fp, use[k]);
  for (size_t i : stored) {
    ChunkRequest& c = (*chunks)[i];
    const ContainerId to = remap.at(c.fp);
    if (c.container == to) continue;
    const ContainerId from = c.container;
    for (ChunkRequest& other : *chunks) {
      if (other.fp == c.fp && other.container == from) other.container = to;
    }
  }
  return Status::OK();
}

}  // namespace dedupv1

#include "core/engine/claim_step.h"

#include <unordered_map>

#include "chunkstore/chunk_store.h"
#include "index/chunk_index.h"

namespace dedupv1 {

void RunClaims::Release(bool referenced) {
  if (released_ || index_ == nullptr) return;
  released_ = true;
  index_->ReleaseClaims(std::move(ticket_), referenced);
}

Status ClaimNewChunks(ChunkIndex* index, ChunkStore* store, const std::vector<size_t>& stored,
                      std::vector<ChunkRequest>* chunks, ClaimTicket* ticket) {
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
  DEDUPV1_RETURN_IF_ERROR(index->ClaimNew(claims, &use, ticket));
  // Every chunk of the run naming a fingerprint's stored copy that is not
  // the one to use (the claim was lost, or a second copy) maps the one to use,
  // and that copy is dead (the header says why no one can ever map it).
  std::unordered_map<Fingerprint, ContainerId, FingerprintHasher> remap;
  for (size_t k = 0; k < claims.size(); k++) remap.emplace(claims[k].fp, use[k]);
  std::unordered_map<ContainerId, std::vector<Fingerprint>> dead;
  for (size_t i : stored) {
    ChunkRequest& c = (*chunks)[i];
    const ContainerId to = remap.at(c.fp);
    if (c.container == to) continue;
    const ContainerId from = c.container;
    // Marks name (container, fingerprint): a container holding the copy to
    // use is never |from| here, so the mark cannot hit the live copy.
    dead[from].push_back(c.fp);
    for (ChunkRequest& other : *chunks) {
      if (other.fp == c.fp && other.container == from) other.container = to;
    }
  }
  // A won copy may sit in a container where an earlier run's copy of the same
  // fingerprint was marked dead (Container::Add hands back the copy a
  // container holds already; the entry naming the winner was erased by GC
  // meanwhile): the mark goes, durably before any mapping names the copy.
  bool unmarked = false;
  for (size_t k = 0; k < claims.size(); k++) {
    if (use[k] == claims[k].container && store->UnmarkIfDead(use[k], claims[k].fp)) unmarked = true;
  }
  if (unmarked) DEDUPV1_RETURN_IF_ERROR(store->PersistDeadMarks());
  for (const auto& [container, fps] : dead) store->MarkDead(container, fps);
  return Status::OK();
}

}  // namespace dedupv1

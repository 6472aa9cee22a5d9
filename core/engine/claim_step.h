// ClaimNewChunks is the write pipeline's step between storing a run's new
// chunks and installing its mappings, in cluster scope only
// (storage.rados.dedup-scope = cluster, docs/design-15.md 2.4): the run's
// new chunks are claimed in the shared chunk index in one ClaimMany, and a
// chunk whose claim another gateway slot won is mapped to the winner's
// container instead of our copy (ChunkIndex::ClaimNew; the protocol is in
// index/chunk_claims.h). It runs before any mapping naming the chunks is
// logged, so every logged mapping names the container the shared entry
// names (or, after a lost flip, our own committed copy: still valid).
//
// Runs after the fingerprint locks of step 4 are released (a lost claim may
// wait up to the claim hold for the winner's container; that stalls this
// run only).
//
// Our copies that end up unused (the claim was lost, or a second copy of a
// fingerprint within the run) are marked dead in this slot's chunk store at
// once (ChunkStore::MarkDead; persisted by the next GC round before it acts,
// core/engine/cluster_gc_rules.h). Why that is safe: such a copy is named by
// no mapping and no index entry, and never will be. Mappings are logged only
// after this step (step 5), and every chunk of the run naming the copy is
// rewritten here first; the auxiliary index gets only copies whose claim
// this slot won or took over (ChunkIndex::ClaimNew), so no later run of this
// process finds it; the shared entry names the winner's container, so no
// other slot finds it; cluster scope has no container-cache filter. A copy
// whose claim we took over (TakeOver) is the entry's container: live. A
// flip lost later (write-back) marks nothing: our mappings name that copy.
#pragma once

#include <cstddef>
#include <vector>

#include "core/base/status.h"
#include "filters/filter.h"
#include "index/chunk_claims.h"

namespace dedupv1 {

class ChunkIndex;
class ChunkStore;

// |stored|: indices into |chunks| of the chunks this run stored (their
// container is this slot's). Rewrites the container of every chunk of the
// run that names our copy of a lost claim and marks those copies dead in
// |store|. |ticket| gets the claim journal's record of the claims (also on
// an error after it was written).
Status ClaimNewChunks(ChunkIndex* index, ChunkStore* store, const std::vector<size_t>& stored,
                      std::vector<ChunkRequest>* chunks, ClaimTicket* ticket);

// A run's claim journal ticket (index/chunk_claims.h), handed back to the
// chunk index exactly once: Release(true) after every block mapping of the
// run is logged; any other end of the run (an error, or the destructor
// without a Release) hands it back as not referenced, so its fingerprints
// get GC hints before the record goes. Without an index it does nothing.
class RunClaims {
 public:
  explicit RunClaims(ChunkIndex* index) : index_(index) {}
  ~RunClaims() { Release(false); }
  RunClaims(const RunClaims&) = delete;
  RunClaims& operator=(const RunClaims&) = delete;

  ClaimTicket* ticket() { return &ticket_; }
  void Release(bool referenced);

 private:
  ChunkIndex* const index_;
  ClaimTicket ticket_;
  bool released_ = false;
};

}  // namespace dedupv1

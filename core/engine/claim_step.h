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
#pragma once

#include <cstddef>
#include <vector>

#include "core/base/status.h"
#include "filters/filter.h"

namespace dedupv1 {

class ChunkIndex;

// |stored|: indices into |chunks| of the chunks this run stored (their
// container is this slot's). Rewrites the container of every chunk of the
// run that names our copy of a lost claim.
Status ClaimNewChunks(ChunkIndex* index, const std::vector<size_t>& stored, std::vector<ChunkRequest>* chunks);

}  // namespace dedupv1

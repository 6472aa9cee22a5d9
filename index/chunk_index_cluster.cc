// ChunkIndex in cluster scope (storage.rados.dedup-scope = cluster): the
// shared table of every gateway slot (index/chunk_claims.h,
// index/shared_table_view.h) behind the same facade. What differs from a
// slot's own table: new chunks are claimed before their mappings are
// logged (ClaimNew), write-back flips claims, and usage goes to this
// slot's keys of the shared table instead of the auxiliary entries.
#include <cerrno>
#include <ctime>
#include <limits>

#include "index/chunk_index.h"
#include "index/shared_table_view.h"

namespace dedupv1 {

Status ChunkIndex::OpenShared(const ChunkIndexOptions& options, std::shared_ptr<ChunkClaims>* claims,
                              std::unique_ptr<ChunkTable>* table) {
  if (options.table_backend != "rados") {
    return Status::InvalidArgument("storage.rados.dedup-scope = cluster needs storage.backend = rados");
  }
  if (options.slot == 0) {
    return Status::InvalidArgument("storage.rados.dedup-scope = cluster needs a gateway slot (storage.rados.gateway)");
  }
  RadosSharedChunkTableOptions to;
  to.rados = options.rados;
  to.shards = options.rados_shards;
  to.key_size = options.table.key_size;
  to.slot = options.slot;
  to.incarnation = options.slot_incarnation;
  std::unique_ptr<ChunkClaims> opened;
  DEDUPV1_RETURN_IF_ERROR(ChunkClaims::Open(to, options.claims, &opened));
  *claims = std::move(opened);
  *table = std::make_unique<SharedTableView>(*claims);
  return Status::OK();
}

Status ChunkIndex::SharedTableExists(const ChunkIndexOptions& options, bool* exists) {
  std::shared_ptr<RadosCluster> cluster;
  DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(options.rados, &cluster));
  return cluster->IndexObjectExists(RadosSharedChunkTable::kHeaderObject, "look for the shared chunk index header",
                                    exists);
}

Status ChunkIndex::ClaimNew(const std::vector<ChunkClaims::NewChunk>& chunks, std::vector<ContainerId>* use,
                            ClaimTicket* ticket) {
  if (!claims_) return Status::InvalidArgument("chunk index: claims need cluster scope");
  std::vector<uint64_t> epochs;
  DEDUPV1_RETURN_IF_ERROR(claims_->Claim(chunks, use, &epochs, ticket));
  {
    // The skip policy's evidence: of the chunks taken as new without a
    // lookup, how many existed (their claims were lost).
    std::lock_guard<std::mutex> l(mu_);
    uint64_t claimed = 0, existed = 0;
    for (size_t i = 0; i < chunks.size(); i++) {
      if (skipped_.erase(chunks[i].fp) == 0) continue;
      claimed++;
      if ((*use)[i] != chunks[i].container) existed++;
    }
    skipped_that_existed_ += existed;
    if (claimed > 0) skip_->CountSkippedClaims(claimed, existed);
  }
  for (size_t i = 0; i < chunks.size(); i++) {
    // Only now, with the claim decided, may other runs of this process find
    // our copy: one found between store and claim could be a copy whose
    // claim is then lost, mapped although the table names another.
    if ((*use)[i] == chunks[i].container) {
      DEDUPV1_RETURN_IF_ERROR(PutNewEntry(chunks[i].fp, chunks[i].container, epochs[i]));
    }
  }
  return Status::OK();
}

void ChunkIndex::ReleaseClaims(ClaimTicket ticket, bool referenced) {
  if (claims_) claims_->ReleaseClaims(std::move(ticket), referenced);
}

uint64_t ChunkIndex::ClaimsReleased() const { return claims_ ? claims_->ClaimsReleased() : 0; }

Status ChunkIndex::RetireClaims(uint64_t up_to) { return claims_ ? claims_->RetireClaims(up_to) : Status::OK(); }

void ChunkIndex::SetGcEpoch(uint64_t epoch) {
  if (!claims_) return;
  claims_->SetEpoch(epoch);
  std::lock_guard<std::mutex> l(mu_);
  prefetch_.clear();
}

bool ChunkIndex::StaleClaimLocked(const AuxEntry& e) const {
  // GC marks only C entries dead, and only once their epoch is two behind
  // its round's (a flip never lowers a claim's epoch). A claim whose
  // container is not committed is still U (nobody can flip it: the
  // container does not exist yet), so it is trusted (a checkpoint commits
  // every open container before its slot publishes a safe epoch, so such an
  // entry is committed by then and this rule applies). Otherwise a claim at
  // least the slot's epoch - 1 old: a mark of it needs a round epoch of at
  // least claim + 2 >= the slot's epoch + 1, whose sighting every run tagged
  // now precedes, so the leader waits until this run's references are
  // counted (core/engine/cluster_gc.h). An older claim is read from the
  // table, where a D mark is seen (and revived).
  return claims_ != nullptr && !e.erased && e.entry.committed && e.claim_epoch + 1 < claims_->epoch();
}

Status ChunkIndex::AddUsageShared(const std::vector<UsageChange>& changes, std::vector<UsageOutcome>* outcomes) {
  std::vector<SharedUsageDelta> deltas;
  deltas.reserve(changes.size());
  for (const UsageChange& c : changes) deltas.push_back(SharedUsageDelta{c.fp, c.delta, c.event_id});
  std::vector<bool> applied;
  DEDUPV1_RETURN_IF_ERROR(claims_->AddUsage(deltas, &applied));
  outcomes->assign(changes.size(), UsageOutcome());
  for (size_t i = 0; i < changes.size(); i++) {
    (*outcomes)[i].applied = applied[i];
    // The chunk's total is the sum over every slot's key, not known here;
    // nonzero, so no fingerprint becomes a (local) GC candidate: in cluster
    // scope garbage is found by index GC over the sums of every slot
    // (design-15 2.6), which hands it to the owning slot's container GC
    // through its dead inbox (core/engine/cluster_gc_rules.h). A usage of a
    // missing entry is counted by ChunkClaims, not an error.
    (*outcomes)[i].usage = std::numeric_limits<uint32_t>::max();
  }
  return Status::OK();
}

}  // namespace dedupv1

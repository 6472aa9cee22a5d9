// ContainerAliases is the chunk store's map from the ids of containers that
// garbage collection merged to the container holding their chunks now, and
// the merge records behind it (ContainerCatalog's merge-record part).
//
// A merge records "target <- sources" in the catalog *before* the merged
// container is stored, and the sources are deleted only after; so at Load a
// record counts only if its target exists, and a source that still exists
// (a crash after the merged container was stored but before the sources were
// deleted) is deleted then: a container is never both superseded and used.
// Records of a target that is itself merged again are dropped once the later
// record (which lists all their ids too) is in place.
//
// Thread-safe for Resolve, AliasesOf and ForgetTarget; Load and
// the merge-record steps (BeginMerge .. FinishMerge, DropRecordsOf) are
// called one at a time (the chunk store's GC mutex).
#pragma once

#include <mutex>
#include <unordered_map>
#include <vector>

#include "chunkstore/container_catalog.h"
#include "chunkstore/container_store.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

class ContainerAliases {
 public:
  ContainerAliases(ContainerCatalog* catalog, ContainerStore* store) : catalog_(catalog), store_(store) {}

  // Reads the merge records and keeps those whose target is in |ids| (the
  // stored containers, sorted); deletes the sources that are still stored
  // and removes them from |ids|. Writes the records back if any was dropped,
  // and empty if the catalog has none yet (a store that never merged), so
  // that from then on their absence means they were lost
  // (ContainerCatalog::CheckComplete).
  Status Load(std::vector<ContainerId>* ids);

  // The container that holds |id|'s chunks now: |id| itself unless a merge
  // folded it into another container.
  ContainerId Resolve(ContainerId id) const;
  // The ids that answer to one of |sources| through earlier merges.
  std::vector<ContainerId> AliasesOf(const std::vector<ContainerId>& sources) const;

  // A merge of |sources| into |target|, which answers to |aliases| (the
  // sources and their own aliases), in three steps around storing and
  // deleting containers:
  // 1. Before |target| is stored: writes the records with the new one.
  Status BeginMerge(ContainerId target, const std::vector<ContainerId>& aliases);
  //    If storing |target| failed: writes the records back without it
  //    (best effort: a record whose target is missing is dropped at Load).
  void AbandonMerge();
  // 2. Once |target| is stored: the aliases resolve to it from now on.
  void CommitMerge();
  // 3. Once the sources are deleted: drops the records they were targets of
  //    (the new record covers their ids) and writes the rest.
  Status FinishMerge(const std::vector<ContainerId>& sources);

  // For a deleted container |id|: forgets the ids that resolved to it and
  // returns them.
  std::vector<ContainerId> ForgetTarget(ContainerId id);
  // Then drops the records whose target is |id| (written only if any was).
  Status DropRecordsOf(ContainerId id);

 private:
  ContainerCatalog* const catalog_;
  ContainerStore* const store_;
  mutable std::mutex mu_;
  std::unordered_map<ContainerId, ContainerId> alias_;  // old id -> merged container; under mu_
  std::vector<MergeRecord> records_;  // as in the catalog once a merge completes
  MergeRecord merging_;               // between BeginMerge and CommitMerge
};

}  // namespace dedupv1

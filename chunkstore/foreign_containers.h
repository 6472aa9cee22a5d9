// ForeignContainers tells a ChunkStore which container ids belong to another
// gateway slot of its store (cluster scope, docs/design-15.md 2.3). Ids are
// (slot << 48) + sequence, so an id is this slot's iff id >> 48 equals the
// slot of the store's id base.
//
// Why a foreign container counts as committed: a slot maps a foreign
// container only after it read its entry as C in the shared chunk index, or
// saw the object exist; containers are written whole (one write_full), so an
// existing one is durable. Reads of a foreign id go to the shared
// ContainerStore (RadosContainerStore::Get serves any id of the namespace).
//
// Merged containers: a slot's GC merges under-filled containers into a new
// one and deletes the sources, while other slots still map chunks by the
// sources' ids. Before the merged container is stored, the merging slot
// writes one foreign alias per id it answers to (PublishAliases,
// ContainerStore::PutAlias); a reader whose foreign id is NotFound follows
// the alias (FollowAlias, remembered here), at most kMaxHops times (a target
// merged again has an alias of its own; merges also rewrite the aliases of
// the ids a source answered to, so one hop is the rule). The merging slot's
// own reads keep using its catalog's merge records (ContainerAliases).
//
// Off until Enable (gateway scope and single-gateway stores: no mapping ever
// names another slot's container). Thread-safe.
#pragma once

#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

class ContainerStore;

class ForeignContainers {
 public:
  // |base|: the store's first id (its slot << 48; 0 without slots).
  explicit ForeignContainers(ContainerId base) : base_(base) {}

  // Cluster scope: ids of other slots are foreign from now on.
  void Enable() { enabled_.store(base_ != 0); }
  bool enabled() const { return enabled_.load(); }
  bool IsForeign(ContainerId id) const;

  // Whether container |id| (any slot's) exists in |store|, under its id or,
  // once merged, behind its foreign alias (followed as reads do, at most
  // kMaxHops): one small read, plus two per alias.
  static Status Exists(ContainerStore* store, ContainerId id, bool* exists);

  static constexpr int kMaxHops = 8;
  // Where to read foreign |id| now: the last target an alias led to, or |id|.
  ContainerId Resolve(ContainerId id) const;
  // Foreign |id| was NotFound at |at| (itself or a target): the alias of
  // |at| in |store| is |*next|, remembered as where |id| is. NotFound if
  // |at| has no alias.
  Status FollowAlias(ContainerStore* store, ContainerId id, ContainerId at, ContainerId* next);
  // A merge's aliases: every id of |from| answers to |to|, durably, before
  // |to| is stored.
  static Status PublishAliases(ContainerStore* store, const std::vector<ContainerId>& from, ContainerId to);

 private:
  // Remembered aliases at most; then forgotten and followed again.
  static constexpr size_t kMaxRemembered = 1 << 20;

  const ContainerId base_;
  std::atomic<bool> enabled_{false};
  mutable std::mutex mu_;
  std::unordered_map<ContainerId, ContainerId> followed_;  // foreign id -> target; under mu_
};

}  // namespace dedupv1

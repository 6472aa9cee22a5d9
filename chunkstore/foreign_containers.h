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
// Off until Enable (gateway scope and single-gateway stores: no mapping ever
// names another slot's container). Thread-safe.
#pragma once

#include <atomic>

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

  // Whether container |id| (any slot's) exists in |store|: one small read.
  static Status Exists(ContainerStore* store, ContainerId id, bool* exists);

 private:
  const ContainerId base_;
  std::atomic<bool> enabled_{false};
};

}  // namespace dedupv1

#include "chunkstore/foreign_containers.h"

#include <string>

#include "chunkstore/container_store.h"

namespace dedupv1 {

bool ForeignContainers::IsForeign(ContainerId id) const {
  if (!enabled_.load() || id == kNoContainer || id == kZeroContainer) return false;
  return (id >> 48) != (base_ >> 48);
}

Status ForeignContainers::Exists(ContainerStore* store, ContainerId id, bool* exists) {
  std::string head;
  Status s = store->GetHead(id, 1, &head);
  *exists = s.ok();
  return s.IsNotFound() ? Status::OK() : s;
}

}  // namespace dedupv1

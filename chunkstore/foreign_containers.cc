#include "chunkstore/foreign_containers.h"

#include <string>

#include "chunkstore/container_store.h"

namespace dedupv1 {

bool ForeignContainers::IsForeign(ContainerId id) const {
  if (!enabled_.load() || id == kNoContainer || id == kZeroContainer) return false;
  return (id >> 48) != (base_ >> 48);
}

// A merged container's chunks live on in the merge's result: its alias
// leads there (at most kMaxHops, as reads), so an unflipped claim naming a
// merged source is not mistaken for one whose container never appeared.
Status ForeignContainers::Exists(ContainerStore* store, ContainerId id, bool* exists) {
  *exists = false;
  ContainerId at = id;
  for (int hop = 0;; hop++) {
    std::string head;
    Status s = store->GetHead(at, 1, &head);
    if (s.ok()) {
      *exists = true;
      return Status::OK();
    }
    if (!s.IsNotFound()) return s;
    if (hop == kMaxHops) {
      return Status::Corruption("container " + std::to_string(id) + ": more than " + std::to_string(kMaxHops) +
                                " foreign aliases to follow");
    }
    ContainerId next = kNoContainer;
    Status a = store->GetAlias(at, &next);
    if (a.IsNotFound()) return Status::OK();
    DEDUPV1_RETURN_IF_ERROR(a);
    if (next == at) return Status::Corruption("foreign alias of container " + std::to_string(at) + " names itself");
    at = next;
  }
}

ContainerId ForeignContainers::Resolve(ContainerId id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = followed_.find(id);
  return it == followed_.end() ? id : it->second;
}

Status ForeignContainers::FollowAlias(ContainerStore* store, ContainerId id, ContainerId at, ContainerId* next) {
  DEDUPV1_RETURN_IF_ERROR(store->GetAlias(at, next));
  if (*next == at) return Status::Corruption("foreign alias of container " + std::to_string(at) + " names itself");
  std::lock_guard<std::mutex> l(mu_);
  if (followed_.size() >= kMaxRemembered) followed_.clear();
  followed_[id] = *next;
  return Status::OK();
}

Status ForeignContainers::PublishAliases(ContainerStore* store, const std::vector<ContainerId>& from, ContainerId to) {
  for (ContainerId id : from) {
    Status s = store->PutAlias(id, to);
    if (!s.ok()) return s.WithContext("publish the alias of merged container " + std::to_string(id));
  }
  return Status::OK();
}

}  // namespace dedupv1

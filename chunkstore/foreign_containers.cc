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

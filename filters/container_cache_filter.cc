#include "filters/container_cache_filter.h"

namespace dedupv1 {

FilterResult ContainerCacheFilter::Check(ChunkRequest* chunk, Status* error) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = by_fp_.find(chunk->fp);
  if (it == by_fp_.end()) return FilterResult::kWeakMaybe;
  chunk->container = it->second;
  auto c = by_container_.find(it->second);
  if (c != by_container_.end()) lru_.splice(lru_.begin(), lru_, c->second);
  return FilterResult::kStrongMaybe;
}

bool ContainerCacheFilter::Settles(const ChunkRequest& chunk) const {
  std::lock_guard<std::mutex> l(mu_);
  return by_fp_.count(chunk.fp) > 0;
}

Status ContainerCacheFilter::UpdateKnown(const ChunkRequest& chunk) {
  if (chunk.container == kNoContainer || chunk.container == kZeroContainer) return Status::OK();
  // Loading a list costs about as much as a few hundred in-memory index
  // lookups; it pays off only against lookups that go to the disk.
  if (!chunk.found_on_disk) return Status::OK();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (by_container_.count(chunk.container) > 0) return Status::OK();
  }
  // Loaded outside the lock: a container read may touch the disk.
  std::vector<Fingerprint> fps;
  Status s = store_->GetFingerprints(chunk.container, &fps);
  if (!s.ok()) return Status::OK();  // only an optimisation: never fail a write for it
  std::lock_guard<std::mutex> l(mu_);
  if (by_container_.count(chunk.container) > 0) return Status::OK();
  InsertLocked(chunk.container, std::move(fps));
  loads_++;
  return Status::OK();
}

void ContainerCacheFilter::InsertLocked(ContainerId id, std::vector<Fingerprint> fps) {
  while (lru_.size() >= max_containers_ && !lru_.empty()) {
    auto& victim = lru_.back();
    for (const auto& fp : victim.second) {
      auto f = by_fp_.find(fp);
      if (f != by_fp_.end() && f->second == victim.first) by_fp_.erase(f);
    }
    by_container_.erase(victim.first);
    lru_.pop_back();
  }
  if (max_containers_ == 0) return;
  lru_.emplace_front(id, std::move(fps));
  by_container_[id] = lru_.begin();
  for (const auto& fp : lru_.front().second) by_fp_[fp] = id;
}

void ContainerCacheFilter::Clear() {
  std::lock_guard<std::mutex> l(mu_);
  lru_.clear();
  by_container_.clear();
  by_fp_.clear();
}

size_t ContainerCacheFilter::cached_containers() const {
  std::lock_guard<std::mutex> l(mu_);
  return lru_.size();
}

}  // namespace dedupv1

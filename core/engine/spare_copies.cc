#include "core/engine/spare_copies.h"

#include "chunkstore/chunk_store.h"

namespace dedupv1 {

void SpareCopies::Add(ContainerId container, const Fingerprint& fp, size_t bytes) {
  std::lock_guard<std::mutex> l(mu_);
  auto [it, inserted] = copies_[container].emplace(fp, State{bytes, false});
  if (inserted) count_++;
}

bool SpareCopies::empty() const {
  std::lock_guard<std::mutex> l(mu_);
  return count_ == 0;
}

size_t SpareCopies::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return count_;
}

void SpareCopies::NoteMapping(const BlockMapping& mapping) {
  std::lock_guard<std::mutex> l(mu_);
  if (count_ == 0) return;
  for (const BlockMappingItem& item : mapping.items()) {
    if (item.IsZero()) continue;
    auto c = copies_.find(store_->Resolve(item.container));
    if (c == copies_.end()) continue;
    auto copy = c->second.find(item.fp);
    if (copy != c->second.end()) copy->second.referenced = true;
  }
}

std::vector<SpareCopies::Copy> SpareCopies::Unreferenced() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Copy> out;
  for (const auto& [container, fps] : copies_) {
    for (const auto& [fp, state] : fps) {
      if (!state.referenced) out.push_back(Copy{container, fp, state.bytes});
    }
  }
  return out;
}

}  // namespace dedupv1

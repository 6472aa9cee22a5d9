#include "chunkstore/dead_chunk_marks.h"

#include <algorithm>
#include <cstdio>

namespace dedupv1 {

Status DeadChunkMarks::DropPart(const Status& why) {
  Status d = catalog_->DeleteDeadMarks();
  if (!d.ok()) return why.WithContext("cannot delete it either (" + d.ToString() + ")");
  std::fprintf(stderr,
               "dedupv1: %s; deleted it (local scope: GC finds the garbage it listed again; cluster scope: "
               "those chunks leak)\n",
               why.ToString().c_str());
  // The marks still in memory are written whole by the next Persist.
  needs_rewrite_ = true;
  return Status::OK();
}

Status DeadChunkMarks::Load(const std::vector<ContainerId>& committed,
                            const std::function<bool(ContainerId)>& merged) {
  DeadMarks marks;
  bool intact = true;
  Status r = catalog_->ReadDeadMarks(&marks, &intact);
  if (!r.ok()) return DropPart(r);
  bool dropped = false;
  DeadMarks kept;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [id, fps] : marks) {
      // Only a container that exists under its own id: the marks of a merge
      // source describe the source, not the container answering to its id.
      if (!std::binary_search(committed.begin(), committed.end(), id) || merged(id)) {
        dropped = true;
        continue;
      }
      auto& set = dead_[id];
      for (const Fingerprint& fp : fps) {
        if (set.insert(fp).second) loaded_++;
      }
    }
    marks_ = loaded_;  // dead_ was empty before
    containers_ = dead_.size();
    if (intact && !dropped) return Status::OK();
    for (const auto& [id, fps] : dead_) kept[id].assign(fps.begin(), fps.end());
  }
  if (!intact) {
    std::fprintf(stderr, "dedupv1: %s ends in a torn record; the marks after it are found again by GC\n",
                 catalog_->Where(CatalogPart::kDeadMarks).c_str());
  }
  Status w = catalog_->RewriteDeadMarks(kept);
  return w.ok() ? w : DropPart(w);
}

void DeadChunkMarks::Mark(ContainerId holder, const std::vector<Fingerprint>& fps) {
  std::lock_guard<std::mutex> l(mu_);
  auto& set = dead_[holder];
  auto& unpersisted = unpersisted_[holder];
  for (const Fingerprint& fp : fps) {
    if (set.insert(fp).second) {
      unpersisted.push_back(fp);
      marks_++;
    }
  }
  containers_ = dead_.size();
}

bool DeadChunkMarks::Unmark(ContainerId holder, const Fingerprint& fp) {
  std::lock_guard<std::mutex> l(mu_);
  auto dead = dead_.find(holder);
  if (dead == dead_.end() || dead->second.erase(fp) == 0) return false;
  marks_--;
  if (dead->second.empty()) dead_.erase(dead);
  containers_ = dead_.size();
  auto pending = unpersisted_.find(holder);
  if (pending != unpersisted_.end()) {
    auto& fps = pending->second;
    fps.erase(std::remove(fps.begin(), fps.end(), fp), fps.end());
  }
  unmarked_ = true;
  return true;
}

void DeadChunkMarks::Forget(ContainerId id) {
  std::lock_guard<std::mutex> l(mu_);
  auto dead = dead_.find(id);
  if (dead != dead_.end()) {
    marks_ -= dead->second.size();
    dead_.erase(dead);
  }
  unpersisted_.erase(id);
  containers_ = dead_.size();
}

DeadMarks DeadChunkMarks::PersistedSnapshot() const {
  DeadMarks all;
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [id, fps] : dead_) {
    auto& out = all[id];
    for (const Fingerprint& fp : fps) out.push_back(fp);
  }
  // Marks still pending (made after Persist took its copy) wait for their call.
  for (const auto& [id, fps] : unpersisted_) {
    auto& out = all[id];
    for (const Fingerprint& fp : fps) out.erase(std::remove(out.begin(), out.end(), fp), out.end());
  }
  return all;
}

Status DeadChunkMarks::Persist() {
  DeadMarks marks;
  uint64_t live_marks = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [id, fps] : unpersisted_) {
      // A container merged or deleted since has no marks left to keep.
      if (dead_.count(id) != 0 && !fps.empty()) marks[id] = std::move(fps);
    }
    unpersisted_.clear();
    for (const auto& [_, fps] : dead_) live_marks += fps.size();
    // A removed mark is still persisted: only a rewrite drops it.
    if (unmarked_) needs_rewrite_ = true;
    unmarked_ = false;
  }
  if (marks.empty() && !needs_rewrite_) return Status::OK();
  // Rewritten when the part is mostly marks of merged or deleted containers
  // (each record carries 20 bytes besides its marks).
  const uint64_t live_size = live_marks * catalog_->DeadMarkSize();
  const bool rewrite = needs_rewrite_ || catalog_->DeadMarkBytes() > 2 * live_size + (64 << 10);
  Status s = rewrite ? catalog_->RewriteDeadMarks(PersistedSnapshot()) : catalog_->AppendDeadMarks(marks);
  if (s.ok()) {
    needs_rewrite_ = false;
    return Status::OK();
  }
  // A failed append may have left a torn record, a failed rewrite a part
  // whose size is not known: the next call rewrites.
  needs_rewrite_ = true;
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [id, fps] : marks) {
    auto& pending = unpersisted_[id];
    pending.insert(pending.end(), fps.begin(), fps.end());
  }
  return s;
}

std::vector<ContainerId> DeadChunkMarks::Containers() const {
  std::vector<ContainerId> ids;
  {
    std::lock_guard<std::mutex> l(mu_);
    ids.reserve(dead_.size());
    for (const auto& [id, fps] : dead_) {
      if (!fps.empty()) ids.push_back(id);
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

uint64_t DeadChunkMarks::marked() const {
  std::lock_guard<std::mutex> l(mu_);
  return marks_;
}

uint64_t DeadChunkMarks::unpersisted() const {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t n = 0;
  for (const auto& [id, fps] : unpersisted_) {  // few: the marks since the last persist
    if (dead_.count(id) != 0) n += fps.size();
  }
  return n;
}

uint64_t DeadChunkMarks::loaded() const {
  std::lock_guard<std::mutex> l(mu_);
  return loaded_;
}

}  // namespace dedupv1

#include "chunkstore/container_aliases.h"

#include <algorithm>
#include <unordered_set>

namespace dedupv1 {

Status ContainerAliases::Load(std::vector<ContainerId>* ids) {
  if (!catalog_->Exists(CatalogPart::kMergeRecords)) return catalog_->WriteMergeRecords({});
  std::vector<MergeRecord> records;
  DEDUPV1_RETURN_IF_ERROR(catalog_->ReadMergeRecords(&records));
  std::sort(records.begin(), records.end(),
            [](const MergeRecord& a, const MergeRecord& b) { return a.target < b.target; });
  // A record counts only if its merged container was committed; later
  // merges override earlier ones (a merged container merged again).
  std::vector<MergeRecord> kept;
  std::unordered_set<ContainerId> superseded;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& r : records) {
      if (!std::binary_search(ids->begin(), ids->end(), r.target)) continue;
      for (ContainerId src : r.sources) {
        alias_[src] = r.target;
        superseded.insert(src);
      }
      kept.push_back(std::move(r));
    }
  }
  // Sources still stored: the merge committed but did not finish deleting.
  std::vector<ContainerId> live;
  for (ContainerId id : *ids) {
    if (superseded.count(id) == 0) {
      live.push_back(id);
      continue;
    }
    Status s = store_->Delete(id);
    if (!s.ok() && !s.IsNotFound()) return s.WithContext("delete superseded container " + std::to_string(id));
  }
  *ids = std::move(live);
  // Drop records that name a target that is itself superseded (a later merge
  // covers all its ids) or that never committed.
  std::vector<MergeRecord> pruned;
  for (auto& r : kept) {
    if (superseded.count(r.target) == 0) pruned.push_back(std::move(r));
  }
  const bool changed = pruned.size() != records.size();
  records_ = std::move(pruned);
  if (changed) DEDUPV1_RETURN_IF_ERROR(catalog_->WriteMergeRecords(records_));
  return Status::OK();
}

ContainerId ContainerAliases::Resolve(ContainerId id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = alias_.find(id);
  return it == alias_.end() ? id : it->second;
}

std::vector<ContainerId> ContainerAliases::AliasesOf(const std::vector<ContainerId>& sources) const {
  std::vector<ContainerId> out;
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [old_id, target] : alias_) {
    if (std::find(sources.begin(), sources.end(), target) != sources.end()) out.push_back(old_id);
  }
  return out;
}

Status ContainerAliases::BeginMerge(ContainerId target, const std::vector<ContainerId>& aliases) {
  merging_ = MergeRecord{target, aliases};
  std::vector<MergeRecord> records = records_;
  records.push_back(merging_);
  return catalog_->WriteMergeRecords(records);
}

void ContainerAliases::AbandonMerge() {
  merging_ = MergeRecord();
  (void)catalog_->WriteMergeRecords(records_);
}

void ContainerAliases::CommitMerge() {
  // The record is in the catalog: later writes must keep it even if
  // deleting a source fails.
  records_.push_back(merging_);
  std::lock_guard<std::mutex> l(mu_);
  for (ContainerId a : merging_.sources) alias_[a] = merging_.target;
  merging_ = MergeRecord();
}

Status ContainerAliases::FinishMerge(const std::vector<ContainerId>& sources) {
  std::vector<MergeRecord> pruned;
  for (auto& r : records_) {
    if (std::find(sources.begin(), sources.end(), r.target) == sources.end()) pruned.push_back(std::move(r));
  }
  records_ = std::move(pruned);
  return catalog_->WriteMergeRecords(records_);
}

std::vector<ContainerId> ContainerAliases::ForgetTarget(ContainerId id) {
  std::vector<ContainerId> forgotten;
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = alias_.begin(); it != alias_.end();) {
    if (it->second == id) {
      forgotten.push_back(it->first);
      it = alias_.erase(it);
    } else {
      ++it;
    }
  }
  return forgotten;
}

Status ContainerAliases::DropRecordsOf(ContainerId id) {
  const size_t before = records_.size();
  records_.erase(std::remove_if(records_.begin(), records_.end(),
                                [id](const MergeRecord& r) { return r.target == id; }),
                 records_.end());
  if (records_.size() == before) return Status::OK();
  return catalog_->WriteMergeRecords(records_);
}

}  // namespace dedupv1

// ChunkStore's merging and deleting of containers for garbage collection.
// A merge copies the live chunks of under-filled containers into a new one
// that answers to their ids; the order of its steps (merge record, new
// container, alias switch, deletion of the sources) is what keeps a crash at
// any point safe (chunkstore/container_aliases.h).
#include "chunkstore/chunk_store.h"

#include <algorithm>

namespace dedupv1 {
namespace {

std::string Name(ContainerId id) { return "container " + std::to_string(id); }

}  // namespace

void ChunkStore::ForgetContainer(ContainerId id) {
  dead_marks_.Forget(id);
  summaries_.Forget(id);
}

bool ChunkStore::BuildMerged(const std::vector<ContainerId>& sources,
                             const std::vector<std::shared_ptr<const Container>>& loaded,
                             const std::vector<ContainerId>& aliases, Container* merged, Status* error) {
  if (!merged->SetAliases(aliases)) return false;
  for (size_t i = 0; i < sources.size(); i++) {
    FingerprintSet dead;
    dead_marks_.WithMarksOf(sources[i], [&dead](const FingerprintSet* marks) {
      if (marks != nullptr) dead = *marks;
    });
    for (const Fingerprint& fp : loaded[i]->Fingerprints()) {
      if (dead.count(fp) != 0) continue;
      std::string data;
      *error = loaded[i]->ReadChunk(fp, &data);
      if (!error->ok()) return false;
      if (!merged->Add(fp, reinterpret_cast<const uint8_t*>(data.data()), data.size(), options_.compression)) {
        return false;
      }
    }
  }
  return true;
}

Status ChunkStore::MergeContainers(const std::vector<ContainerId>& sources, ContainerId* result) {
  std::lock_guard<std::mutex> gc(gc_mu_);
  if (sources.empty()) return Status::InvalidArgument("chunk store: nothing to merge");
  std::vector<std::shared_ptr<const Container>> loaded;
  for (ContainerId src : sources) {
    std::shared_ptr<const Container> c;
    DEDUPV1_RETURN_IF_ERROR(LoadCommitted(src, &c));
    if (c->id() != src) {
      return Status::InvalidArgument("chunk store: " + Name(src) + " was merged into " + Name(c->id()));
    }
    loaded.push_back(std::move(c));
  }
  ContainerId new_id;
  {
    std::lock_guard<std::mutex> l(mu_);
    DEDUPV1_RETURN_IF_ERROR(ids_.Allocate(&new_id));
  }
  std::vector<ContainerId> aliases = aliases_.AliasesOf(sources);
  aliases.insert(aliases.end(), sources.begin(), sources.end());
  std::sort(aliases.begin(), aliases.end());
  Container merged(new_id, options_.container_size, options_.fp_type);
  Status error;
  if (!BuildMerged(sources, loaded, aliases, &merged, &error)) {
    DEDUPV1_RETURN_IF_ERROR(error);
    *result = kNoContainer;  // does not fit: nothing changed
    return Status::OK();
  }
  std::string bytes;
  DEDUPV1_RETURN_IF_ERROR(merged.Serialize(&bytes));
  // 1. The merge record, before the merged container exists: if the Put
  // never completes, Open drops the record because its target is missing.
  DEDUPV1_RETURN_IF_ERROR(aliases_.BeginMerge(new_id, aliases));
  // 1b. Cluster scope: other slots read the sources by id; they find the
  // merged container through the foreign aliases, written before it exists
  // (while the sources are there, readers never look at them).
  if (foreign_.enabled()) {
    Status a = ForeignContainers::PublishAliases(store_.get(), aliases, new_id);
    if (!a.ok()) {
      aliases_.AbandonMerge();
      return a;
    }
  }
  // 2. The merged container, durably.
  Status s = store_->PutNew(new_id, bytes);  // a fresh id: never replaces another's container
  if (!s.ok()) {
    aliases_.AbandonMerge();
    return s.WithContext("commit merged " + Name(new_id));
  }
  summaries_.Record(new_id, SummarizeContainer(merged));
  // 3. Reads of the old ids go to the merged container from now on.
  aliases_.CommitMerge();
  for (ContainerId src : sources) ForgetContainer(src);
  read_cache_.Insert(new_id, std::shared_ptr<const Container>(new Container(std::move(merged))));
  // 4. The sources. A crash before this finishes is cleaned up by Open.
  for (ContainerId src : sources) {
    read_cache_.Erase(src);
    metadata_cache_.Erase(src);
    Status d = store_->Delete(src);
    if (!d.ok() && !d.IsNotFound()) return d.WithContext("delete merged " + Name(src));
  }
  DEDUPV1_RETURN_IF_ERROR(aliases_.FinishMerge(sources));
  *result = new_id;
  return Status::OK();
}

Status ChunkStore::DeleteContainer(ContainerId requested) {
  std::lock_guard<std::mutex> gc(gc_mu_);
  const ContainerId id = aliases_.Resolve(requested);
  Status s = store_->Delete(id);
  if (!s.ok()) return s.WithContext("delete " + Name(id));
  read_cache_.Erase(id);
  metadata_cache_.Erase(id);
  std::vector<ContainerId> forgotten;
  {
    std::lock_guard<std::mutex> l(mu_);
    deleted_.insert(id);
    forgotten = aliases_.ForgetTarget(id);
    for (ContainerId alias : forgotten) deleted_.insert(alias);
  }
  ForgetContainer(id);
  DEDUPV1_RETURN_IF_ERROR(aliases_.DropRecordsOf(id));
  // Nothing live was in it, so no reader needs its foreign aliases.
  if (foreign_.enabled()) {
    for (ContainerId alias : forgotten) DEDUPV1_RETURN_IF_ERROR(store_->DeleteAlias(alias));
  }
  return Status::OK();
}

}  // namespace dedupv1

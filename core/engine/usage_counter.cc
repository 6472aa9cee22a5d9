#include "core/engine/usage_counter.h"

#include <map>
#include <unordered_set>

#include "index/block_mapping.h"
#include "log/log_event.h"

namespace dedupv1 {
namespace {

// The same for a serialized mapping; empty input: no mapping.
Status ReferencedChunks(const std::string& serialized, const BlockId& id,
                        std::map<Fingerprint, ContainerId>* out) {
  out->clear();
  if (serialized.empty()) return Status::OK();
  BlockMapping mapping;
  DEDUPV1_RETURN_IF_ERROR(BlockMapping::Parse(serialized, id, &mapping));
  ReferencedChunks(mapping, out);
  return Status::OK();
}

}  // namespace

void ReferencedChunks(const BlockMapping& mapping, std::map<Fingerprint, ContainerId>* out) {
  out->clear();
  for (const BlockMappingItem& item : mapping.items()) {
    if (item.IsZero()) continue;
    out->emplace(item.fp, item.container);
  }
}

bool AllContainersCommitted(const BlockMapping& mapping, const ChunkStore& store) {
  for (const BlockMappingItem& item : mapping.items()) {
    if (!item.IsZero() && !store.IsCommitted(item.container)) return false;
  }
  return true;
}

UsageCounter::UsageCounter(OperationsLog* log, ChunkIndex* index, ChunkStore* store, uint64_t first_uncounted)
    : log_(log), index_(index), store_(store), applied_id_(first_uncounted == 0 ? 0 : first_uncounted - 1) {}

Status UsageCounter::CountUpTo(uint64_t up_to) {
  std::lock_guard<std::mutex> r(replay_mu_);
  uint64_t from;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (up_to <= applied_id_) return Status::OK();
    from = applied_id_ + 1;
  }
  if (log_->last_id() < log_->head_id() || from > log_->last_id()) {
    std::lock_guard<std::mutex> l(mu_);
    applied_id_ = std::max(applied_id_, std::min(up_to, log_->last_id()));
    return Status::OK();
  }
  // Events are counted in batches of changes (one AddUsageMany each, so the
  // entries a remote table holds load in one round trip per shard). A
  // batch's events count as applied once the batch is; collecting an event
  // also changes dropped_, which a failed batch puts back as it was, so the
  // retry collects the same changes again.
  Batch batch;
  std::unordered_map<BlockId, std::string, BlockIdHasher> dropped_before;
  {
    std::lock_guard<std::mutex> l(mu_);
    dropped_before = dropped_;
  }
  auto apply = [&]() -> Status {
    DEDUPV1_RETURN_IF_ERROR(ApplyBatch(batch));
    std::lock_guard<std::mutex> l(mu_);
    applied_id_ = std::max(applied_id_, batch.last_id);
    stats_.events_counted += batch.events_counted;
    stats_.events_dropped += batch.events_dropped;
    dropped_before = dropped_;
    batch = Batch();
    return Status::OK();
  };
  Status s = log_->Replay(from, [&](const LogEvent& e) -> Status {
    if (e.id > up_to) return Status::OK();
    if (e.type == LogEventType::kBlockMappingWritten || e.type == LogEventType::kBlockMappingDeleted) {
      DEDUPV1_RETURN_IF_ERROR(CollectEvent(e, &batch));
    }
    batch.last_id = e.id;
    if (batch.changes.size() >= kBatchChanges) return apply();
    return Status::OK();
  });
  if (s.ok()) s = apply();
  if (!s.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    dropped_ = std::move(dropped_before);
    return s.WithContext("count block-mapping events into usage counts");
  }
  std::lock_guard<std::mutex> l(mu_);
  applied_id_ = std::max(applied_id_, up_to);
  stats_.applied_id = applied_id_;
  return Status::OK();
}

void UsageCounter::WatchSpareCopies(SpareCopies* copies) {
  std::lock_guard<std::mutex> l(mu_);
  spare_copies_ = copies;
}

Status UsageCounter::CollectEvent(const LogEvent& e, Batch* batch) {
  BlockMappingWrittenData data;  // a deletion: no new mapping
  if (e.type == LogEventType::kBlockMappingDeleted) {
    BlockMappingDeletedData deleted;
    DEDUPV1_RETURN_IF_ERROR(BlockMappingDeletedData::Decode(e.payload, &deleted));
    data.block = deleted.block;
    data.old_mapping = std::move(deleted.old_mapping);
  } else {
    DEDUPV1_RETURN_IF_ERROR(BlockMappingWrittenData::Decode(e.payload, &data));
  }
  const BlockId& block = data.block;
  BlockMapping new_mapping;
  if (!data.new_mapping.empty()) DEDUPV1_RETURN_IF_ERROR(BlockMapping::Parse(data.new_mapping, block, &new_mapping));
  {
    std::lock_guard<std::mutex> l(mu_);
    if (spare_copies_ != nullptr) spare_copies_->NoteMapping(new_mapping);
  }
  if (!AllContainersCommitted(new_mapping, *store_)) {
    // Recover drops this mapping: the block keeps what it had.
    std::lock_guard<std::mutex> l(mu_);
    dropped_.emplace(block, data.old_mapping);  // an earlier drop's mapping stays
    batch->events_dropped++;
    return Status::OK();
  }
  std::map<Fingerprint, ContainerId> now;
  ReferencedChunks(new_mapping, &now);
  std::string old_serialized;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = dropped_.find(block);
    if (it != dropped_.end()) {
      old_serialized = std::move(it->second);
      dropped_.erase(it);
    } else {
      old_serialized = std::move(data.old_mapping);
    }
  }
  std::map<Fingerprint, ContainerId> before;
  DEDUPV1_RETURN_IF_ERROR(ReferencedChunks(old_serialized, block, &before));

  std::map<Fingerprint, std::pair<int64_t, ContainerId>> deltas;
  for (const auto& [fp, c] : now) deltas[fp] = {1, c};
  for (const auto& [fp, c] : before) {
    auto& d = deltas[fp];
    d.first -= 1;
    if (d.second == kNoContainer) {
      d.second = c;
    } else if (d.second != c && store_->Resolve(d.second) != store_->Resolve(c)) {  // ids equal: one copy, no lock
      batch->moved_away.push_back(store_->Resolve(c));  // same chunk, the block now names another copy
    }
  }
  for (const auto& [fp, d] : deltas) {
    if (d.first == 0) continue;
    // An increment names the copy of the chunk the mapping uses (committed,
    // see above): an entry waiting for a newer copy's container moves to it.
    const ContainerId copy = d.first > 0 ? d.second : kNoContainer;
    batch->changes.push_back(ChunkIndex::UsageChange{fp, d.first, e.id, copy});
    batch->released.push_back(d.first < 0 ? d.second : kNoContainer);
  }
  batch->events_counted++;
  return Status::OK();
}

Status UsageCounter::ApplyBatch(const Batch& batch) {
  if (!batch.moved_away.empty()) {
    std::lock_guard<std::mutex> l(mu_);
    for (ContainerId id : batch.moved_away) QueueReleasedLocked(id);
  }
  if (batch.changes.empty()) return Status::OK();
  std::vector<ChunkIndex::UsageOutcome> outcomes;
  DEDUPV1_RETURN_IF_ERROR(index_->AddUsageMany(batch.changes, &outcomes));
  // Fingerprints whose entry a retry below re-created: their later changes
  // must reach it even where the batch found no entry.
  std::unordered_set<Fingerprint, FingerprintHasher> restored;
  for (size_t i = 0; i < batch.changes.size(); i++) {
    const ChunkIndex::UsageChange& c = batch.changes[i];
    ChunkIndex::UsageOutcome& o = outcomes[i];
    if (o.status.IsNotFound()) {
      if (o.no_entry && c.delta < 0 && restored.count(c.fp) == 0) {
        // A decrement of a chunk without an entry: AddUsage alone would
        // only read the table again to find none. The copy it let go of
        // is one no entry names: GC's scan judges it.
        std::lock_guard<std::mutex> l(mu_);
        stats_.missing_entries++;
        if (batch.released[i] != kNoContainer) QueueReleasedLocked(store_->Resolve(batch.released[i]));
        continue;
      }
      bool counted = false;
      bool was_restored = false;
      DEDUPV1_RETURN_IF_ERROR(ApplyAlone(c, &o, &counted, &was_restored));
      if (was_restored) restored.insert(c.fp);
      if (!counted) continue;
    } else {
      DEDUPV1_RETURN_IF_ERROR(o.status);
    }
    std::lock_guard<std::mutex> l(mu_);
    if (!o.applied) stats_.changes_skipped++;
    if (o.usage == 0) candidates_.insert(c.fp);
    NoteReleasedLocked(batch.released[i], o.entry_container);
  }
  return Status::OK();
}

void UsageCounter::NoteReleasedLocked(ContainerId released, ContainerId entry_container) {
  if (released == kNoContainer || entry_container == kNoContainer) return;
  const ContainerId copy = store_->Resolve(released);
  if (copy == store_->Resolve(entry_container)) return;  // the entry's own copy: candidates cover it
  QueueReleasedLocked(copy);
}

void UsageCounter::QueueReleasedLocked(ContainerId copy) {
  if (released_.insert(copy).second) stats_.copies_released++;
}

Status UsageCounter::ApplyAlone(const ChunkIndex::UsageChange& c, ChunkIndex::UsageOutcome* o, bool* counted,
                                bool* restored) {
  *counted = false;
  *restored = false;
  Status s = index_->AddUsageOne(c, o);
  if (s.IsNotFound() && c.delta > 0) {
    // The chunk's entry was erased by GC, yet a mapping references it again
    // (e.g. the container-cache filter found it in its container after a
    // restart, before the next GC round marked it dead). Re-create the
    // entry so the chunk is live again and not dropped from its container.
    // An increment's committed_copy is the container its mapping names.
    if (!store_->IsCommitted(c.committed_copy)) return Status::OK();
    DEDUPV1_RETURN_IF_ERROR(index_->PutNew(c.fp, c.committed_copy));
    // Live again: a dead mark for it must not make a merge drop it.
    store_->UnmarkIfDead(c.committed_copy, c.fp);
    // A writer may have stored the chunk again meanwhile (PutNew keeps its
    // entry): the copy moves that entry to committed_copy if it is
    // uncommitted.
    s = index_->AddUsageOne(c, o);
    *restored = true;
    std::lock_guard<std::mutex> l(mu_);
    stats_.entries_restored++;
  }
  if (s.IsNotFound()) {
    std::lock_guard<std::mutex> l(mu_);
    stats_.missing_entries++;
    return Status::OK();
  }
  DEDUPV1_RETURN_IF_ERROR(s);
  *counted = true;
  return Status::OK();
}

std::vector<ContainerId> UsageCounter::TakeReleasedCopies() {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<ContainerId> out(released_.begin(), released_.end());
  released_.clear();
  return out;
}

void UsageCounter::NoteCopyReplaced(ContainerId old) {
  std::lock_guard<std::mutex> l(mu_);
  QueueReleasedLocked(store_->Resolve(old));
}

size_t UsageCounter::released_count() const {
  std::lock_guard<std::mutex> l(mu_);
  return released_.size();
}

std::vector<Fingerprint> UsageCounter::TakeCandidates() {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Fingerprint> out(candidates_.begin(), candidates_.end());
  candidates_.clear();
  return out;
}

std::vector<Fingerprint> UsageCounter::Candidates() const {
  std::lock_guard<std::mutex> l(mu_);
  return std::vector<Fingerprint>(candidates_.begin(), candidates_.end());
}

void UsageCounter::AddCandidate(const Fingerprint& fp) {
  std::lock_guard<std::mutex> l(mu_);
  candidates_.insert(fp);
}

size_t UsageCounter::candidate_count() const {
  std::lock_guard<std::mutex> l(mu_);
  return candidates_.size();
}

UsageCounterStats UsageCounter::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  UsageCounterStats st = stats_;
  st.applied_id = applied_id_;
  return st;
}

}  // namespace dedupv1

#include "core/engine/cluster_gc_rules.h"

#include <map>

#include "chunkstore/chunk_store.h"

namespace dedupv1 {
namespace {

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ClusterGcRules::ClusterGcRules(ChunkStore* store, std::shared_ptr<RadosCluster> cluster, std::string slot_name,
                               std::chrono::seconds inbox_poll)
    : store_(store), inbox_(std::move(cluster)), slot_name_(std::move(slot_name)), inbox_poll_(inbox_poll) {}

Status ClusterGcRules::TakeDeadInbox(uint64_t* taken) {
  *taken = 0;
  inbox_read_at_ns_ = SteadyNowNs();
  // Every mark made so far (the claim step's) is persisted once even when
  // the inbox is empty: GC is about to act on them.
  DEDUPV1_RETURN_IF_ERROR(store_->PersistDeadMarks());
  std::string after;
  for (int page = 0; page < kMaxPages; page++) {
    std::vector<DeadChunk> chunks;
    std::string last;
    DEDUPV1_RETURN_IF_ERROR(inbox_.ReadPage(slot_name_, after, kPage, &chunks, &last));
    if (chunks.empty()) return Status::OK();
    std::map<ContainerId, std::vector<Fingerprint>> by_container;
    std::vector<std::string> keys;
    for (const DeadChunk& c : chunks) {
      // Index GC files a chunk with the slot whose container holds it; one
      // of another slot's is not ours to mark (its key goes all the same).
      if (!store_->IsForeign(c.container)) by_container[c.container].push_back(c.fp);
      keys.push_back(RadosDeadInbox::KeyOf(c));
    }
    for (const auto& [id, fps] : by_container) {
      store_->MarkDead(id, fps);
      *taken += fps.size();
    }
    DEDUPV1_RETURN_IF_ERROR(store_->PersistDeadMarks());
    DEDUPV1_RETURN_IF_ERROR(inbox_.Remove(slot_name_, keys));
    if (chunks.size() < kPage) return Status::OK();
    after = last;
  }
  return Status::OK();
}

std::vector<ContainerId> ClusterGcRules::ContainersWithGarbage() const { return store_->ContainersWithDeadMarks(); }

bool ClusterGcRules::HasWork() const {
  if (!ran_.load()) return true;
  if (store_->stats().dead_chunks_marked != marks_at_round_.load()) return true;
  return SteadyNowNs() - inbox_read_at_ns_.load() >=
         std::chrono::duration_cast<std::chrono::nanoseconds>(inbox_poll_).count();
}

void ClusterGcRules::RoundDone() {
  marks_at_round_ = store_->stats().dead_chunks_marked;
  ran_ = true;
}

}  // namespace dedupv1

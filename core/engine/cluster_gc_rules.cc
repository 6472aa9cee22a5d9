#include "core/engine/cluster_gc_rules.h"

#include <cstdio>
#include <map>

#include "chunkstore/chunk_store.h"

namespace dedupv1 {
namespace {

std::string HexOf(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void ClusterGcRules::WarnDropped(const char* what, const std::string& key, std::atomic<uint64_t>* counter) {
  counter->fetch_add(1);
  const Status why = Status::Corruption("dead chunk inbox " + inbox_.Where(slot_name_) + ": " + what + " " +
                                        HexOf(key) + ", removed without a mark (its chunk stays)");
  std::fprintf(stderr, "dedupv1: cluster GC: %s\n", why.ToString().c_str());
}

ClusterGcRules::ClusterGcRules(ChunkStore* store, std::shared_ptr<RadosCluster> cluster, std::string slot_name,
                               std::chrono::seconds inbox_poll)
    : store_(store), inbox_(std::move(cluster)), slot_name_(std::move(slot_name)), inbox_poll_(inbox_poll) {}

// Why a round's deletes and merges never drop a copy that a mapping names
// (docs/design-15.md 2.6). Marks come from the claim step (our copy of a
// lost claim) and from the dead inbox, both proven unreferenced when made;
// the one way back is the claim step's UnmarkIfDead: a run stores a chunk,
// Container::Add hands back a copy the container already holds (an earlier
// run's, marked after its claim was lost), the run wins the claim for it
// and unmarks it before logging a mapping. A round must not act on that
// mark before the unmark. So the round takes its snapshot (PersistDeadMarks
// and ContainersWithGarbage) under the GC barrier, exclusively:
//  - every run that stored into a container committed at the snapshot holds
//    the barrier shared from before its store until its mappings are logged
//    (write_pipeline.cc, steps 3-5), so it has unmarked (and persisted the
//    unmark) before the snapshot;
//  - a run starting after the snapshot cannot be handed a copy of such a
//    container: ChunkStore::StoreChunk adds to the open containers only
//    (open_ in chunk_store_append.cc; a container handed off to commit
//    never comes back), so its UnmarkIfDead only hits containers that were
//    open at the snapshot, which the snapshot left out (only committed ones).
// Merges read the marks again when they run, after the snapshot: a mark
// added meanwhile to a listed container could only come from a claim step
// of a run that lost its claim for a copy it stored there, which is safe
// (its copy is unreferenced, claim_step.h) and cannot even happen, since
// such runs finished before the snapshot. Marks of containers committed
// after the snapshot wait for the next round and its snapshot.
Status ClusterGcRules::TakeDeadInbox(InboxTaken* taken) {
  *taken = InboxTaken();
  inbox_read_at_ns_ = SteadyNowNs();
  // Every mark made so far (the claim step's) is persisted once even when
  // the inbox is empty: GC is about to act on them.
  DEDUPV1_RETURN_IF_ERROR(store_->PersistDeadMarks());
  std::string after;
  for (int page = 0; page < kMaxPages; page++) {
    std::vector<DeadChunk> chunks;
    std::vector<std::string> damaged;
    std::string last;
    DEDUPV1_RETURN_IF_ERROR(inbox_.ReadPage(slot_name_, after, kPage, &chunks, &last, &damaged));
    if (chunks.empty() && damaged.empty()) return Status::OK();
    std::map<ContainerId, std::vector<Fingerprint>> by_container;
    std::vector<std::string> keys = damaged;
    for (const std::string& key : damaged) WarnDropped("damaged key (checksum mismatch)", key, &damaged_);
    taken->damaged += damaged.size();
    for (const DeadChunk& c : chunks) {
      keys.push_back(RadosDeadInbox::KeyOf(c));
      // Index GC files a chunk with the slot whose container holds it; one
      // of another slot's is not ours to mark: its copy stays (a leak).
      if (store_->IsForeign(c.container)) {
        WarnDropped("key naming another slot's container", keys.back(), &foreign_);
        taken->foreign++;
        continue;
      }
      by_container[c.container].push_back(c.fp);
    }
    for (const auto& [id, fps] : by_container) {
      store_->MarkDead(id, fps);
      taken->marked += fps.size();
    }
    DEDUPV1_RETURN_IF_ERROR(store_->PersistDeadMarks());
    DEDUPV1_RETURN_IF_ERROR(inbox_.Remove(slot_name_, keys));
    if (chunks.size() + damaged.size() < kPage) return Status::OK();
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

// ChunkStore's support for garbage collection (core/engine/garbage_collector.h):
// resolving merged ids, GC's dead-chunk marks (chunkstore/dead_chunk_marks.h),
// per-chunk footprints and container summaries
// (chunkstore/container_summaries.h). Merging and deleting containers is in
// chunk_store_merge.cc.
#include "chunkstore/chunk_store.h"

#include <algorithm>

namespace dedupv1 {

ContainerId ChunkStore::Resolve(ContainerId id) const { return aliases_.Resolve(id); }

ContainerId ChunkStore::ResolveEntry(ContainerId id, const Fingerprint& fp, bool* unmarked) {
  const ContainerId holder = aliases_.Resolve(id);
  *unmarked = !dead_marks_.empty() && dead_marks_.Unmark(holder, fp);
  // The summary was taken with this mark.
  if (*unmarked) summaries_.Withdraw(holder);
  return holder;
}

bool ChunkStore::UnmarkIfDead(ContainerId id, const Fingerprint& fp) {
  if (dead_marks_.empty()) return false;
  bool unmarked = false;
  ResolveEntry(id, fp, &unmarked);
  return unmarked;
}

void ChunkStore::MarkDead(ContainerId id, const std::vector<Fingerprint>& fps) {
  dead_marks_.Mark(aliases_.Resolve(id), fps);
}

std::vector<ContainerId> ChunkStore::ContainersWithDeadMarks() const {
  std::vector<ContainerId> ids = dead_marks_.Containers();
  // Open and in-flight containers wait for their commit; others' are never marked.
  ids.erase(std::remove_if(ids.begin(), ids.end(),
                           [this](ContainerId id) { return foreign_.IsForeign(id) || !IsCommitted(id); }),
            ids.end());
  return ids;
}

Status ChunkStore::PersistDeadMarks() {
  std::lock_guard<std::mutex> gc(gc_mu_);  // no merge or delete changes the marks meanwhile
  return dead_marks_.Persist();
}

Status ChunkStore::GetChunkFootprints(ContainerId requested, std::vector<ChunkFootprint>* chunks,
                                      uint64_t* total) {
  const ContainerId id = aliases_.Resolve(requested);
  std::vector<Fingerprint> fps;
  std::vector<size_t> footprints;
  std::shared_ptr<const Container> c = read_cache_.Lookup(id);
  if (c) {
    fps = c->Fingerprints();
    for (const Fingerprint& fp : fps) footprints.push_back(c->FootprintOf(fp));
    *total = c->serialized_size();
  } else {
    // The metadata says all GC needs: no 4 MiB read per container, and the
    // read cache is left to reads.
    Status s = ReadMetadata(id, &fps, &footprints, total);
    if (s.IsNotFound() && aliases_.Resolve(requested) != id) return GetChunkFootprints(requested, chunks, total);
    DEDUPV1_RETURN_IF_ERROR(s);
  }
  chunks->clear();
  dead_marks_.WithMarksOf(id, [&](const FingerprintSet* dead) {
    for (size_t i = 0; i < fps.size(); i++) {
      if (dead != nullptr && dead->count(fps[i]) != 0) continue;
      chunks->push_back({fps[i], footprints[i]});
    }
  });
  const uint64_t dead_now = fps.size() - chunks->size();  // chunks of it marked dead
  bool uncommitted = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    uncommitted = uncommitted_.count(id) != 0;
  }
  // A container without a summary that fits its dead marks (lost in a
  // crash, stored by an older build, or GC marked chunks since) gets one
  // now, so the next start need not read this again.
  ContainerSummary known;
  if (!uncommitted && !summaries_.Get(id, dead_now, &known)) {
    ContainerSummary summary;
    summary.chunks = chunks->size();
    for (const auto& chunk : *chunks) summary.footprint_bytes += chunk.bytes;
    summary.serialized_bytes = *total;
    summary.dead_chunks = dead_now;
    summaries_.Record(id, summary);
  }
  return Status::OK();
}

bool ChunkStore::GetSummary(ContainerId id, ContainerSummary* summary) const {
  auto dead_count = [this, id] {
    uint64_t n = 0;
    dead_marks_.WithMarksOf(id, [&n](const FingerprintSet* dead) {
      if (dead != nullptr) n = dead->size();
    });
    return n;
  };
  // The marks and the summaries have locks of their own, and ResolveEntry
  // unmarks before it withdraws: a count read before an unmark can still find
  // the summary taken with that mark. It holds only if the count is the same
  // after the lookup.
  const uint64_t dead_before = dead_count();
  return summaries_.Get(id, dead_before, summary) && dead_count() == dead_before;
}

}  // namespace dedupv1

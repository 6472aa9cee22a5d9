// ChunkIndexFilter is the basic deduplication filter: a chunk index lookup
// gives STRONG-MAYBE with the chunk's container, or NOT-EXISTING. UpdateNew
// records a newly stored chunk in the auxiliary index (memory only; the index
// writes it back in the background after the container commits), UpdateMoved
// points the entry to a rewritten copy (ChunkIndex::Move). On a table that
// batches lookups (RadosChunkTable) it prefetches the run's chunks that reach
// it in one ChunkIndex::Prefetch, so Check costs no round trip each.
#pragma once

#include "filters/filter.h"
#include "index/chunk_index.h"

namespace dedupv1 {

class ChunkIndexFilter : public Filter {
 public:
  explicit ChunkIndexFilter(ChunkIndex* index) : index_(index) {}
  // The name the config's filter-chain key gives (filters/filter_registry.cc).
  static constexpr char kName[] = "chunk-index";
  const char* name() const override { return kName; }
  FilterResult MaxResult() const override { return FilterResult::kStrongMaybe; }
  FilterResult Check(ChunkRequest* chunk, Status* error) override {
    ChunkIndexEntry entry;
    Status s = index_->Lookup(chunk->fp, &entry, &chunk->found_on_disk);
    if (s.IsNotFound()) return FilterResult::kNotExisting;
    if (!s.ok()) {
      *error = s;
      return FilterResult::kError;
    }
    chunk->container = entry.container;
    return FilterResult::kStrongMaybe;
  }
  bool WantsRun() const override { return index_->batched_table(); }
  void PrepareRun(const std::vector<const ChunkRequest*>& chunks) override { index_->Prefetch(Fps(chunks)); }
  void FinishRun(const std::vector<const ChunkRequest*>& chunks) override { index_->DropPrefetch(Fps(chunks)); }
  Status UpdateNew(const ChunkRequest& chunk) override {
    return index_->PutNew(chunk.fp, chunk.container);
  }
  // Later backups find the rewritten copy, next to the data it was stored
  // with. A chunk the container-cache filter found may have no entry (GC
  // erased it while another copy, no longer in use, stayed listed): its
  // mapping's count re-creates the entry, naming the copy it maps.
  Status UpdateMoved(ChunkRequest* chunk) override {
    bool moved = false;
    Status s = index_->Move(chunk->fp, chunk->container, &moved, &chunk->moved_off);
    return s.IsNotFound() ? Status::OK() : s;
  }

 private:
  static std::vector<Fingerprint> Fps(const std::vector<const ChunkRequest*>& chunks) {
    std::vector<Fingerprint> fps;
    fps.reserve(chunks.size());
    for (const ChunkRequest* c : chunks) fps.push_back(c->fp);
    return fps;
  }

  ChunkIndex* index_;
};

}  // namespace dedupv1

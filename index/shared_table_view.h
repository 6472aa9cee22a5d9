// SharedTableView is the ChunkTable a ChunkIndex in cluster scope reads and
// writes back through (storage.rados.dedup-scope = cluster,
// docs/design-15.md 2.4): the shared table of every gateway slot, seen
// through ChunkClaims.
//  - Get/GetMany resolve each fingerprint (ChunkClaims::Resolve): an entry is
//    reported only with a container that may be mapped (C, revived D, or U
//    whose container exists), committed, usage 0 (usage lives in per-slot
//    keys: ChunkIndex sends usage to ChunkClaims::AddUsage, never here).
//  - Apply's puts are the write-back of this slot's new chunks once their
//    container committed: each flips this slot's claim U{container} to C
//    (ChunkClaims::Flip; a lost flip is counted, see chunk_claims.h why it is
//    harmless). Erases are refused: garbage collection of a cluster-scope
//    store comes with cluster GC (design-15 phase 5).
//  - entry_count is 0 (the shared table keeps no count yet) and the capacity
//    unbounded (shards grow as omap objects do).
// Thread-safe (ChunkClaims is).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "index/chunk_claims.h"
#include "index/chunk_table.h"

namespace dedupv1 {

class SharedTableView : public ChunkTable {
 public:
  explicit SharedTableView(std::shared_ptr<ChunkClaims> claims) : claims_(std::move(claims)) {}

  Status Get(const Fingerprint& fp, ChunkIndexEntry* entry) override;
  Status GetMany(const std::vector<Fingerprint>& fps, std::vector<ChunkIndexEntry>* entries,
                 std::vector<bool>* found) override;
  bool batched() const override { return true; }
  // In cluster scope every run's lookups go to the shared table (another
  // slot's chunks are nowhere else), so a batch is always worth it.
  double GetManyCost(size_t) const override { return 0.0; }
  Status Apply(const std::vector<Op>& ops) override;
  uint64_t entry_count() const override { return 0; }
  uint64_t capacity() const override { return UINT64_MAX / 4; }
  // As the format-1 table (index/rados_chunk_table.h): a write-back batch of
  // flips up to 4 x 256 keys per shard, so a backlog (a close, a sync after
  // a burst) flips with ~1,000 keys per operation instead of 16 (one shard
  // per unit made the batch 1,024 keys over 64 shards: 1,728 operations for
  // the flips of 256 MiB of new data where 128 do).
  uint64_t batch_units() const override { return uint64_t{claims_->table()->shards()} * 256; }
  std::string Where() const override;
  Status Verify(uint64_t* pages_checked, const Visitor& visit = nullptr) override;
  Status ForEachEntry(const Visitor& visit) override;
  Status Sync() override { return Status::OK(); }  // every Apply is durable when it returns

 private:
  const std::shared_ptr<ChunkClaims> claims_;
};

}  // namespace dedupv1

// ShardLoad counts the operations a chunk index table sent to each of its
// shard objects since it was opened (design-15 2.7 "shard load"): the
// gateway publishes max and mean in its heartbeat, and max/mean tells how
// evenly fingerprints spread the index traffic over the shards (issue 15's
// target: <= 1.1). Counts, not rates: a reader that wants a rate compares
// two heartbeats.
//
// Thread-safe (one atomic counter per shard); a count is never lost, but a
// Summary taken while operations run may mix counts of slightly different
// moments.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace dedupv1 {

struct ShardLoadSummary {
  uint32_t shards = 0;
  uint64_t total = 0;  // operations, all shards
  uint64_t max = 0;    // of the busiest shard
  // max / mean; 0 without operations (1.0 = perfectly even).
  double MaxOverMean() const { return total == 0 || shards == 0 ? 0.0 : static_cast<double>(max) * shards / total; }
  double Mean() const { return shards == 0 ? 0.0 : static_cast<double>(total) / shards; }
};

class ShardLoad {
 public:
  explicit ShardLoad(uint32_t shards);

  void Count(uint32_t shard);
  // Counts an operation on shard object |oid| ("ci.<hex>", with or without
  // a slot's "gw.NAME/" prefix); other objects (the header) are not counted.
  void CountObject(const std::string& oid);

  ShardLoadSummary Summary() const;

 private:
  const uint32_t shards_;
  std::unique_ptr<std::atomic<uint64_t>[]> ops_;
};

}  // namespace dedupv1

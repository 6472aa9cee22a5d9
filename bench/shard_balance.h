// ShardBalance measures how evenly real fingerprints spread over the chunk
// index's shards (issue 15: max/mean keys per shard <= 1.1). It counts each
// distinct fingerprint once (a shard holds one entry per stored chunk) with
// the shard function of the RADOS chunk table (RadosChunkTable::ShardOf: the
// first k fingerprint bits), for several shard counts at once, and computes
// what uniformly random keys of the same number would give, so sampling noise
// (few keys per shard) is told apart from a skewed fingerprint distribution.
//
// FingerprintFiles chunks files with the engine's chunker and fingerprints the
// chunks as the engine does (all-zero chunks are never stored, so skipped).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/base/chunker.h"
#include "core/base/fingerprint.h"
#include "core/base/status.h"

namespace dedupv1 {
namespace bench {

struct ShardBalanceRow {
  uint32_t shards = 0;
  uint64_t keys = 0;
  uint64_t min = 0, max = 0;
  double mean = 0;
  double max_over_mean = 0;
  double random_max_over_mean = 0;  // expected for uniformly random keys, same count
};

class ShardBalance {
 public:
  // |shard_counts|: powers of two in [1, 65536].
  explicit ShardBalance(std::vector<uint32_t> shard_counts);

  // Counts |fp| unless it was added before; returns whether it was new.
  bool Add(const Fingerprint& fp);
  uint64_t distinct() const { return seen_.size(); }
  // One row per shard count; |random_trials| random placements for the expectation.
  std::vector<ShardBalanceRow> Rows(int random_trials = 20) const;

  // Expected max/mean of |keys| uniformly random keys over |shards| shards
  // (fixed-seed trials, averaged).
  static double RandomMaxOverMean(uint64_t keys, uint32_t shards, int trials);

 private:
  std::vector<uint32_t> shard_counts_;
  std::vector<std::vector<uint64_t>> counts_;  // per shard count, keys per shard
  std::unordered_set<Fingerprint, FingerprintHasher> seen_;
};

struct FingerprintFilesStats {
  uint64_t files = 0, bytes = 0, chunks = 0, zero_chunks = 0;
};

// Chunks and fingerprints the regular files among |paths| (directories are
// walked in name order, symlinks and unreadable files skipped) until
// |max_bytes| were read; calls |visit| for every non-zero chunk's fingerprint.
Status FingerprintFiles(const std::vector<std::string>& paths, const Chunker& chunker, FingerprintType type,
                        uint64_t max_bytes, const std::function<void(const Fingerprint&)>& visit,
                        FingerprintFilesStats* stats);

}  // namespace bench
}  // namespace dedupv1

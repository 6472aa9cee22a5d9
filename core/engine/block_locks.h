// BlockLocks serialises access to blocks: readers of a block share, writers
// (request writes, unmaps, and dedup workers installing a new mapping) are
// exclusive. Locks are striped over a fixed table, so memory does not grow
// with the volume. A thread holds at most one block lock at a time, so
// striping cannot deadlock.
#pragma once

#include <mutex>
#include <shared_mutex>
#include <vector>

#include "core/base/types.h"

namespace dedupv1 {

class BlockLocks {
 public:
  explicit BlockLocks(size_t stripes = 4096) : locks_(stripes) {}
  std::shared_mutex& For(const BlockId& id) { return locks_[BlockIdHasher()(id) % locks_.size()]; }

 private:
  std::vector<std::shared_mutex> locks_;
};

// Fingerprint locks: held from the filter-chain decision until a new chunk is
// stored and recorded, so two writers of the same new chunk never both store it.
class FingerprintLocks {
 public:
  explicit FingerprintLocks(size_t stripes = 4096) : locks_(stripes) {}
  std::mutex& For(const Fingerprint& fp) { return locks_[fp.Hash64() % locks_.size()]; }

 private:
  std::vector<std::mutex> locks_;
};

}  // namespace dedupv1

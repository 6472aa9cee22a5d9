// Small value types shared by all modules.
#pragma once

#include <cstdint>
#include <limits>

#include "core/base/fingerprint.h"

namespace dedupv1 {

// Containers are numbered from 1 upwards; ids are never reused. A container
// merged by GC keeps answering to all the ids it absorbed.
using ContainerId = uint64_t;
// "No container": an entry that does not point anywhere yet.
constexpr ContainerId kNoContainer = 0;
// Pseudo container of data that reads as zeros: all-zero chunks and unmapped
// (thin) ranges. Nothing is stored for it.
constexpr ContainerId kZeroContainer = std::numeric_limits<uint64_t>::max();

// Identifies a block of a volume: (volume id, block number).
struct BlockId {
  uint32_t volume = 0;
  uint64_t block = 0;
  bool operator==(const BlockId& o) const { return volume == o.volume && block == o.block; }
  bool operator<(const BlockId& o) const {
    return volume < o.volume || (volume == o.volume && block < o.block);
  }
};

struct BlockIdHasher {
  size_t operator()(const BlockId& b) const {
    return static_cast<size_t>((static_cast<uint64_t>(b.volume) << 48) ^ b.block * 0x9E3779B97F4A7C15ULL);
  }
};

}  // namespace dedupv1

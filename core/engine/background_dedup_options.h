// BackgroundDedupOptions: how fast and how patiently the out-of-band pass
// (core/engine/background_dedup.h) works; config keys dedup.background.*.
// Kept apart from the pass so Options needs none of its dependencies.
#pragma once

#include <cstdint>
#include <functional>

#include "core/base/types.h"

namespace dedupv1 {

struct BackgroundDedupOptions {
  // dedup.background.rate: bytes of blocks examined per second while the
  // system is busy (at idle the pass runs unthrottled); 0 = no limit.
  uint64_t rate_bytes_per_s = 20ull << 20;
  // dedup.background.period: DEDIS's hotspot period. A block written in the
  // current or the previous period is left for a later one.
  uint64_t period_ms = 5 * 60 * 1000;
  // For tests: called when the pass has read a block and decided its remap,
  // before it takes the block's lock to install it (a write there then wins).
  std::function<void(const BlockId&)> before_remap_install;
};

}  // namespace dedupv1

// FastCdcChunker is a gear-based content-defined chunker with normalized
// chunking (Xia et al., "FastCDC", USENIX ATC'16), offered next to Rabin
// (the default the design names) for its speed: one shift, one add and one
// table load per byte instead of Rabin's polynomial arithmetic.
//
// The rule: a gear hash fp = (fp << 1) + kGear[byte] over the bytes of a
// chunk; a chunk ends after byte i when (fp & mask) == 0. Before avg_size
// bytes the mask has two bits more than log2(avg_size) (boundaries rarer),
// from avg_size on two bits fewer (more likely): "normalized chunking, level
// 2", which pulls chunk sizes towards avg_size. Mask bits are every other bit
// from bit 63 down (bit k of the hash depends on the last k + 1 bytes), and
// the large-chunk mask is a subset of the small-chunk one.
//
// Invariants: after a left shift by 64 a byte no longer contributes, so the
// hash at a position depends only on the 64 bytes ending there; hashing
// starts 64 bytes before min_size (min_size >= 64), so the hash never depends
// on where the chunk began. Which mask applies does (the chunk's length
// against avg_size: the price of normalized chunking), but a position that
// passes the small-chunk mask passes the large-chunk one too, so after an
// edit boundaries resynchronize as with one mask once a chunk reaches
// avg_size. No boundary before min_size bytes; one is forced at max_size.
// The gear table is a fixed pseudo-random function of the byte (SplitMix64
// from a fixed seed): changing it, or the masks, would move every boundary
// (the golden values in chunker_test.cc hold them). Immutable, thread-safe.
// Use Chunker::Create to build one.
#pragma once

#include <array>
#include <cstdint>

#include "core/base/chunker.h"

namespace dedupv1 {

class FastCdcChunker : public Chunker {
 public:
  // The name the config's chunking key gives (core/base/chunker_registry.cc).
  static constexpr char kName[] = "fastcdc";
  static constexpr size_t kWindowSize = 64;  // bytes a hash value depends on
  static constexpr size_t kMinMinSize = 64;  // the window must fit before the first boundary
  static constexpr size_t kMinAvgSize = 256;  // masks of at least 6 bits
  static constexpr int kMaxMaskBits = 24;     // every other bit of 63..17 (avg up to 4 MiB)
  // The engine's min_size for this chunker when the config names none (at
  // most half of avg_size; core/engine/options.cc): no hash is computed
  // before min_size - 64 bytes
  // of a chunk (cut-point skipping), so a larger minimum skips more of the
  // bytes. At 4 KiB against 2 KiB chunking is 1.3-1.45x faster and the
  // chunk+hash ceiling 1.63-2.16x Rabin's (median 1.87x), while real backup
  // data stores 0.1% less than with Rabin (docs/benchmarks.md 3).
  static constexpr size_t kDefaultMinSize = 4096;
  static_assert(kMinMinSize >= kWindowSize, "the window must fit before the first boundary");

  // |options| must already be validated (Chunker::Create does that).
  explicit FastCdcChunker(const ChunkerOptions& options);

  void Split(const uint8_t* data, size_t n, bool final, std::vector<size_t>* ends) const override;
  const ChunkerOptions& options() const override { return options_; }

  // The gear value of |byte| and the mask with |bits| one-bits (exposed for
  // the tests' reference definition).
  static uint64_t Gear(uint8_t byte);
  static uint64_t Mask(int bits);

 private:
  // Returns the length of the chunk starting at |p|, given |len| bytes
  // (min_size <= len <= max_size), if a content boundary lies in it; else 0.
  size_t FindBoundary(const uint8_t* p, size_t len) const;
  // Hashes p[i, end) into *hash; the end of the first position whose hash
  // has no bit of |mask| (a boundary, > 0), or 0 with *hash covering p[.., end).
  static size_t Scan(const uint8_t* p, size_t i, size_t end, uint64_t mask, uint64_t* hash);

  const ChunkerOptions options_;
  const uint64_t mask_small_;  // before avg_size: log2(avg) + 2 bits
  const uint64_t mask_large_;  // from avg_size on: log2(avg) - 2 bits
};

}  // namespace dedupv1

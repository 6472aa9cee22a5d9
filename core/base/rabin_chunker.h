// RabinChunker is the content-defined chunker of dedupv1 (as in LBFS): a
// Rabin fingerprint over a 48-byte sliding window is computed at every byte,
// and a chunk ends after byte i when (fp & mask) == mask, mask = avg_size - 1.
//
// Invariants: the fingerprint at a position depends only on the 48 bytes
// ending there, so boundaries are stable when data before them shifts. No
// boundary is placed before min_size bytes; one is forced at max_size.
// Hashing starts (min_size - 48) bytes into a chunk, so the window is full
// exactly when the first allowed boundary is reached. Immutable, thread-safe.
// Use Chunker::Create to build one.
#pragma once

#include <cstdint>

#include "core/base/chunker.h"

namespace dedupv1 {

class RabinChunker : public Chunker {
 public:
  // The name the config's chunking key gives (core/base/chunker_registry.cc).
  static constexpr char kName[] = "rabin";
  // The irreducible polynomial of degree 63 used by LBFS / rabinpoly
  // (FINGERPRINT_PT). Fingerprints are residues mod P, so they fit in 63 bits.
  static constexpr uint64_t kPolynomial = 0xbfe6b8a5bf378d83ULL;
  static constexpr size_t kWindowSize = 48;
  // Smallest allowed min_size: the window must fit before the first boundary.
  static constexpr size_t kMinMinSize = 64;

  // |options| must already be validated (Chunker::Create does that).
  explicit RabinChunker(const ChunkerOptions& options);

  void Split(const uint8_t* data, size_t n, bool final, std::vector<size_t>* ends) const override;
  const ChunkerOptions& options() const override { return options_; }

  // Rabin fingerprint of the kWindowSize bytes at |window|: the polynomial
  // sum(window[j] * x^(8*(47-j))) mod kPolynomial. Exposed for tests; the
  // chunker computes the same value incrementally.
  static uint64_t WindowFingerprint(const uint8_t* window);

 private:
  // Returns the length of the chunk starting at |p|, given |len| bytes
  // (min_size <= len <= max_size), if a content boundary lies in it; else 0.
  size_t FindBoundary(const uint8_t* p, size_t len) const;

  const ChunkerOptions options_;
  const uint64_t mask_;
};

}  // namespace dedupv1

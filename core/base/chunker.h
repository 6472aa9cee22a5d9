// A Chunker splits a byte stream into chunks, the unit of deduplication.
// Content-defined chunking (Rabin, the default; FastCDC, faster) places
// boundaries where the content says so, so an insert near the start of a
// stream shifts only the chunks it touches; static chunking cuts every N
// bytes and is offered for comparison.
//
// Invariants: every chunk except a stream's final one is in [min_size,
// max_size] bytes (content-defined) or exactly avg_size bytes (static). A Chunker holds
// no per-stream state: it is immutable after Create and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace dedupv1 {

struct ChunkerOptions {
  // A name in the chunker registry (core/base/chunker_registry.cc): "rabin", "fastcdc" or "static".
  std::string name = "rabin";
  size_t min_size = 2048;   // content-defined: no boundary before this many bytes
  size_t avg_size = 8192;   // content-defined: expected size, a power of two. Static: the chunk size.
  size_t max_size = 32768;  // content-defined: boundary forced here
};

// Largest chunk any chunker produces; bounds per-stream buffers.
constexpr size_t kMaxChunkSize = 1 << 20;

// A Chunker finds chunk boundaries. It is stateless and thread-safe: the
// caller always passes data that begins at a chunk start (the engine keeps the
// unfinished tail of a stream and passes it again, followed by new bytes).
class Chunker {
 public:
  virtual ~Chunker() = default;
  // Validates |options| (InvalidArgument naming the bad value: a registered
  // name, min>0, min<=avg<=max, max <= 1 MiB, then the chunker's own rules:
  // avg a power of two and min >= 64 for Rabin and FastCDC, avg >= 256 for
  // FastCDC) and creates the chunker
  // named |options.name| (core/base/chunker_registry.h).
  static Status Create(const ChunkerOptions& options, std::unique_ptr<Chunker>* chunker);
  // Appends to |ends| the end offset (exclusive, relative to data) of every
  // complete chunk in data[0, n). Bytes after the last end are an unfinished
  // chunk; if |final| is true they are emitted as a last chunk too (if n > last end).
  // Without |final| the unfinished tail is always shorter than max_size, and
  // splitting tail + more data gives the same boundaries as one call over all.
  virtual void Split(const uint8_t* data, size_t n, bool final, std::vector<size_t>* ends) const = 0;
  virtual const ChunkerOptions& options() const = 0;
};

// The loop of every content-defined chunker's Split: |find_boundary(p,
// len)| returns the length of the chunk starting at p, given len bytes
// (min_size <= len <= max_size), if a content boundary lies in them, else 0.
// A chunk without one is forced at max_size, or its bytes stay the
// unfinished tail (< max_size) until more data arrives.
template <class FindBoundary>
void SplitAtBoundaries(const ChunkerOptions& options, const uint8_t* data, size_t n, bool final,
                       std::vector<size_t>* ends, FindBoundary find_boundary) {
  const size_t min = options.min_size;
  const size_t max = options.max_size;
  size_t start = 0;
  while (n - start >= min) {
    const size_t available = n - start;
    size_t len = find_boundary(data + start, available < max ? available : max);
    if (len == 0) {
      if (available < max) break;
      len = max;
    }
    start += len;
    ends->push_back(start);
  }
  if (final && n > start) ends->push_back(n);
}

}  // namespace dedupv1

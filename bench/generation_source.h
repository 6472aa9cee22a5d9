// GenerationSource is what a benchmark writes as one backup generation:
// bytes of a known size, readable at any offset, so a generation of many GiB
// is streamed request by request and never held whole. Two kinds exist: the
// synthetic Generation (bench/backup_generator.h, with its ground truth) and
// FileGeneration (bench/file_generation.h, real data from a file).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dedupv1 {
namespace bench {

class GenerationSource {
 public:
  virtual ~GenerationSource() = default;
  virtual uint64_t size() const = 0;
  // Fills out[0, len) with the bytes at [offset, offset + len); the range
  // lies within [0, size()). Thread-safe: streams read concurrently.
  virtual void Read(uint64_t offset, size_t len, uint8_t* out) const = 0;
};

}  // namespace bench
}  // namespace dedupv1

// BackupGenerator makes synthetic backup generations like the dedupv1 paper's
// evaluation (section 4.1). Generation 1 is a stream with a share of internal
// redundancy (runs that repeat earlier data of the same stream). Generation
// N+1 is derived from generation N by a Markov chain over three states:
//   U  (unique):             new data, never seen before;
//   IR (internal redundant): repeats data written earlier in generation N+1;
//   TR (temporal redundant): copies generation N at the current position.
// A generation is a list of extents referring to "sources" of pseudo-random
// bytes that can be produced at any offset, so generations of many GiB are
// streamed without holding their data, and the same seed gives the same bytes.
// Ground truth (bytes per state) is counted while generating, so a benchmark
// can compare the dedup ratio it measures with what is really there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "bench/generation_source.h"

namespace dedupv1 {
namespace bench {

struct GeneratorParams {
  // Generation 1.
  double internal_redundancy = 0.325;   // share of runs that repeat earlier data
  uint64_t gen1_run_mean = 64 << 10;    // mean run length (bytes), exponential
  // Generation N+1: mean run lengths per state and transition probabilities.
  uint64_t tr_run_mean = 1 << 20;
  uint64_t u_run_mean = 40 << 10;  // with the defaults below: ~97.6% redundancy, as in the paper
  uint64_t ir_run_mean = 16 << 10;
  // From TR to U / IR (else stay in TR for another run).
  double tr_to_u = 0.6, tr_to_ir = 0.15;
  // From U to TR / IR (else another U run).
  double u_to_tr = 0.85, u_to_ir = 0.05;
  // From IR to TR / U.
  double ir_to_tr = 0.9, ir_to_u = 0.05;
};

struct GroundTruth {
  uint64_t unique_bytes = 0;             // U (and gen 1's new data)
  uint64_t internal_redundant_bytes = 0; // IR
  uint64_t temporal_redundant_bytes = 0; // TR
  uint64_t total() const { return unique_bytes + internal_redundant_bytes + temporal_redundant_bytes; }
  // Share of bytes that an ideal deduplicator would not store.
  double redundancy() const { return total() ? 1.0 - double(unique_bytes) / double(total()) : 0; }
};

class Generation : public GenerationSource {
 public:
  uint64_t size() const override { return size_; }
  int number() const { return number_; }
  const GroundTruth& truth() const { return truth_; }
  // Memory this generation's description takes (it grows with its size), so
  // a bench can tell the generator's memory from the engine's.
  uint64_t MemoryBytes() const { return extents_.capacity() * sizeof(Extent); }
  // Fills out[0, len) with the bytes at [offset, offset + len).
  void Read(uint64_t offset, size_t len, uint8_t* out) const override;

 private:
  friend class BackupGenerator;
  struct Extent {
    uint64_t source;         // which pseudo-random byte source
    uint64_t source_offset;  // where in the source
    uint64_t start;          // where in this generation
    uint64_t length;
  };
  void Append(uint64_t source, uint64_t source_offset, uint64_t length);
  // Appends the extents that cover [offset, offset+len) of |from|.
  void AppendSlice(const Generation& from, uint64_t offset, uint64_t len);
  size_t Find(uint64_t offset) const;

  std::vector<Extent> extents_;
  uint64_t size_ = 0;
  int number_ = 0;
  GroundTruth truth_;
};

class BackupGenerator {
 public:
  BackupGenerator(const GeneratorParams& params, uint64_t seed) : params_(params), rng_(seed), seed_(seed) {}
  Generation First(uint64_t size);
  Generation Next(const Generation& previous);

 private:
  uint64_t RunLength(uint64_t mean, uint64_t remaining);
  uint64_t NewSource() { return (seed_ << 32) ^ ++sources_; }

  GeneratorParams params_;
  std::mt19937_64 rng_;
  uint64_t seed_;
  uint64_t sources_ = 0;
};

// The pseudo-random byte at |offset| of |source| (counter-based, so any
// offset is computed directly).
void FillSource(uint64_t source, uint64_t offset, size_t len, uint8_t* out);

}  // namespace bench
}  // namespace dedupv1

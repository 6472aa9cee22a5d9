// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", OOPSLA'14): the output of the generator whose state was |x|,
// a bijective, well-mixed function of a 64-bit value. Used where a fixed
// pseudo-random value per input is needed (FastCDC's gear table, the
// benchmarks' data and fingerprints); a generator is
// `SplitMix64(state); state += kSplitMix64Gamma`.
#pragma once

#include <cstdint>

namespace dedupv1 {

constexpr uint64_t kSplitMix64Gamma = 0x9e3779b97f4a7c15ULL;

constexpr uint64_t SplitMix64(uint64_t x) {
  x += kSplitMix64Gamma;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace dedupv1

#include "core/base/fastcdc_chunker.h"

#include <algorithm>

#include "core/base/split_mix64.h"

namespace dedupv1 {
namespace {

constexpr uint64_t kGearSeed = 0x6465647570763167ULL;  // "dedupv1g"

constexpr std::array<uint64_t, 256> MakeGear() {
  std::array<uint64_t, 256> g{};
  // SplitMix64: a fixed, well-mixed value per byte.
  for (size_t b = 0; b < 256; b++) g[b] = SplitMix64(kGearSeed + b);
  return g;
}

constexpr std::array<uint64_t, 256> kGear = MakeGear();

int Log2(size_t v) {
  int k = 0;
  while ((size_t{1} << (k + 1)) <= v) k++;
  return k;
}

}  // namespace

uint64_t FastCdcChunker::Gear(uint8_t byte) { return kGear[byte]; }

uint64_t FastCdcChunker::Mask(int bits) {
  // Every other bit from bit 63 down: the first |bits| of them, so a mask
  // of fewer bits is a subset of one with more (the large-chunk mask of the
  // small-chunk one). Bit k of the hash depends on the last k + 1 bytes; the
  // lowest bit used (17, at 24 bits) still sees 18 of them.
  uint64_t m = 0;
  for (int j = 0; j < bits && j < kMaxMaskBits; j++) m |= uint64_t{1} << (63 - 2 * j);
  return m;
}

FastCdcChunker::FastCdcChunker(const ChunkerOptions& options)
    : options_(options),
      mask_small_(Mask(Log2(options.avg_size) + 2)),
      mask_large_(Mask(Log2(options.avg_size) - 2)) {}

size_t FastCdcChunker::FindBoundary(const uint8_t* p, size_t len) const {
  const size_t min = options_.min_size;
  const size_t avg = options_.avg_size;
  // A chunk of L bytes ends there if the hash after its last byte has no
  // bit of the mask: the small-chunk mask while L < avg, then the other.
  // The window fills with the 64 bytes before the first allowed boundary.
  uint64_t fp = 0;
  for (size_t i = min - kWindowSize; i < min; i++) fp = (fp << 1) + kGear[p[i]];
  if ((fp & (min < avg ? mask_small_ : mask_large_)) == 0) return min;
  // Bytes p[min, small_end) end chunks of L < avg bytes (a boundary after
  // byte i is at L = i + 1); from there on the large-chunk mask applies.
  const size_t small_end = std::min(len, std::max(min, avg - 1));
  if (const size_t end = Scan(p, min, small_end, mask_small_, &fp)) return end;
  return Scan(p, small_end, len, mask_large_, &fp);
}

size_t FastCdcChunker::Scan(const uint8_t* p, size_t i, size_t end, uint64_t mask, uint64_t* hash) {
  uint64_t fp = *hash;
  for (; i < end; i++) {
    fp = (fp << 1) + kGear[p[i]];
    if ((fp & mask) == 0) return i + 1;
  }
  *hash = fp;
  return 0;
}

void FastCdcChunker::Split(const uint8_t* data, size_t n, bool final, std::vector<size_t>* ends) const {
  SplitAtBoundaries(options_, data, n, final, ends,
                    [this](const uint8_t* p, size_t len) { return FindBoundary(p, len); });
}

}  // namespace dedupv1

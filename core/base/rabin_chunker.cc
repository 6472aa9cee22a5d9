#include "core/base/rabin_chunker.h"

#include <algorithm>
#include <cstring>

namespace dedupv1 {

namespace {

constexpr uint64_t kP = RabinChunker::kPolynomial;
constexpr int kDegree = 63;
// A fingerprint has degree < 63; its top byte (bits 55..62) is what overflows
// past x^63 when the fingerprint is multiplied by x^8.
constexpr int kShift = kDegree - 8;

// Lookup tables for the rolling fingerprint. Built once; read-only after.
//
// Rolling one byte: new = fp * x^8 + in - out * x^(8*48)  (mod P), which is
// ((fp << 8) | in) ^ append[fp >> 55] ^ remove[out]. The critical dependency
// chain of that step is shift -> table load -> xor, about 7 cycles a byte.
// To go faster the hot loop also jumps 4 bytes at once with the same algebra:
// new4 = fp * x^32 + in[0..3] - out[0..3] * x^(8*48)  (mod P), where the 32
// bits that overflow past degree 62 are reduced with four independent byte
// tables (skip_append) and the four leaving bytes with four more
// (skip_remove). The fingerprints of the three positions in between are
// computed with single steps from the chain value; they do not feed the next
// jump, so they overlap with it instead of lengthening the chain.
struct RabinTables {
  // append[t] = (t * x^63 mod P) ^ ((t & 1) << 63): XOR-ing it into
  // (fp << 8) | byte reduces the bits that overflowed past degree 62
  // (t = fp >> 55), and clears bit 63, the only overflow bit left in the word.
  uint64_t append[256];
  // remove[b] = b * x^(8*48) mod P: the contribution, after the byte just
  // appended, of the byte that leaves the window.
  uint64_t remove[256];
  // skip_append[k][b] = b * x^(63+8k) mod P (k = 0 also clears bit 63, as
  // append does): reduces overflow byte k of a multi-byte shift.
  uint64_t skip_append[4][256];
  // skip_remove[k][b] = b * x^(8*48+8k) mod P: a byte that left the window
  // k bytes before the end of a multi-byte step.
  uint64_t skip_remove[4][256];
};

// (a * b) mod P for polynomials a, b of degree < 63, bit by bit (tables only).
uint64_t MulMod(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  while (b != 0) {
    if (b & 1) r ^= a;
    b >>= 1;
    a <<= 1;
    if (a >> kDegree) a ^= kP;
  }
  return r;
}

// a * x^(8*bytes) mod P, by appending zero bytes to a (needs t.append).
uint64_t ShiftBytes(const RabinTables& t, uint64_t a, size_t bytes) {
  for (size_t i = 0; i < bytes; i++) a = (a << 8) ^ t.append[a >> kShift];
  return a;
}

RabinTables BuildTables() {
  RabinTables t;
  const uint64_t x63 = kP ^ (1ULL << kDegree);  // x^63 mod P
  for (uint64_t b = 0; b < 256; b++) t.append[b] = MulMod(b, x63) ^ (b << kDegree);
  const uint64_t xw = ShiftBytes(t, 1, RabinChunker::kWindowSize);  // x^(8*48) mod P
  for (uint64_t b = 0; b < 256; b++) t.remove[b] = MulMod(b, xw);
  for (size_t k = 0; k < 4; k++) {
    const uint64_t xa = ShiftBytes(t, x63, k);
    const uint64_t xr = ShiftBytes(t, xw, k);
    for (uint64_t b = 0; b < 256; b++) {
      t.skip_append[k][b] = MulMod(b, xa) ^ (k == 0 ? (b << kDegree) : 0);
      t.skip_remove[k][b] = MulMod(b, xr);
    }
  }
  return t;
}

const RabinTables& Tables() {
  static const RabinTables tables = BuildTables();  // thread-safe init
  return tables;
}

inline uint64_t Append(const uint64_t* append, uint64_t fp, uint8_t byte) {
  return ((fp << 8) | byte) ^ append[fp >> kShift];
}

// Slides the window one byte: |in| enters, |out| (48 bytes older) leaves.
inline uint64_t Roll(const RabinTables& t, uint64_t fp, uint8_t in, uint8_t out) {
  return (((fp << 8) | in) ^ t.remove[out]) ^ t.append[fp >> kShift];
}

inline uint32_t LoadBigEndian32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return __builtin_bswap32(v);
}

}  // namespace

RabinChunker::RabinChunker(const ChunkerOptions& options)
    : options_(options), mask_(options.avg_size - 1) {
  Tables();  // build the tables now rather than in the first Split
}

uint64_t RabinChunker::WindowFingerprint(const uint8_t* window) {
  const uint64_t* append = Tables().append;
  uint64_t fp = 0;
  for (size_t i = 0; i < kWindowSize; i++) fp = Append(append, fp, window[i]);
  return fp;
}

size_t RabinChunker::FindBoundary(const uint8_t* p, size_t len) const {
  const RabinTables& t = Tables();
  const uint64_t mask = mask_;
  const size_t min = options_.min_size;
  auto is_boundary = [mask](uint64_t fp) { return (fp & mask) == mask; };

  // Fill the window with the 48 bytes that end at the first allowed boundary.
  uint64_t fp = 0;
  const uint8_t* w = p + min - kWindowSize;
  for (size_t i = 0; i < kWindowSize; i++) fp = Append(t.append, fp, w[i]);
  if (is_boundary(fp)) return min;

  // |i| is the next byte to enter the window; fp covers p[i-48, i).
  size_t i = min;
  for (; i + 4 <= len; i += 4) {
    const uint8_t* in = p + i;
    const uint8_t* out = in - kWindowSize;
    // The chain: jump 4 bytes at once.
    const uint32_t top = static_cast<uint32_t>(fp >> (kDegree - 32));
    const uint64_t f4 = ((fp << 32) | LoadBigEndian32(in)) ^
                        ((t.skip_remove[3][out[0]] ^ t.skip_remove[2][out[1]]) ^
                         (t.skip_remove[1][out[2]] ^ t.skip_remove[0][out[3]])) ^
                        ((t.skip_append[0][top & 0xff] ^ t.skip_append[1][(top >> 8) & 0xff]) ^
                         (t.skip_append[2][(top >> 16) & 0xff] ^ t.skip_append[3][top >> 24]));
    // Off the chain: the positions in between, one byte at a time.
    const uint64_t f1 = Roll(t, fp, in[0], out[0]);
    const uint64_t f2 = Roll(t, f1, in[1], out[1]);
    const uint64_t f3 = Roll(t, f2, in[2], out[2]);
    if (is_boundary(f1) | is_boundary(f2) | is_boundary(f3) | is_boundary(f4)) {
      if (is_boundary(f1)) return i + 1;
      if (is_boundary(f2)) return i + 2;
      if (is_boundary(f3)) return i + 3;
      return i + 4;
    }
    fp = f4;
  }
  for (; i < len; i++) {
    fp = Roll(t, fp, p[i], p[i - kWindowSize]);
    if (is_boundary(fp)) return i + 1;
  }
  return 0;
}

void RabinChunker::Split(const uint8_t* data, size_t n, bool final, std::vector<size_t>* ends) const {
  SplitAtBoundaries(options_, data, n, final, ends,
                    [this](const uint8_t* p, size_t len) { return FindBoundary(p, len); });
}

}  // namespace dedupv1

#include "core/base/coding.h"

#include <nmmintrin.h>

#include <cstring>

namespace dedupv1 {

namespace {

// CRC-32C with the crc32 instruction, three streams at a time. One crc32
// instruction's result is ready only after three cycles, but the core starts
// one per cycle: three independent registers over three consecutive pieces
// of the buffer keep it busy (about 3x one register's speed). The pieces'
// registers are then joined: the register of A||B is A's register advanced
// over |B| zero bytes, xored with B's register started from zero (a CRC
// register is linear in its input). Advancing over a fixed length is a
// 32x32 matrix over GF(2), applied here through four 256-entry tables.
constexpr uint32_t kCastagnoli = 0x82F63B78;  // reflected polynomial
constexpr size_t kLong = 8192;                // piece length for long buffers
constexpr size_t kShort = 256;                // ... and for short ones

// |mat| (32 columns) times |vec|.
uint32_t MatrixTimes(const uint32_t* mat, uint32_t vec) {
  uint32_t sum = 0;
  for (int i = 0; vec != 0; i++, vec >>= 1) {
    if (vec & 1) sum ^= mat[i];
  }
  return sum;
}

// out = mat * mat.
void MatrixSquare(uint32_t* out, const uint32_t* mat) {
  for (int n = 0; n < 32; n++) out[n] = MatrixTimes(mat, mat[n]);
}

// The tables that advance a register over |len| zero bytes:
// Advance(crc) = t[0][crc & 0xff] ^ t[1][crc >> 8 & 0xff] ^ ...
struct ZerosTable {
  uint32_t t[4][256];
  explicit ZerosTable(size_t len) {
    uint32_t op[32], sq[32];
    // One zero bit: shift right, and xor the polynomial if the low bit was set.
    op[0] = kCastagnoli;
    for (int n = 1; n < 32; n++) op[n] = 1u << (n - 1);
    MatrixSquare(sq, op);  // 2 bits
    MatrixSquare(op, sq);  // 4 bits
    MatrixSquare(sq, op);  // 8 bits: one zero byte, in sq
    // op = sq^len by squaring: op starts as the identity.
    for (int n = 0; n < 32; n++) op[n] = 1u << n;
    uint32_t tmp[32];
    while (len > 0) {
      if (len & 1) {
        for (int n = 0; n < 32; n++) tmp[n] = MatrixTimes(sq, op[n]);
        std::memcpy(op, tmp, sizeof(op));
      }
      len >>= 1;
      if (len == 0) break;
      MatrixSquare(tmp, sq);
      std::memcpy(sq, tmp, sizeof(sq));
    }
    for (int k = 0; k < 4; k++) {
      for (uint32_t b = 0; b < 256; b++) t[k][b] = MatrixTimes(op, b << (8 * k));
    }
  }
  uint32_t Advance(uint32_t crc) const {
    return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
  }
};

const ZerosTable& LongZeros() {
  static const ZerosTable table(kLong);
  return table;
}
const ZerosTable& ShortZeros() {
  static const ZerosTable table(kShort);
  return table;
}

uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Three pieces of |piece| bytes at a time while |*n| allows, joined into
// *crc (a raw register, not inverted).
void ThreeWay(const uint8_t** p, size_t* n, uint64_t* crc, size_t piece, const ZerosTable& zeros) {
  while (*n >= 3 * piece) {
    uint64_t c0 = *crc, c1 = 0, c2 = 0;
    const uint8_t* a = *p;
    const uint8_t* end = a + piece;
    for (; a < end; a += 8) {
      c0 = _mm_crc32_u64(c0, Load64(a));
      c1 = _mm_crc32_u64(c1, Load64(a + piece));
      c2 = _mm_crc32_u64(c2, Load64(a + 2 * piece));
    }
    c0 = zeros.Advance(static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1);
    *crc = zeros.Advance(static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c2);
    *p += 3 * piece;
    *n -= 3 * piece;
  }
}

}  // namespace

uint32_t Crc32c(const void* data, size_t n, uint32_t crc) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint64_t c = static_cast<uint32_t>(~crc);
  ThreeWay(&p, &n, &c, kLong, LongZeros());
  ThreeWay(&p, &n, &c, kShort, ShortZeros());
  while (n >= 8) {
    c = _mm_crc32_u64(c, Load64(p));
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n > 0) {
    c32 = _mm_crc32_u8(c32, *p++);
    n--;
  }
  return ~c32;
}

bool ParseHex64(const char* text, size_t n, uint64_t* value) {
  if (n != 16) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    const char c = text[i];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return false;
    }
    v = v << 4 | static_cast<uint64_t>(d);
  }
  *value = v;
  return true;
}

}  // namespace dedupv1

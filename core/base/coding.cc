#include "core/base/coding.h"

#include <nmmintrin.h>

namespace dedupv1 {

uint32_t Crc32c(const void* data, size_t n, uint32_t crc) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint64_t c = ~crc;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
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

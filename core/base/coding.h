// Little-endian fixed-width encoding and CRC helpers shared by every on-disk
// format. All formats are little-endian regardless of the host.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace dedupv1 {

inline void EncodeFixed16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void EncodeFixed32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void EncodeFixed64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
inline uint16_t DecodeFixed16(const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
inline uint32_t DecodeFixed32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
inline uint64_t DecodeFixed64(const uint8_t* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }

inline void PutFixed16(std::string* s, uint16_t v) { s->append(reinterpret_cast<const char*>(&v), 2); }
inline void PutFixed32(std::string* s, uint32_t v) { s->append(reinterpret_cast<const char*>(&v), 4); }
inline void PutFixed64(std::string* s, uint64_t v) { s->append(reinterpret_cast<const char*>(&v), 8); }

// A string behind its u16 length (at most 65535 bytes are kept: record
// fields such as names and addresses, never bulk data).
inline void PutString16(std::string* s, const std::string& v) {
  const size_t n = v.size() > 0xffff ? 0xffff : v.size();
  PutFixed16(s, static_cast<uint16_t>(n));
  s->append(v, 0, n);
}
// Reads a PutString16 string at |*pos| of |v| and moves |*pos| past it;
// false if it overruns |v|.
inline bool GetString16(const std::string& v, size_t* pos, std::string* out) {
  if (*pos + 2 > v.size()) return false;
  const size_t n = DecodeFixed16(reinterpret_cast<const uint8_t*>(v.data()) + *pos);
  *pos += 2;
  if (*pos + n > v.size()) return false;
  out->assign(v, *pos, n);
  *pos += n;
  return true;
}

// CRC-32C (Castagnoli) of |n| bytes, continuing from |crc| (0 to start).
// Uses the SSE4.2 crc32 instruction.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);
// CRC-32C of |key| followed by |body|: the checksum of a record stored
// under a key (RADOS omap values, the gateway records), so that a value
// copied under another key does not check out.
inline uint32_t Crc32cKeyed(std::string_view key, std::string_view body) {
  return Crc32c(body.data(), body.size(), Crc32c(key.data(), key.size()));
}

// Parses exactly 16 lowercase hex digits (as "%016llx" prints them), e.g.
// the container id in a container's file or object name. False for any
// other text; *value is set only on success.
bool ParseHex64(const char* text, size_t n, uint64_t* value);

}  // namespace dedupv1

// A Fingerprint identifies a chunk by a cryptographic hash of its content
// (SHA-1 by default, SHA-256 selectable). The all-zero fingerprint is reserved
// for all-zero chunks: they are never hashed and never stored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace dedupv1 {

enum class FingerprintType : uint8_t { kSha1 = 1, kSha256 = 2 };

// Size in bytes of a fingerprint of |type| (20 or 32).
size_t FingerprintSize(FingerprintType type);
Status ParseFingerprintType(std::string_view name, FingerprintType* type);
const char* FingerprintTypeName(FingerprintType type);

struct Fingerprint {
  static constexpr size_t kMaxSize = 32;
  uint8_t bytes[kMaxSize] = {};
  uint8_t size = 0;

  Fingerprint() = default;
  Fingerprint(const uint8_t* data, size_t n) : size(static_cast<uint8_t>(n)) {
    std::memcpy(bytes, data, n);
  }
  // The reserved fingerprint of all-zero chunks.
  static Fingerprint Zero(FingerprintType type) {
    Fingerprint fp;
    fp.size = static_cast<uint8_t>(FingerprintSize(type));
    return fp;
  }
  bool IsZero() const {
    for (size_t i = 0; i < size; i++) {
      if (bytes[i] != 0) return false;
    }
    return true;
  }
  // First 8 bytes as an integer; uniform because the hash is cryptographic.
  uint64_t Hash64() const {
    uint64_t h;
    std::memcpy(&h, bytes, sizeof(h));
    return h;
  }
  std::string ToHex() const;
  // The fingerprint's bytes as a string (a map or omap key).
  std::string ToBytes() const { return std::string(reinterpret_cast<const char*>(bytes), size); }
  // Parses a hex string of 40 or 64 digits.
  static Status FromHex(std::string_view hex, Fingerprint* fp);

  bool operator==(const Fingerprint& o) const {
    return size == o.size && std::memcmp(bytes, o.bytes, size) == 0;
  }
  bool operator!=(const Fingerprint& o) const { return !(*this == o); }
  bool operator<(const Fingerprint& o) const {
    int c = std::memcmp(bytes, o.bytes, kMaxSize);
    return c < 0 || (c == 0 && size < o.size);
  }
};

struct FingerprintHasher {
  size_t operator()(const Fingerprint& fp) const { return static_cast<size_t>(fp.Hash64()); }
};

// Computes the fingerprint of |data|. Thread-safe; uses OpenSSL (SHA-NI where
// the CPU has it). All-zero data is NOT special-cased here; see Fingerprinter.
void ComputeFingerprint(FingerprintType type, const uint8_t* data, size_t n, Fingerprint* out);

// True if all |n| bytes are zero.
bool IsAllZero(const uint8_t* data, size_t n);

}  // namespace dedupv1

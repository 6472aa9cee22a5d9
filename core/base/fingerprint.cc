#include "core/base/fingerprint.h"

#include <openssl/evp.h>

#include <memory>

namespace dedupv1 {

size_t FingerprintSize(FingerprintType type) {
  return type == FingerprintType::kSha256 ? 32 : 20;
}

Status ParseFingerprintType(std::string_view name, FingerprintType* type) {
  if (name == "sha1" || name == "sha-1") {
    *type = FingerprintType::kSha1;
  } else if (name == "sha256" || name == "sha-256") {
    *type = FingerprintType::kSha256;
  } else {
    return Status::InvalidArgument("unknown fingerprint type '" + std::string(name) +
                                   "' (use sha1 or sha256)");
  }
  return Status::OK();
}

const char* FingerprintTypeName(FingerprintType type) {
  return type == FingerprintType::kSha256 ? "sha256" : "sha1";
}

std::string Fingerprint::ToHex() const {
  static const char kHex[] = "0123456789abcdef";
  std::string s(size * 2, '0');
  for (size_t i = 0; i < size; i++) {
    s[2 * i] = kHex[bytes[i] >> 4];
    s[2 * i + 1] = kHex[bytes[i] & 0xf];
  }
  return s;
}

Status Fingerprint::FromHex(std::string_view hex, Fingerprint* fp) {
  if (hex.size() != 40 && hex.size() != 64) {
    return Status::InvalidArgument("fingerprint must have 40 or 64 hex digits: " + std::string(hex));
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Fingerprint out;
  out.size = static_cast<uint8_t>(hex.size() / 2);
  for (size_t i = 0; i < out.size; i++) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Status::InvalidArgument("bad hex digit in fingerprint " + std::string(hex));
    out.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  *fp = out;
  return Status::OK();
}

namespace {

// The digest algorithms are fetched once; each thread keeps its own context
// so hashing never contends and never re-fetches (which OpenSSL 3 would do on
// every one-shot SHA1() call).
const EVP_MD* DigestFor(FingerprintType type) {
  static const EVP_MD* sha1 = EVP_MD_fetch(nullptr, "SHA1", nullptr);
  static const EVP_MD* sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return type == FingerprintType::kSha256 ? sha256 : sha1;
}

struct CtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

}  // namespace

void ComputeFingerprint(FingerprintType type, const uint8_t* data, size_t n, Fingerprint* out) {
  thread_local std::unique_ptr<EVP_MD_CTX, CtxDeleter> ctx(EVP_MD_CTX_new());
  unsigned int len = 0;
  EVP_DigestInit_ex2(ctx.get(), DigestFor(type), nullptr);
  EVP_DigestUpdate(ctx.get(), data, n);
  EVP_DigestFinal_ex(ctx.get(), out->bytes, &len);
  out->size = static_cast<uint8_t>(len);
}

bool IsAllZero(const uint8_t* data, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    std::memcpy(&v, data + i, 8);
    if (v != 0) return false;
  }
  for (; i < n; i++) {
    if (data[i] != 0) return false;
  }
  return true;
}

}  // namespace dedupv1

#include "filters/bloom_set.h"

#include <cmath>
#include <cstring>
#include <new>
#include <vector>

#include "core/base/coding.h"

namespace dedupv1 {

namespace {

constexpr char kMagic[8] = {'D', 'D', 'V', '1', 'B', 'L', 'O', 'M'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderSize = 40;
constexpr size_t kHeaderCrcOffset = 36;
constexpr int kMaxHashCount = 64;
// Save and Load move the bit array through a buffer of this many words.
constexpr size_t kIoWords = 128 * 1024;  // 1 MiB

// The two base hashes of double hashing: h_i = h1 + i * h2. Fingerprints are
// at least 20 bytes, so bytes [0, 16) are always hash output. h2 is made odd
// so that successive probes never repeat.
inline void BaseHashes(const Fingerprint& fp, uint64_t* h1, uint64_t* h2) {
  std::memcpy(h1, fp.bytes, 8);
  std::memcpy(h2, fp.bytes + 8, 8);
  *h2 |= 1;
}

// Maps a uniform 64-bit value onto [0, n) without a division (Lemire).
inline uint64_t Reduce(uint64_t h, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(h) * n) >> 64);
}

}  // namespace

BloomSet::BloomSet(uint64_t bit_count, int hash_count) : bit_count_(bit_count), hash_count_(hash_count) {}

Status BloomSet::Allocate(uint64_t bit_count, int hash_count, std::unique_ptr<BloomSet>* out) {
  std::unique_ptr<BloomSet> set(new BloomSet(bit_count, hash_count));
  // Value-initialised: every word starts at zero.
  set->words_.reset(new (std::nothrow) std::atomic<uint64_t>[bit_count / 64]());
  if (set->words_ == nullptr) {
    return Status::InvalidArgument("bloom set: cannot allocate " + std::to_string(bit_count / 8) + " bytes");
  }
  *out = std::move(set);
  return Status::OK();
}

Status BloomSet::Create(uint64_t expected_entries, double false_positive_rate, std::unique_ptr<BloomSet>* out) {
  if (expected_entries == 0) return Status::InvalidArgument("bloom set: expected entries must be > 0");
  if (!(false_positive_rate > 0.0 && false_positive_rate < 1.0)) {
    return Status::InvalidArgument("bloom set: false positive rate " + std::to_string(false_positive_rate) +
                                   " must be in (0, 1)");
  }
  const double ln2 = std::log(2.0);
  const double bits = std::ceil(-static_cast<double>(expected_entries) * std::log(false_positive_rate) / (ln2 * ln2));
  if (!(bits <= static_cast<double>(kMaxBits))) {
    return Status::InvalidArgument("bloom set: " + std::to_string(expected_entries) + " entries at rate " +
                                   std::to_string(false_positive_rate) + " need " + std::to_string(bits) +
                                   " bits, more than the limit " + std::to_string(kMaxBits));
  }
  uint64_t bit_count = static_cast<uint64_t>(bits);
  bit_count = std::max<uint64_t>(64, (bit_count + 63) / 64 * 64);
  int k = static_cast<int>(std::ceil(std::log2(1.0 / false_positive_rate)));
  k = std::max(1, std::min(k, kMaxHashCount));
  return Allocate(bit_count, k, out);
}

void BloomSet::Add(const Fingerprint& fp) {
  uint64_t h1, h2;
  BaseHashes(fp, &h1, &h2);
  for (int i = 0; i < hash_count_; i++) {
    const uint64_t bit = Reduce(h1, bit_count_);
    words_[bit >> 6].fetch_or(uint64_t{1} << (bit & 63), std::memory_order_relaxed);
    h1 += h2;
  }
  added_.fetch_add(1, std::memory_order_relaxed);
}

bool BloomSet::MightContain(const Fingerprint& fp) const {
  uint64_t h1, h2;
  BaseHashes(fp, &h1, &h2);
  for (int i = 0; i < hash_count_; i++) {
    const uint64_t bit = Reduce(h1, bit_count_);
    if ((words_[bit >> 6].load(std::memory_order_relaxed) & (uint64_t{1} << (bit & 63))) == 0) return false;
    h1 += h2;
  }
  return true;
}

Status BloomSet::Save(Env* env, const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::unique_ptr<File> f;
  DEDUPV1_RETURN_IF_ERROR(env->OpenFile(tmp, OpenMode::kTruncate, &f));
  const uint64_t words = bit_count_ / 64;
  const uint64_t added_snapshot = added();
  // The bit array first, so its CRC is of exactly the bytes written even if
  // Adds run meanwhile; the header that carries the CRC goes last.
  std::vector<uint8_t> buf(std::min<uint64_t>(words, kIoWords) * 8);
  uint32_t crc = 0;
  for (uint64_t w = 0; w < words;) {
    const uint64_t n = std::min<uint64_t>(words - w, kIoWords);
    for (uint64_t i = 0; i < n; i++) EncodeFixed64(&buf[i * 8], words_[w + i].load(std::memory_order_relaxed));
    crc = Crc32c(buf.data(), n * 8, crc);
    DEDUPV1_RETURN_IF_ERROR(f->Write(kHeaderSize + w * 8, buf.data(), n * 8));
    w += n;
  }
  uint8_t header[kHeaderSize];
  std::memcpy(header, kMagic, 8);
  EncodeFixed32(header + 8, kVersion);
  EncodeFixed32(header + 12, static_cast<uint32_t>(hash_count_));
  EncodeFixed64(header + 16, bit_count_);
  EncodeFixed64(header + 24, added_snapshot);
  EncodeFixed32(header + 32, crc);
  EncodeFixed32(header + kHeaderCrcOffset, Crc32c(header, kHeaderCrcOffset));
  DEDUPV1_RETURN_IF_ERROR(f->Write(0, header, kHeaderSize));
  DEDUPV1_RETURN_IF_ERROR(f->Sync());
  f.reset();
  DEDUPV1_RETURN_IF_ERROR(env->RenameFile(tmp, path));
  return env->SyncDir(DirName(path));
}

Status BloomSet::Load(Env* env, const std::string& path, std::unique_ptr<BloomSet>* out) {
  std::unique_ptr<File> f;
  DEDUPV1_RETURN_IF_ERROR(env->OpenFile(path, OpenMode::kReadOnly, &f));
  uint64_t size = 0;
  DEDUPV1_RETURN_IF_ERROR(f->Size(&size));
  auto corrupt = [&path](const std::string& what) {
    return Status::Corruption("bloom set file " + path + ": " + what);
  };
  if (size < kHeaderSize) return corrupt("truncated header (" + std::to_string(size) + " bytes)");
  uint8_t header[kHeaderSize];
  DEDUPV1_RETURN_IF_ERROR(f->Read(0, kHeaderSize, header));
  if (std::memcmp(header, kMagic, 8) != 0) return corrupt("bad magic");
  if (DecodeFixed32(header + kHeaderCrcOffset) != Crc32c(header, kHeaderCrcOffset)) {
    return corrupt("header checksum mismatch");
  }
  const uint32_t version = DecodeFixed32(header + 8);
  if (version != kVersion) {
    return Status::NotSupported("bloom set file " + path + ": unknown version " + std::to_string(version));
  }
  const uint32_t k = DecodeFixed32(header + 12);
  const uint64_t bit_count = DecodeFixed64(header + 16);
  const uint64_t added = DecodeFixed64(header + 24);
  const uint32_t expected_crc = DecodeFixed32(header + 32);
  if (k < 1 || k > static_cast<uint32_t>(kMaxHashCount)) return corrupt("bad hash count " + std::to_string(k));
  if (bit_count == 0 || bit_count % 64 != 0 || bit_count > kMaxBits) {
    return corrupt("bad bit count " + std::to_string(bit_count));
  }
  if (size != kHeaderSize + bit_count / 8) {
    return corrupt("size " + std::to_string(size) + " does not match bit count " + std::to_string(bit_count));
  }
  std::unique_ptr<BloomSet> set;
  DEDUPV1_RETURN_IF_ERROR(Allocate(bit_count, static_cast<int>(k), &set));
  const uint64_t words = bit_count / 64;
  std::vector<uint8_t> buf(std::min<uint64_t>(words, kIoWords) * 8);
  uint32_t crc = 0;
  for (uint64_t w = 0; w < words;) {
    const uint64_t n = std::min<uint64_t>(words - w, kIoWords);
    DEDUPV1_RETURN_IF_ERROR(f->Read(kHeaderSize + w * 8, n * 8, buf.data()));
    crc = Crc32c(buf.data(), n * 8, crc);
    for (uint64_t i = 0; i < n; i++) set->words_[w + i].store(DecodeFixed64(&buf[i * 8]), std::memory_order_relaxed);
    w += n;
  }
  if (crc != expected_crc) return corrupt("bit array checksum mismatch");
  set->added_.store(added, std::memory_order_relaxed);
  *out = std::move(set);
  return Status::OK();
}

}  // namespace dedupv1

// BloomSet is a fixed-size bloom filter over chunk fingerprints; it never
// deletes. "Not contained" is certain; "might contain" is wrong with about
// the false-positive rate it was sized for, as long as no more than the
// expected number of entries were added.
//
// Sized from the expected number of entries n and a false-positive target p:
// m = -n ln p / (ln 2)^2 bits (rounded up to whole 64-bit words),
// k = ceil(log2(1/p)) hash functions, derived by double hashing from two
// 64-bit words of the fingerprint (already uniform: it is a cryptographic
// hash). Thread-safe: Add and MightContain may run concurrently (atomic
// 64-bit words, fetch_or); Save may run concurrently with them and then
// stores some state between the one before and the one after.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/base/env.h"
#include "core/base/fingerprint.h"
#include "core/base/status.h"

namespace dedupv1 {

class BloomSet {
 public:
  // Largest bit array Create/Load accept (8 GiB of memory).
  static constexpr uint64_t kMaxBits = uint64_t{1} << 36;

  // InvalidArgument if expected_entries is 0, the rate is not in (0, 1), or
  // the set would exceed kMaxBits.
  static Status Create(uint64_t expected_entries, double false_positive_rate, std::unique_ptr<BloomSet>* out);

  BloomSet(const BloomSet&) = delete;
  BloomSet& operator=(const BloomSet&) = delete;

  void Add(const Fingerprint& fp);
  bool MightContain(const Fingerprint& fp) const;

  uint64_t bit_count() const { return bit_count_; }
  int hash_count() const { return hash_count_; }
  uint64_t memory_bytes() const { return bit_count_ / 8; }
  // Number of Add calls (including repeated adds of the same fingerprint).
  uint64_t added() const { return added_.load(std::memory_order_relaxed); }

  // Persistence so a restart does not start empty. File layout (little
  // endian): magic "DDV1BLOM" (8), version u32, k u32, bit count u64,
  // added u64, CRC32C of the bit array u32, CRC32C of the preceding 36 header
  // bytes u32; then the bit array as u64 words. Written to path + ".tmp",
  // synced and renamed over |path| (the WriteFileAtomically protocol,
  // streamed so a large set is not copied in memory).
  Status Save(Env* env, const std::string& path) const;
  // Corruption naming the file on a bad magic, header, size or CRC;
  // NotSupported for an unknown version.
  static Status Load(Env* env, const std::string& path, std::unique_ptr<BloomSet>* out);

 private:
  BloomSet(uint64_t bit_count, int hash_count);
  // Allocates a zeroed set; InvalidArgument if memory cannot be had.
  static Status Allocate(uint64_t bit_count, int hash_count, std::unique_ptr<BloomSet>* out);

  const uint64_t bit_count_;  // a multiple of 64
  const int hash_count_;
  std::unique_ptr<std::atomic<uint64_t>[]> words_;
  std::atomic<uint64_t> added_{0};
};

}  // namespace dedupv1

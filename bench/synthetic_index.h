// SyntheticIndex fills a chunk index hash table (index/disk_hash_table.h)
// with millions of made-up fingerprints quickly, and finds them again, for the
// index benchmarks (bench/micro_bench.cc, bench/index_bench_main.cc).
//
// Fingerprints are generated bucket by bucket: bucket b gets a pseudo-random
// number of entries (about Poisson with the mean the requested count gives,
// drawn from a generator seeded by (seed, b)), each a fingerprint whose home
// bucket (first 8 bytes mod bucket count) is b and whose other bytes are
// pseudo-random. So the table is what uniformly hashed fingerprints give, and
// the fingerprints of any bucket can be regenerated without storing them:
// building needs no memory per entry and lookups of existing keys need no
// list of them.
//
// Bulk loading goes through DiskHashTable::Apply (journal, in-place write,
// fsync: the code the engine's write-back uses) but in bucket order, so each
// batch writes a contiguous run of pages. The engine's write-back touches
// random pages (batches of 1024 entries); that path is far slower per entry
// and is measured separately (dedupv1_index_bench insert).
//
// Invariant: Bucket(b) returns the same fingerprints for the same (seed,
// bucket count, mean) every time; every one has home bucket b.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <vector>

#include "core/base/fingerprint.h"
#include "core/base/split_mix64.h"
#include "core/base/status.h"
#include "index/chunk_index_entry.h"
#include "index/disk_hash_table.h"

namespace dedupv1 {
namespace bench {

// SplitMix64: a tiny, fast, well-mixed generator; good enough for test keys.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    const uint64_t x = state_;
    state_ += kSplitMix64Gamma;
    return ::dedupv1::SplitMix64(x);
  }
  // Uniform in [0, 1).
  double NextDouble() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t state_;
};

// Bytes of a hash table file that holds |entries| fingerprints of |key_size|
// bytes at |fill| of its slots (pages of |page_size|, one header page).
inline uint64_t TableBytesFor(uint64_t entries, size_t page_size, size_t key_size, double fill) {
  const uint64_t slots = DiskHashTable::SlotsPerPage(page_size, key_size);
  const uint64_t buckets = static_cast<uint64_t>(std::ceil(static_cast<double>(entries) / (slots * fill))) + 1;
  return (buckets + 1) * page_size;
}

class SyntheticIndex {
 public:
  SyntheticIndex(uint64_t bucket_count, double mean_per_bucket, size_t key_size, uint64_t seed)
      : bucket_count_(bucket_count), mean_(mean_per_bucket), key_size_(key_size), seed_(seed) {}

  uint64_t bucket_count() const { return bucket_count_; }

  // Appends the fingerprints whose home bucket is |b| to |out|.
  void Bucket(uint64_t b, std::vector<Fingerprint>* out) const {
    SplitMix64 rng(seed_ * 0x2545f4914f6cdd1dULL ^ (b + 1) * 0x9e3779b97f4a7c15ULL);
    // Normal approximation of Poisson(mean) (mean is tens of entries here).
    double u1 = rng.NextDouble(), u2 = rng.NextDouble();
    double z = std::sqrt(-2.0 * std::log(u1 + 1e-300)) * std::cos(6.283185307179586 * u2);
    long n = std::lround(mean_ + std::sqrt(mean_) * z);
    if (n < 0) n = 0;
    const uint64_t spread = UINT64_MAX / bucket_count_ - 1;
    for (long i = 0; i < n; i++) {
      Fingerprint fp;
      fp.size = static_cast<uint8_t>(key_size_);
      uint64_t head = b + bucket_count_ * (rng.Next() % spread);
      std::memcpy(fp.bytes, &head, 8);
      for (size_t k = 8; k < key_size_; k += 8) {
        uint64_t r = rng.Next();
        std::memcpy(fp.bytes + k, &r, std::min<size_t>(8, key_size_ - k));
      }
      out->push_back(fp);
    }
  }

  // The entry stored for |fp|: a committed chunk in a container derived from it.
  static ChunkIndexEntry EntryFor(const Fingerprint& fp) {
    ChunkIndexEntry e;
    e.container = 1 + fp.Hash64() % 1000000;
    e.committed = true;
    return e;
  }

  // Puts every bucket's fingerprints into |table| in batches of about
  // |batch_buckets| buckets, in bucket order. |progress| (may be empty) is
  // called after each batch with the buckets done.
  Status Load(DiskHashTable* table, uint64_t batch_buckets,
              const std::function<void(uint64_t buckets_done)>& progress) const {
    std::vector<Fingerprint> fps;
    std::vector<DiskHashTable::Op> ops;
    for (uint64_t b0 = 0; b0 < bucket_count_; b0 += batch_buckets) {
      const uint64_t b1 = std::min(bucket_count_, b0 + batch_buckets);
      fps.clear();
      for (uint64_t b = b0; b < b1; b++) Bucket(b, &fps);
      ops.clear();
      ops.reserve(fps.size());
      for (const Fingerprint& fp : fps) ops.push_back(DiskHashTable::Op{fp, EntryFor(fp), false});
      DEDUPV1_RETURN_IF_ERROR(table->Apply(ops));
      if (progress) progress(b1);
    }
    return Status::OK();
  }

  // One existing fingerprint per bucket of |buckets| (a random one of the
  // bucket's, or none for an empty bucket), for lookups.
  std::vector<Fingerprint> KeysIn(const std::vector<uint64_t>& buckets, uint64_t pick_seed) const {
    std::vector<Fingerprint> keys, fps;
    SplitMix64 rng(pick_seed);
    keys.reserve(buckets.size());
    for (uint64_t b : buckets) {
      fps.clear();
      Bucket(b, &fps);
      if (!fps.empty()) keys.push_back(fps[rng.Next() % fps.size()]);
    }
    return keys;
  }

  // |n| distinct buckets in random order (a partial Fisher-Yates shuffle
  // over a sparse map, so n << bucket_count costs O(n)).
  std::vector<uint64_t> DistinctBuckets(uint64_t n, uint64_t pick_seed) const {
    n = std::min(n, bucket_count_);
    std::unordered_map<uint64_t, uint64_t> moved;  // position -> bucket, where it differs
    auto at = [&](uint64_t i) {
      auto it = moved.find(i);
      return it == moved.end() ? i : it->second;
    };
    SplitMix64 rng(pick_seed);
    std::vector<uint64_t> out;
    out.reserve(n);
    for (uint64_t i = 0; i < n; i++) {
      uint64_t j = i + rng.Next() % (bucket_count_ - i);
      uint64_t bi = at(i), bj = at(j);
      moved[j] = bi;
      out.push_back(bj);
    }
    return out;
  }

 private:
  uint64_t bucket_count_;
  double mean_;
  size_t key_size_;
  uint64_t seed_;
};

}  // namespace bench
}  // namespace dedupv1

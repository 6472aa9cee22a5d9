// LookupSkipPolicy decides, in cluster scope, whether a run's chunks that
// the auxiliary index does not hold are looked up in the shared chunk index
// in full, or only a probe of them (a sixteenth, one shard object of 16;
// ChunkIndex::Prefetch) with the rest taken as new and claimed at once if
// the probe finds nothing (docs/design-15.md 2.4, "Claims without a
// lookup").
//
// Why that is safe: a claim is a compare-and-set on an absent entry, so a
// claim of a chunk that exists is lost and answers with the entry that beat
// it; the lost-claim path (ChunkClaims::Claim) then maps the winner's
// container (C; U whose container exists; D revived) and marks our copy dead
// at once (core/engine/claim_step.h). Skipping the lookup never loses dedup
// and never maps a wrong copy; a wrong guess costs one copy's bytes in a
// container until container GC frees them. Why it pays: at 0% duplicates
// every lookup misses, and the lookups are the largest share of a run's
// index operations (one read per shard per run).
//
// The guess follows what the table answered lately: the share of asked
// fingerprints that existed, from table lookups (found / asked) and, while
// skipping, from claims (lost / claimed). Lookups are skipped only after
// kMinHistory answers and while that share stays below |threshold|; both
// counts halve once the history is long, so the policy follows the
// workload, and a probe that finds a chunk has its run looked up in full,
// so a gateway meeting data another stored finds it from that run on.
// Without history (a fresh gateway) every chunk is looked up. Threshold 0
// never skips.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>

namespace dedupv1 {

class LookupSkipPolicy {
 public:
  static constexpr double kMinHistory = 2048;
  static constexpr double kHistory = 8192;

  explicit LookupSkipPolicy(double threshold) : threshold_(threshold) {}

  // Whether the next run should claim its unknown chunks without a lookup.
  bool Skip() const {
    std::lock_guard<std::mutex> l(mu_);
    return threshold_ > 0 && asked_ >= kMinHistory && hits_ < threshold_ * asked_;
  }
  // |asked| fingerprints read from the table, |found| of them had entries.
  void CountLookups(uint64_t asked, uint64_t found) { Count(asked, found); }
  // |claimed| chunks claimed without a lookup, |lost| of them existed.
  void CountSkippedClaims(uint64_t claimed, uint64_t lost) { Count(claimed, lost); }

 private:
  void Count(uint64_t asked, uint64_t hits) {
    std::lock_guard<std::mutex> l(mu_);
    asked_ += static_cast<double>(asked);
    hits_ += static_cast<double>(hits);
    while (asked_ > kHistory) {
      asked_ /= 2;
      hits_ /= 2;
    }
  }

  const double threshold_;
  mutable std::mutex mu_;
  double asked_ = 0;
  double hits_ = 0;
};

}  // namespace dedupv1

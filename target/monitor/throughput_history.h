// ThroughputHistory keeps the recent I/O rates of a DedupSystem for the
// monitor's chart: one sample per reading (1 s by default) for the last few
// minutes, and one per |coarse_factor| readings (10 s by default) for the last
// hour. Both are bounded rings, so memory does not grow with uptime.
//
// Readings are the engine's cumulative counters (SystemStats atomics); a
// sample is the difference between two readings divided by the steady-clock
// time between them. A counter that went backwards (it never should) yields a
// zero rate, never a negative one. A coarse sample covers exactly the fine
// samples that went into it (bytes summed, time summed), so the hour chart
// agrees with the minute chart.
//
// Thread-safe: one thread records, any number of threads read snapshots. The
// lock is the history's own; the I/O path never takes it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace dedupv1 {

// The cumulative counters a reading takes.
struct ThroughputCounters {
  uint64_t bytes_written = 0;
  uint64_t bytes_read = 0;
  uint64_t write_ops = 0;
  uint64_t read_ops = 0;
  uint64_t bytes_chunked = 0;  // logical bytes deduplicated
};

// Rates over one interval.
struct ThroughputSample {
  int64_t time_ms = 0;             // wall-clock (Unix) time at the end of the interval
  double interval_seconds = 0;     // length of the interval
  double write_bytes_per_second = 0;
  double read_bytes_per_second = 0;
  double write_ops_per_second = 0;
  double read_ops_per_second = 0;
  double dedup_bytes_per_second = 0;
};

class ThroughputHistory {
 public:
  // |fine_capacity| samples of one reading each, |coarse_capacity| samples of
  // |coarse_factor| readings each. Defaults: 5 minutes of 1 s, 1 hour of 10 s.
  explicit ThroughputHistory(size_t fine_capacity = 300, size_t coarse_capacity = 360,
                             size_t coarse_factor = 10);

  // Adds a reading taken at |now| (steady clock, for the rate) and |unix_ms|
  // (wall clock, for display). The first reading only sets the base; a reading
  // not later than the previous one is ignored.
  void Record(const ThroughputCounters& counters, std::chrono::steady_clock::time_point now,
              int64_t unix_ms);

  // Oldest first.
  std::vector<ThroughputSample> Fine() const;
  std::vector<ThroughputSample> Coarse() const;
  // The newest fine sample; false if there is none yet.
  bool Latest(ThroughputSample* sample) const;

  size_t fine_capacity() const { return fine_capacity_; }
  size_t coarse_capacity() const { return coarse_capacity_; }
  size_t coarse_factor() const { return coarse_factor_; }

 private:
  static ThroughputSample MakeSample(const ThroughputCounters& delta, double seconds,
                                     int64_t unix_ms);

  const size_t fine_capacity_;
  const size_t coarse_capacity_;
  const size_t coarse_factor_;

  mutable std::mutex mu_;
  bool has_base_ = false;
  ThroughputCounters base_;
  std::chrono::steady_clock::time_point base_time_;
  std::deque<ThroughputSample> fine_;
  std::deque<ThroughputSample> coarse_;
  // The fine samples not yet folded into a coarse one.
  ThroughputCounters pending_delta_;
  double pending_seconds_ = 0;
  size_t pending_count_ = 0;
};

}  // namespace dedupv1

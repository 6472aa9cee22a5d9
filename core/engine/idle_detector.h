// IdleDetector decides when the system is idle, so background work (log
// replay into the indexes, index write-back, garbage collection) runs when it
// does not compete with requests (paper: idle-time write-back).
//
// It is fed samples of the engine's cumulative counters (bytes written and
// read, requests completed and their summed latency) with a monotonic time;
// it never reads a clock itself, so tests drive it with made-up times. Both
// are measured over a sliding window, between the newest sample and the
// newest sample at least |window_ms| older: throughput (bytes moved / span)
// and the mean latency of the requests completed in it. A window is quiet if
// its throughput is below |throughput_threshold| and its mean latency below
// |latency_threshold_ms| (a window without requests has no latency; a
// threshold of 0 leaves latency out): a trickle of slow requests means the
// disks are busy although few bytes move, and write requests slow down when
// the write buffer is full. The system is idle once windows have stayed
// quiet for |period_ms| without interruption; any window that is not ends
// idleness at once.
//
// Events (returned by Update, at most one per sample): kStart when idleness
// begins, kTick every |period_ms| while idle (the first tick one period after
// kStart), kEnd when it ends. An admin can force the state: kIdle acts as
// idle and kBusy as busy whatever the throughput; kAuto releases the force.
// A forced change takes effect at the next Update.
//
// Thread-safe: one thread calls Update; any thread may call SetMode/state.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "core/base/status.h"

namespace dedupv1 {

struct IdleOptions {
  uint64_t throughput_threshold = 1 << 20;  // bytes/s (reads + writes) below which the system may be idle
  uint64_t period_ms = 5000;                // how long throughput must stay below it; also the tick interval
  uint64_t window_ms = 1000;                // length of the throughput and latency window
  uint64_t latency_threshold_ms = 10;       // mean request latency at or above which it is busy; 0: not used
};

enum class IdleMode : uint8_t { kAuto = 0, kIdle = 1, kBusy = 2 };
const char* IdleModeName(IdleMode mode);  // "auto", "idle", "busy"
// Parses "auto", "idle" or "busy"; InvalidArgument otherwise.
Status ParseIdleMode(const std::string& text, IdleMode* mode);

enum class IdleEvent { kNone, kStart, kTick, kEnd };

struct IdleState {
  IdleMode mode = IdleMode::kAuto;
  bool idle = false;
  uint64_t idle_since_ms = 0;   // time of kStart (the caller's clock), valid while idle
  uint64_t below_for_ms = 0;    // how long windows have stayed quiet
  double write_bytes_per_second = 0;  // over the last window
  double read_bytes_per_second = 0;
  double requests_per_second = 0;     // requests completed in the last window, per second
  double mean_latency_ms = 0;         // their mean latency, 0 if there were none
  uint64_t starts = 0, ticks = 0, ends = 0;
  uint64_t samples = 0;
};

class IdleDetector {
 public:
  explicit IdleDetector(const IdleOptions& options) : options_(options) {}

  // One sample: |now_ms| from a monotonic clock (never decreasing), the
  // counters cumulative (|request_ns|: summed latency of the |requests|
  // completed). Returns what the caller should do now.
  IdleEvent Update(uint64_t now_ms, uint64_t bytes_written, uint64_t bytes_read, uint64_t requests = 0,
                   uint64_t request_ns = 0);

  void SetMode(IdleMode mode);
  IdleMode mode() const;
  IdleState state() const;
  const IdleOptions& options() const { return options_; }

 private:
  struct Sample {
    uint64_t ms, written, read, requests, request_ns;
  };

  const IdleOptions options_;
  mutable std::mutex mu_;
  // Samples of the last window plus the newest one older than it (the base).
  std::deque<Sample> samples_;
  bool below_ = false;
  uint64_t below_since_ms_ = 0;
  uint64_t last_tick_ms_ = 0;
  IdleState state_;
};

}  // namespace dedupv1

// ThroughputSampler is the background thread that feeds a ThroughputHistory:
// every |interval| it reads the engine's cumulative counters (lock-free
// atomics, so sampling never slows the I/O path) and records them.
//
// Start takes the first reading at once (the history's base), so the first
// sample exists one interval later. Stop is idempotent and returns promptly
// (the thread waits on a condition variable, not a sleep).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "target/monitor/throughput_history.h"

namespace dedupv1 {

class ThroughputSampler {
 public:
  ThroughputSampler(std::function<ThroughputCounters()> read_counters, ThroughputHistory* history,
                    std::chrono::milliseconds interval);
  ~ThroughputSampler();  // Stop()
  ThroughputSampler(const ThroughputSampler&) = delete;
  ThroughputSampler& operator=(const ThroughputSampler&) = delete;

  void Start();
  void Stop();

 private:
  void Loop();
  void TakeReading();

  const std::function<ThroughputCounters()> read_counters_;
  ThroughputHistory* const history_;
  const std::chrono::milliseconds interval_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dedupv1

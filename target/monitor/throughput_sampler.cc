#include "target/monitor/throughput_sampler.h"

namespace dedupv1 {

ThroughputSampler::ThroughputSampler(std::function<ThroughputCounters()> read_counters,
                                     ThroughputHistory* history,
                                     std::chrono::milliseconds interval)
    : read_counters_(std::move(read_counters)),
      history_(history),
      interval_(interval.count() > 0 ? interval : std::chrono::milliseconds(1000)) {}

ThroughputSampler::~ThroughputSampler() { Stop(); }

void ThroughputSampler::TakeReading() {
  const auto now = std::chrono::steady_clock::now();
  const int64_t unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  history_->Record(read_counters_(), now, unix_ms);
}

void ThroughputSampler::Start() {
  if (thread_.joinable()) return;
  TakeReading();
  thread_ = std::thread([this] { Loop(); });
}

void ThroughputSampler::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ThroughputSampler::Loop() {
  // Deadlines advance by a fixed step so samples stay one interval apart on
  // average even when a reading is late.
  auto next = std::chrono::steady_clock::now() + interval_;
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    if (cv_.wait_until(l, next, [this] { return stop_; })) break;
    l.unlock();
    TakeReading();
    l.lock();
    next += interval_;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + interval_;  // fell far behind (suspended): resync
  }
}

}  // namespace dedupv1

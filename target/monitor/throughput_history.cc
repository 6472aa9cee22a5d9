#include "target/monitor/throughput_history.h"

namespace dedupv1 {

namespace {

// a - b, or 0 if the counter went backwards.
uint64_t Delta(uint64_t a, uint64_t b) { return a >= b ? a - b : 0; }

}  // namespace

ThroughputHistory::ThroughputHistory(size_t fine_capacity, size_t coarse_capacity,
                                     size_t coarse_factor)
    : fine_capacity_(fine_capacity == 0 ? 1 : fine_capacity),
      coarse_capacity_(coarse_capacity == 0 ? 1 : coarse_capacity),
      coarse_factor_(coarse_factor == 0 ? 1 : coarse_factor) {}

ThroughputSample ThroughputHistory::MakeSample(const ThroughputCounters& d, double seconds,
                                               int64_t unix_ms) {
  ThroughputSample s;
  s.time_ms = unix_ms;
  s.interval_seconds = seconds;
  if (seconds > 0) {
    s.write_bytes_per_second = static_cast<double>(d.bytes_written) / seconds;
    s.read_bytes_per_second = static_cast<double>(d.bytes_read) / seconds;
    s.write_ops_per_second = static_cast<double>(d.write_ops) / seconds;
    s.read_ops_per_second = static_cast<double>(d.read_ops) / seconds;
    s.dedup_bytes_per_second = static_cast<double>(d.bytes_chunked) / seconds;
  }
  return s;
}

void ThroughputHistory::Record(const ThroughputCounters& c,
                               std::chrono::steady_clock::time_point now, int64_t unix_ms) {
  std::lock_guard<std::mutex> l(mu_);
  if (!has_base_) {
    has_base_ = true;
    base_ = c;
    base_time_ = now;
    return;
  }
  if (now <= base_time_) return;
  const double seconds = std::chrono::duration<double>(now - base_time_).count();
  ThroughputCounters d;
  d.bytes_written = Delta(c.bytes_written, base_.bytes_written);
  d.bytes_read = Delta(c.bytes_read, base_.bytes_read);
  d.write_ops = Delta(c.write_ops, base_.write_ops);
  d.read_ops = Delta(c.read_ops, base_.read_ops);
  d.bytes_chunked = Delta(c.bytes_chunked, base_.bytes_chunked);
  base_ = c;
  base_time_ = now;

  fine_.push_back(MakeSample(d, seconds, unix_ms));
  while (fine_.size() > fine_capacity_) fine_.pop_front();

  pending_delta_.bytes_written += d.bytes_written;
  pending_delta_.bytes_read += d.bytes_read;
  pending_delta_.write_ops += d.write_ops;
  pending_delta_.read_ops += d.read_ops;
  pending_delta_.bytes_chunked += d.bytes_chunked;
  pending_seconds_ += seconds;
  if (++pending_count_ >= coarse_factor_) {
    coarse_.push_back(MakeSample(pending_delta_, pending_seconds_, unix_ms));
    while (coarse_.size() > coarse_capacity_) coarse_.pop_front();
    pending_delta_ = ThroughputCounters();
    pending_seconds_ = 0;
    pending_count_ = 0;
  }
}

std::vector<ThroughputSample> ThroughputHistory::Fine() const {
  std::lock_guard<std::mutex> l(mu_);
  return {fine_.begin(), fine_.end()};
}

std::vector<ThroughputSample> ThroughputHistory::Coarse() const {
  std::lock_guard<std::mutex> l(mu_);
  return {coarse_.begin(), coarse_.end()};
}

bool ThroughputHistory::Latest(ThroughputSample* sample) const {
  std::lock_guard<std::mutex> l(mu_);
  if (fine_.empty()) return false;
  *sample = fine_.back();
  return true;
}

}  // namespace dedupv1

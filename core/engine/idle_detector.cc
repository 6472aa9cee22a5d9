#include "core/engine/idle_detector.h"

namespace dedupv1 {

const char* IdleModeName(IdleMode mode) {
  switch (mode) {
    case IdleMode::kIdle: return "idle";
    case IdleMode::kBusy: return "busy";
    case IdleMode::kAuto: break;
  }
  return "auto";
}

Status ParseIdleMode(const std::string& text, IdleMode* mode) {
  if (text == "auto") *mode = IdleMode::kAuto;
  else if (text == "idle") *mode = IdleMode::kIdle;
  else if (text == "busy") *mode = IdleMode::kBusy;
  else return Status::InvalidArgument("idle mode must be auto, idle or busy, got '" + text + "'");
  return Status::OK();
}

void IdleDetector::SetMode(IdleMode mode) {
  std::lock_guard<std::mutex> l(mu_);
  state_.mode = mode;
}

IdleMode IdleDetector::mode() const {
  std::lock_guard<std::mutex> l(mu_);
  return state_.mode;
}

IdleState IdleDetector::state() const {
  std::lock_guard<std::mutex> l(mu_);
  return state_;
}

IdleEvent IdleDetector::Update(uint64_t now_ms, uint64_t bytes_written, uint64_t bytes_read, uint64_t requests,
                               uint64_t request_ns) {
  std::lock_guard<std::mutex> l(mu_);
  state_.samples++;
  if (!samples_.empty() && now_ms < samples_.back().ms) now_ms = samples_.back().ms;  // never go back
  samples_.push_back({now_ms, bytes_written, bytes_read, requests, request_ns});
  // Keep one sample at or before the window start as the base.
  while (samples_.size() >= 2 && samples_[1].ms + options_.window_ms <= now_ms) samples_.pop_front();
  const Sample& base = samples_.front();
  const uint64_t span_ms = now_ms - base.ms;
  if (span_ms > 0) {
    // Counters only grow; a smaller value (a reset) counts as no traffic.
    const uint64_t w = bytes_written >= base.written ? bytes_written - base.written : 0;
    const uint64_t r = bytes_read >= base.read ? bytes_read - base.read : 0;
    state_.write_bytes_per_second = w * 1000.0 / span_ms;
    state_.read_bytes_per_second = r * 1000.0 / span_ms;
  } else {
    state_.write_bytes_per_second = state_.read_bytes_per_second = 0;
  }
  const uint64_t n = requests >= base.requests ? requests - base.requests : 0;
  const uint64_t ns = request_ns >= base.request_ns ? request_ns - base.request_ns : 0;
  state_.requests_per_second = span_ms > 0 ? n * 1000.0 / span_ms : 0;
  state_.mean_latency_ms = n > 0 ? ns / 1e6 / n : 0;
  const bool slow = options_.latency_threshold_ms > 0 && n > 0 &&
                    state_.mean_latency_ms >= static_cast<double>(options_.latency_threshold_ms);
  const bool below = !slow && state_.write_bytes_per_second + state_.read_bytes_per_second <
                                  static_cast<double>(options_.throughput_threshold);
  if (below && !below_) below_since_ms_ = now_ms;
  below_ = below;
  state_.below_for_ms = below ? now_ms - below_since_ms_ : 0;

  bool want_idle;
  switch (state_.mode) {
    case IdleMode::kIdle: want_idle = true; break;
    case IdleMode::kBusy: want_idle = false; break;
    default: want_idle = below && state_.below_for_ms >= options_.period_ms; break;
  }
  if (want_idle && !state_.idle) {
    state_.idle = true;
    state_.idle_since_ms = now_ms;
    last_tick_ms_ = now_ms;
    state_.starts++;
    return IdleEvent::kStart;
  }
  if (!want_idle && state_.idle) {
    state_.idle = false;
    state_.idle_since_ms = 0;
    state_.ends++;
    return IdleEvent::kEnd;
  }
  if (state_.idle && now_ms - last_tick_ms_ >= options_.period_ms) {
    last_tick_ms_ = now_ms;
    state_.ticks++;
    return IdleEvent::kTick;
  }
  return IdleEvent::kNone;
}

}  // namespace dedupv1

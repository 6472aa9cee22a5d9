// Progress draws a one-line progress bar on stderr for long work of the
// offline tools: percent, done/total, items per second and the estimated time
// left, redrawn at most a few times per second with '\r'. Drawing is off
// unless enabled (the tools enable it when stderr is a terminal or
// --progress is given), so output piped into scripts stays clean.
// Not thread-safe: one thread drives one Progress.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace dedupv1 {
namespace tools {

class Progress {
 public:
  // |total| 0 means unknown (no percent or ETA). |unit| names the items
  // ("containers", "blocks", ...).
  Progress(std::string label, uint64_t total, std::string unit, bool enabled);
  ~Progress();  // Finish()

  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Add(uint64_t n = 1) { Set(done_ + n); }
  void Set(uint64_t done);
  // Draws the final state and ends the line. Idempotent.
  void Finish();

  // The line drawn for the given state, e.g.
  // "containers  42% 420/1000 containers  84.0 containers/s  ETA 0:07".
  static std::string Format(const std::string& label, uint64_t done, uint64_t total,
                            const std::string& unit, double elapsed_s);

 private:
  void Draw(bool final);

  const std::string label_;
  const uint64_t total_;
  const std::string unit_;
  const bool enabled_;
  uint64_t done_ = 0;
  bool finished_ = false;
  bool drawn_ = false;
  size_t last_width_ = 0;
  const std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace tools
}  // namespace dedupv1

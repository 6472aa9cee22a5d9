#include "target/tools/progress.h"

#include <cstdio>

#include <fmt/format.h>

namespace dedupv1 {
namespace tools {

namespace {
constexpr auto kRedrawInterval = std::chrono::milliseconds(200);

std::string FormatDuration(double seconds) {
  uint64_t s = static_cast<uint64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}
}  // namespace

Progress::Progress(std::string label, uint64_t total, std::string unit, bool enabled)
    : label_(std::move(label)), total_(total), unit_(std::move(unit)), enabled_(enabled),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

Progress::~Progress() { Finish(); }

void Progress::Set(uint64_t done) {
  done_ = done;
  if (!enabled_ || finished_) return;
  auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  Draw(false);
}

void Progress::Finish() {
  if (finished_) return;
  finished_ = true;
  if (enabled_) Draw(true);
}

std::string Progress::Format(const std::string& label, uint64_t done, uint64_t total,
                             const std::string& unit, double elapsed_s) {
  const double rate = elapsed_s > 0 ? done / elapsed_s : 0;
  std::string line = label;
  if (total > 0) {
    const uint64_t pct = done >= total ? 100 : done * 100 / total;
    line += fmt::format(" {:3}% {}/{} {}", pct, done, total, unit);
  } else {
    line += fmt::format(" {} {}", done, unit);
  }
  line += fmt::format("  {:.1f} {}/s", rate, unit);
  if (total > 0 && done < total && rate > 0) {
    line += "  ETA " + FormatDuration((total - done) / rate);
  } else if (total > 0 && done >= total) {
    line += "  in " + FormatDuration(elapsed_s);
  }
  return line;
}

void Progress::Draw(bool final) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = Format(label_, done_, total_, unit_, elapsed);
  // Blank out what is left of a longer previous line.
  const size_t width = line.size();
  if (width < last_width_) line.append(last_width_ - width, ' ');
  last_width_ = width;
  std::fprintf(stderr, "\r%s%s", line.c_str(), final ? "\n" : "");
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace tools
}  // namespace dedupv1

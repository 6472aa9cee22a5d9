#include "target/gateway_watch.h"

namespace dedupv1 {
namespace {

std::string Beat(const SlotView& s) {
  if (!s.has_heartbeat) return "no heartbeat";
  return "heartbeat " + std::to_string(s.heartbeat.beat) + "@" + std::to_string(s.heartbeat.incarnation) + " " +
         s.heartbeat.state;
}

bool SameHeartbeat(const SlotView& a, const SlotView& b) {
  if (a.has_heartbeat != b.has_heartbeat) return false;
  return !a.has_heartbeat || a.heartbeat == b.heartbeat;
}

}  // namespace

const char* WatchVerdictName(WatchVerdict v) {
  switch (v) {
    case WatchVerdict::kServed: return "served";
    case WatchVerdict::kStopped: return "stopped";
    case WatchVerdict::kSuspect: return "suspect";
    case WatchVerdict::kTakeOver: return "take over";
  }
  return "?";
}

WatchVerdict GatewayWatch::Judge(const SlotView& now, std::string* why) {
  std::string said;
  WatchVerdict v;
  const std::string state = now.State();
  if (now.lock_held()) {
    // No beat count here: the line is said again only when the holder changes.
    said = "lock held by " + now.holders.front().client + " " + now.holders.front().address + " (incarnation " +
           std::to_string(now.record.incarnation) + ", " + now.record.host + " pid " + std::to_string(now.record.pid) +
           ")";
    last_.reset();
    v = WatchVerdict::kServed;
  } else if (state == "stopped" || state == "new") {
    said = state == "new" ? "registered, never opened: nothing to take over"
                          : "closed cleanly by its holder (" + Beat(now) + "): left to the admin";
    last_.reset();
    v = WatchVerdict::kStopped;
  } else if (!now.problem.empty()) {
    // An unreadable lock is not a free one.
    said = "cannot judge (" + now.problem + "): looking again next round";
    last_.reset();
    v = WatchVerdict::kSuspect;
  } else if (last_ && last_->record.incarnation == now.record.incarnation &&
             (SameHeartbeat(*last_, now) || (state == "fenced" && last_->State() == "fenced"))) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - last_at_);
    if (waited >= min_gap_) {
      said = "lock free for " + std::to_string(waited.count() / 1000) + " s, " + Beat(now) +
             (state == "fenced" ? " (its holder fenced itself)" : " unchanged") + " (incarnation " +
             std::to_string(now.record.incarnation) + ", last holder " + now.record.host + " pid " +
             std::to_string(now.record.pid) + ")";
      v = WatchVerdict::kTakeOver;
    } else {
      said = "lock free, " + Beat(now) + ": waiting a lease before taking over";
      v = WatchVerdict::kSuspect;  // keep the first sighting and its time
    }
  } else {
    said = "lock free (" + Beat(now) + "): looking again next round";
    last_ = now;
    last_at_ = std::chrono::steady_clock::now();
    v = WatchVerdict::kSuspect;
  }
  if (why != nullptr) *why = said;
  return v;
}

}  // namespace dedupv1

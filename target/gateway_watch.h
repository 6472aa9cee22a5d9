// GatewayWatch: the judgement of `dedupv1d watch` (design-15 2.2
// "Automatic"): from successive snapshots of one gateway slot
// (core/engine/cluster_view.h), read by the watcher itself an interval
// apart, whether to take the slot over now.
//
// A slot is taken over only when snapshots at least |min_gap| apart (one
// lease: a live holder beats every third of it) all find its lock free (the
// holder's lease ran out: list_lockers is empty) and its heartbeat unchanged
// since the first of them, and the slot is neither "stopped" (closed by an
// admin's `dedupv1d stop`: an admin's decision) nor "new" (never opened:
// nothing to recover). A holder whose heartbeat says "fenced" (its lease
// lapsed; it refuses all I/O) is taken over once its lock is free for
// |min_gap|, whatever its beat does. The gap is what makes the judgement safe
// against a stale read and a slow beat: a holder that closes cleanly releases
// its lock a moment before it writes "stopped". A snapshot with a problem
// (the lock or the heartbeat could not be read) is never a reason to act. No
// clock of another machine is compared, only this watcher's own reads and
// its own monotonic clock.
//
// Not thread-safe (one watcher loop owns one).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/engine/cluster_view.h"

namespace dedupv1 {

enum class WatchVerdict {
  kServed,    // lock held: the holder renews its lease
  kStopped,   // closed cleanly, or never opened: left alone
  kSuspect,   // lock free, first sighting (or the heartbeat moved): look again next round
  kTakeOver,  // lock free twice, heartbeat still: take it over
};

const char* WatchVerdictName(WatchVerdict v);

class GatewayWatch {
 public:
  explicit GatewayWatch(std::chrono::milliseconds min_gap = std::chrono::milliseconds(0)) : min_gap_(min_gap) {}

  // Judges |now|, the newest snapshot of the slot, against the previous one.
  // |why| (may be null) gets one line saying what was seen.
  WatchVerdict Judge(const SlotView& now, std::string* why);
  // Forgets the previous snapshot (after a takeover attempt: the next
  // rounds start afresh).
  void Reset() { last_.reset(); }

 private:
  const std::chrono::milliseconds min_gap_;
  std::optional<SlotView> last_;  // first snapshot of the current sighting of a free lock
  std::chrono::steady_clock::time_point last_at_;  // when last_ was read
};

}  // namespace dedupv1

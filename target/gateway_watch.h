// GatewayWatch: the judgement of `dedupv1d watch` (design-15 2.2
// "Automatic"): from successive snapshots of one gateway slot
// (core/engine/cluster_view.h), read by the watcher itself an interval
// apart, whether to take the slot over now.
//
// A slot is taken over only when two consecutive snapshots both find its
// lock free (the holder's lease ran out: list_lockers is empty) and its
// heartbeat unchanged between them (no beat was written in between), and the
// slot is neither "stopped" (its holder closed it cleanly: an admin's stop
// is an admin's decision) nor "new" (never opened: nothing to recover). The
// second look is what makes the judgement safe against one stale read: a
// holder that closes cleanly releases its lock a moment before it writes
// "stopped", and a slot whose heartbeat still changes is served by someone.
// No clock of another machine is compared, only this watcher's own reads.
//
// Not thread-safe (one watcher loop owns one).
#pragma once

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
  // Judges |now|, the newest snapshot of the slot, against the previous one.
  // |why| (may be null) gets one line saying what was seen.
  WatchVerdict Judge(const SlotView& now, std::string* why);
  // Forgets the previous snapshot (after a takeover attempt: the next
  // rounds start afresh).
  void Reset() { last_.reset(); }

 private:
  std::optional<SlotView> last_;  // previous snapshot whose lock was free
};

}  // namespace dedupv1

// The report of a damaged operations log for the tools (dedupv1_debug log,
// dedupv1_replay --accept-log-damage): each damaged region slot by slot (file
// slot, slot sequence, offset, why it was refused), the event ids lost, the
// slot that proves the damage (docs/durability.md "Damage"), and the intact
// events after the damage, each described like `dedupv1_debug log` does
// (volume and block of a mapping event).
#pragma once

#include <ostream>

#include "core/base/status.h"
#include "log/operations_log.h"

namespace dedupv1 {
namespace tools {

// Prints the damage |log| found at open (opened with accept_damage and
// damage_pending()). Reads the intact events after the damage from the log
// file (ReplaySalvaged); their read errors are returned.
Status PrintLogDamage(OperationsLog* log, std::ostream& out);

}  // namespace tools
}  // namespace dedupv1

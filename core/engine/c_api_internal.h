// C++-only access from a C API handle to the engine behind it, for the tgt
// module's glue that starts the monitor next to the system it opened.
#pragma once

#include "core/engine/dedup_system.h"
#include "core/engine/dedupv1_c.h"

namespace dedupv1 {

// The system behind |sys| (never null for a handle from dedupv1_open).
DedupSystem* SystemOf(dedupv1_system* sys);

// Reports |s| the way the C API does: its message into |err| (truncated to
// |errlen|) unless ok, and the DEDUPV1_E* code for it.
int ReportStatus(const Status& s, char* err, size_t errlen);

}  // namespace dedupv1

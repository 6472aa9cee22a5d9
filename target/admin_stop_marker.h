// The admin-stop marker: how `dedupv1d stop` tells tgtd's dedupv1 module
// that the close it is about to see is an admin's stop. Only then does the
// module write "stopped" into the gateway slot's heartbeat, which makes every
// `dedupv1d watch` leave the slot alone. Any other close (a failed start or
// takeover tearing tgtd down, a tgtd stopped by hand) leaves the last beat as
// it was, so the slot looks down once its lock is free and a watcher takes it
// over: a failed start must never end automatic failover silently.
//
// The marker is a file in the instance's data dir: dedupv1d writes it before
// it takes the LUNs down and removes it after; the module removes a stale
// one when it opens the engine.
#pragma once

namespace dedupv1 {

constexpr char kAdminStopMarker[] = "dedupv1d.stopping";

}  // namespace dedupv1

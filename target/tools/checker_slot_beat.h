// The offline checker's dealings with a slot's heartbeat (gw.NAME.state,
// core/rados/gateway_heartbeat.h), so that checking a store neither runs
// under a holder that may still be alive nor makes a stopped slot look down:
//  - RefuseLiveHolder, before the checker takes a slot's lock: a heartbeat
//    saying "serving" (or one that cannot be decoded) written less than
//    2 x the lock lease ago (the object's mtime) may belong to a holder that
//    is merely paused: its lock lapsed, but it was never fenced, and opening
//    the slot would replay its log under it. Busy then; a dead holder's slot
//    can be checked once its beat is that old, or after `dedupv1d takeover`
//    (which fences it). "stopped" and "fenced" beats are no holder's.
//  - WriteStoppedBeat, after the checker closed a slot: its open made a new
//    incarnation; a "stopped" beat of that incarnation keeps SlotView saying
//    "stopped" (not "down"), so a watcher does not take over and restart a
//    slot the admin stopped.
// The mtime is the writer's clock as the OSD stored it: across machines the
// age is off by their clock skew (a margin of a lease covers ordinary skew).
#pragma once

#include <cstdint>
#include <string>

#include "core/base/status.h"
#include "core/rados/gateway_registry.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {
namespace tools {

// OK if slot |name| wrote no heartbeat, a stopped or fenced one, or one
// older than 2 x |lease_s|; Busy naming the slot otherwise.
Status RefuseLiveHolder(RadosCluster* cluster, const std::string& name, uint32_t lease_s);

// Writes a "stopped" heartbeat of |record|'s incarnation for slot |name|
// (this process as its last holder, no volumes).
Status WriteStoppedBeat(RadosCluster* cluster, const std::string& name, const GatewayRecord& record);

}  // namespace tools
}  // namespace dedupv1

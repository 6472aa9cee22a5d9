// The iSCSI TrafficTarget: a LUN reached through libiscsi. The target keeps a
// control session (READ CAPACITY at open, SYNCHRONIZE CACHE at Sync); every
// stream logs in with its own session (its own initiator name), like one
// backup client, and keeps up to queue_depth WRITE(16)/READ(16) commands in
// flight with libiscsi's asynchronous API. Commands that end in UNIT
// ATTENTION are retried (at most 3 times); any other failure names the
// command, the LBA and the sense. Auto-reconnect is off: a lost session is an
// error, never a silent replay.
#pragma once

#include <memory>
#include <string>

#include "bench/traffic_target.h"

namespace dedupv1 {
namespace bench {

// |url| is iscsi://HOST[:PORT]/IQN/LUN. Fails with NotSupported when the
// build has no libiscsi.
Status OpenIscsiTarget(const std::string& url, const TargetOptions& options,
                       std::unique_ptr<TrafficTarget>* target);

}  // namespace bench
}  // namespace dedupv1

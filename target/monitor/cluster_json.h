// The cluster view (core/engine/cluster_view.h) as JSON: the document of the
// monitor's GET /cluster and of `dedupv1d cluster --json`, one format for
// both so a test or a script reads either the same way:
//   {"store": NS, "gateways": [{"gateway", "slot", "state", "incarnation",
//     "takeovers", "lock_held", "lock_holders": [{"client","address","cookie"}],
//     "holder": {"host","pid","address"}, "heartbeat": null | {"beat",
//     "incarnation", "state", "portal", "host", "pid", "volumes": [...]},
//     "volumes": [{"name","id","size_bytes","uid"}], "problem"}],
//    "volumes": {NAME: GATEWAY, ...}, "takeovers": total}
#pragma once

#include <nlohmann/json.hpp>

#include "core/engine/cluster_view.h"

namespace dedupv1 {

nlohmann::ordered_json ClusterViewJson(const ClusterView& view);

}  // namespace dedupv1

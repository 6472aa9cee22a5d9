// The cluster view (core/engine/cluster_view.h) as JSON: the document of the
// monitor's GET /cluster and of `dedupv1d cluster --json`, one format for
// both so a test or a script reads either the same way:
//   {"store": NS, "gateways": [{"gateway", "slot", "state", "incarnation",
//     "takeovers", "lock_held", "lock_holders": [{"client","address","cookie"}],
//     "holder": {"host","pid","address"}, "heartbeat": null | {"beat",
//     "incarnation", "state", "portal", "host", "pid", "volumes": [...]},
//     "volumes": [{"name","id","size_bytes","uid"}], "problem"}],
//    "volumes": {NAME: GATEWAY, ...}, "takeovers": total,
//    "claims_pending": sum, "shard_max_over_mean": busiest gateway's}
// A heartbeat with load figures (cluster scope) adds "claims_pending",
// "shards", "shard_ops_total", "shard_ops_max", "shard_max_over_mean".
// `dedupv1d cluster --shards` adds "shard_keys": ShardKeysJson.
#pragma once

#include <nlohmann/json.hpp>

#include "core/engine/cluster_view.h"
#include "core/engine/shard_keys.h"

namespace dedupv1 {

nlohmann::ordered_json ClusterViewJson(const ClusterView& view);
// [{"table", "shards", "keys", "min", "max", "mean", "max_over_mean"}]
nlohmann::ordered_json ShardKeysJson(const std::vector<ShardKeyCounts>& tables);

}  // namespace dedupv1

// ShardKeys counts the omap keys of every shard object of a store's chunk
// index tables (`dedupv1d cluster --shards`, design-15 2.7): the shared
// table ("ci.<hex>", cluster scope) and each slot's own ("gw.NAME/ci.<hex>",
// gateway scope), whichever have a header. Keys, not entries: in format 2 a
// chunk has its entry, a usage key per referencing slot and maybe a GC hint.
// Shows how evenly fingerprints spread over the shards (issue 15's target:
// max/mean <= 1.1) and how close a shard comes to Ceph's large-omap warning.
//
// Reads only: per shard one omap key listing per kShardKeyPage keys (every
// op through the RadosCluster, counted, bounded by its op timeout). A
// missing shard object (no chunk reached it yet) has 0 keys.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

// Keys listed per read.
constexpr uint64_t kShardKeyPage = 1024;

struct ShardKeyCounts {
  std::string table;          // "ci" (shared) or "gw.NAME/ci"
  std::vector<uint64_t> keys; // per shard
  uint64_t Min() const;
  uint64_t Max() const;
  uint64_t Total() const;
  double Mean() const;
  double MaxOverMean() const;  // 0 without keys
};

// Calls |f| with every omap key of index-pool object |oid| in order, listed
// kShardKeyPage at a time; an object that does not exist has none.
Status ForEachOmapKey(RadosCluster* cluster, const std::string& oid, const std::string& what,
                      const std::function<void(const std::string& key)>& f);

// The keys of table |prefix| ("" for the shared table, "gw.NAME/" for a
// slot's) of |shards| shards.
Status CountShardKeys(RadosCluster* cluster, const std::string& prefix, uint32_t shards, ShardKeyCounts* out);

// Every chunk index table of the store that exists: the shared one first,
// then each of |slots| (gateway names) whose own table exists.
Status CountStoreShardKeys(RadosCluster* cluster, uint32_t shards, const std::vector<std::string>& slots,
                           std::vector<ShardKeyCounts>* out);

// One line per table: "chunk index ci: 64 shards, 12345 keys; per shard min
// 150, max 230, mean 192.9, max/mean 1.19".
std::string FormatShardKeys(const std::vector<ShardKeyCounts>& tables);

}  // namespace dedupv1

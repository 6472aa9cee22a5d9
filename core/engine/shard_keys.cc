#include "core/engine/shard_keys.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <set>

#include "core/rados/rados_file.h"
#include "index/rados_chunk_table.h"

namespace dedupv1 {

uint64_t ShardKeyCounts::Min() const { return keys.empty() ? 0 : *std::min_element(keys.begin(), keys.end()); }
uint64_t ShardKeyCounts::Max() const { return keys.empty() ? 0 : *std::max_element(keys.begin(), keys.end()); }
uint64_t ShardKeyCounts::Total() const {
  uint64_t n = 0;
  for (uint64_t k : keys) n += k;
  return n;
}
double ShardKeyCounts::Mean() const { return keys.empty() ? 0.0 : static_cast<double>(Total()) / keys.size(); }
double ShardKeyCounts::MaxOverMean() const {
  const double mean = Mean();
  return mean == 0 ? 0.0 : Max() / mean;
}

Status ForEachOmapKey(RadosCluster* cluster, const std::string& oid, const std::string& what,
                      const std::function<void(const std::string& key)>& f) {
  std::string after;
  for (bool more = true; more;) {
    std::set<std::string> keys;
    int keys_r = 0;
    int r = 0;
    librados::ObjectReadOperation op;
    op.omap_get_keys2(after, kShardKeyPage, &keys, &more, &keys_r);
    Status s = RadosOperateRead(cluster, oid, &op, RadosOpKind::kOmapRead, what, &r);
    if (r == -ENOENT) return Status::OK();  // e.g. no chunk reached the shard yet
    DEDUPV1_RETURN_IF_ERROR(s);
    if (keys.empty()) break;
    for (const std::string& key : keys) f(key);
    after = *keys.rbegin();
  }
  return Status::OK();
}

Status CountShardKeys(RadosCluster* cluster, const std::string& prefix, uint32_t shards, ShardKeyCounts* out) {
  ShardKeyCounts counts;
  counts.table = prefix + "ci";
  const int bits = RadosChunkTable::ShardBits(shards);
  for (uint32_t shard = 0; shard < shards; shard++) {
    const std::string oid = prefix + RadosChunkTable::ShardObject(shard, bits);
    uint64_t n = 0;
    DEDUPV1_RETURN_IF_ERROR(
        ForEachOmapKey(cluster, oid, "count the keys of a chunk index shard", [&n](const std::string&) { n++; }));
    counts.keys.push_back(n);
  }
  *out = std::move(counts);
  return Status::OK();
}

Status CountStoreShardKeys(RadosCluster* cluster, uint32_t shards, const std::vector<std::string>& slots,
                           std::vector<ShardKeyCounts>* out) {
  out->clear();
  std::vector<std::string> prefixes = {""};
  for (const std::string& name : slots) prefixes.push_back("gw." + name + "/");
  for (const std::string& prefix : prefixes) {
    bool exists = false;
    DEDUPV1_RETURN_IF_ERROR(cluster->IndexObjectExists(prefix + RadosChunkTable::kHeaderObject,
                                                       "look for a chunk index header", &exists));
    if (!exists) continue;
    ShardKeyCounts counts;
    DEDUPV1_RETURN_IF_ERROR(CountShardKeys(cluster, prefix, shards, &counts));
    out->push_back(std::move(counts));
  }
  return Status::OK();
}

std::string FormatShardKeys(const std::vector<ShardKeyCounts>& tables) {
  if (tables.empty()) return "chunk index: no table in RADOS yet\n";
  std::string out;
  for (const ShardKeyCounts& t : tables) {
    char line[256];
    std::snprintf(line, sizeof(line),
                  "chunk index %s: %zu shards, %llu keys; per shard min %llu, max %llu, mean %.1f, max/mean %.2f\n",
                  t.table.c_str(), t.keys.size(), static_cast<unsigned long long>(t.Total()),
                  static_cast<unsigned long long>(t.Min()), static_cast<unsigned long long>(t.Max()), t.Mean(),
                  t.MaxOverMean());
    out += line;
  }
  return out;
}

}  // namespace dedupv1

#include "index/shard_load.h"

namespace dedupv1 {

ShardLoad::ShardLoad(uint32_t shards) : shards_(shards), ops_(new std::atomic<uint64_t>[shards == 0 ? 1 : shards]) {
  for (uint32_t i = 0; i < shards_; i++) ops_[i].store(0);
}

void ShardLoad::Count(uint32_t shard) {
  if (shard < shards_) ops_[shard].fetch_add(1, std::memory_order_relaxed);
}

void ShardLoad::CountObject(const std::string& oid) {
  // The shard's number is the hex after the last "ci.".
  const size_t at = oid.rfind("ci.");
  if (at == std::string::npos || at + 3 >= oid.size()) return;
  uint64_t shard = 0;
  for (size_t i = at + 3; i < oid.size(); i++) {
    const char c = oid[i];
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else return;  // "ci.header" and other names
    shard = shard * 16 + digit;
    if (shard >= shards_) return;
  }
  Count(static_cast<uint32_t>(shard));
}

ShardLoadSummary ShardLoad::Summary() const {
  ShardLoadSummary s;
  s.shards = shards_;
  for (uint32_t i = 0; i < shards_; i++) {
    const uint64_t n = ops_[i].load(std::memory_order_relaxed);
    s.total += n;
    if (n > s.max) s.max = n;
  }
  return s;
}

}  // namespace dedupv1

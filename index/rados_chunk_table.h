// RadosChunkTable is the chunk index's persistent table in Ceph (storage.backend
// = rados): sharded by fingerprint prefix over omap objects of the index pool,
// in the store's namespace. CRUSH places the shards on the OSDs, so no server
// holds a central index (seed 004's fingerprint routing at shard granularity).
//
// Layout (docs/formats.md):
//  - "ci.header": format version, shard count and fingerprint size, with a
//    CRC32C. Written once (exclusive create); opening with other options is
//    InvalidArgument naming both.
//  - "ci.<shard hex>": shard s holds the fingerprints whose first k bits are
//    s (2^k shards, a power of two; the name has ceil(k/4) hex digits). Each
//    entry is one omap key (the fingerprint's bytes) whose value is the
//    encoded entry with a CRC32C over key and value; the shard's omap header
//    holds its entry count (with a CRC).
//  - In a gateway slot (RadosOptions::gateway) both are named under the
//    slot: "gw.NAME/ci.header", "gw.NAME/ci.<hex>": each slot has a table
//    of its own and dedups on its own.
//
// Invariants:
//  - A shard's keys, values and entry count change together, in one atomic
//    write operation per shard and Apply. Apply reads the shard's count and
//    which of its keys exist first (one read operation per shard), so the
//    counts stay exact with one writer per store (the store lock).
//  - A value, key or count that does not check out is Corruption naming the
//    shard object and key; its data is never used.
//  - Operations are batched per shard and run asynchronously, up to
//    max_in_flight at once: a GetMany of n keys costs one omap read per shard
//    touched, an Apply one read and one write per shard touched, a scan
//    (Verify, ForEachEntry) rounds of one page read per unfinished shard.
//  - An Apply that failed on some shard may have been applied on others;
//    ChunkIndex keeps such entries in memory and re-applies them (puts and
//    erases are idempotent).
//  - A full pool (quota) makes Apply fail as IOError naming the pool: it is no
//    fault of the entries (DiskHashTable's NoSpace would park them one by one).
//
// entry_count() is exact and costs nothing: the sum of the shards' counts,
// read at Open (one omap-header read per shard, all in flight) and kept by
// Apply. capacity() is unbounded in practice (2^62): a pool grows with the
// cluster, and the limit that does exist, its quota, shows up as Apply's error.
//
// Thread-safety: all methods are thread-safe; Apply and Verify are serialized.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/rados/rados_cluster.h"
#include "core/rados/rados_options.h"
#include "index/chunk_table.h"

namespace dedupv1 {

struct RadosChunkTableOptions {
  RadosOptions rados;          // cluster, index pool, store namespace
  uint32_t shards = 64;        // power of two, 1 .. 65536; fixed at creation
  size_t key_size = 20;        // fingerprint bytes: 20 (SHA-1), 32 (SHA-256)
  size_t max_in_flight = 64;   // asynchronous operations at once
};

class RadosChunkTable : public ChunkTable {
 public:
  static constexpr char kHeaderObject[] = "ci.header";

  // Connects (RadosCluster::Shared), creates the header object if missing or
  // checks it, and reads the shards' entry counts.
  static Status Open(const RadosChunkTableOptions& options, std::unique_ptr<RadosChunkTable>* out);
  // Whether the table's header object exists (the table was created); one
  // stat, nothing created.
  static Status Exists(const RadosChunkTableOptions& options, bool* exists);

  // The shard of |fp| among 2^|shard_bits| shards, and the shard's object name.
  static uint32_t ShardOf(const Fingerprint& fp, int shard_bits);
  static std::string ShardObject(uint32_t shard, int shard_bits);
  // The shard bits of a table of |shards| shards (a power of two).
  static int ShardBits(uint32_t shards);
  // The full names of the table's objects in the store of |rados| (with the
  // gateway slot's prefix): what a fence of the slot touches.
  static std::string HeaderObjectOf(const RadosOptions& rados);
  static std::string ShardObjectOf(const RadosOptions& rados, uint32_t shard, int shard_bits);
  // The omap value stored for |entry| under key |fp| (for tests and tools),
  // and the shard's entry count (its omap header); the inverses return
  // Corruption saying what is wrong (the table adds shard and key), and
  // index/rados_chunk_table_fuzz.cc feeds them damaged bytes.
  static std::string EncodeValue(const Fingerprint& fp, const ChunkIndexEntry& entry);
  static Status DecodeValue(const std::string& key, const std::string& value, size_t key_size, ChunkIndexEntry* entry);
  static std::string EncodeCount(uint64_t count);
  static Status DecodeCount(const std::string& header, uint64_t* count);

  Status Get(const Fingerprint& fp, ChunkIndexEntry* entry) override;
  Status GetMany(const std::vector<Fingerprint>& fps, std::vector<ChunkIndexEntry>* entries,
                 std::vector<bool>* found) override;
  bool batched() const override { return true; }
  // The shards |keys| random keys touch: shards * (1 - (1 - 1/shards)^keys).
  double GetManyCost(size_t keys) const override;
  Status Apply(const std::vector<Op>& ops) override;
  uint64_t entry_count() const override { return entry_count_.load(); }
  uint64_t capacity() const override { return uint64_t{1} << 62; }
  // A batch costs two omap operations per shard it touches whatever its
  // size (index/rados_chunk_table.cc, Apply), so a batch should be as large
  // as ChunkIndex admits: 256 units per shard reach its upper bound (64 K
  // entries, ~1 K keys per shard operation) at the default 64 shards.
  uint64_t batch_units() const override { return uint64_t{shards_} * 256; }
  std::string Where() const override;
  Status Verify(uint64_t* pages_checked, const Visitor& visit = nullptr) override;
  Status ForEachEntry(const Visitor& visit) override;
  Status Sync() override { return Status::OK(); }  // every Apply is acknowledged on commit

  uint32_t shards() const { return shards_; }
  int shard_bits() const { return shard_bits_; }
  RadosCluster* cluster() const { return cluster_.get(); }

 private:
  RadosChunkTable(const RadosChunkTableOptions& options, std::shared_ptr<RadosCluster> cluster);

  Status OpenHeader();
  Status LoadCounts();

  // Runs operations 0..n-1 asynchronously, at most max_in_flight at once.
  // |start| issues operation i on |completion| and returns aio_operate's
  // result; |finish| judges its result code. Every issued operation is
  // waited for and counted as |kind|; returns the first error.
  Status RunAsync(size_t n, RadosOpKind kind, const std::function<int(size_t, librados::AioCompletion*)>& start,
                  const std::function<Status(size_t, int)>& finish);

  // Pages through every shard's omap (one page per shard in flight at once),
  // checks every record and calls |visit| in this thread. With |check_count|
  // each shard's stored count is read too and compared.
  Status ScanShards(bool check_count, uint64_t* pages, const Visitor& visit);

  // The decoders' results, an error naming the shard (and key).
  Status DecodeValueOf(uint32_t shard, const std::string& key, const std::string& value, ChunkIndexEntry* entry) const;
  Status DecodeCountOf(uint32_t shard, const std::string& header, uint64_t* count) const;
  Status ShardError(int r, const std::string& what, uint32_t shard) const;
  Status ShardCorruption(uint32_t shard, const std::string& key, const std::string& what) const;
  Status CheckKey(const Fingerprint& fp) const;
  std::string ShardOid(uint32_t shard) const { return ShardObjectOf(options_.rados, shard, shard_bits_); }

  const RadosChunkTableOptions options_;
  const std::shared_ptr<RadosCluster> cluster_;
  const uint32_t shards_;
  const int shard_bits_;
  const std::string prefix_;  // RadosOptions::ObjectPrefix: "gw.NAME/" in a gateway slot, else ""
  const std::string header_;  // prefix_ + kHeaderObject

  std::mutex apply_mu_;                 // serializes Apply and Verify; guards counts_
  std::vector<uint64_t> counts_;        // entries per shard
  std::atomic<uint64_t> entry_count_{0};
};

}  // namespace dedupv1

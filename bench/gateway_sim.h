// GatewaySim is the cost model of issue 15's scale-out ("Scale beyond this
// machine"): it projects ingest throughput, dedup ratio and chunk-index
// traffic of G gateways writing into one Ceph cluster of N OSDs, from costs
// measured on this 2-core machine (docs/benchmarks.md section 12 lists each
// input with its source; GatewaySimExplain() says what is modelled and what
// is left out).
//
// The model is a set of throughput bounds, no queueing:
//  - a gateway: CPU (chunking, hashing, the rest of the engine; per MB of
//    known and of new data), round trips per run (workers waiting on the
//    index), its network link;
//  - the cluster: every OSD has one second of service time per second. An
//    ingested MB costs OSD time for container bytes (times the replica
//    count), small writes (log, checkpoint) and chunk-index omap operations
//    (a fixed cost per operation plus a cost per key, from the measured omap
//    rates). Data spreads evenly; index operations go to shard objects placed
//    on OSDs pseudo-randomly (as CRUSH does), so the busiest OSD carries more
//    than the mean ("hot" factor) and bounds the cluster.
// Throughput = min(G x gateway bound, cluster bound); whichever is smaller is
// the bottleneck. Duplicates are found cluster-wide (dedup ratio independent
// of G); per-gateway scope is projected for comparison.
//
// Units: MB = 10^6 bytes, times in seconds. Pure arithmetic, deterministic
// (the shard placement uses a fixed-seed generator). Not thread-safe: const
// methods fill a cache of automatic shard counts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace dedupv1 {
namespace bench {

// Every input of the model. Defaults are figures measured on this machine;
// InputSpecs() names the source of each.
struct GatewaySimInputs {
  // Workload.
  double dup = 0.0;                 // share of ingested chunks already stored (cluster-wide)
  double chunk_bytes = 10065;       // mean chunk size
  double run_bytes = 8388608;       // bytes per write-buffer run (one lookup and one claim round)
  double dup_locality = 0.5;        // per-gateway scope only: share of duplicates first written via the same gateway
  // Gateway (one machine of gw_cores cores).
  double gw_chunk_hash_mbps = 902;  // chunking + SHA-1 alone on gw_cores cores
  double gw_known_mbps = 650;       // engine on a stream of known chunks
  double gw_new_mbps = 325;         // engine on a stream of new chunks
  double gw_cores = 2;
  double gw_workers = 2;            // dedup.threads: runs in progress at once
  double gw_net_mbps = 1250;        // the gateway's link (both directions)
  double rtt_ms = 6.5;              // one RADOS round trip
  double rounds_per_run = 2;        // index round trips a run waits for (lookup, claim)
  // Cluster, as measured on 3 OSDs with 3 replicas.
  double measured_osds = 3;
  double measured_replicas = 3;
  double rados_bench_mbps = 305;    // 4 MiB objects, 16 in flight (client MB/s)
  double container_vs_rados_bench = 0.97;
  double container_bytes = 4194304;
  double small_write_ops = 1800;    // 8 KiB objects, 16 in flight (client ops/s)
  double omap_keys_per_op_lo = 16, omap_keys_s_lo = 83000;    // batched omap sets
  double omap_keys_per_op_hi = 125, omap_keys_s_hi = 163000;
  double replicas = 3;              // of the projected pools
  double other_ops_per_100_chunks = 0.40;  // log, metadata, checkpoint writes besides containers and chunk index
  // Chunk index.
  double cluster_scope = 1;         // 1: shared index (claims, flips); 0: per-gateway index (today's)
  double shards = 0;                // power of two; 0 = per OSD count the count with the most cluster capacity
  double claims_per_new_chunk = 1;  // > 1: lost claims retried
  double flips_per_new_chunk = 1;
  double claim_keys = 2;            // keys set by a claim (entry and GC hint)
  // Share of a run's chunks read from the shared index before the claim:
  // 1 = every unknown chunk; near 0 while claims skip lookups at 0%
  // duplicates (index/lookup_skip_policy.h).
  double lookup_share = 1;
  // Cluster GC: the hints of one shard's page (this many) are paged twice
  // (seen, then due after the claim hold), their records read in one
  // operation and their drops written in one (design-15 2.6 "GC in
  // batches"); 0 leaves GC out of the model.
  double gc_hint_page = 256;
  double writeback_keys_per_shard = 256;  // ChunkIndex write-back batch = this x shards, clamped to [1024, 65536]
  double key_skew = 1.0;            // max/mean keys per shard (bench shard-balance)
  // Where the index pool lives. 0: on the data OSDs (as measured here).
  // Above 0: on OSDs of its own (a CRUSH rule for the index pool, as RGW
  // deployments place bucket indexes), this many per data OSD (at least
  // `replicas`); the loss is then against plain writes to the data OSDs.
  double index_osd_ratio = 0;
  double index_osd_speed = 1;       // an index OSD's omap speed over a measured OSD's
  double placement_trials = 8;      // placements averaged for the hot factor
};

struct InputSpec {
  const char* key;
  double GatewaySimInputs::*field;
  const char* unit;
  const char* source;
};
// The inputs in a fixed order, with their units and sources.
const std::vector<InputSpec>& InputSpecs();
// Sets one input by key; InvalidArgument naming the key for an unknown key or
// a value that is not a number.
Status SetGatewaySimInput(const std::string& key, const std::string& value, GatewaySimInputs* in);
// Applies "key = value" lines ('#' starts a comment); errors name the line.
Status ParseGatewaySimInputs(const std::string& text, GatewaySimInputs* in);
// Checks ranges (shares in [0,1], positive rates, shards a power of two).
Status ValidateGatewaySimInputs(const GatewaySimInputs& in);

// One kind of chunk-index operation, per shard per batch (design-15 2.4).
struct IndexStep {
  std::string name;
  bool new_only = false;        // only new chunks take this step
  bool write = false;           // writes go to every replica; reads to the primary
  double keys_per_chunk = 1;
  double batch_chunks = 1;      // chunks whose keys are sent in one round over the shards
  double per_chunk = 1;         // times a (new) chunk takes the step
};

// One index step's share of the cluster's cost, per ingested chunk.
struct StepCost {
  std::string name;
  double ops = 0;          // RADOS operations per ingested chunk
  double keys_per_op = 0;
  double osd_s = 0;        // OSD seconds per ingested chunk, replicas included
};

// What one OSD-limited cluster costs per ingested MB (OSD seconds, summed over OSDs).
struct ClusterCost {
  uint32_t shards = 0;
  std::vector<StepCost> steps;
  double data_bw_s = 0;       // container bytes
  double data_ops_s = 0;      // small writes
  double index_read_s = 0;    // chunk-index reads (primaries)
  double index_write_s = 0;   // chunk-index writes (all replicas)
  double hot = 1;             // busiest OSD's index load / mean
  int index_osds = 0;         // OSDs of the index pool's own (0: it shares the data OSDs)
  double index_speed = 1;     // their omap speed over a measured OSD's
  double index_ops_per_chunk = 0;
  double index_keys_per_chunk = 0;
  double rados_ops_per_chunk = 0;  // index + containers + small writes
  double index_s() const { return index_read_s + index_write_s; }
  // MB/s the cluster of |osds| (data) OSDs can take.
  double CapacityMBps(int osds) const;
  // "OSD bandwidth", "OSD ops" or "shard hot spot": the largest part of the
  // busiest OSD's time; with an index pool of its own, "index OSDs" or
  // "index shard hot spot" when those bound the cluster.
  const char* Limit(int osds) const;
};

struct GatewayCap {
  double cpu_mbps = 0;      // CPU alone
  double latency_mbps = 0;  // workers waiting on round trips, with the CPU they share
  double net_mbps = 0;
  double mbps = 0;          // the smallest
  const char* limit = "";   // "gateway CPU", "gateway round trips", "gateway network"
};

struct Projection {
  int gateways = 0, osds = 0;
  uint32_t shards = 0;
  double mbps = 0;             // projected ingest
  double ideal_mbps = 0;       // gateways x one gateway's bound
  double gateway_mbps = 0;     // one gateway's bound
  double cluster_mbps = 0;     // the cluster's bound
  double plain_rados_mbps = 0; // plain 4 MiB writes of the same bytes by as many clients
  double loss = 0;             // 1 - mbps / plain_rados_mbps
  double cluster_loss = 0;     // 1 - cluster bound / plain writes' cluster bound
  double efficiency = 0;       // mbps / (gateways x mbps at 1 gateway)
  double marginal = 1;         // per added gateway since the previous row of a grid, in units of 1 gateway's mbps
  const char* bottleneck = "";
  double hot = 1;
  int index_osds = 0;              // OSDs of the index pool's own (0: shared)
  double index_ops_per_100_chunks = 0;
  double index_ops_per_s = 0, index_keys_per_s = 0;
  double rados_ops_per_gib = 0;
  double dedup_ratio = 1;          // cluster scope: written / stored
  double dedup_ratio_per_gateway = 1;  // the same workload with per-gateway indexes
};

class GatewaySim {
 public:
  // |in| must pass ValidateGatewaySimInputs.
  explicit GatewaySim(const GatewaySimInputs& in);

  // Expected shards that |keys| uniformly spread keys touch: s (1 - (1 - 1/s)^keys).
  static double ShardsTouched(double keys, double shards);
  // OSD seconds one replica of an omap operation carrying |keys| keys costs:
  // a line through the two measured (keys per op, keys/s) points.
  double OmapOpSeconds(double keys) const;
  // Busiest OSD's share of index load over the mean, for |shards| shards on
  // |osds| OSDs (each shard on `replicas` distinct OSDs, the first the
  // primary), reads costing |read_s| on the primary and writes |write_s| over
  // all replicas (per MB). Averaged over placement_trials fixed-seed
  // placements.
  double HotFactor(uint32_t shards, int osds, double read_s, double write_s) const;

  std::vector<IndexStep> IndexSteps(uint32_t shards) const;
  GatewayCap Gateway() const;
  ClusterCost Cluster(int osds, uint32_t shards) const;
  // The configured shard count, or (shards = 0) the power of two in
  // [16, 65536] with the most cluster capacity on |osds| OSDs.
  uint32_t ShardsFor(int osds) const;
  // Plain 4 MiB RADOS writes: min(clients x link, cluster bandwidth).
  double PlainRadosMBps(int clients, int osds) const;
  // Dedup ratio (written / stored) with per-gateway indexes and |gateways| gateways.
  double PerGatewayDedupRatio(int gateways) const;
  // |gateways| >= 1, |osds| >= 1 (fewer OSDs than replicas: each shard on all of them).
  Projection Project(int gateways, int osds) const;
  // Project() for each gateway count (ascending) on |osds| OSDs, with
  // `marginal` filled in from row to row (the first row's is its efficiency).
  std::vector<Projection> ProjectGateways(const std::vector<int>& gateways, int osds) const;

  const GatewaySimInputs& inputs() const { return in_; }

 private:
  // Project() with the workload's duplicate share replaced by |dup| (per-gateway scope finds fewer).
  Projection ProjectAt(int gateways, int osds, double dup) const;
  double ChunksPerMB() const { return 1e6 / in_.chunk_bytes; }
  double OsdReplicaMBps() const;  // one OSD's replica writes of 4 MiB objects

  GatewaySimInputs in_;
  double omap_fixed_s_ = 0, omap_key_s_ = 0;
  mutable std::map<int, uint32_t> shards_for_;  // ShardsFor's answers (auto shard count) by OSD count
};

// What the model covers and leaves out, for --explain and the docs.
std::string GatewaySimExplain();

}  // namespace bench
}  // namespace dedupv1

#include "bench/gateway_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "core/base/split_mix64.h"

namespace dedupv1 {
namespace bench {

namespace {

using In = GatewaySimInputs;

// Fixed-seed generator for the shard placements (splitmix64): the same
// inputs give the same projection on every machine.
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    const uint64_t x = state_;
    state_ += kSplitMix64Gamma;
    return ::dedupv1::SplitMix64(x);
  }
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(Next() % n); }

 private:
  uint64_t state_;
};

bool IsPowerOfTwo(double v) {
  if (v < 1 || v > 65536 || v != std::floor(v)) return false;
  const auto n = static_cast<uint32_t>(v);
  return (n & (n - 1)) == 0;
}

}  // namespace

const std::vector<InputSpec>& InputSpecs() {
  static const std::vector<InputSpec> specs = {
      {"dup", &In::dup, "share", "workload; 0 = the issue's 0%-duplicates target (gen 2 of the bench: 0.964)"},
      {"chunk_bytes", &In::chunk_bytes, "B", "benchmarks.md 11(c): 1 GiB / 106,677 chunks (Rabin, 8 KiB average)"},
      {"run_bytes", &In::run_bytes, "B", "core/engine/write_buffer.h max_run_bytes (8 MiB)"},
      {"dup_locality", &In::dup_locality, "share",
       "assumption, not measured: duplicates whose first copy came via the same gateway (per-gateway scope only)"},
      {"gw_chunk_hash_mbps", &In::gw_chunk_hash_mbps, "MB/s",
       "benchmarks.md 11, 10 GiB run: chunk+hash ceiling 902 MB/s on 2 cores (825-1,074 in other runs)"},
      {"gw_known_mbps", &In::gw_known_mbps, "MB/s",
       "benchmarks.md 4, 2026-11-25: engine gen 2 (96.4% known), local backend, 639-660 MB/s on 2 cores"},
      {"gw_new_mbps", &In::gw_new_mbps, "MB/s",
       "benchmarks.md 4, 2026-11-25: engine gen 1 363-383 MB/s at 25.8% removed; new-chunk rate x from "
       "1/373 = 0.258/650 + 0.742/x"},
      {"gw_cores", &In::gw_cores, "cores", "the engine figures' machine (2 cores)"},
      {"gw_workers", &In::gw_workers, "runs", "dedup.threads default (core/engine/options.h)"},
      {"gw_net_mbps", &In::gw_net_mbps, "MB/s", "assumption: 10 GbE per gateway (here everything is loopback)"},
      {"rtt_ms", &In::rtt_ms, "ms", "issue 14 setup, here: 8 KiB rados bench -t 16, memstore, 6.5 ms mean latency"},
      {"rounds_per_run", &In::rounds_per_run, "round trips",
       "design-15 2.4: a run waits for its lookup and its claim (cluster scope; 0 in gateway scope)"},
      {"measured_osds", &In::measured_osds, "OSDs", "the measured cluster: 3 OSDs on one virtual disk, 2 shared cores"},
      {"measured_replicas", &In::measured_replicas, "replicas", "the measured pools: size 3"},
      {"rados_bench_mbps", &In::rados_bench_mbps, "MB/s",
       "issue 14 setup, here: 4 MiB rados bench -t 16, bluestore, 305 MB/s on 2026-11-25 (236-310 over runs)"},
      {"container_vs_rados_bench", &In::container_vs_rados_bench, "ratio",
       "benchmarks.md 11(b): chunk store at 4 writer threads 0.97x rados bench"},
      {"container_bytes", &In::container_bytes, "B", "container size (4 MiB); one RADOS write each (11(b))"},
      {"small_write_ops", &In::small_write_ops, "ops/s",
       "issue 14 setup, here: 8 KiB rados bench -t 16, bluestore ~1,800 ops/s (memstore ~2,500)"},
      {"omap_keys_per_op_lo", &In::omap_keys_per_op_lo, "keys/op", "issue 14 setup, here: omap sets, ~16 keys per op"},
      {"omap_keys_s_lo", &In::omap_keys_s_lo, "keys/s",
       "issue 14 setup, here: 83 K keys/s at ~16 keys/op, bluestore (memstore 86 K; design-15 2.4)"},
      {"omap_keys_per_op_hi", &In::omap_keys_per_op_hi, "keys/op", "issue 14 setup, here: omap sets, ~125 keys per op"},
      {"omap_keys_s_hi", &In::omap_keys_s_hi, "keys/s",
       "issue 14 setup, here: 163 K keys/s at ~125 keys/op, bluestore (memstore 209 K)"},
      {"replicas", &In::replicas, "replicas", "projected pools: size 3 (as measured)"},
      {"other_ops_per_100_chunks", &In::other_ops_per_100_chunks, "ops",
       "benchmarks.md 11: gen 1 (386 - 190 containers) / 106,677 chunks = 0.18, plus the Close besides the "
       "chunk index (1,118 - 651) / 213,405 = 0.22"},
      {"cluster_scope", &In::cluster_scope, "0/1", "design-15 2.4: 1 = one shared chunk index (claims, flips)"},
      {"shards", &In::shards, "shards", "0 = per OSD count the power of two with most capacity; 64 = today's default"},
      {"claims_per_new_chunk", &In::claims_per_new_chunk, "claims", "design-15 2.4: races rare (retries > 1)"},
      {"flips_per_new_chunk", &In::flips_per_new_chunk, "flips", "design-15 2.4: one flip per claimed chunk"},
      {"claim_keys", &In::claim_keys, "keys", "design-15 2.4: a claim sets e+fp and z+fp"},
      {"lookup_share", &In::lookup_share, "share",
       "design-15 2.4: 1 = every unknown chunk looked up; below while claims skip lookups (bench: gen 1 lookup keys "
       "per chunk)"},
      {"gc_hint_page", &In::gc_hint_page, "hints",
       "core/engine/cluster_gc.h: hints per page (256); 0 = GC not modelled"},
      {"writeback_keys_per_shard", &In::writeback_keys_per_shard, "keys",
       "index/chunk_index.cc: write-back batch = 4 x batch_units (64 per shard), in [1024, 65536]"},
      {"key_skew", &In::key_skew, "max/mean",
       "dedupv1_gateway_sim shard-balance on real files (benchmarks.md 12): within sampling noise of uniform"},
      {"placement_trials", &In::placement_trials, "trials", "model setting: shard placements averaged"},
      {"index_osd_ratio", &In::index_osd_ratio, "per data OSD",
       "deployment choice: 0 = the index pool on the data OSDs (as measured); above 0 = on OSDs of its own (a "
       "CRUSH rule, docs/ceph.md), this many per data OSD, at least `replicas`"},
      {"index_osd_speed", &In::index_osd_speed, "ratio",
       "assumption: 1 = an index OSD as fast as a measured OSD (NVMe OSDs for omap would be faster)"},
  };
  return specs;
}

Status SetGatewaySimInput(const std::string& key, const std::string& value, GatewaySimInputs* in) {
  for (const InputSpec& spec : InputSpecs()) {
    if (key != spec.key) continue;
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || end == value.c_str() || *end != '\0' || !std::isfinite(v)) {
      return Status::InvalidArgument("gateway sim input " + key + ": '" + value + "' is not a number");
    }
    in->*spec.field = v;
    return Status::OK();
  }
  return Status::InvalidArgument("gateway sim: unknown input '" + key + "' (--list-inputs shows them)");
}

Status ParseGatewaySimInputs(const std::string& text, GatewaySimInputs* in) {
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); number++) {
    line = line.substr(0, line.find('#'));
    const size_t eq = line.find('=');
    auto trim = [](std::string s) {
      const size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
      return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    };
    if (trim(line).empty()) continue;
    if (eq == std::string::npos) {
      return Status::InvalidArgument("gateway sim inputs line " + std::to_string(number) + ": expected key = value");
    }
    Status s = SetGatewaySimInput(trim(line.substr(0, eq)), trim(line.substr(eq + 1)), in);
    if (!s.ok()) return Status::InvalidArgument("line " + std::to_string(number) + ": " + s.ToString());
  }
  return Status::OK();
}

Status ValidateGatewaySimInputs(const GatewaySimInputs& in) {
  auto bad = [](const char* key, const std::string& why) {
    return Status::InvalidArgument(std::string("gateway sim input ") + key + ": " + why);
  };
  if (!(in.dup >= 0 && in.dup < 1)) return bad("dup", "must be in [0, 1)");
  if (!(in.dup_locality >= 0 && in.dup_locality <= 1)) return bad("dup_locality", "must be in [0, 1]");
  if (!(in.container_vs_rados_bench > 0 && in.container_vs_rados_bench <= 2)) {
    return bad("container_vs_rados_bench", "must be in (0, 2]");
  }
  for (const InputSpec& spec : InputSpecs()) {
    const std::string key = spec.key;
    if (key == "dup" || key == "dup_locality" || key == "shards" || key == "rounds_per_run" ||
        key == "cluster_scope" || key == "other_ops_per_100_chunks" || key == "rtt_ms" || key == "lookup_share" ||
        key == "gc_hint_page" || key == "index_osd_ratio") {
      if (in.*spec.field < 0) return bad(spec.key, "must not be negative");
      continue;
    }
    if (!(in.*spec.field > 0)) return bad(spec.key, "must be positive");
  }
  if (in.gw_known_mbps > in.gw_chunk_hash_mbps || in.gw_new_mbps > in.gw_chunk_hash_mbps) {
    return bad("gw_known_mbps", "the engine cannot be faster than chunking and hashing alone (gw_chunk_hash_mbps)");
  }
  if (in.omap_keys_per_op_hi <= in.omap_keys_per_op_lo) {
    return bad("omap_keys_per_op_hi", "must be above omap_keys_per_op_lo");
  }
  if (in.omap_keys_per_op_lo / in.omap_keys_s_lo > in.omap_keys_per_op_hi / in.omap_keys_s_hi) {
    return bad("omap_keys_s_hi", "an op with more keys cannot cost less than one with fewer");
  }
  if (in.shards != 0 && !IsPowerOfTwo(in.shards)) return bad("shards", "must be 0 (auto) or a power of two <= 65536");
  if (in.cluster_scope != 0 && in.cluster_scope != 1) return bad("cluster_scope", "must be 0 or 1");
  if (in.key_skew < 1) return bad("key_skew", "max/mean is at least 1");
  return Status::OK();
}

// ---- the model -------------------------------------------------------------------------

GatewaySim::GatewaySim(const GatewaySimInputs& in) : in_(in) {
  // Seconds of one OSD per replica op: the measured cluster's ops/s were
  // served by measured_osds OSDs each applying measured_replicas / measured_osds of them.
  const double per_op_scale = in.measured_osds / in.measured_replicas;
  const double t_lo = per_op_scale * in.omap_keys_per_op_lo / in.omap_keys_s_lo;
  const double t_hi = per_op_scale * in.omap_keys_per_op_hi / in.omap_keys_s_hi;
  omap_key_s_ = (t_hi - t_lo) / (in.omap_keys_per_op_hi - in.omap_keys_per_op_lo);
  omap_fixed_s_ = std::max(0.0, t_lo - omap_key_s_ * in.omap_keys_per_op_lo);
}

double GatewaySim::ShardsTouched(double keys, double shards) {
  if (keys <= 0) return 0;
  return shards * (1.0 - std::pow(1.0 - 1.0 / shards, keys));
}

double GatewaySim::OmapOpSeconds(double keys) const { return omap_fixed_s_ + omap_key_s_ * keys; }

double GatewaySim::OsdReplicaMBps() const {
  return in_.rados_bench_mbps * in_.measured_replicas / in_.measured_osds;
}

double GatewaySim::HotFactor(uint32_t shards, int osds, double read_s, double write_s) const {
  if (read_s + write_s <= 0 || osds <= 1) return 1.0;
  const auto n = static_cast<uint32_t>(osds);
  const uint32_t r = std::min<uint32_t>(n, static_cast<uint32_t>(std::lround(in_.replicas)));
  const double mean = (read_s + write_s) / n;
  const int trials = std::max(1, static_cast<int>(in_.placement_trials));
  std::vector<double> load(n);
  std::vector<uint32_t> members;
  double sum_max = 0;
  for (int t = 0; t < trials; t++) {
    SplitMix rng((uint64_t{shards} << 40) ^ (uint64_t{n} << 8) ^ static_cast<uint64_t>(t));
    std::fill(load.begin(), load.end(), 0.0);
    for (uint32_t s = 0; s < shards; s++) {
      members.clear();
      while (members.size() < r) {  // r distinct OSDs, the first the primary
        const uint32_t o = rng.Below(n);
        if (std::find(members.begin(), members.end(), o) == members.end()) members.push_back(o);
      }
      load[members[0]] += read_s / shards;
      for (uint32_t o : members) load[o] += write_s / shards / r;
    }
    sum_max += *std::max_element(load.begin(), load.end());
  }
  return sum_max / trials / mean;
}

std::vector<IndexStep> GatewaySim::IndexSteps(uint32_t shards) const {
  const double run_chunks = std::max(1.0, in_.run_bytes / in_.chunk_bytes);
  const double writeback = std::clamp(in_.writeback_keys_per_shard * shards, 1024.0, 65536.0);
  std::vector<IndexStep> steps;
  if (in_.cluster_scope != 0) {
    // Design-15 2.4: every run reads its chunks' entries; its new chunks are
    // claimed in one round; claims flip to committed in write-back batches;
    // usage keys (per slot) are read and written at checkpoints.
    if (in_.lookup_share > 0) steps.push_back({"lookup", false, false, 1, run_chunks, in_.lookup_share});
    steps.push_back({"claim", true, true, in_.claim_keys, std::max(1.0, run_chunks * (1 - in_.dup)),
                     in_.claims_per_new_chunk});
    steps.push_back({"flip", true, true, 1, writeback, in_.flips_per_new_chunk});
    if (in_.gc_hint_page > 0) {
      // Design-15 2.6: each claim leaves a hint that the GC leader pages
      // twice (seen, then due after the hold), then reads the record of and
      // drops, a page (one shard's) per operation.
      const double page = in_.gc_hint_page * shards;
      steps.push_back({"gc hint pages", true, false, 1, page, 2});
      steps.push_back({"gc records", true, false, 3, page, 1});
      steps.push_back({"gc hint drops", true, true, 4, page, 1});
    }
  }
  // Both scopes: the write-back reads the shard's keys, then writes (today's
  // Apply: usage counts and new entries); in gateway scope the bloom filter
  // and the container cache answer lookups without the table.
  steps.push_back({"usage read", false, false, 1, writeback, 1});
  steps.push_back({"usage write", false, true, 1, writeback, 1});
  return steps;
}

GatewayCap GatewaySim::Gateway() const {
  GatewayCap g;
  const double cpu_s_per_mb = in_.dup / in_.gw_known_mbps + (1 - in_.dup) / in_.gw_new_mbps;
  g.cpu_mbps = 1.0 / cpu_s_per_mb;
  // Each worker alternates CPU work on a run (c core-seconds) and waiting for
  // its index round trips (w): cores / c runs per second at most, workers /
  // (c + w) when the waits are not hidden.
  const double run_mb = in_.run_bytes / 1e6;
  const double c = run_mb * cpu_s_per_mb * in_.gw_cores;
  const double w = (in_.cluster_scope != 0 ? in_.rounds_per_run : 0) * in_.rtt_ms / 1000;
  g.latency_mbps = std::min(in_.gw_cores / c, in_.gw_workers / (c + w)) * run_mb;
  g.net_mbps = in_.gw_net_mbps;
  g.mbps = std::min({g.cpu_mbps, g.latency_mbps, g.net_mbps});
  if (g.mbps == g.net_mbps) {
    g.limit = "gateway network";
  } else if (g.latency_mbps < g.cpu_mbps * 0.999) {
    g.limit = "gateway round trips";
  } else {
    g.limit = "gateway CPU";
  }
  return g;
}

double ClusterCost::CapacityMBps(int osds) const {
  if (index_osds == 0) return osds / (data_bw_s + data_ops_s + hot * index_s());
  const double data = osds / (data_bw_s + data_ops_s);
  if (index_s() <= 0) return data;
  return std::min(data, index_osds * index_speed / (hot * index_s()));
}

const char* ClusterCost::Limit(int osds) const {
  if (index_osds > 0) {
    const double data = osds / (data_bw_s + data_ops_s);
    if (index_s() > 0 && index_osds * index_speed / (hot * index_s()) < data) {
      return hot > 2 ? "index shard hot spot" : "index OSDs";  // the hot spot is most of their time
    }
    return data_bw_s >= data_ops_s ? "OSD bandwidth" : "OSD ops";
  }
  const double bw = data_bw_s, ops = data_ops_s + index_s(), hotspot = (hot - 1) * index_s();
  if (hotspot > bw && hotspot > ops) return "shard hot spot";
  return bw >= ops ? "OSD bandwidth" : "OSD ops";
}

ClusterCost GatewaySim::Cluster(int osds, uint32_t shards) const {
  ClusterCost c;
  c.shards = shards;
  const double chunks = ChunksPerMB();
  c.data_bw_s = (1 - in_.dup) * in_.replicas / (OsdReplicaMBps() * in_.container_vs_rados_bench);
  const double small_op_s = in_.measured_osds / (in_.measured_replicas * in_.small_write_ops);
  c.data_ops_s = in_.other_ops_per_100_chunks / 100 * chunks * in_.replicas * small_op_s;
  for (const IndexStep& step : IndexSteps(shards)) {
    const double share = step.new_only ? 1 - in_.dup : 1.0;
    if (share <= 0) continue;
    const double touched = ShardsTouched(step.batch_chunks, shards);
    const double ops = share * step.per_chunk * touched / step.batch_chunks;
    const double keys_per_op = step.batch_chunks * step.keys_per_chunk / touched;
    const double seconds = ops * OmapOpSeconds(keys_per_op) * chunks * (step.write ? in_.replicas : 1);
    (step.write ? c.index_write_s : c.index_read_s) += seconds;
    c.steps.push_back({step.name, ops, keys_per_op, seconds / chunks});
    c.index_ops_per_chunk += ops;
    c.index_keys_per_chunk += share * step.per_chunk * step.keys_per_chunk;
  }
  if (in_.index_osd_ratio > 0) {
    c.index_osds = std::max(static_cast<int>(std::lround(in_.replicas)),
                            static_cast<int>(std::lround(in_.index_osd_ratio * osds)));
    c.index_speed = in_.index_osd_speed;
  }
  c.hot = HotFactor(shards, c.index_osds > 0 ? c.index_osds : osds, c.index_read_s, c.index_write_s) * in_.key_skew;
  c.rados_ops_per_chunk = c.index_ops_per_chunk + in_.other_ops_per_100_chunks / 100 +
                          (1 - in_.dup) * in_.chunk_bytes / in_.container_bytes;
  return c;
}

uint32_t GatewaySim::ShardsFor(int osds) const {
  if (in_.shards > 0) return static_cast<uint32_t>(in_.shards);
  auto cached = shards_for_.find(osds);
  if (cached != shards_for_.end()) return cached->second;
  uint32_t best = 16;
  double best_mbps = 0;
  for (uint32_t s = 16; s <= 65536; s *= 2) {
    const double mbps = Cluster(osds, s).CapacityMBps(osds);
    if (mbps > best_mbps * 1.0001) best = s, best_mbps = mbps;
  }
  shards_for_[osds] = best;
  return best;
}

double GatewaySim::PlainRadosMBps(int clients, int osds) const {
  return std::min(clients * in_.gw_net_mbps, osds * OsdReplicaMBps() / in_.replicas);
}

double GatewaySim::PerGatewayDedupRatio(int gateways) const {
  const double found = in_.dup * (in_.dup_locality + (1 - in_.dup_locality) / gateways);
  return 1.0 / (1.0 - found);
}

Projection GatewaySim::Project(int gateways, int osds) const {
  if (in_.cluster_scope != 0) return ProjectAt(gateways, osds, in_.dup);
  // Per-gateway indexes find only the duplicates their own gateway wrote first.
  return ProjectAt(gateways, osds, 1.0 - 1.0 / PerGatewayDedupRatio(gateways));
}

Projection GatewaySim::ProjectAt(int gateways, int osds, double dup) const {
  std::optional<GatewaySim> other;
  const GatewaySim* sim = this;
  if (dup != in_.dup) {
    GatewaySimInputs at = in_;
    at.dup = dup;
    other.emplace(at);
    sim = &*other;
  }
  Projection p;
  p.gateways = gateways;
  p.osds = osds;
  p.shards = ShardsFor(osds);  // fixed at creation: chosen for the workload as configured
  const ClusterCost cost = sim->Cluster(osds, p.shards);
  const GatewayCap gw = sim->Gateway();
  p.gateway_mbps = gw.mbps;
  p.cluster_mbps = cost.CapacityMBps(osds);
  p.ideal_mbps = gateways * gw.mbps;
  p.mbps = std::min(p.ideal_mbps, p.cluster_mbps);
  p.bottleneck = p.ideal_mbps <= p.cluster_mbps ? gw.limit : cost.Limit(osds);
  const double one = std::min(Gateway().mbps, Cluster(osds, p.shards).CapacityMBps(osds));
  p.efficiency = p.mbps / (gateways * one);
  p.marginal = p.efficiency;
  p.plain_rados_mbps = PlainRadosMBps(gateways, osds);
  p.loss = 1 - p.mbps / p.plain_rados_mbps;
  p.cluster_loss = 1 - p.cluster_mbps / (osds * OsdReplicaMBps() / in_.replicas);
  p.hot = cost.hot;
  p.index_osds = cost.index_osds;
  p.index_ops_per_100_chunks = cost.index_ops_per_chunk * 100;
  p.index_ops_per_s = p.mbps * ChunksPerMB() * cost.index_ops_per_chunk;
  p.index_keys_per_s = p.mbps * ChunksPerMB() * cost.index_keys_per_chunk;
  p.rados_ops_per_gib = cost.rados_ops_per_chunk * (1073741824.0 / in_.chunk_bytes);
  p.dedup_ratio = 1.0 / (1.0 - dup);
  p.dedup_ratio_per_gateway = PerGatewayDedupRatio(gateways);
  return p;
}

std::vector<Projection> GatewaySim::ProjectGateways(const std::vector<int>& gateways, int osds) const {
  std::vector<Projection> rows;
  double one = 0;
  for (int g : gateways) {
    Projection p = Project(g, osds);
    if (rows.empty()) {
      one = p.mbps / g / p.efficiency;  // one gateway's throughput on this cluster
    } else {
      const Projection& prev = rows.back();
      p.marginal = (p.mbps - prev.mbps) / ((g - prev.gateways) * one);
    }
    rows.push_back(p);
  }
  return rows;
}

std::string GatewaySimExplain() {
  return R"(What dedupv1_gateway_sim models (issue 15, design-15 2.4):
  - Ingest only: G gateways write backup streams into one Ceph cluster of N OSDs.
  - A gateway is bounded by its CPU (the engine's measured MB/s on known and on
    new chunks, on gw_cores cores; chunking+hashing is the part
    gw_chunk_hash_mbps measures), by its workers waiting on index round trips
    (rounds_per_run x rtt_ms per run of run_bytes, dedup.threads workers), and by
    its link (gw_net_mbps). Its CPU is its own: this machine's 2 cores, which
    the measured OSDs shared, are not charged to it.
  - The cluster is bounded by OSD service time: every OSD has 1 s per second.
    Container bytes cost replicas x bytes at the measured per-OSD bandwidth of
    4 MiB writes (rados bench x measured replicas / measured OSDs, times the
    container store's 0.97); small writes (log, checkpoint) cost the measured
    8 KiB op time per replica; chunk-index omap operations cost a fixed time
    per op plus a time per key (a line through the two measured omap rates),
    reads on the primary, writes on every replica. Capacity grows linearly with
    N from the 3-OSD measurement.
  - Index traffic per chunk (cluster scope): a lookup per run of the share
    lookup_share of runs (the rest claim without a lookup while the index
    answers "none"), a claim of each new chunk per run (2 keys), a flip of
    each new chunk and a read + write of its usage key in write-back batches,
    and GC's work on each new chunk's hint: pages read twice, then its record
    read and its hint dropped, one operation per page of gc_hint_page hints.
    A batch of B keys over S shards costs S (1 - (1 - 1/S)^B) ops (the
    shards it touches).
  - Shard hot spots: each shard lives on `replicas` OSDs placed pseudo-randomly
    (fixed seed, averaged over placements); the busiest OSD's index load over
    the mean (x key_skew, the measured max/mean keys per shard) bounds the
    cluster. Few shards on many OSDs leave most OSDs without index work.
  - Shards = 0 picks, per OSD count, the power of two with the most capacity
    (more shards: better spread, fewer keys per op).
  - Dedup ratio: in cluster scope every gateway finds every stored chunk, so
    it does not depend on G. Per-gateway scope finds only duplicates first
    written through the same gateway: dup x (L + (1 - L) / G), L = dup_locality
    (an assumption, not a measurement).
  - Loss against plain RADOS: plain 4 MiB writes of the same bytes by as many
    clients (each on a link like a gateway's).
  - Where the index pool lives (index_osd_ratio): on the data OSDs (0, as
    measured here), or on OSDs of its own (a CRUSH rule for the index pool),
    index_osd_ratio per data OSD at index_osd_speed of a measured OSD. Then
    the data OSDs carry containers and small writes, the index OSDs the
    omap operations (hot spots over their count), and the loss is against
    plain writes to the data OSDs: the index OSDs are hardware added beside
    them, not counted in "plain RADOS".

What it leaves out:
  - Queueing: these are bounds; real throughput bends below them near
    saturation, and round-trip latency grows with load (rtt_ms is fixed).
  - Claim races between gateways writing the same new data at once, waits on
    another gateway's uncommitted entry, takeovers and failover (only as
    claims_per_new_chunk > 1 if given).
  - Garbage collection besides the hints of new chunks (decrements, marks,
    erases, container GC and merges), restores and other reads, scrubbing,
    recovery and rebalancing traffic, lease renewals.
  - The checkpoint's usage counting as measured at 10 GiB (49.6 ops per 100
    chunks, one read per entry): assumed batched, as design-15 2.5 plans.
  - Networks other than the gateway's link: OSD public and cluster networks,
    switches, placement of data PGs (data is assumed spread evenly).
  - The index pool's PG count: shards are placed on OSDs as if each had a PG
    of its own; an index pool with fewer PGs than shards (or than OSDs /
    replicas) concentrates them further.
  - OSD hardware: per-OSD capacity is this machine's 3-OSD cluster divided by
    3, where 3 OSDs shared 2 cores and one virtual disk and the omap rates came
    from a python client on the same cores. Real OSDs have their own disks and
    cores; all OSD costs scale together, so ratios hold better than absolutes.
  - Gateway CPU for librados, compression, SHA-256, and the gateway's memory.
)";
}

}  // namespace bench
}  // namespace dedupv1

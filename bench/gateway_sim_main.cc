// dedupv1_gateway_sim: issue 15's scale-out model and the shard balance of
// real fingerprints (docs/benchmarks.md section 12).
//
//   dedupv1_gateway_sim [project] [--inputs FILE] [--set KEY=VALUE]... [--gateways LIST]
//                       [--osds LIST] [--csv] [--costs] [--explain] [--list-inputs]
//   dedupv1_gateway_sim shard-balance [--shards LIST] [--max-bytes SIZE] [--random-keys N] FILE|DIR...
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/gateway_sim.h"
#include "bench/shard_balance.h"
#include "core/base/chunker.h"
#include "core/base/fingerprint.h"

namespace dedupv1 {
namespace bench {
namespace {

constexpr char kUsage[] =
    "usage: dedupv1_gateway_sim [project] [--inputs FILE] [--set KEY=VALUE]... [--gateways 1,2,3,...]\n"
    "                           [--osds 3,30,300] [--csv] [--costs] [--explain] [--list-inputs]\n"
    "       dedupv1_gateway_sim shard-balance [--shards 64,256,1024,4096] [--max-bytes 512M]\n"
    "                           [--random-keys N] FILE|DIR...\n"
    "project: throughput, dedup ratio and index traffic of G gateways on N OSDs (a model; --explain says\n"
    "what it covers; --costs: where an ingested chunk's OSD time goes). Inputs default to costs\n"
    "measured on this machine (--list-inputs: values, sources).\n"
    "shard-balance: chunks files (Rabin, SHA-1, as the engine does) and prints max/mean distinct\n"
    "fingerprints per chunk-index shard, next to what uniformly random keys of the same count give.\n";

int Usage(const std::string& why) {
  std::cerr << "dedupv1_gateway_sim: " << why << "\n" << kUsage;
  return 2;
}

bool ParseList(const std::string& text, std::vector<int>* out) {
  out->clear();
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1) return false;
    out->push_back(static_cast<int>(v));
  }
  return !out->empty();
}

bool ParseSize(const std::string& text, uint64_t* out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || v <= 0) return false;
  const std::string unit(end);
  double mult = 1;
  if (unit == "K") mult = 1024.0;
  else if (unit == "M") mult = 1024.0 * 1024;
  else if (unit == "G") mult = 1024.0 * 1024 * 1024;
  else if (!unit.empty()) return false;
  *out = static_cast<uint64_t>(v * mult);
  return true;
}

void PrintInputs(const GatewaySimInputs& in) {
  std::printf("%-26s %12s  %-12s %s\n", "input", "value", "unit", "source");
  for (const InputSpec& s : InputSpecs()) {
    std::printf("%-26s %12g  %-12s %s\n", s.key, in.*s.field, s.unit, s.source);
  }
}

void PrintCsv(const std::vector<Projection>& rows) {
  std::printf(
      "gateways,osds,shards,mbps,ideal_mbps,gateway_mbps,cluster_mbps,plain_rados_mbps,loss,cluster_loss,"
      "efficiency,marginal,bottleneck,hot,index_ops_per_100_chunks,index_ops_per_s,index_keys_per_s,"
      "rados_ops_per_gib,dedup_ratio,dedup_ratio_per_gateway,index_osds\n");
  for (const Projection& p : rows) {
    std::printf("%d,%d,%u,%.1f,%.1f,%.1f,%.1f,%.1f,%.4f,%.4f,%.4f,%.4f,%s,%.3f,%.3f,%.0f,%.0f,%.1f,%.3f,%.3f,%d\n",
                p.gateways, p.osds, p.shards, p.mbps, p.ideal_mbps, p.gateway_mbps, p.cluster_mbps,
                p.plain_rados_mbps, p.loss, p.cluster_loss, p.efficiency, p.marginal, p.bottleneck, p.hot,
                p.index_ops_per_100_chunks, p.index_ops_per_s, p.index_keys_per_s, p.rados_ops_per_gib,
                p.dedup_ratio, p.dedup_ratio_per_gateway, p.index_osds);
  }
}

void PrintTable(const GatewaySim& sim, const std::vector<Projection>& rows) {
  const GatewaySimInputs& in = sim.inputs();
  const GatewayCap gw = sim.Gateway();
  const double chunk_hash_share = (in.dup / in.gw_known_mbps + (1 - in.dup) / in.gw_new_mbps) > 0
                                      ? (1 / in.gw_chunk_hash_mbps) /
                                            (in.dup / in.gw_known_mbps + (1 - in.dup) / in.gw_new_mbps)
                                      : 0;
  std::printf("workload: %.1f%% duplicates, %s scope; one gateway: %.0f MB/s (%s; CPU %.0f, round trips %.0f, "
              "link %.0f), chunk+hash %.0f%% of its CPU\n",
              in.dup * 100, in.cluster_scope != 0 ? "cluster" : "per-gateway", gw.mbps, gw.limit, gw.cpu_mbps,
              gw.latency_mbps, gw.net_mbps, chunk_hash_share * 100);
  if (in.index_osd_ratio > 0) {
    std::printf("index pool on OSDs of its own: %g per data OSD (at least %g) at %gx a measured OSD's omap speed; "
                "\"osds\" counts the data OSDs\n",
                in.index_osd_ratio, in.replicas, in.index_osd_speed);
  }
  std::printf("%4s %5s %6s %9s %9s %9s %6s %6s %6s %6s %-20s %5s %8s %9s %6s %6s\n", "gw", "osds", "shards",
              "MB/s", "ideal", "plain", "loss", "cl.los", "eff", "marg", "bottleneck", "hot", "idx/100c",
              "ops/GiB", "dedup", "dd/gw");
  for (const Projection& p : rows) {
    std::printf("%4d %5d %6u %9.0f %9.0f %9.0f %5.1f%% %5.1f%% %6.2f %6.2f %-20s %5.2f %8.2f %9.0f %6.2f %6.2f\n",
                p.gateways, p.osds, p.shards, p.mbps, p.ideal_mbps, p.plain_rados_mbps, p.loss * 100,
                p.cluster_loss * 100, p.efficiency, p.marginal, p.bottleneck, p.hot, p.index_ops_per_100_chunks,
                p.rados_ops_per_gib, p.dedup_ratio, p.dedup_ratio_per_gateway);
  }
}

// Where one ingested chunk's OSD time goes on |osds| OSDs.
void PrintCosts(const GatewaySim& sim, int osds) {
  const GatewaySimInputs& in = sim.inputs();
  const ClusterCost c = sim.Cluster(osds, sim.ShardsFor(osds));
  const double chunks_per_mb = 1e6 / in.chunk_bytes;
  std::printf("%d OSDs, %u shards, %.1f%% duplicates: OSD time per ingested chunk (all OSDs, replicas included)\n",
              osds, c.shards, in.dup * 100);
  if (c.index_osds > 0) {
    std::printf("the index pool on %d OSDs of its own at %gx speed: the index rows below are their time\n",
                c.index_osds, c.index_speed);
  }
  std::printf("%-22s %12s %12s %14s\n", "part", "ops/100 ch", "keys/op", "OSD us/chunk");
  std::printf("%-22s %12.3f %12s %14.1f\n", "containers", 100 * (1 - in.dup) * in.chunk_bytes / in.container_bytes,
              "", 1e6 * c.data_bw_s / chunks_per_mb);
  std::printf("%-22s %12.3f %12s %14.1f\n", "log, checkpoint", in.other_ops_per_100_chunks, "",
              1e6 * c.data_ops_s / chunks_per_mb);
  for (const StepCost& s : c.steps) {
    std::printf("%-22s %12.3f %12.1f %14.1f\n", ("index " + s.name).c_str(), 100 * s.ops, s.keys_per_op,
                1e6 * s.osd_s);
  }
  std::printf("%-22s %12s %12s %14.1f  (busiest OSD's index load / mean: %.2f)\n", "index hot spot extra", "", "",
              1e6 * (c.hot - 1) * c.index_s() / chunks_per_mb, c.hot);
  std::printf("cluster: %.0f MB/s (%s); plain 4 MiB writes: %.0f MB/s; omap op = %.1f us + %.2f us/key per replica\n",
              c.CapacityMBps(osds), c.Limit(osds), sim.PlainRadosMBps(1 << 20, osds), 1e6 * sim.OmapOpSeconds(0),
              1e6 * (sim.OmapOpSeconds(1) - sim.OmapOpSeconds(0)));
}

int Project(int argc, char** argv, int first) {
  GatewaySimInputs in;
  std::vector<int> gateways = {1, 2, 3, 5, 10, 20, 30, 50, 100};
  std::vector<int> osds = {3, 30, 300};
  bool csv = false, explain = false, list = false, costs = false;
  for (int i = first; i < argc; i++) {
    const std::string a = argv[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--csv") {
      csv = true;
    } else if (a == "--explain") {
      explain = true;
    } else if (a == "--list-inputs") {
      list = true;
    } else if (a == "--costs") {
      costs = true;
    } else if (a == "--inputs") {
      if (!value(&v)) return Usage("--inputs needs a file");
      std::ifstream f(v);
      std::stringstream text;
      text << f.rdbuf();
      if (!f) return Usage("cannot read " + v);
      Status s = ParseGatewaySimInputs(text.str(), &in);
      if (!s.ok()) return Usage(v + ": " + s.ToString());
    } else if (a == "--set") {
      if (!value(&v) || v.find('=') == std::string::npos) return Usage("--set needs KEY=VALUE");
      Status s = SetGatewaySimInput(v.substr(0, v.find('=')), v.substr(v.find('=') + 1), &in);
      if (!s.ok()) return Usage(s.ToString());
    } else if (a == "--gateways") {
      if (!value(&v) || !ParseList(v, &gateways)) return Usage("--gateways needs a list like 1,2,3");
    } else if (a == "--osds") {
      if (!value(&v) || !ParseList(v, &osds)) return Usage("--osds needs a list like 3,30,300");
    } else {
      return Usage("unknown argument " + a);
    }
  }
  Status s = ValidateGatewaySimInputs(in);
  if (!s.ok()) return Usage(s.ToString());
  if (explain) {
    std::fputs(GatewaySimExplain().c_str(), stdout);
    return 0;
  }
  if (list) {
    PrintInputs(in);
    return 0;
  }
  GatewaySim sim(in);
  if (costs) {
    for (int n : osds) PrintCosts(sim, n);
    return 0;
  }
  std::vector<Projection> rows;
  for (int n : osds) {
    std::vector<Projection> part = sim.ProjectGateways(gateways, n);
    rows.insert(rows.end(), part.begin(), part.end());
  }
  if (csv) {
    PrintCsv(rows);
  } else {
    PrintTable(sim, rows);
  }
  return 0;
}

int ShardBalanceCommand(int argc, char** argv, int first) {
  std::vector<int> counts = {64, 256, 1024, 4096};
  uint64_t max_bytes = uint64_t{512} << 20;
  uint64_t random_keys = 0;  // also: what random keys of this count would give (a larger store)
  std::vector<std::string> paths;
  for (int i = first; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--shards" && i + 1 < argc) {
      if (!ParseList(argv[++i], &counts)) return Usage("--shards needs a list like 64,256");
    } else if (a == "--random-keys" && i + 1 < argc) {
      if (!ParseSize(argv[++i], &random_keys)) return Usage("--random-keys needs a count");
    } else if (a == "--max-bytes" && i + 1 < argc) {
      if (!ParseSize(argv[++i], &max_bytes)) return Usage("--max-bytes needs a size like 512M");
    } else if (!a.empty() && a[0] == '-') {
      return Usage("unknown argument " + a);
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) return Usage("shard-balance needs files or directories");
  std::vector<uint32_t> shards;
  for (int c : counts) {
    if (c > 65536 || (c & (c - 1)) != 0) return Usage("shard counts must be powers of two <= 65536");
    shards.push_back(static_cast<uint32_t>(c));
  }
  std::unique_ptr<Chunker> chunker;
  Status s = Chunker::Create(ChunkerOptions(), &chunker);  // the engine's defaults: Rabin 2K/8K/32K
  if (!s.ok()) return Usage(s.ToString());
  ShardBalance balance(shards);
  FingerprintFilesStats stats;
  s = FingerprintFiles(paths, *chunker, FingerprintType::kSha1, max_bytes,
                       [&](const Fingerprint& fp) { balance.Add(fp); }, &stats);
  if (!s.ok()) {
    std::cerr << "dedupv1_gateway_sim: " << s.ToString() << "\n";
    return 1;
  }
  std::printf("%llu files, %llu bytes, %llu chunks (%llu all-zero, skipped), %llu distinct fingerprints (SHA-1, "
              "Rabin 8 KiB)\n",
              static_cast<unsigned long long>(stats.files), static_cast<unsigned long long>(stats.bytes),
              static_cast<unsigned long long>(stats.chunks), static_cast<unsigned long long>(stats.zero_chunks),
              static_cast<unsigned long long>(balance.distinct()));
  std::printf("%7s %10s %8s %8s %10s %9s %16s\n", "shards", "keys", "min", "max", "mean", "max/mean",
              "random max/mean");
  for (const ShardBalanceRow& r : balance.Rows()) {
    std::printf("%7u %10llu %8llu %8llu %10.1f %9.3f %16.3f\n", r.shards, static_cast<unsigned long long>(r.keys),
                static_cast<unsigned long long>(r.min), static_cast<unsigned long long>(r.max), r.mean,
                r.max_over_mean, r.random_max_over_mean);
  }
  if (random_keys > 0) {
    std::printf("uniformly random keys, %llu of them:\n", static_cast<unsigned long long>(random_keys));
    for (uint32_t s : shards) {
      std::printf("%7u %10llu %45.3f\n", s, static_cast<unsigned long long>(random_keys),
                  ShardBalance::RandomMaxOverMean(random_keys, s, 3));
    }
  }
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace dedupv1

int main(int argc, char** argv) {
  using namespace dedupv1::bench;
  const std::string command = argc > 1 ? argv[1] : "project";
  if (command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "shard-balance") return ShardBalanceCommand(argc, argv, 2);
  if (command == "project") return Project(argc, argv, 2);
  return Project(argc, argv, 1);
}

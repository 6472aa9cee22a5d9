// dedupv1_bench: measures the engine in process.
//
//   dedupv1_bench engine [--size SIZE] [--data-dir DIR] [--json] [--keep] [--set key=value]...
//                        [--seed N] [--no-reopen] [--start-at EPOCH] [--internal-redundancy P]
//   dedupv1_bench gc     [--size SIZE] [--data-dir DIR] [--json] [--keep] [--drop-caches] [--set key=value]...
//   dedupv1_bench restore [--size SIZE] [--generations N] [--every K] [--readers R] [--no-cold] ...
//                        (bench/restore_bench.h)
//
// Writes backup generation 1 and generation 2 (bench/backup_generator.h) into
// two volumes of a fresh system in 1 MiB requests, as a backup client would,
// and reports MB/s per generation, the dedup ratio against the generator's
// ground truth, and, measured in the same run on the same cores, the
// chunk+hash ceiling: Rabin chunking plus SHA-1 over the same bytes with no
// storage at all.
//
// On a rados store (--set storage.backend=rados ...) it also counts the
// process's RADOS operations during generation 1 (with its sync), generation
// 2 and the Close, per GiB written and per chunk; then a fresh gateway (new
// connection, empty local data dir "<dir>-reopen") opens the store again:
// the time until it serves, and generation 3 written into volume gen1 while
// its caches refill (bench/rados-bench.sh runs both backends side by side).
//
// For several gateways writing at once (bench/gateways-bench.sh): --seed
// picks the generator's seed (default 1; another seed gives other bytes),
// --no-reopen leaves the fresh gateway out, --start-at waits (after the
// ceiling and the open) until that wall-clock second before generation 1, so
// processes started together write together; the JSON report has each
// generation's wall-clock start and end, from which the aggregate MB/s of
// several processes is computed. --internal-redundancy sets the share of
// generation 1's runs that repeat earlier data (default 0.325); 0 makes
// generation 1 free of duplicates, to compare ingest with plain RADOS writes
// of the same bytes.
//
// The gc mode measures garbage collection rounds: generation 1 is written into
// one volume and a first round runs (the full scan every open starts with);
// generation 2 overwrites the volume and a round gives generation 1's unique
// chunks back (an incremental round); the first half of the volume is
// unmapped and a round gives that space back; then the system is closed,
// reopened and a round runs again (the full scan after a restart). Per round: time, chunks
// scanned per second, bytes reclaimed and the growth of the process's peak
// RSS during the round (the kernel's peak is reset before each round).
// --drop-caches (root) empties the page cache before the round after the
// restart, as after a reboot.
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/backup_generator.h"
#include "bench/engine_runs.h"
#include "bench/file_bench.h"
#include "bench/restore_bench.h"
#include "core/base/chunker.h"
#include "core/base/config.h"
#include "core/engine/dedup_system.h"
#include "core/rados/rados_cluster.h"
#include "index/chunk_index.h"

namespace dedupv1 {
namespace {

using bench::Clock;
using bench::CpuSeconds;
using bench::FreshStoreOptions;
using bench::OpenSystem;
using bench::Seconds;
using bench::WriteGeneration;

struct Args {
  bench::StoreArgs store;  // --size, --data-dir, --set
  bool json = false;
  bool keep = false;
  bool drop_caches = false;  // gc: the page cache is dropped before the round after the restart
  uint64_t seed = 1;         // engine: the backup generator's seed
  bool reopen = true;        // engine on rados: a fresh gateway opens the store after the Close
  double start_at = 0;       // engine: wall-clock second (epoch) to start generation 1 at; 0 = at once
  double internal_redundancy = bench::GeneratorParams().internal_redundancy;  // engine: gen 1 repeats
};

// What one engine run measured.
struct EngineResult {
  double ceiling = 0, mbs1 = 0, mbs2 = 0;
  double ceiling_cpu_s = 0;  // CPU seconds the ceiling took (comparable with gen*_cpu_s on a busy machine)
  // Wall-clock seconds (epoch) each generation's writes began and its sync ended.
  double gen1_start = 0, gen1_end = 0, gen2_start = 0, gen2_end = 0;
  uint64_t stored1 = 0, stored2 = 0;
  uint64_t chunks1 = 0, chunks2 = 0;  // chunks the engine cut per generation
  double cpu_s = 0, peak_rss_mb = 0;
  // A rados store: RADOS operations of the process (RadosCluster counters),
  // per phase; generation 1 and 2 include their final sync.
  bool rados = false;
  uint64_t open_ops = 0, gen1_ops = 0, gen2_ops = 0, close_ops = 0;
  // A rados store after Close, opened again by a fresh gateway (new
  // connection, empty local data dir): the time until it serves, then
  // generation 3 into volume gen1 while its caches refill.
  double reopen_seconds = 0, gen3_mbs = 0;
  uint64_t reopen_ops = 0, gen3_ops = 0;
  // The operations of a phase per kind ({"write": N, ...}; kinds that occurred).
  std::string gen1_kinds = "{}", gen2_kinds = "{}", close_kinds = "{}", reopen_kinds = "{}";
  // Cluster scope: the shared chunk index's operations and keys per protocol
  // step ({"claim": [ops, keys], ...}; steps that occurred).
  // (Close's are not: the table closes with the engine.)
  std::string gen1_steps = "{}", gen2_steps = "{}";
  // Mean latency per kind over generations 1 and 2 (with their syncs).
  std::string ingest_latency = "{}";
  // CPU seconds of the process during each generation (with its sync).
  double gen1_cpu_s = 0, gen2_cpu_s = 0;

  uint64_t IngestOps() const { return gen1_ops + gen2_ops + close_ops; }
};

// The RADOS op counters of |sys| (all zero for a local store).
RadosStats RadosSnapshot(const DedupSystem* sys) { return sys->rados() ? sys->rados()->stats() : RadosStats(); }

// RADOS operations |sys| has made so far (0 for a local store).
uint64_t RadosOps(const DedupSystem* sys) { return RadosSnapshot(sys).TotalOps(); }

// The operations between |a| and |b| per kind, as a JSON object of the kinds that occurred.
std::string KindsJson(const RadosStats& a, const RadosStats& b) {
  std::string out = "{";
  for (int k = 0; k < static_cast<int>(RadosOpKind::kCount); k++) {
    const uint64_t n = b.kinds[k].ops - a.kinds[k].ops;
    if (n == 0) continue;
    if (out.size() > 1) out += ", ";
    out += "\"" + std::string(RadosOpKindName(static_cast<RadosOpKind>(k))) + "\": " + std::to_string(n);
  }
  return out + "}";
}

// The shared chunk index's counts per step (all zero unless cluster scope).
SharedTableStepCounts StepSnapshot(DedupSystem* sys) {
  return sys->chunk_index() ? sys->chunk_index()->stats().claims.table_steps : SharedTableStepCounts();
}

// The steps between |a| and |b| as a JSON object of [ops, keys] per step that occurred.
std::string StepsJson(const SharedTableStepCounts& a, const SharedTableStepCounts& b) {
  std::string out = "{";
  for (size_t k = 0; k < a.ops.size(); k++) {
    const uint64_t n = b.ops[k] - a.ops[k];
    if (n == 0) continue;
    if (out.size() > 1) out += ", ";
    out += "\"" + std::string(SharedTableStepName(static_cast<SharedTableStep>(k))) + "\": [" + std::to_string(n) +
           ", " + std::to_string(b.keys[k] - a.keys[k]) + "]";
  }
  return out + "}";
}

// Seconds since the epoch (wall clock: comparable across processes).
double EpochSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The mean latency (us) of the operations between |a| and |b| per kind, as a
// JSON object of the kinds that occurred (the RadosOpTimer's round trips).
std::string LatencyJson(const RadosStats& a, const RadosStats& b) {
  std::string out = "{";
  for (int k = 0; k < static_cast<int>(RadosOpKind::kCount); k++) {
    const uint64_t n = b.kinds[k].ops - a.kinds[k].ops;
    if (n == 0) continue;
    const double us = double(b.kinds[k].latency_us_total - a.kinds[k].latency_us_total) / n;
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s\"%s\": %.1f", out.size() > 1 ? ", " : "",
                  RadosOpKindName(static_cast<RadosOpKind>(k)), us);
    out += buf;
  }
  return out + "}";
}

// CPU seconds (user + system) the process has used so far.
// Generation 1 into volume gen1 and generation 2 into gen2 of |sys|, then
// Close; fills |r|. Returns Close's status.
Status WriteGenerations(DedupSystem* sys, const bench::Generation& g1, const bench::Generation& g2, bool json,
                        EngineResult* r) {
  Volume *v1, *v2;
  sys->GetVolume("gen1", &v1);
  sys->GetVolume("gen2", &v2);
  auto& st = sys->stats();
  r->rados = sys->rados() != nullptr;
  const RadosStats opened = RadosSnapshot(sys);
  const SharedTableStepCounts steps0 = StepSnapshot(sys);
  r->open_ops = opened.TotalOps();
  r->gen1_start = EpochSeconds();
  const double cpu0 = CpuSeconds();
  r->mbs1 = WriteGeneration(v1, g1, json, "generation 1");
  const double cpu1 = CpuSeconds();
  r->gen1_cpu_s = cpu1 - cpu0;
  r->gen1_end = EpochSeconds();
  const RadosStats after1 = RadosSnapshot(sys);
  r->gen1_ops = after1.TotalOps() - r->open_ops;
  r->gen1_kinds = KindsJson(opened, after1);
  const SharedTableStepCounts steps1 = StepSnapshot(sys);
  r->gen1_steps = StepsJson(steps0, steps1);
  r->stored1 = sys->chunk_store()->stats().bytes_stored;
  r->chunks1 = st.chunks.load();
  r->gen2_start = EpochSeconds();
  r->mbs2 = WriteGeneration(v2, g2, json, "generation 2");
  r->gen2_cpu_s = CpuSeconds() - cpu1;
  r->gen2_end = EpochSeconds();
  const RadosStats after2 = RadosSnapshot(sys);
  r->ingest_latency = LatencyJson(opened, after2);
  r->gen2_ops = after2.TotalOps() - after1.TotalOps();
  r->gen2_kinds = KindsJson(after1, after2);
  const SharedTableStepCounts steps2 = StepSnapshot(sys);
  r->gen2_steps = StepsJson(steps1, steps2);
  r->stored2 = sys->chunk_store()->stats().bytes_stored - r->stored1;
  r->chunks2 = st.chunks.load() - r->chunks1;
  if (!json) {
    std::fprintf(stderr, "worker time: claim %.2fs chunk %.2fs fingerprint %.2fs filter+store %.2fs install %.2fs\n",
                 st.ns_claiming / 1e9, st.ns_chunking / 1e9, st.ns_fingerprinting / 1e9, st.ns_filtering / 1e9,
                 st.ns_installing / 1e9);
  }
  const RadosStats before_close = RadosSnapshot(sys);
  Status s = sys->Close();
  const RadosStats closed = RadosSnapshot(sys);
  r->close_ops = closed.TotalOps() - before_close.TotalOps();
  r->close_kinds = KindsJson(before_close, closed);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  r->peak_rss_mb = ru.ru_maxrss / 1024.0;
  r->cpu_s = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  return s;
}

// A fresh gateway over the closed rados store |base| describes: a new
// connection and the empty local data dir |dir| (only data-dir changes; the
// paths derived from it are derived again). Times the open, then writes |g3|
// into volume gen1 and closes.
bool ReopenRados(const Options& base, const std::string& dir, const bench::Generation& g3, bool json,
                 EngineResult* r) {
  Options o = base;
  Status s = o.DerivePathsFrom(dir);
  if (!s.ok()) {
    std::fprintf(stderr, "reopen options: %s\n", s.ToString().c_str());
    return false;
  }
  std::filesystem::remove_all(dir);
  std::unique_ptr<DedupSystem> sys;
  auto start = Clock::now();
  if (!OpenSystem(o, &sys)) return false;
  Volume* v;
  s = sys->GetVolume("gen1", &v);
  r->reopen_seconds = Seconds(start);
  r->reopen_ops = RadosOps(sys.get());
  r->reopen_kinds = KindsJson(RadosStats(), RadosSnapshot(sys.get()));
  if (s.ok()) r->gen3_mbs = WriteGeneration(v, g3, json, "generation 3");
  r->gen3_ops = RadosOps(sys.get()) - r->reopen_ops;
  if (s.ok()) s = sys->Close();
  if (!s.ok()) std::fprintf(stderr, "after reopen: %s\n", s.ToString().c_str());
  return s.ok();
}

// The RADOS keys of the JSON report (a rados store only).
void PrintRadosJson(const EngineResult& r, uint64_t written) {
  const uint64_t ops = std::max<uint64_t>(1, r.IngestOps());
  std::printf(
      ", \"open_rados_ops\": %llu, \"gen1_rados_ops\": %llu, \"gen2_rados_ops\": %llu, \"close_rados_ops\": %llu, "
      "\"rados_ops_per_gib\": %.1f, \"chunks_per_rados_op\": %.1f, \"rados_ops_per_100_chunks\": %.3f, "
      "\"reopen_seconds\": %.2f, \"reopen_rados_ops\": %llu, \"gen3_after_reopen_mb_s\": %.1f, "
      "\"gen3_rados_ops\": %llu, \"rados_ops_by_kind\": {\"gen1\": %s, \"gen2\": %s, \"close\": %s, \"reopen\": %s}, "
      "\"rados_latency_us_by_kind\": %s, "
      "\"index_ops_by_step\": {\"gen1\": %s, \"gen2\": %s}",
      (unsigned long long)r.open_ops, (unsigned long long)r.gen1_ops, (unsigned long long)r.gen2_ops,
      (unsigned long long)r.close_ops, r.IngestOps() / (written / double(1ULL << 30)),
      double(r.chunks1 + r.chunks2) / ops, 100.0 * r.IngestOps() / std::max<uint64_t>(1, r.chunks1 + r.chunks2),
      r.reopen_seconds, (unsigned long long)r.reopen_ops, r.gen3_mbs, (unsigned long long)r.gen3_ops, r.gen1_kinds.c_str(), r.gen2_kinds.c_str(),
      r.close_kinds.c_str(), r.reopen_kinds.c_str(), r.ingest_latency.c_str(), r.gen1_steps.c_str(),
      r.gen2_steps.c_str());
}

void PrintEngineJson(const bench::Generation& g1, const bench::Generation& g2, const EngineResult& r,
                     uint64_t seed) {
  std::printf(
      "{\"size\": %llu, \"seed\": %llu, \"gen1_start_epoch\": %.3f, \"gen1_end_epoch\": %.3f, "
      "\"gen2_start_epoch\": %.3f, \"gen2_end_epoch\": %.3f, \"backend\": \"%s\", \"gen1_mb_s\": %.1f, \"gen2_mb_s\": %.1f, \"ceiling_mb_s\": %.1f, "
      "\"gen1_vs_ceiling\": %.3f, \"gen2_vs_ceiling\": %.3f, \"gen1_stored_bytes\": %llu, "
      "\"gen2_stored_bytes\": %llu, \"gen2_dedup_ratio\": %.4f, \"ground_truth_ratio\": %.4f, "
      "\"gen1_ground_truth_ratio\": %.4f, \"gen1_dedup_ratio\": %.4f, \"chunks\": %llu, \"gen1_chunks\": %llu, "
      "\"gen2_chunks\": %llu, \"cpu_seconds\": %.1f, \"gen1_cpu_seconds\": %.2f, \"gen2_cpu_seconds\": %.2f, "
      "\"ceiling_cpu_seconds\": %.2f, "
      "\"peak_rss_mb\": %.0f, \"generator_mb\": %.1f",
      (unsigned long long)g1.size(), (unsigned long long)seed, r.gen1_start, r.gen1_end, r.gen2_start, r.gen2_end,
      r.rados ? "rados" : "local", r.mbs1, r.mbs2, r.ceiling, r.mbs1 / r.ceiling,
      r.mbs2 / r.ceiling, (unsigned long long)r.stored1, (unsigned long long)r.stored2,
      1.0 - double(r.stored2) / double(g2.size()), g2.truth().redundancy(), g1.truth().redundancy(),
      1.0 - double(r.stored1) / double(g1.size()), (unsigned long long)(r.chunks1 + r.chunks2),
      (unsigned long long)r.chunks1, (unsigned long long)r.chunks2, r.cpu_s, r.gen1_cpu_s, r.gen2_cpu_s,
      r.ceiling_cpu_s, r.peak_rss_mb, (g1.MemoryBytes() + g2.MemoryBytes()) / 1048576.0);
  if (r.rados) PrintRadosJson(r, g1.size() + g2.size());
  std::printf("}\n");
}

void PrintRadosText(const EngineResult& r, uint64_t written) {
  std::printf("%-34s %14llu %14llu\n", "RADOS operations (incl. sync)", (unsigned long long)r.gen1_ops,
              (unsigned long long)r.gen2_ops);
  std::printf("\nRADOS operations: open %llu, close %llu; %.1f per GiB written, %.1f chunks per operation "
              "(%.3f per 100 chunks)\n",
              (unsigned long long)r.open_ops, (unsigned long long)r.close_ops,
              r.IngestOps() / (written / double(1ULL << 30)),
              double(r.chunks1 + r.chunks2) / std::max<uint64_t>(1, r.IngestOps()),
              100.0 * r.IngestOps() / std::max<uint64_t>(1, r.chunks1 + r.chunks2));
  std::printf("RADOS operations by kind: gen1 %s, gen2 %s, close %s, reopen %s\n", r.gen1_kinds.c_str(),
              r.gen2_kinds.c_str(), r.close_kinds.c_str(), r.reopen_kinds.c_str());
  std::printf("fresh gateway (empty local data dir): serving after %.2f s (%llu RADOS operations); "
              "generation 3 into gen1 at %.0f MB/s (%llu RADOS operations)\n",
              r.reopen_seconds, (unsigned long long)r.reopen_ops, r.gen3_mbs, (unsigned long long)r.gen3_ops);
}

void PrintEngineText(const bench::Generation& g1, const bench::Generation& g2, const EngineResult& r,
                     const std::string& dir) {
  std::printf("\n%-34s %14s %14s\n", "", "generation 1", "generation 2");
  std::printf("%-34s %14s %14s\n", "written", HumanBytes(g1.size()).c_str(), HumanBytes(g2.size()).c_str());
  std::printf("%-34s %14s %14s\n", "stored (new chunks)", HumanBytes(r.stored1).c_str(),
              HumanBytes(r.stored2).c_str());
  std::printf("%-34s %13.1f%% %13.1f%%\n", "redundancy removed", 100.0 * (1.0 - double(r.stored1) / g1.size()),
              100.0 * (1.0 - double(r.stored2) / g2.size()));
  std::printf("%-34s %13.1f%% %13.1f%%\n", "ground truth (generator)", 100.0 * g1.truth().redundancy(),
              100.0 * g2.truth().redundancy());
  std::printf("%-34s %14llu %14llu\n", "chunks", (unsigned long long)r.chunks1, (unsigned long long)r.chunks2);
  std::printf("%-34s %12.0f   %12.0f\n", "throughput MB/s (incl. sync)", r.mbs1, r.mbs2);
  std::printf("%-34s %12.0f   %12.0f\n", "chunk+hash ceiling MB/s", r.ceiling, r.ceiling);
  std::printf("%-34s %13.0f%% %13.0f%%\n", "share of the ceiling", 100 * r.mbs1 / r.ceiling,
              100 * r.mbs2 / r.ceiling);
  if (r.rados) PrintRadosText(r, g1.size() + g2.size());
  std::printf("\ntotal stored %s for %s written: %.1fx; peak RSS %.0f MB; %s in %s\n",
              HumanBytes(r.stored1 + r.stored2).c_str(), HumanBytes(g1.size() + g2.size()).c_str(),
              double(g1.size() + g2.size()) / double(std::max<uint64_t>(1, r.stored1 + r.stored2)), r.peak_rss_mb,
              r.rados ? "gateway dir" : "data", dir.c_str());
}

// Sleeps until the wall-clock second |epoch| (0: returns at once). A start
// more than 10 minutes ahead is a caller's mistake, not a wait.
bool WaitUntil(double epoch) {
  if (epoch <= 0) return true;
  const double wait = epoch - EpochSeconds();
  if (wait > 600) {
    std::fprintf(stderr, "--start-at is %.0f s ahead (at most 600)\n", wait);
    return false;
  }
  if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  return true;
}

int RunEngine(const Args& args) {
  std::string dir;
  bool temp = false;
  uint64_t vol_size = 0;
  Options options;
  if (!FreshStoreOptions(args.store, "dedupv1-bench", {"gen1", "gen2"}, &dir, &temp, &vol_size, &options)) return 1;
  bench::GeneratorParams params;
  params.internal_redundancy = args.internal_redundancy;
  bench::BackupGenerator generator(params, args.seed);
  bench::Generation g1 = generator.First(vol_size);
  bench::Generation g2 = generator.Next(g1);

  EngineResult r;
  if (!args.json) std::fprintf(stderr, "measuring the chunk+hash ceiling...\n");
  const double cpu_before_ceiling = CpuSeconds();
  r.ceiling = bench::ChunkHashCeilingMBs(g1, ChunkerOptions(), options.dedup_threads);
  r.ceiling_cpu_s = CpuSeconds() - cpu_before_ceiling;
  std::unique_ptr<DedupSystem> sys;
  if (!OpenSystem(options, &sys)) return 1;
  if (!WaitUntil(args.start_at)) return 1;
  Status s = WriteGenerations(sys.get(), g1, g2, args.json, &r);
  sys.reset();  // a fresh gateway below connects anew
  const std::string reopen_dir = dir + "-reopen";
  if (s.ok() && r.rados && args.reopen && !ReopenRados(options, reopen_dir, generator.Next(g2), args.json, &r)) return 1;
  if (args.json) {
    PrintEngineJson(g1, g2, r, args.seed);
  } else {
    PrintEngineText(g1, g2, r, dir);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "close failed: %s\n", s.ToString().c_str());
    return 1;
  }
  if (!args.keep) std::filesystem::remove_all(reopen_dir);
  if (temp && !args.keep) std::filesystem::remove_all(dir);
  return 0;
}

// A "<field>: N kB" line of /proc/self/status in bytes ("VmRSS", "VmHWM"
// for the peak); 0 if unknown.
uint64_t ProcStatusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = field + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::strtoull(line.c_str() + prefix.size(), nullptr, 10) * 1024;
  }
  return 0;
}

// Resets the kernel's peak RSS to the current RSS (Linux: clear_refs 5).
void ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
}

struct GcRound {
  const char* name;
  double seconds = 0;
  uint64_t containers = 0;  // committed containers when the round started
  uint64_t chunks = 0;      // chunk-index entries (table + auxiliary) when the round started
  uint64_t reclaimed = 0;
  uint64_t deleted = 0;
  uint64_t looked_up = 0;     // containers whose chunks the round looked up one by one
  uint64_t summarized = 0;    // containers judged from their summary (no metadata read)
  uint64_t garbage_kept = 0;  // dead chunks left in containers at least half live, after the round
  uint64_t rss_growth = 0;    // peak RSS during the round minus RSS before it
};

bool RunGcRound(DedupSystem* sys, GcRound* round) {
  std::vector<ContainerId> ids;
  if (!sys->chunk_store()->ListCommitted(&ids).ok()) return false;
  round->containers = ids.size();
  const ChunkIndexStats is = sys->chunk_index()->stats();
  round->chunks = is.persistent_entries + is.aux_entries;  // an entry in both counts twice: an estimate
  const GcStats before = sys->gc_stats();
  malloc_trim(0);  // memory freed before the round goes back to the kernel, so the round's own shows
  const uint64_t rss_before = ProcStatusBytes("VmRSS");
  ResetPeakRss();
  auto start = Clock::now();
  Status s = sys->RunGc();
  round->seconds = Seconds(start);
  const uint64_t peak = ProcStatusBytes("VmHWM");
  round->rss_growth = peak > rss_before ? peak - rss_before : 0;
  if (!s.ok()) {
    std::fprintf(stderr, "gc round (%s) failed: %s\n", round->name, s.ToString().c_str());
    return false;
  }
  const GcStats after = sys->gc_stats();
  round->reclaimed = after.bytes_reclaimed - before.bytes_reclaimed;
  round->deleted = after.chunks_deleted - before.chunks_deleted;
  round->looked_up = after.containers_looked_up - before.containers_looked_up;
  round->summarized = after.containers_summarized - before.containers_summarized;
  round->garbage_kept = sys->chunk_store()->stats().dead_chunks_marked;
  return true;
}

int RunGcBench(const Args& args) {
  std::string dir;
  bool temp = false;
  uint64_t vol_size = 0;
  Options options;
  if (!FreshStoreOptions(args.store, "dedupv1-bench-gc", {"backup"}, &dir, &temp, &vol_size, &options)) return 1;
  Status s;
  bench::BackupGenerator generator(bench::GeneratorParams(), 1);
  bench::Generation g1 = generator.First(vol_size);
  bench::Generation g2 = generator.Next(g1);

  std::unique_ptr<DedupSystem> sys;
  auto open = [&]() -> bool {
    Status o = DedupSystem::OpenStore(options, Env::Default(), &sys);
    if (!o.ok()) {
      std::fprintf(stderr, "%s\n", o.ToString().c_str());
      return false;
    }
    sys->ForceIdle(IdleMode::kBusy);  // rounds run only when the bench says so
    return true;
  };
  if (!open()) return 1;
  Volume* vol;
  sys->GetVolume("backup", &vol);
  WriteGeneration(vol, g1, args.json, "generation 1");
  GcRound first{"first after open"};
  if (!RunGcRound(sys.get(), &first)) return 1;
  WriteGeneration(vol, g2, args.json, "generation 2");
  const uint64_t used_before = sys->chunk_store()->stats().bytes_stored;
  GcRound incremental{"after overwrite"};
  if (!RunGcRound(sys.get(), &incremental)) return 1;
  s = vol->Unmap(0, vol_size / 2 / 4096 * 4096);
  if (s.ok()) s = vol->Sync();
  if (!s.ok()) {
    std::fprintf(stderr, "unmap failed: %s\n", s.ToString().c_str());
    return 1;
  }
  GcRound unmapped{"after unmapping half"};
  if (!RunGcRound(sys.get(), &unmapped)) return 1;
  s = sys->Close();
  if (!s.ok()) {
    std::fprintf(stderr, "close failed: %s\n", s.ToString().c_str());
    return 1;
  }
  sys.reset();
  if (!open()) return 1;
  // As after a reboot: the chunk index and the containers come from disk.
  if (args.drop_caches) bench::DropPageCache();
  GcRound restart{args.drop_caches ? "after restart, cold" : "first after restart"};
  if (!RunGcRound(sys.get(), &restart)) return 1;
  s = sys->Close();
  if (!s.ok()) {
    std::fprintf(stderr, "close failed: %s\n", s.ToString().c_str());
    return 1;
  }
  const GcRound rounds[] = {first, incremental, unmapped, restart};
  if (args.json) {
    std::printf("{\"size\": %llu, \"rounds\": [", (unsigned long long)vol_size);
    for (size_t i = 0; i < sizeof(rounds) / sizeof(rounds[0]); i++) {
      const GcRound& r = rounds[i];
      std::printf(
          "%s{\"round\": \"%s\", \"seconds\": %.3f, \"containers\": %llu, \"chunks\": %llu, "
          "\"chunks_per_s\": %.0f, \"bytes_reclaimed\": %llu, \"chunks_deleted\": %llu, "
          "\"containers_looked_up\": %llu, \"containers_summarized\": %llu, \"garbage_chunks_kept\": %llu, "
          "\"rss_growth_bytes\": %llu}",
          i ? ", " : "", r.name, r.seconds, (unsigned long long)r.containers, (unsigned long long)r.chunks,
          r.chunks / std::max(r.seconds, 1e-6), (unsigned long long)r.reclaimed, (unsigned long long)r.deleted,
          (unsigned long long)r.looked_up, (unsigned long long)r.summarized, (unsigned long long)r.garbage_kept,
          (unsigned long long)r.rss_growth);
    }
    std::printf("]}\n");
  } else {
    std::printf("\n%-22s %9s %11s %10s %12s %12s %10s %10s %11s %12s %12s\n", "gc round", "seconds", "containers",
                "chunks", "chunks/s", "reclaimed", "deleted", "looked up", "summarized", "kept garbage", "RSS growth");
    for (const GcRound& r : rounds) {
      std::printf("%-22s %9.2f %11llu %10llu %12.0f %12s %10llu %10llu %11llu %12llu %12s\n", r.name, r.seconds,
                  (unsigned long long)r.containers, (unsigned long long)r.chunks, r.chunks / std::max(r.seconds, 1e-6),
                  HumanBytes(r.reclaimed).c_str(), (unsigned long long)r.deleted, (unsigned long long)r.looked_up,
                  (unsigned long long)r.summarized, (unsigned long long)r.garbage_kept,
                  HumanBytes(r.rss_growth).c_str());
    }
    std::printf("\nstored before the overwrite round: %s; data in %s\n", HumanBytes(used_before).c_str(),
                dir.c_str());
  }
  if (temp && !args.keep) std::filesystem::remove_all(dir);
  return 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: dedupv1_bench engine|gc|restore|files [--size SIZE] [--data-dir DIR] [--json] [--keep] [--set key=value]...\n"
               "                                [--seed N] [--no-reopen] [--start-at EPOCH] [--internal-redundancy P]\n"
               "                                (engine only)\n"
               "                                [--drop-caches] (gc only)\n"
               "  engine: writes two synthetic backup generations into a fresh system and reports MB/s,\n"
               "          dedup ratio vs the generator's ground truth, and the chunk+hash ceiling; on a rados\n"
               "          store also RADOS operations, a fresh gateway's open time and generation 3 after it\n"
               "  gc:     writes generation 1, then generation 2 over it, and times garbage collection\n"
               "          rounds (first after open, after the overwrite, after unmapping half, after a restart)\n"
               "  restore [--generations N] [--every K] [--readers R] [--no-cold] [--seed N]:\n"
               "          writes N weekly generations into one volume and restores it warm and cold after\n"
               "          generation 1, every K-th and the last, beside a plain file of the same bytes\n"
               "  files FILE... [--data-dir DIR] [--json] [--keep] [--set key=value]...:\n"
               "          real data: each FILE is one generation (a tar of a tree, say), written into a\n"
               "          volume of its own; MB/s, CPU and stored bytes per generation, the ceiling\n");
  return 2;
}

// The store flags the files and restore modes share: --set key=value and
// --data-dir DIR into |store|, and with |size| --size SIZE (at least 1M).
// 1 if argv[*i] was one (its value consumed: *i advanced), 0 if it is no
// store flag, 2 (the exit code) if it is malformed.
int ParseStoreFlag(int argc, char** argv, int* i, bool size, bench::StoreArgs* store) {
  const std::string a = argv[*i];
  if (*i + 1 >= argc || (a != "--set" && a != "--data-dir" && !(size && a == "--size"))) return 0;
  const std::string v = argv[++*i];
  if (a == "--data-dir") {
    store->data_dir = v;
  } else if (a == "--set") {
    const size_t eq = v.find('=');
    if (eq == std::string::npos) return Usage();
    store->overrides.emplace_back(v.substr(0, eq), v.substr(eq + 1));
  } else {
    Status s = ParseSize(v, &store->size);
    if (!s.ok() || store->size < (1 << 20)) {
      std::fprintf(stderr, "--size: %s\n", s.ok() ? "at least 1M" : s.message().c_str());
      return 2;
    }
  }
  return 1;
}

// dedupv1_bench files FILE... (bench/file_bench.h).
int FilesMain(int argc, char** argv) {
  bench::FileBenchArgs args;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    const int flag = ParseStoreFlag(argc, argv, &i, /*size=*/false, &args.store);
    if (flag == 2) return 2;
    if (flag == 1) continue;
    if (a == "--json") {
      args.json = true;
    } else if (a == "--keep") {
      args.keep = true;
    } else if (a.rfind("--", 0) == 0) {
      return Usage();
    } else {
      args.files.push_back(a);
    }
  }
  return bench::RunFileBench(args);
}

// dedupv1_bench restore ... (bench/restore_bench.h).
int RestoreMain(int argc, char** argv) {
  bench::RestoreArgs args;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    const int flag = ParseStoreFlag(argc, argv, &i, /*size=*/true, &args.store);
    if (flag == 2) return 2;
    if (flag == 1) continue;
    if (a == "--json") {
      args.json = true;
    } else if (a == "--keep") {
      args.keep = true;
    } else if (a == "--no-cold") {
      args.cold = false;
    } else if ((a == "--generations" || a == "--every" || a == "--readers" || a == "--seed") && has_value) {
      char* end = nullptr;
      const char* v = argv[++i];
      const long long n = std::strtoll(v, &end, 10);
      if (end == v || *end != '\0' || n < (a == "--every" ? 0 : 1) || n > 100000) return Usage();
      if (a == "--generations") args.generations = static_cast<int>(n);
      if (a == "--every") args.every = static_cast<int>(n);
      if (a == "--readers") args.readers = static_cast<int>(n);
      if (a == "--seed") args.seed = static_cast<uint64_t>(n);
    } else {
      return Usage();
    }
  }
  return bench::RunRestoreBench(args);
}

}  // namespace
}  // namespace dedupv1

int main(int argc, char** argv) {
  using namespace dedupv1;
  if (argc >= 2 && std::strcmp(argv[1], "restore") == 0) return RestoreMain(argc, argv);
  if (argc >= 2 && std::strcmp(argv[1], "files") == 0) return FilesMain(argc, argv);
  if (argc < 2 || (std::strcmp(argv[1], "engine") != 0 && std::strcmp(argv[1], "gc") != 0)) return Usage();
  const bool gc = std::strcmp(argv[1], "gc") == 0;
  Args args;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--drop-caches" && gc) {
      args.drop_caches = true;
    } else if (a == "--json") {
      args.json = true;
    } else if (a == "--keep") {
      args.keep = true;
    } else if (a == "--no-reopen" && !gc) {
      args.reopen = false;
    } else if ((a == "--seed" || a == "--start-at" || a == "--internal-redundancy") && !gc && i + 1 < argc) {
      char* end = nullptr;
      const char* v = argv[++i];
      if (a == "--seed") {
        args.seed = std::strtoull(v, &end, 10);
      } else if (a == "--start-at") {
        args.start_at = std::strtod(v, &end);
      } else {
        args.internal_redundancy = std::strtod(v, &end);
        if (!(args.internal_redundancy >= 0 && args.internal_redundancy <= 1)) return Usage();
      }
      if (end == v || *end != '\0') return Usage();
    } else if (a == "--set" && i + 1 < argc) {
      std::string kv = argv[++i];
      size_t eq = kv.find('=');
      if (eq == std::string::npos) return Usage();
      args.store.overrides.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if ((a == "--size" || a == "--data-dir") && i + 1 < argc) {
      std::string v = argv[++i];
      if (a == "--size") {
        Status s = ParseSize(v, &args.store.size);
        if (!s.ok() || args.store.size < (1 << 20)) {
          std::fprintf(stderr, "--size: %s\n", s.ok() ? "at least 1M" : s.message().c_str());
          return 2;
        }
      } else {
        args.store.data_dir = v;
      }
    } else {
      return Usage();
    }
  }
  return gc ? RunGcBench(args) : RunEngine(args);
}

// dedupv1_traffic: writes synthetic backup generations (bench/backup_generator.h)
// to an iSCSI LUN, a file or standard output, like the backup clients of the
// dedupv1 paper, and reads them back to verify them.
//
//   dedupv1_traffic [write] [options] TARGET...
//   dedupv1_traffic verify  [options] TARGET...
//
// Run with --help for the options. The generator is deterministic for a seed
// and the generation parameters, so `verify` with the same options
// regenerates exactly what `write` wrote. Data is produced request by request;
// no generation is ever held in memory. The report (ground truth per
// generation: unique / internal redundant / temporal redundant bytes, and the
// throughput) goes to stdout, or to stderr when the data goes to stdout;
// --json makes it one JSON object for scripts.
//
// Exit codes: 0 ok, 1 verify found a difference, 2 usage error, 3 I/O or
// session error.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/backup_generator.h"
#include "bench/file_generation.h"
#include "bench/json_string.h"
#include "bench/traffic_runner.h"
#include "bench/traffic_target.h"
#include "core/base/config.h"

namespace dedupv1 {
namespace bench {
namespace {

constexpr int kExitMismatch = 1;
constexpr int kExitUsage = 2;
constexpr int kExitError = 3;

using Clock = std::chrono::steady_clock;

struct Args {
  bool verify = false;
  std::vector<std::string> targets;
  uint64_t size = 1ULL << 30;
  int generations = 1;
  int first_generation = 1;
  uint64_t seed = 1;
  uint64_t request_size = 512 << 10;
  int streams = 1;
  int queue_depth = 4;
  int timeout = 120;
  bool lun_per_generation = false;
  bool json = false;
  int progress = -1;  // -1: when stderr is a terminal
  bool sync = true;
  std::string input;  // --input FILE: real data instead of the generator ("%d": per generation)
  GeneratorParams params;
};

void PrintUsage(FILE* out) {
  if (!HaveIscsi()) std::fprintf(out, "(this build has no libiscsi: iscsi:// targets are not available)\n");
  std::fprintf(out,
      "usage: dedupv1_traffic [write] [options] TARGET...\n"
      "       dedupv1_traffic verify  [options] TARGET...\n"
      "\n"
      "Writes synthetic backup generations 1..N (generation 1 with internal redundancy,\n"
      "each next one derived from the previous by a U/IR/TR Markov chain) and prints\n"
      "the ground truth and the throughput; `verify` reads them back and compares\n"
      "them with the regenerated data (same options, same seed).\n"
      "\n"
      "TARGET:\n"
      "  iscsi://HOST[:PORT]/IQN/LUN   an iSCSI LUN (libiscsi; SYNCHRONIZE CACHE at the end)\n"
      "  FILE                          a file or block device (fdatasync at the end)\n"
      "  -                             stdout (write) / stdin (verify); generations concatenated\n"
      "  null:                         discard (measures the generator alone)\n"
      "  \"%%d\" in TARGET is replaced by the generation number. One TARGET per written\n"
      "  generation, or one TARGET for all: with %%d or --lun-per-generation each\n"
      "  generation gets its own, else each generation overwrites the previous one\n"
      "  (verify then checks the last generation only).\n"
      "\n"
      "options:\n"
      "  --size SIZE               bytes per generation (default 1G; K/M/G/T)\n"
      "  --generations N           generations 1..N (default 1)\n"
      "  --first-generation K      write (verify) only generations K..N; earlier ones are\n"
      "                            generated but not written (default 1)\n"
      "  --seed S                  generator seed (default 1)\n"
      "  --request-size SIZE       bytes per WRITE/READ (default 512K)\n"
      "  --streams N               split each generation into N contiguous parts written in\n"
      "                            parallel, each on its own iSCSI session (default 1)\n"
      "  --queue-depth N           iSCSI commands in flight per stream (default 4)\n"
      "  --lun-per-generation      generation g goes to LUN (the URL's LUN + g - 1)\n"
      "  --timeout SECONDS         per iSCSI command (default 120)\n"
      "  --no-sync                 no SYNCHRONIZE CACHE / fdatasync after writing\n"
      "  --json                    the report as one JSON object\n"
      "  --progress, --no-progress progress bar on stderr (default: when it is a terminal)\n"
      "  --input FILE              real data: generation g is FILE's bytes (\"%%d\" in FILE is\n"
      "                            replaced by g), padded with zeros to whole 4 KiB blocks;\n"
      "                            the generator and --size are not used, the truth is unknown\n"
      "generator (defaults in brackets):\n"
      "  --internal-redundancy F   generation 1: share of runs repeating earlier data [0.325]\n"
      "  --gen1-run-mean SIZE      generation 1: mean run length [64K]\n"
      "  --tr-run-mean SIZE        generation 2+: mean temporal redundant run [1M]\n"
      "  --u-run-mean SIZE         generation 2+: mean unique run [16K]\n"
      "  --ir-run-mean SIZE        generation 2+: mean internal redundant run [16K]\n"
      "  --tr-to-u P --tr-to-ir P  transition probabilities from TR [0.6, 0.15]\n"
      "  --u-to-tr P --u-to-ir P   from U [0.85, 0.05]\n"
      "  --ir-to-tr P --ir-to-u P  from IR [0.9, 0.05]\n"
      "\n"
      "exit: 0 ok, 1 verify found a difference, 2 usage, 3 I/O or session error\n");
}

int UsageError(const std::string& what) {
  std::fprintf(stderr, "dedupv1_traffic: %s (--help for usage)\n", what.c_str());
  return kExitUsage;
}

// --- option parsing -------------------------------------------------------------

bool ParseIntIn(const std::string& v, int lo, int hi, int* out) {
  uint64_t x;
  if (!ParseUint(v, &x).ok() || x < static_cast<uint64_t>(lo) || x > static_cast<uint64_t>(hi)) return false;
  *out = static_cast<int>(x);
  return true;
}

bool ParseProbability(const std::string& v, double* out) {
  double x;
  if (!ParseDouble(v, &x).ok() || !(x >= 0 && x <= 1)) return false;
  *out = x;
  return true;
}

// Returns -1 when parsed, else the exit code.
int ParseArgs(int argc, char** argv, Args* args) {
  int i = 1;
  if (i < argc && std::strcmp(argv[i], "write") == 0) {
    i++;
  } else if (i < argc && std::strcmp(argv[i], "verify") == 0) {
    args->verify = true;
    i++;
  }
  for (; i < argc; i++) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      PrintUsage(stdout);
      return 0;
    }
    if (a == "-" || a.rfind("--", 0) != 0) {
      args->targets.push_back(a);
      continue;
    }
    std::string value;
    bool has_value = false;
    size_t eq = a.find('=');
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    // Flags without a value.
    if (a == "--json" || a == "--progress" || a == "--no-progress" || a == "--no-sync" ||
        a == "--lun-per-generation") {
      if (has_value) return UsageError(a + " takes no value");
      if (a == "--json") args->json = true;
      if (a == "--progress") args->progress = 1;
      if (a == "--no-progress") args->progress = 0;
      if (a == "--no-sync") args->sync = false;
      if (a == "--lun-per-generation") args->lun_per_generation = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) return UsageError(a + " needs a value");
      value = argv[++i];
    }
    GeneratorParams& p = args->params;
    bool ok = true;
    uint64_t u = 0;
    if (a == "--size") {
      ok = ParseSize(value, &args->size).ok() && args->size > 0;
    } else if (a == "--generations") {
      ok = ParseIntIn(value, 1, 1000, &args->generations);
    } else if (a == "--first-generation") {
      ok = ParseIntIn(value, 1, 1000, &args->first_generation);
    } else if (a == "--seed") {
      ok = ParseUint(value, &args->seed).ok();
    } else if (a == "--request-size") {
      ok = ParseSize(value, &args->request_size).ok() && args->request_size >= 512 &&
           args->request_size <= (16 << 20);
    } else if (a == "--streams") {
      ok = ParseIntIn(value, 1, 64, &args->streams);
    } else if (a == "--queue-depth") {
      ok = ParseIntIn(value, 1, 128, &args->queue_depth);
    } else if (a == "--timeout") {
      ok = ParseIntIn(value, 1, 86400, &args->timeout);
    } else if (a == "--input") {
      ok = !value.empty();
      args->input = value;
    } else if (a == "--internal-redundancy") {
      ok = ParseProbability(value, &p.internal_redundancy);
    } else if (a == "--gen1-run-mean" || a == "--tr-run-mean" || a == "--u-run-mean" || a == "--ir-run-mean") {
      ok = ParseSize(value, &u).ok() && u >= 1 && u <= (1ULL << 40);
      if (ok) {
        (a == "--gen1-run-mean" ? p.gen1_run_mean
         : a == "--tr-run-mean" ? p.tr_run_mean
         : a == "--u-run-mean"  ? p.u_run_mean
                                : p.ir_run_mean) = u;
      }
    } else if (a == "--tr-to-u") {
      ok = ParseProbability(value, &p.tr_to_u);
    } else if (a == "--tr-to-ir") {
      ok = ParseProbability(value, &p.tr_to_ir);
    } else if (a == "--u-to-tr") {
      ok = ParseProbability(value, &p.u_to_tr);
    } else if (a == "--u-to-ir") {
      ok = ParseProbability(value, &p.u_to_ir);
    } else if (a == "--ir-to-tr") {
      ok = ParseProbability(value, &p.ir_to_tr);
    } else if (a == "--ir-to-u") {
      ok = ParseProbability(value, &p.ir_to_u);
    } else {
      return UsageError("unknown option " + a);
    }
    if (!ok) return UsageError("bad value '" + value + "' for " + a);
  }
  const GeneratorParams& p = args->params;
  if (p.tr_to_u + p.tr_to_ir > 1 || p.u_to_tr + p.u_to_ir > 1 || p.ir_to_tr + p.ir_to_u > 1) {
    return UsageError("the transition probabilities out of one state add up to more than 1");
  }
  if (args->first_generation > args->generations) {
    return UsageError("--first-generation " + std::to_string(args->first_generation) + " is after --generations " +
                      std::to_string(args->generations));
  }
  if (args->targets.empty()) return UsageError("no TARGET");
  if (!args->input.empty() && args->generations > 1 && args->input.find("%d") == std::string::npos) {
    return UsageError("--input " + args->input + " names one file for " + std::to_string(args->generations) +
                      " generations: put %d where the generation number goes");
  }
  return -1;
}

// --- targets per generation ----------------------------------------------------

bool HasTemplate(const std::string& t) { return t.find("%d") != std::string::npos; }

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

// The target of generation |g|, or an error text in |why|.
bool TargetFor(const Args& args, int g, std::string* target, std::string* why) {
  const int written = args.generations - args.first_generation + 1;
  if (args.targets.size() != 1) {
    if (static_cast<int>(args.targets.size()) != written) {
      *why = std::to_string(args.targets.size()) + " targets for " + std::to_string(written) +
             " generations (give one per generation, or one for all)";
      return false;
    }
    *target = args.targets[static_cast<size_t>(g - args.first_generation)];
    return true;
  }
  const std::string& t = args.targets[0];
  if (HasTemplate(t)) {
    *target = ReplaceAll(t, "%d", std::to_string(g));
    return true;
  }
  if (!args.lun_per_generation) {
    *target = t;
    return true;
  }
  // iscsi://HOST[:PORT]/IQN/LUN: generation g goes to LUN + g - 1.
  size_t slash = t.rfind('/');
  if (t.rfind("iscsi://", 0) != 0 || slash == std::string::npos || slash + 1 >= t.size() ||
      t.find_first_not_of("0123456789", slash + 1) != std::string::npos) {
    *why = "--lun-per-generation needs an iscsi://HOST[:PORT]/IQN/LUN target (or use %d in the target)";
    return false;
  }
  int lun = std::atoi(t.c_str() + slash + 1) + g - 1;
  *target = t.substr(0, slash + 1) + std::to_string(lun);
  return true;
}

// Whether generation g lands on its own target (not overwritten by a later one).
bool SeparateTargets(const Args& args) {
  return args.targets.size() != 1 || HasTemplate(args.targets[0]) || args.lun_per_generation ||
         args.targets[0] == "-";
}

// --- progress -------------------------------------------------------------------------

// A progress bar on stderr, redrawn by its own thread from a byte counter the
// streams advance. On a terminal it redraws one line; otherwise it prints a
// line every 10 %.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled), tty_(::isatty(STDERR_FILENO) == 1) {}
  ~ProgressBar() { Stop(); }

  std::atomic<uint64_t>* counter() { return &done_; }

  // |then_sync|: once all bytes are acknowledged, the bar shows the sync.
  void Start(const std::string& label, uint64_t total, bool then_sync) {
    done_ = 0;
    then_sync_ = then_sync;
    if (!enabled_) return;
    label_ = label;
    total_ = total;
    start_ = Clock::now();
    last_decile_ = 0;
    synced_at_.reset();
    stop_ = false;
    thread_ = std::thread([this] { Loop(); });
  }

  void Stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (tty_) std::fprintf(stderr, "\r\033[K");
  }

  // Stops the bar and leaves |line| in its place.
  void Finish(const std::string& line) {
    Stop();
    if (enabled_) std::fprintf(stderr, "%s\n", line.c_str());
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      Draw();
      cv_.wait_for(l, std::chrono::milliseconds(tty_ ? 250 : 1000));
    }
  }

  void Draw() {
    uint64_t done = done_.load();
    double secs = std::chrono::duration<double>(Clock::now() - start_).count();
    double frac = total_ ? static_cast<double>(done) / static_cast<double>(total_) : 1;
    double mbs = secs > 0 ? done / 1e6 / secs : 0;
    std::string eta = "--:--";
    if (then_sync_ && done >= total_ && total_ > 0) {
      // All requests acknowledged: what is left is the final sync.
      if (!synced_at_) synced_at_ = secs;
      mbs = total_ / 1e6 / *synced_at_;
      char b[48];
      std::snprintf(b, sizeof(b), "syncing %.0f s", secs - *synced_at_);
      eta = b;
    } else if (done > 0 && secs > 0.5) {
      long left = static_cast<long>((total_ - done) / (done / secs));
      char b[32];
      std::snprintf(b, sizeof(b), "%ld:%02ld", left / 60, left % 60);
      eta = b;
    }
    if (tty_) {
      const int kWidth = 30;
      int filled = static_cast<int>(frac * kWidth);
      std::string bar(static_cast<size_t>(filled), '#');
      bar.append(static_cast<size_t>(kWidth - filled), '.');
      std::fprintf(stderr, "\r\033[K%s [%s] %3.0f%%  %s / %s  %7.1f MB/s  %s%s", label_.c_str(), bar.c_str(),
                   100 * frac, HumanBytes(done).c_str(), HumanBytes(total_).c_str(), mbs,
                   synced_at_ ? "" : "ETA ", eta.c_str());
      std::fflush(stderr);
    } else {
      int decile = static_cast<int>(frac * 10);
      if (decile > last_decile_ && decile < 10) {
        last_decile_ = decile;
        std::fprintf(stderr, "%s %3d%%  %s / %s  %.1f MB/s  ETA %s\n", label_.c_str(), decile * 10,
                     HumanBytes(done).c_str(), HumanBytes(total_).c_str(), mbs, eta.c_str());
      }
    }
  }

  const bool enabled_;
  const bool tty_;
  std::atomic<uint64_t> done_{0};
  std::string label_;
  uint64_t total_ = 0;
  Clock::time_point start_;
  int last_decile_ = 0;
  bool then_sync_ = false;
  std::optional<double> synced_at_;  // seconds until every request was acknowledged
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// --- report -----------------------------------------------------------------------------

struct GenerationReport {
  int number = 0;
  std::string target;
  GroundTruth truth;
  std::string input;  // --input: the file written (truth then unknown, all zero)
  GenerationResult result;
};

std::string TruthJson(const GroundTruth& t) {
  char b[256];
  std::snprintf(b, sizeof(b),
                "{\"unique_bytes\": %llu, \"internal_redundant_bytes\": %llu, \"temporal_redundant_bytes\": %llu, "
                "\"redundancy\": %.6f}",
                static_cast<unsigned long long>(t.unique_bytes),
                static_cast<unsigned long long>(t.internal_redundant_bytes),
                static_cast<unsigned long long>(t.temporal_redundant_bytes), t.redundancy());
  return b;
}

double MBs(uint64_t bytes, double secs) { return secs > 0 ? bytes / 1e6 / secs : 0; }

std::string Percent(uint64_t part, uint64_t whole) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f%%", whole ? 100.0 * part / whole : 0.0);
  return b;
}

void PrintJson(FILE* out, const Args& args, const std::vector<GenerationReport>& reports, bool mismatch) {
  GroundTruth total;
  uint64_t bytes = 0;
  double secs = 0, fill = 0;
  const bool real = !args.input.empty();  // --input: no generator, no ground truth
  std::fprintf(out, "{\"command\": \"%s\", \"request_size\": %llu, \"streams\": %d, \"queue_depth\": %d, "
               "\"sync\": %s,\n",
               args.verify ? "verify" : "write", static_cast<unsigned long long>(args.request_size), args.streams,
               args.queue_depth, args.sync ? "true" : "false");
  if (real) {
    std::fprintf(out, " \"input\": %s,\n", JsonString(args.input).c_str());
  } else {
    std::fprintf(out, " \"seed\": %llu, \"size\": %llu,\n", static_cast<unsigned long long>(args.seed),
                 static_cast<unsigned long long>(args.size));
  }
  const GeneratorParams& p = args.params;
  if (!real) {
    std::fprintf(out,
                 " \"params\": {\"internal_redundancy\": %g, \"gen1_run_mean\": %llu, \"tr_run_mean\": %llu, "
                 "\"u_run_mean\": %llu, \"ir_run_mean\": %llu, \"tr_to_u\": %g, \"tr_to_ir\": %g, \"u_to_tr\": %g, "
                 "\"u_to_ir\": %g, \"ir_to_tr\": %g, \"ir_to_u\": %g},\n",
                 p.internal_redundancy, static_cast<unsigned long long>(p.gen1_run_mean),
                 static_cast<unsigned long long>(p.tr_run_mean), static_cast<unsigned long long>(p.u_run_mean),
                 static_cast<unsigned long long>(p.ir_run_mean), p.tr_to_u, p.tr_to_ir, p.u_to_tr, p.u_to_ir,
                 p.ir_to_tr, p.ir_to_u);
  }
  std::fprintf(out, " \"generations\": [");
  for (size_t i = 0; i < reports.size(); i++) {
    const GenerationReport& r = reports[i];
    const GenerationResult& x = r.result;
    std::fprintf(out,
                 "%s\n  {\"generation\": %d, \"target\": %s, \"bytes\": %llu, \"seconds\": %.3f, "
                 "\"sync_seconds\": %.3f, \"mb_s\": %.1f, \"transfer_mb_s\": %.1f, \"generator_seconds\": %.3f, "
                 "\"truth\": %s",
                 i ? "," : "", r.number, JsonString(r.target).c_str(), static_cast<unsigned long long>(x.bytes),
                 x.seconds, x.sync_seconds, MBs(x.bytes, x.seconds), MBs(x.bytes, x.seconds - x.sync_seconds),
                 x.fill_seconds, real ? "null" : TruthJson(r.truth).c_str());
    if (!r.input.empty()) std::fprintf(out, ", \"input\": %s", JsonString(r.input).c_str());
    if (args.verify) {
      std::fprintf(out, ", \"ok\": %s", x.mismatch ? "false" : "true");
      if (x.mismatch) std::fprintf(out, ", \"first_mismatch\": %llu", static_cast<unsigned long long>(x.first_mismatch));
    }
    std::fprintf(out, "}");
    total.unique_bytes += r.truth.unique_bytes;
    total.internal_redundant_bytes += r.truth.internal_redundant_bytes;
    total.temporal_redundant_bytes += r.truth.temporal_redundant_bytes;
    bytes += x.bytes;
    secs += x.seconds;
    fill += x.fill_seconds;
  }
  std::fprintf(out, "],\n");
  if (real) {
    std::fprintf(out, " \"total\": {\"bytes\": %llu, \"seconds\": %.3f, \"mb_s\": %.1f, \"truth\": null},\n",
                 static_cast<unsigned long long>(bytes), secs, MBs(bytes, secs));
  } else {
    std::fprintf(out,
                 " \"total\": {\"bytes\": %llu, \"seconds\": %.3f, \"mb_s\": %.1f, \"ideal_stored_bytes\": %llu, "
                 "\"truth\": %s},\n",
                 static_cast<unsigned long long>(bytes), secs, MBs(bytes, secs),
                 static_cast<unsigned long long>(total.unique_bytes), TruthJson(total).c_str());
  }
  std::fprintf(out, " \"generator\": {\"seconds\": %.3f, \"mb_s_per_stream\": %.1f, \"share_of_stream_time\": %.4f}",
               fill, MBs(bytes, fill), secs > 0 ? fill / (secs * args.streams) : 0);
  if (args.verify) std::fprintf(out, ",\n \"ok\": %s", mismatch ? "false" : "true");
  std::fprintf(out, "}\n");
}

void PrintHuman(FILE* out, const Args& args, const std::vector<GenerationReport>& reports) {
  GroundTruth total;
  uint64_t bytes = 0;
  double secs = 0, fill = 0;
  for (const GenerationReport& r : reports) {
    const GenerationResult& x = r.result;
    const GroundTruth& t = r.truth;
    std::fprintf(out, "generation %d -> %s\n", r.number, r.target.c_str());
    if (args.verify) {
      if (x.mismatch) {
        std::fprintf(out, "  DIFFERS at byte %llu\n", static_cast<unsigned long long>(x.first_mismatch));
      } else {
        std::fprintf(out, "  verified %s in %.1f s: %.1f MB/s, identical\n", HumanBytes(x.bytes).c_str(), x.seconds,
                     MBs(x.bytes, x.seconds));
      }
    } else {
      std::fprintf(out, "  written %s in %.1f s: %.1f MB/s", HumanBytes(x.bytes).c_str(), x.seconds,
                   MBs(x.bytes, x.seconds));
      if (args.sync) {
        std::fprintf(out, " (incl. %.1f s final sync; %.1f MB/s before it)", x.sync_seconds,
                     MBs(x.bytes, x.seconds - x.sync_seconds));
      }
      std::fprintf(out, "\n");
    }
    if (!r.input.empty()) {
      std::fprintf(out, "  real data from %s: ground truth unknown\n", r.input.c_str());
    } else {
      std::fprintf(out, "  ground truth: unique %s (%s), internal redundant %s (%s), temporal redundant %s (%s)\n",
                 HumanBytes(t.unique_bytes).c_str(), Percent(t.unique_bytes, t.total()).c_str(),
                 HumanBytes(t.internal_redundant_bytes).c_str(), Percent(t.internal_redundant_bytes, t.total()).c_str(),
                 HumanBytes(t.temporal_redundant_bytes).c_str(),
                 Percent(t.temporal_redundant_bytes, t.total()).c_str());
    }
    total.unique_bytes += t.unique_bytes;
    total.internal_redundant_bytes += t.internal_redundant_bytes;
    total.temporal_redundant_bytes += t.temporal_redundant_bytes;
    bytes += x.bytes;
    secs += x.seconds;
    fill += x.fill_seconds;
  }
  if (!args.input.empty()) {
    std::fprintf(out, "total: %s %s in %.1f s: %.1f MB/s (real data: ground truth unknown)\n",
                 HumanBytes(bytes).c_str(), args.verify ? "verified" : "written", secs, MBs(bytes, secs));
  } else {
    std::fprintf(out, "total: %s %s in %.1f s: %.1f MB/s; ground truth redundancy %.1f%% "
                 "(an ideal deduplicator stores %s of %s)\n",
                 HumanBytes(bytes).c_str(), args.verify ? "verified" : "written", secs, MBs(bytes, secs),
                 100 * total.redundancy(), HumanBytes(total.unique_bytes).c_str(), HumanBytes(total.total()).c_str());
  }
  if (fill > 0 && secs > 0) {
    std::fprintf(out, "generator: %.1f%% of the stream time (%.0f MB/s per stream)\n",
                 100 * fill / (secs * args.streams), MBs(bytes, fill));
  }
}

// --- main --------------------------------------------------------------------------------

int Run(const Args& args) {
  // Targets are resolved before anything is generated, so a bad list fails fast.
  std::vector<std::string> names;
  for (int g = args.first_generation; g <= args.generations; g++) {
    std::string t, why;
    if (!TargetFor(args, g, &t, &why)) return UsageError(why);
    names.push_back(t);
  }
  bool data_on_stdout = false;
  for (const std::string& n : names) data_on_stdout |= (n == "-" && !args.verify);
  FILE* report = data_on_stdout ? stderr : stdout;
  if (args.verify && !SeparateTargets(args) && args.generations > args.first_generation) {
    std::fprintf(stderr, "dedupv1_traffic: every generation went to %s; verifying the last (generation %d) only\n",
                 names.back().c_str(), args.generations);
  }
  const bool progress = args.progress == 1 || (args.progress == -1 && ::isatty(STDERR_FILENO) == 1);
  ProgressBar bar(progress);

  TargetOptions topt;
  topt.for_write = !args.verify;
  topt.queue_depth = args.queue_depth;
  topt.timeout_seconds = args.timeout;
  RunOptions ropt;
  ropt.request_size = args.request_size;
  ropt.streams = args.streams;
  ropt.verify = args.verify;
  ropt.sync = args.sync;

  BackupGenerator generator(args.params, args.seed);
  Generation gen;
  std::unique_ptr<TrafficTarget> target;
  std::vector<GenerationReport> reports;
  bool mismatch = false;
  std::unique_ptr<FileGeneration> file;  // --input: generation g's real data
  for (int g = 1; g <= args.generations; g++) {
    if (args.input.empty()) gen = g == 1 ? generator.First(args.size) : generator.Next(gen);
    if (g < args.first_generation) continue;
    if (args.verify && !SeparateTargets(args) && g < args.generations) continue;
    if (!args.input.empty()) {
      file.reset();
      Status s = FileGeneration::Open(ReplaceAll(args.input, "%d", std::to_string(g)), &file);
      if (!s.ok()) {
        std::fprintf(stderr, "dedupv1_traffic: generation %d: %s\n", g, s.ToString().c_str());
        return s.IsInvalidArgument() ? kExitUsage : kExitError;
      }
    }
    const GenerationSource& source = file != nullptr ? static_cast<const GenerationSource&>(*file) : gen;
    const std::string& name = names[static_cast<size_t>(g - args.first_generation)];
    if (target == nullptr || target->name() != name) {
      target.reset();
      Status s = OpenTrafficTarget(name, topt, &target);
      if (!s.ok()) {
        std::fprintf(stderr, "dedupv1_traffic: cannot open %s: %s\n", name.c_str(), s.ToString().c_str());
        return s.code() == Status::Code::kInvalidArgument ? kExitUsage : kExitError;
      }
    }
    GenerationReport r;
    r.number = g;
    r.target = name;
    r.truth = file != nullptr ? GroundTruth() : gen.truth();  // real data: not known
    if (file != nullptr) r.input = file->path();
    char label[64];
    std::snprintf(label, sizeof(label), "%s gen %d/%d", args.verify ? "verify" : "write", g, args.generations);
    bar.Start(label, source.size(), !args.verify && args.sync);
    Status s = RunGeneration(source, target.get(), ropt, bar.counter(), &r.result);
    if (!s.ok()) {
      bar.Stop();
      std::fprintf(stderr, "dedupv1_traffic: generation %d -> %s: %s\n", g, name.c_str(), s.ToString().c_str());
      return s.code() == Status::Code::kInvalidArgument ? kExitUsage : kExitError;
    }
    char line[256];
    if (r.result.mismatch) {
      mismatch = true;
      std::snprintf(line, sizeof(line), "%s: DIFFERS at byte %llu", label,
                    static_cast<unsigned long long>(r.result.first_mismatch));
    } else {
      std::snprintf(line, sizeof(line), "%s: %s in %.1f s, %.1f MB/s", label, HumanBytes(r.result.bytes).c_str(),
                    r.result.seconds, MBs(r.result.bytes, r.result.seconds));
    }
    bar.Finish(line);
    if (r.result.mismatch) {
      uint64_t lba = r.result.first_mismatch / std::max<uint32_t>(1, target->block_size());
      std::fprintf(stderr, "dedupv1_traffic: generation %d differs from %s at byte offset %llu (block %llu of %u bytes)\n",
                   g, name.c_str(), static_cast<unsigned long long>(r.result.first_mismatch),
                   static_cast<unsigned long long>(lba), target->block_size());
    }
    reports.push_back(std::move(r));
  }
  target.reset();
  if (args.json) {
    PrintJson(report, args, reports, mismatch);
  } else {
    PrintHuman(report, args, reports);
  }
  std::fflush(report);
  return mismatch ? kExitMismatch : 0;
}

}  // namespace
}  // namespace bench
}  // namespace dedupv1

int main(int argc, char** argv) {
  using namespace dedupv1::bench;
  std::signal(SIGPIPE, SIG_IGN);  // a closed stdout is a write error, not a silent death
  Args args;
  int r = ParseArgs(argc, argv, &args);
  if (r >= 0) return r;
  return Run(args);
}

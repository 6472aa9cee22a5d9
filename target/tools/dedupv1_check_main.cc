// dedupv1_check: verifies a stopped dedupv1 store and optionally repairs what
// can be repaired. See docs/tools.md.
//
//   dedupv1_check --config FILE [--data-dir DIR] [--repair] [--json] [--progress]
//   dedupv1_check --rebuild-index --config FILE [--data-dir DIR] [--finish-with-problems] [--json] [--progress]
//   dedupv1_check --cluster --config FILE [--repair] [--json]
//
// Exit codes: 0 clean (or every problem repaired), 1 problems remain or the
// check failed, 2 usage error, 3 cannot open (locked, bad config, no store).
#include <algorithm>
#include <cstdio>
#include <memory>

#include "core/engine/data_dir.h"
#include "core/engine/dedup_system.h"
#include "core/engine/system_file.h"
#include "target/tools/check_report.h"
#include "target/tools/cluster_check_report.h"
#include "target/tools/cluster_checker.h"
#include "target/tools/data_dir_lock.h"
#include "target/tools/index_rebuild.h"
#include "target/tools/store_checker.h"
#include "target/tools/tool_util.h"
#include "target/tools/volume_table.h"

using namespace dedupv1;
using namespace dedupv1::tools;

namespace {

const char kUsage[] =
    "usage: dedupv1_check --config FILE [--data-dir DIR] [--repair] [--json] [--progress]\n"
    "       dedupv1_check --rebuild-index --config FILE [--data-dir DIR] [--finish-with-problems] [--json] [--progress]\n"
    "       dedupv1_check --cluster --config FILE [--repair] [--json]\n"
    "Verifies a stopped dedupv1 store: opens it (replaying the operations log after an\n"
    "unclean stop), checks every container's CRCs and chunks, the chunk index pages and\n"
    "entries, and every block mapping of every volume; recounts chunk references.\n"
    "  --config FILE     the dedupv1 config (as for dedupv1d)\n"
    "  --data-dir DIR    overrides the config's data-dir\n"
    "  --repair          fix what can be fixed (chunk index entries, mappings with a good\n"
    "                    copy elsewhere, block index records under the wrong key); report\n"
    "                    what cannot\n"
    "  --rebuild-index   give the store a new chunk index (the old table lost or damaged):\n"
    "                    the old table is kept beside it (renamed .replaced-TIME), the new\n"
    "                    one gets an entry for every chunk a block mapping references, with\n"
    "                    the recounted usage; then as --repair. Until it has finished the\n"
    "                    store does not open; if it stops, run it again. It finishes only\n"
    "                    if every problem is repaired, unless --finish-with-problems\n"
    "  --json            print the report as JSON\n"
    "  --progress        progress bars on stderr even if it is not a terminal\n"
    "  --cluster         a store with storage.rados.dedup-scope = cluster as a whole: every\n"
    "                    registered gateway slot (each slot's lock is taken, so every gateway\n"
    "                    must be stopped) against the shared chunk index: usage recount per\n"
    "                    slot, committed entries, stale claims, mappings, orphan usage keys,\n"
    "                    orphan copies (chunks nothing names: a leak a crash left); with\n"
    "                    --repair, and only if nothing else is wrong, marks the orphan copies\n"
    "                    dead (each slot's next GC round gives the space back)\n"
    "exit codes: 0 clean (or all repaired), 1 problems remain or failure, 2 usage,\n"
    "            3 cannot open (in use by another process, bad config, not a data directory)\n";

int Fail(int code, const std::string& what, const Status& s) {
  std::fprintf(stderr, "dedupv1_check: %s: %s\n", what.c_str(), s.ToString().c_str());
  return code;
}

// --cluster: every slot of a cluster-scope store (target/tools/cluster_checker.h).
int CheckCluster(const ToolArgs& args) {
  Options options;
  Status s = LoadToolOptions(args.config, args.data_dir, &options);
  if (!s.ok()) return Fail(ExitCodeForLoadError(s), "cannot open", s);
  ClusterCheckReport report;
  ClusterChecker checker(options);
  s = checker.Check(&report);
  if (!s.ok()) return Fail(s.IsBusy() ? kExitCannotOpen : ExitCodeForOpenError(s), "cluster check failed", s);
  if (args.repair) {
    // Refused (Aborted) with problems in the report: it names why itself.
    s = checker.ReclaimOrphans(&report);
    if (!s.ok() && !s.IsAborted()) {
      report.orphan_reclaim_refused = s.ToString();
      std::fprintf(stderr, "dedupv1_check: reclaiming orphan copies: %s\n", s.ToString().c_str());
    }
  }
  const std::string out = args.json ? FormatClusterReportJson(report) : FormatClusterReportText(report);
  std::fputs(out.c_str(), stdout);
  return report.Clean() && report.orphan_reclaim_refused.empty() ? kExitOk : kExitProblems;
}

// One store, |lock| held: checks and, with |repair|, mends. Fills |report|
// (its data_dir once the check ran, so the caller prints it); kExitOk unless
// the check, the close or the index repairs failed (each said on stderr).
int CheckStore(const ToolArgs& args, const Options& options, DataDirLock* lock, bool repair, CheckReport* report) {
  std::vector<VolumeEntry> volumes;
  Status s = ReadVolumeTable(lock->env(), options, &volumes);
  if (!s.ok()) return Fail(kExitProblems, "cannot read the volume table", s);

  std::unique_ptr<DedupSystem> system;
  s = DedupSystem::Open(options, lock->env(), &system);
  if (!s.ok()) return Fail(ExitCodeForOpenError(s), "cannot open the store", s);

  report->recovery = system->recovery();
  report->repair_requested = repair;
  CheckOptions check_options;
  check_options.progress = ProgressWanted(args.progress);
  StoreChecker checker(system.get(), volumes, check_options);
  s = checker.Check(report);
  if (!s.ok()) {
    system->Close();
    return Fail(kExitProblems, "check failed", s);
  }
  report->data_dir = options.data_dir;  // the report is complete enough to print
  if (repair) {
    // The store's records first: a relocation reads the block's mapping.
    s = checker.RepairBlockIndex(report);
    if (!s.ok()) std::fprintf(stderr, "dedupv1_check: repairing the block index store: %s\n", s.ToString().c_str());
    s = checker.RepairMappings(report);
    if (!s.ok()) std::fprintf(stderr, "dedupv1_check: repairing block mappings: %s\n", s.ToString().c_str());
  }
  // Every logged event up to here is in the block mappings the recount read
  // (the repairs' relocations name the same chunks): a repaired entry has
  // counted them, and skips them if a later start replays them.
  const uint64_t counted_through = system->log()->last_id();
  Status closed = system->Close();
  system.reset();
  if (!closed.ok()) {
    std::fprintf(stderr, "dedupv1_check: closing the store failed: %s\n", closed.ToString().c_str());
    return kExitProblems;
  }
  if (repair) {
    std::vector<IndexRepair> repairs = checker.index_repairs();
    for (IndexRepair& r : repairs) {
      if (!r.op.erase) r.op.entry.last_event_id = std::max(r.op.entry.last_event_id, counted_through);
    }
    s = ApplyIndexRepairs(options, lock->env(), repairs, report);
    if (!s.ok()) {
      std::fprintf(stderr, "dedupv1_check: repairing the chunk index: %s\n", s.ToString().c_str());
      return kExitProblems;
    }
  }
  return kExitOk;
}

void PrintReport(const ToolArgs& args, const CheckReport& report) {
  const std::string out = args.json ? FormatReportJson(report) : FormatReportText(report);
  std::fputs(out.c_str(), stdout);
}

int CheckStore(const ToolArgs& args) {
  Options options;
  Status s = LoadToolOptions(args.config, args.data_dir, &options);
  if (!s.ok()) return Fail(ExitCodeForLoadError(s), "cannot open", s);
  std::unique_ptr<DataDirLock> lock;
  s = DataDirLock::Acquire(options, &lock);
  if (!s.ok()) return Fail(kExitCannotOpen, "cannot open", s);
  CheckReport report;
  const int code = CheckStore(args, options, lock.get(), args.repair, &report);
  if (!report.data_dir.empty()) PrintReport(args, report);
  if (code != kExitOk) return code;
  return report.Clean() ? kExitOk : kExitProblems;
}

// Before the rebuild moves anything: the system file reads and says what the
// config says (the open would refuse a mismatch only after the move).
Status CheckSystemFileMatches(Env* env, const Options& options) {
  const std::string path = JoinPath(options.data_dir, kSystemFileName);
  std::string text;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env, path, &text));
  SystemFileFields fields;
  DEDUPV1_RETURN_IF_ERROR(ParseSystemFile(path, text, &fields));
  return CheckSystemFileAgainst(options.data_dir, path, fields, options.block_size, options.fingerprint);
}

// --rebuild-index (target/tools/index_rebuild.h).
int RebuildIndex(const ToolArgs& args) {
  Options options;
  // The config alone: the store may lack its table, which is what this mends.
  Status s = LoadToolConfig(args.config, args.data_dir, &options);
  if (!s.ok()) return Fail(ExitCodeForLoadError(s), "cannot open", s);
  std::unique_ptr<DataDirLock> lock;
  s = DataDirLock::Acquire(options, &lock);
  if (!s.ok()) return Fail(kExitCannotOpen, "cannot open", s);
  s = CheckRebuildable(options);
  if (!s.ok()) return Fail(kExitCannotOpen, "cannot rebuild the chunk index", s);
  const Options rebuild = RebuildOptions(options);
  // Before anything is moved: every other file the data depends on is there.
  s = CheckToolDataDir(rebuild);
  if (!s.ok()) return Fail(ExitCodeForLoadError(s), "cannot open", s);
  std::vector<VolumeEntry> volumes;
  s = ReadVolumeTable(lock->env(), options, &volumes);
  if (!s.ok()) return Fail(kExitProblems, "cannot read the volume table", s);
  s = CheckSystemFileMatches(lock->env(), options);
  if (!s.ok()) return Fail(s.IsCorruption() ? kExitProblems : kExitCannotOpen, "cannot rebuild the chunk index", s);
  IndexRebuildStart start;
  s = StartIndexRebuild(lock->env(), options, &start);
  if (!s.ok()) return Fail(kExitProblems, "cannot rebuild the chunk index", s);
  std::fprintf(stderr, "dedupv1_check: rebuilding the chunk index %s (%llu bytes)%s%s\n",
               options.chunk_index.table.path.c_str(), static_cast<unsigned long long>(start.table_bytes),
               start.resumed ? ", going on with a rebuild that did not finish" : "",
               start.replaced.empty() ? "" : ("; the old table is kept as " + start.replaced).c_str());
  CheckReport report;
  report.index_rebuild = true;
  report.index_replaced = start.replaced;
  const int code = CheckStore(args, rebuild, lock.get(), /*repair=*/true, &report);
  if (code == kExitOk && (report.Clean() || args.finish_with_problems)) {
    s = FinishIndexRebuild(lock->env(), options);
    if (!s.ok()) {
      if (!report.data_dir.empty()) PrintReport(args, report);
      return Fail(kExitProblems, "finishing the rebuild", s);
    }
    report.index_rebuilt = true;
  } else if (code == kExitOk) {
    std::fprintf(stderr,
                 "dedupv1_check: the rebuild did not finish: %zu problems remain, and the new table lacks the "
                 "entries of chunks only unread containers or records may hold (garbage collection would free "
                 "them); the store stays closed. Mend what the report names (a container or disk that failed to "
                 "read) and run --rebuild-index again; if the damage is for good, add --finish-with-problems\n",
                 report.Unrepaired());
  }
  if (!report.data_dir.empty()) PrintReport(args, report);
  if (code != kExitOk) return code;
  return report.Clean() ? kExitOk : kExitProblems;
}

}  // namespace

int main(int argc, char** argv) {
  ToolArgs args;
  std::string error;
  if (!ParseToolArgs(argc, argv, {"--repair", "--json", "--progress", "--cluster", "--rebuild-index", "--finish-with-problems"}, &args, &error)) {
    std::fprintf(stderr, "dedupv1_check: %s\n%s", error.c_str(), kUsage);
    return kExitUsage;
  }
  if (args.help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (!args.positional.empty()) {
    std::fprintf(stderr, "dedupv1_check: unexpected argument %s\n%s", args.positional[0].c_str(), kUsage);
    return kExitUsage;
  }

  if (args.finish_with_problems && !args.rebuild_index) {
    std::fprintf(stderr, "dedupv1_check: --finish-with-problems goes with --rebuild-index\n%s", kUsage);
    return kExitUsage;
  }
  if (args.cluster && args.rebuild_index) {
    std::fprintf(stderr, "dedupv1_check: --rebuild-index rebuilds one store's local table, not with --cluster\n%s",
                 kUsage);
    return kExitUsage;
  }
  if (args.cluster) return CheckCluster(args);

  return args.rebuild_index ? RebuildIndex(args) : CheckStore(args);
}

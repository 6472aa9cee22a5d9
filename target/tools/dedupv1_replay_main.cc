// dedupv1_replay: brings a stopped store to a clean state. Opens it (after an
// unclean stop the engine replays the operations log and re-imports the
// containers committed since the last checkpoint), runs a full checkpoint so
// the indexes are persistent and the log empty, and closes cleanly. Prints
// what the log held before, what was replayed, and the log afterwards.
// See docs/tools.md.
//
//   dedupv1_replay --config FILE [--data-dir DIR] [--progress] [--accept-log-damage]
//
// A damaged operations log (docs/durability.md "Damage") makes it fail
// naming the damage; with --accept-log-damage it lists what the damage cost
// (damaged slots, lost event ids, the intact events after the damage), then
// opens the store accepting it: the intact events are replayed, every usage
// count is recounted from the block index, and only then is the log restarted.
//
// Exit codes: 0 done, 1 failed, 2 usage error, 3 cannot open.
#include <cstdio>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "core/engine/dedup_system.h"
#include "log/operations_log.h"
#include "target/tools/data_dir_lock.h"
#include "target/tools/log_damage_report.h"
#include "target/tools/log_summary.h"
#include "target/tools/progress.h"
#include "target/tools/tool_util.h"

using namespace dedupv1;
using namespace dedupv1::tools;

namespace {

const char kUsage[] =
    "usage: dedupv1_replay --config FILE [--data-dir DIR] [--progress] [--accept-log-damage]\n"
    "Opens a stopped dedupv1 store (replaying the operations log after an unclean stop),\n"
    "runs a full checkpoint (indexes persistent, log empty) and closes it cleanly.\n"
    "  --config FILE          the dedupv1 config (as for dedupv1d)\n"
    "  --data-dir DIR         overrides the config's data-dir\n"
    "  --progress             progress bars on stderr even if it is not a terminal\n"
    "  --accept-log-damage    if the operations log is damaged: list the damaged slots, the\n"
    "                         events lost and the intact events after the damage, replay\n"
    "                         those, recount every usage count and restart the log\n"
    "exit codes: 0 done, 1 failed, 2 usage, 3 cannot open (in use, bad config, not a data directory)\n";

int Fail(int code, const std::string& what, const Status& s) {
  std::fprintf(stderr, "dedupv1_replay: %s: %s\n", what.c_str(), s.ToString().c_str());
  return code;
}

// Reads the log as it is on disk (OperationsLog::Open recovers its chain but
// replays nothing into the indexes) and describes it in one line; with
// |accept_damage| a damaged log opens (writing nothing) and |*damage| gets
// its report (empty if the log is not damaged).
Status DescribeLog(const Options& options, Env* env, bool progress, bool accept_damage, std::string* out,
                   std::string* damage = nullptr) {
  if (!env->FileExists(options.log.path)) {
    *out = "no log file (" + options.log.path + ")";
    return Status::OK();
  }
  OperationsLogOptions log_options = options.log;
  log_options.accept_damage = accept_damage;
  std::unique_ptr<OperationsLog> log;
  Status s = OperationsLog::Open(log_options, env, &log);
  if (!s.ok()) return s.WithContext("open operations log " + options.log.path);
  if (damage != nullptr && log->damage_pending()) {
    std::ostringstream report;
    DEDUPV1_RETURN_IF_ERROR(PrintLogDamage(log.get(), report));
    *damage = report.str();
  }
  const OperationsLogStats st = log->stats();
  if (st.last_id < st.head_id) {
    *out = fmt::format("{}empty (next event id {})", damage != nullptr && !damage->empty() ? "before the damage: " : "",
                       st.head_id);
    return log->Close();
  }
  LogEventCounts counts;
  Progress bar("reading log", st.last_id - st.head_id + 1, "events", progress);
  s = log->Replay(st.head_id, [&](const LogEvent& e) {
    counts[LogEventTypeName(e.type)]++;
    bar.Add();
    return Status::OK();
  });
  bar.Finish();
  DEDUPV1_RETURN_IF_ERROR(s);
  *out = fmt::format("{}events {}..{} ({} live), {} of {} slots used ({:.1f}%): {}",
                     damage != nullptr && !damage->empty() ? "before the damage: " : "", st.head_id, st.last_id,
                     st.last_id - st.head_id + 1, st.used_slots, st.slots, st.fill * 100,
                     FormatLogEventCounts(counts));
  return log->Close();
}

}  // namespace

int main(int argc, char** argv) {
  ToolArgs args;
  std::string error;
  if (!ParseToolArgs(argc, argv, {"--progress", "--accept-log-damage"}, &args, &error)) {
    std::fprintf(stderr, "dedupv1_replay: %s\n%s", error.c_str(), kUsage);
    return kExitUsage;
  }
  if (args.help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (!args.positional.empty()) {
    std::fprintf(stderr, "dedupv1_replay: unexpected argument %s\n%s", args.positional[0].c_str(), kUsage);
    return kExitUsage;
  }
  Options options;
  Status s = LoadToolOptions(args.config, args.data_dir, &options);
  if (!s.ok()) return Fail(ExitCodeForLoadError(s), "cannot open", s);
  std::unique_ptr<DataDirLock> lock;
  s = DataDirLock::Acquire(options, &lock);
  if (!s.ok()) return Fail(kExitCannotOpen, "cannot open", s);
  Env* env = lock->env();
  const bool progress = ProgressWanted(args.progress);

  std::printf("dedupv1_replay %s\n", options.data_dir.c_str());
  const bool clean_before = env->FileExists(JoinPath(options.data_dir, "clean"));
  std::printf("  previous stop:  %s\n", clean_before ? "clean" : "unclean (no 'clean' marker)");
  std::string before, damage;
  s = DescribeLog(options, env, progress, args.accept_log_damage, &before, &damage);
  if (!s.ok()) return Fail(ExitCodeForOpenError(s), "cannot read the operations log", s);
  if (!damage.empty()) std::printf("  log damage:     %s", damage.c_str());
  std::printf("  log before:     %s\n", before.c_str());
  std::fflush(stdout);
  options.log.accept_damage = !damage.empty();

  std::unique_ptr<DedupSystem> system;
  s = DedupSystem::Open(options, env, &system);
  if (!s.ok()) return Fail(ExitCodeForOpenError(s), "cannot open the store", s);
  const DedupSystem::RecoveryInfo& rec = system->recovery();
  if (rec.events_replayed == 0 && !rec.dirty_start) {
    std::printf("  replayed:       nothing (clean stop, empty log)\n");
  } else {
    std::printf("  replayed:       %llu log events%s: %llu block mappings restored, %llu dropped (their containers "
                "never committed: data that was never synced), %llu containers re-imported into the chunk index\n",
                (unsigned long long)rec.events_replayed, rec.dirty_start ? " after an unclean stop" : "",
                (unsigned long long)rec.mappings_applied, (unsigned long long)rec.mappings_dropped,
                (unsigned long long)rec.containers_imported);
  }
  if (rec.log_damage_accepted) {
    std::printf("  damage:         accepted: %llu events lost, %llu intact events after the damage replayed; usage "
                "counts recounted from the block index (%llu raised, %llu lowered, the replayed events' changes "
                "included; %llu index entries re-added, %llu "
                "referenced chunks without a stored container); log restarted at event %llu\n",
                (unsigned long long)rec.events_lost, (unsigned long long)rec.events_salvaged,
                (unsigned long long)rec.usage_counts_raised, (unsigned long long)rec.usage_counts_lowered,
                (unsigned long long)rec.usage_entries_restored, (unsigned long long)rec.usage_unresolved,
                (unsigned long long)rec.log_restarted_at);
  }
  s = system->Checkpoint();
  if (!s.ok()) {
    system->Close();
    return Fail(kExitProblems, "checkpoint failed", s);
  }
  const OperationsLogStats st = system->log()->stats();
  std::printf("  checkpoint:     done; log head %llu, last %llu\n", (unsigned long long)st.head_id,
              (unsigned long long)st.last_id);
  s = system->Close();
  system.reset();
  if (!s.ok()) return Fail(kExitProblems, "close failed (the stop is not clean)", s);
  std::printf("  close:          clean\n");
  std::string after;
  s = DescribeLog(options, env, progress, /*accept_damage=*/false, &after);
  if (!s.ok()) return Fail(kExitProblems, "cannot read the operations log after closing", s);
  std::printf("  log after:      %s\n", after.c_str());
  return kExitOk;
}

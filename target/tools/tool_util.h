// Plumbing shared by the offline tools (dedupv1_check, dedupv1_replay,
// dedupv1_debug): command-line parsing, the exit codes scripts rely on, and
// loading a config file the way dedupv1d does (--config FILE, --data-dir DIR
// overriding data-dir).
//
// The tools work on a stopped store only: they refuse a data directory that
// does not exist yet (DedupSystem::Open would create an empty store there) and
// one another process holds open (see DataDirLock).
#pragma once

#include <string>
#include <vector>

#include "core/engine/options.h"
#include "core/base/status.h"

namespace dedupv1 {
namespace tools {

// Exit codes of every tool (docs/tools.md).
enum ExitCode {
  kExitOk = 0,          // done; for dedupv1_check: the store is clean
  kExitProblems = 1,    // problems found (check) or the operation failed
  kExitUsage = 2,       // bad command line
  kExitCannotOpen = 3,  // locked by another process, bad config, not a data directory
};

struct ToolArgs {
  std::string config;    // --config FILE (required)
  std::string data_dir;  // --data-dir DIR (optional override)
  bool progress = false; // --progress: draw progress bars even if stderr is not a terminal
  bool json = false;     // --json
  bool repair = false;   // --repair
  bool accept_log_damage = false;  // --accept-log-damage (dedupv1_replay)
  bool cluster = false;  // --cluster (dedupv1_check: every slot of a cluster-scope store)
  bool rebuild_index = false;  // --rebuild-index (dedupv1_check: a new chunk index, index_rebuild.h)
  bool finish_with_problems = false;  // --finish-with-problems (with --rebuild-index)
  bool help = false;     // --help / -h
  std::vector<std::string> positional;
};

// Parses argv[1..]. Accepts "--config FILE", "--config=FILE", "--data-dir
// DIR" (and "=" form) and the flags named in |allowed_flags| (a subset of
// "--progress", "--json", "--repair", "--accept-log-damage", "--cluster", "--rebuild-index",
// "--finish-with-problems"). Options may
// appear anywhere; everything else that does not start with "--" is positional. Returns false
// with a message in |*error| for an unknown option, a missing value or a
// missing --config (unless --help was given).
bool ParseToolArgs(int argc, char** argv, const std::vector<std::string>& allowed_flags, ToolArgs* args,
                   std::string* error);

// Loads and validates the whole config (ServiceOptions::FromConfig: the
// target.* and monitor.* keys too, as dedupv1d would) with the data-dir
// override, returns the engine's part, and checks that the data directory holds a complete dedupv1
// store by the engine's rule (core/engine/data_dir.h): NotFound if it holds none or
// its creation did not finish, Corruption naming each file the store lacks.
Status LoadToolOptions(const std::string& config_path, const std::string& data_dir_override,
                       Options* options);
// Its two halves: the config alone (background_work false), and the data
// directory's check.
Status LoadToolConfig(const std::string& config_path, const std::string& data_dir_override, Options* options);
Status CheckToolDataDir(const Options& options);

// Whether to draw progress bars: stderr is a terminal, or |forced|.
bool ProgressWanted(bool forced);

// Exit code for a LoadToolOptions failure: a store that lacks a file its
// data depends on (Corruption) is a problem of the store (1); a bad or
// unreadable config or a directory without a store means the store cannot
// be opened (3).
int ExitCodeForLoadError(const Status& s);

// Exit code for a failure to open the store: Corruption and I/O errors are
// problems of the store (1); everything else (locked, bad config, missing
// directory) means the store cannot be opened (3).
int ExitCodeForOpenError(const Status& s);

}  // namespace tools
}  // namespace dedupv1

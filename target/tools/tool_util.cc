#include "target/tools/tool_util.h"

#include <unistd.h>

#include <algorithm>

#include "core/base/config.h"
#include "core/engine/data_dir.h"
#include "core/engine/store_env.h"
#include "core/base/env.h"
#include "target/service_options.h"

namespace dedupv1 {
namespace tools {

bool ParseToolArgs(int argc, char** argv, const std::vector<std::string>& allowed_flags, ToolArgs* args,
                   std::string* error) {
  auto allowed = [&](const std::string& flag) {
    return std::find(allowed_flags.begin(), allowed_flags.end(), flag) != allowed_flags.end();
  };
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      args->help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (arg != "--") args->positional.push_back(arg);
      continue;
    }
    std::string name = arg, value;
    bool has_value = false;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (name == "--config" || name == "--data-dir") {
      if (!has_value) {
        if (i + 1 >= argc) {
          *error = name + " needs a value";
          return false;
        }
        value = argv[++i];
      }
      if (value.empty()) {
        *error = name + " needs a non-empty value";
        return false;
      }
      (name == "--config" ? args->config : args->data_dir) = value;
      continue;
    }
    if (has_value || !allowed(name)) {
      *error = "unknown option " + arg;
      return false;
    }
    if (name == "--progress") args->progress = true;
    else if (name == "--json") args->json = true;
    else if (name == "--repair") args->repair = true;
    else if (name == "--accept-log-damage") args->accept_log_damage = true;
    else if (name == "--cluster") args->cluster = true;
    else if (name == "--rebuild-index") args->rebuild_index = true;
    else if (name == "--finish-with-problems") args->finish_with_problems = true;
  }
  if (args->config.empty() && !args->help) {
    *error = "--config FILE is required";
    return false;
  }
  return true;
}

Status LoadToolConfig(const std::string& config_path, const std::string& data_dir_override, Options* options) {
  Config config;
  DEDUPV1_RETURN_IF_ERROR(Config::Load(Env::Default(), config_path, &config));
  if (!data_dir_override.empty()) config.Set("data-dir", data_dir_override);
  ServiceOptions service;
  DEDUPV1_RETURN_IF_ERROR(ServiceOptions::FromConfig(config, &service));
  *options = service.engine;
  options->background_work = false;  // no idle GC round or out-of-band pass under the tool
  return Status::OK();
}

Status LoadToolOptions(const std::string& config_path, const std::string& data_dir_override,
                       Options* options) {
  DEDUPV1_RETURN_IF_ERROR(LoadToolConfig(config_path, data_dir_override, options));
  return CheckToolDataDir(*options);
}

Status CheckToolDataDir(const Options& options) {
  // Opening a directory without a store would create an empty one; a tool
  // must never do that (a typo in --data-dir would "check" a new empty store).
  std::unique_ptr<StoreEnv> store;
  DEDUPV1_RETURN_IF_ERROR(StoreEnv::Open(options, Env::Default(), &store));
  DataDirState state;
  DEDUPV1_RETURN_IF_ERROR(InspectDataDir(store->env(), options, &state));
  if (state == DataDirState::kFresh) {
    return Status::NotFound(options.data_dir + " is not a dedupv1 data directory (it holds no store)");
  }
  if (state == DataDirState::kCreating) {
    return Status::NotFound(options.data_dir + " holds a store whose creation did not finish (" +
                            JoinPath(options.data_dir, kCreatingFileName) +
                            " exists): start the target once to finish it, or remove the directory");
  }
  return Status::OK();
}

bool ProgressWanted(bool forced) { return forced || ::isatty(STDERR_FILENO) == 1; }

int ExitCodeForLoadError(const Status& s) { return s.IsCorruption() ? kExitProblems : kExitCannotOpen; }

int ExitCodeForOpenError(const Status& s) {
  if (s.IsCorruption() || s.IsIOError()) return kExitProblems;
  return kExitCannotOpen;
}

}  // namespace tools
}  // namespace dedupv1

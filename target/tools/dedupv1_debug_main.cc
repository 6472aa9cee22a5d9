// dedupv1_debug: prints parts of a stopped dedupv1 store without replaying or
// changing it (see StoreInspector, docs/tools.md).
//
//   dedupv1_debug --config FILE [--data-dir DIR] [--progress] COMMAND
//     container ID | chunk FP | block VOLUME BLOCK | log [FROM [TO]] | volumes
//
// Exit codes: 0 printed, 1 not found / damaged / failed, 2 usage error,
// 3 cannot open.
#include <cstdio>
#include <iostream>
#include <memory>

#include "core/base/config.h"
#include "target/tools/data_dir_lock.h"
#include "target/tools/store_inspector.h"
#include "target/tools/tool_util.h"

using namespace dedupv1;
using namespace dedupv1::tools;

namespace {

const char kUsage[] =
    "usage: dedupv1_debug --config FILE [--data-dir DIR] [--progress] COMMAND\n"
    "commands:\n"
    "  container ID          header, CRC verdict and items of a container\n"
    "  chunk FP              chunk index entry of a fingerprint (hex) and its container item\n"
    "  block VOLUME BLOCK    block mapping of a block (VOLUME: name or id; BLOCK: block number)\n"
    "                        and its log events not yet checkpointed\n"
    "  log [FROM [TO]]       operations log events FROM..TO (default: all live events)\n"
    "  volumes               the volume table\n"
    "Reads the store as it is: nothing is replayed, trimmed or checkpointed.\n"
    "exit codes: 0 printed, 1 not found / damaged / failed, 2 usage,\n"
    "            3 cannot open (in use by another process, bad config, not a data directory)\n";

int Usage(const std::string& why) {
  std::fprintf(stderr, "dedupv1_debug: %s\n%s", why.c_str(), kUsage);
  return kExitUsage;
}

bool ParseNumber(const std::string& text, uint64_t* v) { return ParseUint(text, v).ok(); }

}  // namespace

int main(int argc, char** argv) {
  ToolArgs args;
  std::string error;
  if (!ParseToolArgs(argc, argv, {"--progress"}, &args, &error)) return Usage(error);
  if (args.help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  const auto& pos = args.positional;
  if (pos.empty()) return Usage("a command is required");
  const std::string& cmd = pos[0];
  uint64_t n1 = 0, n2 = 0;
  Fingerprint fp;
  if (cmd == "container") {
    if (pos.size() != 2 || !ParseNumber(pos[1], &n1)) return Usage("container needs one numeric ID");
  } else if (cmd == "chunk") {
    if (pos.size() != 2) return Usage("chunk needs one fingerprint");
    Status s = Fingerprint::FromHex(pos[1], &fp);
    if (!s.ok()) return Usage(s.message());
  } else if (cmd == "block") {
    if (pos.size() != 3 || !ParseNumber(pos[2], &n1)) return Usage("block needs VOLUME and a numeric BLOCK");
  } else if (cmd == "log") {
    if (pos.size() > 3) return Usage("log takes at most FROM and TO");
    if (pos.size() >= 2 && !ParseNumber(pos[1], &n1)) return Usage("log: FROM must be a number");
    if (pos.size() == 3 && !ParseNumber(pos[2], &n2)) return Usage("log: TO must be a number");
    if (pos.size() == 3 && n2 < n1) return Usage("log: TO is smaller than FROM");
  } else if (cmd == "volumes") {
    if (pos.size() != 1) return Usage("volumes takes no arguments");
  } else {
    return Usage("unknown command " + cmd);
  }

  Options options;
  Status s = LoadToolOptions(args.config, args.data_dir, &options);
  if (!s.ok()) {
    std::fprintf(stderr, "dedupv1_debug: cannot open: %s\n", s.ToString().c_str());
    return ExitCodeForLoadError(s);
  }
  std::unique_ptr<DataDirLock> lock;
  s = DataDirLock::Acquire(options, &lock);
  if (!s.ok()) {
    std::fprintf(stderr, "dedupv1_debug: cannot open: %s\n", s.ToString().c_str());
    return kExitCannotOpen;
  }
  StoreInspector inspector(options, lock->env(), std::cout, ProgressWanted(args.progress));
  if (cmd == "container") s = inspector.PrintContainer(n1);
  else if (cmd == "chunk") s = inspector.PrintChunk(fp);
  else if (cmd == "block") s = inspector.PrintBlock(pos[1], n1);
  else if (cmd == "log") s = inspector.PrintLog(n1, n2);
  else s = inspector.PrintVolumes();
  std::cout.flush();
  if (!s.ok()) {
    std::fprintf(stderr, "dedupv1_debug: %s\n", s.ToString().c_str());
    return kExitProblems;
  }
  return kExitOk;
}

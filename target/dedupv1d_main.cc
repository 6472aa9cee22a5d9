// dedupv1d: starts, stops and reports a dedupv1 iSCSI target, that is a tgtd
// of its own serving every volume of a dedupv1 config as one LUN of one
// target (docs/target.md is the users' guide).
//
//   dedupv1d start|stop|status --config FILE [--data-dir DIR] [--portal ADDR:PORT]
//            [--control-port N] [--volume NAME]... [--module PATH] [--timeout SECONDS]
//   dedupv1d takeover --config FILE [--force] [the options of start]
//   dedupv1d watch --config FILE [--interval S] [--once] [the options of start]
//   dedupv1d cluster --config FILE [--json] [--shards]
//
// `takeover` (a gateway slot, storage.rados.gateway; docs/ceph.md) is `start`
// for a slot another gateway served: once start's checks passed and before
// tgtd starts, it waits for the old holder's lease to end (or with --force
// fences it at once) and fences the address the old holder recorded
// (core/engine/slot_takeover.h); then start runs as usual and the engine in
// tgtd recovers the slot from its log. A takeover refused (the holder is
// alive, no --force) starts nothing.
//
// `watch` (target/gateway_watch.h, docs/ceph.md) is the automatic form, run
// by an admin on a standby machine with the config of the standby instance
// for one slot (the config's storage.rados.gateway; one watcher per slot):
// every interval (default a third of the lease) it reads the slot's registry
// record, lock holders and heartbeat from RADOS, and once the slot's lock was
// free in two looks with its heartbeat still, runs `dedupv1d takeover` with
// the same config and options (a child process, bounded). Two watchers
// racing are arbitrated by the slot's lock: the loser's takeover fails Busy,
// it says so and watches on. SIGTERM or SIGINT ends it after the current
// step. `cluster` prints every slot of the store from RADOS without opening
// an engine (core/engine/cluster_view.h; --json: target/monitor/cluster_json.h).
//
// Invariants:
//  - The config is validated (ServiceOptions::FromConfig: the engine's keys,
//    target.* and monitor.*) before tgtd is touched: a refused config starts
//    nothing. A relative data-dir is relative to the config file
//    (Config::PathValue), so every command finds the instance from any
//    directory.
//  - No initiator gets in before the target is complete: LUNs, the monitor
//    check and the CHAP accounts (target and discovery) come first, the ACL
//    that admits initiators last (tgt admits nobody to a target without ACL
//    entries, and lists it to nobody). The state file says "configured = no"
//    until every step is done; `status` of such an instance, or of one whose
//    tgtd lacks a piece the state file records, reports it FAILED naming what
//    is missing (exit 1), and `start` refuses to run beside it.
//  - `start` either leaves a fully configured tgtd and DATA-DIR/dedupv1d.state
//    naming it, or (when a step fails) no tgtd and no state file. Only a
//    dedupv1d killed half way leaves a half-configured tgtd, which admits
//    nobody (see above) until `stop` removes it.
//  - LUN number = the volume's id in DATA-DIR/volumes (ids are never reused),
//    so removing or reordering volume lines keeps every other volume's LUN.
//  - The monitor port is checked before tgtd starts (naming who holds it) and
//    the monitor's identity after the engine opened (GET /identity must be
//    this data dir's instance): a start never ends with no monitor, or with
//    the admin's dedupv1_mon talking to another instance.
//  - tgtd is stopped the way it allows (offline, targets deleted, which closes
//    the LUNs and so flushes and closes the engine, then the system deleted);
//    SIGKILL only after a bounded wait, and said so. `stop` fails when the
//    engine did not close cleanly (no DATA-DIR/clean marker), with tgtd.log's
//    lines.
//  - Every wait is bounded; commands on one data dir are serialized by
//    DATA-DIR/dedupv1d.lock.
//
// The module is LD_PRELOADed into tgtd rather than installed into
// /usr/lib/tgt/backing-store: nothing outside the data dir is written, a
// system tgtd is not affected, and tgtd always runs the module of the same
// build as this dedupv1d (an installed module is used only when none is found
// next to the binary).
//
// Exit codes (all commands):
//   0  success; status: running and complete
//   1  failed: a step of start failed (what it started is torn down), start
//      refused because something runs (an instance, a portal, control or
//      monitor port taken, another dedupv1d command), stop did not stop
//      cleanly or the engine did not close cleanly, status: the instance is
//      half configured or tgtd does not answer
//   2  refused before anything was done: usage, a config that does not
//      validate, a data dir that cannot be used (cannot be created, unreadable
//      state file or volume table)
//   3  not running (status, stop)
//
// Test hook (for target/tests/dedupv1d-start-kill-test.sh, not for admins):
// DEDUPV1D_TEST_KILL_AFTER_STEP=N makes `start` SIGKILL itself right after
// its N-th configuration step (target, each LUN, monitor check, CHAP
// accounts, each ACL entry, the final state), as an admin's kill -9 would.
// DEDUPV1D_TEST_SKIP_MONITOR_PORT_CHECK=1 skips the monitor port check before
// tgtd starts, as if the port were taken between that check and the engine's
// bind, so the test reaches the identity check after it.
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sys/file.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/base/config.h"
#include "core/engine/data_dir.h"
#include "core/engine/dedup_policy.h"
#include "core/engine/dedup_system.h"
#include "core/base/env.h"
#include "core/base/identity.h"
#include "core/engine/options.h"
#include "core/engine/cluster_view.h"
#include "core/engine/slot_takeover.h"
#include "core/engine/store_env.h"
#include "core/base/status.h"
#include "core/engine/volume_table.h"
#include "target/admin_stop_marker.h"
#include "target/config_edit.h"
#include "target/gateway_watch.h"
#include "target/monitor/cluster_json.h"
#include "target/monitor/monitor_client.h"
#include "target/monitor/monitor_identity.h"
#include "target/port_owner.h"
#include "target/service_options.h"

#ifndef DEDUPV1_TGT_BACKING_STORE_DIR
#define DEDUPV1_TGT_BACKING_STORE_DIR "/usr/lib/tgt/backing-store"
#endif

namespace dedupv1 {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNotRunning = 3;

constexpr char kStateFile[] = "dedupv1d.state";
constexpr char kLockFile[] = "dedupv1d.lock";
constexpr char kLogFile[] = "tgtd.log";
constexpr char kEngineLockFile[] = "LOCK";  // the engine's (core/engine/dedup_system.cc)
constexpr int kTid = 1;
constexpr int kTgtdStartSeconds = 30;  // until tgtadm answers
constexpr int kTgtdExitSeconds = 30;   // after "delete system", before SIGKILL

void Say(const std::string& msg) { std::fprintf(stdout, "%s\n", msg.c_str()); std::fflush(stdout); }
void Complain(const std::string& msg) { std::fprintf(stderr, "dedupv1d: %s\n", msg.c_str()); }

const char kUsage[] =
    "usage: dedupv1d start|stop|status --config FILE [options]\n"
    "       dedupv1d takeover --config FILE [--force] [options]   start a gateway slot another gateway served\n"
    "       dedupv1d watch --config FILE [--interval S] [--once] [options]   take the config's slot over\n"
    "                       automatically once its holder's lease ran out (runs `takeover`)\n"
    "       dedupv1d cluster --config FILE [--json] [--shards]   the store's gateway slots, from RADOS\n"
    "       dedupv1d volume add NAME SIZE --config FILE [--overcommit] [--policy P]   a new volume: in the\n"
    "                       config, and served as a new LUN by the running instance while the other LUNs go on\n"
    "       dedupv1d volume grow NAME SIZE --config FILE [--overcommit]   a volume grows: in the config, and\n"
    "                       online (initiators see it after a rescan: CAPACITY DATA HAS CHANGED)\n"
    "       dedupv1d volume policy NAME inline|selective|out-of-band|off --config FILE   a volume's dedup\n"
    "                       policy: in the config, and online for the writes that follow (data already\n"
    "                       stored stays where it is)\n"
    "       dedupv1d volume remove NAME --config FILE [--force]   a volume goes: its LUN, its config line\n"
    "                       and its data (GC reclaims its chunks)\n"
    "       dedupv1d index grow [SIZE] --config FILE [--wait]   the running instance's chunk index table grows\n"
    "                       online to at least SIZE (default: by chunk-index.grow-factor) while LUNs serve\n"
    "  --overcommit         volume add/grow: even beyond the free space of the data dir's file system\n"
    "  --policy P           volume add: the new volume's dedup policy (inline, the default; selective; off)\n"
    "  --force              takeover: fence a holder that still renews its lease instead of waiting for it;\n"
    "                       volume remove: even while initiators are logged in to the target\n"
    "  --interval S         watch: seconds between looks (default: a third of storage.rados.lock-lease)\n"
    "  --once               watch: look until a verdict (at most a lease and two looks), act on it, exit\n"
    "  --json               cluster: one JSON document (the monitor's /cluster)\n"
    "  --wait               index grow: until the growth is done, with its progress (from the monitor)\n"
    "  --shards             cluster: also count the keys of every chunk index shard (min/max/mean)\n"
    "  --data-dir DIR       overrides the config's data-dir (state file, tgtd.log and data live there)\n"
    "  --portal ADDR:PORT   overrides target.portal (e.g. 127.0.0.1:3260, [::1]:3260)\n"
    "  --control-port N     overrides target.control-port (tgtd -C N)\n"
    "  --volume NAME        start: serve only this volume (repeatable; default: all; LUN = the volume's id)\n"
    "  --module PATH        start: bs_dedupv1.so to LD_PRELOAD into tgtd\n"
    "  --pid-file PATH      start/takeover: write tgtd's pid there once the start is complete (for\n"
    "                       systemd's PIDFile=); stop: remove it after tgtd is gone, and exit 0 when\n"
    "                       nothing runs (a service manager's stop of a stopped service)\n"
    "  --timeout SECONDS    bound of each tgtadm call (default 300; creating/deleting LUNs opens/closes the engine)\n"
    "exit codes: 0 ok / running, 1 failed (or half configured), 2 usage, config or data dir refused,\n"
    "            3 not running\n";

struct Args {
  std::string command;
  std::string config;
  std::string data_dir;
  std::string portal;
  std::string control_port;
  std::vector<std::string> volumes;
  std::string module;
  std::string pid_file;  // start/takeover write it, stop removes it
  int timeout_s = 300;
  bool force = false;  // takeover --force
  int interval_s = 0;  // watch --interval (0: a third of the lease)
  bool once = false;   // watch --once
  bool json = false;   // cluster --json
  bool shards = false; // cluster --shards
  std::string volume_action;  // volume: add, grow, policy or remove
  std::string volume_name;    // volume: NAME
  std::string volume_size;    // volume: SIZE as given
  std::string volume_policy;  // volume policy NAME P, volume add --policy P
  bool overcommit = false;    // volume grow --overcommit
  std::string index_size;     // index grow [SIZE]: as given, empty for the grow factor
  bool wait = false;          // index grow --wait
};

bool ParseArgs(int argc, char** argv, Args* a, std::string* err) {
  if (argc < 2) {
    *err = "no command";
    return false;
  }
  a->command = argv[1];
  if (a->command != "start" && a->command != "stop" && a->command != "status" && a->command != "takeover" &&
      a->command != "watch" && a->command != "cluster" && a->command != "volume" && a->command != "index") {
    *err = "unknown command '" + a->command + "'";
    return false;
  }
  int first_option = 2;
  if (a->command == "volume") {
    const std::string action = argc > 2 ? argv[2] : "";
    const bool sized = action == "add" || action == "grow";
    const bool two_words = sized || action == "policy";
    if ((!two_words && action != "remove") || argc < (two_words ? 5 : 4)) {
      *err = "volume needs an action and its arguments: volume add|grow NAME SIZE, volume policy NAME POLICY, "
             "volume remove NAME";
      return false;
    }
    a->volume_action = action;
    a->volume_name = argv[3];
    if (sized) a->volume_size = argv[4];
    if (action == "policy") a->volume_policy = argv[4];
    first_option = two_words ? 5 : 4;
  }
  if (a->command == "index") {
    if (argc < 3 || std::string(argv[2]) != "grow") {
      *err = "index needs an action: index grow [SIZE]";
      return false;
    }
    first_option = 3;
    if (argc > 3 && argv[3][0] != '-') {
      a->index_size = argv[3];
      first_option = 4;
    }
  }
  for (int i = first_option; i < argc; i++) {
    std::string opt = argv[i];
    std::string value;
    if (opt == "--wait") {
      if (a->command != "index") {
        *err = "--wait belongs to index grow";
        return false;
      }
      a->wait = true;
      continue;
    }
    if (opt == "--overcommit") {
      if (a->volume_action != "grow" && a->volume_action != "add") {
        *err = "--overcommit belongs to volume add and grow";
        return false;
      }
      a->overcommit = true;
      continue;
    }
    if (opt == "--force") {  // a flag: no value
      if (a->command != "takeover" && a->volume_action != "remove") {
        *err = "--force belongs to takeover and volume remove";
        return false;
      }
      a->force = true;
      continue;
    }
    if (opt == "--once" || opt == "--json" || opt == "--shards") {  // flags: no value
      const char* owner = opt == "--once" ? "watch" : "cluster";
      if (a->command != owner) {
        *err = opt + " belongs to " + owner;
        return false;
      }
      (opt == "--once" ? a->once : opt == "--json" ? a->json : a->shards) = true;
      continue;
    }
    const size_t eq = opt.find('=');
    if (opt.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = opt.substr(eq + 1);
      opt = opt.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      *err = "option " + opt + " needs a value";
      return false;
    }
    if (opt == "--config") a->config = value;
    else if (opt == "--data-dir") a->data_dir = value;
    else if (opt == "--portal") a->portal = value;
    else if (opt == "--control-port") a->control_port = value;
    else if (opt == "--volume") a->volumes.push_back(value);
    else if (opt == "--module") a->module = value;
    else if (opt == "--policy" && a->volume_action == "add") a->volume_policy = value;
    else if (opt == "--pid-file" && (a->command == "start" || a->command == "takeover" || a->command == "stop"))
      a->pid_file = value;
    else if (opt == "--timeout") {
      uint64_t t = 0;
      if (!ParseUint(value, &t).ok() || t < 1 || t > 86400) {
        *err = "--timeout must be 1..86400 seconds";
        return false;
      }
      a->timeout_s = static_cast<int>(t);
    } else if (opt == "--interval" && a->command == "watch") {
      uint64_t t = 0;
      if (!ParseUint(value, &t).ok() || t < 1 || t > 3600) {
        *err = "--interval must be 1..3600 seconds";
        return false;
      }
      a->interval_s = static_cast<int>(t);
    } else {
      *err = "unknown option '" + opt + "'";
      return false;
    }
  }
  if (a->config.empty()) {
    *err = "--config FILE is required";
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Processes.

struct RunResult {
  int exit_code = -1;  // -1: did not exit normally (signal, timeout, exec failure)
  bool timed_out = false;
  std::string output;  // stdout and stderr together
  bool ok() const { return exit_code == 0 && !timed_out; }
};

// Runs |argv| with its output captured, killing it after |timeout_s|.
RunResult Run(const std::vector<std::string>& argv, int timeout_s) {
  RunResult r;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.output = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    r.output = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return r;
  }
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);  // we ignore it; the child must not inherit that
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    std::vector<char*> cargv;
    for (const auto& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
    cargv.push_back(nullptr);
    ::execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    ssize_t got = ::read(fds[0], buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the child closed its output (normally: exited)
    r.output.append(buf, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!r.timed_out && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string Describe(const RunResult& r, int timeout_s) {
  if (r.timed_out) return "no answer within " + std::to_string(timeout_s) + " s";
  std::string out = Trim(r.output);
  if (r.exit_code < 0) return out.empty() ? "killed by a signal" : out;
  return out.empty() ? "exit code " + std::to_string(r.exit_code) : out;
}

// An executable named |name| in PATH, /usr/sbin or /sbin ("" if none).
std::string FindProgram(const std::string& name) {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/sbin:/sbin:/usr/bin:/bin";
  std::istringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// /proc/PID/stat: state letter and start time (clock ticks after boot), the
// pair that tells "tgtd we started" from a later process reusing the pid.
struct ProcInfo {
  char state = 0;
  uint64_t start_time = 0;
};

std::optional<ProcInfo> ReadProc(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const size_t paren = line.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(paren + 1));
  ProcInfo info;
  std::string field;
  rest >> info.state;
  // Fields after the state: ppid(4) ... starttime(22), so 18 more to skip.
  for (int i = 4; i < 22 && rest >> field; i++) {
  }
  rest >> info.start_time;
  return info;
}

std::string ReadCmdline0(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string arg0;
  std::getline(in, arg0, '\0');
  return arg0;
}

// True while |pid| is the tgtd started at |start_time| (a zombie is gone).
bool TgtdAlive(pid_t pid, uint64_t start_time) {
  if (pid <= 0) return false;
  auto info = ReadProc(pid);
  if (!info || info->state == 'Z' || info->state == 'X') return false;
  if (start_time != 0 && info->start_time != start_time) return false;
  return fs::path(ReadCmdline0(pid)).filename() == "tgtd";
}

// Reaps |pid| if it is our child; harmless otherwise.
void ReapIfChild(pid_t pid) {
  int status;
  ::waitpid(pid, &status, WNOHANG);
}

bool WaitUntil(const std::function<bool()>& done, int seconds) {
  const auto deadline = Clock::now() + std::chrono::seconds(seconds);
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// ---------------------------------------------------------------------------
// tgtd's management socket: /var/run/tgtd/socket.N, locked (lockf) by the
// tgtd owning it through socket.N.lock.

std::string SocketPath(int control_port) { return "/var/run/tgtd/socket." + std::to_string(control_port); }

bool ControlPortInUse(int control_port) {
  const std::string lock = SocketPath(control_port) + ".lock";
  int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  bool in_use = ::lockf(fd, F_TEST, 0) != 0;
  ::close(fd);
  return in_use;
}

// tgtd leaves its socket and lock file behind when it exits.
void RemoveStaleSocket(int control_port) {
  if (ControlPortInUse(control_port)) return;
  ::unlink(SocketPath(control_port).c_str());
  ::unlink((SocketPath(control_port) + ".lock").c_str());
}

// ---------------------------------------------------------------------------
// Portals.

struct Portal {
  std::string host;  // without brackets
  uint16_t port = 0;
  bool v6 = false;
  std::string ToString() const { return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port); }
};

// Options validated the syntax (ADDR:PORT, [ADDR6]:PORT).
Portal ParsePortal(const std::string& s) {
  Portal p;
  const size_t colon = s.rfind(':');
  p.host = s.substr(0, colon);
  p.port = static_cast<uint16_t>(std::stoi(s.substr(colon + 1)));
  if (!p.host.empty() && p.host.front() == '[') {
    p.host = p.host.substr(1, p.host.size() - 2);
    p.v6 = true;
  }
  return p;
}

// Binds or connects a TCP socket to |p| (|connect_instead|: the wildcard
// addresses are reached through loopback). Returns errno, 0 on success.
int TryPortal(const Portal& p, bool connect_instead) {
  sockaddr_storage ss{};
  socklen_t len;
  std::string host = p.host;
  if (connect_instead && host == "0.0.0.0") host = "127.0.0.1";
  if (connect_instead && host == "::") host = "::1";
  if (p.v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(p.port);
    ::inet_pton(AF_INET6, host.c_str(), &a->sin6_addr);
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(p.port);
    ::inet_pton(AF_INET, host.c_str(), &a->sin_addr);
    len = sizeof(*a);
  }
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc = connect_instead ? ::connect(fd, reinterpret_cast<sockaddr*>(&ss), len)
                           : ::bind(fd, reinterpret_cast<sockaddr*>(&ss), len);
  int err = rc == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

// ---------------------------------------------------------------------------
// The monitor (the engine's HTTP server inside tgtd, target/monitor).

std::string HostPort(const std::string& host, uint16_t port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// |host| (a numeric address or a name, as monitor.host allows) resolved to
// the first address of it; false when it does not resolve.
bool ResolveMonitor(const std::string& host, uint16_t port, Portal* p) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return false;
  char buf[INET6_ADDRSTRLEN] = "";
  p->v6 = res->ai_family == AF_INET6;
  const void* addr = p->v6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(res->ai_addr)->sin6_addr)
                           : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr);
  ::inet_ntop(res->ai_family, addr, buf, sizeof(buf));
  ::freeaddrinfo(res);
  p->host = buf;
  p->port = port;
  return true;
}

// A client of the monitor on |host|:|port| (wildcards reached through loopback).
std::unique_ptr<MonitorClient> MonitorClientFor(const std::string& host, uint16_t port, int timeout_s) {
  std::string h = host;
  if (h == "0.0.0.0") h = "127.0.0.1";
  if (h == "::") h = "::1";
  return std::make_unique<MonitorClient>(h, port, "", timeout_s * 1000L);
}

// Who holds the monitor's port: a dedupv1 monitor says which instance it is;
// otherwise the process, as far as /proc tells.
std::string DescribeMonitorPortHolder(const std::string& host, uint16_t port) {
  auto client = MonitorClientFor(host, port, 5);
  MonitorIdentity other;
  if (FetchMonitorIdentity(client.get(), &other).ok()) return "the monitor of " + other.Describe();
  const std::string owner = TcpPortOwner(port);
  return owner.empty() ? "another program" : owner;
}

// "" when the monitor is free to bind |host|:|port|, else why not.
std::string MonitorPortProblem(const ServiceOptions& o) {
  if (!o.monitor.enabled) return "";
  Portal p;
  const std::string where = HostPort(o.monitor.host, o.monitor.port);
  if (!ResolveMonitor(o.monitor.host, o.monitor.port, &p)) return "monitor.host " + o.monitor.host + " does not resolve";
  const int err = TryPortal(p, false);
  if (err == 0) return "";
  if (err != EADDRINUSE) return "monitor " + where + " cannot be bound: " + std::strerror(err);
  return "monitor port " + where + " is in use by " + DescribeMonitorPortHolder(o.monitor.host, o.monitor.port) +
         "; choose another monitor.port (or monitor.enabled = false)";
}

// "" when the monitor answering on |host|:|port| is the one of the store
// |engine| describes (the engine just opened it in our tgtd), else why not.
std::string MonitorIdentityProblem(const std::string& host, uint16_t port, const Options& engine) {
  const std::string where = HostPort(host, port);
  ExpectedInstance expected;
  std::unique_ptr<StoreEnv> store;
  Status s = StoreEnv::Open(engine, Env::Default(), &store);
  if (s.ok()) s = ExpectInstanceOf(store->env(), engine.data_dir, &expected);
  if (!s.ok()) return "cannot tell this data dir's instance: " + s.ToString();
  auto client = MonitorClientFor(host, port, 10);
  MonitorIdentity got;
  s = FetchMonitorIdentity(client.get(), &got);
  if (s.IsIOError()) return "the monitor did not start on " + where + " (" + s.message() + ")";
  if (s.ok()) s = CheckMonitorIdentity(got, expected, client->base_url());
  if (!s.ok()) return s.message() + " (port " + where + " taken by another program after the check)";
  return "";
}

// ---------------------------------------------------------------------------
// The state file: which tgtd serves this data dir ("key = value", read back
// with the config parser).

struct Lun {
  int lun = 0;
  std::string volume;
  uint64_t size = 0;
};

// What start set up, so status can check that tgtd still has all of it and
// say what is missing.
struct State {
  pid_t pid = 0;
  uint64_t start_time = 0;
  int control_port = 0;
  std::string portal;
  std::string iqn;
  std::string config;
  std::string data_dir;
  std::string module;
  std::vector<Lun> luns;
  bool configured = false;            // every step of start done
  std::vector<std::string> acl;       // initiator addresses, then names (tgt shows both as the ACL)
  std::string chap_user;              // "" without CHAP
  bool discovery_chap = false;        // chap_user also bound to discovery
  std::string monitor_host;           // "" when monitor.enabled = false
  uint16_t monitor_port = 0;

  std::string ToText() const {
    std::ostringstream o;
    o << "# dedupv1d state: the tgtd serving this data dir (written by dedupv1d start, removed by stop)\n"
      << "pid = " << pid << "\n"
      << "start-time = " << start_time << "\n"
      << "control-port = " << control_port << "\n"
      << "portal = " << portal << "\n"
      << "iqn = " << iqn << "\n"
      << "config = " << config << "\n"
      << "data-dir = " << data_dir << "\n"
      << "module = " << module << "\n"
      << "configured = " << (configured ? "yes" : "no") << "\n"
      << "chap-user = " << chap_user << "\n"
      << "discovery-chap = " << (discovery_chap ? "yes" : "no") << "\n"
      << "monitor-host = " << monitor_host << "\n"
      << "monitor-port = " << monitor_port << "\n";
    for (const auto& a : acl) o << "acl = " << a << "\n";
    for (const auto& l : luns) o << "lun = " << l.lun << " " << l.volume << " " << l.size << "\n";
    return o.str();
  }

  static Status FromText(const std::string& text, const std::string& path, State* st) {
    Config c;
    DEDUPV1_RETURN_IF_ERROR(Config::Parse(text, path, &c));
    State s;
    // A state file of an older dedupv1d has no "configured" line: it was
    // written after a start had finished.
    s.configured = true;
    for (const auto& e : c.entries()) {
      uint64_t x = 0;
      if (e.key == "pid") {
        DEDUPV1_RETURN_IF_ERROR(ParseUint(e.value, &x));
        s.pid = static_cast<pid_t>(x);
      } else if (e.key == "start-time") {
        DEDUPV1_RETURN_IF_ERROR(ParseUint(e.value, &s.start_time));
      } else if (e.key == "control-port") {
        DEDUPV1_RETURN_IF_ERROR(ParseUint(e.value, &x));
        s.control_port = static_cast<int>(x);
      } else if (e.key == "portal") {
        s.portal = e.value;
      } else if (e.key == "iqn") {
        s.iqn = e.value;
      } else if (e.key == "config") {
        s.config = e.value;
      } else if (e.key == "data-dir") {
        s.data_dir = e.value;
      } else if (e.key == "module") {
        s.module = e.value;
      } else if (e.key == "configured") {
        s.configured = e.value == "yes";
      } else if (e.key == "chap-user") {
        s.chap_user = e.value;
      } else if (e.key == "discovery-chap") {
        s.discovery_chap = e.value == "yes";
      } else if (e.key == "monitor-host") {
        s.monitor_host = e.value;
      } else if (e.key == "monitor-port") {
        DEDUPV1_RETURN_IF_ERROR(ParseUint(e.value, &x));
        s.monitor_port = static_cast<uint16_t>(x);
      } else if (e.key == "acl") {
        s.acl.push_back(e.value);
      } else if (e.key == "lun") {
        std::istringstream f(e.value);
        Lun l;
        if (!(f >> l.lun >> l.volume >> l.size)) {
          return Status::Corruption(path + ":" + std::to_string(e.line) + ": expected 'lun = N VOLUME SIZE'");
        }
        s.luns.push_back(l);
      }
    }
    if (s.pid <= 0) return Status::Corruption(path + ": no pid");
    *st = s;
    return Status::OK();
  }
};

std::string StatePath(const std::string& data_dir) { return JoinPath(data_dir, kStateFile); }

// NotFound when there is no state file.
Status LoadState(const std::string& data_dir, State* st) {
  const std::string path = StatePath(data_dir);
  if (!Env::Default()->FileExists(path)) return Status::NotFound("no state file " + path);
  std::string text;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(Env::Default(), path, &text));
  return State::FromText(text, path, st);
}

Status SaveState(const State& st) {
  return WriteFileAtomically(Env::Default(), StatePath(st.data_dir), st.ToText());
}

void RemoveState(const std::string& data_dir) { ::unlink(StatePath(data_dir).c_str()); }

// ---------------------------------------------------------------------------
// tgtadm and what it shows.

class Tgtadm {
 public:
  Tgtadm(std::string program, int control_port, int timeout_s)
      : program_(std::move(program)), control_port_(control_port), timeout_s_(timeout_s) {}

  RunResult operator()(std::vector<std::string> args, int timeout_s = 0) const {
    std::vector<std::string> argv = {program_, "-C", std::to_string(control_port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    return Run(argv, timeout_s > 0 ? timeout_s : timeout_s_);
  }
  int timeout_s() const { return timeout_s_; }

 private:
  std::string program_;
  int control_port_;
  int timeout_s_;
};

struct ShownLun {
  int lun = -1;
  std::string size;  // tgt's rounded "68 MB"
  std::string block_size;
  std::string online;
  std::string bstype;
  std::string path;
};

struct ShownTarget {
  int tid = 0;
  std::string iqn;
  std::string state;
  std::vector<ShownLun> luns;
  std::vector<std::string> accounts;
  std::vector<std::string> acl;
  int connections = 0;  // I_T nexuses
};

// Parses `tgtadm --lld iscsi --op show --mode target`.
std::vector<ShownTarget> ParseTargets(const std::string& text) {
  std::vector<ShownTarget> targets;
  std::istringstream in(text);
  std::string line;
  enum { kNone, kSystem, kNexus, kLuns, kAccounts, kAcl } section = kNone;
  while (std::getline(in, line)) {
    const std::string t = Trim(line);
    if (line.rfind("Target ", 0) == 0) {
      ShownTarget tg;
      tg.tid = std::atoi(line.c_str() + 7);
      size_t colon = line.find(':');
      if (colon != std::string::npos) tg.iqn = Trim(line.substr(colon + 1));
      targets.push_back(tg);
      section = kNone;
      continue;
    }
    if (targets.empty() || t.empty()) continue;
    ShownTarget& tg = targets.back();
    if (t == "System information:") section = kSystem;
    else if (t == "I_T nexus information:") section = kNexus;
    else if (t == "LUN information:") section = kLuns;
    else if (t == "Account information:") section = kAccounts;
    else if (t == "ACL information:") section = kAcl;
    else if (section == kSystem && t.rfind("State:", 0) == 0) tg.state = Trim(t.substr(6));
    else if (section == kNexus && t.rfind("I_T nexus:", 0) == 0) tg.connections++;
    else if (section == kLuns && t.rfind("LUN:", 0) == 0) {
      ShownLun l;
      l.lun = std::atoi(t.c_str() + 4);
      tg.luns.push_back(l);
    } else if (section == kLuns && !tg.luns.empty()) {
      ShownLun& l = tg.luns.back();
      if (t.rfind("Size:", 0) == 0) {
        const size_t comma = t.find(", Block size:");
        l.size = Trim(t.substr(5, comma == std::string::npos ? std::string::npos : comma - 5));
        if (comma != std::string::npos) l.block_size = Trim(t.substr(comma + 13));
      } else if (t.rfind("Online:", 0) == 0) {
        l.online = Trim(t.substr(7));
      } else if (t.rfind("Backing store type:", 0) == 0) {
        l.bstype = Trim(t.substr(19));
      } else if (t.rfind("Backing store path:", 0) == 0) {
        l.path = Trim(t.substr(19));
      }
    } else if (section == kAccounts) {
      tg.accounts.push_back(t);
    } else if (section == kAcl) {
      tg.acl.push_back(t);
    }
  }
  return targets;
}

// ---------------------------------------------------------------------------
// Config.

struct Setup {
  ServiceOptions options;  // the whole file: engine, target.*, monitor.*
  std::string config_path;  // absolute
  std::string data_dir;     // absolute
  std::vector<Lun> luns;    // what to serve, in config order
};

// "a, b, c": the names of |volumes|, for messages.
std::string VolumeNames(const std::vector<VolumeOptions>& volumes) {
  std::string names;
  for (const auto& v : volumes) names += (names.empty() ? "" : ", ") + v.name;
  return names;
}

// The setup of |config| (the file at setup->config_path, parsed) with the
// command line overrides: validates the whole config (every layer's keys).
Status SetupFromConfig(const Args& args, Config config, Setup* setup) {
  std::error_code ec;
  if (!args.data_dir.empty()) {
    config.Set("data-dir", fs::absolute(args.data_dir, ec).lexically_normal().string());
  }
  if (!args.portal.empty()) config.Set("target.portal", args.portal);
  if (!args.control_port.empty()) config.Set("target.control-port", args.control_port);
  DEDUPV1_RETURN_IF_ERROR(ServiceOptions::FromConfig(config, &setup->options));
  setup->data_dir = fs::absolute(setup->options.engine.data_dir, ec).lexically_normal().string();
  if (!setup->data_dir.empty() && setup->data_dir.size() > 1 && setup->data_dir.back() == '/') {
    setup->data_dir.pop_back();
  }
  const auto& vols = setup->options.engine.volumes;
  if (vols.empty()) {
    return Status::InvalidArgument(setup->config_path +
                                   ": declares no volume, so there is nothing to serve (add 'volume = NAME SIZE')");
  }
  for (const auto& name : args.volumes) {
    bool found = false;
    for (const auto& v : vols) found |= v.name == name;
    if (!found) {
      return Status::NotFound("no volume named '" + name + "' in " + setup->config_path + " (volumes: " +
                              VolumeNames(vols) + ")");
    }
  }
  for (size_t i = 0; i < vols.size(); i++) {
    bool wanted = args.volumes.empty();
    for (const auto& name : args.volumes) wanted |= name == vols[i].name;
    if (wanted) setup->luns.push_back({0, vols[i].name, vols[i].size});  // LUN: PlanLuns
  }
  return Status::OK();
}

// Loads and validates the whole config (every layer's keys) with the command
// line overrides. The message names the file, line and key.
Status LoadSetup(const Args& args, Setup* setup) {
  std::error_code ec;
  setup->config_path = fs::absolute(args.config, ec).lexically_normal().string();
  if (ec) setup->config_path = args.config;
  if (!fs::is_regular_file(setup->config_path, ec)) {
    return Status::NotFound("config file " + setup->config_path + " does not exist");
  }
  Config config;
  DEDUPV1_RETURN_IF_ERROR(Config::Load(Env::Default(), setup->config_path, &config));
  return SetupFromConfig(args, std::move(config), setup);
}

std::string VolumeTablePath(const std::string& data_dir) { return JoinPath(data_dir, "volumes"); }

// The LUN of each volume to serve: its id in DATA-DIR/volumes, or for a
// volume the table does not know yet, the id the engine will give it when it
// opens (ApplyConfiguredVolumes, the engine's own rule, run on a copy of the
// table; nothing is written here). Ids are never reused, so a volume keeps its
// LUN when other volume lines are removed or reordered. Start checks after
// the engine opened that it gave these ids (VerifyLuns).
// A data dir without a store yet has no table (the engine creates it); one
// holding a store must have every file its data depends on (InspectDataDir,
// the engine's own rule), so a lost table is refused here, naming it.
Status PlanLuns(Setup* setup) {
  std::vector<VolumeRecord> records;
  std::unique_ptr<StoreEnv> store;
  DEDUPV1_RETURN_IF_ERROR(StoreEnv::Open(setup->options.engine, Env::Default(), &store));
  DataDirState state;
  DEDUPV1_RETURN_IF_ERROR(InspectDataDir(store->env(), setup->options.engine, &state));
  if (state == DataDirState::kStore) {
    DEDUPV1_RETURN_IF_ERROR(ReadVolumeTable(store->env(), VolumeTablePath(setup->data_dir), &records));
  }
  bool changed = false;
  DEDUPV1_RETURN_IF_ERROR(ApplyConfiguredVolumes(setup->options.engine.volumes, &records, &changed));
  for (auto& l : setup->luns) {
    for (const auto& r : records) {
      if (r.name == l.volume) l.lun = static_cast<int>(r.id);
    }
  }
  std::sort(setup->luns.begin(), setup->luns.end(), [](const Lun& a, const Lun& b) { return a.lun < b.lun; });
  return Status::OK();
}

// "" when the engine gave every served volume the id PlanLuns made its LUN
// number; else what differs.
std::string VerifyLuns(const std::vector<Lun>& luns, const Options& options) {
  std::vector<VolumeRecord> records;
  std::unique_ptr<StoreEnv> store;
  Status s = StoreEnv::Open(options, Env::Default(), &store);
  if (s.ok()) s = ReadVolumeTable(store->env(), VolumeTablePath(options.data_dir), &records);
  if (!s.ok()) return "cannot read the volume table the engine wrote: " + s.ToString();
  for (const auto& l : luns) {
    const VolumeRecord* found = nullptr;
    for (const auto& r : records) {
      if (r.name == l.volume) found = &r;
    }
    if (found == nullptr || found->id != static_cast<uint32_t>(l.lun)) {
      return "volume " + l.volume + " is LUN " + std::to_string(l.lun) + " but has " +
             (found ? "id " + std::to_string(found->id) : std::string("no line")) + " in " +
             VolumeTablePath(options.data_dir) + " (was the table changed while starting?)";
    }
  }
  return "";
}

// The data dir named by the config (for stop/status of an instance whose
// config no longer validates): the last data-dir entry, or the override.
std::string RawDataDir(const Args& args) {
  std::error_code ec;
  if (!args.data_dir.empty()) return fs::absolute(args.data_dir, ec).lexically_normal().string();
  Config config;
  if (!Config::Load(Env::Default(), args.config, &config).ok()) return "";
  std::string dir = Options().data_dir;
  for (const auto& e : config.entries()) {
    if (e.key == "data-dir") dir = config.PathValue(e);  // as Options::FromConfig reads it
  }
  return fs::absolute(dir, ec).lexically_normal().string();
}

// The module to preload: --module, else next to this binary (build tree:
// bin/dedupv1d and lib/bs_dedupv1.so), else none ("" : an installed module
// in the backing-store dir is loaded by tgtd itself).
Status FindModule(const Args& args, std::string* preload, std::string* description) {
  std::error_code ec;
  if (!args.module.empty()) {
    std::string p = fs::absolute(args.module, ec).string();
    if (!fs::is_regular_file(p, ec)) return Status::NotFound("--module " + p + " does not exist");
    *preload = p;
    *description = p + " (LD_PRELOAD)";
    return Status::OK();
  }
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const char* rel : {"../lib/bs_dedupv1.so", "bs_dedupv1.so", "../lib/dedupv1/bs_dedupv1.so"}) {
      fs::path candidate = (exe.parent_path() / rel).lexically_normal();
      if (fs::is_regular_file(candidate, ec)) {
        *preload = candidate.string();
        *description = *preload + " (LD_PRELOAD)";
        return Status::OK();
      }
    }
  }
  const std::string installed = std::string(DEDUPV1_TGT_BACKING_STORE_DIR) + "/bs_dedupv1.so";
  if (fs::is_regular_file(installed, ec)) {
    preload->clear();
    *description = installed + " (installed; loaded by tgtd)";
    return Status::OK();
  }
  return Status::NotFound("bs_dedupv1.so not found next to dedupv1d (" + (exe.parent_path() / "../lib").string() +
                          ") nor in " DEDUPV1_TGT_BACKING_STORE_DIR "; build it or pass --module PATH");
}

// ---------------------------------------------------------------------------
// tgtd.

uint64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// What tgtd logged since |offset| about the failure: the module's lines
// ("dedupv1: cannot open volume ...") if any, else the last |max_lines|.
std::string LogSince(const std::string& path, uint64_t offset, size_t max_lines = 15) {
  std::ifstream in(path);
  if (!in) return "";
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<std::string> lines, ours;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (line.find("dedupv1:") != std::string::npos) ours.push_back(line);
  }
  if (!ours.empty()) lines = ours;
  std::string out;
  size_t from = lines.size() > max_lines ? lines.size() - max_lines : 0;
  for (size_t i = from; i < lines.size(); i++) out += "  tgtd.log: " + lines[i] + "\n";
  return out;
}

// tgtadm against the tgtd of control port |control_port|.
Tgtadm TgtadmFor(int control_port, int timeout_s) {
  const std::string tgtadm = FindProgram("tgtadm");
  return Tgtadm(tgtadm.empty() ? "tgtadm" : tgtadm, control_port, timeout_s);
}

// Whether a complete instance serves |data_dir|; |*st| is its state.
bool InstanceRuns(const std::string& data_dir, State* st) {
  return LoadState(data_dir, st).ok() && TgtdAlive(st->pid, st->start_time) && st->configured;
}

// Prints what tgtd logged since |offset| of its log |path| (nothing if
// nothing), after a step it refused.
void PrintTgtdLog(const std::string& path, uint64_t offset) {
  const std::string why = LogSince(path, offset);
  if (!why.empty()) std::fprintf(stderr, "%s", why.c_str());
}

// Starts `tgtd -f -C N --iscsi portal=P` in a session of its own, output
// appended to |log|, with |preload| LD_PRELOADed. Returns the pid.
Status SpawnTgtd(const std::string& tgtd, int control_port, const std::string& portal,
                 const std::string& preload, const std::string& log, pid_t* pid) {
  int logfd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (logfd < 0) return Status::FromErrno(errno, "open " + log);
  std::vector<std::string> argv = {tgtd, "-f", "-C", std::to_string(control_port), "--iscsi",
                                   "portal=" + portal};
  std::string env_preload;
  if (!preload.empty()) {
    const char* old = std::getenv("LD_PRELOAD");
    env_preload = preload + (old && *old ? std::string(":") + old : "");
  }
  pid_t child = ::fork();
  if (child < 0) {
    int err = errno;
    ::close(logfd);
    return Status::FromErrno(err, "fork");
  }
  if (child == 0) {
    ::setsid();  // no controlling terminal, not in our process group: survives us
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGHUP, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(logfd, 1);
    ::dup2(logfd, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    if (!env_preload.empty()) ::setenv("LD_PRELOAD", env_preload.c_str(), 1);
    // The portal initiators use, for a gateway slot's heartbeat (--portal
    // may override the config's target.portal, which is all tgtd's module reads).
    ::setenv("DEDUPV1_GATEWAY_PORTAL", portal.c_str(), 1);
    if (::chdir("/") != 0) {
    }
    std::vector<char*> cargv;
    for (const auto& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
    cargv.push_back(nullptr);
    ::execv(cargv[0], cargv.data());
    std::fprintf(stderr, "dedupv1d: cannot run %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(logfd);
  *pid = child;
  return Status::OK();
}

// Whether a process (tgtd's engine) holds DATA-DIR/LOCK (Env::LockFile's flock).
bool EngineOpen(const std::string& data_dir) {
  int fd = ::open(JoinPath(data_dir, kEngineLockFile).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases ours, if we got it
  return held;
}

// The engine options of the instance |st| describes: its config with its
// data dir. If the config cannot be read any more (changed or removed since
// the start), a local store at st.data_dir: what a running instance's
// state file alone can tell.
Options EngineOptionsOf(const State& st) {
  Config config;
  ServiceOptions options;
  Status s = Config::Load(Env::Default(), st.config, &config);
  if (s.ok()) {
    config.Set("data-dir", st.data_dir);
    s = ServiceOptions::FromConfig(config, &options);
  }
  if (!s.ok()) {
    Options local;
    local.data_dir = st.data_dir;
    return local;
  }
  return options.engine;
}

// Whether the engine wrote its clean-close marker into the store |st|
// serves (through the store's Env: a rados store keeps it in the cluster).
bool CleanMarkerExists(const State& st) {
  const std::string marker = JoinPath(st.data_dir, kCleanFileName);
  std::unique_ptr<StoreEnv> store;
  Status s = StoreEnv::Open(EngineOptionsOf(st), Env::Default(), &store);
  if (!s.ok()) {
    Complain("cannot reach the store to check its clean marker " + marker + ": " + s.ToString());
    return false;
  }
  return store->env()->FileExists(marker);
}

// Stops the tgtd of |st| the way it allows; SIGKILL after a bounded wait.
// Returns false if anything did not go as it should (said on stderr),
// including an engine that did not close cleanly.
bool StopTgtd(const State& st, const Tgtadm& adm, bool quiet = false) {
  bool clean = true;
  auto step = [&](const std::string& what, const RunResult& r) {
    if (!r.ok()) {
      Complain(what + " failed: " + Describe(r, adm.timeout_s()));
      clean = false;
    }
    return r.ok();
  };
  if (!TgtdAlive(st.pid, st.start_time)) {
    ReapIfChild(st.pid);
    RemoveStaleSocket(st.control_port);
    return true;
  }
  // The engine writes DATA-DIR/clean only when it closed cleanly; it is open
  // when tgtd holds the data dir's LOCK.
  const bool engine_open = EngineOpen(st.data_dir);
  const std::string log = JoinPath(st.data_dir, kLogFile);
  const uint64_t log_start = FileSize(log);
  // Offline first: no new logins while the targets go away.
  step("setting tgtd offline", adm({"--op", "update", "--mode", "sys", "--name", "State", "-v", "offline"}));
  bool luns_closed = true;
  RunResult shown = adm({"--lld", "iscsi", "--op", "show", "--mode", "target"});
  if (step("listing targets", shown)) {
    for (const auto& t : ParseTargets(shown.output)) {
      // --force logs out initiators; deleting the LUNs closes the volumes and,
      // with the last one, the engine (which flushes everything).
      if (!step("deleting target " + std::to_string(t.tid) + " (" + t.iqn + ")",
                adm({"--lld", "iscsi", "--op", "delete", "--mode", "target", "--tid", std::to_string(t.tid),
                     "--force"}))) {
        luns_closed = false;
      }
    }
  } else {
    luns_closed = false;
  }
  step("deleting the tgtd system", adm({"--op", "delete", "--mode", "system"}, 30));
  if (!WaitUntil([&] {
        ReapIfChild(st.pid);
        return !TgtdAlive(st.pid, st.start_time);
      }, kTgtdExitSeconds)) {
    Complain("tgtd pid " + std::to_string(st.pid) + " did not exit within " + std::to_string(kTgtdExitSeconds) +
             " s; sending SIGKILL" +
             (luns_closed ? " (its LUNs were closed before, so the engine had flushed)"
                          : " (its LUNs were NOT all closed: writes not yet synced may be lost)"));
    ::kill(st.pid, SIGKILL);
    WaitUntil([&] {
      ReapIfChild(st.pid);
      return !TgtdAlive(st.pid, st.start_time);
    }, 10);
    clean = false;
  }
  RemoveStaleSocket(st.control_port);
  if (engine_open && !CleanMarkerExists(st)) {
    Complain("the engine did not close cleanly (no " + JoinPath(st.data_dir, kCleanFileName) +
             "): what was not synced before may be lost or is replayed from the log at the next start; tgtd said:");
    std::string why = LogSince(log, log_start);
    std::fprintf(stderr, "%s", why.empty() ? "  (nothing in tgtd.log)\n" : why.c_str());
    clean = false;
  }
  if (!quiet && clean) {
    Say("dedupv1d: tgtd pid " + std::to_string(st.pid) + " stopped" +
        (engine_open ? "; the engine closed cleanly" : ""));
  }
  return clean;
}

// ---------------------------------------------------------------------------
// Commands.

// The global (discovery) accounts in `tgtadm --op show --mode sys`: the
// indented lines after "Account information:".
std::vector<std::string> ParseDiscoveryAccounts(const std::string& sys) {
  std::vector<std::string> accounts;
  std::istringstream lines(sys);
  bool in = false;
  for (std::string line; std::getline(lines, line);) {
    const std::string t = Trim(line);
    if (t == "Account information:") {
      in = true;
    } else if (in && !t.empty()) {
      if (line.empty() || (line[0] != ' ' && line[0] != '\t')) break;  // the next section
      accounts.push_back(t);
    }
  }
  return accounts;
}

// What tgtd (|targets|, |sys|: tgtadm's show of targets and system) and the
// monitor lack of what start set up (|st|): empty when the instance is
// complete. Each item names the missing piece.
std::vector<std::string> MissingPieces(const State& st, const std::vector<ShownTarget>& targets,
                                       const std::string& sys) {
  std::vector<std::string> missing;
  if (!st.configured) {
    missing.push_back("the start did not finish (dedupv1d was interrupted before it confirmed every step)");
  }
  const ShownTarget* target = nullptr;
  for (const auto& t : targets) {
    if (t.iqn == st.iqn) target = &t;
  }
  if (target == nullptr) {
    missing.push_back("target " + st.iqn + " does not exist in tgtd");
    return missing;
  }
  if (target->state != "ready") missing.push_back("target " + st.iqn + " is " + target->state + ", not ready");
  for (const auto& l : st.luns) {
    const ShownLun* shown = nullptr;
    for (const auto& x : target->luns) {
      if (x.lun == l.lun) shown = &x;
    }
    if (shown == nullptr) missing.push_back("LUN " + std::to_string(l.lun) + " (volume " + l.volume + ")");
    else if (shown->online != "Yes") missing.push_back("LUN " + std::to_string(l.lun) + " is offline");
  }
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  if (!st.chap_user.empty() && !has(target->accounts, st.chap_user)) {
    missing.push_back("CHAP account " + st.chap_user + " is not bound to the target (initiators would log in "
                      "without credentials once admitted)");
  }
  if (st.discovery_chap && !has(ParseDiscoveryAccounts(sys), st.chap_user)) {
    missing.push_back("CHAP account " + st.chap_user + " is not bound to discovery");
  }
  for (const auto& a : st.acl) {
    if (!has(target->acl, a)) missing.push_back("ACL entry " + a + " (those initiators are not admitted)");
  }
  if (!st.monitor_host.empty()) {
    std::string why = MonitorIdentityProblem(st.monitor_host, st.monitor_port, EngineOptionsOf(st));
    if (!why.empty()) missing.push_back(why);
  }
  return missing;
}

void PrintStatus(const State& st, const std::vector<ShownTarget>& targets, const std::vector<std::string>& missing) {
  if (missing.empty()) {
    Say("dedupv1d: running (tgtd pid " + std::to_string(st.pid) + ", control port " +
        std::to_string(st.control_port) + ")");
  } else {
    Say("dedupv1d: FAILED: tgtd pid " + std::to_string(st.pid) + " (control port " +
        std::to_string(st.control_port) + ") runs half configured; `dedupv1d stop`, then start again");
  }
  Say("portal:   " + st.portal);
  Say("config:   " + st.config);
  Say("data dir: " + st.data_dir);
  if (!st.monitor_host.empty()) Say("monitor:  http://" + HostPort(st.monitor_host, st.monitor_port) + "/");
  const ShownTarget* target = nullptr;
  for (const auto& t : targets) {
    if (t.iqn == st.iqn) target = &t;
  }
  if (target != nullptr) {
    Say("target:   " + target->iqn + " (tid " + std::to_string(target->tid) + ", " + target->state + ", " +
        std::to_string(target->connections) + " initiator connection(s))");
    std::string acl;
    for (const auto& a : target->acl) acl += (acl.empty() ? "" : ", ") + a;
    Say("ACL:      " + (acl.empty() ? std::string("none (no initiator admitted)") : acl));
    if (!target->accounts.empty()) {
      std::string acc;
      for (const auto& a : target->accounts) acc += (acc.empty() ? "" : ", ") + a;
      Say("CHAP:     " + acc + (st.discovery_chap ? " (discovery too)" : ""));
    }
    for (const auto& l : st.luns) {
      const ShownLun* shown = nullptr;
      for (const auto& x : target->luns) {
        if (x.lun == l.lun) shown = &x;
      }
      std::string line = "LUN " + std::to_string(l.lun) + ":    volume " + l.volume + ", " + HumanBytes(l.size) +
                         " (" + std::to_string(l.size) + " bytes)";
      if (shown == nullptr) {
        line += ", MISSING in tgtd";
      } else {
        line += ", " + shown->bstype + ", block size " + shown->block_size +
                (shown->online == "Yes" ? ", online" : ", offline");
      }
      Say(line);
    }
  }
  for (const auto& m : missing) Say("missing:  " + m);
}

// The test hook (header comment): the number of the step after which start
// kills itself, 0 for none.
int KillAfterStep() {
  const char* v = std::getenv("DEDUPV1D_TEST_KILL_AFTER_STEP");
  uint64_t n = 0;
  return v != nullptr && ParseUint(v, &n).ok() && n <= 1000 ? static_cast<int>(n) : 0;
}

// takeover's step before tgtd starts: TakeOverSlot, with what it did said.
// kExitOk, or the exit code of a refused takeover (nothing was started).
int TakeOverBeforeStart(const Args& args, const Options& engine) {
  if (engine.storage_backend != "rados" || engine.rados.gateway.empty()) {
    Complain("takeover needs a gateway slot (storage.backend = rados, storage.rados.gateway = NAME) in " +
             args.config + "; nothing started");
    return kExitUsage;
  }
  Say("dedupv1d: taking over gateway slot " + engine.rados.gateway + (args.force ? " (forced)" : "") +
      (args.force ? "" : "; waiting up to two leases (" + std::to_string(2 * engine.rados.lock_duration_s) +
                             " s) for a holder's lease to end"));
  TakeoverReport report;
  Status s = TakeOverSlot(engine, args.force, &report);
  if (!s.ok()) {
    Complain("takeover refused, nothing started: " + s.ToString());
    return s.IsInvalidArgument() ? kExitUsage : kExitFailed;
  }
  std::fprintf(stdout, "%s", report.ToString().c_str());
  std::fflush(stdout);
  return kExitOk;
}

int Start(const Args& args) {
  Setup setup;
  Status s = LoadSetup(args, &setup);
  if (!s.ok()) {
    Complain("config refused, nothing started: " + s.message());
    return kExitUsage;
  }
  const ServiceOptions& o = setup.options;
  std::string preload, module_desc;
  s = FindModule(args, &preload, &module_desc);
  if (!s.ok()) {
    Complain(s.message());
    return kExitFailed;
  }
  const std::string tgtd = FindProgram("tgtd"), tgtadm = FindProgram("tgtadm");
  if (tgtd.empty() || tgtadm.empty()) {
    Complain("tgtd/tgtadm not found (install Debian's tgt package)");
    return kExitFailed;
  }
  s = Env::Default()->CreateDirs(setup.data_dir);
  if (!s.ok()) {
    Complain("data dir refused, nothing started: cannot create " + setup.data_dir + ": " + s.ToString());
    return kExitUsage;
  }
  std::unique_ptr<FileLock> lock;
  if (!Env::Default()->LockFile(JoinPath(setup.data_dir, kLockFile), &lock).ok()) {
    Complain("another dedupv1d command is working on " + setup.data_dir + "; try again");
    return kExitFailed;
  }

  State old;
  s = LoadState(setup.data_dir, &old);
  if (s.ok()) {
    if (TgtdAlive(old.pid, old.start_time)) {
      if (!old.configured) {
        Complain("a half-configured instance runs: tgtd pid " + std::to_string(old.pid) +
                 " (its start was interrupted; it admits no initiator; `dedupv1d status` says what is missing); "
                 "dedupv1d stop first");
      } else {
        Complain("already running: tgtd pid " + std::to_string(old.pid) + " serves " + old.iqn + " on " +
                 old.portal + " (dedupv1d stop first)");
      }
      return kExitFailed;
    }
    Say("dedupv1d: tgtd pid " + std::to_string(old.pid) + " of the last start is gone (killed or crashed); "
        "starting anew (the engine recovers what was synced)");
    // A killed multi-threaded tgtd shows as a zombie once its main thread
    // exits, while its other threads (one may be in a long fsync) still hold
    // its files and the control socket's lock. Wait for the last of them.
    if (old.control_port >= 0 && ControlPortInUse(old.control_port) &&
        !WaitUntil([&] { return !ControlPortInUse(old.control_port); }, 60)) {
      Complain("the killed tgtd pid " + std::to_string(old.pid) + " still holds control port " +
               std::to_string(old.control_port) + " (" + SocketPath(old.control_port) +
               ") after 60 s: its last threads have not exited; try again");
      return kExitFailed;
    }
    RemoveStaleSocket(old.control_port);
    RemoveState(setup.data_dir);
  } else if (!s.IsNotFound()) {
    Complain("data dir refused, nothing started: unreadable state file, remove it if no tgtd serves " +
             setup.data_dir + ": " + s.ToString());
    return kExitUsage;
  }
  s = PlanLuns(&setup);
  if (!s.ok()) {
    Complain("data dir refused, nothing started: " + s.ToString());
    return kExitUsage;
  }

  const int ctl = static_cast<int>(o.target.control_port);
  if (ControlPortInUse(ctl)) {
    Complain("tgtd control port " + std::to_string(ctl) + " is in use by another tgtd (" + SocketPath(ctl) +
             "); choose another target.control-port / --control-port");
    return kExitFailed;
  }
  RemoveStaleSocket(ctl);
  const Portal portal = ParsePortal(o.target.portal);
  if (int err = TryPortal(portal, false); err != 0) {
    const std::string owner = err == EADDRINUSE ? TcpPortOwner(portal.port) : "";
    Complain("portal " + portal.ToString() + " is not available: " + std::strerror(err) +
             (owner.empty() ? "" : " (held by " + owner + ")") +
             (err == EADDRINUSE ? " (another iSCSI target listens there? choose another target.portal / --portal)" : ""));
    return kExitFailed;
  }
  // Before tgtd starts, so a taken port leaves nothing running. The engine
  // binds it only later (first LUN); the identity check after that catches a
  // port taken in between.
  if (std::string why = std::getenv("DEDUPV1D_TEST_SKIP_MONITOR_PORT_CHECK") ? "" : MonitorPortProblem(o);
      !why.empty()) {
    Complain(why + "; nothing started");
    return kExitFailed;
  }

  if (args.command == "takeover") {
    if (int rc = TakeOverBeforeStart(args, o.engine); rc != kExitOk) return rc;
  }

  const std::string log = JoinPath(setup.data_dir, kLogFile);
  const uint64_t log_start = FileSize(log);
  State st;
  st.control_port = ctl;
  st.portal = portal.ToString();
  st.iqn = o.target.iqn;
  st.config = setup.config_path;
  st.data_dir = setup.data_dir;
  st.module = preload.empty() ? module_desc : preload;
  st.luns = setup.luns;
  st.acl = o.target.initiator_addresses;
  if (st.acl.empty() && o.target.initiator_names.empty()) st.acl.push_back("ALL");
  st.acl.insert(st.acl.end(), o.target.initiator_names.begin(), o.target.initiator_names.end());
  st.chap_user = o.target.chap_user;
  st.discovery_chap = !o.target.chap_user.empty() && o.target.discovery_auth;
  if (o.monitor.enabled) {
    st.monitor_host = o.monitor.host;
    st.monitor_port = o.monitor.port;
  }
  s = SpawnTgtd(tgtd, ctl, st.portal, preload, log, &st.pid);
  if (!s.ok()) {
    Complain("cannot start tgtd: " + s.ToString());
    return kExitFailed;
  }
  // The start time tells our tgtd from a later process reusing the pid.
  WaitUntil([&] {
    auto info = ReadProc(st.pid);
    if (info && fs::path(ReadCmdline0(st.pid)).filename() == "tgtd") {
      st.start_time = info->start_time;
      return true;
    }
    return !info || info->state == 'Z';
  }, 5);
  // Written before configuring (configured = no), so a dedupv1d killed half
  // way leaves a tgtd that status reports and stop finds.
  s = SaveState(st);

  const Tgtadm adm(tgtadm, ctl, args.timeout_s);
  const int kill_after = KillAfterStep();
  int steps = 0;
  std::string failed;  // the step that failed, with why
  auto step_done = [&](const std::string& what) {
    steps++;
    if (steps == kill_after) {
      Complain("test hook: killing dedupv1d after step " + std::to_string(steps) + " (" + what + ")");
      std::fflush(stdout);
      ::raise(SIGKILL);
    }
  };
  auto run_step = [&](const std::string& what, const std::vector<std::string>& a) {
    if (!failed.empty()) return false;
    RunResult r = adm(a);
    if (!r.ok()) failed = what + ": " + Describe(r, args.timeout_s);
    if (r.ok()) step_done(what);
    return r.ok();
  };
  if (!s.ok()) failed = "writing the state file: " + s.ToString();

  if (failed.empty()) {
    const bool up = WaitUntil([&] {
      ReapIfChild(st.pid);
      if (!TgtdAlive(st.pid, st.start_time)) return true;  // gone: stop waiting
      return adm({"--op", "show", "--mode", "sys"}, 5).ok();
    }, kTgtdStartSeconds);
    if (!TgtdAlive(st.pid, st.start_time)) {
      failed = "tgtd exited right after starting";
    } else if (!up) {
      failed = "tgtd did not answer tgtadm within " + std::to_string(kTgtdStartSeconds) + " s";
    }
  }
  if (failed.empty()) {
    RunResult sys = adm({"--op", "show", "--mode", "sys"});
    // "Backing stores:" lists the registered bstypes, one per line
    // ("    dedupv1 (bsoflags sync)").
    bool registered = false;
    std::istringstream lines(sys.output);
    for (std::string line; std::getline(lines, line);) {
      const std::string t = Trim(line);
      registered |= t == "dedupv1" || t.rfind("dedupv1 ", 0) == 0;
    }
    if (!registered) {
      failed = "tgtd has no dedupv1 backing store (module " + module_desc + " not loaded)";
    }
  }
  if (failed.empty()) {
    // tgtd falls back to *:3260 when it cannot bind the portal it was given.
    RunResult portals = adm({"--lld", "iscsi", "--op", "show", "--mode", "portal"});
    if (!portals.ok() || portals.output.find("Portal: " + st.portal + ",") == std::string::npos) {
      failed = "tgtd does not listen on " + st.portal + " (it shows: " + Trim(portals.output) + ")";
    }
  }
  // The order matters: a target without ACL entries admits nobody (tgt's
  // ip_acl/iqn_acl) and is listed to nobody, so everything that protects it
  // (CHAP for logins and for discovery) is in place before the ACL that
  // admits initiators.
  const std::string tid = std::to_string(kTid);
  run_step("creating target " + o.target.iqn,
           {"--lld", "iscsi", "--op", "new", "--mode", "target", "--tid", tid, "-T", o.target.iqn});
  for (const auto& l : st.luns) {
    // ';' separates bsopts items: tgtd splits its parameter string at ','.
    run_step("creating LUN " + std::to_string(l.lun) + " (volume " + l.volume + ")",
             {"--lld", "iscsi", "--op", "new", "--mode", "logicalunit", "--tid", tid, "--lun",
              std::to_string(l.lun), "--bstype", "dedupv1", "--backing-store", setup.config_path, "--bsopts",
              "volume=" + l.volume + ";datadir=" + setup.data_dir});
  }
  if (failed.empty()) {
    failed = VerifyLuns(st.luns, setup.options.engine);
  }
  if (failed.empty() && o.monitor.enabled) {
    failed = MonitorIdentityProblem(o.monitor.host, o.monitor.port, setup.options.engine);
    if (failed.empty()) step_done("checking the monitor");
  }
  if (!o.target.chap_user.empty()) {
    run_step("creating CHAP account " + o.target.chap_user,
             {"--lld", "iscsi", "--op", "new", "--mode", "account", "--user", o.target.chap_user, "--password",
              o.target.chap_password});
    run_step("binding CHAP account " + o.target.chap_user + " to the target",
             {"--lld", "iscsi", "--op", "bind", "--mode", "account", "--tid", tid, "--user", o.target.chap_user});
    if (st.discovery_chap) {
      // No --tid: tgt's global target, which discovery sessions log in to.
      run_step("binding CHAP account " + o.target.chap_user + " to discovery",
               {"--lld", "iscsi", "--op", "bind", "--mode", "account", "--user", o.target.chap_user});
    }
  }
  for (const auto& a : o.target.initiator_addresses.empty() && o.target.initiator_names.empty()
                           ? std::vector<std::string>{"ALL"}
                           : o.target.initiator_addresses) {
    run_step("admitting initiator address " + a,
             {"--lld", "iscsi", "--op", "bind", "--mode", "target", "--tid", tid, "-I", a});
  }
  for (const auto& n : o.target.initiator_names) {
    run_step("admitting initiator name " + n,
             {"--lld", "iscsi", "--op", "bind", "--mode", "target", "--tid", tid, "-Q", n});
  }
  if (failed.empty()) {
    st.configured = true;
    s = SaveState(st);
    if (!s.ok()) failed = "writing the state file: " + s.ToString();
    else step_done("marking the start complete");
  }
  if (failed.empty() && !args.pid_file.empty()) {
    // Last, so a service manager that reads it finds a complete instance.
    s = WriteFileAtomically(Env::Default(), args.pid_file, std::to_string(st.pid) + "\n");
    if (!s.ok()) failed = "writing the pid file " + args.pid_file + ": " + s.ToString();
  }

  if (!failed.empty()) {
    Complain("start failed: " + failed);
    PrintTgtdLog(log, log_start);
    Complain("tearing down tgtd pid " + std::to_string(st.pid));
    StopTgtd(st, adm, /*quiet=*/true);
    ReapIfChild(st.pid);
    RemoveState(setup.data_dir);
    Complain("nothing is running");
    return kExitFailed;
  }
  Say("dedupv1d: started tgtd pid " + std::to_string(st.pid) + " with module " + module_desc + ", log " + log);
  if (args.command == "takeover") {
    // The engine in tgtd opened the slot as its next incarnation; the
    // takeover is counted here (a cosmetic count: a failure is only said).
    GatewayRecord record;
    s = CountTakeover(o.engine, &record);
    if (s.ok()) {
      Say("gateway slot " + o.engine.rados.gateway + ": incarnation " + std::to_string(record.incarnation) +
          ", takeover " + std::to_string(record.takeovers));
    } else {
      Complain("the takeover was not counted in the slot's registry record: " + s.ToString());
    }
  }
  RunResult shown = adm({"--lld", "iscsi", "--op", "show", "--mode", "target"});
  PrintStatus(st, ParseTargets(shown.output), {});
  return kExitOk;
}

// Where to find an instance: the data dir (and control port) of |args|.
struct Where {
  std::string data_dir;
  int control_port = -1;  // from the config, -1 if it does not validate
};

// The state of the instance serving the data dir of |args|. NotFound when
// none runs (a stale state file is removed and its message says so);
// InvalidArgument when the data dir cannot be told; others for an
// unreadable state file.
Status FindInstance(const Args& args, Where* where, State* st) {
  Setup setup;
  Status s = LoadSetup(args, &setup);
  if (s.ok()) {
    where->data_dir = setup.data_dir;
    where->control_port = static_cast<int>(setup.options.target.control_port);
  } else {
    // Still find (and stop) an instance whose config was edited since.
    where->data_dir = RawDataDir(args);
    Complain("warning: " + s.message());
    if (where->data_dir.empty()) return Status::InvalidArgument("cannot tell the data dir from " + args.config);
  }
  s = LoadState(where->data_dir, st);
  if (!s.ok()) return s;
  if (!TgtdAlive(st->pid, st->start_time)) {
    RemoveStaleSocket(st->control_port);
    RemoveState(where->data_dir);
    return Status::NotFound("tgtd pid " + std::to_string(st->pid) + " of the last start is gone (killed or "
                            "crashed); its state file is removed");
  }
  return Status::OK();
}

// Says that no instance serves the data dir, and why that might surprise:
// a tgtd on the configured control port serves another data dir.
int NotRunning(const Args& args, const Where& where, const Status& why, const char* verb) {
  std::string msg = "dedupv1d: not running: no instance serves data dir " + where.data_dir + " (" +
                    why.message() + ")";
  if (verb != nullptr) msg += "; nothing " + std::string(verb);
  Say(msg);
  if (where.control_port >= 0 && ControlPortInUse(where.control_port)) {
    Say("dedupv1d: note: a tgtd holds control port " + std::to_string(where.control_port) + " (" +
        SocketPath(where.control_port) + "): an instance of another data dir? dedupv1d finds an instance by the "
        "data dir of --config " + args.config + " (a relative data-dir is relative to the config file)");
  }
  return kExitNotRunning;
}

// Stops the instance of |args|' data dir. |admin|: an admin's `dedupv1d
// stop` (a gateway slot's heartbeat then says "stopped" and watchers leave it
// alone); otherwise the cleanup of a failed takeover, which must leave the
// slot to the watchers.
int StopInstance(const Args& args, bool admin) {
  Where where;
  State st;
  Status s = FindInstance(args, &where, &st);
  if (s.IsNotFound()) {
    if (args.pid_file.empty()) return NotRunning(args, where, s, "stopped");
    // A service manager's stop (--pid-file: the unit's ExecStop) of an
    // instance already gone (stopped by hand, crashed) has nothing left to
    // do: success, so the unit is not marked failed (and restarted).
    std::error_code ec;
    fs::remove(args.pid_file, ec);
    NotRunning(args, where, s, "stopped");
    return kExitOk;
  }
  if (s.IsInvalidArgument()) {
    Complain(s.message());
    return kExitUsage;
  }
  if (!s.ok()) {
    Complain("data dir refused: unreadable state file, remove it if no tgtd serves " + where.data_dir + ": " +
             s.ToString());
    return kExitUsage;
  }
  std::unique_ptr<FileLock> lock;
  if (!Env::Default()->LockFile(JoinPath(where.data_dir, kLockFile), &lock).ok()) {
    Complain("another dedupv1d command is working on " + where.data_dir + "; try again");
    return kExitFailed;
  }
  const Tgtadm adm = TgtadmFor(st.control_port, args.timeout_s);
  // The module's close is an admin's stop: a gateway slot's heartbeat says
  // "stopped" and no watcher takes it over (target/admin_stop_marker.h).
  const std::string marker = JoinPath(where.data_dir, kAdminStopMarker);
  if (admin) {
    Status marked = WriteFileAtomically(Env::Default(), marker, "");
    if (!marked.ok()) Complain("warning: " + marked.ToString() + ": a gateway slot will look down to its watchers");
  }
  bool clean = StopTgtd(st, adm);
  std::error_code ec;
  fs::remove(marker, ec);
  RemoveState(where.data_dir);
  if (!args.pid_file.empty()) fs::remove(args.pid_file, ec);
  return clean ? kExitOk : kExitFailed;
}

int Stop(const Args& args) { return StopInstance(args, /*admin=*/true); }

int StatusCommand(const Args& args) {
  Where where;
  State st;
  Status s = FindInstance(args, &where, &st);
  if (s.IsNotFound()) return NotRunning(args, where, s, nullptr);
  if (s.IsInvalidArgument()) {
    Complain(s.message());
    return kExitUsage;
  }
  if (!s.ok()) {
    Complain("data dir refused: unreadable state file, remove it if no tgtd serves " + where.data_dir + ": " +
             s.ToString());
    return kExitUsage;
  }
  const Tgtadm adm = TgtadmFor(st.control_port, 30);
  RunResult shown = adm({"--lld", "iscsi", "--op", "show", "--mode", "target"});
  RunResult sys = adm({"--op", "show", "--mode", "sys"});
  if (!shown.ok() || !sys.ok()) {
    Complain("tgtd pid " + std::to_string(st.pid) + " runs but does not answer on control port " +
             std::to_string(st.control_port) + ": " + Describe(shown.ok() ? sys : shown, 30));
    return kExitFailed;
  }
  const std::vector<ShownTarget> targets = ParseTargets(shown.output);
  const std::vector<std::string> missing = MissingPieces(st, targets, sys.output);
  PrintStatus(st, targets, missing);
  return missing.empty() ? kExitOk : kExitFailed;
}

// ---------------------------------------------------------------------------
// Gateway slots: cluster and watch.

// The setup of a command that reads the store from RADOS: a rados store,
// with a gateway slot if |slot|. kExitOk, or the exit code after saying why.
int LoadRadosSetup(const Args& args, bool slot, Setup* setup) {
  Status s = LoadSetup(args, setup);
  if (!s.ok()) {
    Complain("config refused: " + s.message());
    return kExitUsage;
  }
  const Options& e = setup->options.engine;
  if (e.storage_backend != "rados" || (slot && e.rados.gateway.empty())) {
    Complain(args.command + " needs " +
             (slot ? "a gateway slot (storage.backend = rados, storage.rados.gateway = NAME)"
                   : "storage.backend = rados") +
             " in " + setup->config_path);
    return kExitUsage;
  }
  return kExitOk;
}

// The store's gateway slots from RADOS (no engine opened).
int ClusterCommand(const Args& args) {
  Setup setup;
  if (int rc = LoadRadosSetup(args, /*slot=*/false, &setup); rc != kExitOk) return rc;
  std::shared_ptr<RadosCluster> cluster;
  ClusterView view;
  Status s = RadosCluster::Shared(setup.options.engine.rados, &cluster);
  if (s.ok()) s = ReadClusterView(cluster, &view);
  if (!s.ok()) {
    Complain("cannot read the gateway slots: " + s.ToString());
    return kExitFailed;
  }
  std::vector<ShardKeyCounts> shard_keys;
  if (args.shards) {
    std::vector<std::string> names;
    for (const SlotView& slot : view.slots) names.push_back(slot.name);
    s = CountStoreShardKeys(cluster.get(), setup.options.engine.chunk_index.rados_shards, names, &shard_keys);
    if (!s.ok()) {
      Complain("cannot count the chunk index shards' keys: " + s.ToString());
      return kExitFailed;
    }
  }
  if (args.json) {
    nlohmann::ordered_json doc = ClusterViewJson(view);
    if (args.shards) doc["shard_keys"] = ShardKeysJson(shard_keys);
    Say(doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  } else {
    std::fprintf(stdout, "%s", FormatClusterView(view).c_str());
    if (args.shards) std::fprintf(stdout, "%s", FormatShardKeys(shard_keys).c_str());
  }
  return kExitOk;
}

volatile sig_atomic_t g_watch_stop = 0;
void OnWatchStopSignal(int) { g_watch_stop = 1; }

// Sleeps |seconds| unless a stop signal comes first (checked every 100 ms).
void WatchSleep(int seconds) {
  for (int i = 0; i < seconds * 10 && !g_watch_stop; i++) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

// `dedupv1d takeover` with the watcher's config and options, as a child
// (the admin path, unchanged). Its output is passed on. True if it started
// the instance.
bool RunTakeover(const Args& args, const Setup& setup) {
  std::error_code ec;
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  std::vector<std::string> argv = {ec ? "dedupv1d" : self, "takeover", "--config", setup.config_path,
                                   "--timeout", std::to_string(args.timeout_s)};
  for (const auto& [opt, value] : std::vector<std::pair<std::string, std::string>>{
           {"--data-dir", args.data_dir}, {"--portal", args.portal}, {"--control-port", args.control_port},
           {"--module", args.module}}) {
    if (!value.empty()) argv.insert(argv.end(), {opt, value});
  }
  for (const auto& v : args.volumes) argv.insert(argv.end(), {"--volume", v});
  // Bounded: two leases of waiting, then tgtd's start with a few tgtadm
  // calls (each bounded by --timeout).
  const int bound = 2 * static_cast<int>(setup.options.engine.rados.lock_duration_s) + 4 * args.timeout_s + 60;
  const auto began = Clock::now();
  RunResult r = Run(argv, bound);
  const double s = std::chrono::duration<double>(Clock::now() - began).count();
  std::istringstream out(r.output);
  for (std::string line; std::getline(out, line);) Say("  | " + line);
  if (r.ok()) {
    Say("dedupv1d watch: took gateway slot " + setup.options.engine.rados.gateway + " over in " +
        std::to_string(static_cast<int>(s)) + " s");
    return true;
  }
  Complain("watch: takeover of " + setup.options.engine.rados.gateway + " failed (" + Describe(r, bound) +
           "); another watcher may have won the slot's lock; watching on");
  if (r.timed_out) {
    // The killed child may have left a tgtd that holds the slot's lock but
    // admits no initiator (its start never finished): stop it, or the slot
    // would look served for good.
    const int stopped = StopInstance(args, /*admin=*/false);
    if (stopped != kExitOk && stopped != kExitNotRunning) {
      Complain("watch: the instance the timed-out takeover may have started did not stop cleanly");
    }
  }
  return false;
}

int Watch(const Args& args) {
  Setup setup;
  if (int rc = LoadRadosSetup(args, /*slot=*/true, &setup); rc != kExitOk) return rc;
  const Options& e = setup.options.engine;
  const int interval = args.interval_s > 0 ? args.interval_s : std::max(1, static_cast<int>(e.rados.lock_duration_s / 3));
  std::shared_ptr<RadosCluster> cluster;
  Status s = RadosCluster::Shared(e.rados, &cluster);
  if (!s.ok()) {
    Complain("watch: " + s.ToString());
    return kExitFailed;
  }
  struct sigaction sa {};
  sa.sa_handler = OnWatchStopSignal;  // no SA_RESTART: a wait returns at once
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  Say("dedupv1d watch: gateway slot " + e.rados.gateway + " of store " + e.rados.store + ", a look every " +
      std::to_string(interval) + " s (pid " + std::to_string(::getpid()) + ")");
  // A slot is taken over once its lock was free for a whole lease with a
  // still heartbeat: a live holder beats every third of a lease.
  GatewayWatch judge(std::chrono::milliseconds(1000ull * e.rados.lock_duration_s));
  std::string said;
  int looks = 0, rc = kExitOk;
  while (!g_watch_stop) {
    SlotView slot;
    std::string why;
    WatchVerdict verdict = WatchVerdict::kSuspect;
    s = ReadSlotView(cluster, e.rados.gateway, &slot);
    if (!s.ok()) {
      why = "cannot read the slot: " + s.ToString();
    } else {
      verdict = judge.Judge(slot, &why);
    }
    if (why != said) Say("dedupv1d watch: " + e.rados.gateway + ": " + why);
    said = why;
    looks++;
    if (verdict == WatchVerdict::kTakeOver) {
      rc = RunTakeover(args, setup) ? kExitOk : kExitFailed;
      judge.Reset();
      said.clear();
      if (args.once) break;
    }
    // --once looks until a verdict, at most long enough for the lease-long gap.
    const int max_looks = 2 + static_cast<int>((e.rados.lock_duration_s + interval - 1) / interval);
    if (args.once && (verdict != WatchVerdict::kSuspect || looks >= max_looks)) break;
    WatchSleep(interval);
  }
  Say("dedupv1d watch: " + std::string(g_watch_stop ? "stopped by a signal" : "done") + " after " +
      std::to_string(looks) + " looks");
  return rc;
}

// ---------------------------------------------------------------------------
// volume add / grow: the config first, then the running instance.

// Bytes the data dir's file system has free for root, or 0 if unknown.
uint64_t FreeBytes(const std::string& dir) {
  struct statvfs v;
  if (::statvfs(dir.c_str(), &v) != 0) return 0;
  return static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
}

std::string SizeText(uint64_t bytes) {
  std::ostringstream o;
  o << bytes << " bytes (" << std::fixed << std::setprecision(1)
    << static_cast<double>(bytes) / static_cast<double>(1ull << 30) << " GiB)";
  return o.str();
}

// Whether the store's volume table holds volume |name| with at least |size|
// bytes (an engine applied the change).
bool VolumeTableHolds(const Setup& setup, const std::string& name, uint64_t size) {
  std::vector<VolumeRecord> records;
  std::unique_ptr<StoreEnv> store;
  Status s = StoreEnv::Open(setup.options.engine, Env::Default(), &store);
  if (s.ok()) s = ReadVolumeTable(store->env(), VolumeTablePath(setup.data_dir), &records);
  if (!s.ok()) return false;
  return std::any_of(records.begin(), records.end(),
                     [&](const VolumeRecord& r) { return r.name == name && r.size >= size; });
}

// Whether target kTid of |targets| (tgtadm's show) has a dedupv1 LUN |lun|.
bool HasDedupv1Lun(const std::vector<ShownTarget>& targets, int lun) {
  for (const auto& t : targets) {
    if (t.tid != kTid) continue;
    for (const auto& l : t.luns) {
      if (l.lun == lun && l.bstype == "dedupv1") return true;
    }
  }
  return false;
}

// The same, asking the tgtd behind |adm|.
bool TgtdHasDedupv1Lun(const Tgtadm& adm, int lun) {
  RunResult shown = adm({"--lld", "iscsi", "--op", "show", "--mode", "target"});
  return shown.ok() && HasDedupv1Lun(ParseTargets(shown.output), lun);
}

// Drops the data of |name| in the engine: through a LUN of the running
// tgtd (in the background there; asked until it is done, bounded by
// --timeout), else, when no tgtd holds the engine open, in an engine of our
// own. "" when done, else why not.
std::string DropVolumeData(const Args& args, const Setup& setup, const State* st, const Tgtadm* adm,
                           const std::string& name) {
  if (st != nullptr && !st->luns.empty()) {
    const std::string lun = std::to_string(st->luns.front().lun);
    const auto until = Clock::now() + std::chrono::seconds(args.timeout_s);
    for (;;) {
      RunResult r = (*adm)({"--lld", "iscsi", "--op", "update", "--mode", "logicalunit", "--tid", std::to_string(kTid),
                            "--lun", lun, "--params", "dedupv1_drop=" + name});
      if (r.ok()) return "";
      if (r.output.find("still active") == std::string::npos) return Describe(r, args.timeout_s);
      if (Clock::now() > until) {
        return "the drop still runs in tgtd after " + std::to_string(args.timeout_s) +
               " s (run the command again to see it finish)";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::OpenConfigFile(setup.config_path, args.data_dir.empty() ? "" : setup.data_dir,
                                         Env::Default(), &sys);
  if (s.ok()) s = sys->DropVolume(name);
  if (sys) {
    Status closed = sys->Close();
    if (s.ok()) s = closed;
  }
  return s.ok() ? "" : s.ToString();
}

// `dedupv1d volume remove NAME [--force]`: the volume's LUN is deleted (not
// while initiators are logged in to the target, unless --force), then its
// config line is removed, then its data is dropped (unmapped whole: its
// chunks become garbage GC reclaims; its line in the volume table stays, ids
// are never reused). A volume only the volume table knows (its line removed
// by hand, or by an interrupted remove) is dropped the same way, so running
// the command again finishes an interrupted one.
int RemoveVolume(const Args& args, const Setup& setup) {
  const std::string& name = args.volume_name;
  bool configured = false;
  for (const auto& v : setup.options.engine.volumes) configured |= v.name == name;
  if (!configured && !VolumeTableHolds(setup, name, 0)) {
    Complain("no volume named '" + name + "' in " + setup.config_path + " (volumes: " +
             VolumeNames(setup.options.engine.volumes) + ") nor in the store's volume table; nothing changed");
    return kExitUsage;
  }
  if (configured && setup.options.engine.volumes.size() == 1) {
    Complain("volume " + name + " is the only volume of " + setup.config_path +
             ", and a config needs one: add another first; nothing changed");
    return kExitUsage;
  }
  State st;
  const bool running = InstanceRuns(setup.data_dir, &st);
  const Tgtadm adm = TgtadmFor(st.control_port, args.timeout_s);
  const std::string log = JoinPath(setup.data_dir, kLogFile);
  const uint64_t log_start = FileSize(log);
  auto served = std::find_if(st.luns.begin(), st.luns.end(), [&](const Lun& l) { return l.volume == name; });
  if (running && served != st.luns.end()) {
    RunResult shown = adm({"--lld", "iscsi", "--op", "show", "--mode", "target"});
    const std::vector<ShownTarget> targets = ParseTargets(shown.output);
    int sessions = 0;
    for (const auto& t : targets) {
      if (t.tid == kTid) sessions = t.connections;
    }
    if (!shown.ok()) {
      Complain("cannot tell who is logged in (" + Describe(shown, args.timeout_s) + "); nothing changed");
      return kExitFailed;
    }
    if (sessions > 0 && !args.force) {
      Complain(std::to_string(sessions) + " initiator session(s) are logged in to " + st.iqn +
               " and may use LUN " + std::to_string(served->lun) + " (volume " + name +
               "): log them out first, or pass --force (their I/O to that LUN then fails); nothing changed");
      return kExitUsage;
    }
    const int lun = served->lun;
    RunResult r;
    if (HasDedupv1Lun(targets, lun)) {
      r = adm({"--lld", "iscsi", "--op", "delete", "--mode", "logicalunit", "--tid", std::to_string(kTid),
               "--lun", std::to_string(lun)});
    } else {
      r.exit_code = 0;  // an interrupted run deleted it before it could tell the state file
    }
    if (!r.ok()) {
      Complain("deleting LUN " + std::to_string(lun) + " (volume " + name + ") failed: " + Describe(r, args.timeout_s) +
               "; nothing changed");
      PrintTgtdLog(log, log_start);
      return kExitFailed;
    }
    st.luns.erase(served);
    Status saved = SaveState(st);
    if (!saved.ok()) Complain("warning: the state file was not updated: " + saved.ToString());
    Say("dedupv1d: LUN " + std::to_string(lun) + " (volume " + name + ") deleted");
  }
  if (configured) {
    std::string old_text, new_text;
    Status s = ReadFileToString(Env::Default(), setup.config_path, &old_text);
    if (s.ok()) s = RemoveVolumeLine(old_text, name, &new_text);
    if (s.ok()) s = ReplaceConfigFile(Env::Default(), setup.config_path, new_text);
    if (!s.ok()) {
      Complain("the config line of volume " + name + " was not removed: " + s.ToString() +
               "; its data is kept (run the command again)");
      return kExitFailed;
    }
    Say("dedupv1d: " + setup.config_path + ": volume " + name + "'s line removed");
  }
  const std::string failed = DropVolumeData(args, setup, running ? &st : nullptr, &adm, name);
  if (!failed.empty()) {
    Complain("the data of volume " + name + " was not dropped: " + failed +
             " (it is no longer served; run the command again to drop it)");
    PrintTgtdLog(log, log_start);
    return kExitFailed;
  }
  Say("dedupv1d: volume " + name + " removed: its data is dropped, and garbage collection reclaims its chunks");
  return kExitOk;
}

// Whether |text|, an admin command's edit of the config at
// setup.config_path, is a valid config as a whole (name characters, a size
// that is a multiple of 512 bytes, a policy the store's scope takes, ...),
// line numbers and all.
Status ValidateEditedConfig(const Args& args, const Setup& setup, const std::string& text) {
  Config edited;
  Setup checked;
  checked.config_path = setup.config_path;
  Status s = Config::Parse(text, setup.config_path, &edited);
  if (s.ok()) s = SetupFromConfig(args, std::move(edited), &checked);
  return s;
}

// `dedupv1d volume policy NAME P`: the config line gets the policy
// (SetVolumePolicy; the whole config validated first, so cluster scope's
// refusal of anything but inline names itself), then the running instance
// applies the config to the volume's LUN (dedupv1_resize=1 applies the
// volume's whole line: its size and its policy) for the runs claimed after
// it; data already stored stays where it is. If the instance refuses (or
// does not answer), the config keeps the new policy and the command says to
// run it again: whether tgtd applied it cannot be told from outside. Run
// again after an interruption, it finishes what the config already says.
int VolumePolicyCommand(const Args& args, const Setup& setup) {
  const std::string& name = args.volume_name;
  DedupPolicy policy = DedupPolicy::kInline;
  Status s = ParseDedupPolicy(name, args.volume_policy, &policy);
  if (!s.ok()) {
    Complain(s.message() + "; nothing changed");
    return kExitUsage;
  }
  const VolumeOptions* current = nullptr;
  for (const auto& v : setup.options.engine.volumes) {
    if (v.name == name) current = &v;
  }
  if (current == nullptr) {
    Complain("no volume named '" + name + "' in " + setup.config_path + " (volumes: " +
             VolumeNames(setup.options.engine.volumes) + "); nothing changed");
    return kExitUsage;
  }
  std::string old_text, new_text;
  s = ReadFileToString(Env::Default(), setup.config_path, &old_text);
  if (s.ok()) s = SetVolumePolicy(old_text, name, DedupPolicyName(policy), &new_text);
  if (!s.ok()) {
    Complain("cannot edit volume " + name + "'s line in " + setup.config_path + ": " + s.ToString() +
             "; nothing changed");
    return kExitFailed;
  }
  s = ValidateEditedConfig(args, setup, new_text);
  if (!s.ok()) {
    Complain("refused, nothing changed: the config would not validate: " + s.message());
    return kExitUsage;
  }
  // Decided on the text read under the data dir's lock: another command may
  // have changed the line since |setup| was loaded.
  const bool edit = new_text != old_text;
  if (edit) {
    s = ReplaceConfigFile(Env::Default(), setup.config_path, new_text);
    if (!s.ok()) {
      Complain("cannot write " + setup.config_path + ": " + s.ToString() + "; nothing changed");
      return kExitFailed;
    }
    Say("dedupv1d: " + setup.config_path + ": volume " + name + " has policy " + DedupPolicyName(policy));
  }
  State st;
  const Lun* served = nullptr;
  if (InstanceRuns(setup.data_dir, &st)) {
    for (const auto& l : st.luns) {
      if (l.volume == name) served = &l;
    }
  }
  if (served == nullptr) {
    Say("dedupv1d: no instance serves volume " + name + " of " + setup.data_dir + ": its writes have policy " +
        DedupPolicyName(policy) + " from its next start");
    return kExitOk;
  }
  const int lun = served->lun;
  const Tgtadm adm = TgtadmFor(st.control_port, args.timeout_s);
  const std::string log = JoinPath(setup.data_dir, kLogFile);
  const uint64_t log_start = FileSize(log);
  RunResult r = adm({"--lld", "iscsi", "--op", "update", "--mode", "logicalunit", "--tid", std::to_string(kTid),
                     "--lun", std::to_string(lun), "--params", "dedupv1_resize=1"});
  if (!r.ok()) {
    // The config keeps the new policy: tgtd may have applied it before the
    // answer was lost (a timeout), and the policy is nowhere else to tell.
    Complain("applying the policy to LUN " + std::to_string(lun) + " (volume " + name + ") failed: " +
             Describe(r, args.timeout_s) + "; the config says policy " + DedupPolicyName(policy) +
             ", and the LUN may or may not use it yet: run the command again (or restart) to apply it");
    PrintTgtdLog(log, log_start);
    return kExitFailed;
  }
  Say("dedupv1d: volume " + name + " (LUN " + std::to_string(lun) + ") has policy " + DedupPolicyName(policy) +
      " for the writes that follow; data already stored stays where it is");
  return kExitOk;
}

// `dedupv1d volume add|grow NAME SIZE`: edits the config (ReplaceConfigFile:
// atomic, owner and mode kept), then, if an instance serves the data dir,
// applies it there while the other LUNs keep serving: add creates the
// volume's LUN (the module adds the volume to the open engine), grow asks
// the volume's LUN to resize (the engine grows it, then the LU's capacity
// follows with a unit attention). If the running instance refuses, the old
// config is put back. Serialized with every other dedupv1d command on the
// data dir by its lock. Run again after an interruption, it finishes what
// the config already says.
int VolumeCommand(const Args& args) {
  Setup setup;
  Status s = LoadSetup(args, &setup);
  if (!s.ok()) {
    Complain("config refused, nothing changed: " + s.message());
    return kExitUsage;
  }
  const std::string& name = args.volume_name;
  uint64_t size = 0;
  if (args.volume_action != "remove" && args.volume_action != "policy" && !ParseSize(args.volume_size, &size).ok()) {
    Complain("size '" + args.volume_size + "' is not a size (e.g. 100G, 512M, 2T); nothing changed");
    return kExitUsage;
  }
  std::unique_ptr<FileLock> lock;
  if (!Env::Default()->CreateDirs(setup.data_dir).ok() ||
      !Env::Default()->LockFile(JoinPath(setup.data_dir, kLockFile), &lock).ok()) {
    Complain("another dedupv1d command is working on " + setup.data_dir + "; try again (nothing changed)");
    return kExitFailed;
  }
  if (args.volume_action == "remove") return RemoveVolume(args, setup);
  if (args.volume_action == "policy") return VolumePolicyCommand(args, setup);
  std::string old_text;
  s = ReadFileToString(Env::Default(), setup.config_path, &old_text);
  if (!s.ok()) {
    Complain("cannot read " + setup.config_path + ": " + s.ToString());
    return kExitFailed;
  }
  const VolumeOptions* current = nullptr;
  for (const auto& v : setup.options.engine.volumes) {
    if (v.name == name) current = &v;
  }
  std::string new_text = old_text;
  const bool add = args.volume_action == "add";
  DedupPolicy policy = DedupPolicy::kInline;
  if (add && !args.volume_policy.empty()) {
    s = ParseDedupPolicy(name, args.volume_policy, &policy);
    if (!s.ok()) {
      Complain(s.message() + "; nothing changed");
      return kExitUsage;
    }
  }
  if (add && current != nullptr && !args.volume_policy.empty() && current->policy != policy) {
    Complain("volume " + name + " exists already in " + setup.config_path + " with policy " +
             DedupPolicyName(current->policy) + " (to change it: dedupv1d volume policy); nothing changed");
    return kExitUsage;
  }
  if (add && current != nullptr && current->size != size) {
    Complain("volume " + name + " exists already in " + setup.config_path + " with " + SizeText(current->size) +
             " (to grow it: dedupv1d volume grow); nothing changed");
    return kExitUsage;
  }
  if (add && current == nullptr && VolumeTableHolds(setup, name, 0)) {
    // A removed volume (or one left out of the config) keeps its table line
    // and id; the same name again would get that id back, and a size below
    // the recorded one would be refused as a shrink at the next start.
    Complain("volume " + name + " is in the store's volume table already (a volume removed or left out of " +
             setup.config_path + "): names are not reused, choose another; to serve that volume again, put its "
             "line back with its recorded size (dedupv1_debug volumes lists it); nothing changed");
    return kExitUsage;
  }
  if (!add && current == nullptr) {
    Complain("no volume named '" + name + "' in " + setup.config_path + " (volumes: " +
             VolumeNames(setup.options.engine.volumes) + "); nothing changed");
    return kExitUsage;
  }
  if (!add && size < current->size) {
    Complain("volume " + name + " is " + SizeText(current->size) + ": shrinking it to " + SizeText(size) +
             " is refused (its data beyond that would be lost); nothing changed");
    return kExitUsage;
  }
  const uint64_t added_bytes = current == nullptr ? size : size - current->size;
  if (added_bytes > 0) {
    if (add) {
      new_text = AddVolumeLine(old_text, name, args.volume_size,
                               policy == DedupPolicy::kInline ? "" : DedupPolicyName(policy));
    } else if (s = SetVolumeSize(old_text, name, args.volume_size, &new_text); !s.ok()) {
      Complain("cannot find volume " + name + "'s line in " + setup.config_path + ": " + s.message());
      return kExitFailed;
    }
    s = ValidateEditedConfig(args, setup, new_text);
    if (!s.ok()) {
      Complain("refused, nothing changed: the config would not validate: " + s.message());
      return kExitUsage;
    }
    const uint64_t free_bytes = FreeBytes(setup.data_dir);
    if (!args.overcommit && setup.options.engine.storage_backend == "local" && free_bytes > 0 &&
        added_bytes > free_bytes) {
      Complain(std::string(add ? "adding volume " : "growing volume ") + name + (add ? " of " : " by ") +
               SizeText(added_bytes) + " is more than the " + SizeText(free_bytes) + " free in " + setup.data_dir +
               "; add space, or pass --overcommit to provision it thin (then watch the free space); nothing changed");
      return kExitUsage;
    }
  }

  State st;
  const bool running = InstanceRuns(setup.data_dir, &st);
  if (added_bytes > 0) {
    s = ReplaceConfigFile(Env::Default(), setup.config_path, new_text);
    if (!s.ok()) {
      Complain("cannot write " + setup.config_path + ": " + s.ToString() + "; nothing changed");
      return kExitFailed;
    }
    Say("dedupv1d: " + setup.config_path + ": volume = " + name + " " + args.volume_size +
        (add && policy != DedupPolicy::kInline ? std::string(" policy=") + DedupPolicyName(policy) : ""));
  }
  if (!running) {
    Say("dedupv1d: no instance serves " + setup.data_dir + ": the volume is " + (add ? "served" : "this size") +
        " from the next start");
    return kExitOk;
  }
  const Tgtadm adm = TgtadmFor(st.control_port, args.timeout_s);
  const std::string log = JoinPath(setup.data_dir, kLogFile);
  const uint64_t log_start = FileSize(log);
  Lun* served = nullptr;
  for (auto& l : st.luns) {
    if (l.volume == name) served = &l;
  }
  RunResult r;
  std::string what;
  Lun lun{0, name, size};
  if (add && served == nullptr) {
    // Its LUN is its id, as at start: the engine's rule on a copy of the table.
    Setup next;
    Args next_args = args;
    next_args.volumes = {name};
    s = LoadSetup(next_args, &next);
    if (s.ok()) s = PlanLuns(&next);
    if (!s.ok() || next.luns.size() != 1) {
      Complain("cannot tell volume " + name + "'s LUN: " + s.ToString() + "; the config keeps it, restart to serve it");
      return kExitFailed;
    }
    lun.lun = next.luns[0].lun;
    what = "creating LUN " + std::to_string(lun.lun) + " (volume " + name + ")";
    if (TgtdHasDedupv1Lun(adm, lun.lun)) {
      // An earlier run created it and was stopped before it could say so
      // in the state file: adopt it.
      what = "adopting LUN " + std::to_string(lun.lun) + " (volume " + name + "), created by an interrupted run";
      Say("dedupv1d: " + what);
      r.exit_code = 0;
    } else {
      r = adm({"--lld", "iscsi", "--op", "new", "--mode", "logicalunit", "--tid", std::to_string(kTid), "--lun",
               std::to_string(lun.lun), "--bstype", "dedupv1", "--backing-store", setup.config_path, "--bsopts",
               "volume=" + name + ";datadir=" + setup.data_dir});
    }
  } else if (!add && served != nullptr && served->size < size) {
    lun = *served;
    lun.size = size;
    what = "resizing LUN " + std::to_string(lun.lun) + " (volume " + name + ")";
    r = adm({"--lld", "iscsi", "--op", "update", "--mode", "logicalunit", "--tid", std::to_string(kTid), "--lun",
             std::to_string(lun.lun), "--params", "dedupv1_resize=1"});
  } else if (!add && served == nullptr) {
    Say("dedupv1d: the running instance does not serve volume " + name + " (started with --volume): it is this "
        "size when it is served");
    return kExitOk;
  } else {
    Say("dedupv1d: volume " + name + " is served as LUN " + std::to_string(served->lun) + " with " +
        SizeText(served->size) + " already; nothing to do");
    return kExitOk;
  }
  if (!r.ok()) {
    Complain(what + " failed: " + Describe(r, args.timeout_s));
    PrintTgtdLog(log, log_start);
    if (added_bytes > 0 && VolumeTableHolds(setup, name, size)) {
      // The engine got as far as its volume table (the answer was lost: a
      // timeout, tgtd killed): the config must keep saying so, or the next
      // start would refuse the table's size as a shrink.
      Complain("the store's volume table already holds volume " + name + " with " + SizeText(size) +
               ": the config keeps it; run the command again (or restart) to finish");
    } else if (added_bytes > 0) {
      Status back = ReplaceConfigFile(Env::Default(), setup.config_path, old_text);
      Complain(back.ok() ? "the config is as it was" : "the config could not be put back: " + back.ToString());
    }
    return kExitFailed;
  }
  if (served != nullptr) {
    *served = lun;
  } else {
    st.luns.push_back(lun);
  }
  std::sort(st.luns.begin(), st.luns.end(), [](const Lun& a, const Lun& b) { return a.lun < b.lun; });
  s = SaveState(st);
  if (!s.ok()) Complain("warning: the state file was not updated: " + s.ToString());
  Say("dedupv1d: volume " + name + (add ? " is served as LUN " : " grew to " + SizeText(size) + " on LUN ") +
      std::to_string(lun.lun) + (add ? " (" + SizeText(size) + ")" : "; initiators see it after a rescan"));
  return kExitOk;
}

// `dedupv1d index grow [SIZE]`: asks the running instance's chunk index
// table to grow online (tgtadm --params dedupv1_index_grow=BYTES on one of its
// LUNs; index/growable_hash_table.h) while every LUN serves. The growth runs
// in tgtd; --wait follows it through the monitor until it is done. Without a
// running instance nothing can grow: the config's chunk-index.size, raised,
// grows the table at the next start.
int IndexCommand(const Args& args) {
  Setup setup;
  Status s = LoadSetup(args, &setup);
  if (!s.ok()) {
    Complain("config refused, nothing changed: " + s.message());
    return kExitUsage;
  }
  uint64_t min_bytes = 0;
  if (!args.index_size.empty() && !ParseSize(args.index_size, &min_bytes).ok()) {
    Complain("index grow: SIZE '" + args.index_size + "' is not a size (e.g. 4G); nothing changed");
    return kExitUsage;
  }
  if (setup.options.engine.chunk_index.table_backend != "disk") {
    Complain("the chunk index of storage.backend = " + setup.options.engine.storage_backend +
             " is sharded over RADOS omap objects and has no fixed size to grow; nothing changed");
    return kExitUsage;
  }
  State st;
  if (!InstanceRuns(setup.data_dir, &st) || st.luns.empty()) {
    Complain("no instance serves " + setup.data_dir + ": start it (the table grows while it serves), or raise "
             "chunk-index.size in " + setup.config_path + " (the next start grows the table to it)");
    return kExitNotRunning;
  }
  const Tgtadm adm = TgtadmFor(st.control_port, args.timeout_s);
  const std::string log = JoinPath(setup.data_dir, kLogFile);
  const uint64_t log_start = FileSize(log);
  RunResult r = adm({"--lld", "iscsi", "--op", "update", "--mode", "logicalunit", "--tid", std::to_string(kTid),
                     "--lun", std::to_string(st.luns.front().lun), "--params",
                     "dedupv1_index_grow=" + std::to_string(min_bytes)});
  if (!r.ok()) {
    Complain("the chunk index growth was not begun: " + Describe(r, args.timeout_s));
    PrintTgtdLog(log, log_start);
    return kExitFailed;
  }
  Say("dedupv1d: chunk index growth requested (" +
      (min_bytes == 0 ? std::string("by chunk-index.grow-factor") : "to at least " + SizeText(min_bytes)) +
      "); it runs while the LUNs serve");
  if (!args.wait) return kExitOk;
  const MonitorOptions& mon = setup.options.monitor;
  if (!mon.enabled) {
    Complain("--wait follows the growth through the monitor, which is disabled (monitor.enabled = false)");
    return kExitFailed;
  }
  auto client = MonitorClientFor(mon.host, mon.port, 10);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(args.timeout_s);
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    HttpResult got;
    s = client->Get("/index", &got);
    nlohmann::json doc;
    if (s.ok() && got.status == 200) doc = nlohmann::json::parse(got.body, nullptr, false);
    if (!s.ok() || got.status != 200 || doc.is_discarded() || !doc.contains("chunk_index")) {
      Complain("cannot follow the growth: the monitor's /index did not answer (" +
               (s.ok() ? "HTTP " + std::to_string(got.status) : s.ToString()) + "); it goes on in tgtd");
      return kExitFailed;
    }
    const nlohmann::json& ci = doc["chunk_index"];
    const bool growing = ci.value("growing", 0) != 0;
    const bool requested = ci.value("growth_requested", 0) != 0;
    const std::string error = ci.value("growth_last_error", std::string());
    std::string now = growing ? "moving entries: " + std::to_string(ci.value("growth_pages_moved", 0ULL)) + " of " +
                                    std::to_string(ci.value("growth_pages_total", 0ULL)) + " pages"
                              : (requested ? "requested" : "done");
    if (!error.empty()) now += " (last error, retried: " + error + ")";
    if (now != last) Say("dedupv1d: chunk index: " + now);
    last = now;
    if (!growing && !requested) {
      Say("dedupv1d: the chunk index table is " + SizeText(ci.value("table_size_bytes", 0ULL)) + ", capacity " +
          std::to_string(ci.value("capacity_entries", 0ULL)) + " entries");
      return kExitOk;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  Complain("the growth is still running after " + std::to_string(args.timeout_s) + " s (--timeout); it goes on in tgtd");
  return kExitFailed;
}

}  // namespace
}  // namespace dedupv1

int main(int argc, char** argv) {
  dedupv1::Args args;
  std::string err;
  if (!dedupv1::ParseArgs(argc, argv, &args, &err)) {
    std::fprintf(stderr, "dedupv1d: %s\n%s", err.c_str(), dedupv1::kUsage);
    return dedupv1::kExitUsage;
  }
  // A tgtadm child killed on timeout must not take us down with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  if (args.command == "start" || args.command == "takeover") return dedupv1::Start(args);
  if (args.command == "watch") return dedupv1::Watch(args);
  if (args.command == "cluster") return dedupv1::ClusterCommand(args);
  if (args.command == "stop") return dedupv1::Stop(args);
  if (args.command == "volume") return dedupv1::VolumeCommand(args);
  if (args.command == "index") return dedupv1::IndexCommand(args);
  return dedupv1::StatusCommand(args);
}

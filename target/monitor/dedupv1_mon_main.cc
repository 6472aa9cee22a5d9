// dedupv1_mon: shows what a running dedupv1 monitor reports, or sends it a
// control command.
//
//   dedupv1_mon [--config FILE [--data-dir DIR]] [--data-dir DIR] [--instance ID]
//               [--host H] [--port P] [--token T] [--watch SECONDS [--count N]]
//               [--json] [--timeout SECONDS] MONITOR [key=value ...]
//
// Which instance: with --config (monitor.host/.port/.token and data-dir taken
// from the config, the command line overriding them), --data-dir or
// --instance, dedupv1_mon first asks the monitor who it is (GET /identity)
// and sends nothing when another instance answers. Control commands (POST)
// need one of them: two instances on one host must never have a command act
// on the wrong store.
//
// Exit codes: 0 done; 1 the server answered with an error (or with something
// that is not JSON where JSON was expected); 2 usage error; 3 cannot connect
// to the server; 4 the monitor answering is not the instance asked for (or not
// a dedupv1 monitor that tells its identity), nothing was sent.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/base/config.h"
#include "core/base/env.h"
#include "core/base/identity.h"
#include "target/monitor/monitor_client.h"
#include "target/monitor/monitor_identity.h"
#include "target/monitor/monitor_view.h"
#include "core/engine/store_env.h"
#include "target/service_options.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitServerError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitConnect = 3;
constexpr int kExitWrongInstance = 4;

const char kUsage[] =
    "usage: dedupv1_mon [options] MONITOR [key=value ...]\n"
    "\n"
    "options:\n"
    "  --config FILE     the instance's dedupv1 config: monitor.host/.port/.token\n"
    "                    and the data dir to check the monitor against\n"
    "  --data-dir DIR    the instance's data dir (overrides the config's)\n"
    "  --instance ID     the instance id to check the monitor against\n"
    "                    (DATA-DIR/instance-id; for a monitor on another host)\n"
    "  --host H          monitor address (default: the config's, else 127.0.0.1)\n"
    "  --port P          monitor port (default: the config's, else 9001)\n"
    "  --token T         control token (default: $DEDUPV1_MON_TOKEN, else the config's)\n"
    "  --json            print the server's JSON as it is\n"
    "  --watch SECONDS   repeat every SECONDS until interrupted (read-only monitors)\n"
    "  --count N         with --watch: stop after N rounds\n"
    "  --timeout SECONDS give up on a request after SECONDS (default 60)\n"
    "  -h, --help        this text\n"
    "\n"
    "monitors (GET):\n"
    "  stats volumes filters index containers log gc idle config version identity\n"
    "  throughput history metrics api\n"
    "  (key=value pairs become query parameters, e.g. volumes name=vol1)\n"
    "control (POST; need --config, --data-dir or --instance):\n"
    "  flush            make everything written so far durable\n"
    "  force-idle       treat the system as idle: log replay, index write-back\n"
    "                   and GC run now and every idle period\n"
    "  force-busy       treat the system as busy: no idle work (the log's soft\n"
    "                   and hard limits still checkpoint)\n"
    "  force-auto       release the force: idle detection decides again\n"
    "  gc-run           run garbage collection\n"
    "  replay-pause     pause background log replay (a full log still replays)\n"
    "  replay-resume    resume background log replay\n"
    "\n"
    "exit codes: 0 ok, 1 server error, 2 usage error, 3 cannot connect,\n"
    "            4 another instance (or not a dedupv1 monitor) answers: nothing sent\n";

struct Command {
  std::string method = "GET";
  std::string path;
  std::map<std::string, std::string> params;
};

// Maps a monitor name to the request; control commands become POSTs.
Command ToCommand(const std::string& monitor) {
  Command c;
  if (monitor == "flush") {
    c.method = "POST", c.path = "/flush";
  } else if (monitor == "force-idle") {
    c.method = "POST", c.path = "/idle", c.params["state"] = "idle";
  } else if (monitor == "force-busy") {
    c.method = "POST", c.path = "/idle", c.params["state"] = "busy";
  } else if (monitor == "force-auto") {
    c.method = "POST", c.path = "/idle", c.params["state"] = "auto";
  } else if (monitor == "gc-run") {
    c.method = "POST", c.path = "/gc/run";
  } else if (monitor == "replay-pause") {
    c.method = "POST", c.path = "/log/replay/pause";
  } else if (monitor == "replay-resume") {
    c.method = "POST", c.path = "/log/replay/resume";
  } else {
    c.path = "/" + monitor;
  }
  return c;
}

int Usage(const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "dedupv1_mon: %s\n", error.c_str());
  std::fputs(kUsage, stderr);
  return kExitUsage;
}

bool ParseNumber(const char* s, double min, double max, double* out) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || *end != '\0' || !(v >= min && v <= max)) return false;
  *out = v;
  return true;
}

bool IsJson(const dedupv1::HttpResult& r) {
  return r.content_type.rfind("application/json", 0) == 0;
}

// One request and its output. Returns the exit code.
int RunOnce(dedupv1::MonitorClient* client, const std::string& monitor, const Command& cmd,
            bool raw_json) {
  dedupv1::HttpResult r;
  dedupv1::Status s = client->Request(cmd.method, cmd.path, cmd.params, &r);
  if (!s.ok()) {
    std::fprintf(stderr, "dedupv1_mon: %s\n", s.message().c_str());
    return kExitConnect;
  }
  if (r.status >= 400) {
    std::string message = r.body;
    if (IsJson(r)) {
      auto doc = nlohmann::ordered_json::parse(r.body, nullptr, false);
      if (!doc.is_discarded() && doc.contains("message")) message = doc["message"].get<std::string>();
    }
    if (raw_json) std::fputs(r.body.c_str(), stdout);
    std::fprintf(stderr, "dedupv1_mon: %s %s: server answered %ld: %s\n", cmd.method.c_str(),
                 cmd.path.c_str(), r.status, message.c_str());
    return kExitServerError;
  }
  if (!IsJson(r)) {  // /metrics, the page: shown as they are
    std::fputs(r.body.c_str(), stdout);
    return kExitOk;
  }
  if (raw_json) {
    std::fputs(r.body.c_str(), stdout);
    return kExitOk;
  }
  auto doc = nlohmann::ordered_json::parse(r.body, nullptr, false);
  if (doc.is_discarded()) {
    std::fprintf(stderr, "dedupv1_mon: %s: the server sent invalid JSON\n", cmd.path.c_str());
    return kExitServerError;
  }
  std::fputs(dedupv1::RenderMonitorView(monitor, doc).c_str(), stdout);
  return kExitOk;
}

// Where to connect and whom to expect there, from --config / --data-dir /
// --instance and the explicit --host / --port / --token.
struct Target {
  std::string host = "127.0.0.1";
  double port = 9001;
  std::string token;
  dedupv1::ExpectedInstance expected;
};

// Fills |t| from the config and the data dir. Returns an exit code, or -1 to go on.
int ResolveTarget(const std::string& config_path, const std::string& data_dir, const std::string& instance,
                  Target* t) {
  std::string dir = data_dir;
  if (!dir.empty()) dir = std::filesystem::absolute(dir).lexically_normal().string();
  dedupv1::Options engine;  // a local store unless the config says otherwise
  if (!config_path.empty()) {
    dedupv1::Config config;
    dedupv1::ServiceOptions options;
    dedupv1::Status s = dedupv1::Config::Load(dedupv1::Env::Default(), config_path, &config);
    if (s.ok() && !dir.empty()) config.Set("data-dir", dir);
    if (s.ok()) s = dedupv1::ServiceOptions::FromConfig(config, &options);
    if (!s.ok()) return Usage("config refused: " + s.message());
    if (!options.monitor.enabled) {
      std::fprintf(stderr, "dedupv1_mon: %s says monitor.enabled = false: that instance has no monitor\n",
                   config_path.c_str());
      return kExitConnect;
    }
    t->host = options.monitor.host;
    t->port = options.monitor.port;
    t->token = options.monitor.token;
    dir = options.engine.data_dir;
    engine = options.engine;
  }
  if (!dir.empty()) {
    // The instance id is in the store (for a rados store: in the cluster).
    engine.data_dir = dir;
    std::unique_ptr<dedupv1::StoreEnv> store;
    dedupv1::Status s = dedupv1::StoreEnv::Open(engine, dedupv1::Env::Default(), &store);
    if (s.ok()) s = dedupv1::ExpectInstanceOf(store->env(), dir, &t->expected);
    if (!s.ok()) {
      std::fprintf(stderr, "dedupv1_mon: %s; nothing sent\n", s.message().c_str());
      return kExitWrongInstance;
    }
  }
  if (!instance.empty()) {
    dedupv1::Id128 id;
    if (!dedupv1::ParseId128Hex(instance, &id)) return Usage("--instance needs 32 hex digits");
    if (!t->expected.instance_id.empty() && t->expected.instance_id != dedupv1::Id128ToHex(id)) {
      return Usage("--instance " + instance + " is not the instance of " + dir + " (" + t->expected.instance_id +
                   ")");
    }
    t->expected.instance_id = dedupv1::Id128ToHex(id);
  }
  return -1;
}

// Asks the monitor who it is; an exit code when it is not |expected|, -1 to go on.
int VerifyInstance(dedupv1::MonitorClient* client, const dedupv1::ExpectedInstance& expected) {
  dedupv1::MonitorIdentity got;
  dedupv1::Status s = dedupv1::FetchMonitorIdentity(client, &got);
  if (s.IsIOError()) {
    std::fprintf(stderr, "dedupv1_mon: %s\n", s.message().c_str());
    return kExitConnect;
  }
  if (s.ok()) s = dedupv1::CheckMonitorIdentity(got, expected, client->base_url());
  if (!s.ok()) {
    std::fprintf(stderr, "dedupv1_mon: %s; nothing sent\n", s.message().c_str());
    return kExitWrongInstance;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  Target target;
  bool have_host = false, have_port = false, have_token = false;
  std::string config_path, data_dir, instance;
  bool raw_json = false;
  double watch = 0, count = 0, timeout = 60;
  std::string monitor;
  std::map<std::string, std::string> params;
  std::string host;
  double port = 0;
  std::string token;

  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    // The option's argument, or null if it is missing.
    auto value = [&](const char* /*option*/) -> const char* {
      return i + 1 < argc ? argv[++i] : nullptr;
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    } else if (arg == "--json") {
      raw_json = true;
    } else if (arg == "--config" || arg == "--data-dir" || arg == "--instance") {
      const char* v = value(arg.c_str());
      if (v == nullptr || *v == '\0') return Usage(arg + " needs a value");
      (arg == "--config" ? config_path : arg == "--data-dir" ? data_dir : instance) = v;
    } else if (arg == "--host") {
      const char* v = value("--host");
      if (v == nullptr || *v == '\0') return Usage("--host needs an address");
      host = v;
      have_host = true;
    } else if (arg == "--port") {
      const char* v = value("--port");
      if (v == nullptr || !ParseNumber(v, 1, 65535, &port) || port != static_cast<int>(port)) {
        return Usage("--port needs a number 1..65535");
      }
      have_port = true;
    } else if (arg == "--token") {
      const char* v = value("--token");
      if (v == nullptr) return Usage("--token needs a value");
      token = v;
      have_token = true;
    } else if (arg == "--watch") {
      const char* v = value("--watch");
      if (v == nullptr || !ParseNumber(v, 0.1, 86400, &watch)) {
        return Usage("--watch needs a number of seconds (0.1 .. 86400)");
      }
    } else if (arg == "--count") {
      const char* v = value("--count");
      if (v == nullptr || !ParseNumber(v, 1, 1e9, &count) || count != static_cast<long>(count)) {
        return Usage("--count needs a positive whole number");
      }
    } else if (arg == "--timeout") {
      const char* v = value("--timeout");
      if (v == nullptr || !ParseNumber(v, 0.1, 3600, &timeout)) {
        return Usage("--timeout needs a number of seconds");
      }
    } else if (arg.size() > 1 && arg[0] == '-') {
      return Usage("unknown option " + arg);
    } else if (monitor.empty()) {
      monitor = arg;
    } else {
      const size_t eq = arg.find('=');
      if (eq == std::string::npos || eq == 0) return Usage("expected key=value, got '" + arg + "'");
      params[arg.substr(0, eq)] = arg.substr(eq + 1);
    }
  }
  if (monitor.empty()) return Usage("no monitor given");
  if (monitor[0] == '/') monitor.erase(0, 1);  // "/stats" works as "stats"
  if (monitor.empty() || monitor.find('/') != std::string::npos) {
    return Usage("not a monitor name: " + monitor + " (see --help)");
  }
  Command cmd = ToCommand(monitor);
  for (const auto& [k, v] : params) cmd.params[k] = v;
  if (watch > 0 && cmd.method != "GET") return Usage("--watch only repeats read-only monitors");
  if (count > 0 && watch <= 0) return Usage("--count goes with --watch");

  if (int rc = ResolveTarget(config_path, data_dir, instance, &target); rc >= 0) return rc;
  // The command line wins over the environment, which wins over the config.
  if (have_host) target.host = host;
  if (have_port) target.port = port;
  if (have_token) {
    target.token = token;
  } else if (const char* t = std::getenv("DEDUPV1_MON_TOKEN")) {
    target.token = t;
  }
  if (cmd.method != "GET" && target.expected.empty()) {
    return Usage("control command " + monitor +
                 " needs --config FILE, --data-dir DIR or --instance ID: dedupv1_mon checks which instance "
                 "answers before it sends anything");
  }

  dedupv1::MonitorClient client(target.host, static_cast<uint16_t>(target.port), target.token,
                                static_cast<long>(timeout * 1000));
  if (!target.expected.empty()) {
    if (int rc = VerifyInstance(&client, target.expected); rc >= 0) return rc;
  }
  if (watch <= 0) return RunOnce(&client, monitor, cmd, raw_json);

  const bool tty = isatty(STDOUT_FILENO) != 0;
  for (long round = 1;; round++) {
    if (tty) std::fputs("\033[H\033[2J", stdout);  // redraw in place
    const int rc = RunOnce(&client, monitor, cmd, raw_json);
    std::fflush(stdout);
    if (rc != kExitOk) return rc;
    if (count > 0 && round >= static_cast<long>(count)) return kExitOk;
    if (!tty) std::fputs("\n", stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(watch));
  }
}

#include "target/monitor/monitor_handler.h"

#include "core/engine/cluster_view.h"
#include "target/monitor/cluster_json.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <vector>

#include "target/monitor/prometheus_metrics.h"
#include "target/monitor/status_page.h"

namespace dedupv1 {

struct MonitorHandler::Route {
  const char* path;
  const char* method;  // "GET" (also answers HEAD) or "POST"
  bool control;        // needs the token, when one is configured
  const char* params;  // allowed query parameters, comma separated
  MonitorResponse (MonitorHandler::*handle)(const MonitorRequest&);
  const char* description;
};

const MonitorHandler::Route MonitorHandler::kRoutes[] = {
    {"/", "GET", false, "", &MonitorHandler::Page, "the live status page (HTML)"},
    {"/index.html", "GET", false, "", &MonitorHandler::Page, "the live status page (HTML)"},
    {"/api", "GET", false, "", &MonitorHandler::Api, "this list of endpoints"},
    {"/stats", "GET", false, "", &MonitorHandler::Stats, "everything the status page shows"},
    {"/volumes", "GET", false, "name", &MonitorHandler::Volumes,
     "volumes (name=NAME for one)"},
    {"/filters", "GET", false, "", &MonitorHandler::Filters, "filter chain results per filter"},
    {"/index", "GET", false, "", &MonitorHandler::Index, "chunk index and block index"},
    {"/containers", "GET", false, "", &MonitorHandler::Containers,
     "chunk store containers and read cache"},
    {"/log", "GET", false, "", &MonitorHandler::Log, "operations log"},
    {"/gc", "GET", false, "", &MonitorHandler::Gc, "garbage collection"},
    {"/idle", "GET", false, "", &MonitorHandler::IdleGet, "idle state"},
    {"/config", "GET", false, "", &MonitorHandler::Config, "effective configuration"},
    {"/version", "GET", false, "", &MonitorHandler::Version, "version and uptime"},
    {"/cluster", "GET", false, "", &MonitorHandler::Cluster,
     "gateway slots of the store: holders, locks, heartbeats, volumes (gateway mode; 404 otherwise)"},
    {"/identity", "GET", false, "", &MonitorHandler::Identity,
     "which instance answers: data_dir, instance_id (DATA-DIR/instance-id), pid"},
    {"/throughput", "GET", false, "", &MonitorHandler::Throughput, "current throughput"},
    {"/history", "GET", false, "", &MonitorHandler::History,
     "throughput history: 1 s samples (minutes), 10 s samples (hour)"},
    {"/metrics", "GET", false, "", &MonitorHandler::Metrics, "Prometheus text format"},
    {"/flush", "POST", true, "", &MonitorHandler::Flush,
     "make everything written so far durable (DedupSystem::Sync)"},
    {"/idle", "POST", true, "state", &MonitorHandler::IdlePost,
     "force the system idle or busy, or back to detection (state=idle|busy|auto)"},
    {"/gc/run", "POST", true, "", &MonitorHandler::GcRun, "run garbage collection"},
    {"/log/replay/pause", "POST", true, "", &MonitorHandler::ReplayPause,
     "pause background log replay"},
    {"/log/replay/resume", "POST", true, "", &MonitorHandler::ReplayResume,
     "resume background log replay"},
};

namespace {

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 507: return "Insufficient Storage";
  }
  return "Error";
}

bool ParamAllowed(const char* allowed, const std::string& name) {
  std::istringstream in(allowed);
  std::string p;
  while (std::getline(in, p, ',')) {
    if (p == name) return true;
  }
  return false;
}

// Compares without an early exit, so the time taken does not reveal how much
// of a guessed token was right.
bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::string& longer = a.size() >= b.size() ? a : b;
  for (size_t i = 0; i < longer.size(); i++) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

int StatusToHttp(const Status& s) {
  if (s.IsNoSpace()) return 507;
  if (s.IsBusy() || s.IsAborted()) return 503;
  if (s.IsInvalidArgument()) return 400;
  if (s.IsNotFound()) return 404;
  return 500;
}

}  // namespace

MonitorHandler::MonitorHandler(DedupSystem* system, StatusCollector* collector, std::string token)
    : system_(system), collector_(collector), token_(std::move(token)) {}

MonitorResponse MonitorHandler::Error(int status, const std::string& message) {
  dedupv1::Json doc;
  doc["error"] = ReasonPhrase(status);
  doc["message"] = message;
  doc["status"] = status;
  MonitorResponse r;
  r.status = status;
  r.body = doc.dump(2) + "\n";
  return r;
}

MonitorResponse MonitorHandler::JsonResponse(const dedupv1::Json& doc, int status) const {
  MonitorResponse r;
  r.status = status;
  // Replace invalid UTF-8 (a volume or error text could hold any bytes)
  // instead of throwing.
  r.body = doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  return r;
}

bool MonitorHandler::Authorized(const MonitorRequest& request) const {
  if (token_.empty()) return true;
  static const char kBearer[] = "Bearer ";
  const std::string& h = request.authorization;
  if (h.size() < sizeof(kBearer) - 1 || h.compare(0, sizeof(kBearer) - 1, kBearer) != 0) {
    return false;
  }
  return ConstantTimeEquals(h.substr(sizeof(kBearer) - 1), token_);
}

MonitorResponse MonitorHandler::Handle(const MonitorRequest& request) {
  requests_.fetch_add(1, std::memory_order_relaxed);
  std::string path = request.path.empty() ? "/" : request.path;
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  const std::string method = request.method == "HEAD" ? "GET" : request.method;

  const Route* match = nullptr;
  std::string allow;
  for (const Route& route : kRoutes) {
    if (path != route.path) continue;
    if (!allow.empty()) allow += ", ";
    allow += std::strcmp(route.method, "GET") == 0 ? "GET, HEAD" : route.method;
    if (method == route.method) match = &route;
  }
  if (allow.empty()) {
    return Error(404, "no endpoint " + path + " (GET /api lists the endpoints)");
  }
  if (match == nullptr) {
    MonitorResponse r = Error(405, request.method + " is not allowed on " + path + "; use " + allow);
    r.allow = allow;
    return r;
  }
  if (match->control && !Authorized(request)) {
    return Error(403, "control endpoint " + path +
                          " needs the monitor token: send \"Authorization: Bearer <monitor.token>\"");
  }
  for (const auto& [name, value] : request.params) {
    if (!ParamAllowed(match->params, name)) {
      std::string msg = "unknown parameter '" + name + "' for " + request.method + " " + path;
      msg += match->params[0] != '\0' ? std::string("; allowed: ") + match->params
                                      : std::string("; it takes none");
      return Error(400, msg);
    }
  }
  return (this->*match->handle)(request);
}

MonitorResponse MonitorHandler::Page(const MonitorRequest&) {
  MonitorResponse r;
  r.content_type = "text/html; charset=utf-8";
  r.body = StatusPageHtml();
  return r;
}

MonitorResponse MonitorHandler::Api(const MonitorRequest&) {
  dedupv1::Json list = dedupv1::Json::array();
  for (const Route& route : kRoutes) {
    dedupv1::Json e;
    e["method"] = route.method;
    e["path"] = route.path;
    e["control"] = route.control;
    e["parameters"] = route.params;
    e["description"] = route.description;
    list.push_back(std::move(e));
  }
  dedupv1::Json doc;
  doc["endpoints"] = std::move(list);
  doc["token_required"] = !token_.empty();
  return JsonResponse(doc);
}

MonitorResponse MonitorHandler::Stats(const MonitorRequest&) { return JsonResponse(collector_->Stats()); }

MonitorResponse MonitorHandler::Volumes(const MonitorRequest& r) {
  dedupv1::Json doc = collector_->Volumes();
  auto it = r.params.find("name");
  if (it == r.params.end()) return JsonResponse(doc);
  std::string known;
  for (const auto& v : doc["volumes"]) {
    if (v["name"] == it->second) return JsonResponse(v);
    known += (known.empty() ? "" : ", ") + v["name"].get<std::string>();
  }
  return Error(404, "no volume '" + it->second + "'; volumes: " + known);
}

MonitorResponse MonitorHandler::Filters(const MonitorRequest&) {
  return JsonResponse(collector_->Filters());
}
MonitorResponse MonitorHandler::Index(const MonitorRequest&) { return JsonResponse(collector_->Index()); }
MonitorResponse MonitorHandler::Containers(const MonitorRequest&) {
  return JsonResponse(collector_->Containers());
}
MonitorResponse MonitorHandler::Log(const MonitorRequest&) { return JsonResponse(collector_->Log()); }
MonitorResponse MonitorHandler::Gc(const MonitorRequest&) { return JsonResponse(collector_->Gc()); }
MonitorResponse MonitorHandler::IdleGet(const MonitorRequest&) {
  return JsonResponse(collector_->Idle());
}
MonitorResponse MonitorHandler::Config(const MonitorRequest&) {
  return JsonResponse(collector_->Config());
}
MonitorResponse MonitorHandler::Version(const MonitorRequest&) {
  return JsonResponse(collector_->Version());
}
MonitorResponse MonitorHandler::Identity(const MonitorRequest&) {
  dedupv1::Json doc;
  doc["data_dir"] = system_->options().data_dir;
  doc["instance_id"] = Id128ToHex(system_->instance_id());
  doc["pid"] = static_cast<int64_t>(::getpid());
  return JsonResponse(doc);
}
// Read from RADOS at each request (a few ops per slot, each bounded by the
// op timeout), so it shows what a watcher on another machine sees.
MonitorResponse MonitorHandler::Cluster(const MonitorRequest&) {
  const Options& o = system_->options();
  if (o.storage_backend != "rados" || o.rados.gateway.empty()) {
    return Error(404, "not a gateway slot (storage.backend = rados with storage.rados.gateway = NAME)");
  }
  std::shared_ptr<RadosCluster> cluster;
  Status s = RadosCluster::Shared(o.rados, &cluster);
  ClusterView view;
  if (s.ok()) s = ReadClusterView(cluster, &view);
  if (!s.ok()) return Error(StatusToHttp(s), s.ToString());
  return JsonResponse(ClusterViewJson(view));
}
MonitorResponse MonitorHandler::Throughput(const MonitorRequest&) {
  return JsonResponse(collector_->Throughput());
}
MonitorResponse MonitorHandler::History(const MonitorRequest&) {
  return JsonResponse(collector_->History());
}

MonitorResponse MonitorHandler::Metrics(const MonitorRequest&) {
  MonitorResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = RenderPrometheusMetrics(collector_->Stats(), requests());
  return r;
}

MonitorResponse MonitorHandler::Flush(const MonitorRequest&) {
  const auto start = std::chrono::steady_clock::now();
  Status s = system_->Sync();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!s.ok()) return Error(StatusToHttp(s), "flush failed: " + s.ToString());
  dedupv1::Json doc;
  doc["ok"] = true;
  doc["message"] = "flushed: everything written before the request is durable";
  doc["duration_seconds"] = seconds;
  return JsonResponse(doc);
}

MonitorResponse MonitorHandler::IdlePost(const MonitorRequest& r) {
  auto it = r.params.find("state");
  IdleMode mode;
  if (it == r.params.end() || !ParseIdleMode(it->second, &mode).ok()) {
    return Error(400, "POST /idle needs state=idle, state=busy or state=auto");
  }
  system_->ForceIdle(mode);
  dedupv1::Json doc;
  doc["ok"] = true;
  doc["mode"] = IdleModeName(mode);
  switch (mode) {
    case IdleMode::kIdle:
      doc["message"] = "forced idle: log replay, index write-back and GC run now and every idle period";
      break;
    case IdleMode::kBusy:
      doc["message"] = "forced busy: no idle work; only the log's soft and hard limits checkpoint";
      break;
    case IdleMode::kAuto:
      doc["message"] = "idle detection decides again (throughput below the threshold for the idle period)";
      break;
  }
  return JsonResponse(doc);
}

MonitorResponse MonitorHandler::GcRun(const MonitorRequest&) {
  const auto start = std::chrono::steady_clock::now();
  Status s = system_->RunGc();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!s.ok()) return Error(StatusToHttp(s), "garbage collection failed: " + s.ToString());
  dedupv1::Json doc;
  doc["ok"] = true;
  doc["message"] = "garbage collection round finished";
  doc["duration_seconds"] = seconds;
  doc["gc"] = collector_->Gc();
  return JsonResponse(doc);
}
MonitorResponse MonitorHandler::ReplayPause(const MonitorRequest&) {
  system_->PauseReplay(true);
  dedupv1::Json doc;
  doc["ok"] = true;
  doc["replay_paused"] = true;
  doc["message"] =
      "background log replay paused: no checkpoint at idle or at the soft limit; a full log (hard limit) "
      "still checkpoints so writers never wait forever";
  return JsonResponse(doc);
}

MonitorResponse MonitorHandler::ReplayResume(const MonitorRequest&) {
  system_->PauseReplay(false);
  dedupv1::Json doc;
  doc["ok"] = true;
  doc["replay_paused"] = false;
  doc["message"] = "background log replay resumed";
  return JsonResponse(doc);
}

}  // namespace dedupv1

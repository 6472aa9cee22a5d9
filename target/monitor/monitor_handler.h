// MonitorHandler answers the monitor's HTTP requests, independent of the HTTP
// library: MonitorServer parses a request into a MonitorRequest and sends the
// MonitorResponse back. Keeping the routing here lets it be read in one place
// (kRoutes in the .cc is the list of endpoints) and tested without sockets.
//
// Rules (every error is a JSON object {"error", "message", "status"}):
//  - unknown path: 404; known path, wrong method: 405 with an Allow header;
//  - unknown or malformed query parameter: 400;
//  - control endpoints (POST) need "Authorization: Bearer <token>" when a
//    token is configured: 403 otherwise.
// HEAD is answered like GET. Thread-safe: requests run concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "core/engine/dedup_system.h"
#include "target/monitor/status_collector.h"

namespace dedupv1 {

struct MonitorRequest {
  std::string method;                         // "GET", "HEAD", "POST", ...
  std::string path;                           // without the query string
  std::map<std::string, std::string> params;  // decoded query parameters
  std::string authorization;                  // the Authorization header, "" if none
};

struct MonitorResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string allow;  // the Allow header of a 405, else ""
};

class MonitorHandler {
 public:
  // |token|: required by control endpoints when not empty.
  MonitorHandler(DedupSystem* system, StatusCollector* collector, std::string token);

  MonitorResponse Handle(const MonitorRequest& request);

  // Requests handled so far (all outcomes).
  uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }

  // An error document {"error": <reason phrase>, "message": ..., "status": ...}.
  static MonitorResponse Error(int status, const std::string& message);

 private:
  struct Route;
  static const Route kRoutes[];

  MonitorResponse JsonResponse(const dedupv1::Json& doc, int status = 200) const;
  bool Authorized(const MonitorRequest& request) const;

  MonitorResponse Page(const MonitorRequest& r);
  MonitorResponse Api(const MonitorRequest& r);
  MonitorResponse Stats(const MonitorRequest& r);
  MonitorResponse Volumes(const MonitorRequest& r);
  MonitorResponse Filters(const MonitorRequest& r);
  MonitorResponse Index(const MonitorRequest& r);
  MonitorResponse Containers(const MonitorRequest& r);
  MonitorResponse Log(const MonitorRequest& r);
  MonitorResponse Gc(const MonitorRequest& r);
  MonitorResponse IdleGet(const MonitorRequest& r);
  MonitorResponse Config(const MonitorRequest& r);
  MonitorResponse Version(const MonitorRequest& r);
  MonitorResponse Identity(const MonitorRequest& r);
  MonitorResponse Cluster(const MonitorRequest& r);
  MonitorResponse Throughput(const MonitorRequest& r);
  MonitorResponse History(const MonitorRequest& r);
  MonitorResponse Metrics(const MonitorRequest& r);
  MonitorResponse Flush(const MonitorRequest& r);
  MonitorResponse IdlePost(const MonitorRequest& r);
  MonitorResponse GcRun(const MonitorRequest& r);
  MonitorResponse ReplayPause(const MonitorRequest& r);
  MonitorResponse ReplayResume(const MonitorRequest& r);

  DedupSystem* const system_;
  StatusCollector* const collector_;
  const std::string token_;
  std::atomic<uint64_t> requests_{0};
};

}  // namespace dedupv1

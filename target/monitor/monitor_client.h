// MonitorClient talks HTTP to a running dedupv1 monitor (libcurl): what
// dedupv1_mon and the monitor tests use. It separates "could not talk to the
// server" (a non-OK Status: refused, unresolvable, timed out) from "the server
// answered" (OK, with whatever HTTP status it sent), because dedupv1_mon exits
// differently for the two.
//
// One client keeps one connection open across requests; it is not
// thread-safe (use one per thread).
#pragma once

#include <map>
#include <string>

#include "core/base/status.h"

typedef void CURL;

namespace dedupv1 {

struct HttpResult {
  long status = 0;           // HTTP status code
  std::string content_type;  // "" if the server sent none
  std::string allow;         // the Allow header, if any
  std::string body;
};

class MonitorClient {
 public:
  MonitorClient(std::string host, uint16_t port, std::string token = "",
                long timeout_ms = 30000);
  ~MonitorClient();
  MonitorClient(const MonitorClient&) = delete;
  MonitorClient& operator=(const MonitorClient&) = delete;

  // |method| is "GET", "POST", "HEAD", or any other verb; |params| go in the
  // query string (escaped). The token, if any, is sent as a bearer token.
  Status Request(const std::string& method, const std::string& path,
                 const std::map<std::string, std::string>& params, HttpResult* result);
  Status Get(const std::string& path, HttpResult* result) { return Request("GET", path, {}, result); }
  Status Post(const std::string& path, const std::map<std::string, std::string>& params,
              HttpResult* result) {
    return Request("POST", path, params, result);
  }

  // "http://HOST:PORT" (IPv6 literals in brackets).
  std::string base_url() const;

 private:
  const std::string host_;
  const uint16_t port_;
  const std::string token_;
  const long timeout_ms_;
  CURL* curl_ = nullptr;
};

}  // namespace dedupv1

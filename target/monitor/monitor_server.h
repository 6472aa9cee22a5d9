// MonitorServer is the HTTP server embedded in a dedupv1 process (libmicrohttpd):
// the live status page, the JSON and Prometheus endpoints, and the control
// endpoints of dedupv1_mon (see docs/monitoring.md and MonitorHandler for
// the endpoint list). It also runs the throughput sampler behind the chart.
//
// Security: it listens on 127.0.0.1 by default. Start refuses a non-loopback
// address without a token (as MonitorOptions::Finish does); with a token, every
// control (POST) endpoint needs "Authorization: Bearer <token>".
//
// Threads: libmicrohttpd's listener plus one thread per open connection (at
// most max_connections), and the sampler thread. Requests only read the
// engine's counters (atomics and short stats() copies), so they never stall
// the I/O path; a flush request blocks only its own connection.
//
// Slow clients: at most max_idle_connections connections may wait without a
// request being handled (half-sent requests, idle keep-alives); a new one
// beyond that evicts the one idle the longest (ConnectionGuard), and a
// connection silent for connection_timeout_s is closed. So clients that
// connect and send nothing, from any address including loopback, cannot turn
// the others away.
//
// Lifetime: the DedupSystem must outlive the server; call Stop() (or destroy
// the server) before closing the system.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/engine/dedup_system.h"
#include "core/base/status.h"
#include "target/monitor/connection_guard.h"
#include "target/monitor/monitor_handler.h"
#include "target/monitor/monitor_options.h"
#include "target/monitor/status_collector.h"
#include "target/monitor/throughput_history.h"
#include "target/monitor/throughput_sampler.h"

struct MHD_Daemon;

namespace dedupv1 {

class MonitorServer {
 public:
  // Starts listening and serving |system|. InvalidArgument for a host that
  // does not resolve or a non-loopback host without token; IOError naming
  // host:port when the address cannot be bound (e.g. in use).
  static Status Start(DedupSystem* system, const MonitorOptions& options,
                      std::unique_ptr<MonitorServer>* out);
  ~MonitorServer();  // Stop()
  MonitorServer(const MonitorServer&) = delete;
  MonitorServer& operator=(const MonitorServer&) = delete;

  // The port actually bound (the chosen one when options.port was 0).
  uint16_t port() const { return port_; }
  const std::string& host() const { return options_.host; }
  // "http://HOST:PORT/" (IPv6 hosts in brackets).
  std::string url() const;

  // Stops serving (waits for requests in progress) and the sampler. Idempotent.
  void Stop();

  StatusCollector& collector() { return collector_; }
  const ThroughputHistory& history() const { return history_; }
  MonitorHandler& handler() { return handler_; }
  ConnectionGuard& guard() { return guard_; }

 private:
  MonitorServer(DedupSystem* system, const MonitorOptions& options);

  const MonitorOptions options_;
  ThroughputHistory history_;
  ThroughputSampler sampler_;
  StatusCollector collector_;
  MonitorHandler handler_;
  ConnectionGuard guard_;
  MHD_Daemon* daemon_ = nullptr;
  uint16_t port_ = 0;
};

}  // namespace dedupv1

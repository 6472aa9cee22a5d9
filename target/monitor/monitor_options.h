// MonitorOptions: how the status server (MonitorServer) runs. enabled, host,
// port and token come from the monitor.* keys of the config file (read by
// ServiceOptions, target/service_options.h); the rest are tuning knobs the
// code that starts the server sets (tests shorten the sampler period).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/base/config_keys.h"
#include "core/base/status.h"

namespace dedupv1 {

struct MonitorOptions {
  bool enabled = true;             // monitor.enabled: whether the host process starts a server
  std::string host = "127.0.0.1";  // numeric address or a name resolving to one
  uint16_t port = 9001;            // 0: any free port (see MonitorServer::port())
  std::string token;               // required by control endpoints when not empty
  std::chrono::milliseconds sample_interval{1000};  // throughput sampler period
  unsigned max_connections = 256;      // open at once (each holds a thread)
  unsigned max_idle_connections = 32;  // of those, waiting without a request being handled
  unsigned connection_timeout_s = 10;  // a connection silent this long is closed
  // When the system was started, for the uptime; the default (epoch) means
  // "when the server starts".
  std::chrono::steady_clock::time_point system_start{};
  // The effective configuration /config shows, as "key = value" lines
  // (ServiceOptions::ToString()); empty: the engine's options.
  std::string effective_config;

  // The monitor.* keys and their parsers.
  static const ConfigKeyTable<MonitorOptions>& KeyTable();
  // Refuses a non-loopback host without a token while enabled: the control
  // endpoints would be open to the network.
  Status Finish() const;
  // "key = value" lines of the monitor.* keys; the token shows as "(set)".
  std::string ToString() const;
  // 127.0.0.1, localhost or ::1.
  static bool IsLoopbackHost(const std::string& host);
};

}  // namespace dedupv1

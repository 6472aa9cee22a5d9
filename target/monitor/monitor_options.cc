#include "target/monitor/monitor_options.h"

#include <sstream>

namespace dedupv1 {

const ConfigKeyTable<MonitorOptions>& MonitorOptions::KeyTable() {
  static const ConfigKeyTable<MonitorOptions> table = {
      {"monitor.enabled", [](const std::string& v, MonitorOptions* o) { return ParseBool(v, &o->enabled); }},
      {"monitor.host", [](const std::string& v, MonitorOptions* o) {
         if (v.empty()) return Status::InvalidArgument("monitor.host must not be empty");
         o->host = v;
         return Status::OK();
       }},
      {"monitor.port", [](const std::string& v, MonitorOptions* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         if (x < 1 || x > 65535) return Status::InvalidArgument("monitor.port must be 1..65535, got " + v);
         o->port = static_cast<uint16_t>(x);
         return Status::OK();
       }},
      {"monitor.token", [](const std::string& v, MonitorOptions* o) {
         o->token = v;
         return Status::OK();
       }},
  };
  return table;
}

bool MonitorOptions::IsLoopbackHost(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1";
}

Status MonitorOptions::Finish() const {
  if (enabled && !IsLoopbackHost(host) && token.empty()) {
    return Status::InvalidArgument("monitor.host " + host +
                                   " is not a loopback address: set monitor.token to protect the control endpoints");
  }
  return Status::OK();
}

std::string MonitorOptions::ToString() const {
  std::ostringstream o;
  o << "monitor.enabled = " << (enabled ? "true" : "false") << "\n"
    << "monitor.host = " << host << "\n"
    << "monitor.port = " << port << "\n"
    << "monitor.token = " << (token.empty() ? "" : "(set)") << "\n";
  return o.str();
}

}  // namespace dedupv1

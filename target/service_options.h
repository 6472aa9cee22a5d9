// ServiceOptions: the whole config file of a dedupv1 service, split by the
// layer that uses each key: the engine's Options (core/engine/options.h), the iSCSI
// target's TargetOptions (target.*) and the status server's MonitorOptions
// (monitor.*). dedupv1d, tgtd's module, dedupv1_mon and the tools load the
// file through FromConfig, which validates every key once, in file order:
// the first bad line is the one reported, naming the file, line and key,
// and a key no layer knows is refused. (The engine alone, through the C API,
// reads only its own keys and passes over target.* and monitor.*.)
#pragma once

#include <string>
#include <vector>

#include "core/base/config.h"
#include "core/engine/options.h"
#include "core/base/status.h"
#include "target/monitor/monitor_options.h"
#include "target/target_options.h"

namespace dedupv1 {

struct ServiceOptions {
  Options engine;
  TargetOptions target;
  MonitorOptions monitor;

  // Parses and validates every key of |config| (later entries override
  // earlier ones, "volume" accumulates, as for Options::FromConfig). A
  // refused config leaves |*options| untouched.
  static Status FromConfig(const Config& config, ServiceOptions* options);
  // Every key of the file: the engine's, target.* and monitor.*.
  static std::vector<std::string> Keys();
  // The effective configuration as "key = value" lines: the engine's
  // settings, monitor.*, target.*, then the volumes (the order /config and
  // dedupv1_mon show).
  std::string ToString() const;
};

}  // namespace dedupv1

// Which dedupv1 instance a monitor belongs to. The monitor answers
// GET /identity with its data dir, the data dir's instance id
// (DATA-DIR/instance-id, core/base/identity.h) and its pid. A client that knows
// which instance it means (dedupv1_mon with --config, dedupv1d after start)
// compares before it trusts the answer: two instances on one host, or a config
// whose monitor.port another instance holds, must never have a control
// command act on the wrong store.
#pragma once

#include <string>

#include "core/base/env.h"
#include "core/base/status.h"
#include "target/monitor/monitor_client.h"

namespace dedupv1 {

struct MonitorIdentity {
  std::string data_dir;
  std::string instance_id;  // 32 hex digits
  long long pid = 0;
  // "data dir D (instance I, pid P)", for messages.
  std::string Describe() const;
};

// GET /identity. IOError when nothing answers (the client's message);
// Corruption when something answers that is not a dedupv1 monitor of this
// version (no /identity, or not the JSON expected).
Status FetchMonitorIdentity(MonitorClient* client, MonitorIdentity* identity);

// The instance a client means: its data dir, and the instance id read from
// that data dir (or given). An empty field is not compared.
struct ExpectedInstance {
  std::string data_dir;
  std::string instance_id;
  bool empty() const { return data_dir.empty() && instance_id.empty(); }
  std::string Describe() const;
};

// The expectation for |data_dir|: its path and DATA-DIR/instance-id.
// NotFound when the directory has no instance id (the engine never opened it,
// so no monitor can be its monitor); Corruption for a bad file.
// The instance id is read through |env|: the store's Env (a rados store
// keeps it in the cluster, core/engine/store_env.h).
Status ExpectInstanceOf(Env* env, const std::string& data_dir, ExpectedInstance* expected);

// OK when |got| is the |expected| instance; otherwise Aborted with a message
// naming the monitor at |where| and both instances.
Status CheckMonitorIdentity(const MonitorIdentity& got, const ExpectedInstance& expected,
                            const std::string& where);

}  // namespace dedupv1

// The process-wide engine handle of the tgt module (see engine_handle.h).
#include "target/engine_handle.h"

#include "core/engine/c_api_internal.h"
#include "core/base/config.h"
#include "core/base/env.h"
#include "core/rados/gateway_heartbeat.h"
#include "target/monitor/monitor_server.h"
#include "target/admin_stop_marker.h"
#include "target/service_options.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

namespace dedupv1 {
namespace {

// A volume's data being dropped (dedupv1_tgt_drop_volume) on a thread of its
// own; |done| and |result| under |mu|.
struct VolumeDrop {
  std::thread worker;
  std::atomic<bool> cancel{false};  // the engine closes: stop between steps
  std::mutex mu;
  bool done = false;
  Status result;

  bool Done() {
    std::lock_guard<std::mutex> l(mu);
    return done;
  }
};

// What tgtd's dedupv1 LUNs share. Only engine_handle.cc touches it, always under |mu|.
struct SharedEngine {
  std::mutex mu;
  dedupv1_system* sys = nullptr;
  std::string config_path;  // canonical form, to compare the paths of later LUNs
  std::string data_dir;     // canonical override, empty when the config's data dir is used
  std::map<dedupv1_volume*, std::string> volumes;  // open volume -> its name
  std::unique_ptr<MonitorServer> monitor;          // the status server, while the system is open
  std::unique_ptr<GatewayHeartbeatWriter> heartbeat;  // gateway slot mode, while the system is open
  std::string admin_stop_marker;  // with |heartbeat|: the file by which dedupv1d says a close is an admin's stop
  std::map<std::string, std::unique_ptr<VolumeDrop>> drops;  // volume removals running or not yet collected
};

// Starts the monitor next to a freshly opened system. A monitor that cannot
// start (e.g. its port is taken) is reported in tgtd's log, never a reason
// to refuse the LUN: the data path does not depend on it. dedupv1d asks the
// monitor for its identity right after the first LUN and fails the start
// when it is missing or another instance's; a tgtd run by hand shows it only
// in its log.
void StartMonitor(SharedEngine& shared, const ServiceOptions& service) {
  DedupSystem* system = SystemOf(shared.sys);
  if (!service.monitor.enabled) return;
  MonitorOptions options = service.monitor;
  options.system_start = std::chrono::steady_clock::now();
  options.effective_config = service.ToString();
  Status s = MonitorServer::Start(system, options, &shared.monitor);
  if (!s.ok()) {
    std::fprintf(stderr, "dedupv1: monitor not started: %s\n", s.ToString().c_str());
    shared.monitor.reset();
  } else {
    std::fprintf(stderr, "dedupv1: monitor on %s\n", shared.monitor->url().c_str());
  }
}

// Gateway slot mode (storage.rados.gateway): the slot's heartbeat
// (core/rados/gateway_heartbeat.h) every third of the lease, for watchers and
// the cluster view. The portal is the one dedupv1d started tgtd with
// (DEDUPV1_GATEWAY_PORTAL: --portal may override the config), else the
// config's. A heartbeat that cannot start is reported, never a reason to
// refuse the LUN: the lock, not the heartbeat, guards the slot.
void StartHeartbeat(SharedEngine& shared, const ServiceOptions& service) {
  DedupSystem* system = SystemOf(shared.sys);
  const Options& o = system->options();
  if (o.storage_backend != "rados" || o.rados.gateway.empty()) return;
  std::shared_ptr<RadosCluster> cluster;
  Status s = RadosCluster::Shared(o.rados, &cluster);
  if (s.ok()) {
    GatewayHeartbeat first;
    first.incarnation = system->gateway_record().incarnation;
    first.takeovers = system->gateway_record().takeovers;
    first.pid = system->gateway_record().pid;
    first.host = system->gateway_record().host;
    const char* portal = std::getenv("DEDUPV1_GATEWAY_PORTAL");
    first.portal = portal != nullptr && *portal != '\0' ? portal : service.target.portal;
    const auto interval = std::chrono::milliseconds(std::max<uint64_t>(1000ull * o.rados.lock_duration_s / 3, 100));
    s = GatewayHeartbeatWriter::Start(cluster, o.rados.gateway, first, interval, &shared.heartbeat);
    if (s.ok() && system->chunk_index()->cluster_scope()) {
      // Claims pending and shard load for the cluster view (design-15 2.7);
      // detached before the engine closes (DetachHeartbeatLoad).
      shared.heartbeat->SetLoadSource([system](GatewayHeartbeat* hb) {
        const ChunkClaimsStats claims = system->chunk_index()->stats().claims;
        hb->has_load = true;
        hb->claims_pending = claims.claims_pending;
        hb->shards = claims.shard_load.shards;
        hb->shard_ops_total = claims.shard_load.total;
        hb->shard_ops_max = claims.shard_load.max;
      });
    }
    // A marker left by an earlier stop that died halfway is not this run's.
    shared.admin_stop_marker = JoinPath(o.data_dir, kAdminStopMarker);
    std::error_code ec;
    std::filesystem::remove(shared.admin_stop_marker, ec);
  }
  if (!s.ok()) std::fprintf(stderr, "dedupv1: gateway heartbeat not started: %s\n", s.ToString().c_str());
}

// The volumes the heartbeat names: the LUNs served now.
void UpdateHeartbeatVolumes(SharedEngine& shared) {
  if (!shared.heartbeat) return;
  std::vector<std::string> names;
  for (const auto& [vol, name] : shared.volumes) names.push_back(name);
  std::sort(names.begin(), names.end());
  shared.heartbeat->SetVolumes(std::move(names));
}

// After the engine closed: a clean close asked by `dedupv1d stop` says
// "stopped" (a watcher leaves the slot alone: an admin stopped it,
// target/admin_stop_marker.h), a fenced one "fenced"; any other close (a
// failed start tearing tgtd down, a crash) writes nothing more, so the beat
// stops as after a crash and a watcher takes the slot over.
void StopHeartbeat(SharedEngine& shared, bool closed_cleanly) {
  if (!shared.heartbeat) return;
  const bool fenced = shared.heartbeat->cluster()->fenced();  // the engine's connection, alive through the writer
  std::error_code ec;
  const bool admin_stop = closed_cleanly && std::filesystem::exists(shared.admin_stop_marker, ec);
  if (admin_stop || fenced) {
    Status s = shared.heartbeat->Stop(fenced ? kHeartbeatFenced : kHeartbeatStopped);
    if (!s.ok()) std::fprintf(stderr, "dedupv1: last gateway heartbeat not written: %s\n", s.ToString().c_str());
  }
  shared.heartbeat.reset();
}

// Before the engine closes: the heartbeat's load source reads the engine.
void DetachHeartbeatLoad(SharedEngine& shared) {
  if (shared.heartbeat) shared.heartbeat->SetLoadSource(nullptr);
}

void StopMonitor(SharedEngine& shared) {
  if (shared.monitor) shared.monitor->Stop();
  shared.monitor.reset();
}

// The whole config as dedupv1d reads it: the engine reads only its own keys,
// so the target.* and monitor.* keys are validated here, once, before the
// engine opens (a bad one refuses the LUN as it always did).
Status LoadServiceOptions(const char* config_path, const char* data_dir, ServiceOptions* out) {
  Config config;
  DEDUPV1_RETURN_IF_ERROR(Config::Load(Env::Default(), config_path, &config));
  if (data_dir != nullptr) config.Set("data-dir", data_dir);
  return ServiceOptions::FromConfig(config, out);
}

SharedEngine& Shared() {
  // Never destroyed: tgtd may still close LUNs from its exit path after static
  // destructors of this module would have run.
  static SharedEngine* shared = new SharedEngine;
  return *shared;
}

// Brings the engine this tgtd opened in line with |now| (the config at
// |config_path| as it is now), for |volume|: a volume added to the config
// since the engine opened is added, one grown there grows
// (DedupSystem::ApplyVolumes writes the volume table first). "" when done,
// else why not: the config no longer names |volume|, or shrinks a volume
// (refused: it would lose data; nothing changed). Used when a LUN is created
// while other LUNs keep the engine open (the admin added or grew a volume)
// and for a LUN's resize.
std::string ApplyConfig(SharedEngine& shared, const ServiceOptions& now, const char* config_path,
                        const std::string& volume) {
  const bool configured = std::any_of(now.engine.volumes.begin(), now.engine.volumes.end(),
                                      [&](const VolumeOptions& v) { return v.name == volume; });
  Volume* open = nullptr;
  if (!configured) {
    const bool is_open = SystemOf(shared.sys)->GetVolume(volume, &open).ok();
    return "volume '" + volume + "' is no longer in config '" + config_path + "'" +
           (is_open ? " (this tgtd's engine still has it from before the change)" : "");
  }
  std::vector<std::string> changed;
  Status s = SystemOf(shared.sys)->ApplyVolumes(now.engine.volumes, &changed);
  if (!s.ok()) return "config '" + std::string(config_path) + "' cannot be applied to the open engine: " + s.ToString();
  for (const auto& name : changed) {
    if (!SystemOf(shared.sys)->GetVolume(name, &open).ok()) continue;  // only just added: cannot be gone
    std::fprintf(stderr, "dedupv1: volume '%s' is %llu bytes from now on (policy %s, config '%s')\n", name.c_str(),
                 static_cast<unsigned long long>(open->size()), DedupPolicyName(open->policy()), config_path);
  }
  return "";
}

std::string Canonical(const char* path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? std::string(path) : p.string();
}

void SetError(char* err, size_t errlen, const std::string& msg) {
  if (err != nullptr && errlen > 0) std::snprintf(err, errlen, "%s", msg.c_str());
}

// Whether |shared| has an open engine; if not, says so in |err|. For
// requests on any LUN that act on the engine itself.
bool EngineOpen(const SharedEngine& shared, char* err, size_t errlen) {
  if (shared.sys != nullptr) return true;
  SetError(err, errlen, "no engine is open");
  return false;
}

}  // namespace
}  // namespace dedupv1

using dedupv1::Canonical;
using dedupv1::EngineOpen;
using dedupv1::SetError;
using dedupv1::Shared;

extern "C" int dedupv1_tgt_acquire(const char* config_path, const char* data_dir,
                                   const char* volume, dedupv1_volume** vol, char* err,
                                   size_t errlen) {
  try {
    auto& shared = Shared();
    std::lock_guard<std::mutex> lock(shared.mu);
    const std::string config = Canonical(config_path);
    const std::string dir = data_dir != nullptr ? Canonical(data_dir) : std::string();

    if (auto drop = shared.drops.find(volume); drop != shared.drops.end()) {
      if (!drop->second->Done()) {
        SetError(err, errlen, std::string("volume '") + volume + "' is being dropped (dedupv1d volume remove)");
        return DEDUPV1_EBUSY;
      }
      drop->second->worker.join();  // finished: its result is in tgtd's log
      shared.drops.erase(drop);
    }
    bool opened_here = false;
    if (shared.sys == nullptr) {
      dedupv1::ServiceOptions service;
      dedupv1::Status s = dedupv1::LoadServiceOptions(config_path, data_dir, &service);
      if (!s.ok()) return dedupv1::ReportStatus(s, err, errlen);
      int rc = dedupv1_open(config_path, data_dir, &shared.sys, err, errlen);
      if (rc != DEDUPV1_OK) {
        shared.sys = nullptr;
        return rc;
      }
      shared.config_path = config;
      shared.data_dir = dir;
      opened_here = true;
      dedupv1::StartMonitor(shared, service);
      dedupv1::StartHeartbeat(shared, service);
    } else if (config != shared.config_path || dir != shared.data_dir) {
      SetError(err, errlen,
               "this tgtd already serves dedupv1 from config '" + shared.config_path + "'" +
                   (shared.data_dir.empty() ? "" : " datadir '" + shared.data_dir + "'") +
                   "; all dedupv1 LUNs of one tgtd must use the same config and datadir");
      return DEDUPV1_EINVAL;
    } else {
      dedupv1::ServiceOptions now;
      dedupv1::Status s = dedupv1::LoadServiceOptions(config_path, data_dir, &now);
      const std::string why = !s.ok() ? "config '" + std::string(config_path) + "' no longer loads: " + s.ToString()
                                      : dedupv1::ApplyConfig(shared, now, config_path, volume);
      if (!why.empty()) {
        SetError(err, errlen, why);
        return DEDUPV1_EINVAL;
      }
    }

    for (const auto& [open_vol, name] : shared.volumes) {
      if (name == volume) {
        SetError(err, errlen, std::string("volume '") + volume + "' is already served by another LUN");
        return DEDUPV1_EBUSY;  // nothing opened here: the system has other users
      }
    }

    int rc = dedupv1_volume_open(shared.sys, volume, vol, err, errlen);
    if (rc != DEDUPV1_OK) {
      if (opened_here) {
        // Leave no half-opened engine behind a failed LUN creation.
        char close_err[256];
        dedupv1::StopMonitor(shared);
        dedupv1::DetachHeartbeatLoad(shared);
        const int close_rc = dedupv1_close(shared.sys, close_err, sizeof(close_err));
        dedupv1::StopHeartbeat(shared, close_rc == DEDUPV1_OK);
        shared.sys = nullptr;
        shared.config_path.clear();
        shared.data_dir.clear();
      }
      return rc;
    }
    shared.volumes.emplace(*vol, volume);
    dedupv1::UpdateHeartbeatVolumes(shared);
    dedupv1::Volume* served = nullptr;
    if (dedupv1::SystemOf(shared.sys)->GetVolume(volume, &served).ok()) {
      // The admin's record of what each LUN serves, policy and all.
      std::fprintf(stderr, "dedupv1: volume '%s' served: %llu bytes, policy %s\n", volume,
                   static_cast<unsigned long long>(served->size()), dedupv1::DedupPolicyName(served->policy()));
    }
    return DEDUPV1_OK;
  } catch (const std::exception& e) {
    SetError(err, errlen, std::string("dedupv1 module: ") + e.what());
    return DEDUPV1_EOTHER;
  }
}

extern "C" int dedupv1_tgt_release(dedupv1_volume* vol, char* err, size_t errlen) {
  try {
    auto& shared = Shared();
    std::lock_guard<std::mutex> lock(shared.mu);
    shared.volumes.erase(vol);
    dedupv1_volume_close(vol);
    dedupv1::UpdateHeartbeatVolumes(shared);
    if (!shared.volumes.empty() || shared.sys == nullptr) return DEDUPV1_OK;
    // A drop still running stops at its next step (a run of the remove
    // again finishes it); the close does not wait for the whole volume.
    for (auto& [name, drop] : shared.drops) drop->cancel = true;
    for (auto& [name, drop] : shared.drops) drop->worker.join();
    shared.drops.clear();
    dedupv1::StopMonitor(shared);
    dedupv1::DetachHeartbeatLoad(shared);
    int rc = dedupv1_close(shared.sys, err, errlen);
    dedupv1::StopHeartbeat(shared, rc == DEDUPV1_OK);
    shared.sys = nullptr;
    shared.config_path.clear();
    shared.data_dir.clear();
    return rc;
  } catch (const std::exception& e) {
    SetError(err, errlen, std::string("dedupv1 module: ") + e.what());
    return DEDUPV1_EOTHER;
  }
}

extern "C" int dedupv1_tgt_resize(dedupv1_volume* vol, uint64_t block_size, uint64_t* size, char* err,
                                  size_t errlen) {
  try {
    auto& shared = Shared();
    std::lock_guard<std::mutex> lock(shared.mu);
    auto it = shared.volumes.find(vol);
    if (shared.sys == nullptr || it == shared.volumes.end()) {
      SetError(err, errlen, "the volume is not open");
      return DEDUPV1_EINVAL;
    }
    const char* data_dir = shared.data_dir.empty() ? nullptr : shared.data_dir.c_str();
    // The LU's block size is checked before the engine changes anything.
    dedupv1::ServiceOptions now;
    dedupv1::Status s = dedupv1::LoadServiceOptions(shared.config_path.c_str(), data_dir, &now);
    if (!s.ok()) return dedupv1::ReportStatus(s, err, errlen);
    for (const auto& v : now.engine.volumes) {
      if (v.name == it->second && block_size > 0 && v.size % block_size != 0) {
        SetError(err, errlen, "volume '" + v.name + "' is " + std::to_string(v.size) + " bytes in config '" +
                                  shared.config_path + "', not a multiple of the LUN's " +
                                  std::to_string(block_size) + "-byte blocks");
        return DEDUPV1_EINVAL;
      }
    }
    const std::string why = dedupv1::ApplyConfig(shared, now, shared.config_path.c_str(), it->second);
    if (!why.empty()) {
      SetError(err, errlen, why);
      return DEDUPV1_EINVAL;
    }
    *size = dedupv1_volume_size(vol);
    return DEDUPV1_OK;
  } catch (const std::exception& e) {
    SetError(err, errlen, std::string("dedupv1 module: ") + e.what());
    return DEDUPV1_EOTHER;
  }
}

extern "C" int dedupv1_tgt_grow_index(uint64_t min_bytes, char* err, size_t errlen) {
  try {
    auto& shared = Shared();
    std::lock_guard<std::mutex> lock(shared.mu);
    if (!EngineOpen(shared, err, errlen)) return DEDUPV1_EINVAL;
    dedupv1::DedupSystem* system = dedupv1::SystemOf(shared.sys);
    dedupv1::Status s = system->chunk_index()->Grow(min_bytes);
    if (s.IsNotSupported()) {
      SetError(err, errlen, s.message());
      return DEDUPV1_EINVAL;
    }
    if (!s.ok()) return dedupv1::ReportStatus(s, err, errlen);
    std::fprintf(stderr, "dedupv1: chunk index growth requested (%s)\n",
                 min_bytes == 0 ? "by chunk-index.grow-factor" : ("to at least " + std::to_string(min_bytes) + " bytes").c_str());
    return DEDUPV1_OK;
  } catch (const std::exception& e) {
    SetError(err, errlen, std::string("dedupv1 module: ") + e.what());
    return DEDUPV1_EOTHER;
  }
}

extern "C" int dedupv1_tgt_drop_volume(const char* volume, char* err, size_t errlen) {
  try {
    auto& shared = Shared();
    std::lock_guard<std::mutex> lock(shared.mu);
    if (!EngineOpen(shared, err, errlen)) return DEDUPV1_EINVAL;
    auto known = shared.drops.find(volume);
    if (known != shared.drops.end()) {
      dedupv1::VolumeDrop& drop = *known->second;
      dedupv1::Status result;
      {
        std::lock_guard<std::mutex> l(drop.mu);
        if (!drop.done) return DEDUPV1_EBUSY;
        result = drop.result;
      }
      drop.worker.join();
      shared.drops.erase(known);  // asked again, it starts anew
      if (!result.ok()) return dedupv1::ReportStatus(result, err, errlen);
      return DEDUPV1_OK;
    }
    for (const auto& [open_vol, name] : shared.volumes) {
      if (name == volume) {
        SetError(err, errlen, std::string("volume '") + volume + "' is served by a LUN: delete that LUN first");
        return DEDUPV1_EINVAL;
      }
    }
    // Only a volume the admin took out of the config: a slip of the name
    // never drops a configured volume's data.
    dedupv1::ServiceOptions now;
    dedupv1::Status s = dedupv1::LoadServiceOptions(shared.config_path.c_str(),
                                                    shared.data_dir.empty() ? nullptr : shared.data_dir.c_str(), &now);
    if (!s.ok()) return dedupv1::ReportStatus(s, err, errlen);
    for (const auto& v : now.engine.volumes) {
      if (v.name == volume) {
        SetError(err, errlen, std::string("volume '") + volume + "' is still in config '" + shared.config_path +
                                  "': remove its line first");
        return DEDUPV1_EINVAL;
      }
    }
    // Off tgtd's main thread, which serves every other LUN meanwhile.
    auto drop = std::make_unique<dedupv1::VolumeDrop>();
    dedupv1::VolumeDrop* d = drop.get();
    dedupv1::DedupSystem* system = dedupv1::SystemOf(shared.sys);
    const std::string name = volume;
    d->worker = std::thread([d, system, name] {
      dedupv1::Status result = system->DropVolume(name, &d->cancel);
      std::fprintf(stderr, "dedupv1: volume '%s' %s\n", name.c_str(),
                   result.ok() ? "dropped: unmapped whole, its chunks are garbage for GC"
                               : ("not dropped: " + result.ToString()).c_str());
      std::lock_guard<std::mutex> l(d->mu);
      d->result = result;
      d->done = true;
    });
    shared.drops.emplace(name, std::move(drop));
    return DEDUPV1_EBUSY;
  } catch (const std::exception& e) {
    SetError(err, errlen, std::string("dedupv1 module: ") + e.what());
    return DEDUPV1_EOTHER;
  }
}

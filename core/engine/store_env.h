// StoreEnv is the Env a store's files go through, chosen by the config's
// storage.backend (core/engine/options.h):
//   local  the Env the caller passes (Env::Default(), or a FaultInjectionEnv
//          in tests): files under data-dir
//   rados  a RadosEnv (core/rados/rados_env.h): every file under data-dir is
//          an object of the index pool, so the log, the block index
//          (LevelDB), the chunk index table, the container catalog and the
//          metadata files live in the cluster; the chunk store's backend
//          "rados" puts the containers in the data pool. With
//          storage.rados.gateway = NAME every object is named under the
//          slot's "gw.NAME/" (RadosOptions::GatewayDir), so gateways of one
//          store never share a file.
// The engine, dedupv1d and the tools open the store's files only through a
// StoreEnv, so they all see the same store whatever the backend.
#pragma once

#include <memory>

#include "core/base/env.h"
#include "core/base/status.h"
#include "core/engine/options.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

class StoreEnv {
 public:
  // |local| serves a local store and must outlive the StoreEnv. For a rados
  // store, connects (errors name the cluster, pool or caps: RadosCluster).
  static Status Open(const Options& options, Env* local, std::unique_ptr<StoreEnv>* out);

  Env* env() const { return env_; }
  // A rados store: creates the gateway's local data dir on |local| and
  // takes its LOCK file there (Busy if another process has it), held until
  // this StoreEnv is destroyed.
  Status LockGatewayDir(Env* local);
  // The connection of a rados store (its op counters are the monitor's
  // backend figures); null for a local store.
  const std::shared_ptr<RadosCluster>& cluster() const { return cluster_; }

 private:
  StoreEnv() = default;

  std::shared_ptr<RadosCluster> cluster_;
  std::string data_dir_;
  std::unique_ptr<Env> owned_;
  Env* env_ = nullptr;
  std::unique_ptr<FileLock> gateway_lock_;
};

}  // namespace dedupv1

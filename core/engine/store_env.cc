#include "core/engine/store_env.h"

#include "core/rados/rados_env.h"
#include "core/rados/store_layout.h"

namespace dedupv1 {

Status StoreEnv::Open(const Options& options, Env* local, std::unique_ptr<StoreEnv>* out) {
  std::unique_ptr<StoreEnv> store(new StoreEnv());
  store->data_dir_ = options.data_dir;
  if (!UsesRados(options)) {
    store->env_ = local;
    *out = std::move(store);
    return Status::OK();
  }
  DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(options.rados, &store->cluster_));
  // The tools and dedupv1d open stores through here too: none of them may
  // mix a store without slots with slots (core/rados/store_layout.h).
  DEDUPV1_RETURN_IF_ERROR(CheckStoreLayout(store->cluster_.get(), options.rados));
  DEDUPV1_RETURN_IF_ERROR(NewRadosEnv(store->cluster_, options.data_dir, options.rados.GatewayDir(), &store->owned_));
  store->env_ = store->owned_.get();
  *out = std::move(store);
  return Status::OK();
}

Status StoreEnv::LockGatewayDir(Env* local) {
  DEDUPV1_RETURN_IF_ERROR(local->CreateDirs(data_dir_));
  Status s = local->LockFile(JoinPath(data_dir_, "LOCK"), &gateway_lock_);
  if (s.IsBusy()) {
    return Status::Busy("gateway data directory " + data_dir_ + " is in use by another process (" + s.message() + ")");
  }
  return s;
}

}  // namespace dedupv1

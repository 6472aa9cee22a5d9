// RadosOptions: which Ceph cluster and pools hold a store whose config says
// storage.backend = rados (docs/configuration.md, docs/ceph.md), and how long
// a RADOS operation may take before it fails as an I/O error.
//
// Layout in the cluster: every object of one store lives in the RADOS
// namespace |store| of its pool, so several stores can share two pools:
//   data pool   containers, one object each, written whole (may be
//               erasure-coded, HDD class)
//   index pool  everything else: the chunk index shards, the block index,
//               the operations log, the container catalog and the small
//               metadata files (replicated, SSD class)
#pragma once

#include <cstdint>
#include <string>

namespace dedupv1 {

struct RadosOptions {
  std::string conf_file;                     // ceph.conf of the cluster ("" = librados' search path)
  std::string client_name = "client.admin";  // cephx user, "client.<id>"
  std::string keyring;                       // "" = what the conf file names
  std::string data_pool = "dedupv1-data";
  std::string index_pool = "dedupv1-index";
  std::string store = "dedupv1";             // RADOS namespace of this store in both pools
  uint32_t op_timeout_s = 30;                // an operation (or the connect) failing after this is an I/O error
  uint64_t stripe_size = 4 << 20;            // files of the store are cut into objects of this size
  uint32_t lock_duration_s = 20;             // lease of the store lock; renewed every third of it
  // Lost for good (gateway mode, design 2.2): a renewal refused (EBUSY: another holder; ESHUTDOWN: this client
  // was blocklisted) or any renewal failing past the lease fences this connection for good (no re-take; every
  // write fails; core/rados/rados_lock.h). Off: a lost lock is re-taken once renewal succeeds again. Not in
  // ConnectionKey: a shared connection keeps the value of whoever opened it first.
  bool fence_on_lease_loss = false;

  // Two RadosOptions with the same key share one connection and its pool
  // contexts (core/rados/rados_cluster.h).
  std::string ConnectionKey() const {
    return conf_file + "|" + client_name + "|" + keyring + "|" + std::to_string(op_timeout_s) + "|" + data_pool +
           "|" + index_pool + "|" + store;
  }
};

}  // namespace dedupv1

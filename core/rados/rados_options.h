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
//
// Gateway slots (|gateway| set): several gateways share one store, each in a
// slot of its own named |gateway|. A slot's files (log, block index,
// catalog, markers, volumes) are the index-pool objects "gw.NAME/<path>",
// its chunk index shards "gw.NAME/ci.*", its containers have ids
// (slot number << 48) + sequence; the slot numbers are kept in the index
// object "gateways" (core/rados/gateway_registry.h). Without a gateway the
// layout is the single-gateway one above, unchanged.
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
  std::string gateway;                       // gateway slot name ("" = the store has one gateway, no slots)

  // Two RadosOptions with the same key share one connection and its pool
  // contexts (core/rados/rados_cluster.h).
  std::string ConnectionKey() const {
    return conf_file + "|" + client_name + "|" + keyring + "|" + std::to_string(op_timeout_s) + "|" + data_pool +
           "|" + index_pool + "|" + store + "|" + gateway;
  }

  // The directory object all of the slot's objects are named under
  // ("gw.NAME"), "" without a gateway.
  std::string GatewayDir() const { return gateway.empty() ? "" : "gw." + gateway; }
  // What the slot's object names start with: "gw.NAME/", "" without a gateway.
  std::string ObjectPrefix() const { return gateway.empty() ? "" : GatewayDir() + "/"; }
};

// Whether |name| is a valid gateway name: 1 to 32 characters of [a-z0-9-]
// (it becomes part of object names and of the registry's keys).
inline bool IsValidGatewayName(const std::string& name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

}  // namespace dedupv1

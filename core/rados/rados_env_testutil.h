// Helpers for tests that need a Ceph cluster: a connection in a namespace of
// its own (unique per test, so tests and helpers never see each other's
// objects), read from DEDUPV1_TEST_CEPH_CONF; cleanup of that namespace.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {
namespace test {

// RadosOptions for the test cluster, in a namespace no other test uses.
// A RADOS namespace no other test uses, in this process or any other test
// process that shares the cluster: the pid alone repeats across a long run
// (pids are reused) and per-file counters repeat within one process.
inline std::string UniqueTestNamespace() {
  static std::atomic<int> counter{0};
  static const unsigned token = std::random_device{}();
  char buf[64];
  std::snprintf(buf, sizeof(buf), "t-%d-%08x-%d", static_cast<int>(::getpid()), token, counter++);
  return buf;
}

inline Status TestRadosOptions(RadosOptions* out, uint64_t stripe_size = 64 << 10, uint32_t lock_duration_s = 3) {
  const char* conf = std::getenv("DEDUPV1_TEST_CEPH_CONF");
  if (conf == nullptr || *conf == '\0') {
    return Status::InvalidArgument(
        "DEDUPV1_TEST_CEPH_CONF is not set: this test needs a Ceph cluster with pools dedupv1-data and "
        "dedupv1-index (start one with the cluster script and point the variable at its ceph.conf)");
  }
  RadosOptions o;
  o.conf_file = conf;
  o.store = UniqueTestNamespace();
  o.op_timeout_s = 30;
  o.stripe_size = stripe_size;
  o.lock_duration_s = lock_duration_s;
  *out = o;
  return Status::OK();
}

inline Status ConnectTestRados(std::shared_ptr<RadosCluster>* out, uint64_t stripe_size = 64 << 10,
                               uint32_t lock_duration_s = 3) {
  RadosOptions o;
  DEDUPV1_RETURN_IF_ERROR(TestRadosOptions(&o, stripe_size, lock_duration_s));
  return RadosCluster::Shared(o, out);
}

// Names of every object in the cluster's index pool namespace.
inline std::set<std::string> IndexObjects(RadosCluster* cluster) {
  std::set<std::string> names;
  try {
    for (auto it = cluster->index().nobjects_begin(); it != cluster->index().nobjects_end(); ++it) {
      names.insert(it->get_oid());
    }
  } catch (...) {
  }
  return names;
}

inline void RemoveIndexObjects(RadosCluster* cluster) {
  for (const std::string& oid : IndexObjects(cluster)) cluster->index().remove(oid);
}

// Removes every object of the store's namespace in both pools (a test's
// store: index objects and containers).
inline void RemoveStoreObjects(RadosCluster* cluster) {
  RemoveIndexObjects(cluster);
  std::vector<std::string> names;
  try {
    for (auto it = cluster->data().nobjects_begin(); it != cluster->data().nobjects_end(); ++it) {
      names.push_back(it->get_oid());
    }
  } catch (...) {
  }
  for (const std::string& name : names) cluster->data().remove(name);
}

}  // namespace test
}  // namespace dedupv1

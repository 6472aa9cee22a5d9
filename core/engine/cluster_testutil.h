// Helpers for tests of cluster-scope stores (storage.rados.dedup-scope =
// cluster): options of one gateway slot and a fixture with a namespace of
// its own on the test cluster (DEDUPV1_TEST_CEPH_CONF), emptied afterwards.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/engine/dedup_system.h"
#include "core/engine/system_testutil.h"
#include "core/rados/rados_env_testutil.h"
#include "core/rados/rados_test_fixture.h"

namespace dedupv1 {
namespace test {

// Slot |gateway| of the cluster-scope store in |rados|'s namespace, with one
// volume "vol-<gateway>" of |volume_size| bytes.
inline Options ClusterOptions(const std::string& dir, RadosOptions rados, const std::string& gateway,
                              uint64_t volume_size, uint64_t claim_hold_ms = 20000) {
  Options o = SmallSystemOptions(dir);
  o.storage_backend = "rados";
  rados.gateway = gateway;
  o.rados = rados;
  o.chunk_store.container_size = 1 << 20;
  o.chunk_index.rados_shards = 8;
  o.chunk_index.cluster_scope = true;
  o.chunk_index.claims.claim_hold_ms = claim_hold_ms;
  o.volumes.push_back({"vol-" + gateway, volume_size});
  EXPECT_TRUE(o.DerivePathsFrom(dir).ok());
  return o;
}

// Opens (or creates) the store; a failure is a test failure (and null).
inline std::unique_ptr<DedupSystem> OpenStoreOrFail(const Options& o) {
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::OpenStore(o, Env::Default(), &sys);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return sys;
}

// 4 MiB stripes and a 5 s lease, as the engines of these tests use.
class ClusterStoreTest : public RadosNamespaceTest {
 protected:
  ClusterStoreTest() : RadosNamespaceTest(4 << 20, /*lock_duration_s=*/5) {}

  // Every object of the namespace in the data pool.
  std::vector<std::string> DataObjects() {
    std::vector<std::string> names;
    for (auto it = cluster_->data().nobjects_begin(); it != cluster_->data().nobjects_end(); ++it) {
      names.push_back(it->get_oid());
    }
    return names;
  }
};

}  // namespace test
}  // namespace dedupv1

// RadosNamespaceTest: the fixture of tests that need the test cluster
// (DEDUPV1_TEST_CEPH_CONF): RADOS options for a namespace no other test
// uses (rados_), a connection to it (cluster_), and every object of that
// namespace in both pools removed afterwards. A suite that needs another
// stripe size or lock lease passes them to the constructor; one that holds
// objects of its own (tables, engines) releases them in its TearDown before
// calling this one's.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "core/rados/rados_cluster.h"
#include "core/rados/rados_env_testutil.h"

namespace dedupv1 {
namespace test {

class RadosNamespaceTest : public ::testing::Test {
 protected:
  explicit RadosNamespaceTest(uint64_t stripe_size = 64 << 10, uint32_t lock_duration_s = 3)
      : stripe_size_(stripe_size), lock_duration_s_(lock_duration_s) {}

  void SetUp() override {
    Status s = TestRadosOptions(&rados_, stripe_size_, lock_duration_s_);
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = RadosCluster::Shared(rados_, &cluster_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void TearDown() override {
    if (cluster_) RemoveStoreObjects(cluster_.get());
  }

  RadosOptions rados_;
  std::shared_ptr<RadosCluster> cluster_;

 private:
  const uint64_t stripe_size_;
  const uint32_t lock_duration_s_;
};

}  // namespace test
}  // namespace dedupv1

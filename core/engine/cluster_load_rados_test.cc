// The load figures a cluster-scope gateway publishes in its heartbeat
// (design-15 2.7, core/rados/gateway_heartbeat.h): claims pending (own U
// entries not flipped yet) and the operations per shard of the shared chunk
// index, as ChunkIndex::stats() reports them. Needs the test cluster
// (DEDUPV1_TEST_CEPH_CONF).
#include <gtest/gtest.h>

#include "core/base/testutil.h"
#include "core/engine/system_testutil.h"
#include "core/rados/rados_env_testutil.h"

namespace dedupv1 {
namespace {

TEST(GatewayClusterLoad, ClaimsPendingUntilFlippedAndOpsPerShardCounted) {
  RadosOptions rados;
  ASSERT_TRUE(test::TestRadosOptions(&rados, 4 << 20, /*lock_duration_s=*/5).ok());
  test::TempDir dir;
  Options o = test::SmallSystemOptions(dir.path());
  o.storage_backend = "rados";
  rados.gateway = "gw-a";
  o.rados = rados;
  o.chunk_store.container_size = 1 << 20;
  o.chunk_index.rados_shards = 8;
  o.chunk_index.cluster_scope = true;
  o.chunk_index.claims.claim_hold_ms = 2000;
  o.volumes.push_back({"vol-gw-a", 8 << 20});
  ASSERT_TRUE(o.DerivePathsFrom(dir.path()).ok());
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::OpenStore(o, Env::Default(), &sys);
  ASSERT_TRUE(s.ok()) << s.ToString();
  Volume* v = test::Vol(sys.get(), "vol-gw-a");
  ASSERT_NE(v, nullptr);
  const auto data = test::RandomBytes(4 << 20, 11);
  ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(v->Sync().ok());

  ChunkClaimsStats st = sys->chunk_index()->stats().claims;
  EXPECT_GT(st.claims, 0u);
  EXPECT_EQ(st.shard_load.shards, 8u);
  EXPECT_GT(st.shard_load.total, 0u);
  EXPECT_GE(st.shard_load.max * st.shard_load.shards, st.shard_load.total);  // max >= mean
  EXPECT_LE(st.claims_pending, st.claims);
  // Write-back flips every claim: none pending after.
  ASSERT_TRUE(sys->chunk_index()->Flush().ok());
  st = sys->chunk_index()->stats().claims;
  EXPECT_EQ(st.claims_pending, 0u) << "claims " << st.claims << ", flips " << st.flips << ", lost "
                                   << st.flips_lost;
  EXPECT_EQ(st.flips + st.flips_lost, st.claims - st.claims_lost);
  ASSERT_TRUE(sys->Close().ok());

  std::shared_ptr<RadosCluster> cluster;
  if (RadosCluster::Shared(rados, &cluster).ok()) test::RemoveStoreObjects(cluster.get());
}

}  // namespace
}  // namespace dedupv1

// The write pipeline's run prefetch on a RADOS-backed chunk index: the
// chunk-index filter gets a run's lookups in one batch (FilterChain::
// PrepareRun, as WritePipeline::FilterAndStore calls it) and answers from it.
// Needs the Ceph cluster of DEDUPV1_TEST_CEPH_CONF.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>

#include "core/base/coding.h"
#include "core/base/env.h"
#include "core/base/testutil.h"
#include "core/rados/rados_cluster.h"
#include "filters/bloom_filter.h"
#include "filters/bloom_set.h"
#include "filters/chunk_index_filter.h"
#include "filters/filter_chain.h"
#include "index/chunk_index.h"

namespace dedupv1 {
namespace {

Fingerprint Fp(uint64_t seed) { return test::SeedFingerprint(seed); }

TEST(ChunkIndexFilterRadosTest, RunIsPrefetchedInOneBatch) {
  const char* conf = std::getenv("DEDUPV1_TEST_CEPH_CONF");
  ASSERT_NE(conf, nullptr) << "DEDUPV1_TEST_CEPH_CONF is not set: this test needs a Ceph cluster";
  ChunkIndexOptions o;
  o.table_backend = "rados";
  o.rados.conf_file = conf;
  o.rados.store = "t-" + std::to_string(getpid()) + "-cif";
  o.rados_shards = 16;
  std::shared_ptr<RadosCluster> cluster;
  ASSERT_TRUE(RadosCluster::Shared(o.rados, &cluster).ok());
  std::set<ContainerId> committed;
  std::unique_ptr<ChunkIndex> index;
  ASSERT_TRUE(ChunkIndex::Open(o, Env::Default(), [&](ContainerId c) { return committed.count(c) > 0; }, &index).ok());

  // 200 chunks in the table; the run has them and 100 new ones.
  std::vector<Fingerprint> known;
  for (uint64_t i = 0; i < 200; i++) {
    known.push_back(Fp(i));
    ASSERT_TRUE(index->PutNew(known.back(), 3).ok());
  }
  committed.insert(3);
  index->OnContainerCommitted(3, known);
  ASSERT_TRUE(index->Flush().ok());

  std::unique_ptr<BloomSet> bloom;
  ASSERT_TRUE(BloomSet::Create(10000, 0.01, &bloom).ok());
  for (const auto& fp : known) bloom->Add(fp);
  FilterChain chain;
  chain.Add(std::make_unique<BloomFilter>(bloom.get()));
  chain.Add(std::make_unique<ChunkIndexFilter>(index.get()));
  std::vector<ChunkRequest> chunks(300);
  for (size_t i = 0; i < chunks.size(); i++) chunks[i].fp = Fp(i);

  const uint64_t before = cluster->stats().TotalOps();
  {
    auto run = chain.PrepareRun(chunks);
    ASSERT_NE(run, nullptr);
    const uint64_t prefetch_ops = cluster->stats().TotalOps() - before;
    EXPECT_LE(prefetch_ops, 16u);  // one omap read per shard at most
    size_t known_count = 0;
    for (ChunkRequest& c : chunks) {
      Status error;
      FilterResult r = chain.Decide(&c, &error);
      ASSERT_NE(r, FilterResult::kError) << error.ToString();
      if (FilterChain::IsKnown(r)) {
        known_count++;
        EXPECT_EQ(c.container, 3u);
        EXPECT_TRUE(c.found_on_disk);
      }
    }
    EXPECT_EQ(known_count, 200u);
    EXPECT_EQ(cluster->stats().TotalOps() - before, prefetch_ops) << "a lookup went to the cluster";
  }
  ASSERT_TRUE(index->Close().ok());
  librados::IoCtx& io = cluster->index();
  std::vector<std::string> names;
  for (auto it = io.nobjects_begin(); it != io.nobjects_end(); ++it) names.push_back(it->get_oid());
  for (const auto& name : names) io.remove(name);
}

}  // namespace
}  // namespace dedupv1

// CountStoreShardKeys (`dedupv1d cluster --shards`, core/engine/shard_keys.h)
// against shard objects written by hand: exact counts per shard, paging past
// one listing, missing shards as 0, the shared and a slot's table. Needs the
// test cluster (DEDUPV1_TEST_CEPH_CONF).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/engine/shard_keys.h"
#include "core/rados/rados_env_testutil.h"
#include "index/rados_chunk_table.h"

namespace dedupv1 {
namespace {

class GatewayShardKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = test::ConnectTestRados(&cluster_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void TearDown() override {
    if (cluster_) test::RemoveIndexObjects(cluster_.get());
  }
  // |n| keys in object |oid|, in batches.
  void PutKeys(const std::string& oid, int n) {
    for (int done = 0; done < n;) {
      std::map<std::string, librados::bufferlist> kv;
      for (int i = 0; i < 500 && done < n; i++, done++) kv["e" + std::to_string(100000 + done)].append("v");
      librados::ObjectWriteOperation op;
      op.create(false);
      op.omap_set(kv);
      ASSERT_EQ(cluster_->index().operate(oid, &op), 0);
    }
  }
  void Touch(const std::string& oid) {
    librados::bufferlist bl;
    bl.append("h");
    ASSERT_EQ(cluster_->index().write_full(oid, bl), 0);
  }
  std::shared_ptr<RadosCluster> cluster_;
};

TEST_F(GatewayShardKeys, CountsEveryShardOfEveryTableThatExists) {
  const int bits = RadosChunkTable::ShardBits(4);
  Touch("ci.header");
  PutKeys(RadosChunkTable::ShardObject(0, bits), 2500);  // three listings of 1024
  PutKeys(RadosChunkTable::ShardObject(1, bits), 10);
  PutKeys(RadosChunkTable::ShardObject(3, bits), 30);     // shard 2 never written
  Touch("gw.gw-a/ci.header");
  PutKeys("gw.gw-a/" + RadosChunkTable::ShardObject(2, bits), 7);
  std::vector<ShardKeyCounts> tables;
  Status s = CountStoreShardKeys(cluster_.get(), 4, {"gw-a", "gw-b"}, &tables);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(tables.size(), 2u);  // gw-b has no table of its own
  EXPECT_EQ(tables[0].table, "ci");
  EXPECT_EQ(tables[0].keys, (std::vector<uint64_t>{2500, 10, 0, 30}));
  EXPECT_EQ(tables[0].Min(), 0u);
  EXPECT_EQ(tables[0].Max(), 2500u);
  EXPECT_DOUBLE_EQ(tables[0].Mean(), 635.0);
  EXPECT_DOUBLE_EQ(tables[0].MaxOverMean(), 2500.0 / 635.0);
  EXPECT_EQ(tables[1].table, "gw.gw-a/ci");
  EXPECT_EQ(tables[1].keys, (std::vector<uint64_t>{0, 0, 7, 0}));
  const std::string text = FormatShardKeys(tables);
  EXPECT_NE(text.find("chunk index ci: 4 shards, 2540 keys; per shard min 0, max 2500, mean 635.0, max/mean 3.94"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("chunk index gw.gw-a/ci: 4 shards, 7 keys"), std::string::npos) << text;
}

TEST_F(GatewayShardKeys, AStoreWithoutATableSaysSo) {
  std::vector<ShardKeyCounts> tables;
  ASSERT_TRUE(CountStoreShardKeys(cluster_.get(), 4, {"gw-a"}, &tables).ok());
  EXPECT_TRUE(tables.empty());
  EXPECT_EQ(FormatShardKeys(tables), "chunk index: no table in RADOS yet\n");
}

}  // namespace
}  // namespace dedupv1

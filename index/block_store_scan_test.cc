#include "index/block_store_scan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base/env.h"
#include "core/base/testutil.h"
#include "index/block_index.h"
#include "index/block_mapping.h"
#include "index/block_mapping_testutil.h"

namespace dedupv1 {
namespace {

constexpr uint32_t kBlock = 4096;

BlockMapping Mapping(uint64_t chunk, uint64_t version) {
  BlockMapping m(kBlock);
  BlockMappingItem item;
  item.fp.size = 20;
  item.fp.bytes[0] = 0x77;
  item.fp.bytes[1] = static_cast<uint8_t>(chunk);
  item.container = 3;
  item.size = kBlock;
  EXPECT_TRUE(m.Overlay(0, {item}).ok());
  m.set_version(version);
  return m;
}

std::string Value(const BlockId& owner, uint64_t version) {
  std::string v;
  Mapping(owner.block, version).Serialize(owner, &v);
  return v;
}

class BlockStoreScanTest : public ::testing::TestWithParam<KvBackend> {
 protected:
  void SetUp() override { ASSERT_TRUE(OpenKvStore(GetParam(), dir_.Sub("store"), Env::Default(), &store_).ok()); }
  void Put(const std::string& key, const std::string& value) {
    ASSERT_TRUE(store_->Write({{key, value, false}}).ok());
  }
  void Put(const BlockId& key, const std::string& value) { Put(EncodeBlockKey(key), value); }

  test::TempDir dir_;
  std::unique_ptr<KvStore> store_;
};

TEST_P(BlockStoreScanTest, IntactStoreHasNoProblems) {
  for (uint64_t b = 0; b < 20; b++) Put(BlockId{1, b}, Value({1, b}, b + 1));
  BlockStoreScan scan;
  std::vector<BlockId> keys;
  BlockStoreScanOptions o;
  o.on_key = [&](const BlockId& id) { keys.push_back(id); };
  ASSERT_TRUE(ScanBlockStore(store_.get(), o, &scan).ok());
  EXPECT_EQ(scan.records, 20u);
  EXPECT_EQ(scan.old_format, 0u);
  EXPECT_TRUE(scan.problems.empty());
  EXPECT_TRUE(scan.blocks.empty());
  EXPECT_EQ(keys.size(), 20u);
}

// Each kind of problem a key-value API can leave (a B+tree's repeated or
// out-of-order keys need a damaged file: block_index_test covers those).
TEST_P(BlockStoreScanTest, NamesEachProblem) {
  Put(BlockId{1, 1}, Value({1, 1}, 1));
  std::string unreadable = Value({1, 2}, 2);
  unreadable[20] ^= 0x01;
  Put(BlockId{1, 2}, unreadable);
  Put(BlockId{1, 356}, Value({1, 100}, 7));   // displaced
  Put("short-key", Value({1, 200}, 9));        // malformed, readable
  Put("junk", "x");                            // malformed, unreadable
  BlockStoreScan scan;
  ASSERT_TRUE(ScanBlockStore(store_.get(), BlockStoreScanOptions(), &scan).ok());
  EXPECT_EQ(scan.records, 5u);
  std::map<BlockStoreProblem::Kind, int> kinds;
  for (const BlockStoreProblem& p : scan.problems) kinds[p.kind]++;
  EXPECT_EQ(kinds[BlockStoreProblem::Kind::kUnreadable], 1);
  EXPECT_EQ(kinds[BlockStoreProblem::Kind::kDisplaced], 1);
  EXPECT_EQ(kinds[BlockStoreProblem::Kind::kMalformedKey], 2);
  // The blocks concerned: 100 and 200 lost their record, key 356 holds a stray.
  ASSERT_EQ(scan.blocks.size(), 3u);
  EXPECT_TRUE(scan.blocks.at({1, 100}).displaced);
  EXPECT_FALSE(scan.blocks.at({1, 100}).ambiguous_key);
  EXPECT_EQ(scan.blocks.at({1, 100}).newest_version, 7u);
  EXPECT_TRUE(scan.blocks.at({1, 200}).displaced);
  EXPECT_TRUE(scan.blocks.at({1, 356}).ambiguous_key);
  EXPECT_FALSE(scan.blocks.at({1, 356}).has_newest);
  for (const auto& [id, r] : scan.blocks) EXPECT_TRUE(r.unrepairable.empty()) << BlockIdString(id);

  std::vector<BlockId> repaired;
  ASSERT_TRUE(RepairBlockStore(store_.get(), scan, &repaired).ok());
  EXPECT_EQ(repaired.size(), 3u);
  ASSERT_TRUE(ScanBlockStore(store_.get(), BlockStoreScanOptions(), &scan).ok());
  // What cannot be repaired stays: the unreadable record and the junk key.
  ASSERT_EQ(scan.problems.size(), 2u);
  std::string v;
  ASSERT_TRUE(store_->Get(EncodeBlockKey({1, 100}), &v).ok());
  EXPECT_EQ(v, Value({1, 100}, 7));
  ASSERT_TRUE(store_->Get(EncodeBlockKey({1, 200}), &v).ok());
  EXPECT_TRUE(store_->Get(EncodeBlockKey({1, 356}), &v).IsNotFound());
  EXPECT_TRUE(store_->Get("short-key", &v).IsNotFound());
}

// A stray record is removed only if the block it belongs to is repaired too:
// here block 100's own key also holds an unreadable record, so its newest
// record is unknown and the stray (perhaps its only good copy) stays.
TEST_P(BlockStoreScanTest, StrayOfAnUnrepairableBlockIsKept) {
  std::string unreadable = Value({1, 100}, 9);
  unreadable[20] ^= 0x01;
  Put(BlockId{1, 100}, unreadable);
  Put(BlockId{1, 356}, Value({1, 100}, 7));
  BlockStoreScan scan;
  ASSERT_TRUE(ScanBlockStore(store_.get(), BlockStoreScanOptions(), &scan).ok());
  ASSERT_EQ(scan.blocks.size(), 2u);
  EXPECT_NE(scan.blocks.at({1, 100}).unrepairable.find("cannot be read"), std::string::npos);
  EXPECT_NE(scan.blocks.at({1, 356}).unrepairable.find("block 1/100"), std::string::npos);
  std::vector<BlockId> repaired;
  ASSERT_TRUE(RepairBlockStore(store_.get(), scan, &repaired).ok());
  EXPECT_TRUE(repaired.empty());
  std::string v;
  ASSERT_TRUE(store_->Get(EncodeBlockKey({1, 356}), &v).ok());
  EXPECT_EQ(v, Value({1, 100}, 7));
}

// A repair computed from a scan the store no longer matches writes nothing.
TEST_P(BlockStoreScanTest, RepairOfAStaleScanWritesNothing) {
  Put(BlockId{1, 356}, Value({1, 100}, 7));
  BlockStoreScan scan;
  ASSERT_TRUE(ScanBlockStore(store_.get(), BlockStoreScanOptions(), &scan).ok());
  Put(BlockId{1, 356}, Value({1, 356}, 8));  // rewritten meanwhile
  std::vector<BlockId> repaired;
  EXPECT_TRUE(RepairBlockStore(store_.get(), scan, &repaired).IsAborted());
  EXPECT_TRUE(repaired.empty());
  std::string v;
  EXPECT_TRUE(store_->Get(EncodeBlockKey({1, 100}), &v).IsNotFound());
  ASSERT_TRUE(store_->Get(EncodeBlockKey({1, 356}), &v).ok());
  EXPECT_EQ(v, Value({1, 356}, 8));
}

// Format-1 records are rewritten in format 2, in batches, with their key's id.
TEST_P(BlockStoreScanTest, UpgradesOldRecordsInBatches) {
  for (uint64_t b = 0; b < 50; b++) Put(BlockId{2, b}, test::SerializeFormatOne(Mapping(b, b + 1)));
  Put(BlockId{2, 50}, Value({2, 50}, 51));
  BlockStoreScanOptions o;
  o.upgrade_old_records = true;
  o.upgrade_batch = 7;
  BlockStoreScan scan;
  ASSERT_TRUE(ScanBlockStore(store_.get(), o, &scan).ok());
  EXPECT_EQ(scan.upgraded, 50u);
  EXPECT_EQ(scan.old_format, 0u);
  for (uint64_t b = 0; b <= 50; b++) {
    std::string v;
    ASSERT_TRUE(store_->Get(EncodeBlockKey({2, b}), &v).ok());
    EXPECT_EQ(v, Value({2, b}, b + 1)) << b;
  }
  ASSERT_TRUE(ScanBlockStore(store_.get(), o, &scan).ok());
  EXPECT_EQ(scan.upgraded, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, BlockStoreScanTest,
                         ::testing::Values(KvBackend::kTokyoCabinet, KvBackend::kLevelDb),
                         [](const ::testing::TestParamInfo<KvBackend>& info) {
                           return std::string(KvBackendName(info.param));
                         });

}  // namespace
}  // namespace dedupv1

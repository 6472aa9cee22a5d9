#include "log/log_event.h"

#include <gtest/gtest.h>

namespace dedupv1 {
namespace {

TEST(LogEventTest, TypeNames) {
  EXPECT_STREQ("CONTAINER_COMMITTED", LogEventTypeName(LogEventType::kContainerCommitted));
  EXPECT_STREQ("BLOCK_MAPPING_WRITTEN", LogEventTypeName(LogEventType::kBlockMappingWritten));
  EXPECT_STREQ("REPLAY_STOPPED", LogEventTypeName(LogEventType::kReplayStopped));
  EXPECT_STREQ("UNKNOWN", LogEventTypeName(static_cast<LogEventType>(999)));
}

TEST(LogEventTest, PayloadsRoundTrip) {
  SystemEventData sys;
  sys.dirty_start = true;
  SystemEventData sys2;
  ASSERT_TRUE(SystemEventData::Decode(sys.Encode(), &sys2).ok());
  EXPECT_TRUE(sys2.dirty_start);

  VolumeEventData vol{7, "backup-lun", 1ull << 40};
  VolumeEventData vol2;
  ASSERT_TRUE(VolumeEventData::Decode(vol.Encode(), &vol2).ok());
  EXPECT_EQ(7u, vol2.volume_id);
  EXPECT_EQ("backup-lun", vol2.name);
  EXPECT_EQ(1ull << 40, vol2.size);

  ContainerEventData c{12345};
  ContainerEventData c2;
  ASSERT_TRUE(ContainerEventData::Decode(c.Encode(), &c2).ok());
  EXPECT_EQ(12345u, c2.container);

  ContainerMergedData m{1000, {1000, 1010, 1020}};
  ContainerMergedData m2;
  ASSERT_TRUE(ContainerMergedData::Decode(m.Encode(), &m2).ok());
  EXPECT_EQ(1000u, m2.result);
  EXPECT_EQ(m.sources, m2.sources);

  BlockMappingWrittenData w;
  w.block = BlockId{3, 1ull << 40};
  w.old_mapping = "";
  w.new_mapping = std::string("new\0mapping", 11);
  BlockMappingWrittenData w2;
  ASSERT_TRUE(BlockMappingWrittenData::Decode(w.Encode(), &w2).ok());
  EXPECT_EQ(w.block, w2.block);
  EXPECT_EQ("", w2.old_mapping);
  EXPECT_EQ(w.new_mapping, w2.new_mapping);

  BlockMappingDeletedData d{BlockId{1, 2}, "old"};
  BlockMappingDeletedData d2;
  ASSERT_TRUE(BlockMappingDeletedData::Decode(d.Encode(), &d2).ok());
  EXPECT_EQ(d.block, d2.block);
  EXPECT_EQ("old", d2.old_mapping);

  ReplayEventData r{ReplayMode::kDirtyStart, 5, 99};
  ReplayEventData r2;
  ASSERT_TRUE(ReplayEventData::Decode(r.Encode(), &r2).ok());
  EXPECT_EQ(ReplayMode::kDirtyStart, r2.mode);
  EXPECT_EQ(5u, r2.from_id);
  EXPECT_EQ(99u, r2.to_id);
}

TEST(LogEventTest, DamagedPayloadsAreCorruption) {
  BlockMappingWrittenData w;
  w.block = BlockId{3, 4};
  w.old_mapping = "old";
  w.new_mapping = "new";
  std::string p = w.Encode();
  BlockMappingWrittenData out;
  out.old_mapping = "untouched";
  // Every truncation fails and leaves the output alone.
  for (size_t n = 0; n < p.size(); n++) {
    Status s = BlockMappingWrittenData::Decode(p.substr(0, n), &out);
    EXPECT_TRUE(s.IsCorruption()) << n << " " << s.ToString();
  }
  EXPECT_EQ("untouched", out.old_mapping);
  EXPECT_TRUE(BlockMappingWrittenData::Decode(p + "x", &out).IsCorruption());
  std::string bad_format = p;
  bad_format[0] = 9;
  Status s = BlockMappingWrittenData::Decode(bad_format, &out);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(std::string::npos, s.message().find("block mapping written")) << s.ToString();

  // A huge source count must not allocate: it is refused.
  ContainerMergedData m{1, {2}};
  std::string mp = m.Encode();
  mp[9] = static_cast<char>(0xff);
  mp[10] = static_cast<char>(0xff);
  ContainerMergedData m2;
  EXPECT_TRUE(ContainerMergedData::Decode(mp, &m2).IsCorruption());

  ReplayEventData r{ReplayMode::kDirect, 1, 2};
  std::string rp = r.Encode();
  rp[1] = 7;  // unknown mode
  ReplayEventData r2;
  EXPECT_TRUE(ReplayEventData::Decode(rp, &r2).IsCorruption());
}

}  // namespace
}  // namespace dedupv1

// The volume table: ids and uids stay with their volume whatever the config
// does (reorder, remove, add, grow); tables of older builds are read and get
// uids; a bad line is Corruption naming the file and line.
#include "core/engine/volume_table.h"

#include <gtest/gtest.h>

#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

const VolumeRecord* Find(const std::vector<VolumeRecord>& records, const std::string& name) {
  for (const auto& r : records) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(VolumeTableTest, IdsAndUidsStayWithTheirVolume) {
  std::vector<VolumeRecord> t;
  bool changed = false;
  ASSERT_TRUE(ApplyConfiguredVolumes({{"a", 1 << 20}, {"b", 2 << 20}, {"c", 3 << 20}}, &t, &changed).ok());
  EXPECT_TRUE(changed);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(Find(t, "a")->id, 1u);
  EXPECT_EQ(Find(t, "b")->id, 2u);
  EXPECT_EQ(Find(t, "c")->id, 3u);
  for (const auto& r : t) EXPECT_FALSE(IsZero(r.uid));
  EXPECT_NE(Find(t, "a")->uid, Find(t, "b")->uid);
  const std::vector<VolumeRecord> before = t;

  // b removed from the config, the others reordered, d added: ids and uids
  // of a and c stay, b keeps its line, d gets the next id.
  ASSERT_TRUE(ApplyConfiguredVolumes({{"d", 1 << 20}, {"c", 3 << 20}, {"a", 1 << 20}}, &t, &changed).ok());
  EXPECT_TRUE(changed);
  ASSERT_EQ(t.size(), 4u);
  for (const char* name : {"a", "b", "c"}) {
    EXPECT_EQ(Find(t, name)->id, Find(before, name)->id) << name;
    EXPECT_EQ(Find(t, name)->uid, Find(before, name)->uid) << name;
  }
  EXPECT_EQ(Find(t, "d")->id, 4u);

  // Nothing new: nothing to write. Growing is written; shrinking refused.
  ASSERT_TRUE(ApplyConfiguredVolumes({{"a", 1 << 20}}, &t, &changed).ok());
  EXPECT_FALSE(changed);
  ASSERT_TRUE(ApplyConfiguredVolumes({{"a", 4 << 20}}, &t, &changed).ok());
  EXPECT_TRUE(changed);
  EXPECT_EQ(Find(t, "a")->size, 4u << 20);
  EXPECT_EQ(Find(t, "a")->uid, Find(before, "a")->uid);
  Status s = ApplyConfiguredVolumes({{"a", 1 << 20}}, &t, &changed);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("shrinking"), std::string::npos) << s.ToString();
}

TEST(VolumeTableTest, OlderTablesAreReadAndGetUids) {
  test::TempDir dir;
  const std::string path = dir.Sub("volumes");
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, "2 b 1048576\n1 a 4096\n").ok());
  std::vector<VolumeRecord> t;
  ASSERT_TRUE(ReadVolumeTable(Env::Default(), path, &t).ok());
  ASSERT_EQ(t.size(), 2u);
  EXPECT_TRUE(IsZero(t[0].uid));
  bool changed = false;
  ASSERT_TRUE(ApplyConfiguredVolumes({{"a", 4096}}, &t, &changed).ok());
  EXPECT_TRUE(changed);  // uids were made, for the unconfigured b too
  ASSERT_TRUE(WriteVolumeTable(Env::Default(), path, t).ok());
  std::vector<VolumeRecord> again;
  ASSERT_TRUE(ReadVolumeTable(Env::Default(), path, &again).ok());
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(Find(again, "a")->id, 1u);
  EXPECT_EQ(Find(again, "b")->id, 2u);
  EXPECT_EQ(Find(again, "a")->uid, Find(t, "a")->uid);
  EXPECT_EQ(Find(again, "b")->uid, Find(t, "b")->uid);
  EXPECT_FALSE(IsZero(Find(again, "b")->uid));
}

TEST(VolumeTableTest, BadLinesAreCorruptionNamingTheLine) {
  test::TempDir dir;
  const std::string path = dir.Sub("volumes");
  std::vector<VolumeRecord> t;
  for (const char* bad : {"1 a\n", "1 a 4096 nothex\n", "1 a 4096 00000000000000000000000000000000\n",
                          "1 a 4096 0123456789abcdef0123456789abcdef extra\n"}) {
    ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, std::string("2 b 512\n") + bad).ok());
    Status s = ReadVolumeTable(Env::Default(), path, &t);
    EXPECT_TRUE(s.IsCorruption()) << bad;
    EXPECT_NE(s.message().find(path + ":2"), std::string::npos) << s.ToString();
  }
}

// Issue 19: a flipped byte in a volume name read as another valid table, so
// the configured volume got a new, empty id and its LUN read zeros. Every
// byte of a table this build wrote is covered by its checksum line.
TEST(VolumeTableTest, EveryFlippedByteIsCorruptionNamingTheFile) {
  test::TempDir dir;
  const std::string path = dir.Sub("volumes");
  std::vector<VolumeRecord> t;
  bool changed = false;
  ASSERT_TRUE(ApplyConfiguredVolumes({{"vol1", 1 << 20}, {"vol2", 2 << 20}}, &t, &changed).ok());
  ASSERT_TRUE(WriteVolumeTable(Env::Default(), path, t).ok());
  std::string good;
  ASSERT_TRUE(ReadFileToString(Env::Default(), path, &good).ok());
  bool rewrite = true;
  std::vector<VolumeRecord> read;
  ASSERT_TRUE(ReadVolumeTable(Env::Default(), path, &read, &rewrite).ok());
  EXPECT_FALSE(rewrite);
  ASSERT_EQ(read.size(), 2u);
  for (size_t i = 0; i < good.size(); i++) {
    for (uint8_t mask : {0x01, 0x20}) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, bad).ok());
      Status s = ReadVolumeTable(Env::Default(), path, &read);
      ASSERT_TRUE(s.IsCorruption()) << "byte " << i << " ^ " << int(mask) << ": " << s.ToString();
      EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
    }
  }
  // Cut short (the checksum line lost): refused too, the header says there
  // was one.
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, good.substr(0, good.rfind("crc "))).ok());
  EXPECT_TRUE(ReadVolumeTable(Env::Default(), path, &read).IsCorruption());
}

TEST(VolumeTableTest, TableOfAnOlderBuildIsReadAndMarkedForRewrite) {
  test::TempDir dir;
  const std::string path = dir.Sub("volumes");
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, "1 a 4096 0123456789abcdef0123456789abcdef\n").ok());
  std::vector<VolumeRecord> t;
  bool rewrite = false;
  ASSERT_TRUE(ReadVolumeTable(Env::Default(), path, &t, &rewrite).ok());
  EXPECT_TRUE(rewrite);
  ASSERT_EQ(t.size(), 1u);
  ASSERT_TRUE(WriteVolumeTable(Env::Default(), path, t).ok());
  ASSERT_TRUE(ReadVolumeTable(Env::Default(), path, &t, &rewrite).ok());
  EXPECT_FALSE(rewrite);
}

TEST(IdentityTest, InstanceIdIsMadeOnceAndChecked) {
  test::TempDir dir;
  Id128 id{}, again{};
  EXPECT_TRUE(ReadInstanceId(Env::Default(), dir.path(), &id).IsNotFound());
  ASSERT_TRUE(LoadOrCreateInstanceId(Env::Default(), dir.path(), &id).ok());
  EXPECT_FALSE(IsZero(id));
  ASSERT_TRUE(LoadOrCreateInstanceId(Env::Default(), dir.path(), &again).ok());
  EXPECT_EQ(id, again);
  Id128 parsed{};
  ASSERT_TRUE(ParseId128Hex(Id128ToHex(id), &parsed));
  EXPECT_EQ(parsed, id);
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), dir.Sub(kInstanceIdFile), "xyz\n").ok());
  Status s = LoadOrCreateInstanceId(Env::Default(), dir.path(), &again);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find(kInstanceIdFile), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace dedupv1

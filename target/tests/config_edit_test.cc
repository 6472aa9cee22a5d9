// The admin commands' config edits (target/config_edit.h): one line added or
// changed, everything else of the file kept; the file replaced with its owner
// and mode.
#include "target/config_edit.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/config.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

const char kConfig[] =
    "# my store\n"
    "data-dir = /srv/dedupv1\n"
    "volume = backup1 100G   # the big one\n"
    "volume = backup2 10G\n"
    "\n"
    "chunk-index.size = 1G\n";

TEST(ConfigEditTest, AddGoesAfterTheLastVolumeLineAndKeepsTheRest) {
  EXPECT_EQ(AddVolumeLine(kConfig, "backup3", "5G"),
            "# my store\n"
            "data-dir = /srv/dedupv1\n"
            "volume = backup1 100G   # the big one\n"
            "volume = backup2 10G\n"
            "volume = backup3 5G\n"
            "\n"
            "chunk-index.size = 1G\n");
  EXPECT_EQ(AddVolumeLine("data-dir = /x\n", "v", "1G"), "data-dir = /x\nvolume = v 1G\n");
  Config c;
  ASSERT_TRUE(Config::Parse(AddVolumeLine(kConfig, "backup3", "5G"), "test.conf", &c).ok());
}

TEST(ConfigEditTest, GrowChangesOnlyThatLineAndKeepsItsComment) {
  std::string out;
  ASSERT_TRUE(SetVolumeSize(kConfig, "backup1", "200G", &out).ok());
  EXPECT_EQ(out,
            "# my store\n"
            "data-dir = /srv/dedupv1\n"
            "volume = backup1 200G  # the big one\n"
            "volume = backup2 10G\n"
            "\n"
            "chunk-index.size = 1G\n");
  // A name that is a prefix of another, a commented-out line: not matched.
  EXPECT_TRUE(SetVolumeSize("volume = backup10 1G\n# volume = backup1 1G\n", "backup1", "2G", &out).IsNotFound());
  // The volume's policy stays (a grow must not turn an off volume inline).
  ASSERT_TRUE(SetVolumeSize("volume = vm1 10G policy=off  # db\n", "vm1", "20G", &out).ok());
  EXPECT_EQ(out, "volume = vm1 20G policy=off  # db\n");
  ASSERT_TRUE(SetVolumeSize("volume =  vm1,10G,policy=off\n", "vm1", "20G", &out).ok());
  EXPECT_EQ(out, "volume = vm1 20G policy=off\n");
}

TEST(ConfigEditTest, PolicyIsAddedReplacedOrDroppedForInline) {
  EXPECT_EQ(AddVolumeLine("volume = a 1G\n", "vm1", "10G", "off"), "volume = a 1G\nvolume = vm1 10G policy=off\n");
  std::string out;
  ASSERT_TRUE(SetVolumePolicy(kConfig, "backup1", "off", &out).ok());
  EXPECT_EQ(out,
            "# my store\n"
            "data-dir = /srv/dedupv1\n"
            "volume = backup1 100G policy=off  # the big one\n"
            "volume = backup2 10G\n"
            "\n"
            "chunk-index.size = 1G\n");
  std::string again;
  ASSERT_TRUE(SetVolumePolicy(out, "backup1", "off", &again).ok());
  EXPECT_EQ(again, out);  // the word replaced, not added twice
  // inline is the default: the word goes.
  ASSERT_TRUE(SetVolumePolicy("volume = vm1,10G,policy=off  # db\n", "vm1", "inline", &out).ok());
  EXPECT_EQ(out, "volume = vm1 10G  # db\n");
  EXPECT_TRUE(SetVolumePolicy(kConfig, "backup", "off", &out).IsNotFound());
  Config c;
  ASSERT_TRUE(SetVolumePolicy(kConfig, "backup2", "off", &out).ok());
  ASSERT_TRUE(Config::Parse(out, "test.conf", &c).ok());
}

TEST(ConfigEditTest, RemoveTakesOnlyThatLine) {
  std::string out;
  ASSERT_TRUE(RemoveVolumeLine(kConfig, "backup1", &out).ok());
  EXPECT_EQ(out,
            "# my store\n"
            "data-dir = /srv/dedupv1\n"
            "volume = backup2 10G\n"
            "\n"
            "chunk-index.size = 1G\n");
  EXPECT_TRUE(RemoveVolumeLine(kConfig, "backup", &out).IsNotFound());
}

TEST(ConfigEditTest, ReplaceKeepsModeAndOwner) {
  test::TempDir dir;
  const std::string path = JoinPath(dir.path(), "dedupv1.conf");
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, kConfig).ok());
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  ASSERT_TRUE(ReplaceConfigFile(Env::Default(), path, "volume = a 1G\n").ok());
  std::string text;
  ASSERT_TRUE(ReadFileToString(Env::Default(), path, &text).ok());
  EXPECT_EQ(text, "volume = a 1G\n");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_FALSE(Env::Default()->FileExists(path + ".dedupv1d-new"));
  EXPECT_TRUE(ReplaceConfigFile(Env::Default(), JoinPath(dir.path(), "missing.conf"), "x").IsIOError());
}

// targets.conf's lunN.conf links to the one config: the link stays a link.
TEST(ConfigEditTest, ReplaceThroughASymlinkReplacesItsTarget) {
  test::TempDir dir;
  const std::string path = JoinPath(dir.path(), "dedupv1.conf");
  const std::string link = JoinPath(dir.path(), "lun1.conf");
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, kConfig).ok());
  ASSERT_EQ(::symlink("dedupv1.conf", link.c_str()), 0);
  ASSERT_TRUE(ReplaceConfigFile(Env::Default(), link, "volume = a 1G\n").ok());
  struct stat st;
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  std::string text;
  ASSERT_TRUE(ReadFileToString(Env::Default(), path, &text).ok());
  EXPECT_EQ(text, "volume = a 1G\n");
}

}  // namespace
}  // namespace dedupv1

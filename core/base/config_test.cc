#include "core/base/config.h"

#include <gtest/gtest.h>

#include "core/base/env.h"
#include "core/base/fault_injection_env.h"
#include "core/base/testutil.h"

namespace dedupv1 {

// Config::Load reads through the Env it is given, so a fault injected there
// reaches it and is reported with the file's name.
TEST(ConfigTest, LoadReadsThroughTheGivenEnv) {
  test::TempDir dir;
  const std::string path = dir.Sub("dedupv1.conf");
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, "block-size = 64K\n").ok());
  FaultInjectionEnv env(Env::Default());
  Config c;
  ASSERT_TRUE(Config::Load(&env, path, &c).ok());
  ASSERT_EQ(c.entries().size(), 1u);
  EXPECT_EQ(c.entries()[0].value, "64K");
  EXPECT_EQ(c.dir(), dir.path());

  env.AddRule({FaultInjectionEnv::Op::kRead, "dedupv1.conf", FaultInjectionEnv::Fault::kEIO});
  Config failed;
  Status s = Config::Load(&env, path, &failed);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.ToString().find("cannot read config file"), std::string::npos) << s.ToString();
  EXPECT_GE(env.faults_fired(), 1);
}

TEST(ConfigTest, ParsesKeysValuesCommentsAndLines) {
  Config c;
  ASSERT_TRUE(Config::Parse("# comment\n\nblock-size = 128K  # trailing\nvolume=a 1G\nvolume = b 2G\n",
                            "test.conf", &c).ok());
  ASSERT_EQ(c.entries().size(), 3u);
  EXPECT_EQ(c.entries()[0].key, "block-size");
  EXPECT_EQ(c.entries()[0].value, "128K");
  EXPECT_EQ(c.entries()[0].line, 3);
  EXPECT_EQ(c.entries()[2].value, "b 2G");
  EXPECT_EQ(c.entries()[2].line, 5);
}

TEST(ConfigTest, RefusesLineWithoutEqualsNamingTheLine) {
  Config c;
  Status s = Config::Parse("a = 1\nthis is wrong\n", "x.conf", &c);
  ASSERT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("x.conf:2"), std::string::npos) << s.ToString();
}

TEST(ConfigTest, ParsesSizes) {
  uint64_t v;
  ASSERT_TRUE(ParseSize("4096", &v).ok()); EXPECT_EQ(v, 4096u);
  ASSERT_TRUE(ParseSize("4K", &v).ok()); EXPECT_EQ(v, 4096u);
  ASSERT_TRUE(ParseSize("1M", &v).ok()); EXPECT_EQ(v, 1u << 20);
  ASSERT_TRUE(ParseSize("10T", &v).ok()); EXPECT_EQ(v, 10ULL << 40);
  ASSERT_TRUE(ParseSize("1.5G", &v).ok()); EXPECT_EQ(v, 3ULL << 29);
  ASSERT_TRUE(ParseSize("2 GiB", &v).ok()); EXPECT_EQ(v, 2ULL << 30);
  EXPECT_FALSE(ParseSize("", &v).ok());
  EXPECT_FALSE(ParseSize("12Q", &v).ok());
  EXPECT_FALSE(ParseSize("K", &v).ok());
  EXPECT_FALSE(ParseSize("-1", &v).ok());
  EXPECT_FALSE(ParseSize("99999999P", &v).ok());
}

TEST(ConfigTest, ParsesDurationsAndBools) {
  uint64_t ms;
  ASSERT_TRUE(ParseDurationMs("200ms", &ms).ok()); EXPECT_EQ(ms, 200u);
  ASSERT_TRUE(ParseDurationMs("4s", &ms).ok()); EXPECT_EQ(ms, 4000u);
  ASSERT_TRUE(ParseDurationMs("1m", &ms).ok()); EXPECT_EQ(ms, 60000u);
  EXPECT_FALSE(ParseDurationMs("soon", &ms).ok());
  bool b;
  ASSERT_TRUE(ParseBool("yes", &b).ok()); EXPECT_TRUE(b);
  ASSERT_TRUE(ParseBool("off", &b).ok()); EXPECT_FALSE(b);
  EXPECT_FALSE(ParseBool("maybe", &b).ok());
}

TEST(ConfigTest, HumanBytes) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(3ULL << 30), "3.0 GiB");
}

}  // namespace dedupv1

// The target.* config keys dedupv1d uses (target/target_options.cc):
// defaults, the accepted forms, refusals naming the key and line, cross-key
// rules, and the round trip through ToString. And the whole file as
// ServiceOptions reads it: every key of every layer is documented in
// docs/configuration.md and shown by ToString; a key no layer knows is
// refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "core/base/config.h"
#include "core/base/testutil.h"
#include "target/service_options.h"

namespace dedupv1 {
namespace {

Status FromText(const std::string& text, ServiceOptions* o) {
  Config c;
  Status s = Config::Parse(text, "t.conf", &c);
  if (!s.ok()) return s;
  return ServiceOptions::FromConfig(c, o);
}

void ExpectRefused(const std::string& text, const std::string& needle) {
  ServiceOptions o;
  Status s = FromText(text, &o);
  ASSERT_TRUE(s.IsInvalidArgument()) << "accepted: " << text;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
}

TEST(TargetOptionsTest, Defaults) {
  ServiceOptions o;
  ASSERT_TRUE(FromText("volume = v 1G\n", &o).ok());
  EXPECT_EQ(o.target.iqn, "iqn.2026-11.org.dedupv1:storage");
  EXPECT_EQ(o.target.portal, "0.0.0.0:3260");
  EXPECT_EQ(o.target.control_port, 0u);
  EXPECT_TRUE(o.target.initiator_addresses.empty());
  EXPECT_TRUE(o.target.initiator_names.empty());
  EXPECT_TRUE(o.target.chap_user.empty());
  EXPECT_TRUE(o.target.discovery_auth);
  EXPECT_NE(o.ToString().find("target.initiator-address = ALL\n"), std::string::npos);
  ASSERT_TRUE(FromText("target.discovery-auth = false\n", &o).ok());
  EXPECT_FALSE(o.target.discovery_auth);
  EXPECT_NE(o.ToString().find("target.discovery-auth = false\n"), std::string::npos);
  ExpectRefused("target.discovery-auth = maybe\n", "t.conf:1: target.discovery-auth");
}

TEST(TargetOptionsTest, AcceptedValues) {
  ServiceOptions o;
  ASSERT_TRUE(FromText("target.iqn = iqn.2026-11.com.example.backup:dedup.1\n"
                       "target.portal = [::1]:3261\n"
                       "target.control-port = 32767\n"
                       "target.initiator-address = 10.0.0.5, 10.1.0.0/16 [fd00::]/64\n"
                       "target.chap-user = backup\n"
                       "target.chap-password = twelve-chars\n",
                       &o)
                  .ok());
  EXPECT_EQ(o.target.iqn, "iqn.2026-11.com.example.backup:dedup.1");
  EXPECT_EQ(o.target.portal, "[::1]:3261");
  EXPECT_EQ(o.target.control_port, 32767u);
  EXPECT_EQ(o.target.initiator_addresses,
            (std::vector<std::string>{"10.0.0.5", "10.1.0.0/16", "[fd00::]/64"}));
  EXPECT_EQ(o.target.chap_password, "twelve-chars");
  EXPECT_NE(o.ToString().find("target.chap-password = (set)\n"), std::string::npos)
      << "the secret must not be shown";
  for (const char* name : {"eui.0123456789ABCDEF", "naa.60014055f5d7a5e1"}) {
    EXPECT_TRUE(FromText(std::string("target.iqn = ") + name + "\n", &o).ok()) << name;
  }
  ASSERT_TRUE(FromText("target.initiator-name = iqn.2026-11.org.example:a iqn.2026-11.org.example:b\n", &o).ok());
  EXPECT_EQ(o.target.initiator_names.size(), 2u);
}

TEST(TargetOptionsTest, RefusedValuesNameKeyAndLine) {
  ExpectRefused("\ntarget.iqn = iqn.2026-11.org.Example:x\n", "t.conf:2: target.iqn");
  ExpectRefused("target.iqn = iqn.2026-13.org.example\n", "month");
  ExpectRefused("target.iqn = iqn.2026-11\n", "date");
  ExpectRefused("target.iqn = iqn.2026-11.org..example\n", "reversed domain");
  ExpectRefused("target.iqn = iqn.2026-11.org.example:a b\n", "not allowed");
  ExpectRefused("target.iqn = storage\n", "iqn., eui. or naa.");
  ExpectRefused("target.iqn = eui.0123\n", "16 hex digits");
  ExpectRefused("target.portal = localhost:3260\n", "numeric IPv4");
  ExpectRefused("target.portal = 127.0.0.1\n", "target.portal");
  ExpectRefused("target.portal = 127.0.0.1:0\n", "port must be 1..65535");
  ExpectRefused("target.portal = ::1:3260\n", "[ADDR]:PORT");
  ExpectRefused("target.control-port = 40000\n", "0..32767");
  ExpectRefused("target.initiator-address = 10.0.0.0/33\n", "target.initiator-address '10.0.0.0/33'");
  ExpectRefused("target.initiator-address = backup-host\n", "must be ALL");
  ExpectRefused("target.initiator-name = backup-host\n", "not an iSCSI name");
  ExpectRefused("target.chap-user = a,b\ntarget.chap-password = twelve-chars\n", "target.chap-user");
  ExpectRefused("target.chap-user = u\ntarget.chap-password = short\n", "12..255");
}

TEST(TargetOptionsTest, CrossKeyRules) {
  ExpectRefused("target.chap-user = backup\n", "set both or neither");
  ExpectRefused("target.chap-password = twelve-chars\n", "set both or neither");
  ExpectRefused("target.initiator-address = ALL\ntarget.initiator-name = iqn.2026-11.org.example:a\n",
                "no effect");
  // A later empty value clears an earlier one.
  ServiceOptions o;
  ASSERT_TRUE(FromText("target.chap-user = backup\ntarget.chap-password = twelve-chars\n"
                       "target.chap-user =\ntarget.chap-password =\n",
                       &o)
                  .ok());
  EXPECT_TRUE(o.target.chap_user.empty());
}

TEST(TargetOptionsTest, RoundTripThroughToString) {
  ServiceOptions o;
  ASSERT_TRUE(FromText("target.iqn = iqn.2026-11.com.example:t\n"
                       "target.portal = 10.0.0.5:3260\n"
                       "target.initiator-name = iqn.2026-11.org.example:a\n"
                       "volume = v 1G\n",
                       &o)
                  .ok());
  ServiceOptions again;
  Status s = FromText(o.ToString(), &again);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << o.ToString();
  EXPECT_EQ(again.ToString(), o.ToString());
  EXPECT_EQ(again.target.initiator_names, o.target.initiator_names);
  EXPECT_TRUE(again.target.initiator_addresses.empty());
}

// Every key of every layer appears in the effective configuration.
TEST(ServiceOptionsTest, EveryKeyAppearsInToString) {
  ServiceOptions o;
  ASSERT_TRUE(FromText("volume = v 1G\n", &o).ok());
  const std::string text = "\n" + o.ToString();
  for (const auto& key : ServiceOptions::Keys()) {
    EXPECT_NE(text.find("\n" + key + " = "), std::string::npos) << key << " is missing from ToString()";
  }
  // The engine's settings, then monitor.*, target.*, and the volumes last.
  EXPECT_LT(text.find("\nlog.hard-limit = "), text.find("\nmonitor.enabled = "));
  EXPECT_LT(text.find("\nmonitor.token = "), text.find("\ntarget.iqn = "));
  EXPECT_LT(text.find("\ntarget.discovery-auth = "), text.find("\nvolume = v "));
}

// A key no layer knows is refused, also under a layer's prefix (the engine
// alone passes over target.* and monitor.*; the whole file's reader does not).
TEST(ServiceOptionsTest, UnknownKeysOfEveryLayerAreRefused) {
  ExpectRefused("volume = v 1G\n\ntarget.iqnn = iqn.2026-11.org.example:t\n", "t.conf:3: unknown key 'target.iqnn'");
  ExpectRefused("monitor.colour = blue\n", "t.conf:1: unknown key 'monitor.colour'");
  ExpectRefused("chunk-index.sise = 1G\n", "t.conf:1: unknown key 'chunk-index.sise'");
  // The first bad line is reported, whichever layer owns it.
  ExpectRefused("block-size = 3000\ntarget.iqn = storage\n", "t.conf:1: block-size");
  ExpectRefused("target.iqn = storage\nblock-size = 3000\n", "t.conf:1: target.iqn");
  ExpectRefused("monitor.port = 0\n", "t.conf:1: monitor.port: monitor.port must be 1..65535");
  ExpectRefused("monitor.host = 0.0.0.0\n", "t.conf: monitor.host 0.0.0.0 is not a loopback address");
  ServiceOptions o;
  ASSERT_TRUE(FromText("monitor.host = 0.0.0.0\nmonitor.token = s3cret\n", &o).ok());
  EXPECT_EQ(o.monitor.host, "0.0.0.0");
  EXPECT_NE(o.ToString().find("monitor.token = (set)\n"), std::string::npos) << "the token must not be shown";
}

TEST(ServiceOptionsTest, EveryKeyIsDocumentedAndEveryDocumentedKeyExists) {
  const std::string path = test::FindSourceFile("docs/configuration.md");
  ASSERT_FALSE(path.empty()) << "docs/configuration.md not found above the binary or the working directory";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string doc = buf.str();

  const auto keys = ServiceOptions::Keys();
  ASSERT_FALSE(keys.empty());
  for (const auto& key : keys) {
    EXPECT_NE(doc.find("| `" + key + "` |"), std::string::npos)
        << "key " << key << " has no row in " << path;
  }
  // The first column of the key table lists only real keys.
  const std::set<std::string> known(keys.begin(), keys.end());
  std::regex row(R"(^\| `([a-z0-9.\-]+)` \|)");
  std::istringstream lines(doc);
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    rows++;
    EXPECT_TRUE(known.count(m[1].str())) << path << " documents unknown key " << m[1].str();
  }
  EXPECT_EQ(rows, static_cast<int>(keys.size()));
}

}  // namespace
}  // namespace dedupv1

// The target.* config keys dedupv1d uses (core/options.cc): defaults, the
// accepted forms, refusals naming the key and line, cross-key rules, and the
// round trip through ToString.
#include <gtest/gtest.h>

#include <string>

#include "core/config.h"
#include "core/options.h"

namespace dedupv1 {
namespace {

Status FromText(const std::string& text, Options* o) {
  Config c;
  Status s = Config::Parse(text, "t.conf", &c);
  if (!s.ok()) return s;
  return Options::FromConfig(c, o);
}

void ExpectRefused(const std::string& text, const std::string& needle) {
  Options o;
  Status s = FromText(text, &o);
  ASSERT_TRUE(s.IsInvalidArgument()) << "accepted: " << text;
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
}

TEST(TargetOptionsTest, Defaults) {
  Options o;
  ASSERT_TRUE(FromText("volume = v 1G\n", &o).ok());
  EXPECT_EQ(o.target_iqn, "iqn.2026-11.org.dedupv1:storage");
  EXPECT_EQ(o.target_portal, "0.0.0.0:3260");
  EXPECT_EQ(o.target_control_port, 0u);
  EXPECT_TRUE(o.target_initiator_addresses.empty());
  EXPECT_TRUE(o.target_initiator_names.empty());
  EXPECT_TRUE(o.target_chap_user.empty());
  EXPECT_TRUE(o.target_discovery_auth);
  EXPECT_NE(o.ToString().find("target.initiator-address = ALL\n"), std::string::npos);
  ASSERT_TRUE(FromText("target.discovery-auth = false\n", &o).ok());
  EXPECT_FALSE(o.target_discovery_auth);
  EXPECT_NE(o.ToString().find("target.discovery-auth = false\n"), std::string::npos);
  ExpectRefused("target.discovery-auth = maybe\n", "t.conf:1: target.discovery-auth");
}

TEST(TargetOptionsTest, AcceptedValues) {
  Options o;
  ASSERT_TRUE(FromText("target.iqn = iqn.2026-11.com.example.backup:dedup.1\n"
                       "target.portal = [::1]:3261\n"
                       "target.control-port = 32767\n"
                       "target.initiator-address = 10.0.0.5, 10.1.0.0/16 [fd00::]/64\n"
                       "target.chap-user = backup\n"
                       "target.chap-password = twelve-chars\n",
                       &o)
                  .ok());
  EXPECT_EQ(o.target_iqn, "iqn.2026-11.com.example.backup:dedup.1");
  EXPECT_EQ(o.target_portal, "[::1]:3261");
  EXPECT_EQ(o.target_control_port, 32767u);
  EXPECT_EQ(o.target_initiator_addresses,
            (std::vector<std::string>{"10.0.0.5", "10.1.0.0/16", "[fd00::]/64"}));
  EXPECT_EQ(o.target_chap_password, "twelve-chars");
  EXPECT_NE(o.ToString().find("target.chap-password = (set)\n"), std::string::npos)
      << "the secret must not be shown";
  for (const char* name : {"eui.0123456789ABCDEF", "naa.60014055f5d7a5e1"}) {
    EXPECT_TRUE(FromText(std::string("target.iqn = ") + name + "\n", &o).ok()) << name;
  }
  ASSERT_TRUE(FromText("target.initiator-name = iqn.2026-11.org.example:a iqn.2026-11.org.example:b\n", &o).ok());
  EXPECT_EQ(o.target_initiator_names.size(), 2u);
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
  Options o;
  ASSERT_TRUE(FromText("target.chap-user = backup\ntarget.chap-password = twelve-chars\n"
                       "target.chap-user =\ntarget.chap-password =\n",
                       &o)
                  .ok());
  EXPECT_TRUE(o.target_chap_user.empty());
}

TEST(TargetOptionsTest, RoundTripThroughToString) {
  Options o;
  ASSERT_TRUE(FromText("target.iqn = iqn.2026-11.com.example:t\n"
                       "target.portal = 10.0.0.5:3260\n"
                       "target.initiator-name = iqn.2026-11.org.example:a\n"
                       "volume = v 1G\n",
                       &o)
                  .ok());
  Options again;
  Status s = FromText(o.ToString(), &again);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << o.ToString();
  EXPECT_EQ(again.ToString(), o.ToString());
  EXPECT_EQ(again.target_initiator_names, o.target_initiator_names);
  EXPECT_TRUE(again.target_initiator_addresses.empty());
}

}  // namespace
}  // namespace dedupv1

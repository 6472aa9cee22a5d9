// Tests of RadosDeadInbox (a slot's inbox of chunks index GC found dead)
// against the test cluster of DEDUPV1_TEST_CEPH_CONF, one namespace per test.
#include "index/dead_inbox.h"

#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "core/rados/rados_test_fixture.h"

namespace dedupv1 {
namespace {

DeadChunk Chunk(ContainerId container, uint64_t i, size_t fp_size = 20) {
  std::mt19937_64 rng(container * 7919 + i);
  DeadChunk c;
  c.container = container;
  c.fp.size = static_cast<uint8_t>(fp_size);
  for (size_t b = 0; b < fp_size; b++) c.fp.bytes[b] = static_cast<uint8_t>(rng());
  return c;
}

class GatewayDeadInbox : public test::RadosNamespaceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(RadosNamespaceTest::SetUp());
    inbox_ = std::make_unique<RadosDeadInbox>(cluster_);
  }

  // Every chunk of |slot|'s inbox, paged by |page|.
  std::vector<DeadChunk> ReadAll(const std::string& slot, size_t page, size_t* pages) {
    std::vector<DeadChunk> all, got;
    std::string after, last;
    *pages = 0;
    for (int i = 0; i < 1000; i++) {
      Status s = inbox_->ReadPage(slot, after, page, &got, &last);
      EXPECT_TRUE(s.ok()) << s.ToString();
      (*pages)++;
      all.insert(all.end(), got.begin(), got.end());
      if (got.size() < page) break;
      after = last;
    }
    return all;
  }

  std::unique_ptr<RadosDeadInbox> inbox_;
};

TEST_F(GatewayDeadInbox, AbsentInboxIsEmpty) {
  std::vector<DeadChunk> got = {Chunk(1, 1)};
  std::string last = "x";
  ASSERT_TRUE(inbox_->ReadPage("a", "", 10, &got, &last).ok());
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(last, "");
  EXPECT_TRUE(inbox_->Remove("a", {RadosDeadInbox::KeyOf(Chunk(1, 1))}).ok());
}

TEST_F(GatewayDeadInbox, AppendPageRemove) {
  // Containers of slot 1 and 2 (ids slot<<48 + seq), 20- and 32-byte fps.
  std::vector<DeadChunk> in;
  for (uint64_t i = 0; i < 25; i++) in.push_back(Chunk((uint64_t{2} << 48) + i % 3, i));
  for (uint64_t i = 0; i < 12; i++) in.push_back(Chunk((uint64_t{1} << 48) + 300 + i, i, 32));
  ASSERT_TRUE(inbox_->Append("a", {in.begin(), in.begin() + 20}).ok());
  ASSERT_TRUE(inbox_->Append("a", {in.begin() + 15, in.end()}).ok());  // overlap: appended twice, kept once
  ASSERT_TRUE(inbox_->Append("b", {Chunk(9, 9)}).ok());

  size_t pages = 0;
  std::vector<DeadChunk> all = ReadAll("a", 10, &pages);
  ASSERT_EQ(all.size(), in.size());
  EXPECT_EQ(pages, 4u);
  for (size_t i = 1; i < all.size(); i++) EXPECT_LE(all[i - 1].container, all[i].container) << "key order";
  for (const DeadChunk& c : in) EXPECT_NE(std::find(all.begin(), all.end(), c), all.end());

  std::vector<std::string> keys;
  for (size_t i = 0; i < all.size(); i += 2) keys.push_back(RadosDeadInbox::KeyOf(all[i]));
  ASSERT_TRUE(inbox_->Remove("a", keys).ok());
  std::vector<DeadChunk> rest = ReadAll("a", 100, &pages);
  EXPECT_EQ(rest.size(), all.size() - keys.size());
  for (size_t i = 1; i < all.size(); i += 2) EXPECT_NE(std::find(rest.begin(), rest.end(), all[i]), rest.end());
  std::vector<DeadChunk> b = ReadAll("b", 100, &pages);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0], Chunk(9, 9));
}

TEST_F(GatewayDeadInbox, DamagedChecksumIsCorruption) {
  const DeadChunk c = Chunk(5, 5);
  ASSERT_TRUE(inbox_->Append("a", {c, Chunk(6, 6)}).ok());
  librados::bufferlist bad;
  bad.append(std::string("\x01\x02\x03\x04", 4));
  ASSERT_EQ(cluster_->index().omap_set(RadosDeadInbox::ObjectName("a"), {{RadosDeadInbox::KeyOf(c), bad}}), 0);
  std::vector<DeadChunk> got;
  std::string last;
  Status s = inbox_->ReadPage("a", "", 10, &got, &last);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("gw.a.dead"), std::string::npos) << s.ToString();
  // A reader that asks for them gets the damaged keys apart and the page goes on.
  std::vector<std::string> damaged;
  s = inbox_->ReadPage("a", "", 10, &got, &last, &damaged);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(damaged.size(), 1u);
  EXPECT_EQ(damaged[0], RadosDeadInbox::KeyOf(c));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], Chunk(6, 6));
  EXPECT_EQ(last, RadosDeadInbox::KeyOf(Chunk(6, 6)));
}

}  // namespace
}  // namespace dedupv1

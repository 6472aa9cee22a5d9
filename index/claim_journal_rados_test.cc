// Tests of the claim journal (index/claim_journal.h) and of ChunkClaims
// journaling its claims instead of hinting them, against the test cluster of
// DEDUPV1_TEST_CEPH_CONF, in one RADOS namespace per test.
#include "index/claim_journal.h"

#include <set>

#include <gtest/gtest.h>

#include "core/base/testutil.h"
#include "core/rados/rados_test_fixture.h"
#include "index/chunk_claims.h"

namespace dedupv1 {
namespace {

constexpr uint16_t kSlot = 1;
constexpr ContainerId kContainer = (ContainerId{kSlot} << 48) + 1;

class GatewayClaimJournal : public test::RadosNamespaceTest {
 protected:
  void TearDown() override {
    claims_.reset();
    RadosNamespaceTest::TearDown();
  }
  std::vector<ClaimJournalRecord> ReadAll(const std::string& slot, std::vector<std::string>* damaged = nullptr) {
    RadosClaimJournal reader(cluster_, "", 0);
    std::vector<ClaimJournalRecord> all, page;
    std::vector<std::string> bad, page_bad;
    std::string after, last;
    for (int i = 0; i < 100; i++) {
      Status s = reader.ReadPage(slot, after, 2, &page, &last, &page_bad);
      EXPECT_TRUE(s.ok()) << s.ToString();
      all.insert(all.end(), page.begin(), page.end());
      bad.insert(bad.end(), page_bad.begin(), page_bad.end());
      if (page.size() + page_bad.size() < 2) break;
      after = last;
    }
    if (damaged != nullptr) *damaged = bad;
    return all;
  }
  // Every "z" hint of the table, over all shards.
  size_t Hints(RadosSharedChunkTable* t) {
    size_t n = 0;
    for (uint32_t shard = 0; shard < t->shards(); shard++) {
      std::string after, last;
      bool more = true;
      while (more) {
        std::vector<SharedHint> hints;
        Status s = t->ReadHints(shard, after, 256, &hints, &last, &more);
        EXPECT_TRUE(s.ok()) << s.ToString();
        if (!s.ok()) return n;
        n += hints.size();
        after = last;
      }
    }
    return n;
  }
  std::unique_ptr<ChunkClaims> OpenClaims(const std::string& journal_slot) {
    RadosSharedChunkTableOptions t;
    t.rados = rados_;
    t.shards = 8;
    t.slot = kSlot;
    t.incarnation = 3;
    ChunkClaimsOptions o;
    o.claim_hold_ms = 1000;
    o.container_exists = [](ContainerId, bool* exists) {
      *exists = true;
      return Status::OK();
    };
    o.journal_slot = journal_slot;
    std::unique_ptr<ChunkClaims> c;
    Status s = ChunkClaims::Open(t, o, &c);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return c;
  }

  std::unique_ptr<ChunkClaims> claims_;
};

TEST_F(GatewayClaimJournal, RecordsReadBackInOrderPageByPageAndRemovedOnesAreGone) {
  EXPECT_TRUE(ReadAll("gw-a").empty()) << "an absent journal is empty";
  RadosClaimJournal journal(cluster_, "gw-a", 7);
  const std::vector<Fingerprint> fps = test::RandomFingerprints(10, 1);
  std::vector<std::string> keys1, keys2;
  ASSERT_TRUE(journal.Append({{fps[0], fps[1]}, {fps[2]}}, &keys1).ok());
  ASSERT_TRUE(journal.Append({{fps.begin() + 3, fps.end()}}, &keys2).ok());
  ASSERT_EQ(keys1.size(), 2u);
  ASSERT_EQ(keys2.size(), 1u);
  uint32_t incarnation = 0;
  uint64_t first = 0;
  ASSERT_TRUE(RadosClaimJournal::ParseKey(keys1[0], &incarnation, &first));
  EXPECT_EQ(incarnation, 7u);
  EXPECT_EQ(keys1[1], RadosClaimJournal::KeyOf(7, first + 1));
  EXPECT_FALSE(RadosClaimJournal::ParseKey("junk", &incarnation, &first));
  std::vector<ClaimJournalRecord> all = ReadAll("gw-a");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].incarnation, 7u);
  EXPECT_EQ(all[0].key, keys1[0]);
  EXPECT_EQ(all[2].seq, all[0].seq + 2);
  EXPECT_EQ(all[0].fps, (std::vector<Fingerprint>{fps[0], fps[1]}));
  EXPECT_EQ(all[1].fps, (std::vector<Fingerprint>{fps[2]}));
  EXPECT_EQ(all[2].fps, (std::vector<Fingerprint>(fps.begin() + 3, fps.end())));
  EXPECT_TRUE(ReadAll("gw-b").empty()) << "journals are per slot";

  ASSERT_TRUE(journal.Remove("gw-a", {keys1[1], "absent-key"}).ok());
  all = ReadAll("gw-a");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].key, keys1[0]);
  EXPECT_EQ(all[1].key, keys2[0]);
}

TEST_F(GatewayClaimJournal, ADamagedRecordIsReportedNeverDecoded) {
  RadosClaimJournal journal(cluster_, "gw-a", 1);
  std::vector<std::string> keys;
  ASSERT_TRUE(journal.Append({test::RandomFingerprints(3, 2), test::RandomFingerprints(3, 3)}, &keys).ok());
  // One value with a flipped byte, one key that is not a journal key.
  std::map<std::string, librados::bufferlist> vals;
  std::set<std::string> want{keys[0]};
  ASSERT_EQ(cluster_->index().omap_get_vals_by_keys(RadosClaimJournal::ObjectName("gw-a"), want, &vals), 0);
  std::string v = vals[keys[0]].to_str();
  v[10] ^= 1;
  std::map<std::string, librados::bufferlist> set;
  set[keys[0]].append(v);
  set["junk"].append(std::string("x"));
  ASSERT_EQ(cluster_->index().omap_set(RadosClaimJournal::ObjectName("gw-a"), set), 0);
  std::vector<std::string> damaged;
  const std::vector<ClaimJournalRecord> all = ReadAll("gw-a", &damaged);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].key, keys[1]);
  EXPECT_EQ(damaged, (std::vector<std::string>{keys[0], "junk"}));
}

// Claims with a journal write the entries only; a run that ended with every
// mapping logged leaves nothing after its retirement, one that did not
// leaves a hint per fingerprint (GC's way to look at them), and the records
// go either way. Without a journal every claim writes its hint, as before.
TEST_F(GatewayClaimJournal, ClaimsAreJournaledInsteadOfHintedAndRetiredAfterRelease) {
  claims_ = OpenClaims("gw-a");
  ASSERT_TRUE(claims_);
  RadosSharedChunkTable* table = claims_->table();
  auto claim = [&](const std::vector<Fingerprint>& fps, ClaimTicket* ticket) {
    std::vector<ChunkClaims::NewChunk> chunks;
    for (const Fingerprint& fp : fps) chunks.push_back({fp, kContainer, 8192});
    std::vector<ContainerId> use;
    Status s = claims_->Claim(chunks, &use, nullptr, ticket);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(use, std::vector<ContainerId>(fps.size(), kContainer));
  };
  const std::vector<Fingerprint> referenced = test::RandomFingerprints(100, 4);
  const std::vector<Fingerprint> abandoned = test::RandomFingerprints(50, 5);
  ClaimTicket t1, t2;
  ASSERT_NO_FATAL_FAILURE(claim(referenced, &t1));
  ASSERT_NO_FATAL_FAILURE(claim(abandoned, &t2));
  EXPECT_EQ(Hints(table), 0u) << "a journaled claim writes no hint";
  std::vector<ClaimJournalRecord> all = ReadAll("gw-a");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].key, t1.key);
  EXPECT_EQ(all[0].fps, referenced);
  EXPECT_EQ(all[0].incarnation, 3u);
  EXPECT_EQ(all[1].fps, abandoned);

  // Handed back, not yet retired: nothing changes (a checkpoint must prove
  // the chunks flipped and counted first).
  claims_->ReleaseClaims(t1, true);
  const uint64_t mark = claims_->ClaimsReleased();
  claims_->ReleaseClaims(t2, false);
  EXPECT_EQ(ReadAll("gw-a").size(), 2u);
  EXPECT_EQ(claims_->stats().journal_waiting, 2u);
  // Retired up to the first release only.
  ASSERT_TRUE(claims_->RetireClaims(mark).ok());
  all = ReadAll("gw-a");
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].key, t2.key);
  EXPECT_EQ(Hints(table), 0u);
  ASSERT_TRUE(claims_->RetireClaims(claims_->ClaimsReleased()).ok());
  EXPECT_TRUE(ReadAll("gw-a").empty());
  EXPECT_EQ(Hints(table), abandoned.size()) << "the unreferenced run's chunks are left to GC as hints";
  const ChunkClaimsStats st = claims_->stats();
  EXPECT_EQ(st.journal_retired, 2u);
  EXPECT_EQ(st.journal_hinted, 1u);
  EXPECT_EQ(st.journal_waiting, 0u);
  EXPECT_GE(st.table_steps.ops[static_cast<size_t>(SharedTableStep::kJournal)], 2u);

  // Without a journal (tools, tests of the table alone): hints as before.
  claims_.reset();
  claims_ = OpenClaims("");
  ClaimTicket none;
  ASSERT_NO_FATAL_FAILURE(claim(test::RandomFingerprints(20, 6), &none));
  EXPECT_TRUE(none.key.empty());
  EXPECT_EQ(Hints(claims_->table()), abandoned.size() + 20);
}

}  // namespace
}  // namespace dedupv1

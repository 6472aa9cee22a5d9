// Container GC of gateway slots in cluster scope (docs/design-15.md 2.4
// "Lost claim", 2.6 "Container GC"): our copies of lost claims are dead at
// once, the dead inbox becomes dead marks, and merges leave foreign aliases
// so other slots' reads by id still find the chunks. Two DedupSystems (slots
// gw-a and gw-b) in one process, each test in a namespace of its own. Needs
// the test cluster (DEDUPV1_TEST_CEPH_CONF).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "chunkstore/chunk_store.h"
#include "chunkstore/rados_container_store.h"
#include "core/base/testutil.h"
#include "core/engine/cluster_testutil.h"
#include "index/block_index.h"
#include "index/dead_inbox.h"
#include "index/rados_shared_chunk_table.h"

namespace dedupv1 {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kPiece = 128 << 10;  // one block of SmallSystemOptions

constexpr uint64_t kClaimHoldMs = 2000;  // bounded holds (takeovers are counted below)

Options ClusterOptions(const std::string& dir, const RadosOptions& rados, const std::string& gateway,
                       uint64_t volume_size) {
  return test::ClusterOptions(dir, rados, gateway, volume_size, kClaimHoldMs);
}

// The content of piece |i| of a data set: |pattern| says per piece which of
// two random streams it comes from ('1', '2') or whether it is zero ('0'),
// cycling.
std::vector<uint8_t> Piece(uint64_t seed, const std::string& pattern, uint64_t i) {
  const char kind = pattern[i % pattern.size()];
  if (kind == '0') return std::vector<uint8_t>(kPiece, 0);
  return test::RandomBytes(kPiece, seed * 100000 + (kind == '1' ? 0 : 50000) + i);
}

// Pieces 0..|pieces|-1 of the data set at pieces |first|... of the volume.
Status WritePieces(DedupSystem* sys, const std::string& volume, uint64_t seed, const std::string& pattern,
                   uint64_t pieces, uint64_t first = 0) {
  Volume* v = nullptr;
  Status s = sys->GetVolume(volume, &v);
  for (uint64_t i = 0; s.ok() && i < pieces; i++) {
    const std::vector<uint8_t> d = Piece(seed, pattern, i);
    s = v->Write((first + i) * kPiece, kPiece, d.data(), false);
  }
  if (s.ok()) s = v->Sync();
  return s;
}

::testing::AssertionResult ReadsBack(DedupSystem* sys, const std::string& volume, uint64_t seed,
                                     const std::string& pattern, uint64_t pieces, uint64_t first = 0) {
  Volume* v = test::Vol(sys, volume);
  if (v == nullptr) return ::testing::AssertionFailure() << "no volume " << volume;
  for (uint64_t i = 0; i < pieces; i++) {
    ::testing::AssertionResult r = test::ReadsBack(v, (first + i) * kPiece, Piece(seed, pattern, i));
    if (!r) return r << " (" << volume << ", piece " << i << ")";
  }
  return ::testing::AssertionSuccess();
}

// Per fingerprint the containers |volume|'s block mappings name.
std::map<Fingerprint, std::set<ContainerId>> Mapped(DedupSystem* sys, const std::string& volume) {
  std::map<Fingerprint, std::set<ContainerId>> out;
  Volume* v = test::Vol(sys, volume);
  EXPECT_NE(v, nullptr);
  if (v == nullptr) return out;
  const uint32_t bs = sys->options().block_size;
  for (uint64_t b = 0; b < v->size() / bs; b++) {
    BlockMapping m;
    Status s = sys->block_index()->Get(BlockId{v->id(), b}, &m);
    if (s.IsNotFound()) continue;
    EXPECT_TRUE(s.ok()) << s.ToString();
    for (const BlockMappingItem& item : m.items()) {
      if (!item.IsZero()) out[item.fp].insert(item.container);
    }
  }
  return out;
}

// Live (unmarked) copies per fingerprint in the committed containers of
// |sys|'s slot, added to |copies|.
void AddLiveCopies(DedupSystem* sys, std::map<Fingerprint, int>* copies) {
  std::vector<ContainerId> ids;
  Status s = sys->chunk_store()->ListCommitted(&ids);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (ContainerId id : ids) {
    std::vector<Fingerprint> fps;
    s = sys->chunk_store()->GetFingerprints(id, &fps);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (const Fingerprint& fp : fps) (*copies)[fp]++;
  }
}

class GatewayClusterGc : public test::ClusterStoreTest {
 protected:
  // Fingerprints with more than one live copy over both slots; every
  // mapped fingerprint must have one at least.
  size_t DuplicatedLiveCopies(DedupSystem* a, DedupSystem* b, const std::set<Fingerprint>& mapped) {
    std::map<Fingerprint, int> copies;
    AddLiveCopies(a, &copies);
    AddLiveCopies(b, &copies);
    size_t duplicated = 0;
    for (const auto& [fp, n] : copies) duplicated += n > 1 ? 1 : 0;
    for (const Fingerprint& fp : mapped) EXPECT_GE(copies[fp], 1) << "no live copy of " << fp.ToHex();
    return duplicated;
  }
};

// The issue's "A and B write the same new data at the same time: after GC
// one copy remains". A race of the two slots does not always leave a
// container mostly dead, so up to kRounds races (each new data in a region of
// its own) until a GC round reclaimed bytes; every round checks the copies.
TEST_F(GatewayClusterGc, ConcurrentSameNewDataLeavesOneLiveCopyAfterGc) {
  constexpr uint64_t kPieces = 64;  // 8 MiB per race
  constexpr uint64_t kRounds = 4;
  const std::string kAll = "1";
  test::TempDir dir_a, dir_b;
  const Options a_opts = ClusterOptions(dir_a.path(), rados_, "gw-a", kRounds * kPieces * kPiece);
  const Options b_opts = ClusterOptions(dir_b.path(), rados_, "gw-b", kRounds * kPieces * kPiece);
  ASSERT_FALSE(HasFailure());
  std::set<Fingerprint> mapped;
  uint64_t extra_copies_allowed = 0, rounds = 0, reclaimed = 0;
  auto reads_back = [&](DedupSystem* a, DedupSystem* b) {
    for (uint64_t r = 0; r < rounds; r++) {
      EXPECT_TRUE(ReadsBack(a, "vol-gw-a", 11 + r, kAll, kPieces, r * kPieces));
      EXPECT_TRUE(ReadsBack(b, "vol-gw-b", 11 + r, kAll, kPieces, r * kPieces));
    }
  };
  {
    std::unique_ptr<DedupSystem> a = test::OpenStoreOrFail(a_opts), b = test::OpenStoreOrFail(b_opts);
    ASSERT_TRUE(a && b);
    for (; rounds < kRounds && reclaimed == 0;) {
      const uint64_t r = rounds++;
      Status wa, wb;
      std::thread ta([&] { wa = WritePieces(a.get(), "vol-gw-a", 11 + r, kAll, kPieces, r * kPieces); });
      std::thread tb([&] { wb = WritePieces(b.get(), "vol-gw-b", 11 + r, kAll, kPieces, r * kPieces); });
      ta.join();
      tb.join();
      ASSERT_TRUE(wa.ok()) << wa.ToString();
      ASSERT_TRUE(wb.ok()) << wb.ToString();
      const ChunkClaimsStats ca = a->chunk_index()->stats().claims, cb = b->chunk_index()->stats().claims;
      // Lost claims' copies were marked dead at once (GC forgets the marks
      // of the containers it deletes or merges).
      const uint64_t marked =
          a->chunk_store()->stats().dead_chunks_marked + b->chunk_store()->stats().dead_chunks_marked;
      if (r == 0) EXPECT_GE(marked, ca.claims_lost + cb.claims_lost);
      // A lost flip (after a takeover) leaves our mapped copy live next to
      // the taker's: the one case of two live copies, by design (chunk_claims.h).
      extra_copies_allowed = ca.flips_lost + cb.flips_lost;
      reads_back(a.get(), b.get());
      for (const auto& [fp, cs] : Mapped(a.get(), "vol-gw-a")) mapped.insert(fp);
      for (const auto& [fp, cs] : Mapped(b.get(), "vol-gw-b")) mapped.insert(fp);

      Status s = a->RunGc();
      ASSERT_TRUE(s.ok()) << s.ToString();
      s = b->RunGc();
      ASSERT_TRUE(s.ok()) << s.ToString();
      const GcStats ga = a->gc_stats(), gb = b->gc_stats();
      reclaimed = ga.bytes_reclaimed + gb.bytes_reclaimed;
      std::printf("race %llu: claims lost a=%llu b=%llu, marked dead %llu, flips lost %llu; GC reclaimed a=%llu "
                  "b=%llu bytes (deleted %llu+%llu, merged %llu+%llu)\n",
                  (unsigned long long)r, (unsigned long long)ca.claims_lost, (unsigned long long)cb.claims_lost,
                  (unsigned long long)marked, (unsigned long long)extra_copies_allowed,
                  (unsigned long long)ga.bytes_reclaimed, (unsigned long long)gb.bytes_reclaimed,
                  (unsigned long long)ga.containers_deleted, (unsigned long long)gb.containers_deleted,
                  (unsigned long long)ga.containers_merged, (unsigned long long)gb.containers_merged);
      EXPECT_LE(DuplicatedLiveCopies(a.get(), b.get(), mapped), extra_copies_allowed);
      reads_back(a.get(), b.get());
    }
    const ChunkClaimsStats ca = a->chunk_index()->stats().claims, cb = b->chunk_index()->stats().claims;
    EXPECT_GT(ca.claims_lost + cb.claims_lost, 0u) << "the slots did not race: nothing to prove";
    EXPECT_GT(reclaimed, 0u) << "no race of " << rounds << " left a container to reclaim";
    ASSERT_TRUE(a->Close().ok());
    ASSERT_TRUE(b->Close().ok());
  }
  // Reopened: the persisted marks still say which copies are dead.
  std::unique_ptr<DedupSystem> b = test::OpenStoreOrFail(b_opts), a = test::OpenStoreOrFail(a_opts);
  ASSERT_TRUE(a && b);
  reads_back(a.get(), b.get());
  EXPECT_LE(DuplicatedLiveCopies(a.get(), b.get(), mapped), extra_copies_allowed);
  // A further round breaks nothing.
  ASSERT_TRUE(a->RunGc().ok());
  ASSERT_TRUE(b->RunGc().ok());
  reads_back(a.get(), b.get());
  EXPECT_LE(DuplicatedLiveCopies(a.get(), b.get(), mapped), extra_copies_allowed);
  ASSERT_TRUE(a->Close().ok());
  ASSERT_TRUE(b->Close().ok());
}

// A merges containers whose chunks B maps: B's reads by the old ids follow
// the foreign aliases ca.<id>. The garbage comes through A's dead inbox, filed
// as index GC files it: chunks whose usage over every slot is 0.
TEST_F(GatewayClusterGc, MergeLeavesAliasesForeignReadsFollow) {
  constexpr uint64_t kPieces = 48;  // 6 MiB
  const std::string kMixed = "122", kKept = "100";
  test::TempDir dir_a, dir_b;
  const Options a_opts = ClusterOptions(dir_a.path(), rados_, "gw-a", 8 * kMiB);
  const Options b_opts = ClusterOptions(dir_b.path(), rados_, "gw-b", 8 * kMiB);
  ASSERT_FALSE(HasFailure());
  std::unique_ptr<DedupSystem> a = test::OpenStoreOrFail(a_opts), b = test::OpenStoreOrFail(b_opts);
  ASSERT_TRUE(a && b);
  // A stores the mixed data; B writes the same afterwards and maps A's copies.
  Status s = WritePieces(a.get(), "vol-gw-a", 5, kMixed, kPieces);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(a->Checkpoint().ok());
  s = WritePieces(b.get(), "vol-gw-b", 5, kMixed, kPieces);
  ASSERT_TRUE(s.ok()) << s.ToString();
  // One piece of B's own past the shared ones: a slot that never stored a
  // container is refused at reopen today (its checkpoint's watermark is the
  // slot's id base while its id mark was never written; not this test's
  // subject).
  {
    const std::vector<uint8_t> own = test::RandomBytes(kPiece, 424242);
    ASSERT_TRUE(test::Vol(b.get(), "vol-gw-b")->Write(kPieces * kPiece, kPiece, own.data(), false).ok());
    ASSERT_TRUE(test::Vol(b.get(), "vol-gw-b")->Sync().ok());
  }
  std::map<Fingerprint, std::set<ContainerId>> before = Mapped(b.get(), "vol-gw-b");
  const uint16_t slot_a = a->gateway_record().slot;
  size_t foreign = 0;
  for (const auto& [fp, cs] : before) foreign += (*cs.begin() >> 48) == slot_a ? 1 : 0;
  EXPECT_GT(foreign, before.size() * 9 / 10);
  // Both drop the '2' pieces (zero blocks); counted, their chunks' usage is 0.
  ASSERT_TRUE(WritePieces(a.get(), "vol-gw-a", 5, kKept, kPieces).ok());
  ASSERT_TRUE(WritePieces(b.get(), "vol-gw-b", 5, kKept, kPieces).ok());
  ASSERT_TRUE(a->Checkpoint().ok());
  ASSERT_TRUE(b->Checkpoint().ok());
  std::map<Fingerprint, std::set<ContainerId>> kept = Mapped(b.get(), "vol-gw-b");
  RadosSharedChunkTableOptions to;
  to.rados = rados_;
  to.shards = 8;
  std::unique_ptr<RadosSharedChunkTable> table;
  ASSERT_TRUE(RadosSharedChunkTable::Open(to, &table).ok());
  std::vector<DeadChunk> dead;
  for (const auto& [fp, cs] : before) {
    if (kept.count(fp) != 0) continue;
    int64_t sum = -1;
    ASSERT_TRUE(table->UsageSum(fp, &sum).ok());
    SharedRecord rec;
    ASSERT_TRUE(table->ReadRecord(fp, &rec).ok());
    if (sum != 0 || !rec.entry || (rec.entry->container >> 48) != slot_a) continue;
    dead.push_back(DeadChunk{rec.entry->container, fp});
  }
  ASSERT_GT(dead.size(), before.size() / 2);
  RadosDeadInbox inbox(cluster_);
  ASSERT_TRUE(inbox.Append("gw-a", dead).ok());

  s = a->RunGc();
  ASSERT_TRUE(s.ok()) << s.ToString();
  const GcStats ga = a->gc_stats();
  EXPECT_EQ(ga.inbox_chunks, dead.size());
  EXPECT_GT(ga.containers_merged, 0u);
  EXPECT_GT(ga.bytes_reclaimed, 0u);
  std::vector<DeadChunk> left;
  std::string last;
  ASSERT_TRUE(inbox.ReadPage("gw-a", "", 10, &left, &last).ok());
  EXPECT_TRUE(left.empty()) << "the inbox is emptied once its marks are persisted";
  size_t aliases = 0;
  for (const std::string& name : DataObjects()) aliases += name.rfind("ca.", 0) == 0 ? 1 : 0;
  EXPECT_GE(aliases, ga.containers_merged);
  // B still names A's old ids; the sources are gone, but they exist for
  // claims (an unflipped U{source} is not a claim whose container never
  // appeared): ContainerExists follows the alias.
  const std::vector<std::string> objects = DataObjects();
  const std::set<std::string> stored(objects.begin(), objects.end());
  size_t gone = 0;
  for (const auto& [fp, cs] : kept) {
    const ContainerId id = *cs.begin();
    if (stored.count(RadosContainerStore::ObjectName(id)) != 0) continue;
    gone++;
    bool exists = false;
    s = b->chunk_store()->ContainerExists(id, &exists);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(exists) << "merged container " << id << " does not exist behind its alias";
  }
  EXPECT_GT(gone, 0u) << "B maps no chunk of a merged container: nothing to prove";
  EXPECT_TRUE(ReadsBack(b.get(), "vol-gw-b", 5, kKept, kPieces));
  EXPECT_TRUE(ReadsBack(a.get(), "vol-gw-a", 5, kKept, kPieces));
  ASSERT_TRUE(a->Close().ok());
  ASSERT_TRUE(b->Close().ok());
  // Reopened (nothing cached): B follows the aliases again, A its merge records.
  a.reset();
  b.reset();
  b = test::OpenStoreOrFail(b_opts);
  ASSERT_TRUE(b);
  EXPECT_TRUE(ReadsBack(b.get(), "vol-gw-b", 5, kKept, kPieces));
  a = test::OpenStoreOrFail(a_opts);
  ASSERT_TRUE(a);
  EXPECT_TRUE(ReadsBack(a.get(), "vol-gw-a", 5, kKept, kPieces));
  ASSERT_TRUE(a->Close().ok());
  ASSERT_TRUE(b->Close().ok());
}

// A damaged inbox key (checksum mismatch) and a key naming another slot's
// container do not stop the slot's container GC: both are counted, removed
// and left unmarked; a good key next to them is marked as usual.
TEST_F(GatewayClusterGc, DamagedAndForeignInboxKeysAreSkippedCountedRemoved) {
  test::TempDir dir_a;
  const Options a_opts = ClusterOptions(dir_a.path(), rados_, "gw-a", 8 * kMiB);
  ASSERT_FALSE(HasFailure());
  std::unique_ptr<DedupSystem> a = test::OpenStoreOrFail(a_opts);
  ASSERT_TRUE(a);
  Status s = WritePieces(a.get(), "vol-gw-a", 7, "1", 4);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(a->Checkpoint().ok());
  const std::map<Fingerprint, std::set<ContainerId>> mapped = Mapped(a.get(), "vol-gw-a");
  ASSERT_GE(mapped.size(), 3u);
  auto it = mapped.begin();
  const DeadChunk good{*it->second.begin(), it->first};
  ++it;
  const DeadChunk damaged{*it->second.begin(), it->first};
  ++it;
  const ContainerId other_slot = static_cast<ContainerId>((a->gateway_record().slot + 1) & 0xffff) << 48;
  const DeadChunk foreign{other_slot + 1, it->first};
  RadosDeadInbox inbox(cluster_);
  ASSERT_TRUE(inbox.Append("gw-a", {good, damaged, foreign}).ok());
  librados::bufferlist bad;
  bad.append(std::string("\x01\x02\x03\x04", 4));
  ASSERT_EQ(cluster_->index().omap_set(RadosDeadInbox::ObjectName("gw-a"), {{RadosDeadInbox::KeyOf(damaged), bad}}), 0);

  s = a->RunGc();
  ASSERT_TRUE(s.ok()) << s.ToString();
  const GcStats st = a->gc_stats();
  EXPECT_EQ(st.inbox_chunks, 1u);
  EXPECT_EQ(st.inbox_damaged_keys, 1u);
  EXPECT_EQ(st.inbox_foreign_keys, 1u);
  std::vector<DeadChunk> left;
  std::string last;
  s = inbox.ReadPage("gw-a", "", 10, &left, &last);
  ASSERT_TRUE(s.ok()) << s.ToString() << " (the damaged key must be gone)";
  EXPECT_TRUE(left.empty());
  // The good key's chunk is marked (hidden from the container's fingerprints),
  // the damaged key's is not.
  std::vector<Fingerprint> fps;
  ASSERT_TRUE(a->chunk_store()->GetFingerprints(damaged.container, &fps).ok());
  EXPECT_NE(std::find(fps.begin(), fps.end(), damaged.fp), fps.end()) << "a damaged key marked its chunk";
  fps.clear();
  s = a->chunk_store()->GetFingerprints(good.container, &fps);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(std::find(fps.begin(), fps.end(), good.fp), fps.end()) << "the good key was not marked";
  ASSERT_TRUE(a->Close().ok());
}

// The GC of a cluster-scope store end to end: data one slot overwrote
// (its old chunks referenced nowhere any more) is found by index GC, marked
// dead, erased once both slots published a safe epoch, handed to the owning
// slot's dead inbox, and its container round gives the bytes back. Chunks
// the other slot still maps keep their entries and read back, before and
// after reopening.
TEST_F(GatewayClusterGc, OverwrittenDataIsReclaimedThroughIndexGcAndTheOwnersInbox) {
  constexpr uint64_t kPieces = 32;  // 4 MiB
  const std::string kAll = "1";
  test::TempDir dir_a, dir_b;
  const Options a_opts = ClusterOptions(dir_a.path(), rados_, "gw-a", kPieces * kPiece);
  const Options b_opts = ClusterOptions(dir_b.path(), rados_, "gw-b", kPieces * kPiece);
  ASSERT_FALSE(HasFailure());
  auto reads_back = [&](DedupSystem* a, DedupSystem* b) {
    EXPECT_TRUE(ReadsBack(a, "vol-gw-a", 22, kAll, kPieces));
    EXPECT_TRUE(ReadsBack(b, "vol-gw-b", 21, kAll, kPieces / 2));
  };
  std::set<Fingerprint> kept;  // B's chunks: they must keep their entries
  {
    std::unique_ptr<DedupSystem> a = test::OpenStoreOrFail(a_opts), b = test::OpenStoreOrFail(b_opts);
    ASSERT_TRUE(a && b);
    // A stores data set 21, B maps the first half of it, then A overwrites
    // all of it with set 22: set 21's second half is unused everywhere.
    ASSERT_TRUE(WritePieces(a.get(), "vol-gw-a", 21, kAll, kPieces).ok());
    ASSERT_TRUE(a->Checkpoint().ok());
    ASSERT_TRUE(WritePieces(b.get(), "vol-gw-b", 21, kAll, kPieces / 2).ok());
    ASSERT_TRUE(WritePieces(a.get(), "vol-gw-a", 22, kAll, kPieces).ok());
    ASSERT_TRUE(a->Checkpoint().ok());
    ASSERT_TRUE(b->Checkpoint().ok());
    for (const auto& [fp, cs] : Mapped(b.get(), "vol-gw-b")) kept.insert(fp);
    ASSERT_FALSE(kept.empty());
    // B found its chunks in A's containers, all but the tail of its half
    // (content-defined chunks end where the write ends).
    EXPECT_LT(b->chunk_store()->stats().bytes_stored, 64u << 10);

    uint64_t finalized = 0, reclaimed = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(150);
    for (int i = 0; i < 400 && std::chrono::steady_clock::now() < end; i++) {
      Status s = a->RunGc();
      ASSERT_TRUE(s.ok()) << s.ToString();
      s = b->RunGc();
      ASSERT_TRUE(s.ok()) << s.ToString();
      const GcStats ga = a->gc_stats(), gb = b->gc_stats();
      finalized = ga.cluster_index.dead_finalized + gb.cluster_index.dead_finalized;
      reclaimed = ga.bytes_reclaimed;
      if (reclaimed >= kPieces / 2 * kPiece / 2) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    // One more round of A: whatever B's last index round erased into A's
    // inbox is taken in (A's own index round runs before its container round).
    Status s = a->RunGc();
    ASSERT_TRUE(s.ok()) << s.ToString();
    const GcStats ga = a->gc_stats(), gb = b->gc_stats();
    finalized = ga.cluster_index.dead_finalized + gb.cluster_index.dead_finalized;
    reclaimed = ga.bytes_reclaimed;
    std::printf("index GC: marked %llu+%llu, finalized %llu, unmarked %llu+%llu, epoch bumps %llu+%llu, "
                "inbox chunks %llu; A reclaimed %llu bytes (deleted %llu, merged %llu)\n",
                (unsigned long long)ga.cluster_index.dead_marked, (unsigned long long)gb.cluster_index.dead_marked,
                (unsigned long long)finalized, (unsigned long long)ga.cluster_index.dead_unmarked,
                (unsigned long long)gb.cluster_index.dead_unmarked, (unsigned long long)ga.cluster_index.epoch_bumps,
                (unsigned long long)gb.cluster_index.epoch_bumps, (unsigned long long)ga.inbox_chunks,
                (unsigned long long)reclaimed, (unsigned long long)ga.containers_deleted,
                (unsigned long long)ga.containers_merged);
    // About 2 MiB of chunks of ~8 KiB went unused.
    EXPECT_GE(finalized, 100u);
    EXPECT_GE(ga.inbox_chunks, finalized);
    EXPECT_GE(reclaimed, kPieces / 2 * kPiece / 2) << "A's container GC gave back too little";
    EXPECT_EQ(gb.inbox_chunks, 0u) << "B owns no container";
    EXPECT_EQ(ga.cluster_index.last_error + gb.cluster_index.last_error, "");
    reads_back(a.get(), b.get());
    std::vector<Fingerprint> fps(kept.begin(), kept.end());
    std::vector<std::optional<SharedEntry>> entries;
    ASSERT_TRUE(b->chunk_index()->shared_table()->LookupMany(fps, &entries).ok());
    for (size_t i = 0; i < fps.size(); i++) {
      EXPECT_TRUE(entries[i] && entries[i]->state == SharedEntry::State::kCommitted)
          << "B's chunk " << fps[i].ToHex() << " lost its entry";
    }
    ASSERT_TRUE(a->Close().ok());
    ASSERT_TRUE(b->Close().ok());
  }
  std::unique_ptr<DedupSystem> a = test::OpenStoreOrFail(a_opts), b = test::OpenStoreOrFail(b_opts);
  ASSERT_TRUE(a && b);
  reads_back(a.get(), b.get());
  ASSERT_TRUE(a->RunGc().ok());
  ASSERT_TRUE(b->RunGc().ok());
  reads_back(a.get(), b.get());
  ASSERT_TRUE(a->Close().ok());
  ASSERT_TRUE(b->Close().ok());
}

}  // namespace
}  // namespace dedupv1

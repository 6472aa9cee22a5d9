// The engine on Ceph RADOS (storage.backend = rados; needs the test cluster,
// DEDUPV1_TEST_CEPH_CONF): the kill -9 cycles of crash_testutil.h, and a
// gateway that lost its local directory serving the store again.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/base/testutil.h"
#include "core/engine/crash_testutil.h"
#include "core/engine/dedup_system.h"
#include "core/rados/rados_env_testutil.h"

namespace dedupv1 {
namespace {

Options OnRados(Options o) {
  o.storage_backend = "rados";
  EXPECT_TRUE(test::TestRadosOptions(&o.rados, 4 << 20, /*lock_duration_s=*/5).ok())
      << "DEDUPV1_TEST_CEPH_CONF must name the test cluster's ceph.conf";
  // A block index on RADOS is LevelDB: its default path differs from the
  // local one Finish() chose.
  EXPECT_TRUE(o.DerivePathsFrom(o.data_dir).ok());
  return o;
}

// DEDUPV1_CRASH_RADOS_CYCLES cycles (default 8; each restart after a kill
// waits for the store lock's lease, 5 s here), bounded by
// DEDUPV1_CRASH_RADOS_SECONDS. docs/durability.md counts them.
TEST(CrashRadosTest, KillNineKeepsEverySyncedWrite) {
  const uint64_t cycles = test::EnvKnob("DEDUPV1_CRASH_RADOS_CYCLES", 8);
  const uint64_t budget_s = test::EnvKnob("DEDUPV1_CRASH_RADOS_SECONDS", 240);
  test::TempDir dir;
  const Options o = OnRados(KillNineOptions(dir.path()));
  ASSERT_FALSE(HasFailure());
  const uint64_t done = RunKillNineCycles(o, cycles, budget_s);
  std::printf("kill -9 cycles on RADOS: %llu\n", static_cast<unsigned long long>(done));
  EXPECT_GE(done, std::min<uint64_t>(cycles, 3));
}

// The same cycles on a gateway slot of a cluster-scope store: claims, flips,
// usage keys of the shared chunk index, and in every other child GC rounds
// with index GC (stale claims, D marks, GC epochs, finalization) and
// container GC, killed at random moments. After every reopen every synced
// write reads back, and every referenced chunk's usage summed over its
// usage keys equals a recount of the mappings: counted exactly once across
// the crashes. DEDUPV1_CRASH_CLUSTER_CYCLES cycles (default 4).
TEST(GatewayClusterCrash, KillNineKeepsEverySyncedWriteAndCountsOnce) {
  const uint64_t cycles = test::EnvKnob("DEDUPV1_CRASH_CLUSTER_CYCLES", 4);
  const uint64_t budget_s = test::EnvKnob("DEDUPV1_CRASH_RADOS_SECONDS", 240);
  test::TempDir dir;
  Options o = OnRados(KillNineOptions(dir.path()));
  o.rados.gateway = "gw-crash";
  o.chunk_index.cluster_scope = true;
  o.chunk_index.rados_shards = 8;
  o.chunk_index.claims.claim_hold_ms = 1000;  // index GC rounds act within a cycle
  ASSERT_TRUE(o.DerivePathsFrom(o.data_dir).ok());
  ASSERT_FALSE(HasFailure());
  const uint64_t done = RunKillNineCycles(o, cycles, budget_s);
  std::printf("kill -9 cycles on a cluster-scope slot: %llu\n", static_cast<unsigned long long>(done));
  EXPECT_GE(done, std::min<uint64_t>(cycles, 3));
}

// Every durable byte is in the cluster: after the gateway's local directory
// is gone, the same store opened on a new directory reads back every synced
// write, and nothing was ever stored locally but runtime files.
TEST(CrashRadosTest, FreshGatewayDirectoryServesTheStore) {
  test::TempDir first_dir, second_dir;
  Options first = OnRados(KillNineOptions(first_dir.path()));
  ASSERT_FALSE(HasFailure());
  std::vector<uint8_t> want;
  {
    std::unique_ptr<DedupSystem> sys;
    ASSERT_TRUE(DedupSystem::OpenStore(first, Env::Default(), &sys).ok());
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("crash", &v).ok());
    for (uint64_t slot = 0; slot < 64; slot++) {
      auto data = CrashSlotData(slot, slot % 5);
      ASSERT_TRUE(v->Write(slot * kCrashSlot, kCrashSlot, data.data(), false).ok());
    }
    ASSERT_TRUE(v->Sync().ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  // The local directory holds only the gateway's lock file.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(first_dir.path())) {
    EXPECT_EQ(entry.path().filename(), "LOCK") << "a local file of a rados store: " << entry.path();
  }
  std::filesystem::remove_all(first_dir.path());

  Options second = first;
  ASSERT_TRUE(second.DerivePathsFrom(second_dir.path()).ok());
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::OpenStore(second, Env::Default(), &sys);
  ASSERT_TRUE(s.ok()) << s.ToString();
  Volume* v;
  ASSERT_TRUE(sys->GetVolume("crash", &v).ok());
  std::vector<uint8_t> got(kCrashSlot);
  for (uint64_t slot = 0; slot < 64; slot++) {
    ASSERT_TRUE(v->Read(slot * kCrashSlot, kCrashSlot, got.data()).ok());
    ASSERT_TRUE(got == CrashSlotData(slot, slot % 5)) << "slot " << slot;
  }
  ASSERT_TRUE(sys->Close().ok());
}

}  // namespace
}  // namespace dedupv1

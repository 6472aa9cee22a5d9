// Volumes added and grown while the system serves (DedupSystem::ApplyVolumes,
// issue 16 item 3): the other volumes keep serving, the volume table holds the
// change before it is served, a shrink changes nothing.
#include "core/engine/dedup_system.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/base/testutil.h"
#include "core/engine/data_dir.h"
#include "core/engine/system_testutil.h"
#include "core/engine/volume_table.h"

namespace dedupv1 {
namespace {

constexpr uint64_t kMiB = 1 << 20;

Options WithVolumes(const std::string& dir, std::vector<VolumeOptions> volumes) {
  Options o = test::SmallSystemOptions(dir);
  o.volumes = std::move(volumes);
  EXPECT_TRUE(o.Finish().ok());
  return o;
}

std::vector<VolumeRecord> Table(const std::string& dir) {
  std::vector<VolumeRecord> records;
  EXPECT_TRUE(ReadVolumeTable(Env::Default(), JoinPath(dir, kVolumesFileName), &records).ok());
  return records;
}

TEST(OnlineVolumesTest, AddAndGrowWhileAnotherVolumeIsWrittenThenReopen) {
  test::TempDir dir;
  const Options before = WithVolumes(dir.path(), {{"vol1", 64 * kMiB}});
  const Options after = WithVolumes(dir.path(), {{"vol1", 128 * kMiB}, {"vol2", 32 * kMiB}});
  const auto first = test::RandomBytes(3 * kMiB, 1);
  const auto beyond = test::RandomBytes(2 * kMiB, 2);
  const auto second = test::RandomBytes(4 * kMiB, 3);
  {
    auto sys = test::OpenSystemOrDie(before);
    Volume* vol1 = test::Vol(sys.get(), "vol1");
    ASSERT_TRUE(vol1->Write(1000, first.size(), first.data(), false).ok());
    // A writer of vol1 runs through the change; none of its writes or syncs fails.
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0}, rounds{0};
    std::thread writer([&] {
      const auto data = test::RandomBytes(kMiB, 4);
      for (int i = 0; i < 200 && !stop.load(); i++) {
        if (!vol1->Write(8 * kMiB + (i % 8) * kMiB, data.size(), data.data(), false).ok() || !vol1->Sync().ok()) {
          failures++;
        }
        rounds++;
      }
    });
    while (rounds.load() < 2) std::this_thread::yield();
    std::vector<std::string> changed;
    ASSERT_TRUE(sys->ApplyVolumes(after.volumes, &changed).ok());
    stop = true;
    writer.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(changed, (std::vector<std::string>{"vol1", "vol2"}));

    // The table holds the change (ApplyVolumes writes it before it serves it).
    const auto records = Table(dir.path());
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].name, "vol1");
    EXPECT_EQ(records[0].size, 128 * kMiB);
    EXPECT_EQ(records[1].name, "vol2");
    EXPECT_EQ(records[1].id, 2u);

    EXPECT_EQ(vol1->size(), 128 * kMiB);
    ASSERT_TRUE(vol1->Write(100 * kMiB, beyond.size(), beyond.data(), false).ok());
    Volume* vol2 = test::Vol(sys.get(), "vol2");
    ASSERT_NE(vol2, nullptr);
    EXPECT_EQ(vol2->size(), 32 * kMiB);
    EXPECT_EQ(sys->volumes().size(), 2u);
    ASSERT_TRUE(vol2->Write(0, second.size(), second.data(), false).ok());
    ASSERT_TRUE(vol2->Sync().ok());
    EXPECT_TRUE(test::ReadsBack(vol1, 1000, first));
    EXPECT_TRUE(test::ReadsBack(vol2, 0, second));
    // The same config again changes nothing.
    changed.clear();
    ASSERT_TRUE(sys->ApplyVolumes(after.volumes, &changed).ok());
    EXPECT_TRUE(changed.empty());
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = test::OpenSystemOrDie(after);
  Volume* vol1 = test::Vol(sys.get(), "vol1");
  Volume* vol2 = test::Vol(sys.get(), "vol2");
  ASSERT_NE(vol2, nullptr);
  EXPECT_EQ(vol1->size(), 128 * kMiB);
  EXPECT_EQ(vol2->id(), 2u);
  EXPECT_TRUE(test::ReadsBack(vol1, 1000, first));
  EXPECT_TRUE(test::ReadsBack(vol1, 100 * kMiB, beyond));
  EXPECT_TRUE(test::ReadsBack(vol2, 0, second));
}

// Many adds while writers and syncs walk the served volumes: each add
// replaces the snapshot they read (run it under ASan/TSan to see a reader
// that let go of its snapshot too early).
TEST(OnlineVolumesTest, ManyAddsWhileWritersAndSyncsRun) {
  test::TempDir dir;
  std::vector<VolumeOptions> volumes = {{"vol1", 64 * kMiB}};
  auto sys = test::OpenSystemOrDie(WithVolumes(dir.path(), volumes));
  Volume* vol1 = test::Vol(sys.get(), "vol1");
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; w++) {
    writers.emplace_back([&, w] {
      const auto data = test::RandomBytes(256 << 10, 20 + w);
      for (int i = 0; i < 400 && !stop.load(); i++) {
        const uint64_t at = (static_cast<uint64_t>(w) * 32 + (i % 32)) * kMiB;
        if (!vol1->Write(at, data.size(), data.data(), false).ok() || !sys->Sync().ok()) failures++;
      }
    });
  }
  const auto small = test::RandomBytes(64 << 10, 30);
  for (int n = 2; n <= 21; n++) {
    volumes.push_back({"vol" + std::to_string(n), 8 * kMiB});
    ASSERT_TRUE(sys->ApplyVolumes(volumes, nullptr).ok());
    Volume* added = test::Vol(sys.get(), volumes.back().name);
    ASSERT_NE(added, nullptr);
    ASSERT_TRUE(added->Write(0, small.size(), small.data(), false).ok());
  }
  stop = true;
  for (auto& t : writers) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(sys->Sync().ok());
  EXPECT_EQ(sys->volumes().size(), 21u);
  for (const auto& v : volumes) {
    if (v.name != "vol1") EXPECT_TRUE(test::ReadsBack(test::Vol(sys.get(), v.name), 0, small)) << v.name;
  }
}

TEST(OnlineVolumesTest, ShrinkIsRefusedAndChangesNothing) {
  test::TempDir dir;
  auto sys = test::OpenSystemOrDie(WithVolumes(dir.path(), {{"vol1", 64 * kMiB}}));
  std::vector<std::string> changed;
  // vol2 would be added, but vol1 shrinks: the whole call is refused.
  Status s = sys->ApplyVolumes({{"vol1", 32 * kMiB}, {"vol2", 16 * kMiB}}, &changed);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("vol1"), std::string::npos) << s.ToString();
  EXPECT_TRUE(changed.empty());
  EXPECT_EQ(sys->volumes().size(), 1u);
  EXPECT_EQ(test::Vol(sys.get(), "vol1")->size(), 64 * kMiB);
  const auto records = Table(dir.path());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].size, 64 * kMiB);
}

// A volume left out of the config stays served until the system closes (the
// admin's LUN may still be logged in); its line and data stay in the table.
TEST(OnlineVolumesTest, VolumeLeftOutStaysServed) {
  test::TempDir dir;
  auto sys = test::OpenSystemOrDie(WithVolumes(dir.path(), {{"vol1", 64 * kMiB}, {"vol2", 64 * kMiB}}));
  ASSERT_TRUE(sys->ApplyVolumes({{"vol2", 64 * kMiB}}, nullptr).ok());
  EXPECT_EQ(sys->volumes().size(), 2u);
  EXPECT_EQ(Table(dir.path()).size(), 2u);
}

// dedupv1d volume remove: a volume's data dropped while another is served;
// GC gives its space back; its table line (id) stays, so the name added
// again is an empty volume.
TEST(OnlineVolumesTest, DroppedVolumeGivesItsSpaceBackAndTheOtherKeepsItsData) {
  test::TempDir dir;
  Options o = test::SmallSystemOptions(dir.path());
  o.volumes = {{"vol1", 32 * kMiB}, {"vol2", 32 * kMiB}};
  o.idle.period_ms = 3600 * 1000;  // GC rounds only when the test runs one
  ASSERT_TRUE(o.Finish().ok());
  const auto one = test::RandomBytes(16 * kMiB, 11);
  const auto two = test::RandomBytes(16 * kMiB, 12);
  {
    auto sys = test::OpenSystemOrDie(o);
    Volume* vol1 = test::Vol(sys.get(), "vol1");
    Volume* vol2 = test::Vol(sys.get(), "vol2");
    ASSERT_TRUE(vol1->Write(0, one.size(), one.data(), false).ok());
    ASSERT_TRUE(vol2->Write(0, two.size(), two.data(), false).ok());
    ASSERT_TRUE(sys->Sync().ok());
    const uint64_t used_before = test::UsedBytes(sys.get());
    EXPECT_GE(used_before, 32 * kMiB);

    EXPECT_TRUE(sys->DropVolume("nope").IsNotFound());
    ASSERT_TRUE(sys->DropVolume("vol2").ok());
    Volume* gone = nullptr;
    EXPECT_TRUE(sys->GetVolume("vol2", &gone).IsNotFound());
    EXPECT_EQ(sys->volumes().size(), 1u);
    ASSERT_TRUE(sys->RunGc().ok());
    const uint64_t used_after = test::UsedBytes(sys.get());
    // All of vol2's chunks are garbage; containers shared with vol1's data
    // at the boundary may keep a little of it.
    EXPECT_LE(used_after, used_before - 12 * kMiB) << used_before << " -> " << used_after;
    EXPECT_TRUE(test::ReadsBack(vol1, 0, one));
    ASSERT_TRUE(sys->Close().ok());
  }
  ASSERT_EQ(Table(dir.path()).size(), 2u);
  auto sys = test::OpenSystemOrDie(o);
  EXPECT_TRUE(test::ReadsBack(test::Vol(sys.get(), "vol1"), 0, one));
  Volume* vol2 = test::Vol(sys.get(), "vol2");
  EXPECT_EQ(vol2->id(), 2u);
  EXPECT_TRUE(test::ReadsBack(vol2, 0, std::vector<uint8_t>(16 * kMiB, 0)));
}

// A drop stopped by the closing system (its cancel flag) says so and leaves
// the volume served; asked again, it finishes.
TEST(OnlineVolumesTest, CancelledDropSaysSoAndARunAgainFinishes) {
  test::TempDir dir;
  auto sys = test::OpenSystemOrDie(WithVolumes(dir.path(), {{"vol1", 32 * kMiB}, {"vol2", 32 * kMiB}}));
  const auto two = test::RandomBytes(8 * kMiB, 14);
  Volume* vol2 = test::Vol(sys.get(), "vol2");
  ASSERT_TRUE(vol2->Write(0, two.size(), two.data(), false).ok());
  std::atomic<bool> cancel{true};
  Status s = sys->DropVolume("vol2", &cancel);
  EXPECT_TRUE(s.IsAborted()) << s.ToString();
  EXPECT_NE(s.message().find("run it again"), std::string::npos) << s.ToString();
  Volume* still = nullptr;
  EXPECT_TRUE(sys->GetVolume("vol2", &still).ok());
  EXPECT_TRUE(test::ReadsBack(vol2, 0, two));
  cancel = false;
  ASSERT_TRUE(sys->DropVolume("vol2", &cancel).ok());
  EXPECT_TRUE(sys->GetVolume("vol2", &still).IsNotFound());
  EXPECT_TRUE(test::ReadsBack(vol2, 0, std::vector<uint8_t>(8 * kMiB, 0)));  // retired, still readable by a holder
}

// A volume only the table knows (its config line gone) is dropped the same way.
TEST(OnlineVolumesTest, VolumeNoLongerConfiguredCanBeDropped) {
  test::TempDir dir;
  const auto two = test::RandomBytes(4 * kMiB, 13);
  {
    auto sys = test::OpenSystemOrDie(WithVolumes(dir.path(), {{"vol1", 32 * kMiB}, {"vol2", 32 * kMiB}}));
    ASSERT_TRUE(test::Vol(sys.get(), "vol2")->Write(0, two.size(), two.data(), false).ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  {
    auto sys = test::OpenSystemOrDie(WithVolumes(dir.path(), {{"vol1", 32 * kMiB}}));
    ASSERT_TRUE(sys->DropVolume("vol2").ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  auto sys = test::OpenSystemOrDie(WithVolumes(dir.path(), {{"vol1", 32 * kMiB}, {"vol2", 32 * kMiB}}));
  EXPECT_TRUE(test::ReadsBack(test::Vol(sys.get(), "vol2"), 0, std::vector<uint8_t>(4 * kMiB, 0)));
}

}  // namespace
}  // namespace dedupv1

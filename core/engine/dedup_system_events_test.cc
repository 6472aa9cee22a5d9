// The record-only events DedupSystem logs (log/log_event.h): system start and
// run, volumes attached, containers opened and committed, and the replay
// records around each checkpoint, which leave an empty log behind.
#include "core/engine/dedup_system.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/engine/system_testutil.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

Options EventOptions(const std::string& dir) {
  Options o = test::SmallSystemOptions(dir);
  o.volumes = {{"vol1", 64 << 20}, {"vol2", 32 << 20}};
  o.idle.period_ms = 3600 * 1000;  // no idle checkpoint trims the log during the test
  EXPECT_TRUE(o.Finish().ok());
  return o;
}

std::vector<LogEvent> Events(DedupSystem* sys) {
  std::vector<LogEvent> out;
  EXPECT_TRUE(sys->log()->Replay(sys->log()->head_id(), [&](const LogEvent& e) {
    out.push_back(e);
    return Status::OK();
  }).ok());
  return out;
}

TEST(DedupSystemEventsTest, OpenWriteAndCheckpointAreLogged) {
  test::TempDir dir;
  std::unique_ptr<DedupSystem> sys;
  ASSERT_TRUE(DedupSystem::Open(EventOptions(dir.path()), Env::Default(), &sys).ok());
  std::vector<LogEvent> events = Events(sys.get());
  ASSERT_EQ(events.size(), 4u) << "start, two volumes attached, run";
  EXPECT_EQ(events[0].type, LogEventType::kSystemStart);
  SystemEventData start;
  ASSERT_TRUE(SystemEventData::Decode(events[0].payload, &start).ok());
  EXPECT_FALSE(start.dirty_start);
  std::map<std::string, VolumeEventData> attached;
  for (int i : {1, 2}) {
    EXPECT_EQ(events[i].type, LogEventType::kVolumeAttached);
    VolumeEventData v;
    ASSERT_TRUE(VolumeEventData::Decode(events[i].payload, &v).ok());
    attached[v.name] = v;
  }
  ASSERT_EQ(attached.count("vol1"), 1u);
  ASSERT_EQ(attached.count("vol2"), 1u);
  Volume* vol1;
  ASSERT_TRUE(sys->GetVolume("vol1", &vol1).ok());
  EXPECT_EQ(attached["vol1"].volume_id, vol1->id());
  EXPECT_EQ(attached["vol1"].size, 64u << 20);
  EXPECT_EQ(attached["vol2"].size, 32u << 20);
  EXPECT_EQ(events[3].type, LogEventType::kSystemRun);

  // 10 MiB of new data: several 4 MiB containers opened and committed.
  auto data = test::RandomBytes(10 << 20, 5);
  ASSERT_TRUE(vol1->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(vol1->Sync().ok());
  events = Events(sys.get());
  std::set<ContainerId> opened, committed;
  size_t mappings = 0;
  for (const LogEvent& e : events) {
    if (e.type == LogEventType::kBlockMappingWritten) mappings++;
    if (e.type != LogEventType::kContainerOpened && e.type != LogEventType::kContainerCommitted) continue;
    ContainerEventData c;
    ASSERT_TRUE(ContainerEventData::Decode(e.payload, &c).ok());
    (e.type == LogEventType::kContainerOpened ? opened : committed).insert(c.container);
  }
  EXPECT_GE(opened.size(), 2u);
  EXPECT_EQ(opened, committed) << "every opened container was committed by the sync";
  EXPECT_GE(mappings, (10u << 20) / sys->options().block_size) << "a block may be mapped more than once (runs)";

  // A checkpoint logs its replay and trims the log, records included.
  const uint64_t appended = sys->log()->stats().appended_events;
  ASSERT_TRUE(sys->Checkpoint().ok());
  EXPECT_EQ(sys->log()->stats().appended_events, appended + 2) << "REPLAY_STARTED and REPLAY_STOPPED";
  EXPECT_TRUE(Events(sys.get()).empty()) << "the replay records are trimmed with the replayed events";
  std::vector<uint8_t> out(data.size());
  ASSERT_TRUE(vol1->Read(0, out.size(), out.data()).ok());
  EXPECT_EQ(out, data);
  ASSERT_TRUE(sys->Close().ok());

  // Reopened: the records did not confuse recovery or usage counting.
  ASSERT_TRUE(DedupSystem::Open(EventOptions(dir.path()), Env::Default(), &sys).ok());
  EXPECT_EQ(sys->recovery().events_replayed, 0u) << "the close left an empty log";
  ASSERT_TRUE(sys->GetVolume("vol1", &vol1).ok());
  ASSERT_TRUE(vol1->Read(0, out.size(), out.data()).ok());
  EXPECT_EQ(out, data);
  ASSERT_TRUE(sys->RunGc().ok());
  EXPECT_EQ(sys->gc_stats().chunks_deleted, 0u) << "record events must not change usage counts";
  ASSERT_TRUE(vol1->Read(0, out.size(), out.data()).ok());
  EXPECT_EQ(out, data);
}

}  // namespace
}  // namespace dedupv1

#include "log/operations_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "core/base/coding.h"
#include "core/base/fault_injection_env.h"
#include "core/base/testutil.h"
#include "log/log_slot.h"

namespace dedupv1 {
namespace {

using Op = FaultInjectionEnv::Op;
using Fault = FaultInjectionEnv::Fault;

std::string Payload(size_t n, uint64_t seed) {
  std::vector<uint8_t> b = test::RandomBytes(n, seed);
  return std::string(b.begin(), b.end());
}

struct Expected {
  uint64_t id;
  LogEventType type;
  std::string payload;
};

class OperationsLogTest : public ::testing::Test {
 protected:
  // 64 KiB of 512-byte slots: 126 data slots of 464 payload bytes.
  OperationsLogOptions Options(uint64_t size = 64 << 10, uint32_t slot_size = 512) {
    OperationsLogOptions o;
    o.path = dir_.Sub("ops.log");
    o.size_bytes = size;
    o.slot_size = slot_size;
    o.append_wait_ms = 5000;
    return o;
  }

  std::unique_ptr<OperationsLog> MustOpen(const OperationsLogOptions& o) {
    std::unique_ptr<OperationsLog> log;
    Status s = OperationsLog::Open(o, &env_, &log);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return log;
  }

  // Simulates a crash of the process: nothing still buffered reaches the file.
  void Crash(std::unique_ptr<OperationsLog>* log) {
    env_.AddRule({Op::kWrite, "ops.log", Fault::kEIO, 0, -1, 0});
    env_.AddRule({Op::kSync, "ops.log", Fault::kEIO, 0, -1, 0});
    log->reset();
    env_.ClearRules();
  }

  static std::vector<LogEvent> ReplayAll(OperationsLog* log, uint64_t from = 0) {
    std::vector<LogEvent> out;
    Status s = log->Replay(from, [&](const LogEvent& e) {
      out.push_back(e);
      return Status::OK();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  static void ExpectEvents(OperationsLog* log, const std::vector<Expected>& want) {
    std::vector<LogEvent> got = ReplayAll(log);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); i++) {
      EXPECT_EQ(want[i].id, got[i].id) << i;
      EXPECT_EQ(want[i].type, got[i].type) << i;
      EXPECT_TRUE(want[i].payload == got[i].payload) << "event " << want[i].id;
    }
  }

  static uint64_t MustAppend(OperationsLog* log, LogEventType type, const std::string& payload) {
    uint64_t id = 0;
    Status s = log->Append(type, payload, &id);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return id;
  }

  void PatchFile(uint64_t offset, const std::string& bytes) {
    std::unique_ptr<File> f;
    ASSERT_TRUE(Env::Default()->OpenFile(dir_.Sub("ops.log"), OpenMode::kReadWrite, &f).ok());
    ASSERT_TRUE(f->Write(offset, bytes.data(), bytes.size()).ok());
  }

  std::string ReadFile(uint64_t offset, size_t n) {
    std::unique_ptr<File> f;
    EXPECT_TRUE(Env::Default()->OpenFile(dir_.Sub("ops.log"), OpenMode::kReadOnly, &f).ok());
    std::string out(n, '\0');
    EXPECT_TRUE(f->Read(offset, n, out.data()).ok());
    return out;
  }

  // The sync marker (log/log_slot.h) a sync writes behind the last slot:
  // dropped where a test models a crash before that sync by hand.
  void DropSyncMarker(uint64_t offset) {
    std::string slot = ReadFile(offset, 512);
    ASSERT_EQ(0x4d4c5644u, DecodeFixed32(reinterpret_cast<const uint8_t*>(slot.data()))) << "no sync marker there";
    PatchFile(offset, std::string(512, '\0'));
  }

  void FlipByte(uint64_t offset) {
    std::string b = ReadFile(offset, 1);
    b[0] = static_cast<char>(b[0] ^ 0x5a);
    PatchFile(offset, b);
  }

  test::TempDir dir_;
  FaultInjectionEnv env_{Env::Default()};
};

TEST_F(OperationsLogTest, AppendReplayRoundTripWithMultiSlotEvents) {
  auto log = MustOpen(Options());
  ASSERT_EQ(464u, log->payload_per_slot());
  EXPECT_EQ(0u, log->last_id());
  EXPECT_EQ(1u, log->head_id());
  std::vector<Expected> want;
  const size_t sizes[] = {0, 1, 463, 464, 465, 928, 929, 3000, 20000, 7};
  uint64_t seed = 1;
  for (size_t n : sizes) {
    LogEventType type = (seed % 2) ? LogEventType::kBlockMappingWritten
                                   : LogEventType::kContainerCommitted;
    std::string p = Payload(n, seed++);
    uint64_t id = MustAppend(log.get(), type, p);
    EXPECT_EQ(want.size() + 1, id);
    want.push_back({id, type, p});
  }
  EXPECT_EQ(want.size(), log->last_id());
  // From memory, before anything is written.
  ExpectEvents(log.get(), want);
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_EQ(want.size(), log->durable_id());
  ExpectEvents(log.get(), want);
  // Replay from the middle.
  std::vector<LogEvent> tail = ReplayAll(log.get(), 8);
  ASSERT_EQ(3u, tail.size());
  EXPECT_EQ(8u, tail[0].id);
  // Stops early with the callback's status.
  int calls = 0;
  Status s = log->Replay(1, [&](const LogEvent& e) {
    return ++calls == 3 ? Status::Aborted("enough") : Status::OK();
  });
  EXPECT_TRUE(s.IsAborted());
  EXPECT_EQ(3, calls);

  log.reset();
  log = MustOpen(Options());
  EXPECT_EQ(want.size(), log->last_id());
  EXPECT_EQ(want.size(), log->stats().recovered_events);
  ExpectEvents(log.get(), want);
}

TEST_F(OperationsLogTest, WrapsAroundManyTimes) {
  OperationsLogOptions o = Options(32 << 10);  // 62 data slots
  auto log = MustOpen(o);
  std::mt19937_64 rng(7);
  std::deque<Expected> live;
  uint64_t slots_written = 0;
  for (int i = 0; i < 2500; i++) {
    size_t n = rng() % 2000;  // up to 5 slots
    std::string p = Payload(n, i);
    uint64_t id = MustAppend(log.get(), LogEventType::kBlockMappingWritten, p);
    ASSERT_EQ(live.empty() ? id : live.back().id + 1, id);
    live.push_back({id, LogEventType::kBlockMappingWritten, p});
    slots_written += n == 0 ? 1 : (n + 463) / 464;
    if (i % 300 == 299) {
      ASSERT_TRUE(log->Sync().ok());
    }
    if (i % 700 == 699) {
      // Clean reopen in the middle of a wrap.
      log.reset();
      log = MustOpen(o);
      ASSERT_EQ(live.back().id, log->last_id());
      ASSERT_EQ(live.front().id, log->head_id());
    }
    if (log->IsAboveSoftLimit()) {
      ExpectEvents(log.get(), std::vector<Expected>(live.begin(), live.end()));
      // Trim a random part, sometimes everything.
      size_t drop = 1 + rng() % live.size();
      uint64_t new_head = drop == live.size() ? live.back().id + 1 : live[drop].id;
      ASSERT_TRUE(log->Trim(new_head).ok());
      live.erase(live.begin(), live.begin() + static_cast<ptrdiff_t>(drop));
      EXPECT_EQ(new_head, log->head_id());
    }
  }
  EXPECT_GT(slots_written, 20 * log->data_slots());
  EXPECT_EQ(0u, log->stats().throttled_appends);
  ASSERT_TRUE(log->Sync().ok());
  ExpectEvents(log.get(), std::vector<Expected>(live.begin(), live.end()));
  log.reset();
  log = MustOpen(o);
  ExpectEvents(log.get(), std::vector<Expected>(live.begin(), live.end()));
}

TEST_F(OperationsLogTest, ReopenRecoversHeadAndTailAndContinuesIds) {
  std::vector<Expected> want;
  {
    auto log = MustOpen(Options());
    for (int i = 0; i < 10; i++) {
      std::string p = Payload(100 + i * 150, i);
      want.push_back({MustAppend(log.get(), LogEventType::kContainerOpened, p),
                      LogEventType::kContainerOpened, p});
    }
    ASSERT_TRUE(log->Sync().ok());
    ASSERT_TRUE(log->Trim(4).ok());
    EXPECT_EQ(4u, log->head_id());
  }
  want.erase(want.begin(), want.begin() + 3);
  auto log = MustOpen(Options());
  EXPECT_EQ(4u, log->head_id());
  EXPECT_EQ(10u, log->last_id());
  EXPECT_EQ(10u, log->durable_id());
  ExpectEvents(log.get(), want);
  // Replay from before the head starts at the head.
  EXPECT_EQ(4u, ReplayAll(log.get(), 1).front().id);
  std::string p = Payload(2000, 99);
  EXPECT_EQ(11u, MustAppend(log.get(), LogEventType::kContainerDeleted, p));
  want.push_back({11, LogEventType::kContainerDeleted, p});
  log.reset();
  log = MustOpen(Options());
  ExpectEvents(log.get(), want);
}

TEST_F(OperationsLogTest, SyncedEventsSurviveACrashUnsyncedOnesDoNot) {
  std::vector<Expected> want;
  auto a = MustOpen(Options());
  for (int i = 0; i < 5; i++) {
    std::string p = Payload(700, i);
    want.push_back({MustAppend(a.get(), LogEventType::kSystemRun, p), LogEventType::kSystemRun, p});
  }
  ASSERT_TRUE(a->Sync().ok());
  EXPECT_EQ(5u, a->durable_id());
  for (int i = 0; i < 3; i++) MustAppend(a.get(), LogEventType::kSystemRun, Payload(700, 50 + i));
  EXPECT_EQ(8u, a->last_id());
  EXPECT_EQ(5u, a->durable_id());

  // A fresh instance on the same file sees exactly the synced events.
  auto b = MustOpen(Options());
  EXPECT_EQ(5u, b->last_id());
  ExpectEvents(b.get(), want);
  Crash(&a);

  std::string p = Payload(10, 77);
  EXPECT_EQ(6u, MustAppend(b.get(), LogEventType::kVolumeAttached, p));
  want.push_back({6, LogEventType::kVolumeAttached, p});
  ASSERT_TRUE(b->Sync().ok());
  Crash(&b);
  auto c = MustOpen(Options());
  ExpectEvents(c.get(), want);
}

TEST_F(OperationsLogTest, TornLastSlotIsIgnoredAndAppendContinues) {
  std::vector<Expected> want;
  auto log = MustOpen(Options());
  for (int i = 0; i < 3; i++) {
    std::string p = Payload(300, i);
    want.push_back({MustAppend(log.get(), LogEventType::kSystemRun, p), LogEventType::kSystemRun, p});
  }
  ASSERT_TRUE(log->Sync().ok());
  env_.AddRule({Op::kWrite, "ops.log", Fault::kTorn, 0, 1, 100});
  MustAppend(log.get(), LogEventType::kSystemRun, Payload(300, 3));
  Status s = log->Sync();
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_FALSE(log->stats().last_error.empty());
  Crash(&log);

  log = MustOpen(Options());
  EXPECT_EQ(3u, log->last_id());
  ExpectEvents(log.get(), want);
  std::string p = Payload(1000, 42);
  EXPECT_EQ(4u, MustAppend(log.get(), LogEventType::kContainerMerged, p));
  want.push_back({4, LogEventType::kContainerMerged, p});
  ASSERT_TRUE(log->Sync().ok());
  Crash(&log);
  log = MustOpen(Options());
  ExpectEvents(log.get(), want);
}

TEST_F(OperationsLogTest, LastSlotCorruptedByHandIsIgnored) {
  std::vector<Expected> want;
  uint64_t last_offset, marker_offset;
  {
    auto log = MustOpen(Options());
    for (int i = 0; i < 4; i++) {
      std::string p = Payload(400, i);
      want.push_back({MustAppend(log.get(), LogEventType::kSystemRun, p), LogEventType::kSystemRun, p});
    }
    last_offset = log->SlotOffset(3);  // one slot per event: event 4 is slot sequence 3
    marker_offset = log->SlotOffset(4);
  }
  // As a crash before the closing sync would leave it: no sync marker.
  DropSyncMarker(marker_offset);
  FlipByte(last_offset + 48 + 200);
  want.pop_back();
  auto log = MustOpen(Options());
  EXPECT_EQ(3u, log->last_id());
  ExpectEvents(log.get(), want);
  EXPECT_EQ(4u, MustAppend(log.get(), LogEventType::kSystemRun, "again"));
}

TEST_F(OperationsLogTest, IncompleteMultiSlotEventIsIgnored) {
  std::vector<Expected> want;
  auto log = MustOpen(Options());
  std::string p1 = Payload(100, 1);
  want.push_back({MustAppend(log.get(), LogEventType::kSystemStart, p1), LogEventType::kSystemStart, p1});
  ASSERT_TRUE(log->Sync().ok());
  // A 5-slot event of which two slots and a bit reach the file.
  env_.AddRule({Op::kWrite, "ops.log", Fault::kTorn, 0, 1, 2 * 512 + 100});
  MustAppend(log.get(), LogEventType::kBlockMappingWritten, Payload(5 * 464, 2));
  EXPECT_FALSE(log->Sync().ok());
  Crash(&log);

  log = MustOpen(Options());
  EXPECT_EQ(1u, log->last_id());
  ExpectEvents(log.get(), want);
  std::string p2 = Payload(10, 3), p3 = Payload(900, 4);
  EXPECT_EQ(2u, MustAppend(log.get(), LogEventType::kContainerCommitted, p2));
  EXPECT_EQ(3u, MustAppend(log.get(), LogEventType::kContainerCommitted, p3));
  want.push_back({2, LogEventType::kContainerCommitted, p2});
  want.push_back({3, LogEventType::kContainerCommitted, p3});
  ASSERT_TRUE(log->Sync().ok());
  Crash(&log);
  log = MustOpen(Options());
  ExpectEvents(log.get(), want);
}

// Event 4 is lost but event 5 behind it reached the file (writes are not
// ordered on a crash). After recovery a new event 4 is written; the stale
// event 5 carries the right slot sequence and id to follow it, but belongs to
// an earlier generation and must not come back.
TEST_F(OperationsLogTest, StaleSlotOfEarlierRunIsNotResurrected) {
  std::vector<Expected> want;
  uint64_t offset4, marker_offset;
  {
    auto log = MustOpen(Options());
    for (int i = 0; i < 5; i++) {
      std::string p = Payload(50, i);
      want.push_back({MustAppend(log.get(), LogEventType::kSystemRun, p), LogEventType::kSystemRun, p});
    }
    offset4 = log->SlotOffset(3);
    marker_offset = log->SlotOffset(5);
  }
  DropSyncMarker(marker_offset);  // as if the crash came before the closing sync
  FlipByte(offset4 + 48 + 10);
  want.resize(3);
  {
    auto log = MustOpen(Options());
    EXPECT_EQ(3u, log->last_id());
    std::string p = Payload(60, 100);
    EXPECT_EQ(4u, MustAppend(log.get(), LogEventType::kContainerDeleted, p));
    want.push_back({4, LogEventType::kContainerDeleted, p});
  }
  auto log = MustOpen(Options());
  EXPECT_EQ(4u, log->last_id());
  ExpectEvents(log.get(), want);
  // Same when the log was trimmed to the new event before the crash.
  ASSERT_TRUE(log->Trim(4).ok());
  log.reset();
  log = MustOpen(Options());
  EXPECT_EQ(4u, log->head_id());
  EXPECT_EQ(4u, log->last_id());
}

TEST_F(OperationsLogTest, TrimToUnsyncedHeadThenCrashDoesNotResurrectStaleSlots) {
  uint64_t offset4, marker_offset;
  {
    auto log = MustOpen(Options());
    for (int i = 0; i < 5; i++) MustAppend(log.get(), LogEventType::kSystemRun, Payload(50, i));
    offset4 = log->SlotOffset(3);
    marker_offset = log->SlotOffset(5);
  }
  DropSyncMarker(marker_offset);  // as if the crash came before the closing sync
  FlipByte(offset4 + 48 + 10);  // events 1-3 recovered, stale event 5 at slot sequence 4
  auto log = MustOpen(Options());
  ASSERT_EQ(3u, log->last_id());
  // New event 4 (at slot sequence 3) is trimmed away before it is written:
  // the head now points at slot sequence 4, where the stale event 5 sits.
  EXPECT_EQ(4u, MustAppend(log.get(), LogEventType::kSystemRun, "new 4"));
  ASSERT_TRUE(log->Trim(5).ok());
  Crash(&log);
  log = MustOpen(Options());
  EXPECT_EQ(5u, log->head_id());
  EXPECT_EQ(4u, log->last_id());
  EXPECT_TRUE(ReplayAll(log.get()).empty());
  EXPECT_EQ(5u, MustAppend(log.get(), LogEventType::kSystemRun, "new 5"));
}

TEST_F(OperationsLogTest, TornSuperblockWriteKeepsTheOtherCopy) {
  auto log = MustOpen(Options());
  for (int i = 0; i < 10; i++) MustAppend(log.get(), LogEventType::kSystemRun, Payload(100, i));
  ASSERT_TRUE(log->Sync().ok());
  ASSERT_TRUE(log->Trim(5).ok());
  env_.AddRule({Op::kWrite, "ops.log", Fault::kTorn, 0, 1, 20});
  Status s = log->Trim(8);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_EQ(5u, log->head_id());
  Crash(&log);
  log = MustOpen(Options());
  EXPECT_EQ(5u, log->head_id());
  EXPECT_EQ(10u, log->last_id());
  EXPECT_EQ(6u, ReplayAll(log.get()).size());
  ASSERT_TRUE(log->Trim(8).ok());
  log.reset();
  log = MustOpen(Options());
  EXPECT_EQ(8u, log->head_id());
  EXPECT_EQ(10u, log->last_id());
}

TEST_F(OperationsLogTest, DamagedSuperblockCopies) {
  {
    auto log = MustOpen(Options());  // superblock sequence 3 in copy B (slot 1)
    for (int i = 0; i < 10; i++) MustAppend(log.get(), LogEventType::kSystemRun, Payload(100, i));
    ASSERT_TRUE(log->Trim(4).ok());  // sequence 4 in copy A (slot 0)
  }
  FlipByte(20);  // damage copy A: copy B (head 1) is used
  {
    auto log = MustOpen(Options());
    EXPECT_EQ(1u, log->head_id());
    EXPECT_EQ(10u, log->last_id());
    EXPECT_EQ(10u, ReplayAll(log.get()).size());
  }
  // That open wrote sequence 4 into copy A again; now damage both.
  FlipByte(20);
  FlipByte(512 + 20);
  std::unique_ptr<OperationsLog> log;
  Status s = OperationsLog::Open(Options(), &env_, &log);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("superblock")) << s.ToString();
}

TEST_F(OperationsLogTest, TrimEverythingAndReopen) {
  auto log = MustOpen(Options());
  for (int i = 0; i < 6; i++) MustAppend(log.get(), LogEventType::kSystemRun, Payload(600, i));
  EXPECT_TRUE(log->Trim(8).IsInvalidArgument());
  ASSERT_TRUE(log->Trim(7).ok());
  EXPECT_EQ(7u, log->head_id());
  EXPECT_EQ(0u, log->stats().used_slots);
  EXPECT_TRUE(ReplayAll(log.get()).empty());
  ASSERT_TRUE(log->Trim(3).ok());  // behind the head: no-op
  EXPECT_EQ(7u, log->head_id());
  log.reset();
  log = MustOpen(Options());
  EXPECT_EQ(7u, log->head_id());
  EXPECT_EQ(6u, log->last_id());
  EXPECT_EQ(7u, MustAppend(log.get(), LogEventType::kSystemRun, "x"));
  log.reset();
  log = MustOpen(Options());
  ASSERT_EQ(1u, ReplayAll(log.get()).size());
  EXPECT_EQ("x", ReplayAll(log.get())[0].payload);
}

TEST_F(OperationsLogTest, AppendWaitsAtHardLimitUntilTrim) {
  OperationsLogOptions o = Options(32 << 10);  // 62 data slots
  o.soft_limit = 0.25;
  o.hard_limit = 0.5;  // 31 slots
  auto log = MustOpen(o);
  EXPECT_FALSE(log->IsAboveSoftLimit());
  for (int i = 0; i < 31; i++) MustAppend(log.get(), LogEventType::kSystemRun, Payload(10, i));
  EXPECT_TRUE(log->IsAboveSoftLimit());
  EXPECT_EQ(31u, log->stats().used_slots);
  std::atomic<bool> done{false};
  uint64_t id = 0;
  Status st;
  std::thread t([&] {
    st = log->Append(LogEventType::kSystemRun, "waiting", &id);
    done = true;
  });
  // Wait (bounded) until the append is waiting for space, then trim.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (log->stats().throttled_appends == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE(done.load());  // cannot finish before the trim
  ASSERT_TRUE(log->Trim(11).ok());
  t.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(32u, id);
  EXPECT_EQ(1u, log->stats().throttled_appends);
  std::vector<LogEvent> events = ReplayAll(log.get());
  ASSERT_EQ(22u, events.size());
  EXPECT_EQ("waiting", events.back().payload);
}

TEST_F(OperationsLogTest, AppendFailsBusyWhenNoTrimComes) {
  OperationsLogOptions o = Options(32 << 10);
  o.hard_limit = 0.5;
  o.append_wait_ms = 30;
  auto log = MustOpen(o);
  for (int i = 0; i < 31; i++) MustAppend(log.get(), LogEventType::kSystemRun, "e");
  uint64_t id = 0;
  Status s = log->Append(LogEventType::kSystemRun, "one too many", &id);
  EXPECT_TRUE(s.IsBusy()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("full")) << s.ToString();
  EXPECT_EQ(31u, log->last_id());
  // An event that could never fit is refused at once.
  s = log->Append(LogEventType::kSystemRun, Payload(32 * 464, 1), &id);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
}

TEST_F(OperationsLogTest, OptionsThatDoNotMatchTheFileAreRefused) {
  MustOpen(Options(64 << 10, 512));
  std::unique_ptr<OperationsLog> log;
  Status s = OperationsLog::Open(Options(64 << 10, 1024), &env_, &log);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("1024")) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("512")) << s.ToString();
  s = OperationsLog::Open(Options(128 << 10, 512), &env_, &log);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("131072")) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("65536")) << s.ToString();
  // Bad options on their own.
  EXPECT_TRUE(OperationsLog::Open(Options(64 << 10, 1000), &env_, &log).IsInvalidArgument());
  EXPECT_TRUE(OperationsLog::Open(Options(4096, 512), &env_, &log).IsInvalidArgument());
  OperationsLogOptions o = Options();
  o.soft_limit = 0.95;
  EXPECT_TRUE(OperationsLog::Open(o, &env_, &log).IsInvalidArgument());
  // The original still opens.
  EXPECT_NE(nullptr, MustOpen(Options(64 << 10, 512)));
}

TEST_F(OperationsLogTest, ConcurrentAppendersGetConsecutiveIds) {
  OperationsLogOptions o = Options(8 << 20, 512);
  auto log = MustOpen(o);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 300;
  std::vector<std::vector<std::pair<uint64_t, std::string>>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < kPerThread; i++) {
        std::string p = Payload(rng() % 2500, t * 100000 + i);
        uint64_t id = 0;
        Status s = log->Append(LogEventType::kBlockMappingWritten, p, &id);
        ASSERT_TRUE(s.ok()) << s.ToString();
        got[t].push_back({id, p});
        if (t % 2 == 0 && i % 60 == 59) {
          ASSERT_TRUE(log->Sync().ok());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  std::map<uint64_t, std::string> all;
  for (const auto& v : got) {
    for (size_t i = 0; i < v.size(); i++) {
      if (i > 0) {
        EXPECT_LT(v[i - 1].first, v[i].first);  // per thread, in append order
      }
      EXPECT_TRUE(all.emplace(v[i].first, v[i].second).second) << "duplicate id " << v[i].first;
    }
  }
  ASSERT_EQ(static_cast<size_t>(kThreads * kPerThread), all.size());
  EXPECT_EQ(1u, all.begin()->first);
  EXPECT_EQ(static_cast<uint64_t>(kThreads * kPerThread), all.rbegin()->first);
  auto check = [&](OperationsLog* l) {
    std::vector<LogEvent> events = ReplayAll(l);
    ASSERT_EQ(all.size(), events.size());
    uint64_t expect = 1;
    for (const LogEvent& e : events) {
      ASSERT_EQ(expect, e.id);
      EXPECT_TRUE(all[e.id] == e.payload) << e.id;
      expect++;
    }
  };
  check(log.get());
  ASSERT_TRUE(log->Sync().ok());
  log.reset();
  log = MustOpen(o);
  check(log.get());
}

TEST_F(OperationsLogTest, WriteErrorSurfacesFromSyncAndLogRecovers) {
  for (Fault fault : {Fault::kENOSPC, Fault::kEIO}) {
    SCOPED_TRACE(fault == Fault::kENOSPC ? "ENOSPC" : "EIO");
    env_.ClearRules();
    auto log = MustOpen(Options());
    uint64_t base = log->last_id();
    for (int i = 0; i < 5; i++) MustAppend(log.get(), LogEventType::kSystemRun, Payload(1000, i));
    env_.AddRule({Op::kWrite, "ops.log", fault, 0, 1, 0});
    Status s = log->Sync();
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(fault == Fault::kENOSPC, s.IsNoSpace()) << s.ToString();
    EXPECT_FALSE(log->stats().last_error.empty());
    EXPECT_EQ(base, log->durable_id());
    // The fault has cleared: the buffered events are written now.
    MustAppend(log.get(), LogEventType::kSystemRun, "after");
    ASSERT_TRUE(log->Sync().ok());
    EXPECT_EQ(base + 6, log->durable_id());
    Crash(&log);
    log = MustOpen(Options());
    std::vector<LogEvent> events = ReplayAll(log.get(), base + 1);
    ASSERT_EQ(6u, events.size());
    for (int i = 0; i < 5; i++) EXPECT_TRUE(events[i].payload == Payload(1000, i));
    EXPECT_EQ("after", events[5].payload);
  }
}

TEST_F(OperationsLogTest, FailedFdatasyncIsRetriedWithTheDataRewritten) {
  auto log = MustOpen(Options());
  for (int i = 0; i < 5; i++) MustAppend(log.get(), LogEventType::kSystemRun, Payload(700, i));
  env_.AddRule({Op::kSync, "ops.log", Fault::kEIO, 0, 1, 0});
  EXPECT_TRUE(log->Sync().IsIOError());
  EXPECT_EQ(0u, log->durable_id());
  // The next Sync writes the data again (the kernel may have dropped the
  // pages after the failed fdatasync): a write fault now makes it fail.
  env_.AddRule({Op::kWrite, "ops.log", Fault::kEIO, 0, 1, 0});
  EXPECT_TRUE(log->Sync().IsIOError());
  EXPECT_EQ(1, env_.faults_fired() - 1);
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_EQ(5u, log->durable_id());
  Crash(&log);
  log = MustOpen(Options());
  EXPECT_EQ(5u, log->last_id());
}

TEST_F(OperationsLogTest, WriteBehindFailureIsReportedBySync) {
  OperationsLogOptions o = Options(8 << 20, 4096);
  auto log = MustOpen(o);
  // The first write-behind of a 1 MiB chunk fails; appends still succeed.
  env_.AddRule({Op::kWrite, "ops.log", Fault::kEIO, 0, 1, 0});
  std::vector<std::string> payloads;
  for (int i = 0; i < 400; i++) {
    payloads.push_back(Payload(5000, i));
    MustAppend(log.get(), LogEventType::kBlockMappingWritten, payloads.back());
  }
  EXPECT_EQ(1, env_.faults_fired());
  EXPECT_FALSE(log->stats().last_error.empty());
  ASSERT_TRUE(log->Sync().ok());  // rewrites what failed
  Crash(&log);
  log = MustOpen(o);
  std::vector<LogEvent> events = ReplayAll(log.get());
  ASSERT_EQ(400u, events.size());
  for (size_t i = 0; i < events.size(); i++) EXPECT_TRUE(events[i].payload == payloads[i]) << i;
}

TEST_F(OperationsLogTest, LargeEventsSpanManySlotsAndChunks) {
  OperationsLogOptions o = Options(16 << 20, 4096);
  auto log = MustOpen(o);
  std::string big = Payload(5 << 20, 1);
  std::string small = Payload(10, 2);
  EXPECT_EQ(1u, MustAppend(log.get(), LogEventType::kBlockMappingWritten, small));
  EXPECT_EQ(2u, MustAppend(log.get(), LogEventType::kBlockMappingWritten, big));
  EXPECT_EQ(3u, MustAppend(log.get(), LogEventType::kBlockMappingWritten, small));
  auto check = [&](OperationsLog* l) {
    std::vector<LogEvent> events = ReplayAll(l);
    ASSERT_EQ(3u, events.size());
    EXPECT_TRUE(events[1].payload == big);
    EXPECT_EQ(small, events[2].payload);
  };
  check(log.get());  // partly written behind, partly in memory
  ASSERT_TRUE(log->Sync().ok());
  check(log.get());
  log.reset();
  log = MustOpen(o);
  check(log.get());
}

TEST_F(OperationsLogTest, CorruptSlotInsideTheLiveRangeIsCorruption) {
  auto log = MustOpen(Options());
  for (int i = 0; i < 5; i++) MustAppend(log.get(), LogEventType::kSystemRun, Payload(300, i));
  ASSERT_TRUE(log->Sync().ok());
  FlipByte(log->SlotOffset(2) + 48 + 5);  // event 3, data slot index 4
  std::vector<uint64_t> seen;
  Status s = log->Replay(1, [&](const LogEvent& e) {
    seen.push_back(e.id);
    return Status::OK();
  });
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("slot 4")) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("event 3")) << s.ToString();
  EXPECT_EQ((std::vector<uint64_t>{1, 2}), seen);
}

TEST_F(OperationsLogTest, ClosedLogRefusesAppends) {
  auto log = MustOpen(Options());
  MustAppend(log.get(), LogEventType::kSystemRun, "a");
  ASSERT_TRUE(log->Close().ok());
  uint64_t id = 0;
  EXPECT_TRUE(log->Append(LogEventType::kSystemRun, "b", &id).IsAborted());
  log.reset();
  log = MustOpen(Options());
  EXPECT_EQ(1u, log->last_id());
}


// --- Damage versus torn tail (docs/formats.md "Recovery") ---

// Opens with accept_damage, as dedupv1_replay --accept-log-damage does.
std::unique_ptr<OperationsLog> OpenAccepting(FaultInjectionEnv* env, OperationsLogOptions o) {
  o.accept_damage = true;
  std::unique_ptr<OperationsLog> log;
  Status s = OperationsLog::Open(o, env, &log);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return log;
}

std::vector<LogEvent> ReplaySalvagedAll(OperationsLog* log) {
  std::vector<LogEvent> out;
  Status s = log->ReplaySalvaged([&](const LogEvent& e) {
    out.push_back(e);
    return Status::OK();
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// 20 one-slot events, each synced on its own (event i is slot sequence i - 1).
std::vector<Expected> AppendSynced(OperationsLog* log, int n, size_t size = 300) {
  std::vector<Expected> want;
  for (int i = 0; i < n; i++) {
    std::string p = Payload(size, 1000 + i);
    uint64_t id = 0;
    EXPECT_TRUE(log->Append(LogEventType::kBlockMappingWritten, p, &id).ok());
    EXPECT_TRUE(log->Sync().ok());
    want.push_back({id, LogEventType::kBlockMappingWritten, p});
  }
  return want;
}

TEST_F(OperationsLogTest, DamagedSlotFollowedByDurableSlotsRefusesTheOpen) {
  std::vector<Expected> want;
  uint64_t offset;
  {
    auto log = MustOpen(Options());
    want = AppendSynced(log.get(), 20);
    offset = log->SlotOffset(7);  // event 8
    Crash(&log);
  }
  FlipByte(offset + 48 + 100);
  std::unique_ptr<OperationsLog> log;
  Status s = OperationsLog::Open(Options(), &env_, &log);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find(dir_.Sub("ops.log"))) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("slot 9 (slot sequence 7, offset " + std::to_string(offset) + ")"))
      << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("checksum mismatch")) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("events from 8 on")) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("slot sequence 8 (event 9)")) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("--accept-log-damage")) << s.ToString();
  // The refused open wrote nothing: the same damage is found again.
  s = OperationsLog::Open(Options(), &env_, &log);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();

  // Accepting: the chain before the damage, the intact events after it.
  log = OpenAccepting(&env_, Options());
  ASSERT_NE(nullptr, log);
  EXPECT_TRUE(log->damage_pending());
  EXPECT_EQ(7u, log->last_id());
  ExpectEvents(log.get(), std::vector<Expected>(want.begin(), want.begin() + 7));
  const LogDamage& d = log->damage();
  ASSERT_EQ(1u, d.gaps.size());
  EXPECT_EQ(7u, d.gaps[0].first_seq);
  EXPECT_EQ(8u, d.gaps[0].end_seq);
  EXPECT_EQ(8u, d.gaps[0].first_lost_id);
  EXPECT_EQ(1u, d.gaps[0].lost_ids);
  ASSERT_EQ(1u, d.gaps[0].slots.size());
  EXPECT_EQ("checksum mismatch", d.gaps[0].slots[0].why);
  EXPECT_EQ(8u, d.proof_seq);
  EXPECT_FALSE(d.proof_by_generation);
  std::vector<LogEvent> salvaged = ReplaySalvagedAll(log.get());
  ASSERT_EQ(12u, salvaged.size());
  for (size_t i = 0; i < salvaged.size(); i++) {
    EXPECT_EQ(want[8 + i].id, salvaged[i].id);
    EXPECT_TRUE(want[8 + i].payload == salvaged[i].payload) << i;
  }
  // Nothing is appended or trimmed while the damage is pending.
  uint64_t id = 0;
  EXPECT_TRUE(log->Append(LogEventType::kSystemRun, "x", &id).IsCorruption());
  EXPECT_TRUE(log->Trim(5).IsCorruption());
  log.reset();
  EXPECT_TRUE(OperationsLog::Open(Options(), &env_, &log).IsCorruption());

  // Discarding restarts the log above every id and slot in the file.
  log = OpenAccepting(&env_, Options());
  ASSERT_TRUE(log->DiscardDamaged(5).ok());
  EXPECT_FALSE(log->damage_pending());
  EXPECT_EQ(21u, log->head_id());
  EXPECT_TRUE(ReplayAll(log.get()).empty());
  std::vector<Expected> after = AppendSynced(log.get(), 3);
  EXPECT_EQ(21u, after[0].id);
  // A crash with a torn tail after the restart is no damage.
  MustAppend(log.get(), LogEventType::kSystemRun, Payload(300, 5));
  Crash(&log);
  log = MustOpen(Options());
  ASSERT_NE(nullptr, log);
  EXPECT_EQ(21u, log->head_id());
  ExpectEvents(log.get(), after);
}

// Found by log/operations_log_fuzz.cc: a slot whose CRC holds but which
// claims a sequence number a million rings ahead (nothing the log writes: a
// forged slot, or a bug), with a watermark to match, proves the chain's end
// damaged and is where the chain resumes; the damage report then listed
// every sequence number up to it, and the open ran out of memory instead of
// refusing. A gap now lists each ring position at most once.
TEST_F(OperationsLogTest, ASlotClaimingASequenceNumberRingsAheadIsRefusedWithABoundedReport) {
  uint64_t offset;
  uint64_t data_slots;
  {
    auto log = MustOpen(Options());
    AppendSynced(log.get(), 20);
    offset = log->SlotOffset(7);  // event 8
    data_slots = log->data_slots();
    Crash(&log);
  }
  std::string slot = ReadFile(offset, 512);
  uint8_t* p = reinterpret_cast<uint8_t*>(slot.data());
  LogSlotHeader h;
  std::string why;
  ASSERT_TRUE(DecodeLogSlot(p, 512 - kLogSlotHeaderBytes, &h, &why)) << why;
  h.seq += 1000000 * data_slots;  // same position in the ring, a million rings on,
  h.watermark = h.seq;             // "proving" every slot below it durable,
  h.id = 1000;                     // and an event the chain could resume at
  EncodeLogSlotHeader(p, h, Crc32c(p + kLogSlotHeaderBytes, h.payload_length));
  PatchFile(offset, slot);
  std::unique_ptr<OperationsLog> log;
  Status s = OperationsLog::Open(Options(), &env_, &log);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("events from 8 on")) << s.ToString();
  log = OpenAccepting(&env_, Options());
  ASSERT_NE(nullptr, log);
  const LogDamage& d = log->damage();
  ASSERT_EQ(2u, d.gaps.size());
  EXPECT_EQ(7u, d.gaps[0].first_seq);
  EXPECT_EQ(8u, d.gaps[0].end_seq);  // the chain resumes at event 9
  // From the end of the events to the forged slot: each position once, then a count.
  EXPECT_EQ(h.seq, d.gaps[1].end_seq);
  ASSERT_EQ(data_slots + 1, d.gaps[1].slots.size());
  EXPECT_NE(std::string::npos, d.gaps[1].slots.back().why.find("more slot sequence numbers up to " +
                                                                  std::to_string(h.seq)))
      << d.gaps[1].slots.back().why;
  std::vector<LogEvent> salvaged = ReplaySalvagedAll(log.get());
  ASSERT_GE(salvaged.size(), 12u);
  for (size_t i = 0; i < 12; i++) EXPECT_EQ(9 + i, salvaged[i].id);
}

// The sequence: many events, one sync for all of them, a crash,
// damage in the middle. No slot was appended after the sync, so only the
// sync marker written behind the last slot proves them durable.
TEST_F(OperationsLogTest, DamageBeforeTheLastSyncIsProvenByItsMarker) {
  std::vector<Expected> want;
  uint64_t offset;
  {
    auto log = MustOpen(Options());
    for (int i = 0; i < 20; i++) {
      std::string p = Payload(300, 2000 + i);
      want.push_back({MustAppend(log.get(), LogEventType::kBlockMappingWritten, p), LogEventType::kBlockMappingWritten, p});
    }
    ASSERT_TRUE(log->Sync().ok());
    offset = log->SlotOffset(7);  // event 8
    Crash(&log);
  }
  FlipByte(offset + 48 + 100);
  std::unique_ptr<OperationsLog> log;
  Status s = OperationsLog::Open(Options(), &env_, &log);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("the sync marker at slot sequence 20")) << s.ToString();
  log = OpenAccepting(&env_, Options());
  EXPECT_TRUE(log->damage().proof_is_marker);
  std::vector<LogEvent> salvaged = ReplaySalvagedAll(log.get());
  ASSERT_EQ(12u, salvaged.size());
  EXPECT_EQ(9u, salvaged.front().id);
  EXPECT_TRUE(salvaged.back().payload == want.back().payload);
}

TEST_F(OperationsLogTest, SeveralDamagedRegionsAreEachListed) {
  std::vector<Expected> want;
  uint64_t slot_offsets[3];
  {
    auto log = MustOpen(Options());
    want = AppendSynced(log.get(), 6);
    want.push_back({MustAppend(log.get(), LogEventType::kBlockMappingWritten, Payload(1200, 7)),
                    LogEventType::kBlockMappingWritten, Payload(1200, 7)});  // event 7: slots 6..8
    ASSERT_TRUE(log->Sync().ok());
    std::vector<Expected> more = AppendSynced(log.get(), 10);  // events 8..17: slots 9..18
    want.insert(want.end(), more.begin(), more.end());
    slot_offsets[0] = log->SlotOffset(2);   // event 3
    slot_offsets[1] = log->SlotOffset(7);   // event 7, its second fragment
    slot_offsets[2] = log->SlotOffset(13);  // event 12
  }
  for (uint64_t o : slot_offsets) FlipByte(o + 48 + 9);
  std::unique_ptr<OperationsLog> log;
  ASSERT_TRUE(OperationsLog::Open(Options(), &env_, &log).IsCorruption());
  log = OpenAccepting(&env_, Options());
  EXPECT_EQ(2u, log->last_id());
  const LogDamage& d = log->damage();
  ASSERT_EQ(3u, d.gaps.size());
  EXPECT_EQ(3u, d.gaps[0].first_lost_id);
  EXPECT_EQ(1u, d.gaps[0].lost_ids);
  EXPECT_EQ(7u, d.gaps[1].first_lost_id);
  EXPECT_EQ(1u, d.gaps[1].lost_ids);
  EXPECT_EQ(7u, d.gaps[1].first_seq);   // the damaged fragment
  EXPECT_EQ(9u, d.gaps[1].end_seq);     // picked up at event 8
  ASSERT_EQ(2u, d.gaps[1].slots.size());
  EXPECT_NE(std::string::npos, d.gaps[1].slots[1].why.find("event 7 fragment 2 of 3")) << d.gaps[1].slots[1].why;
  EXPECT_EQ(12u, d.gaps[2].first_lost_id);
  EXPECT_EQ(3u, d.lost_events());
  std::vector<uint64_t> ids;
  for (const LogEvent& e : ReplaySalvagedAll(log.get())) {
    ids.push_back(e.id);
    EXPECT_TRUE(want[e.id - 1].payload == e.payload) << e.id;
  }
  EXPECT_EQ((std::vector<uint64_t>{4, 5, 6, 8, 9, 10, 11, 13, 14, 15, 16, 17}), ids);
}

// After a crash the slots appended since the last fdatasync may be lost in
// any order (here: unsynced slots vanish, i.e. read as never written). That
// is a torn tail, never damage, however many slots after a lost one survive.
TEST_F(OperationsLogTest, UnsyncedSlotsLostInAnyOrderAreATornTail) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20; trial++) {
    SCOPED_TRACE(trial);
    Env::Default()->DeleteFile(dir_.Sub("ops.log"));
    std::vector<Expected> want;
    std::vector<uint64_t> unsynced;
    {
      auto log = MustOpen(Options());
      want = AppendSynced(log.get(), 5);
      for (int i = 0; i < 12; i++) {
        const size_t n = rng() % 1100;  // up to 3 slots
        std::string p = Payload(n, 50 + i);
        const uint64_t id = MustAppend(log.get(), LogEventType::kBlockMappingWritten, p);
        want.push_back({id, LogEventType::kBlockMappingWritten, p});
      }
      // Written (a clean close syncs them), but their watermarks say what a
      // crash before that sync could have lost.
      for (uint64_t seq = 5; seq < log->stats().used_slots; seq++) unsynced.push_back(seq);
      std::vector<uint64_t> offsets;
      for (uint64_t seq : unsynced) offsets.push_back(log->SlotOffset(seq));
      const uint64_t marker_offset = log->SlotOffset(log->stats().used_slots);
      log.reset();
      DropSyncMarker(marker_offset);  // the crash came before that sync
      // Lose 1..4 random unsynced slots.
      const size_t lose = 1 + rng() % 4;
      uint64_t first_lost = UINT64_MAX;
      for (size_t k = 0; k < lose; k++) {
        const size_t i = rng() % unsynced.size();
        PatchFile(offsets[i], std::string(512, '\0'));
        first_lost = std::min(first_lost, unsynced[i]);
      }
      // Events wholly before the first lost slot survive.
      uint64_t seq = 0;
      size_t keep = 0;
      for (const Expected& e : want) {
        const uint64_t slots = e.payload.empty() ? 1 : (e.payload.size() + 463) / 464;
        if (seq + slots > first_lost) break;
        seq += slots;
        keep++;
      }
      want.resize(keep);
    }
    auto log = MustOpen(Options());
    ASSERT_NE(nullptr, log);
    ExpectEvents(log.get(), want);
  }
}

// The case: the newer superblock copy (written by the last open) is
// damaged; the older copy has an older generation, which makes every slot
// of the last run look too new.
TEST_F(OperationsLogTest, DamagedNewerSuperblockCopyIsRefusedNotSilent) {
  std::vector<Expected> want;
  {
    auto log = MustOpen(Options());  // generation 1, superblock sequence 3 (copy B)
    want = AppendSynced(log.get(), 3);
  }
  {
    auto log = MustOpen(Options());  // generation 2, superblock sequence 4 (copy A)
    std::vector<Expected> more = AppendSynced(log.get(), 4);
    want.insert(want.end(), more.begin(), more.end());
    Crash(&log);
  }
  FlipByte(20);  // copy A
  std::unique_ptr<OperationsLog> log;
  Status s = OperationsLog::Open(Options(), &env_, &log);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("newer superblock copy is damaged")) << s.ToString();
  // Even with a single sync after the last open (no watermark proof).
  {
    Env::Default()->DeleteFile(dir_.Sub("ops.log"));
    auto a = MustOpen(Options());
    AppendSynced(a.get(), 2);
    a.reset();
    auto b = MustOpen(Options());
    MustAppend(b.get(), LogEventType::kSystemRun, "only");
    ASSERT_TRUE(b->Sync().ok());
    Crash(&b);
    FlipByte(20);
    s = OperationsLog::Open(Options(), &env_, &log);
    ASSERT_TRUE(s.IsCorruption()) << s.ToString();
    log = OpenAccepting(&env_, Options());
    EXPECT_TRUE(log->damage().proof_by_generation);
    std::vector<LogEvent> salvaged = ReplaySalvagedAll(log.get());
    ASSERT_EQ(1u, salvaged.size());
    EXPECT_EQ("only", salvaged[0].payload);
    EXPECT_EQ(0u, log->damage().lost_events());
  }
}

// The newer copy came from a Trim and is damaged; the older copy's head is
// older. Slots of that older head not yet overwritten: recovered (events the
// trim dropped come back and are replayed again, which is harmless). Slots
// already overwritten by a later lap: refused.
TEST_F(OperationsLogTest, DamagedNewerSuperblockAfterALapIsRefused) {
  OperationsLogOptions o = Options(32 << 10);  // 62 data slots
  {
    auto log = MustOpen(o);
    AppendSynced(log.get(), 50);      // slot sequences 0..49
    ASSERT_TRUE(log->Trim(10).ok());  // superblock sequence 4, copy A: head 10 at slot sequence 9
    ASSERT_TRUE(log->Trim(50).ok());  // sequence 5, copy B: head 50 at slot sequence 49
    AppendSynced(log.get(), 30);      // slot sequences 50..79: 62..71 overwrite 0..9
    Crash(&log);
  }
  FlipByte(512 + 20);  // copy B: copy A names head 10, whose slot now holds slot sequence 71
  std::unique_ptr<OperationsLog> log;
  Status s = OperationsLog::Open(o, &env_, &log);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("slot sequence 9,")) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("holds slot sequence 71 instead")) << s.ToString();
}

// Slots written by builds before the watermark (flag clear) cannot prove
// anything: recovery behaves as it did then, ending the chain at the damage.
TEST_F(OperationsLogTest, SlotsWithoutWatermarkBehaveAsBefore) {
  std::vector<Expected> want;
  uint64_t offsets[20], marker_offset;
  {
    auto log = MustOpen(Options());
    want = AppendSynced(log.get(), 20);
    for (int i = 0; i < 20; i++) offsets[i] = log->SlotOffset(i);
    marker_offset = log->SlotOffset(20);
  }
  DropSyncMarker(marker_offset);  // older builds wrote none
  // Rewrite every slot as an older build wrote it.
  for (uint64_t off : offsets) {
    std::string slot = ReadFile(off, 512);
    uint8_t* p = reinterpret_cast<uint8_t*>(slot.data());
    LogSlotHeader h;
    std::string why;
    ASSERT_TRUE(DecodeLogSlot(p, 464, &h, &why)) << why;
    EXPECT_TRUE(h.has_watermark);
    EXPECT_EQ(h.seq, h.watermark);  // each event synced before the next
    h.has_watermark = false;
    EncodeLogSlotHeader(p, h, Crc32c(p + 48, h.payload_length));
    EXPECT_EQ(0, DecodeFixed16(p + 30));
    EXPECT_EQ(0u, DecodeFixed32(p + 44));
    PatchFile(off, slot);
  }
  FlipByte(offsets[7] + 48 + 100);
  auto log = MustOpen(Options());
  ASSERT_NE(nullptr, log);
  ExpectEvents(log.get(), std::vector<Expected>(want.begin(), want.begin() + 7));
}

TEST_F(OperationsLogTest, WatermarkDistanceIsClampedToClaimLess) {
  uint8_t slot[512] = {};
  LogSlotHeader h;
  h.seq = (1ULL << 40);
  h.id = 3;
  h.fragment_count = 1;
  h.has_watermark = true;
  h.watermark = 5;  // distance beyond u32
  EncodeLogSlotHeader(slot, h, Crc32c(slot + 48, 0));
  LogSlotHeader got;
  std::string why;
  ASSERT_TRUE(DecodeLogSlot(slot, 464, &got, &why)) << why;
  EXPECT_TRUE(got.has_watermark);
  EXPECT_EQ(h.seq - UINT32_MAX, got.watermark);
  EXPECT_LE(got.watermark, h.seq);
}

}  // namespace
}  // namespace dedupv1

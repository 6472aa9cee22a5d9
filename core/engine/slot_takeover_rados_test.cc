// Takeover of a gateway slot (core/engine/slot_takeover.h) against the test
// cluster (DEDUPV1_TEST_CEPH_CONF). Gateway A is a forked child process (its
// own librados client): it opens slot gw-a, writes and syncs, reports
// through a pipe, and then waits for commands. Killed with SIGKILL it is a
// crashed gateway; stopped with SIGSTOP a paused one. The parent takes the
// slot over. The parent opens no RADOS connection before it forks.
#include "core/engine/slot_takeover.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "core/base/testutil.h"
#include "core/engine/system_testutil.h"
#include "core/rados/rados_env_testutil.h"

namespace dedupv1 {
namespace {

constexpr uint64_t kVolumeSize = 16 << 20;
constexpr uint64_t kWrite = 1 << 20;
constexpr int kBlocks = 6;
const char kGateway[] = "gw-a";

// Gateway A's data (seed 1), the taker's (seed 2), A's writes after the
// takeover (seed 3): distinct, so a read tells whose they are.
std::vector<uint8_t> Data(int who, int i) { return test::RandomBytes(kWrite, 1000 * who + i); }

Options SlotOptions(const std::string& dir, const RadosOptions& rados, uint32_t lease_s) {
  Options o = test::SmallSystemOptions(dir);
  o.storage_backend = "rados";
  o.rados = rados;
  o.rados.gateway = kGateway;
  o.rados.lock_duration_s = lease_s;
  o.chunk_store.container_size = 256 << 10;
  o.chunk_index.rados_shards = 8;
  o.volumes.push_back({"vol", kVolumeSize});
  Status s = o.DerivePathsFrom(dir);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return o;
}

Status WriteAll(DedupSystem* sys, int who) {
  Volume* v = nullptr;
  Status s = sys->GetVolume("vol", &v);
  for (int i = 0; s.ok() && i < kBlocks; i++) {
    const std::vector<uint8_t> d = Data(who, i);
    s = v->Write(i * kWrite, kWrite, d.data(), false);
  }
  return s.ok() ? v->Sync() : s;
}

void Send(int fd, const std::string& line) {
  const std::string l = line + "\n";
  if (write(fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) _exit(12);
}

// Gateway A: open, write and sync seed 1, report "synced"; then for each
// "write" command write seed 3 and sync, reporting "write <status>". Exits
// at EOF of the command pipe (without closing the system: a dead gateway).
[[noreturn]] void GatewayA(const Options& o, int report_fd, int command_fd) {
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::OpenStore(o, Env::Default(), &sys);
  if (!s.ok()) {
    Send(report_fd, "open-failed " + s.ToString());
    _exit(10);
  }
  s = WriteAll(sys.get(), 1);
  Send(report_fd, s.ok() ? "synced" : "sync-failed " + s.ToString());
  std::string line;
  char c;
  while (read(command_fd, &c, 1) == 1) {
    if (c != '\n') {
      line += c;
      continue;
    }
    if (line == "write") {
      s = WriteAll(sys.get(), 3);
      Send(report_fd, "write " + s.ToString());
    }
    line.clear();
  }
  _exit(0);
}

class GatewayTakeoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = test::TestRadosOptions(&rados_, 4 << 20);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void TearDown() override {
    KillA();
    taker_.reset();
    std::shared_ptr<RadosCluster> cluster;
    if (!RadosCluster::Shared(rados_, &cluster).ok()) return;
    test::RemoveIndexObjects(cluster.get());
    std::vector<std::string> names;
    for (auto it = cluster->data().nobjects_begin(); it != cluster->data().nobjects_end(); ++it) {
      names.push_back(it->get_oid());
    }
    for (const std::string& name : names) cluster->data().remove(name);
  }

  // Forks gateway A on |dir| with lease |lease_s| and waits (bounded) for it
  // to report that its data is synced.
  void StartA(const std::string& dir, uint32_t lease_s) {
    const Options o = SlotOptions(dir, rados_, lease_s);
    int report[2], command[2];
    ASSERT_EQ(0, pipe(report));
    ASSERT_EQ(0, pipe(command));
    a_pid_ = fork();
    ASSERT_GE(a_pid_, 0);
    if (a_pid_ == 0) {
      close(report[0]);
      close(command[1]);
      GatewayA(o, report[1], command[0]);
    }
    close(report[1]);
    close(command[0]);
    report_fd_ = report[0];
    command_fd_ = command[1];
    const std::string line = ReadLine(std::chrono::seconds(120));
    ASSERT_EQ("synced", line);
  }

  // One line of A's report, "" if none came within |limit|.
  std::string ReadLine(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::string line;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return "";
      struct pollfd p = {report_fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char c;
      if (read(report_fd_, &c, 1) != 1) return line;
      if (c == '\n') return line;
      line += c;
    }
  }

  void KillA() {
    if (a_pid_ > 0) {
      kill(a_pid_, SIGKILL);
      int status = 0;
      waitpid(a_pid_, &status, 0);
      a_pid_ = -1;
    }
    if (report_fd_ >= 0) close(report_fd_);
    if (command_fd_ >= 0) close(command_fd_);
    report_fd_ = command_fd_ = -1;
  }

  GatewayRecord Record() {
    std::shared_ptr<RadosCluster> cluster;
    EXPECT_TRUE(RadosCluster::Shared(rados_, &cluster).ok());
    GatewayRecord r;
    GatewayRegistry registry(cluster);
    Status s = registry.Lookup(kGateway, &r);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return r;
  }

  static ::testing::AssertionResult ReadsBack(DedupSystem* sys, int who) {
    Volume* v = test::Vol(sys, "vol");
    if (v == nullptr) return ::testing::AssertionFailure() << "no volume";
    for (int i = 0; i < kBlocks; i++) {
      ::testing::AssertionResult r = test::ReadsBack(v, i * kWrite, Data(who, i));
      if (!r) return r << " (block " << i << " of writer " << who << ")";
    }
    return ::testing::AssertionSuccess();
  }

  RadosOptions rados_;
  pid_t a_pid_ = -1;
  int report_fd_ = -1, command_fd_ = -1;
  std::unique_ptr<DedupSystem> taker_;
};

// A crashed gateway: A syncs and is killed -9. The takeover (no force) waits
// for A's lease to end, fences A's recorded address, and the taker reads
// back every byte A synced.
TEST_F(GatewayTakeoverTest, KilledGatewaySyncedDataReadsBackThroughTaker) {
  test::TempDir dir_a, dir_b;
  ASSERT_NO_FATAL_FAILURE(StartA(dir_a.path(), /*lease_s=*/3));
  const GatewayRecord before = Record();
  ASSERT_EQ(1u, before.incarnation);
  ASSERT_EQ(static_cast<uint32_t>(a_pid_), before.pid);
  KillA();

  const Options o = SlotOptions(dir_b.path(), rados_, 3);
  TakeoverReport report;
  Status s = OpenTakenOverSlot(o, /*force=*/false, Env::Default(), &taker_, &report);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << report.ToString();
  EXPECT_EQ(before, report.previous);
  ASSERT_EQ(1u, report.fenced.size()) << report.ToString();
  EXPECT_EQ(BareAddress(before.address), BareAddress(report.fenced[0]));
  EXPECT_GT(report.touched_objects, 8u);  // lock, log, block index, catalog, 8 shards, ...
  EXPECT_TRUE(taker_->recovery().dirty_start);
  EXPECT_EQ(2u, report.taken.incarnation);
  EXPECT_EQ(1u, report.taken.takeovers);
  EXPECT_EQ(before.slot, report.taken.slot);
  EXPECT_EQ(report.taken, Record());
  EXPECT_TRUE(ReadsBack(taker_.get(), 1));
  std::printf("%s", report.ToString().c_str());
}

// A paused gateway that still holds its lease: the forced takeover fences it
// at once; the taker writes and syncs. When A resumes, its writes fail
// (fenced / blocklisted) and the taker's data reads back unchanged.
TEST_F(GatewayTakeoverTest, ForcedTakeoverFencesPausedGateway) {
  test::TempDir dir_a, dir_b;
  ASSERT_NO_FATAL_FAILURE(StartA(dir_a.path(), /*lease_s=*/30));
  const GatewayRecord before = Record();
  ASSERT_EQ(0, kill(a_pid_, SIGSTOP));

  Options o = SlotOptions(dir_b.path(), rados_, 30);
  const auto start = std::chrono::steady_clock::now();
  TakeoverReport report;
  Status s = OpenTakenOverSlot(o, /*force=*/true, Env::Default(), &taker_, &report);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << report.ToString();
  // Nobody waited for A's 30 s lease.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(25)) << report.ToString();
  ASSERT_FALSE(report.holders.empty());
  ASSERT_FALSE(report.fenced.empty());
  EXPECT_EQ(BareAddress(before.address), BareAddress(report.fenced[0]));
  EXPECT_EQ(1u, report.taken.takeovers);
  EXPECT_TRUE(ReadsBack(taker_.get(), 1));
  s = WriteAll(taker_.get(), 2);
  ASSERT_TRUE(s.ok()) << s.ToString();

  ASSERT_EQ(0, kill(a_pid_, SIGCONT));
  Send(command_fd_, "write");
  const std::string answer = ReadLine(std::chrono::seconds(120));
  ASSERT_EQ(0u, answer.rfind("write ", 0)) << "A did not answer: '" << answer << "'";
  EXPECT_NE("write OK", answer);
  EXPECT_TRUE(answer.find("fenced") != std::string::npos || answer.find("blocklisted") != std::string::npos)
      << answer;
  std::printf("A after the takeover: %s\n", answer.c_str());
  // A second attempt fails too (lost for good).
  Send(command_fd_, "write");
  const std::string again = ReadLine(std::chrono::seconds(120));
  EXPECT_EQ(0u, again.rfind("write ", 0)) << again;
  EXPECT_NE("write OK", again);
  KillA();

  EXPECT_TRUE(ReadsBack(taker_.get(), 2));
  // And from the store, not the taker's memory: reopened by a third gateway.
  taker_.reset();
  test::TempDir dir_c;
  Options c = SlotOptions(dir_c.path(), rados_, 30);
  std::unique_ptr<DedupSystem> third;
  s = DedupSystem::OpenStore(c, Env::Default(), &third);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(ReadsBack(third.get(), 2));
  std::printf("%s", report.ToString().c_str());
}

// A live gateway keeps renewing its lease: a takeover without force waits
// two leases and is Busy naming the holder (address, host, pid). Nothing was
// fenced: A still writes.
TEST_F(GatewayTakeoverTest, UnforcedTakeoverOfLiveHolderIsBusy) {
  test::TempDir dir_a, dir_b;
  ASSERT_NO_FATAL_FAILURE(StartA(dir_a.path(), /*lease_s=*/3));
  const GatewayRecord before = Record();

  Options o = SlotOptions(dir_b.path(), rados_, 3);
  const auto start = std::chrono::steady_clock::now();
  TakeoverReport report;
  Status s = TakeOverSlot(o, /*force=*/false, &report);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(s.IsBusy()) << s.ToString();
  EXPECT_GE(took, std::chrono::seconds(6));
  EXPECT_LT(took, std::chrono::seconds(20));
  EXPECT_NE(s.message().find("pid " + std::to_string(a_pid_)), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("host " + before.host), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(BareAddress(before.address)), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("--force"), std::string::npos) << s.ToString();
  EXPECT_TRUE(report.fenced.empty());

  Send(command_fd_, "write");
  EXPECT_EQ("write OK", ReadLine(std::chrono::seconds(120)));
  EXPECT_EQ(before, Record());
}

}  // namespace
}  // namespace dedupv1

namespace dedupv1 {
namespace {

// A slot nobody registered is NotFound; one registered but never opened has
// no holder and no address: nothing to wait for or fence.
TEST_F(GatewayTakeoverTest, UnknownSlotIsNotFoundNeverOpenedSlotNeedsNoFence) {
  test::TempDir dir;
  const Options o = SlotOptions(dir.path(), rados_, 3);
  TakeoverReport report;
  Status s = TakeOverSlot(o, /*force=*/false, &report);
  ASSERT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.message().find(kGateway), std::string::npos) << s.ToString();

  std::shared_ptr<RadosCluster> cluster;
  ASSERT_TRUE(RadosCluster::Shared(rados_, &cluster).ok());
  GatewayRecord record;
  GatewayRegistry registry(cluster);
  ASSERT_TRUE(registry.Register(kGateway, &record).ok());
  s = TakeOverSlot(o, /*force=*/true, &report);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(report.fenced.empty());
  EXPECT_TRUE(report.holders.empty());
  EXPECT_NE(report.not_fenced.find("never opened"), std::string::npos) << report.not_fenced;

  // A store without slots has none to take over.
  Options single = o;
  single.rados.gateway.clear();
  EXPECT_TRUE(TakeOverSlot(single, false, &report).IsInvalidArgument());
}

}  // namespace
}  // namespace dedupv1

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
#include <fstream>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "core/base/config.h"
#include "core/base/program_testutil.h"
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

// A taker in a child process: takes the slot over (no force) and reports
// "opened" or the error; then waits for EOF of its command pipe, holding the
// slot, unless killed first.
[[noreturn]] void Taker(const Options& o, int report_fd, int command_fd) {
  std::unique_ptr<DedupSystem> sys;
  TakeoverReport report;
  Status s = OpenTakenOverSlot(o, /*force=*/false, Env::Default(), &sys, &report);
  Send(report_fd, s.ok() ? "opened" : "open-failed " + s.ToString());
  char c;
  while (read(command_fd, &c, 1) == 1) {
  }
  _exit(0);
}

// The config file of a gateway of slot kGateway on |rados| with local
// directory |dir| (written to |path|) and its Options; what dedupv1_check
// reads too.
Options WriteSlotConfig(const std::string& path, const std::string& dir, const RadosOptions& rados) {
  const std::string text = "data-dir = " + dir + "\n" + "storage.backend = rados\n" +
                           "storage.rados.conf = " + rados.conf_file + "\n" + "storage.rados.store = " + rados.store +
                           "\n" + "storage.rados.gateway = " + kGateway + "\n" +
                           "storage.rados.lock-lease = 3s\n"
                           "storage.rados.index-shards = 8\n"
                           "chunk-index.size = 4M\n"
                           "bloom.expected-chunks = 64K\n"
                           "log.size = 16M\n"
                           "write-buffer.size = 8M\n"
                           "container.size = 256K\n"
                           "container.commit-timeout = 200ms\n"
                           "monitor.enabled = false\n"
                           "volume = vol 16M\n";
  std::ofstream(path) << text;
  Config config;
  Options o;
  Status s = Config::Load(Env::Default(), path, &config);
  if (s.ok()) s = Options::FromConfig(config, &o);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return o;
}

class GatewayTakeoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = test::TestRadosOptions(&rados_, 4 << 20);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void TearDown() override {
    KillA();
    KillTaker();
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

  // Forks |child|(write end of its report pipe, read end of its command
  // pipe), which must not return; the parent keeps the other ends. -1 if a
  // pipe or the fork failed.
  static pid_t ForkGateway(const std::function<void(int, int)>& child, int* report_fd, int* command_fd) {
    int report[2], command[2];
    if (pipe(report) != 0) return -1;
    if (pipe(command) != 0) {
      close(report[0]);
      close(report[1]);
      return -1;
    }
    const pid_t pid = fork();
    if (pid == 0) {
      close(report[0]);
      close(command[1]);
      child(report[1], command[0]);
      _exit(99);
    }
    close(report[1]);
    close(command[0]);
    *report_fd = report[0];
    *command_fd = command[1];
    return pid;
  }

  // Forks gateway A on |dir| with lease |lease_s| and waits (bounded) for it
  // to report that its data is synced.
  void StartA(const std::string& dir, uint32_t lease_s) { StartA(SlotOptions(dir, rados_, lease_s)); }
  void StartA(const Options& o) {
    a_pid_ = ForkGateway([&o](int report, int command) { GatewayA(o, report, command); }, &report_fd_, &command_fd_);
    ASSERT_GE(a_pid_, 0);
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

  // Kills child |*pid| (if any) with SIGKILL, reaps it and closes its pipes.
  static void KillChild(pid_t* pid, int* report_fd, int* command_fd) {
    if (*pid > 0) {
      kill(*pid, SIGKILL);
      int status = 0;
      waitpid(*pid, &status, 0);
      *pid = -1;
    }
    for (int* fd : {report_fd, command_fd}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
  }
  void KillA() { KillChild(&a_pid_, &report_fd_, &command_fd_); }
  void KillTaker() { KillChild(&t_pid_, &t_report_fd_, &t_command_fd_); }

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
  pid_t t_pid_ = -1;  // a taker in a child process
  int t_report_fd_ = -1, t_command_fd_ = -1;
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

// kill -9 during a takeover: gateway A syncs and dies; taker T fences A,
// takes the lock, records its incarnation and is killed -9 in the middle of
// its open (the slot's recovery). A second takeover waits for T's lease,
// fences T's recorded address and recovers: every write A synced reads
// back, and dedupv1_check finds the slot clean.
TEST_F(GatewayTakeoverTest, TakerKilledDuringTakeoverSecondTakeoverRecoversEverySyncedWrite) {
  test::TempDir dir;
  const Options a = WriteSlotConfig(dir.Sub("a.conf"), dir.Sub("data-a"), rados_);
  const Options t = WriteSlotConfig(dir.Sub("t.conf"), dir.Sub("data-t"), rados_);
  const std::string c_config = dir.Sub("c.conf");
  const Options c = WriteSlotConfig(c_config, dir.Sub("data-c"), rados_);
  ASSERT_FALSE(HasFailure());
  // A: the same seed-1 data as the other tests, synced; then dead.
  ASSERT_NO_FATAL_FAILURE(StartA(a));
  KillA();
  // T, forked before this process opens a RADOS connection of its own.
  t_pid_ = ForkGateway([&t](int report, int command) { Taker(t, report, command); }, &t_report_fd_, &t_command_fd_);
  ASSERT_GE(t_pid_, 0);
  // T's incarnation in the registry: T has fenced A and holds the lock; its
  // open (recovery) runs now. Killed at once, bounded by T's lease wait.
  std::shared_ptr<RadosCluster> cluster;
  ASSERT_TRUE(RadosCluster::Shared(rados_, &cluster).ok());
  GatewayRegistry registry(cluster);
  GatewayRecord seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (seen.incarnation < 2 && std::chrono::steady_clock::now() < deadline) {
    Status s = registry.Lookup(kGateway, &seen);
    ASSERT_TRUE(s.ok()) << s.ToString();
    if (seen.incarnation < 2) usleep(2000);
  }
  ASSERT_EQ(2u, seen.incarnation) << "T never recorded its incarnation";
  ASSERT_EQ(0, kill(t_pid_, SIGKILL));
  const pid_t t_pid = t_pid_;
  int status = 0;
  ASSERT_EQ(t_pid, waitpid(t_pid, &status, 0));
  t_pid_ = -1;
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(static_cast<uint32_t>(t_pid), seen.pid);
  EXPECT_EQ(1u, seen.takeovers);
  // What T said before it died: nothing, unless its open had finished (then
  // the kill missed the window this test is about).
  struct pollfd p = {t_report_fd_, POLLIN, 0};
  std::string said;
  char ch;
  while (poll(&p, 1, 0) > 0 && read(t_report_fd_, &ch, 1) == 1) said += ch;
  EXPECT_EQ("", said) << "T finished (or failed) its open before the kill";

  // The second takeover.
  TakeoverReport report2;
  Status s = OpenTakenOverSlot(c, /*force=*/false, Env::Default(), &taker_, &report2);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << report2.ToString();
  EXPECT_EQ(seen, report2.previous);
  ASSERT_EQ(1u, report2.fenced.size()) << report2.ToString();
  EXPECT_EQ(BareAddress(seen.address), BareAddress(report2.fenced[0]));
  EXPECT_TRUE(taker_->recovery().dirty_start);
  EXPECT_EQ(3u, report2.taken.incarnation);
  EXPECT_EQ(2u, report2.taken.takeovers);
  EXPECT_TRUE(ReadsBack(taker_.get(), 1));
  ASSERT_TRUE(taker_->Close().ok());
  taker_.reset();
  std::string out;
  const int code = test::RunProgram({test::BuiltProgram("dedupv1_check"), "--config", c_config}, dir.Sub("check.out"),
                                    std::chrono::seconds(60), &out);
  EXPECT_EQ(0, code) << out;
  EXPECT_NE(out.find("result: clean"), std::string::npos) << out;
  std::printf("%s", report2.ToString().c_str());
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

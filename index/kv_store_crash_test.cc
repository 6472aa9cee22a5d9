// Kill -9 test of the KvStore backends alone: a child process writes batches
// (transactions) of increasing versions over a fixed key set while other
// threads read, as the block index does (write-back thread, flushes and
// request threads share one store); after each committed batch it reports
// the version through a pipe (and announces each batch's keys before it
// writes it). The parent kills it at a random moment, reopens the store and
// checks that every key holds at least the last committed version, that no
// value is torn, and that the batch in flight at the kill is all-or-nothing.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "core/base/env.h"
#include "core/base/testutil.h"
#include "index/kv_store.h"

namespace dedupv1 {
namespace {

constexpr int kKeys = 4000;

std::string Key(int k) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "k%08d", k);
  return buf;
}

// Value of |key| at |version|: the version first, then filler so leaves split.
std::string Value(int k, uint64_t version) {
  std::string v = std::to_string(version) + ":";
  v.append(180 + (k * 7 + version) % 200, static_cast<char>('a' + k % 26));
  return v;
}

uint64_t VersionOf(const std::string& value) { return std::stoull(value.substr(0, value.find(':'))); }

// One pipe record: kind ('I' batch announced, 'C' batch committed), version,
// key count, keys.
void Report(int fd, char kind, uint64_t version, const std::vector<int32_t>& keys) {
  std::string rec(1, kind);
  const uint32_t count = static_cast<uint32_t>(keys.size());
  rec.append(reinterpret_cast<const char*>(&version), 8);
  rec.append(reinterpret_cast<const char*>(&count), 4);
  rec.append(reinterpret_cast<const char*>(keys.data()), keys.size() * sizeof(int32_t));
  if (write(fd, rec.data(), rec.size()) != static_cast<ssize_t>(rec.size())) _exit(14);
}

[[noreturn]] void ChildMain(KvBackend backend, const std::string& path, int fd, uint64_t first_version,
                            uint64_t seed) {
  std::unique_ptr<KvStore> store;
  if (!OpenKvStore(backend, path, Env::Default(), &store).ok()) _exit(10);
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; t++) {
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(seed * 17 + t);
      std::string v;
      while (!stop.load()) {
        Status s = store->Get(Key(static_cast<int>(rng() % kKeys)), &v);
        if (!s.ok() && !s.IsNotFound()) _exit(11);
      }
    });
  }
  std::mt19937_64 rng(seed);
  for (uint64_t version = first_version;; version++) {
    // A batch: a random key range (neighbouring keys share leaves), like a
    // write-back batch of consecutive blocks, plus a few scattered keys.
    std::vector<KvStore::WriteOp> ops;
    const int begin = static_cast<int>(rng() % kKeys);
    const int n = 1 + static_cast<int>(rng() % 400);
    for (int k = begin; k < std::min(kKeys, begin + n); k++) ops.push_back({Key(k), Value(k, version), false});
    for (int i = 0; i < 20; i++) {
      int k = static_cast<int>(rng() % kKeys);
      if (k >= begin && k < begin + n) continue;
      ops.push_back({Key(k), Value(k, version), false});
    }
    std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
    ops.erase(std::unique(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.key == b.key; }),
              ops.end());
    // Announced before the write, confirmed after it.
    std::vector<int32_t> keys;
    for (const auto& op : ops) keys.push_back(std::stoi(op.key.substr(1)));
    Report(fd, 'I', version, keys);
    if (!store->Write(ops).ok()) _exit(12);
    if (rng() % 8 == 0 && !store->Sync().ok()) _exit(13);
    Report(fd, 'C', version, {});
  }
}

// Number of complete 'C' records at the start of |reports|.
uint64_t CountCommits(const std::string& reports) {
  uint64_t commits = 0;
  for (size_t pos = 0; pos + 13 <= reports.size();) {
    uint32_t count;
    std::memcpy(&count, reports.data() + pos + 9, 4);
    if (pos + 13 + count * 4ull > reports.size()) break;
    commits += reports[pos] == 'C';
    pos += 13 + count * 4ull;
  }
  return commits;
}

void KillNineKeepsCommittedBatches(KvBackend backend) {
  const uint64_t cycles = test::EnvKnob("DEDUPV1_KV_CRASH_CYCLES", 30);
  test::TempDir dir;
  const std::string path = dir.path() + "/store";
  std::vector<uint64_t> committed(kKeys, 0);  // last reported version per key
  std::mt19937_64 rng(77);
  uint64_t batches = 0;
  for (uint64_t cycle = 0; cycle < cycles; cycle++) {
    int report_fd = -1;
    const pid_t pid = test::ForkWithPipe(
        [&](int fd) { ChildMain(backend, path, fd, (cycle + 1) * 1000000, cycle); }, &report_fd);
    ASSERT_GE(pid, 0);
    // The kill lands at a random moment after the child's first committed
    // batch, so every cycle has something to check however slow the disk's
    // syncs are (Tokyo Cabinet syncs each transaction; under a loaded CI run
    // one took longer than the whole random window).
    std::string reports;
    char buf[1 << 16];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (CountCommits(reports) == 0 && std::chrono::steady_clock::now() < deadline) {
      const ssize_t r = read(report_fd, buf, sizeof(buf));
      if (r <= 0) break;  // the child died; the status check below says how
      reports.append(buf, static_cast<size_t>(r));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 400));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early with code " << WEXITSTATUS(status);
    ASSERT_GT(CountCommits(reports), 0u) << "cycle " << cycle << ": the child committed no batch in 60 s";
    // Batches the child reported (a torn last report is ignored).
    for (ssize_t r; (r = read(report_fd, buf, sizeof(buf))) > 0;) reports.append(buf, static_cast<size_t>(r));
    close(report_fd);
    size_t pos = 0;
    uint64_t in_flight = 0;  // announced, not confirmed
    std::vector<int32_t> in_flight_keys;
    while (pos + 13 <= reports.size()) {
      const char kind = reports[pos];
      uint64_t version;
      uint32_t count;
      std::memcpy(&version, reports.data() + pos + 1, 8);
      std::memcpy(&count, reports.data() + pos + 9, 4);
      if (pos + 13 + count * 4ull > reports.size()) break;  // torn last record
      std::vector<int32_t> keys(count);
      std::memcpy(keys.data(), reports.data() + pos + 13, count * 4ull);
      pos += 13 + count * 4ull;
      if (kind == 'I') {
        in_flight = version;
        in_flight_keys = std::move(keys);
      } else {
        ASSERT_EQ(version, in_flight);
        for (int32_t k : in_flight_keys) committed[k] = std::max(committed[k], version);
        in_flight = 0;
        batches++;
      }
    }

    std::unique_ptr<KvStore> store;
    Status s = OpenKvStore(backend, path, Env::Default(), &store);
    ASSERT_TRUE(s.ok()) << "cycle " << cycle << ": " << s.ToString();
    std::vector<uint64_t> have(kKeys, 0);
    for (int k = 0; k < kKeys; k++) {
      std::string v;
      Status g = store->Get(Key(k), &v);
      if (g.IsNotFound()) {
        ASSERT_EQ(committed[k], 0u) << "cycle " << cycle << ": key " << k << " lost (committed version "
                                    << committed[k] << ")";
        continue;
      }
      ASSERT_TRUE(g.ok()) << g.ToString();
      ASSERT_EQ(v, Value(k, VersionOf(v))) << "cycle " << cycle << ": key " << k << " has a torn value";
      have[k] = VersionOf(v);
      ASSERT_GE(have[k], committed[k]) << "cycle " << cycle << ": key " << k << " went back from committed version "
                                       << committed[k] << " to " << have[k];
    }
    if (in_flight != 0) {
      // The batch the kill interrupted is wholly there or not at all.
      size_t visible = 0;
      for (int32_t k : in_flight_keys) visible += have[k] == in_flight;
      EXPECT_TRUE(visible == 0 || visible == in_flight_keys.size())
          << "cycle " << cycle << ": " << visible << " of the " << in_flight_keys.size()
          << " keys of the interrupted batch " << in_flight << " are visible";
    }
    // What survived is the floor for the next cycle.
    for (int k = 0; k < kKeys; k++) committed[k] = have[k];
  }
  std::printf("kv crash cycles: %llu, committed batches checked: %llu\n", (unsigned long long)cycles,
              (unsigned long long)batches);
  EXPECT_GE(batches, cycles);  // at least one per cycle, by construction above
}

TEST(KvStoreCrashTest, TokyoCabinetKeepsCommittedBatches) { KillNineKeepsCommittedBatches(KvBackend::kTokyoCabinet); }

TEST(KvStoreCrashTest, LevelDbKeepsCommittedBatches) { KillNineKeepsCommittedBatches(KvBackend::kLevelDb); }

// A kill while a store is being created (the very first open of a data
// directory) must not leave a file the next open refuses: nothing was
// written yet, so the next open starts afresh. Tokyo Cabinet writes the
// B+tree's meta data only after its first leaf; a kill between the two left
// "invalid meta data" before stores were created under a temporary name.
void KillDuringCreationLeavesAUsableStore(KvBackend backend) {
  const uint64_t cycles = test::EnvKnob("DEDUPV1_KV_CREATE_CYCLES", 60);
  std::mt19937_64 rng(5);
  uint64_t created_before_kill = 0;
  for (uint64_t cycle = 0; cycle < cycles; cycle++) {
    test::TempDir dir;
    const std::string path = dir.path() + "/store";
    int report_fd = -1;
    const pid_t pid = test::ForkWithPipe(
        [&](int fd) {
          std::unique_ptr<KvStore> store;
          if (!OpenKvStore(backend, path, Env::Default(), &store).ok()) _exit(10);
          if (write(fd, "o", 1) != 1) _exit(14);
          for (;;) pause();
        },
        &report_fd);
    ASSERT_GE(pid, 0);
    // Creation takes a few milliseconds (it syncs); kill somewhere in it.
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 8000));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    char c;
    if (read(report_fd, &c, 1) == 1) created_before_kill++;
    close(report_fd);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early with code " << WEXITSTATUS(status);
    std::unique_ptr<KvStore> store;
    Status s = OpenKvStore(backend, path, Env::Default(), &store);
    ASSERT_TRUE(s.ok()) << "cycle " << cycle << ": " << s.ToString();
    ASSERT_TRUE(store->Write({{Key(1), Value(1, 1), false}}).ok());
    std::string v;
    ASSERT_TRUE(store->Get(Key(1), &v).ok());
  }
  std::printf("creation kills: %llu, store open before the kill: %llu\n", (unsigned long long)cycles,
              (unsigned long long)created_before_kill);
  // Some kills must have landed before the store was open, or the test proved nothing.
  EXPECT_LT(created_before_kill, cycles);
}

TEST(KvStoreCrashTest, TokyoCabinetKillDuringCreation) { KillDuringCreationLeavesAUsableStore(KvBackend::kTokyoCabinet); }

TEST(KvStoreCrashTest, LevelDbKillDuringCreation) { KillDuringCreationLeavesAUsableStore(KvBackend::kLevelDb); }

}  // namespace
}  // namespace dedupv1

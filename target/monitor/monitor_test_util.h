// Helpers shared by the monitor tests: a small DedupSystem in a temp dir with
// a MonitorServer on an ephemeral port, JSON requests over real HTTP, and a
// deterministic, well-deduplicating write pattern.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/engine/dedup_system.h"
#include "core/base/testutil.h"
#include "target/monitor/monitor_client.h"
#include "target/monitor/monitor_server.h"
#include "target/monitor/status_collector.h"

namespace dedupv1 {
namespace test {

// Options for a small system in |dir| with volumes vol1 (64 MiB) and vol2 (32 MiB).
Options SmallMonitorOptions(const std::string& dir);

// A running system plus its monitor (127.0.0.1, port 0).
class MonitorHarness {
 public:
  // Opens the system and starts the monitor; check ok() (gtest ASSERTs in a
  // constructor would not stop the test).
  // |adjust| (if set) changes the options before the system opens.
  explicit MonitorHarness(const std::string& token = "",
                          std::chrono::milliseconds sample_interval = std::chrono::milliseconds(200),
                          const std::function<void(Options*)>& adjust = nullptr);
  ~MonitorHarness();  // stops the monitor, closes the system

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  DedupSystem* system() { return system_.get(); }
  MonitorServer* server() { return server_.get(); }
  uint16_t port() const { return server_->port(); }
  Volume* volume(const std::string& name);

 private:
  TempDir dir_;
  Status status_;
  std::unique_ptr<DedupSystem> system_;
  std::unique_ptr<MonitorServer> server_;
};

// GETs (or POSTs) |path| and parses the body as JSON; on any failure the
// returned document is {"test_error": "..."} and |*status| (if given) is the
// HTTP status (0 if no answer).
Json FetchJson(MonitorClient* client, const std::string& method, const std::string& path,
               long* status = nullptr, const std::map<std::string, std::string>& params = {});

// The contents of the |i|-th MiB of the write pattern: |distinct| different
// random 1 MiB blocks repeated, so it deduplicates by about |total/distinct|.
const std::vector<uint8_t>& PatternBlock(uint64_t i, int distinct = 4);

// Writes the pattern over [0, bytes) of |v| in |io_size| requests, in a loop,
// until stop is set (or once if |once|), sleeping |pause_ms| between requests.
// Counts the bytes written.
class PatternWriter {
 public:
  PatternWriter(Volume* v, uint64_t bytes, size_t io_size, int pause_ms, bool once);
  ~PatternWriter();  // Stop()
  void Stop();
  // Waits until a single pass finished (once mode); false on timeout.
  bool WaitDone(std::chrono::seconds timeout);
  const Status& status() const { return status_; }
  uint64_t bytes_written() const { return written_.load(); }

 private:
  void Run();
  Volume* const volume_;
  const uint64_t bytes_;
  const size_t io_size_;
  const int pause_ms_;
  const bool once_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  std::atomic<uint64_t> written_{0};
  Status status_;
  std::thread thread_;
};

// Where tests leave artifacts (screenshots): $TEST_OUTPUT_DIR, else
// BUILD/Testing/monitor. Created if missing.
std::string TestOutputDir();

// Runs |command| through /bin/sh; returns its exit status (-1 if it could not
// run) and its stdout in |*output| if given.
int RunCommand(const std::string& command, std::string* output = nullptr);

// Polls |done| every 10 ms until it holds (true) or 60 s pass (false): a
// hang guard, not a timing.
bool WaitFor(const std::function<bool()>& done);

// Whether |program| is found on $PATH.
bool HaveProgram(const std::string& program);

}  // namespace test
}  // namespace dedupv1

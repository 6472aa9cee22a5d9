#include "target/monitor/monitor_test_util.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <thread>

#ifndef DEDUPV1_MONITOR_TEST_OUTPUT_DIR
#define DEDUPV1_MONITOR_TEST_OUTPUT_DIR "Testing/monitor"
#endif

namespace dedupv1 {
namespace test {

Options SmallMonitorOptions(const std::string& dir) {
  Options o;
  o.data_dir = dir;
  o.chunk_index.table.size_bytes = 16 << 20;
  o.filters.bloom_expected_chunks = 1 << 18;
  o.write_buffer_size = 16 << 20;
  o.write_buffer_flush_delay_ms = 50;
  o.chunk_store.commit_timeout_ms = 500;
  o.volumes = {{"vol1", 64 << 20}, {"vol2", 32 << 20}};
  Status s = o.Finish();
  if (!s.ok()) std::fprintf(stderr, "SmallMonitorOptions: %s\n", s.ToString().c_str());
  return o;
}

MonitorHarness::MonitorHarness(const std::string& token, std::chrono::milliseconds sample_interval,
                               const std::function<void(Options*)>& adjust) {
  Options options = SmallMonitorOptions(dir_.path());
  if (adjust) adjust(&options);
  status_ = DedupSystem::Open(options, Env::Default(), &system_);
  if (!status_.ok()) return;
  MonitorOptions mo;
  mo.port = 0;
  mo.token = token;
  mo.sample_interval = sample_interval;
  status_ = MonitorServer::Start(system_.get(), mo, &server_);
}

MonitorHarness::~MonitorHarness() {
  if (server_) server_->Stop();
  if (system_) system_->Close();
}

Volume* MonitorHarness::volume(const std::string& name) {
  Volume* v = nullptr;
  return system_->GetVolume(name, &v).ok() ? v : nullptr;
}

Json FetchJson(MonitorClient* client, const std::string& method, const std::string& path,
               long* status, const std::map<std::string, std::string>& params) {
  HttpResult r;
  Status s = client->Request(method, path, params, &r);
  if (status != nullptr) *status = s.ok() ? r.status : 0;
  if (!s.ok()) return Json{{"test_error", s.ToString()}};
  Json doc = Json::parse(r.body, nullptr, false);
  if (doc.is_discarded()) return Json{{"test_error", "not JSON: " + r.body.substr(0, 200)}};
  return doc;
}

const std::vector<uint8_t>& PatternBlock(uint64_t i, int distinct) {
  // Built once, read-only afterwards (function-local statics initialize thread-safely).
  static const std::vector<std::vector<uint8_t>>* blocks = [] {
    auto* v = new std::vector<std::vector<uint8_t>>();
    for (int k = 0; k < 16; k++) v->push_back(RandomBytes(1 << 20, 1000 + k));
    return v;
  }();
  return (*blocks)[i % static_cast<uint64_t>(distinct < 1 ? 1 : (distinct > 16 ? 16 : distinct))];
}

PatternWriter::PatternWriter(Volume* v, uint64_t bytes, size_t io_size, int pause_ms, bool once)
    : volume_(v), bytes_(bytes), io_size_(io_size), pause_ms_(pause_ms), once_(once) {
  thread_ = std::thread([this] { Run(); });
}

PatternWriter::~PatternWriter() { Stop(); }

void PatternWriter::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

bool PatternWriter::WaitDone(std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done_.load()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (thread_.joinable()) thread_.join();
  return true;
}

void PatternWriter::Run() {
  do {
    for (uint64_t off = 0; off < bytes_ && !stop_.load(); off += io_size_) {
      const uint64_t mib = off >> 20;
      const size_t within = static_cast<size_t>(off & ((1 << 20) - 1));
      const size_t n = static_cast<size_t>(std::min<uint64_t>(
          {io_size_, bytes_ - off, static_cast<uint64_t>((1 << 20) - within)}));
      Status s = volume_->Write(off, n, PatternBlock(mib).data() + within, false);
      if (!s.ok()) {
        status_ = s;
        done_ = true;
        return;
      }
      written_ += n;
      if (pause_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms_));
    }
  } while (!once_ && !stop_.load());
  done_ = true;
}

std::string TestOutputDir() {
  const char* env = std::getenv("TEST_OUTPUT_DIR");
  std::string dir = env != nullptr && *env != '\0' ? env : DEDUPV1_MONITOR_TEST_OUTPUT_DIR;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return dir;
}

int RunCommand(const std::string& command, std::string* output) {
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return -1;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  if (output != nullptr) *output = std::move(out);
  if (rc == -1) return -1;
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

bool HaveProgram(const std::string& program) {
  return RunCommand("command -v " + program + " >/dev/null 2>&1") == 0;
}

bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace test
}  // namespace dedupv1

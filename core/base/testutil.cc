#include <unistd.h>
#include "core/base/testutil.h"

#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <stdexcept>

#include "core/base/coding.h"

namespace dedupv1 {
namespace test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/dedupv1-test-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + templ);
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  std::mt19937_64 rng(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rng();
    std::memcpy(out.data() + i, &v, 8);
  }
  for (; i < n; i++) out[i] = static_cast<uint8_t>(rng());
  return out;
}

std::vector<Fingerprint> RandomFingerprints(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Fingerprint> v(n);
  for (Fingerprint& fp : v) {
    fp.size = 20;
    for (size_t b = 0; b < fp.size; b++) fp.bytes[b] = static_cast<uint8_t>(rng());
  }
  return v;
}

Fingerprint SeedFingerprint(uint64_t seed) {
  uint8_t data[8];
  EncodeFixed64(data, seed);
  Fingerprint fp;
  ComputeFingerprint(FingerprintType::kSha1, data, sizeof(data), &fp);
  return fp;
}

uint64_t EnvKnob(const char* name, uint64_t def) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return def;
  return std::strtoull(v, nullptr, 10);
}

}  // namespace test
}  // namespace dedupv1

namespace dedupv1 {
namespace test {

pid_t ForkWithPipe(const std::function<void(int write_fd)>& child, int* read_fd) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    child(fds[1]);
    _exit(99);
  }
  close(fds[1]);
  *read_fd = fds[0];
  return pid;
}

std::string FindSourceFile(const std::string& relative) {
  namespace fs = std::filesystem;
  std::vector<fs::path> starts;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) starts.push_back(exe.parent_path());
  fs::path cwd = fs::current_path(ec);
  if (!ec) starts.push_back(cwd);
  for (fs::path dir : starts) {
    for (;;) {
      fs::path candidate = dir / relative;
      if (fs::exists(candidate, ec)) return candidate.string();
      if (dir == dir.parent_path() || dir.empty()) break;
      dir = dir.parent_path();
    }
  }
  return "";
}

}  // namespace test
}  // namespace dedupv1

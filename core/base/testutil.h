// Helpers for tests: a fresh temporary directory per test, deterministic data.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/base/fingerprint.h"

namespace dedupv1 {
namespace test {

// Creates a new empty directory under $TMPDIR (or /tmp) and removes it with
// its contents when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// |n| pseudo-random bytes from |seed|; the same seed gives the same bytes.
std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed);
// |n| pseudo-random 20-byte fingerprints from |seed| (the same seed, the same
// fingerprints): fresh chunk identities for index tests.
std::vector<Fingerprint> RandomFingerprints(size_t n, uint64_t seed);
// The SHA-1 fingerprint of |seed|'s 8 bytes (little endian): one fixed
// fingerprint per number, for tests that name chunks by number.
Fingerprint SeedFingerprint(uint64_t seed);

// Reads an integer knob from the environment (e.g. DEDUPV1_TEST_OPS), or |def|.
uint64_t EnvKnob(const char* name, uint64_t def);

// The path of |relative| (e.g. "docs/monitoring.md") in the source tree,
// found by walking up from the test binary's directory and from the working
// directory (a build directory is usually inside the tree); "" if neither
// leads to it.
std::string FindSourceFile(const std::string& relative);

// Forks a child that runs |child| with the write end of a fresh pipe (it
// should end the process itself, with _exit or by being killed; if it
// returns, the child exits with 99). The parent gets the child's pid and the
// read end in *read_fd; -1 if the pipe or the fork failed.
pid_t ForkWithPipe(const std::function<void(int write_fd)>& child, int* read_fd);

}  // namespace test
}  // namespace dedupv1

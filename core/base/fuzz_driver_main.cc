// The main() of every fuzz harness (a *_fuzz.cc file): runs the harness over
// inputs that are known, and over bounded, reproducible mutations of them, so
// that CI exercises every decoder of durable bytes with damaged input (ctest
// label "fuzz"); scripts/fuzz runs long campaigns of the same harnesses in a
// build with ASan and UBSan (cmake -DDEDUPV1_SANITIZE=ON). A harness's entry
// point has libFuzzer's name and signature, so it also links with libFuzzer
// where the compiler takes the project's headers (Debian 12's clang 14 does
// not: librados' headers are ambiguous to it in C++20).
//
//   NAME_fuzz [--mutations N] [--seed S] [--corpus DIR] [--write-seeds DIR] [FILE|DIR]...
//
// Inputs: the harness's own seeds (DedupV1FuzzSeeds: valid encodings made
// with the real encoders, so the mutations reach past the first checksum),
// then every FILE and every file in DIR (a corpus: inputs that once failed;
// a --corpus DIR that does not exist holds none).
// Each input runs as it is, then mutated, N mutations in all shared evenly
// among the inputs (each mutation one to four bit flips,
// bytes set to edge values, truncations, insertions, pieces copied from the
// next input): the mutator is a fixed pseudo-random sequence from S, so a
// failure repeats. A failed check (fuzz_check.h) or an exception out of a
// harness names the input's origin, keeps the input's bytes in a file
// (./fuzz-failure-NAME-HASH, or in $DEDUPV1_FUZZ_FAILURES) to go into the
// harness's corpus once fixed, removes the harness's temporary folders and
// aborts. --write-seeds DIR writes the seeds as files.
//
// The driver's address space is capped at 1 GiB (not under ASan, which
// reserves terabytes of shadow): a decoder that believes a damaged size and
// allocates gigabytes fails here with bad_alloc instead of passing slowly.
#include <dirent.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/base/env.h"
#include "core/base/fuzz_check.h"
#include "core/base/split_mix64.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace dedupv1 {
namespace {

// The driver's mutation choices: a SplitMix64 sequence.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ += kSplitMix64Gamma;
    return SplitMix64(state_);
  }

 private:
  uint64_t state_;
};

struct Input {
  std::string origin;
  std::string bytes;
};

// What the harness is running now, for the failure report.
struct Current {
  std::string program;  // the harness's name
  std::string origin = "an input";
  const std::string* bytes = nullptr;
};
Current& Now() {
  static Current* now = new Current;  // leaked: read while aborting
  return *now;
}

// The folders FuzzTempDir made; leaked, since the exit handler reads it.
std::vector<std::string>* const g_temp_dirs = new std::vector<std::string>;

// Removes the temporary folders and what the harness left in them.
void RemoveTempDirs() {
  for (const std::string& dir : *g_temp_dirs) {
    if (DIR* d = ::opendir(dir.c_str())) {
      while (struct dirent* e = ::readdir(d)) {
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
          ::unlink((dir + "/" + e->d_name).c_str());
        }
      }
      ::closedir(d);
    }
    ::rmdir(dir.c_str());
  }
}

// Keeps the input that failed; prints where.
void SaveFailedInput() {
  const Current& now = Now();
  if (now.bytes == nullptr) return;
  const char* dir = std::getenv("DEDUPV1_FUZZ_FAILURES");
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(std::hash<std::string>()(*now.bytes)));
  const std::string path = std::string(dir != nullptr ? dir : ".") + "/fuzz-failure-" + now.program + "-" + hash;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(now.bytes->data(), static_cast<std::streamsize>(now.bytes->size()));
  std::fprintf(stderr, "fuzz driver: the input is kept in %s%s\n", path.c_str(), out ? "" : " (could not be written)");
}

[[noreturn]] void Fail() {
  SaveFailedInput();
  RemoveTempDirs();
  std::abort();
}

// Adds |path| (a file, or every regular file of a folder) to |inputs|.
bool AddPath(const std::string& path, std::vector<Input>* inputs) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "fuzz driver: %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    Input in{path, {}};
    Status s = ReadFileToString(Env::Default(), path, &in.bytes);
    if (!s.ok()) {
      std::fprintf(stderr, "fuzz driver: %s\n", s.ToString().c_str());
      return false;
    }
    inputs->push_back(std::move(in));
    return true;
  }
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return false;
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (!AddPath(path + "/" + name, inputs)) return false;
  }
  return true;
}

// One mutation of |bytes|, chosen by |rng|. |other| is another input, spliced
// in now and then (a field of one valid record in another's place).
void Mutate(Rng* rng, const std::string& other, std::string* bytes) {
  static const uint8_t kEdges[] = {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff};
  const uint64_t kind = rng->Next() % 6;
  const size_t n = bytes->size();
  if (n == 0 || kind == 4) {
    bytes->insert(n == 0 ? 0 : rng->Next() % (n + 1), 1 + rng->Next() % 8, static_cast<char>(rng->Next()));
    return;
  }
  const size_t at = rng->Next() % n;
  switch (kind) {
    case 0:  // one bit
      (*bytes)[at] = static_cast<char>((*bytes)[at] ^ (1u << (rng->Next() % 8)));
      break;
    case 1:  // a byte to an edge value
      (*bytes)[at] = static_cast<char>(kEdges[rng->Next() % sizeof(kEdges)]);
      break;
    case 2:  // four bytes to an edge value (a length or count field)
      for (size_t i = at; i < std::min(n, at + 4); i++) (*bytes)[i] = static_cast<char>(kEdges[rng->Next() % 6]);
      break;
    case 3:  // truncated
      bytes->resize(at);
      break;
    default: {  // a piece of |other| (or of itself) copied over
      const std::string& src = other.empty() ? *bytes : other;
      const size_t from = rng->Next() % src.size();
      const size_t len = std::min({src.size() - from, n - at, static_cast<size_t>(1 + rng->Next() % 32)});
      std::string piece = src.substr(from, len);
      bytes->replace(at, len, piece);
      break;
    }
  }
}

void Run(const std::string& origin, const std::string& bytes) {
  Now().origin = origin;
  Now().bytes = &bytes;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

int Usage() {
  std::fprintf(stderr, "usage: NAME_fuzz [--mutations N] [--seed S] [--corpus DIR] [--write-seeds DIR] [FILE|DIR]...\n");
  return 2;
}

// Caps the address space (see the top of the file).
void CapMemory() {
#if !defined(__SANITIZE_ADDRESS__)
  constexpr rlim_t kCap = rlim_t{1} << 30;
  struct rlimit limit;
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > kCap)) {
    limit.rlim_cur = kCap;
    ::setrlimit(RLIMIT_AS, &limit);
  }
#endif
}

int Main(int argc, char** argv) {
  CapMemory();
  const char* slash = std::strrchr(argv[0], '/');
  Now().program = slash != nullptr ? slash + 1 : argv[0];
  // An exception out of a harness (bad_alloc above all) is a failure too.
  std::set_terminate([] {
    std::fprintf(stderr, "fuzz driver: the harness threw (a std::bad_alloc is a decoder allocating what a damaged "
                         "size says) on input: %s\n", Now().origin.c_str());
    Fail();
  });
  uint64_t mutations = 0;
  uint64_t seed = 1;
  std::string seeds_dir;
  std::vector<Input> inputs;
  std::vector<std::string> seeds;
  test::DedupV1FuzzSeeds(&seeds);
  for (size_t i = 0; i < seeds.size(); i++) inputs.push_back({"seed " + std::to_string(i), seeds[i]});
  for (int i = 1; i < argc; i++) {
    const std::string arg = argv[i];
    if ((arg == "--mutations" || arg == "--seed" || arg == "--write-seeds" || arg == "--corpus") && i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--mutations") mutations = std::strtoull(value.c_str(), nullptr, 10);
      if (arg == "--seed") seed = std::strtoull(value.c_str(), nullptr, 10);
      if (arg == "--write-seeds") seeds_dir = value;
      struct stat st;
      if (arg == "--corpus" && ::stat(value.c_str(), &st) == 0 && !AddPath(value, &inputs)) return 2;
    } else if (arg.rfind("--", 0) == 0) {
      return Usage();
    } else if (!AddPath(arg, &inputs)) {
      return 2;
    }
  }
  if (!seeds_dir.empty()) {
    for (size_t i = 0; i < seeds.size(); i++) {
      const std::string path = seeds_dir + "/seed-" + std::to_string(i);
      Status s = WriteFileAtomically(Env::Default(), path, seeds[i]);
      if (!s.ok()) {
        std::fprintf(stderr, "fuzz driver: %s\n", s.ToString().c_str());
        return 1;
      }
    }
    std::printf("%zu seeds written to %s\n", seeds.size(), seeds_dir.c_str());
    return 0;
  }
  if (inputs.empty()) return Usage();
  Rng rng(seed);
  uint64_t runs = 0;
  const uint64_t per_input = (mutations + inputs.size() - 1) / inputs.size();
  for (size_t i = 0; i < inputs.size(); i++) {
    Run(inputs[i].origin, inputs[i].bytes);
    runs++;
    const std::string& other = inputs[(i + 1) % inputs.size()].bytes;
    for (uint64_t m = 0; m < per_input; m++) {
      std::string bytes = inputs[i].bytes;
      const uint64_t steps = 1 + rng.Next() % 4;
      for (uint64_t s = 0; s < steps; s++) Mutate(&rng, other, &bytes);
      Run(inputs[i].origin + ", mutation " + std::to_string(m) + " of seed " + std::to_string(seed), bytes);
      runs++;
    }
  }
  std::printf("%llu inputs run (%zu given, %llu mutations of each), no check failed\n",
              static_cast<unsigned long long>(runs), inputs.size(), static_cast<unsigned long long>(per_input));
  return 0;
}

}  // namespace

namespace test {

void FuzzCheckFailed(const char* file, int line, const char* cond, const std::string& what) {
  std::fprintf(stderr, "%s:%d: fuzz check failed: %s: %s (input: %s)\n", file, line, cond, what.c_str(),
               Now().origin.c_str());
  Fail();
}

std::string FuzzTempDir(const char* name) {
  static const bool registered = [] {
    std::atexit(RemoveTempDirs);
    return true;
  }();
  (void)registered;
  const char* root = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::string tmpl = std::string(root) + "/dedupv1-" + name + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "fuzz driver: cannot make a folder %s: %s\n", tmpl.c_str(), std::strerror(errno));
    std::abort();
  }
  g_temp_dirs->push_back(tmpl);
  return tmpl;
}

}  // namespace test
}  // namespace dedupv1

int main(int argc, char** argv) { return dedupv1::Main(argc, argv); }

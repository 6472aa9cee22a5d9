#include "bench/engine_runs.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <atomic>
#include <fstream>
#include <thread>

#include "core/base/config.h"
#include "core/base/fingerprint.h"

namespace dedupv1 {
namespace bench {

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

double CpuSeconds() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void Progress(bool json, const char* what, uint64_t done, uint64_t total, double secs) {
  if (json) return;
  double mb = done / 1e6;
  std::fprintf(stderr, "\r  %-14s %6.0f / %.0f MB  %7.1f MB/s", what, mb, total / 1e6, secs > 0 ? mb / secs : 0);
  if (done == total) std::fprintf(stderr, "\n");
}

double WriteGeneration(Volume* vol, const GenerationSource& gen, bool json, const char* label) {
  const size_t kRequest = 1 << 20;
  std::vector<uint8_t> buf(kRequest);
  auto start = Clock::now();
  for (uint64_t off = 0; off < gen.size(); off += kRequest) {
    size_t len = static_cast<size_t>(std::min<uint64_t>(kRequest, gen.size() - off));
    gen.Read(off, len, buf.data());
    Status s = vol->Write(off, len, buf.data(), false);
    if (!s.ok()) {
      std::fprintf(stderr, "\nwrite failed: %s\n", s.ToString().c_str());
      std::exit(1);
    }
    if ((off / kRequest) % 32 == 0) Progress(json, label, off, gen.size(), Seconds(start));
  }
  Status s = vol->Sync();
  if (!s.ok()) {
    std::fprintf(stderr, "\nsync failed: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  double secs = Seconds(start);
  Progress(json, label, gen.size(), gen.size(), secs);
  return gen.size() / 1e6 / secs;
}

double ChunkHashCeilingMBs(const GenerationSource& gen, const ChunkerOptions& chunking, int threads) {
  std::unique_ptr<Chunker> chunker;
  Status s = Chunker::Create(chunking, &chunker);
  if (!s.ok()) {
    std::fprintf(stderr, "chunker: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  const uint64_t kStretch = 8 << 20;
  std::atomic<uint64_t> next{0};
  auto start = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&] {
      std::vector<uint8_t> buf(kStretch);
      std::vector<size_t> ends;
      Fingerprint fp;
      for (;;) {
        uint64_t off = next.fetch_add(kStretch);
        if (off >= gen.size()) return;
        size_t len = static_cast<size_t>(std::min<uint64_t>(kStretch, gen.size() - off));
        for (size_t p = 0; p < len; p += 1 << 20) {
          gen.Read(off + p, std::min<size_t>(1 << 20, len - p), buf.data() + p);
        }
        ends.clear();
        chunker->Split(buf.data(), len, true, &ends);
        size_t b = 0;
        for (size_t e : ends) {
          ComputeFingerprint(FingerprintType::kSha1, buf.data() + b, e - b, &fp);
          b = e;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  return gen.size() / 1e6 / Seconds(start);
}

bool FreshStoreOptions(const StoreArgs& args, const char* name, const std::vector<std::string>& volumes,
                       std::string* dir, bool* temp, uint64_t* vol_size, Options* options) {
  *dir = args.data_dir;
  *temp = dir->empty();
  if (*temp) {
    *dir = (std::filesystem::temp_directory_path() / (std::string(name) + "-" + std::to_string(getpid()))).string();
  }
  std::filesystem::remove_all(*dir);
  Config config;
  config.Set("data-dir", *dir);
  *vol_size = (args.size + 4095) / 4096 * 4096;
  for (const std::string& v : volumes) config.Set("volume", v + " " + std::to_string(*vol_size));
  config.Set("chunk-index.size", std::to_string(std::max<uint64_t>(64 << 20, args.size / 8192 * 64 * 2)));
  for (const auto& [k, v] : args.overrides) config.Set(k, v);
  Status s = Options::FromConfig(config, options);
  if (!s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return s.ok();
}

bool OpenSystem(const Options& options, std::unique_ptr<DedupSystem>* sys) {
  Status s = DedupSystem::OpenStore(options, Env::Default(), sys);
  if (!s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return s.ok();
}

bool DropPageCache() {
  ::sync();
  std::ofstream drop("/proc/sys/vm/drop_caches");
  drop << "3";
  drop.flush();
  if (!drop) std::fprintf(stderr, "warning: could not drop the page cache (needs root)\n");
  return static_cast<bool>(drop);
}

}  // namespace bench
}  // namespace dedupv1

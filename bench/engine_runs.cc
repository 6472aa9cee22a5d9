#include "bench/engine_runs.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/base/config.h"

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

double WriteGeneration(Volume* vol, const Generation& gen, bool json, const char* label) {
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

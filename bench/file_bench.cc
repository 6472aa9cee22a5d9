#include "bench/file_bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "bench/file_generation.h"
#include "bench/json_string.h"
#include "core/base/config.h"

namespace dedupv1 {
namespace bench {
namespace {

struct FileResult {
  const FileGeneration* file = nullptr;
  double mbs = 0, cpu_s = 0;
  uint64_t stored = 0, raw = 0;  // new chunks' bytes after and before compression
  uint64_t chunks = 0;           // chunks the engine cut
};

double Ratio(uint64_t stored, uint64_t written) { return written ? 1.0 - double(stored) / double(written) : 0; }

void PrintJson(const std::vector<FileResult>& results, double ceiling, double peak_rss_mb) {
  uint64_t written = 0, stored = 0;
  std::printf("{\"ceiling_mb_s\": %.1f, \"generations\": [", ceiling);
  for (size_t i = 0; i < results.size(); i++) {
    const FileResult& r = results[i];
    written += r.file->file_bytes();
    stored += r.stored;
    std::printf("%s\n  {\"generation\": %zu, \"input\": %s, \"bytes\": %llu, \"mb_s\": %.1f, \"cpu_seconds\": %.2f, "
                "\"stored_bytes\": %llu, \"raw_new_bytes\": %llu, \"chunks\": %llu, \"dedup_ratio\": %.4f}",
                i ? "," : "", i + 1, JsonString(r.file->path()).c_str(), (unsigned long long)r.file->file_bytes(), r.mbs, r.cpu_s,
                (unsigned long long)r.stored, (unsigned long long)r.raw, (unsigned long long)r.chunks,
                Ratio(r.stored, r.file->file_bytes()));
  }
  std::printf("],\n \"written_bytes\": %llu, \"stored_bytes\": %llu, \"dedup_ratio\": %.4f, \"peak_rss_mb\": %.0f}\n",
              (unsigned long long)written, (unsigned long long)stored, Ratio(stored, written), peak_rss_mb);
}

void PrintText(const std::vector<FileResult>& results, double ceiling, double peak_rss_mb) {
  uint64_t written = 0, stored = 0;
  std::printf("\n%-4s %12s %12s %9s %8s %9s  %s\n", "gen", "written", "stored", "saved", "MB/s", "CPU s", "input");
  for (size_t i = 0; i < results.size(); i++) {
    const FileResult& r = results[i];
    written += r.file->file_bytes();
    stored += r.stored;
    std::printf("%-4zu %12s %12s %8.1f%% %8.0f %9.2f  %s\n", i + 1, HumanBytes(r.file->file_bytes()).c_str(),
                HumanBytes(r.stored).c_str(), 100 * Ratio(r.stored, r.file->file_bytes()), r.mbs, r.cpu_s,
                r.file->path().c_str());
  }
  std::printf("\nall: %s written, %s stored (%.1f%% saved); chunk+hash ceiling %.0f MB/s; peak RSS %.0f MB\n",
              HumanBytes(written).c_str(), HumanBytes(stored).c_str(), 100 * Ratio(stored, written), ceiling,
              peak_rss_mb);
}

}  // namespace

int RunFileBench(const FileBenchArgs& args) {
  if (args.files.empty()) {
    std::fprintf(stderr, "files: no FILE given\n");
    return 2;
  }
  std::vector<std::unique_ptr<FileGeneration>> files;
  std::vector<std::string> volumes;
  StoreArgs store = args.store;
  store.size = 0;
  for (const std::string& path : args.files) {
    std::unique_ptr<FileGeneration> f;
    Status s = FileGeneration::Open(path, &f);
    if (!s.ok()) {
      std::fprintf(stderr, "files: %s\n", s.ToString().c_str());
      return 2;
    }
    store.size = std::max(store.size, (f->size() + (1 << 20) - 1) >> 20 << 20);
    files.push_back(std::move(f));
    volumes.push_back("gen" + std::to_string(files.size()));
  }
  // The chunk index sized for all files (FreshStoreOptions sizes it for two
  // generations of store.size), unless --set says otherwise: a table that
  // grows during the timed writes would be measured too.
  uint64_t total = 0;
  for (const auto& f : files) total += f->size();
  const bool sized = std::any_of(store.overrides.begin(), store.overrides.end(),
                                 [](const auto& kv) { return kv.first == "chunk-index.size"; });
  if (!sized) store.overrides.emplace_back("chunk-index.size", std::to_string(std::max<uint64_t>(64 << 20, total / 8192 * 64)));
  std::string dir;
  bool temp = false;
  uint64_t vol_size = 0;
  Options options;
  if (!FreshStoreOptions(store, "dedupv1-bench-files", volumes, &dir, &temp, &vol_size, &options)) return 1;
  if (!args.json) std::fprintf(stderr, "measuring the chunk+hash ceiling on %s...\n", args.files[0].c_str());
  const double ceiling = ChunkHashCeilingMBs(*files[0], options.chunking, options.dedup_threads);

  std::unique_ptr<DedupSystem> sys;
  if (!OpenSystem(options, &sys)) return 1;
  std::vector<FileResult> results;
  for (size_t i = 0; i < files.size(); i++) {
    Volume* vol = nullptr;
    Status s = sys->GetVolume(volumes[i], &vol);
    if (!s.ok()) {
      std::fprintf(stderr, "files: %s\n", s.ToString().c_str());
      return 1;
    }
    FileResult r;
    r.file = files[i].get();
    const ChunkStoreStats before = sys->chunk_store()->stats();
    const uint64_t chunks0 = sys->stats().chunks.load();
    const double cpu0 = CpuSeconds();
    r.mbs = WriteGeneration(vol, *files[i], args.json, volumes[i].c_str());
    r.cpu_s = CpuSeconds() - cpu0;
    const ChunkStoreStats after = sys->chunk_store()->stats();
    r.stored = after.bytes_stored - before.bytes_stored;
    r.raw = after.bytes_raw - before.bytes_raw;
    r.chunks = sys->stats().chunks.load() - chunks0;
    results.push_back(r);
  }
  Status s = sys->Close();
  if (!s.ok()) {
    std::fprintf(stderr, "close failed: %s\n", s.ToString().c_str());
    return 1;
  }
  sys.reset();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  if (args.json) {
    PrintJson(results, ceiling, ru.ru_maxrss / 1024.0);
  } else {
    PrintText(results, ceiling, ru.ru_maxrss / 1024.0);
  }
  if (temp && !args.keep) std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace bench
}  // namespace dedupv1

#include "bench/restore_bench.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "chunkstore/chunk_store.h"
#include "core/base/config.h"

namespace dedupv1 {
namespace bench {
namespace {

constexpr size_t kRequest = 512 << 10;

// Reads [0, size) in kRequest pieces on |readers| threads, each taking the
// next piece in order; |read| reads one. Returns MB/s, or -1 after an error
// (printed).
double ReadInOrder(uint64_t size, int readers, const std::function<Status(uint64_t, size_t, uint8_t*)>& read) {
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  auto start = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < readers; t++) {
    ts.emplace_back([&] {
      std::vector<uint8_t> buf(kRequest);
      for (;;) {
        const uint64_t off = next.fetch_add(kRequest);
        if (off >= size || failed) return;
        const size_t len = static_cast<size_t>(std::min<uint64_t>(kRequest, size - off));
        Status s = read(off, len, buf.data());
        if (!s.ok()) {
          if (!failed.exchange(true)) std::fprintf(stderr, "\nread at %llu failed: %s\n", (unsigned long long)off, s.ToString().c_str());
          return;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  return failed ? -1 : size / 1e6 / Seconds(start);
}

// Compares the volume with |gen|; false (printed) at the first difference.
bool SameAs(Volume* vol, const Generation& gen) {
  std::vector<uint8_t> got(kRequest), want(kRequest);
  for (uint64_t off = 0; off < gen.size(); off += kRequest) {
    const size_t len = static_cast<size_t>(std::min<uint64_t>(kRequest, gen.size() - off));
    Status s = vol->Read(off, len, got.data());
    gen.Read(off, len, want.data());
    if (!s.ok() || std::memcmp(got.data(), want.data(), len) != 0) {
      std::fprintf(stderr, "\nrestore of generation %d differs at %llu: %s\n", gen.number(),
                   (unsigned long long)off, s.ok() ? "other bytes" : s.ToString().c_str());
      return false;
    }
  }
  return true;
}

struct ReadCounts {
  uint64_t container_reads = 0;  // whole containers and ranges of them
  uint64_t metadata_reads = 0;
  uint64_t chunks_read = 0;
  uint64_t bytes_read = 0;  // from the container store
  uint64_t chunks_in_place = 0;  // read straight into the reader's buffer
};

ReadCounts CountsOf(DedupSystem* sys) {
  const ChunkStoreStats st = sys->chunk_store()->stats();
  ReadCounts c;
  // Every read of container data is one access: a whole container, a range
  // for a batch of chunks, or a single chunk.
  c.container_reads = st.container_reads + st.range_reads + st.chunk_reads;
  c.metadata_reads = st.metadata_reads;
  c.chunks_read = st.chunk_reads;
  c.bytes_read = st.bytes_read;
  c.chunks_in_place = st.chunks_read_in_place;
  return c;
}

struct Restore {
  double mbs = 0;
  ReadCounts reads;  // during the restore
  double SpeedFactor(uint64_t size) const {
    return reads.container_reads ? size / 1048576.0 / reads.container_reads : 0;
  }
};

bool RestoreOnce(DedupSystem* sys, Volume* vol, uint64_t size, int readers, Restore* r) {
  const ReadCounts before = CountsOf(sys);
  r->mbs = ReadInOrder(size, readers, [vol](uint64_t off, size_t len, uint8_t* out) { return vol->Read(off, len, out); });
  const ReadCounts after = CountsOf(sys);
  r->reads.container_reads = after.container_reads - before.container_reads;
  r->reads.metadata_reads = after.metadata_reads - before.metadata_reads;
  r->reads.chunks_read = after.chunks_read - before.chunks_read;
  r->reads.bytes_read = after.bytes_read - before.bytes_read;
  r->reads.chunks_in_place = after.chunks_in_place - before.chunks_in_place;
  return r->mbs >= 0;
}

// The plain file: |gen| written to |path| and synced, then read warm and cold.
bool PlainFile(const std::string& path, const Generation& gen, int readers, bool cold, double* warm_mbs,
               double* cold_mbs) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  std::vector<uint8_t> buf(1 << 20);
  bool ok = true;
  for (uint64_t off = 0; off < gen.size() && ok; off += buf.size()) {
    const size_t len = static_cast<size_t>(std::min<uint64_t>(buf.size(), gen.size() - off));
    gen.Read(off, len, buf.data());
    ok = ::pwrite(fd, buf.data(), len, static_cast<off_t>(off)) == static_cast<ssize_t>(len);
  }
  ok = ok && ::fsync(fd) == 0;
  auto pread_all = [fd](uint64_t off, size_t len, uint8_t* out) {
    for (size_t done = 0; done < len;) {
      ssize_t n = ::pread(fd, out + done, len - done, static_cast<off_t>(off + done));
      if (n <= 0) return Status::IOError("plain file read: " + std::string(n < 0 ? std::strerror(errno) : "short"));
      done += static_cast<size_t>(n);
    }
    return Status::OK();
  };
  if (ok) *warm_mbs = ReadInOrder(gen.size(), readers, pread_all);
  if (ok && cold) {
    ok = DropPageCache();
    if (ok) *cold_mbs = ReadInOrder(gen.size(), readers, pread_all);
  }
  ::close(fd);
  ::unlink(path.c_str());
  if (!ok) std::fprintf(stderr, "%s: could not write the plain file\n", path.c_str());
  return ok && *warm_mbs >= 0 && *cold_mbs >= 0;
}

struct GenerationResult {
  int number = 0;
  double write_mbs = 0;
  uint64_t stored = 0;  // chunk bytes stored after this generation
  uint64_t written = 0;  // bytes written so far
  uint64_t rewritten = 0;  // bytes of known chunks stored again so far (dedup.rewrite)
  bool measured = false;
  Restore warm, cold;
};

void PrintText(const RestoreArgs& args, uint64_t size, double plain_warm, double plain_cold,
               const std::vector<GenerationResult>& gens) {
  std::printf("\nrestore of a %s volume, %d readers x 512 KiB; plain file of the same bytes: warm %.0f MB/s, cold %.0f MB/s\n",
              HumanBytes(size).c_str(), args.readers, plain_warm, plain_cold);
  std::printf("%4s %9s %10s %6s %9s | %9s %7s %9s %8s | %9s %7s %9s %8s %9s\n", "gen", "write", "stored", "ratio",
              "rewritten",
              "warm MB/s", "/plain", "reads", "factor", "cold MB/s", "/plain", "reads", "factor", "/gen 1");
  double first_cold = 0;
  for (const GenerationResult& g : gens) {
    if (!g.measured) continue;
    if (first_cold == 0) first_cold = g.cold.mbs;
    std::printf("%4d %9.0f %10s %6.3f %9s | %9.0f %7.2f %9llu %8.2f | %9.0f %7.2f %9llu %8.2f %9.2f\n", g.number,
                g.write_mbs, HumanBytes(g.stored).c_str(), 1.0 - static_cast<double>(g.stored) / g.written,
                HumanBytes(g.rewritten).c_str(),
                g.warm.mbs, plain_warm > 0 ? g.warm.mbs / plain_warm : 0,
                (unsigned long long)g.warm.reads.container_reads, g.warm.SpeedFactor(size), g.cold.mbs,
                plain_cold > 0 ? g.cold.mbs / plain_cold : 0, (unsigned long long)g.cold.reads.container_reads,
                g.cold.SpeedFactor(size), first_cold > 0 ? g.cold.mbs / first_cold : 0);
  }
  std::printf("(ratio: share of the written bytes not stored; reads: reads of container data during the restore\n"
              " (ranges, single chunks, whole containers; metadata heads not counted); factor: MiB restored per such\n"
              " read; /gen 1: cold restore speed against generation 1's)\n");
}

void PrintJson(const RestoreArgs& args, uint64_t size, double plain_warm, double plain_cold,
               const std::vector<GenerationResult>& gens) {
  std::printf("{\"size\": %llu, \"readers\": %d, \"plain_warm_mb_s\": %.1f, \"plain_cold_mb_s\": %.1f, \"generations\": [",
              (unsigned long long)size, args.readers, plain_warm, plain_cold);
  bool first = true;
  for (const GenerationResult& g : gens) {
    std::printf("%s{\"gen\": %d, \"write_mb_s\": %.1f, \"stored_bytes\": %llu, \"written_bytes\": %llu, "
                "\"rewritten_bytes\": %llu",
                first ? "" : ", ", g.number, g.write_mbs, (unsigned long long)g.stored, (unsigned long long)g.written,
                (unsigned long long)g.rewritten);
    first = false;
    if (g.measured) {
      for (const auto& [name, r] : {std::pair<const char*, const Restore&>{"warm", g.warm}, {"cold", g.cold}}) {
        std::printf(", \"%s_mb_s\": %.1f, \"%s_container_reads\": %llu, \"%s_metadata_reads\": %llu, "
                    "\"%s_chunks_read\": %llu, \"%s_chunks_in_place\": %llu, \"%s_bytes_read\": %llu, "
                    "\"%s_speed_factor\": %.3f",
                    name, r.mbs, name, (unsigned long long)r.reads.container_reads, name,
                    (unsigned long long)r.reads.metadata_reads, name, (unsigned long long)r.reads.chunks_read, name,
                    (unsigned long long)r.reads.chunks_in_place, name, (unsigned long long)r.reads.bytes_read, name,
                    r.SpeedFactor(size));
      }
    }
    std::printf("}");
  }
  std::printf("]}\n");
}

}  // namespace

int RunRestoreBench(const RestoreArgs& args) {
  std::string dir;
  bool temp = false;
  uint64_t size = 0;
  Options options;
  if (!FreshStoreOptions(args.store, "dedupv1-bench-restore", {"backup"}, &dir, &temp, &size, &options)) return 1;
  BackupGenerator generator(GeneratorParams(), args.seed);
  Generation gen = generator.First(size);

  double plain_warm = 0, plain_cold = 0;
  if (!args.json) std::fprintf(stderr, "plain file of generation 1: write, read warm%s\n", args.cold ? " and cold" : "");
  if (!PlainFile(dir + "-plain.img", gen, args.readers, args.cold, &plain_warm, &plain_cold)) return 1;

  std::unique_ptr<DedupSystem> sys;
  Volume* vol = nullptr;
  auto open = [&]() {
    if (!OpenSystem(options, &sys)) return false;
    Status s = sys->GetVolume("backup", &vol);
    if (!s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return s.ok();
  };
  if (!open()) return 1;
  std::vector<GenerationResult> results;
  uint64_t stored = 0;
  uint64_t rewritten = 0;
  for (int n = 1; n <= args.generations; n++) {
    if (n > 1) gen = generator.Next(gen);
    GenerationResult g;
    g.number = n;
    const std::string label = "generation " + std::to_string(n);
    const uint64_t stored_before = sys->chunk_store()->stats().bytes_stored;  // since the open
    const uint64_t rewritten_before = sys->stats().bytes_rewritten.load();
    g.write_mbs = WriteGeneration(vol, gen, args.json, label.c_str());
    stored += sys->chunk_store()->stats().bytes_stored - stored_before;
    rewritten += sys->stats().bytes_rewritten.load() - rewritten_before;
    g.stored = stored;
    g.rewritten = rewritten;
    g.written = size * n;
    g.measured = n == 1 || n == args.generations || (args.every > 0 && n % args.every == 0);
    if (g.measured) {
      if (!RestoreOnce(sys.get(), vol, size, args.readers, &g.warm)) return 1;
      if (!SameAs(vol, gen)) return 1;
      if (args.cold) {
        Status s = sys->Close();
        if (!s.ok()) {
          std::fprintf(stderr, "close failed: %s\n", s.ToString().c_str());
          return 1;
        }
        sys.reset();
        if (!DropPageCache()) {
          std::fprintf(stderr, "cold restores need the page cache dropped (root); --no-cold leaves them out\n");
          return 1;
        }
        if (!open()) return 1;
        if (!RestoreOnce(sys.get(), vol, size, args.readers, &g.cold)) return 1;
        if (!SameAs(vol, gen)) return 1;
      }
      if (!args.json) {
        std::fprintf(stderr, "  restore        warm %6.0f MB/s, cold %6.0f MB/s (%llu container reads)\n", g.warm.mbs,
                     g.cold.mbs, (unsigned long long)g.cold.reads.container_reads);
      }
    }
    results.push_back(g);
  }
  Status s = sys->Close();
  if (!s.ok()) {
    std::fprintf(stderr, "close failed: %s\n", s.ToString().c_str());
    return 1;
  }
  if (args.json) {
    PrintJson(args, size, plain_warm, plain_cold, results);
  } else {
    PrintText(args, size, plain_warm, plain_cold, results);
  }
  if (temp && !args.keep) std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace bench
}  // namespace dedupv1

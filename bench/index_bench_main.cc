// dedupv1_index_bench: the chunk index at scale.
//
//   dedupv1_index_bench build  --path FILE --entries N [--fill F] [--seed S] [--batch-buckets B]
//   dedupv1_index_bench lookup --path FILE [--threads T] [--seconds S] [--cold] [--miss]
//   dedupv1_index_bench insert --dir DIR --entries N [--seconds S] [--table-entries M]
//   dedupv1_index_bench grow   --path FILE [--with-writes] [--seconds S]
//
// build   creates the hash table file (index/disk_hash_table.h) sized for N
//         entries at fill F (default 0.6 of the slots) and bulk-loads N
//         synthetic fingerprints in bucket order (bench/synthetic_index.h);
//         FILE.synthetic remembers N, F and the seed for lookup.
// lookup  opens it as a ChunkIndex (empty auxiliary index) and runs T threads
//         of random lookups of existing keys (--miss: absent keys) for S
//         seconds, in rounds: each round looks up one key in each of a tenth
//         of the buckets (pages), chosen at random, and with --cold the
//         table's pages are dropped from the page cache (posix_fadvise
//         DONTNEED) before each round, so every lookup reads the disk.
// insert  the engine's own path: ChunkIndex::PutNew of random fingerprints
//         (committed containers) into a table sized for M entries (default
//         N), written back by the index's write-back thread in batches of
//         1024 (random pages; auxiliary soft/hard limits 64K/256K entries so
//         the write-back paces the puts within seconds), for S seconds, then
//         Flush. Gives the per-entry cost of filling the index the way the
//         engine does, to extrapolate.
// grow    grows the table FILE (from build) online to twice its buckets
//         (index/growable_hash_table.h), step by step as the engine's growth
//         thread does; with --with-writes, batches of 1024 new entries are
//         applied beside it, and their rate during the growth is printed next
//         to their rate before it (S seconds alone first).
//
// Each prints one JSON object on stdout (progress on stderr), with the
// process's peak RSS: the table lives on disk, only the page cache holds it.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/synthetic_index.h"
#include "core/base/config.h"
#include "core/base/env.h"
#include "index/chunk_index.h"
#include "index/disk_hash_table.h"
#include "index/growable_hash_table.h"

namespace dedupv1 {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double PeakRssMb() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "dedupv1_index_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 3;
}

int Usage() {
  std::fprintf(stderr,
               "usage: dedupv1_index_bench build  --path FILE --entries N [--fill F] [--seed S] [--batch-buckets B]\n"
               "       dedupv1_index_bench lookup --path FILE [--threads T] [--seconds S] [--cold] [--miss]\n"
               "       dedupv1_index_bench insert --dir DIR --entries N [--seconds S] [--table-entries M]\n"
               "       dedupv1_index_bench grow   --path FILE [--with-writes] [--seconds S]\n");
  return 2;
}

struct Args {
  std::string cmd, path, dir;
  uint64_t entries = 0, table_entries = 0, seed = 1, batch_buckets = 4096;
  double fill = 0.6, seconds = 20;
  int threads = 1;
  bool cold = false, miss = false, with_writes = false;
};

bool Parse(int argc, char** argv, Args* a) {
  if (argc < 2) return false;
  a->cmd = argv[1];
  for (int i = 2; i < argc; i++) {
    std::string k = argv[i];
    if (k == "--cold") {
      a->cold = true;
      continue;
    }
    if (k == "--miss") {
      a->miss = true;
      continue;
    }
    if (k == "--with-writes") {
      a->with_writes = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    std::string v = argv[++i];
    uint64_t u = 0;
    double d = 0;
    if (k == "--path") {
      a->path = v;
    } else if (k == "--dir") {
      a->dir = v;
    } else if (k == "--entries" || k == "--table-entries") {
      if (!ParseSize(v, &u).ok()) return false;  // "10M" = 10 * 2^20; plain numbers too
      (k == "--entries" ? a->entries : a->table_entries) = u;
    } else if (k == "--seed" || k == "--batch-buckets" || k == "--threads") {
      if (!ParseUint(v, &u).ok() || u == 0) return false;
      if (k == "--seed") a->seed = u;
      if (k == "--batch-buckets") a->batch_buckets = u;
      if (k == "--threads") a->threads = static_cast<int>(std::min<uint64_t>(u, 256));
    } else if (k == "--fill" || k == "--seconds") {
      if (!ParseDouble(v, &d).ok() || d <= 0) return false;
      (k == "--fill" ? a->fill : a->seconds) = d;
    } else {
      return false;
    }
  }
  return true;
}

DiskHashTableOptions TableOptions(const std::string& path, uint64_t size) {
  DiskHashTableOptions t;
  t.path = path;
  t.size_bytes = size;
  t.max_fill = 0.7;
  return t;
}

// --- build ----------------------------------------------------------------------------

int Build(const Args& a) {
  if (a.path.empty() || a.entries == 0 || a.fill >= 0.7) return Usage();
  Env* env = Env::Default();
  for (const std::string& p : {a.path, a.path + ".journal", a.path + ".synthetic"}) {
    if (env->FileExists(p)) (void)env->DeleteFile(p);
  }
  DiskHashTableOptions t = TableOptions(a.path, bench::TableBytesFor(a.entries, 4096, 20, a.fill));
  uint64_t free_bytes = 0;
  if (env->GetFreeSpace(DirName(a.path), &free_bytes).ok() && free_bytes < t.size_bytes + (1ULL << 30)) {
    std::fprintf(stderr, "dedupv1_index_bench: the table needs %llu bytes, %llu free\n",
                 (unsigned long long)t.size_bytes, (unsigned long long)free_bytes);
    return 3;
  }
  auto start = Clock::now();
  std::unique_ptr<DiskHashTable> table;
  Status s = DiskHashTable::Open(t, env, &table);
  if (!s.ok()) return Fail("creating " + a.path, s);
  const double create_s = Since(start);
  bench::SyntheticIndex gen(table->bucket_count(), static_cast<double>(a.entries) / table->bucket_count(), 20,
                            a.seed);
  const uint64_t buckets = table->bucket_count();
  double last = 0;
  s = gen.Load(table.get(), a.batch_buckets, [&](uint64_t done) {
    double secs = Since(start);
    if (secs - last >= 2 || done == buckets) {
      last = secs;
      std::fprintf(stderr, "\r  loaded %5.1f%%  %llu entries  %.0f s  ETA %.0f s   ", 100.0 * done / buckets,
                   (unsigned long long)table->entry_count(), secs, secs / done * (buckets - done));
    }
  });
  std::fprintf(stderr, "\n");
  if (!s.ok()) return Fail("loading " + a.path, s);
  const double secs = Since(start);
  const uint64_t entries = table->entry_count();
  table.reset();
  char meta[256];
  std::snprintf(meta, sizeof(meta), "entries %llu\nfill %.6f\nseed %llu\n", (unsigned long long)a.entries, a.fill,
                (unsigned long long)a.seed);
  s = WriteFileAtomically(env, a.path + ".synthetic", meta);
  if (!s.ok()) return Fail("writing " + a.path + ".synthetic", s);
  std::printf(
      "{\"command\": \"build\", \"path\": \"%s\", \"entries\": %llu, \"table_bytes\": %llu, \"buckets\": %llu, "
      "\"fill\": %.3f, \"create_seconds\": %.2f, \"seconds\": %.1f, \"entries_per_s\": %.0f, "
      "\"write_mb_s\": %.1f, \"peak_rss_mb\": %.0f}\n",
      a.path.c_str(), (unsigned long long)entries, (unsigned long long)t.size_bytes, (unsigned long long)buckets,
      static_cast<double>(entries) / (buckets * 123.0), create_s, secs, entries / secs,
      2.0 * t.size_bytes / 1e6 / secs, PeakRssMb());
  return 0;
}

// --- lookup -----------------------------------------------------------------------------

// Evicts the file's pages (clean: Apply synced them) from the page cache.
// A hint, not I/O: a plain descriptor instead of Env.
void DropCache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

int Lookup(const Args& a) {
  if (a.path.empty()) return Usage();
  Env* env = Env::Default();
  std::string meta;
  Status s = ReadFileToString(env, a.path + ".synthetic", &meta);
  if (!s.ok()) return Fail("reading " + a.path + ".synthetic (run build first)", s);
  unsigned long long want = 0, seed = 0;
  double fill = 0;
  if (std::sscanf(meta.c_str(), "entries %llu fill %lf seed %llu", &want, &fill, &seed) != 3) {
    return Fail("parsing " + a.path + ".synthetic", Status::Corruption("bad format"));
  }
  uint64_t size = 0;
  s = env->GetFileSize(a.path, &size);
  if (!s.ok()) return Fail("table", s);
  ChunkIndexOptions o;
  o.table = TableOptions(a.path, size);
  std::unique_ptr<ChunkIndex> index;
  s = ChunkIndex::Open(o, env, [](ContainerId) { return true; }, &index);
  if (!s.ok()) return Fail("opening " + a.path, s);
  const uint64_t buckets = size / 4096 - 1;
  bench::SyntheticIndex gen(buckets, static_cast<double>(want) / buckets, 20, seed);

  // Rounds: each drops the table from the page cache (with --cold) and looks
  // up one key in each of |per_round| distinct buckets, at most a tenth of
  // all pages. Linux reads ahead on a cache miss only when the pages just
  // before the missed one are cached, which stays rare at that coverage, so
  // each lookup reads its page and nothing else.
  const uint64_t per_round = std::max<uint64_t>(1, std::min<uint64_t>(buckets / 10, 1 << 20));
  std::atomic<uint64_t> found{0}, errors{0};
  std::atomic<bool> stop{false};
  std::vector<std::vector<float>> lat(static_cast<size_t>(a.threads));
  double secs_looking = 0;
  int rounds = 0;
  auto start = Clock::now();
  while (!stop && Since(start) < a.seconds) {
    std::vector<Fingerprint> keys = gen.KeysIn(gen.DistinctBuckets(per_round, seed + 7 + rounds), seed + 8 + rounds);
    if (a.miss) {
      // Absent keys homed in those buckets: a real fingerprint with its tail changed.
      for (auto& k : keys) k.bytes[19] ^= 0x5a;
    }
    if (a.cold) DropCache(a.path);
    std::atomic<uint64_t> cursor{0};
    auto round_start = Clock::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < a.threads; t++) {
      ts.emplace_back([&, t] {
        auto& mine = lat[static_cast<size_t>(t)];
        ChunkIndexEntry e;
        while (!stop.load(std::memory_order_relaxed)) {
          uint64_t i = cursor.fetch_add(1, std::memory_order_relaxed);
          if (i >= keys.size()) break;  // every key once: no page read twice in a round
          auto t0 = Clock::now();
          Status r = index->Lookup(keys[i], &e);
          mine.push_back(std::chrono::duration<float, std::micro>(Clock::now() - t0).count());
          if (r.ok()) {
            found++;
          } else if (!r.IsNotFound()) {
            errors++;
          }
        }
      });
    }
    while (cursor.load() < keys.size() && Since(start) < a.seconds) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (Since(start) >= a.seconds) stop = true;
    for (auto& t : ts) t.join();
    secs_looking += Since(round_start);
    rounds++;
  }
  const double secs = secs_looking;
  std::vector<float> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return all.empty() ? 0.0 : all[static_cast<size_t>(p * (all.size() - 1))]; };
  const uint64_t n = all.size();
  std::printf(
      "{\"command\": \"lookup\", \"path\": \"%s\", \"entries\": %llu, \"table_bytes\": %llu, \"threads\": %d, "
      "\"cold\": %s, \"miss\": %s, \"rounds\": %d, \"lookups_per_round\": %llu, \"lookups\": %llu, "
      "\"seconds\": %.2f, \"lookups_per_s\": %.0f, "
      "\"found\": %llu, \"errors\": %llu, \"p50_us\": %.1f, \"p99_us\": %.1f, \"peak_rss_mb\": %.0f}\n",
      a.path.c_str(), (unsigned long long)want, (unsigned long long)size, a.threads, a.cold ? "true" : "false",
      a.miss ? "true" : "false", rounds, (unsigned long long)per_round, (unsigned long long)n, secs, n / secs, (unsigned long long)found.load(),
      (unsigned long long)errors.load(), pct(0.5), pct(0.99), PeakRssMb());
  return errors.load() == 0 && (a.miss || found.load() == n) ? 0 : 1;
}

// --- insert: the engine's path ---------------------------------------------------------------

int Insert(const Args& a) {
  if (a.dir.empty() || a.entries == 0) return Usage();
  Env* env = Env::Default();
  std::filesystem::remove_all(a.dir);
  Status s = env->CreateDirs(a.dir);
  if (!s.ok()) return Fail("creating " + a.dir, s);
  const uint64_t table_entries = a.table_entries ? a.table_entries : a.entries;
  ChunkIndexOptions o;
  o.table = TableOptions(JoinPath(a.dir, "chunk-index"), bench::TableBytesFor(table_entries, 4096, 20, 0.6));
  o.aux_soft_limit = 64 << 10;
  o.aux_hard_limit = 256 << 10;
  std::unique_ptr<ChunkIndex> index;
  s = ChunkIndex::Open(o, env, [](ContainerId) { return true; }, &index);
  if (!s.ok()) return Fail("opening the chunk index", s);
  bench::SplitMix64 rng(a.seed);
  auto start = Clock::now();
  uint64_t put = 0;
  double last = 0;
  const uint64_t limit = std::min<uint64_t>(a.entries, o.table.size_bytes / 4096 * 123 * 6 / 10);
  for (; put < limit; put++) {
    Fingerprint fp;
    fp.size = 20;
    for (size_t k = 0; k < 20; k += 8) {
      uint64_t r = rng.Next();
      std::memcpy(fp.bytes + k, &r, std::min<size_t>(8, 20 - k));
    }
    s = index->PutNew(fp, 1 + put / 500);
    if (!s.ok()) return Fail("PutNew", s);
    if ((put & 4095) == 0) {
      double secs = Since(start);
      if (secs >= a.seconds) break;
      if (secs - last >= 2) {
        last = secs;
        ChunkIndexStats st = index->stats();
        std::fprintf(stderr, "\r  put %llu, written back %llu, aux %llu, %.0f s   ", (unsigned long long)put,
                     (unsigned long long)st.written_back, (unsigned long long)st.aux_entries, secs);
      }
    }
  }
  const double put_secs = Since(start);
  std::fprintf(stderr, "\n  flushing %llu entries...\n", (unsigned long long)index->stats().aux_entries);
  s = index->Flush();
  if (!s.ok()) return Fail("Flush", s);
  const double secs = Since(start);
  ChunkIndexStats st = index->stats();
  auto close_start = Clock::now();
  s = index->Close();
  if (!s.ok()) return Fail("Close", s);
  index.reset();
  const double close_secs = Since(close_start);
  std::printf(
      "{\"command\": \"insert\", \"entries\": %llu, \"table_bytes\": %llu, \"put_seconds\": %.2f, "
      "\"seconds\": %.2f, \"entries_per_s\": %.0f, \"write_back_batches\": %llu, \"throttled_puts\": %llu, "
      "\"close_seconds\": %.2f, \"peak_rss_mb\": %.0f}\n",
      (unsigned long long)put, (unsigned long long)o.table.size_bytes, put_secs, secs, put / secs,
      (unsigned long long)st.write_back_batches, (unsigned long long)st.throttled_puts, close_secs, PeakRssMb());
  std::filesystem::remove_all(a.dir);
  return 0;
}

// --- grow: the online growth of the table -----------------------------------------------------

// Random committed entries for Apply batches (fresh fingerprints).
std::vector<ChunkTable::Op> RandomBatch(bench::SplitMix64* rng, size_t n) {
  std::vector<ChunkTable::Op> ops(n);
  for (auto& op : ops) {
    op.fp.size = 20;
    for (size_t k = 0; k < 20; k += 8) {
      uint64_t r = rng->Next();
      std::memcpy(op.fp.bytes + k, &r, std::min<size_t>(8, 20 - k));
    }
    op.entry.container = 1;
    op.entry.committed = true;
  }
  return ops;
}

// Applies batches of |batch| new entries for |seconds| (or until |stop|, or
// the table is almost full); returns entries per second.
double ApplyFor(ChunkTable* table, bench::SplitMix64* rng, size_t batch, double seconds,
                const std::atomic<bool>* stop, uint64_t* applied, Status* error) {
  auto start = Clock::now();
  uint64_t n = 0;
  while (Since(start) < seconds && !(stop && stop->load())) {
    // A small table fills within seconds: stop short of its fill limit.
    if (table->entry_count() + 2 * batch > table->capacity()) break;
    Status s = table->Apply(RandomBatch(rng, batch));
    if (!s.ok()) {
      *error = s;
      break;
    }
    n += batch;
  }
  *applied += n;
  return n / Since(start);
}

// Grows the table FILE (made by build) online by the factor: moves every
// entry into a table twice as large and renames it over FILE. First the
// write-back rate of batches of 1024 new entries alone (S seconds), then the
// growth with (--with-writes) or without the same batches beside it; prints
// the growth's time, pages and entries per second, and the write-back rate
// during the growth next to the one before (one run, one machine).
int Grow(const Args& a) {
  if (a.path.empty()) return Usage();
  Env* env = Env::Default();
  uint64_t size = 0;
  Status s = env->GetFileSize(a.path, &size);
  if (!s.ok()) return Fail("table (run build first)", s);
  GrowableHashTableOptions go;
  go.table = TableOptions(a.path, size);
  go.grow_in_background = false;
  std::unique_ptr<GrowableHashTable> table;
  s = GrowableHashTable::Open(go, env, &table);
  if (!s.ok()) return Fail("opening " + a.path, s);
  const uint64_t entries_before = table->entry_count();
  bench::SplitMix64 rng(a.seed + 99);
  uint64_t applied = 0;
  Status write_error;
  const double rate_alone = a.with_writes ? ApplyFor(table.get(), &rng, 1024, a.seconds, nullptr, &applied, &write_error) : 0;
  if (!write_error.ok()) return Fail("Apply before the growth", write_error);
  s = table->Grow(0);
  if (!s.ok()) return Fail("Grow", s);
  std::atomic<bool> done{false};
  double rate_during = 0;
  std::thread writer;
  if (a.with_writes) {
    writer = std::thread([&] { rate_during = ApplyFor(table.get(), &rng, 1024, 1e9, &done, &applied, &write_error); });
  }
  auto start = Clock::now();
  bool growing = true;
  uint64_t steps = 0;
  double last = 0;
  while (growing || table->growth().requested) {
    s = table->Step(&growing);
    if (!s.ok()) break;
    steps++;
    if (a.with_writes) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // as the growth thread pauses
    const double secs = Since(start);
    if (secs - last >= 2) {
      last = secs;
      ChunkTableGrowth g = table->growth();
      std::fprintf(stderr, "\r  moved %llu of %llu pages  %.0f s   ", (unsigned long long)g.pages_moved,
                   (unsigned long long)g.pages_total, secs);
    }
  }
  const double secs = Since(start);
  done = true;
  if (writer.joinable()) writer.join();
  std::fprintf(stderr, "\n");
  if (!s.ok()) return Fail("growth step", s);
  if (!write_error.ok()) return Fail("Apply during the growth", write_error);
  const uint64_t old_pages = size / 4096 - 1;
  const ChunkTableGrowth g = table->growth();
  std::printf(
      "{\"command\": \"grow\", \"path\": \"%s\", \"entries\": %llu, \"from_bytes\": %llu, \"to_bytes\": %llu, "
      "\"steps\": %llu, \"seconds\": %.2f, \"pages_per_s\": %.0f, \"entries_per_s\": %.0f, \"mb_per_s\": %.1f, "
      "\"with_writes\": %s, \"write_entries_per_s_alone\": %.0f, \"write_entries_per_s_during\": %.0f, "
      "\"entries_written\": %llu, \"peak_rss_mb\": %.0f}\n",
      a.path.c_str(), (unsigned long long)entries_before, (unsigned long long)size, (unsigned long long)g.table_bytes,
      (unsigned long long)steps, secs, old_pages / secs, entries_before / secs, size / 1e6 / secs,
      a.with_writes ? "true" : "false", rate_alone, rate_during, (unsigned long long)applied, PeakRssMb());
  return 0;
}

}  // namespace
}  // namespace dedupv1

int main(int argc, char** argv) {
  using namespace dedupv1;
  Args a;
  if (!Parse(argc, argv, &a)) return Usage();
  if (a.cmd == "build") return Build(a);
  if (a.cmd == "lookup") return Lookup(a);
  if (a.cmd == "insert") return Insert(a);
  if (a.cmd == "grow") return Grow(a);
  return Usage();
}

// dedupv1_micro_bench: Google Benchmark micro benchmarks of the engine's
// building blocks, each alone on one core (or a few threads where the engine
// runs it concurrently):
//
//   Chunking/{rabin,fastcdc,fastcdc_min4k}  Chunker::Split over 8 MiB of incompressible data
//                                   (fastcdc with ChunkerOptions' 2K minimum; fastcdc_min4k with the
//                                   4K the engine gives it unless configured)
//   Fingerprint/{sha1,sha256}/8192  ComputeFingerprint over 8 KiB chunks
//   Crc32c/{8192,4194304}           Crc32c (three registers) over a chunk and a container;
//   Crc32c/one_register/...         beside it the plain one-register loop it replaced
//   ChunkAndHash/{rabin,fastcdc,fastcdc_min4k}_sha1  both, one core: the per-core ceiling
//   Bloom/{add,hit,miss}            BloomSet sized as the engine's default (16M, 1%)
//   IndexAux/hit                    ChunkIndex::Lookup answered by the auxiliary index
//   IndexTable/warm                 ChunkIndex::Lookup from the hash table, pages cached
//   IndexTable/cold                 the same with the table's pages dropped from the
//                                   page cache (posix_fadvise DONTNEED) before each run;
//                                   every lookup of a run reads a different page
//   Container{Pack,Unpack}/<compression>/<data>
//                                   filling a 4 MiB container with 8 KiB chunks and
//                                   serializing it; parsing it and reading every chunk
//
// Knobs (environment): DEDUPV1_MICRO_INDEX_ENTRIES (entries of the on-disk
// table, default 4M; the file is ~54 bytes per entry at 60% fill),
// DEDUPV1_MICRO_DIR (where the table is built, default $TMPDIR or /tmp).
// All the usual --benchmark_* flags apply (--benchmark_out=FILE
// --benchmark_out_format=json for scripts). Speed is measured here and in the
// other benchmarks only, never in tests.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <nmmintrin.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/backup_generator.h"
#include "bench/synthetic_index.h"
#include "chunkstore/compression.h"
#include "chunkstore/container.h"
#include "core/base/chunker.h"
#include "core/base/coding.h"
#include "core/base/env.h"
#include "core/base/fingerprint.h"
#include "filters/bloom_set.h"
#include "index/chunk_index.h"
#include "index/disk_hash_table.h"

namespace dedupv1 {
namespace {

constexpr size_t kChunk = 8192;
constexpr size_t kStretch = 8 << 20;

void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "dedupv1_micro_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

uint64_t Knob(const char* name, uint64_t def) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : def;
}

// Incompressible bytes, like the backup generator's.
std::vector<uint8_t> RandomData(size_t n, uint64_t source) {
  std::vector<uint8_t> v(n);
  bench::FillSource(source, 0, n, v.data());
  return v;
}

// Text-like bytes (words of a 512-word vocabulary with a skewed choice):
// compressible about 2-3x, so the compressors have something to do.
std::vector<uint8_t> TextData(size_t n, uint64_t seed) {
  bench::SplitMix64 rng(seed);
  std::vector<std::string> words;
  for (int i = 0; i < 512; i++) {
    std::string w;
    int len = 2 + static_cast<int>(rng.Next() % 9);
    for (int k = 0; k < len; k++) w.push_back(static_cast<char>('a' + rng.Next() % 26));
    words.push_back(w);
  }
  std::vector<uint8_t> v;
  v.reserve(n + 16);
  while (v.size() < n) {
    // Squaring a uniform number favours low word numbers.
    double u = rng.NextDouble();
    const std::string& w = words[static_cast<size_t>(u * u * words.size())];
    v.insert(v.end(), w.begin(), w.end());
    v.push_back(rng.Next() % 12 == 0 ? '\n' : ' ');
  }
  v.resize(n);
  return v;
}

std::vector<Fingerprint> RandomFingerprints(size_t n, uint64_t seed, size_t size = 20) {
  bench::SplitMix64 rng(seed);
  std::vector<Fingerprint> fps(n);
  for (auto& fp : fps) {
    fp.size = static_cast<uint8_t>(size);
    for (size_t k = 0; k < size; k += 8) {
      uint64_t r = rng.Next();
      std::memcpy(fp.bytes + k, &r, std::min<size_t>(8, size - k));
    }
  }
  return fps;
}

// --- chunking and fingerprinting -------------------------------------------------

void BM_Chunking(benchmark::State& state, const char* kind, size_t min_size) {
  static const std::vector<uint8_t> data = RandomData(kStretch, 11);
  ChunkerOptions o;
  o.name = kind;
  if (min_size != 0) o.min_size = min_size;
  std::unique_ptr<Chunker> chunker;
  Status s = Chunker::Create(o, &chunker);
  if (!s.ok()) Die("chunker", s);
  std::vector<size_t> ends;
  for (auto _ : state) {
    ends.clear();
    chunker->Split(data.data(), data.size(), true, &ends);
    benchmark::DoNotOptimize(ends.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * data.size()));
  state.counters["avg_chunk_bytes"] = static_cast<double>(data.size()) / static_cast<double>(ends.size());
}
// (The static chunker is not measured: it computes offsets without reading the data.)
BENCHMARK_CAPTURE(BM_Chunking, rabin, "rabin", 0)->Name("Chunking/rabin");
BENCHMARK_CAPTURE(BM_Chunking, fastcdc, "fastcdc", 0)->Name("Chunking/fastcdc");
BENCHMARK_CAPTURE(BM_Chunking, fastcdc_min4k, "fastcdc", 4096)->Name("Chunking/fastcdc_min4k");

void BM_Fingerprint(benchmark::State& state, FingerprintType type) {
  static const std::vector<uint8_t> data = RandomData(kStretch, 12);
  const size_t n = static_cast<size_t>(state.range(0));
  size_t off = 0;
  Fingerprint fp;
  for (auto _ : state) {
    ComputeFingerprint(type, data.data() + off, n, &fp);
    benchmark::DoNotOptimize(fp.bytes);
    off += n;
    if (off + n > data.size()) off = 0;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK_CAPTURE(BM_Fingerprint, sha1, FingerprintType::kSha1)->Name("Fingerprint/sha1")->Arg(kChunk);
BENCHMARK_CAPTURE(BM_Fingerprint, sha256, FingerprintType::kSha256)->Name("Fingerprint/sha256")->Arg(kChunk);

// The loop Crc32c was before it kept three registers: one crc32 instruction
// after the other, each waiting for the last (the baseline of Crc32c).
uint32_t Crc32cOneRegister(const uint8_t* p, size_t n) {
  uint64_t c = 0xFFFFFFFFu;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; n--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}
uint32_t Crc32cLibrary(const uint8_t* p, size_t n) { return Crc32c(p, n); }

// |crc| over pieces of state.range(0) bytes, one after the other.
void BM_Crc32c(benchmark::State& state, uint32_t (*crc)(const uint8_t*, size_t)) {
  static const std::vector<uint8_t> data = RandomData(kStretch, 13);
  const size_t n = static_cast<size_t>(state.range(0));
  size_t off = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(crc(data.data() + off, n));
    off += n;
    if (off + n > data.size()) off = 0;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK_CAPTURE(BM_Crc32c, library, Crc32cLibrary)->Name("Crc32c")->Arg(kChunk)->Arg(4 << 20);
BENCHMARK_CAPTURE(BM_Crc32c, one_register, Crc32cOneRegister)
    ->Name("Crc32c/one_register")->Arg(kChunk)->Arg(4 << 20);

// Chunking + SHA-1 of every chunk on one core: what one dedup worker can do
// at most (dedupv1_bench's ceiling runs this on dedup.threads cores).
void BM_ChunkAndHash(benchmark::State& state, const char* kind, size_t min_size) {
  static const std::vector<uint8_t> data = RandomData(kStretch, 13);
  ChunkerOptions o;
  o.name = kind;
  if (min_size != 0) o.min_size = min_size;
  std::unique_ptr<Chunker> chunker;
  Status s = Chunker::Create(o, &chunker);
  if (!s.ok()) Die("chunker", s);
  std::vector<size_t> ends;
  Fingerprint fp;
  for (auto _ : state) {
    ends.clear();
    chunker->Split(data.data(), data.size(), true, &ends);
    size_t start = 0;
    for (size_t e : ends) {
      ComputeFingerprint(FingerprintType::kSha1, data.data() + start, e - start, &fp);
      start = e;
    }
    benchmark::DoNotOptimize(fp.bytes);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * data.size()));
}
BENCHMARK_CAPTURE(BM_ChunkAndHash, rabin, "rabin", 0)->Name("ChunkAndHash/rabin_sha1");
BENCHMARK_CAPTURE(BM_ChunkAndHash, fastcdc, "fastcdc", 0)->Name("ChunkAndHash/fastcdc_sha1");
BENCHMARK_CAPTURE(BM_ChunkAndHash, fastcdc_min4k, "fastcdc", 4096)->Name("ChunkAndHash/fastcdc_min4k_sha1");

// --- bloom filter -----------------------------------------------------------------

struct BloomFixture {
  std::unique_ptr<BloomSet> set;
  std::vector<Fingerprint> present, absent;
  BloomFixture() {
    // The engine's default: 16M expected chunks, 1% false positives (19 MiB).
    Status s = BloomSet::Create(16 << 20, 0.01, &set);
    if (!s.ok()) Die("bloom", s);
    present = RandomFingerprints(4 << 20, 21);
    absent = RandomFingerprints(1 << 20, 22);
    for (const auto& fp : present) set->Add(fp);
  }
};
BloomFixture& Bloom() {
  static BloomFixture f;
  return f;
}

void BM_BloomAdd(benchmark::State& state) {
  static const std::vector<Fingerprint> fps = RandomFingerprints(1 << 20, 23);
  std::unique_ptr<BloomSet> set;
  Status s = BloomSet::Create(16 << 20, 0.01, &set);
  if (!s.ok()) Die("bloom", s);
  size_t i = 0;
  for (auto _ : state) {
    set->Add(fps[i]);
    if (++i == fps.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_BloomAdd)->Name("Bloom/add");

void BM_BloomLookup(benchmark::State& state, bool hit) {
  BloomFixture& f = Bloom();
  const std::vector<Fingerprint>& fps = hit ? f.present : f.absent;
  size_t i = 0;
  uint64_t yes = 0;
  for (auto _ : state) {
    yes += f.set->MightContain(fps[i]);
    if (++i == fps.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["might_contain_share"] = static_cast<double>(yes) / static_cast<double>(state.iterations());
}
BENCHMARK_CAPTURE(BM_BloomLookup, hit, true)->Name("Bloom/hit");
BENCHMARK_CAPTURE(BM_BloomLookup, miss, false)->Name("Bloom/miss");

// --- chunk index ------------------------------------------------------------------

std::string BenchDir() {
  const char* d = std::getenv("DEDUPV1_MICRO_DIR");
  if (!d || !*d) d = std::getenv("TMPDIR");
  std::string base = d && *d ? d : "/tmp";
  return base + "/dedupv1-micro-" + std::to_string(getpid());
}

// A chunk index whose entries all live in the auxiliary index: nothing is
// committed, so nothing is written back.
struct AuxFixture {
  std::string dir = BenchDir() + "-aux";
  std::unique_ptr<ChunkIndex> index;
  std::vector<Fingerprint> keys;
  AuxFixture() {
    std::filesystem::create_directories(dir);
    ChunkIndexOptions o;
    o.table.path = dir + "/chunk-index";
    o.table.size_bytes = bench::TableBytesFor(1 << 20, 4096, 20, 0.6);  // PutNew counts against capacity
    o.aux_soft_limit = 4 << 20;
    o.aux_hard_limit = 8 << 20;
    Status s = ChunkIndex::Open(o, Env::Default(), [](ContainerId) { return false; }, &index);
    if (!s.ok()) Die("chunk index", s);
    keys = RandomFingerprints(1 << 20, 31);
    for (size_t i = 0; i < keys.size(); i++) {
      s = index->PutNew(keys[i], 1 + i / 500);
      if (!s.ok()) Die("PutNew", s);
    }
  }
  ~AuxFixture() {
    index.reset();
    std::filesystem::remove_all(dir);
  }
};
AuxFixture& Aux() {
  static AuxFixture f;
  return f;
}

void BM_IndexAux(benchmark::State& state) {
  AuxFixture& f = Aux();
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  ChunkIndexEntry e;
  for (auto _ : state) {
    Status s = f.index->Lookup(f.keys[i % f.keys.size()], &e);
    if (!s.ok()) state.SkipWithError("lookup failed");
    i++;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_IndexAux)->Name("IndexAux/hit")->Threads(1)->Threads(2)->UseRealTime();

// The on-disk table, bulk-loaded with synthetic fingerprints
// (bench/synthetic_index.h), behind a ChunkIndex with an empty auxiliary index.
struct TableFixture {
  std::string dir = BenchDir() + "-table";
  std::string path = dir + "/chunk-index";
  uint64_t entries = 0;
  uint64_t table_bytes = 0;
  double build_seconds = 0;
  std::unique_ptr<ChunkIndex> index;
  std::vector<Fingerprint> keys;  // one per distinct bucket, random order
  std::atomic<uint64_t> cursor{0};

  TableFixture() {
    std::filesystem::create_directories(dir);
    const uint64_t want = Knob("DEDUPV1_MICRO_INDEX_ENTRIES", 4 << 20);
    const double fill = 0.6;
    DiskHashTableOptions t;
    t.path = path;
    t.size_bytes = bench::TableBytesFor(want, t.page_size, t.key_size, fill);
    auto start = std::chrono::steady_clock::now();
    {
      std::unique_ptr<DiskHashTable> table;
      Status s = DiskHashTable::Open(t, Env::Default(), &table);
      if (!s.ok()) Die("table", s);
      bench::SyntheticIndex gen(table->bucket_count(), static_cast<double>(want) / table->bucket_count(), t.key_size,
                                41);
      s = gen.Load(table.get(), 4096, nullptr);
      if (!s.ok()) Die("loading the table", s);
      entries = table->entry_count();
      keys = gen.KeysIn(gen.DistinctBuckets(1 << 16, 42), 43);
    }
    build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ChunkIndexOptions o;
    o.table = t;
    Status s = ChunkIndex::Open(o, Env::Default(), [](ContainerId) { return true; }, &index);
    if (!s.ok()) Die("chunk index", s);
    table_bytes = t.size_bytes;
  }
  ~TableFixture() {
    index.reset();
    std::filesystem::remove_all(dir);
  }

  // Evicts the table's pages from the page cache. The pages are clean (Apply
  // syncs), so DONTNEED drops them; this is a hint, not file I/O, hence the
  // plain descriptor instead of Env.
  void DropCache() const {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
};
TableFixture& Table() {
  static TableFixture f;
  return f;
}

void SetupCold(const benchmark::State&) {
  Table().DropCache();
  Table().cursor = 0;
}
void SetupWarm(const benchmark::State&) {
  TableFixture& f = Table();
  ChunkIndexEntry e;
  for (const auto& k : f.keys) (void)f.index->Lookup(k, &e);
  f.cursor = 0;
}

void BM_IndexTable(benchmark::State& state) {
  TableFixture& f = Table();
  ChunkIndexEntry e;
  uint64_t found = 0;
  for (auto _ : state) {
    uint64_t i = f.cursor.fetch_add(1, std::memory_order_relaxed);
    Status s = f.index->Lookup(f.keys[i % f.keys.size()], &e);
    found += s.ok();
  }
  if (found != static_cast<uint64_t>(state.iterations())) state.SkipWithError("a synthetic key was not found");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  // Facts, not sums: the same value from every thread.
  state.counters["table_entries"] = benchmark::Counter(static_cast<double>(f.entries), benchmark::Counter::kAvgThreads);
  state.counters["table_mb"] =
      benchmark::Counter(static_cast<double>(f.table_bytes) / 1e6, benchmark::Counter::kAvgThreads);
}
// Cold: a fixed number of lookups per run (4096, whatever the thread count),
// each of a different page, at most ~8% of the table's pages: Linux reads
// ahead on a miss only when the pages just before it are cached, which stays
// rare at that coverage, so each lookup reads one page from the disk. Three
// runs, each after a drop; the summary takes the median.
BENCHMARK(BM_IndexTable)->Name("IndexTable/cold")->Setup(SetupCold)->UseRealTime()
    ->Threads(1)->Iterations(4096)->Repetitions(3);
BENCHMARK(BM_IndexTable)->Name("IndexTable/cold")->Setup(SetupCold)->UseRealTime()
    ->Threads(2)->Iterations(2048)->Repetitions(3);
BENCHMARK(BM_IndexTable)->Name("IndexTable/cold")->Setup(SetupCold)->UseRealTime()
    ->Threads(4)->Iterations(1024)->Repetitions(3);
BENCHMARK(BM_IndexTable)->Name("IndexTable/cold")->Setup(SetupCold)->UseRealTime()
    ->Threads(8)->Iterations(512)->Repetitions(3);
BENCHMARK(BM_IndexTable)->Name("IndexTable/warm")->Setup(SetupWarm)->UseRealTime()->Threads(1)->Threads(2);

// --- containers -------------------------------------------------------------------

struct ContainerData {
  std::vector<uint8_t> bytes;
  std::vector<Fingerprint> fps;  // one per 8 KiB chunk
};
const ContainerData& DataFor(bool text) {
  auto make = [](bool t) {
    ContainerData d;
    d.bytes = t ? TextData(4 << 20, 51) : RandomData(4 << 20, 52);
    for (size_t off = 0; off + kChunk <= d.bytes.size(); off += kChunk) {
      Fingerprint fp;
      ComputeFingerprint(FingerprintType::kSha1, d.bytes.data() + off, kChunk, &fp);
      d.fps.push_back(fp);
    }
    return d;
  };
  static const ContainerData random = make(false), textual = make(true);
  return text ? textual : random;
}

// Fills a 4 MiB container; returns the raw bytes added.
size_t Fill(Container* c, const ContainerData& d, Compression comp) {
  size_t raw = 0;
  for (size_t i = 0; i < d.fps.size(); i++) {
    if (!c->Add(d.fps[i], d.bytes.data() + i * kChunk, kChunk, comp)) break;
    raw += kChunk;
  }
  return raw;
}

void BM_ContainerPack(benchmark::State& state, Compression comp, bool text) {
  const ContainerData& d = DataFor(text);
  std::string out;
  size_t raw = 0, stored = 0;
  for (auto _ : state) {
    Container c(1, Container::kDefaultCapacity, FingerprintType::kSha1);
    raw = Fill(&c, d, comp);
    Status s = c.Serialize(&out);
    if (!s.ok()) state.SkipWithError("serialize failed");
    stored = c.data_size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * raw));
  state.counters["compression_ratio"] = static_cast<double>(raw) / static_cast<double>(stored);
}

void BM_ContainerUnpack(benchmark::State& state, Compression comp, bool text) {
  const ContainerData& d = DataFor(text);
  Container c(1, Container::kDefaultCapacity, FingerprintType::kSha1);
  const size_t raw = Fill(&c, d, comp);
  std::string bytes, chunk;
  Status s = c.Serialize(&bytes);
  if (!s.ok()) Die("serialize", s);
  const size_t n = c.item_count();
  for (auto _ : state) {
    std::unique_ptr<Container> parsed;
    s = Container::Parse(1, bytes, &parsed);
    if (!s.ok()) state.SkipWithError("parse failed");
    for (size_t i = 0; i < n && s.ok(); i++) {
      s = parsed->ReadChunk(d.fps[i], &chunk);
      if (!s.ok()) state.SkipWithError("read failed");
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * raw));
}

void RegisterContainerBenchmarks() {
  for (Compression comp : {Compression::kNone, Compression::kZlib, Compression::kBzip2}) {
    for (bool text : {false, true}) {
      std::string suffix = std::string(CompressionName(comp)) + (text ? "/text" : "/random");
      benchmark::RegisterBenchmark(("ContainerPack/" + suffix).c_str(),
                                   [comp, text](benchmark::State& st) { BM_ContainerPack(st, comp, text); });
      benchmark::RegisterBenchmark(("ContainerUnpack/" + suffix).c_str(),
                                   [comp, text](benchmark::State& st) { BM_ContainerUnpack(st, comp, text); });
    }
  }
}

// Machine facts next to the numbers (the JSON "context").
void AddMachineContext() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      benchmark::AddCustomContext("cpu_model", line.substr(line.find(':') + 2));
      break;
    }
  }
  benchmark::AddCustomContext("nproc", std::to_string(sysconf(_SC_NPROCESSORS_ONLN)));
  benchmark::AddCustomContext("cold_cache_method",
                              "posix_fadvise(POSIX_FADV_DONTNEED) on the table file before each run");
}

}  // namespace
}  // namespace dedupv1

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  dedupv1::RegisterContainerBenchmarks();
  dedupv1::AddMachineContext();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

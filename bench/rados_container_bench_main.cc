// dedupv1_rados_container_bench: how fast the "rados" storage backend
// writes 4 MiB containers, next to `rados bench` 4 MiB writes in the same run
// on the same cluster (issue 14: container writes >= 0.8x of rados bench).
//
//   dedupv1_rados_container_bench --conf CEPH_CONF [--pool dedupv1-data]
//       [--containers 48] [--threads 1,2,4,8,16] [--bench-seconds 10]
//
// Three figures per thread count T:
//   rados bench   `rados bench write -t 16 --max-objects N`, 4 MiB objects
//   store.Put     T threads calling RadosContainerStore::Put on 4 MiB blobs
//   chunk store   a ChunkStore with writer_threads = T fed 8 KiB chunks from
//                 one thread until N containers are full; time to Flush
// Every run uses a RADOS namespace of its own and removes what it wrote, so
// the cluster (memstore on the dev cluster) is left as it was. Speed is
// measured here, never in tests.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chunkstore/chunk_store.h"
#include "chunkstore/rados_container_store.h"
#include "chunkstore/storage_backend_registry.h"
#include "core/base/env.h"
#include "core/base/fingerprint.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {
namespace {

constexpr size_t kObject = 4 << 20;
constexpr size_t kChunk = 8192;

struct Args {
  std::string conf;
  std::string pool = "dedupv1-data";
  int containers = 48;
  std::vector<int> threads = {1, 2, 4, 8, 16};
  int bench_seconds = 10;
};

void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "dedupv1_rados_container_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string Namespace(const std::string& what) {
  static int n = 0;
  return "bench-" + what + "-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

RadosOptions Rados(const Args& args, const std::string& ns) {
  RadosOptions o;
  o.conf_file = args.conf;
  o.data_pool = args.pool;
  o.store = ns;
  return o;
}

// `rados bench` MB/s (its "Bandwidth (MB/sec)" line; MB = 2^20 bytes).
double RadosBench(const Args& args) {
  const std::string ns = Namespace("rados");
  const std::string cmd = "rados -c '" + args.conf + "' -p '" + args.pool + "' -N '" + ns + "' bench " +
                          std::to_string(args.bench_seconds) + " write -t 16 --max-objects " +
                          std::to_string(args.containers) + " --run-name " + ns + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) Die("rados bench", Status::IOError("cannot run: " + cmd));
  char line[512];
  double mbps = -1;
  while (std::fgets(line, sizeof(line), p)) {
    if (std::strncmp(line, "Bandwidth (MB/sec):", 19) == 0) mbps = std::atof(line + 19);
  }
  if (pclose(p) != 0 || mbps < 0) Die("rados bench", Status::IOError("failed: " + cmd));
  return mbps;
}

// Removes every container of |store|.
void RemoveAll(ContainerStore* store) {
  std::vector<ContainerId> ids;
  Status s = store->List(&ids);
  if (!s.ok()) Die("list", s);
  for (ContainerId id : ids) {
    s = store->Delete(id);
    if (!s.ok()) Die("delete", s);
  }
}

// MB/s of |threads| threads putting |containers| 4 MiB blobs.
double StorePut(const Args& args, int threads) {
  std::shared_ptr<RadosCluster> cluster;
  Status s = RadosCluster::Shared(Rados(args, Namespace("put")), &cluster);
  if (!s.ok()) Die("connect", s);
  RadosContainerStore store(cluster);
  const std::string blob(kObject, 'x');
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; t++) {
    workers.emplace_back([&] {
      for (int id = next++; id < args.containers; id = next++) {
        Status ps = store.Put(static_cast<ContainerId>(id + 1), blob);
        if (!ps.ok()) {
          std::fprintf(stderr, "put: %s\n", ps.ToString().c_str());
          failed = true;
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  const double secs = Seconds(start);
  if (failed) std::exit(1);
  RemoveAll(&store);
  return args.containers * (kObject / 1048576.0) / secs;
}

// MB/s of container bytes a ChunkStore with |threads| writer threads puts
// while one thread feeds it 8 KiB chunks; also the number of RADOS writes.
double ChunkStoreWrite(const Args& args, int threads, uint64_t* writes) {
  ChunkStoreOptions o;
  o.backend = "rados";
  o.dir = "/tmp/" + Namespace("catalog");
  o.rados = Rados(args, Namespace("cs"));
  o.container_size = kObject;
  o.writer_threads = threads;
  o.open_containers = 4;
  o.commit_timeout_ms = 600000;
  // Chunks made and hashed before the clock starts: the figure is the store's.
  const size_t per_container = kObject / (kChunk + 64);
  const size_t n = per_container * args.containers;
  std::vector<uint8_t> data(kChunk * 64);
  for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  std::vector<std::vector<uint8_t>> chunks(n);
  std::vector<Fingerprint> fps(n);
  for (size_t i = 0; i < n; i++) {
    const uint8_t* base = data.data() + (i % 64) * kChunk;
    chunks[i].assign(base, base + kChunk);
    std::memcpy(chunks[i].data(), &i, sizeof(i));
    ComputeFingerprint(FingerprintType::kSha1, chunks[i].data(), kChunk, &fps[i]);
  }
  std::unique_ptr<ChunkStore> cs;
  Status s = ChunkStore::Open(o, Env::Default(), &cs);
  if (!s.ok()) Die("open chunk store", s);
  std::shared_ptr<RadosCluster> cluster;
  s = RadosCluster::Shared(o.rados, &cluster);
  if (!s.ok()) Die("connect", s);
  const int w = static_cast<int>(RadosOpKind::kWrite);
  const RadosStats before = cluster->stats();
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; i++) {
    ContainerId id;
    s = cs->StoreChunk(fps[i], chunks[i].data(), kChunk, 0, &id);
    if (!s.ok()) Die("store chunk", s);
  }
  s = cs->Flush();
  if (!s.ok()) Die("flush", s);
  const double secs = Seconds(start);
  const RadosStats after = cluster->stats();
  *writes = after.kinds[w].ops - before.kinds[w].ops;
  const double mb = (after.kinds[w].bytes - before.kinds[w].bytes) / 1048576.0;
  s = cs->Close();
  if (!s.ok()) Die("close", s);
  cs.reset();
  StorageBackend backend;
  s = OpenStorageBackend(o, Env::Default(), StorageOpenMode::kExisting, &backend);
  if (!s.ok()) Die("reopen", s);
  RemoveAll(backend.containers.get());
  cluster->data().remove(kRadosStoreMarkerObject);
  std::string rm = "rm -rf '" + o.dir + "'";
  if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "cannot remove %s\n", o.dir.c_str());
  return mb / secs;
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i++) {
    const std::string k = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) Die("arguments", Status::InvalidArgument(k + " needs a value"));
    i++;
    if (k == "--conf") {
      a.conf = v;
    } else if (k == "--pool") {
      a.pool = v;
    } else if (k == "--containers") {
      a.containers = std::atoi(v);
    } else if (k == "--bench-seconds") {
      a.bench_seconds = std::atoi(v);
    } else if (k == "--threads") {
      a.threads.clear();
      for (const char* p = v; *p;) {
        a.threads.push_back(std::atoi(p));
        while (*p && *p != ',') p++;
        if (*p == ',') p++;
      }
    } else {
      Die("arguments", Status::InvalidArgument("unknown option " + k));
    }
  }
  if (a.conf.empty()) Die("arguments", Status::InvalidArgument("--conf CEPH_CONF is required"));
  return a;
}

}  // namespace
}  // namespace dedupv1

int main(int argc, char** argv) {
  using namespace dedupv1;
  const Args args = Parse(argc, argv);
  const double bench = RadosBench(args);
  std::printf("rados bench write -t 16, 4 MiB objects, %d objects: %.1f MB/s\n", args.containers, bench);
  std::printf("%8s %14s %8s %18s %8s %14s\n", "threads", "store.Put MB/s", "ratio", "chunk store MB/s", "ratio",
              "RADOS writes");
  for (int t : args.threads) {
    const double put = StorePut(args, t);
    uint64_t writes = 0;
    const double cs = ChunkStoreWrite(args, t, &writes);
    std::printf("%8d %14.1f %8.2f %18.1f %8.2f %14llu\n", t, put, put / bench, cs, cs / bench,
                static_cast<unsigned long long>(writes));
    std::fflush(stdout);
  }
  // The same rados bench again: the cluster's figure can drift in a run.
  std::printf("rados bench again: %.1f MB/s\n", RadosBench(args));
  return 0;
}

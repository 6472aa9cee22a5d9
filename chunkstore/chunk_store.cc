// ChunkStore: opening (backend, catalog, threads), closing and statistics.
// The other jobs are in the chunk_store_*.cc files (chunk_store.h lists them).
#include "chunkstore/chunk_store.h"

#include <algorithm>
#include <limits>

#include "core/base/thread_name.h"

namespace dedupv1 {
namespace {

Status ValidateOptions(const ChunkStoreOptions& o) {
  if (o.dir.empty()) return Status::InvalidArgument("chunk store: no container directory given");
  if (Container::MaxChunkSize(o.container_size, o.fp_type) < 512 ||
      o.container_size > std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidArgument("chunk store: container size " +
                                   std::to_string(o.container_size) + " is out of range");
  }
  if (o.open_containers < 1) {
    return Status::InvalidArgument("chunk store: open container count must be at least 1");
  }
  if (o.writer_threads < 1) {
    return Status::InvalidArgument("chunk store: writer thread count must be at least 1");
  }
  if (o.commit_timeout_ms < 1) {
    return Status::InvalidArgument("chunk store: commit timeout must be at least 1 ms");
  }
  if (!IsValidCompression(static_cast<uint8_t>(o.compression))) {
    return Status::InvalidArgument("chunk store: unknown compression type");
  }
  if (!IsStorageBackend(o.backend)) {
    return Status::InvalidArgument("chunk store: unknown backend '" + o.backend + "' (known: " +
                                   StorageBackendNameList() + ")");
  }
  return Status::OK();
}

}  // namespace

Status ChunkStore::Open(const ChunkStoreOptions& options, Env* env, std::unique_ptr<ChunkStore>* out) {
  DEDUPV1_RETURN_IF_ERROR(ValidateOptions(options));
  StorageBackend backend;
  DEDUPV1_RETURN_IF_ERROR(OpenStorageBackend(options, env, StorageOpenMode::kCreate, &backend));
  return Open(options, env, std::move(backend), out);
}

Status ChunkStore::Open(const ChunkStoreOptions& options, Env* env, std::unique_ptr<ContainerStore> store,
                        std::unique_ptr<ChunkStore>* out) {
  DEDUPV1_RETURN_IF_ERROR(ValidateOptions(options));
  StorageBackend backend;
  DEDUPV1_RETURN_IF_ERROR(OpenStorageBackend(options, env, StorageOpenMode::kCreate, &backend));
  backend.containers = std::move(store);
  return Open(options, env, std::move(backend), out);
}

Status ChunkStore::Open(const ChunkStoreOptions& options, Env* env, StorageBackend backend,
                        std::unique_ptr<ChunkStore>* out) {
  DEDUPV1_RETURN_IF_ERROR(ValidateOptions(options));
  if (!backend.containers || !backend.catalog) {
    return Status::InvalidArgument("chunk store: the storage backend has no container store or no catalog");
  }
  std::unique_ptr<ChunkStore> cs(new ChunkStore(options, env, std::move(backend)));
  DEDUPV1_RETURN_IF_ERROR(cs->Init());
  *out = std::move(cs);
  return Status::OK();
}

ChunkStore::ChunkStore(const ChunkStoreOptions& options, Env* env, StorageBackend backend)
    : options_(options),
      env_(env),
      store_(std::move(backend.containers)),
      catalog_(std::move(backend.catalog)),
      read_cache_(options.read_cache_containers),
      metadata_cache_(kMetadataCacheContainers),
      foreign_(backend.id_base),
      ids_(catalog_.get(), backend.id_base),
      aliases_(catalog_.get(), store_.get()),
      dead_marks_(catalog_.get()),
      summaries_(catalog_.get()) {}

ChunkStore::~ChunkStore() { Close(); }

Status ChunkStore::Init() {
  std::vector<ContainerId> ids;
  DEDUPV1_RETURN_IF_ERROR(store_->List(&ids));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  DEDUPV1_RETURN_IF_ERROR(catalog_->CheckComplete(store_.get(), ids, /*ids_handed_out=*/false));
  DEDUPV1_RETURN_IF_ERROR(aliases_.Load(&ids));
  DEDUPV1_RETURN_IF_ERROR(
      dead_marks_.Load(ids, [this](ContainerId id) { return aliases_.Resolve(id) != id; }));
  summaries_.Load(ids);

  std::lock_guard<std::mutex> l(mu_);
  DEDUPV1_RETURN_IF_ERROR(ids_.Load(ids.empty() ? kNoContainer : ids.back()));
  committed_at_open_ = std::move(ids);
  open_.resize(static_cast<size_t>(options_.open_containers));
  last_retry_ = std::chrono::steady_clock::now();
  for (int i = 0; i < options_.writer_threads; i++) {
    writers_.emplace_back([this] {
      NameThisThread("dd-cs-writer");
      WriterLoop();
    });
  }
  timer_ = std::thread([this] {
    NameThisThread("dd-cs-timer");
    TimerLoop();
  });
  return Status::OK();
}

void ChunkStore::SetCommitListener(CommitListener listener) {
  std::lock_guard<std::mutex> l(mu_);
  listener_ = std::move(listener);
}

void ChunkStore::SetOpenListener(OpenListener listener) {
  std::lock_guard<std::mutex> l(mu_);
  open_listener_ = std::move(listener);
}

void ChunkStore::SetCommitFailureListener(CommitFailureListener listener) {
  std::lock_guard<std::mutex> l(mu_);
  failure_listener_ = std::move(listener);
}

Status ChunkStore::Close() {
  std::lock_guard<std::mutex> close_lock(close_mu_);
  if (closed_) return close_status_;
  Status s;
  {
    std::unique_lock<std::mutex> l(mu_);
    closing_ = true;
    done_cv_.notify_all();  // StoreChunk calls waiting for back-pressure return Aborted
    s = FlushLocked(&l);
    stop_threads_ = true;
    work_cv_.notify_all();
    timer_cv_.notify_all();
  }
  for (std::thread& t : writers_) t.join();
  if (timer_.joinable()) timer_.join();
  writers_.clear();
  closed_ = true;
  close_status_ = s;
  return s;
}

ChunkStoreStats ChunkStore::stats() const {
  ChunkStoreStats st;
  st.chunks_stored = chunks_stored_.load(std::memory_order_relaxed);
  st.bytes_raw = bytes_raw_.load(std::memory_order_relaxed);
  st.bytes_stored = bytes_stored_.load(std::memory_order_relaxed);
  st.containers_committed = containers_committed_.load(std::memory_order_relaxed);
  st.containers_failed = containers_failed_.load(std::memory_order_relaxed);
  st.commit_retries = commit_retries_.load(std::memory_order_relaxed);
  st.container_reads = container_reads_.load(std::memory_order_relaxed);
  st.metadata_reads = metadata_reads_.load(std::memory_order_relaxed);
  st.chunk_reads = chunk_reads_.load(std::memory_order_relaxed);
  st.range_reads = range_reads_.load(std::memory_order_relaxed);
  st.chunks_read_in_place = chunks_read_in_place_.load(std::memory_order_relaxed);
  st.bytes_read = bytes_read_.load(std::memory_order_relaxed);
  st.commit_latency_ms_total = commit_latency_ms_total_.load(std::memory_order_relaxed);
  st.read_cache_hits = read_cache_.hits();
  st.read_cache_misses = read_cache_.misses();
  st.read_cache_ghost_hits = read_cache_.ghost_hits();
  st.read_cache_capacity = read_cache_.capacity();
  st.dead_chunks_marked = dead_marks_.marked();
  st.dead_marks_unpersisted = dead_marks_.unpersisted();
  st.dead_marks_loaded = dead_marks_.loaded();
  st.summaries_loaded = summaries_.loaded();
  st.summary_append_failures = summaries_.append_failures();
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& c : open_) {
    if (c) st.open_containers++;
  }
  st.containers_in_flight = pending_.size();
  return st;
}

ContainerId ChunkStore::last_allocated_id() const {
  std::lock_guard<std::mutex> l(mu_);
  return ids_.next() - 1;
}

Status ChunkStore::ListCommitted(std::vector<ContainerId>* ids) {
  DEDUPV1_RETURN_IF_ERROR(store_->List(ids));
  std::sort(ids->begin(), ids->end());
  // A merge source whose deletion failed is superseded: not listed (Open
  // deletes it).
  ids->erase(std::remove_if(ids->begin(), ids->end(), [this](ContainerId id) { return aliases_.Resolve(id) != id; }),
             ids->end());
  return Status::OK();
}

Status ChunkStore::UsedBytes(uint64_t* bytes) { return store_->UsedBytes(bytes); }

}  // namespace dedupv1

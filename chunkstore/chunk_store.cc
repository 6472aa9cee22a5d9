#include "chunkstore/chunk_store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "chunkstore/local_container_store.h"
#include "core/coding.h"
#include "core/crc_text.h"

namespace dedupv1 {
namespace {

// Ids reserved per write of the high-water mark: one small synced file write
// per 1024 containers (4 GiB of data at the default size).
constexpr uint64_t kIdBatch = 1024;
// The mark file is the next free id (u64) followed by its CRC32C.
constexpr size_t kIdMarkSize = 12;

std::string Name(ContainerId id) { return "container " + std::to_string(id); }

ContainerSummary Summarize(const Container& c) {
  ContainerSummary s;
  for (const Fingerprint& fp : c.Fingerprints()) {
    s.chunks++;
    s.footprint_bytes += c.FootprintOf(fp);
  }
  s.serialized_bytes = c.serialized_size();
  return s;
}

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
  return Status::OK();
}

// A failed commit becomes the sticky error; it names the container and, for
// a full store, says so plainly.
Status CommitError(ContainerId id, const Status& s) {
  if (s.IsNoSpace()) {
    return Status::NoSpace("container store full: cannot commit " + Name(id) + ": " + s.message());
  }
  return s.WithContext("cannot commit " + Name(id));
}

// How often the timer looks for expired containers, and how often it retries
// failed commits.
std::chrono::milliseconds TimerTick(uint64_t timeout_ms) {
  return std::chrono::milliseconds(std::clamp<uint64_t>(timeout_ms / 2, 10, 100));
}
std::chrono::milliseconds RetryInterval(uint64_t timeout_ms) {
  return std::chrono::milliseconds(std::clamp<uint64_t>(timeout_ms, 100, 1000));
}

}  // namespace

Status ChunkStore::Open(const ChunkStoreOptions& options, Env* env,
                        std::unique_ptr<ChunkStore>* out) {
  DEDUPV1_RETURN_IF_ERROR(ValidateOptions(options));
  std::unique_ptr<LocalContainerStore> store;
  DEDUPV1_RETURN_IF_ERROR(LocalContainerStore::Open(env, options.dir, &store));
  return Open(options, env, std::move(store), out);
}

Status ChunkStore::Open(const ChunkStoreOptions& options, Env* env,
                        std::unique_ptr<ContainerStore> store, std::unique_ptr<ChunkStore>* out) {
  DEDUPV1_RETURN_IF_ERROR(ValidateOptions(options));
  DEDUPV1_RETURN_IF_ERROR(env->CreateDirs(options.dir));
  std::unique_ptr<ChunkStore> cs(new ChunkStore(options, env, std::move(store)));
  DEDUPV1_RETURN_IF_ERROR(cs->Init());
  *out = std::move(cs);
  return Status::OK();
}

ChunkStore::ChunkStore(const ChunkStoreOptions& options, Env* env,
                       std::unique_ptr<ContainerStore> store)
    : options_(options),
      env_(env),
      store_(std::move(store)),
      id_mark_path_(JoinPath(options.dir, kContainerIdFileName)),
      read_cache_(options.read_cache_containers),
      metadata_cache_(kMetadataCacheContainers),
      alias_path_(JoinPath(options.dir, kContainerAliasFileName)),
      dead_file_(env, JoinPath(options.dir, kDeadChunkFileName), FingerprintSize(options.fp_type)),
      summary_file_(env, JoinPath(options.dir, kContainerSummaryFileName)) {}

ChunkStore::~ChunkStore() { Close(); }

Status ChunkStore::CheckCatalog(Env* env, const std::string& dir, ContainerStore* store,
                                const std::vector<ContainerId>& ids, bool ids_handed_out) {
  const std::string id_mark = JoinPath(dir, kContainerIdFileName);
  if (!env->FileExists(id_mark) && (!ids.empty() || ids_handed_out)) {
    return Status::Corruption(id_mark + " is missing, but container ids were handed out (" +
                              std::to_string(ids.size()) + " containers are stored): without it new containers "
                              "could get ids that the indexes, the log or the checkpoint still name; restore it "
                              "from a backup of the data directory");
  }
  const std::string aliases = JoinPath(dir, kContainerAliasFileName);
  if (env->FileExists(aliases)) return Status::OK();
  for (ContainerId id : ids) {
    std::string head;
    uint32_t count = 0;
    // A container whose header cannot be read is damaged anyway: its reads
    // fail whatever the alias file says, so it does not decide.
    if (!store->GetHead(id, Container::kHeaderSize, &head).ok() ||
        !Container::HeaderAliasCount(id, head, &count).ok() || count == 0) {
      continue;
    }
    return Status::Corruption(aliases + " is missing, but " + Name(id) + " was merged by garbage collection "
                              "and answers to " + std::to_string(count) + " older ids that block mappings and "
                              "chunk-index entries may name: without the file they name nothing; restore it "
                              "from a backup of the data directory");
  }
  return Status::OK();
}

Status ChunkStore::Init() {
  std::vector<ContainerId> ids;
  DEDUPV1_RETURN_IF_ERROR(store_->List(&ids));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  DEDUPV1_RETURN_IF_ERROR(CheckCatalog(env_, options_.dir, store_.get(), ids, /*ids_handed_out=*/false));
  DEDUPV1_RETURN_IF_ERROR(LoadAliases(&ids));
  DEDUPV1_RETURN_IF_ERROR(LoadDeadMarks(ids));
  LoadSummaries(ids);

  uint64_t mark = 1;
  if (env_->FileExists(id_mark_path_)) {
    std::string buf;
    DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env_, id_mark_path_, &buf));
    const uint8_t* p = reinterpret_cast<const uint8_t*>(buf.data());
    if (buf.size() != kIdMarkSize || Crc32c(p, 8) != DecodeFixed32(p + 8)) {
      return Status::Corruption("container id mark file " + id_mark_path_ + " is corrupt");
    }
    mark = DecodeFixed64(p);
  }
  // Ids below the mark may have been used by a run that crashed before
  // committing them, so the new run starts above the whole reserved batch.
  ContainerId next = std::max<ContainerId>(mark, 1);
  if (!ids.empty()) next = std::max(next, ids.back() + 1);

  std::lock_guard<std::mutex> l(mu_);
  committed_at_open_ = std::move(ids);
  session_first_id_ = next;
  next_id_ = next;
  reserved_until_ = next;
  open_.resize(static_cast<size_t>(options_.open_containers));
  last_retry_ = std::chrono::steady_clock::now();
  for (int i = 0; i < options_.writer_threads; i++) {
    writers_.emplace_back([this] { WriterLoop(); });
  }
  timer_ = std::thread([this] { TimerLoop(); });
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

Status ChunkStore::AllocateIdLocked(ContainerId* id) {
  if (next_id_ >= reserved_until_) {
    // Rare (once per batch), small and synced: done under mu_ so ids stay
    // strictly ordered with their reservation.
    const uint64_t mark = next_id_ + kIdBatch;
    std::string buf;
    PutFixed64(&buf, mark);
    PutFixed32(&buf, Crc32c(buf.data(), 8));
    Status s = WriteFileAtomically(env_, id_mark_path_, buf);
    if (!s.ok()) {
      if (s.IsNoSpace()) {
        return Status::NoSpace("cannot reserve container ids in " + id_mark_path_ + ": " +
                               s.message());
      }
      return s.WithContext("cannot reserve container ids in " + id_mark_path_);
    }
    reserved_until_ = mark;
  }
  *id = next_id_++;
  return Status::OK();
}

void ChunkStore::HandOffLocked(size_t slot) {
  std::shared_ptr<Container> c = std::move(open_[slot]);
  if (!c) return;
  const ContainerId id = c->id();
  Pending p;
  p.container = std::move(c);
  p.state = CommitState::kQueued;
  pending_.emplace(id, std::move(p));
  queue_.push_back(id);
  work_cv_.notify_one();
}

void ChunkStore::RequeueFailedLocked() {
  std::vector<ContainerId> failed;
  for (auto& [id, p] : pending_) {
    if (p.state == CommitState::kFailed) failed.push_back(id);
  }
  std::sort(failed.begin(), failed.end());
  for (ContainerId id : failed) {
    pending_[id].state = CommitState::kQueued;
    queue_.push_back(id);
    commit_retries_.fetch_add(1, std::memory_order_relaxed);
  }
  last_retry_ = std::chrono::steady_clock::now();
  if (!failed.empty()) work_cv_.notify_all();
}

Status ChunkStore::StoreChunk(const Fingerprint& fp, const uint8_t* data, size_t n,
                              uint64_t stream_hint, ContainerId* id) {
  if (fp.size != FingerprintSize(options_.fp_type)) {
    return Status::InvalidArgument("chunk store: fingerprint " + fp.ToHex() + " has " +
                                   std::to_string(fp.size) + " bytes, expected " +
                                   std::to_string(FingerprintSize(options_.fp_type)));
  }
  if (n > Container::MaxChunkSize(options_.container_size, options_.fp_type)) {
    return Status::InvalidArgument("chunk store: chunk of " + std::to_string(n) +
                                   " bytes does not fit a container of " +
                                   std::to_string(options_.container_size) + " bytes");
  }
  // Compress before taking the lock: it is the expensive part.
  std::string compressed;
  std::string_view stored(reinterpret_cast<const char*>(data), n);
  Compression stored_as = Compression::kNone;
  if (options_.compression != Compression::kNone &&
      Compress(options_.compression, data, n, &compressed)) {
    stored = compressed;
    stored_as = options_.compression;
  }

  std::unique_lock<std::mutex> l(mu_);
  // Back-pressure: do not let unwritten containers pile up in memory.
  const size_t max_pending =
      2 * static_cast<size_t>(options_.writer_threads) + static_cast<size_t>(options_.open_containers);
  done_cv_.wait(l, [&] {
    return closing_ || failed_count_ > 0 || queue_.size() + committing_ < max_pending;
  });
  if (closing_) return Status::Aborted("chunk store is closed");
  if (failed_count_ > 0) return sticky_error_;

  const size_t slot = static_cast<size_t>(stream_hint % open_.size());
  std::shared_ptr<Container>& c = open_[slot];
  if (c) {
    const bool duplicate = c->Contains(fp);
    if (c->AddStored(fp, stored, n, stored_as)) {
      if (!duplicate) {
        chunks_stored_.fetch_add(1, std::memory_order_relaxed);
        bytes_raw_.fetch_add(n, std::memory_order_relaxed);
        bytes_stored_.fetch_add(stored.size(), std::memory_order_relaxed);
      }
      *id = c->id();
      return Status::OK();
    }
    HandOffLocked(slot);  // full
  }
  ContainerId new_id;
  DEDUPV1_RETURN_IF_ERROR(AllocateIdLocked(&new_id));
  auto fresh = std::make_shared<Container>(new_id, options_.container_size, options_.fp_type);
  if (!fresh->AddStored(fp, stored, n, stored_as)) {
    // Cannot happen: the size was checked against an empty container above.
    return Status::InvalidArgument("chunk store: chunk of " + std::to_string(n) +
                                   " bytes does not fit an empty container");
  }
  uncommitted_.insert(new_id);
  c = std::move(fresh);
  chunks_stored_.fetch_add(1, std::memory_order_relaxed);
  bytes_raw_.fetch_add(n, std::memory_order_relaxed);
  bytes_stored_.fetch_add(stored.size(), std::memory_order_relaxed);
  *id = new_id;
  OpenListener open_listener = open_listener_;
  l.unlock();
  if (open_listener) open_listener(new_id);
  return Status::OK();
}

std::shared_ptr<const Container> ChunkStore::FindUncommittedLocked(ContainerId id,
                                                                   bool* open) const {
  *open = false;
  if (uncommitted_.count(id) == 0 && pending_.count(id) == 0) return nullptr;
  for (const auto& c : open_) {
    if (c && c->id() == id) {
      *open = true;
      return c;
    }
  }
  auto it = pending_.find(id);
  if (it != pending_.end()) return it->second.container;
  return nullptr;
}

Status ChunkStore::LoadCommitted(ContainerId requested, std::shared_ptr<const Container>* container) {
  ContainerId id = Resolve(requested);
  std::shared_ptr<const Container> c = read_cache_.Lookup(id);
  if (c) {
    *container = std::move(c);
    return Status::OK();
  }
  container_reads_.fetch_add(1, std::memory_order_relaxed);
  std::string bytes;
  Status s = store_->Get(id, &bytes);
  if (s.IsNotFound()) {
    // A merge may have folded |id| into another container between Resolve
    // and Get (it switches the alias map before deleting the source).
    const ContainerId now = Resolve(requested);
    if (now != id) return LoadCommitted(requested, container);
  }
  DEDUPV1_RETURN_IF_ERROR(s);
  std::unique_ptr<Container> parsed;
  DEDUPV1_RETURN_IF_ERROR(Container::Parse(id, bytes, &parsed));
  c = std::shared_ptr<const Container>(std::move(parsed));
  read_cache_.Insert(id, c);
  *container = std::move(c);
  return Status::OK();
}

Status ChunkStore::ReadChunk(ContainerId id, const Fingerprint& fp, std::string* data) {
  if (id == kNoContainer || id == kZeroContainer) {
    return Status::InvalidArgument("chunk store: cannot read from pseudo container " +
                                   std::to_string(id));
  }
  std::shared_ptr<const Container> c;
  {
    std::lock_guard<std::mutex> l(mu_);
    bool open = false;
    c = FindUncommittedLocked(id, &open);
    // An open container is still being appended to: read it under the lock.
    if (c && open) return c->ReadChunk(fp, data);
  }
  if (c) return c->ReadChunk(fp, data);  // committing: still in memory
  const ContainerId resolved = Resolve(id);
  c = read_cache_.Lookup(resolved);
  if (c) return c->ReadChunk(fp, data);
  return ReadChunkFromStore(id, resolved, fp, data);
}

// A chunk is read alone, not with its whole container: backup data refers to
// old containers in no particular order, and loading 4 MiB for each 8 KiB
// chunk made restores crawl. Without the container's data CRC the chunk is
// verified by its fingerprint instead.
Status ChunkStore::ReadChunkFromStore(ContainerId requested, ContainerId id, const Fingerprint& fp,
                                      std::string* data) {
  std::shared_ptr<const Container> meta = metadata_cache_.Lookup(id);
  if (!meta) {
    std::string head;
    Status s = ReadHead(id, &head);
    if (s.IsNotFound() && Resolve(requested) != id) return ReadChunk(requested, fp, data);
    DEDUPV1_RETURN_IF_ERROR(s);
    std::unique_ptr<Container> parsed;
    DEDUPV1_RETURN_IF_ERROR(Container::ParseMetadataOnly(id, head, &parsed));
    meta = std::shared_ptr<const Container>(std::move(parsed));
    metadata_cache_.Insert(id, meta);
  }
  Container::ChunkLocation loc;
  DEDUPV1_RETURN_IF_ERROR(meta->Locate(fp, &loc));
  std::string stored;
  Status s = store_->GetRange(id, loc.offset, loc.stored_size, &stored);
  if (s.IsNotFound() && Resolve(requested) != id) return ReadChunk(requested, fp, data);
  DEDUPV1_RETURN_IF_ERROR(s);
  chunk_reads_.fetch_add(1, std::memory_order_relaxed);
  s = Decompress(loc.compression, reinterpret_cast<const uint8_t*>(stored.data()), stored.size(),
                 loc.raw_size, data);
  if (!s.ok()) return s.WithContext(Name(id) + ": chunk " + fp.ToHex());
  Fingerprint actual;
  ComputeFingerprint(options_.fp_type, reinterpret_cast<const uint8_t*>(data->data()), data->size(), &actual);
  if (actual != fp) {
    data->clear();
    return Status::Corruption(Name(id) + ": chunk " + fp.ToHex() +
                              " does not match its fingerprint (the container's data is damaged)");
  }
  return Status::OK();
}

Status ChunkStore::ReadHead(ContainerId id, std::string* head) {
  metadata_reads_.fetch_add(1, std::memory_order_relaxed);
  DEDUPV1_RETURN_IF_ERROR(store_->GetHead(id, kMetadataGuess, head));
  size_t meta_size = 0;
  DEDUPV1_RETURN_IF_ERROR(Container::MetadataSize(id, *head, &meta_size));
  if (meta_size > head->size() && head->size() == kMetadataGuess) {
    DEDUPV1_RETURN_IF_ERROR(store_->GetHead(id, meta_size, head));
  }
  return Status::OK();
}

Status ChunkStore::GetFingerprints(ContainerId requested, std::vector<Fingerprint>* fps) {
  if (requested == kNoContainer || requested == kZeroContainer) {
    return Status::InvalidArgument("chunk store: pseudo container " + std::to_string(requested) +
                                   " has no fingerprints");
  }
  std::shared_ptr<const Container> c;
  {
    std::lock_guard<std::mutex> l(mu_);
    bool open = false;
    c = FindUncommittedLocked(requested, &open);
    if (c && open) {
      *fps = c->Fingerprints();
      return Status::OK();
    }
  }
  const ContainerId id = Resolve(requested);
  if (!c) c = read_cache_.Lookup(id);
  if (c) {
    *fps = c->Fingerprints();
  } else {
    Status s = ReadMetadata(id, fps, nullptr, nullptr);
    if (s.IsNotFound() && Resolve(requested) != id) {
      // Merged into another container between Resolve and the read.
      return GetFingerprints(requested, fps);
    }
    DEDUPV1_RETURN_IF_ERROR(s);
  }
  RemoveDead(id, fps);
  return Status::OK();
}

Status ChunkStore::ReadMetadata(ContainerId id, std::vector<Fingerprint>* fps,
                                std::vector<size_t>* footprints, uint64_t* total) {
  // Only the metadata at the head of the container, not its chunk data, and
  // not into the read cache, whose entries serve reads.
  std::string head;
  DEDUPV1_RETURN_IF_ERROR(ReadHead(id, &head));
  return Container::ParseFingerprints(id, head, fps, footprints, total);
}

Status ChunkStore::GetFingerprintsVerified(ContainerId id, std::vector<Fingerprint>* fps) {
  if (id == kNoContainer || id == kZeroContainer) return GetFingerprints(id, fps);
  std::shared_ptr<const Container> c;
  {
    std::lock_guard<std::mutex> l(mu_);
    bool open = false;
    c = FindUncommittedLocked(id, &open);
    if (c && open) {
      *fps = c->Fingerprints();
      return Status::OK();
    }
  }
  if (!c) DEDUPV1_RETURN_IF_ERROR(LoadCommitted(id, &c));
  *fps = c->Fingerprints();
  RemoveDead(c->id(), fps);
  return Status::OK();
}

void ChunkStore::RemoveDead(ContainerId id, std::vector<Fingerprint>* fps) const {
  std::lock_guard<std::mutex> l(mu_);
  auto dead = dead_.find(id);
  if (dead == dead_.end()) return;
  fps->erase(std::remove_if(fps->begin(), fps->end(),
                            [&](const Fingerprint& fp) { return dead->second.count(fp) != 0; }),
             fps->end());
}

bool ChunkStore::IsCommitted(ContainerId requested) const {
  if (requested == kNoContainer || requested == kZeroContainer) return false;
  std::lock_guard<std::mutex> l(mu_);
  const ContainerId id = ResolveLocked(requested);
  if (id >= next_id_ || deleted_.count(id) != 0) return false;
  if (id < session_first_id_) {
    return std::binary_search(committed_at_open_.begin(), committed_at_open_.end(), id);
  }
  return uncommitted_.count(id) == 0;
}

void ChunkStore::WriterLoop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    work_cv_.wait(l, [this] { return !queue_.empty() || stop_threads_; });
    if (queue_.empty()) return;  // stop_threads_ and nothing left to write
    const ContainerId id = queue_.front();
    queue_.pop_front();
    Pending& p = pending_.at(id);
    p.state = CommitState::kCommitting;
    std::shared_ptr<const Container> c = p.container;
    const CommitFailureListener failure_listener = failure_listener_;
    committing_++;
    l.unlock();

    const auto start = std::chrono::steady_clock::now();
    Status s;
    {
      std::string bytes;
      s = c->Serialize(&bytes);
      if (s.ok()) s = store_->Put(id, bytes);
    }
    if (s.ok()) RecordSummary(id, Summarize(*c));
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    // Told before the failure is published: a Flush that returns the error
    // must find the failure already recorded (the commit-failed log event).
    if (!s.ok() && failure_listener) failure_listener(id, s);

    l.lock();
    Pending& done = pending_.at(id);  // only this thread changes a kCommitting entry
    if (s.ok()) {
      done.state = CommitState::kNotifying;
      uncommitted_.erase(id);
      if (done.has_failed) {
        done.has_failed = false;
        if (--failed_count_ == 0) sticky_error_ = Status::OK();
      }
      containers_committed_.fetch_add(1, std::memory_order_relaxed);
      commit_latency_ms_total_.fetch_add(static_cast<uint64_t>(ms), std::memory_order_relaxed);
      CommitListener listener = listener_;
      l.unlock();
      // The committed container is likely read soon (container-cache filter,
      // byte compare): keep it parsed in the cache.
      read_cache_.Insert(id, c);
      if (listener) listener(id, c->Fingerprints());
      l.lock();
      pending_.erase(id);
    } else {
      done.state = CommitState::kFailed;
      done.error = CommitError(id, s);
      if (!done.has_failed) {
        done.has_failed = true;
        failed_count_++;
      }
      sticky_error_ = done.error;
      containers_failed_.fetch_add(1, std::memory_order_relaxed);
    }
    committing_--;
    done_cv_.notify_all();
  }
}

void ChunkStore::TimerLoop() {
  const auto tick = TimerTick(options_.commit_timeout_ms);
  const auto timeout = std::chrono::milliseconds(options_.commit_timeout_ms);
  const auto retry_interval = RetryInterval(options_.commit_timeout_ms);
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_threads_) {
    timer_cv_.wait_for(l, tick);
    if (stop_threads_) break;
    const auto now = std::chrono::steady_clock::now();
    for (size_t slot = 0; slot < open_.size(); slot++) {
      if (open_[slot] && now - open_[slot]->created() >= timeout) HandOffLocked(slot);
    }
    if (failed_count_ > 0 && now - last_retry_ >= retry_interval) RequeueFailedLocked();
  }
}

Status ChunkStore::FlushLocked(std::unique_lock<std::mutex>* lock) {
  if (stop_threads_) {
    // Closed: nothing can be committed any more.
    return failed_count_ > 0 ? sticky_error_ : Status::OK();
  }
  for (size_t slot = 0; slot < open_.size(); slot++) HandOffLocked(slot);
  RequeueFailedLocked();
  std::vector<ContainerId> wait_for;
  wait_for.reserve(pending_.size());
  for (const auto& [id, p] : pending_) wait_for.push_back(id);
  std::sort(wait_for.begin(), wait_for.end());
  auto settled = [&] {
    for (ContainerId id : wait_for) {
      auto it = pending_.find(id);
      if (it != pending_.end() && it->second.state != CommitState::kFailed) return false;
    }
    return true;
  };
  done_cv_.wait(*lock, settled);
  for (ContainerId id : wait_for) {
    auto it = pending_.find(id);
    if (it != pending_.end()) return it->second.error;
  }
  return Status::OK();
}

Status ChunkStore::Flush() {
  std::unique_lock<std::mutex> l(mu_);
  return FlushLocked(&l);
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
  st.commit_latency_ms_total = commit_latency_ms_total_.load(std::memory_order_relaxed);
  st.read_cache_hits = read_cache_.hits();
  st.read_cache_misses = read_cache_.misses();
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& c : open_) {
    if (c) st.open_containers++;
  }
  st.containers_in_flight = pending_.size();
  st.dead_chunks_marked = dead_marks_;
  for (const auto& [id, fps] : dead_unpersisted_) {  // few: the marks since the last persist
    if (dead_.count(id) != 0) st.dead_marks_unpersisted += fps.size();
  }
  st.dead_marks_loaded = dead_marks_loaded_;
  st.summaries_loaded = summaries_loaded_;
  st.summary_append_failures = summary_append_failures_.load(std::memory_order_relaxed);
  return st;
}

ContainerId ChunkStore::last_allocated_id() const {
  std::lock_guard<std::mutex> l(mu_);
  return next_id_ - 1;
}

Status ChunkStore::ListCommitted(std::vector<ContainerId>* ids) {
  DEDUPV1_RETURN_IF_ERROR(store_->List(ids));
  std::sort(ids->begin(), ids->end());
  // A merge source whose deletion failed is superseded: not listed (Open
  // deletes it).
  std::lock_guard<std::mutex> l(mu_);
  ids->erase(std::remove_if(ids->begin(), ids->end(), [this](ContainerId id) { return ResolveLocked(id) != id; }),
             ids->end());
  return Status::OK();
}

// ---- Garbage collection support ----

ContainerId ChunkStore::ResolveLocked(ContainerId id) const {
  auto it = alias_.find(id);
  return it == alias_.end() ? id : it->second;
}

ContainerId ChunkStore::Resolve(ContainerId id) const {
  std::lock_guard<std::mutex> l(mu_);
  return ResolveLocked(id);
}

// The alias file: one line "merge TARGET SOURCE..." per record, then
// "crc HEX" (CRC32C of everything before that line). Written atomically.
Status ChunkStore::WriteAliasFile(const std::vector<AliasRecord>& records) {
  std::string text = "# dedupv1 container aliases: merge <target> <sources...>\n";
  for (const auto& r : records) {
    text += "merge " + std::to_string(r.target);
    for (ContainerId src : r.sources) text += " " + std::to_string(src);
    text += "\n";
  }
  Status s = WriteFileAtomically(env_, alias_path_, AppendCrcLine(std::move(text)));
  if (!s.ok()) return s.WithContext("write container alias file " + alias_path_);
  return Status::OK();
}

Status ChunkStore::LoadAliases(std::vector<ContainerId>* ids) {
  // Missing only in a store that never merged (CheckCatalog): written empty,
  // so that a later absence means the file was lost.
  if (!env_->FileExists(alias_path_)) return WriteAliasFile({});
  std::string text;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env_, alias_path_, &text));
  std::string body;
  bool had_crc = false;
  DEDUPV1_RETURN_IF_ERROR(StripCrcLine("container alias file " + alias_path_, text, true, &body, &had_crc));
  std::vector<AliasRecord> records;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t eol = body.find('\n', pos);
    if (eol == std::string::npos) eol = body.size();
    std::string line = body.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty() || line[0] == '#') continue;
    if (line.compare(0, 6, "merge ") != 0) {
      return Status::Corruption("container alias file " + alias_path_ + ": bad line '" + line + "'");
    }
    AliasRecord r;
    const char* p = line.c_str() + 6;
    char* end = nullptr;
    r.target = std::strtoull(p, &end, 10);
    for (p = end; *p != '\0'; p = end) {
      ContainerId src = std::strtoull(p, &end, 10);
      if (end == p) break;
      r.sources.push_back(src);
    }
    records.push_back(std::move(r));
  }
  std::sort(records.begin(), records.end(),
            [](const AliasRecord& a, const AliasRecord& b) { return a.target < b.target; });
  // A record counts only if its merged container was committed; later
  // merges override earlier ones (a merged container merged again).
  std::vector<AliasRecord> kept;
  std::unordered_set<ContainerId> superseded;
  for (auto& r : records) {
    if (!std::binary_search(ids->begin(), ids->end(), r.target)) continue;
    for (ContainerId src : r.sources) {
      alias_[src] = r.target;
      superseded.insert(src);
    }
    kept.push_back(std::move(r));
  }
  // Sources still stored: the merge committed but did not finish deleting.
  std::vector<ContainerId> live;
  for (ContainerId id : *ids) {
    if (superseded.count(id) == 0) {
      live.push_back(id);
      continue;
    }
    Status s = store_->Delete(id);
    if (!s.ok() && !s.IsNotFound()) return s.WithContext("delete superseded " + Name(id));
  }
  *ids = std::move(live);
  // Drop records that name a target that is itself superseded (a later merge
  // covers all its ids) or that never committed.
  std::vector<AliasRecord> pruned;
  for (auto& r : kept) {
    if (superseded.count(r.target) == 0) pruned.push_back(std::move(r));
  }
  const bool changed = pruned.size() != records.size();
  alias_records_ = std::move(pruned);
  if (changed) DEDUPV1_RETURN_IF_ERROR(WriteAliasFile(alias_records_));
  return Status::OK();
}

Status ChunkStore::GetChunkFootprints(ContainerId requested, std::vector<ChunkFootprint>* chunks,
                                      uint64_t* total) {
  const ContainerId id = Resolve(requested);
  std::vector<Fingerprint> fps;
  std::vector<size_t> footprints;
  std::shared_ptr<const Container> c = read_cache_.Lookup(id);
  if (c) {
    fps = c->Fingerprints();
    for (const Fingerprint& fp : fps) footprints.push_back(c->FootprintOf(fp));
    *total = c->serialized_size();
  } else {
    // The metadata says all GC needs: no 4 MiB read per container, and the
    // read cache is left to reads.
    Status s = ReadMetadata(id, &fps, &footprints, total);
    if (s.IsNotFound() && Resolve(requested) != id) return GetChunkFootprints(requested, chunks, total);
    DEDUPV1_RETURN_IF_ERROR(s);
  }
  chunks->clear();
  bool learn = false;
  uint64_t dead_now = 0;  // chunks of it marked dead
  {
    std::lock_guard<std::mutex> l(mu_);
    auto dead = dead_.find(id);
    for (size_t i = 0; i < fps.size(); i++) {
      if (dead != dead_.end() && dead->second.count(fps[i]) != 0) continue;
      chunks->push_back({fps[i], footprints[i]});
    }
    // A container without a summary that fits its dead marks (lost in a
    // crash, stored by an older build, or GC marked chunks since) gets one
    // now, so the next start need not read this again.
    auto known = summaries_.find(id);
    dead_now = fps.size() - chunks->size();
    learn = !uncommitted_.count(id) && (known == summaries_.end() || known->second.dead_chunks != dead_now);
  }
  if (learn) {
    ContainerSummary summary;
    summary.chunks = chunks->size();
    for (const auto& c : *chunks) summary.footprint_bytes += c.bytes;
    summary.serialized_bytes = *total;
    summary.dead_chunks = dead_now;
    RecordSummary(id, summary);
  }
  return Status::OK();
}

bool ChunkStore::GetSummary(ContainerId id, ContainerSummary* summary) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = summaries_.find(id);
  if (it == summaries_.end()) return false;
  auto dead = dead_.find(id);
  if (it->second.dead_chunks != (dead == dead_.end() ? 0 : dead->second.size())) return false;
  *summary = it->second;
  return true;
}

void ChunkStore::RecordSummary(ContainerId id, const ContainerSummary& summary) {
  {
    std::lock_guard<std::mutex> l(mu_);
    summaries_[id] = summary;
  }
  std::lock_guard<std::mutex> l(summary_mu_);
  if (!summary_file_.Append({{id, summary}}).ok()) summary_append_failures_++;
}

void ChunkStore::LoadSummaries(const std::vector<ContainerId>& committed) {
  ContainerSummaryFile::Summaries read;
  uint64_t records = 0, skipped = 0;
  Status s = summary_file_.Read(&read, &records, &skipped);
  if (!s.ok()) {
    std::fprintf(stderr, "dedupv1: %s; GC reads container metadata instead\n", s.ToString().c_str());
    // Started afresh, so appends do not land in the middle of old records.
    s = summary_file_.Rewrite({});
    if (!s.ok()) std::fprintf(stderr, "dedupv1: %s\n", s.ToString().c_str());
    return;
  }
  if (skipped > 0) {
    // Harmless (a summary is a hint; an append torn by a crash looks the
    // same), but damage on disk is news for the admin.
    std::fprintf(stderr, "dedupv1: %s: %llu damaged or cut-short records dropped; GC reads those containers' "
                 "metadata instead\n", summary_file_.path().c_str(), static_cast<unsigned long long>(skipped));
  }
  ContainerSummaryFile::Summaries kept;
  for (const auto& [id, summary] : read) {
    if (summary.dead_chunks == kSummaryWithdrawn) continue;
    if (std::binary_search(committed.begin(), committed.end(), id)) kept[id] = summary;
  }
  // Rewritten when records were damaged, describe gone containers, or are
  // mostly superseded by later ones (every commit, merge and GC recount
  // appends).
  if (skipped > 0 || kept.size() != read.size() || records > 2 * kept.size() + 1024) {
    s = summary_file_.Rewrite(kept);
    if (!s.ok()) std::fprintf(stderr, "dedupv1: %s (stale records are ignored)\n", s.ToString().c_str());
  }
  std::lock_guard<std::mutex> l(mu_);
  summaries_loaded_ = kept.size();
  summaries_ = std::move(kept);
}

void ChunkStore::MarkDead(ContainerId id, const std::vector<Fingerprint>& fps) {
  std::lock_guard<std::mutex> l(mu_);
  const ContainerId holder = ResolveLocked(id);
  auto& set = dead_[holder];
  auto& unpersisted = dead_unpersisted_[holder];
  for (const Fingerprint& fp : fps) {
    if (set.insert(fp).second) {
      unpersisted.push_back(fp);
      dead_marks_++;
    }
  }
  dead_containers_ = dead_.size();
}

void ChunkStore::ForgetContainerLocked(ContainerId id) {
  auto dead = dead_.find(id);
  if (dead != dead_.end()) {
    dead_marks_ -= dead->second.size();
    dead_.erase(dead);
  }
  dead_unpersisted_.erase(id);
  summaries_.erase(id);
  dead_containers_ = dead_.size();
}

bool ChunkStore::UnmarkLocked(ContainerId holder, const Fingerprint& fp) {
  auto dead = dead_.find(holder);
  if (dead == dead_.end() || dead->second.erase(fp) == 0) return false;
  dead_marks_--;
  if (dead->second.empty()) dead_.erase(dead);
  dead_containers_ = dead_.size();
  auto pending = dead_unpersisted_.find(holder);
  if (pending != dead_unpersisted_.end()) {
    auto& fps = pending->second;
    fps.erase(std::remove(fps.begin(), fps.end(), fp), fps.end());
  }
  dead_unmarked_ = true;
  // The summary was taken with this mark (WithdrawSummary drops it from the
  // file too, or a later mark bringing the count back would make it fit).
  summaries_.erase(holder);
  return true;
}

void ChunkStore::WithdrawSummary(ContainerId holder) {
  ContainerSummary withdrawn;
  withdrawn.dead_chunks = kSummaryWithdrawn;
  std::lock_guard<std::mutex> s(summary_mu_);
  if (!summary_file_.Append({{holder, withdrawn}}).ok()) summary_append_failures_++;
}

ContainerId ChunkStore::ResolveEntry(ContainerId id, const Fingerprint& fp, bool* unmarked) {
  std::unique_lock<std::mutex> l(mu_);
  const ContainerId holder = ResolveLocked(id);
  *unmarked = dead_containers_.load(std::memory_order_relaxed) != 0 && UnmarkLocked(holder, fp);
  l.unlock();
  if (*unmarked) WithdrawSummary(holder);
  return holder;
}

bool ChunkStore::UnmarkIfDead(ContainerId id, const Fingerprint& fp) {
  if (dead_containers_.load(std::memory_order_relaxed) == 0) return false;
  bool unmarked = false;
  ResolveEntry(id, fp, &unmarked);
  return unmarked;
}

Status ChunkStore::PersistDeadMarks() {
  std::lock_guard<std::mutex> gc(gc_mu_);  // no merge or delete changes dead_ meanwhile
  DeadChunkFile::Marks marks;
  uint64_t live_marks = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [id, fps] : dead_unpersisted_) {
      // A container merged or deleted since has no marks left to keep.
      if (dead_.count(id) != 0 && !fps.empty()) marks[id] = std::move(fps);
    }
    dead_unpersisted_.clear();
    for (const auto& [_, fps] : dead_) live_marks += fps.size();
    // A removed mark is still in the file: only a rewrite drops it.
    if (dead_unmarked_) dead_file_needs_rewrite_ = true;
    dead_unmarked_ = false;
  }
  if (marks.empty() && !dead_file_needs_rewrite_) return Status::OK();
  // Rewritten when the file is mostly marks of merged or deleted containers
  // (each record carries 20 bytes besides its marks).
  const uint64_t live_size = live_marks * dead_file_.mark_size();
  const bool rewrite = dead_file_needs_rewrite_ || dead_file_.size() > 2 * live_size + (64 << 10);
  Status s;
  if (rewrite) {
    DeadChunkFile::Marks all;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (const auto& [id, fps] : dead_) {
        // Marks still pending (made after the copy above) wait for their call.
        auto& out = all[id];
        for (const Fingerprint& fp : fps) out.push_back(fp);
      }
      for (const auto& [id, fps] : dead_unpersisted_) {
        auto& out = all[id];
        for (const Fingerprint& fp : fps) out.erase(std::remove(out.begin(), out.end(), fp), out.end());
      }
    }
    s = dead_file_.Rewrite(all);
  } else {
    s = dead_file_.Append(marks);
  }
  if (s.ok()) {
    dead_file_needs_rewrite_ = false;
    return Status::OK();
  }
  // A failed append may have left a torn record, a failed rewrite a file
  // whose size is not known: the next call rewrites.
  dead_file_needs_rewrite_ = true;
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [id, fps] : marks) {
    auto& pending = dead_unpersisted_[id];
    pending.insert(pending.end(), fps.begin(), fps.end());
  }
  return s;
}

// The marks are a hint (losing them is always safe), so a file that cannot
// be read or rewritten at open is deleted rather than keeping the store from
// opening; the marks still in memory are written whole by the next persist.
Status ChunkStore::DropDeadMarkFile(const Status& why) {
  Status d = env_->DeleteFile(dead_file_.path());
  if (!d.ok() && env_->FileExists(dead_file_.path())) {
    return why.WithContext("cannot delete it either (" + d.ToString() + ")");
  }
  std::fprintf(stderr, "dedupv1: %s; deleted it, GC finds the garbage it listed again\n", why.ToString().c_str());
  dead_file_needs_rewrite_ = true;
  return Status::OK();
}

Status ChunkStore::LoadDeadMarks(const std::vector<ContainerId>& committed) {
  DeadChunkFile::Marks marks;
  bool intact = true;
  Status r = dead_file_.Read(&marks, &intact);
  if (!r.ok()) return DropDeadMarkFile(r);
  bool dropped = false;
  DeadChunkFile::Marks kept;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [id, fps] : marks) {
      // Only a container that exists under its own id: the marks of a merge
      // source describe the source, not the container answering to its id.
      if (!std::binary_search(committed.begin(), committed.end(), id) || alias_.count(id) != 0) {
        dropped = true;
        continue;
      }
      auto& set = dead_[id];
      for (const Fingerprint& fp : fps) {
        if (set.insert(fp).second) dead_marks_loaded_++;
      }
    }
    dead_marks_ = dead_marks_loaded_;  // dead_ was empty before
    dead_containers_ = dead_.size();
    if (intact && !dropped) return Status::OK();
    for (const auto& [id, fps] : dead_) kept[id].assign(fps.begin(), fps.end());
  }
  if (!intact) {
    std::fprintf(stderr, "dedupv1: %s ends in a torn record; the marks after it are found again by GC\n",
                 dead_file_.path().c_str());
  }
  Status w = dead_file_.Rewrite(kept);
  return w.ok() ? w : DropDeadMarkFile(w);
}

Status ChunkStore::MergeContainers(const std::vector<ContainerId>& sources, ContainerId* result) {
  std::lock_guard<std::mutex> gc(gc_mu_);
  if (sources.empty()) return Status::InvalidArgument("chunk store: nothing to merge");
  std::vector<std::shared_ptr<const Container>> loaded;
  for (ContainerId src : sources) {
    std::shared_ptr<const Container> c;
    DEDUPV1_RETURN_IF_ERROR(LoadCommitted(src, &c));
    if (c->id() != src) {
      return Status::InvalidArgument("chunk store: " + Name(src) + " was merged into " + Name(c->id()));
    }
    loaded.push_back(std::move(c));
  }
  ContainerId new_id;
  std::vector<ContainerId> aliases;
  std::vector<std::unordered_set<Fingerprint, FingerprintHasher>> dead(sources.size());
  {
    std::lock_guard<std::mutex> l(mu_);
    DEDUPV1_RETURN_IF_ERROR(AllocateIdLocked(&new_id));
    for (size_t i = 0; i < sources.size(); i++) {
      aliases.push_back(sources[i]);
      auto d = dead_.find(sources[i]);
      if (d != dead_.end()) dead[i] = d->second;
    }
    for (const auto& [old_id, target] : alias_) {
      if (std::find(sources.begin(), sources.end(), target) != sources.end()) aliases.push_back(old_id);
    }
  }
  std::sort(aliases.begin(), aliases.end());
  Container merged(new_id, options_.container_size, options_.fp_type);
  if (!merged.SetAliases(aliases)) {
    *result = kNoContainer;  // does not fit: nothing changed
    return Status::OK();
  }
  for (size_t i = 0; i < sources.size(); i++) {
    for (const Fingerprint& fp : loaded[i]->Fingerprints()) {
      if (dead[i].count(fp) != 0) continue;
      std::string data;
      DEDUPV1_RETURN_IF_ERROR(loaded[i]->ReadChunk(fp, &data));
      if (!merged.Add(fp, reinterpret_cast<const uint8_t*>(data.data()), data.size(),
                      options_.compression)) {
        *result = kNoContainer;  // does not fit: nothing changed
        return Status::OK();
      }
    }
  }
  std::string bytes;
  DEDUPV1_RETURN_IF_ERROR(merged.Serialize(&bytes));
  // 1. The alias record, before the merged container exists: if the Put
  // never completes, Open drops the record because its target is missing.
  std::vector<AliasRecord> records = alias_records_;
  records.push_back({new_id, aliases});
  DEDUPV1_RETURN_IF_ERROR(WriteAliasFile(records));
  // 2. The merged container, durably.
  Status s = store_->Put(new_id, bytes);
  if (!s.ok()) {
    (void)WriteAliasFile(alias_records_);
    return s.WithContext("commit merged " + Name(new_id));
  }
  RecordSummary(new_id, Summarize(merged));
  // 3. Reads of the old ids go to the merged container from now on. The
  // record is on disk: later rewrites of the alias file must keep it even if
  // deleting a source fails below.
  alias_records_ = records;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (ContainerId a : aliases) alias_[a] = new_id;
    for (ContainerId src : sources) ForgetContainerLocked(src);
  }
  read_cache_.Insert(new_id, std::shared_ptr<const Container>(
                                 new Container(std::move(merged))));
  // 4. The sources. A crash before this finishes is cleaned up by Open.
  for (ContainerId src : sources) {
    read_cache_.Erase(src);
    metadata_cache_.Erase(src);
    Status d = store_->Delete(src);
    if (!d.ok() && !d.IsNotFound()) return d.WithContext("delete merged " + Name(src));
  }
  // Records of merged sources are covered by the new record.
  std::vector<AliasRecord> pruned;
  for (auto& r : records) {
    if (std::find(sources.begin(), sources.end(), r.target) == sources.end()) pruned.push_back(std::move(r));
  }
  alias_records_ = std::move(pruned);
  DEDUPV1_RETURN_IF_ERROR(WriteAliasFile(alias_records_));
  *result = new_id;
  return Status::OK();
}

Status ChunkStore::DeleteContainer(ContainerId requested) {
  std::lock_guard<std::mutex> gc(gc_mu_);
  const ContainerId id = Resolve(requested);
  Status s = store_->Delete(id);
  if (!s.ok()) return s.WithContext("delete " + Name(id));
  read_cache_.Erase(id);
  metadata_cache_.Erase(id);
  {
    std::lock_guard<std::mutex> l(mu_);
    deleted_.insert(id);
    ForgetContainerLocked(id);
    for (auto it = alias_.begin(); it != alias_.end();) {
      if (it->second == id) {
        deleted_.insert(it->first);
        it = alias_.erase(it);
      } else {
        ++it;
      }
    }
  }
  const size_t before = alias_records_.size();
  alias_records_.erase(std::remove_if(alias_records_.begin(), alias_records_.end(),
                                      [id](const AliasRecord& r) { return r.target == id; }),
                       alias_records_.end());
  if (alias_records_.size() != before) DEDUPV1_RETURN_IF_ERROR(WriteAliasFile(alias_records_));
  return Status::OK();
}

Status ChunkStore::UsedBytes(uint64_t* bytes) { return store_->UsedBytes(bytes); }

}  // namespace dedupv1

#include "core/dedup_system.h"

#include "core/memory_tuning.h"
#include "core/volume_table.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "filters/block_index_filter.h"
#include "filters/bloom_filter.h"
#include "filters/byte_compare_filter.h"
#include "filters/chunk_index_filter.h"
#include "filters/container_cache_filter.h"
#include "filters/zero_chunk_filter.h"
#include "index/block_mapping.h"
#include "log/log_event.h"

namespace dedupv1 {
namespace {

const char kSystemFile[] = "system";
const char kVolumesFile[] = "volumes";
const char kBloomFile[] = "bloom";
const char kLockFile[] = "LOCK";
const char kCleanFile[] = "clean";            // present only after a clean stop
const char kCheckpointFile[] = "checkpoint";  // what the last checkpoint made persistent

// Payload of a block-mapping event (log/log_event.h): the block, the new
// mapping and the one it replaced (empty if none), each with its own CRC
// and the block's id (checked against the event's block when decoded).
std::string EncodeMappingEvent(const BlockId& id, const BlockMapping& mapping, const BlockMapping* old) {
  BlockMappingWrittenData data;
  data.block = id;
  mapping.Serialize(id, &data.new_mapping);
  if (old != nullptr) old->Serialize(id, &data.old_mapping);
  return data.Encode();
}

Status DecodeMappingEvent(const std::string& payload, BlockId* id, BlockMapping* mapping) {
  BlockMappingWrittenData data;
  DEDUPV1_RETURN_IF_ERROR(BlockMappingWrittenData::Decode(payload, &data));
  *id = data.block;
  return BlockMapping::Parse(data.new_mapping, *id, mapping);
}
// 2: GC's dead-chunk marks persist (containers/dead-chunks). A build that
// reads format 1 would ignore them, hand a marked chunk out again and leave
// the mark to drop it at a later merge, so it must refuse the directory.
// 3: block mappings (block index store and log events) are written in
// mapping format 2, which carries the block's id inside its checksum; a
// build that reads format 2 would fail every such read with "unknown
// format". Older directories are upgraded in place: the system file first,
// then the block index rewrites its old records at open (ScanBlockStore).
constexpr int kFormatVersion = 3;
constexpr int kOldestFormatRead = 1;

}  // namespace

DedupSystem::DedupSystem(const Options& options, Env* env)
    : options_(options), env_(env), idle_(options.idle), budget_(options.write_buffer_size),
      hash_pool_(1) {}

Status DedupSystem::OpenConfigFile(const std::string& config_path, const std::string& data_dir_override,
                                   std::unique_ptr<DedupSystem>* out) {
  Config config;
  DEDUPV1_RETURN_IF_ERROR(Config::Load(config_path, &config));
  if (!data_dir_override.empty()) config.Set("data-dir", data_dir_override);
  Options options;
  DEDUPV1_RETURN_IF_ERROR(Options::FromConfig(config, &options));
  return Open(options, Env::Default(), out);
}

Status DedupSystem::Open(const Options& options, Env* env, std::unique_ptr<DedupSystem>* out) {
  TuneAllocatorForLargeBuffers();
  std::unique_ptr<DedupSystem> sys(new DedupSystem(options, env));
  Status s = sys->Init();
  if (!s.ok()) {
    sys->stop_ = true;
    return s;
  }
  *out = std::move(sys);
  return Status::OK();
}

Status DedupSystem::Init() {
  Status s = env_->CreateDirs(options_.data_dir);
  if (!s.ok()) return s.WithContext("cannot create data directory");
  const bool fresh = !env_->FileExists(JoinPath(options_.data_dir, kSystemFile));
  DEDUPV1_RETURN_IF_ERROR(env_->LockFile(JoinPath(options_.data_dir, kLockFile), &lock_));
  DEDUPV1_RETURN_IF_ERROR(CheckSystemMetadata());
  DEDUPV1_RETURN_IF_ERROR(Chunker::Create(options_.chunking, &chunker_));
  recovery_.dirty_start = !fresh && !env_->FileExists(JoinPath(options_.data_dir, kCleanFile));
  if (env_->FileExists(JoinPath(options_.data_dir, kCleanFile))) {
    DEDUPV1_RETURN_IF_ERROR(env_->DeleteFile(JoinPath(options_.data_dir, kCleanFile)));
  }
  DEDUPV1_RETURN_IF_ERROR(env_->CreateDirs(DirName(options_.log.path)));
  s = OperationsLog::Open(options_.log, env_, &log_);
  if (!s.ok()) return s.WithContext("open operations log " + options_.log.path);

  DEDUPV1_RETURN_IF_ERROR(env_->CreateDirs(options_.chunk_store.dir));
  s = ChunkStore::Open(options_.chunk_store, env_, &chunk_store_);
  if (!s.ok()) return s.WithContext("open container store " + options_.chunk_store.dir);
  ChunkStore* store = chunk_store_.get();
  auto is_committed = [store](ContainerId id) { return store->IsCommitted(id); };
  DEDUPV1_RETURN_IF_ERROR(env_->CreateDirs(DirName(options_.chunk_index.table.path)));
  s = ChunkIndex::Open(options_.chunk_index, env_, is_committed, &chunk_index_);
  if (!s.ok()) return s.WithContext("open chunk index " + options_.chunk_index.table.path);
  DEDUPV1_RETURN_IF_ERROR(env_->CreateDirs(DirName(options_.block_index.path)));
  BlockIndexOptions block_index_options = options_.block_index;
  // CheckSystemMetadata has recorded format 3, so old builds refuse the
  // directory before any record is rewritten.
  block_index_options.upgrade_old_records = true;
  OperationsLog* log = log_.get();
  block_index_options.before_write_back = [log] { return log->Sync(); };
  s = BlockIndex::Open(block_index_options, is_committed, &block_index_);
  if (!s.ok()) return s.WithContext("open block index " + options_.block_index.path);
  ChunkIndex* ci = chunk_index_.get();
  BlockIndex* bi = block_index_.get();
  chunk_store_->SetCommitListener([ci, bi, log](ContainerId id, const std::vector<Fingerprint>& fps) {
    ci->OnContainerCommitted(id, fps);
    bi->OnContainerCommitted(id);
    ContainerEventData event;
    event.container = id;
    uint64_t event_id;
    log->Append(LogEventType::kContainerCommitted, event.Encode(), &event_id);  // a record only
  });
  // Records only, like kContainerCommitted: a log append per container is
  // cheap next to the container itself. Called without chunk-store locks.
  chunk_store_->SetOpenListener([log](ContainerId id) {
    ContainerEventData event;
    event.container = id;
    uint64_t event_id;
    log->Append(LogEventType::kContainerOpened, event.Encode(), &event_id);
  });
  chunk_store_->SetCommitFailureListener([log](ContainerId id, const Status&) {
    ContainerEventData event;
    event.container = id;
    uint64_t event_id;
    log->Append(LogEventType::kContainerCommitFailed, event.Encode(), &event_id);
  });

  // Every event still in the log may be uncounted (idempotent per entry).
  usage_ = std::make_unique<UsageCounter>(log_.get(), chunk_index_.get(), chunk_store_.get(), log_->head_id());
  gc_ = std::make_unique<GarbageCollector>(this);

  DEDUPV1_RETURN_IF_ERROR(LoadVolumes());
  s = Recover();
  if (!s.ok()) return s.WithContext("recovery from the operations log");
  // Logged after recovery, so a replay at open sees only the previous run's
  // events. Records only: replay and usage counting skip them.
  SystemEventData start;
  start.dirty_start = recovery_.dirty_start;
  LogRecord(LogEventType::kSystemStart, start.Encode());
  for (auto& [_, vol] : volumes_) {
    VolumeEventData attached;
    attached.volume_id = vol->id();
    attached.name = vol->name();
    attached.size = vol->size();
    LogRecord(LogEventType::kVolumeAttached, attached.Encode());
  }
  // After recovery: a rebuilt bloom filter must see the re-imported chunks.
  DEDUPV1_RETURN_IF_ERROR(BuildFilterChain());
  for (int i = 0; i < options_.dedup_threads; i++) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
  }
  checkpoint_thread_ = std::thread([this] { CheckpointLoop(); });
  LogRecord(LogEventType::kSystemRun, start.Encode());
  return Status::OK();
}

// The system file records what stored data depends on; reopening with a
// config that changes it would misread the data, so it is refused.
Status DedupSystem::CheckSystemMetadata() {
  const std::string path = JoinPath(options_.data_dir, kSystemFile);
  std::ostringstream want;
  want << "format = " << kFormatVersion << "\n"
       << "block-size = " << options_.block_size << "\n"
       << "fingerprint = " << FingerprintTypeName(options_.fingerprint) << "\n";
  if (!env_->FileExists(path)) return WriteFileAtomically(env_, path, want.str());
  std::string have;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env_, path, &have));
  Config stored;
  DEDUPV1_RETURN_IF_ERROR(Config::Parse(have, path, &stored));
  bool upgrade = false;
  for (const auto& e : stored.entries()) {
    std::string expected;
    if (e.key == "format") {
      uint64_t format = 0;
      if (!ParseUint(e.value, &format).ok() || format < static_cast<uint64_t>(kOldestFormatRead) ||
          format > static_cast<uint64_t>(kFormatVersion)) {
        return Status::InvalidArgument("data directory " + options_.data_dir + " has format " + e.value + " (" +
                                       path + "); this build reads formats " + std::to_string(kOldestFormatRead) +
                                       " to " + std::to_string(kFormatVersion));
      }
      upgrade = format < static_cast<uint64_t>(kFormatVersion);
      continue;
    }
    if (e.key == "block-size") expected = std::to_string(options_.block_size);
    else if (e.key == "fingerprint") expected = FingerprintTypeName(options_.fingerprint);
    else continue;
    if (e.value != expected) {
      return Status::InvalidArgument("data directory " + options_.data_dir + " was created with " + e.key +
                                     " = " + e.value + " but the config says " + expected +
                                     "; changing it would misread the stored data");
    }
  }
  // Before anything of the newer format is written, so a build that only
  // reads the older one refuses the directory from now on.
  if (upgrade) return WriteFileAtomically(env_, path, want.str());
  return Status::OK();
}

Status DedupSystem::LoadVolumes() {
  const std::string path = JoinPath(options_.data_dir, kVolumesFile);
  struct Known { uint32_t id; uint64_t size; };
  std::map<std::string, Known> known;
  uint32_t next_id = 1;
  std::vector<VolumeRecord> records;
  DEDUPV1_RETURN_IF_ERROR(ReadVolumeTable(env_, path, &records));
  for (const auto& r : records) {
    known[r.name] = {r.id, r.size};
    next_id = std::max(next_id, r.id + 1);
  }
  bool changed = false;
  for (const auto& v : options_.volumes) {
    auto it = known.find(v.name);
    if (it == known.end()) {
      known[v.name] = {next_id++, v.size};
      changed = true;
    } else if (v.size < it->second.size) {
      return Status::InvalidArgument("volume " + v.name + " holds " + std::to_string(it->second.size) +
                                     " bytes but the config says " + std::to_string(v.size) +
                                     "; shrinking a volume would lose data");
    } else if (v.size > it->second.size) {
      it->second.size = v.size;  // growing is safe
      changed = true;
    }
  }
  if (changed) {
    records.clear();
    for (const auto& [name, k] : known) records.push_back({k.id, name, k.size});
    DEDUPV1_RETURN_IF_ERROR(WriteVolumeTable(env_, path, records));
  }
  // Only volumes named in the config are served; others keep their data.
  for (const auto& v : options_.volumes) {
    const Known& k = known[v.name];
    volumes_[v.name] = std::make_unique<Volume>(this, k.id, v.name, k.size);
  }
  return Status::OK();
}

Status DedupSystem::BuildFilterChain() {
  // The bloom filter is saved at a clean close and removed when loaded, so a
  // file that exists is current. Without one, a store that already holds
  // chunks cannot trust an empty bloom filter, and the filter is left out.
  const std::string bloom_path = JoinPath(options_.data_dir, kBloomFile);
  bool bloom_ok = false;
  if (env_->FileExists(bloom_path)) {
    Status s = BloomSet::Load(env_, bloom_path, &bloom_);
    bloom_ok = s.ok();
    env_->DeleteFile(bloom_path);
  }
  if (!bloom_ok) {
    // No current bloom file (first start, or an unclean stop): build the
    // filter from the chunk index, which holds every stored chunk (Recover
    // has re-imported the containers the table was missing).
    bloom_.reset();
    DEDUPV1_RETURN_IF_ERROR(BloomSet::Create(options_.bloom_expected_chunks,
                                             options_.bloom_false_positive_rate, &bloom_));
    if (chunk_index_->stats().persistent_entries + chunk_index_->stats().aux_entries > 0) {
      BloomSet* bloom = bloom_.get();
      Status s = chunk_index_->ForEachFingerprint([bloom](const Fingerprint& fp) { bloom->Add(fp); });
      if (!s.ok()) return s.WithContext("rebuild the bloom filter from the chunk index");
    }
    bloom_ok = true;
  }
  for (const auto& name : options_.filter_chain) {
    if (name == "zero-chunk") {
      filter_chain_.Add(std::make_unique<ZeroChunkFilter>());
      zero_chunks_ = true;
    } else if (name == "block-index") {
      filter_chain_.Add(std::make_unique<BlockIndexFilter>());
    } else if (name == "container-cache") {
      auto filter = std::make_unique<ContainerCacheFilter>(chunk_store_.get(), options_.container_cache_containers);
      container_cache_ = filter.get();
      filter_chain_.Add(std::move(filter));
    } else if (name == "bloom") {
      if (bloom_ok) filter_chain_.Add(std::make_unique<BloomFilter>(bloom_.get()));
    } else if (name == "chunk-index") {
      filter_chain_.Add(std::make_unique<ChunkIndexFilter>(chunk_index_.get()));
    } else if (name == "byte-compare") {
      filter_chain_.Add(std::make_unique<ByteCompareFilter>(chunk_store_.get()));
    }
  }
  return Status::OK();
}

DedupSystem::~DedupSystem() {
  Close();
}

Status DedupSystem::GetVolume(const std::string& name, Volume** volume) {
  auto it = volumes_.find(name);
  if (it == volumes_.end()) {
    std::string names;
    for (const auto& [n, _] : volumes_) names += (names.empty() ? "" : ", ") + n;
    return Status::NotFound("no volume named '" + name + "' (volumes: " + (names.empty() ? "none" : names) + ")");
  }
  *volume = it->second.get();
  return Status::OK();
}

std::vector<Volume*> DedupSystem::volumes() {
  std::vector<Volume*> out;
  for (auto& [_, v] : volumes_) out.push_back(v.get());
  return out;
}

void DedupSystem::WakeWorkers() {
  {
    std::lock_guard<std::mutex> l(work_mu_);
    work_signals_++;
  }
  work_cv_.notify_one();
}

WriteBuffer::ClaimPolicy DedupSystem::CurrentPolicy() const {
  WriteBuffer::ClaimPolicy p;
  p.min_ready_bytes = chunker_->options().max_size;
  p.max_run_bytes = std::max<size_t>(8 << 20, 4 * p.min_ready_bytes);
  p.flush_delay = std::chrono::milliseconds(options_.write_buffer_flush_delay_ms);
  p.force_epoch = force_epoch_.load();
  p.force_all = force_all_.load();
  p.flush_short_runs = budget_.UnderPressure();
  return p;
}

void DedupSystem::WorkerLoop(int index) {
  while (!stop_.load()) {
    bool did_work = false;
    bool failed = false;
    WriteBuffer::ClaimPolicy policy = CurrentPolicy();
    for (auto& [_, vol] : volumes_) {
      Status s;
      while (!stop_.load() && vol->ProcessOneRun(policy, &s)) {
        did_work = true;
        if (!s.ok()) {
          RecordError(s);
          failed = true;
          break;
        }
        {
          std::lock_guard<std::mutex> l(error_mu_);
          SetErrorLocked(Status::OK());
        }
        progress_cv_.notify_all();
      }
      if (failed) break;
    }
    progress_cv_.notify_all();
    std::unique_lock<std::mutex> l(work_mu_);
    if (failed) {
      // Back off: the same run will fail again until the cause is fixed.
      work_cv_.wait_for(l, std::chrono::milliseconds(200), [&] { return stop_.load(); });
    } else if (!did_work) {
      uint64_t seen = work_signals_;
      auto wait = std::chrono::milliseconds(std::max<uint64_t>(10, options_.write_buffer_flush_delay_ms / 4));
      work_cv_.wait_for(l, wait, [&] { return stop_.load() || work_signals_ != seen; });
    }
  }
}

void DedupSystem::RecordError(const Status& s) {
  stats_.errors++;
  std::lock_guard<std::mutex> l(error_mu_);
  SetErrorLocked(s);
}

void DedupSystem::SetErrorLocked(const Status& s) {
  error_ = s;
  refuse_waiting_writers_ = !s.ok() || stop_.load();
  // Release(0) takes the budget's lock before notifying, so a writer between
  // its check and its wait cannot miss the wake-up.
  if (!s.ok()) budget_.Release(0);
}

Status DedupSystem::PendingError() const {
  std::lock_guard<std::mutex> l(error_mu_);
  return error_;
}

Status DedupSystem::DrainUpTo(uint64_t epoch) {
  uint64_t prev = force_epoch_.load();
  while (prev < epoch && !force_epoch_.compare_exchange_weak(prev, epoch)) {
  }
  {
    std::lock_guard<std::mutex> l(work_mu_);
    work_signals_++;
  }
  work_cv_.notify_all();
  std::unique_lock<std::mutex> l(work_mu_);
  for (;;) {
    bool dirty = false;
    for (auto& [_, vol] : volumes_) dirty |= vol->buffer().HasDirtyUpTo(epoch);
    if (!dirty) return Status::OK();
    Status err = PendingError();
    if (!err.ok()) return err;
    if (stop_.load() && workers_.empty()) return Status::Aborted("system is shutting down");
    progress_cv_.wait_for(l, std::chrono::milliseconds(50));
  }
}

Status DedupSystem::Persist() {
  // Containers first: a logged mapping counts only once its containers are
  // committed. Then one log sync makes every mapping event durable; the
  // indexes are written back later, by checkpoints, off this path.
  DEDUPV1_RETURN_IF_ERROR(chunk_store_->Flush());
  return log_->Sync();
}

Status DedupSystem::InstallMapping(const BlockId& id, const BlockMapping* old, BlockMapping* mapping, bool unmap) {
  // Everything that can refuse the mapping comes before its event is logged:
  // a logged event is replayed after a crash and counted into usage counts,
  // so the mapping it describes must then be installed.
  DEDUPV1_RETURN_IF_ERROR(block_index_->PrepareInstall(id, *mapping));
  LogEventType type = LogEventType::kBlockMappingWritten;
  std::string payload;
  if (unmap && mapping->IsAllZero()) {
    // The block index keeps the all-zero mapping (the block reads zeros).
    BlockMappingDeletedData deleted;
    deleted.block = id;
    if (old != nullptr) old->Serialize(id, &deleted.old_mapping);
    type = LogEventType::kBlockMappingDeleted;
    payload = deleted.Encode();
  } else {
    payload = EncodeMappingEvent(id, *mapping, old);
  }
  std::shared_lock<std::shared_mutex> l(mapping_mu_);
  uint64_t event_id;
  DEDUPV1_RETURN_IF_ERROR(log_->Append(type, payload, &event_id));
  // The version is the event's id: replay applies an event only to an older mapping.
  mapping->set_version(event_id);
  return block_index_->Install(id, *mapping);
}

Status DedupSystem::WaitForLogSpace() {
  // Keep a margin below the hard limit: the run that follows (and those of
  // the other workers) append their mapping events while holding mapping_mu_
  // shared, so an append waiting at the hard limit would block the very
  // checkpoint that frees the log. A run installs at most max_run_bytes /
  // block_size + 2 mappings (an event per mapping, counted as two slots to be
  // safe, plus container records). With the soft-limit checkpoints of the
  // checkpoint thread this margin is rarely reached; while replay is paused
  // it is what keeps writers going.
  const uint64_t slots = log_->stats().slots;
  const uint64_t hard_slots = static_cast<uint64_t>(options_.log.hard_limit * slots);
  const uint64_t per_run = CurrentPolicy().max_run_bytes / options_.block_size + 2;
  const uint64_t reserve = 2 * per_run * static_cast<uint64_t>(std::max(1, options_.dedup_threads)) + 16;
  uint64_t limit_slots = static_cast<uint64_t>((options_.log.hard_limit - (1.0 - options_.log.hard_limit)) * slots);
  // In a log too small for the reserve (a few MiB), checkpoint at a quarter
  // of the hard limit: the estimate above is twice the usual event size.
  limit_slots = std::min(limit_slots, std::max(hard_slots > reserve ? hard_slots - reserve : 0, hard_slots / 4));
  limit_slots = std::max<uint64_t>(limit_slots, 1);
  // Above the soft limit the checkpoint thread is woken (it checkpoints at
  // once instead of at its next tick) and writers are slowed down, the more
  // the fuller the log (1..20 ms per run), so the checkpoint that trims the
  // log catches up before writers reach the hard limit and have to stop.
  const uint64_t soft_slots = static_cast<uint64_t>(options_.log.soft_limit * slots);
  const uint64_t used_now = log_->stats().used_slots;
  if (used_now >= soft_slots && used_now < limit_slots && !stop_.load()) {
    soft_limit_throttles_++;
    {
      std::lock_guard<std::mutex> l(loop_mu_);
      loop_wake_++;
    }
    loop_cv_.notify_all();
    const double over = static_cast<double>(used_now - soft_slots) /
                        static_cast<double>(std::max<uint64_t>(1, limit_slots - soft_slots));
    std::this_thread::sleep_for(std::chrono::microseconds(1000 + static_cast<int64_t>(19000 * over)));
  }
  for (int i = 0;; i++) {
    const uint64_t used = log_->stats().used_slots;
    if (used < limit_slots || used == 0) break;
    if (stop_.load()) return Status::Aborted("system is shutting down");
    // Checkpoint now and once a second while still full (other workers may
    // have appended meanwhile); in between another writer's checkpoint may
    // free the log.
    if (i % 20 == 0) {
      Status s = Checkpoint();
      if (!s.ok()) return s.WithContext("operations log is full and the checkpoint failed");
      if (i == 0) continue;
    }
    if (i > 600) return Status::Busy("operations log is full (" + std::to_string(log_->stats().fill) + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::OK();
}

void DedupSystem::LogRecord(LogEventType type, const std::string& payload) {
  uint64_t id;
  log_->Append(type, payload, &id);
}

Status DedupSystem::Checkpoint(ReplayMode mode) {
  std::lock_guard<std::mutex> cp(checkpoint_mu_);
  uint64_t applied;
  {
    // Every event up to here has been applied in memory.
    std::unique_lock<std::shared_mutex> l(mapping_mu_);
    applied = log_->last_id();
  }
  if (applied < log_->head_id()) return Status::OK();  // nothing to trim
  // The replay is recorded (kReplayStarted/kReplayStopped, records only). Not
  // under mapping_mu_: an append may wait at the log's hard limit, which only
  // this checkpoint can lift. Above the soft limit they are left out, so a
  // checkpoint that frees space never waits for space itself.
  const bool record = !log_->IsAboveSoftLimit();
  ReplayEventData replay;
  replay.mode = mode;
  replay.from_id = log_->head_id();
  replay.to_id = applied;
  uint64_t started_id = 0;
  if (record && !log_->Append(LogEventType::kReplayStarted, replay.Encode(), &started_id).ok()) started_id = 0;
  DEDUPV1_RETURN_IF_ERROR(chunk_store_->Flush());
  const ContainerId watermark = chunk_store_->last_allocated_id();
  DEDUPV1_RETURN_IF_ERROR(log_->Sync());
  // The events up to |applied| are durable and their containers committed:
  // count them into the usage counts before the chunk index is written back
  // and the log trimmed (a crash in between counts them again, once).
  if (usage_) DEDUPV1_RETURN_IF_ERROR(usage_->CountUpTo(applied));
  DEDUPV1_RETURN_IF_ERROR(chunk_index_->Flush());
  DEDUPV1_RETURN_IF_ERROR(block_index_->Flush());
  // Every container up to the watermark is committed or lost and its chunks
  // are in the chunk index table; recovery re-imports only newer ones.
  DEDUPV1_RETURN_IF_ERROR(WriteFileAtomically(env_, JoinPath(options_.data_dir, kCheckpointFile),
                                              "container-watermark = " + std::to_string(watermark) + "\n"));
  // An event is trimmed only once the block index store reflects it. Flush
  // wrote every persistable mapping, including the newest committed version
  // of a block whose current mapping waits for a container opened after the
  // commit above (its "stable" version). But a version replaced while it
  // was itself waiting is in neither the store nor memory: its event must
  // stay so that a crash losing the newer mapping restores it, not the
  // store's older copy.
  const uint64_t unwritten = block_index_->OldestUnwrittenVersion();
  uint64_t trim_to = std::min(applied + 1, unwritten);
  uint64_t stopped_id = 0;
  if (started_id != 0 && log_->Append(LogEventType::kReplayStopped, replay.Encode(), &stopped_id).ok() &&
      trim_to == applied + 1 && started_id == applied + 1 && stopped_id == started_id + 1) {
    // Nothing else was logged meanwhile: the two records go with the replayed
    // events, so a checkpoint leaves an empty log behind (else they stay until
    // the next one).
    trim_to = stopped_id + 1;
  }
  return log_->Trim(trim_to);
}

void DedupSystem::CheckpointLoop() {
  const auto start = std::chrono::steady_clock::now();
  uint64_t seen_wake = 0;
  while (!stop_.load()) {
    {
      std::unique_lock<std::mutex> l(loop_mu_);
      loop_cv_.wait_for(l, std::chrono::milliseconds(250),
                        [&] { return stop_.load() || loop_wake_ != seen_wake; });
      seen_wake = loop_wake_;
    }
    if (stop_.load()) break;
    const uint64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - start).count();
    std::unique_lock<std::mutex> idle_state(idle_state_mu_);
    const IdleEvent event = idle_.Update(now_ms, stats_.bytes_written.load(), stats_.bytes_read.load(),
                                         stats_.requests_timed.load(), stats_.request_ns.load());
    if (event == IdleEvent::kStart) idle_since_unix_ = static_cast<int64_t>(std::time(nullptr));
    if (event == IdleEvent::kEnd) idle_since_unix_ = 0;
    idle_state.unlock();
    if (event == IdleEvent::kStart) {
      // The paper's idle-time write-back: everything persistable, not only
      // what is above the soft limits.
      chunk_index_->SetIdle(true);
      block_index_->SetIdle(true);
    } else if (event == IdleEvent::kEnd) {
      chunk_index_->SetIdle(false);
      block_index_->SetIdle(false);
    }
    const bool idle_work = event == IdleEvent::kStart || event == IdleEvent::kTick;
    const bool soft_limit = log_->IsAboveSoftLimit();
    const bool paused = replay_paused_.load();
    Status s;
    if (paused) {
      if (soft_limit || idle_work) skipped_paused_++;
    } else if (soft_limit || (idle_work && log_->last_id() >= log_->head_id())) {
      s = Checkpoint();
      if (!s.ok()) {
        RecordError(s.WithContext("checkpoint"));
      } else {
        (soft_limit ? soft_limit_checkpoints_ : idle_checkpoints_)++;
      }
    }
    // Idle: a GC round if one has work (candidates, garbage not looked at
    // yet, or no round since open). A round checkpoints, so not while paused.
    if (s.ok() && idle_work && !paused && !stop_.load() && gc_->HasWork()) {
      s = gc_->Run();
      if (!s.ok()) RecordError(s);
      else idle_gc_runs_++;
    }
    loop_ticks_++;
  }
}

void DedupSystem::ForceIdle(IdleMode mode) {
  idle_.SetMode(mode);
  std::lock_guard<std::mutex> l(loop_mu_);
  loop_wake_++;
  loop_cv_.notify_all();
}

void DedupSystem::PauseReplay(bool paused) {
  replay_paused_ = paused;
  std::lock_guard<std::mutex> l(loop_mu_);
  loop_wake_++;
  loop_cv_.notify_all();
}

DedupSystem::IdleInfo DedupSystem::idle_info() const {
  IdleInfo info;
  {
    std::lock_guard<std::mutex> l(idle_state_mu_);
    info.detector = idle_.state();
    info.idle_since_unix = info.detector.idle ? idle_since_unix_.load() : 0;
  }
  info.forced = info.detector.mode != IdleMode::kAuto;
  info.replay_paused = replay_paused_.load();
  info.loop_ticks = loop_ticks_.load();
  info.idle_checkpoints = idle_checkpoints_.load();
  info.soft_limit_checkpoints = soft_limit_checkpoints_.load();
  info.soft_limit_throttles = soft_limit_throttles_.load();
  info.idle_gc_runs = idle_gc_runs_.load();
  info.skipped_paused = skipped_paused_.load();
  info.options = idle_.options();
  return info;
}

// After an unclean stop the persistent indexes lag behind: chunks of
// containers committed after the last checkpoint are re-imported from the
// containers' own metadata, and block mappings are restored from the log.
// Mappings that reference a container that never committed describe data
// that was never synced, and are dropped.
Status DedupSystem::Recover() {
  ContainerId watermark = 0;
  const std::string cp_path = JoinPath(options_.data_dir, kCheckpointFile);
  if (env_->FileExists(cp_path)) {
    std::string text;
    DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env_, cp_path, &text));
    Config cp;
    DEDUPV1_RETURN_IF_ERROR(Config::Parse(text, cp_path, &cp));
    for (const auto& e : cp.entries()) {
      if (e.key == "container-watermark") DEDUPV1_RETURN_IF_ERROR(ParseUint(e.value, &watermark));
    }
  }
  if (recovery_.dirty_start) {
    std::vector<ContainerId> ids;
    DEDUPV1_RETURN_IF_ERROR(chunk_store_->ListCommitted(&ids));
    for (ContainerId cid : ids) {
      if (cid <= watermark) continue;
      std::vector<Fingerprint> fps;
      Status s = chunk_store_->GetFingerprints(cid, &fps);
      if (!s.ok()) return s.WithContext("re-import container " + std::to_string(cid));
      for (const auto& fp : fps) {
        ChunkIndexEntry entry;
        Status l = chunk_index_->Lookup(fp, &entry);
        if (l.IsNotFound()) {
          DEDUPV1_RETURN_IF_ERROR(chunk_index_->PutNew(fp, cid));
        } else if (!l.ok()) {
          return l;
        }
      }
      recovery_.containers_imported++;
    }
  }
  if (log_->last_id() < log_->head_id()) return Status::OK();
  Status s = log_->Replay(log_->head_id(), [&](const LogEvent& e) -> Status {
    recovery_.events_replayed++;
    BlockId id;
    BlockMapping mapping;
    if (e.type == LogEventType::kBlockMappingDeleted) {
      // An unmapped block: all zeros, nothing to wait for.
      BlockMappingDeletedData deleted;
      DEDUPV1_RETURN_IF_ERROR(BlockMappingDeletedData::Decode(e.payload, &deleted));
      id = deleted.block;
      mapping = BlockMapping(options_.block_size);
    } else if (e.type == LogEventType::kBlockMappingWritten) {
      DEDUPV1_RETURN_IF_ERROR(DecodeMappingEvent(e.payload, &id, &mapping));
    } else {
      return Status::OK();
    }
    if (!AllContainersCommitted(mapping, *chunk_store_)) {
      recovery_.mappings_dropped++;
      return Status::OK();
    }
    BlockMapping current;
    Status g = block_index_->Get(id, &current);
    if (g.ok() && current.version() >= e.id) return Status::OK();  // already persistent
    // A stored record that cannot be read (or one the block index refuses:
    // under a damaged key) is replaced by the logged mapping: every later
    // event of the block is still in the log (it is trimmed in order) and
    // follows, so the block ends up with its newest logged mapping, which is
    // at least as new as anything the store held.
    if (!g.ok() && !g.IsNotFound() && !g.IsCorruption()) return g;
    mapping.set_version(e.id);
    recovery_.mappings_applied++;
    return block_index_->Put(id, mapping);
  });
  DEDUPV1_RETURN_IF_ERROR(s);
  if (recovery_.dirty_start) {
    std::fprintf(stderr,
                 "dedupv1: unclean stop of %s detected: replayed %llu log events, restored %llu block "
                 "mappings, dropped %llu unsynced ones, re-imported %llu containers\n",
                 options_.data_dir.c_str(), (unsigned long long)recovery_.events_replayed,
                 (unsigned long long)recovery_.mappings_applied, (unsigned long long)recovery_.mappings_dropped,
                 (unsigned long long)recovery_.containers_imported);
  }
  return Checkpoint(recovery_.dirty_start ? ReplayMode::kDirtyStart : ReplayMode::kBackground);
}

Status DedupSystem::Sync() {
  const uint64_t epoch = epoch_.fetch_add(1);
  DEDUPV1_RETURN_IF_ERROR(DrainUpTo(epoch));
  Status s = Persist();
  std::lock_guard<std::mutex> l(error_mu_);
  if (!s.ok()) {
    // The store cannot make data durable (e.g. the disk is full): later
    // Writes are refused with this error rather than buffered, as for a
    // processing error.
    stats_.errors++;
    SetErrorLocked(s);
  } else {
    // Everything up to this sync is durable, so a recorded cause is gone; a
    // run still failing records its error again on its next attempt.
    SetErrorLocked(Status::OK());
  }
  return s;
}

Status DedupSystem::RunGc() {
  if (stop_.load()) return Status::Aborted("system is shutting down");
  return gc_->Run();
}

GcStats DedupSystem::gc_stats() const {
  if (!gc_) return GcStats();
  return gc_->stats();
}

double DedupSystem::DedupRatio() const {
  uint64_t logical = stats_.bytes_chunked.load();
  uint64_t stored = chunk_store_ ? chunk_store_->stats().bytes_stored : 0;
  if (stored == 0) return logical == 0 ? 1.0 : 0.0;
  return static_cast<double>(logical) / static_cast<double>(stored);
}

Status DedupSystem::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  Status result;
  if (!workers_.empty()) {
    // Deduplicate everything still buffered, as a sync would, but with every
    // run final so no unfinished chunk stays behind.
    force_all_ = true;
    const uint64_t epoch = epoch_.fetch_add(1);
    result = DrainUpTo(epoch);
    stop_ = true;
    {
      std::lock_guard<std::mutex> l(error_mu_);
      refuse_waiting_writers_ = true;
    }
    budget_.Release(0);  // wakes waiting writers (see SetErrorLocked)
    work_cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }
  stop_ = true;
  work_cv_.notify_all();
  {
    std::lock_guard<std::mutex> l(loop_mu_);
    loop_cv_.notify_all();
  }
  if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
  auto keep_first = [&result](const Status& s) {
    if (result.ok() && !s.ok()) result = s;
  };
  if (log_) {
    for (auto& [_, vol] : volumes_) {
      VolumeEventData detached;
      detached.volume_id = vol->id();
      detached.name = vol->name();
      detached.size = vol->size();
      LogRecord(LogEventType::kVolumeDetached, detached.Encode());
    }
  }
  // A final checkpoint leaves the log empty, so the next start replays nothing.
  if (log_ && chunk_store_ && chunk_index_ && block_index_) keep_first(Checkpoint());
  if (chunk_index_) keep_first(chunk_index_->Close());
  if (block_index_) keep_first(block_index_->Close());
  if (chunk_store_) keep_first(chunk_store_->Close());
  if (bloom_ && result.ok()) {
    keep_first(bloom_->Save(env_, JoinPath(options_.data_dir, kBloomFile)));
  }
  if (result.ok() && log_) {
    // Only a stop that persisted everything is clean.
    keep_first(WriteFileAtomically(env_, JoinPath(options_.data_dir, kCleanFile), "clean\n"));
  }
  // The block index's write-back hook uses the log: close the indexes first.
  gc_.reset();
  usage_.reset();
  block_index_.reset();
  chunk_index_.reset();
  log_.reset();
  volumes_.clear();
  lock_.reset();
  return result;
}

}  // namespace dedupv1

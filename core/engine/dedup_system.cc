#include "core/engine/dedup_system.h"

#include "core/engine/data_dir.h"
#include "core/engine/memory_tuning.h"
#include "core/engine/system_file.h"
#include "core/engine/usage_recount.h"
#include "core/engine/volume_table.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "core/base/thread_name.h"
#include "core/engine/cluster_gc_rules.h"
#include "core/engine/cluster_scope.h"
#include "core/engine/dedup_scope.h"
#include "core/engine/gc_host.h"
#include "core/rados/store_layout.h"
#include "filters/filter_registry.h"
#include "index/block_mapping.h"
#include "log/log_event.h"

namespace dedupv1 {
namespace {

const char kLockFile[] = "LOCK";

// A block-mapping event's block and new mapping (encoded by the write
// pipeline, core/engine/write_pipeline.cc).
Status DecodeMappingEvent(const std::string& payload, BlockId* id, BlockMapping* mapping) {
  BlockMappingWrittenData data;
  DEDUPV1_RETURN_IF_ERROR(BlockMappingWrittenData::Decode(payload, &data));
  *id = data.block;
  return BlockMapping::Parse(data.new_mapping, *id, mapping);
}

}  // namespace

DedupSystem::DedupSystem(const Options& options, Env* env, std::unique_ptr<StoreEnv> owned_store_env)
    : options_(options),
      owned_store_env_(std::move(owned_store_env)),
      env_(env),
      idle_(options.idle),
      budget_(options.write_buffer_size) {}

Status DedupSystem::OpenConfigFile(const std::string& config_path, const std::string& data_dir_override,
                                   Env* env, std::unique_ptr<DedupSystem>* out) {
  Config config;
  DEDUPV1_RETURN_IF_ERROR(Config::Load(env, config_path, &config));
  if (!data_dir_override.empty()) config.Set("data-dir", data_dir_override);
  Options options;
  DEDUPV1_RETURN_IF_ERROR(Options::FromConfig(config, &options));
  return OpenStore(options, env, out);
}

Status DedupSystem::Open(const Options& options, Env* env, std::unique_ptr<DedupSystem>* out) {
  return OpenOn(options, env, nullptr, out);
}

Status DedupSystem::OpenStore(const Options& options, Env* local, std::unique_ptr<DedupSystem>* out) {
  std::unique_ptr<StoreEnv> store_env;
  DEDUPV1_RETURN_IF_ERROR(StoreEnv::Open(options, local, &store_env));
  if (UsesRados(options)) {
    // The store's own lock is in RADOS (taken by PrepareDataDir through the
    // store's Env); the gateway's local data dir is locked too, so dedupv1d
    // and the tools on this machine see an open engine as they do for a
    // local store.
    DEDUPV1_RETURN_IF_ERROR(store_env->LockGatewayDir(local));
  }
  Env* env = store_env->env();
  return OpenOn(options, env, std::move(store_env), out);
}

Status DedupSystem::OpenOn(const Options& options, Env* env, std::unique_ptr<StoreEnv> owned_store_env,
                           std::unique_ptr<DedupSystem>* out) {
  TuneAllocatorForLargeBuffers();
  std::unique_ptr<DedupSystem> sys(new DedupSystem(options, env, std::move(owned_store_env)));
  Status s = sys->Init();
  if (!s.ok()) {
    sys->stop_ = true;
    return s;
  }
  *out = std::move(sys);
  return Status::OK();
}

// GcHost over this system's parts: what garbage collection may use.
class DedupSystem::GcAccess : public GcHost {
 public:
  explicit GcAccess(DedupSystem* sys) : sys_(sys) {}
  ChunkStore* chunk_store() override { return sys_->chunk_store_.get(); }
  ChunkIndex* chunk_index() override { return sys_->chunk_index_.get(); }
  OperationsLog* log() override { return sys_->log_.get(); }
  UsageCounter* usage() override { return sys_->usage_.get(); }
  Status Checkpoint() override { return sys_->Checkpoint(); }
  Status Persist() override { return sys_->Persist(); }
  GcBarrier* gc_barrier() override { return &sys_->pipeline_->gc_barrier(); }
  FingerprintLocks* fingerprint_locks() override { return &sys_->pipeline_->fingerprint_locks(); }
  void OnChunksMarkedDead() override { sys_->pipeline_->OnChunksMarkedDead(); }
  void WaitForInstalledMappings() override { (void)sys_->pipeline_->LastAppliedEventId(); }
  Status ForEachMapping(const std::function<void(const BlockMapping&)>& f, bool* complete) override {
    *complete = true;
    return sys_->block_index_->ForEachBlock(
        [&](const BlockId&, const BlockMapping& mapping) {
          f(mapping);
          return true;
        },
        [&](const std::string&, const Status&) { *complete = false; });
  }
  ClusterGcRules* cluster_rules() override { return sys_->cluster_gc_rules_.get(); }

 private:
  DedupSystem* const sys_;
};

// VolumeHost over this system: what a volume asks of it.
class DedupSystem::VolumeAccess : public VolumeHost {
 public:
  explicit VolumeAccess(DedupSystem* sys) : sys_(sys) {}
  Status AdmitWrite() override {
    DEDUPV1_RETURN_IF_ERROR(sys_->PendingError());
    sys_->budget_.WaitForSpace(&sys_->refuse_waiting_writers_);
    // Woken because the buffer may never drain (a processing error, or the
    // chunk index is full and parked runs keep the buffer full): refuse
    // instead of waiting for ever.
    return sys_->WriteRefusal();
  }
  uint64_t current_epoch() const override { return sys_->epoch_.load(); }
  void BufferedWrite(uint64_t dirty_stretch) override { sys_->BufferedWrite(dirty_stretch); }
  Status WaitForLogSpace() override { return sys_->WaitForLogSpace(); }
  Status Sync() override { return sys_->Sync(); }

 private:
  DedupSystem* const sys_;
};

Status DedupSystem::Init() {
  if (UsesRados(options_)) DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(options_.rados, &rados_));
  DEDUPV1_RETURN_IF_ERROR(PrepareDataDir());
  std::unique_ptr<Chunker> chunker;
  DEDUPV1_RETURN_IF_ERROR(Chunker::Create(options_.chunking, &chunker));
  recovery_.dirty_start = !creating_ && !env_->FileExists(JoinPath(options_.data_dir, kCleanFileName));
  DEDUPV1_RETURN_IF_ERROR(OpenLog());
  DEDUPV1_RETURN_IF_ERROR(OpenStores());

  WritePipeline::Parts parts;
  parts.block_size = options_.block_size;
  parts.fingerprint = options_.fingerprint;
  parts.chunker = std::move(chunker);
  parts.chunk_store = chunk_store_.get();
  parts.block_index = block_index_.get();
  parts.log = log_.get();
  parts.block_locks = &block_locks_;
  parts.stats = &stats_;
  parts.wake_workers = [this] { WakeWorkers(); };
  if (chunk_index_->cluster_scope()) parts.claim_index = chunk_index_.get();
  parts.rewrite = options_.rewrite;
  parts.selective_threshold = options_.selective_threshold;
  // usage_ is made just below, before any run (and stays until Close).
  parts.copy_replaced = [this](ContainerId old) { usage_->NoteCopyReplaced(old); };
  pipeline_ = std::make_unique<WritePipeline>(std::move(parts));
  // Every event still in the log may be uncounted (idempotent per entry).
  usage_ = std::make_unique<UsageCounter>(log_.get(), chunk_index_.get(), chunk_store_.get(), log_->head_id());
  if (chunk_index_->cluster_scope()) {
    cluster_gc_rules_ = std::make_unique<ClusterGcRules>(chunk_store_.get(), rados_, options_.rados.gateway);
  }
  gc_host_ = std::make_unique<GcAccess>(this);
  volume_host_ = std::make_unique<VolumeAccess>(this);
  gc_ = std::make_unique<GarbageCollector>(gc_host_.get());
  if (chunk_index_->cluster_scope()) {
    ClusterGcOptions cluster_gc;
    cluster_gc.claim_hold_ms = options_.chunk_index.claims.claim_hold_ms;
    ChunkStore* store = chunk_store_.get();
    cluster_gc.container_exists = [store](ContainerId id, bool* exists) { return store->ContainerExists(id, exists); };
    cluster_gc.container_holds = [store](ContainerId id, const Fingerprint& fp, bool* holds) {
      std::string data;  // one chunk's bytes, verified by its fingerprint
      Status r = store->ReadChunk(id, fp, &data);
      *holds = r.ok();
      return r.IsNotFound() ? Status::OK() : r;
    };
    cluster_gc.stop = [this] { return stop_.load(); };
    cluster_gc_ = std::make_unique<ClusterIndexGc>(rados_, chunk_index_->shared_table(), cluster_gc);
    GcEpochFollower::Hooks hooks;
    hooks.set_epoch = [this](uint64_t epoch) {
      GcBarrier::Exclusive barrier(&pipeline_->gc_barrier());  // no run between lookups and logged mappings
      chunk_index_->SetGcEpoch(epoch);
    };
    hooks.checkpoint = [this] { return Checkpoint(); };
    gc_epochs_ = std::make_unique<GcEpochFollower>(rados_, options_.rados.gateway, gateway_record_.incarnation, hooks);
    DEDUPV1_RETURN_IF_ERROR(gc_epochs_->Open());  // before recovery's and the workers' first claims
  }

  DEDUPV1_RETURN_IF_ERROR(LoadVolumes());
  Status s = Recover();
  if (!s.ok()) return s.WithContext("recovery from the operations log");
  // Logged after recovery, so a replay at open sees only the previous run's
  // events. Records only: replay and usage counting skip them.
  SystemEventData start;
  start.dirty_start = recovery_.dirty_start;
  LogStart(start);
  // After recovery: a rebuilt bloom filter must see the re-imported chunks.
  DEDUPV1_RETURN_IF_ERROR(BuildFilterChain());
  DEDUPV1_RETURN_IF_ERROR(FinishCreating());
  for (int i = 0; i < options_.dedup_threads; i++) {
    workers_.emplace_back([this, i] {
      NameThisThread("dd-worker-" + std::to_string(i));
      WorkerLoop(i);
    });
  }
  // An offline tool's open: busy from the first sample on (ForceIdle can
  // still change it), so the loop checkpoints only at the log's soft limit.
  if (!options_.background_work) idle_.SetMode(IdleMode::kBusy);
  checkpoint_thread_ = std::thread([this] {
    NameThisThread("dd-checkpoint");
    CheckpointLoop();
  });
  StartBackgroundDedup();
  LogRecord(LogEventType::kSystemRun, start.Encode());
  open_complete_ = true;
  return Status::OK();
}

Status DedupSystem::PrepareDataDir() {
  const bool slot = UsesRados(options_) && !options_.rados.gateway.empty();
  // Before creating anything: slots and a store without them never share a namespace.
  if (UsesRados(options_)) DEDUPV1_RETURN_IF_ERROR(CheckStoreLayout(rados_.get(), options_.rados));
  Status s = env_->CreateDirs(options_.data_dir);
  if (!s.ok()) return s.WithContext("cannot create data directory");
  DEDUPV1_RETURN_IF_ERROR(env_->LockFile(JoinPath(options_.data_dir, kLockFile), &lock_));
  if (slot) {
    // Holding the slot's lock: this open is the slot's next incarnation.
    // The slot number (its container id range) is fixed at registration.
    GatewayRegistry registry(rados_);
    DEDUPV1_RETURN_IF_ERROR(registry.Register(options_.rados.gateway, &gateway_record_));
    DEDUPV1_RETURN_IF_ERROR(registry.BeginIncarnation(options_.rados.gateway, options_.gateway_takeover, &gateway_record_));
  }
  // A store that lacks a file its data depends on is refused here, before
  // anything could recreate the file empty.
  DataDirState state;
  DEDUPV1_RETURN_IF_ERROR(InspectDataDir(env_, options_, &state));
  creating_ = state != DataDirState::kStore;
  if (state == DataDirState::kFresh) {
    // Before any other file, so that a creation failing half way is resumed.
    s = WriteFileAtomically(env_, JoinPath(options_.data_dir, kCreatingFileName),
                            "a dedupv1 store is being created here; this file goes when it is complete\n");
    if (!s.ok()) return s.WithContext("cannot create a store in " + options_.data_dir);
  }
  DEDUPV1_RETURN_IF_ERROR(CheckSystemMetadata());
  return LoadOrCreateInstanceId(env_, options_.data_dir, &instance_id_);
}

Status DedupSystem::OpenLog() {
  DEDUPV1_RETURN_IF_ERROR(env_->CreateDirs(DirName(options_.log.path)));
  Status s = OperationsLog::Open(options_.log, env_, &log_);
  if (!s.ok()) {
    // The log's own messages mostly name its file; a damage report must fit
    // the 512 bytes tgtd's module logs (dedupv1d shows that line).
    if (s.message().find(options_.log.path) != std::string::npos) return s;
    return s.WithContext("open operations log " + options_.log.path);
  }
  // Only once the log opened: a damaged log that refuses the open leaves
  // the clean marker (like the log itself) as it found it.
  if (env_->FileExists(JoinPath(options_.data_dir, kCleanFileName))) {
    DEDUPV1_RETURN_IF_ERROR(env_->DeleteFile(JoinPath(options_.data_dir, kCleanFileName)));
  }
  return Status::OK();
}

Status DedupSystem::OpenStores() {
  DEDUPV1_RETURN_IF_ERROR(env_->CreateDirs(options_.chunk_store.dir));
  Status s = ChunkStore::Open(options_.chunk_store, env_, &chunk_store_);
  if (!s.ok()) return s.WithContext("open container store " + options_.chunk_store.dir);
  ChunkStore* store = chunk_store_.get();
  auto is_committed = [store](ContainerId id) { return store->IsCommitted(id); };
  DEDUPV1_RETURN_IF_ERROR(env_->CreateDirs(DirName(options_.chunk_index.table.path)));
  ChunkIndexOptions chunk_index_options = options_.chunk_index;
  if (UsesRados(options_)) {
    DEDUPV1_RETURN_IF_ERROR(CheckDedupScope(rados_, options_.rados, options_.chunk_index.cluster_scope));
  }
  if (options_.chunk_index.cluster_scope) {
    // Cluster scope (index/chunk_claims.h): the store's shared table, with
    // this incarnation of the slot; mappings may name other slots' containers.
    chunk_index_options.slot = gateway_record_.slot;
    chunk_index_options.slot_incarnation = gateway_record_.incarnation;
    chunk_index_options.claims.container_exists = [store](ContainerId id, bool* exists) {
      return store->ContainerExists(id, exists);
    };
    chunk_index_options.claims.journal_slot = options_.rados.gateway;
    store->AcceptForeignContainers();
  }
  if (options_.cache_budget > 0) {
    // iCache (core/engine/cache_budget.h): half the budget each to start.
    cache_budget_ = std::make_unique<CacheBudget>(options_.cache_budget);
    page_cache_ = std::make_shared<TablePageCache>(cache_budget_->index_bytes(), options_.chunk_index.table.page_size);
    chunk_index_options.table.page_cache = page_cache_;
    ApplyCacheSplit();
  }
  s = ChunkIndex::Open(chunk_index_options, env_, is_committed, &chunk_index_);
  if (!s.ok()) return s.WithContext("open chunk index " + options_.chunk_index.table.path);
  DEDUPV1_RETURN_IF_ERROR(env_->CreateDirs(DirName(options_.block_index.path)));
  BlockIndexOptions block_index_options = options_.block_index;
  // CheckSystemMetadata has recorded this build's format, so old builds
  // refuse the directory before any record is rewritten.
  block_index_options.upgrade_old_records = true;
  OperationsLog* log = log_.get();
  block_index_options.before_write_back = [log] { return log->Sync(); };
  s = BlockIndex::Open(block_index_options, env_, is_committed, &block_index_);
  if (!s.ok()) return s.WithContext("open block index " + options_.block_index.path);
  ConnectContainerEvents();
  return Status::OK();
}

void DedupSystem::ConnectContainerEvents() {
  ChunkIndex* ci = chunk_index_.get();
  BlockIndex* bi = block_index_.get();
  OperationsLog* log = log_.get();
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
}

void DedupSystem::LogStart(const SystemEventData& start) {
  LogRecord(LogEventType::kSystemStart, start.Encode());
  const auto served = Served();  // held for the loop: a change replaces the snapshot
  for (Volume* vol : *served) {
    VolumeEventData attached;
    attached.volume_id = vol->id();
    attached.name = vol->name();
    attached.size = vol->size();
    LogRecord(LogEventType::kVolumeAttached, attached.Encode());
  }
}

Status DedupSystem::FinishCreating() {
  if (!creating_) return Status::OK();
  // Every file exists now; from here on a missing one is a loss.
  const std::string marker = JoinPath(options_.data_dir, kCreatingFileName);
  Status s = env_->DeleteFile(marker);
  if (s.ok()) s = env_->SyncDir(options_.data_dir);
  if (!s.ok()) return s.WithContext("cannot finish creating the store (" + marker + ")");
  creating_ = false;
  return Status::OK();
}

// The system file (core/engine/system_file.h) records what stored data
// depends on; reopening with a config that changes it would misread the
// data, so it is refused.
Status DedupSystem::CheckSystemMetadata() {
  const std::string path = JoinPath(options_.data_dir, kSystemFileName);
  // Nothing is stored while a store is created: a file left by a creation
  // that failed is rewritten (the config may have been corrected since).
  const std::string want = EncodeSystemFile(options_.block_size, options_.fingerprint);
  if (creating_) return WriteFileAtomically(env_, path, want);
  std::string text;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env_, path, &text));
  SystemFileFields stored;
  DEDUPV1_RETURN_IF_ERROR(ParseSystemFile(path, text, &stored));
  DEDUPV1_RETURN_IF_ERROR(
      CheckSystemFileAgainst(options_.data_dir, path, stored, options_.block_size, options_.fingerprint));
  // An older format's file is rewritten in this one before anything of the
  // newer format is written, so a build that only reads the older one
  // refuses the directory from now on.
  if (stored.format_number < kStoreFormat) return WriteFileAtomically(env_, path, want);
  return Status::OK();
}

Status DedupSystem::LoadVolumes() {
  const std::string path = JoinPath(options_.data_dir, kVolumesFileName);
  std::vector<VolumeRecord> records;
  // Written at creation even without volumes, so that its absence always
  // means it was lost (InspectDataDir refuses the directory then).
  const bool create = creating_ && !env_->FileExists(path);
  bool legacy = false;  // written by an older build: no header and checksum yet
  if (!create) DEDUPV1_RETURN_IF_ERROR(ReadVolumeTable(env_, path, &records, &legacy));
  bool changed = false;
  DEDUPV1_RETURN_IF_ERROR(ApplyConfiguredVolumes(options_.volumes, &records, &changed));
  if (changed || create || legacy) DEDUPV1_RETURN_IF_ERROR(WriteVolumeTable(env_, path, records));
  // Only volumes named in the config are served; others keep their data.
  std::lock_guard<std::mutex> l(volumes_mu_);
  ServeVolumesLocked(options_.volumes, records, nullptr);
  return Status::OK();
}

void DedupSystem::ServeVolumesLocked(const std::vector<VolumeOptions>& configured,
                                     const std::vector<VolumeRecord>& records, std::vector<std::string>* changed) {
  const Volume::Context context = VolumeContext();
  bool added = false;
  for (const auto& v : configured) {
    for (const auto& r : records) {
      if (r.name != v.name) continue;
      auto it = volumes_.find(v.name);
      if (it == volumes_.end()) {
        auto vol = std::make_unique<Volume>(context, r.id, v.name, r.size, r.uid);
        vol->SetPolicy(v.policy);
        volumes_[v.name] = std::move(vol);
        added = true;
      } else {
        const bool policy_changed = it->second->policy() != v.policy;
        it->second->SetPolicy(v.policy);  // the runs taken from now on
        if (r.size > it->second->size()) {
          it->second->Grow(r.size);
        } else if (!policy_changed) {
          continue;
        }
      }
      if (changed != nullptr) changed->push_back(v.name);
    }
  }
  if (added) PublishServedLocked();
}

Status DedupSystem::DropVolume(const std::string& name, const std::atomic<bool>* cancel) {
  Volume* vol = nullptr;
  std::unique_ptr<Volume> unserved;  // a volume only the table knows
  {
    std::lock_guard<std::mutex> l(volumes_mu_);
    auto it = volumes_.find(name);
    if (it != volumes_.end()) vol = it->second.get();
  }
  if (vol == nullptr) {
    std::vector<VolumeRecord> records;
    DEDUPV1_RETURN_IF_ERROR(ReadVolumeTable(env_, JoinPath(options_.data_dir, kVolumesFileName), &records));
    for (const auto& r : records) {
      if (r.name == name) unserved = std::make_unique<Volume>(VolumeContext(), r.id, r.name, r.size, r.uid);
    }
    if (unserved == nullptr) return Status::NotFound("no volume named '" + name + "' in the volume table");
    vol = unserved.get();
  }
  // Through the write path's own unmap (logged, usage counted), at most 64
  // blocks per call (each call waits for log space, as an initiator's UNMAP
  // does), mapped runs only; then one sync makes every unmap durable before
  // the caller forgets the volume.
  const uint64_t step = 64ull * options_.block_size;
  for (uint64_t offset = 0; offset < vol->size();) {
    if (cancel != nullptr && cancel->load()) {
      return Status::Aborted("drop volume " + name + ": interrupted at byte " + std::to_string(offset) +
                             " of " + std::to_string(vol->size()) + " (the system is closing); run it again");
    }
    bool mapped = false;
    uint64_t run = 0;
    const uint64_t length = std::min(step, vol->size() - offset);
    Status s = vol->IsMapped(offset, length, &mapped, &run);
    if (s.ok() && mapped) s = vol->Unmap(offset, run);
    if (!s.ok()) return s.WithContext("drop volume " + name);
    offset += run > 0 ? run : length;
  }
  Status s = vol->Sync();
  if (!s.ok()) return s.WithContext("drop volume " + name);
  if (unserved == nullptr) {
    std::lock_guard<std::mutex> l(volumes_mu_);
    auto it = volumes_.find(name);
    if (it != volumes_.end() && it->second.get() == vol) {
      retired_volumes_.push_back(std::move(it->second));
      volumes_.erase(it);
      PublishServedLocked();
    }
  }
  return Status::OK();
}

Volume::Context DedupSystem::VolumeContext() {
  Volume::Context context;
  context.host = volume_host_.get();
  context.pipeline = pipeline_.get();
  context.block_locks = &block_locks_;
  context.block_index = block_index_.get();
  context.chunk_store = chunk_store_.get();
  context.budget = &budget_;
  context.stats = &stats_;
  context.block_size = options_.block_size;
  context.fingerprint = options_.fingerprint;
  return context;
}

void DedupSystem::PublishServedLocked() {
  auto list = std::make_shared<std::vector<Volume*>>();
  for (auto& [_, vol] : volumes_) list->push_back(vol.get());
  served_.store(std::move(list));
}

Status DedupSystem::ApplyVolumes(const std::vector<VolumeOptions>& configured, std::vector<std::string>* changed) {
  for (const auto& v : configured) {
    // Options::Finish refuses it for the config it reads; a config changed
    // since the open (another dedup-scope) must not reach this store either.
    if (options_.chunk_index.cluster_scope && v.policy != DedupPolicy::kInline) {
      return Status::InvalidArgument("volume " + v.name + ": policy=" + DedupPolicyName(v.policy) +
                                     " is refused in a cluster-scope store (storage.rados.dedup-scope = cluster)");
    }
  }
  std::lock_guard<std::mutex> l(volumes_mu_);
  const std::string path = JoinPath(options_.data_dir, kVolumesFileName);
  std::vector<VolumeRecord> records;
  DEDUPV1_RETURN_IF_ERROR(ReadVolumeTable(env_, path, &records));
  bool table_changed = false;
  DEDUPV1_RETURN_IF_ERROR(ApplyConfiguredVolumes(configured, &records, &table_changed));
  if (table_changed) DEDUPV1_RETURN_IF_ERROR(WriteVolumeTable(env_, path, records));
  std::vector<std::string> served;
  ServeVolumesLocked(configured, records, &served);
  for (const auto& name : served) {
    const Volume& vol = *volumes_[name];
    VolumeEventData attached;  // the volume as served from now on (a record for the log's readers)
    attached.volume_id = vol.id();
    attached.name = vol.name();
    attached.size = vol.size();
    LogRecord(LogEventType::kVolumeAttached, attached.Encode());
  }
  if (changed != nullptr) changed->insert(changed->end(), served.begin(), served.end());
  return Status::OK();
}

Status DedupSystem::LoadBloomFilter(bool* trusted) {
  // The bloom filter is saved at a clean close and removed when loaded, so a
  // file that exists is current. Without one, a store that already holds
  // chunks cannot trust an empty bloom filter, and the filter is left out.
  const std::string bloom_path = JoinPath(options_.data_dir, kBloomFileName);
  bool bloom_ok = false;
  if (env_->FileExists(bloom_path)) {
    Status s = BloomSet::Load(env_, bloom_path, &bloom_);
    bloom_ok = s.ok();
    // A damaged filter is only a cache lost, but damage on the disk is news
    // for the admin (and dedupv1_check shows it).
    if (!bloom_ok) {
      std::fprintf(stderr, "dedupv1: %s; rebuilding the bloom filter from the chunk index\n", s.ToString().c_str());
    }
    env_->DeleteFile(bloom_path);
  }
  if (!bloom_ok) {
    // No current bloom file (first start, or an unclean stop): build the
    // filter from the chunk index, which holds every stored chunk (Recover
    // has re-imported the containers the table was missing).
    bloom_.reset();
    DEDUPV1_RETURN_IF_ERROR(BloomSet::Create(options_.filters.bloom_expected_chunks,
                                             options_.filters.bloom_false_positive_rate, &bloom_));
    if (chunk_index_->stats().persistent_entries + chunk_index_->stats().aux_entries > 0) {
      BloomSet* bloom = bloom_.get();
      Status s = chunk_index_->ForEachFingerprint([bloom](const Fingerprint& fp) { bloom->Add(fp); });
      if (!s.ok()) return s.WithContext("rebuild the bloom filter from the chunk index");
    }
    bloom_ok = true;
  }
  *trusted = bloom_ok;
  return Status::OK();
}

Status DedupSystem::BuildFilterChain() {
  const bool cluster = options_.chunk_index.cluster_scope;  // core/engine/cluster_scope.h
  bool bloom_trusted = false;
  if (!cluster) DEDUPV1_RETURN_IF_ERROR(LoadBloomFilter(&bloom_trusted));
  FilterInputs inputs;
  inputs.chunk_store = chunk_store_.get();
  inputs.chunk_index = chunk_index_.get();
  inputs.bloom = bloom_trusted ? bloom_.get() : nullptr;
  inputs.container_cache_containers = options_.filters.container_cache_containers;
  FilterChain chain;
  DEDUPV1_RETURN_IF_ERROR(dedupv1::BuildFilterChain(
      cluster ? ClusterScopeFilterChain(options_.filter_chain) : options_.filter_chain, inputs, &chain));
  pipeline_->InstallFilterChain(std::move(chain));
  return Status::OK();
}

DedupSystem::~DedupSystem() {
  Close();
}

Status DedupSystem::GetVolume(const std::string& name, Volume** volume) {
  std::lock_guard<std::mutex> l(volumes_mu_);
  auto it = volumes_.find(name);
  if (it == volumes_.end()) {
    std::string names;
    for (const auto& [n, _] : volumes_) names += (names.empty() ? "" : ", ") + n;
    return Status::NotFound("no volume named '" + name + "' (volumes: " + (names.empty() ? "none" : names) + ")");
  }
  *volume = it->second.get();
  return Status::OK();
}

std::vector<Volume*> DedupSystem::volumes() { return *Served(); }

void DedupSystem::WakeWorkers() {
  {
    std::lock_guard<std::mutex> l(work_mu_);
    work_signals_++;
  }
  work_cv_.notify_one();
}

void DedupSystem::BufferedWrite(uint64_t dirty_stretch) {
  // Waking the workers for every small random write had them search the
  // buffers thousands of times a second for runs that were not ready, with
  // the buffer's mutex held that writers need. And a wake-up costs the
  // writer itself: a futex call, and on shared cores often a switch to the
  // woken worker before the write is acknowledged. So only a stream's
  // stretch (several chunks long) wakes them, or buffers short of space;
  // random requests, ready or not, wait for the workers' own next look (a
  // quarter of the flush delay). Measured on random 4-64 KiB writes
  // (docs/benchmarks.md 13): waking for every stretch a chunk long, once
  // per megabyte written, or looking every 20 ms while data is buffered all
  // gave a higher p99 than this.
  if (dirty_stretch >= 4 * ReadyRunBytes() || budget_.UnderPressure()) WakeWorkers();
}

size_t DedupSystem::ReadyRunBytes() const { return pipeline_->chunker().options().max_size; }

WriteBuffer::ClaimPolicy DedupSystem::CurrentPolicy() const {
  WriteBuffer::ClaimPolicy p;
  p.min_ready_bytes = ReadyRunBytes();
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
    // Read before the pass: a wake-up that comes while the pass finds
    // nothing (a write that completed a run behind it) ends the wait below.
    uint64_t seen;
    {
      std::lock_guard<std::mutex> l(work_mu_);
      seen = work_signals_;
    }
    WriteBuffer::ClaimPolicy policy = CurrentPolicy();
    const auto served = Served();  // held for the loop: a change replaces the snapshot
    for (Volume* vol : *served) {
      Volume::RunOutcome run;
      for (;;) {
        // Read before the run is claimed (ClearIndexFull).
        const uint64_t full_marks = index_full_marks_.load();
        if (stop_.load() || !vol->ProcessOneRun(policy, &run)) break;
        did_work = true;
        if (run.parked) {
          // Only this run needs chunk-index space: the others go on (data
          // that is known or zero needs no entry); a sync reports it.
          SetIndexFull(run.error);
          progress_cv_.notify_all();
          continue;
        }
        if (!run.error.ok()) {
          RecordError(run.error);
          failed = true;
          break;
        }
        if (run.new_chunks) ClearIndexFull(full_marks);
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
  refuse_waiting_writers_ = !s.ok() || !index_full_.ok() || stop_.load();
  // Release(0) takes the budget's lock before notifying, so a writer between
  // its check and its wait cannot miss the wake-up.
  if (!s.ok()) budget_.Release(0);
}

Status DedupSystem::PendingError() const {
  std::lock_guard<std::mutex> l(error_mu_);
  return error_;
}

void DedupSystem::SetIndexFull(const Status& s) {
  stats_.errors++;
  std::lock_guard<std::mutex> l(error_mu_);
  index_full_ = s;
  index_full_marks_++;
  refuse_waiting_writers_ = true;
  budget_.Release(0);  // wakes writers waiting for space the parked runs may keep
}

void DedupSystem::ClearIndexFull(uint64_t full_marks) {
  std::lock_guard<std::mutex> l(error_mu_);
  if (index_full_.ok() || index_full_marks_.load() != full_marks) return;
  index_full_ = Status::OK();
  refuse_waiting_writers_ = !error_.ok() || stop_.load();
}

Status DedupSystem::WriteRefusal() const {
  std::lock_guard<std::mutex> l(error_mu_);
  if (!error_.ok()) return error_;
  // Room in the buffer: the write goes in whatever the index says (its data
  // may be known); none: parked runs may keep it full for ever.
  if (!index_full_.ok() && budget_.used() >= budget_.limit()) return index_full_;
  return Status::OK();
}

Status DedupSystem::ReportParked(uint64_t epoch, bool* dropped) {
  *dropped = false;
  Status lost;
  {
    std::lock_guard<std::mutex> l(error_mu_);
    const std::string why = index_full_.ok() ? "chunk index full" : index_full_.message();
    lost = Status::NoSpace(why + ": data written before this sync needed new chunk-index entries and was "
                                 "not stored; those blocks keep what they held before");
  }
  const auto served = Served();  // held for the loop: a change replaces the snapshot
  for (Volume* vol : *served) {
    const std::vector<uint64_t> blocks = vol->buffer().ParkedBlocksUpTo(epoch);
    if (blocks.empty()) continue;
    *dropped = true;
    // Noted before the bytes go, so no Sync of the volume can miss it.
    vol->NoteLostWrites(Status::NoSpace("volume " + vol->name() + ": " + lost.message()));
    for (uint64_t block : blocks) {
      std::unique_lock<std::shared_mutex> lock(block_locks_.For(BlockId{vol->id(), block}));
      vol->buffer().DropParked(block, epoch);
    }
  }
  std::lock_guard<std::mutex> l(error_mu_);
  if (!*dropped) return epoch < lost_before_epoch_ ? lost_error_ : Status::OK();
  lost_error_ = lost;
  lost_before_epoch_ = std::max(lost_before_epoch_, epoch_.load());
  return lost_error_;
}

Status DedupSystem::DrainUpTo(uint64_t epoch) {
  uint64_t prev = force_epoch_.load();
  while (prev < epoch && !force_epoch_.compare_exchange_weak(prev, epoch)) {
  }
  // Runs parked for want of chunk-index space get another try if the index
  // has room again (GC erased entries); else they fail this sync at once.
  if (chunk_index_->stats().fill_ratio() < 1.0) {
    const auto served = Served();  // held for the loop: a change replaces the snapshot
    for (Volume* vol : *served) vol->buffer().UnparkAll();
  }
  {
    std::lock_guard<std::mutex> l(work_mu_);
    work_signals_++;
  }
  work_cv_.notify_all();
  std::unique_lock<std::mutex> l(work_mu_);
  for (;;) {
    bool pending = false, parked = false;
    const auto served = Served();  // held for the loop: a change replaces the snapshot
    for (Volume* vol : *served) {
      bool vol_pending = false, vol_parked = false;
      vol->buffer().PendingAndParkedUpTo(epoch, &vol_pending, &vol_parked);
      pending |= vol_pending;
      parked |= vol_parked;
    }
    if (!pending) {
      // What is left is parked: acknowledged, never stored.
      if (parked) {
        l.unlock();  // ReportParked takes block locks
        bool dropped = false;
        Status lost = ReportParked(epoch, &dropped);
        if (dropped || !lost.ok()) return lost;
        l.lock();  // unparked meanwhile: being stored
        progress_cv_.wait_for(l, std::chrono::milliseconds(50));
        continue;
      }
      std::lock_guard<std::mutex> e(error_mu_);
      // Parked bytes this sync covered were dropped by another one meanwhile.
      if (epoch < lost_before_epoch_) return lost_error_;
      return Status::OK();
    }
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

Status DedupSystem::WaitForLogSpace() {
  // Keep a margin below the hard limit: the run that follows (and those of
  // the other workers) append their mapping events while holding the mapping lock
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
  if (options_.chunk_index.cluster_scope) {
    // The claim step's dead marks (claim_step.h) become durable here too,
    // not only at the next GC round: a crash loses only those made since
    // (chunkstore/dead_chunk_marks.h). Cheap when none are pending; before
    // the checkpoint's lock, as the chunk store's GC mutex is taken. A
    // failure leaves them pending (the next call or GC round retries) and
    // costs space only, so it does not fail the checkpoint.
    Status m = chunk_store_->PersistDeadMarks();
    if (!m.ok()) {
      std::fprintf(stderr, "dedupv1: checkpoint: %s\n", m.WithContext("persist dead marks").ToString().c_str());
    }
  }
  std::lock_guard<std::mutex> cp(checkpoint_mu_);
  // Cluster scope: the claim journal's tickets handed back so far belong to
  // runs whose mappings are applied by now, so this checkpoint counts and
  // flips their chunks; once it has, their records can go
  // (index/claim_journal.h). Read before |applied|.
  const uint64_t claims_released = chunk_index_->ClaimsReleased();
  // Every event up to here has been applied in memory.
  const uint64_t applied = pipeline_->LastAppliedEventId();
  if (applied < log_->head_id()) {
    // Nothing to trim: every applied event was counted and its chunks
    // flipped by the checkpoint that trimmed it.
    RetireClaimRecords(claims_released);
    return Status::OK();
  }
  // The replay is recorded (kReplayStarted/kReplayStopped, records only). Not
  // under the mapping lock: an append may wait at the log's hard limit, which only
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
  RetireClaimRecords(claims_released);
  DEDUPV1_RETURN_IF_ERROR(block_index_->Flush());
  // Every container up to the watermark is committed or lost and its chunks
  // are in the chunk index table; recovery re-imports only newer ones.
  DEDUPV1_RETURN_IF_ERROR(WriteCheckpointWatermark(env_, options_.data_dir, watermark));
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

void DedupSystem::RetireClaimRecords(uint64_t up_to) {
  // A failure keeps the records for the next checkpoint (and, after a
  // crash, for index GC): space and GC reads only, so the checkpoint goes on.
  Status s = chunk_index_->RetireClaims(up_to);
  if (!s.ok()) std::fprintf(stderr, "dedupv1: checkpoint: %s\n", s.ToString().c_str());
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
        ReturnFreedMemory();
      }
    }
    // Idle: a GC round if one has work (candidates, garbage not looked at
    // yet, or no round since open; cluster scope: ClusterGcRules::HasWork).
    // A round checkpoints, so not while paused. Cluster scope: the index
    // round first when due (the leader's, design-15 2.6); a failed index
    // round is the GC's (its stats say why), not the writers': they go on,
    // the next round starts over.
    if (s.ok() && idle_work && !paused && !stop_.load() && cluster_gc_) (void)cluster_gc_->RunRoundIfDue();
    // Cluster scope: follow the GC epoch (a checkpoint when it moved, so
    // the leader can finalize, gc_epoch_follower.h); not while paused, which
    // forbids checkpoints: the slot then holds finalization back.
    if (s.ok() && !paused && !stop_.load() && gc_epochs_) NoteFollow(gc_epochs_->Follow());
    StepCacheBudget();
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
  DEDUPV1_RETURN_IF_ERROR(ReadCheckpointWatermark(env_, options_.data_dir, &watermark));
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
  // A damaged log (opened with options.log.accept_damage) also holds intact
  // events after the damage.
  const bool damaged = log_->damage_pending();
  if (!damaged && log_->last_id() < log_->head_id()) return Status::OK();
  if (log_->last_id() >= log_->head_id()) {
    Status s = log_->Replay(log_->head_id(), [&](const LogEvent& e) -> Status {
      recovery_.events_replayed++;
      return ApplyLoggedEvent(e);
    });
    DEDUPV1_RETURN_IF_ERROR(s);
  }
  if (damaged) {
    Status s = log_->ReplaySalvaged([&](const LogEvent& e) -> Status {
      recovery_.events_replayed++;
      recovery_.events_salvaged++;
      return ApplyLoggedEvent(e);
    });
    if (!s.ok()) return s.WithContext("replay the intact events after the log damage");
    DEDUPV1_RETURN_IF_ERROR(AcceptLogDamage());
  }
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

Status DedupSystem::ApplyLoggedEvent(const LogEvent& e) {
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
}

Status DedupSystem::AcceptLogDamage() {
  const LogDamage& damage = log_->damage();
  recovery_.log_damage_accepted = true;
  recovery_.events_lost = damage.lost_events();
  // What the replays restored goes to the stores first: the recount reads
  // it, and the damaged log is discarded only once everything it held is
  // persistent elsewhere. A crash before the discard finds the same damage
  // at the next open and repeats all of this (replaying is idempotent).
  DEDUPV1_RETURN_IF_ERROR(chunk_index_->Flush().WithContext("accept log damage: flush the chunk index"));
  DEDUPV1_RETURN_IF_ERROR(block_index_->Flush().WithContext("accept log damage: flush the block index"));
  // Lost events make the usage counts unreliable: recount every one from the
  // block mappings of every volume ever created (not only the served ones).
  std::vector<VolumeRecord> records;
  DEDUPV1_RETURN_IF_ERROR(ReadVolumeTable(env_, JoinPath(options_.data_dir, kVolumesFileName), &records));
  std::vector<uint32_t> volume_ids;
  for (const auto& r : records) volume_ids.push_back(r.id);
  UsageRecount recount(block_index_.get(), chunk_index_.get(), chunk_store_.get());
  DEDUPV1_RETURN_IF_ERROR(recount.Scan(volume_ids));
  // One id above everything the file, the mappings and the counts have seen:
  // the recount's changes carry it, and the restarted log continues above it
  // (new mapping versions must beat every stored one).
  const uint64_t tag = std::max({recount.stats().newest_id, damage.max_id, log_->last_id()}) + 1;
  DEDUPV1_RETURN_IF_ERROR(recount.Apply(tag));
  DEDUPV1_RETURN_IF_ERROR(chunk_index_->Flush().WithContext("accept log damage: write the recounted usage counts"));
  DEDUPV1_RETURN_IF_ERROR(log_->DiscardDamaged(tag + 1));
  // Everything before the new head is counted (by the recount).
  usage_ = std::make_unique<UsageCounter>(log_.get(), chunk_index_.get(), chunk_store_.get(), log_->head_id());
  const UsageRecountStats& st = recount.stats();
  recovery_.usage_counts_raised = st.counts_raised;
  recovery_.usage_counts_lowered = st.counts_lowered;
  recovery_.usage_entries_restored = st.entries_restored;
  recovery_.usage_unresolved = st.unresolved;
  recovery_.log_restarted_at = log_->head_id();
  std::fprintf(stderr,
               "dedupv1: accepted the damage of operations log %s: %llu events lost, %llu intact events after "
               "the damage replayed; usage counts recounted from %llu block mappings (%llu raised, %llu "
               "lowered, %llu entries re-added); the log restarts at event %llu\n",
               options_.log.path.c_str(), (unsigned long long)recovery_.events_lost,
               (unsigned long long)recovery_.events_salvaged, (unsigned long long)st.blocks,
               (unsigned long long)st.counts_raised, (unsigned long long)st.counts_lowered,
               (unsigned long long)st.entries_restored, (unsigned long long)recovery_.log_restarted_at);
  return Status::OK();
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

void DedupSystem::ApplyCacheSplit() {
  page_cache_->SetCapacity(cache_budget_->index_bytes());
  chunk_store_->SetReadCacheContainers(
      std::max<uint64_t>(1, cache_budget_->read_bytes() / options_.chunk_store.container_size));
}

void DedupSystem::StepCacheBudget() {
  if (!cache_budget_) return;
  // The counters are read under the lock, so two steps never see them out of order.
  std::lock_guard<std::mutex> l(cache_mu_);
  const TablePageCache::Counters index = page_cache_->counters();
  const ChunkStoreStats store = chunk_store_->stats();
  if (cache_budget_->Step({index.hits, index.misses, index.ghost_hits},
                          {store.read_cache_hits, store.read_cache_misses, store.read_cache_ghost_hits})) {
    ApplyCacheSplit();
  }
}

DedupSystem::CacheInfo DedupSystem::cache_info() const {
  CacheInfo info;
  if (!cache_budget_) return info;
  info.enabled = true;
  std::lock_guard<std::mutex> l(cache_mu_);  // the split and the capacities agree
  info.index = page_cache_->counters();
  const ChunkStoreStats store = chunk_store_->stats();
  info.read_hits = store.read_cache_hits;
  info.read_misses = store.read_cache_misses;
  info.read_ghost_hits = store.read_cache_ghost_hits;
  info.read_capacity_containers = store.read_cache_capacity;
  info.budget_bytes = cache_budget_->budget();
  info.index_bytes = cache_budget_->index_bytes();
  info.read_bytes = cache_budget_->read_bytes();
  info.steps = cache_budget_->steps();
  info.moves_to_index = cache_budget_->moves_to_index();
  info.moves_to_read = cache_budget_->moves_to_read();
  return info;
}

void DedupSystem::StartBackgroundDedup() {
  BackgroundDedup::Parts parts;
  parts.block_size = options_.block_size;
  parts.block_index = block_index_.get();
  parts.chunk_index = chunk_index_.get();
  parts.chunk_store = chunk_store_.get();
  parts.block_locks = &block_locks_;
  parts.pipeline = pipeline_.get();
  parts.wait_for_log_space = [this] { return WaitForLogSpace(); };
  parts.last_event_id = [this] { return pipeline_->LastAppliedEventId(); };
  background_ = std::make_unique<BackgroundDedup>(std::move(parts), options_.background);
  if (!options_.background_work) return;  // RunBackgroundDedup still runs a round on request
  background_->Start([this] { return OutOfBandVolumes(); },
                     [this] {
                       std::lock_guard<std::mutex> l(idle_state_mu_);
                       return idle_.state().idle;
                     });
}

std::vector<uint32_t> DedupSystem::OutOfBandVolumes() const {
  std::vector<uint32_t> ids;
  for (Volume* vol : *Served()) {
    if (vol->policy() == DedupPolicy::kOutOfBand) ids.push_back(vol->id());
  }
  return ids;
}

Status DedupSystem::RunBackgroundDedup(bool ignore_hotspots) {
  if (stop_.load() || !background_) return Status::Aborted("system is shutting down");
  // No pace: the round is the caller's, unthrottled; Close ends it (BackgroundDedup::Stop).
  return background_->RunRound(OutOfBandVolumes(), ignore_hotspots, nullptr);
}

void DedupSystem::StartBackgroundDedupPeriod() {
  if (background_) background_->StartPeriod();
}

BackgroundDedup::Stats DedupSystem::background_dedup_stats() const {
  return background_ ? background_->stats() : BackgroundDedup::Stats();
}

Status DedupSystem::RunGc() {
  if (stop_.load()) return Status::Aborted("system is shutting down");
  // Cluster scope: the index round first (skipped unless this slot leads).
  if (cluster_gc_) {
    DEDUPV1_RETURN_IF_ERROR(cluster_gc_->RunRound());
    // This slot follows a raised epoch at once (the others within a poll),
    // unless replay is paused (no checkpoints then). A failure only delays
    // the index GC (its stats say why); the container round goes on.
    if (!replay_paused_.load()) NoteFollow(gc_epochs_->Advance());
  }
  return gc_->Run();
}

void DedupSystem::NoteFollow(const Status& s) {
  std::lock_guard<std::mutex> l(follow_mu_);
  follow_error_ = s.ok() ? "" : s.ToString();
}

GcStats DedupSystem::gc_stats() const {
  if (!gc_) return GcStats();
  GcStats stats = gc_->stats();
  if (cluster_gc_) stats.cluster_index = cluster_gc_->stats();
  if (gc_epochs_) {
    stats.cluster_index.slot_epoch = gc_epochs_->epoch();
    stats.cluster_index.slot_safe_epoch = gc_epochs_->published();
    std::lock_guard<std::mutex> l(follow_mu_);
    stats.cluster_index.follow_error = follow_error_;
  }
  return stats;
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
  // The pass installs mappings: it ends before the last drain and checkpoint.
  if (background_) background_->Stop();
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
  if (open_complete_ && log_) {
    const auto served = Served();  // held for the loop: a change replaces the snapshot
    for (Volume* vol : *served) {
      VolumeEventData detached;
      detached.volume_id = vol->id();
      detached.name = vol->name();
      detached.size = vol->size();
      LogRecord(LogEventType::kVolumeDetached, detached.Encode());
    }
  }
  // A final checkpoint leaves the log empty, so the next start replays nothing.
  if (open_complete_) keep_first(Checkpoint());
  if (chunk_index_) keep_first(chunk_index_->Close());
  if (block_index_) keep_first(block_index_->Close());
  if (chunk_store_) keep_first(chunk_store_->Close());
  if (bloom_ && result.ok() && open_complete_) {
    keep_first(bloom_->Save(env_, JoinPath(options_.data_dir, kBloomFileName)));
  }
  if (result.ok() && open_complete_) {
    // Only a stop that persisted everything is clean.
    keep_first(WriteFileAtomically(env_, JoinPath(options_.data_dir, kCleanFileName), "clean\n"));
  }
  if (result.ok() && open_complete_ && gc_epochs_) {
    // Everything counted, no run will start: this incarnation holds no GC
    // finalization back any more. A failure only delays GC (not the close).
    Status p = gc_epochs_->PublishClosed();
    if (!p.ok()) std::fprintf(stderr, "dedupv1: close: %s\n", p.ToString().c_str());
  }
  // The block index's write-back hook uses the log: close the indexes first.
  background_.reset();
  gc_.reset();
  cluster_gc_.reset();
  gc_epochs_.reset();
  usage_.reset();
  block_index_.reset();
  chunk_index_.reset();
  log_.reset();
  {
    std::lock_guard<std::mutex> l(volumes_mu_);
    served_.store(std::make_shared<const std::vector<Volume*>>());
    volumes_.clear();
    retired_volumes_.clear();
  }
  lock_.reset();
  return result;
}

}  // namespace dedupv1

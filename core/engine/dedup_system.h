// DedupSystem is one deduplicating store: a data directory holding the
// containers, the chunk index, the block index and the system's metadata, and
// any number of volumes that deduplicate against each other. There is one per
// process (one per tgtd). Open creates the data directory on first use and
// refuses a config change that would misread stored data (block size,
// fingerprint type, shrinking a volume).
//
// Threads: |dedup_threads| workers take runs of dirty bytes from the volumes'
// write buffers and deduplicate them through the write pipeline
// (core/engine/write_pipeline.h, which also states the lock order); a small pool
// fingerprints chunks in parallel; the chunk store and both indexes run their own background threads
// (container commits, index write-back). The request path never waits for
// index I/O except a chunk-index lookup of a chunk not found in memory.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "chunkstore/chunk_store.h"
#include "core/engine/background_dedup.h"
#include "core/engine/cache_budget.h"
#include "core/engine/block_locks.h"
#include "core/engine/cluster_gc.h"
#include "core/engine/cluster_gc_rules.h"
#include "core/engine/gc_epoch_follower.h"
#include "core/base/env.h"
#include "core/engine/garbage_collector.h"
#include "core/base/identity.h"
#include "core/engine/idle_detector.h"
#include "core/engine/options.h"
#include "core/engine/store_env.h"
#include "core/engine/system_stats.h"
#include "core/base/thread_pool.h"
#include "core/engine/usage_counter.h"
#include "core/engine/volume.h"
#include "core/engine/volume_table.h"
#include "core/engine/write_buffer.h"
#include "core/engine/write_pipeline.h"
#include "core/rados/gateway_registry.h"
#include "filters/bloom_set.h"
#include "filters/filter_chain.h"
#include "index/block_index.h"
#include "index/chunk_index.h"
#include "index/table_page_cache.h"
#include "log/log_event.h"
#include "log/operations_log.h"

namespace dedupv1 {

class DedupSystem {
 public:
  // Opens the store |options| describe, with its files reached through
  // |env|: for a rados store (storage.backend = rados) that is the env of a
  // StoreEnv (core/engine/store_env.h) the caller keeps open longer than
  // the system (tools hold it with their lock); for a local store any Env.
  static Status Open(const Options& options, Env* env, std::unique_ptr<DedupSystem>* out);
  // Opens a StoreEnv for |options| over |local| (which serves a local
  // store) and the system on it; the system owns the StoreEnv.
  static Status OpenStore(const Options& options, Env* local, std::unique_ptr<DedupSystem>* out);
  // Loads |config_path| through |env|; |data_dir_override| (if not empty)
  // replaces data-dir.
  static Status OpenConfigFile(const std::string& config_path, const std::string& data_dir_override, Env* env,
                               std::unique_ptr<DedupSystem>* out);
  ~DedupSystem();

  // Deduplicates everything buffered, commits, writes the indexes back, saves
  // the bloom filter and marks the stop clean. Idempotent.
  Status Close();

  // The volume named |name|, or NotFound listing the known volumes.
  Status GetVolume(const std::string& name, Volume** volume);
  std::vector<Volume*> volumes();
  // Memory all write buffers hold against write-buffer.size (the pages
  // written and each dirty block's bookkeeping); writers wait above it.
  uint64_t write_buffer_used_bytes() const { return budget_.used(); }

  // Applies |configured| (the config's volumes) to the open system as an open
  // would (ApplyConfiguredVolumes, core/engine/volume_table.h): a volume new
  // to the config is added with the next id, one configured larger grows.
  // The volume table is written before anything is served differently, so
  // the change outlives a crash from then on. A volume configured smaller
  // than it is refuses the whole call (InvalidArgument, nothing changed);
  // volumes no longer configured stay served until the system closes.
  // A volume's policy is taken from |configured| too (for the runs claimed
  // after the call); a non-inline policy is refused in cluster scope.
  // |*changed| (if given) gets the names of the volumes added, grown or
  // given another policy.
  Status ApplyVolumes(const std::vector<VolumeOptions>& configured, std::vector<std::string>* changed);

  // Drops the data of volume |name| (an admin's removal, dedupv1d volume
  // remove): the whole volume is unmapped, so its chunks lose their
  // references and GC reclaims them, and the unmaps are made durable. The
  // volume may be one served now (no LUN may hold it: the caller checks) or
  // one only the volume table knows (no longer in the config). A served
  // volume stops being served (GetVolume no longer finds it). Its table line
  // stays: ids are never reused. NotFound when neither knows |name|. It
  // goes a few blocks at a time, skipping what is not mapped, so each step
  // waits for log space like any unmap and a run again after an interruption
  // costs little; |cancel| (if given) set ends it between steps with
  // Aborted, the volume then partly dropped (run it again to finish).
  Status DropVolume(const std::string& name, const std::atomic<bool>* cancel = nullptr);

  // Makes every write acknowledged before the call durable (all volumes).
  Status Sync();

  const Options& options() const { return options_; }
  // The data directory's identity (core/base/identity.h), reported by the monitor.
  const Id128& instance_id() const { return instance_id_; }
  // A gateway slot's registry record as this open wrote it (slot number,
  // incarnation; core/rados/gateway_registry.h); all zero without a gateway.
  const GatewayRecord& gateway_record() const { return gateway_record_; }
  SystemStats& stats() { return stats_; }
  ChunkStore* chunk_store() { return chunk_store_.get(); }
  ChunkIndex* chunk_index() { return chunk_index_.get(); }
  BlockIndex* block_index() { return block_index_.get(); }
  OperationsLog* log() { return log_.get(); }
  // The RADOS connection of a rados store (its op counters and pools, for
  // the monitor); null for a local store.
  RadosCluster* rados() const { return rados_.get(); }

  // Writes the indexes back, commits open containers and trims the
  // operations log up to what is now persistent. Runs in the background when
  // the log passes its soft limit or the system is quiet, and at Close.
  Status Checkpoint() { return Checkpoint(ReplayMode::kBackground); }

  // What the last open found and did.
  struct RecoveryInfo {
    bool dirty_start = false;          // the previous stop was not clean
    uint64_t events_replayed = 0;      // log events read at open
    uint64_t mappings_applied = 0;     // block mappings restored from the log
    uint64_t mappings_dropped = 0;     // mappings of containers that never committed (unsynced data)
    uint64_t containers_imported = 0;  // committed containers re-imported into the chunk index
    // A damaged operations log opened with options.log.accept_damage
    // (dedupv1_replay --accept-log-damage): what the damage cost and what the
    // recovery from it did (docs/durability.md "Damage").
    bool log_damage_accepted = false;
    uint64_t events_lost = 0;           // event ids the damage made unreadable
    uint64_t events_salvaged = 0;       // intact events after the damage, replayed
    uint64_t usage_counts_raised = 0;   // by the recount from the block index
    uint64_t usage_counts_lowered = 0;
    uint64_t usage_entries_restored = 0;   // referenced chunks whose index entry was re-added
    uint64_t usage_unresolved = 0;         // referenced chunks with neither entry nor committed container
    uint64_t log_restarted_at = 0;         // the log's new head event id
  };
  const RecoveryInfo& recovery() const { return recovery_; }
  const FilterChain& filter_chain() const { return pipeline_->filter_chain(); }

  // Stored bytes (after dedup and compression) vs logical bytes deduplicated.
  double DedupRatio() const;

  // Runs one garbage collection round now (core/engine/garbage_collector.h); also
  // run by the checkpoint thread after a quiet-period checkpoint when there
  // are candidates. Aborted once Close started.
  Status RunGc();
  GcStats gc_stats() const;

  // iCache (cache.budget, core/engine/cache_budget.h): the split of the
  // budget and both caches' counters. enabled false without a budget.
  struct CacheInfo {
    bool enabled = false;
    uint64_t budget_bytes = 0;
    uint64_t index_bytes = 0;  // the chunk index table's page cache share
    uint64_t read_bytes = 0;   // the container read cache's share
    TablePageCache::Counters index;
    uint64_t read_hits = 0;
    uint64_t read_misses = 0;
    uint64_t read_ghost_hits = 0;
    uint64_t read_capacity_containers = 0;
    uint64_t steps = 0;  // split decisions taken (one per 4096 cache accesses)
    uint64_t moves_to_index = 0;
    uint64_t moves_to_read = 0;
  };
  CacheInfo cache_info() const;
  // Takes a split decision if one is due (the checkpoint thread does so
  // every tick); public for tests.
  void StepCacheBudget();

  // One round of the out-of-band volumes' pass now (core/engine/background_dedup.h),
  // unthrottled; |ignore_hotspots| takes every block written so far for
  // cold. The pass also runs by itself (dedup.background.*). Aborted once
  // Close started.
  Status RunBackgroundDedup(bool ignore_hotspots);
  BackgroundDedup::Stats background_dedup_stats() const;
  // Starts a new hotspot period of the pass now, as dedup.background.period
  // does (BackgroundDedup::StartPeriod).
  void StartBackgroundDedupPeriod();

  // Idle detection (core/engine/idle_detector.h), sampled by the checkpoint thread
  // every 250 ms. Idle start: the indexes write back everything
  // (SetIdle(true)), then a checkpoint (replays the logged events into usage
  // counts and indexes, trims the log) and a GC round if one has work; every
  // idle tick repeats checkpoint + GC; idle end: SetIdle(false). Forcing
  // kBusy suppresses all idle work; the log's soft and hard limits still
  // checkpoint. Takes effect at the checkpoint thread's next tick.
  void ForceIdle(IdleMode mode);
  // While paused, the checkpoint thread neither checkpoints (at idle or at
  // the log's soft limit) nor runs idle GC rounds. A writer that finds the
  // log at its hard limit still checkpoints (WaitForLogSpace), so writers
  // never wait forever; Close still checkpoints.
  void PauseReplay(bool paused);

  struct IdleInfo {
    IdleState detector;       // mode, idle, throughput, event counts
    bool forced = false;      // mode != auto
    bool replay_paused = false;
    int64_t idle_since_unix = 0;     // start of the current idle period (seconds since the epoch), 0 if busy
    uint64_t loop_ticks = 0;         // checkpoint-thread samples taken
    uint64_t idle_checkpoints = 0;   // checkpoints run at idle start/tick
    uint64_t soft_limit_checkpoints = 0;
    uint64_t soft_limit_throttles = 0;  // dedup runs and unmaps slowed down above the log's soft limit
    uint64_t idle_gc_runs = 0;       // GC rounds run at idle
    uint64_t skipped_paused = 0;     // ticks whose checkpoint was skipped because replay is paused
    IdleOptions options;
  };
  IdleInfo idle_info() const;

 private:
  class GcAccess;      // the GcHost garbage collection uses (dedup_system.cc)
  class VolumeAccess;  // the VolumeHost the volumes use (dedup_system.cc)

  DedupSystem(const Options& options, Env* env, std::unique_ptr<StoreEnv> owned_store_env);
  static Status OpenOn(const Options& options, Env* env, std::unique_ptr<StoreEnv> owned_store_env,
                       std::unique_ptr<DedupSystem>* out);
  // Open's steps, in order.
  Status Init();
  // Creates or checks the data directory: lock, creation marker, system
  // metadata, instance id.
  Status PrepareDataDir();
  Status OpenLog();
  // Chunk store, chunk index, block index, and the container events they log.
  Status OpenStores();
  void ConnectContainerEvents();
  // Logs kSystemStart (|start|) and a kVolumeAttached per served volume.
  void LogStart(const SystemEventData& start);
  // Removes the creation marker of a store created by this open.
  Status FinishCreating();
  // DATA-DIR/system: written while creating_, else read strictly (every line
  // known, each key once) and compared with the config.
  Status CheckSystemMetadata();
  // DATA-DIR/volumes: ids of the configured volumes (new ones get the next
  // ids); missing only while creating_.
  Status LoadVolumes();
  // Loads or rebuilds the bloom filter (|*trusted|: it may be used).
  Status LoadBloomFilter(bool* trusted);
  // The configured filters (filters/filter_registry.h), into the pipeline.
  Status BuildFilterChain();
  Status Recover();
  // Applies one replayed log event to the block index (Recover's rule).
  Status ApplyLoggedEvent(const LogEvent& e);
  // After a damaged log's events were applied: persists the indexes,
  // recounts every usage count from the block index and only then discards
  // the log, so a crash in between finds the damage again and repeats this.
  Status AcceptLogDamage();
  void CheckpointLoop();
  // Keeps the outcome of following the GC epoch for the GC stats.
  void NoteFollow(const Status& s);
  // Checkpoint, logged as a replay of |mode| (kReplayStarted/kReplayStopped
  // around counting the events into usage counts and writing the indexes back).
  Status Checkpoint(ReplayMode mode);
  // Cluster scope: retires the claim journal's tickets up to |up_to| after a
  // checkpoint proved their chunks flipped and counted (errors logged).
  void RetireClaimRecords(uint64_t up_to);
  // Appends a record-only event (no state depends on it): failures are ignored.
  void LogRecord(LogEventType type, const std::string& payload);
  // Waits while the log is nearly full (before any block lock is taken, so
  // the checkpoint that trims it can run).
  Status WaitForLogSpace();
  void WorkerLoop(int index);
  void WakeWorkers();
  // A volume buffered a write (VolumeHost::BufferedWrite).
  void BufferedWrite(uint64_t dirty_stretch);
  // A run this long holds a complete chunk, so it is ready before its flush
  // delay (ClaimPolicy::min_ready_bytes; BufferedWrite wakes the workers for
  // stretches four times as long).
  size_t ReadyRunBytes() const;
  WriteBuffer::ClaimPolicy CurrentPolicy() const;
  // Waits until every volume's bytes dirtied at or before |epoch| are deduplicated.
  Status DrainUpTo(uint64_t epoch);
  // Makes deduplicated data durable: commit containers, sync the log.
  Status Persist();
  void RecordError(const Status& s);
  // Sets or clears (OK) the pending error; requires error_mu_.
  void SetErrorLocked(const Status& s);
  Status PendingError() const;
  // The chunk index is full (a run was parked with |s|) or has room again
  // (a run stored new chunks). While it is full, writers that would wait for
  // write-buffer space are refused with |s|: parked runs may fill the buffer.
  // |full_marks| is index_full_marks_ as read before the run that stored new
  // chunks was claimed: a run that began before the index was last found
  // full says nothing about room now, and clearing on its word would leave
  // writers waiting for space that the parked runs keep (no later run parks
  // to wake them).
  void SetIndexFull(const Status& s);
  void ClearIndexFull(uint64_t full_marks);
  // After Write waited for write-buffer space: the error that refuses it (a
  // pending error, or the chunk index full while the buffer is still full).
  Status WriteRefusal() const;
  // Called by DrainUpTo when only parked bytes are left among those a sync
  // of |epoch| covers: drops them (the blocks keep what they held before, as
  // after a crash) and returns the error that fails this sync and every other
  // sync begun before the drop; later syncs do not report it again. Sets
  // |*dropped| false (and returns OK) if it found nothing to drop after all
  // (another sync unparked the bytes meanwhile): the caller waits on.
  Status ReportParked(uint64_t epoch, bool* dropped);

  const Options options_;
  // Set by OpenStore (first member: destroyed after everything using env_).
  const std::unique_ptr<StoreEnv> owned_store_env_;
  Env* const env_;  // where the store's files are
  // A rados store's connection (shared, RadosCluster::Shared): its op
  // counters are the monitor's backend figures. Null for a local store.
  std::shared_ptr<RadosCluster> rados_;
  std::unique_ptr<FileLock> lock_;
  Id128 instance_id_{};
  GatewayRecord gateway_record_;
  std::unique_ptr<ChunkStore> chunk_store_;
  std::unique_ptr<ChunkIndex> chunk_index_;
  std::unique_ptr<BlockIndex> block_index_;
  std::unique_ptr<OperationsLog> log_;
  std::mutex checkpoint_mu_;  // one checkpoint at a time; taken before the pipeline's mapping lock
  std::unique_ptr<UsageCounter> usage_;
  std::unique_ptr<ClusterGcRules> cluster_gc_rules_;  // cluster scope only
  std::unique_ptr<GcAccess> gc_host_;
  std::unique_ptr<VolumeAccess> volume_host_;
  std::unique_ptr<GarbageCollector> gc_;
  std::unique_ptr<ClusterIndexGc> cluster_gc_;  // cluster scope only: the index rounds (design-15 2.6)
  std::unique_ptr<BackgroundDedup> background_;  // the out-of-band volumes' pass
  // iCache (cache.budget): both null without a budget. cache_budget_ is
  // guarded by cache_mu_; the caches lock themselves.
  std::shared_ptr<TablePageCache> page_cache_;
  std::unique_ptr<CacheBudget> cache_budget_;
  mutable std::mutex cache_mu_;
  std::unique_ptr<GcEpochFollower> gc_epochs_;  // cluster scope only: this slot's GC epoch and safe epoch
  mutable std::mutex follow_mu_;
  std::string follow_error_;  // guarded by follow_mu_: of the last failed Follow/Advance, "" after a success
  std::thread checkpoint_thread_;
  IdleDetector idle_;
  std::mutex loop_mu_;
  std::condition_variable loop_cv_;  // wakes the checkpoint thread (stop, forced mode)
  uint64_t loop_wake_ = 0;           // guarded by loop_mu_
  std::atomic<bool> replay_paused_{false};
  std::atomic<int64_t> idle_since_unix_{0};
  // Held while the loop updates the detector and idle_since_unix_, and while
  // idle_info reads them, so a reader never sees idle without its start.
  mutable std::mutex idle_state_mu_;
  std::atomic<uint64_t> loop_ticks_{0}, idle_checkpoints_{0}, soft_limit_checkpoints_{0}, soft_limit_throttles_{0}, idle_gc_runs_{0},
      skipped_paused_{0};
  RecoveryInfo recovery_;
  // The data directory held no complete store at open (core/engine/data_dir.h):
  // this open creates it, and removes the `creating` marker when done.
  bool creating_ = false;
  std::unique_ptr<BloomSet> bloom_;
  BlockLocks block_locks_;
  WriteBufferBudget budget_;
  SystemStats stats_;
  // The write path behind the write buffers (core/engine/write_pipeline.h): chunker,
  // fingerprinting, filter chain, mapping install, and their locks (the GC
  // barrier, the fingerprint locks, the mapping lock). Created before
  // recovery, whose checkpoints take its mapping lock; it gets its filter
  // chain after recovery.
  std::unique_ptr<WritePipeline> pipeline_;
  // Volumes by name. Added to while the system serves (ApplyVolumes), never
  // removed before Close: |volumes_mu_| guards the map, and readers that run
  // concurrently (the workers, syncs) iterate |served_|, a snapshot replaced
  // whole on every change, so they never take a lock for it.
  std::mutex volumes_mu_;
  std::map<std::string, std::unique_ptr<Volume>> volumes_;
  std::atomic<std::shared_ptr<const std::vector<Volume*>>> served_{std::make_shared<const std::vector<Volume*>>()};
  // Volumes dropped while served (DropVolume): kept until Close, as a worker
  // may still hold an older snapshot of |served_| naming them.
  std::vector<std::unique_ptr<Volume>> retired_volumes_;
  std::shared_ptr<const std::vector<Volume*>> Served() const { return served_.load(); }
  // The ids of the served volumes whose policy is out-of-band.
  std::vector<uint32_t> OutOfBandVolumes() const;
  // Gives both caches their share of cache_budget_ (page cache bytes, read
  // cache containers).
  void ApplyCacheSplit();
  // Makes and starts the pass of out-of-band volumes (Init's last step).
  void StartBackgroundDedup();
  void PublishServedLocked();  // |volumes_mu_| held: |served_| = the map's volumes
  Volume::Context VolumeContext();
  // |volumes_mu_| held: serves each of |configured| as |records| (the volume
  // table, already brought in line with it) says: a volume not served yet is
  // added, one served smaller grows. |*changed| (if given) gets their names.
  void ServeVolumesLocked(const std::vector<VolumeOptions>& configured, const std::vector<VolumeRecord>& records,
                          std::vector<std::string>* changed);

  // Sync epochs: a write stamps its block with the current epoch; a sync
  // takes a new epoch and waits for all blocks stamped at or before it.
  std::atomic<uint64_t> epoch_{1};
  std::atomic<uint64_t> force_epoch_{0};
  std::atomic<bool> force_all_{false};

  std::mutex work_mu_;
  std::condition_variable work_cv_;     // workers wait for work
  std::condition_variable progress_cv_; // syncs wait for workers
  uint64_t work_signals_ = 0;
  std::atomic<bool> stop_{false};
  bool closed_ = false;
  // Init finished. Close checkpoints and marks the stop clean only then: after
  // a failed open a checkpoint could trim log events recovery never applied,
  // and a clean marker would hide the unclean stop from the next open.
  bool open_complete_ = false;
  std::vector<std::thread> workers_;

  std::mutex persist_mu_;  // one Persist at a time
  mutable std::mutex error_mu_;
  Status error_;           // last processing error, cleared when a run succeeds
  // True while error_ is set, the chunk index is full or the system stops:
  // writers waiting for write-buffer space give up then, as the buffer may
  // never drain.
  std::atomic<bool> refuse_waiting_writers_{false};
  // The chunk index is full: the status of the last parked run, else OK.
  Status index_full_;
  // How often SetIndexFull was called (written under error_mu_).
  std::atomic<uint64_t> index_full_marks_{0};
  // Parked bytes a sync dropped (ReportParked): a sync whose epoch is below
  // lost_before_epoch_ began before the drop and fails with lost_error_.
  uint64_t lost_before_epoch_ = 0;
  Status lost_error_;
};

}  // namespace dedupv1

#include "target/monitor/status_collector.h"

#include <sstream>
#include <vector>

#ifndef DEDUPV1_VERSION
#define DEDUPV1_VERSION "unknown"
#endif

namespace dedupv1 {

namespace {

Json NotAvailable(const std::string& what) {
  Json j;
  j["available"] = false;
  j["message"] = what + " is not available in this version";
  return j;
}

// part / whole, or 0 when whole is 0.
double Fraction(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Json SampleJson(const ThroughputSample& s) {
  Json j;
  j["time_ms"] = s.time_ms;
  j["interval_seconds"] = s.interval_seconds;
  j["write_bytes_per_second"] = s.write_bytes_per_second;
  j["read_bytes_per_second"] = s.read_bytes_per_second;
  j["write_ops_per_second"] = s.write_ops_per_second;
  j["read_ops_per_second"] = s.read_ops_per_second;
  j["dedup_bytes_per_second"] = s.dedup_bytes_per_second;
  return j;
}

// A ring as columns: {"time_ms": [...], "write_bytes_per_second": [...], ...}.
Json SeriesJson(const std::vector<ThroughputSample>& samples) {
  Json time = Json::array(), w = Json::array(), r = Json::array(), wo = Json::array(),
       ro = Json::array(), d = Json::array();
  for (const auto& s : samples) {
    time.push_back(s.time_ms);
    w.push_back(s.write_bytes_per_second);
    r.push_back(s.read_bytes_per_second);
    wo.push_back(s.write_ops_per_second);
    ro.push_back(s.read_ops_per_second);
    d.push_back(s.dedup_bytes_per_second);
  }
  Json j;
  j["time_ms"] = std::move(time);
  j["write_bytes_per_second"] = std::move(w);
  j["read_bytes_per_second"] = std::move(r);
  j["write_ops_per_second"] = std::move(wo);
  j["read_ops_per_second"] = std::move(ro);
  j["dedup_bytes_per_second"] = std::move(d);
  return j;
}

}  // namespace

const char* MonitorVersionString() { return DEDUPV1_VERSION; }

StatusCollector::StatusCollector(DedupSystem* system, const ThroughputHistory* history,
                                 std::chrono::steady_clock::time_point start)
    : system_(system), history_(history), start_(start) {}

double StatusCollector::UptimeSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

Json StatusCollector::Dedup() const {
  const SystemStats& st = system_->stats();
  const ChunkStoreStats cs = system_->chunk_store()->stats();
  const uint64_t logical = st.bytes_chunked.load();
  Json j;
  j["ratio"] = system_->DedupRatio();
  j["logical_bytes"] = logical;
  j["stored_bytes"] = cs.bytes_stored;
  j["saved_bytes"] = logical > cs.bytes_stored ? logical - cs.bytes_stored : 0;
  j["new_chunk_bytes"] = st.bytes_new.load();
  j["zero_bytes"] = st.bytes_zero.load();
  j["chunks"] = st.chunks.load();
  j["chunks_new"] = st.chunks_new.load();
  j["chunks_known"] = st.chunks_known.load();
  j["chunks_zero"] = st.chunks_zero.load();
  j["runs"] = st.runs.load();
  j["mappings_skipped"] = st.mappings_skipped.load();
  j["damaged_mappings_overwritten"] = st.damaged_mappings_overwritten.load();
  return j;
}

Json StatusCollector::Io() const {
  const SystemStats& st = system_->stats();
  Json j;
  j["read_ops"] = st.read_ops.load();
  j["write_ops"] = st.write_ops.load();
  j["unmap_ops"] = st.unmap_ops.load();
  j["sync_ops"] = st.sync_ops.load();
  j["read_bytes"] = st.bytes_read.load();
  j["written_bytes"] = st.bytes_written.load();
  j["unmapped_bytes"] = st.bytes_unmapped.load();
  j["errors"] = st.errors.load();
  return j;
}

Json StatusCollector::Throughput() const {
  Json j;
  ThroughputSample s;
  if (history_ == nullptr || !history_->Latest(&s)) {
    j["available"] = false;
    j["message"] = "no throughput sample yet (the first one is taken a second after start)";
    return j;
  }
  j["available"] = true;
  const Json sample = SampleJson(s);
  for (auto it = sample.begin(); it != sample.end(); ++it) j[it.key()] = it.value();
  return j;
}

Json StatusCollector::History() const {
  Json j;
  if (history_ == nullptr) {
    j["available"] = false;
    j["message"] = "throughput history is not being sampled";
    return j;
  }
  j["available"] = true;
  Json fine = SeriesJson(history_->Fine());
  Json coarse = SeriesJson(history_->Coarse());
  Json f;
  f["capacity"] = history_->fine_capacity();
  for (auto it = fine.begin(); it != fine.end(); ++it) f[it.key()] = it.value();
  Json c;
  c["capacity"] = history_->coarse_capacity();
  c["samples_per_point"] = history_->coarse_factor();
  for (auto it = coarse.begin(); it != coarse.end(); ++it) c[it.key()] = it.value();
  j["fine"] = std::move(f);
  j["coarse"] = std::move(c);
  return j;
}

Json StatusCollector::Volumes() const {
  Json list = Json::array();
  for (Volume* v : system_->volumes()) {
    Json j;
    j["name"] = v->name();
    j["id"] = v->id();
    j["size_bytes"] = v->size();
    j["dirty_bytes"] = v->buffer().dirty_bytes();
    j["dirty_blocks"] = v->buffer().dirty_blocks();
    // Of the dirty bytes, those waiting for chunk-index space (a sync fails).
    j["parked_bytes"] = v->buffer().parked_bytes();
    const Volume::Counters c = v->counters();
    j["written_bytes"] = c.bytes_written;
    j["read_bytes"] = c.bytes_read;
    j["unmapped_bytes"] = c.bytes_unmapped;
    j["write_ops"] = c.write_ops;
    j["read_ops"] = c.read_ops;
    j["unmap_ops"] = c.unmap_ops;
    list.push_back(std::move(j));
  }
  Json j;
  j["volumes"] = std::move(list);
  return j;
}

Json StatusCollector::Filters() const {
  const FilterChain& chain = system_->filter_chain();
  Json list = Json::array();
  for (size_t i = 0; i < chain.size(); i++) {
    const FilterCounters& c = chain.counters(i);
    Json j;
    j["name"] = chain.filter(i).name();
    j["existing"] = c.existing.load();
    j["strong_maybe"] = c.strong_maybe.load();
    j["weak_maybe"] = c.weak_maybe.load();
    j["not_existing"] = c.not_existing.load();
    j["error"] = c.error.load();
    j["skipped"] = c.skipped.load();
    list.push_back(std::move(j));
  }
  Json j;
  j["chain"] = chain.Describe();
  j["filters"] = std::move(list);
  return j;
}

Json StatusCollector::ChunkIndexJson() const {
  const ChunkIndexStats st = system_->chunk_index()->stats();
  const ChunkIndexOptions& o = system_->options().chunk_index;
  Json j;
  j["persistent_entries"] = st.persistent_entries;
  j["new_entries"] = st.new_entries;
  j["used_entries"] = st.used_entries();
  j["capacity_entries"] = st.capacity;
  // Persistent and not yet written back alike: the count that fills the index.
  j["fill_ratio"] = st.fill_ratio();
  j["aux_entries"] = st.aux_entries;
  j["aux_uncommitted_entries"] = st.aux_uncommitted;
  // Committed auxiliary entries wait only for the write-back thread.
  j["write_back_backlog_entries"] =
      st.aux_entries > st.aux_uncommitted ? st.aux_entries - st.aux_uncommitted : 0;
  j["aux_soft_limit_entries"] = o.aux_soft_limit;
  j["aux_hard_limit_entries"] = o.aux_hard_limit;
  j["table_size_bytes"] = o.table.size_bytes;
  j["lookups"] = st.lookups;
  j["aux_hits"] = st.aux_hits;
  j["disk_hits"] = st.disk_hits;
  j["misses"] = st.misses;
  j["written_back_entries"] = st.written_back;
  j["write_back_batches"] = st.write_back_batches;
  j["write_back_errors"] = st.write_back_errors;
  j["throttled_puts"] = st.throttled_puts;
  j["refused_puts"] = st.refused_puts;
  j["last_error"] = st.last_error;
  return j;
}

Json StatusCollector::BlockIndexJson() const {
  const BlockIndexStats st = system_->block_index()->stats();
  const BlockIndexOptions& o = system_->options().block_index;
  Json j;
  j["backend"] = o.backend == KvBackend::kLevelDb ? "leveldb" : "tokyocabinet";
  j["persistent_mappings"] = st.persistent_mappings;
  j["aux_mappings"] = st.aux_mappings;
  j["aux_waiting_for_commit"] = st.aux_waiting_for_commit;
  const uint64_t not_ready = st.aux_waiting_for_commit + st.aux_held;
  j["write_back_backlog_mappings"] = st.aux_mappings > not_ready ? st.aux_mappings - not_ready : 0;
  // A damaged store (found by the scan at open): blocks whose reads fail
  // until dedupv1_check --repair, and mappings kept in memory meanwhile.
  j["damaged_blocks"] = st.damaged_blocks;
  j["aux_held_mappings"] = st.aux_held;
  j["old_format_records"] = st.old_format_records;
  j["aux_soft_limit_mappings"] = o.aux_soft_limit;
  j["aux_hard_limit_mappings"] = o.aux_hard_limit;
  j["reads"] = st.reads;
  j["aux_hits"] = st.aux_hits;
  j["persistent_hits"] = st.persistent_hits;
  j["misses"] = st.misses;
  j["written_back_mappings"] = st.written_back;
  j["write_back_batches"] = st.write_back_batches;
  j["last_error"] = st.last_error;
  return j;
}

Json StatusCollector::Index() const {
  Json j;
  j["chunk_index"] = ChunkIndexJson();
  j["block_index"] = BlockIndexJson();
  return j;
}

Json StatusCollector::Containers() const {
  const ChunkStoreStats st = system_->chunk_store()->stats();
  const ChunkStoreOptions& o = system_->chunk_store()->options();
  Json j;
  j["open"] = st.open_containers;
  j["in_flight"] = st.containers_in_flight;
  j["committed"] = st.containers_committed;
  j["commit_failures"] = st.containers_failed;
  j["commit_retries"] = st.commit_retries;
  j["last_allocated_id"] = system_->chunk_store()->last_allocated_id();
  j["commit_latency_ms_total"] = st.commit_latency_ms_total;
  j["average_commit_latency_ms"] =
      st.containers_committed == 0
          ? 0.0
          : static_cast<double>(st.commit_latency_ms_total) /
                static_cast<double>(st.containers_committed);
  j["chunks_stored"] = st.chunks_stored;
  j["raw_bytes"] = st.bytes_raw;
  j["stored_bytes"] = st.bytes_stored;
  j["compression"] = CompressionName(o.compression);
  j["container_size_bytes"] = o.container_size;
  j["container_reads"] = st.container_reads;
  j["container_metadata_reads"] = st.metadata_reads;
  j["read_cache_hits"] = st.read_cache_hits;
  j["read_cache_misses"] = st.read_cache_misses;
  j["read_cache_hit_ratio"] =
      Fraction(st.read_cache_hits, st.read_cache_hits + st.read_cache_misses);
  const GcStats gc = system_->gc_stats();
  Json merge;
  merge["available"] = true;
  merge["containers_merged"] = gc.containers_merged;
  merge["merged_containers_written"] = gc.containers_written;
  merge["containers_deleted"] = gc.containers_deleted;
  j["merge"] = merge;
  return j;
}

Json StatusCollector::Log() const {
  OperationsLog* log = system_->log();
  if (log == nullptr) return NotAvailable("the operations log (system closed)");
  const OperationsLogStats st = log->stats();
  const auto& options = system_->options().log;
  const auto& recovery = system_->recovery();
  Json j;
  j["fill"] = st.fill;
  j["used_slots"] = st.used_slots;
  j["slots"] = st.slots;
  j["size_bytes"] = options.size_bytes;
  j["soft_limit"] = options.soft_limit;
  j["hard_limit"] = options.hard_limit;
  // Events before the head are persistent in the indexes; replay at the next
  // checkpoint (or at a dirty start) begins at the head.
  j["replay_position"] = st.head_id;
  j["last_event"] = st.last_id;
  j["durable_event"] = st.durable_id;
  const DedupSystem::IdleInfo idle = system_->idle_info();
  j["mode"] = "background replay at checkpoints (soft limit, idle, close)";
  j["replay_paused"] = idle.replay_paused;
  j["idle_checkpoints"] = idle.idle_checkpoints;
  j["soft_limit_checkpoints"] = idle.soft_limit_checkpoints;
  j["soft_limit_throttles"] = idle.soft_limit_throttles;
  j["checkpoints_skipped_paused"] = idle.skipped_paused;
  j["appended_events"] = st.appended_events;
  j["appended_bytes"] = st.appended_bytes;
  j["syncs"] = st.syncs;
  j["throttled_appends"] = st.throttled_appends;
  j["last_start"] = recovery.dirty_start ? "unclean stop: dirty-start replay" : "clean";
  j["start_events_replayed"] = recovery.events_replayed;
  j["start_mappings_restored"] = recovery.mappings_applied;
  j["start_mappings_dropped_unsynced"] = recovery.mappings_dropped;
  j["start_containers_reimported"] = recovery.containers_imported;
  if (!st.last_error.empty()) j["last_error"] = st.last_error;
  return j;
}

Json StatusCollector::Gc() const {
  const GcStats st = system_->gc_stats();
  Json j;
  j["available"] = true;
  j["running"] = st.running;
  if (st.running) {
    // What a long round (the full scan after a start) is doing and how far it got.
    j["phase"] = st.phase;
    j["scan_progress"] = std::to_string(st.scan_containers_done) + " / " +
                         std::to_string(st.scan_containers_total) + " containers";
  }
  j["mode"] = "after a quiet-period checkpoint when chunks reached usage 0, and on POST /gc/run";
  j["runs"] = st.runs;
  j["failed_runs"] = st.failed_runs;
  j["candidates"] = st.candidates;
  j["chunks_deleted"] = st.chunks_deleted;
  j["chunks_survived_recheck"] = st.chunks_survived;
  j["orphan_chunks_found"] = st.orphans_found;
  j["reclaimed_bytes"] = st.bytes_reclaimed;
  j["containers_merged"] = st.containers_merged;
  j["merged_containers_written"] = st.containers_written;
  j["containers_deleted"] = st.containers_deleted;
  j["rounds_deferred"] = st.rounds_deferred;
  j["containers_scanned"] = st.containers_scanned;
  j["containers_looked_up"] = st.containers_looked_up;
  j["containers_summarized"] = st.containers_summarized;
  j["used_bytes"] = st.used_bytes;
  j["live_bytes"] = st.live_bytes;
  // Garbage left in containers at least half live (merged once they fall
  // below half), and how much of it a restart would have to find again.
  const ChunkStoreStats store = system_->chunk_store()->stats();
  j["garbage_chunks_kept"] = store.dead_chunks_marked;
  j["garbage_marks_unpersisted"] = store.dead_marks_unpersisted;
  j["last_run_unix"] = st.last_run_unix;
  j["last_run_duration_ms"] = st.last_run_ms;
  j["usage_events_counted"] = st.usage.events_counted;
  j["usage_events_dropped"] = st.usage.events_dropped;
  j["usage_changes_already_counted"] = st.usage.changes_skipped;
  j["usage_counted_up_to_event"] = st.usage.applied_id;
  if (!st.last_error.empty()) j["last_error"] = st.last_error;
  return j;
}

Json StatusCollector::Idle() const {
  const DedupSystem::IdleInfo info = system_->idle_info();
  Json j;
  j["available"] = true;
  j["mode"] = IdleModeName(info.detector.mode);
  j["idle"] = info.detector.idle;
  j["forced"] = info.forced;
  j["since_unix"] = info.idle_since_unix;
  j["below_threshold_seconds"] = info.detector.below_for_ms / 1000.0;
  j["write_bytes_per_second"] = info.detector.write_bytes_per_second;
  j["read_bytes_per_second"] = info.detector.read_bytes_per_second;
  j["throughput_threshold_bytes_per_second"] = info.options.throughput_threshold;
  j["period_seconds"] = info.options.period_ms / 1000.0;
  j["window_seconds"] = info.options.window_ms / 1000.0;
  j["requests_per_second"] = info.detector.requests_per_second;
  j["mean_latency_ms"] = info.detector.mean_latency_ms;
  j["latency_threshold_ms"] = info.options.latency_threshold_ms;
  j["replay_paused"] = info.replay_paused;
  j["idle_starts"] = info.detector.starts;
  j["idle_ticks"] = info.detector.ticks;
  j["idle_ends"] = info.detector.ends;
  j["idle_checkpoints"] = info.idle_checkpoints;
  j["idle_gc_runs"] = info.idle_gc_runs;
  return j;
}

Json StatusCollector::WriteBuffer() const {
  uint64_t dirty = 0;
  for (Volume* v : system_->volumes()) dirty += v->buffer().dirty_bytes();
  Json j;
  j["dirty_bytes"] = dirty;
  j["limit_bytes"] = system_->options().write_buffer_size;
  return j;
}

Json StatusCollector::Config() const {
  Json entries = Json::array();
  std::istringstream in(system_->options().ToString());
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find(" = ");
    Json e;
    if (eq == std::string::npos) {
      e["key"] = line;
      e["value"] = "";
    } else {
      e["key"] = line.substr(0, eq);
      e["value"] = line.substr(eq + 3);
    }
    entries.push_back(std::move(e));
  }
  Json j;
  j["entries"] = std::move(entries);
  return j;
}

Json StatusCollector::Version() const {
  Json j;
  j["name"] = "dedupv1";
  j["version"] = MonitorVersionString();
  j["uptime_seconds"] = UptimeSeconds();
  j["time_ms"] = NowUnixMs();
  return j;
}

Json StatusCollector::Stats() const {
  Json j;
  j["version"] = MonitorVersionString();
  j["uptime_seconds"] = UptimeSeconds();
  j["time_ms"] = NowUnixMs();
  j["dedup"] = Dedup();
  j["io"] = Io();
  j["throughput"] = Throughput();
  j["write_buffer"] = WriteBuffer();
  j["volumes"] = Volumes()["volumes"];
  j["filters"] = Filters()["filters"];
  j["chunk_index"] = ChunkIndexJson();
  j["block_index"] = BlockIndexJson();
  j["containers"] = Containers();
  j["log"] = Log();
  j["gc"] = Gc();
  j["idle"] = Idle();
  return j;
}

}  // namespace dedupv1

#include "target/monitor/prometheus_metrics.h"

#include <cmath>
#include <cstdio>

namespace dedupv1 {

std::string PrometheusWriter::EscapeLabelValue(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string PrometheusWriter::FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 9.007199254740992e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.17g", v);
  }
  return buf;
}

void PrometheusWriter::Add(const std::string& name, const char* type, const std::string& help,
                           double value, const Labels& labels) {
  auto it = families_.find(name);
  if (it == families_.end()) {
    order_.push_back(name);
    it = families_.emplace(name, Family{type, help, {}}).first;
  }
  std::string line = name;
  if (!labels.empty()) {
    line += '{';
    for (size_t i = 0; i < labels.size(); i++) {
      if (i) line += ',';
      line += labels[i].first + "=\"" + EscapeLabelValue(labels[i].second) + '"';
    }
    line += '}';
  }
  line += ' ';
  line += FormatValue(value);
  it->second.samples.push_back(std::move(line));
}

void PrometheusWriter::Counter(const std::string& name, const std::string& help, double value,
                               const Labels& labels) {
  Add(name, "counter", help, value, labels);
}

void PrometheusWriter::Gauge(const std::string& name, const std::string& help, double value,
                             const Labels& labels) {
  Add(name, "gauge", help, value, labels);
}

std::string PrometheusWriter::Render() const {
  std::string out;
  for (const std::string& name : order_) {
    const Family& f = families_.at(name);
    out += "# HELP " + name + " " + f.help + "\n";
    out += "# TYPE " + name + " " + f.type + "\n";
    for (const std::string& s : f.samples) out += s + "\n";
  }
  return out;
}

namespace {

// A number at |key| of |j|, 0 if absent or not a number.
double Num(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return 0;
  return it->get<double>();
}

const Json& Obj(const Json& j, const char* key) {
  static const Json kEmpty = Json::object();
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : kEmpty;
}

}  // namespace

std::string RenderPrometheusMetrics(const Json& stats, uint64_t monitor_requests) {
  PrometheusWriter w;
  w.Gauge("dedupv1_build_info", "Always 1; the version label is the running dedupv1 version.", 1,
          {{"version", stats.value("version", std::string("unknown"))}});
  w.Gauge("dedupv1_uptime_seconds", "Seconds since the system was started.",
          Num(stats, "uptime_seconds"));

  const Json& io = Obj(stats, "io");
  w.Counter("dedupv1_read_operations_total", "Read requests served.", Num(io, "read_ops"));
  w.Counter("dedupv1_write_operations_total", "Write requests acknowledged.", Num(io, "write_ops"));
  w.Counter("dedupv1_unmap_operations_total", "Unmap (discard) requests.", Num(io, "unmap_ops"));
  w.Counter("dedupv1_sync_operations_total", "Volume sync requests.", Num(io, "sync_ops"));
  w.Counter("dedupv1_read_bytes_total", "Bytes read by clients.", Num(io, "read_bytes"));
  w.Counter("dedupv1_written_bytes_total", "Bytes written by clients.", Num(io, "written_bytes"));
  w.Counter("dedupv1_unmapped_bytes_total", "Bytes unmapped by clients.", Num(io, "unmapped_bytes"));
  w.Counter("dedupv1_errors_total", "Errors of the deduplication path and of syncs.",
            Num(io, "errors"));

  const Json& lg = Obj(stats, "log");
  if (lg.contains("fill")) {
    w.Gauge("dedupv1_log_fill_ratio", "Share of the operations log in use (0..1).", Num(lg, "fill"));
    w.Counter("dedupv1_log_appended_events_total", "Events appended to the operations log.",
              Num(lg, "appended_events"));
    w.Counter("dedupv1_log_syncs_total", "Operations log syncs (group commits).", Num(lg, "syncs"));
  }

  const Json& gc = Obj(stats, "gc");
  if (gc.contains("runs")) {
    w.Counter("dedupv1_gc_runs_total", "Garbage collection rounds finished (failed ones included).",
              Num(gc, "runs"));
    w.Counter("dedupv1_gc_failed_runs_total", "Garbage collection rounds that failed.", Num(gc, "failed_runs"));
    w.Gauge("dedupv1_gc_running", "1 while a garbage collection round runs.",
            gc.value("running", false) ? 1 : 0);
    w.Gauge("dedupv1_gc_candidates", "Chunks at usage 0 waiting for the next round.", Num(gc, "candidates"));
    w.Counter("dedupv1_gc_chunks_deleted_total", "Chunks whose index entry garbage collection erased.",
              Num(gc, "chunks_deleted"));
    w.Counter("dedupv1_gc_chunks_survived_total", "Candidates referenced again before the recheck.",
              Num(gc, "chunks_survived_recheck"));
    w.Counter("dedupv1_gc_reclaimed_bytes_total", "Container store bytes given back by garbage collection.",
              Num(gc, "reclaimed_bytes"));
    w.Counter("dedupv1_gc_containers_merged_total", "Containers folded into merged containers.",
              Num(gc, "containers_merged"));
    w.Counter("dedupv1_gc_containers_deleted_total", "Containers deleted because nothing in them was live.",
              Num(gc, "containers_deleted"));
    w.Counter("dedupv1_gc_rounds_deferred_total",
              "Rounds that left deleting and merging to a later round because the log still held counted events.",
              Num(gc, "rounds_deferred"));
    w.Gauge("dedupv1_gc_garbage_chunks_kept",
            "Garbage chunks left in containers at least half live (merged once they fall below half).",
            Num(gc, "garbage_chunks_kept"));
    w.Gauge("dedupv1_gc_used_bytes", "Container store bytes after the last garbage collection round.",
            Num(gc, "used_bytes"));
    w.Gauge("dedupv1_gc_last_run_timestamp_seconds", "End of the last garbage collection round (Unix time).",
            Num(gc, "last_run_unix"));
  }

  const Json& idle = Obj(stats, "idle");
  if (idle.contains("idle")) {
    w.Gauge("dedupv1_idle", "1 while the system is idle (detected or forced): background replay, write-back, GC.",
            idle.value("idle", false) ? 1 : 0);
    w.Gauge("dedupv1_idle_forced", "1 while an admin forces the idle state (idle or busy), 0 in auto mode.",
            idle.value("forced", false) ? 1 : 0);
    w.Gauge("dedupv1_replay_paused", "1 while background log replay is paused by an admin.",
            idle.value("replay_paused", false) ? 1 : 0);
    w.Counter("dedupv1_idle_starts_total", "Times the system became idle.", Num(idle, "idle_starts"));
    w.Counter("dedupv1_idle_checkpoints_total", "Checkpoints run because the system was idle.",
              Num(idle, "idle_checkpoints"));
    w.Gauge("dedupv1_request_latency_mean_seconds",
            "Mean latency of the reads, writes and unmaps completed in the idle detection window.",
            idle.value("mean_latency_ms", 0.0) / 1000.0);
  }

  const Json& d = Obj(stats, "dedup");
  w.Counter("dedupv1_logical_bytes_total", "Logical bytes that went through deduplication.",
            Num(d, "logical_bytes"));
  w.Counter("dedupv1_new_chunk_bytes_total", "Bytes of new chunks before compression.",
            Num(d, "new_chunk_bytes"));
  w.Counter("dedupv1_zero_chunk_bytes_total", "Bytes of all-zero chunks (not stored).",
            Num(d, "zero_bytes"));
  const char* chunks_help = "Chunks deduplicated, by filter chain outcome.";
  w.Counter("dedupv1_chunks_total", chunks_help, Num(d, "chunks_new"), {{"result", "new"}});
  w.Counter("dedupv1_chunks_total", chunks_help, Num(d, "chunks_known"), {{"result", "known"}});
  w.Counter("dedupv1_chunks_total", chunks_help, Num(d, "chunks_zero"), {{"result", "zero"}});
  w.Gauge("dedupv1_dedup_ratio", "Logical bytes deduplicated per byte stored.", Num(d, "ratio"));
  w.Gauge("dedupv1_saved_bytes", "Logical bytes deduplicated minus bytes stored.",
          Num(d, "saved_bytes"));

  const Json& wb = Obj(stats, "write_buffer");
  w.Gauge("dedupv1_write_buffer_dirty_bytes", "Bytes written but not yet deduplicated.",
          Num(wb, "dirty_bytes"));
  w.Gauge("dedupv1_write_buffer_limit_bytes", "Write buffer memory limit.", Num(wb, "limit_bytes"));

  if (auto it = stats.find("volumes"); it != stats.end() && it->is_array()) {
    for (const Json& v : *it) {
      const std::string name = v.value("name", std::string());
      w.Gauge("dedupv1_volume_size_bytes", "Size of a volume.", Num(v, "size_bytes"),
              {{"volume", name}});
    }
    for (const Json& v : *it) {
      w.Gauge("dedupv1_volume_dirty_bytes", "Bytes of a volume not yet deduplicated.",
              Num(v, "dirty_bytes"), {{"volume", v.value("name", std::string())}});
    }
    for (const Json& v : *it) {
      w.Counter("dedupv1_volume_written_bytes_total", "Bytes initiators wrote to a volume.",
                Num(v, "written_bytes"), {{"volume", v.value("name", std::string())}});
    }
    for (const Json& v : *it) {
      w.Counter("dedupv1_volume_read_bytes_total", "Bytes initiators read from a volume.",
                Num(v, "read_bytes"), {{"volume", v.value("name", std::string())}});
    }
    for (const Json& v : *it) {
      w.Counter("dedupv1_volume_unmapped_bytes_total", "Bytes initiators unmapped in a volume.",
                Num(v, "unmapped_bytes"), {{"volume", v.value("name", std::string())}});
    }
  }

  if (auto it = stats.find("filters"); it != stats.end() && it->is_array()) {
    static const char* kResults[] = {"existing", "strong_maybe", "weak_maybe",
                                     "not_existing", "error", "skipped"};
    for (const Json& f : *it) {
      for (const char* r : kResults) {
        w.Counter("dedupv1_filter_results_total", "Results given by each filter of the chain.",
                  Num(f, r), {{"filter", f.value("name", std::string())}, {"result", r}});
      }
    }
  }

  const Json& ci = Obj(stats, "chunk_index");
  const char* ci_entries = "Chunk index entries by where they are.";
  w.Gauge("dedupv1_chunk_index_entries", ci_entries, Num(ci, "persistent_entries"),
          {{"area", "persistent"}});
  w.Gauge("dedupv1_chunk_index_entries", ci_entries, Num(ci, "aux_entries"), {{"area", "aux"}});
  w.Gauge("dedupv1_chunk_index_capacity_entries", "Entries the persistent chunk index can hold.",
          Num(ci, "capacity_entries"));
  w.Gauge("dedupv1_chunk_index_fill_ratio",
          "Chunk index entries counted against the capacity (persistent and not yet written back) per "
          "capacity; 1 is full.",
          Num(ci, "fill_ratio"));
  w.Gauge("dedupv1_chunk_index_write_back_backlog_entries",
          "Committed auxiliary entries waiting for write-back.",
          Num(ci, "write_back_backlog_entries"));
  const char* ci_lookups = "Chunk index lookups by outcome.";
  w.Counter("dedupv1_chunk_index_lookups_total", ci_lookups, Num(ci, "aux_hits"),
            {{"result", "aux_hit"}});
  w.Counter("dedupv1_chunk_index_lookups_total", ci_lookups, Num(ci, "disk_hits"),
            {{"result", "disk_hit"}});
  w.Counter("dedupv1_chunk_index_lookups_total", ci_lookups, Num(ci, "misses"),
            {{"result", "miss"}});
  w.Counter("dedupv1_chunk_index_written_back_entries_total",
            "Chunk index entries written to the persistent table.",
            Num(ci, "written_back_entries"));
  w.Counter("dedupv1_chunk_index_write_back_errors_total", "Failed chunk index write-backs.",
            Num(ci, "write_back_errors"));
  w.Counter("dedupv1_chunk_index_throttled_puts_total",
            "Inserts that waited at the auxiliary index hard limit.", Num(ci, "throttled_puts"));
  w.Counter("dedupv1_chunk_index_refused_puts_total", "New chunks refused because the chunk index is full.",
            Num(ci, "refused_puts"));

  const Json& bi = Obj(stats, "block_index");
  const char* bi_mappings = "Block index mappings by where they are.";
  w.Gauge("dedupv1_block_index_mappings", bi_mappings, Num(bi, "persistent_mappings"),
          {{"area", "persistent"}});
  w.Gauge("dedupv1_block_index_mappings", bi_mappings, Num(bi, "aux_mappings"), {{"area", "aux"}});
  w.Gauge("dedupv1_block_index_waiting_for_commit_mappings",
          "Auxiliary mappings waiting for a container commit.", Num(bi, "aux_waiting_for_commit"));
  w.Gauge("dedupv1_block_index_write_back_backlog_mappings",
          "Persistable auxiliary mappings waiting for write-back.",
          Num(bi, "write_back_backlog_mappings"));
  const char* bi_reads = "Block index reads by outcome.";
  w.Counter("dedupv1_block_index_reads_total", bi_reads, Num(bi, "aux_hits"),
            {{"result", "aux_hit"}});
  w.Counter("dedupv1_block_index_reads_total", bi_reads, Num(bi, "persistent_hits"),
            {{"result", "persistent_hit"}});
  w.Counter("dedupv1_block_index_reads_total", bi_reads, Num(bi, "misses"), {{"result", "miss"}});
  w.Counter("dedupv1_block_index_written_back_mappings_total",
            "Block mappings written to the persistent store.", Num(bi, "written_back_mappings"));

  const Json& c = Obj(stats, "containers");
  const char* c_state = "Containers not yet committed, by state.";
  w.Gauge("dedupv1_containers", c_state, Num(c, "open"), {{"state", "open"}});
  w.Gauge("dedupv1_containers", c_state, Num(c, "in_flight"), {{"state", "in_flight"}});
  w.Counter("dedupv1_containers_committed_total", "Containers committed.", Num(c, "committed"));
  w.Counter("dedupv1_container_commit_failures_total", "Failed container commit attempts.",
            Num(c, "commit_failures"));
  w.Counter("dedupv1_container_commit_retries_total", "Container commit retries.",
            Num(c, "commit_retries"));
  w.Counter("dedupv1_container_commit_latency_seconds_total",
            "Time spent committing containers.",
            Num(c, "commit_latency_ms_total") / 1000.0);
  w.Counter("dedupv1_container_reads_total", "Containers read from disk.",
            Num(c, "container_reads"));
  w.Counter("dedupv1_container_metadata_reads_total",
            "Container metadata sections read from disk (fingerprints for the container cache).",
            Num(c, "container_metadata_reads"));
  const char* cache = "Container read cache lookups by outcome.";
  w.Counter("dedupv1_container_read_cache_requests_total", cache, Num(c, "read_cache_hits"),
            {{"result", "hit"}});
  w.Counter("dedupv1_container_read_cache_requests_total", cache, Num(c, "read_cache_misses"),
            {{"result", "miss"}});
  w.Counter("dedupv1_chunk_store_raw_bytes_total", "Chunk bytes stored, before compression.",
            Num(c, "raw_bytes"));
  w.Counter("dedupv1_chunk_store_stored_bytes_total", "Chunk bytes stored, after compression.",
            Num(c, "stored_bytes"));

  w.Counter("dedupv1_monitor_requests_total", "HTTP requests served by the monitor.",
            static_cast<double>(monitor_requests));
  return w.Render();
}

}  // namespace dedupv1

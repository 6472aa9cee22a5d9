#include "target/monitor/metric_table.h"

#include <algorithm>
#include <map>

namespace dedupv1 {

const ChunkStoreStats& MetricContext::store() const {
  if (!store_) store_ = system_->chunk_store()->stats();
  return *store_;
}
const ChunkIndexStats& MetricContext::chunk_index() const {
  if (!chunk_index_) chunk_index_ = system_->chunk_index()->stats();
  return *chunk_index_;
}
const BlockIndexStats& MetricContext::block_index() const {
  if (!block_index_) block_index_ = system_->block_index()->stats();
  return *block_index_;
}
const GcStats& MetricContext::gc() const {
  if (!gc_) gc_ = system_->gc_stats();
  return *gc_;
}
const DedupSystem::IdleInfo& MetricContext::idle() const {
  if (!idle_) idle_ = system_->idle_info();
  return *idle_;
}
const BackgroundDedup::Stats& MetricContext::background() const {
  if (!background_) background_ = system_->background_dedup_stats();
  return *background_;
}
const DedupSystem::CacheInfo& MetricContext::cache() const {
  if (!cache_) cache_ = system_->cache_info();
  return *cache_;
}
const OperationsLogStats& MetricContext::log() const {
  if (!log_) log_ = system_->log()->stats();
  return *log_;
}

const char* MetricUnitName(MetricUnit unit) {
  switch (unit) {
    case MetricUnit::kCount: return "count";
    case MetricUnit::kBytes: return "bytes";
    case MetricUnit::kSeconds: return "seconds";
    case MetricUnit::kMilliseconds: return "ms";
    case MetricUnit::kRatio: return "ratio";
    case MetricUnit::kBytesPerSecond: return "bytes/s";
    case MetricUnit::kPerSecond: return "1/s";
    case MetricUnit::kUnixTime: return "unix time";
    case MetricUnit::kFlag: return "flag";
    case MetricUnit::kText: return "text";
    case MetricUnit::kId: return "id";
  }
  return "?";
}

MetricRow MetricRow::Counter(const char* name, const char* text) const {
  MetricRow r = *this;
  r.prom_type = PrometheusType::kCounter;
  r.prom_name = name;
  r.help = text;
  return r;
}

MetricRow MetricRow::Gauge(const char* name, const char* text) const {
  MetricRow r = Counter(name, text);
  r.prom_type = PrometheusType::kGauge;
  return r;
}

MetricRow MetricRow::Labeled(const char* name, const char* value) const {
  MetricRow r = *this;
  r.label = name;
  r.label_value = value;
  return r;
}

MetricRow MetricRow::DividedBy(double d) const {
  MetricRow r = *this;
  r.divisor = d;
  return r;
}

MetricRow MetricRow::When(Condition condition) const {
  MetricRow r = *this;
  r.present = condition;
  return r;
}

MetricRow MetricRow::Page(int position, const char* text, const char* js) const {
  MetricRow r = *this;
  r.page_position = position;
  r.page_label = text;
  r.page_js = js;
  return r;
}

std::string MetricRow::Path() const { return std::string(section) + "." + key; }

std::string MetricRow::PageExpression() const {
  if (page_js != nullptr) return page_js;
  const std::string v = std::string("v.") + key;
  switch (unit) {
    case MetricUnit::kCount:
    case MetricUnit::kId: return "count(" + v + ")";
    case MetricUnit::kBytes: return "bytes(" + v + ")";
    case MetricUnit::kRatio: return "pct(" + v + ")";
    case MetricUnit::kText: return v;
    default: return "String(" + v + ")";
  }
}

namespace {

using C = const MetricContext&;
using U = MetricUnit;

MetricRow Row(const char* section, const char* key, MetricUnit unit, MetricRow::Reader read) {
  MetricRow r;
  r.section = section;
  r.key = key;
  r.unit = unit;
  r.read = read;
  return r;
}

// The store shares its chunk index between gateway slots (storage.rados.dedup-scope = cluster).
bool ClusterScope(C c) { return c.options().chunk_index.cluster_scope; }

// part / whole, or 0 when whole is 0.
double Fraction(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

uint64_t Above(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

std::vector<MetricRow> DedupAndIoRows() {
  return {
      Row("dedup", "ratio", U::kRatio, [](C c) -> Json { return c.system()->DedupRatio(); })
          .Gauge("dedupv1_dedup_ratio", "Logical bytes deduplicated per byte stored."),
      Row("dedup", "logical_bytes", U::kBytes, [](C c) -> Json { return c.stats().bytes_chunked.load(); })
          .Counter("dedupv1_logical_bytes_total", "Logical bytes that went through deduplication."),
      Row("dedup", "stored_bytes", U::kBytes, [](C c) -> Json { return c.store().bytes_stored; }),
      Row("dedup", "saved_bytes", U::kBytes,
          [](C c) -> Json { return Above(c.stats().bytes_chunked.load(), c.store().bytes_stored); })
          .Gauge("dedupv1_saved_bytes", "Logical bytes deduplicated minus bytes stored."),
      Row("dedup", "new_chunk_bytes", U::kBytes, [](C c) -> Json { return c.stats().bytes_new.load(); })
          .Counter("dedupv1_new_chunk_bytes_total", "Bytes of new chunks before compression."),
      Row("dedup", "zero_bytes", U::kBytes, [](C c) -> Json { return c.stats().bytes_zero.load(); })
          .Counter("dedupv1_zero_chunk_bytes_total", "Bytes of all-zero chunks (not stored)."),
      Row("dedup", "chunks", U::kCount, [](C c) -> Json { return c.stats().chunks.load(); }),
      Row("dedup", "chunks_new", U::kCount, [](C c) -> Json { return c.stats().chunks_new.load(); })
          .Counter("dedupv1_chunks_total", "Chunks deduplicated, by filter chain outcome.")
          .Labeled("result", "new"),
      Row("dedup", "chunks_known", U::kCount, [](C c) -> Json { return c.stats().chunks_known.load(); })
          .Counter("dedupv1_chunks_total", "Chunks deduplicated, by filter chain outcome.")
          .Labeled("result", "known"),
      Row("dedup", "chunks_zero", U::kCount, [](C c) -> Json { return c.stats().chunks_zero.load(); })
          .Counter("dedupv1_chunks_total", "Chunks deduplicated, by filter chain outcome.")
          .Labeled("result", "zero"),
      Row("dedup", "chunks_rewritten", U::kCount, [](C c) -> Json { return c.stats().chunks_rewritten.load(); })
          .Counter("dedupv1_chunks_rewritten_total", "Known chunks stored again by container rewriting."),
      Row("dedup", "rewritten_bytes", U::kBytes, [](C c) -> Json { return c.stats().bytes_rewritten.load(); })
          .Counter("dedupv1_rewritten_bytes_total", "Bytes of known chunks stored again by container rewriting."),
      Row("dedup", "chunks_stored_again", U::kCount, [](C c) -> Json { return c.stats().chunks_stored_again.load(); })
          .Counter("dedupv1_chunks_stored_again_total", "Known chunks stored again by their volume's policy (off, out-of-band, or selective writing a request in full)."),
      Row("dedup", "stored_again_bytes", U::kBytes, [](C c) -> Json { return c.stats().bytes_stored_again.load(); })
          .Counter("dedupv1_stored_again_bytes_total",
                   "Bytes of known chunks stored again by their volume's policy (off, out-of-band, or selective writing a request in full)."),
      Row("dedup", "selective_requests_full_dedup", U::kCount, [](C c) -> Json { return c.stats().requests_full_dedup.load(); })
          .Counter("dedupv1_selective_requests_total",
                   "Write requests of selective volumes by Select-Dedupe's decision (docs/design-18.md, section 3).")
          .Labeled("category", "full_dedup"),
      Row("dedup", "selective_full_dedup_bytes", U::kBytes, [](C c) -> Json { return c.stats().bytes_full_dedup.load(); })
          .Counter("dedupv1_selective_request_bytes_total",
                   "Bytes of write requests of selective volumes by Select-Dedupe's decision.")
          .Labeled("category", "full_dedup"),
      Row("dedup", "selective_requests_written_in_full", U::kCount, [](C c) -> Json { return c.stats().requests_written_in_full.load(); })
          .Counter("dedupv1_selective_requests_total",
                   "Write requests of selective volumes by Select-Dedupe's decision (docs/design-18.md, section 3).")
          .Labeled("category", "written_in_full"),
      Row("dedup", "selective_written_in_full_bytes", U::kBytes, [](C c) -> Json { return c.stats().bytes_written_in_full.load(); })
          .Counter("dedupv1_selective_request_bytes_total",
                   "Bytes of write requests of selective volumes by Select-Dedupe's decision.")
          .Labeled("category", "written_in_full"),
      Row("dedup", "selective_requests_partial_dedup", U::kCount, [](C c) -> Json { return c.stats().requests_partial_dedup.load(); })
          .Counter("dedupv1_selective_requests_total",
                   "Write requests of selective volumes by Select-Dedupe's decision (docs/design-18.md, section 3).")
          .Labeled("category", "partial_dedup"),
      Row("dedup", "selective_partial_dedup_bytes", U::kBytes, [](C c) -> Json { return c.stats().bytes_partial_dedup.load(); })
          .Counter("dedupv1_selective_request_bytes_total",
                   "Bytes of write requests of selective volumes by Select-Dedupe's decision.")
          .Labeled("category", "partial_dedup"),
      Row("dedup", "selective_requests_all_new", U::kCount, [](C c) -> Json { return c.stats().requests_all_new.load(); })
          .Counter("dedupv1_selective_requests_total",
                   "Write requests of selective volumes by Select-Dedupe's decision (docs/design-18.md, section 3).")
          .Labeled("category", "all_new"),
      Row("dedup", "selective_all_new_bytes", U::kBytes, [](C c) -> Json { return c.stats().bytes_all_new.load(); })
          .Counter("dedupv1_selective_request_bytes_total",
                   "Bytes of write requests of selective volumes by Select-Dedupe's decision.")
          .Labeled("category", "all_new"),
      // The out-of-band volumes' pass (core/engine/background_dedup.h).
      Row("dedup", "background_rounds", U::kCount, [](C c) -> Json { return c.background().rounds; })
          .Counter("dedupv1_background_rounds_total", "Rounds the out-of-band volumes' pass finished."),
      Row("dedup", "background_blocks_examined", U::kCount, [](C c) -> Json { return c.background().blocks_examined; })
          .Counter("dedupv1_background_blocks_examined_total", "Cold blocks of out-of-band volumes the pass looked up."),
      Row("dedup", "background_blocks_remapped", U::kCount, [](C c) -> Json { return c.background().blocks_remapped; })
          .Counter("dedupv1_background_blocks_remapped_total",
                   "Blocks of out-of-band volumes the pass remapped to the copies the chunk index names."),
      Row("dedup", "background_chunks_remapped", U::kCount, [](C c) -> Json { return c.background().chunks_remapped; })
          .Counter("dedupv1_background_chunks_remapped_total", "Mapping items the pass moved to the index's copy."),
      Row("dedup", "background_remapped_bytes", U::kBytes, [](C c) -> Json { return c.background().bytes_remapped; })
          .Counter("dedupv1_background_remapped_bytes_total", "Bytes of the mapping items the pass moved (shared from then on)."),
      Row("dedup", "background_remaps_lost_to_writes", U::kCount,
          [](C c) -> Json { return c.background().blocks_lost_to_writes; })
          .Counter("dedupv1_background_remaps_lost_total", "Remaps dropped because the block was written meanwhile."),
      Row("dedup", "background_hot_blocks", U::kCount, [](C c) -> Json { return c.background().hot_blocks_left; })
          .Gauge("dedupv1_background_hot_blocks", "Blocks the last round left because they were written in the current or previous period."),
      Row("dedup", "background_blocks_pending", U::kCount, [](C c) -> Json { return c.background().blocks_pending; })
          .Gauge("dedupv1_background_blocks_pending", "Blocks of out-of-band volumes written since the pass last examined them, at the last round."),
      Row("dedup", "background_periods", U::kCount, [](C c) -> Json { return c.background().periods; }),
      Row("dedup", "background_last_error", U::kText, [](C c) -> Json { return c.background().last_error; })
          .When([](C c) { return !c.background().last_error.empty(); }),
      Row("dedup", "runs", U::kCount, [](C c) -> Json { return c.stats().runs.load(); }),
      Row("dedup", "mappings_skipped", U::kCount, [](C c) -> Json { return c.stats().mappings_skipped.load(); }),
      Row("dedup", "damaged_mappings_overwritten", U::kCount,
          [](C c) -> Json { return c.stats().damaged_mappings_overwritten.load(); }),

      Row("io", "read_ops", U::kCount, [](C c) -> Json { return c.stats().read_ops.load(); })
          .Counter("dedupv1_read_operations_total", "Read requests served."),
      Row("io", "write_ops", U::kCount, [](C c) -> Json { return c.stats().write_ops.load(); })
          .Counter("dedupv1_write_operations_total", "Write requests acknowledged."),
      Row("io", "unmap_ops", U::kCount, [](C c) -> Json { return c.stats().unmap_ops.load(); })
          .Counter("dedupv1_unmap_operations_total", "Unmap (discard) requests."),
      Row("io", "sync_ops", U::kCount, [](C c) -> Json { return c.stats().sync_ops.load(); })
          .Counter("dedupv1_sync_operations_total", "Volume sync requests."),
      Row("io", "read_bytes", U::kBytes, [](C c) -> Json { return c.stats().bytes_read.load(); })
          .Counter("dedupv1_read_bytes_total", "Bytes read by clients."),
      Row("io", "written_bytes", U::kBytes, [](C c) -> Json { return c.stats().bytes_written.load(); })
          .Counter("dedupv1_written_bytes_total", "Bytes written by clients."),
      Row("io", "unmapped_bytes", U::kBytes, [](C c) -> Json { return c.stats().bytes_unmapped.load(); })
          .Counter("dedupv1_unmapped_bytes_total", "Bytes unmapped by clients."),
      Row("io", "errors", U::kCount, [](C c) -> Json { return c.stats().errors.load(); })
          .Counter("dedupv1_errors_total", "Errors of the deduplication path and of syncs."),

      Row("write_buffer", "dirty_bytes", U::kBytes,
          [](C c) -> Json {
            uint64_t dirty = 0;
            for (Volume* v : c.system()->volumes()) dirty += v->buffer().dirty_bytes();
            return dirty;
          })
          .Gauge("dedupv1_write_buffer_dirty_bytes", "Bytes written but not yet deduplicated."),
      Row("write_buffer", "used_bytes", U::kBytes, [](C c) -> Json { return c.system()->write_buffer_used_bytes(); })
          .Gauge("dedupv1_write_buffer_used_bytes",
                 "Write buffer memory held: the 4 KiB pages written and each dirty block's bookkeeping."),
      Row("write_buffer", "limit_bytes", U::kBytes, [](C c) -> Json { return c.options().write_buffer_size; })
          .Gauge("dedupv1_write_buffer_limit_bytes", "Write buffer memory limit."),
  };
}

std::vector<MetricRow> VolumeAndFilterRows() {
  const char* results = "Results given by each filter of the chain.";
  return {
      Row("volumes[]", "name", U::kText, [](C c) -> Json { return c.volume()->name(); }),
      Row("volumes[]", "id", U::kId, [](C c) -> Json { return c.volume()->id(); }),
      Row("volumes[]", "size_bytes", U::kBytes, [](C c) -> Json { return c.volume()->size(); })
          .Gauge("dedupv1_volume_size_bytes", "Size of a volume."),
      Row("volumes[]", "policy", U::kText, [](C c) -> Json { return DedupPolicyName(c.volume()->policy()); }),
      Row("volumes[]", "dirty_bytes", U::kBytes, [](C c) -> Json { return c.volume()->buffer().dirty_bytes(); })
          .Gauge("dedupv1_volume_dirty_bytes", "Bytes of a volume not yet deduplicated."),
      Row("volumes[]", "dirty_blocks", U::kCount, [](C c) -> Json { return c.volume()->buffer().dirty_blocks(); }),
      // Of the dirty bytes, those waiting for chunk-index space (a sync fails).
      Row("volumes[]", "parked_bytes", U::kBytes, [](C c) -> Json { return c.volume()->buffer().parked_bytes(); }),
      Row("volumes[]", "written_bytes", U::kBytes, [](C c) -> Json { return c.volume()->counters().bytes_written; })
          .Counter("dedupv1_volume_written_bytes_total", "Bytes initiators wrote to a volume."),
      Row("volumes[]", "read_bytes", U::kBytes, [](C c) -> Json { return c.volume()->counters().bytes_read; })
          .Counter("dedupv1_volume_read_bytes_total", "Bytes initiators read from a volume."),
      Row("volumes[]", "unmapped_bytes", U::kBytes, [](C c) -> Json { return c.volume()->counters().bytes_unmapped; })
          .Counter("dedupv1_volume_unmapped_bytes_total", "Bytes initiators unmapped in a volume."),
      Row("volumes[]", "write_ops", U::kCount, [](C c) -> Json { return c.volume()->counters().write_ops; }),
      Row("volumes[]", "read_ops", U::kCount, [](C c) -> Json { return c.volume()->counters().read_ops; }),
      Row("volumes[]", "unmap_ops", U::kCount, [](C c) -> Json { return c.volume()->counters().unmap_ops; }),

      Row("filters[]", "name", U::kText,
          [](C c) -> Json { return c.system()->filter_chain().filter(c.filter()).name(); }),
      Row("filters[]", "existing", U::kCount, [](C c) -> Json { return c.filter_counters().existing.load(); })
          .Counter("dedupv1_filter_results_total", results).Labeled("result", "existing"),
      Row("filters[]", "strong_maybe", U::kCount, [](C c) -> Json { return c.filter_counters().strong_maybe.load(); })
          .Counter("dedupv1_filter_results_total", results).Labeled("result", "strong_maybe"),
      Row("filters[]", "weak_maybe", U::kCount, [](C c) -> Json { return c.filter_counters().weak_maybe.load(); })
          .Counter("dedupv1_filter_results_total", results).Labeled("result", "weak_maybe"),
      Row("filters[]", "not_existing", U::kCount, [](C c) -> Json { return c.filter_counters().not_existing.load(); })
          .Counter("dedupv1_filter_results_total", results).Labeled("result", "not_existing"),
      Row("filters[]", "error", U::kCount, [](C c) -> Json { return c.filter_counters().error.load(); })
          .Counter("dedupv1_filter_results_total", results).Labeled("result", "error"),
      Row("filters[]", "skipped", U::kCount, [](C c) -> Json { return c.filter_counters().skipped.load(); })
          .Counter("dedupv1_filter_results_total", results).Labeled("result", "skipped"),
  };
}

std::vector<MetricRow> ChunkIndexRows() {
  const char* entries = "Chunk index entries by where they are.";
  const char* lookups = "Chunk index lookups by outcome.";
  return {
      Row("chunk_index", "persistent_entries", U::kCount, [](C c) -> Json { return c.chunk_index().persistent_entries; })
          .Gauge("dedupv1_chunk_index_entries", entries).Labeled("area", "persistent")
          .Page(1, "Entries (persistent)"),
      Row("chunk_index", "new_entries", U::kCount, [](C c) -> Json { return c.chunk_index().new_entries; })
          .Page(2, "Entries not written back yet"),
      Row("chunk_index", "used_entries", U::kCount, [](C c) -> Json { return c.chunk_index().used_entries(); }),
      Row("chunk_index", "capacity_entries", U::kCount, [](C c) -> Json { return c.chunk_index().capacity; })
          .Gauge("dedupv1_chunk_index_capacity_entries", "Entries the persistent chunk index can hold.")
          .Page(3, "Capacity"),
      // Persistent and not yet written back alike: the count that fills the index.
      Row("chunk_index", "fill_ratio", U::kRatio, [](C c) -> Json { return c.chunk_index().fill_ratio(); })
          .Gauge("dedupv1_chunk_index_fill_ratio",
                 "Chunk index entries counted against the capacity (persistent and not yet written back) per "
                 "capacity; 1 is full.")
          .Page(4, "Fill"),
      Row("chunk_index", "aux_entries", U::kCount, [](C c) -> Json { return c.chunk_index().aux_entries; })
          .Gauge("dedupv1_chunk_index_entries", entries).Labeled("area", "aux")
          .Page(5, "Auxiliary entries"),
      Row("chunk_index", "aux_uncommitted_entries", U::kCount, [](C c) -> Json { return c.chunk_index().aux_uncommitted; })
          .Page(6, "  of which uncommitted"),
      // Committed auxiliary entries wait only for the write-back thread.
      Row("chunk_index", "write_back_backlog_entries", U::kCount,
          [](C c) -> Json { return Above(c.chunk_index().aux_entries, c.chunk_index().aux_uncommitted); })
          .Gauge("dedupv1_chunk_index_write_back_backlog_entries", "Committed auxiliary entries waiting for write-back.")
          .Page(7, "Write-back backlog"),
      Row("chunk_index", "aux_soft_limit_entries", U::kCount, [](C c) -> Json { return c.options().chunk_index.aux_soft_limit; })
          .Page(8, "Aux soft / hard limit", R"js(count(v.aux_soft_limit_entries) + " / " + count(v.aux_hard_limit_entries))js"),
      Row("chunk_index", "aux_hard_limit_entries", U::kCount, [](C c) -> Json { return c.options().chunk_index.aux_hard_limit; }),
      // The table's own size: it grows online (index/growable_hash_table.h),
      // so after a growth it is larger than chunk-index.size.
      Row("chunk_index", "table_size_bytes", U::kBytes,
          [](C c) -> Json {
            const uint64_t grown = c.chunk_index().growth.table_bytes;
            return grown != 0 ? grown : c.options().chunk_index.table.size_bytes;
          })
          .Gauge("dedupv1_chunk_index_table_bytes", "Size of the chunk index table (of the larger one while it grows).")
          .Page(17, "Table size", R"js(bytes(v.table_size_bytes))js"),
      Row("chunk_index", "growing", U::kCount, [](C c) -> Json { return c.chunk_index().growth.growing ? 1 : 0; })
          .Gauge("dedupv1_chunk_index_growing", "1 while the chunk index table grows online.")
          .Page(18, "Growth",
                R"js(v.growing ? "moving entries: " + count(v.growth_pages_moved) + " of " + count(v.growth_pages_total) +
                  " pages of the " + bytes(v.growth_from_bytes) + " table" :
                  (v.growth_requested ? "requested" : "none running") + ", " + count(v.growths_finished) + " finished")js"),
      Row("chunk_index", "growth_requested", U::kCount, [](C c) -> Json { return c.chunk_index().growth.requested ? 1 : 0; }),
      Row("chunk_index", "growth_pages_moved", U::kCount, [](C c) -> Json { return c.chunk_index().growth.pages_moved; })
          .Gauge("dedupv1_chunk_index_growth_pages_moved", "Pages of the old table the running growth has moved."),
      Row("chunk_index", "growth_pages_total", U::kCount, [](C c) -> Json { return c.chunk_index().growth.pages_total; })
          .Gauge("dedupv1_chunk_index_growth_table_pages", "Pages of the old table the running growth moves."),
      Row("chunk_index", "growth_from_bytes", U::kBytes, [](C c) -> Json { return c.chunk_index().growth.from_bytes; }),
      Row("chunk_index", "growths_finished", U::kCount, [](C c) -> Json { return c.chunk_index().growth.growths_finished; })
          .Counter("dedupv1_chunk_index_growths_finished_total", "Online growths of the chunk index table finished."),
      Row("chunk_index", "growth_waits", U::kCount, [](C c) -> Json { return c.chunk_index().growth_waits; })
          .Counter("dedupv1_chunk_index_growth_waits_total",
                   "New chunks that found the chunk index full and waited for its growth."),
      Row("chunk_index", "growth_last_error", U::kText, [](C c) -> Json { return c.chunk_index().growth.last_error; })
          .Page(19, "Growth error", R"js(v.growth_last_error || "none")js"),
      Row("chunk_index", "lookups", U::kCount, [](C c) -> Json { return c.chunk_index().lookups; })
          .Page(9, "Lookups"),
      Row("chunk_index", "aux_hits", U::kCount, [](C c) -> Json { return c.chunk_index().aux_hits; })
          .Counter("dedupv1_chunk_index_lookups_total", lookups).Labeled("result", "aux_hit")
          .Page(10, "Hits aux / disk, misses",
                R"js(count(v.aux_hits) + " / " + count(v.disk_hits) + ", " + count(v.misses))js"),
      Row("chunk_index", "disk_hits", U::kCount, [](C c) -> Json { return c.chunk_index().disk_hits; })
          .Counter("dedupv1_chunk_index_lookups_total", lookups).Labeled("result", "disk_hit"),
      Row("chunk_index", "misses", U::kCount, [](C c) -> Json { return c.chunk_index().misses; })
          .Counter("dedupv1_chunk_index_lookups_total", lookups).Labeled("result", "miss"),
      Row("chunk_index", "written_back_entries", U::kCount, [](C c) -> Json { return c.chunk_index().written_back; })
          .Counter("dedupv1_chunk_index_written_back_entries_total", "Chunk index entries written to the persistent table.")
          .Page(11, "Written back"),
      Row("chunk_index", "write_back_batches", U::kCount, [](C c) -> Json { return c.chunk_index().write_back_batches; }),
      Row("chunk_index", "write_back_errors", U::kCount, [](C c) -> Json { return c.chunk_index().write_back_errors; })
          .Counter("dedupv1_chunk_index_write_back_errors_total", "Failed chunk index write-backs.")
          .Page(12, "Write-back errors"),
      Row("chunk_index", "throttled_puts", U::kCount, [](C c) -> Json { return c.chunk_index().throttled_puts; })
          .Counter("dedupv1_chunk_index_throttled_puts_total", "Inserts that waited at the auxiliary index hard limit.")
          .Page(13, "Throttled inserts"),
      Row("chunk_index", "refused_puts", U::kCount, [](C c) -> Json { return c.chunk_index().refused_puts; })
          .Counter("dedupv1_chunk_index_refused_puts_total", "New chunks refused because the chunk index is full.")
          .Page(14, "Refused inserts (full)"),
      Row("chunk_index", "last_error", U::kText, [](C c) -> Json { return c.chunk_index().last_error; })
          .Page(15, "Last error", R"js(v.last_error || "none")js"),
      // Cluster scope (index/lookup_skip_policy.h): chunks claimed without a
      // lookup, and how many of them existed (a copy wasted, no dedup lost).
      Row("chunk_index", "lookups_skipped", U::kCount, [](C c) -> Json { return c.chunk_index().lookups_skipped; })
          .Counter("dedupv1_chunk_index_lookups_skipped_total",
                   "Chunks claimed in the shared chunk index without a lookup (cluster scope).")
          .Page(16, "Lookups skipped, of those existing",
                R"js(count(v.lookups_skipped) + ", " + count(v.skipped_that_existed))js"),
      Row("chunk_index", "skipped_that_existed", U::kCount, [](C c) -> Json { return c.chunk_index().skipped_that_existed; })
          .Counter("dedupv1_chunk_index_skipped_that_existed_total",
                   "Chunks claimed without a lookup that existed: their claims were lost, the copy wasted."),
      // Cluster scope (index/claim_journal.h): the claim journal's records
      // retired by checkpoints, those whose run left hints, and those waiting.
      Row("chunk_index", "claim_journal_retired", U::kCount,
          [](C c) -> Json { return c.chunk_index().claims.journal_retired; })
          .Counter("dedupv1_chunk_index_claim_journal_retired_total",
                   "Claim journal records retired after a checkpoint flipped and counted their chunks."),
      Row("chunk_index", "claim_journal_hinted", U::kCount,
          [](C c) -> Json { return c.chunk_index().claims.journal_hinted; })
          .Counter("dedupv1_chunk_index_claim_journal_hinted_total",
                   "Claim journal records of runs not fully mapped, retired with GC hints for their chunks."),
      Row("chunk_index", "claim_journal_waiting", U::kCount,
          [](C c) -> Json { return c.chunk_index().claims.journal_waiting; })
          .Gauge("dedupv1_chunk_index_claim_journal_waiting",
                 "Claim journal records handed back and waiting for the next checkpoint."),
  };
}

std::vector<MetricRow> BlockIndexRows() {
  const char* mappings = "Block index mappings by where they are.";
  const char* reads = "Block index reads by outcome.";
  return {
      Row("block_index", "backend", U::kText,
          [](C c) -> Json { return c.options().block_index.backend == KvBackend::kLevelDb ? "leveldb" : "tokyocabinet"; })
          .Page(1, "Backend"),
      Row("block_index", "persistent_mappings", U::kCount, [](C c) -> Json { return c.block_index().persistent_mappings; })
          .Gauge("dedupv1_block_index_mappings", mappings).Labeled("area", "persistent")
          .Page(2, "Mappings (persistent)"),
      Row("block_index", "aux_mappings", U::kCount, [](C c) -> Json { return c.block_index().aux_mappings; })
          .Gauge("dedupv1_block_index_mappings", mappings).Labeled("area", "aux")
          .Page(3, "Auxiliary mappings"),
      Row("block_index", "aux_waiting_for_commit", U::kCount, [](C c) -> Json { return c.block_index().aux_waiting_for_commit; })
          .Gauge("dedupv1_block_index_waiting_for_commit_mappings", "Auxiliary mappings waiting for a container commit.")
          .Page(4, "  waiting for a commit"),
      Row("block_index", "write_back_backlog_mappings", U::kCount,
          [](C c) -> Json {
            const BlockIndexStats& st = c.block_index();
            return Above(st.aux_mappings, st.aux_waiting_for_commit + st.aux_held);
          })
          .Gauge("dedupv1_block_index_write_back_backlog_mappings", "Persistable auxiliary mappings waiting for write-back.")
          .Page(5, "Write-back backlog"),
      // A damaged store (found by the scan at open): blocks whose reads fail
      // until dedupv1_check --repair, and mappings kept in memory meanwhile.
      Row("block_index", "damaged_blocks", U::kCount, [](C c) -> Json { return c.block_index().damaged_blocks; }),
      Row("block_index", "aux_held_mappings", U::kCount, [](C c) -> Json { return c.block_index().aux_held; }),
      Row("block_index", "old_format_records", U::kCount, [](C c) -> Json { return c.block_index().old_format_records; }),
      Row("block_index", "aux_soft_limit_mappings", U::kCount, [](C c) -> Json { return c.options().block_index.aux_soft_limit; }),
      Row("block_index", "aux_hard_limit_mappings", U::kCount, [](C c) -> Json { return c.options().block_index.aux_hard_limit; }),
      Row("block_index", "reads", U::kCount, [](C c) -> Json { return c.block_index().reads; })
          .Page(6, "Reads"),
      Row("block_index", "aux_hits", U::kCount, [](C c) -> Json { return c.block_index().aux_hits; })
          .Counter("dedupv1_block_index_reads_total", reads).Labeled("result", "aux_hit")
          .Page(7, "Hits aux / store, misses",
                R"js(count(v.aux_hits) + " / " + count(v.persistent_hits) + ", " + count(v.misses))js"),
      Row("block_index", "persistent_hits", U::kCount, [](C c) -> Json { return c.block_index().persistent_hits; })
          .Counter("dedupv1_block_index_reads_total", reads).Labeled("result", "persistent_hit"),
      Row("block_index", "misses", U::kCount, [](C c) -> Json { return c.block_index().misses; })
          .Counter("dedupv1_block_index_reads_total", reads).Labeled("result", "miss"),
      Row("block_index", "written_back_mappings", U::kCount, [](C c) -> Json { return c.block_index().written_back; })
          .Counter("dedupv1_block_index_written_back_mappings_total", "Block mappings written to the persistent store.")
          .Page(8, "Written back"),
      Row("block_index", "write_back_batches", U::kCount, [](C c) -> Json { return c.block_index().write_back_batches; }),
      Row("block_index", "last_error", U::kText, [](C c) -> Json { return c.block_index().last_error; })
          .Page(9, "Last error", R"js(v.last_error || "none")js"),
  };
}

std::vector<MetricRow> ContainerRows() {
  const char* state = "Containers not yet committed, by state.";
  const char* cache = "Container read cache lookups by outcome.";
  return {
      Row("containers", "open", U::kCount, [](C c) -> Json { return c.store().open_containers; })
          .Gauge("dedupv1_containers", state).Labeled("state", "open")
          .Page(1, "Open"),
      Row("containers", "in_flight", U::kCount, [](C c) -> Json { return c.store().containers_in_flight; })
          .Gauge("dedupv1_containers", state).Labeled("state", "in_flight")
          .Page(2, "Committing"),
      Row("containers", "committed", U::kCount, [](C c) -> Json { return c.store().containers_committed; })
          .Counter("dedupv1_containers_committed_total", "Containers committed.")
          .Page(3, "Committed"),
      Row("containers", "commit_failures", U::kCount, [](C c) -> Json { return c.store().containers_failed; })
          .Counter("dedupv1_container_commit_failures_total", "Failed container commit attempts.")
          .Page(4, "Commit failures / retries", R"js(count(v.commit_failures) + " / " + count(v.commit_retries))js"),
      Row("containers", "commit_retries", U::kCount, [](C c) -> Json { return c.store().commit_retries; })
          .Counter("dedupv1_container_commit_retries_total", "Container commit retries."),
      Row("containers", "last_allocated_id", U::kId,
          [](C c) -> Json { return c.system()->chunk_store()->last_allocated_id(); }),
      Row("containers", "commit_latency_ms_total", U::kMilliseconds,
          [](C c) -> Json { return c.store().commit_latency_ms_total; })
          .Counter("dedupv1_container_commit_latency_seconds_total", "Time spent committing containers.")
          .DividedBy(1000.0),
      Row("containers", "average_commit_latency_ms", U::kMilliseconds,
          [](C c) -> Json {
            const ChunkStoreStats& st = c.store();
            return st.containers_committed == 0 ? 0.0
                                                : static_cast<double>(st.commit_latency_ms_total) /
                                                      static_cast<double>(st.containers_committed);
          })
          .Page(5, "Average commit latency", R"js(v.average_commit_latency_ms.toFixed(1) + " ms")js"),
      Row("containers", "chunks_stored", U::kCount, [](C c) -> Json { return c.store().chunks_stored; })
          .Page(6, "Chunks stored"),
      Row("containers", "raw_bytes", U::kBytes, [](C c) -> Json { return c.store().bytes_raw; })
          .Counter("dedupv1_chunk_store_raw_bytes_total", "Chunk bytes stored, before compression.")
          .Page(7, "Raw / stored", R"js(bytes(v.raw_bytes) + " / " + bytes(v.stored_bytes))js"),
      Row("containers", "stored_bytes", U::kBytes, [](C c) -> Json { return c.store().bytes_stored; })
          .Counter("dedupv1_chunk_store_stored_bytes_total", "Chunk bytes stored, after compression."),
      Row("containers", "compression", U::kText,
          [](C c) -> Json { return CompressionName(c.system()->chunk_store()->options().compression); })
          .Page(8, "Compression"),
      Row("containers", "container_size_bytes", U::kBytes,
          [](C c) -> Json { return c.system()->chunk_store()->options().container_size; })
          .Page(9, "Container size"),
      Row("containers", "container_reads", U::kCount, [](C c) -> Json { return c.store().container_reads; })
          .Counter("dedupv1_container_reads_total", "Containers read from disk.")
          .Page(11, "Containers read"),
      Row("containers", "container_metadata_reads", U::kCount, [](C c) -> Json { return c.store().metadata_reads; })
          .Counter("dedupv1_container_metadata_reads_total",
                   "Container metadata sections read from disk (fingerprints for the container cache).")
          .Page(12, "Container metadata reads"),
      Row("containers", "read_cache_hits", U::kCount, [](C c) -> Json { return c.store().read_cache_hits; })
          .Counter("dedupv1_container_read_cache_requests_total", cache).Labeled("result", "hit"),
      Row("containers", "read_cache_misses", U::kCount, [](C c) -> Json { return c.store().read_cache_misses; })
          .Counter("dedupv1_container_read_cache_requests_total", cache).Labeled("result", "miss"),
      Row("containers", "read_cache_hit_ratio", U::kRatio,
          [](C c) -> Json { return Fraction(c.store().read_cache_hits, c.store().read_cache_hits + c.store().read_cache_misses); })
          .Page(10, "Read-cache hit rate",
                R"js(pct(v.read_cache_hit_ratio) + " of " + count(v.read_cache_hits + v.read_cache_misses))js"),

      // GC's merge figures, repeated where the containers are shown.
      Row("containers.merge", "available", U::kFlag, [](C) -> Json { return true; }),
      Row("containers.merge", "containers_merged", U::kCount, [](C c) -> Json { return c.gc().containers_merged; }),
      Row("containers.merge", "merged_containers_written", U::kCount,
          [](C c) -> Json { return c.gc().containers_written; }),
      Row("containers.merge", "containers_deleted", U::kCount, [](C c) -> Json { return c.gc().containers_deleted; }),
  };
}

std::vector<MetricRow> LogRows() {
  return {
      Row("log", "fill", U::kRatio, [](C c) -> Json { return c.log().fill; })
          .Gauge("dedupv1_log_fill_ratio", "Share of the operations log in use (0..1).")
          .Page(1, "Fill", R"js(pct(v.fill) + " of " + bytes(v.size_bytes))js"),
      Row("log", "used_slots", U::kCount, [](C c) -> Json { return c.log().used_slots; }),
      Row("log", "slots", U::kCount, [](C c) -> Json { return c.log().slots; }),
      Row("log", "size_bytes", U::kBytes, [](C c) -> Json { return c.options().log.size_bytes; }),
      Row("log", "soft_limit", U::kRatio, [](C c) -> Json { return c.options().log.soft_limit; })
          .Page(2, "Checkpoint at / writers wait at", R"js(pct(v.soft_limit) + " / " + pct(v.hard_limit))js"),
      Row("log", "hard_limit", U::kRatio, [](C c) -> Json { return c.options().log.hard_limit; }),
      // Events before the head are persistent in the indexes; replay at the
      // next checkpoint (or at a dirty start) begins at the head.
      Row("log", "replay_position", U::kId, [](C c) -> Json { return c.log().head_id; })
          .Page(3, "Replay position (head)"),
      Row("log", "last_event", U::kId, [](C c) -> Json { return c.log().last_id; })
          .Page(4, "Last event / durable", R"js(count(v.last_event) + " / " + count(v.durable_event))js"),
      Row("log", "durable_event", U::kId, [](C c) -> Json { return c.log().durable_id; }),
      Row("log", "mode", U::kText,
          [](C) -> Json { return "background replay at checkpoints (soft limit, idle, close)"; }),
      Row("log", "replay_paused", U::kFlag, [](C c) -> Json { return c.idle().replay_paused; })
          .Page(5, "Replay mode",
                R"js("background, at checkpoints" + (v.replay_paused ? " (paused by an admin)" : ""))js"),
      Row("log", "idle_checkpoints", U::kCount, [](C c) -> Json { return c.idle().idle_checkpoints; }),
      Row("log", "soft_limit_checkpoints", U::kCount, [](C c) -> Json { return c.idle().soft_limit_checkpoints; }),
      Row("log", "soft_limit_throttles", U::kCount, [](C c) -> Json { return c.idle().soft_limit_throttles; }),
      Row("log", "checkpoints_skipped_paused", U::kCount, [](C c) -> Json { return c.idle().skipped_paused; }),
      Row("log", "appended_events", U::kCount, [](C c) -> Json { return c.log().appended_events; })
          .Counter("dedupv1_log_appended_events_total", "Events appended to the operations log.")
          .Page(6, "Events appended", R"js(count(v.appended_events) + " (" + bytes(v.appended_bytes) + ")")js"),
      Row("log", "appended_bytes", U::kBytes, [](C c) -> Json { return c.log().appended_bytes; }),
      Row("log", "syncs", U::kCount, [](C c) -> Json { return c.log().syncs; })
          .Counter("dedupv1_log_syncs_total", "Operations log syncs (group commits).")
          .Page(7, "Syncs (group commits)"),
      Row("log", "throttled_appends", U::kCount, [](C c) -> Json { return c.log().throttled_appends; })
          .Page(8, "Throttled appends"),
      Row("log", "last_start", U::kText,
          [](C c) -> Json {
            return c.system()->recovery().dirty_start ? "unclean stop: dirty-start replay" : "clean";
          })
          .Page(9, "Last start"),
      Row("log", "start_events_replayed", U::kCount, [](C c) -> Json { return c.system()->recovery().events_replayed; })
          .Page(10, "Replayed at start",
                R"js(count(v.start_events_replayed) + " events, " + count(v.start_mappings_restored) + " mappings restored")js"),
      Row("log", "start_mappings_restored", U::kCount,
          [](C c) -> Json { return c.system()->recovery().mappings_applied; }),
      Row("log", "start_mappings_dropped_unsynced", U::kCount,
          [](C c) -> Json { return c.system()->recovery().mappings_dropped; }),
      Row("log", "start_containers_reimported", U::kCount,
          [](C c) -> Json { return c.system()->recovery().containers_imported; }),
      Row("log", "last_error", U::kText, [](C c) -> Json { return c.log().last_error; })
          .When([](C c) { return !c.log().last_error.empty(); }),
  };
}

std::vector<MetricRow> GcRows() {
  return {
      Row("gc", "available", U::kFlag, [](C) -> Json { return true; }),
      Row("gc", "running", U::kFlag, [](C c) -> Json { return c.gc().running; })
          .Gauge("dedupv1_gc_running", "1 while a garbage collection round runs."),
      // What a long round (the full scan after a start) is doing and how far it got.
      Row("gc", "phase", U::kText, [](C c) -> Json { return c.gc().phase; })
          .When([](C c) { return c.gc().running; }),
      Row("gc", "scan_progress", U::kText,
          [](C c) -> Json {
            return std::to_string(c.gc().scan_containers_done) + " / " +
                   std::to_string(c.gc().scan_containers_total) + " containers";
          })
          .When([](C c) { return c.gc().running; }),
      Row("gc", "mode", U::kText,
          [](C) -> Json { return "after a quiet-period checkpoint when chunks reached usage 0, and on POST /gc/run"; }),
      Row("gc", "runs", U::kCount, [](C c) -> Json { return c.gc().runs; })
          .Counter("dedupv1_gc_runs_total", "Garbage collection rounds finished (failed ones included)."),
      Row("gc", "failed_runs", U::kCount, [](C c) -> Json { return c.gc().failed_runs; })
          .Counter("dedupv1_gc_failed_runs_total", "Garbage collection rounds that failed."),
      Row("gc", "candidates", U::kCount, [](C c) -> Json { return c.gc().candidates; })
          .Gauge("dedupv1_gc_candidates", "Chunks at usage 0 waiting for the next round."),
      Row("gc", "chunks_deleted", U::kCount, [](C c) -> Json { return c.gc().chunks_deleted; })
          .Counter("dedupv1_gc_chunks_deleted_total", "Chunks whose index entry garbage collection erased."),
      Row("gc", "chunks_survived_recheck", U::kCount, [](C c) -> Json { return c.gc().chunks_survived; })
          .Counter("dedupv1_gc_chunks_survived_total", "Candidates referenced again before the recheck."),
      Row("gc", "orphan_chunks_found", U::kCount, [](C c) -> Json { return c.gc().orphans_found; }),
      Row("gc", "spare_copies_dead", U::kCount, [](C c) -> Json { return c.gc().spare_copies_dead; })
          .Counter("dedupv1_gc_spare_copies_dead_total",
                   "Copies of chunks stored twice that no mapping names any more, given back."),
      Row("gc", "reclaimed_bytes", U::kBytes, [](C c) -> Json { return c.gc().bytes_reclaimed; })
          .Counter("dedupv1_gc_reclaimed_bytes_total", "Container store bytes given back by garbage collection."),
      Row("gc", "containers_merged", U::kCount, [](C c) -> Json { return c.gc().containers_merged; })
          .Counter("dedupv1_gc_containers_merged_total", "Containers folded into merged containers."),
      Row("gc", "merged_containers_written", U::kCount, [](C c) -> Json { return c.gc().containers_written; }),
      Row("gc", "containers_deleted", U::kCount, [](C c) -> Json { return c.gc().containers_deleted; })
          .Counter("dedupv1_gc_containers_deleted_total", "Containers deleted because nothing in them was live."),
      Row("gc", "rounds_deferred", U::kCount, [](C c) -> Json { return c.gc().rounds_deferred; })
          .Counter("dedupv1_gc_rounds_deferred_total",
                   "Rounds that left deleting and merging to a later round because the log still held counted events."),
      Row("gc", "containers_scanned", U::kCount, [](C c) -> Json { return c.gc().containers_scanned; }),
      Row("gc", "containers_looked_up", U::kCount, [](C c) -> Json { return c.gc().containers_looked_up; }),
      Row("gc", "containers_summarized", U::kCount, [](C c) -> Json { return c.gc().containers_summarized; }),
      Row("gc", "used_bytes", U::kBytes, [](C c) -> Json { return c.gc().used_bytes; })
          .Gauge("dedupv1_gc_used_bytes", "Container store bytes after the last garbage collection round."),
      Row("gc", "live_bytes", U::kBytes, [](C c) -> Json { return c.gc().live_bytes; }),
      // Garbage left in containers at least half live (merged once they fall
      // below half), and how much of it a restart would have to find again.
      Row("gc", "garbage_chunks_kept", U::kCount, [](C c) -> Json { return c.store().dead_chunks_marked; })
          .Gauge("dedupv1_gc_garbage_chunks_kept",
                 "Garbage chunks left in containers at least half live (merged once they fall below half)."),
      Row("gc", "garbage_marks_unpersisted", U::kCount, [](C c) -> Json { return c.store().dead_marks_unpersisted; }),
      Row("gc", "last_run_unix", U::kUnixTime, [](C c) -> Json { return c.gc().last_run_unix; })
          .Gauge("dedupv1_gc_last_run_timestamp_seconds", "End of the last garbage collection round (Unix time)."),
      Row("gc", "last_run_duration_ms", U::kMilliseconds, [](C c) -> Json { return c.gc().last_run_ms; }),
      Row("gc", "usage_events_counted", U::kCount, [](C c) -> Json { return c.gc().usage.events_counted; }),
      Row("gc", "usage_events_dropped", U::kCount, [](C c) -> Json { return c.gc().usage.events_dropped; }),
      Row("gc", "usage_changes_already_counted", U::kCount, [](C c) -> Json { return c.gc().usage.changes_skipped; }),
      Row("gc", "usage_counted_up_to_event", U::kId, [](C c) -> Json { return c.gc().usage.applied_id; }),
      Row("gc", "last_error", U::kText, [](C c) -> Json { return c.gc().last_error; })
          .When([](C c) { return !c.gc().last_error.empty(); }),
      // Cluster scope only: the index rounds over the shared chunk index (core/engine/cluster_gc.h).
      Row("gc", "cluster_index_rounds", U::kCount, [](C c) -> Json { return c.gc().cluster_index.rounds; })
          .When(ClusterScope)
          .Counter("dedupv1_gc_cluster_index_rounds_total", "Cluster index GC rounds this gateway slot led."),
      Row("gc", "cluster_index_rounds_skipped", U::kCount,
          [](C c) -> Json { return c.gc().cluster_index.rounds_skipped; })
          .When(ClusterScope),
      Row("gc", "cluster_index_hints_seen", U::kCount, [](C c) -> Json { return c.gc().cluster_index.hints_seen; })
          .When(ClusterScope),
      Row("gc", "cluster_index_stale_claims_flipped", U::kCount,
          [](C c) -> Json { return c.gc().cluster_index.stale_claims_flipped; })
          .When(ClusterScope),
      Row("gc", "cluster_index_stale_claims_pending", U::kCount,
          [](C c) -> Json { return c.gc().cluster_index.stale_claims_pending; })
          .When(ClusterScope)
          .Gauge("dedupv1_gc_cluster_index_stale_claims_pending",
                 "Claims of dead incarnations waiting for their recheck before the index GC erases them."),
      Row("gc", "cluster_index_stale_claims_erased", U::kCount,
          [](C c) -> Json { return c.gc().cluster_index.stale_claims_erased; })
          .When(ClusterScope)
          .Counter("dedupv1_gc_cluster_index_stale_claims_erased_total",
                   "Claims of dead incarnations whose container never came, erased by the index GC."),
      Row("gc", "cluster_index_hints_dropped", U::kCount,
          [](C c) -> Json { return c.gc().cluster_index.hints_dropped; })
          .When(ClusterScope),
      Row("gc", "cluster_index_journal_records", U::kCount,
          [](C c) -> Json { return c.gc().cluster_index.journal_records; })
          .When(ClusterScope),
      Row("gc", "cluster_index_journal_failures", U::kCount,
          [](C c) -> Json { return c.gc().cluster_index.journal_failures; })
          .When(ClusterScope),
      Row("gc", "cluster_index_races", U::kCount, [](C c) -> Json { return c.gc().cluster_index.races; })
          .When(ClusterScope),
      Row("gc", "cluster_index_failed_rounds", U::kCount,
          [](C c) -> Json { return c.gc().cluster_index.failed_rounds; })
          .When(ClusterScope)
          .Counter("dedupv1_gc_cluster_index_failed_rounds_total", "Cluster index GC rounds that failed."),
      Row("gc", "cluster_index_last_error", U::kText,
          [](C c) -> Json { return c.gc().cluster_index.last_error; })
          .When([](C c) { return ClusterScope(c) && !c.gc().cluster_index.last_error.empty(); }),
      // Unused chunks (design-15 2.6 steps 4-7) and the GC epochs (core/rados/gc_epochs.h).
      Row("gc", "cluster_index_dead_marked", U::kCount, [](C c) -> Json { return c.gc().cluster_index.dead_marked; })
          .When(ClusterScope)
          .Counter("dedupv1_gc_cluster_index_dead_marked_total",
                   "Shared chunk index entries with usage 0 marked dead by the index GC this slot led."),
      Row("gc", "cluster_index_dead_finalized", U::kCount,
          [](C c) -> Json { return c.gc().cluster_index.dead_finalized; })
          .When(ClusterScope)
          .Counter("dedupv1_gc_cluster_index_dead_finalized_total",
                   "Dead entries erased and handed to their owner's dead inbox by the index GC this slot led."),
      Row("gc", "cluster_index_dead_unmarked", U::kCount,
          [](C c) -> Json { return c.gc().cluster_index.dead_unmarked; })
          .When(ClusterScope),
      Row("gc", "cluster_index_dead_waiting", U::kCount,
          [](C c) -> Json { return c.gc().cluster_index.dead_waiting; })
          .When(ClusterScope)
          .Gauge("dedupv1_gc_cluster_index_dead_waiting",
                 "Dead entries waiting for every gateway slot's safe epoch before they are erased."),
      Row("gc", "cluster_index_waiting_for", U::kText,
          [](C c) -> Json { return "GC waits for slot " + c.gc().cluster_index.waiting_for; })
          .When([](C c) { return ClusterScope(c) && !c.gc().cluster_index.waiting_for.empty(); }),
      Row("gc", "cluster_index_young", U::kCount, [](C c) -> Json { return c.gc().cluster_index.young; })
          .When(ClusterScope),
      Row("gc", "cluster_index_unsent", U::kCount, [](C c) -> Json { return c.gc().cluster_index.unsent; })
          .When(ClusterScope),
      Row("gc", "cluster_index_epoch_bumps", U::kCount,
          [](C c) -> Json { return c.gc().cluster_index.epoch_bumps; })
          .When(ClusterScope),
      Row("gc", "cluster_epoch", U::kId, [](C c) -> Json { return c.gc().cluster_index.slot_epoch; })
          .When(ClusterScope)
          .Gauge("dedupv1_gc_cluster_epoch", "The GC epoch this gateway slot tags its runs with."),
      Row("gc", "cluster_safe_epoch", U::kId, [](C c) -> Json { return c.gc().cluster_index.slot_safe_epoch; })
          .When(ClusterScope)
          .Gauge("dedupv1_gc_cluster_safe_epoch",
                 "The last safe GC epoch this gateway slot published (every reference of an older run counted)."),
      Row("gc", "cluster_epoch_follow_error", U::kText,
          [](C c) -> Json { return c.gc().cluster_index.follow_error; })
          .When([](C c) { return ClusterScope(c) && !c.gc().cluster_index.follow_error.empty(); }),
  };
}

// iCache (cache.budget, core/engine/cache_budget.h): the split and both sides.
std::vector<MetricRow> CacheRows() {
  const auto on = [](C c) { return c.cache().enabled; };
  return {
      Row("cache", "enabled", U::kFlag, [](C c) -> Json { return c.cache().enabled; })
          .Page(1, "Budget", R"js(v.enabled ? bytes(v.budget_bytes) : "fixed caches (cache.budget unset)")js"),
      Row("cache", "budget_bytes", U::kBytes, [](C c) -> Json { return c.cache().budget_bytes; }).When(on)
          .Gauge("dedupv1_cache_budget_bytes", "iCache's memory budget for the index page cache and the read cache."),
      Row("cache", "index_bytes", U::kBytes, [](C c) -> Json { return c.cache().index_bytes; }).When(on)
          .Gauge("dedupv1_cache_share_bytes", "Each cache's share of the budget.").Labeled("cache", "index")
          .Page(2, "Split index / read", R"js(bytes(v.index_bytes) + " / " + bytes(v.read_bytes))js"),
      Row("cache", "read_bytes", U::kBytes, [](C c) -> Json { return c.cache().read_bytes; }).When(on)
          .Gauge("dedupv1_cache_share_bytes", "Each cache's share of the budget.").Labeled("cache", "read"),
      Row("cache", "index_used_bytes", U::kBytes, [](C c) -> Json { return c.cache().index.used_bytes; }).When(on),
      Row("cache", "index_hits", U::kCount, [](C c) -> Json { return c.cache().index.hits; }).When(on)
          .Counter("dedupv1_cache_index_requests_total", "Lookups of iCache's index page cache by result.")
          .Labeled("result", "hit"),
      Row("cache", "index_misses", U::kCount, [](C c) -> Json { return c.cache().index.misses; }).When(on)
          .Counter("dedupv1_cache_index_requests_total", "Lookups of iCache's index page cache by result.")
          .Labeled("result", "miss"),
      Row("cache", "index_ghost_hits", U::kCount, [](C c) -> Json { return c.cache().index.ghost_hits; }).When(on)
          .Counter("dedupv1_cache_ghost_hits_total", "Misses of entries the cache evicted lately, by cache.")
          .Labeled("cache", "index"),
      Row("cache", "index_hit_ratio", U::kRatio,
          [](C c) -> Json { return Fraction(c.cache().index.hits, c.cache().index.hits + c.cache().index.misses); })
          .When(on)
          .Page(3, "Index pages: hit rate, ghost hits",
                R"js(pct(v.index_hit_ratio) + " of " + count(v.index_hits + v.index_misses) + ", " + count(v.index_ghost_hits))js"),
      Row("cache", "read_hits", U::kCount, [](C c) -> Json { return c.cache().read_hits; }).When(on)
          .Counter("dedupv1_cache_read_requests_total", "Lookups of iCache's container read cache by result.")
          .Labeled("result", "hit"),
      Row("cache", "read_misses", U::kCount, [](C c) -> Json { return c.cache().read_misses; }).When(on)
          .Counter("dedupv1_cache_read_requests_total", "Lookups of iCache's container read cache by result.")
          .Labeled("result", "miss"),
      Row("cache", "read_ghost_hits", U::kCount, [](C c) -> Json { return c.cache().read_ghost_hits; }).When(on)
          .Counter("dedupv1_cache_ghost_hits_total", "Misses of entries the cache evicted lately, by cache.")
          .Labeled("cache", "read"),
      Row("cache", "read_hit_ratio", U::kRatio,
          [](C c) -> Json { return Fraction(c.cache().read_hits, c.cache().read_hits + c.cache().read_misses); })
          .When(on)
          .Page(4, "Containers: hit rate, ghost hits",
                R"js(pct(v.read_hit_ratio) + " of " + count(v.read_hits + v.read_misses) + ", " + count(v.read_ghost_hits))js"),
      Row("cache", "read_capacity_containers", U::kCount, [](C c) -> Json { return c.cache().read_capacity_containers; })
          .When(on),
      Row("cache", "steps", U::kCount, [](C c) -> Json { return c.cache().steps; }).When(on)
          .Counter("dedupv1_cache_steps_total", "Split decisions iCache took (one per 4096 cache lookups).")
          .Page(5, "Steps (to index / to read)",
                R"js(count(v.steps) + " (" + count(v.moves_to_index) + " / " + count(v.moves_to_read) + ")")js"),
      Row("cache", "moves_to_index", U::kCount, [](C c) -> Json { return c.cache().moves_to_index; }).When(on),
      Row("cache", "moves_to_read", U::kCount, [](C c) -> Json { return c.cache().moves_to_read; }).When(on),
  };
}

std::vector<MetricRow> IdleRows() {
  return {
      Row("idle", "available", U::kFlag, [](C) -> Json { return true; }),
      Row("idle", "mode", U::kText, [](C c) -> Json { return IdleModeName(c.idle().detector.mode); })
          .Page(2, "Mode", R"js(v.mode + (v.forced ? " (forced by an admin)" : " (detected)"))js"),
      Row("idle", "idle", U::kFlag, [](C c) -> Json { return c.idle().detector.idle; })
          .Gauge("dedupv1_idle", "1 while the system is idle (detected or forced): background replay, write-back, GC.")
          .Page(1, "State",
                R"js((v.idle ? "idle" : "busy") + (v.idle && v.since_unix ? " since " + new Date(v.since_unix * 1000).toLocaleTimeString() : ""))js"),
      Row("idle", "forced", U::kFlag, [](C c) -> Json { return c.idle().forced; })
          .Gauge("dedupv1_idle_forced", "1 while an admin forces the idle state (idle or busy), 0 in auto mode."),
      Row("idle", "since_unix", U::kUnixTime, [](C c) -> Json { return c.idle().idle_since_unix; }),
      Row("idle", "below_threshold_seconds", U::kSeconds,
          [](C c) -> Json { return c.idle().detector.below_for_ms / 1000.0; })
          .Page(6, "Below the threshold for", R"js(v.below_threshold_seconds.toFixed(1) + " s")js"),
      Row("idle", "write_bytes_per_second", U::kBytesPerSecond,
          [](C c) -> Json { return c.idle().detector.write_bytes_per_second; })
          .Page(3, "Throughput (write + read)", R"js(bytes(v.write_bytes_per_second + v.read_bytes_per_second) + "/s")js"),
      Row("idle", "read_bytes_per_second", U::kBytesPerSecond,
          [](C c) -> Json { return c.idle().detector.read_bytes_per_second; }),
      Row("idle", "throughput_threshold_bytes_per_second", U::kBytesPerSecond,
          [](C c) -> Json { return c.idle().options.throughput_threshold; })
          .Page(5, "Idle below",
                R"js(bytes(v.throughput_threshold_bytes_per_second) + "/s" + (v.latency_threshold_ms > 0 ? " and " + v.latency_threshold_ms + " ms" : "") + " for " + v.period_seconds + " s (window " + v.window_seconds + " s)")js"),
      Row("idle", "period_seconds", U::kSeconds, [](C c) -> Json { return c.idle().options.period_ms / 1000.0; }),
      Row("idle", "window_seconds", U::kSeconds, [](C c) -> Json { return c.idle().options.window_ms / 1000.0; }),
      Row("idle", "requests_per_second", U::kPerSecond,
          [](C c) -> Json { return c.idle().detector.requests_per_second; }),
      Row("idle", "mean_latency_ms", U::kMilliseconds, [](C c) -> Json { return c.idle().detector.mean_latency_ms; })
          .Gauge("dedupv1_request_latency_mean_seconds",
                 "Mean latency of the reads, writes and unmaps completed in the idle detection window.")
          .DividedBy(1000.0)
          .Page(4, "Request latency (mean)",
                R"js(v.mean_latency_ms.toFixed(2) + " ms at " + v.requests_per_second.toFixed(1) + " requests/s")js"),
      Row("idle", "latency_threshold_ms", U::kMilliseconds, [](C c) -> Json { return c.idle().options.latency_threshold_ms; }),
      Row("idle", "replay_paused", U::kFlag, [](C c) -> Json { return c.idle().replay_paused; })
          .Gauge("dedupv1_replay_paused", "1 while background log replay is paused by an admin.")
          .Page(7, "Background replay", R"js(v.replay_paused ? "paused" : "running")js"),
      Row("idle", "idle_starts", U::kCount, [](C c) -> Json { return c.idle().detector.starts; })
          .Counter("dedupv1_idle_starts_total", "Times the system became idle.")
          .Page(8, "Idle periods / ticks / ends",
                R"js(count(v.idle_starts) + " / " + count(v.idle_ticks) + " / " + count(v.idle_ends))js"),
      Row("idle", "idle_ticks", U::kCount, [](C c) -> Json { return c.idle().detector.ticks; }),
      Row("idle", "idle_ends", U::kCount, [](C c) -> Json { return c.idle().detector.ends; }),
      Row("idle", "idle_checkpoints", U::kCount, [](C c) -> Json { return c.idle().idle_checkpoints; })
          .Counter("dedupv1_idle_checkpoints_total", "Checkpoints run because the system was idle.")
          .Page(9, "Idle checkpoints / GC rounds", R"js(count(v.idle_checkpoints) + " / " + count(v.idle_gc_runs))js"),
      Row("idle", "idle_gc_runs", U::kCount, [](C c) -> Json { return c.idle().idle_gc_runs; }),
  };
}

}  // namespace

const char* MetricItemLabel(const std::string& section) {
  if (section == "volumes[]") return "volume";
  if (section == "filters[]") return "filter";
  return nullptr;
}

// The storage backend (storage.backend): a rados store's pools and the
// RADOS operations of this process per kind, with their latency.
template <RadosOpKind K>
RadosStats::Kind KindStats(C c) {
  return c.system()->rados()->stats().kinds[static_cast<int>(K)];
}
bool OnRados(C c) { return c.system()->rados() != nullptr; }
Json PoolUsageJson(RadosCluster* cluster, const std::string& pool) {
  uint64_t objects = 0, bytes = 0;
  Status s = cluster->PoolUsage(pool, &objects, &bytes);
  if (!s.ok()) return Json{{"pool", pool}, {"error", s.ToString()}};
  return Json{{"pool", pool}, {"objects", objects}, {"bytes", bytes}};
}

// The rows of one kind of RADOS operation: count, errors, bytes, latency.
// (A template, so the readers stay plain functions, one per kind.)
template <RadosOpKind K>
std::vector<MetricRow> KindRows() {
  static const std::string name = RadosOpKindName(K);
  static const std::string key = "rados_" + name;
  static const std::string keys[] = {key + "_ops", key + "_errors", key + "_bytes", key + "_seconds",
                                     key + "_mean_ms", key + "_max_ms"};
  static const std::string label = "RADOS " + name;
  static const std::string page = "count(v." + keys[0] + ") + \" ops, \" + count(v." + keys[1] + ") + \" errors, \" + bytes(v." +
                                  keys[2] + ") + \", mean \" + v." + keys[4] + ".toFixed(2) + \" ms, max \" + v." + keys[5] +
                                  ".toFixed(1) + \" ms\"";
  return {
      Row("backend", keys[0].c_str(), U::kCount, [](C c) -> Json { return KindStats<K>(c).ops; })
          .When(OnRados)
          .Counter("dedupv1_rados_ops_total", "RADOS operations of this process, by kind.")
          .Labeled("kind", name.c_str())
          .Page(10 + static_cast<int>(K), label.c_str(), page.c_str()),
      Row("backend", keys[1].c_str(), U::kCount, [](C c) -> Json { return KindStats<K>(c).errors; }).When(OnRados),
      Row("backend", keys[2].c_str(), U::kBytes, [](C c) -> Json { return KindStats<K>(c).bytes; }).When(OnRados),
      Row("backend", keys[3].c_str(), U::kSeconds,
          [](C c) -> Json { return KindStats<K>(c).latency_us_total / 1e6; })
          .When(OnRados)
          .Counter("dedupv1_rados_op_seconds_total", "Seconds RADOS operations of this process took, by kind.")
          .Labeled("kind", name.c_str()),
      Row("backend", keys[4].c_str(), U::kMilliseconds,
          [](C c) -> Json {
            RadosStats::Kind k = KindStats<K>(c);
            return k.ops == 0 ? 0.0 : k.latency_us_total / 1e3 / k.ops;
          })
          .When(OnRados),
      Row("backend", keys[5].c_str(), U::kMilliseconds, [](C c) -> Json { return KindStats<K>(c).latency_us_max / 1e3; })
          .When(OnRados),
  };
}

std::vector<MetricRow> BackendRows() {
  std::vector<MetricRow> rows = {
      Row("backend", "kind", U::kText, [](C c) -> Json { return c.options().storage_backend; })
          .Page(1, "Storage backend"),
      Row("backend", "store", U::kText, [](C c) -> Json { return c.options().rados.store; })
          .When(OnRados)
          .Page(2, "Store (RADOS namespace)"),
      Row("backend", "data_pool", U::kText,
          [](C c) -> Json { return PoolUsageJson(c.system()->rados(), c.options().rados.data_pool); })
          .When(OnRados)
          .Page(3, "Data pool", R"js(v.data_pool.pool + ": " + (v.data_pool.error || count(v.data_pool.objects) + " objects, " + bytes(v.data_pool.bytes)))js"),
      Row("backend", "index_pool", U::kText,
          [](C c) -> Json { return PoolUsageJson(c.system()->rados(), c.options().rados.index_pool); })
          .When(OnRados)
          .Page(4, "Index pool", R"js(v.index_pool.pool + ": " + (v.index_pool.error || count(v.index_pool.objects) + " objects, " + bytes(v.index_pool.bytes)))js"),
      Row("backend", "rados_ops", U::kCount, [](C c) -> Json { return c.system()->rados()->stats().TotalOps(); })
          .When(OnRados)
          .Page(5, "RADOS operations"),
  };
  for (auto kind_rows : {KindRows<RadosOpKind::kRead>, KindRows<RadosOpKind::kWrite>,
                         KindRows<RadosOpKind::kOmapRead>, KindRows<RadosOpKind::kOmapWrite>,
                         KindRows<RadosOpKind::kStat>, KindRows<RadosOpKind::kRemove>, KindRows<RadosOpKind::kList>,
                         KindRows<RadosOpKind::kLock>}) {
    for (MetricRow& r : kind_rows()) rows.push_back(r);
  }
  return rows;
}

const std::vector<MetricRow>& MetricTable() {
  static const std::vector<MetricRow>* table = [] {
    auto* t = new std::vector<MetricRow>;
    for (auto part : {DedupAndIoRows, VolumeAndFilterRows, ChunkIndexRows, BlockIndexRows, ContainerRows,
                      LogRows, GcRows, CacheRows, IdleRows, BackendRows}) {
      for (MetricRow& r : part()) t->push_back(r);
    }
    return t;
  }();
  return *table;
}

Json MetricSectionJson(const std::string& section, const MetricContext& context) {
  Json j = Json::object();
  for (const MetricRow& r : MetricTable()) {
    if (section != r.section) continue;
    if (r.present != nullptr && !r.present(context)) continue;
    j[r.key] = r.read(context);
  }
  return j;
}

std::string StatusPageListsScript() {
  // section -> its page rows, in page order.
  std::map<std::string, std::vector<const MetricRow*>> lists;
  for (const MetricRow& r : MetricTable()) {
    if (r.page_label != nullptr) lists[r.section].push_back(&r);
  }
  std::string out = "{\n";
  for (auto& [section, rows] : lists) {
    std::stable_sort(rows.begin(), rows.end(),
                     [](const MetricRow* a, const MetricRow* b) { return a->page_position < b->page_position; });
    out += "  " + Json(section).dump() + ": [\n";
    for (const MetricRow* r : rows) {
      out += "    [" + Json(r->page_label).dump() + ", (v) => " + r->PageExpression() + "],\n";
    }
    out += "  ],\n";
  }
  out += "}";
  return out;
}

}  // namespace dedupv1

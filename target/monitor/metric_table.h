// The monitor's metrics, one row each: where the figure sits in the /stats
// JSON (section and key), how it is read from the engine, whether and how
// Prometheus exposes it (name, counter or gauge, help, labels, scale) and
// whether the status page lists it (label and how to show the value).
// Everything the monitor reports about the engine comes from these rows:
//  - StatusCollector builds each JSON section from its rows, in table order;
//  - RenderPrometheusMetrics walks the rows and looks each value up in the
//    /stats document by the row's section and key;
//  - the status page's lists (chunk index, block index, containers, log,
//    idle) are generated from the rows' page lines (StatusPageHtml).
// So adding a metric is one row here plus its line in docs/monitoring.md
// (metric_table_test checks that the document names every row).
//
// Sections: "dedup", "io", "write_buffer", "chunk_index", "block_index",
// "containers", "containers.merge" (the object "merge" inside
// "containers"), "log", "gc", "idle", and the per-item lists "volumes[]"
// (one object per volume; Prometheus label volume) and "filters[]" (one per
// filter of the chain; label filter).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/engine/dedup_system.h"

namespace dedupv1 {

// JSON with keys kept in insertion order, so documents read top-down.
using Json = nlohmann::ordered_json;

// What a row reads from: the engine, read once per collection (each stats()
// copy is taken at most once, so the figures of one section agree), and for
// the per-item sections the volume or filter at hand.
class MetricContext {
 public:
  explicit MetricContext(DedupSystem* system) : system_(system) {}

  DedupSystem* system() const { return system_; }
  const Options& options() const { return system_->options(); }
  const SystemStats& stats() const { return system_->stats(); }
  const ChunkStoreStats& store() const;
  const ChunkIndexStats& chunk_index() const;
  const BlockIndexStats& block_index() const;
  const GcStats& gc() const;
  const DedupSystem::IdleInfo& idle() const;
  const BackgroundDedup::Stats& background() const;
  const DedupSystem::CacheInfo& cache() const;
  // Only while the system is open (the collector checks system()->log()).
  const OperationsLogStats& log() const;

  // The item of a per-item row ("volumes[]", "filters[]").
  Volume* volume() const { return volume_; }
  size_t filter() const { return filter_; }
  const FilterCounters& filter_counters() const { return system_->filter_chain().counters(filter_); }
  void SetVolume(Volume* v) { volume_ = v; }
  void SetFilter(size_t i) { filter_ = i; }

 private:
  DedupSystem* const system_;
  Volume* volume_ = nullptr;
  size_t filter_ = 0;
  mutable std::optional<ChunkStoreStats> store_;
  mutable std::optional<ChunkIndexStats> chunk_index_;
  mutable std::optional<BlockIndexStats> block_index_;
  mutable std::optional<GcStats> gc_;
  mutable std::optional<DedupSystem::IdleInfo> idle_;
  mutable std::optional<BackgroundDedup::Stats> background_;
  mutable std::optional<DedupSystem::CacheInfo> cache_;
  mutable std::optional<OperationsLogStats> log_;
};

// What a value counts or measures; the JSON key carries it as a suffix
// (_bytes, _seconds, _ms, _per_second, _ratio) where it has one.
enum class MetricUnit { kCount, kBytes, kSeconds, kMilliseconds, kRatio, kBytesPerSecond, kPerSecond,
                        kUnixTime, kFlag, kText, kId };
const char* MetricUnitName(MetricUnit unit);

enum class PrometheusType { kNone, kCounter, kGauge };

struct MetricRow {
  using Reader = Json (*)(const MetricContext&);
  using Condition = bool (*)(const MetricContext&);

  const char* section = "";
  const char* key = "";
  MetricUnit unit = MetricUnit::kCount;
  Reader read = nullptr;
  // When set, the key appears only while this holds (a GC round's phase
  // while it runs, a last error when there was one).
  Condition present = nullptr;

  // Prometheus: none when type is kNone. Rows of one family share name,
  // type and help and differ in their label (e.g. result="new"). Numbers
  // are divided by divisor (ms -> s); flags are 1 or 0.
  PrometheusType prom_type = PrometheusType::kNone;
  const char* prom_name = nullptr;
  const char* help = nullptr;
  const char* label = nullptr;
  const char* label_value = nullptr;
  double divisor = 1;

  // The status page: a line "page_label: value" in the section's list, in
  // the order of page_position; page_js is a JavaScript expression of the
  // section object v (the page's helpers count, bytes, pct are in scope),
  // or empty to show the value by its unit.
  int page_position = 0;
  const char* page_label = nullptr;
  const char* page_js = nullptr;

  // Builders, so each row of the table reads as one statement.
  MetricRow Counter(const char* name, const char* text) const;
  MetricRow Gauge(const char* name, const char* text) const;
  MetricRow Labeled(const char* name, const char* value) const;
  MetricRow DividedBy(double d) const;
  MetricRow When(Condition condition) const;
  MetricRow Page(int position, const char* text, const char* js = nullptr) const;

  // "section.key" ("volumes[].size_bytes" for per-item rows).
  std::string Path() const;
  // The JavaScript expression the page evaluates for this row's line.
  std::string PageExpression() const;
};

// The Prometheus label that names the item of a per-item section: "volume"
// for "volumes[]", "filter" for "filters[]"; null for other sections.
const char* MetricItemLabel(const std::string& section);

// Every row, in the order of the JSON keys within each section.
const std::vector<MetricRow>& MetricTable();

// The JSON object of |section| from its rows, in table order.
Json MetricSectionJson(const std::string& section, const MetricContext& context);

// The JavaScript object literal of the page's lists:
// {"chunk_index": [["label", (v) => ...], ...], ...}, lines in page order.
std::string StatusPageListsScript();

}  // namespace dedupv1

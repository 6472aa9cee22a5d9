// StatusCollector turns the state of a running DedupSystem into the JSON
// documents the monitor serves (/stats, /volumes, /index, ...). The figures
// of each section come from the rows of the metric table
// (target/monitor/metric_table.h); this class arranges the documents. It
// only reads:
// the engine's counters are atomics, and the few stats() calls that take an
// engine lock hold it for a copy of some integers, never across a request or
// any I/O, so collecting never stalls the I/O path.
//
// Parts that are not available (a closed system's log) are reported as
// {"available": false, "message": "..."} and never with made-up numbers.
//
// Field names carry their unit (_bytes, _seconds, _ms, _per_second); counts
// have none. Thread-safe: any number of requests may collect at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "core/engine/dedup_system.h"
#include "target/monitor/metric_table.h"
#include "target/monitor/throughput_history.h"

namespace dedupv1 {

// The dedupv1 version the monitor reports (the CMake project version).
const char* MonitorVersionString();

class StatusCollector {
 public:
  // |history| may be null (no throughput figures then). |start| is when the
  // system was started, for the uptime. |effective_config| is what Config()
  // shows ("key = value" lines of the whole config file); empty: the
  // engine's options.
  StatusCollector(DedupSystem* system, const ThroughputHistory* history,
                  std::chrono::steady_clock::time_point start, std::string effective_config = "");

  // Everything the status page shows, in one document.
  Json Stats() const;
  Json Volumes() const;     // {"volumes": [...]}
  Json Filters() const;     // {"chain": "...", "filters": [...]}
  Json Index() const;       // {"chunk_index": {...}, "block_index": {...}}
  Json Containers() const;
  Json Log() const;
  Json Gc() const;
  Json Idle() const;
  Json Config() const;      // {"entries": [{"key", "value"}, ...]}
  Json Version() const;
  Json Throughput() const;  // the newest sample
  Json History() const;     // the fine and coarse sample rings, column-wise

  double UptimeSeconds() const;

 private:
  // The parts Stats() shares with the endpoints, read through |context|.
  Json VolumesJson(const MetricContext& context) const;
  Json FiltersJson(const MetricContext& context) const;
  Json ContainersJson(const MetricContext& context) const;
  Json LogJson(const MetricContext& context) const;

  DedupSystem* const system_;
  const ThroughputHistory* const history_;
  const std::chrono::steady_clock::time_point start_;
  const std::string effective_config_;
};

}  // namespace dedupv1

#include "target/monitor/status_collector.h"

#include <sstream>
#include <vector>
#include <utility>

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
                                 std::chrono::steady_clock::time_point start, std::string effective_config)
    : system_(system), history_(history), start_(start), effective_config_(std::move(effective_config)) {}

double StatusCollector::UptimeSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
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

Json StatusCollector::Volumes() const { return VolumesJson(MetricContext(system_)); }

Json StatusCollector::VolumesJson(const MetricContext& shared) const {
  MetricContext context = shared;
  Json list = Json::array();
  for (Volume* v : system_->volumes()) {
    context.SetVolume(v);
    list.push_back(MetricSectionJson("volumes[]", context));
  }
  Json j;
  j["volumes"] = std::move(list);
  return j;
}

Json StatusCollector::Filters() const { return FiltersJson(MetricContext(system_)); }

Json StatusCollector::FiltersJson(const MetricContext& shared) const {
  MetricContext context = shared;
  const FilterChain& chain = system_->filter_chain();
  Json list = Json::array();
  for (size_t i = 0; i < chain.size(); i++) {
    context.SetFilter(i);
    list.push_back(MetricSectionJson("filters[]", context));
  }
  Json j;
  j["chain"] = chain.Describe();
  j["filters"] = std::move(list);
  return j;
}

Json StatusCollector::Index() const {
  const MetricContext context(system_);
  Json j;
  j["chunk_index"] = MetricSectionJson("chunk_index", context);
  j["block_index"] = MetricSectionJson("block_index", context);
  return j;
}

Json StatusCollector::Containers() const { return ContainersJson(MetricContext(system_)); }

Json StatusCollector::ContainersJson(const MetricContext& context) const {
  Json j = MetricSectionJson("containers", context);
  j["merge"] = MetricSectionJson("containers.merge", context);
  return j;
}

Json StatusCollector::Log() const { return LogJson(MetricContext(system_)); }

Json StatusCollector::LogJson(const MetricContext& context) const {
  if (system_->log() == nullptr) return NotAvailable("the operations log (system closed)");
  return MetricSectionJson("log", context);
}

Json StatusCollector::Gc() const { return MetricSectionJson("gc", MetricContext(system_)); }

Json StatusCollector::Idle() const { return MetricSectionJson("idle", MetricContext(system_)); }

Json StatusCollector::Config() const {
  Json entries = Json::array();
  std::istringstream in(effective_config_.empty() ? system_->options().ToString() : effective_config_);
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
  // One reading of the engine for the whole document, so its sections agree.
  const MetricContext context(system_);
  Json j;
  j["version"] = MonitorVersionString();
  j["uptime_seconds"] = UptimeSeconds();
  j["time_ms"] = NowUnixMs();
  j["dedup"] = MetricSectionJson("dedup", context);
  j["io"] = MetricSectionJson("io", context);
  j["throughput"] = Throughput();
  j["write_buffer"] = MetricSectionJson("write_buffer", context);
  j["volumes"] = VolumesJson(context)["volumes"];
  j["filters"] = FiltersJson(context)["filters"];
  j["chunk_index"] = MetricSectionJson("chunk_index", context);
  j["block_index"] = MetricSectionJson("block_index", context);
  j["containers"] = ContainersJson(context);
  j["log"] = LogJson(context);
  j["gc"] = MetricSectionJson("gc", context);
  j["cache"] = MetricSectionJson("cache", context);
  j["idle"] = MetricSectionJson("idle", context);
  j["backend"] = MetricSectionJson("backend", context);
  return j;
}

}  // namespace dedupv1

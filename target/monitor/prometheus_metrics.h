// Rendering of the monitor's figures in the Prometheus text exposition format
// (version 0.0.4), served at GET /metrics.
//
// Metric names are stable and say their unit: counters end in _total (bytes
// counters in _bytes_total), gauges carry their unit (_bytes, _seconds,
// _ratio, _entries). Each family has HELP and TYPE lines and all its samples
// together, as promtool requires. Label values are escaped (\\, \", \n).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "target/monitor/metric_table.h"

namespace dedupv1 {

// Collects samples by family and writes them out in the exposition format.
class PrometheusWriter {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // Adds one sample. The first sample of a family fixes its type ("counter"
  // or "gauge") and help text; families are written in first-use order.
  void Counter(const std::string& name, const std::string& help, double value,
               const Labels& labels = {});
  void Gauge(const std::string& name, const std::string& help, double value,
             const Labels& labels = {});

  std::string Render() const;

  static std::string EscapeLabelValue(const std::string& v);
  // Integers print without exponent or fraction; NaN/Inf as Prometheus spells them.
  static std::string FormatValue(double v);

 private:
  struct Family {
    std::string type;
    std::string help;
    std::vector<std::string> samples;  // "name{labels} value"
  };
  void Add(const std::string& name, const char* type, const std::string& help, double value,
           const Labels& labels);

  std::vector<std::string> order_;
  std::map<std::string, Family> families_;
};

// All dedupv1 metrics from a /stats document (StatusCollector::Stats): each
// row of the metric table with a Prometheus name, looked up by its section
// and key; plus the build, the uptime and the number of requests the monitor
// has served.
std::string RenderPrometheusMetrics(const Json& stats, uint64_t monitor_requests);

}  // namespace dedupv1

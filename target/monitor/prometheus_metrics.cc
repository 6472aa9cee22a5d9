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

// The object at |path| ("containers.merge": "merge" inside "containers") of
// |stats|, or null when a part is missing.
const Json* Section(const Json& stats, const std::string& path) {
  const Json* j = &stats;
  size_t start = 0;
  for (;;) {
    const size_t dot = path.find('.', start);
    auto it = j->find(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (it == j->end() || !it->is_object()) return nullptr;
    j = &*it;
    if (dot == std::string::npos) return j;
    start = dot + 1;
  }
}

// Adds the sample of |row| read from |object|, if the object has it (a part
// that is not available has none of its keys).
void AddSample(PrometheusWriter* w, const MetricRow& row, const Json& object, PrometheusWriter::Labels labels) {
  auto it = object.find(row.key);
  if (it == object.end()) return;
  double value = 0;
  if (it->is_boolean()) value = it->get<bool>() ? 1 : 0;
  else if (it->is_number()) value = it->get<double>() / row.divisor;
  else return;
  if (row.label != nullptr) labels.emplace_back(row.label, row.label_value);
  if (row.prom_type == PrometheusType::kCounter) w->Counter(row.prom_name, row.help, value, labels);
  else w->Gauge(row.prom_name, row.help, value, labels);
}

}  // namespace

std::string RenderPrometheusMetrics(const Json& stats, uint64_t monitor_requests) {
  PrometheusWriter w;
  // The process itself; the engine's figures follow from the metric table.
  w.Gauge("dedupv1_build_info", "Always 1; the version label is the running dedupv1 version.", 1,
          {{"version", stats.value("version", std::string("unknown"))}});
  w.Gauge("dedupv1_uptime_seconds", "Seconds since the system was started.",
          stats.value("uptime_seconds", 0.0));
  for (const MetricRow& row : MetricTable()) {
    if (row.prom_type == PrometheusType::kNone) continue;
    if (const char* item_label = MetricItemLabel(row.section)) {
      std::string list = row.section;
      list.resize(list.size() - 2);  // "volumes[]" -> "volumes"
      auto it = stats.find(list);
      if (it == stats.end() || !it->is_array()) continue;
      for (const Json& item : *it) {
        AddSample(&w, row, item, {{item_label, item.value("name", std::string())}});
      }
    } else if (const Json* section = Section(stats, row.section)) {
      AddSample(&w, row, *section, {});
    }
  }
  w.Counter("dedupv1_monitor_requests_total", "HTTP requests served by the monitor.",
            static_cast<double>(monitor_requests));
  return w.Render();
}

}  // namespace dedupv1

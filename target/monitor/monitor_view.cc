#include "target/monitor/monitor_view.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string_view>
#include <vector>

namespace dedupv1 {

using Json = nlohmann::ordered_json;

namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string Printf(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string LocalTime(int64_t unix_ms) {
  const time_t t = static_cast<time_t>(unix_ms / 1000);
  tm local{};
  localtime_r(&t, &local);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &local);
  return buf;
}

// The field name without the unit suffix the value already shows
// ("size_bytes" -> "size", "time_ms" -> "time").
std::string Label(const std::string& key) {
  std::string s = key;
  for (std::string_view unit : {"_bytes_per_second", "_per_second", "_bytes", "_seconds", "_ms"}) {
    if (EndsWith(s, unit) && s.size() > unit.size()) {
      s.resize(s.size() - unit.size());
      break;
    }
  }
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

std::string FormatValue(const std::string& key, const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    return s.empty() ? "-" : s;
  }
  if (!v.is_number()) return v.dump();
  const double d = v.get<double>();
  if (EndsWith(key, "_bytes_per_second")) return HumanBytes(d) + "/s";
  if (EndsWith(key, "_per_second")) return Printf("%.1f/s", d);
  if (EndsWith(key, "_bytes")) return HumanBytes(d);
  if (key == "ratio") return Printf("%.2f", d);
  if (EndsWith(key, "_ratio")) return Printf("%.1f %%", 100.0 * d);
  if (key == "uptime_seconds") return HumanDuration(d);
  if (EndsWith(key, "_seconds")) return Printf("%.3f s", d);
  if (key == "time_ms") return LocalTime(static_cast<int64_t>(d));
  if (EndsWith(key, "_ms")) return Printf("%.1f ms", d);
  if (v.is_number_unsigned()) return GroupedInteger(v.get<uint64_t>());
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    return i < 0 ? "-" + GroupedInteger(static_cast<uint64_t>(-i)) : GroupedInteger(i);
  }
  return Printf("%.3f", d);
}

bool IsScalar(const Json& v) { return !v.is_object() && !v.is_array(); }

bool IsTable(const Json& v) {
  return v.is_array() && !v.empty() &&
         std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_object(); });
}

bool LooksNumeric(const std::string& cell) {
  return !cell.empty() && (std::isdigit(static_cast<unsigned char>(cell[0])) ||
                           (cell[0] == '-' && cell.size() > 1));
}

// Rows of cells as an aligned table. A column (other than the first) whose
// cells are all figures is right-aligned, header included.
std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  const size_t columns = header.size();
  std::vector<size_t> width(columns, 0);
  std::vector<bool> right(columns, false);
  for (size_t c = 0; c < columns; c++) {
    width[c] = header[c].size();
    right[c] = c > 0 && !rows.empty();
    for (const auto& row : rows) {
      const std::string cell = c < row.size() ? row[c] : "";
      width[c] = std::max(width[c], cell.size());
      if (!cell.empty() && !LooksNumeric(cell)) right[c] = false;
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = indent;
    for (size_t c = 0; c < columns; c++) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      if (c > 0) out += "  ";
      out += right[c] ? pad + cell : cell + pad;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header);
  std::string rule = indent;
  for (size_t c = 0; c < columns; c++) rule += (c ? "  " : "") + std::string(width[c], '-');
  out += rule + "\n";
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string ObjectTable(const Json& array, const std::string& indent) {
  std::vector<std::string> keys;
  for (const Json& e : array) {
    for (auto it = e.begin(); it != e.end(); ++it) {
      if (IsScalar(it.value()) && std::find(keys.begin(), keys.end(), it.key()) == keys.end()) {
        keys.push_back(it.key());
      }
    }
  }
  std::vector<std::string> header;
  for (const auto& k : keys) header.push_back(Label(k));
  std::vector<std::vector<std::string>> rows;
  for (const Json& e : array) {
    std::vector<std::string> row;
    for (const auto& k : keys) row.push_back(e.contains(k) ? FormatValue(k, e[k]) : "");
    rows.push_back(std::move(row));
  }
  return Table(header, rows, indent);
}

void RenderObject(const Json& obj, const std::string& indent, std::string* out) {
  // A part not built yet says so in one line.
  if (obj.contains("available") && obj["available"] == false && obj.contains("message")) {
    *out += indent + obj["message"].get<std::string>() + "\n";
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (it.key() != "available" && it.key() != "message" && IsScalar(it.value())) {
        *out += indent + Label(it.key()) + ": " + FormatValue(it.key(), it.value()) + "\n";
      }
    }
    return;
  }
  size_t label_width = 0;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (IsScalar(it.value()) || (it.value().is_array() && !IsTable(it.value()))) {
      label_width = std::max(label_width, Label(it.key()).size());
    }
  }
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const Json& v = it.value();
    std::string value;
    if (IsScalar(v)) {
      value = FormatValue(it.key(), v);
    } else if (v.is_array() && !IsTable(v)) {
      if (v.size() <= 8) {
        for (const Json& e : v) value += (value.empty() ? "" : ", ") + FormatValue(it.key(), e);
        if (v.empty()) value = "(none)";
      } else {
        value = std::to_string(v.size()) + " values, last " + FormatValue(it.key(), v.back());
      }
    } else {
      continue;
    }
    const std::string label = Label(it.key());
    *out += indent + label + std::string(label_width - label.size() + 2, ' ') + value + "\n";
  }
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const Json& v = it.value();
    if (v.is_object()) {
      *out += "\n" + indent + "[" + Label(it.key()) + "]\n";
      RenderObject(v, indent + "  ", out);
    } else if (IsTable(v)) {
      *out += "\n" + indent + "[" + Label(it.key()) + "]\n";
      *out += ObjectTable(v, indent + "  ");
    }
  }
}

std::string RenderHistory(const Json& doc) {
  if (!doc.value("available", false)) {
    std::string out;
    RenderObject(doc, "", &out);
    return out;
  }
  std::string out;
  auto series = [&](const char* name, const Json& s, size_t last) {
    const Json& t = s["time_ms"];
    const size_t n = t.size();
    out += std::string("[") + name + "] " + std::to_string(n) + " samples";
    if (n > last) out += ", the last " + std::to_string(last);
    out += "\n";
    std::vector<std::vector<std::string>> rows;
    for (size_t i = n > last ? n - last : 0; i < n; i++) {
      rows.push_back({LocalTime(t[i].get<int64_t>()),
                      HumanBytes(s["write_bytes_per_second"][i].get<double>()) + "/s",
                      HumanBytes(s["read_bytes_per_second"][i].get<double>()) + "/s",
                      Printf("%.1f", s["write_ops_per_second"][i].get<double>()),
                      Printf("%.1f", s["read_ops_per_second"][i].get<double>())});
    }
    out += Table({"time", "write", "read", "writes/s", "reads/s"}, rows, "  ");
  };
  series("1 s samples", doc["fine"], 10);
  out += "\n";
  series("10 s samples", doc["coarse"], 12);
  return out;
}

}  // namespace

std::string HumanBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const bool negative = bytes < 0;
  double v = std::fabs(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < sizeof(kUnits) / sizeof(kUnits[0])) {
    v /= 1024;
    unit++;
  }
  char buf[48];
  if (unit == 0) {
    std::snprintf(buf, sizeof(buf), "%s%.0f B", negative ? "-" : "", v);
  } else {
    std::snprintf(buf, sizeof(buf), v < 10 ? "%s%.2f %s" : "%s%.1f %s", negative ? "-" : "", v,
                  kUnits[unit]);
  }
  return buf;
}

std::string HumanDuration(double seconds) {
  const uint64_t s = seconds > 0 ? static_cast<uint64_t>(seconds) : 0;
  const uint64_t d = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60, sec = s % 60;
  char buf[64];
  if (d > 0) {
    std::snprintf(buf, sizeof(buf), "%llud %lluh %02llum %02llus", (unsigned long long)d,
                  (unsigned long long)h, (unsigned long long)m, (unsigned long long)sec);
  } else if (h > 0) {
    std::snprintf(buf, sizeof(buf), "%lluh %02llum %02llus", (unsigned long long)h,
                  (unsigned long long)m, (unsigned long long)sec);
  } else {
    std::snprintf(buf, sizeof(buf), "%llum %02llus", (unsigned long long)m, (unsigned long long)sec);
  }
  return buf;
}

std::string GroupedInteger(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); i++) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string RenderMonitorView(const std::string& monitor, const Json& doc) {
  if (monitor == "history") return RenderHistory(doc);
  std::string out;
  if (doc.is_object()) {
    RenderObject(doc, "", &out);
  } else if (IsTable(doc)) {
    out = ObjectTable(doc, "");
  } else {
    out = doc.dump(2) + "\n";
  }
  return out;
}

}  // namespace dedupv1

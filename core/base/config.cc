#include "core/base/config.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "core/base/env.h"

namespace dedupv1 {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "12.5Kib" into number "12.5" and unit "kib".
bool SplitNumber(std::string_view text, std::string* number, std::string* unit) {
  text = Trim(text);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) i++;
  if (i == 0) return false;
  *number = std::string(text.substr(0, i));
  *unit = Lower(Trim(text.substr(i)));
  return true;
}

}  // namespace

Status Config::Parse(std::string_view text, const std::string& source, Config* config) {
  config->source_ = source;
  config->dir_.clear();
  config->entries_.clear();
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    line_no++;
    size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) {
      if (end == text.size()) break;
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument(source + ":" + std::to_string(line_no) +
                                     ": expected 'key = value', got '" + std::string(line) + "'");
    }
    std::string_view key = Trim(line.substr(0, eq));
    std::string_view value = Trim(line.substr(eq + 1));
    if (key.empty()) {
      return Status::InvalidArgument(source + ":" + std::to_string(line_no) + ": missing key before '='");
    }
    config->entries_.push_back({std::string(key), std::string(value), line_no});
    if (end == text.size()) break;
  }
  return Status::OK();
}

Status Config::Load(Env* env, const std::string& path, Config* config) {
  std::string text;
  Status s = ReadFileToString(env, path, &text);
  if (!s.ok()) return s.WithContext("cannot read config file");
  DEDUPV1_RETURN_IF_ERROR(Parse(text, path, config));
  std::error_code ec;
  std::filesystem::path file = std::filesystem::absolute(path, ec);
  if (ec) return Status::IOError("config file " + path + ": cannot tell its directory: " + ec.message());
  config->dir_ = file.lexically_normal().parent_path().string();
  return Status::OK();
}

std::string Config::PathValue(const ConfigEntry& e) const {
  if (e.line == 0 || dir_.empty() || e.value.empty() || e.value[0] == '/') return e.value;
  std::string p = (std::filesystem::path(dir_) / e.value).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

Status ParseUint(std::string_view text, uint64_t* value) {
  text = Trim(text);
  if (text.empty()) return Status::InvalidArgument("expected a whole number, got an empty value");
  uint64_t v = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return Status::InvalidArgument("expected a whole number, got '" + std::string(text) + "'");
    }
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return Status::InvalidArgument("number too large: " + std::string(text));
    v = v * 10 + d;
  }
  *value = v;
  return Status::OK();
}

Status ParseDouble(std::string_view text, double* value) {
  std::string s(Trim(text));
  if (s.empty()) return Status::InvalidArgument("expected a number, got an empty value");
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || *end != '\0' || !std::isfinite(v)) {
    return Status::InvalidArgument("expected a number, got '" + s + "'");
  }
  *value = v;
  return Status::OK();
}

Status ParseSize(std::string_view text, uint64_t* bytes) {
  std::string number, unit;
  const std::string err = "expected a size such as 4096, 4K, 1M, 10G or 2T, got '" +
                          std::string(Trim(text)) + "'";
  if (!SplitNumber(text, &number, &unit)) return Status::InvalidArgument(err);
  double v;
  if (!ParseDouble(number, &v).ok()) return Status::InvalidArgument(err);
  uint64_t mult = 1;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") mult = 1ULL << 10;
  else if (unit == "m" || unit == "mb" || unit == "mib") mult = 1ULL << 20;
  else if (unit == "g" || unit == "gb" || unit == "gib") mult = 1ULL << 30;
  else if (unit == "t" || unit == "tb" || unit == "tib") mult = 1ULL << 40;
  else if (unit == "p" || unit == "pb" || unit == "pib") mult = 1ULL << 50;
  else return Status::InvalidArgument(err);
  double total = v * static_cast<double>(mult);
  if (total >= 18446744073709551615.0) return Status::InvalidArgument("size too large: " + std::string(text));
  if (total != std::floor(total)) {
    return Status::InvalidArgument("size is not a whole number of bytes: '" + std::string(Trim(text)) + "'");
  }
  *bytes = static_cast<uint64_t>(total);
  return Status::OK();
}

Status ParseDurationMs(std::string_view text, uint64_t* ms) {
  std::string number, unit;
  const std::string err = "expected a duration such as 200ms, 4s, 5m or 1h, got '" +
                          std::string(Trim(text)) + "'";
  if (!SplitNumber(text, &number, &unit)) return Status::InvalidArgument(err);
  double v;
  if (!ParseDouble(number, &v).ok()) return Status::InvalidArgument(err);
  double mult;
  if (unit.empty() || unit == "ms") mult = 1;
  else if (unit == "s") mult = 1000;
  else if (unit == "m" || unit == "min") mult = 60000;
  else if (unit == "h") mult = 3600000;
  else return Status::InvalidArgument(err);
  *ms = static_cast<uint64_t>(v * mult);
  return Status::OK();
}

Status ParseBool(std::string_view text, bool* value) {
  std::string s = Lower(Trim(text));
  if (s == "true" || s == "yes" || s == "on" || s == "1") {
    *value = true;
  } else if (s == "false" || s == "no" || s == "off" || s == "0") {
    *value = false;
  } else {
    return Status::InvalidArgument("expected true or false, got '" + std::string(Trim(text)) + "'");
  }
  return Status::OK();
}

std::string HumanBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    u++;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[u]);
  return buf;
}

}  // namespace dedupv1

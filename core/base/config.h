// Config reads dedupv1's configuration format: one "key = value" per line,
// '#' starts a comment, blank lines are ignored, a key may repeat where the
// key allows it (e.g. "volume"). Values may carry units: sizes 512, 4K, 1M,
// 10T (binary multiples); durations 200ms, 4s, 1m. Parsing only splits lines;
// what keys exist and what they mean is decided by Options (core/engine/options.h),
// which names the key and line of anything it refuses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace dedupv1 {

class Env;

struct ConfigEntry {
  std::string key;
  std::string value;
  int line = 0;  // 1-based line number in the source; 0 for overrides
};

class Config {
 public:
  // Parses |text|; |source| names the file in error messages.
  static Status Parse(std::string_view text, const std::string& source, Config* config);
  // Reads (through |env|) and parses the file at |path|; dir() becomes its
  // directory.
  static Status Load(Env* env, const std::string& path, Config* config);

  const std::vector<ConfigEntry>& entries() const { return entries_; }
  const std::string& source() const { return source_; }
  // The absolute directory of the file Load read; "" for Parse.
  const std::string& dir() const { return dir_; }
  // The value of |e| as a path: a relative path written in the file is taken
  // relative to the file's directory, so every tool and tgtd (whatever its
  // current directory) finds the same place; overrides (line 0) and absolute
  // paths are returned as they are.
  std::string PathValue(const ConfigEntry& e) const;
  // Appends an entry (used for command-line overrides such as --data-dir).
  void Set(const std::string& key, const std::string& value) { entries_.push_back({key, value, 0}); }

 private:
  std::string source_;
  std::string dir_;
  std::vector<ConfigEntry> entries_;
};

// Value parsers. Each returns InvalidArgument describing the accepted form.
Status ParseSize(std::string_view text, uint64_t* bytes);        // 4096, 4K, 4KiB, 1M, 10T
Status ParseDurationMs(std::string_view text, uint64_t* ms);      // 200ms, 4s, 1m, 1h; bare = ms
Status ParseBool(std::string_view text, bool* value);             // true/false/yes/no/on/off/1/0
Status ParseUint(std::string_view text, uint64_t* value);
Status ParseDouble(std::string_view text, double* value);
// Formats a byte count for people: "1.5 GiB".
std::string HumanBytes(uint64_t bytes);

}  // namespace dedupv1

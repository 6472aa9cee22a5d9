// The pieces every options type of dedupv1 uses to read its keys from a
// Config: a key table (key -> the function that parses a value into the
// options), the error forms that name the file, line and key, and the list
// splitter for multi-valued keys.
//
// One config file holds the keys of several layers: the engine's
// (core/engine/options.h) and those of the iSCSI target and the monitor
// (target/service_options.h). Each options type owns a table of its own
// keys; a loader walks the file's entries in order and hands each entry to
// the table that owns its key, so the first bad line of the file is the one
// reported, whichever layer owns it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/base/config.h"
#include "core/base/status.h"

namespace dedupv1 {

// Parses |value| into |options|; InvalidArgument says what is accepted.
template <typename T>
using ConfigSetter = std::function<Status(const std::string& value, T* options)>;

// The keys of one options type. Ordered, so Keys() lists are stable.
template <typename T>
using ConfigKeyTable = std::map<std::string, ConfigSetter<T>>;

// "FILE:LINE" for an entry read from a file, "override" for one set on the
// command line (Config::Set).
std::string ConfigEntryWhere(const Config& config, const ConfigEntry& e);

// "WHERE: unknown key 'KEY'".
Status UnknownConfigKey(const Config& config, const ConfigEntry& e);

// "SOURCE: why" for a refusal that concerns the file as a whole (a
// combination of keys rather than one line).
Status ConfigFileError(const Config& config, const Status& why);

// Applies |e| through |table| when the table owns its key: *owned tells
// whether it did. A refused value comes back as "WHERE: KEY: why". data-dir
// is the one key whose value is read as a path relative to the config file
// (Config::PathValue); every other value is passed as written.
template <typename T>
Status ApplyConfigEntry(const ConfigKeyTable<T>& table, const Config& config, const ConfigEntry& e,
                        T* options, bool* owned) {
  auto it = table.find(e.key);
  *owned = it != table.end();
  if (!*owned) return Status::OK();
  Status s = it->second(e.key == "data-dir" ? config.PathValue(e) : e.value, options);
  if (!s.ok()) return Status::InvalidArgument(ConfigEntryWhere(config, e) + ": " + e.key + ": " + s.message());
  return Status::OK();
}

// The keys of |table|, in order.
template <typename T>
std::vector<std::string> ConfigKeys(const ConfigKeyTable<T>& table) {
  std::vector<std::string> keys;
  for (const auto& [k, _] : table) keys.push_back(k);
  return keys;
}

// Splits a list value at commas and blanks, dropping empty items:
// "a, b c" -> {a, b, c}.
std::vector<std::string> SplitConfigList(const std::string& value);

// Joins |items| with ',' (the form SplitConfigList reads back).
std::string JoinConfigList(const std::vector<std::string>& items);

}  // namespace dedupv1

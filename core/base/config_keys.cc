#include "core/base/config_keys.h"

#include <cctype>

namespace dedupv1 {

std::string ConfigEntryWhere(const Config& config, const ConfigEntry& e) {
  return e.line > 0 ? config.source() + ":" + std::to_string(e.line) : "override";
}

Status UnknownConfigKey(const Config& config, const ConfigEntry& e) {
  return Status::InvalidArgument(ConfigEntryWhere(config, e) + ": unknown key '" + e.key + "'");
}

Status ConfigFileError(const Config& config, const Status& why) {
  return Status::InvalidArgument(config.source() + ": " + why.message());
}

std::vector<std::string> SplitConfigList(const std::string& value) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : value) {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string JoinConfigList(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); i++) out += (i ? "," : "") + items[i];
  return out;
}

}  // namespace dedupv1

#include "target/service_options.h"

#include "core/base/config_keys.h"

namespace dedupv1 {

Status ServiceOptions::FromConfig(const Config& config, ServiceOptions* options) {
  ServiceOptions o;
  for (const auto& e : config.entries()) {
    bool owned = false;
    DEDUPV1_RETURN_IF_ERROR(ApplyConfigEntry(TargetOptions::KeyTable(), config, e, &o.target, &owned));
    if (!owned) DEDUPV1_RETURN_IF_ERROR(ApplyConfigEntry(MonitorOptions::KeyTable(), config, e, &o.monitor, &owned));
    if (!owned) DEDUPV1_RETURN_IF_ERROR(ApplyConfigEntry(Options::KeyTable(), config, e, &o.engine, &owned));
    if (!owned) return UnknownConfigKey(config, e);
  }
  // The rules across keys, engine first (the order the checks always had).
  Status s = o.engine.Finish();
  if (s.ok()) s = o.monitor.Finish();
  if (s.ok()) s = o.target.Finish();
  if (!s.ok()) return ConfigFileError(config, s);
  *options = o;
  return Status::OK();
}

std::vector<std::string> ServiceOptions::Keys() {
  std::vector<std::string> keys = Options::Keys();
  for (const auto& k : ConfigKeys(MonitorOptions::KeyTable())) keys.push_back(k);
  for (const auto& k : ConfigKeys(TargetOptions::KeyTable())) keys.push_back(k);
  return keys;
}

std::string ServiceOptions::ToString() const {
  return engine.SettingsToString() + monitor.ToString() + target.ToString() + engine.VolumesToString();
}

}  // namespace dedupv1

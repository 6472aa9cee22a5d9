// MonitorView renders a monitor JSON document for a person (dedupv1_mon
// without --json): sections with aligned "label  value" lines, arrays of
// objects as tables, sizes in binary units (KiB, MiB, ...), rates per
// second, ratios as percentages, durations as "1h 02m 03s".
//
// Formatting follows the unit in the field name (_bytes, _bytes_per_second,
// _ratio, _seconds, _ms), so a field added to an endpoint later shows up
// sensibly without touching this file.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace dedupv1 {

// 1536 -> "1.50 KiB"; below 1 KiB plain "512 B".
std::string HumanBytes(double bytes);
// 3723 -> "1h 02m 03s".
std::string HumanDuration(double seconds);
// 1234567 -> "1,234,567".
std::string GroupedInteger(uint64_t n);

// |monitor| is the endpoint name (e.g. "stats", "history"); some get a
// dedicated layout, the rest the generic one.
std::string RenderMonitorView(const std::string& monitor, const nlohmann::ordered_json& doc);

}  // namespace dedupv1

// Human-readable one-line summaries of operations log events for the tools
// (dedupv1_debug log, dedupv1_replay): the decoded payload of every event
// type in log/log_event.h. A payload that does not decode is described as
// such (with the decoder's error), never guessed at.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/base/types.h"
#include "log/log_event.h"

namespace dedupv1 {
namespace tools {

// E.g. "volume 1 block 7: version 3, 2 items [0+4096 fp=ab12cd34.. c=5 off=0; ...];
// replaces a mapping of 1 item".
std::string DescribeLogEvent(const LogEvent& event);

// The block a BLOCK_MAPPING_WRITTEN / _DELETED event is about; false for
// other events or an undecodable payload.
bool LogEventBlock(const LogEvent& event, BlockId* block);

// Event counts by type name, for "what is in the log" summaries.
using LogEventCounts = std::map<std::string, uint64_t>;
std::string FormatLogEventCounts(const LogEventCounts& counts);

}  // namespace tools
}  // namespace dedupv1

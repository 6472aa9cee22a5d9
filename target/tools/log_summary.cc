#include "target/tools/log_summary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "index/block_mapping.h"

namespace dedupv1 {
namespace tools {

namespace {

std::string Undecodable(const LogEvent& e, const Status& s) {
  return fmt::format("undecodable payload of {} bytes: {}", e.payload.size(), s.ToString());
}

// "version V, N items [...]" or the parse error.
std::string DescribeMapping(const std::string& serialized, const BlockId& id) {
  BlockMapping m;
  Status s = BlockMapping::Parse(serialized, id, &m);
  if (!s.ok()) return "damaged mapping: " + s.ToString();
  std::string items;
  uint64_t pos = 0;
  for (size_t i = 0; i < m.items().size(); i++) {
    const auto& item = m.items()[i];
    if (i > 0) items += "; ";
    if (item.IsZero()) {
      items += fmt::format("{}+{} zero", pos, item.size);
    } else {
      items += fmt::format("{}+{} fp={}.. c={} off={}", pos, item.size, item.fp.ToHex().substr(0, 8),
                           item.container, item.chunk_offset);
    }
    pos += item.size;
  }
  return fmt::format("version {}, {} item{} [{}]", m.version(), m.items().size(),
                     m.items().size() == 1 ? "" : "s", items);
}

std::string DescribeOld(const std::string& old, const BlockId& id) {
  if (old.empty()) return "no previous mapping";
  BlockMapping m;
  Status s = BlockMapping::Parse(old, id, &m);
  if (!s.ok()) return "previous mapping damaged: " + s.ToString();
  return fmt::format("replaces version {} ({} item{})", m.version(), m.items().size(),
                     m.items().size() == 1 ? "" : "s");
}

}  // namespace

std::string DescribeLogEvent(const LogEvent& e) {
  switch (e.type) {
    case LogEventType::kSystemStart:
    case LogEventType::kSystemRun: {
      SystemEventData d;
      Status s = SystemEventData::Decode(e.payload, &d);
      if (!s.ok()) return Undecodable(e, s);
      return d.dirty_start ? "dirty start" : "clean start";
    }
    case LogEventType::kVolumeAttached:
    case LogEventType::kVolumeDetached: {
      VolumeEventData d;
      Status s = VolumeEventData::Decode(e.payload, &d);
      if (!s.ok()) return Undecodable(e, s);
      return fmt::format("volume {} ({}, {} bytes)", d.volume_id, d.name, d.size);
    }
    case LogEventType::kContainerOpened:
    case LogEventType::kContainerCommitted:
    case LogEventType::kContainerCommitFailed:
    case LogEventType::kContainerDeleted: {
      ContainerEventData d;
      Status s = ContainerEventData::Decode(e.payload, &d);
      if (!s.ok()) return Undecodable(e, s);
      return fmt::format("container {}", d.container);
    }
    case LogEventType::kContainerMerged: {
      ContainerMergedData d;
      Status s = ContainerMergedData::Decode(e.payload, &d);
      if (!s.ok()) return Undecodable(e, s);
      return fmt::format("container {} from [{}]", d.result, fmt::join(d.sources, ", "));
    }
    case LogEventType::kBlockMappingWritten: {
      BlockMappingWrittenData d;
      Status s = BlockMappingWrittenData::Decode(e.payload, &d);
      if (!s.ok()) return Undecodable(e, s);
      return fmt::format("volume {} block {}: {}; {}", d.block.volume, d.block.block,
                         DescribeMapping(d.new_mapping, d.block), DescribeOld(d.old_mapping, d.block));
    }
    case LogEventType::kBlockMappingDeleted: {
      BlockMappingDeletedData d;
      Status s = BlockMappingDeletedData::Decode(e.payload, &d);
      if (!s.ok()) return Undecodable(e, s);
      return fmt::format("volume {} block {}: unmapped (reads zeros); {}", d.block.volume, d.block.block,
                         DescribeOld(d.old_mapping, d.block));
    }
    case LogEventType::kReplayStarted:
    case LogEventType::kReplayStopped: {
      ReplayEventData d;
      Status s = ReplayEventData::Decode(e.payload, &d);
      if (!s.ok()) return Undecodable(e, s);
      return fmt::format("{} replay of events {}..{}", ReplayModeName(d.mode), d.from_id, d.to_id);
    }
  }
  return fmt::format("unknown event type {}, {} payload bytes", static_cast<unsigned>(e.type),
                     e.payload.size());
}

bool LogEventBlock(const LogEvent& e, BlockId* block) {
  if (e.type == LogEventType::kBlockMappingWritten) {
    BlockMappingWrittenData d;
    if (!BlockMappingWrittenData::Decode(e.payload, &d).ok()) return false;
    *block = d.block;
    return true;
  }
  if (e.type == LogEventType::kBlockMappingDeleted) {
    BlockMappingDeletedData d;
    if (!BlockMappingDeletedData::Decode(e.payload, &d).ok()) return false;
    *block = d.block;
    return true;
  }
  return false;
}

std::string FormatLogEventCounts(const LogEventCounts& counts) {
  std::string s;
  for (const auto& [name, n] : counts) s += (s.empty() ? "" : ", ") + fmt::format("{} {}", name, n);
  return s.empty() ? "none" : s;
}

}  // namespace tools
}  // namespace dedupv1

#include "target/tools/log_damage_report.h"

#include <fmt/format.h>

#include "target/tools/log_summary.h"

namespace dedupv1 {
namespace tools {

namespace {

std::string IdRange(uint64_t first, uint64_t count) {
  return count == 1 ? fmt::format("event {}", first) : fmt::format("events {}..{}", first, first + count - 1);
}

}  // namespace

Status PrintLogDamage(OperationsLog* log, std::ostream& out) {
  const LogDamage& d = log->damage();
  auto slot_name = [log](uint64_t seq) {
    return fmt::format("slot {} (slot sequence {}, offset {})", kLogSuperblockSlots + seq % log->data_slots(), seq,
                       log->SlotOffset(seq));
  };
  out << fmt::format("DAMAGED: {} damaged region{}, {} event{} lost\n", d.gaps.size(), d.gaps.size() == 1 ? "" : "s",
                     d.lost_events(), d.lost_events() == 1 ? "" : "s");
  if (d.proof_by_generation) {
    out << fmt::format("  proof:    slot sequence {} (event {}) is intact and of generation {}, newer than the "
                       "superblock's: the newer superblock copy is damaged\n",
                       d.proof_seq, d.proof_id, d.proof_generation);
  } else if (d.proof_is_marker) {
    out << fmt::format("  proof:    the sync marker at slot sequence {} says every slot below {} was durable\n",
                       d.proof_seq, d.proof_watermark);
  } else {
    out << fmt::format("  proof:    slot sequence {} (event {}) is intact and was written once every slot below "
                       "{} was durable\n",
                       d.proof_seq, d.proof_id, d.proof_watermark);
  }
  for (size_t i = 0; i < d.gaps.size(); i++) {
    const LogDamage::Gap& g = d.gaps[i];
    std::string lost;
    if (!g.resumed) {
      lost = fmt::format("nothing intact follows; events from {} on are lost", g.first_lost_id);
    } else if (g.lost_ids == 0) {
      lost = "no event lost";
    } else {
      lost = IdRange(g.first_lost_id, g.lost_ids) + " lost";
    }
    out << fmt::format("  region {}: {}\n", i + 1, lost);
    for (const LogDamage::Slot& s : g.slots) out << fmt::format("    {}: {}\n", slot_name(s.seq), s.why);
  }
  if (d.salvaged.empty()) {
    out << "  intact events after the damage: none\n";
    return Status::OK();
  }
  out << fmt::format("  intact events after the damage: {} (ids {}..{}):\n", d.salvaged.size(), d.salvaged.front().id,
                     d.salvaged.back().id);
  LogEventCounts counts;
  Status s = log->ReplaySalvaged([&](const LogEvent& e) {
    counts[LogEventTypeName(e.type)]++;
    out << fmt::format("    #{} {} {}\n", e.id, LogEventTypeName(e.type), DescribeLogEvent(e));
    return Status::OK();
  });
  out << fmt::format("  intact after the damage: {}\n", FormatLogEventCounts(counts));
  return s;
}

}  // namespace tools
}  // namespace dedupv1

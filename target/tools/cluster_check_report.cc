#include "target/tools/cluster_check_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dedupv1 {
namespace tools {

std::string FormatClusterReportText(const ClusterCheckReport& r, size_t max_per_kind) {
  std::string out = fmt::format("dedupv1_check --cluster store {}: {} gateway slot{}\n", r.store, r.slots.size(),
                                r.slots.size() == 1 ? "" : "s");
  for (const ClusterSlotReport& s : r.slots) {
    out += fmt::format("  slot {} (number {}, opened as incarnation {}): {}; {} volume{}, {} containers listed, {} "
                       "good; {} blocks mapped, {} chunk references ({} to other slots' containers)\n",
                       s.name, s.slot, s.incarnation,
                       s.recovery.dirty_start
                           ? fmt::format("unclean stop before, replayed {} log events", s.recovery.events_replayed)
                           : "clean stop before",
                       s.volumes, s.volumes == 1 ? "" : "s", s.containers, s.containers_ok, s.blocks_mapped,
                       s.chunk_references, s.foreign_references);
    if (s.inbox_chunks > 0 || s.orphan_copies > 0) {
      out += fmt::format("    {} chunk{} in its dead inbox (its next GC round marks them); {} orphan cop{} ({} "
                         "bytes){}\n",
                         s.inbox_chunks, s.inbox_chunks == 1 ? "" : "s", s.orphan_copies,
                         s.orphan_copies == 1 ? "y" : "ies", s.orphan_bytes,
                         s.orphans_reclaimed > 0 ? fmt::format(", {} marked dead now", s.orphans_reclaimed) : "");
    }
  }
  out += fmt::format("  shared index:  {} shards, {} fingerprints: {} committed, {} uncommitted, {} dead entries; {} "
                     "usage keys\n",
                     r.shards, r.table_fingerprints, r.entries_committed, r.entries_uncommitted, r.entries_dead,
                     r.usage_keys);
  out += fmt::format("  usage counts:  {} distinct chunks referenced; {} fingerprints match the recount of every "
                     "slot, {} do not{}\n",
                     r.referenced_chunks, r.usage_matching, r.usage_mismatches,
                     r.recount_complete ? "" : " (recount INCOMPLETE: some block index records could not be read)");
  out += fmt::format("  claims:        {} uncommitted entr{} of closed incarnations, {} of them naming an existing "
                     "container (GC backlog)\n",
                     r.closed_claims, r.closed_claims == 1 ? "y" : "ies", r.closed_claims_container_exists);
  out += fmt::format("  duplicates:    {} fingerprint{} referenced in more than one container ({} extra cop{}; "
                     "allowed after a crash)\n",
                     r.duplicate_fingerprints, r.duplicate_fingerprints == 1 ? "" : "s", r.duplicate_copies,
                     r.duplicate_copies == 1 ? "y" : "ies");
  out += fmt::format("  orphans:       {} cop{} ({} bytes) in {} container{} that no mapping, entry or dead inbox "
                     "names (a leak, left by a crash; --cluster --repair marks them dead)\n",
                     r.orphan_copies, r.orphan_copies == 1 ? "y" : "ies", r.orphan_bytes, r.orphan_containers,
                     r.orphan_containers == 1 ? "" : "s");
  if (r.orphan_reclaim_requested) {
    out += r.orphan_reclaim_refused.empty()
               ? fmt::format("  reclaimed:     {} orphan cop{} ({} bytes) marked dead; each slot's next GC round "
                             "gives the space back\n",
                             r.orphans_reclaimed, r.orphans_reclaimed == 1 ? "y" : "ies", r.orphan_bytes_reclaimed)
               : fmt::format("  reclaimed:     nothing: {}\n", r.orphan_reclaim_refused);
  }
  if (r.problems.empty()) {
    out += "result: clean, no problems found\n";
    return out;
  }
  out += FormatProblemsText(r.problems, false, max_per_kind);
  out += fmt::format("result: {} problems (--cluster repairs none of them)\n", r.problems.size());
  return out;
}

std::string FormatClusterReportJson(const ClusterCheckReport& r) {
  using nlohmann::json;
  json j;
  j["store"] = r.store;
  j["clean"] = r.Clean();
  json slots = json::array();
  for (const ClusterSlotReport& s : r.slots) {
    slots.push_back({{"name", s.name},
                     {"slot", s.slot},
                     {"incarnation", s.incarnation},
                     {"dirty_start", s.recovery.dirty_start},
                     {"events_replayed", s.recovery.events_replayed},
                     {"volumes", s.volumes},
                     {"containers", s.containers},
                     {"containers_ok", s.containers_ok},
                     {"blocks_mapped", s.blocks_mapped},
                     {"chunk_references", s.chunk_references},
                     {"foreign_references", s.foreign_references},
                     {"inbox_chunks", s.inbox_chunks},
                     {"orphan_copies", s.orphan_copies},
                     {"orphan_bytes", s.orphan_bytes},
                     {"orphans_reclaimed", s.orphans_reclaimed}});
  }
  j["slots"] = std::move(slots);
  j["shared_index"] = {{"shards", r.shards},
                       {"fingerprints", r.table_fingerprints},
                       {"committed", r.entries_committed},
                       {"uncommitted", r.entries_uncommitted},
                       {"dead", r.entries_dead},
                       {"usage_keys", r.usage_keys}};
  j["usage_counts"] = {{"referenced_chunks", r.referenced_chunks},
                       {"matching", r.usage_matching},
                       {"mismatches", r.usage_mismatches},
                       {"recount_complete", r.recount_complete}};
  j["claims"] = {{"closed_incarnations", r.closed_claims}, {"container_exists", r.closed_claims_container_exists}};
  j["duplicates"] = {{"fingerprints", r.duplicate_fingerprints}, {"extra_copies", r.duplicate_copies}};
  j["orphans"] = {{"copies", r.orphan_copies},
                  {"bytes", r.orphan_bytes},
                  {"containers", r.orphan_containers},
                  {"reclaim_requested", r.orphan_reclaim_requested},
                  {"reclaimed", r.orphans_reclaimed},
                  {"bytes_reclaimed", r.orphan_bytes_reclaimed},
                  {"reclaim_refused", r.orphan_reclaim_refused}};
  json problems = json::array();
  for (const auto& p : r.problems) problems.push_back(ProblemToJson(p));
  j["problems"] = std::move(problems);
  return j.dump(2) + "\n";
}

}  // namespace tools
}  // namespace dedupv1

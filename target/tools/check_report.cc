#include "target/tools/check_report.h"

#include <map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dedupv1 {
namespace tools {

size_t CheckReport::Repaired() const {
  size_t n = 0;
  for (const auto& p : problems) n += p.repaired ? 1 : 0;
  return n;
}

std::string FormatProblemsText(const std::vector<CheckProblem>& problems, bool repair_requested,
                               size_t max_per_kind) {
  std::string out = fmt::format("problems: {}\n", problems.size());
  // What cannot be repaired matters most: listed first, in discovery order.
  std::vector<const CheckProblem*> order;
  for (const auto& p : problems) {
    if (!p.repairable) order.push_back(&p);
  }
  for (const auto& p : problems) {
    if (p.repairable) order.push_back(&p);
  }
  std::map<std::string, size_t> listed, skipped;
  for (const CheckProblem* pp : order) {
    const CheckProblem& p = *pp;
    if (max_per_kind > 0 && listed[p.kind] >= max_per_kind) {
      skipped[p.kind]++;
      continue;
    }
    listed[p.kind]++;
    const char* tag = p.repaired     ? "repaired"
                      : p.repairable ? (repair_requested ? "NOT repaired" : "repairable")
                      : p.held_back  ? "kept"
                                     : "unrecoverable";
    out += fmt::format("  [{}] {}: {}", tag, p.kind, p.message);
    if (!p.repair.empty()) out += fmt::format(" ({})", p.repair);
    out += "\n";
  }
  for (const auto& [kind, n] : skipped) out += fmt::format("  ... {} more {} problems (see --json)\n", n, kind);
  return out;
}

nlohmann::json ProblemToJson(const CheckProblem& p) {
  nlohmann::json jp = {{"kind", p.kind}, {"message", p.message}, {"repairable", p.repairable}, {"repaired", p.repaired}};
  if (!p.repair.empty()) jp["repair"] = p.repair;
  if (p.held_back) jp["held_back"] = true;
  if (p.container != kNoContainer) jp["container"] = p.container;
  if (!p.slot.empty()) jp["slot"] = p.slot;
  if (!p.fingerprint.empty()) jp["fingerprint"] = p.fingerprint;
  if (!p.fingerprints.empty()) jp["fingerprints"] = p.fingerprints;
  if (p.has_block) {
    jp["volume"] = p.volume;
    jp["volume_id"] = p.volume_id;
    jp["block"] = p.block;
    jp["offset"] = p.offset;
    jp["length"] = p.length;
    jp["volume_offset"] = p.volume_offset;
  }
  return jp;
}

std::string FormatReportText(const CheckReport& r, size_t max_per_kind) {
  std::string out = fmt::format("dedupv1_check {}\n", r.data_dir);
  const auto& rec = r.recovery;
  if (rec.dirty_start) {
    out += fmt::format(
        "  open:          unclean stop detected: replayed {} log events, restored {} block mappings, "
        "dropped {} of never-committed containers, re-imported {} containers\n",
        rec.events_replayed, rec.mappings_applied, rec.mappings_dropped, rec.containers_imported);
  } else {
    out += fmt::format("  open:          clean stop before, {} log events replayed\n", rec.events_replayed);
  }
  out += fmt::format("  containers:    {} listed, {} good; {} chunks{}\n", r.containers, r.containers_ok,
                     r.chunks,
                     r.data_verified ? fmt::format(" ({} bytes) decompressed and re-fingerprinted", r.chunk_bytes_raw)
                                     : "");
  out += fmt::format("  chunk index:   {} pages {}, {} entries; {} chunks also stored in another container\n",
                     r.index_pages, r.index_pages_verified ? "verified" : "NOT all verified", r.index_entries,
                     r.duplicate_copies);
  if (r.index_rebuild) {
    size_t added = 0;
    for (const auto& p : r.problems) added += p.kind == "index-entry-missing" && p.repaired ? 1 : 0;
    out += fmt::format("                 rebuilt: a new table, {} {} (the index-entry-missing problems below){}\n",
                       r.index_rebuilt ? "finished with" : "NOT finished (run --rebuild-index again), so far", added,
                       r.index_replaced.empty() ? "; there was no old table"
                                                : "; the old table is kept as " + r.index_replaced);
  }
  out += fmt::format("  block index:   {} volume{}, {} blocks mapped, {} chunk references, {} zero ranges; {} store "
                     "records{}\n",
                     r.volumes, r.volumes == 1 ? "" : "s", r.blocks_mapped, r.chunk_references, r.zero_ranges,
                     r.block_records,
                     r.old_format_records > 0 ? fmt::format(", {} of them without a block id (old format)",
                                                            r.old_format_records)
                                              : "");
  if (r.unreadable_records > 0) {
    out += fmt::format("                 {} record{} could not be read (or not told apart): the recount below is incomplete, so no "
                       "usage count is lowered and no index entry erased\n",
                       r.unreadable_records, r.unreadable_records == 1 ? "" : "s");
  }
  if (r.usage_checked) {
    out += fmt::format("  usage counts:  checked: {} entries match the recount from the block mappings, {} do not\n",
                       r.usage_matching, r.usage_mismatches);
  } else {
    out += "  usage counts:  NOT checked: the chunk index pages did not all verify\n";
  }
  out += fmt::format("                 {} distinct chunks referenced {} times; {} stored chunks referenced by no "
                     "block mapping, {} of them garbage awaiting GC (no index entry)\n",
                     r.referenced_chunks, r.chunk_references, r.unreferenced_chunks, r.garbage_chunks);
  if (r.problems.empty()) {
    out += "result: clean, no problems found\n";
    return out;
  }
  out += FormatProblemsText(r.problems, r.repair_requested, max_per_kind);
  size_t repairable = 0;
  for (const auto& p : r.problems) repairable += (p.repairable && !p.repaired) ? 1 : 0;
  if (r.repair_requested) {
    out += fmt::format("result: {} problems, {} repaired, {} cannot be repaired\n", r.problems.size(), r.Repaired(),
                       r.Unrepaired());
  } else {
    out += fmt::format("result: {} problems, {} repairable with --repair, {} cannot be repaired\n",
                       r.problems.size(), repairable, r.problems.size() - repairable);
  }
  return out;
}

std::string FormatReportJson(const CheckReport& r) {
  using nlohmann::json;
  json j;
  j["data_dir"] = r.data_dir;
  j["clean"] = r.Clean();
  j["repair_requested"] = r.repair_requested;
  if (r.index_rebuild) {
    j["index_rebuild"] = {{"finished", r.index_rebuilt}, {"replaced", r.index_replaced}};
  }
  j["recovery"] = {{"dirty_start", r.recovery.dirty_start},
                   {"events_replayed", r.recovery.events_replayed},
                   {"mappings_applied", r.recovery.mappings_applied},
                   {"mappings_dropped", r.recovery.mappings_dropped},
                   {"containers_imported", r.recovery.containers_imported}};
  j["containers"] = {{"listed", r.containers},
                     {"good", r.containers_ok},
                     {"chunks", r.chunks},
                     {"chunk_bytes_raw", r.chunk_bytes_raw},
                     {"data_verified", r.data_verified}};
  j["chunk_index"] = {{"pages", r.index_pages},
                      {"pages_verified", r.index_pages_verified},
                      {"entries", r.index_entries},
                      {"duplicate_copies", r.duplicate_copies}};
  j["block_index"] = {{"volumes", r.volumes},
                      {"blocks_mapped", r.blocks_mapped},
                      {"chunk_references", r.chunk_references},
                      {"zero_ranges", r.zero_ranges},
                      {"records", r.block_records},
                      {"old_format_records", r.old_format_records},
                      {"unreadable_records", r.unreadable_records}};
  j["usage_counts"] = {{"maintained", true},
                       {"checked", r.usage_checked},
                       {"matching", r.usage_matching},
                       {"mismatches", r.usage_mismatches},
                       {"garbage_chunks", r.garbage_chunks},
                       {"referenced_chunks", r.referenced_chunks},
                       {"references", r.chunk_references},
                       {"unreferenced_chunks", r.unreferenced_chunks},
                       {"entries_with_nonzero_count", r.index_usage_nonzero},
                       {"recount_complete", r.unreadable_records == 0}};
  json problems = json::array();
  for (const auto& p : r.problems) {
    problems.push_back(ProblemToJson(p));
  }
  j["problems"] = std::move(problems);
  j["summary"] = {{"problems", r.problems.size()}, {"repaired", r.Repaired()}, {"unrepaired", r.Unrepaired()}};
  return j.dump(2) + "\n";
}

}  // namespace tools
}  // namespace dedupv1

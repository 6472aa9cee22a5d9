#include "core/engine/usage_recount.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_set>

#include "core/engine/usage_counter.h"

namespace dedupv1 {

Status UsageRecount::Scan(const std::vector<uint32_t>& volumes) {
  references_.clear();
  entries_.clear();
  stats_ = UsageRecountStats();
  // Every mapping must be in the store, so the volumes' mappings can be
  // compared with the store's record count below.
  const BlockIndexStats before = blocks_->stats();
  if (before.aux_mappings != 0) {
    return Status::InvalidArgument("recount usage: the block index still holds " +
                                   std::to_string(before.aux_mappings) + " mappings in memory; flush it first");
  }
  std::map<Fingerprint, ContainerId> referenced;
  for (uint32_t volume : volumes) {
    Status s = blocks_->ForEachBlock(volume, [&](uint64_t, const BlockMapping& mapping) {
      stats_.blocks++;
      stats_.newest_id = std::max(stats_.newest_id, mapping.version());
      ReferencedChunks(mapping, &referenced);
      for (const auto& [fp, container] : referenced) {
        Reference& r = references_[fp];
        if (r.blocks++ == 0) r.container = container;
      }
      return true;
    });
    // A mapping that cannot be read may reference anything: no count may be
    // lowered without it.
    if (!s.ok()) return s.WithContext("recount usage: read the block mappings of volume " + std::to_string(volume));
  }
  // Mappings of a volume not named (a volume table that lost a line) would
  // go uncounted, and their chunks to GC.
  if (stats_.blocks != before.persistent_mappings) {
    return Status::Corruption("recount usage: the block index holds " + std::to_string(before.persistent_mappings) +
                              " mappings but the volumes named have " + std::to_string(stats_.blocks) +
                              "; a volume is missing from the volume table, so usage cannot be recounted");
  }
  stats_.referenced_chunks = references_.size();
  Status s = chunks_->ForEachEntry([&](const Fingerprint& fp, const ChunkIndexEntry& entry) {
    entries_.emplace_back(fp, entry);
    stats_.newest_id = std::max(stats_.newest_id, entry.last_event_id);
  });
  if (!s.ok()) return s.WithContext("recount usage: read the chunk index");
  stats_.entries = entries_.size();
  return Status::OK();
}

Status UsageRecount::Apply(uint64_t event_id) {
  if (event_id <= stats_.newest_id) {
    return Status::InvalidArgument("recount usage: event id " + std::to_string(event_id) + " is not above " +
                                   std::to_string(stats_.newest_id));
  }
  // Every event-tagged change must be made: the tag is above every entry's
  // last_event_id, so AddUsage cannot skip it.
  auto set = [&](const Fingerprint& fp, uint32_t have, uint64_t want) -> Status {
    const int64_t delta = static_cast<int64_t>(want) - static_cast<int64_t>(have);
    uint32_t usage = 0;
    bool applied = false;
    DEDUPV1_RETURN_IF_ERROR(chunks_->AddUsage(fp, delta, event_id, &usage, &applied));
    if (!applied || usage != std::min<uint64_t>(want, UINT32_MAX)) {
      return Status::Corruption("recount usage: chunk " + fp.ToHex() + " has usage " + std::to_string(usage) +
                                " after setting it to " + std::to_string(want));
    }
    (delta > 0 ? stats_.counts_raised : stats_.counts_lowered)++;
    return Status::OK();
  };
  std::unordered_set<Fingerprint, FingerprintHasher> have_entry;
  for (const auto& [fp, entry] : entries_) {
    have_entry.insert(fp);
    auto it = references_.find(fp);
    const uint64_t want = it == references_.end() ? 0 : it->second.blocks;
    if (entry.usage_count == want) continue;
    DEDUPV1_RETURN_IF_ERROR(set(fp, entry.usage_count, want));
  }
  // Referenced chunks without an entry (erased by GC after a count that
  // missed a lost increment): the entry comes back for the container the
  // mapping names, so the chunk is live again.
  for (const auto& [fp, r] : references_) {
    if (have_entry.count(fp) != 0) continue;
    if (!store_->IsCommitted(r.container)) {
      stats_.unresolved++;
      continue;
    }
    DEDUPV1_RETURN_IF_ERROR(chunks_->PutNew(fp, r.container));
    store_->UnmarkIfDead(r.container, fp);
    DEDUPV1_RETURN_IF_ERROR(set(fp, 0, r.blocks));
    stats_.entries_restored++;
  }
  return Status::OK();
}

}  // namespace dedupv1

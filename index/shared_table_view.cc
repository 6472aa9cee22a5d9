#include "index/shared_table_view.h"

namespace dedupv1 {
namespace {

const char kNoGc[] =
    "garbage collection of a cluster-scope store comes with cluster GC (design-15 phase 5)";

}  // namespace

Status SharedTableView::Get(const Fingerprint& fp, ChunkIndexEntry* entry) {
  std::vector<ChunkIndexEntry> entries;
  std::vector<bool> found;
  DEDUPV1_RETURN_IF_ERROR(GetMany({fp}, &entries, &found));
  if (!found[0]) return Status::NotFound("chunk " + fp.ToHex() + " not in the shared chunk index");
  *entry = entries[0];
  return Status::OK();
}

Status SharedTableView::GetMany(const std::vector<Fingerprint>& fps, std::vector<ChunkIndexEntry>* entries,
                                std::vector<bool>* found) {
  std::vector<ContainerId> containers;
  DEDUPV1_RETURN_IF_ERROR(claims_->Resolve(fps, &containers));
  entries->assign(fps.size(), ChunkIndexEntry());
  found->assign(fps.size(), false);
  for (size_t i = 0; i < fps.size(); i++) {
    if (containers[i] == kNoContainer) continue;
    (*entries)[i].container = containers[i];
    (*entries)[i].committed = true;
    (*found)[i] = true;
  }
  return Status::OK();
}

Status SharedTableView::Apply(const std::vector<Op>& ops) {
  std::vector<std::pair<Fingerprint, ContainerId>> flips;
  flips.reserve(ops.size());
  for (const Op& op : ops) {
    if (op.erase) return Status::NotSupported(std::string("chunk index erase of ") + op.fp.ToHex() + ": " + kNoGc);
    flips.emplace_back(op.fp, op.entry.container);
  }
  return claims_->Flip(flips);
}

std::string SharedTableView::Where() const {
  RadosCluster* c = claims_->table()->cluster();
  return c->Where(c->index_pool(), "ci.*") + " (shared, " + std::to_string(claims_->table()->shards()) +
         " shards)";
}

Status SharedTableView::Verify(uint64_t* pages_checked, const Visitor&) {
  // The shared table's values carry their own CRCs, checked on every read;
  // a whole-table check over every slot is the cluster checker's (phase 4).
  *pages_checked = 0;
  return Status::OK();
}

Status SharedTableView::ForEachEntry(const Visitor&) {
  return Status::NotSupported("visiting every entry of the shared chunk index: " + std::string(kNoGc) +
                              " and the cluster recount (phase 4)");
}

}  // namespace dedupv1

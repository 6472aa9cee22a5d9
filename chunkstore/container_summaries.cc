#include "chunkstore/container_summaries.h"

#include <algorithm>
#include <cstdio>

namespace dedupv1 {

ContainerSummary SummarizeContainer(const Container& c) {
  ContainerSummary s;
  for (const Fingerprint& fp : c.Fingerprints()) {
    s.chunks++;
    s.footprint_bytes += c.FootprintOf(fp);
  }
  s.serialized_bytes = c.serialized_size();
  return s;
}

void ContainerSummaries::Load(const std::vector<ContainerId>& committed) {
  ContainerSummaryMap read;
  uint64_t records = 0, skipped = 0;
  Status s = catalog_->ReadSummaries(&read, &records, &skipped);
  if (!s.ok()) {
    std::fprintf(stderr, "dedupv1: %s; GC reads container metadata instead\n", s.ToString().c_str());
    // Started afresh, so appends do not land in the middle of old records.
    s = catalog_->RewriteSummaries({});
    if (!s.ok()) std::fprintf(stderr, "dedupv1: %s\n", s.ToString().c_str());
    return;
  }
  if (skipped > 0) {
    // Harmless (a summary is a hint; an append torn by a crash looks the
    // same), but damage on disk is news for the admin.
    std::fprintf(stderr, "dedupv1: %s: %llu damaged or cut-short records dropped; GC reads those containers' "
                 "metadata instead\n", catalog_->Where(CatalogPart::kSummaries).c_str(),
                 static_cast<unsigned long long>(skipped));
  }
  ContainerSummaryMap kept;
  for (const auto& [id, summary] : read) {
    if (summary.dead_chunks == kSummaryWithdrawn) continue;
    if (std::binary_search(committed.begin(), committed.end(), id)) kept[id] = summary;
  }
  // Rewritten when records were damaged, describe gone containers, or are
  // mostly superseded by later ones (every commit, merge and GC recount
  // appends).
  if (skipped > 0 || kept.size() != read.size() || records > 2 * kept.size() + 1024) {
    s = catalog_->RewriteSummaries(kept);
    if (!s.ok()) std::fprintf(stderr, "dedupv1: %s (stale records are ignored)\n", s.ToString().c_str());
  }
  std::lock_guard<std::mutex> l(mu_);
  loaded_ = kept.size();
  summaries_ = std::move(kept);
}

void ContainerSummaries::Record(ContainerId id, const ContainerSummary& summary) {
  {
    std::lock_guard<std::mutex> l(mu_);
    summaries_[id] = summary;
  }
  if (!catalog_->AppendSummaries({{id, summary}}).ok()) append_failures_++;
}

void ContainerSummaries::Withdraw(ContainerId id) {
  {
    std::lock_guard<std::mutex> l(mu_);
    summaries_.erase(id);
  }
  // Dropped from the catalog too, or a later mark bringing the dead count
  // back would make the old summary fit again.
  ContainerSummary withdrawn;
  withdrawn.dead_chunks = kSummaryWithdrawn;
  if (!catalog_->AppendSummaries({{id, withdrawn}}).ok()) append_failures_++;
}

void ContainerSummaries::Forget(ContainerId id) {
  std::lock_guard<std::mutex> l(mu_);
  summaries_.erase(id);
}

bool ContainerSummaries::Get(ContainerId id, uint64_t dead_now, ContainerSummary* summary) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = summaries_.find(id);
  if (it == summaries_.end() || it->second.dead_chunks != dead_now) return false;
  *summary = it->second;
  return true;
}

uint64_t ContainerSummaries::loaded() const {
  std::lock_guard<std::mutex> l(mu_);
  return loaded_;
}

}  // namespace dedupv1

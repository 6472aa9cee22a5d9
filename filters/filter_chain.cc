#include "filters/filter_chain.h"

namespace dedupv1 {

void FilterChain::Add(std::unique_ptr<Filter> filter) {
  filters_.push_back(std::move(filter));
  counters_.push_back(std::make_unique<FilterCounters>());
}

FilterResult FilterChain::Decide(ChunkRequest* chunk, Status* error) {
  FilterResult result = FilterResult::kWeakMaybe;
  for (size_t i = 0; i < filters_.size(); i++) {
    Filter* f = filters_[i].get();
    if (result == FilterResult::kStrongMaybe && f->MaxResult() != FilterResult::kExisting) {
      counters_[i]->skipped++;
      continue;
    }
    Status s;
    FilterResult r = f->Check(chunk, &s);
    counters_[i]->Count(r);
    switch (r) {
      case FilterResult::kError:
        *error = s.ok() ? Status::IOError(std::string("filter ") + f->name() + " failed")
                        : s.WithContext(std::string("filter ") + f->name());
        return FilterResult::kError;
      case FilterResult::kExisting:
      case FilterResult::kNotExisting:
        return r;
      case FilterResult::kStrongMaybe:
        result = r;
        break;
      case FilterResult::kWeakMaybe:
        break;
    }
  }
  return result;
}

Status FilterChain::UpdateNew(const ChunkRequest& chunk) {
  for (auto& f : filters_) DEDUPV1_RETURN_IF_ERROR(f->UpdateNew(chunk));
  return Status::OK();
}

Status FilterChain::UpdateKnown(const ChunkRequest& chunk) {
  for (auto& f : filters_) DEDUPV1_RETURN_IF_ERROR(f->UpdateKnown(chunk));
  return Status::OK();
}

void FilterChain::OnChunksMarkedDead() {
  for (auto& f : filters_) f->OnChunksMarkedDead();
}

bool FilterChain::Contains(const std::string& name) const {
  for (const auto& f : filters_) {
    if (name == f->name()) return true;
  }
  return false;
}

std::string FilterChain::Describe() const {
  std::string out;
  for (auto& f : filters_) {
    if (!out.empty()) out += ",";
    out += f->name();
  }
  return out;
}

}  // namespace dedupv1

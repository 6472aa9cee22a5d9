#include "filters/filter_chain.h"

namespace dedupv1 {

void FilterChain::Add(std::unique_ptr<Filter> filter) {
  filters_.push_back(std::move(filter));
  counters_.push_back(std::make_unique<FilterCounters>());
}

FilterResult FilterChain::Decide(ChunkRequest* chunk, Status* error, bool counted) {
  FilterResult result = FilterResult::kWeakMaybe;
  for (size_t i = 0; i < filters_.size(); i++) {
    Filter* f = filters_[i].get();
    if (result == FilterResult::kStrongMaybe && f->MaxResult() != FilterResult::kExisting) {
      if (counted) counters_[i]->skipped++;
      continue;
    }
    Status s;
    FilterResult r = f->Check(chunk, &s);
    if (counted) counters_[i]->Count(r);
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

Status FilterChain::UpdateMoved(ChunkRequest* chunk) {
  for (auto& f : filters_) DEDUPV1_RETURN_IF_ERROR(f->UpdateMoved(chunk));
  return Status::OK();
}

Status FilterChain::UpdateKnown(const ChunkRequest& chunk) {
  for (auto& f : filters_) DEDUPV1_RETURN_IF_ERROR(f->UpdateKnown(chunk));
  return Status::OK();
}

FilterChain::PreparedRun::~PreparedRun() {
  for (auto& [filter, chunks] : prepared_) filter->FinishRun(chunks);
}

std::unique_ptr<FilterChain::PreparedRun> FilterChain::PrepareRun(const std::vector<ChunkRequest>& chunks) {
  size_t last = filters_.size();  // the last filter that wants the run
  for (size_t i = 0; i < filters_.size(); i++) {
    if (filters_[i]->WantsRun()) last = i;
  }
  if (last == filters_.size()) return nullptr;
  PreparedRun::Prepared prepared;
  std::vector<const ChunkRequest*> reaching;
  reaching.reserve(chunks.size());
  for (const ChunkRequest& c : chunks) reaching.push_back(&c);
  for (size_t i = 0; i <= last && !reaching.empty(); i++) {
    Filter* f = filters_[i].get();
    if (f->WantsRun()) {
      f->PrepareRun(reaching);
      prepared.emplace_back(f, reaching);
    }
    if (i == last) break;
    std::vector<const ChunkRequest*> rest;
    for (const ChunkRequest* c : reaching) {
      if (!f->Settles(*c)) rest.push_back(c);
    }
    reaching.swap(rest);
  }
  return std::make_unique<PreparedRun>(std::move(prepared));
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

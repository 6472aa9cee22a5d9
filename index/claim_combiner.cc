#include "index/claim_combiner.h"

#include <unordered_set>

namespace dedupv1 {

Status ClaimCombiner::ClaimMany(const std::vector<SharedClaim>& claims, uint64_t epoch,
                                std::vector<SharedCasResult>* results, std::string* journal_key) {
  if (journal_key != nullptr) journal_key->clear();
  if (claims.empty()) {
    results->clear();
    return Status::OK();
  }
  {
    // A request the table refuses (a fingerprint twice, or of another size)
    // goes alone, so its error is its own (the table refuses it before
    // writing anything, so it needs no journal record).
    std::unordered_set<Fingerprint, FingerprintHasher> fps;
    for (const SharedClaim& c : claims) {
      if (c.fp.size != table_->key_size() || !fps.insert(c.fp).second) return table_->ClaimMany(claims, epoch, results);
    }
  }
  Request me{&claims, epoch, results, journal_key, Status::OK(), false};
  std::unique_lock<std::mutex> l(mu_);
  queue_.push_back(&me);
  while (!me.done) {
    if (sending_) {
      cv_.wait(l);
      continue;
    }
    // Lead a round: the oldest request, and every later one of its epoch
    // whose fingerprints are not in the round yet.
    std::vector<Request*> round;
    std::vector<SharedClaim> all;
    std::unordered_set<Fingerprint, FingerprintHasher> in_round;
    const uint64_t round_epoch = queue_.front()->epoch;
    for (auto it = queue_.begin(); it != queue_.end();) {
      Request* r = *it;
      bool fits = r->epoch == round_epoch;
      for (size_t i = 0; fits && i < r->claims->size(); i++) fits = in_round.count((*r->claims)[i].fp) == 0;
      if (!fits) {
        ++it;
        continue;
      }
      for (const SharedClaim& c : *r->claims) {
        in_round.insert(c.fp);
        all.push_back(c);
      }
      round.push_back(r);
      it = queue_.erase(it);
    }
    sending_ = true;
    l.unlock();
    std::vector<SharedCasResult> got;
    // Every record of the round before any of its claims (one write).
    std::vector<std::string> keys;
    Status s;
    if (journal_ != nullptr) {
      std::vector<std::vector<Fingerprint>> records;
      for (Request* r : round) {
        records.emplace_back();
        for (const SharedClaim& c : *r->claims) records.back().push_back(c.fp);
      }
      s = journal_->Append(records, &keys);
    }
    if (s.ok()) s = table_->ClaimMany(all, round_epoch, &got);
    if (s.IsBusy() && round.size() > 1) {
      // Lost too many races (two gateways storing the same data at once):
      // each request once more alone, so one's contention is not the
      // others' error. (Other errors, a fenced gateway or an unreachable
      // cluster, would only fail again, request by request.)
      for (Request* r : round) r->status = table_->ClaimMany(*r->claims, round_epoch, r->results);
    }
    l.lock();
    size_t k = 0;
    for (size_t j = 0; j < round.size(); j++) {
      Request* r = round[j];
      const size_t n = r->claims->size();
      if (r->journal_key != nullptr && j < keys.size()) *r->journal_key = keys[j];
      if (s.ok()) {
        r->status = s;
        r->results->assign(got.begin() + k, got.begin() + k + n);
      } else if (!s.IsBusy() || round.size() == 1) {
        r->status = s;
      }
      k += n;
      r->done = true;
    }
    sending_ = false;
    rounds_++;
    requests_ += round.size();
    cv_.notify_all();
  }
  return me.status;
}

uint64_t ClaimCombiner::rounds() const {
  std::lock_guard<std::mutex> l(mu_);
  return rounds_;
}

uint64_t ClaimCombiner::requests() const {
  std::lock_guard<std::mutex> l(mu_);
  return requests_;
}

}  // namespace dedupv1

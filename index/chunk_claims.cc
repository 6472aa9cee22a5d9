#include "index/chunk_claims.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_set>
#include <thread>

namespace dedupv1 {
namespace {

// A lost claim re-reads the entry at most this often while it waits; the
// backoff doubles from the first to the last value.
constexpr auto kFirstBackoff = std::chrono::milliseconds(5);
constexpr auto kMaxBackoff = std::chrono::milliseconds(200);
// Steps of one lost claim's resolution: a bound on races lost in a row (each
// step is a read or a compare-and-set), far above the waits of one hold.
constexpr int kMaxLostSteps = 2000;

}  // namespace

ChunkClaims::ChunkClaims(const ChunkClaimsOptions& options, std::unique_ptr<RadosSharedChunkTable> table,
                         std::unique_ptr<RadosClaimJournal> journal, uint32_t incarnation)
    : options_(options),
      table_(std::move(table)),
      journal_(std::move(journal)),
      combiner_(table_.get(), journal_.get()),
      incarnation_(incarnation) {}

Status ChunkClaims::Open(const RadosSharedChunkTableOptions& table_options, const ChunkClaimsOptions& options,
                         std::unique_ptr<ChunkClaims>* out) {
  if (!options.container_exists) return Status::InvalidArgument("chunk claims: no container probe given");
  RadosSharedChunkTableOptions to = table_options;
  to.claim_hints = options.journal_slot.empty();  // the journal replaces the per-claim hints
  std::unique_ptr<RadosSharedChunkTable> table;
  DEDUPV1_RETURN_IF_ERROR(RadosSharedChunkTable::Open(to, &table));
  std::unique_ptr<RadosClaimJournal> journal;
  if (!options.journal_slot.empty()) {
    std::shared_ptr<RadosCluster> cluster;
    DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(to.rados, &cluster));
    journal = std::make_unique<RadosClaimJournal>(std::move(cluster), options.journal_slot, to.incarnation,
                                                  table->steps());
  }
  out->reset(new ChunkClaims(options, std::move(table), std::move(journal), to.incarnation));
  return Status::OK();
}

SharedEntry ChunkClaims::OurClaim(ContainerId container, uint64_t epoch) const {
  return SharedEntry{SharedEntry::State::kUncommitted, container, table_->slot(), incarnation_, epoch};
}

Status ChunkClaims::Exists(ContainerId id, bool* exists) { return options_.container_exists(id, exists); }

Status ChunkClaims::FlipOnBehalf(const Fingerprint& fp, const SharedEntry& entry) {
  std::vector<SharedCasResult> results;
  DEDUPV1_RETURN_IF_ERROR(table_->FlipMany({SharedFlip{fp, entry}}, epoch_, &results));
  if (results[0].won) flips_on_behalf_++;
  return Status::OK();
}

Status ChunkClaims::Resolve(const std::vector<Fingerprint>& fps, std::vector<ContainerId>* containers) {
  std::vector<std::optional<SharedEntry>> entries;
  DEDUPV1_RETURN_IF_ERROR(table_->LookupMany(fps, &entries));
  containers->assign(fps.size(), kNoContainer);
  // A read-only instance (slot 0, the tools) changes nothing: it only uses C
  // entries and claims whose container exists.
  const bool writer = table_->slot() != 0;
  std::map<ContainerId, bool> exists;  // per call: a run's chunks share few containers
  std::vector<SharedFlip> flips;
  std::unordered_set<Fingerprint, FingerprintHasher> flipping;
  for (size_t i = 0; i < fps.size(); i++) {
    if (!entries[i]) continue;
    SharedEntry e = *entries[i];
    if (e.state == SharedEntry::State::kDead) {
      if (!writer) continue;
      SharedCasResult r;
      DEDUPV1_RETURN_IF_ERROR(table_->Revive(fps[i], e, epoch_, &r));
      if (r.won) revives_++;
      if (!r.current) continue;  // erased meanwhile: new
      e = *r.current;
    }
    if (e.state == SharedEntry::State::kUncommitted) {
      auto it = exists.find(e.container);
      if (it == exists.end()) {
        bool ex = false;
        DEDUPV1_RETURN_IF_ERROR(Exists(e.container, &ex));
        it = exists.emplace(e.container, ex).first;
      }
      // Missing: the claimer has not committed it (yet); our claim of a
      // copy will lose and wait for it (Claim).
      if (!it->second) continue;
      if (writer && flipping.insert(fps[i]).second) flips.push_back(SharedFlip{fps[i], e});
    }
    if (e.state == SharedEntry::State::kDead) continue;  // revived by nobody: treat as new
    (*containers)[i] = e.container;
    if ((e.container >> 48) != table_->slot()) foreign_hits_++;
  }
  if (!flips.empty()) {
    std::vector<SharedCasResult> results;
    DEDUPV1_RETURN_IF_ERROR(table_->FlipMany(flips, epoch_, &results));
    for (const SharedCasResult& r : results) {
      if (r.won) flips_on_behalf_++;
    }
  }
  return Status::OK();
}

Status ChunkClaims::Claim(const std::vector<NewChunk>& chunks, std::vector<ContainerId>* use,
                          std::vector<uint64_t>* epochs, ClaimTicket* ticket) {
  use->assign(chunks.size(), kNoContainer);
  if (ticket != nullptr) *ticket = ClaimTicket{};
  const uint64_t epoch = epoch_;  // one value for every claim of the call
  std::vector<uint64_t> ours(chunks.size(), epoch);
  if (chunks.empty()) {
    if (epochs != nullptr) epochs->clear();
    return Status::OK();
  }
  std::vector<SharedClaim> claims;
  claims.reserve(chunks.size());
  for (const NewChunk& c : chunks) claims.push_back(SharedClaim{c.fp, c.container});
  std::vector<SharedCasResult> results;
  std::string key;
  Status s = combiner_.ClaimMany(claims, epoch, &results, &key);
  if (!key.empty()) {
    ClaimTicket t{key, {}};
    for (const NewChunk& c : chunks) t.fps.push_back(c.fp);
    // A caller without a ticket cannot say that its chunks were referenced:
    // handed back at once, as not referenced (hints at the next checkpoint).
    if (ticket != nullptr) *ticket = std::move(t);
    else ReleaseClaims(std::move(t), false);
  }
  DEDUPV1_RETURN_IF_ERROR(s);
  claims_ += chunks.size();
  // Every lost claim of this round was met now: one hold for all of them
  // (resolved one after the other, a hold each would make a run that met N
  // claims of a dead gateway wait N holds).
  const auto hold_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.claim_hold_ms);
  for (size_t i = 0; i < chunks.size(); i++) {
    const NewChunk& c = chunks[i];
    if (results[i].won) {
      (*use)[i] = c.container;
      if (results[i].current) ours[i] = results[i].current->epoch;  // a repeat finds its first claim
      continue;
    }
    DEDUPV1_RETURN_IF_ERROR(
        ResolveLost(c.fp, c.container, results[i].current, hold_end, epoch, &(*use)[i], &ours[i]));
    if ((*use)[i] != c.container) {
      claims_lost_++;
      bytes_wasted_ += c.size;
    }
  }
  std::lock_guard<std::mutex> l(pending_mu_);
  for (size_t i = 0; i < chunks.size(); i++) {
    // Ours to flip: claimed, re-claimed or taken over at |epoch|.
    if ((*use)[i] == chunks[i].container) pending_[{chunks[i].fp.ToBytes(), chunks[i].container}] = ours[i];
  }
  if (epochs != nullptr) *epochs = std::move(ours);
  return Status::OK();
}

Status ChunkClaims::ResolveLost(const Fingerprint& fp, ContainerId ours, std::optional<SharedEntry> current,
                                std::chrono::steady_clock::time_point hold_end, uint64_t epoch, ContainerId* use,
                                uint64_t* our_epoch) {
  *use = kNoContainer;
  auto backoff = std::chrono::duration_cast<std::chrono::milliseconds>(kFirstBackoff);
  bool waited = false;
  for (int step = 0; step < kMaxLostSteps; step++) {
    const bool hold_over = std::chrono::steady_clock::now() >= hold_end;
    DEDUPV1_RETURN_IF_ERROR(ResolveLostStep(fp, ours, hold_over, epoch, &current, use, our_epoch));
    if (*use != kNoContainer) return Status::OK();
    if (!waited) claim_waits_++;
    waited = true;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::duration_cast<std::chrono::milliseconds>(kMaxBackoff));
    std::vector<std::optional<SharedEntry>> now;
    DEDUPV1_RETURN_IF_ERROR(table_->LookupMany({fp}, &now));
    current = now[0];
  }
  return Status::Busy("shared chunk index " + table_->ShardOid(fp) + ": claim of " + fp.ToHex() +
                      " still undecided after " + std::to_string(kMaxLostSteps) + " steps (entry " +
                      (current ? current->ToString() : std::string("none")) + ")");
}

Status ChunkClaims::ResolveLostStep(const Fingerprint& fp, ContainerId ours, bool hold_over, uint64_t epoch,
                                    std::optional<SharedEntry>* current, ContainerId* use, uint64_t* our_epoch) {
  if (!*current) {
    // No entry (erased since): claim again.
    std::vector<SharedCasResult> r;
    DEDUPV1_RETURN_IF_ERROR(table_->ClaimMany({SharedClaim{fp, ours}}, epoch, &r));
    if (r[0].won) {
      *use = ours;
      if (r[0].current) *our_epoch = r[0].current->epoch;
    } else {
      *current = r[0].current;
    }
    return Status::OK();
  }
  const SharedEntry e = **current;
  SharedCasResult r;
  switch (e.state) {
    case SharedEntry::State::kCommitted:
      *use = e.container;
      if (e.container == ours) *our_epoch = e.epoch;  // ours, flipped on our behalf
      return Status::OK();
    case SharedEntry::State::kDead:
      DEDUPV1_RETURN_IF_ERROR(table_->Revive(fp, e, epoch, &r));
      if (r.won) {
        revives_++;
        *use = e.container;
        if (e.container == ours && r.current) *our_epoch = r.current->epoch;
      } else {
        *current = r.current;
      }
      return Status::OK();
    case SharedEntry::State::kUncommitted:
      break;
  }
  if (e.container == ours) {  // our own claim (a repeated call)
    *use = ours;
    *our_epoch = e.epoch;
    return Status::OK();
  }
  bool exists = false;
  DEDUPV1_RETURN_IF_ERROR(Exists(e.container, &exists));
  if (exists) {
    DEDUPV1_RETURN_IF_ERROR(FlipOnBehalf(fp, e));
    *use = e.container;
    return Status::OK();
  }
  // A claim of an earlier incarnation of this slot: that incarnation is dead
  // (this one holds the slot's lock), its container will not appear.
  const bool dead_claimer = e.claimer_slot == table_->slot() && e.claimer_incarnation != incarnation_;
  if (!hold_over && !dead_claimer) return Status::OK();  // wait for it
  DEDUPV1_RETURN_IF_ERROR(table_->TakeOver(fp, e, ours, epoch, &r));
  if (r.won) {
    takeovers_++;
    *use = ours;
    if (r.current) *our_epoch = r.current->epoch;
  } else {
    *current = r.current;
  }
  return Status::OK();
}

Status ChunkClaims::Flip(const std::vector<std::pair<Fingerprint, ContainerId>>& claimed) {
  if (claimed.empty()) return Status::OK();
  std::vector<SharedFlip> flips;
  flips.reserve(claimed.size());
  {
    std::lock_guard<std::mutex> l(pending_mu_);
    for (const auto& [fp, container] : claimed) {
      // The claim's epoch is in its U value; a claim this process did not
      // make (none pending) is another incarnation's: its flip is lost.
      auto it = pending_.find({fp.ToBytes(), container});
      flips.push_back(SharedFlip{fp, OurClaim(container, it == pending_.end() ? 0 : it->second)});
    }
  }
  std::vector<SharedCasResult> results;
  DEDUPV1_RETURN_IF_ERROR(table_->FlipMany(flips, epoch_, &results));
  for (const SharedCasResult& r : results) {
    if (r.won) flips_++;
    else flips_lost_++;
  }
  std::lock_guard<std::mutex> l(pending_mu_);
  for (const auto& [fp, container] : claimed) pending_.erase({fp.ToBytes(), container});
  return Status::OK();
}

Status ChunkClaims::AddUsage(const std::vector<SharedUsageDelta>& deltas, std::vector<bool>* applied) {
  applied->assign(deltas.size(), false);
  if (deltas.empty()) return Status::OK();
  std::vector<SharedUsageOutcome> outcomes;
  DEDUPV1_RETURN_IF_ERROR(table_->AddUsageMany(deltas, epoch_, &outcomes));
  for (size_t i = 0; i < deltas.size(); i++) {
    (*applied)[i] = outcomes[i] == SharedUsageOutcome::kApplied;
    if (outcomes[i] == SharedUsageOutcome::kUsageOfMissingEntry) usage_of_missing_entry_++;
  }
  return Status::OK();
}

void ChunkClaims::ReleaseClaims(ClaimTicket ticket, bool referenced) {
  if (ticket.key.empty()) return;
  std::lock_guard<std::mutex> l(released_mu_);
  released_count_++;
  if (referenced) ticket.fps.clear();  // only hinted records need them
  released_.push_back(Released{released_count_, std::move(ticket), referenced});
}

uint64_t ChunkClaims::ClaimsReleased() const {
  std::lock_guard<std::mutex> l(released_mu_);
  return released_count_;
}

Status ChunkClaims::RetireClaims(uint64_t up_to) {
  if (!journal_) return Status::OK();
  // A bound on the keys of one removal (a checkpoint after a long stall).
  constexpr size_t kMaxPerWrite = 1024;
  for (;;) {
    std::vector<Released> batch;
    {
      std::lock_guard<std::mutex> l(released_mu_);
      while (!released_.empty() && released_.front().order <= up_to && batch.size() < kMaxPerWrite) {
        batch.push_back(std::move(released_.front()));
        released_.pop_front();
      }
    }
    if (batch.empty()) return Status::OK();
    std::vector<Fingerprint> hint;
    std::vector<std::string> keys;
    uint64_t hinted = 0;
    for (const Released& r : batch) {
      keys.push_back(r.ticket.key);
      if (r.referenced) continue;
      hinted++;
      hint.insert(hint.end(), r.ticket.fps.begin(), r.ticket.fps.end());
    }
    // Hints first: a crash in between leaves the record (and the hints,
    // which are harmless), never a chunk GC cannot find.
    Status s = hint.empty() ? Status::OK() : table_->AddHints(hint, epoch_, SharedTableStep::kJournal);
    if (s.ok()) s = journal_->Remove(journal_->slot_name(), keys);
    if (!s.ok()) {
      std::lock_guard<std::mutex> l(released_mu_);
      for (auto it = batch.rbegin(); it != batch.rend(); ++it) released_.push_front(std::move(*it));
      return s.WithContext("retire claim journal records");
    }
    journal_retired_ += batch.size();
    journal_hinted_ += hinted;
  }
}

ChunkClaimsStats ChunkClaims::stats() const {
  ChunkClaimsStats s;
  s.claims = claims_;
  s.claim_rounds = combiner_.rounds();
  s.claim_requests = combiner_.requests();
  s.claims_lost = claims_lost_;
  s.bytes_wasted = bytes_wasted_;
  s.claim_waits = claim_waits_;
  s.takeovers = takeovers_;
  s.flips = flips_;
  s.flips_lost = flips_lost_;
  s.flips_on_behalf = flips_on_behalf_;
  {
    std::lock_guard<std::mutex> l(pending_mu_);
    s.claims_pending = pending_.size();
  }
  s.shard_load = table_->shard_load();
  s.table_steps = table_->step_counts();
  s.revives = revives_;
  s.foreign_hits = foreign_hits_;
  s.usage_of_missing_entry = usage_of_missing_entry_;
  s.journal_retired = journal_retired_;
  s.journal_hinted = journal_hinted_;
  {
    std::lock_guard<std::mutex> l(released_mu_);
    s.journal_waiting = released_.size();
  }
  return s;
}

}  // namespace dedupv1

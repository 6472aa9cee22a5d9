#include "core/engine/cluster_gc.h"

#include <algorithm>

#include "core/rados/gateway_heartbeat.h"
#include "core/rados/gateway_registry.h"
#include "core/rados/gc_leader_lease.h"

namespace dedupv1 {
namespace {

std::string Key(const Fingerprint& fp) { return std::string(reinterpret_cast<const char*>(fp.bytes), fp.size); }

// Pages per shard and round: a bound far above any shard's hints (the page
// size times this), so a shard that keeps growing cannot hold a round.
constexpr uint64_t kMaxPagesPerShard = 1 << 20;

}  // namespace

// What one round knows: the lease, the slots, when it began, what it did.
class ClusterIndexGc::Round {
 public:
  std::unique_ptr<GcLeaderLease> lease;
  std::map<uint16_t, uint32_t> live;  // slot -> incarnation whose claims may still flip
  std::vector<uint16_t> slots;        // every registered slot
  std::chrono::steady_clock::time_point start;
  uint64_t hints = 0;  // hints looked at this round
  bool cut = false;    // ended by the budget or stop before the pass ended
  ClusterGcStats delta;
};

ClusterIndexGc::ClusterIndexGc(std::shared_ptr<RadosCluster> cluster, RadosSharedChunkTable* table,
                               ClusterGcOptions options)
    : cluster_(std::move(cluster)), table_(table), options_(std::move(options)) {}

ClusterGcStats ClusterIndexGc::stats() const {
  std::lock_guard<std::mutex> l(stats_mu_);
  return stats_;
}

bool ClusterIndexGc::Old(std::chrono::steady_clock::time_point since, std::chrono::steady_clock::time_point now) const {
  return now - since >= std::chrono::milliseconds(options_.claim_hold_ms);
}

Status ClusterIndexGc::RunRoundIfDue() {
  std::lock_guard<std::mutex> l(round_mu_);
  const auto interval = std::chrono::milliseconds(std::max<uint64_t>(options_.claim_hold_ms / 2, 1000));
  if (ran_ && std::chrono::steady_clock::now() - last_round_ < interval) return Status::OK();
  return RunLocked();
}

Status ClusterIndexGc::RunRound() {
  std::lock_guard<std::mutex> l(round_mu_);
  return RunLocked();
}

Status ClusterIndexGc::ReadLiveSlots(Round* round) {
  GatewayRegistry registry(cluster_);
  std::map<std::string, GatewayRecord> records;
  DEDUPV1_RETURN_IF_ERROR(registry.List(&records));
  for (const auto& [name, record] : records) {
    round->slots.push_back(record.slot);
    GatewayHeartbeat hb;
    Status s = ReadGatewayHeartbeat(cluster_.get(), name, &hb);
    if (s.IsCorruption()) {
      CountDamage(round, s);  // unreadable: live, so none of its claims is erased
      s = Status::NotFound("");
    }
    if (!s.ok() && !s.IsNotFound()) return s.WithContext("GC: heartbeat of slot " + name);
    // Closed cleanly or fenced: that incarnation writes nothing any more
    // (a reopen would be a later incarnation).
    const bool ended = s.ok() && hb.incarnation == record.incarnation &&
                       (hb.state == kHeartbeatStopped || hb.state == kHeartbeatFenced);
    if (!ended) round->live[record.slot] = record.incarnation;
  }
  return Status::OK();
}

void ClusterIndexGc::CountDamage(Round* round, const Status& s) {
  round->delta.damaged_skipped++;
  round->delta.last_damage = s.ToString();
}

Status ClusterIndexGc::RunLocked() {
  if (options_.claim_hold_ms == 0 || !options_.container_exists) {
    return Status::InvalidArgument("cluster GC: no claim hold or container probe given");
  }
  Round round;
  round.start = std::chrono::steady_clock::now();
  Status s = GcLeaderLease::TryAcquire(cluster_, &round.lease);
  if (s.ok() && !round.lease) {
    std::lock_guard<std::mutex> l(stats_mu_);
    stats_.rounds_skipped++;
    return Status::OK();
  }
  if (s.ok()) s = ReadLiveSlots(&round);
  bool pass_done = false;
  if (s.ok()) s = Page(&round, &pass_done);
  if (s.ok() && pass_done) EndPass();
  ran_ = true;
  last_round_ = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> l(stats_mu_);
  if (round.lease) stats_.rounds++;
  if (round.cut) stats_.rounds_cut++;
  if (s.ok() && pass_done) stats_.passes++;
  stats_.hints_seen += round.delta.hints_seen;
  stats_.stale_claims_flipped += round.delta.stale_claims_flipped;
  stats_.stale_claims_erased += round.delta.stale_claims_erased;
  stats_.hints_dropped += round.delta.hints_dropped;
  stats_.races += round.delta.races;
  stats_.claims_not_held += round.delta.claims_not_held;
  stats_.damaged_skipped += round.delta.damaged_skipped;
  if (!round.delta.last_damage.empty()) stats_.last_damage = round.delta.last_damage;
  stats_.remember_full += round.delta.remember_full;
  stats_.stale_claims_pending = pending_.size();
  stats_.remembered = seen_.size();
  if (!s.ok()) {
    stats_.failed_rounds++;
    stats_.last_error = s.ToString();
  }
  return s;
}

Status ClusterIndexGc::Page(Round* round, bool* pass_done) {
  *pass_done = false;
  const auto budget = std::chrono::milliseconds(options_.round_budget_ms);
  for (; cursor_.shard < table_->shards(); cursor_.shard++, cursor_.after.clear()) {
    bool more = true;
    for (uint64_t page = 0; more && page < kMaxPagesPerShard; page++) {
      // Checked between pages, so every round gets at least one page done.
      const bool spent = (options_.round_hint_budget > 0 && round->hints >= options_.round_hint_budget) ||
                         (options_.round_budget_ms > 0 && std::chrono::steady_clock::now() - round->start >= budget);
      if (spent || Stopping()) {
        round->cut = true;
        return Status::OK();
      }
      uint64_t max = options_.hint_page;
      if (options_.round_hint_budget > 0) max = std::min(max, options_.round_hint_budget - round->hints);
      std::vector<SharedHint> hints;
      std::vector<std::string> damaged;
      std::string last;
      DEDUPV1_RETURN_IF_ERROR(table_->ReadHints(cursor_.shard, cursor_.after, max, &hints, &last, &more, &damaged));
      for (const std::string& d : damaged) CountDamage(round, Status::Corruption(d));
      for (const SharedHint& hint : hints) {
        // Stopped mid-page: the cursor stays before the page, which the next
        // round reads again (acting twice on a hint is harmless).
        if (Stopping()) {
          round->cut = true;
          return Status::OK();
        }
        DEDUPV1_RETURN_IF_ERROR(Act(round, hint));
      }
      round->hints += hints.size() + damaged.size();
      cursor_.after = last;
    }
  }
  cursor_ = Cursor{};
  *pass_done = true;
  return Status::OK();
}

void ClusterIndexGc::EndPass() {
  std::erase_if(seen_, [&](const auto& kv) { return kv.second.pass != pass_; });
  std::erase_if(pending_, [&](const auto& kv) { return seen_.count(kv.first) == 0; });
  pass_++;
}

Status ClusterIndexGc::Act(Round* round, const SharedHint& hint) {
  round->delta.hints_seen++;
  Status s = ActOnHint(round, hint);
  if (s.IsCorruption()) {  // nothing was changed: skip it, later hints go on
    CountDamage(round, s);
    return Status::OK();
  }
  return s;
}

Status ClusterIndexGc::ActOnHint(Round* round, const SharedHint& hint) {
  const std::string key = Key(hint.fp);
  auto it = seen_.find(key);
  if (it == seen_.end() || it->second.hint != hint.value) {
    if (it == seen_.end() && seen_.size() >= options_.max_remembered) {
      round->delta.remember_full++;  // seen again in a later pass
      return Status::OK();
    }
    seen_[key] = Seen{hint.value, std::chrono::steady_clock::now(), pass_};
    return Status::OK();  // first seen now: not older than the hold
  }
  it->second.pass = pass_;
  if (!Old(it->second.since, std::chrono::steady_clock::now())) return Status::OK();
  SharedRecord record;
  DEDUPV1_RETURN_IF_ERROR(table_->ReadRecord(hint.fp, &record));
  if (!record.hinted) return Status::OK();  // gone meanwhile
  bool done = false;
  if (record.entry && record.entry->state == SharedEntry::State::kUncommitted) {
    return ActOnClaim(round, hint.fp, record);
  }
  int64_t sum = 0;
  for (const auto& [slot, usage] : record.usage) sum += usage.count;
  if (!record.entry || (record.entry->state == SharedEntry::State::kCommitted && sum > 0)) {
    DEDUPV1_RETURN_IF_ERROR(round->lease->Check());
    DEDUPV1_RETURN_IF_ERROR(table_->DropHintIfUnchanged(hint.fp, record, round->slots, &done));
    (done ? round->delta.hints_dropped : round->delta.races)++;
  }
  // C with usage 0 and D: steps 4-7 of design 2.6 (not built).
  return Status::OK();
}

Status ClusterIndexGc::ActOnClaim(Round* round, const Fingerprint& fp, const SharedRecord& record) {
  const std::string key = Key(fp);
  const SharedEntry& e = *record.entry;
  bool exists = false;
  DEDUPV1_RETURN_IF_ERROR(options_.container_exists(e.container, &exists));
  if (exists && options_.container_holds) {
    // Existence alone would flip a claim whose container lacks the chunk
    // (a C naming nothing); such a claim is treated as missing.
    bool holds = false;
    DEDUPV1_RETURN_IF_ERROR(options_.container_holds(e.container, fp, &holds));
    if (!holds) round->delta.claims_not_held++;
    exists = holds;
  }
  if (exists) {
    DEDUPV1_RETURN_IF_ERROR(round->lease->Check());
    std::vector<SharedCasResult> results;
    DEDUPV1_RETURN_IF_ERROR(table_->FlipMany({SharedFlip{fp, e}}, 0, &results));
    (results[0].won ? round->delta.stale_claims_flipped : round->delta.races)++;
    pending_.erase(key);
    return Status::OK();
  }
  auto live = round->live.find(e.claimer_slot);
  if (live != round->live.end() && live->second == e.claimer_incarnation) {
    pending_.erase(key);  // the live incarnation's claim: its owner decides
    return Status::OK();
  }
  auto it = pending_.find(key);
  if (it == pending_.end() || !(it->second.entry == e)) {
    pending_[key] = Pending{e, std::chrono::steady_clock::now()};  // recheck after another hold
    return Status::OK();
  }
  if (!Old(it->second.since, std::chrono::steady_clock::now())) return Status::OK();
  // Unchanged a hold later and still missing (checked above, in this round).
  DEDUPV1_RETURN_IF_ERROR(round->lease->Check());
  bool done = false;
  DEDUPV1_RETURN_IF_ERROR(table_->ReplaceIfUnchanged(fp, record, round->slots, std::nullopt, &done));
  (done ? round->delta.stale_claims_erased : round->delta.races)++;
  pending_.erase(key);
  return Status::OK();
}

}  // namespace dedupv1

#include "core/engine/cluster_gc.h"

#include <set>

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

// What one round knows: the lease, the slots, when it began, the hints it saw.
class ClusterIndexGc::Round {
 public:
  std::unique_ptr<GcLeaderLease> lease;
  std::map<uint16_t, uint32_t> live;  // slot -> incarnation whose claims may still flip
  std::vector<uint16_t> slots;        // every registered slot
  std::chrono::steady_clock::time_point now;
  std::set<std::string> hinted;  // fingerprints with a hint this round
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

Status ClusterIndexGc::ReadLiveSlots(std::map<uint16_t, uint32_t>* live, std::vector<uint16_t>* slots) {
  GatewayRegistry registry(cluster_);
  std::map<std::string, GatewayRecord> records;
  DEDUPV1_RETURN_IF_ERROR(registry.List(&records));
  for (const auto& [name, record] : records) {
    slots->push_back(record.slot);
    GatewayHeartbeat hb;
    Status s = ReadGatewayHeartbeat(cluster_.get(), name, &hb);
    if (!s.ok() && !s.IsNotFound()) return s.WithContext("GC: heartbeat of slot " + name);
    // Closed cleanly or fenced: that incarnation writes nothing any more
    // (a reopen would be a later incarnation).
    const bool ended = s.ok() && hb.incarnation == record.incarnation &&
                       (hb.state == kHeartbeatStopped || hb.state == kHeartbeatFenced);
    if (!ended) (*live)[record.slot] = record.incarnation;
  }
  return Status::OK();
}

Status ClusterIndexGc::RunLocked() {
  if (options_.claim_hold_ms == 0 || !options_.container_exists) {
    return Status::InvalidArgument("cluster GC: no claim hold or container probe given");
  }
  Round round;
  Status s = GcLeaderLease::TryAcquire(cluster_, &round.lease);
  if (s.ok() && !round.lease) {
    std::lock_guard<std::mutex> l(stats_mu_);
    stats_.rounds_skipped++;
    return Status::OK();
  }
  if (s.ok()) s = ReadLiveSlots(&round.live, &round.slots);
  round.now = std::chrono::steady_clock::now();
  for (uint32_t shard = 0; s.ok() && round.lease && shard < table_->shards(); shard++) {
    std::string after;
    bool more = true;
    for (uint64_t page = 0; s.ok() && more && page < kMaxPagesPerShard; page++) {
      std::vector<SharedHint> hints;
      s = table_->ReadHints(shard, after, options_.hint_page, &hints, &after, &more);
      for (size_t i = 0; s.ok() && i < hints.size(); i++) s = Act(&round, hints[i]);
    }
  }
  // Only fingerprints still hinted are remembered: a hint that went (and
  // comes back) starts its age afresh.
  if (s.ok()) {
    std::erase_if(seen_, [&](const auto& kv) { return round.hinted.count(kv.first) == 0; });
    std::erase_if(pending_, [&](const auto& kv) { return round.hinted.count(kv.first) == 0; });
  }
  ran_ = true;
  last_round_ = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> l(stats_mu_);
  if (round.lease) stats_.rounds++;
  stats_.hints_seen += round.delta.hints_seen;
  stats_.stale_claims_flipped += round.delta.stale_claims_flipped;
  stats_.stale_claims_erased += round.delta.stale_claims_erased;
  stats_.hints_dropped += round.delta.hints_dropped;
  stats_.races += round.delta.races;
  stats_.stale_claims_pending = pending_.size();
  if (!s.ok()) {
    stats_.failed_rounds++;
    stats_.last_error = s.ToString();
  }
  return s;
}

Status ClusterIndexGc::Act(Round* round, const SharedHint& hint) {
  const std::string key = Key(hint.fp);
  round->delta.hints_seen++;
  round->hinted.insert(key);
  auto it = seen_.find(key);
  if (it == seen_.end() || it->second.hint != hint.value) {
    seen_[key] = Seen{hint.value, round->now};
    return Status::OK();  // first seen now: not older than the hold
  }
  if (!Old(it->second.since, round->now)) return Status::OK();
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
    pending_[key] = Pending{e, round->now};  // recheck after another hold
    return Status::OK();
  }
  if (!Old(it->second.since, round->now)) return Status::OK();
  // Unchanged a hold later and still missing (checked above, in this round).
  DEDUPV1_RETURN_IF_ERROR(round->lease->Check());
  bool done = false;
  DEDUPV1_RETURN_IF_ERROR(table_->ReplaceIfUnchanged(fp, record, round->slots, std::nullopt, &done));
  (done ? round->delta.stale_claims_erased : round->delta.races)++;
  pending_.erase(key);
  return Status::OK();
}

}  // namespace dedupv1

#include "core/engine/cluster_gc.h"

#include <algorithm>
#include <cstdio>

#include "core/rados/gateway_heartbeat.h"
#include "core/rados/gateway_registry.h"
#include "core/rados/gc_epochs.h"
#include "core/rados/gc_leader_lease.h"
#include "index/claim_journal.h"
#include "index/dead_inbox.h"

namespace dedupv1 {
namespace {

// Entry and every usage key (count and last event id) alike.
bool SameRecord(const SharedRecord& a, const SharedRecord& b) {
  if (a.entry != b.entry || a.usage.size() != b.usage.size()) return false;
  for (auto x = a.usage.begin(), y = b.usage.begin(); x != a.usage.end(); ++x, ++y) {
    if (x->first != y->first || x->second.count != y->second.count ||
        x->second.last_event_id != y->second.last_event_id) {
      return false;
    }
  }
  return true;
}

// Pages per shard and round: a bound far above any shard's hints (the page
// size times this), so a shard that keeps growing cannot hold a round.
constexpr uint64_t kMaxPagesPerShard = 1 << 20;
// Claim journal records per read, and pages per slot and round (the rest
// waits for the next round).
constexpr size_t kJournalPage = 64;
constexpr int kMaxJournalPages = 64;

}  // namespace

// What one round knows: the lease, the slots, when it began, what it did.
class ClusterIndexGc::Round {
 public:
  std::unique_ptr<GcLeaderLease> lease;
  std::map<uint16_t, uint32_t> live;  // slot -> incarnation whose claims may still flip
  std::vector<uint16_t> slots;        // every registered slot
  std::map<uint16_t, std::string> names;          // slot number -> name
  std::map<std::string, uint32_t> incarnations;  // name -> current incarnation
  uint64_t epoch = 0;       // read at the start
  uint64_t min_safe = 0;    // lowest safe epoch over every registered slot
  std::string blocking;     // the slot with it
  std::vector<std::string> unsighted;  // D entries read this round without a sighting yet
  uint64_t young = 0;
  uint64_t dead_waiting = 0;
  bool sighted_at_current = false;  // a D waits for an epoch above the current one
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
    round->names[record.slot] = name;
    round->incarnations[name] = record.incarnation;
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

Status ClusterIndexGc::ReadEpochs(Round* round) {
  GcEpochState state;
  DEDUPV1_RETURN_IF_ERROR(ReadGcEpochState(cluster_.get(), &state));
  for (const std::string& d : state.damaged) CountDamage(round, Status::Corruption(d));
  round->epoch = state.epoch;
  round->min_safe = kSafeEpochClosed;
  for (const auto& [name, incarnation] : round->incarnations) {
    auto it = state.safe.find(name);
    // Another incarnation's record says nothing about this one's runs.
    const uint64_t safe = it != state.safe.end() && it->second.incarnation == incarnation ? it->second.safe : 0;
    if (safe < round->min_safe) {
      round->min_safe = safe;
      round->blocking = name;
    }
  }
  return Status::OK();
}

Status ClusterIndexGc::HintEndedJournals(Round* round) {
  RadosClaimJournal journals(cluster_, "", 0, table_->steps());
  for (const auto& [slot, name] : round->names) {
    if (Stopping()) return Status::OK();
    Status s = HintEndedJournal(round, &journals, slot, name);
    if (s.ok()) continue;
    // One slot's journal must not stop the rest of the round (hints, dead
    // entries); a lost lease does.
    DEDUPV1_RETURN_IF_ERROR(round->lease->Check());
    round->delta.journal_failures++;
    std::fprintf(stderr, "dedupv1: cluster GC: %s\n", s.WithContext("claim journal of slot " + name).ToString().c_str());
  }
  return Status::OK();
}

Status ClusterIndexGc::HintEndedJournal(Round* round, RadosClaimJournal* journals, uint16_t slot,
                                        const std::string& name) {
  const uint32_t current = round->incarnations[name];
  const bool current_ended = round->live.count(slot) == 0;
  // Records of the live incarnation (its owner retires them) and of one
  // later than the registry said at the round's start are left.
  auto ended = [&](uint32_t incarnation) {
    return incarnation < current || (incarnation == current && current_ended);
  };
  std::string after;
  for (int page = 0; page < kMaxJournalPages; page++) {
    std::vector<ClaimJournalRecord> records;
    std::vector<std::string> damaged;
    std::string last;
    DEDUPV1_RETURN_IF_ERROR(journals->ReadPage(name, after, kJournalPage, &records, &last, &damaged));
    std::vector<Fingerprint> fps;
    std::vector<std::string> keys;
    bool live_reached = false;  // keys sort by incarnation: the rest is live too
    for (const ClaimJournalRecord& r : records) {
      if (!ended(r.incarnation)) {
        live_reached = true;
        break;
      }
      fps.insert(fps.end(), r.fps.begin(), r.fps.end());
      keys.push_back(r.key);
    }
    for (const std::string& key : damaged) {
      // Its fingerprints are lost either way (a leak at worst). A live
      // incarnation's record is its owner's to retire; any other goes, so
      // it is counted once, not every round.
      uint32_t incarnation = 0;
      uint64_t seq = 0;
      if (RadosClaimJournal::ParseKey(key, &incarnation, &seq) && !ended(incarnation)) continue;
      CountDamage(round, Status::Corruption("claim journal " + journals->Where(name) + ": damaged record " +
                                            (key.size() <= 32 ? key : key.substr(0, 32) + "...") + " removed"));
      keys.push_back(key);
    }
    if (!keys.empty()) {
      // Hints first: a crash in between leaves the records, which the
      // next round turns into hints again (harmless).
      DEDUPV1_RETURN_IF_ERROR(round->lease->Check());
      if (!fps.empty()) DEDUPV1_RETURN_IF_ERROR(table_->AddHints(fps, round->epoch));
      DEDUPV1_RETURN_IF_ERROR(journals->Remove(name, keys));
      round->delta.journal_records += keys.size();
    }
    if (live_reached || records.size() + damaged.size() < kJournalPage) break;
    after = last;
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
  if (s.ok()) SendUnsent();  // best effort: a failing inbox must not stop GC
  if (s.ok()) s = ReadLiveSlots(&round);
  if (s.ok()) s = ReadEpochs(&round);
  if (s.ok()) s = HintEndedJournals(&round);
  bool pass_done = false;
  if (s.ok()) s = Page(&round, &pass_done);
  if (s.ok()) s = EndRound(&round);
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
  stats_.journal_records += round.delta.journal_records;
  stats_.journal_failures += round.delta.journal_failures;
  stats_.races += round.delta.races;
  stats_.claims_not_held += round.delta.claims_not_held;
  stats_.damaged_skipped += round.delta.damaged_skipped;
  if (!round.delta.last_damage.empty()) stats_.last_damage = round.delta.last_damage;
  stats_.remember_full += round.delta.remember_full;
  stats_.dead_marked += round.delta.dead_marked;
  stats_.dead_finalized += round.delta.dead_finalized;
  stats_.dead_unmarked += round.delta.dead_unmarked;
  stats_.epoch_bumps += round.delta.epoch_bumps;
  if (round.lease) {
    stats_.epoch = std::max(round.epoch, round.delta.epoch);
    stats_.young = round.young;
    stats_.dead_waiting = round.dead_waiting;
    stats_.waiting_for = round.dead_waiting > 0 ? round.blocking : "";
  }
  stats_.stale_claims_pending = pending_.size();
  stats_.unsent = unsent_.size();
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
      // Stopped mid-page: the cursor stays before the page, which the next
      // round reads again (acting twice on a hint is harmless).
      bool stopped = false;
      DEDUPV1_RETURN_IF_ERROR(ActOnPage(round, hints, &stopped));
      if (stopped) {
        round->cut = true;
        return Status::OK();
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
  std::erase_if(dead_, [&](const auto& kv) { return kv.second.pass != pass_; });
  pass_++;
}

Status ClusterIndexGc::ActOnPage(Round* round, const std::vector<SharedHint>& hints, bool* stopped) {
  *stopped = false;
  // 1. The hints old enough to act on (memory only).
  std::vector<Fingerprint> due;
  for (const SharedHint& hint : hints) {
    round->delta.hints_seen++;
    if (Due(round, hint)) due.push_back(hint.fp);
  }
  if (due.empty()) return Status::OK();
  if (Stopping()) {
    *stopped = true;
    return Status::OK();
  }
  // 2. Their records: one read per shard (a page is one shard's).
  std::vector<SharedRecord> records;
  std::vector<Status> statuses;
  DEDUPV1_RETURN_IF_ERROR(table_->ReadRecords(due, &records, &statuses));
  // 3. Each acted on; the most common act, dropping the hint of a chunk in
  // use, is batched into one guarded write per shard after the others.
  std::vector<std::pair<Fingerprint, SharedRecord>> drops;
  for (size_t i = 0; i < due.size(); i++) {
    if (Stopping()) {
      *stopped = true;
      break;
    }
    bool drop = false;
    Status s = statuses[i];
    if (s.ok()) s = ActOnRecord(round, due[i], records[i], &drop);
    if (s.IsCorruption()) {  // nothing was changed: skip it, later hints go on
      CountDamage(round, s);
      continue;
    }
    DEDUPV1_RETURN_IF_ERROR(s);
    if (drop) drops.emplace_back(due[i], records[i]);
  }
  if (*stopped || drops.empty()) return Status::OK();
  return DropHints(round, std::move(drops));
}

Status ClusterIndexGc::DropHints(Round* round, std::vector<std::pair<Fingerprint, SharedRecord>> drops) {
  // In use (or no entry): not a dead chunk any more, whatever the drop does.
  for (const auto& d : drops) dead_.erase(d.first.ToBytes());
  // A shard where one record changed since the read applies none of its
  // drops: its records are read again, the unchanged go once more, the
  // changed wait for a later round (a race, as a single drop would be).
  for (int attempt = 0; attempt < 2 && !drops.empty(); attempt++) {
    DEDUPV1_RETURN_IF_ERROR(round->lease->Check());
    std::vector<bool> done;
    std::vector<size_t> cancelled;
    DEDUPV1_RETURN_IF_ERROR(table_->DropHintsIfUnchanged(drops, round->slots, &done, &cancelled));
    for (size_t i = 0; i < drops.size(); i++) {
      if (done[i]) round->delta.hints_dropped++;
    }
    if (cancelled.empty() || attempt == 1 || Stopping()) {
      round->delta.races += cancelled.size();
      return Status::OK();
    }
    std::vector<Fingerprint> fps;
    for (size_t i : cancelled) fps.push_back(drops[i].first);
    std::vector<SharedRecord> records;
    std::vector<Status> statuses;
    DEDUPV1_RETURN_IF_ERROR(table_->ReadRecords(fps, &records, &statuses));
    std::vector<std::pair<Fingerprint, SharedRecord>> again;
    for (size_t k = 0; k < cancelled.size(); k++) {
      const SharedRecord& before = drops[cancelled[k]].second;
      if (statuses[k].ok() && records[k].hinted && records[k].hint == before.hint && SameRecord(records[k], before)) {
        again.emplace_back(fps[k], records[k]);
      } else {
        round->delta.races++;
      }
    }
    drops = std::move(again);
  }
  return Status::OK();
}

bool ClusterIndexGc::Due(Round* round, const SharedHint& hint) {
  const std::string key = hint.fp.ToBytes();
  auto it = seen_.find(key);
  if (it == seen_.end() || it->second.hint != hint.value) {
    if (it == seen_.end() && seen_.size() >= options_.max_remembered) {
      round->delta.remember_full++;  // seen again in a later pass
      return false;
    }
    seen_[key] = Seen{hint.value, std::chrono::steady_clock::now(), pass_};
    return false;  // first seen now: not older than the hold
  }
  it->second.pass = pass_;
  return Old(it->second.since, std::chrono::steady_clock::now());
}

Status ClusterIndexGc::ActOnRecord(Round* round, const Fingerprint& fp, const SharedRecord& record, bool* drop) {
  *drop = false;
  if (!record.hinted) return Status::OK();  // gone meanwhile
  if (record.entry && record.entry->state == SharedEntry::State::kUncommitted) {
    return ActOnClaim(round, fp, record);
  }
  int64_t sum = 0;
  for (const auto& [slot, usage] : record.usage) sum += usage.count;
  if (!record.entry || (record.entry->state == SharedEntry::State::kCommitted && sum > 0)) {
    *drop = true;  // in use, or a leftover hint: the hint goes (ActOnPage)
    return Status::OK();
  }
  if (sum < 0) {  // damage for the checker to name; never a reason to erase
    return Status::Corruption("GC: usage sum " + std::to_string(sum) + " of " + fp.ToHex() + " in " +
                              table_->ShardOid(fp) + " is negative");
  }
  if (record.entry->state == SharedEntry::State::kCommitted) return MarkUnused(round, fp, record);
  return ActOnDead(round, fp, record, sum);
}

Status ClusterIndexGc::MarkUnused(Round* round, const Fingerprint& fp, const SharedRecord& record) {
  const SharedEntry& e = *record.entry;
  // Two epochs: the claimer trusts its own claim from memory while the
  // claim's epoch is at most one behind its runs' (index/chunk_index.h
  // SetGcEpoch), and a flip never lowers the claim's epoch.
  if (e.epoch + 2 > round->epoch) {
    round->young++;
    return Status::OK();
  }
  SharedEntry next = e;
  next.state = SharedEntry::State::kDead;
  next.epoch = round->epoch;
  DEDUPV1_RETURN_IF_ERROR(round->lease->Check());
  bool done = false;
  DEDUPV1_RETURN_IF_ERROR(table_->ReplaceIfUnchanged(fp, record, round->slots, next, &done));
  if (!done) {
    round->delta.races++;
    return Status::OK();
  }
  round->delta.dead_marked++;
  round->dead_waiting++;
  SharedRecord marked = record;
  marked.entry = next;
  dead_[fp.ToBytes()] = Dead{marked, kUnsighted, pass_};
  round->unsighted.push_back(fp.ToBytes());
  return Status::OK();
}

Status ClusterIndexGc::ActOnDead(Round* round, const Fingerprint& fp, const SharedRecord& record, int64_t sum) {
  const std::string key = fp.ToBytes();
  const SharedEntry& e = *record.entry;
  bool done = false;
  if (sum > 0) {  // referenced again (a count that came late): live
    SharedEntry next = e;
    next.state = SharedEntry::State::kCommitted;
    next.epoch = round->epoch;
    DEDUPV1_RETURN_IF_ERROR(round->lease->Check());
    DEDUPV1_RETURN_IF_ERROR(table_->ReplaceIfUnchanged(fp, record, round->slots, next, &done));
    (done ? round->delta.dead_unmarked : round->delta.races)++;
    dead_.erase(key);
    return Status::OK();
  }
  round->dead_waiting++;
  auto it = dead_.find(key);
  if (it == dead_.end() || !SameRecord(it->second.record, record) || it->second.sighting == kUnsighted) {
    dead_[key] = Dead{record, kUnsighted, pass_};
    round->unsighted.push_back(key);
    return Status::OK();
  }
  it->second.pass = pass_;
  if (it->second.sighting >= round->epoch) round->sighted_at_current = true;  // needs a raise
  if (round->min_safe <= it->second.sighting) return Status::OK();  // a slot may hold an uncounted reference
  round->dead_waiting--;
  return Finalize(round, fp, record);
}

Status ClusterIndexGc::Finalize(Round* round, const Fingerprint& fp, const SharedRecord& record) {
  const SharedEntry& e = *record.entry;
  auto owner = round->names.find(static_cast<uint16_t>(e.container >> 48));
  if (owner == round->names.end()) {
    return Status::Corruption("GC: dead entry " + e.ToString() + " of " + fp.ToHex() + " in " +
                              table_->ShardOid(fp) + " names a container of no registered slot");
  }
  if (options_.before_finalize) options_.before_finalize(fp);
  DEDUPV1_RETURN_IF_ERROR(round->lease->Check());
  bool done = false;
  DEDUPV1_RETURN_IF_ERROR(table_->ReplaceIfUnchanged(fp, record, round->slots, std::nullopt, &done));
  dead_.erase(fp.ToBytes());
  if (!done) {  // revived or counted meanwhile: read again next round
    round->delta.races++;
    return Status::OK();
  }
  // Erased: no slot can reach the copy through the table any more, and none
  // references it. A failed append is sent again by the next round.
  round->delta.dead_finalized++;
  const DeadChunk chunk{e.container, fp};
  Status s = RadosDeadInbox(cluster_).Append(owner->second, {chunk});
  if (!s.ok()) {
    // Not the round's failure: the entry is gone either way, and a failing
    // inbox must not stop GC. Sent again before later rounds (a leak until
    // then, never a chunk freed in use).
    unsent_.emplace_back(owner->second, chunk);
    std::fprintf(stderr, "dedupv1: cluster GC: %s\n",
                 s.WithContext("hand erased chunk " + fp.ToHex() + " to slot " + owner->second).ToString().c_str());
  }
  return Status::OK();
}

void ClusterIndexGc::SendUnsent() {
  RadosDeadInbox inbox(cluster_);
  while (!unsent_.empty()) {
    Status s = inbox.Append(unsent_.back().first, {unsent_.back().second});
    if (!s.ok()) {
      std::fprintf(stderr, "dedupv1: cluster GC: %zu erased chunks not handed to their owners yet: %s\n",
                   unsent_.size(), s.ToString().c_str());
      return;
    }
    unsent_.pop_back();
  }
}

Status ClusterIndexGc::EndRound(Round* round) {
  if (round->unsighted.empty() && round->young == 0 && !round->sighted_at_current) return Status::OK();
  // Read after every entry of this round: each D read before it existed
  // while the epoch was at most this.
  uint64_t now = 0;
  DEDUPV1_RETURN_IF_ERROR(ReadGcEpoch(cluster_.get(), &now));
  for (const std::string& key : round->unsighted) {
    auto it = dead_.find(key);
    if (it != dead_.end() && it->second.sighting == kUnsighted) it->second.sighting = now;
  }
  // Each raise makes every slot checkpoint: at most one per interval (a
  // later round raises for what waits).
  const uint64_t interval_ms =
      options_.min_raise_interval_ms > 0 ? options_.min_raise_interval_ms : options_.claim_hold_ms;
  if (raised_ && std::chrono::steady_clock::now() - last_raise_ < std::chrono::milliseconds(interval_ms)) {
    return Status::OK();
  }
  DEDUPV1_RETURN_IF_ERROR(round->lease->Check());
  bool bumped = false;
  DEDUPV1_RETURN_IF_ERROR(BumpGcEpoch(cluster_.get(), now, &bumped));
  if (bumped) {
    round->delta.epoch_bumps++;
    round->delta.epoch = now + 1;
    raised_ = true;
    last_raise_ = std::chrono::steady_clock::now();
  }
  return Status::OK();
}

Status ClusterIndexGc::ActOnClaim(Round* round, const Fingerprint& fp, const SharedRecord& record) {
  const std::string key = fp.ToBytes();
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

#include "target/tools/cluster_checker.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "chunkstore/foreign_containers.h"
#include "core/engine/shard_keys.h"
#include "index/block_mapping.h"
#include "index/dead_inbox.h"
#include "index/rados_chunk_table.h"
#include "target/tools/checker_slot_beat.h"
#include "target/tools/data_dir_lock.h"
#include "target/tools/volume_table.h"

namespace dedupv1 {
namespace tools {

namespace {

std::string SlotLabel(const std::map<uint16_t, std::string>& names, uint16_t slot) {
  auto it = names.find(slot);
  return it == names.end() ? fmt::format("#{} (not registered)", slot) : it->second;
}

}  // namespace

ClusterChecker::ClusterChecker(const Options& options) : options_(options) {}

ClusterChecker::~ClusterChecker() {
  locks_.clear();
  for (const std::string& dir : temp_dirs_) {
    ::unlink(JoinPath(dir, "LOCK").c_str());
    ::rmdir(dir.c_str());
  }
}

Status ClusterChecker::Check(ClusterCheckReport* report) {
  if (!UsesRados(options_) || !options_.chunk_index.cluster_scope) {
    return Status::InvalidArgument("dedupv1_check --cluster needs a store with storage.backend = rados and "
                                   "storage.rados.dedup-scope = cluster");
  }
  report->store = options_.rados.store;
  DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(options_.rados, &cluster_));
  GatewayRegistry registry(cluster_);
  DEDUPV1_RETURN_IF_ERROR(registry.List(&slots_));
  if (slots_.empty()) return Status::NotFound("store " + options_.rados.store + " has no registered gateway slot");
  for (const auto& [name, record] : slots_) slot_names_[record.slot] = name;
  DEDUPV1_RETURN_IF_ERROR(LockSlots(slots_));
  aliases_ = std::make_unique<RadosContainerStore>(cluster_);

  // Each slot is opened, walked and closed in turn; the last stays open for
  // the probes of containers no slot listed (entries and their aliases).
  std::unique_ptr<DedupSystem> last;
  size_t i = 0;
  for (const auto& [name, record] : slots_) {
    if (last) DEDUPV1_RETURN_IF_ERROR(CloseSlot(&last));
    DEDUPV1_RETURN_IF_ERROR(OpenSlot(name, i++, &last));
    DEDUPV1_RETURN_IF_ERROR(CheckSlot(name, record.slot, last.get(), report));
  }
  // The incarnations now current (the opens above made new ones).
  DEDUPV1_RETURN_IF_ERROR(registry.List(&slots_));
  for (const auto& [name, record] : slots_) {
    if (std::find(locked_.begin(), locked_.end(), name) != locked_.end()) continue;
    // Its mappings were not walked: the recount and the orphan scan miss them.
    CheckProblem p;
    p.kind = "slot-unchecked";
    p.message = fmt::format("gateway slot {} was registered during the check and was not checked; run the check "
                            "again", name);
    p.slot = name;
    report->problems.push_back(std::move(p));
  }

  RadosSharedChunkTableOptions to;
  to.rados = options_.chunk_index.rados;
  to.shards = options_.chunk_index.rados_shards;
  to.key_size = options_.chunk_index.table.key_size;
  to.slot = 0;  // read-only
  std::unique_ptr<RadosSharedChunkTable> table;
  Status s = RadosSharedChunkTable::Open(to, &table);
  CheckMappedCopiesLive(report);
  if (s.ok()) s = CheckTable(last.get(), table.get(), report);
  if (s.ok()) s = CheckStaleClaims(last.get(), report);
  if (s.ok()) ReportOrphans(report);
  Status closed = CloseSlot(&last);
  return s.ok() ? closed : s;
}

void ClusterChecker::CheckMappedCopiesLive(ClusterCheckReport* report) {
  for (const auto& [fp, refs] : refs_) {
    for (ContainerId at : refs.containers) {
      if (!orphans_.Listed(at) || orphans_.Holds(at, fp)) continue;
      // The walk found the chunk in the container (Holds), the owner's
      // listing leaves it out: the owner marked it dead. A merge drops it.
      std::vector<std::string> slots;
      for (const auto& [slot, n] : refs.by_slot) slots.push_back(SlotLabel(slot_names_, slot));
      CheckProblem p;
      p.kind = "mapping-to-dead-chunk";
      p.message = fmt::format("chunk {} in container {}: its slot marked it dead, yet block mappings of slot(s) {} "
                              "name it (a merge would drop it)",
                              fp.ToHex(), at, fmt::join(slots, ", "));
      p.container = at;
      p.fingerprint = fp.ToHex();
      p.repair = "cannot be repaired by --cluster";
      report->problems.push_back(std::move(p));
    }
  }
}

void ClusterChecker::ReportOrphans(ClusterCheckReport* report) {
  found_orphans_ = orphans_.Find();
  std::set<ContainerId> containers;
  for (const OrphanCopies::Orphan& o : found_orphans_) {
    report->orphan_copies++;
    report->orphan_bytes += o.bytes;
    containers.insert(o.container);
    for (ClusterSlotReport& sr : report->slots) {
      if (sr.slot != o.slot) continue;
      sr.orphan_copies++;
      sr.orphan_bytes += o.bytes;
    }
  }
  report->orphan_containers = containers.size();
}

Status ClusterChecker::ReclaimOrphans(ClusterCheckReport* report) {
  report->orphan_reclaim_requested = true;
  if (!report->Clean() || !report->recount_complete) {
    report->orphan_reclaim_refused =
        "the check found problems; orphans are judged only on a store without damage (repair or let GC clear "
        "those first)";
    return Status::Aborted("orphan copies not reclaimed: " + report->orphan_reclaim_refused);
  }
  // Per slot, per container, the fingerprints to mark.
  std::map<uint16_t, std::map<ContainerId, std::vector<Fingerprint>>> by_slot;
  std::map<uint16_t, uint64_t> bytes;
  for (const OrphanCopies::Orphan& o : found_orphans_) {
    by_slot[o.slot][o.container].push_back(o.fp);
    bytes[o.slot] += o.bytes;
  }
  for (size_t i = 0; i < locked_.size(); i++) {
    const std::string& name = locked_[i];
    const GatewayRecord& record = slots_[name];
    auto it = by_slot.find(record.slot);
    if (it == by_slot.end()) continue;
    std::unique_ptr<DedupSystem> sys;
    DEDUPV1_RETURN_IF_ERROR(OpenSlot(name, i, &sys));
    uint64_t marked = 0;
    for (const auto& [id, fps] : it->second) {
      sys->chunk_store()->MarkDead(id, fps);
      marked += fps.size();
    }
    Status s = sys->chunk_store()->PersistDeadMarks().WithContext("persist the dead marks of slot " + name);
    Status closed = CloseSlot(&sys);
    DEDUPV1_RETURN_IF_ERROR(s);
    DEDUPV1_RETURN_IF_ERROR(closed);
    report->orphans_reclaimed += marked;
    report->orphan_bytes_reclaimed += bytes[record.slot];
    for (ClusterSlotReport& sr : report->slots) {
      if (sr.slot == record.slot) sr.orphans_reclaimed += marked;
    }
  }
  return Status::OK();
}

Status ClusterChecker::CloseSlot(std::unique_ptr<DedupSystem>* sys) {
  const std::string name = (*sys)->options().rados.gateway;
  Status s = (*sys)->Close();
  sys->reset();
  DEDUPV1_RETURN_IF_ERROR(s.WithContext("close gateway slot " + name));
  GatewayRecord record;
  DEDUPV1_RETURN_IF_ERROR(GatewayRegistry(cluster_).Lookup(name, &record));
  return WriteStoppedBeat(cluster_.get(), name, record);
}

Status ClusterChecker::LockSlots(const std::map<std::string, GatewayRecord>& slots) {
  for (const auto& [name, record] : slots) {
    DEDUPV1_RETURN_IF_ERROR(RefuseLiveHolder(cluster_.get(), name, options_.rados.lock_duration_s));
    // A gateway's local directory holds only runtime files (its LOCK); a
    // fresh one per slot keeps the check away from any gateway's own.
    std::string tmpl = JoinPath(getenv("TMPDIR") != nullptr ? getenv("TMPDIR") : "/tmp", "dedupv1-check-XXXXXX");
    if (::mkdtemp(tmpl.data()) == nullptr) return Status::IOError("cannot create a directory " + tmpl);
    temp_dirs_.push_back(tmpl);
    Options o = options_;
    o.rados.gateway = name;
    o.volumes.clear();  // the config's volumes are its own slot's; the check serves none
    DEDUPV1_RETURN_IF_ERROR(o.DerivePathsFrom(tmpl));
    std::unique_ptr<DataDirLock> lock;
    Status s = DataDirLock::Acquire(o, &lock);
    if (!s.ok()) {
      return s.WithContext("gateway slot " + name +
                           " (dedupv1_check --cluster takes every slot's lock: stop every gateway of the store first)");
    }
    locks_.push_back(std::move(lock));
    slot_options_.push_back(std::move(o));
    locked_.push_back(name);
  }
  return Status::OK();
}

Status ClusterChecker::OpenSlot(const std::string& name, size_t index, std::unique_ptr<DedupSystem>* out) {
  Status s = DedupSystem::Open(slot_options_[index], locks_[index]->env(), out);
  DEDUPV1_RETURN_IF_ERROR(s.WithContext("open gateway slot " + name));
  // No idle work: an idle slot would run GC rounds (index and container),
  // changing the store under the check and erasing what it should report.
  // Idle starts only after IdleOptions::period_ms of quiet (seconds); this
  // takes effect at the checkpoint thread's next tick (250 ms).
  (*out)->ForceIdle(IdleMode::kBusy);
  return Status::OK();
}

Status ClusterChecker::CheckSlot(const std::string& name, uint16_t slot, DedupSystem* sys,
                                 ClusterCheckReport* report) {
  ClusterSlotReport sr;
  sr.name = name;
  sr.slot = slot;
  sr.recovery = sys->recovery();
  GatewayRecord now;
  if (GatewayRegistry(cluster_).Lookup(name, &now).ok()) sr.incarnation = now.incarnation;
  std::vector<VolumeEntry> volumes;
  const size_t index = report->slots.size();
  DEDUPV1_RETURN_IF_ERROR(ReadVolumeTable(locks_[index]->env(), slot_options_[index], &volumes));
  sr.volumes = volumes.size();

  ChunkStore* store = sys->chunk_store();
  std::vector<ContainerId> ids;
  DEDUPV1_RETURN_IF_ERROR(store->ListCommitted(&ids).WithContext("list the containers of slot " + name));
  for (ContainerId id : ids) ListContainer(name, slot, store, id, &sr, report);
  DEDUPV1_RETURN_IF_ERROR(ReadDeadInbox(name, sys, &sr));

  Status s = sys->block_index()->ForEachBlock(
      [&](const BlockId& id, const BlockMapping& mapping) {
        sr.blocks_mapped++;
        const auto& items = mapping.items();
        uint32_t pos = 0;
        for (size_t i = 0; i < items.size(); pos += items[i].size, i++) {
          const BlockMappingItem& item = items[i];
          if (item.IsZero()) continue;
          sr.chunk_references++;
          if (store->IsForeign(item.container)) sr.foreign_references++;
          bool first_in_block = true;  // the usage rule: a block counts a fingerprint once
          for (size_t k = 0; k < i; k++) first_in_block = first_in_block && (items[k].IsZero() || items[k].fp != item.fp);
          SlotRefs& refs = refs_[item.fp];
          if (first_in_block) refs.by_slot[slot]++;
          std::string why;
          const bool holds = Holds(sys, item.container, item.fp, &why);
          // Copies count by where the chunk is now: a merged id and its target are one.
          if (holds) {
            refs.containers.insert(Container(sys, item.container).at);
            orphans_.Reach(Container(sys, item.container).at, item.fp);
            continue;
          }
          orphans_.Reach(item.container, item.fp);  // an id no listing has: keeps every copy
          CheckProblem p;
          p.kind = "mapping-unrecoverable";
          p.message = fmt::format("slot {} volume id {} block {} bytes [{}, {}): chunk {}: {}", name, id.volume,
                                  id.block, pos, pos + item.size, item.fp.ToHex(), why);
          p.slot = name;
          p.container = item.container;
          p.fingerprint = item.fp.ToHex();
          p.has_block = true;
          p.volume_id = id.volume;
          p.block = id.block;
          p.offset = pos;
          p.length = item.size;
          p.repair = "cannot be repaired by --cluster";
          report->problems.push_back(std::move(p));
        }
        return true;
      },
      [&](const std::string& key, const Status& why) {
        recount_complete_ = false;
        CheckProblem p;
        p.kind = "block-index-corrupt";
        p.message = fmt::format("slot {}: block index record {}: {}", name, key, why.ToString());
        p.slot = name;
        report->problems.push_back(std::move(p));
      });
  DEDUPV1_RETURN_IF_ERROR(s.WithContext("walk the block index of slot " + name));
  report->slots.push_back(std::move(sr));
  return Status::OK();
}

void ClusterChecker::ListContainer(const std::string& name, uint16_t slot, ChunkStore* store, ContainerId id,
                                   ClusterSlotReport* sr, ClusterCheckReport* report) {
  auto problem = [&](const Status& s) {
    CheckProblem p;
    p.kind = s.IsCorruption() ? "container-corrupt" : "container-unreadable";
    p.message = fmt::format("slot {}: container {} cannot be read: {}", name, id, s.ToString());
    p.slot = name;
    p.container = id;
    report->problems.push_back(std::move(p));
  };
  ContainerFps c;
  sr->containers++;
  Status s = store->GetFingerprintsVerified(id, &c.fps);
  if (!s.ok()) {
    c.error = s.ToString();
    problem(s);
    containers_[id] = std::move(c);
    return;
  }
  std::sort(c.fps.begin(), c.fps.end());
  c.exists = true;
  c.at = id;
  sr->containers_ok++;
  containers_[id] = std::move(c);
  // The orphan scan needs each chunk's bytes (from the metadata the
  // verified read just checked; dead-marked chunks left out like above).
  std::vector<ChunkStore::ChunkFootprint> footprints;
  uint64_t total = 0;
  s = store->GetChunkFootprints(id, &footprints, &total);
  if (!s.ok()) {
    problem(s);
    return;
  }
  std::vector<OrphanCopies::Chunk> chunks;
  chunks.reserve(footprints.size());
  for (const auto& f : footprints) chunks.push_back({f.fp, f.bytes});
  orphans_.AddContainer(slot, id, std::move(chunks));
}

Status ClusterChecker::ReadDeadInbox(const std::string& name, DedupSystem* sys, ClusterSlotReport* sr) {
  RadosDeadInbox inbox(cluster_);
  std::string after;
  for (;;) {
    constexpr size_t kPage = 1024;
    std::vector<DeadChunk> chunks;
    std::vector<std::string> damaged;  // removed by the slot's GC round, logged there
    std::string last;
    DEDUPV1_RETURN_IF_ERROR(
        inbox.ReadPage(name, after, kPage, &chunks, &last, &damaged).WithContext("read " + inbox.Where(name)));
    for (const DeadChunk& c : chunks) {
      // The slot's GC drops a key naming another slot's container unmarked
      // (ClusterGcRules::TakeDeadInbox): it keeps nothing.
      if (sys->chunk_store()->IsForeign(c.container)) continue;
      sr->inbox_chunks++;
      const ContainerFps& at = Container(sys, c.container);
      orphans_.Reach(at.exists ? at.at : c.container, c.fp);
    }
    if (chunks.size() + damaged.size() < kPage) return Status::OK();
    after = last;
  }
}

const ClusterChecker::ContainerFps& ClusterChecker::Container(DedupSystem* sys, ContainerId id) {
  auto it = containers_.find(id);
  if (it != containers_.end()) return it->second;
  // Not listed by a slot checked so far, or merged: the open slot's own
  // catalog aliases first, then the `ca.` aliases merges publish for every
  // slot (chunkstore/foreign_containers.h), followed here rather than inside
  // the chunk store so that |at| says where the chunks are now (a merged id
  // and its target are one copy).
  ContainerFps c;
  ContainerId at = sys->chunk_store()->Resolve(id);
  Status s = Locate(&at);
  if (s.ok()) {
    auto listed = containers_.find(at);
    if (listed != containers_.end() && listed->second.exists) {
      c = listed->second;
    } else {
      s = sys->chunk_store()->GetFingerprints(at, &c.fps);
      std::sort(c.fps.begin(), c.fps.end());
      c.exists = s.ok();
      c.at = at;
    }
  }
  if (!s.ok() && !s.IsNotFound()) c.error = s.ToString();
  return containers_[id] = std::move(c);
}

Status ClusterChecker::Locate(ContainerId* at) {
  for (int hop = 0;; hop++) {
    std::string head;
    Status s = aliases_->GetHead(*at, 1, &head);
    if (!s.IsNotFound()) return s;
    if (hop == ForeignContainers::kMaxHops) {
      return Status::Corruption(fmt::format("more than {} aliases to follow", ForeignContainers::kMaxHops));
    }
    ContainerId next = kNoContainer;
    DEDUPV1_RETURN_IF_ERROR(aliases_->GetAlias(*at, &next));  // NotFound: neither there nor merged
    if (next == *at) return Status::Corruption(fmt::format("the alias of container {} names itself", next));
    *at = next;
  }
}

bool ClusterChecker::Holds(DedupSystem* sys, ContainerId id, const Fingerprint& fp, std::string* why) {
  if (id == kNoContainer) {
    *why = "it names no container (id 0)";
    return false;
  }
  const ContainerFps& c = Container(sys, id);
  if (!c.exists) {
    *why = c.error.empty() ? fmt::format("container {} does not exist", id)
                           : fmt::format("container {} cannot be read: {}", id, c.error);
    return false;
  }
  if (!std::binary_search(c.fps.begin(), c.fps.end(), fp)) {
    *why = fmt::format("container {} does not hold the chunk", id);
    return false;
  }
  return true;
}

Status ClusterChecker::ScanTableKeys(RadosSharedChunkTable* table, std::set<Fingerprint>* fps) {
  const int bits = RadosChunkTable::ShardBits(table->shards());
  const size_t key_size = options_.chunk_index.table.key_size;
  for (uint32_t shard = 0; shard < table->shards(); shard++) {
    const std::string oid = RadosChunkTable::ShardObject(shard, bits);
    DEDUPV1_RETURN_IF_ERROR(
        ForEachOmapKey(table->cluster(), oid, "list the keys of a shard", [&](const std::string& key) {
          // "e"+fp, "u"+fp+slot, "z"+fp; other keys (statistics) name no chunk.
          if (key.size() < 1 + key_size ||
              (key[0] != kSharedEntryType && key[0] != kSharedUsageType && key[0] != kSharedHintType)) {
            return;
          }
          fps->insert(Fingerprint(reinterpret_cast<const uint8_t*>(key.data() + 1), key_size));
        }));
  }
  return Status::OK();
}

Status ClusterChecker::CheckTable(DedupSystem* sys, RadosSharedChunkTable* table, ClusterCheckReport* report) {
  report->shards = table->shards();
  report->recount_complete = recount_complete_;
  std::set<Fingerprint> fps;
  DEDUPV1_RETURN_IF_ERROR(ScanTableKeys(table, &fps));
  report->table_fingerprints = fps.size();
  report->referenced_chunks = refs_.size();
  for (const auto& [fp, refs] : refs_) fps.insert(fp);  // referenced chunks without any key are damage too
  for (const Fingerprint& fp : fps) {
    SharedRecord record;
    Status s = table->ReadRecord(fp, &record);
    if (s.IsCorruption()) {
      CheckProblem p;
      p.kind = "index-corrupt";
      p.message = fmt::format("chunk {}: {}", fp.ToHex(), s.ToString());
      p.fingerprint = fp.ToHex();
      report->problems.push_back(std::move(p));
      continue;
    }
    DEDUPV1_RETURN_IF_ERROR(s);
    CheckRecord(sys, fp, record, report);
  }
  for (const auto& [fp, refs] : refs_) {
    if (refs.containers.size() > 1) {
      report->duplicate_fingerprints++;
      report->duplicate_copies += refs.containers.size() - 1;
    }
  }
  return Status::OK();
}

void ClusterChecker::CheckRecord(DedupSystem* sys, const Fingerprint& fp, const SharedRecord& record,
                                 ClusterCheckReport* report) {
  auto add = [&](const std::string& kind, const std::string& slot, ContainerId container, const std::string& what) {
    CheckProblem p;
    p.kind = kind;
    p.message = fmt::format("chunk {}{}: {}", fp.ToHex(), slot.empty() ? "" : ", slot " + slot, what);
    p.slot = slot;
    p.container = container;
    p.fingerprint = fp.ToHex();
    p.repair = "not repaired by --cluster";
    report->problems.push_back(std::move(p));
  };
  static const SlotRefs kNone;
  auto r = refs_.find(fp);
  const SlotRefs& refs = r == refs_.end() ? kNone : r->second;
  report->usage_keys += record.usage.size();
  const ContainerId container = record.entry ? record.entry->container : kNoContainer;

  if (!record.entry) {
    for (const auto& [slot, usage] : record.usage) {
      add("usage-key-orphan", SlotLabel(slot_names_, slot), kNoContainer,
          fmt::format("usage key (count {}) without a chunk index entry", usage.count));
    }
    if (!refs.by_slot.empty()) {
      add("index-entry-missing", "", refs.containers.empty() ? kNoContainer : *refs.containers.begin(),
          fmt::format("referenced by block mappings (containers {}) but has no chunk index entry",
                      fmt::join(refs.containers, ", ")));
    }
    return;
  }
  const SharedEntry& e = *record.entry;
  // An entry in any state keeps the copy it names (orphan scan); one whose
  // container cannot be found keeps every copy.
  if (e.container != kNoContainer) {
    const ContainerFps& named = Container(sys, e.container);
    orphans_.Reach(named.exists ? named.at : e.container, fp);
  }
  std::string why;
  switch (e.state) {
    case SharedEntry::State::kCommitted:
      report->entries_committed++;
      if (!Holds(sys, e.container, fp, &why)) add("index-entry-dangling", "", e.container, "committed entry: " + why);
      break;
    case SharedEntry::State::kUncommitted: {
      report->entries_uncommitted++;
      auto claimer = slot_names_.find(e.claimer_slot);
      const bool current = claimer != slot_names_.end() && slots_[claimer->second].incarnation == e.claimer_incarnation;
      if (!current) closed_claims_.push_back({fp, e});
      break;
    }
    case SharedEntry::State::kDead:
      report->entries_dead++;
      break;
  }

  // The recount, per slot and summed.
  std::set<uint16_t> slots;
  for (const auto& [slot, usage] : record.usage) slots.insert(slot);
  for (const auto& [slot, n] : refs.by_slot) slots.insert(slot);
  int64_t sum = 0;
  bool match = true;
  for (uint16_t slot : slots) {
    const auto u = record.usage.find(slot);
    const int64_t stored = u == record.usage.end() ? 0 : u->second.count;
    const auto n = refs.by_slot.find(slot);
    const int64_t recount = n == refs.by_slot.end() ? 0 : n->second;
    sum += stored;
    if (u != record.usage.end() && slot_names_.count(slot) == 0) {
      add("usage-key-unknown-slot", SlotLabel(slot_names_, slot), container,
          fmt::format("usage key (count {}) of slot number {}, which the gateways registry does not know", stored,
                      slot));
    }
    if (stored == recount) continue;
    match = false;
    add("usage-count-mismatch", SlotLabel(slot_names_, slot), container,
        fmt::format("the slot's usage key says {} but {} of its block mappings reference it{}", stored, recount,
                    recount_complete_ ? "" : " (recount incomplete)"));
  }
  if (sum < 0) add("usage-sum-negative", "", container, fmt::format("usage keys sum to {} (Corruption)", sum));
  if (match) {
    report->usage_matching++;
  } else {
    report->usage_mismatches++;
  }
}

Status ClusterChecker::CheckStaleClaims(DedupSystem* sys, ClusterCheckReport* report) {
  report->closed_claims = closed_claims_.size();
  // Every slot's lock is held and no slot runs idle work, so no U entry can
  // change during the check: one read tells. A closed incarnation's claim
  // whose container exists is GC backlog (cluster GC flips it), information;
  // one whose container is missing is a stale claim (GC removes it after
  // two holds, but it names nothing).
  for (const Claim& c : closed_claims_) {
    const ContainerFps& container = Container(sys, c.entry.container);
    if (container.exists) {
      report->closed_claims_container_exists++;
      continue;
    }
    auto claimer = slot_names_.find(c.entry.claimer_slot);
    CheckProblem p;
    p.kind = "stale-claim";
    p.slot = SlotLabel(slot_names_, c.entry.claimer_slot);
    p.message = fmt::format("chunk {}: uncommitted claim {} of slot {} incarnation {} (now {}); its container {} {}",
                            c.fp.ToHex(), c.entry.ToString(), p.slot, c.entry.claimer_incarnation,
                            claimer == slot_names_.end() ? 0 : slots_[claimer->second].incarnation,
                            c.entry.container,
                            container.error.empty() ? "does not exist" : "cannot be read: " + container.error);
    p.container = c.entry.container;
    p.fingerprint = c.fp.ToHex();
    p.repair = "cluster GC (design-15 2.6 step 3) removes it";
    report->problems.push_back(std::move(p));
  }
  return Status::OK();
}

}  // namespace tools
}  // namespace dedupv1

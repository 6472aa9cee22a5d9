#include "target/tools/store_checker.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "core/base/fingerprint.h"
#include "index/block_mapping.h"
#include "index/chunk_index.h"
#include "target/tools/progress.h"

namespace dedupv1 {
namespace tools {

namespace {
// Index repairs are applied in batches of this many operations (each batch is
// one journaled DiskHashTable::Apply).
constexpr size_t kIndexRepairBatch = 4096;
}  // namespace

StoreChecker::StoreChecker(DedupSystem* system, std::vector<VolumeEntry> volumes, const CheckOptions& options)
    : system_(system), volumes_(std::move(volumes)), options_(options),
      block_size_(system->options().block_size) {}

Status StoreChecker::Check(CheckReport* report) {
  // A cluster-scope slot maps other slots' containers and its chunk index is
  // the store's shared table: checking it needs the cluster recount
  // (dedupv1_check --cluster, cluster_checker.h); this checker would call
  // foreign containers missing.
  if (system_->chunk_index()->cluster_scope()) {
    return Status::NotSupported("a gateway slot with storage.rados.dedup-scope = cluster is checked with every other "
                                "slot of its store: dedupv1_check --cluster");
  }
  report->volumes = volumes_.size();
  DEDUPV1_RETURN_IF_ERROR(CheckContainers(report));
  DEDUPV1_RETURN_IF_ERROR(CheckChunkIndex(report));
  DEDUPV1_RETURN_IF_ERROR(CheckBlockMappings(report));
  Recount(report);
  CheckUsage(report);
  if (report->unreadable_records > 0) HoldBackErasures(report);
  return Status::OK();
}

std::string StoreChecker::HeldBackReason(const CheckReport& report) const {
  return fmt::format("kept: {} block index record{} could not be read and may reference the chunk, so the recount "
                     "is incomplete and nothing is lowered or erased from it",
                     report.unreadable_records, report.unreadable_records == 1 ? "" : "s");
}

void StoreChecker::HoldBackErasures(CheckReport* report) {
  std::set<size_t> held;
  for (const IndexRepair& r : index_repairs_) {
    if (r.op.erase) held.insert(r.problem);
  }
  if (held.empty()) return;
  // A problem is repaired whole or not at all: its other repairs wait too.
  index_repairs_.erase(std::remove_if(index_repairs_.begin(), index_repairs_.end(),
                                      [&](const IndexRepair& r) { return held.count(r.problem) != 0; }),
                       index_repairs_.end());
  for (size_t i : held) {
    CheckProblem& p = report->problems[i];
    p.repairable = false;
    p.held_back = true;
    p.repair = HeldBackReason(*report) + " (would " + p.repair + ")";
  }
}

Status StoreChecker::CheckContainers(CheckReport* report) {
  ChunkStore* store = system_->chunk_store();
  std::vector<ContainerId> ids;
  Status s = store->ListCommitted(&ids);
  if (!s.ok()) return s.WithContext("list the containers");
  report->containers = ids.size();
  report->data_verified = options_.verify_data;
  const FingerprintType fp_type = system_->options().fingerprint;
  Progress progress("containers", ids.size(), "containers", options_.progress);
  for (ContainerId id : ids) {
    ContainerInfo info;
    s = store->GetFingerprintsVerified(id, &info.fps);
    if (s.IsCorruption()) {
      // The whole container did not verify; if its metadata did, each chunk
      // is checked on its own and only the damaged ones are lost.
      Status per_chunk = CheckChunksOneByOne(id, s, &info, report);
      if (per_chunk.ok()) {
        containers_[id] = std::move(info);
        progress.Add();
        continue;
      }
    }
    if (!s.ok()) {
      info.state = s.IsCorruption() ? ContainerState::kCorrupt : ContainerState::kUnreadable;
      info.error = s.ToString();
      info.fps.clear();
      CheckProblem p;
      p.kind = s.IsCorruption() ? "container-corrupt" : "container-unreadable";
      p.message = fmt::format("container {} cannot be read: {}", id, s.ToString());
      p.container = id;
      p.repair = "chunk data is never repaired; block ranges that need it are listed as unrecoverable";
      report->problems.push_back(std::move(p));
    } else {
      std::sort(info.fps.begin(), info.fps.end());
      report->containers_ok++;
      report->chunks += info.fps.size();
      if (options_.verify_data) {
        for (const Fingerprint& fp : info.fps) {
          std::string data;
          Status r = store->ReadChunk(id, fp, &data);
          if (r.ok()) {
            Fingerprint actual;
            ComputeFingerprint(fp_type, reinterpret_cast<const uint8_t*>(data.data()), data.size(), &actual);
            if (actual != fp) {
              r = Status::Corruption(fmt::format("its {} bytes hash to {}", data.size(), actual.ToHex()));
            }
          }
          if (!r.ok()) {
            info.bad_fps.push_back(fp);
            CheckProblem p;
            p.kind = "chunk-corrupt";
            p.message = fmt::format("chunk {} in container {} is damaged: {}", fp.ToHex(), id, r.ToString());
            p.container = id;
            p.fingerprint = fp.ToHex();
            p.repair = "chunk data is never repaired";
            report->problems.push_back(std::move(p));
            continue;
          }
          report->chunk_bytes_raw += data.size();
        }
      }
    }
    containers_[id] = std::move(info);
    progress.Add();
  }
  return Status::OK();
}

Status StoreChecker::CheckChunksOneByOne(ContainerId id, const Status& container_error, ContainerInfo* info,
                                         CheckReport* report) {
  ChunkStore* store = system_->chunk_store();
  // The metadata alone, verified by its own checksum.
  std::vector<Fingerprint> fps;
  DEDUPV1_RETURN_IF_ERROR(store->GetFingerprints(id, &fps));
  std::sort(fps.begin(), fps.end());
  info->state = ContainerState::kOk;
  info->fps = fps;
  report->containers_ok++;
  report->chunks += fps.size();
  // Each chunk is read alone and checked against its fingerprint
  // (ChunkStore::ReadChunk does both when the container is not cached whole).
  for (const Fingerprint& fp : fps) {
    std::string data;
    Status r = store->ReadChunk(id, fp, &data);
    if (r.ok()) {
      report->chunk_bytes_raw += data.size();
      continue;
    }
    info->bad_fps.push_back(fp);
    CheckProblem p;
    p.kind = "chunk-corrupt";
    p.message = fmt::format("chunk {} in container {} is damaged: {} ({}; its other chunks match their "
                            "fingerprints)",
                            fp.ToHex(), id, r.ToString(), container_error.message());
    p.container = id;
    p.fingerprint = fp.ToHex();
    p.repair = "chunk data is never repaired; mappings naming the chunk are relocated if a good copy exists";
    report->problems.push_back(std::move(p));
  }
  if (info->bad_fps.empty()) {
    // The damage lies outside every chunk (e.g. in the checksum itself): no
    // data is lost, but the container cannot be read whole (GC merges do).
    CheckProblem p;
    p.kind = "container-corrupt";
    p.message = fmt::format("container {}: {}; every one of its {} chunks matches its fingerprint, so no data is "
                            "lost",
                            id, container_error.ToString(), fps.size());
    p.container = id;
    p.repair = "chunk data is never repaired";
    report->problems.push_back(std::move(p));
  }
  return Status::OK();
}

bool StoreChecker::ChunkReadable(ContainerId id, const Fingerprint& fp, std::string* why) const {
  if (id == kNoContainer) {
    *why = "it names no container (id 0)";
    return false;
  }
  // A merged container answers to the ids of the containers it replaced.
  auto it = containers_.find(system_->chunk_store()->Resolve(id));
  if (it == containers_.end()) {
    *why = fmt::format("container {} does not exist", id);
    return false;
  }
  const ContainerInfo& info = it->second;
  if (info.state != ContainerState::kOk) {
    *why = fmt::format("container {} cannot be read", id);
    return false;
  }
  if (!std::binary_search(info.fps.begin(), info.fps.end(), fp)) {
    *why = fmt::format("container {} does not hold the chunk", id);
    return false;
  }
  if (std::binary_search(info.bad_fps.begin(), info.bad_fps.end(), fp)) {
    *why = fmt::format("the chunk's data in container {} is damaged", id);
    return false;
  }
  return true;
}

std::unordered_map<Fingerprint, ContainerId, FingerprintHasher> StoreChecker::FindGoodCopies(
    const std::unordered_set<Fingerprint, FingerprintHasher>& wanted) const {
  std::unordered_map<Fingerprint, ContainerId, FingerprintHasher> copies;
  if (wanted.empty()) return copies;
  for (const auto& [id, info] : containers_) {
    if (info.state != ContainerState::kOk) continue;
    for (const Fingerprint& fp : info.fps) {
      if (wanted.count(fp) == 0 || copies.count(fp) != 0) continue;
      if (std::binary_search(info.bad_fps.begin(), info.bad_fps.end(), fp)) continue;
      copies[fp] = id;
    }
  }
  return copies;
}

Status StoreChecker::CheckChunkIndex(CheckReport* report) {
  ChunkIndex* index = system_->chunk_index();
  // Entries still in memory go to the table first, so the table scan below
  // sees every entry (the open may have re-imported containers).
  Status s = index->Flush();
  if (!s.ok()) return s.WithContext("flush the chunk index");
  uint64_t pages = 0;
  s = index->Verify(&pages);
  report->index_pages = pages;
  if (!s.ok()) {
    CheckProblem p;
    p.kind = "index-corrupt";
    p.message = "chunk index table: " + s.ToString();
    p.repair = "not repairable by dedupv1_check; the entries of a damaged page are not scanned";
    report->problems.push_back(std::move(p));
  } else {
    report->index_pages_verified = true;
  }

  // Lookup failures (a damaged page on the probe path) are reported once, not
  // once per chunk.
  uint64_t lookup_errors = 0;
  Status first_lookup_error;
  auto lookup = [&](const Fingerprint& fp, ChunkIndexEntry* entry) -> Status {
    Status l = index->Lookup(fp, entry);
    if (!l.ok() && !l.IsNotFound()) {
      if (lookup_errors++ == 0) first_lookup_error = l;
    }
    return l;
  };

  // Every entry must name a good container that holds its chunk.
  struct Dangling {
    Fingerprint fp;
    ChunkIndexEntry entry;
    std::string why;
  };
  std::vector<Dangling> dangling;
  if (report->index_pages_verified) {
    std::vector<Fingerprint> fps;
    s = index->ForEachFingerprint([&fps](const Fingerprint& fp) { fps.push_back(fp); });
    if (!s.ok()) return s.WithContext("scan the chunk index");
    std::sort(fps.begin(), fps.end());
    fps.erase(std::unique(fps.begin(), fps.end()), fps.end());
    report->index_entries = fps.size();
    Progress progress("index entries", fps.size(), "entries", options_.progress);
    for (const Fingerprint& fp : fps) {
      progress.Add();
      ChunkIndexEntry entry;
      if (!lookup(fp, &entry).ok()) continue;
      if (entry.usage_count != 0) report->index_usage_nonzero++;
      entries_[fp] = entry;
      std::string why;
      if (!ChunkReadable(entry.container, fp, &why)) dangling.push_back({fp, entry, why});
    }
  }

  // Every chunk of a good container must have an entry.
  std::unordered_set<Fingerprint, FingerprintHasher> scheduled;
  Progress progress("chunk coverage", report->chunks, "chunks", options_.progress);
  for (const auto& [id, info] : containers_) {
    if (info.state != ContainerState::kOk) continue;
    for (const Fingerprint& fp : info.fps) {
      progress.Add();
      if (std::binary_search(info.bad_fps.begin(), info.bad_fps.end(), fp)) continue;
      ChunkIndexEntry entry;
      Status l = lookup(fp, &entry);
      if (l.ok()) {
        std::string why;
        // An entry naming another good copy is fine (the chunk was stored
        // twice, e.g. after a crash); a bad one is reported as dangling.
        if (system_->chunk_store()->Resolve(entry.container) != id && ChunkReadable(entry.container, fp, &why)) {
          report->duplicate_copies++;
        }
        continue;
      }
      if (!l.IsNotFound() || !scheduled.insert(fp).second) continue;
      // Garbage awaiting GC if no block mapping references it; decided in
      // CheckUsage, after the block mappings are read.
      missing_.emplace_back(fp, id);
    }
  }
  progress.Finish();
  if (lookup_errors > 0) {
    CheckProblem p;
    p.kind = "index-corrupt";
    p.message = fmt::format("{} chunk index lookups failed; first: {}", lookup_errors, first_lookup_error.ToString());
    p.repair = "not repairable by dedupv1_check";
    report->problems.push_back(std::move(p));
  }

  // Dangling entries come in groups (every entry of a lost container): one
  // problem per container and reason, listing the fingerprints.
  std::unordered_set<Fingerprint, FingerprintHasher> wanted;
  for (const auto& d : dangling) wanted.insert(d.fp);
  const auto copies = FindGoodCopies(wanted);
  std::map<std::pair<ContainerId, std::string>, std::vector<const Dangling*>> groups;
  for (const auto& d : dangling) groups[{d.entry.container, d.why}].push_back(&d);
  for (const auto& [key, members] : groups) {
    CheckProblem p;
    p.kind = "index-entry-dangling";
    p.message = fmt::format("{} chunk index entr{} name{} container {}, but {}", members.size(),
                            members.size() == 1 ? "y" : "ies", members.size() == 1 ? "s" : "", key.first,
                            key.second);
    if (members.size() == 1) p.message += " (chunk " + members[0]->fp.ToHex() + ")";
    p.container = key.first;
    p.repairable = true;
    size_t repointed = 0;
    for (const Dangling* d : members) {
      p.fingerprints.push_back(d->fp.ToHex());
      IndexRepair r;
      r.op.fp = d->fp;
      r.problem = report->problems.size();
      auto it = copies.find(d->fp);
      if (it != copies.end()) {
        r.op.entry = d->entry;
        r.op.entry.container = it->second;
        r.op.entry.committed = true;
        repointed++;
      } else {
        r.op.erase = true;
      }
      index_repairs_.push_back(r);
    }
    if (members.size() == 1) p.fingerprint = members[0]->fp.ToHex();
    if (repointed > 0) {
      p.repair = fmt::format("point {} entr{} at containers holding a good copy", repointed,
                             repointed == 1 ? "y" : "ies");
    }
    if (repointed < members.size()) {
      p.repair += fmt::format("{}erase {} entr{} without a good copy, so those chunks are stored again when next "
                              "written instead of deduplicated against lost data",
                              repointed > 0 ? "; " : "", members.size() - repointed,
                              members.size() - repointed == 1 ? "y" : "ies");
    }
    report->problems.push_back(std::move(p));
  }
  return Status::OK();
}

Status StoreChecker::CheckBlockMappings(CheckReport* report) {
  BlockIndex* index = system_->block_index();
  BlockStoreScan scan;
  Status s = index->VerifyStore(&scan);
  if (!s.ok()) return s.WithContext("scan the block index store");
  report->block_records = scan.records;
  report->old_format_records = scan.old_format;
  ReportStoreProblems(scan, report);

  std::map<uint32_t, const VolumeEntry*> volumes;
  for (const VolumeEntry& v : volumes_) volumes[v.id] = &v;
  // Blocks a store problem concerns are skipped by the walk (unless a newer
  // mapping is in memory) and checked below from their newest record.
  std::set<BlockId> seen_concerned;
  std::set<std::string> reported_keys;
  for (const BlockStoreProblem& p : scan.problems) reported_keys.insert(p.key);
  Progress progress("block index", scan.records, "records", options_.progress);
  s = index->ForEachBlock(
      [&](const BlockId& id, const BlockMapping& mapping) {
        progress.Add();
        if (scan.blocks.count(id) != 0) seen_concerned.insert(id);
        auto v = volumes.find(id.volume);
        if (v != volumes.end()) {
          CheckMapping(*v->second, id.block, mapping, report);
        } else {
          NoteUnknownVolume(id, mapping);
        }
        return true;
      },
      [&](const std::string& key, const Status& why) {
        progress.Add();
        BlockId id;
        const bool well_formed = DecodeBlockKey(key, &id);
        if (reported_keys.count(key) != 0 || (well_formed && scan.blocks.count(id) != 0)) return;
        // Damaged since the scan, or a record whose items do not parse.
        report->unreadable_records++;
        CheckProblem p;
        p.kind = "block-index-corrupt";
        p.message = well_formed ? fmt::format("block {}: {}", BlockIdString(id), why.ToString()) : why.ToString();
        p.repair = "cannot be repaired: the block's mapping is unknown and its reads fail";
        report->problems.push_back(std::move(p));
      });
  progress.Finish();
  if (!s.ok()) return s.WithContext("walk the block index");
  for (const auto& [id, r] : scan.blocks) {
    if (seen_concerned.count(id) != 0 || !r.has_newest) continue;
    BlockMapping mapping;
    Status parsed = BlockMapping::Parse(r.newest, id, &mapping);
    if (!parsed.ok()) {
      report->unreadable_records++;
      CheckProblem p;
      p.kind = "block-index-corrupt";
      p.message = parsed.ToString();
      p.repair = "cannot be repaired: the block's mapping is unknown and its reads fail";
      report->problems.push_back(std::move(p));
      continue;
    }
    auto v = volumes.find(id.volume);
    if (v != volumes.end()) {
      CheckMapping(*v->second, id.block, mapping, report);
    } else {
      NoteUnknownVolume(id, mapping);
    }
  }
  ReportUnknownVolumes(report);
  std::unordered_set<Fingerprint, FingerprintHasher> wanted;
  for (const auto& b : bad_blocks_) {
    for (const auto& piece : b.pieces) wanted.insert(piece.fp);
  }
  const auto copies = FindGoodCopies(wanted);
  for (const auto& b : bad_blocks_) ReportBadPieces(*b.volume, b.block, b.pieces, copies, report);
  return Status::OK();
}

void StoreChecker::CheckMapping(const VolumeEntry& volume, uint64_t block, const BlockMapping& mapping,
                                CheckReport* report) {
  report->blocks_mapped++;
  std::vector<BadPiece> pieces;
  uint32_t pos = 0;
  for (size_t i = 0; i < mapping.items().size(); i++) {
    const BlockMappingItem& item = mapping.items()[i];
    if (item.IsZero()) {
      report->zero_ranges++;
    } else {
      report->chunk_references++;
      // The usage rule: a block counts each fingerprint once.
      bool first_in_block = true;
      for (size_t k = 0; k < i; k++) {
        if (!mapping.items()[k].IsZero() && mapping.items()[k].fp == item.fp) first_in_block = false;
      }
      Reference& ref = references_[item.fp];
      if (first_in_block) ref.blocks++;
      std::string why;
      if (!ChunkReadable(item.container, item.fp, &why)) {
        pieces.push_back({pos, item.size, i, item.fp, item.container, why});
      } else if (ref.copy == kNoContainer) {
        ref.copy = system_->chunk_store()->Resolve(item.container);
      }
    }
    pos += item.size;
  }
  if (!pieces.empty()) bad_blocks_.push_back({&volume, block, std::move(pieces)});
}

void StoreChecker::NoteUnknownVolume(const BlockId& id, const BlockMapping& mapping) {
  for (const BlockMappingItem& item : mapping.items()) {
    if (!item.IsZero()) {
      unknown_volume_blocks_[id.volume]++;
      return;
    }
  }
}

void StoreChecker::ReportUnknownVolumes(CheckReport* report) {
  for (const auto& [volume, blocks] : unknown_volume_blocks_) {
    // Their chunks are not recounted: as unread records, they keep every
    // count from being lowered and every entry from being erased.
    report->unreadable_records += blocks;
    CheckProblem p;
    p.kind = "block-volume-unknown";
    p.message = fmt::format("{} block mapping{} of volume id {} reference chunks, but the volume table ({}) does "
                            "not list the volume",
                            blocks, blocks == 1 ? "" : "s", volume,
                            JoinPath(system_->options().data_dir, "volumes"));
    p.volume_id = volume;
    p.repair = fmt::format("cannot be repaired by dedupv1_check: add the volume's line ('{} NAME SIZE') to the "
                           "volume table and check again; until then no usage count is lowered",
                           volume);
    report->problems.push_back(std::move(p));
  }
}

void StoreChecker::ReportStoreProblems(const BlockStoreScan& scan, CheckReport* report) {
  const std::string store = "block index " + system_->options().block_index.path;
  for (const BlockStoreProblem& sp : scan.problems) {
    CheckProblem p;
    std::vector<BlockId> concerned;
    std::string repair;
    switch (sp.kind) {
      case BlockStoreProblem::Kind::kUnreadable:
        report->unreadable_records++;
        p.kind = "block-index-corrupt";
        p.message = fmt::format("{}: {}", store, DescribeBlockStoreProblem(sp));
        p.repair = "cannot be repaired: the block's mapping is unknown and its reads fail; the usage counts of the "
                   "chunks it may reference are not lowered";
        break;
      case BlockStoreProblem::Kind::kMalformedKey:
        p.kind = "block-key-malformed";
        p.message = fmt::format("{}: {}", store, DescribeBlockStoreProblem(sp));
        if (sp.has_owner) {
          concerned = {sp.owner};
          repair = fmt::format("remove the record; block {} gets its newest record back", BlockIdString(sp.owner));
        } else {
          report->unreadable_records++;
          p.repair = "cannot be repaired: the record's block is unknown";
        }
        break;
      case BlockStoreProblem::Kind::kDisplaced:
        p.kind = "block-record-displaced";
        p.message = fmt::format("{}: {} (a damaged key: block {} reads fail and so do those of block {})", store,
                                DescribeBlockStoreProblem(sp), BlockIdString(sp.owner), BlockIdString(sp.block));
        concerned = {sp.block, sp.owner};
        repair = fmt::format("put block {}'s newest record back under its key, remove the stray one from key {}",
                             BlockIdString(sp.owner), BlockIdString(sp.block));
        break;
      case BlockStoreProblem::Kind::kDuplicateKey:
        p.kind = "block-key-duplicate";
        p.message = fmt::format("{}: {}", store, DescribeBlockStoreProblem(sp));
        concerned = {sp.block};
        repair = "keep the newest record of the block, remove the others";
        break;
      case BlockStoreProblem::Kind::kOutOfOrder:
        p.kind = "block-key-out-of-order";
        p.message = fmt::format("{}: {}", store, DescribeBlockStoreProblem(sp));
        concerned = {sp.block, sp.previous};
        repair = "store the records of both keys again, in key order";
        break;
    }
    if (sp.kind != BlockStoreProblem::Kind::kMalformedKey) {
      p.has_block = true;
      p.volume_id = sp.block.volume;
      p.block = sp.block.block;
      p.length = block_size_;
      p.volume_offset = sp.block.block * block_size_;
      for (const VolumeEntry& v : volumes_) {
        if (v.id == sp.block.volume) p.volume = v.name;
      }
    }
    if (!concerned.empty()) {
      std::string unrepairable;
      for (const BlockId& id : concerned) {
        auto r = scan.blocks.find(id);
        if (r != scan.blocks.end() && !r->second.unrepairable.empty()) {
          unrepairable = fmt::format("block {}: {}", BlockIdString(id), r->second.unrepairable);
        }
      }
      if (unrepairable.empty()) {
        p.repairable = true;
        p.repair = repair;
      } else {
        report->unreadable_records++;  // which record is the block's is unknown
        p.repair = "cannot be repaired: " + unrepairable;
      }
      store_problems_.emplace_back(report->problems.size(), std::move(concerned));
    }
    report->problems.push_back(std::move(p));
  }
}

Status StoreChecker::RepairBlockIndex(CheckReport* report) {
  if (store_problems_.empty()) return Status::OK();
  std::vector<BlockId> repaired;
  BlockStoreScan after;
  Status s = system_->block_index()->RepairStore(&repaired, &after);
  std::set<BlockId> done(repaired.begin(), repaired.end());
  for (const auto& [problem, blocks] : store_problems_) {
    CheckProblem& p = report->problems[problem];
    if (!p.repairable) continue;
    bool all = true;
    for (const BlockId& id : blocks) all = all && done.count(id) != 0;
    if (all) {
      p.repaired = true;
    } else {
      p.repair += s.ok() ? "; repair failed: the store changed or the block could not be repaired"
                         : "; repair failed: " + s.ToString();
    }
  }
  return s;
}

void StoreChecker::ReportBadPieces(const VolumeEntry& volume, uint64_t block, const std::vector<BadPiece>& pieces,
                                   const std::unordered_map<Fingerprint, ContainerId, FingerprintHasher>& copies,
                                   CheckReport* report) {
  const uint64_t block_start = block * block_size_;
  auto fill_block = [&](CheckProblem* p, uint32_t offset, uint32_t length) {
    p->has_block = true;
    p->volume = volume.name;
    p->volume_id = volume.id;
    p->block = block;
    p->offset = offset;
    p->length = length;
    p->volume_offset = block_start + offset;
  };

  Relocation relocation;
  relocation.block = BlockId{volume.id, block};
  std::vector<const BadPiece*> lost;
  std::string moved;
  for (const BadPiece& piece : pieces) {
    auto it = copies.find(piece.fp);
    if (it == copies.end()) {
      lost.push_back(&piece);
      continue;
    }
    relocation.items.emplace_back(piece.item, it->second);
    moved += fmt::format("{}bytes [{}, {}) chunk {}: {} -> container {}", moved.empty() ? "" : "; ", piece.offset,
                         piece.offset + piece.size, piece.fp.ToHex(), piece.why, it->second);
  }
  if (!relocation.items.empty()) {
    CheckProblem p;
    p.kind = "mapping-relocatable";
    p.message = fmt::format("volume {} (id {}) block {}: {} piece{} point at unreadable chunks that have a good "
                            "copy elsewhere: {}",
                            volume.name, volume.id, block, relocation.items.size(),
                            relocation.items.size() == 1 ? "" : "s", moved);
    fill_block(&p, 0, block_size_);
    p.repairable = true;
    p.repair = "point the mapping items at the good copies";
    report->problems.push_back(std::move(p));
    relocation.problem = report->problems.size() - 1;
    relocations_.push_back(std::move(relocation));
  }
  // Contiguous lost pieces form one unrecoverable byte range.
  for (size_t i = 0; i < lost.size();) {
    size_t j = i + 1;
    uint32_t end = lost[i]->offset + lost[i]->size;
    while (j < lost.size() && lost[j]->offset == end) {
      end += lost[j]->size;
      j++;
    }
    const BadPiece& first = *lost[i];
    CheckProblem p;
    p.kind = "mapping-unrecoverable";
    p.message = fmt::format("volume {} (id {}) block {} bytes [{}, {}) (volume bytes [{}, {})): chunk {}: {}{}",
                            volume.name, volume.id, block, first.offset, end, block_start + first.offset,
                            block_start + end, first.fp.ToHex(), first.why,
                            j - i > 1 ? fmt::format(" (and {} more chunk{})", j - i - 1, j - i > 2 ? "s" : "") : "");
    fill_block(&p, first.offset, end - first.offset);
    p.container = first.container;
    p.fingerprint = first.fp.ToHex();
    p.repair = "cannot be repaired: no good copy of the data exists and reads of the range fail; to restore "
               "it run --repair, unmap the range, then write the data again (rewritten in place without the "
               "unmap it would deduplicate against the lost chunk)";
    report->problems.push_back(std::move(p));
    i = j;
  }
}

void StoreChecker::Recount(CheckReport* report) {
  report->referenced_chunks = references_.size();
  std::unordered_set<Fingerprint, FingerprintHasher> unreferenced;
  for (const auto& [id, info] : containers_) {
    for (const Fingerprint& fp : info.fps) {
      if (references_.count(fp) == 0) unreferenced.insert(fp);
    }
  }
  report->unreferenced_chunks = unreferenced.size();
}

void StoreChecker::CheckUsage(CheckReport* report) {
  // Chunks without an entry: lost entries if referenced, else garbage.
  for (const auto& [fp, id] : missing_) {
    auto ref = references_.find(fp);
    if (ref == references_.end()) {
      report->garbage_chunks++;
      continue;
    }
    CheckProblem p;
    p.kind = "index-entry-missing";
    p.message = fmt::format("chunk {} in container {} has no chunk index entry", fp.ToHex(), id);
    p.container = id;
    p.fingerprint = fp.ToHex();
    p.repairable = true;
    // The copy a mapping names if it is good: with the entry on another
    // copy no mapping names, that copy would be kept live for nothing.
    const ContainerId copy = ref->second.copy != kNoContainer ? ref->second.copy : id;
    p.repair = fmt::format("re-add the entry for container {}", copy);
    report->problems.push_back(std::move(p));
    IndexRepair r;
    r.op.fp = fp;
    r.op.entry.container = copy;
    r.op.entry.committed = true;
    r.op.entry.usage_count = static_cast<uint32_t>(ref->second.blocks);
    r.problem = report->problems.size() - 1;
    index_repairs_.push_back(r);
  }
  // Every entry's usage count must equal the recount.
  report->usage_checked = report->index_pages_verified;
  if (!report->usage_checked) return;
  // Entries a dangling repair re-points or erases already: a count repair
  // goes into that change, never beside it (as a later put it would name
  // the lost container again).
  std::unordered_map<Fingerprint, size_t, FingerprintHasher> planned;
  for (size_t i = 0; i < index_repairs_.size(); i++) planned[index_repairs_[i].op.fp] = i;
  for (const auto& [fp, entry] : entries_) {
    auto ref = references_.find(fp);
    const uint64_t recount = ref == references_.end() ? 0 : ref->second.blocks;
    if (entry.usage_count == recount) {
      report->usage_matching++;
      continue;
    }
    report->usage_mismatches++;
    CheckProblem p;
    p.kind = "usage-count-mismatch";
    p.message = fmt::format("chunk {} has usage count {} but {} block mapping{} reference it", fp.ToHex(),
                            entry.usage_count, recount, recount == 1 ? "" : "s");
    p.container = entry.container;
    p.fingerprint = fp.ToHex();
    if (recount < entry.usage_count && report->unreadable_records > 0) {
      // The unread records may be the missing references: lowering the
      // count would let GC delete a chunk they still need.
      p.held_back = true;
      p.repair = HeldBackReason(*report);
      report->problems.push_back(std::move(p));
      continue;
    }
    auto dangling = planned.find(fp);
    if (dangling != planned.end()) {
      IndexRepair& r = index_repairs_[dangling->second];
      if (!r.op.erase) r.op.entry.usage_count = static_cast<uint32_t>(recount);
      continue;  // reported (and repaired) as index-entry-dangling
    }
    p.repairable = true;
    p.repair = fmt::format("set the usage count to {}", recount);
    report->problems.push_back(std::move(p));
    IndexRepair r;
    r.op.fp = fp;
    r.op.entry = entry;
    r.op.entry.usage_count = static_cast<uint32_t>(recount);
    r.problem = report->problems.size() - 1;
    index_repairs_.push_back(r);
  }
}

Status StoreChecker::RepairMappings(CheckReport* report) {
  BlockIndex* index = system_->block_index();
  Status first;
  for (const Relocation& r : relocations_) {
    CheckProblem& p = report->problems[r.problem];
    BlockMapping mapping;
    Status s = index->Get(r.block, &mapping);
    std::vector<BlockMappingItem> items;
    if (s.ok()) {
      items = mapping.items();
      for (const auto& [i, container] : r.items) {
        if (i < items.size()) items[i].container = container;
      }
      BlockMapping repaired(mapping.block_size());
      s = repaired.Overlay(0, items);
      // Not logged: the version must order it after every event already in
      // the log and before every later one (recovery applies an event only
      // if it is newer than the stored mapping). The newest logged id does
      // both; old version + 1 could equal a later event's id.
      repaired.set_version(std::max(mapping.version(), system_->log()->last_id()));
      if (s.ok()) s = index->Put(r.block, repaired);
    }
    if (s.ok()) {
      p.repaired = true;
      p.repair = "mapping items now point at the good copies";
    } else {
      p.repair = "repair failed: " + s.ToString();
      if (first.ok()) first = s;
    }
  }
  return first;
}

namespace {

// A table that cannot take every entry |repairs| may add (a rebuild adds
// them all) with room to spare is opened again at a size that can, and its
// growth begun: once it has, Apply puts new entries into the larger table
// while the old one's entries move over in the background
// (index/growable_hash_table.h); the engine finishes the move if the tool
// stops first. "Room to spare": below chunk-index.grow-at, where the engine
// would grow the table anyway, and where a bucket's probe seldom overflows.
Status MakeRoom(ChunkIndexOptions options, Env* env, const std::vector<IndexRepair>& repairs,
                std::unique_ptr<ChunkTable>* table) {
  uint64_t puts = 0;
  for (const IndexRepair& r : repairs) puts += r.op.erase ? 0 : 1;
  const uint64_t need = (*table)->entry_count() + puts;
  const uint64_t capacity = (*table)->capacity();
  const double limit = options.grow_at > 0 && options.grow_at < 1 ? options.grow_at : 1.0;
  if (capacity == 0 || static_cast<double>(need) <= limit * static_cast<double>(capacity)) return Status::OK();
  const uint64_t bytes = (*table)->growth().table_bytes;
  // Half full after the repairs.
  const uint64_t want =
      static_cast<uint64_t>(2.0 * static_cast<double>(bytes) * static_cast<double>(need) / static_cast<double>(capacity)) +
      1;
  table->reset();
  options.table.size_bytes = std::max(options.table.size_bytes, want);
  options.grow_in_background = true;
  DEDUPV1_RETURN_IF_ERROR(ChunkIndex::OpenTable(options, env, table));
  ChunkTableGrowth g = (*table)->growth();
  // Open asks for the larger size only when no growth is under way; one
  // that is (a stopped engine's) may aim lower: this request queues behind it.
  if (!g.requested && (*table)->capacity() < need) DEDUPV1_RETURN_IF_ERROR((*table)->Grow(want));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
  while ((*table)->capacity() < need) {
    g = (*table)->growth();
    // A growth that failed to begin stays requested (and is retried); its
    // error is cleared by the next step that works.
    if (!g.growing && !g.last_error.empty()) return Status::IOError(g.last_error);
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::Aborted("the growth to " + std::to_string(want) + " bytes did not begin within an hour" +
                             (g.last_error.empty() ? "" : ": " + g.last_error));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::OK();
}

}  // namespace

Status ApplyIndexRepairs(const Options& options, Env* env, const std::vector<IndexRepair>& repairs,
                         CheckReport* report) {
  if (repairs.empty()) return Status::OK();
  std::unique_ptr<ChunkTable> table;
  ChunkIndexOptions index_options = options.chunk_index;
  index_options.grow_in_background = false;  // a growth under way waits for the engine
  Status s = ChunkIndex::OpenTable(index_options, env, &table);
  if (!s.ok()) return s.WithContext("open the chunk index table for repair");
  s = MakeRoom(index_options, env, repairs, &table);
  if (!s.ok()) return s.WithContext("grow the chunk index table for repair");
  // The saved bloom filter does not know the re-added fingerprints: it goes
  // before the first entry does, so no open pairs it with the repaired
  // index; without the file the next open rebuilds the filter from the index.
  const std::string bloom = JoinPath(options.data_dir, "bloom");
  if (env->FileExists(bloom)) {
    DEDUPV1_RETURN_IF_ERROR(env->DeleteFile(bloom));
    DEDUPV1_RETURN_IF_ERROR(env->SyncDir(options.data_dir));
  }
  for (size_t begin = 0; begin < repairs.size(); begin += kIndexRepairBatch) {
    const size_t end = std::min(repairs.size(), begin + kIndexRepairBatch);
    std::vector<ChunkTable::Op> ops;
    for (size_t i = begin; i < end; i++) ops.push_back(repairs[i].op);
    s = table->Apply(ops);
    if (!s.ok()) {
      for (size_t i = begin; i < repairs.size(); i++) {
        report->problems[repairs[i].problem].repair += "; repair failed: " + s.ToString();
      }
      return s.WithContext("repair the chunk index");
    }
    for (size_t i = begin; i < end; i++) report->problems[repairs[i].problem].repaired = true;
  }
  DEDUPV1_RETURN_IF_ERROR(table->Sync());
  table.reset();
  return Status::OK();
}

}  // namespace tools
}  // namespace dedupv1

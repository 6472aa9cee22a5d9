#include "target/tools/store_checker.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/fingerprint.h"
#include "index/block_mapping.h"
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
  report->volumes = volumes_.size();
  DEDUPV1_RETURN_IF_ERROR(CheckContainers(report));
  DEDUPV1_RETURN_IF_ERROR(CheckChunkIndex(report));
  DEDUPV1_RETURN_IF_ERROR(CheckBlockMappings(report));
  Recount(report);
  CheckUsage(report);
  return Status::OK();
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
  struct BadBlock {
    const VolumeEntry* volume;
    uint64_t block;
    std::vector<BadPiece> pieces;
  };
  std::vector<BadBlock> bad_blocks;
  for (const VolumeEntry& volume : volumes_) {
    const uint64_t blocks = (volume.size + block_size_ - 1) / block_size_;
    Progress progress("volume " + volume.name, blocks, "blocks", options_.progress);
    Status s = index->ForEachBlock(volume.id, [&](uint64_t block, const BlockMapping& mapping) {
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
          if (first_in_block) references_[item.fp]++;
          std::string why;
          if (!ChunkReadable(item.container, item.fp, &why)) {
            pieces.push_back({pos, item.size, i, item.fp, item.container, why});
          }
        }
        pos += item.size;
      }
      if (!pieces.empty()) bad_blocks.push_back({&volume, block, std::move(pieces)});
      progress.Set(std::min(block + 1, blocks));
      return true;
    });
    progress.Finish();
    if (!s.ok()) {
      CheckProblem p;
      p.kind = "block-index-corrupt";
      p.message = fmt::format("block mappings of volume {} (id {}) cannot all be read: {}", volume.name, volume.id,
                              s.ToString());
      p.repair = "not repairable by dedupv1_check; blocks after the damaged record were not checked";
      report->problems.push_back(std::move(p));
    }
  }
  std::unordered_set<Fingerprint, FingerprintHasher> wanted;
  for (const auto& b : bad_blocks) {
    for (const auto& piece : b.pieces) wanted.insert(piece.fp);
  }
  const auto copies = FindGoodCopies(wanted);
  for (const auto& b : bad_blocks) ReportBadPieces(*b.volume, b.block, b.pieces, copies, report);
  return Status::OK();
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
    p.repair = fmt::format("re-add the entry for container {}", id);
    report->problems.push_back(std::move(p));
    IndexRepair r;
    r.op.fp = fp;
    r.op.entry.container = id;
    r.op.entry.committed = true;
    r.op.entry.usage_count = static_cast<uint32_t>(ref->second);
    r.problem = report->problems.size() - 1;
    index_repairs_.push_back(r);
  }
  // Every entry's usage count must equal the recount.
  report->usage_checked = report->index_pages_verified;
  if (!report->usage_checked) return;
  for (const auto& [fp, entry] : entries_) {
    auto ref = references_.find(fp);
    const uint64_t recount = ref == references_.end() ? 0 : ref->second;
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
      repaired.set_version(mapping.version() + 1);
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

Status ApplyIndexRepairs(const Options& options, Env* env, const std::vector<IndexRepair>& repairs,
                         CheckReport* report) {
  if (repairs.empty()) return Status::OK();
  std::unique_ptr<DiskHashTable> table;
  Status s = DiskHashTable::Open(options.chunk_index.table, env, &table);
  if (!s.ok()) return s.WithContext("open the chunk index table for repair");
  for (size_t begin = 0; begin < repairs.size(); begin += kIndexRepairBatch) {
    const size_t end = std::min(repairs.size(), begin + kIndexRepairBatch);
    std::vector<DiskHashTable::Op> ops;
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
  // The saved bloom filter does not know the re-added fingerprints; without
  // the file the next open rebuilds the filter from the chunk index.
  const std::string bloom = JoinPath(options.data_dir, "bloom");
  if (env->FileExists(bloom)) DEDUPV1_RETURN_IF_ERROR(env->DeleteFile(bloom));
  return Status::OK();
}

}  // namespace tools
}  // namespace dedupv1

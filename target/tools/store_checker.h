// StoreChecker verifies an open, otherwise idle DedupSystem (dedupv1_check):
//  1. every container listed by the chunk store parses with good CRCs
//     (ChunkStore::GetFingerprints reads it through Container::Parse) and,
//     with verify_data, every chunk decompresses and matches its fingerprint;
//  2. every chunk-index page checks out (ChunkIndex::Verify), every index
//     entry's container exists and holds the chunk, and every chunk of a good
//     container has an index entry;
//  3. the block index store, walked whole in its own order
//     (BlockIndex::VerifyStore): every record must be readable, carry the id
//     of the block its key names (mapping format 2), and the keys must be
//     well formed and strictly increasing; then every block mapping item of
//     every volume in the volume table (zero items excepted) must name a
//     container that exists, is good and holds the chunk. A record that
//     cannot be read is reported and skipped: the walk goes on. A block
//     whose newest record sits under another key is checked (and counted)
//     from that record;
//  4. it recounts chunk references from the block mappings (a block counts a
//     fingerprint once, zero items not at all: core/engine/usage_counter.h) and
//     compares every index entry's usage count with the recount. A stored
//     chunk without an index entry is a problem only if a block mapping
//     references it; otherwise it is garbage awaiting GC (counted).
// Problems go to the CheckReport; Check fails only if checking itself cannot
// proceed. Memory: the sorted fingerprint list of every container (about 40
// bytes per stored chunk) plus one counter per referenced chunk.
//
// When any record could not be read, the recount is incomplete (those
// records may reference chunks): then no usage count is lowered and no
// index entry erased (the problems are reported as kept); counts are only
// raised and missing entries re-added. Lowering a count from incomplete
// information let the next GC round delete live data.
//
// A container whose data checksum fails but whose metadata is intact has
// each chunk verified against its fingerprint: only the damaged chunks are
// reported (chunk-corrupt) and treated as lost.
//
// Repairs (--repair) never touch chunk data:
//  - block index store records (RepairBlockIndex, system still open): each
//    block's newest readable record is put back under its own key and the
//    stray records removed (BlockIndex::RepairStore);
//  - a block-mapping item whose container is missing or damaged, or lacks the
//    chunk, is pointed at another good container holding the same
//    fingerprint if there is one (RepairMappings, system still open); without
//    such a copy the byte range is unrecoverable and only reported;
//  - chunk-index entries (ApplyIndexRepairs, after the system is closed):
//    a missing entry is re-added for the container holding the chunk; an
//    entry naming a bad container is re-pointed at a good copy, or erased if
//    there is none, so the chunk is stored again when next written instead of
//    deduplicated against lost data.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/engine/dedup_system.h"
#include "core/base/env.h"
#include "core/engine/options.h"
#include "index/block_index.h"
#include "index/block_store_scan.h"
#include "index/disk_hash_table.h"
#include "target/tools/check_report.h"
#include "target/tools/volume_table.h"

namespace dedupv1 {
namespace tools {

struct CheckOptions {
  bool verify_data = true;  // decompress and re-fingerprint every chunk
  bool progress = false;    // progress bars on stderr
};

// A chunk-index change --repair makes after the system is closed, and the
// report problem it fixes.
struct IndexRepair {
  DiskHashTable::Op op;
  size_t problem = 0;
};

class StoreChecker {
 public:
  StoreChecker(DedupSystem* system, std::vector<VolumeEntry> volumes, const CheckOptions& options);

  // Runs every check; fills |report| (counts and problems).
  Status Check(CheckReport* report);

  // With the system open, after Check and before RepairMappings: puts the
  // block index store's displaced, repeated and out-of-order records right
  // and marks those problems repaired.
  Status RepairBlockIndex(CheckReport* report);

  // With the system open, after Check: rewrites the block mappings whose
  // items can be pointed at a good copy of their chunk, and marks those
  // problems repaired. Returns the first failure (the rest is still tried).
  Status RepairMappings(CheckReport* report);

  // Chunk-index changes for ApplyIndexRepairs, known after Check.
  const std::vector<IndexRepair>& index_repairs() const { return index_repairs_; }

 private:
  enum class ContainerState { kOk, kCorrupt, kUnreadable };
  struct ContainerInfo {
    ContainerState state = ContainerState::kOk;
    std::string error;
    std::vector<Fingerprint> fps;      // sorted
    std::vector<Fingerprint> bad_fps;  // sorted; chunks that failed data verification
  };
  // A piece of a block mapping whose chunk cannot be read where it points.
  struct BadPiece {
    uint32_t offset = 0;  // in the block
    uint32_t size = 0;
    size_t item = 0;      // index in the mapping's items
    Fingerprint fp;
    ContainerId container = kNoContainer;
    std::string why;
  };
  struct Relocation {
    BlockId block;
    std::vector<std::pair<size_t, ContainerId>> items;  // item index -> good container
    size_t problem = 0;
  };

  Status CheckContainers(CheckReport* report);
  // Verifies every chunk of container |id| (whose data checksum failed)
  // against its fingerprint; fills |info|.
  Status CheckChunksOneByOne(ContainerId id, const Status& container_error, ContainerInfo* info,
                             CheckReport* report);
  Status CheckChunkIndex(CheckReport* report);
  Status CheckBlockMappings(CheckReport* report);
  // Reports what the scan of the block index store found.
  void ReportStoreProblems(const BlockStoreScan& scan, CheckReport* report);
  // Checks one block's mapping and counts its references.
  void CheckMapping(const VolumeEntry& volume, uint64_t block, const BlockMapping& mapping, CheckReport* report);
  // With an incomplete recount: drops the index repairs that erase entries
  // and marks their problems held back.
  void HoldBackErasures(CheckReport* report);
  // Blocks of volume ids the volume table does not list, whose mappings
  // reference chunks: counted, then reported per volume id.
  void NoteUnknownVolume(const BlockId& id, const BlockMapping& mapping);
  void ReportUnknownVolumes(CheckReport* report);
  void Recount(CheckReport* report);
  void CheckUsage(CheckReport* report);

  // Whether |fp| is readable from container |id|; if not, |*why| says why.
  bool ChunkReadable(ContainerId id, const Fingerprint& fp, std::string* why) const;
  // For each wanted fingerprint, the first good container holding it.
  std::unordered_map<Fingerprint, ContainerId, FingerprintHasher> FindGoodCopies(
      const std::unordered_set<Fingerprint, FingerprintHasher>& wanted) const;
  // The incomplete-recount explanation for held-back repairs.
  std::string HeldBackReason(const CheckReport& report) const;
  void ReportBadPieces(const VolumeEntry& volume, uint64_t block, const std::vector<BadPiece>& pieces,
                       const std::unordered_map<Fingerprint, ContainerId, FingerprintHasher>& copies,
                       CheckReport* report);

  DedupSystem* const system_;
  const std::vector<VolumeEntry> volumes_;
  const CheckOptions options_;
  const uint32_t block_size_;

  std::map<ContainerId, ContainerInfo> containers_;
  // Per referenced fingerprint: the blocks referencing it, and the first
  // good container a mapping names for it (resolved; kNoContainer if every
  // copy named is bad). A re-added entry names that copy, so a copy no
  // mapping names (the chunk stored twice) stays garbage GC gives back.
  struct Reference {
    uint64_t blocks = 0;
    ContainerId copy = kNoContainer;
  };
  std::unordered_map<Fingerprint, Reference, FingerprintHasher> references_;
  std::unordered_map<Fingerprint, ChunkIndexEntry, FingerprintHasher> entries_;
  std::vector<std::pair<Fingerprint, ContainerId>> missing_;  // stored chunks without an entry
  std::vector<IndexRepair> index_repairs_;
  std::map<uint32_t, uint64_t> unknown_volume_blocks_;  // volume id -> blocks
  std::vector<Relocation> relocations_;
  struct BadBlock {
    const VolumeEntry* volume;
    uint64_t block;
    std::vector<BadPiece> pieces;
  };
  std::vector<BadBlock> bad_blocks_;
  // Block index store problems: the report's problem and the blocks that
  // must all be repaired for it to be.
  std::vector<std::pair<size_t, std::vector<BlockId>>> store_problems_;
};

// After DedupSystem::Close (the caller still holding the data directory
// lock): applies |repairs| to the chunk-index table in one batch, marks their
// problems repaired, and removes the saved bloom filter so the next open
// rebuilds it from the repaired index.
Status ApplyIndexRepairs(const Options& options, Env* env, const std::vector<IndexRepair>& repairs,
                         CheckReport* report);

}  // namespace tools
}  // namespace dedupv1

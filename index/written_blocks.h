// WrittenBlocks remembers which blocks may have a block mapping, so the block
// index answers "never written" for a fresh block from memory instead of
// searching the on-disk B+tree. A backup stream writes mostly fresh blocks,
// and each of those lookups would otherwise wait behind the store's
// write-back transactions.
//
// It is a sparse bitmap: pages of kBlocksPerPage bits, allocated when a block
// in their range is first marked, so a volume written only at its start or
// end costs little memory (one bit per block of written regions; 4 KiB per
// 8 GiB of volume at 256 KiB blocks).
//
// Invariant (kept by BlockIndex): every block with a mapping in the store or
// the auxiliary index is marked, and a marked block has one: the engine
// never removes a mapping from the store, and a repair that removes a
// block's only record unmarks it. So a marked block whose lookup finds no
// record shows a damaged store (BlockIndex::Get reports it).
//
// Not thread-safe: the BlockIndex guards it with its own lock.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "core/base/types.h"

namespace dedupv1 {

class WrittenBlocks {
 public:
  static constexpr uint64_t kBlocksPerPage = 1 << 15;

  void Mark(const BlockId& id);
  void Unmark(const BlockId& id);
  // False only if |id| was never marked.
  bool MayBeWritten(const BlockId& id) const;
  // Bytes of bitmap pages allocated.
  uint64_t MemoryBytes() const { return pages_.size() * sizeof(Page); }

 private:
  struct Page {
    uint64_t words[kBlocksPerPage / 64] = {};
  };
  struct PageKey {
    uint32_t volume;
    uint64_t page;
    bool operator==(const PageKey& o) const { return volume == o.volume && page == o.page; }
  };
  struct PageKeyHasher {
    size_t operator()(const PageKey& k) const {
      return std::hash<uint64_t>()(k.page * 0x9E3779B97F4A7C15ULL ^ k.volume);
    }
  };

  std::unordered_map<PageKey, std::unique_ptr<Page>, PageKeyHasher> pages_;
};

}  // namespace dedupv1

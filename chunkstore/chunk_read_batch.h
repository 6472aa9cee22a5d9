// ChunkReadBatch: the chunks one read request needs, read together
// (ChunkStore::ReadChunks) so that chunks stored next to each other cost one
// read of their container's range instead of one read each (each chunk is
// still verified by its fingerprint).
//
// Add the wanted chunks (a chunk added twice is read once), call
// ChunkStore::ReadChunks, then data(i) is chunk i's raw bytes. The views stay
// valid as long as the batch lives and is not reset; the batch pins what
// they point into (its own buffers, a cached container, or the caller's
// output where a chunk was placed). Not thread-safe.
//
// Placement: a reader that copies a chunk's bytes into its output tells
// where with Place(i, where chunk byte 0 would go, bytes copied). When the
// places of a chunk agree and the copies cover the whole chunk, every byte
// of [place, place + chunk size) is that chunk's: ReadChunks may then read it
// straight there (data(i) views it in place) instead of into a buffer the
// reader copies from, one copy fewer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chunkstore/container.h"
#include "core/base/fingerprint.h"
#include "core/base/types.h"

namespace dedupv1 {

class ChunkReadBatch {
 public:
  // Index of the chunk |fp| of container |id| in this batch (the existing
  // one if it was added before).
  size_t Add(ContainerId id, const Fingerprint& fp);
  size_t size() const { return items_.size(); }
  ContainerId container(size_t i) const { return items_[i].container; }
  const Fingerprint& fingerprint(size_t i) const { return items_[i].fp; }
  // The chunk's raw bytes, once ChunkStore::ReadChunks returned OK.
  std::string_view data(size_t i) const { return items_[i].data; }
  // The reader copies |bytes| of chunk i from |chunk_offset| on to |dst| in
  // its output (so chunk byte 0 would go |chunk_offset| bytes before |dst|).
  void Place(size_t i, uint8_t* dst, uint32_t chunk_offset, uint32_t bytes);
  void Reset();

  // For ChunkStore::ReadChunks: where chunk i may be read to when it has
  // |size| raw bytes (the places agreed, and the copies, which never overlap
  // in the output, tile [0, size) of the chunk exactly), else nullptr.
  uint8_t* placement(size_t i, uint64_t size) const {
    const Item& item = items_[i];
    // Tiled whole: every byte of [place, place + size) is one the reader
    // copies from this chunk, all inside its output. A copy reaching
    // beyond the chunk (a damaged mapping) is never placed: the reader
    // reports it, and no byte outside its copies is written.
    const bool tiled = item.covered == size && item.lowest == 0 && item.highest == size;
    return !item.place_conflict && tiled ? reinterpret_cast<uint8_t*>(item.place) : nullptr;
  }
  // For ChunkStore::ReadChunks: where chunk i's bytes are.
  void SetData(size_t i, std::string_view data) { items_[i].data = data; }
  // A buffer that lives as long as the batch (views may point into it).
  std::string* NewBuffer();
  // Keeps |c| alive as long as the batch (views may point into it).
  void Pin(std::shared_ptr<const Container> c) { pinned_.push_back(std::move(c)); }

 private:
  struct Item {
    ContainerId container;
    Fingerprint fp;
    std::string_view data;
    uintptr_t place = 0;          // where chunk byte 0 goes in the reader's output (an
                                  // address: before the output for a chunk cut at its start)
    uint64_t covered = 0;         // bytes the reader copies to |place| + offset
    uint64_t lowest = UINT64_MAX;  // the lowest chunk offset copied
    uint64_t highest = 0;          // the end of the highest copy in the chunk
    bool place_conflict = false;  // two places: read into a buffer
  };
  struct KeyHash {
    size_t operator()(const std::pair<ContainerId, Fingerprint>& k) const {
      return static_cast<size_t>(k.second.Hash64() ^ (k.first * 0x9e3779b97f4a7c15ULL));
    }
  };
  std::vector<Item> items_;
  std::unordered_map<std::pair<ContainerId, Fingerprint>, size_t, KeyHash> index_;
  std::vector<std::unique_ptr<std::string>> buffers_;  // stable addresses
  std::vector<std::shared_ptr<const Container>> pinned_;
};

}  // namespace dedupv1

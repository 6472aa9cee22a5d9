// ChunkReadBatch: the chunks one read request needs, read together
// (ChunkStore::ReadChunks) so that chunks stored next to each other cost one
// read of their container's range instead of one read each (each chunk is
// still verified by its fingerprint).
//
// Add the wanted chunks (a chunk added twice is read once), call
// ChunkStore::ReadChunks, then data(i) is chunk i's raw bytes. The views stay
// valid as long as the batch lives and is not reset; the batch pins what
// they point into (its own buffers or a cached container). Not thread-safe.
#pragma once

#include <cstddef>
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
  void Reset();

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

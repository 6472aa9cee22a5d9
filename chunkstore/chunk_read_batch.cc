#include "chunkstore/chunk_read_batch.h"

#include <algorithm>

namespace dedupv1 {

size_t ChunkReadBatch::Add(ContainerId id, const Fingerprint& fp) {
  auto [it, added] = index_.emplace(std::make_pair(id, fp), items_.size());
  if (added) items_.push_back(Item{id, fp, {}});
  return it->second;
}

void ChunkReadBatch::Place(size_t i, uint8_t* dst, uint32_t chunk_offset, uint32_t bytes) {
  Item& item = items_[i];
  const uintptr_t place = reinterpret_cast<uintptr_t>(dst) - chunk_offset;
  if (item.covered != 0 && item.place != place) item.place_conflict = true;
  item.place = place;
  item.covered += bytes;
  item.lowest = std::min<uint64_t>(item.lowest, chunk_offset);
  item.highest = std::max<uint64_t>(item.highest, uint64_t{chunk_offset} + bytes);
}

std::string* ChunkReadBatch::NewBuffer() {
  buffers_.push_back(std::make_unique<std::string>());
  return buffers_.back().get();
}

void ChunkReadBatch::Reset() {
  items_.clear();
  index_.clear();
  buffers_.clear();
  pinned_.clear();
}

}  // namespace dedupv1

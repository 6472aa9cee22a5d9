#include "core/engine/block_pages.h"

#include <cstring>
#include <utility>

namespace dedupv1 {

std::unique_ptr<uint8_t[]> PagePool::Take() {
  if (kept_.empty()) return std::unique_ptr<uint8_t[]>(new uint8_t[kPageSize]);
  std::unique_ptr<uint8_t[]> page = std::move(kept_.back());
  kept_.pop_back();
  return page;
}

void PagePool::Give(std::unique_ptr<uint8_t[]> page) {
  if (kept_.size() < max_kept_) kept_.push_back(std::move(page));
}

BlockPages::BlockPages(uint32_t block_size)
    : pages_((block_size + PagePool::kPageSize - 1) / PagePool::kPageSize) {}

uint32_t BlockPages::Write(uint32_t offset, const uint8_t* data, uint32_t len, PagePool* pool) {
  uint32_t added = 0;
  ForEachPiece(offset, len, [&](uint32_t index, uint32_t in_page, uint32_t n, uint32_t done) {
    if (!pages_[index]) {
      pages_[index] = pool->Take();
      added++;
      pages_held_++;
    }
    std::memcpy(pages_[index].get() + in_page, data + done, n);
  });
  return added;
}

void BlockPages::Read(uint32_t offset, uint32_t len, uint8_t* out) const {
  ForEachPiece(offset, len, [&](uint32_t index, uint32_t in_page, uint32_t n, uint32_t done) {
    std::memcpy(out + done, pages_[index].get() + in_page, n);
  });
}

uint32_t BlockPages::ReleaseOutside(const IntervalSet& keep, PagePool* pool) {
  uint32_t released = 0;
  for (uint32_t i = 0; i < pages_.size(); i++) {
    if (!pages_[i]) continue;
    const uint32_t begin = i * PagePool::kPageSize;
    if (keep.Intersects(begin, begin + PagePool::kPageSize)) continue;
    pool->Give(std::move(pages_[i]));
    pages_[i].reset();
    released++;
  }
  pages_held_ -= released;
  return released;
}

}  // namespace dedupv1

// BlockPages holds the bytes of one dirty block of a WriteBuffer in pages
// that exist only where the block was written: a 4 KiB write into a 128 KiB
// block costs one page, not the whole block. The buffer charges its budget
// per page, so the write-buffer limit counts what random small writes really
// hold instead of a whole block for each.
//
// Invariants:
//  - Every page under a byte written since that page was last released
//    exists; a page's other bytes are unspecified. The buffer reads only
//    dirty bytes, all of which were written.
//  - Pages come from and go back to a PagePool, which keeps a bounded number
//    for reuse (a fresh page faults on its first write).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/base/interval_set.h"

namespace dedupv1 {

class PagePool {
 public:
  static constexpr uint32_t kPageSize = 4096;

  explicit PagePool(size_t max_kept) : max_kept_(max_kept) {}
  std::unique_ptr<uint8_t[]> Take();
  void Give(std::unique_ptr<uint8_t[]> page);

 private:
  const size_t max_kept_;
  std::vector<std::unique_ptr<uint8_t[]>> kept_;
};

class BlockPages {
 public:
  // Block sizes are powers of two from 4 KiB (Options); another size gets
  // a last page of which only a part is used.
  explicit BlockPages(uint32_t block_size);

  // Copies |len| bytes to |offset|, taking missing pages from |pool|.
  // Returns the number of pages it added.
  uint32_t Write(uint32_t offset, const uint8_t* data, uint32_t len, PagePool* pool);
  // Copies [offset, offset + len) to |out|; every byte of it was written.
  void Read(uint32_t offset, uint32_t len, uint8_t* out) const;
  // Gives back every page that holds no byte of |keep|. Returns how many.
  uint32_t ReleaseOutside(const IntervalSet& keep, PagePool* pool);
  uint32_t pages() const { return pages_held_; }

 private:
  // Calls fn(page index, offset in the page, bytes, bytes done before) for
  // each piece of [offset, offset + len) that lies in one page.
  template <typename Fn>
  static void ForEachPiece(uint32_t offset, uint32_t len, Fn fn) {
    for (uint32_t done = 0; done < len;) {
      const uint32_t at = offset + done;
      const uint32_t in_page = at % PagePool::kPageSize;
      const uint32_t n = std::min(len - done, PagePool::kPageSize - in_page);
      fn(at / PagePool::kPageSize, in_page, n, done);
      done += n;
    }
  }

  std::vector<std::unique_ptr<uint8_t[]>> pages_;  // one slot per page of the block
  uint32_t pages_held_ = 0;
};

}  // namespace dedupv1

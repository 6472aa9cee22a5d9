#include "index/written_blocks.h"

namespace dedupv1 {

void WrittenBlocks::Mark(const BlockId& id) {
  std::unique_ptr<Page>& page = pages_[PageKey{id.volume, id.block / kBlocksPerPage}];
  if (!page) page = std::make_unique<Page>();
  const uint64_t bit = id.block % kBlocksPerPage;
  page->words[bit / 64] |= uint64_t{1} << (bit % 64);
}

void WrittenBlocks::Unmark(const BlockId& id) {
  auto it = pages_.find(PageKey{id.volume, id.block / kBlocksPerPage});
  if (it == pages_.end()) return;
  const uint64_t bit = id.block % kBlocksPerPage;
  it->second->words[bit / 64] &= ~(uint64_t{1} << (bit % 64));
}

bool WrittenBlocks::MayBeWritten(const BlockId& id) const {
  auto it = pages_.find(PageKey{id.volume, id.block / kBlocksPerPage});
  if (it == pages_.end()) return false;
  const uint64_t bit = id.block % kBlocksPerPage;
  return (it->second->words[bit / 64] >> (bit % 64)) & 1;
}

}  // namespace dedupv1

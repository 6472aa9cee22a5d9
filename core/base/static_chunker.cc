#include "core/base/static_chunker.h"

namespace dedupv1 {

void StaticChunker::Split(const uint8_t* data, size_t n, bool final, std::vector<size_t>* ends) const {
  const size_t size = options_.avg_size;
  size_t end = size;
  for (; end <= n; end += size) ends->push_back(end);
  const size_t last = end - size;
  if (final && n > last) ends->push_back(n);
}

void SplitAtAlignedOffsets(uint64_t start, size_t n, bool final, uint32_t size, std::vector<size_t>* ends) {
  size_t end = static_cast<size_t>((size - start % size) % size);
  if (end == 0) end = size;
  size_t last = 0;
  for (; end <= n; end += size) {
    ends->push_back(end);
    last = end;
  }
  if (final && n > last) ends->push_back(n);
}

}  // namespace dedupv1

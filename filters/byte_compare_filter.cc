#include "filters/byte_compare_filter.h"

#include <cstring>

namespace dedupv1 {

FilterResult ByteCompareFilter::Check(ChunkRequest* chunk, Status* error) {
  if (chunk->container == kNoContainer || chunk->container == kZeroContainer) {
    return FilterResult::kWeakMaybe;  // nothing matched by fingerprint yet
  }
  std::string stored;
  Status s = store_->ReadChunk(chunk->container, chunk->fp, &stored);
  if (!s.ok()) {
    *error = s;
    return FilterResult::kError;
  }
  if (stored.size() == chunk->size && std::memcmp(stored.data(), chunk->data, chunk->size) == 0) {
    return FilterResult::kExisting;
  }
  *error = Status::Corruption("fingerprint collision: chunk " + chunk->fp.ToHex() + " in container " +
                              std::to_string(chunk->container) + " has different content");
  return FilterResult::kError;
}

}  // namespace dedupv1

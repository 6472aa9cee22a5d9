// StaticChunker cuts a stream into chunks of exactly avg_size bytes (the last
// chunk of a stream may be shorter). It ignores min_size and max_size beyond
// the validation done by Chunker::Create. Use Chunker::Create to build one.
#pragma once

#include "core/base/chunker.h"

namespace dedupv1 {

class StaticChunker : public Chunker {
 public:
  // The name the config's chunking key gives (core/base/chunker_registry.cc).
  static constexpr char kName[] = "static";
  // |options| must already be validated (Chunker::Create does that).
  explicit StaticChunker(const ChunkerOptions& options) : options_(options) {}

  void Split(const uint8_t* data, size_t n, bool final, std::vector<size_t>* ends) const override;
  const ChunkerOptions& options() const override { return options_; }

 private:
  const ChunkerOptions options_;
};

// Static chunks at absolute offsets: for bytes [start, start + n) of a
// volume, appends to |ends| (relative to start) every offset that is a
// multiple of |size| and ends a complete chunk, so the first chunk of an
// unaligned stretch is shorter and every later one lines up with the
// volume's |size|-byte blocks; with |final| the bytes after the last such
// offset end a last chunk too. Splitting a tail again with more bytes gives
// the same boundaries (they depend on the offsets only).
void SplitAtAlignedOffsets(uint64_t start, size_t n, bool final, uint32_t size, std::vector<size_t>* ends);

}  // namespace dedupv1

// Chunk compression for containers. A chunk is kept compressed only if the
// compressed form is strictly smaller than the raw data; otherwise it is
// stored raw and flagged kNone, so reads never pay for useless compression.
// The compression value is part of the on-disk container format: never
// renumber the enum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace dedupv1 {

enum class Compression : uint8_t { kNone = 0, kZlib = 1, kBzip2 = 2 };

// The largest chunk kept compressed: the chunkers' largest chunk. A longer
// one is stored raw (Compress declines it), so Decompress can refuse a larger
// raw size as damage before it allocates the output.
constexpr size_t kMaxCompressedRawSize = size_t{1} << 20;

// Parses "none", "zlib" or "bzip2".
Status ParseCompression(std::string_view name, Compression* out);
const char* CompressionName(Compression type);
// True if |value| is one of the Compression enumerators (for parsing disk data).
bool IsValidCompression(uint8_t value);

// Compresses |n| bytes of |data| with |type| into |out|. Returns true if the
// result is smaller than |n| and should be kept; false if it is not (or |type|
// is kNone, or n > kMaxCompressedRawSize), in which case the caller stores the raw bytes. |out| is
// unspecified when false is returned.
bool Compress(Compression type, const uint8_t* data, size_t n, std::string* out);

// Decompresses |n| bytes of |data| that were stored as |type| and must expand
// to exactly |raw_size| bytes. Corruption if the data does not decompress or
// has the wrong size, or if a compressed chunk's |raw_size| exceeds
// kMaxCompressedRawSize (checked before anything is allocated).
Status Decompress(Compression type, const uint8_t* data, size_t n, size_t raw_size,
                  std::string* out);

}  // namespace dedupv1

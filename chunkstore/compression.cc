#include "chunkstore/compression.h"

#include <bzlib.h>
#include <zlib.h>

#include "core/base/chunker.h"

namespace dedupv1 {
namespace {

// Every chunk a chunker cuts can be kept compressed.
static_assert(kMaxCompressedRawSize >= kMaxChunkSize);

// Level 3 is most of zlib's gain for a fraction of the CPU of level 6+.
constexpr int kZlibLevel = 3;
// Block size in units of 100 KiB. Chunks are small (8 KiB average), so the
// smallest block keeps bzip2's per-call memory low without losing ratio.
constexpr int kBzip2BlockSize100k = 1;

}  // namespace

Status ParseCompression(std::string_view name, Compression* out) {
  if (name == "none") {
    *out = Compression::kNone;
  } else if (name == "zlib") {
    *out = Compression::kZlib;
  } else if (name == "bzip2") {
    *out = Compression::kBzip2;
  } else {
    return Status::InvalidArgument("unknown compression '" + std::string(name) +
                                   "' (use none, zlib or bzip2)");
  }
  return Status::OK();
}

const char* CompressionName(Compression type) {
  switch (type) {
    case Compression::kNone: return "none";
    case Compression::kZlib: return "zlib";
    case Compression::kBzip2: return "bzip2";
  }
  return "unknown";
}

bool IsValidCompression(uint8_t value) {
  return value <= static_cast<uint8_t>(Compression::kBzip2);
}

bool Compress(Compression type, const uint8_t* data, size_t n, std::string* out) {
  if (n == 0 || n > kMaxCompressedRawSize) return false;
  switch (type) {
    case Compression::kNone:
      return false;
    case Compression::kZlib: {
      uLongf len = compressBound(static_cast<uLong>(n));
      out->resize(len);
      int r = compress2(reinterpret_cast<Bytef*>(out->data()), &len, data, static_cast<uLong>(n),
                        kZlibLevel);
      if (r != Z_OK || len >= n) return false;
      out->resize(len);
      return true;
    }
    case Compression::kBzip2: {
      // Only a strictly smaller result is useful, so the output buffer is
      // n - 1 bytes: BZ_OUTBUFF_FULL simply means "not worth it".
      if (n < 2) return false;
      unsigned int len = static_cast<unsigned int>(n - 1);
      out->resize(len);
      int r = BZ2_bzBuffToBuffCompress(out->data(), &len,
                                       const_cast<char*>(reinterpret_cast<const char*>(data)),
                                       static_cast<unsigned int>(n), kBzip2BlockSize100k, 0, 0);
      if (r != BZ_OK || len >= n) return false;
      out->resize(len);
      return true;
    }
  }
  return false;
}

Status Decompress(Compression type, const uint8_t* data, size_t n, size_t raw_size,
                  std::string* out) {
  switch (type) {
    case Compression::kNone:
      if (n != raw_size) {
        return Status::Corruption("raw chunk has " + std::to_string(n) + " bytes, expected " +
                                  std::to_string(raw_size));
      }
      out->assign(reinterpret_cast<const char*>(data), n);
      return Status::OK();
    default:
      break;
  }
  // The output buffer is allocated (and zeroed) before the decoder runs: a
  // damaged size must not make a read allocate gigabytes.
  if (raw_size > kMaxCompressedRawSize) {
    return Status::Corruption(std::string(CompressionName(type)) + " chunk claims " + std::to_string(raw_size) +
                              " raw bytes, more than a compressed chunk can have (" +
                              std::to_string(kMaxCompressedRawSize) + ")");
  }
  switch (type) {
    case Compression::kNone:
      break;
    case Compression::kZlib: {
      out->resize(raw_size);
      uLongf len = static_cast<uLongf>(raw_size);
      int r = uncompress(reinterpret_cast<Bytef*>(out->data()), &len, data, static_cast<uLong>(n));
      if (r != Z_OK || len != raw_size) {
        out->clear();
        return Status::Corruption("zlib chunk does not decompress to " + std::to_string(raw_size) +
                                  " bytes (zlib error " + std::to_string(r) + ")");
      }
      return Status::OK();
    }
    case Compression::kBzip2: {
      out->resize(raw_size);
      unsigned int len = static_cast<unsigned int>(raw_size);
      int r = BZ2_bzBuffToBuffDecompress(out->data(), &len,
                                         const_cast<char*>(reinterpret_cast<const char*>(data)),
                                         static_cast<unsigned int>(n), 0, 0);
      if (r != BZ_OK || len != raw_size) {
        out->clear();
        return Status::Corruption("bzip2 chunk does not decompress to " +
                                  std::to_string(raw_size) + " bytes (bzip2 error " +
                                  std::to_string(r) + ")");
      }
      return Status::OK();
    }
  }
  return Status::Corruption("unknown compression type " +
                            std::to_string(static_cast<int>(type)));
}

}  // namespace dedupv1

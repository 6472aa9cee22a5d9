#include "core/chunker.h"

#include <string>

#include "core/rabin_chunker.h"
#include "core/static_chunker.h"

namespace dedupv1 {

namespace {

const char* KindName(ChunkerOptions::Kind kind) {
  return kind == ChunkerOptions::Kind::kRabin ? "rabin" : "static";
}

Status Validate(const ChunkerOptions& o) {
  const std::string prefix = std::string("chunker (") + KindName(o.kind) + "): ";
  if (o.kind != ChunkerOptions::Kind::kRabin && o.kind != ChunkerOptions::Kind::kStatic) {
    return Status::InvalidArgument("chunker: unknown kind " + std::to_string(static_cast<int>(o.kind)));
  }
  if (o.min_size == 0) return Status::InvalidArgument(prefix + "min_size 0 must be > 0");
  if (o.min_size > o.avg_size) {
    return Status::InvalidArgument(prefix + "min_size " + std::to_string(o.min_size) +
                                   " must be <= avg_size " + std::to_string(o.avg_size));
  }
  if (o.avg_size > o.max_size) {
    return Status::InvalidArgument(prefix + "avg_size " + std::to_string(o.avg_size) +
                                   " must be <= max_size " + std::to_string(o.max_size));
  }
  if (o.max_size > kMaxChunkSize) {
    return Status::InvalidArgument(prefix + "max_size " + std::to_string(o.max_size) +
                                   " must be <= " + std::to_string(kMaxChunkSize) + " (1 MiB)");
  }
  if (o.kind == ChunkerOptions::Kind::kRabin) {
    if ((o.avg_size & (o.avg_size - 1)) != 0) {
      return Status::InvalidArgument(prefix + "avg_size " + std::to_string(o.avg_size) +
                                     " must be a power of two");
    }
    if (o.min_size < RabinChunker::kMinMinSize) {
      return Status::InvalidArgument(prefix + "min_size " + std::to_string(o.min_size) + " must be >= " +
                                     std::to_string(RabinChunker::kMinMinSize));
    }
  }
  return Status::OK();
}

}  // namespace

Status Chunker::Create(const ChunkerOptions& options, std::unique_ptr<Chunker>* chunker) {
  DEDUPV1_RETURN_IF_ERROR(Validate(options));
  if (options.kind == ChunkerOptions::Kind::kRabin) {
    chunker->reset(new RabinChunker(options));
  } else {
    chunker->reset(new StaticChunker(options));
  }
  return Status::OK();
}

}  // namespace dedupv1

#include "core/base/chunker.h"

#include <string>

#include "core/base/chunker_registry.h"

namespace dedupv1 {

namespace {

// The rules every chunker shares; the registry adds each one's own.
Status ValidateCommon(const ChunkerOptions& o, const std::string& prefix) {
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
  return Status::OK();
}

}  // namespace

Status Chunker::Create(const ChunkerOptions& options, std::unique_ptr<Chunker>* chunker) {
  const ChunkerRegistration* registration = FindChunker(options.name);
  if (registration == nullptr) return Status::InvalidArgument("chunker: unknown kind " + options.name);
  const std::string prefix = "chunker (" + options.name + "): ";
  DEDUPV1_RETURN_IF_ERROR(ValidateCommon(options, prefix));
  DEDUPV1_RETURN_IF_ERROR(registration->validate(options, prefix));
  *chunker = registration->create(options);
  return Status::OK();
}

}  // namespace dedupv1

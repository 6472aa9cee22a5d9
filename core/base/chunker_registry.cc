#include "core/base/chunker_registry.h"

#include "core/base/fastcdc_chunker.h"
#include "core/base/rabin_chunker.h"
#include "core/base/static_chunker.h"

namespace dedupv1 {
namespace {

Status ValidateRabin(const ChunkerOptions& o, const std::string& prefix) {
  if ((o.avg_size & (o.avg_size - 1)) != 0) {
    return Status::InvalidArgument(prefix + "avg_size " + std::to_string(o.avg_size) + " must be a power of two");
  }
  if (o.min_size < RabinChunker::kMinMinSize) {
    return Status::InvalidArgument(prefix + "min_size " + std::to_string(o.min_size) + " must be >= " +
                                   std::to_string(RabinChunker::kMinMinSize));
  }
  return Status::OK();
}

Status ValidateFastCdc(const ChunkerOptions& o, const std::string& prefix) {
  if ((o.avg_size & (o.avg_size - 1)) != 0 || o.avg_size < FastCdcChunker::kMinAvgSize) {
    return Status::InvalidArgument(prefix + "avg_size " + std::to_string(o.avg_size) +
                                   " must be a power of two >= " + std::to_string(FastCdcChunker::kMinAvgSize));
  }
  if (o.min_size < FastCdcChunker::kMinMinSize) {
    return Status::InvalidArgument(prefix + "min_size " + std::to_string(o.min_size) + " must be >= " +
                                   std::to_string(FastCdcChunker::kMinMinSize));
  }
  return Status::OK();
}

Status ValidateNothingMore(const ChunkerOptions&, const std::string&) { return Status::OK(); }

template <typename T>
std::unique_ptr<Chunker> Make(const ChunkerOptions& o) {
  return std::make_unique<T>(o);
}

const std::vector<ChunkerRegistration>& Registry() {
  static const std::vector<ChunkerRegistration> registry = {
      {RabinChunker::kName, ValidateRabin, Make<RabinChunker>},
      {StaticChunker::kName, ValidateNothingMore, Make<StaticChunker>},
      {FastCdcChunker::kName, ValidateFastCdc, Make<FastCdcChunker>},
  };
  return registry;
}

}  // namespace

const ChunkerRegistration* FindChunker(const std::string& name) {
  for (const auto& r : Registry()) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

std::vector<std::string> ChunkerNames() {
  std::vector<std::string> names;
  for (const auto& r : Registry()) names.push_back(r.name);
  return names;
}

}  // namespace dedupv1

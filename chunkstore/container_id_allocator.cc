#include "chunkstore/container_id_allocator.h"

#include <algorithm>

namespace dedupv1 {
namespace {

// Ids reserved per write of the id mark: one small synced write per 1024
// containers (4 GiB of data at the default size).
constexpr uint64_t kIdBatch = 1024;

}  // namespace

Status ContainerIdAllocator::Load(ContainerId highest_stored) {
  ContainerId mark = 1;
  bool found = false;
  DEDUPV1_RETURN_IF_ERROR(catalog_->ReadIdMark(&mark, &found));
  if (!found) mark = 1;
  ContainerId next = std::max<ContainerId>(mark, base_ + 1);
  if (highest_stored != kNoContainer) next = std::max(next, highest_stored + 1);
  session_first_ = next;
  next_ = next;
  reserved_until_ = next;
  return Status::OK();
}

Status ContainerIdAllocator::Allocate(ContainerId* id) {
  if (next_ >= reserved_until_) {
    const ContainerId mark = next_ + kIdBatch;
    DEDUPV1_RETURN_IF_ERROR(catalog_->WriteIdMark(mark));
    reserved_until_ = mark;
  }
  *id = next_++;
  return Status::OK();
}

}  // namespace dedupv1

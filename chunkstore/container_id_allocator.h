// ContainerIdAllocator hands out the chunk store's container ids. Ids
// increase monotonically and are never reused, even across a crash: they are
// reserved in batches by raising the catalog's id mark
// (ContainerCatalog::WriteIdMark) before any id of the batch is handed out,
// and a new run starts above the mark (ids below it may have been used by a
// run that crashed before committing them) and above every stored container.
// Not thread-safe: the chunk store calls it under its mutex, so ids stay
// ordered with their reservation.
#pragma once

#include <cstdint>

#include "chunkstore/container_catalog.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

class ContainerIdAllocator {
 public:
  // Ids are above |base| (0, or a gateway slot's (slot << 48): its range).
  explicit ContainerIdAllocator(ContainerCatalog* catalog, ContainerId base = 0) : catalog_(catalog), base_(base) {}

  // Reads the id mark; the first id of this run is above it, above the
  // base and above |highest_stored| (the highest of this range's stored
  // containers; kNoContainer if none).
  Status Load(ContainerId highest_stored);
  // The next id; raises the mark first when the reserved batch is used up
  // (the catalog's error, naming it, if that fails: no id is handed out).
  Status Allocate(ContainerId* id);

  // The first id of this run: smaller ids are from earlier runs.
  ContainerId session_first() const { return session_first_; }
  // The id Allocate hands out next.
  ContainerId next() const { return next_; }

 private:
  ContainerCatalog* const catalog_;
  const ContainerId base_;
  ContainerId session_first_ = 1;
  ContainerId next_ = 1;
  ContainerId reserved_until_ = 1;  // ids < this are covered by the persisted mark
};

}  // namespace dedupv1

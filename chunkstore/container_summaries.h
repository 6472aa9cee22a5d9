// ContainerSummaries holds a summary (chunkstore/container_summary.h) of
// every committed or merged container whose summary is known, in memory and
// appended, unsynced, to the catalog's summary part, so that GC's first
// round after a start need not read the metadata of containers whose chunks
// are all live. A summary is a hint: one lost in a crash, damaged, or taken
// with another number of dead marks than the container has now is not used,
// and is re-learned the next time GC reads the container's metadata.
// Thread-safe.
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "chunkstore/container.h"
#include "chunkstore/container_catalog.h"
#include "chunkstore/container_summary.h"
#include "core/base/types.h"

namespace dedupv1 {

// The summary of |c| as committed: every chunk live.
ContainerSummary SummarizeContainer(const Container& c);

class ContainerSummaries {
 public:
  explicit ContainerSummaries(ContainerCatalog* catalog) : catalog_(catalog) {}

  // Reads the summary part, keeps the summaries of |committed| (sorted) and
  // rewrites the part if it held others or damaged records, or is mostly
  // superseded records. Never fails: problems are reported on stderr and
  // the summaries concerned re-learned.
  void Load(const std::vector<ContainerId>& committed);

  // Remembers |summary| for container |id| and appends it to the catalog.
  void Record(ContainerId id, const ContainerSummary& summary);
  // Forgets |id|'s summary and appends a record withdrawing it (its dead
  // marks changed in a way a later count could not tell: an Unmark).
  void Withdraw(ContainerId id);
  // Forgets |id|'s summary in memory (a merged or deleted container; its
  // records are dropped by the next Load).
  void Forget(ContainerId id);

  // |id|'s summary if it was taken with |dead_now| dead marks.
  bool Get(ContainerId id, uint64_t dead_now, ContainerSummary* summary) const;

  uint64_t loaded() const;
  uint64_t append_failures() const { return append_failures_.load(std::memory_order_relaxed); }

 private:
  ContainerCatalog* const catalog_;
  mutable std::mutex mu_;
  ContainerSummaryMap summaries_;  // under mu_
  uint64_t loaded_ = 0;            // under mu_
  std::atomic<uint64_t> append_failures_{0};
};

}  // namespace dedupv1

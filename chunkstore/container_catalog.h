// ContainerCatalog is the narrow interface between the chunk store and the
// place its catalog lives: what the chunk store knows about its containers
// besides their bytes (those are in the ContainerStore). Four parts:
//
// - the id mark: the next container id no run has handed out yet (ids are
//   reserved in batches by raising it, so they are never reused, even after
//   a crash);
// - the merge records: "target <- sources" per garbage-collection merge, so
//   the old ids of a merged container still resolve to it;
// - the dead marks: chunks GC found to be garbage, per container, kept so
//   the next start need not find them again;
// - the container summaries: per container, what GC's full scan needs
//   (chunkstore/container_summary.h).
//
// The catalog only stores and returns what it is given; what the records
// mean (which ones still apply, when to rewrite) is the chunk store's
// business (chunk_store.h, container_aliases.h, dead_chunk_marks.h,
// container_summaries.h). Implementations: LocalContainerCatalog (files
// beside the containers) and MemoryContainerCatalog (tests); backends are
// chosen by name in chunkstore/storage_backend_registry.h.
//
// Durability per part, which the chunk store relies on:
// - WriteIdMark and WriteMergeRecords replace the part atomically and
//   durably (after a crash the old or the new content, whole).
// - AppendDeadMarks is durable when OK is returned; after a failed append
//   the part may end in a torn record, which ReadDeadMarks reports as not
//   intact. RewriteDeadMarks is atomic and durable.
// - AppendSummaries is not synced (a lost summary is re-learned); a damaged
//   record is skipped by ReadSummaries, which goes on.
//
// Thread-safe: calls on different parts may run concurrently; the chunk
// store makes the calls on one part one at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chunkstore/container_store.h"
#include "chunkstore/container_summary.h"
#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

enum class CatalogPart { kIdMark, kMergeRecords, kDeadMarks, kSummaries };

// One merge: |target| holds the chunks of |sources| now and answers to
// their ids.
struct MergeRecord {
  ContainerId target = kNoContainer;
  std::vector<ContainerId> sources;
};

// Dead marks: per container, fingerprints of chunks that are garbage.
using DeadMarks = std::map<ContainerId, std::vector<Fingerprint>>;

class ContainerCatalog {
 public:
  virtual ~ContainerCatalog() = default;

  // Whether |part| was ever written (and not lost since).
  virtual bool Exists(CatalogPart part) = 0;
  // Where |part| lives, for messages (a file path for the local catalog).
  virtual std::string Where(CatalogPart part) const = 0;

  // The id mark; |*found| false (and |*next_free| untouched) if there is
  // none. Corruption naming the part if it is damaged.
  virtual Status ReadIdMark(ContainerId* next_free, bool* found) = 0;
  // NoSpace (naming the part) if the catalog is full.
  virtual Status WriteIdMark(ContainerId next_free) = 0;

  // The merge records as last written (none if the part does not exist).
  // Corruption naming the part if it is damaged.
  virtual Status ReadMergeRecords(std::vector<MergeRecord>* records) = 0;
  virtual Status WriteMergeRecords(const std::vector<MergeRecord>& records) = 0;

  // Every intact dead-mark record (none if the part does not exist);
  // |*intact| is false if reading stopped at a torn or damaged record (the
  // part must be rewritten before the next append). An error only if the
  // part cannot be read at all.
  virtual Status ReadDeadMarks(DeadMarks* marks, bool* intact) = 0;
  virtual Status AppendDeadMarks(const DeadMarks& marks) = 0;
  virtual Status RewriteDeadMarks(const DeadMarks& marks) = 0;
  // Removes the part; OK if it is gone afterwards.
  virtual Status DeleteDeadMarks() = 0;
  // Bytes the dead marks take after the last read, append or rewrite, and
  // the bytes per mark: the chunk store rewrites the part when most of it
  // describes containers that are gone.
  virtual uint64_t DeadMarkBytes() const = 0;
  virtual size_t DeadMarkSize() const = 0;

  // Every intact summary (a later record of a container replaces an earlier
  // one); |records| counts the intact records, |skipped| the damaged ones.
  virtual Status ReadSummaries(ContainerSummaryMap* summaries, uint64_t* records, uint64_t* skipped) = 0;
  virtual Status AppendSummaries(const std::vector<std::pair<ContainerId, ContainerSummary>>& records) = 0;
  virtual Status RewriteSummaries(const ContainerSummaryMap& summaries) = 0;

  // Whether the parts that stored containers depend on are there (|ids| are
  // the containers |store| holds): the id mark once any container is stored
  // or |ids_handed_out| (a checkpoint recorded ids; without the mark new
  // containers could reuse ids the indexes, the log or the checkpoint still
  // name), the merge records once any container was merged (without them the
  // old ids of a merged container resolve to nothing). Reads every
  // container's header only when the merge records are missing; the chunk
  // store writes them empty in a store that never merged, so that from then
  // on their absence means they were lost. Corruption naming the missing
  // part and what to do.
  Status CheckComplete(ContainerStore* store, const std::vector<ContainerId>& ids, bool ids_handed_out);
};

}  // namespace dedupv1

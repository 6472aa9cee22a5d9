// DeadChunkMarks holds garbage collection's dead-chunk marks: per container
// of this store, the chunks proven unreferenced (kept in the container as
// garbage until a merge leaves them out). Local scope: the chunks GC erased
// from the chunk index. Cluster scope (docs/design-15.md 2.6): our copies of
// lost claims and second copies of a run (marked by the claim step, possibly
// while their container is still open) and the chunks of the slot's dead
// inbox. The chunk store hides marked chunks from GetFingerprints (so the
// container-cache filter cannot hand them out again) and merges drop them.
//
// Marks survive a restart once Persist wrote them to the catalog's dead-mark
// part. Load applies a persisted mark only to a container that still exists
// under its own id: the marks of a merged or deleted container describe that
// container, never the one that answers to its id now. Losing marks never
// loses data, applying a wrong one may; so a dead-mark part that cannot be
// read or rewritten at Load is deleted rather than keeping the store from
// opening. What losing marks costs differs by scope:
//  - local: nothing but GC work; the first round after open scans every
//    container and finds the garbage again (chunks without an index entry);
//  - cluster: space. Nothing online in cluster scope finds a lost mark
//    again (no scan may judge another slot's references while they change),
//    so the copy stays: a leak, until the offline orphan scan of
//    `dedupv1_check --cluster --repair` marks it (target/tools/orphan_copies.h). The claim step's
//    marks are counted when made (ChunkClaims claims_lost, bytes_wasted) and
//    persisted at every engine checkpoint and GC round, so a crash leaks at
//    most those made since the last checkpoint; a dead-mark part dropped at
//    Load leaks all of them (logged).
//
// Thread-safe; Load and Persist are called one at a time (the chunk store's
// GC mutex, so no merge or delete changes the marks meanwhile).
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chunkstore/container_catalog.h"
#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

using FingerprintSet = std::unordered_set<Fingerprint, FingerprintHasher>;

class DeadChunkMarks {
 public:
  explicit DeadChunkMarks(ContainerCatalog* catalog) : catalog_(catalog) {}

  // Reads the persisted marks and applies those of containers in
  // |committed| (sorted) for which |merged| is false; rewrites the part if it
  // held others or ended in a torn record.
  Status Load(const std::vector<ContainerId>& committed, const std::function<bool(ContainerId)>& merged);

  // Marks |fps| of container |holder| (a resolved id); in memory until
  // Persist.
  void Mark(ContainerId holder, const std::vector<Fingerprint>& fps);
  // Removes the mark of |fp| in |holder| if there is one (the persisted one
  // goes with the next Persist, which rewrites the part). Returns whether
  // there was one.
  bool Unmark(ContainerId holder, const Fingerprint& fp);
  // Forgets the marks of container |id| (merged or deleted).
  void Forget(ContainerId id);
  // Cheap, without the lock: whether no container has marks.
  bool empty() const { return containers_.load(std::memory_order_relaxed) == 0; }

  // Calls fn(marks of |id|, or null if it has none) under the lock; fn must
  // not call back into this object.
  template <typename Fn>
  void WithMarksOf(ContainerId id, Fn fn) const {
    std::lock_guard<std::mutex> l(mu_);
    auto it = dead_.find(id);
    fn(it == dead_.end() ? nullptr : &it->second);
  }

  // Writes the marks made since the last call (appended, durably), or all
  // marks when the part needs a rewrite: after an Unmark, after a failed
  // write, or when most of the part describes containers that are gone. On
  // error the marks stay pending (and in memory).
  Status Persist();

  // Ids of the containers holding marks, sorted.
  std::vector<ContainerId> Containers() const;

  uint64_t marked() const;       // marks held
  uint64_t unpersisted() const;  // of them, not yet persisted
  uint64_t loaded() const;       // marks applied at Load

 private:
  // Deletes the dead-mark part after |why| (a failed read or rewrite at Load).
  Status DropPart(const Status& why);
  // All marks except those still pending, for a rewrite.
  DeadMarks PersistedSnapshot() const;

  ContainerCatalog* const catalog_;
  mutable std::mutex mu_;
  std::unordered_map<ContainerId, FingerprintSet> dead_;  // under mu_
  DeadMarks unpersisted_;                                 // Mark since the last Persist; under mu_
  uint64_t marks_ = 0;                                    // marks in dead_; under mu_
  uint64_t loaded_ = 0;
  bool unmarked_ = false;                 // Unmark removed a mark: rewrite; under mu_
  std::atomic<uint64_t> containers_{0};   // dead_.size(), read without mu_
  bool needs_rewrite_ = false;            // a failed write may have left a torn record (Load/Persist only)
};

}  // namespace dedupv1

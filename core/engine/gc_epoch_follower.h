// GcEpochFollower: one gateway slot's side of the GC epochs of a
// cluster-scope store (docs/design-15.md 2.6, core/rados/gc_epochs.h).
//
// The index GC leader marks unused entries dead (D), raises the epoch, and
// erases a D entry only once every registered slot says it is safe at a
// later epoch. This class is how a slot says so. When the epoch moved past
// what the slot last published (Follow, at most once per poll interval;
// Advance, at once):
//  1. it reads the epoch E,
//  2. sets it as the tag of every later run, while holding the GC barrier
//     exclusively (|set_epoch|): every run begun before has logged its
//     mappings, and no run is between its lookups and its logged mappings,
//  3. checkpoints (|checkpoint|): every logged event is counted into this
//     slot's usage keys of the shared chunk index,
//  4. publishes "safe at E" for its incarnation.
// So a reference that is not yet counted when "safe at E" is read was made
// by a run tagged E or later, which began after the slot read E: after the
// leader's read of a D entry that it sighted below E. Such a run either read
// the table (and saw the D: revived, or erased and stored anew), or took the
// chunk from memory: an own claim (trusted within one epoch only,
// ChunkIndex::SetGcEpoch) or a block's current mapping (the block-index
// filter), whose count, if it came after the sighting, changed the usage
// keys the leader compares (core/engine/cluster_gc.h).
//
// The safe epoch is published again every |republish| even if unchanged, so
// a lost or damaged record does not hold GC back for good.
//
// Close publishes kSafeEpochClosed after the final checkpoint of a clean
// close (nothing left to count, no run will start). A crashed or fenced
// incarnation publishes nothing more: its slot blocks finalization until a
// taker's incarnation (which counts the log it inherits) says it is safe.
//
// Thread-safe: calls are serialized; epoch() and published() never wait.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

class GcEpochFollower {
 public:
  struct Hooks {
    // Holding the GC barrier exclusively: the epoch of every later run.
    std::function<void(uint64_t epoch)> set_epoch;
    // A full checkpoint begun after the call (counts every logged event).
    std::function<Status()> checkpoint;
  };

  // |slot|, |incarnation|: this slot's, as its open registered them.
  GcEpochFollower(std::shared_ptr<RadosCluster> cluster, std::string slot, uint32_t incarnation, Hooks hooks,
                  std::chrono::milliseconds poll_interval = std::chrono::milliseconds(1000),
                  std::chrono::milliseconds republish = std::chrono::milliseconds(60000));

  // Before the first run: reads the epoch and sets it (no barrier needed:
  // nothing runs yet). Publishes nothing: what the log holds is counted
  // only by the first checkpoint, which the first Follow runs.
  Status Open();
  // Steps 1-4 if the poll interval passed since the last look and the epoch
  // is newer than the published one (or none was published yet).
  Status Follow();
  // Steps 1-4 now if the epoch is newer than the published one.
  Status Advance();
  // After the final checkpoint of a clean close.
  Status PublishClosed();

  uint64_t epoch() const { return epoch_; }          // the tag of runs now
  uint64_t published() const { return published_; }  // the last safe epoch published (0: none)

 private:
  Status AdvanceLocked();

  const std::shared_ptr<RadosCluster> cluster_;
  const std::string slot_;
  const uint32_t incarnation_;
  const Hooks hooks_;
  const std::chrono::milliseconds poll_interval_;
  const std::chrono::milliseconds republish_;

  std::mutex mu_;  // held across a whole step (barrier and checkpoint included)
  // Written under mu_; read without it (stats must not wait for a checkpoint).
  std::atomic<uint64_t> epoch_{0};
  std::atomic<uint64_t> published_{0};
  bool has_published_ = false;  // guarded by mu_
  std::chrono::steady_clock::time_point last_look_{};     // guarded by mu_
  std::chrono::steady_clock::time_point last_publish_{};  // guarded by mu_
};

}  // namespace dedupv1

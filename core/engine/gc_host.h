// GcHost is what a garbage collection round (core/engine/garbage_collector.h) needs
// of the engine, and nothing more. DedupSystem implements it.
//
// Locks a round takes through it, in this order (see core/engine/write_pipeline.h
// for the write path's side):
//   - Checkpoint() takes the checkpoint lock, then the mapping lock
//     exclusively for a moment; a round calls it holding no other lock.
//   - gc_barrier(), exclusively: from counting every logged event until the
//     garbage is marked dead. No dedup run is then between its filter-chain
//     decision and its mappings being logged. Inside it the round calls
//     Persist() and takes fingerprint locks (one at a time) from
//     fingerprint_locks(), then OnChunksMarkedDead().
// The stores, the log and the usage counter lock themselves.
#pragma once

#include <functional>

#include "core/engine/block_locks.h"
#include "core/engine/gc_barrier.h"
#include "core/base/status.h"

namespace dedupv1 {

class BlockMapping;
class ChunkIndex;
class ChunkStore;
class ClusterGcRules;
class OperationsLog;
class UsageCounter;

class GcHost {
 public:
  virtual ~GcHost() = default;

  virtual ChunkStore* chunk_store() = 0;
  virtual ChunkIndex* chunk_index() = 0;
  virtual OperationsLog* log() = 0;
  // The usage counts of the logged mapping events and the GC candidates.
  // Null only while the system opens.
  virtual UsageCounter* usage() = 0;

  // Usage counts catch up with the logged events, the indexes are written
  // back and the log is trimmed (DedupSystem::Checkpoint).
  virtual Status Checkpoint() = 0;
  // Commits open containers and syncs the log (what a sync makes durable).
  virtual Status Persist() = 0;

  virtual GcBarrier* gc_barrier() = 0;
  virtual FingerprintLocks* fingerprint_locks() = 0;
  // Chunks were marked dead: filters that cache where chunks are forget it.
  virtual void OnChunksMarkedDead() = 0;
  // Returns once every mapping event logged so far is installed in the
  // block index (takes the mapping lock exclusively for a moment).
  virtual void WaitForInstalledMappings() = 0;
  // Calls |f| with the mapping of every written block of every volume (a
  // walk of the block index; blocks written meanwhile may show either
  // version). *complete is false if a stored record could not be read (so
  // a mapping may have been missed).
  virtual Status ForEachMapping(const std::function<void(const BlockMapping&)>& f, bool* complete) = 0;

  // Cluster scope: the rule set of a slot's container GC
  // (core/engine/cluster_gc_rules.h); null for every other store, which
  // keeps the local rules.
  virtual ClusterGcRules* cluster_rules() { return nullptr; }
  // Cluster scope, the seam for index GC (core/engine/cluster_gc.h): called
  // by a round after its checkpoint, before the slot's dead inbox is taken
  // and its containers are judged.
  virtual Status BeforeContainerRound() { return Status::OK(); }
};

}  // namespace dedupv1

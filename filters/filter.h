// A Filter is one step of the filter chain that decides whether a chunk is
// already stored (paper section 3.2). Each filter declares the strongest
// result it can give; the chain uses that to skip filters that cannot add
// information. Filters are shared by all writer threads and must be
// thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

// Results, strongest first. The numeric order is relied upon: smaller = stronger.
enum class FilterResult : int {
  kExisting = 0,     // byte-exact duplicate: stop
  kStrongMaybe = 1,  // fingerprint match, container known: only EXISTING-capable filters still run
  kWeakMaybe = 2,    // no statement: continue
  kNotExisting = 3,  // definitely new: stop
  kError = 4,
};

const char* FilterResultName(FilterResult r);

// The chunk as it passes through the chain.
struct ChunkRequest {
  Fingerprint fp;
  const uint8_t* data = nullptr;
  size_t size = 0;
  bool is_zero = false;  // all bytes zero (fp is then Fingerprint::Zero)
  // Chunks that the blocks being overwritten referenced before (fingerprint ->
  // container); consulted by the block-index filter. May be null.
  const std::unordered_map<Fingerprint, ContainerId, FingerprintHasher>* previous_chunks = nullptr;
  // Set by a filter that returns EXISTING or STRONG-MAYBE; set by the chunk
  // store when a new chunk is stored.
  ContainerId container = kNoContainer;
  // Set by the chunk-index filter when the entry came from the on-disk table
  // rather than the in-memory auxiliary index: the lookups the container
  // cache exists to save.
  bool found_on_disk = false;
  // Set by UpdateMoved when the chunk index moved the entry off another copy
  // (that copy's container); kNoContainer otherwise.
  ContainerId moved_off = kNoContainer;
};

class Filter {
 public:
  virtual ~Filter() = default;
  virtual const char* name() const = 0;
  // The strongest result Check can return.
  virtual FilterResult MaxResult() const = 0;
  // Judges the chunk. On kError, |error| says why.
  virtual FilterResult Check(ChunkRequest* chunk, Status* error) = 0;
  // The chain decided the chunk is new and it has been stored in chunk->container.
  virtual Status UpdateNew(const ChunkRequest& chunk) { return Status::OK(); }
  // The chain decided the chunk is known (chunk->container is where it is).
  virtual Status UpdateKnown(const ChunkRequest& chunk) { return Status::OK(); }
  // A known chunk was stored again, in chunk->container, to keep a backup's
  // chunks together (container rewriting, core/engine/rewrite_policy.h). A
  // filter that records where chunks are may point them to the new copy
  // (and say which copy it left in chunk->moved_off); the old copy stays
  // readable.
  virtual Status UpdateMoved(ChunkRequest* chunk) { return Status::OK(); }
  // Garbage collection marked chunks dead (under its barrier, so no chunk
  // is between decision and mapping). A filter that remembers where chunks
  // are forgets it, so it cannot hand a dead chunk out again.
  virtual void OnChunksMarkedDead() {}

  // Run-level batching, for a filter whose Check reads a remote table: if
  // WantsRun, the chain calls PrepareRun before a run's chunks are decided
  // one by one, with those of them that may reach this filter (no earlier
  // filter Settles them), so it can fetch their answers in one batch, and
  // FinishRun with the same chunks after the run (also after an error).
  virtual bool WantsRun() const { return false; }
  virtual void PrepareRun(const std::vector<const ChunkRequest*>& chunks) {}
  virtual void FinishRun(const std::vector<const ChunkRequest*>& chunks) {}
  // Whether Check would settle |chunk| (stop the chain or give STRONG-MAYBE)
  // judged from memory, without side effects. Only a hint for PrepareRun's
  // choice of chunks (false is always safe).
  virtual bool Settles(const ChunkRequest& chunk) const { return false; }
};

// Per-filter counters of the results each filter gave.
struct FilterCounters {
  std::atomic<uint64_t> existing{0}, strong_maybe{0}, weak_maybe{0}, not_existing{0}, error{0},
      skipped{0};
  void Count(FilterResult r);
};

}  // namespace dedupv1

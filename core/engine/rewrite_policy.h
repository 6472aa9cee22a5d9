// RewritePolicy chooses, run by run, the known chunks the write path stores
// again instead of referencing their old copies (issue 17 item 2; container
// rewriting against fragmentation: Lillibridge et al., FAST'13, "capping";
// Fu et al., ATC'14, HAR). A backup's newest generation references chunks
// spread over the containers of every generation before it; restoring it
// reads a little from each. A container that supplies a run only a few of
// its bytes costs a read for little data: the run's chunks from such sparse
// containers are written once more, next to the run's new data, and later
// generations find them there (the chunk index names the newest copy).
//
// The rule, per run: the run's known chunks (zero chunks aside) are grouped
// by the committed container they were found in; a container supplying the
// run fewer than sparse_bytes is sparse. Chunks of sparse containers are
// chosen sparsest container first, while the volume's budget lasts: the
// bytes rewritten since open stay at most `limit` of the bytes the volume
// wrote since open (this run's included). A chosen container's chunks are
// rewritten all or none, so a rewrite always saves its container's read.
//
// What it costs: each rewritten byte is stored twice while both copies are
// referenced; the old copy is given back by garbage collection once no
// mapping names it (GarbageCollector's spare copies). Local scope only (a
// cluster-scope store refuses the option: its chunk index is shared).
//
// Thread-safe: dedup workers call Choose concurrently.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

struct RewriteOptions {
  bool enabled = false;                // dedup.rewrite = sparse (on) | off
  uint64_t sparse_bytes = 1 << 20;     // dedup.rewrite.sparse-bytes
  double limit = 0.04;                 // dedup.rewrite.limit: share of the written bytes
};

class RewritePolicy {
 public:
  explicit RewritePolicy(const RewriteOptions& options) : options_(options) {}

  // One chunk of a run as the policy sees it.
  struct Chunk {
    size_t size = 0;
    // The committed container the chunk was found in (resolved), or
    // kNoContainer for a chunk that is not a candidate (new, zero, or found
    // in a container not committed yet).
    ContainerId container = kNoContainer;
  };
  // Returns the indexes of |chunks| to store again, in run order, and
  // charges their bytes to |volume|'s budget; |run_bytes| are the logical
  // bytes of the run (all its chunks).
  std::vector<size_t> Choose(uint32_t volume, uint64_t run_bytes, const std::vector<Chunk>& chunks);

  // Takes back part of what Choose charged: the run's |written| bytes when
  // it failed (it is redone and charged again), and chosen bytes that were
  // not stored again after all (the run failed first, or a chunk repeated in
  // the run was stored once).
  void Refund(uint32_t volume, uint64_t written, uint64_t rewritten);

  const RewriteOptions& options() const { return options_; }

 private:
  struct Budget {
    uint64_t written = 0;    // logical bytes of the volume's runs since open
    uint64_t rewritten = 0;  // bytes chosen for rewriting since open
  };

  const RewriteOptions options_;
  std::mutex mu_;
  std::unordered_map<uint32_t, Budget> budgets_;
};

}  // namespace dedupv1

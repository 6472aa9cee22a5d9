// BackgroundDedup is the pass of out-of-band volumes (issue 18; DEDIS's
// background dedup with its hotspot rule, DeDe's later merge into shared
// copies; docs/design-18.md section 5). Such a volume's writes store every
// known chunk again beside the copy the chunk index names (WritePipeline,
// policy out-of-band); the pass later remaps the volume's blocks to the
// copies the index names, and GC gives the volume's own copies back.
//
// Which blocks: a block's mapping version is the id of the log event that
// last changed it, so "written since" is "version above". Per volume the
// pass keeps a done mark: every block at or below it was examined.
// Hotspot rule: period boundaries are log event ids too (StartPeriod). A
// block whose version is above the start of the previous period was written
// in the current or the previous one: it is hot and left for a later round.
// A round examines the cold blocks above the done mark and then raises the
// mark to the cold limit. A block the round remapped gets a new version and
// is examined once more by a later round (finding nothing to do).
//
// Remap: per block, under the GC barrier (shared, so no copy it names or
// finds goes away until its event is logged): the block's items are looked
// up in the chunk index; an item naming another copy than the entry's
// committed one is rewritten to that copy. The new mapping is installed as a
// write's is (WritePipeline::InstallMapping, under the block's exclusive
// lock) only if the block's version is still the one the pass read: a write
// in between wins, and the block is examined again later.
//
// Crash safety: a remap is one mapping event with the same fingerprints as
// the mapping it replaces, so the usage counter counts -1 and +1 of each in
// that event (no count changes, whether the crash comes before or after the
// append) and queues the copy moved away from for GC's spare-copy walk. The
// done marks and period boundaries live in memory: after a restart every
// block of an out-of-band volume is examined once more and everything
// written before the open counts as cold. That costs index reads, loses
// nothing.
//
// Scheduling (Start): one thread starts a period every period_ms and runs a
// round whenever one has work (HasWork), throttled to options.rate bytes of
// examined blocks per second unless the system is idle. A block whose
// examination fails (a damaged record, a full disk) is skipped, kept for the
// next period's round, and named in stats().last_error; the others go on.
//
// Thread-safe; one round at a time (rounds serialize on a mutex).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/status.h"
#include "core/base/types.h"
#include "core/engine/background_dedup_options.h"
#include "core/engine/block_locks.h"

namespace dedupv1 {

class BlockIndex;
class ChunkIndex;
class ChunkStore;
class WritePipeline;

class BackgroundDedup {
 public:
  // What the pass uses and does not own; everything outlives it.
  struct Parts {
    uint32_t block_size = 0;
    BlockIndex* block_index = nullptr;
    ChunkIndex* chunk_index = nullptr;
    ChunkStore* chunk_store = nullptr;
    BlockLocks* block_locks = nullptr;
    WritePipeline* pipeline = nullptr;  // InstallMapping, the GC barrier
    // Waits while the operations log is nearly full (before any lock).
    std::function<Status()> wait_for_log_space;
    // The newest logged event id up to which every mapping event is
    // installed in the block index (WritePipeline::LastAppliedEventId): the
    // period boundaries and cold limits, so a walk sees every block at or
    // below one with its version.
    std::function<uint64_t()> last_event_id;
  };

  struct Stats {
    uint64_t rounds = 0;              // rounds finished
    uint64_t blocks_examined = 0;     // cold blocks looked up
    uint64_t blocks_remapped = 0;     // blocks given a remapped mapping
    uint64_t chunks_remapped = 0;     // mapping items moved to the index's copy
    uint64_t bytes_remapped = 0;      // bytes of those items
    uint64_t blocks_lost_to_writes = 0;  // remaps dropped: the block changed meanwhile
    uint64_t blocks_failed = 0;       // examinations that failed (retried in a later round)
    uint64_t hot_blocks_left = 0;     // hot blocks the last round left for later
    uint64_t blocks_pending = 0;      // blocks above the done marks at the last round's walk, hot ones included
    uint64_t periods = 0;             // hotspot periods started
    std::string last_error;           // why the last round failed, empty if it did not
  };

  BackgroundDedup(Parts parts, BackgroundDedupOptions options);
  ~BackgroundDedup();  // Stop()
  BackgroundDedup(const BackgroundDedup&) = delete;
  BackgroundDedup& operator=(const BackgroundDedup&) = delete;

  // Starts the pass's thread. |volumes| lists the out-of-band volumes' ids
  // (asked before every round); |idle| tells whether the system is idle.
  // A failed round is recorded in stats().last_error and tried again at the
  // next tick.
  void Start(std::function<std::vector<uint32_t>()> volumes, std::function<bool()> idle);
  // Ends a running round between two blocks (the thread's or a caller's of
  // RunRound) and waits for it; joins the thread. Idempotent; RunRound is
  // Aborted from then on.
  void Stop();

  // A new hotspot period starts now: blocks last written before the
  // previous period began are cold from now on.
  void StartPeriod();

  // Called after each block a round examined with its bytes; returns false
  // to end the round early (Aborted). Throttles the pass (it may sleep).
  using Pace = std::function<bool(uint64_t bytes)>;
  // One round over the out-of-band volumes |volumes| (ids): every cold
  // block above the volume's done mark is examined and remapped where the
  // index names another committed copy. |ignore_hotspots|: every block
  // written up to now counts as cold (an admin's or a test's full pass).
  // |pace| may be null: unthrottled (Stop still ends the round).
  Status RunRound(const std::vector<uint32_t>& volumes, bool ignore_hotspots, const Pace& pace);
  // Whether a round over |volumes| has blocks it could examine now: a done
  // mark below the cold limit (a period started since, or a round failed).
  bool HasWork(const std::vector<uint32_t>& volumes) const;

  Stats stats() const;
  const BackgroundDedupOptions& options() const { return options_; }

 private:
  // Blocks that failed in a round and are kept for the next; beyond this
  // many in one volume the round ends there and the volume's mark stays.
  static constexpr size_t kMaxRetries = 4096;

  // Examines one block (version |version| when walked) and installs its
  // remapped mapping if any item names another copy than the index's.
  Status ExamineBlock(const BlockId& id, uint64_t version);
  // Records the end of a round (an Aborted one is no failure).
  Status Finish(const Status& result, uint64_t hot, uint64_t pending);
  // The thread's pace: options_.rate while |idle| says busy.
  Pace Throttle(const std::function<bool()>& idle);
  bool stopping() const;

  void Loop(std::function<std::vector<uint32_t>()> volumes, std::function<bool()> idle);

  const Parts parts_;
  const BackgroundDedupOptions options_;

  std::thread thread_;
  mutable std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;  // guarded by stop_mu_

  std::mutex round_mu_;  // one round at a time
  mutable std::mutex mu_;  // guards the members below
  uint64_t previous_period_start_;  // event id
  uint64_t current_period_start_;   // event id
  std::map<uint32_t, uint64_t> done_;  // volume id -> done mark (event id)
  // volume id -> blocks (-> version) whose examination failed, for the next round
  std::map<uint32_t, std::map<uint64_t, uint64_t>> retry_;
  Stats stats_;
};

}  // namespace dedupv1

// WriteBuffer holds the bytes written to one volume that have not been
// chunked and deduplicated yet. Writes land here and are acknowledged at once;
// dedup workers later take "runs" (maximal stretches of contiguous dirty bytes,
// which may span blocks) and chunk each as one stream, so
// chunk boundaries follow the data, not the order or size of requests. The
// unfinished last chunk of a run simply stays dirty until more data follows
// it, it ages past the flush delay, or a sync forces it out.
//
// Invariants:
//  - Reads see dirty bytes over whatever the block index maps (Overlay).
//  - Every write or unmap of a block increments its sequence number; a worker
//    clears bytes only if the sequence is unchanged since it copied them, so a
//    newer write or unmap is never lost.
//  - Claims are byte ranges; a byte belongs to at most one worker's run. Once
//    a worker has chunked its run it seals the claim at the last chunk
//    boundary (SealClaim): the unfinished tail is released and the next run
//    of the same stream may start there while the first worker still
//    fingerprints and stores, so one sequential stream keeps several workers
//    busy without ever starting a chunk anywhere but at a boundary.
//  - Callers hold the block's lock (BlockLocks) around Put/Discard/
//    ClearIfUnchanged/DropParked (exclusive) and Overlay (shared); the
//    buffer's own mutex only protects its map.
//  - Request edges (only asked for by volumes whose policy deduplicates per
//    request, core/engine/select_dedupe.h): a block keeps the offsets where
//    requests written to it began or ended (at most kMaxRequestEdges; later
//    ones are dropped, merging requests), forgotten when the block leaves
//    the buffer or all its bytes were cleaned; a run carries the edges
//    inside it. Two requests that overwrote each other keep both requests'
//    edges, so the newest bytes form requests of their own.
//  - Parked bytes (a subset of the dirty ones) belong to a run that failed
//    because the chunk index is full (Park). They stay readable but no run
//    claims them, and they count as clean for where runs start and end, so
//    the rest of the buffer, data that needs no new index entry among it,
//    goes on being deduplicated. A write over parked bytes unparks them;
//    UnparkAll (a sync) lets them be tried again; DropParked gives them up
//    once a sync has reported them lost.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <vector>

#include "core/base/interval_set.h"
#include "core/engine/block_pages.h"

namespace dedupv1 {

// Counts the memory of all write buffers of a system against one limit.
class WriteBufferBudget {
 public:
  explicit WriteBufferBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}
  // Blocks while the buffers are over the limit (or until |stop| is set).
  void WaitForSpace(const std::atomic<bool>* stop);
  void Charge(uint64_t bytes);
  void Release(uint64_t bytes);
  uint64_t used() const;
  uint64_t limit() const { return limit_; }
  // True above 3/4 of the limit: workers then flush short runs too.
  bool UnderPressure() const;
  void WakeAll();

 private:
  const uint64_t limit_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t used_ = 0;
};

class WriteBuffer {
 public:
  using Clock = std::chrono::steady_clock;

  WriteBuffer(uint32_t block_size, WriteBufferBudget* budget);
  ~WriteBuffer();

  // Where a Put's bytes lie in their write request: whether they are its
  // first bytes and whether its last (a request spanning blocks is one Put
  // per block). None recorded by default.
  struct RequestEdges {
    bool begins = false;
    bool ends = false;
  };
  static constexpr size_t kMaxRequestEdges = 64;  // per block
  // What a dirty block's bookkeeping takes beside its pages (map node,
  // interval sets, page slots). Charged to the budget with the pages, so the
  // limit also bounds how many blocks the buffer holds, and with them how
  // long a search of the buffer holds its mutex.
  static constexpr uint64_t kBlockBookkeeping = 512;

  // Copies |len| bytes into block |block| at |offset| and marks them dirty.
  // |epoch| is the system's current sync epoch (see DedupSystem). Returns
  // the length of the stretch of contiguous dirty bytes the written ones now
  // lie in, followed into the neighbouring blocks (kLongStretch once it covers
  // a neighbour whole): the writer wakes the workers only when that is a
  // stream's (DedupSystem::BufferedWrite); other runs wait for the workers'
  // own next look, or their flush delay if they are short.
  uint64_t Put(uint64_t block, uint32_t offset, const uint8_t* data, uint32_t len, uint64_t epoch,
               RequestEdges edges);
  uint64_t Put(uint64_t block, uint32_t offset, const uint8_t* data, uint32_t len, uint64_t epoch) {
    return Put(block, offset, data, len, epoch, RequestEdges());
  }
  static constexpr uint64_t kLongStretch = UINT64_MAX;
  // Drops dirty bytes in the range (an unmap supersedes them).
  void Discard(uint64_t block, uint32_t offset, uint32_t len);
  // Copies the dirty bytes of [offset, offset+len) of |block| into out[0..len).
  // Returns true if every byte of the range was dirty.
  bool Overlay(uint64_t block, uint32_t offset, uint32_t len, uint8_t* out) const;
  // True if any byte of the range is dirty.
  bool Intersects(uint64_t block, uint32_t offset, uint32_t len) const;

  // A stretch of contiguous dirty bytes claimed by one worker.
  struct Run {
    uint64_t start = 0;               // absolute byte offset in the volume
    std::vector<uint8_t> data;        // a copy of the dirty bytes
    std::vector<uint64_t> blocks;     // blocks the run's bytes lie in, in order
    std::vector<uint64_t> seqs;       // their sequence numbers at copy time
    bool final = false;               // the run's end is the end of a chunk
    uint64_t claim = 0;               // id of the run's claim
    // Absolute offsets inside (start, start + size) where a write request
    // began or ended (RequestEdges), sorted; empty unless recorded.
    std::vector<uint64_t> request_edges;
  };
  struct ClaimPolicy {
    size_t max_run_bytes = 8 << 20;   // runs longer than this are cut (not final)
    size_t min_ready_bytes = 32768;   // a run this long has a complete chunk
    Clock::duration flush_delay = std::chrono::milliseconds(500);
    uint64_t force_epoch = 0;         // blocks dirtied at or before this epoch are flushed out
    bool force_all = false;           // flush everything (close)
    // Memory is short: short runs are flushed as they are, but a run long
    // enough to hold a complete chunk still keeps its unfinished tail.
    bool flush_short_runs = false;
  };
  // Finds a run that is ready under |policy|, claims its blocks and copies its
  // bytes. Returns false if there is none. The search starts at the block
  // where the previous claim was found and wraps around (next fit, in the
  // order of the blocks' summaries, not of their addresses), so
  // claiming the runs of a buffer of many small dirty stretches costs one
  // pass over its blocks, not one per run: the buffer's mutex, which every
  // write takes, is held for short times.
  bool ClaimRun(const ClaimPolicy& policy, Clock::time_point now, Run* run);
  // True if |block| is still buffered with sequence number |seq| (no write
  // or unmap since a run copied it). The caller holds the block's lock.
  bool Unchanged(uint64_t block, uint64_t seq) const;
  // Clears the dirty bytes [begin, end) of |block| if its sequence number is
  // still |seq|. Returns whether it did (if not, a newer write or unmap came in
  // and the block keeps its dirty bytes for a later run).
  bool ClearIfUnchanged(uint64_t block, uint64_t seq, uint32_t begin, uint32_t end);
  // Shrinks the run's claim to [run.start, end) and marks |end| a chunk
  // boundary, so another run may start there.
  void SealClaim(const Run& run, uint64_t end);
  // Ends the run's claim and frees blocks with no dirty bytes left.
  void Unclaim(const Run& run);
  // Instead of Unclaim, for a run that failed because the chunk index is
  // full: parks the bytes it claimed, in blocks not written since it copied
  // them (a block written meanwhile may now hold data that needs no new
  // entry, so it is tried again).
  void Park(const Run& run);
  // Makes every parked byte claimable again. Returns whether any was parked.
  bool UnparkAll();
  // The blocks dirtied at or before |epoch| that hold parked bytes.
  std::vector<uint64_t> ParkedBlocksUpTo(uint64_t epoch) const;
  // Drops the parked bytes of |block| if nothing was written to it after
  // |epoch| (a sync of that epoch reported them lost; later writes are for a
  // later sync to report). Returns the bytes dropped.
  uint64_t DropParked(uint64_t block, uint64_t epoch);

  // True if a block dirtied at or before |epoch| still has dirty bytes.
  bool HasDirtyUpTo(uint64_t epoch) const;
  // Like HasDirtyUpTo, counting only bytes that are not parked (that a
  // worker will process).
  bool HasPendingUpTo(uint64_t epoch) const;
  // Both at once, from one look under the buffer's lock: |pending| as
  // HasPendingUpTo; |parked| if a block dirtied at or before |epoch| holds
  // parked bytes. (Two separate looks can see a write that lands between
  // them as dirty but not pending, as if it were parked.)
  void PendingAndParkedUpTo(uint64_t epoch, bool* pending, bool* parked) const;
  uint64_t parked_bytes() const;
  uint64_t dirty_bytes() const;
  size_t dirty_blocks() const;

 private:
  struct DirtyBlock {
    explicit DirtyBlock(uint32_t block_size) : data(block_size) {}
    BlockPages data;  // charged to the budget page by page
    IntervalSet dirty;
    IntervalSet parked;  // part of |dirty| (Park)
    uint64_t seq = 0;
    uint64_t first_epoch = 0;
    uint64_t last_epoch = 0;  // of the newest Put
    std::vector<uint32_t> edges;  // request edges in [0, block size], sorted
    Clock::time_point last_write;
    uint32_t slot = 0;  // of its Summary in summaries_
    // Dirty bytes a run may claim: all but the parked ones.
    IntervalSet Claimable() const;
  };
  // What ClaimRun's search needs to know of a dirty block to pass over it.
  // The summaries lie side by side in one array, so a search of thousands of
  // blocks (most of them a short young stretch that is not ready) reads a
  // few cache lines per block instead of chasing map nodes, interval sets
  // and clock reads under the mutex every writer takes. Kept equal to the
  // block's fields by SummarizeLocked after every change of them.
  struct Summary {
    uint64_t block = 0;
    uint64_t first_epoch = 0;
    Clock::time_point last_write;
    uint32_t longest_range = 0;  // of dirty bytes; 0: none (also a free slot's)
    bool dirty_at_start = false;  // its first byte is dirty
    bool dirty_at_end = false;    // its last byte is dirty
  };
  struct Claim {
    uint64_t id;
    uint64_t start, end;  // absolute byte range
    bool sealed;          // |end| is a chunk boundary
  };
  // The claim holding absolute byte |pos|, or null.
  const Claim* ClaimAtLocked(uint64_t pos) const;
  bool BlockClaimedLocked(uint64_t block) const;
  // Byte |pos| is dirty and not parked.
  bool IsDirtyLocked(uint64_t pos) const;
  DirtyBlock* GetOrCreateLocked(uint64_t block, uint64_t epoch);
  // Whether a run starting in the summarized block may be ready under
  // |policy|; false means it surely is not.
  bool MayBeReadyLocked(const Summary& s, const ClaimPolicy& policy, Clock::time_point now) const;
  void SummarizeLocked(const DirtyBlock& b);
  // ClaimRun's work on one block: claims the first ready run that starts in it.
  bool ClaimInBlockLocked(std::map<uint64_t, DirtyBlock>::iterator it, const ClaimPolicy& policy,
                          Clock::time_point now, Run* run);
  // Put's answer: the contiguous dirty bytes around [begin, end) of |block|.
  uint64_t StretchLocked(uint64_t block, const DirtyBlock& b, uint32_t begin, uint32_t end) const;
  void FreeIfCleanLocked(std::map<uint64_t, DirtyBlock>::iterator it);
  // Gives back the pages of |b| that hold no dirty byte any more.
  void TrimLocked(DirtyBlock* b);

  const uint32_t block_size_;
  WriteBufferBudget* budget_;
  mutable std::mutex mu_;
  std::map<uint64_t, DirtyBlock> blocks_;
  // Pages kept for reuse (8 MiB of them): a fresh page faults on its first
  // write.
  PagePool pool_{(8 << 20) / PagePool::kPageSize};
  std::vector<Claim> claims_;  // runs in progress (a handful: one per worker)
  uint64_t next_claim_ = 1;
  // One per dirty block, indexed by DirtyBlock::slot; slots of blocks that
  // left the buffer are reused, lowest first (so a stream's blocks, freed
  // together, are found again in the order they are written), and the array
  // never holds more than the most blocks the buffer held at once.
  std::vector<Summary> summaries_;
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>> free_slots_;
  uint32_t scan_from_ = 0;  // slot where ClaimRun starts looking
};

}  // namespace dedupv1

// WritePipeline is the engine's write path behind the write buffer: it turns
// a run of dirty bytes of one volume into chunks, fingerprints them, lets the
// filter chain decide which are known, stores the new ones and installs the
// blocks' new mappings (logged as events, then put into the block index).
// Unmaps install their mappings through it too. One pipeline serves every
// volume of a DedupSystem; dedup workers call ProcessRun concurrently.
//
// It owns what only the write path uses: the chunker, the fingerprinting
// thread pool, the filter chain, the fingerprint locks, the GC barrier and
// the mapping lock. The stores, the operations log and the block locks are
// the system's, shared with reads, recovery and garbage collection.
//
// Lock order (a thread takes them in this order and never the other way):
//   1. GC barrier, shared: by a run from reading the overwritten blocks'
//      mappings (step 3) until its last mapping is logged (step 5). A GC
//      round takes it exclusively (GcHost) and takes fingerprint locks
//      inside it.
//   2. fingerprint lock (one at a time): a run's step 4, across filter
//      decision, store and filter update, so a chunk is stored once.
//      Released before step 5.
//   3. block lock, exclusive (one at a time): step 5 and unmaps, across
//      "unchanged?" check, InstallMapping and clearing the buffered bytes.
//   4. mapping lock, shared: inside InstallMapping, across the log append
//      and the block index install. A checkpoint takes it exclusively
//      (LastAppliedEventId) after its own checkpoint lock, and takes nothing
//      inside it.
// The operations log's space is waited for (DedupSystem::WaitForLogSpace)
// before any of these is taken, so a checkpoint that trims it can run.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>

#include "core/engine/block_locks.h"
#include "core/base/chunker.h"
#include "core/base/fingerprint.h"
#include "core/engine/gc_barrier.h"
#include "core/engine/dedup_policy.h"
#include "core/engine/rewrite_policy.h"
#include "core/engine/select_dedupe.h"
#include "core/base/status.h"
#include "core/engine/system_stats.h"
#include "core/base/thread_pool.h"
#include "core/base/types.h"
#include "core/engine/write_buffer.h"
#include "filters/filter_chain.h"
#include "index/block_mapping.h"

namespace dedupv1 {

class BlockIndex;
class ChunkIndex;
class ChunkStore;
class OperationsLog;

class WritePipeline {
 public:
  // What the pipeline uses and does not own. Everything must outlive it.
  struct Parts {
    uint32_t block_size = 0;
    FingerprintType fingerprint = FingerprintType::kSha1;
    std::unique_ptr<Chunker> chunker;  // owned from here on
    ChunkStore* chunk_store = nullptr;
    BlockIndex* block_index = nullptr;
    OperationsLog* log = nullptr;
    BlockLocks* block_locks = nullptr;
    SystemStats* stats = nullptr;
    // Wakes the dedup workers: called when a run hands an unfinished tail on.
    std::function<void()> wake_workers;
    // Cluster scope only (core/engine/claim_step.h): the chunk index whose
    // ClaimNew claims each run's new chunks before its mappings are logged.
    ChunkIndex* claim_index = nullptr;
    // Container rewriting (core/engine/rewrite_policy.h); local scope only.
    RewriteOptions rewrite;
    // Select-Dedupe's threshold for selective volumes (select_dedupe.h).
    uint32_t selective_threshold = kDefaultSelectiveThreshold;
    // Called with the container of the copy a chunk's entry was moved off
    // (stored again: rewriting, policy off), so GC looks at it
    // (UsageCounter::NoteCopyReplaced). May be null.
    std::function<void(ContainerId)> copy_replaced;
  };
  explicit WritePipeline(Parts parts);

  WritePipeline(const WritePipeline&) = delete;
  WritePipeline& operator=(const WritePipeline&) = delete;

  // Installed once, after recovery (a rebuilt bloom filter must see the
  // chunks recovery re-imported) and before the first run. Whether zero
  // chunks are recognised follows from it (the zero-chunk filter is in it).
  void InstallFilterChain(FilterChain chain);
  const FilterChain& filter_chain() const { return filter_chain_; }
  const Chunker& chunker() const { return *chunker_; }

  // What processing one run came to.
  struct RunOutcome {
    Status error;             // why the run failed, OK if it did not
    bool parked = false;      // it failed for want of chunk-index space: its bytes are parked
    bool new_chunks = false;  // it stored new chunks (so the chunk index had room)
  };
  // Deduplicates |run|, claimed from |buffer| of volume |volume_id|: chunk
  // boundaries (the unfinished tail is handed back to the buffer at once),
  // fingerprints, filter chain and store, then the blocks' new mappings. A
  // block written or unmapped since the run copied it keeps its dirty bytes
  // and is redone later; the others' bytes leave the buffer once their
  // mapping is logged. The caller waited for log space and holds no lock.
  // |policy| is the volume's (core/engine/dedup_policy.h).
  Status ProcessRun(uint32_t volume_id, DedupPolicy policy, WriteBuffer* buffer, WriteBuffer::Run* run,
                    RunOutcome* outcome);

  // Logs a block's new mapping and installs it in the block index; the caller
  // holds the block's lock exclusively. |old| is the mapping it replaces (for
  // GC), or null. An unmap that leaves the block all zeros is logged as the
  // mapping's deletion (kBlockMappingDeleted), anything else as
  // kBlockMappingWritten. Sets the mapping's version to its event id.
  Status InstallMapping(const BlockId& id, const BlockMapping* old, BlockMapping* mapping, bool unmap = false);

  // The id of the newest logged event; every mapping event up to it is
  // installed in the block index. Takes the mapping lock exclusively (a
  // checkpoint, which may trim the log up to it).
  uint64_t LastAppliedEventId();
  // How many mappings InstallMapping installed so far. Counted under the
  // block's exclusive lock, so a reader that finds it unchanged after taking
  // a block's shared lock knows that block's mapping did not change since it
  // read the count.
  uint64_t mapping_installs() const { return mapping_installs_.load(std::memory_order_acquire); }

  // For garbage collection, which rechecks candidates under their
  // fingerprint lock while holding the barrier exclusively (lock order above).
  FingerprintLocks& fingerprint_locks() { return fp_locks_; }
  GcBarrier& gc_barrier() { return gc_barrier_; }
  // GC marked chunks dead: filters that cache where chunks are forget them.
  void OnChunksMarkedDead() { filter_chain_.OnChunksMarkedDead(); }

 private:
  // Chunk boundaries of |run| (step 1). Normally the last unfinished chunk
  // stays in the buffer; but when the boundaries would end inside a block
  // whose stored mapping cannot be read, and the run holds that block to its
  // end, the run is chunked up to the block's end as if final: such a block
  // can only be replaced whole (InstallRunMappings), and a whole-block write
  // must not be taken for a partial one because of where the tail was cut.
  // A selective volume's runs are cut at 4 KiB volume offsets
  // (kSelectiveChunkSize), every other volume's by the store's chunker.
  void SplitRun(uint32_t volume_id, DedupPolicy policy, const WriteBuffer::Run& run, std::vector<size_t>* ends);
  // The chunks of a run, as the filter chain sees them.
  using Chunks = std::vector<ChunkRequest>;
  // Step 2: fingerprints, in parallel. All-zero chunks are not hashed.
  void ComputeFingerprints(const uint8_t* data, const std::vector<size_t>& ends, Chunks* chunks);
  // Step 4: decides every chunk under its fingerprint lock and stores new ones
  // (and, with container rewriting on, the known ones the rewrite policy
  // picks, or with policy off every known one with a committed copy: their
  // container becomes the new copy's, the filters are told; or with policy
  // selective the known ones of requests Select-Dedupe writes in full; or
  // with policy out-of-band every known one with a committed copy, stored
  // beside it: the entry and the filters keep the old copy).
  // |stored| receives the indices of the chunks stored new; |run_bytes| are
  // the run's logical bytes (the rewrite budget grows with them);
  // |request_of| the request of every chunk (selective only, else empty).
  Status FilterAndStore(uint32_t volume_id, DedupPolicy policy, uint64_t run_bytes,
                        const std::vector<uint32_t>& request_of, Chunks* chunks, RunOutcome* outcome,
                        std::vector<size_t>* stored);
  // Step 4's pieces, each called under the chunk's fingerprint lock: the
  // filter chain's decision (a known chunk is done: UpdateKnown, counted),
  // and the store of a new chunk (UpdateNew, counted).
  // |counted| false for a chunk's second decision in a run (FilterChain::Decide).
  Status DecideChunk(ChunkRequest* c, bool* known, bool counted = true);
  Status StoreNewChunk(uint32_t volume_id, size_t i, ChunkRequest* c, RunOutcome* outcome,
                       std::vector<size_t>* stored);
  // The rewrite policy's pick among the run's |known| chunks.
  std::vector<bool> ChooseRewrites(uint32_t volume_id, uint64_t run_bytes, const Chunks& chunks,
                                   const std::vector<bool>& known);
  // Policy off: every |known| chunk found in a committed container.
  std::vector<bool> KnownOldCopies(const Chunks& chunks, const std::vector<bool>& known) const;
  // Policy selective: the known chunks with a committed copy in the
  // requests Select-Dedupe writes in full; counts every request's category.
  std::vector<bool> SelectStoredAgain(const Chunks& chunks, const std::vector<bool>& known,
                                      const std::vector<uint32_t>& request_of);
  // Whichever chooser picked: a chunk picked to be stored again at one place
  // of the run is picked wherever else the run meets it (with a committed
  // copy), so the second pass stores it once and every occurrence names that
  // copy. Otherwise a block could name both copies (the choosers judge
  // occurrences apart: requests, or the container each was found in), and
  // GC, which follows a block's first mention of a fingerprint, would keep
  // the old copy until a full scan.
  void PickEveryOccurrence(const Chunks& chunks, const std::vector<bool>& known, std::vector<bool>* rewrite) const;
  // The stream hint (ChunkStore::StoreChunk) of out-of-band copies stored
  // beside the index's: another open container than the volume's new
  // chunks, so once the pass has remapped their blocks whole containers are
  // garbage, which GC deletes (garbage among live chunks stays until a
  // container is less than half live).
  uint64_t BesideStream(uint32_t volume_id) const;
  // The committed container (resolved) a known chunk |c| was found in, or
  // kNoContainer (zero, or found in a container not committed yet: stored
  // moments ago, by this stream most likely, so no old copy).
  ContainerId OldCopyOf(const ChunkRequest& c, bool known) const;
  // Step 5: the new mapping of every block the processed bytes touch.
  // |skipped| is set when a block was rewritten meanwhile and not mapped
  // (its bytes are redone by a later run).
  Status InstallRunMappings(uint32_t volume_id, WriteBuffer* buffer, const WriteBuffer::Run& run,
                            const std::vector<size_t>& ends, const Chunks& chunks, bool* skipped);
  // One block of step 5, under the block's lock.
  Status InstallBlock(const BlockId& id, WriteBuffer* buffer, uint64_t seq, uint32_t in_begin, uint32_t in_end,
                      const std::vector<BlockMappingItem>& items, bool* skipped);

  const uint32_t block_size_;
  const FingerprintType fingerprint_;
  const std::unique_ptr<Chunker> chunker_;
  ChunkStore* const chunk_store_;
  BlockIndex* const block_index_;
  OperationsLog* const log_;
  BlockLocks* const block_locks_;
  SystemStats* const stats_;
  const std::function<void()> wake_workers_;
  ChunkIndex* const claim_index_;
  RewritePolicy rewrite_;
  const uint32_t selective_threshold_;
  const std::function<void(ContainerId)> copy_replaced_;

  ThreadPool hash_pool_;
  FilterChain filter_chain_;
  bool zero_chunks_ = false;  // the zero-chunk filter is in the chain
  FingerprintLocks fp_locks_;
  GcBarrier gc_barrier_;
  // Shared while a mapping event is appended and applied; exclusive while a
  // checkpoint reads the id up to which every event is applied.
  std::shared_mutex mapping_mu_;
  std::atomic<uint64_t> mapping_installs_{0};
};

}  // namespace dedupv1

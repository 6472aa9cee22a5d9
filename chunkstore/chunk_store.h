// ChunkStore stores chunk data in containers (dedupv1 paper, section 3.3).
// New chunks are appended to one of several containers open for writing
// (chosen by a stream hint, so one stream's chunks stay together); a full
// container, or one left open longer than the commit timeout, is handed to
// background writer threads that serialize it and Put it into the
// ContainerStore. Reads look at open and in-flight containers first (so data
// is readable before it is committed), then an LRU cache of parsed
// containers, then the store.
//
// Invariants:
// - Container ids increase monotonically and are never reused, even across a
//   crash (chunkstore/container_id_allocator.h).
// - A container is committed iff its Put returned OK. IsCommitted(id) is true
//   exactly for such containers (for ids from an earlier run: those found in
//   the store at Open).
// - A chunk acknowledged by StoreChunk is never dropped: if a commit fails the
//   container stays in memory (still readable), the error becomes sticky
//   (StoreChunk refuses new chunks with it) and the commit is retried by the
//   timer and by Flush until it succeeds.
// - No ChunkStore lock is held while doing container I/O or calling the
//   commit listener.
// - Garbage collection (core/engine/garbage_collector.h) merges under-filled
//   containers: the merged container gets a fresh id and answers to the ids of
//   the containers it replaces (its alias list), so no index entry or block
//   mapping is rewritten. Resolve maps an old id to the container holding its
//   chunks now (chunkstore/container_aliases.h: the merge record is in the
//   catalog before the merged container is Put, and the sources are deleted
//   only after, so a container is never both superseded and used).
// - GC's dead-chunk marks (MarkDead) survive a restart once PersistDeadMarks
//   wrote them to the catalog (chunkstore/dead_chunk_marks.h); they apply
//   only to the container they were made for, never to one answering to its
//   id after a merge.
// - Every container committed or merged gets a summary
//   (chunkstore/container_summaries.h), so GC's first round after a start
//   need not read the metadata of containers whose chunks are all live.
//
// Where things live: the containers in a ContainerStore, everything else the
// store knows about them (id mark, merge records, dead marks, summaries) in a
// ContainerCatalog; both come from the storage backend options.backend names
// (chunkstore/storage_backend_registry.h). The class's work is split by job:
//   chunk_store.cc         open, close, statistics
//   chunk_store_append.cc  the open containers StoreChunk appends to
//   chunk_store_commit.cc  the writer threads, the commit timer, Flush
//   chunk_store_read.cc    reads through the read and metadata caches
//   chunk_store_gc.cc      GC support: resolve, dead marks, footprints, summaries
//   chunk_store_merge.cc   merging and deleting containers
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chunkstore/chunk_store_options.h"
#include "chunkstore/compression.h"
#include "chunkstore/container.h"
#include "chunkstore/container_aliases.h"
#include "chunkstore/container_catalog.h"
#include "chunkstore/container_id_allocator.h"
#include "chunkstore/chunk_read_batch.h"
#include "chunkstore/container_read_cache.h"
#include "chunkstore/container_store.h"
#include "chunkstore/container_summaries.h"
#include "chunkstore/container_summary.h"
#include "chunkstore/dead_chunk_marks.h"
#include "chunkstore/foreign_containers.h"
#include "chunkstore/storage_backend_registry.h"
#include "core/base/env.h"
#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

// A snapshot of the chunk store's counters.
struct ChunkStoreStats {
  uint64_t chunks_stored = 0;
  uint64_t bytes_raw = 0;             // chunk bytes before compression
  uint64_t bytes_stored = 0;          // chunk bytes after compression
  uint64_t containers_committed = 0;
  uint64_t containers_failed = 0;     // failed commit attempts (each retry counts)
  uint64_t commit_retries = 0;
  uint64_t open_containers = 0;       // currently open for writing
  uint64_t containers_in_flight = 0;  // handed to the writers, committing or failed
  uint64_t read_cache_hits = 0;
  uint64_t read_cache_misses = 0;
  uint64_t read_cache_ghost_hits = 0;  // misses of containers the cache evicted lately
  uint64_t read_cache_capacity = 0;    // containers it holds at most now
  uint64_t container_reads = 0;       // containers read from the store
  uint64_t metadata_reads = 0;        // container heads read (metadata only)
  uint64_t chunk_reads = 0;           // chunks read from the store one by one (ReadChunk)
  uint64_t range_reads = 0;           // ranges of a container read for a batch of chunks (ReadChunks)
  uint64_t chunks_read_in_place = 0;  // of their chunks, read straight into the reader's output
  uint64_t bytes_read = 0;            // bytes read from the container store (whole, heads, ranges)
  uint64_t commit_latency_ms_total = 0;
  uint64_t dead_chunks_marked = 0;    // GC's dead marks held (chunks kept in containers as garbage)
  uint64_t dead_marks_unpersisted = 0;  // of them, not yet in the catalog (DIR/dead-chunks)
  uint64_t dead_marks_loaded = 0;     // marks read from the catalog (DIR/dead-chunks) at open
  uint64_t summaries_loaded = 0;      // container summaries read at open
  uint64_t summary_append_failures = 0;  // summaries not written (re-learned later)
};

// Called after container |id| holding |fps| is durably committed.
using CommitListener = std::function<void(ContainerId id, const std::vector<Fingerprint>& fps)>;
// Called after a new open container |id| took its first chunk.
using OpenListener = std::function<void(ContainerId id)>;
// Called after an attempt to commit container |id| failed with |error| (it is
// retried later), before a Flush can return that error.
using CommitFailureListener = std::function<void(ContainerId id, const Status& error)>;

class ChunkStore {
 public:
  // Opens a chunk store on the storage backend options.backend names
  // (InvalidArgument naming the known ones if there is none of that name).
  static Status Open(const ChunkStoreOptions& options, Env* env, std::unique_ptr<ChunkStore>* out);
  // Opens a chunk store on |backend| (its containers and its catalog).
  static Status Open(const ChunkStoreOptions& options, Env* env, StorageBackend backend,
                     std::unique_ptr<ChunkStore>* out);
  // Opens a chunk store on |store| with the catalog of the backend
  // options.backend names (for tests that wrap a store to inject faults).
  static Status Open(const ChunkStoreOptions& options, Env* env, std::unique_ptr<ContainerStore> store,
                     std::unique_ptr<ChunkStore>* out);
  ~ChunkStore();  // calls Close()

  ChunkStore(const ChunkStore&) = delete;
  ChunkStore& operator=(const ChunkStore&) = delete;

  // Called (from a writer thread, with no ChunkStore lock held) after a
  // container is durably committed. IsCommitted(id) is already true when it is
  // called. Set before the first StoreChunk. The listener may call ReadChunk,
  // GetFingerprints and IsCommitted, but not Flush or Close.
  void SetCommitListener(CommitListener listener);
  // Like the commit listener, called with no ChunkStore lock held: the open
  // listener from the StoreChunk caller's thread, the failure listener from a
  // writer thread. Set before the first StoreChunk.
  void SetOpenListener(OpenListener listener);
  void SetCommitFailureListener(CommitFailureListener listener);

  // Appends a new chunk to one of the open containers (chosen by
  // stream_hint % open_containers) and returns its container id. A full
  // container is handed to the writer threads and a fresh one opened.
  // Returns the sticky write error (NoSpace/IOError) if a commit failed and
  // has not been retried successfully yet; InvalidArgument if the chunk can
  // never fit a container or |fp| has the wrong size; Aborted after Close.
  // May wait if the writers are far behind.
  Status StoreChunk(const Fingerprint& fp, const uint8_t* data, size_t n, uint64_t stream_hint,
                    ContainerId* id);
  // Reads a chunk: open and in-flight containers first, then the read cache
  // (whole containers, verified by their CRCs), then the chunk's bytes alone
  // from the ContainerStore, verified by their fingerprint. Corruption naming
  // the container if a check fails; NotFound if the container does not exist
  // or does not hold fp.
  Status ReadChunk(ContainerId id, const Fingerprint& fp, std::string* data);
  // Reads every chunk of |batch| (chunkstore/chunk_read_batch.h), with the
  // same checks as ReadChunk: chunks that lie close together in a committed
  // container are read with one range (many ranges at once, as GetRanges
  // allows), each checked against its fingerprint; a committed container is
  // never read whole for them (measured: a restore read ranges faster, warm
  // and cold, docs/benchmarks.md "Restores"). The first error, naming the
  // chunk, if any chunk cannot be read.
  Status ReadChunks(ChunkReadBatch* batch);
  // Sorted fingerprints of a container. Same lookup order as ReadChunk, but
  // a committed container not in the read cache is not read whole: only its
  // metadata (ContainerStore::GetHead), verified by the metadata checksum.
  Status GetFingerprints(ContainerId id, std::vector<Fingerprint>* fps);
  // Like GetFingerprints, but a committed container is read whole and both
  // its checksums are verified (GetFingerprints reads only the metadata).
  // For checks and tools.
  Status GetFingerprintsVerified(ContainerId id, std::vector<Fingerprint>* fps);
  // True for a foreign container once AcceptForeignContainers was called
  // (chunkstore/foreign_containers.h says why that is safe).
  bool IsCommitted(ContainerId id) const;

  // Cluster scope: mappings may name other gateway slots' containers.
  void AcceptForeignContainers() { foreign_.Enable(); }
  bool IsForeign(ContainerId id) const { return foreign_.IsForeign(id); }
  // Whether container |id| (any slot's) exists in the container store; a
  // merged one exists behind its foreign alias (ForeignContainers::Exists).
  Status ContainerExists(ContainerId id, bool* exists) { return ForeignContainers::Exists(store_.get(), id, exists); }

  // Commits all open containers and waits until every container handed to
  // the writers so far is committed (and its listener call returned). Failed
  // containers are retried once; if any of them fails again its error is
  // returned and it stays in memory, readable.
  Status Flush();
  // Refuses new chunks, flushes, stops the threads. Returns the Flush
  // result. Idempotent (later calls return the first result).
  Status Close();

  ChunkStoreStats stats() const;
  // The read cache holds at most |containers| from now on (iCache's read
  // side, core/engine/cache_budget.h; shrinking evicts at once).
  void SetReadCacheContainers(size_t containers) { read_cache_.SetCapacity(containers); }
  // The highest id handed out so far (or, before the first allocation, the
  // highest id a previous run may have used).
  ContainerId last_allocated_id() const;
  // Ids of the containers in the container store (committed ones), without
  // merge sources that still exist because their deletion failed.
  Status ListCommitted(std::vector<ContainerId>* ids);
  const ChunkStoreOptions& options() const { return options_; }

  // ---- Garbage collection support ----

  // The container that holds |id|'s chunks now: |id| itself unless a merge
  // folded it into another container.
  ContainerId Resolve(ContainerId id) const;
  // Per chunk of committed container |id| (not counting chunks marked dead):
  // its fingerprint and FootprintOf. |total| receives the container's
  // serialized size. Reads only the container's metadata head unless the
  // container is in the read cache.
  struct ChunkFootprint {
    Fingerprint fp;
    size_t bytes = 0;
  };
  Status GetChunkFootprints(ContainerId id, std::vector<ChunkFootprint>* chunks, uint64_t* total);
  // Marks chunks of committed container |id| as garbage (until the container
  // is merged or deleted): GetFingerprints no longer lists them (so the
  // container-cache filter cannot hand them out again) and merges leave them
  // out. In memory only until PersistDeadMarks.
  void MarkDead(ContainerId id, const std::vector<Fingerprint>& fps);
  // Writes the marks made since the last call to the catalog (DIR/dead-chunks
  // for the local backend; durably), so
  // the next Open applies them too. A persisted mark makes merges drop the
  // chunk after a crash as well: call this only once the chunk index no
  // longer names the marked chunks *durably*, and no log event that a replay
  // could apply names them. Rewrites them all when most of the part describes
  // containers that are gone. On error the marks stay pending (and in memory).
  Status PersistDeadMarks();
  // An index entry names chunk |fp| of container |id| (resolved here): if it
  // is marked dead the mark goes, in memory now and from the catalog at
  // the next PersistDeadMarks (which rewrites the part). Marks and entries
  // never name the same chunk by design; this repairs a mark that a build
  // unaware of the file, or a bug, left behind, before a merge acts on it.
  // Returns whether a mark was removed. Cheap when no marks are held.
  bool UnmarkIfDead(ContainerId id, const Fingerprint& fp);
  // Resolve(id) for an index entry that names chunk |fp| in container |id|,
  // and UnmarkIfDead in the same step (one lock: GC's index pass calls this
  // per entry). |unmarked| tells whether a mark was removed.
  ContainerId ResolveEntry(ContainerId id, const Fingerprint& fp, bool* unmarked);
  // Copies the chunks of the committed containers |sources| that are not
  // marked dead into a new container answering to the sources' ids and their
  // aliases, commits it durably (alias record first, see above; in cluster
  // scope also the foreign aliases, chunkstore/foreign_containers.h),
  // switches the alias map and deletes the sources. If the live chunks (and the aliases)
  // do not fit one container, nothing changes and |result| is kNoContainer.
  // An error before the merged container is stored changes nothing either.
  Status MergeContainers(const std::vector<ContainerId>& sources, ContainerId* result);
  // Deletes committed container |id| (its chunks must all be garbage) and
  // forgets the ids that alias it (and their foreign aliases, cluster scope).
  Status DeleteContainer(ContainerId id);
  // This slot's committed containers holding chunks marked dead, sorted:
  // where cluster-scope GC finds garbage (core/engine/cluster_gc_rules.h).
  std::vector<ContainerId> ContainersWithDeadMarks() const;
  // Bytes taken by the stored containers (ContainerStore::UsedBytes).
  Status UsedBytes(uint64_t* bytes);
  // The summary of committed container |id| (an id as stored, not resolved):
  // false if none is known or if it was taken with another number of dead
  // marks than the container has now (GetChunkFootprints from the metadata
  // takes a new one).
  bool GetSummary(ContainerId id, ContainerSummary* summary) const;

 private:
  enum class CommitState {
    kQueued,      // waiting for a writer thread
    kCommitting,  // a writer is serializing and storing it
    kNotifying,   // committed; the listener is running
    kFailed,      // the last commit attempt failed; waiting for a retry
  };
  struct Pending {
    std::shared_ptr<const Container> container;
    CommitState state = CommitState::kQueued;
    bool has_failed = false;  // counted in failed_count_
    Status error;
  };

  ChunkStore(const ChunkStoreOptions& options, Env* env, StorageBackend backend);
  Status Init();

  // ---- Commit threads (chunk_store_commit.cc) ----
  void WriterLoop();
  // Serializes and stores |c|, recording its summary; the Put result.
  // |bytes|: the caller's buffer for the serialized container (reused).
  Status CommitContainer(const Container& c, std::string* bytes);
  // Records the outcome of a commit attempt of |id| (the writer's
  // |lock| is held and may be released for the commit listener).
  void FinishCommitLocked(ContainerId id, const std::shared_ptr<const Container>& c, const Status& s, int64_t ms,
                          std::unique_lock<std::mutex>* lock);
  void TimerLoop();
  // The following require mu_.
  void HandOffLocked(size_t slot);
  void RequeueFailedLocked();
  Status FlushLocked(std::unique_lock<std::mutex>* lock);

  // ---- Open containers (chunk_store_append.cc) ----
  // The container |id| if it is open or in flight; null otherwise. For an
  // open container, |open| is set and the result may only be used under mu_.
  std::shared_ptr<const Container> FindUncommittedLocked(ContainerId id, bool* open) const;

  // ---- Reads (chunk_store_read.cc) ----
  // ReadChunk of another slot's container, following its foreign aliases.
  Status ReadForeignChunk(ContainerId id, const Fingerprint& fp, std::string* data);
  // Reads and parses a committed container through the read cache.
  Status LoadCommitted(ContainerId id, std::shared_ptr<const Container>* container);
  // ReadChunk of a committed container that is not in the read cache: the
  // chunk's bytes alone (ContainerStore::GetRange), located through the
  // metadata cache and verified by their fingerprint.
  Status ReadChunkFromStore(ContainerId requested, ContainerId id, const Fingerprint& fp,
                            std::string* data);
  // The metadata-only container |id| (a resolved id) through the metadata
  // cache; NotFound if it does not exist.
  Status LoadMetadata(ContainerId id, std::shared_ptr<const Container>* meta);
  // ReadChunks' reads of committed containers that are in no cache:
  // |wanted| holds, per resolved container, the batch's indexes of its
  // chunks.
  Status ReadChunksFromStore(ChunkReadBatch* batch,
                             const std::vector<std::pair<ContainerId, std::vector<size_t>>>& wanted);
  // The metadata head of container |id| (ContainerStore::GetHead, twice if
  // the first guess was short).
  Status ReadHead(ContainerId id, std::string* head);
  // Fingerprints (sorted), footprints and serialized size of committed
  // container |id| (a resolved id) from its metadata head alone.
  Status ReadMetadata(ContainerId id, std::vector<Fingerprint>* fps, std::vector<size_t>* footprints,
                      uint64_t* total);
  // Drops the chunks of committed container |id| (a resolved id) marked dead.
  void RemoveDead(ContainerId id, std::vector<Fingerprint>* fps) const;

  // ---- Merges (chunk_store_merge.cc) ----
  // Forgets GC's state of container |id| (merged or deleted): its dead
  // marks and its summary.
  void ForgetContainer(ContainerId id);
  // The merged container of |sources| (|loaded|, not marked dead), answering
  // to |aliases|; false if it does not fit one container.
  bool BuildMerged(const std::vector<ContainerId>& sources,
                   const std::vector<std::shared_ptr<const Container>>& loaded,
                   const std::vector<ContainerId>& aliases, Container* merged, Status* error);

  const ChunkStoreOptions options_;
  Env* const env_;
  const std::unique_ptr<ContainerStore> store_;
  const std::unique_ptr<ContainerCatalog> catalog_;
  ContainerReadCache read_cache_;
  ContainerReadCache metadata_cache_;  // metadata-only containers, for ReadChunkFromStore

  mutable std::mutex mu_;
  std::condition_variable work_cv_;   // writers: a container was queued, or stop
  std::condition_variable done_cv_;   // a commit attempt finished
  std::condition_variable timer_cv_;  // timer: stop
  std::vector<std::shared_ptr<Container>> open_;  // one slot per open container; null = none
  std::unordered_map<ContainerId, Pending> pending_;  // handed off, not yet done
  std::deque<ContainerId> queue_;                     // kQueued ids in order
  size_t committing_ = 0;                             // kCommitting + kNotifying
  std::unordered_set<ContainerId> uncommitted_;       // open + pending ids
  std::vector<ContainerId> committed_at_open_;        // sorted, ids < ids_.session_first()
  ForeignContainers foreign_;
  ContainerIdAllocator ids_;                          // under mu_
  std::unordered_set<ContainerId> deleted_;           // containers deleted this run (and their aliases)
  size_t failed_count_ = 0;
  Status sticky_error_;
  std::chrono::steady_clock::time_point last_retry_;
  CommitListener listener_;
  OpenListener open_listener_;
  CommitFailureListener failure_listener_;
  bool closing_ = false;       // StoreChunk refuses new chunks
  bool stop_threads_ = false;  // writers exit once the queue is empty
  std::vector<std::thread> writers_;
  std::thread timer_;

  // GC state, each with its own lock: taken after gc_mu_ and mu_ when those
  // are held, never before them. Among them only dead_marks_.Load (at Init)
  // asks aliases_ while holding its lock.
  ContainerAliases aliases_;
  DeadChunkMarks dead_marks_;
  ContainerSummaries summaries_;
  std::mutex gc_mu_;  // one merge, delete or persist at a time; taken before mu_

  std::mutex close_mu_;
  bool closed_ = false;
  Status close_status_;

  std::atomic<uint64_t> chunks_stored_{0};
  std::atomic<uint64_t> bytes_raw_{0};
  std::atomic<uint64_t> bytes_stored_{0};
  std::atomic<uint64_t> containers_committed_{0};
  std::atomic<uint64_t> containers_failed_{0};
  std::atomic<uint64_t> commit_retries_{0};
  std::atomic<uint64_t> container_reads_{0};
  std::atomic<uint64_t> metadata_reads_{0};
  std::atomic<uint64_t> chunk_reads_{0};
  std::atomic<uint64_t> range_reads_{0};
  std::atomic<uint64_t> chunks_read_in_place_{0};
  std::atomic<uint64_t> bytes_read_{0};
  // Metadata of containers whose chunks were read one by one (~20 KiB each).
  static constexpr size_t kMetadataCacheContainers = 256;
  // First read of a container's head for its fingerprints: enough for the
  // metadata of a 4 MiB container of 8 KiB chunks (~17 KiB) with room to spare.
  static constexpr size_t kMetadataGuess = 64 << 10;
  std::atomic<uint64_t> commit_latency_ms_total_{0};
};

}  // namespace dedupv1

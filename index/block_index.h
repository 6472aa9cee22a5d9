// The BlockIndex maps each block of a volume to its current BlockMapping
// (paper section 3.5). Like the chunk index it has two parts:
//  - an in-memory auxiliary index holding every mapping written since it was
//    last written back: mappings that reference a container not yet committed
//    (they must not reach disk before their chunk data does) and mappings that
//    could go to disk but have not yet, so the request path never waits for a
//    random B+tree write;
//  - a persistent ordered KvStore (Tokyo Cabinet B+tree or LevelDB) keyed by
//    EncodeBlockKey, so consecutive blocks are neighbours on disk.
// A background thread moves persistable mappings from the auxiliary index to
// the store in batches (one atomic KvStore::Write each) when the auxiliary
// index passes a soft limit or the system is idle. Mappings lost from memory in
// a crash are restored by the operations log replay, not by this class.
//
// Invariants:
//  - a mapping is in the store only if every container it references was
//    committed when it was written back;
//  - a mapping leaves the auxiliary index only after the store write holding
//    it succeeded, and only if no newer Put replaced it meanwhile (each Put
//    gets a sequence number; the caller's BlockMapping::version is not used
//    for this, so callers need not keep it monotonic);
//  - Get sees the newest Put: the auxiliary index first, then the store;
//  - OldestUnwrittenVersion() is at most the version of every mapping the
//    store does not reflect yet, including older versions a newer Put
//    replaced in memory before they were written back (a block whose newest
//    mapping waits for a commit keeps its store copy from before them);
//  - every block with a mapping (auxiliary or stored) is marked in written_,
//    so Get answers NotFound for a never-written block without the store;
//    a marked block whose lookup finds no record is Corruption (the store
//    lost track of it), never "never written";
//  - Get never returns another block's record: a format-2 record carries
//    its block's id inside its checksum (BlockMapping::Parse checks it),
//    and the scan of the whole store at Open (ScanBlockStore) finds the
//    blocks whose record sits under another key (a damaged key) or whose key
//    holds other records too. Get refuses those with Corruption until a new
//    mapping replaces a displaced record, or dedupv1_check --repair
//    (RepairStore) puts the records back; mappings of blocks under such an
//    ambiguous key stay in memory (held, their log events kept) instead of
//    being written back, because an update there could replace another
//    block's only copy.
//
// Thread-safety: all methods may be called concurrently, except Close (and
// the destructor), which must not run concurrently with other calls; Puts
// already blocked at the hard limit are woken and return Aborted.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/base/status.h"
#include "core/base/types.h"
#include "index/block_mapping.h"
#include "index/block_store_scan.h"
#include "index/kv_store.h"
#include "index/written_blocks.h"

namespace dedupv1 {

// Store key of a block: 4-byte big-endian volume id + 8-byte big-endian block
// number, so byte order is (volume, block) order and a volume is one range.
std::string EncodeBlockKey(const BlockId& id);
// False if |key| is not a 12-byte block key.
bool DecodeBlockKey(std::string_view key, BlockId* id);

struct BlockIndexOptions {
  KvBackend backend = KvBackend::kTokyoCabinet;
  // The store: a Tokyo Cabinet file or a LevelDB directory; parents are created.
  std::string path;
  uint32_t block_size = 128 << 10;
  uint64_t aux_soft_limit = 65536;   // mappings: above this the background thread writes back
  uint64_t aux_hard_limit = 262144;  // mappings: Put waits above this (unless they all wait for commits)
  uint32_t write_back_batch = 512;   // mappings per atomic store write
  // Called before each write-back batch goes to the store, outside the index
  // lock. The system makes the operations log durable here, so a mapping
  // never reaches the store before the log event that describes it.
  std::function<Status()> before_write_back;
  // At Open, rewrite records of format 1 (written by older builds, without
  // the block id) in format 2 (ScanBlockStoreOptions). The engine sets it
  // once the data directory's format says so; a tool that only inspects
  // the store does not.
  bool upgrade_old_records = false;
};

struct BlockIndexStats {
  uint64_t aux_mappings = 0;            // mappings in the auxiliary index
  uint64_t aux_waiting_for_commit = 0;  // ... of which reference an uncommitted container
  uint64_t persistent_mappings = 0;     // records in the store
  uint64_t reads = 0;                   // Get calls
  uint64_t aux_hits = 0;
  uint64_t persistent_hits = 0;
  uint64_t misses = 0;                  // Get returned NotFound
  uint64_t fresh_misses = 0;            // ... of which the written-blocks bitmap answered
  uint64_t written_bitmap_bytes = 0;    // memory of that bitmap
  uint64_t written_back = 0;            // mappings written to the store
  uint64_t write_back_batches = 0;      // successful store writes
  std::string last_error;               // last failed write-back, "" if none
  uint64_t damaged_blocks = 0;          // blocks Get refuses (BlockIndex::Get, damaged store)
  uint64_t aux_held = 0;                // mappings held in memory under a damaged key
  uint64_t upgraded_at_open = 0;        // format-1 records rewritten in format 2 at Open
  uint64_t old_format_records = 0;      // format-1 records left after Open
};

class BlockIndex {
 public:
  // |is_committed| tells whether a container is durably committed (the chunk
  // store's IsCommitted); it is called with the index's lock held, so it must
  // not call back into the index. A null function means "all committed".
  // The store's files are reached through |env| (as far as its backend
  // allows: index/kv_store.h); |env| must outlive the index.
  static Status Open(const BlockIndexOptions& options, Env* env, std::function<bool(ContainerId)> is_committed,
                     std::unique_ptr<BlockIndex>* out);
  // Same on a store the caller opened (tests use this to inject store faults).
  // options.backend and options.path are ignored.
  static Status Open(const BlockIndexOptions& options, std::unique_ptr<KvStore> store,
                     std::function<bool(ContainerId)> is_committed,
                     std::unique_ptr<BlockIndex>* out);
  ~BlockIndex();  // Close()

  BlockIndex(const BlockIndex&) = delete;
  BlockIndex& operator=(const BlockIndex&) = delete;

  // The newest mapping of |id|: auxiliary index first, then the store.
  // NotFound if the block was never written (the caller reads zeros);
  // Corruption naming the block if the stored mapping is damaged.
  Status Get(const BlockId& id, BlockMapping* mapping);

  // Stores a new mapping of |id| in the auxiliary index (never touches the
  // disk): PrepareInstall, then Install. It may go to the store only when every container it references
  // (except kZeroContainer) is committed: is_committed is evaluated under the
  // lock OnContainerCommitted takes, so a commit is never missed. A mapping
  // replaced before write-back is simply replaced. Waits while the auxiliary
  // index holds aux_hard_limit mappings or more and some of them can be
  // written back; returns the write-back error instead of waiting if write-back
  // is failing. InvalidArgument for a mapping of the wrong block size or one
  // that breaks the BlockMapping invariants; Aborted once Close has started.
  Status Put(const BlockId& id, const BlockMapping& mapping);

  // Put in two steps, for a caller that must do something between checking
  // and installing that cannot be undone (DedupSystem logs the mapping's
  // event): PrepareInstall validates the mapping and waits for room (it may
  // fail); Install then only fails with Aborted once Close has started.
  Status PrepareInstall(const BlockId& id, const BlockMapping& mapping);
  Status Install(const BlockId& id, const BlockMapping& mapping);

  // The smallest version (BlockMapping::version) among the mappings the
  // store does not reflect yet: those in the auxiliary index and the older
  // versions of the same blocks they replaced before being written back.
  // UINT64_MAX if the store holds everything. DedupSystem's versions are log
  // event ids, and a checkpoint trims the log no further than this: an
  // older, committed version replaced by one that still waits for its
  // container is in neither the store nor (after a trim) the log, and a
  // crash that loses the waiting version must find it in the log. Meaningful
  // only when versions increase per block.
  uint64_t OldestUnwrittenVersion() const;

  // Called after |container| is durably committed (after is_committed starts
  // returning true for it): mappings that waited only for it become
  // persistable. Takes the index lock, so the caller must not hold a lock that
  // is_committed takes.
  void OnContainerCommitted(ContainerId container);

  // While idle, the background thread writes back every persistable mapping,
  // not only those above the soft limit.
  void SetIdle(bool idle);

  // Writes back every mapping that is persistable now and syncs the store.
  // Mappings still waiting for a container commit stay in the auxiliary index
  // (see stats().aux_waiting_for_commit); OK if they are the only ones left.
  Status Flush();

  // Stops the background thread, writes back what is persistable (Flush) and
  // closes the store. Mappings waiting for a commit are dropped from memory
  // (the log replay restores them). Returns the Flush result; later calls
  // return OK and other methods return Aborted.
  Status Close();

  BlockIndexStats stats() const;

  // Calls f(block, mapping) for every written block of |volume| in block
  // order, auxiliary mappings taking precedence over stored ones, until f
  // returns false. Meant for checks and tools: a snapshot of the auxiliary
  // index is taken first, so blocks written while it runs may show either
  // version. f may call other methods of the index. A stored record that is
  // not the readable mapping of the block its key names in key order (it
  // cannot be read, carries another block's id, repeats or breaks the key
  // order), and every stored record of a block Get refuses, is not passed
  // to f but to |skipped| (if set) with the reason; the walk goes on. The
  // volume's key range ends at the first key of a later volume, so in a
  // store whose key order is broken this may stop early: checks use the walk
  // of the whole store below.
  using SkippedRecord = std::function<void(const std::string& key, const Status& why)>;
  Status ForEachBlock(uint32_t volume,
                      const std::function<bool(uint64_t block, const BlockMapping& mapping)>& f,
                      const SkippedRecord& skipped = nullptr);
  // The same for every volume, in one walk of the whole store in its own
  // order (so also records a damaged store keeps out of key order).
  Status ForEachBlock(const std::function<bool(const BlockId& id, const BlockMapping& mapping)>& f,
                      const SkippedRecord& skipped = nullptr);

  // Scans the whole store now (ScanBlockStore, no upgrade) and refuses, from
  // now on, the blocks it finds damaged; *scan receives the findings. For
  // dedupv1_check, on an otherwise idle index.
  Status VerifyStore(BlockStoreScan* scan);
  // dedupv1_check --repair: scans the store (with write-back held off),
  // puts every repairable block's newest record back under its own key
  // (RepairBlockStore) and scans again; blocks repaired are served again
  // and their held mappings written back. *repaired: the blocks repaired;
  // *after: the scan after the repair.
  Status RepairStore(std::vector<BlockId>* repaired, BlockStoreScan* after);

 private:
  struct AuxEntry {
    BlockMapping mapping;
    uint64_t seq = 0;                       // Put sequence number, unique
    std::vector<ContainerId> uncommitted;   // referenced containers not yet committed
    // Version of the oldest mapping of this block the store does not have
    // (this one or an older one it replaced; a lower bound).
    uint64_t first_unwritten = 0;
    // While |mapping| waits for a commit: the newest older mapping that is
    // persistable and not yet written (registered in persistable_ under
    // |stable_seq|), so the store catches up with the committed versions of
    // a block that keeps being rewritten; |after_stable| is the version of
    // the first mapping installed after it.
    std::optional<BlockMapping> stable;
    uint64_t stable_seq = 0;
    uint64_t after_stable = 0;
    // Its key in the store is ambiguous (damaged_): not written back.
    bool held = false;
  };
  // Why Get refuses a block the store scan found damaged.
  struct Damage {
    bool ambiguous_key = false;  // held: a write-back under this key is unsafe
    std::string why;
  };

  BlockIndex(const BlockIndexOptions& options, std::unique_ptr<KvStore> store,
             std::function<bool(ContainerId)> is_committed);
  void BackgroundLoop();
  // True if the background thread has something to do. Requires mu_.
  bool WriteBackWanted() const;
  // Removes the registration of |entry|'s current mapping from waiting_ or
  // persistable_ (not its stable mapping, not the entry). Requires mu_.
  void Unregister(const BlockId& id, const AuxEntry& entry);
  // Forgets |entry|'s stable mapping (a newer one is persistable). Requires mu_.
  void DropStable(AuxEntry* entry);
  // Scans the store at Open: marks every block it holds in written_, notes
  // the damaged blocks, upgrades old-format records.
  Status LoadWrittenBlocks();
  // Takes |scan|'s damaged blocks as the ones Get refuses, and holds (or
  // releases) the auxiliary mappings under ambiguous keys. Requires mu_.
  void ApplyScanLocked(const BlockStoreScan& scan);
  // Registers |entry|'s current mapping in persistable_ or waiting_ (none
  // while held). Requires mu_.
  void Register(const BlockId& id, const AuxEntry& entry);
  // Corruption naming the block, the store and |why|.
  Status DamagedError(const BlockId& id, const std::string& why) const;
  // "block index <path>" (or "block index store" without a path).
  std::string StoreName() const;
  Status ForEachBlockIn(const std::string& begin, const std::string& end, std::map<BlockId, BlockMapping> aux,
                        const std::function<bool(const BlockId&, const BlockMapping&)>& f,
                        const SkippedRecord& skipped);
  // Writes back up to |limit| of the oldest persistable mappings with a
  // sequence number <= max_seq in one store write; *written is the number
  // written (0: nothing to do).
  Status WriteBackBatch(uint64_t max_seq, size_t limit, size_t* written);
  static constexpr size_t kFlushBatch = 16384;

  const BlockIndexOptions options_;
  const std::function<bool(ContainerId)> is_committed_;

  std::unique_ptr<KvStore> store_;  // null once closed
  uint64_t persistent_at_close_ = 0;

  // One write-back batch at a time (background thread or Flush), so an older
  // version of a block can never overwrite a newer one in the store.
  std::mutex writeback_mu_;

  mutable std::mutex mu_;             // guards everything below
  std::condition_variable bg_cv_;     // wakes the background thread
  std::condition_variable space_cv_;  // wakes Puts waiting at the hard limit
  std::unordered_map<BlockId, AuxEntry, BlockIdHasher> aux_;
  // Uncommitted container -> blocks whose aux mapping waits for it.
  std::unordered_map<ContainerId, std::unordered_set<BlockId, BlockIdHasher>> waiting_;
  // Persistable aux mappings (current or stable) by sequence number: oldest
  // written back first.
  std::map<uint64_t, BlockId> persistable_;
  uint64_t stable_count_ = 0;  // entries with a stable mapping
  // Blocks that have a mapping; filled from the store at Open.
  WrittenBlocks written_;
  // Blocks Get refuses (found by the store scan at Open or VerifyStore).
  std::unordered_map<BlockId, Damage, BlockIdHasher> damaged_;
  uint64_t held_count_ = 0;  // aux entries with held set
  uint64_t upgraded_at_open_ = 0;
  uint64_t old_format_records_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t put_waiters_ = 0;
  bool idle_ = false;
  bool closing_ = false;
  Status writeback_error_;  // of the last write-back attempt
  std::string last_error_;
  uint64_t written_back_ = 0;
  uint64_t write_back_batches_ = 0;

  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> aux_hits_{0};
  std::atomic<uint64_t> persistent_hits_{0};
  std::atomic<uint64_t> misses_{0};
  std::atomic<uint64_t> fresh_misses_{0};

  std::thread background_;
};

}  // namespace dedupv1

// A Volume is one logical disk of a DedupSystem (one iSCSI LUN). It is split
// into fixed-size blocks; each block's content is described by a block mapping
// (index/block_mapping.h) plus any bytes still in the volume's write buffer.
//
// Write path: Write copies into the write buffer and returns; dedup workers of
// the system later call ProcessOneRun, which hands a claimed run of dirty
// bytes to the write pipeline (core/engine/write_pipeline.h: chunks, fingerprints,
// filter chain, store, new block mappings). Read path: block mapping ->
// chunks from the chunk store, with dirty bytes from the buffer on top. Sync
// waits until every byte written before it is deduplicated and durable.
//
// Thread-safe. Offsets and lengths are in bytes and may be unaligned. A
// request holds one block lock at a time (core/engine/block_locks.h): shared to
// read, exclusive to buffer bytes or to unmap.
#pragma once

#include <atomic>
#include <mutex>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "chunkstore/chunk_read_batch.h"
#include "core/engine/block_locks.h"
#include "core/engine/dedup_policy.h"
#include "core/base/fingerprint.h"
#include "core/base/identity.h"
#include "core/base/status.h"
#include "core/engine/system_stats.h"
#include "core/engine/write_buffer.h"
#include "core/engine/write_pipeline.h"

namespace dedupv1 {

class BlockIndex;
class ChunkStore;

// What a volume asks of the system that serves it (DedupSystem implements it).
class VolumeHost {
 public:
  virtual ~VolumeHost() = default;
  // Before a write is buffered: refuses it while the store cannot take data
  // (a pending processing error), waits for write-buffer space, and refuses
  // it if the buffer may never drain. Called without locks.
  virtual Status AdmitWrite() = 0;
  // The sync epoch a write stamps its bytes with.
  virtual uint64_t current_epoch() const = 0;
  // A write left |dirty_stretch| contiguous dirty bytes around its own
  // (WriteBuffer::Put): the host wakes the dedup workers if that is a
  // stream's (DedupSystem::BufferedWrite); other writes wait for the
  // workers' own next look.
  virtual void BufferedWrite(uint64_t dirty_stretch) = 0;
  // Waits while the operations log is nearly full; called before any block
  // lock is taken (an unmap, a dedup run), so the checkpoint can trim it.
  virtual Status WaitForLogSpace() = 0;
  // Makes every write acknowledged before the call durable (all volumes).
  virtual Status Sync() = 0;
};

class Volume {
 public:
  // The system's parts a volume uses; all outlive it.
  struct Context {
    VolumeHost* host = nullptr;
    WritePipeline* pipeline = nullptr;  // dedup runs and unmaps' mappings
    BlockLocks* block_locks = nullptr;
    BlockIndex* block_index = nullptr;  // reads
    ChunkStore* chunk_store = nullptr;  // reads
    WriteBufferBudget* budget = nullptr;
    SystemStats* stats = nullptr;
    uint32_t block_size = 0;
    FingerprintType fingerprint = FingerprintType::kSha1;
  };
  Volume(const Context& context, uint32_t id, std::string name, uint64_t size, const Id128& uid);

  const std::string& name() const { return name_; }
  uint32_t id() const { return id_; }
  uint64_t size() const { return size_.load(std::memory_order_acquire); }
  // The volume is |new_size| bytes from now on; a smaller size is ignored
  // (DedupSystem::ApplyVolumes records it in the volume table first).
  void Grow(uint64_t new_size);
  // The volume's identity from the volume table (core/engine/volume_table.h).
  const Id128& uid() const { return uid_; }
  // How its writes are deduplicated (core/engine/dedup_policy.h); a change
  // applies to the runs taken after it.
  DedupPolicy policy() const { return policy_.load(std::memory_order_acquire); }
  void SetPolicy(DedupPolicy policy) { policy_.store(policy, std::memory_order_release); }

  Status Read(uint64_t offset, uint64_t length, uint8_t* out);
  // |fua|: durable when this returns.
  Status Write(uint64_t offset, uint64_t length, const uint8_t* data, bool fua);
  // The range reads as zeros afterwards; its chunks lose a reference.
  Status Unmap(uint64_t offset, uint64_t length);
  // Every write acknowledged before this call is durable when it returns.
  Status Sync();
  // Whether offset's block range holds data (for GET LBA STATUS): |*mapped|
  // and the length of the run of blocks from |offset| in the same state.
  Status IsMapped(uint64_t offset, uint64_t length, bool* mapped, uint64_t* run);

  // What processing one run came to.
  using RunOutcome = WritePipeline::RunOutcome;
  // Dedup worker entry point: claims one ready run of this volume and
  // processes it. Returns false if there was nothing to do. A run that needs
  // a new chunk-index entry while the index is full is parked in the write
  // buffer (WriteBuffer::Park), so runs that need none go on.
  bool ProcessOneRun(const WriteBuffer::ClaimPolicy& policy, RunOutcome* outcome);

  WriteBuffer& buffer() { return buffer_; }

  // Acknowledged bytes of this volume were given up (parked for want of
  // chunk-index space when a sync came, DedupSystem::ReportParked). The next
  // Sync of this volume fails with |why| even if the sync that dropped them
  // was another volume's: every initiator that wrote them hears of it once.
  void NoteLostWrites(const Status& why);

  // What initiators did to this volume since the system opened (for the
  // monitor); plain counters, never locks.
  struct Counters {
    uint64_t bytes_written = 0, bytes_read = 0, bytes_unmapped = 0;
    uint64_t write_ops = 0, read_ops = 0, unmap_ops = 0;
  };
  Counters counters() const;

 private:
  Status CheckRange(uint64_t offset, uint64_t length, const char* op) const;
  // The part of a request that falls into one block.
  struct Piece {
    uint64_t block;
    uint32_t offset;   // in the block
    uint32_t length;
    uint64_t done;     // bytes of the request before this piece
  };
  // Calls f for each block piece of [offset, offset+length) in order; stops
  // at the first error, or when f sets *stop.
  Status ForEachPiece(uint64_t offset, uint64_t length,
                      const std::function<Status(const Piece&, bool* stop)>& f) const;
  // How a piece is read once its chunks are: set under the block's shared
  // lock (PlanPiece), carried out under it (FinishPiece).
  struct PiecePlan {
    bool done = false;    // the buffered bytes cover the piece: nothing to read
    bool mapped = false;  // the block has a mapping (else it reads zeros)
    uint64_t version = 0;  // the mapping's
    struct Copy {
      uint8_t* dst;
      size_t chunk;  // in the batch
      uint32_t chunk_offset, size;
    };
    std::vector<Copy> copies;
  };
  // The caller holds the block's shared lock. Fills what needs no chunk
  // (buffered bytes covering the whole piece, zeros) and adds the chunks
  // the piece needs to |batch|.
  Status PlanPiece(uint64_t block, uint32_t offset, uint32_t len, uint8_t* out, ChunkReadBatch* batch,
                   PiecePlan* plan);
  // The caller holds the block's shared lock and read |batch|: copies the
  // chunks' bytes, then the buffered bytes on top.
  Status FinishPiece(uint64_t block, uint32_t offset, uint32_t len, uint8_t* out, const ChunkReadBatch& batch,
                     const PiecePlan& plan);
  // One piece read whole under its block's shared lock, which the caller holds.
  Status ReadPieceLocked(uint64_t block, uint32_t offset, uint32_t len, uint8_t* out);
  // A request of several pieces: the chunks of all of them are read in one
  // batch without a block lock (a thread holds at most one), and each block
  // whose mapping changed meanwhile is read again on its own.
  Status ReadPieces(const std::vector<Piece>& pieces, uint8_t* out);

  const Context context_;
  const uint32_t id_;
  const std::string name_;
  std::atomic<uint64_t> size_;  // grows while served (Grow), never shrinks
  std::atomic<DedupPolicy> policy_{DedupPolicy::kInline};
  const Id128 uid_;
  const uint32_t block_size_;
  WriteBuffer buffer_;
  std::mutex lost_mu_;
  Status lost_;  // given-up writes not yet reported by a Sync of this volume
  std::atomic<uint64_t> bytes_written_{0}, bytes_read_{0}, bytes_unmapped_{0};
  std::atomic<uint64_t> write_ops_{0}, read_ops_{0}, unmap_ops_{0};
};

}  // namespace dedupv1

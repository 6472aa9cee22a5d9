// OperationsLog is the shared operations log of paper section 3.6: every
// component appends the events other components must see again after a crash
// (container committed, block mapping written, ...); a replay hands them back
// in order, and replayed events are trimmed from the head.
//
// On disk it is one preallocated file of fixed-size slots (docs/formats.md,
// "Operations log"): two superblock copies, then a cyclic array of data slots.
// Every slot written gets the next "slot sequence number" s and goes to data
// slot s % data_slots; an event larger than a slot spans consecutive slot
// sequence numbers (fragments). The superblock names the head event and its
// first slot sequence; recovery walks slot sequence numbers from there and
// stops at the first slot that is not the expected continuation. Every slot
// also carries a durable watermark (all slots below it were fdatasync'ed
// when it was appended), so recovery tells a torn tail from damage to a
// durable slot (log/log_recovery.h): damage refuses the open.
//
// Invariants:
//  - event ids are consecutive and follow append order; one id per event;
//  - the live events [head_id, last_id] occupy slot sequence numbers
//    [head_seq, next_seq), at most data_slots of them, so an append never
//    overwrites a slot of a live event (it waits at the hard limit instead);
//  - recovery only returns complete events that form an unbroken chain from
//    the head: a torn or stale slot ends the log, and the next append
//    continues right after the last complete event. Every open starts a new
//    "generation" written into its slots; generations never decrease along
//    the chain, so stale slots of an earlier run that happen to carry the
//    right sequence number cannot be mistaken for a continuation;
//  - an event is durable once Sync() returned after its Append; Trim is
//    durable when it returns; the in-memory head moves only once the
//    superblock naming it is durable, so a slot is overwritten by a later
//    lap only after a durable superblock's head is past it;
//  - a damaged log (a durable slot lost while later slots prove it was
//    durable, or a damaged newer superblock copy) does not open, unless
//    accept_damage is set: then nothing is appended, trimmed or written
//    until DiscardDamaged, so the damaged file stays as found until its
//    intact events have been applied elsewhere.
//
// Buffering: Append encodes slots into memory; chunks of ~1 MiB are written
// out by the appending thread (write-behind) and everything is written and
// fdatasync'ed by Sync(). Buffered slots stay in memory until they are
// durable, so a failed write or fdatasync (EIO, ENOSPC) loses nothing: the
// next Sync writes them again. Written-but-unsynced data is capped at a few
// MiB by an fdatasync in write-behind.
//
// Thread-safety: every method may be called concurrently, except that
// Close() (and the destructor) must not race other calls.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/base/env.h"
#include "core/base/status.h"
#include "log/log_event.h"
#include "log/log_recovery.h"

namespace dedupv1 {

struct OperationsLogOptions {
  std::string path;
  uint64_t size_bytes = 256 << 20;   // preallocated file size (rounded down to whole slots)
  uint32_t slot_size = 4096;         // 512..64K, power of two
  double soft_limit = 0.5;           // fill at which IsAboveSoftLimit() turns true
  double hard_limit = 0.9;           // Append waits above this fill, then fails Busy "log full"
  uint64_t append_wait_ms = 30000;
  // Open a damaged log instead of failing with Corruption (docs/durability.md
  // "Damage"): the chain before the damage is replayed as usual, the intact
  // events after it through ReplaySalvaged, and DiscardDamaged restarts the
  // log. Set only by dedupv1_replay --accept-log-damage and the tools that
  // inspect a log; never from the config file.
  bool accept_damage = false;
};

struct OperationsLogStats {
  uint64_t head_id = 0;      // oldest live event (last_id + 1 if the log is empty)
  uint64_t last_id = 0;      // newest appended event
  uint64_t durable_id = 0;   // newest event known durable
  uint64_t slots = 0;        // data slots
  uint64_t used_slots = 0;   // slots of live events
  uint64_t appended_events = 0;   // by this instance
  uint64_t appended_bytes = 0;    // payload bytes, by this instance
  uint64_t syncs = 0;             // fdatasyncs of data
  uint64_t throttled_appends = 0; // appends that had to wait at the hard limit
  uint64_t recovered_events = 0;  // complete events found by Open
  double fill = 0;                // used_slots / slots
  std::string last_error;         // last write/sync error, empty if none
};

class OperationsLog {
 public:
  // Creates the file (preallocated, superblocks written, then renamed into
  // place) if it is missing; else recovers head and tail as described above.
  // Options that do not match the file (slot size, size) are refused with
  // InvalidArgument naming both values; no valid superblock is Corruption.
  // A damaged log is Corruption naming the file, the damaged slot (its
  // number, slot sequence, offset and why it was refused) and the intact
  // slot that proves it was durable, unless options.accept_damage: then the
  // open succeeds with damage_pending() and writes nothing.
  static Status Open(const OperationsLogOptions& options, Env* env,
                     std::unique_ptr<OperationsLog>* out);
  // Close(), ignoring its error.
  ~OperationsLog();

  OperationsLog(const OperationsLog&) = delete;
  OperationsLog& operator=(const OperationsLog&) = delete;

  // Appends one event and returns its id. Not durable until Sync(). Waits up
  // to append_wait_ms while the log would be filled beyond the hard limit,
  // then fails Busy ("... full ..."). An event that can never fit below the
  // hard limit is InvalidArgument. Aborted after Close().
  Status Append(LogEventType type, const std::string& payload, uint64_t* id);

  // Group commit: every event appended before the call is durable when it
  // returns OK. Concurrent callers share one fdatasync. A write or sync error
  // is returned (the events stay buffered; a later Sync retries).
  Status Sync();

  uint64_t head_id() const;
  uint64_t last_id() const;
  uint64_t durable_id() const;

  // Calls f for every event with id in [max(from, head_id()), last_id() at the
  // call] in id order, reading from memory or disk; stops early and returns
  // f's status if f returns non-OK. A damaged slot of a live event is
  // Corruption naming the file, the slot and the event. Aborted if the events
  // are trimmed while being replayed.
  Status Replay(uint64_t from, const std::function<Status(const LogEvent&)>& f);

  // Drops every event with id < new_head (no-op if new_head <= head_id());
  // new_head may be at most last_id() + 1 (empty log), else InvalidArgument.
  // Durable (superblock written and synced) before it returns; wakes appenders
  // waiting at the hard limit.
  Status Trim(uint64_t new_head);

  bool IsAboveSoftLimit() const;
  OperationsLogStats stats() const;

  // Syncs buffered events, then refuses further appends (Aborted) and wakes
  // waiting appenders. Returns the Sync error, if any. Idempotent.
  Status Close();

  // What recovery found wrong at Open (empty unless options.accept_damage
  // let a damaged log open). Stays after DiscardDamaged, for reports.
  const LogDamage& damage() const;
  // True from an accepted damaged open until DiscardDamaged: Append and
  // Trim fail with Corruption meanwhile.
  bool damage_pending() const;
  // Calls f for every intact event after the damage (damage().salvaged), in
  // id order, read from the file; their ids are not consecutive. Stops at
  // f's first error. InvalidArgument without pending damage.
  Status ReplaySalvaged(const std::function<Status(const LogEvent&)>& f);
  // Ends pending damage: drops every event, recovered or salvaged (the caller
  // has applied them and made the result persistent), and restarts the log
  // empty with head id max(min_next_id, every id in the file + 1) at a slot
  // sequence above every slot in the file, in this open's generation.
  // Durable when it returns; appends work again.
  Status DiscardDamaged(uint64_t min_next_id);

  const std::string& path() const { return options_.path; }
  uint64_t data_slots() const { return data_slots_; }
  // Payload bytes one slot carries (slot size minus the slot header).
  uint32_t payload_per_slot() const { return payload_per_slot_; }
  // Byte offset in the file of the data slot holding slot sequence |seq|
  // (for tools and tests that inspect the file).
  uint64_t SlotOffset(uint64_t seq) const;

 private:
  // An immutable run of encoded slots with consecutive sequence numbers.
  struct Chunk {
    uint64_t start_seq = 0;
    std::string data;          // whole slots
    uint64_t complete_id = 0;  // newest event whose last slot is in or before this chunk
  };
  struct Superblock;

  OperationsLog(const OperationsLogOptions& options, Env* env, std::unique_ptr<File> file);

  static Status ValidateOptions(const OperationsLogOptions& options);
  static Status CreateFile(const OperationsLogOptions& options, Env* env);
  Status ReadSuperblock(Superblock* sb);
  Status Recover(const Superblock& sb);
  // The Corruption message for damage found at Open.
  std::string DescribeDamage(const LogDamage& d) const;
  Status DamagePendingError() const;
  // Writes the next superblock copy and syncs. Caller holds sb_mu_.
  Status WriteSuperblock(uint64_t head_id, uint64_t head_seq, uint32_t head_min_generation);


  void SealActiveLocked(uint64_t complete_id);
  uint64_t MemoryFrontSeqLocked() const;
  bool CopySlotFromMemoryLocked(uint64_t seq, std::string* out) const;
  void RecordErrorLocked(const Status& s);

  // The callers hold io_mu_.
  Status WriteChunk(const Chunk& c);
  Status WriteUnwrittenChunks();
  Status WriteAndSync(bool seal_active);
  // Writes out sealed chunks if no other thread is writing (called by Append).
  void WriteBehind();
  // After an fdatasync made every slot below |seq| durable: writes a sync
  // marker (log/log_slot.h) at |seq|, unsynced, so recovery can prove those
  // slots durable even if nothing is appended after them.
  void WriteSyncMarker(uint64_t seq, uint32_t generation);

  const OperationsLogOptions options_;
  Env* const env_;
  const std::unique_ptr<File> file_;
  const uint32_t slot_size_;
  const uint32_t payload_per_slot_;
  const uint64_t data_slots_;
  const uint64_t hard_slots_;   // used slots allowed by the hard limit
  const size_t chunk_bytes_;    // seal the active chunk at this size
  const size_t max_unsynced_bytes_;

  // Serializes superblock writers. Guards sb_sequence_.
  std::mutex sb_mu_;
  uint64_t sb_sequence_ = 0;

  // Serializes data writes and data syncs: one writer at a time keeps the
  // slots reaching the file in sequence order.
  std::mutex io_mu_;

  // Guards everything below. Lock order: sb_mu_, io_mu_, mu_.
  mutable std::mutex mu_;
  std::condition_variable space_cv_;
  bool closed_ = false;
  uint32_t generation_ = 0;        // of this open; written into every slot
  uint64_t session_first_id_ = 1;  // first id appended by this open
  uint64_t head_id_ = 1;
  uint64_t head_seq_ = 0;
  uint64_t last_id_ = 0;
  uint64_t next_seq_ = 0;
  std::deque<uint64_t> event_first_seq_;  // [i]: first slot sequence of event head_id_ + i
  // Buffered slots [durable_seq_, next_seq_): sealed chunks, then active_.
  std::deque<std::shared_ptr<const Chunk>> sealed_;
  std::string active_;
  uint64_t active_start_seq_ = 0;
  uint64_t written_seq_ = 0;   // slots below are written (not necessarily synced)
  uint64_t written_id_ = 0;
  uint64_t durable_seq_ = 0;   // slots below are durable
  uint64_t durable_id_ = 0;
  uint64_t appended_events_ = 0;
  uint64_t appended_bytes_ = 0;
  uint64_t syncs_ = 0;
  uint64_t throttled_appends_ = 0;
  uint64_t recovered_events_ = 0;
  std::string last_error_;
  LogDamage damage_;
  bool damage_pending_ = false;
};

}  // namespace dedupv1

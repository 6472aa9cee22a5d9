// LogRecovery finds what an operations log file holds when it is opened
// (docs/formats.md "Recovery"): the unbroken chain of complete events from the
// superblock's head, and whether the chain ends at a torn tail or at damage.
//
// The walk from the head stops at the first slot X that is not the chain's
// next slot. After a crash that is normal: writes are not ordered, so the
// slots appended since the last fdatasync may be lost in any order. It is
// damage when the file proves that slot X had been durable:
//  - an intact slot at its own position whose durable watermark is above X
//    (docs/formats.md "Data slot": it was appended after slot X had been
//    fdatasync'ed), or a sync marker saying so (written after each
//    fdatasync, for the last sync before a crash), or
//  - an intact slot at its own position written by a newer generation than
//    the superblock's (an open makes its superblock durable before it writes
//    any slot, so the newer superblock copy is damaged).
// A torn tail produces neither: every slot below the last durable point is
// intact, so the walk passes it, and a slot's watermark never exceeds the
// durable point of the run that wrote it. A slot sequence number is used again
// by a later open only if that open's walk stopped at or before it, i.e. it
// was not durable then. The in-memory head moves only after its superblock
// is durable, so a slot is overwritten by a later lap only once a durable
// superblock's head is past it.
//
// On damage the rest of the file is searched for what survived: after each
// damaged region the chain is picked up again at the next intact first
// fragment (of the same or a newer generation, with a higher id), and walked
// with the same rules; a further region counts as damage only if it is proven
// the same way. The events of the chain before the damage are the recovered
// chain; those after it are "salvaged" (applied only when the admin accepts
// the damage: dedupv1_replay --accept-log-damage).
//
// Known limit: damage to the slots of the last sync before a crash, when
// nothing was appended after that sync and its sync marker did not reach
// the disk (a power loss right after the sync), looks like a torn tail.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "log/log_slot.h"

namespace dedupv1 {

// The superblock fields recovery starts from.
struct LogRecoveryStart {
  uint64_t head_id = 1;
  uint64_t head_seq = 0;
  uint32_t head_min_generation = 0;
  uint32_t generation = 0;  // of the newest open, per the superblock
};

// What recovery found wrong in a log file, if anything.
struct LogDamage {
  // One slot that could not be used, and why.
  struct Slot {
    uint64_t seq = 0;
    std::string why;
  };
  // A run of unusable slot sequence numbers [first_seq, end_seq), the events
  // it cost (ids [first_lost_id, first_lost_id + lost_ids)) and each slot's
  // verdict (at least the first slot's). When the chain resumes at the
  // refused slot itself (refused for a generation newer than a damaged
  // superblock's), end_seq == first_seq. When nothing intact follows,
  // end_seq is first_seq + 1 and lost_ids is 0 (unknown: what follows is
  // lost like a torn tail).
  struct Gap {
    uint64_t first_seq = 0;
    uint64_t end_seq = 0;
    bool resumed = false;  // the chain was picked up again at end_seq
    uint64_t first_lost_id = 0;
    uint64_t lost_ids = 0;
    std::vector<Slot> slots;
  };
  // A complete, intact event after the first gap.
  struct Event {
    uint64_t id = 0;
    uint16_t type = 0;
    uint64_t first_seq = 0;
    uint64_t slots = 0;
  };

  std::vector<Gap> gaps;  // empty: no damage
  // The slot that proves the first gap is damage.
  uint64_t proof_seq = 0;
  uint64_t proof_id = 0;
  uint64_t proof_watermark = 0;    // its durable watermark (> gaps[0].first_seq), if by watermark
  uint32_t proof_generation = 0;   // its generation
  bool proof_by_generation = false;  // newer than the superblock's generation
  bool proof_is_marker = false;      // a sync marker (no event; proof_id is 0)
  std::vector<Event> salvaged;     // in id order
  // Highest slot sequence number, event id and generation of any intact slot
  // at its own position (chain or not): a log that continues after the
  // damage starts above all of them.
  uint64_t max_seq = 0;
  uint64_t max_id = 0;
  uint32_t max_generation = 0;

  bool damaged() const { return !gaps.empty(); }
  uint64_t lost_events() const;
};

struct LogRecoveryResult {
  uint64_t last_id = 0;   // newest complete event of the chain (head_id - 1 if none)
  uint64_t end_seq = 0;   // slot sequence after the chain's last complete event
  std::deque<uint64_t> event_first_seq;  // of each chain event, head first
  // Highest generation of any intact slot at its own position; a new open
  // takes a generation above it and the superblock's.
  uint32_t max_generation = 0;
  LogDamage damage;
};

// Reads the data slots of a log with |data_slots| slots of |payload_per_slot|
// payload bytes through |reader| (only reads). Reads the slots past the end
// of the chain once more (at most the whole file, sequentially) to tell a
// torn tail from damage; CRCs are computed only for slots newer than the end.
Status RecoverLogFile(LogSlotReader* reader, uint64_t data_slots, uint32_t payload_per_slot,
                      const LogRecoveryStart& start, LogRecoveryResult* out);

}  // namespace dedupv1

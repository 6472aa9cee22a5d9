// The stored form of the shared chunk index's omap keys and values (table
// format 2; index/rados_shared_chunk_table.h says what each means and how
// they change). Kept apart from the RADOS client so that every decoder of
// these bytes can be fed damaged input without a cluster
// (index/shared_table_records_fuzz.cc).
//
// Keys are typed by their first byte, so all keys of one fingerprint share
// its shard and a prefix read finds them:
//   "e"+fp          the entry: version 2, state U/C/D, container (u64),
//                   claimer slot (u16) and incarnation (u32), GC epoch (u64)
//   "u"+fp+slot     one slot's usage of the chunk (slot u16 big-endian):
//                   count (i64) and the last event id of that slot's log (u64)
//   "z"+fp          GC hint: why ('c' claimed, 'd' decremented), slot (u16),
//                   GC epoch (u64)
// Numbers little-endian. Every value ends in a CRC32C over key and value, so
// a value copied under another key fails as surely as a flipped byte.
//
// Decoders return Corruption saying what is wrong with the value (its
// caller adds pool, object and key); on any error the output is untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/fingerprint.h"
#include "core/base/status.h"

namespace dedupv1 {

struct SharedEntry {
  enum class State : uint8_t { kUncommitted = 'U', kCommitted = 'C', kDead = 'D' };
  State state = State::kUncommitted;
  uint64_t container = 0;
  uint16_t claimer_slot = 0;  // the slot whose claim made the entry
  uint32_t claimer_incarnation = 0;
  uint64_t epoch = 0;  // GC epoch of the last change (claim, flip, mark, revive)

  bool operator==(const SharedEntry& o) const = default;
  std::string ToString() const;  // "U{container 5, slot 1/3, epoch 0}"
};

struct SharedSlotUsage {
  int64_t count = 0;
  uint64_t last_event_id = 0;

  bool operator==(const SharedSlotUsage& o) const = default;
};

// One GC hint as stored (design 2.6 step 1: the leader pages them).
struct SharedHint {
  Fingerprint fp;
  char why = 0;       // kSharedHintClaimed or kSharedHintDecremented
  uint16_t slot = 0;  // the slot whose write set it
  uint64_t epoch = 0;
  std::string value;  // the stored value (GC compares it)
};

constexpr char kSharedEntryType = 'e', kSharedUsageType = 'u', kSharedHintType = 'z';
constexpr char kSharedHintClaimed = 'c', kSharedHintDecremented = 'd';

std::string SharedEntryKey(const Fingerprint& fp);
std::string SharedHintKey(const Fingerprint& fp);
std::string SharedUsageKey(const Fingerprint& fp, uint16_t slot);
// What every usage key of |fp| starts with.
std::string SharedUsagePrefix(const Fingerprint& fp);
// "e" + hex of the rest: a key in messages.
std::string SharedKeyName(const std::string& key);

std::string EncodeSharedEntry(const Fingerprint& fp, const SharedEntry& entry);
// |key| an entry key of a fingerprint of |fp_size| bytes.
Status DecodeSharedEntry(const std::string& key, const std::string& value, size_t fp_size, SharedEntry* entry);

std::string EncodeSharedUsage(const std::string& key, const SharedSlotUsage& usage);
// |key| a usage key of a fingerprint of |fp_size| bytes: its slot and value.
Status DecodeSharedUsage(const std::string& key, const std::string& value, size_t fp_size, uint16_t* slot,
                         SharedSlotUsage* usage);

std::string EncodeSharedHint(const Fingerprint& fp, char why, uint16_t slot, uint64_t epoch);
// |key| a hint key of a fingerprint of |fp_size| bytes.
Status DecodeSharedHint(const std::string& key, const std::string& value, size_t fp_size, SharedHint* hint);

}  // namespace dedupv1

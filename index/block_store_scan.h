// ScanBlockStore walks the whole block index store (a KvStore of block
// mappings keyed by EncodeBlockKey) in the store's own order and checks every
// record against its key: the key must be a block key, the value must pass
// its checksum, a format-2 value must carry the key's block id, and keys must
// increase strictly. A damaged B+tree page can hold a record under another
// block's key (one flipped key byte), two records under one key, or keys out
// of order. A lookup then misses the block whose record moved (it would read
// as never written, i.e. zeros), and under the keys concerned a lookup may
// return the wrong record and an update may replace the wrong one of two
// (destroying another block's only copy). The scan names those blocks and
// collects every record that belongs to them, so the block index refuses to
// serve them and dedupv1_check --repair puts each block's newest record back
// under its own key (RepairBlockStore).
//
// The scan costs one CRC32C per record (hardware) and no item parsing; only
// when it finds such a problem does it walk the store a second time, to
// collect the records of the blocks concerned (few, held in memory).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/base/types.h"
#include "index/kv_store.h"

namespace dedupv1 {

// One record of the store that is not simply the readable mapping of the
// block its key names, in key order.
struct BlockStoreProblem {
  enum class Kind {
    kMalformedKey,  // the key is not a 12-byte block key
    kUnreadable,    // the value fails its checksum or format check
    kDisplaced,     // the value carries another block's id
    kDuplicateKey,  // the same key as the record before it
    kOutOfOrder,    // the key sorts before the key of the record before it
  };
  Kind kind = Kind::kUnreadable;
  std::string key;         // as stored
  BlockId block;           // the key decoded (not for kMalformedKey)
  BlockId previous;        // kDuplicateKey, kOutOfOrder: the key of the record before it
  bool has_owner = false;  // the value is readable and carries a block id
  BlockId owner;
  uint64_t version = 0;    // of a readable value
  std::string detail;      // why the value cannot be read (kUnreadable, kMalformedKey)
};

// "malformed-key", "unreadable", "displaced", "duplicate-key", "out-of-order".
const char* BlockStoreProblemKindName(BlockStoreProblem::Kind kind);

// One line, e.g. "key 1/356 holds the record of block 1/100 (version 7)".
std::string DescribeBlockStoreProblem(const BlockStoreProblem& p);

// A block that a problem concerns (other than an unreadable value under its
// own key), and what the store holds of it.
struct BlockStoreResolution {
  // Lookups and updates under its key cannot be trusted: the key holds a
  // record of another block, a second record, or is out of order.
  bool ambiguous_key = false;
  // Its newest readable record is not under its own key, so a lookup does
  // not find it.
  bool displaced = false;
  // Its newest readable record (format 2, carrying its id), if any.
  bool has_newest = false;
  uint64_t newest_version = 0;
  std::string newest_key;
  std::string newest;
  // Every record under its key and every readable record carrying its id.
  std::vector<KvStore::Record> records;
  // Non-empty: why RepairBlockStore leaves the block alone (its key holds a
  // record that cannot be read, or an old-format one without an id, so the
  // block's newest record is unknown; or a record it would remove belongs to
  // such a block).
  std::string unrepairable;
  // One line: where its records are and what is wrong.
  std::string why;
};

struct BlockStoreScan {
  uint64_t records = 0;
  uint64_t old_format = 0;  // format-1 records left (no block id)
  uint64_t upgraded = 0;    // format-1 records this scan rewrote in format 2
  std::vector<BlockStoreProblem> problems;
  std::map<BlockId, BlockStoreResolution> blocks;
};

struct BlockStoreScanOptions {
  // Rewrite format-1 records in format 2 (with their key's id inside the
  // checksum) in atomic store writes of |upgrade_batch| records, after the
  // scan, if it found the store's keys in order. A store with problems keeps
  // its old records until it is repaired: an update under a damaged key
  // could replace the wrong record.
  bool upgrade_old_records = false;
  size_t upgrade_batch = 512;
  // Called for every well-formed key, in store order.
  std::function<void(const BlockId&)> on_key;
};

Status ScanBlockStore(KvStore* store, const BlockStoreScanOptions& options, BlockStoreScan* out);

// For every block of |scan| that can be repaired: removes exactly its
// records (KvStore::RemoveExactThenWrite) and stores its newest readable
// record under its own key; a block without one ends up with no record (its
// key only held other blocks' records). One atomic store write. |scan| must
// be current (no writes to the store since). *repaired: those blocks.
Status RepairBlockStore(KvStore* store, const BlockStoreScan& scan, std::vector<BlockId>* repaired);

// "1/100" for volume 1 block 100.
std::string BlockIdString(const BlockId& id);

}  // namespace dedupv1

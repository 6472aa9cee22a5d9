// ChunkTable is the persistent table of the chunk index (paper 3.4): what
// ChunkIndex needs from the store behind its in-memory auxiliary index. Two
// implementations: DiskHashTable (a paged hash file on the local SSD, the
// embedded default) and RadosChunkTable (sharded by fingerprint prefix over
// omap objects of a Ceph index pool, storage.backend = rados).
//
// Contract, as DiskHashTable has always kept it:
//  - Only committed entries are ever stored (ChunkIndexEntry's invariant);
//    Get returns them with committed == true.
//  - Apply applies puts and erases in order (a later op on the same
//    fingerprint wins). Puts and erases are idempotent, so re-applying a batch
//    whose outcome is unknown (an I/O error) is always safe. When Apply
//    returns OK every op is durable.
//  - A damaged record is Corruption naming where it is; its data is never
//    returned.
//  - Get may run concurrently with Apply; a Get sees each entry either before
//    or after an Apply, never a mix of versions of one entry.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "index/chunk_index_entry.h"

namespace dedupv1 {

// Where a table's online growth stands (index/growable_hash_table.h); a
// table that cannot grow reports growing == false and table_bytes == 0.
struct ChunkTableGrowth {
  uint64_t table_bytes = 0;      // size of the table new entries go to
  bool growing = false;          // entries are being moved into a larger table
  uint64_t from_bytes = 0;       // while growing: the size of the table being emptied
  uint64_t pages_moved = 0;      // while growing: its bucket pages moved so far in this process
  uint64_t pages_total = 0;      // while growing: its bucket pages
  uint64_t growths_finished = 0; // since the table was opened
  bool requested = false;        // a growth was asked for and has not begun yet
  std::string last_error;        // the last failed growth step (it is retried); empty if none
};

class ChunkTable {
 public:
  // One change of a batch: put |entry| under |fp|, or erase |fp| (absent = no-op).
  struct Op {
    Fingerprint fp;
    ChunkIndexEntry entry;
    bool erase = false;
  };
  using Visitor = std::function<void(const Fingerprint&, const ChunkIndexEntry&)>;

  virtual ~ChunkTable() = default;

  // NotFound if |fp| has no entry; Corruption if its record is damaged.
  virtual Status Get(const Fingerprint& fp, ChunkIndexEntry* entry) = 0;

  // Looks up every fingerprint of |fps|: (*found)[i] tells whether
  // (*entries)[i] holds its entry. An error (I/O, Corruption) fails the whole
  // call. The default loops Get; a remote table batches (see batched()).
  virtual Status GetMany(const std::vector<Fingerprint>& fps, std::vector<ChunkIndexEntry>* entries,
                         std::vector<bool>* found);

  // True if GetMany costs much less than the same number of Gets (one round
  // trip per shard, not per key): callers then prefetch runs of lookups.
  virtual bool batched() const { return false; }
  // Round trips a GetMany of |keys| random fingerprints costs (the default
  // loops Get: one each).
  virtual double GetManyCost(size_t keys) const { return static_cast<double>(keys); }

  // Applies the batch (see the contract above). NoSpace if the table cannot
  // take it (DiskHashTable: all-or-nothing, nothing applied).
  virtual Status Apply(const std::vector<Op>& ops) = 0;

  // Entries stored (see each implementation for how exact and how cheap).
  virtual uint64_t entry_count() const = 0;
  // Entries the table admits in total.
  virtual uint64_t capacity() const = 0;
  // Independent units (bucket pages, shards) an Apply batch spreads over:
  // ChunkIndex sizes its write-back batches at a few entries per unit.
  virtual uint64_t batch_units() const = 0;
  // Where the table is, for messages ("/data/chunk-index", "rados:pool/ns").
  virtual std::string Where() const = 0;

  // Reads the whole table and checks every record and the entry count.
  // |pages_checked| counts the reads (pages, omap pages, header included).
  // |visit|, if given, sees every entry once, while Apply waits.
  virtual Status Verify(uint64_t* pages_checked, const Visitor& visit = nullptr) = 0;

  // Visits every entry in one pass while Apply goes on: an entry changed
  // during the pass is seen in one of its versions, one inserted into a part
  // already read is missed, none is seen twice unless it is erased and
  // inserted again during the pass.
  virtual Status ForEachEntry(const Visitor& visit) = 0;

  // Makes every applied batch durable.
  virtual Status Sync() = 0;

  // Asks the table to grow online to at least |min_bytes| (0: by its
  // configured factor) while Get and Apply go on; returns at once, the
  // growth runs in the background (growth() shows it). NotSupported by a
  // table that cannot grow. While a growth runs, a request for more than it
  // reaches is queued behind it.
  virtual Status Grow(uint64_t min_bytes) {
    (void)min_bytes;
    return Status::NotSupported("the chunk index table at " + Where() + " cannot grow");
  }
  virtual ChunkTableGrowth growth() const { return ChunkTableGrowth(); }
};

}  // namespace dedupv1

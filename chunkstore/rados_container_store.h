// RadosContainerStore keeps each container as one RADOS object in the data
// pool of a RadosCluster, in the store's namespace (RadosOptions::store):
// object "c.<id as 16 hex digits>". The fixed-width name makes the listing
// unambiguous (anything else in the namespace, such as the store marker
// "container-store", is not a container) and sorts by id.
//
// - Put is one write op (an exclusive create and write_full, see UsedBytes):
//   RADOS applies it atomically and acknowledges it once every replica has
//   it on disk, so an acknowledged Put is durable. PutNew (what the chunk
//   store commits with) never replaces an object: on "exists" it reads it,
//   and only the same bytes (an earlier attempt that landed) are OK. Writes carry FULL_TRY: a
//   pool that is full or over its quota fails them at once (NoSpace) instead
//   of librados holding them until the op timeout, and removes still pass.
// - Get reads the whole object and its size in one compound op (the size
//   proves the read was not cut short); GetHead and GetRange read only their
//   range, one op each. A range shorter than asked is Corruption. GetRanges
//   has many such reads in flight at once.
// - List pages through the namespace's object listing and parses the names;
//   it lists only the ids of the store's range (a gateway slot's: ids
//   (slot << 48) + sequence, RadosOptions::gateway), so everything that
//   enumerates containers (recovery, GC, UsedBytes, the checker) sees only
//   its own slot's. Get, GetRange and Delete serve any id.
// - UsedBytes: RADOS keeps no per-namespace byte count (pool stats cover all
//   stores of a pool), so the first call lists the namespace and stats every
//   container (many stats in flight), and later calls return that total kept
//   up to date by Put and Delete. To know what it replaces, Put tries an
//   exclusive create first (one op when the id is new, the normal case) and
//   only on "exists" stats the old object; Delete stats before removing (GC
//   only). A failed Put or Delete may or may not have happened in RADOS (a
//   timeout), so it drops the total and the next call counts again. Nothing
//   is counted at Open: a gateway starting over a large store serves at once.
//
// Every RADOS call is counted by the cluster (RadosOpTimer) and every error
// becomes a Status naming pool, namespace and object (RadosCluster::ToStatus):
// a full pool or one over its quota is NoSpace naming the pool.
// Thread-safe; two concurrent Puts of the same id are not supported.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "chunkstore/container_store.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

// The object in the store's namespace of the data pool that says the store
// was created (RadosStorageBackend, StorageOpenMode).
constexpr char kRadosStoreMarkerObject[] = "container-store";

class RadosContainerStore : public ContainerStore {
 public:
  // Lists ids in [first, end); end 0 = no upper bound (a store without
  // gateway slots: every container).
  explicit RadosContainerStore(std::shared_ptr<RadosCluster> cluster, ContainerId first = 0, ContainerId end = 0);

  // Whether the store marker exists; creates it if |create| (one op either way).
  Status CheckMarker(bool create, bool* exists);

  // Replaces an existing object (tools and tests; the chunk store uses PutNew).
  Status Put(ContainerId id, const std::string& bytes) override;
  // An exclusive create; on "exists" the object is read and compared
  // (ContainerStore::PutNew), so a writer of another incarnation or store
  // never replaces a container it did not write, even in a race.
  Status PutNew(ContainerId id, const std::string& bytes) override;
  Status Get(ContainerId id, std::string* bytes) override;
  Status GetHead(ContainerId id, size_t n, std::string* bytes) override;
  Status GetRange(ContainerId id, uint64_t offset, size_t n, std::string* bytes) override;
  // Up to 64 reads in flight, one op each.
  void GetRanges(std::vector<RangeRead>* reads) override;
  Status Delete(ContainerId id) override;
  Status List(std::vector<ContainerId>* ids) override;
  Status UsedBytes(uint64_t* bytes) override;
  // "rados:<pool>/<store>/<object>".
  std::string Where(ContainerId id) const override;
  // Object "ca.<from as 16 hex digits>" in the data pool (never listed as a
  // container): the target id and a CRC32C over both ids
  // (rados_foreign_aliases.cc).
  Status PutAlias(ContainerId from, ContainerId to) override;
  Status GetAlias(ContainerId from, ContainerId* to) override;
  Status DeleteAlias(ContainerId from) override;
  static std::string AliasObjectName(ContainerId from);

  // The object name of container |id|, and the inverse (false for a name
  // that is not a container's).
  static std::string ObjectName(ContainerId id);
  static bool ParseObjectName(const std::string& name, ContainerId* id);

 private:
  // The size of the object of |id|: NotFound if absent.
  Status StatObject(const std::string& object, uint64_t* size);
  // An exclusive create of the object with |bytes|; |*existed| (not an
  // error) if there was one already, which is left as it was.
  Status CreateObject(const std::string& object, const std::string& bytes, bool* existed);
  // Writes |bytes| over the object; |*replaced| is the size of the object it
  // replaced (0 if there was none).
  Status WriteObject(const std::string& object, const std::string& bytes, uint64_t* replaced);
  // |n| bytes from |offset|; with |exact| fewer is Corruption, else the read
  // stops at the end of the object.
  Status ReadObject(ContainerId id, uint64_t offset, size_t n, bool exact, std::string* bytes);
  // The Status and bytes of a read of |n| bytes at |offset| that returned |r|
  // and |bl|.
  Status ReadResult(ContainerId id, uint64_t offset, size_t n, bool exact, int r, const librados::bufferlist& bl,
                    std::string* bytes) const;
  // Sums the sizes of all containers (stats in flight).
  Status CountUsedBytes(uint64_t* total);

  const std::shared_ptr<RadosCluster> cluster_;
  const ContainerId first_;  // List's range: [first_, end_), end_ 0 = unbounded
  const ContainerId end_;
  // Put and Delete hold it shared across their op and the update of the
  // total; counting the total holds it exclusively, so a Put is either seen
  // by the count or added after it, never both.
  std::shared_mutex used_mu_;
  std::atomic<bool> used_known_{false};
  std::atomic<uint64_t> used_bytes_{0};
};

}  // namespace dedupv1

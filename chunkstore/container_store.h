// ContainerStore is the narrow interface between the chunk store and the
// place serialized containers live: local files (LocalContainerStore), memory
// (MemoryContainerStore, for tests) or, later, an object store such as Ceph
// RADOS. Backends are chosen by name in chunkstore/storage_backend_registry.h;
// the chunk store's other state lives behind ContainerCatalog
// (chunkstore/container_catalog.h). Objects are whole containers,
// written and read in one piece and named by container id.
// Implementations are thread-safe for calls on different ids.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

class ContainerStore {
 public:
  virtual ~ContainerStore() = default;
  // Stores the whole container durably (when OK is returned it survives a
  // crash) and atomically (after a crash either the whole new object is there
  // or none). Overwrites an existing one. NoSpace if the store is full.
  virtual Status Put(ContainerId id, const std::string& bytes) = 0;
  // Put for an id that must be new: what the chunk store commits (its ids
  // are never reused, chunkstore/container_id_allocator.h). An object already
  // under |id| is never replaced: the same bytes are OK (an earlier attempt
  // of this put landed, say a commit retried after a timeout), other bytes
  // are an IOError naming where and that another writer owns the id (a
  // paused old incarnation of a gateway slot, a second store on one
  // namespace): replacing them would destroy that writer's container. The
  // default looks, then Puts: enough for stores with one writer (a local
  // directory under its LOCK); a shared store checks atomically.
  virtual Status PutNew(ContainerId id, const std::string& bytes) {
    std::string stored;
    Status s = Get(id, &stored);
    if (s.IsNotFound()) return Put(id, bytes);
    if (!s.ok()) return s.WithContext("put new container " + std::to_string(id));
    return SameOrOwnedByAnother(id, stored, bytes);
  }
  // NotFound if absent.
  virtual Status Get(ContainerId id, std::string* bytes) = 0;
  // The first min(n, size) bytes of the container: its metadata, without
  // reading megabytes of chunk data (object stores such as RADOS read ranges
  // natively). NotFound if absent. The default reads the whole container.
  virtual Status GetHead(ContainerId id, size_t n, std::string* bytes) {
    DEDUPV1_RETURN_IF_ERROR(Get(id, bytes));
    if (bytes->size() > n) bytes->resize(n);
    return Status::OK();
  }
  // Exactly |n| bytes from |offset|: one chunk, read without the rest of its
  // container. NotFound if absent; Corruption if the container is shorter.
  // The default reads the whole container.
  virtual Status GetRange(ContainerId id, uint64_t offset, size_t n, std::string* bytes) {
    std::string all;
    DEDUPV1_RETURN_IF_ERROR(Get(id, &all));
    if (offset > all.size() || n > all.size() - offset) {
      return Status::Corruption("container " + std::to_string(id) + " is shorter than its metadata says");
    }
    bytes->assign(all, offset, n);
    return Status::OK();
  }
  // One GetRange of a batch (GetRanges): in |id|, |offset|, |n| and
  // optionally |into|; out |bytes| (or the n bytes at |into|) and |status|,
  // as GetRange would return them.
  struct RangeRead {
    ContainerId id = kNoContainer;
    uint64_t offset = 0;
    size_t n = 0;
    // Where the caller wants the n bytes (its own memory, n bytes long), if
    // anywhere: then |bytes| stays empty. A failed read may have written
    // part of them.
    char* into = nullptr;
    std::string bytes;
    Status status;
  };
  // True if GetRanges reads a range |into| the caller's memory without a
  // copy of its own (a local file's pread). Then a reader gains by asking
  // for the chunks it can place, at the price of ranges split where placed
  // and other chunks meet; a store that copies anyway (RADOS: its buffers)
  // keeps the fewer, coalesced ranges.
  virtual bool ReadsIntoPlace() const { return false; }
  // Many ranges, of one or many containers, each with its own result: for a
  // read path that knows several chunks it needs, an object store reads them
  // all at once (many operations in flight) instead of one round trip after
  // the other. The default reads them one after the other.
  virtual void GetRanges(std::vector<RangeRead>* reads) {
    for (RangeRead& r : *reads) {
      r.status = GetRange(r.id, r.offset, r.n, &r.bytes);
      MoveInto(&r);
    }
  }
  // NotFound if absent. Durable when OK is returned.
  virtual Status Delete(ContainerId id) = 0;
  // Ids of all stored containers, in no particular order.
  virtual Status List(std::vector<ContainerId>* ids) = 0;
  // Bytes taken by the stored containers.
  virtual Status UsedBytes(uint64_t* bytes) = 0;
  // Foreign aliases (cluster scope, docs/design-15.md 2.3): other gateway
  // slots read a slot's containers by id, not through its merge records, so
  // a merge first records for each merged id where its chunks go.
  // PutAlias(from, to) stores "the chunks of |from| are in |to|" durably;
  // GetAlias reads it (NotFound if there is none; Corruption if damaged);
  // DeleteAlias removes it (none is fine). Stores that no other slot reads
  // keep none.
  virtual Status PutAlias(ContainerId from, ContainerId to) {
    (void)from;
    (void)to;
    return Status::NotSupported("this container store keeps no foreign aliases");
  }
  virtual Status GetAlias(ContainerId from, ContainerId* to) {
    (void)to;
    return Status::NotFound("no foreign alias of container " + std::to_string(from));
  }
  virtual Status DeleteAlias(ContainerId from) {
    (void)from;
    return Status::OK();
  }
  // Where container |id| lives, for messages and tools (a file path, an
  // object name); it need not exist.
  virtual std::string Where(ContainerId id) const { return "container " + std::to_string(id); }

 protected:
  // For GetRanges of stores that read into their own buffers: a read that
  // wanted its bytes |into| the caller's memory gets them copied there.
  static void MoveInto(RangeRead* r) {
    if (r->into == nullptr || !r->status.ok()) return;
    if (r->bytes.size() != r->n) {
      r->status = Status::Corruption("container " + std::to_string(r->id) + ": a read of " + std::to_string(r->n) +
                                     " bytes at " + std::to_string(r->offset) + " returned " +
                                     std::to_string(r->bytes.size()));
    } else {
      std::memcpy(r->into, r->bytes.data(), r->n);
    }
    r->bytes.clear();
  }
  // PutNew's verdict on |stored|, found under |id| where |bytes| were to go.
  Status SameOrOwnedByAnother(ContainerId id, const std::string& stored, const std::string& bytes) const {
    if (stored == bytes) return Status::OK();
    return Status::IOError("container " + std::to_string(id) + " (" + Where(id) + ") already holds " +
                           std::to_string(stored.size()) + " other bytes (" + std::to_string(bytes.size()) +
                           " to write): another writer owns this id; its container is not replaced");
  }
};

}  // namespace dedupv1

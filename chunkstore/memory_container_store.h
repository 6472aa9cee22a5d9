// MemoryContainerStore keeps containers in memory: the test backend
// ("memory" in chunkstore/storage_backend_registry.h). NOT DURABLE: the
// containers live only as long as the process (and only as long as some
// store or the registry holds their Contents). It shows what a backend must
// provide and lets the chunk store's tests run without a disk.
// Stores made on the same Contents see the same containers, the way two
// LocalContainerStores on one directory do; that is how a test "reopens" a
// memory store.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chunkstore/container_store.h"

namespace dedupv1 {

class MemoryContainerStore : public ContainerStore {
 public:
  // The containers, shareable between stores.
  struct Contents {
    std::mutex mu;
    std::map<ContainerId, std::string> containers;
    uint64_t used_bytes = 0;
  };

  // A store on |contents|, or on new empty contents if null; |name| says
  // which in messages.
  explicit MemoryContainerStore(std::string name, std::shared_ptr<Contents> contents = nullptr);

  Status Put(ContainerId id, const std::string& bytes) override;
  Status Get(ContainerId id, std::string* bytes) override;
  Status GetHead(ContainerId id, size_t n, std::string* bytes) override;
  Status GetRange(ContainerId id, uint64_t offset, size_t n, std::string* bytes) override;
  Status Delete(ContainerId id) override;
  Status List(std::vector<ContainerId>* ids) override;
  Status UsedBytes(uint64_t* bytes) override;
  std::string Where(ContainerId id) const override;

  const std::shared_ptr<Contents>& contents() const { return contents_; }

 private:
  const std::string name_;
  const std::shared_ptr<Contents> contents_;
};

}  // namespace dedupv1

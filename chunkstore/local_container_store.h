// LocalContainerStore keeps each container in its own file under a
// directory: DIR/xx/<id as 16 hex digits>.ctr, where xx is the low byte of
// the id in hex (256 subdirectories keep directories small). A Put writes
// "<name>.tmp", syncs it, renames it over the final name and syncs the
// subdirectory, so a container file is always complete. Leftover *.tmp files
// (from a crash during Put) are removed at Open.
// Thread-safe; two concurrent Puts of the same id are not supported.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "chunkstore/container_store.h"
#include "core/base/env.h"

namespace dedupv1 {

class LocalContainerStore : public ContainerStore {
 public:
  // Creates |dir| and its subdirectories if needed, removes leftover temp
  // files and sums the size of the stored containers.
  static Status Open(Env* env, const std::string& dir, std::unique_ptr<LocalContainerStore>* out);
  // For inspecting a directory another process may have open (core/engine/data_dir.h):
  // creates, removes and syncs nothing; missing subdirectories hold no
  // containers. Use it only to read.
  static Status OpenExisting(Env* env, const std::string& dir, std::unique_ptr<LocalContainerStore>* out);

  Status Put(ContainerId id, const std::string& bytes) override;
  Status Get(ContainerId id, std::string* bytes) override;
  Status GetHead(ContainerId id, size_t n, std::string* bytes) override;
  Status GetRange(ContainerId id, uint64_t offset, size_t n, std::string* bytes) override;
  void GetRanges(std::vector<RangeRead>* reads) override;
  bool ReadsIntoPlace() const override { return true; }
  Status Delete(ContainerId id) override;
  Status List(std::vector<ContainerId>* ids) override;
  Status UsedBytes(uint64_t* bytes) override;

  // Path of the file of container |id| (for tools and tests).
  std::string ContainerPath(ContainerId id) const;
  std::string Where(ContainerId id) const override { return ContainerPath(id); }

 private:
  LocalContainerStore(Env* env, std::string dir, bool read_only)
      : env_(env), dir_(std::move(dir)), read_only_(read_only) {}
  static Status OpenImpl(Env* env, const std::string& dir, bool read_only,
                         std::unique_ptr<LocalContainerStore>* out);
  std::string SubDir(ContainerId id) const;
  std::string SubDirByIndex(int index) const;
  // Bytes [offset, offset + n) of a container file; with |exact| a file too
  // short for them is Corruption, else the read stops at the end of the file.
  Status ReadPart(ContainerId id, uint64_t offset, size_t n, bool exact, std::string* bytes);
  // The container's file, opened for reading, and its size.
  Status OpenForRead(ContainerId id, std::unique_ptr<File>* f, uint64_t* size);
  // ReadPart's read from the open |f| of |size| bytes: into |into| (n bytes
  // of the caller's) if not null, else into |bytes|.
  Status ReadOpen(File* f, uint64_t size, ContainerId id, uint64_t offset, size_t n, bool exact, std::string* bytes,
                  char* into);

  Env* const env_;
  const std::string dir_;
  const bool read_only_;  // OpenExisting
  std::atomic<uint64_t> used_bytes_{0};
};

}  // namespace dedupv1

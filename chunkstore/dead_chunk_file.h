// DeadChunkFile keeps garbage collection's dead-chunk marks across restarts:
// per committed container, the fingerprints of chunks the chunk index no
// longer names (ChunkStore::MarkDead). It is the dead-mark part of the local
// catalog (chunkstore/local_container_catalog.h). Without it the marks are memory only,
// so after each start the first GC round has to look every chunk of a
// container that still holds garbage up in the chunk index to find it again.
//
// Format (little endian): records only, each
//   fixed32 payload length | fixed32 CRC32C of the payload |
//   payload = fixed64 container id, fixed32 count, count fingerprints
//   (FingerprintSize bytes each).
// Marks for one container may span several records (one per GC round).
//
// Invariants and why they are safe:
// - A mark is only ever a hint that lets GC skip work and merges leave a
//   chunk out. Losing marks is always safe (GC finds the garbage again);
//   applying a wrong one is not. So reading stops at the first record that is
//   torn or fails its CRC, and the caller decides which records still apply
//   (chunkstore/dead_chunk_marks.h drops those of containers that were merged
//   or deleted).
// - Append writes behind the last good record and syncs; after a failed
//   append the file may end in a torn record, so the caller rewrites it
//   (Rewrite is atomic: temp file, sync, rename) before appending again.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/base/env.h"
#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

// The file's name in the container directory.
constexpr char kDeadChunkFileName[] = "dead-chunks";

class DeadChunkFile {
 public:
  using Marks = std::map<ContainerId, std::vector<Fingerprint>>;

  DeadChunkFile(Env* env, std::string path, size_t fingerprint_size);

  // Reads every intact record into |marks| (a missing file is empty).
  // |intact| is false if reading stopped at a torn or corrupt record: the
  // marks after it are lost, and the file must be rewritten before the next
  // Append.
  Status Read(Marks* marks, bool* intact);
  // Appends |marks| as records after the file's current end and syncs.
  Status Append(const Marks& marks);
  // Replaces the file with exactly |marks|, atomically.
  Status Rewrite(const Marks& marks);

  const std::string& path() const { return path_; }
  // The file's size after the last Read, Append or Rewrite.
  uint64_t size() const { return size_; }
  // The bytes one mark takes in the file (records add a few bytes each).
  size_t mark_size() const { return fingerprint_size_; }

 private:
  std::string Encode(const Marks& marks) const;

  Env* const env_;
  const std::string path_;
  const size_t fingerprint_size_;
  uint64_t size_ = 0;
};

}  // namespace dedupv1

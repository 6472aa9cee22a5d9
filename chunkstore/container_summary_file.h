// ContainerSummaryFile is the summary part of the local catalog
// (chunkstore/local_container_catalog.h). It keeps, per committed container, what garbage
// collection's full scan needs to judge a container whose live chunks all
// have an index entry: how many live chunks it holds, the sum of their
// footprints, its serialized size, and how many of its chunks were marked
// dead when the summary was taken (the summary applies only while the
// container has exactly that many dead marks). With it, the first round after a start reads no container
// metadata for such containers (at 1 TiB that is ~256 K random reads of
// ~20 KiB each).
//
// Format (little endian): fixed 36-byte records, each
//   fixed64 container id | fixed64 live footprint sum | fixed64 serialized
//   size | fixed32 live chunk count | fixed32 dead chunk count |
//   fixed32 CRC32C of the preceding 32 bytes.
//
// Invariants and why they are safe:
// - Containers never change and their ids are never reused, so a record
//   describes its container for as long as the container exists. A record of
//   a container that is gone is dropped by the reader's caller.
// - Appends are not synced: a record lost in a crash only means that
//   container's metadata is read again. Records are independent, so a torn
//   or zeroed record is skipped and reading goes on. A wrong summary could
//   only misjudge how full a container is (a merge or not), never drop a
//   chunk: merges and deletions look at the container itself, and a
//   container is deleted only when it has no live chunk by a count that
//   the chunk index confirmed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chunkstore/container_summary.h"
#include "core/base/env.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

// The file's name in the container directory.
constexpr char kContainerSummaryFileName[] = "container-summaries";

class ContainerSummaryFile {
 public:
  using Summaries = ContainerSummaryMap;
  static constexpr size_t kRecordSize = 36;

  ContainerSummaryFile(Env* env, std::string path);

  // Reads every intact record into |summaries| (a missing file is empty; a
  // later record of a container replaces an earlier one); |records| counts
  // the intact records, |skipped| those that were torn or failed their CRC.
  Status Read(Summaries* summaries, uint64_t* records, uint64_t* skipped);
  // Appends records after the end of the file as last read or written
  // (not synced).
  Status Append(const std::vector<std::pair<ContainerId, ContainerSummary>>& records);
  // Replaces the file with exactly |summaries|, atomically.
  Status Rewrite(const Summaries& summaries);

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

 private:
  static void EncodeRecord(ContainerId id, const ContainerSummary& s, std::string* out);

  Env* const env_;
  const std::string path_;
  uint64_t size_ = 0;
  std::unique_ptr<File> file_;  // opened by the first Append
};

}  // namespace dedupv1

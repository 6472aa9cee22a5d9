// MemoryContainerCatalog keeps the chunk store's catalog
// (container_catalog.h) in memory: the test backend ("memory" in
// chunkstore/storage_backend_registry.h). NOT DURABLE: the catalog lives
// only as long as the process. It keeps the parts the way the local files
// do (dead marks and summaries as appended records, so the chunk store's
// rewrite rules see the same counts), so the same catalog tests hold for
// both. Catalogs made on the same Contents share it (a test's "reopen").
// Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "chunkstore/container_catalog.h"

namespace dedupv1 {

class MemoryContainerCatalog : public ContainerCatalog {
 public:
  struct Contents {
    std::mutex mu;
    bool has_id_mark = false;
    ContainerId id_mark = 0;
    bool has_merge_records = false;
    std::vector<MergeRecord> merge_records;
    bool has_dead_marks = false;
    std::vector<std::pair<ContainerId, std::vector<Fingerprint>>> dead_records;  // in append order
    uint64_t dead_bytes = 0;  // what the records would take in the local file
    bool has_summaries = false;
    std::vector<std::pair<ContainerId, ContainerSummary>> summary_records;  // in append order
  };

  // A catalog on |contents|, or on new empty contents if null; |name| says
  // which in messages.
  MemoryContainerCatalog(std::string name, size_t fingerprint_size, std::shared_ptr<Contents> contents = nullptr);

  bool Exists(CatalogPart part) override;
  std::string Where(CatalogPart part) const override;

  Status ReadIdMark(ContainerId* next_free, bool* found) override;
  Status WriteIdMark(ContainerId next_free) override;

  Status ReadMergeRecords(std::vector<MergeRecord>* records) override;
  Status WriteMergeRecords(const std::vector<MergeRecord>& records) override;

  Status ReadDeadMarks(DeadMarks* marks, bool* intact) override;
  Status AppendDeadMarks(const DeadMarks& marks) override;
  Status RewriteDeadMarks(const DeadMarks& marks) override;
  Status DeleteDeadMarks() override;
  uint64_t DeadMarkBytes() const override;
  size_t DeadMarkSize() const override { return fingerprint_size_; }

  Status ReadSummaries(ContainerSummaryMap* summaries, uint64_t* records, uint64_t* skipped) override;
  Status AppendSummaries(const std::vector<std::pair<ContainerId, ContainerSummary>>& records) override;
  Status RewriteSummaries(const ContainerSummaryMap& summaries) override;

  const std::shared_ptr<Contents>& contents() const { return contents_; }

 private:
  void AppendDeadLocked(const DeadMarks& marks);

  const std::string name_;
  const size_t fingerprint_size_;
  const std::shared_ptr<Contents> contents_;
};

}  // namespace dedupv1

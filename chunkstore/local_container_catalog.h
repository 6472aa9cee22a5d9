// LocalContainerCatalog keeps the chunk store's catalog (container_catalog.h)
// in files beside the containers (docs/formats.md):
//   DIR/container-id          the id mark: next free id (fixed64) and its
//                             CRC32C (fixed32), replaced atomically
//   DIR/container-aliases     one line "merge TARGET SOURCE..." per merge
//                             record, then "crc HEX"; replaced atomically
//   DIR/dead-chunks           chunkstore/dead_chunk_file.h
//   DIR/container-summaries   chunkstore/container_summary_file.h
// Damage is reported naming the file. Constructing one reads and writes
// nothing, so tools and the data-directory check (core/engine/data_dir.h) may make
// one to look at a directory another process has open.
// Thread-safe (one mutex per file).
#pragma once

#include <mutex>
#include <string>

#include "chunkstore/container_catalog.h"
#include "chunkstore/container_summary_file.h"
#include "chunkstore/dead_chunk_file.h"
#include "core/base/env.h"

namespace dedupv1 {

// The catalog's files in the container directory besides the containers.
constexpr char kContainerIdFileName[] = "container-id";          // id high-water mark
constexpr char kContainerAliasFileName[] = "container-aliases";  // merge records

class LocalContainerCatalog : public ContainerCatalog {
 public:
  LocalContainerCatalog(Env* env, const std::string& dir, size_t fingerprint_size);

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
  size_t DeadMarkSize() const override { return dead_file_.mark_size(); }

  Status ReadSummaries(ContainerSummaryMap* summaries, uint64_t* records, uint64_t* skipped) override;
  Status AppendSummaries(const std::vector<std::pair<ContainerId, ContainerSummary>>& records) override;
  Status RewriteSummaries(const ContainerSummaryMap& summaries) override;

 private:
  Env* const env_;
  const std::string id_mark_path_;
  const std::string alias_path_;
  std::mutex id_mark_mu_;
  std::mutex alias_mu_;
  mutable std::mutex dead_mu_;
  DeadChunkFile dead_file_;  // under dead_mu_
  std::mutex summary_mu_;
  ContainerSummaryFile summary_file_;  // under summary_mu_
};

}  // namespace dedupv1

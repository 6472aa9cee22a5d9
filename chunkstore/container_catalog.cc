#include "chunkstore/container_catalog.h"

#include "chunkstore/container.h"

namespace dedupv1 {

Status ContainerCatalog::CheckComplete(ContainerStore* store, const std::vector<ContainerId>& ids,
                                       bool ids_handed_out) {
  if (!Exists(CatalogPart::kIdMark) && (!ids.empty() || ids_handed_out)) {
    return Status::Corruption(Where(CatalogPart::kIdMark) + " is missing, but container ids were handed out (" +
                              std::to_string(ids.size()) + " containers are stored): without it new containers "
                              "could get ids that the indexes, the log or the checkpoint still name; restore it "
                              "from a backup of the data directory");
  }
  if (Exists(CatalogPart::kMergeRecords)) return Status::OK();
  for (ContainerId id : ids) {
    std::string head;
    uint32_t count = 0;
    // A container whose header cannot be read is damaged anyway: its reads
    // fail whatever the merge records say, so it does not decide.
    if (!store->GetHead(id, Container::kHeaderSize, &head).ok() ||
        !Container::HeaderAliasCount(id, head, &count).ok() || count == 0) {
      continue;
    }
    return Status::Corruption(Where(CatalogPart::kMergeRecords) + " is missing, but container " +
                              std::to_string(id) + " was merged by garbage collection and answers to " +
                              std::to_string(count) + " older ids that block mappings and chunk-index entries "
                              "may name: without the file they name nothing; restore it from a backup of the "
                              "data directory");
  }
  return Status::OK();
}

}  // namespace dedupv1

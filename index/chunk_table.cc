#include "index/chunk_table.h"

namespace dedupv1 {

Status ChunkTable::GetMany(const std::vector<Fingerprint>& fps, std::vector<ChunkIndexEntry>* entries,
                           std::vector<bool>* found) {
  entries->assign(fps.size(), ChunkIndexEntry());
  found->assign(fps.size(), false);
  for (size_t i = 0; i < fps.size(); i++) {
    Status s = Get(fps[i], &(*entries)[i]);
    if (s.IsNotFound()) continue;
    DEDUPV1_RETURN_IF_ERROR(s);
    (*found)[i] = true;
  }
  return Status::OK();
}

}  // namespace dedupv1

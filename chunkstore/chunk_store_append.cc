// ChunkStore's open containers: StoreChunk appends new chunks to one of the
// containers open for writing (chosen by the stream hint) and hands a full
// one to the writer threads (chunk_store_commit.cc).
#include "chunkstore/chunk_store.h"

namespace dedupv1 {

Status ChunkStore::StoreChunk(const Fingerprint& fp, const uint8_t* data, size_t n,
                              uint64_t stream_hint, ContainerId* id) {
  if (fp.size != FingerprintSize(options_.fp_type)) {
    return Status::InvalidArgument("chunk store: fingerprint " + fp.ToHex() + " has " +
                                   std::to_string(fp.size) + " bytes, expected " +
                                   std::to_string(FingerprintSize(options_.fp_type)));
  }
  if (n > Container::MaxChunkSize(options_.container_size, options_.fp_type)) {
    return Status::InvalidArgument("chunk store: chunk of " + std::to_string(n) +
                                   " bytes does not fit a container of " +
                                   std::to_string(options_.container_size) + " bytes");
  }
  // Compress before taking the lock: it is the expensive part.
  std::string compressed;
  std::string_view stored(reinterpret_cast<const char*>(data), n);
  Compression stored_as = Compression::kNone;
  if (options_.compression != Compression::kNone &&
      Compress(options_.compression, data, n, &compressed)) {
    stored = compressed;
    stored_as = options_.compression;
  }

  std::unique_lock<std::mutex> l(mu_);
  // Back-pressure: do not let unwritten containers pile up in memory.
  const size_t max_pending =
      2 * static_cast<size_t>(options_.writer_threads) + static_cast<size_t>(options_.open_containers);
  done_cv_.wait(l, [&] {
    return closing_ || failed_count_ > 0 || queue_.size() + committing_ < max_pending;
  });
  if (closing_) return Status::Aborted("chunk store is closed");
  if (failed_count_ > 0) return sticky_error_;

  const size_t slot = static_cast<size_t>(stream_hint % open_.size());
  std::shared_ptr<Container>& c = open_[slot];
  if (c) {
    const bool duplicate = c->Contains(fp);
    if (c->AddStored(fp, stored, n, stored_as)) {
      if (!duplicate) {
        chunks_stored_.fetch_add(1, std::memory_order_relaxed);
        bytes_raw_.fetch_add(n, std::memory_order_relaxed);
        bytes_stored_.fetch_add(stored.size(), std::memory_order_relaxed);
      }
      *id = c->id();
      return Status::OK();
    }
    HandOffLocked(slot);  // full
  }
  ContainerId new_id;
  DEDUPV1_RETURN_IF_ERROR(ids_.Allocate(&new_id));
  auto fresh = std::make_shared<Container>(new_id, options_.container_size, options_.fp_type);
  fresh->ReserveData();
  if (!fresh->AddStored(fp, stored, n, stored_as)) {
    // Cannot happen: the size was checked against an empty container above.
    return Status::InvalidArgument("chunk store: chunk of " + std::to_string(n) +
                                   " bytes does not fit an empty container");
  }
  uncommitted_.insert(new_id);
  c = std::move(fresh);
  chunks_stored_.fetch_add(1, std::memory_order_relaxed);
  bytes_raw_.fetch_add(n, std::memory_order_relaxed);
  bytes_stored_.fetch_add(stored.size(), std::memory_order_relaxed);
  *id = new_id;
  OpenListener open_listener = open_listener_;
  l.unlock();
  if (open_listener) open_listener(new_id);
  return Status::OK();
}

std::shared_ptr<const Container> ChunkStore::FindUncommittedLocked(ContainerId id, bool* open) const {
  *open = false;
  if (uncommitted_.count(id) == 0 && pending_.count(id) == 0) return nullptr;
  for (const auto& c : open_) {
    if (c && c->id() == id) {
      *open = true;
      return c;
    }
  }
  auto it = pending_.find(id);
  if (it != pending_.end()) return it->second.container;
  return nullptr;
}

}  // namespace dedupv1

// ChunkStore's reads: open and in-flight containers first (data is readable
// before it is committed), then the read cache of parsed containers, then
// the ContainerStore, from which a single chunk is read alone (located
// through the metadata cache) rather than with its whole container.
#include "chunkstore/chunk_store.h"

#include <algorithm>

namespace dedupv1 {
namespace {

std::string Name(ContainerId id) { return "container " + std::to_string(id); }

}  // namespace

Status ChunkStore::LoadCommitted(ContainerId requested, std::shared_ptr<const Container>* container) {
  ContainerId id = aliases_.Resolve(requested);
  std::shared_ptr<const Container> c = read_cache_.Lookup(id);
  if (c) {
    *container = std::move(c);
    return Status::OK();
  }
  container_reads_.fetch_add(1, std::memory_order_relaxed);
  std::string bytes;
  Status s = store_->Get(id, &bytes);
  if (s.IsNotFound()) {
    // A merge may have folded |id| into another container between Resolve
    // and Get (it switches the alias map before deleting the source).
    const ContainerId now = aliases_.Resolve(requested);
    if (now != id) return LoadCommitted(requested, container);
  }
  DEDUPV1_RETURN_IF_ERROR(s);
  std::unique_ptr<Container> parsed;
  DEDUPV1_RETURN_IF_ERROR(Container::Parse(id, bytes, &parsed));
  c = std::shared_ptr<const Container>(std::move(parsed));
  read_cache_.Insert(id, c);
  *container = std::move(c);
  return Status::OK();
}

Status ChunkStore::ReadChunk(ContainerId id, const Fingerprint& fp, std::string* data) {
  if (id == kNoContainer || id == kZeroContainer) {
    return Status::InvalidArgument("chunk store: cannot read from pseudo container " +
                                   std::to_string(id));
  }
  if (foreign_.IsForeign(id)) return ReadForeignChunk(id, fp, data);
  std::shared_ptr<const Container> c;
  {
    std::lock_guard<std::mutex> l(mu_);
    bool open = false;
    c = FindUncommittedLocked(id, &open);
    // An open container is still being appended to: read it under the lock.
    if (c && open) return c->ReadChunk(fp, data);
  }
  if (c) return c->ReadChunk(fp, data);  // committing: still in memory
  const ContainerId resolved = aliases_.Resolve(id);
  c = read_cache_.Lookup(resolved);
  if (c) return c->ReadChunk(fp, data);
  return ReadChunkFromStore(id, resolved, fp, data);
}

// Another slot's container: it is read by id, and a NotFound may mean that
// its slot merged it (chunkstore/foreign_containers.h): the alias leads on.
Status ChunkStore::ReadForeignChunk(ContainerId id, const Fingerprint& fp, std::string* data) {
  ContainerId at = foreign_.Resolve(id);
  for (int hop = 0;; hop++) {
    std::shared_ptr<const Container> c = read_cache_.Lookup(at);
    Status s = c ? c->ReadChunk(fp, data) : ReadChunkFromStore(at, at, fp, data);
    if (!s.IsNotFound() || hop == ForeignContainers::kMaxHops) return s;
    ContainerId next = kNoContainer;
    Status a = foreign_.FollowAlias(store_.get(), id, at, &next);
    if (a.IsNotFound()) return s;
    DEDUPV1_RETURN_IF_ERROR(a);
    metadata_cache_.Erase(at);  // gone: its cached head would answer in vain
    at = next;
  }
}

// A chunk is read alone, not with its whole container: backup data refers to
// old containers in no particular order, and loading 4 MiB for each 8 KiB
// chunk made restores crawl. Without the container's data CRC the chunk is
// verified by its fingerprint instead.
Status ChunkStore::ReadChunkFromStore(ContainerId requested, ContainerId id, const Fingerprint& fp,
                                      std::string* data) {
  std::shared_ptr<const Container> meta = metadata_cache_.Lookup(id);
  if (!meta) {
    std::string head;
    Status s = ReadHead(id, &head);
    if (s.IsNotFound() && aliases_.Resolve(requested) != id) return ReadChunk(requested, fp, data);
    DEDUPV1_RETURN_IF_ERROR(s);
    std::unique_ptr<Container> parsed;
    DEDUPV1_RETURN_IF_ERROR(Container::ParseMetadataOnly(id, head, &parsed));
    meta = std::shared_ptr<const Container>(std::move(parsed));
    metadata_cache_.Insert(id, meta);
  }
  Container::ChunkLocation loc;
  DEDUPV1_RETURN_IF_ERROR(meta->Locate(fp, &loc));
  std::string stored;
  Status s = store_->GetRange(id, loc.offset, loc.stored_size, &stored);
  if (s.IsNotFound() && aliases_.Resolve(requested) != id) return ReadChunk(requested, fp, data);
  DEDUPV1_RETURN_IF_ERROR(s);
  chunk_reads_.fetch_add(1, std::memory_order_relaxed);
  s = Decompress(loc.compression, reinterpret_cast<const uint8_t*>(stored.data()), stored.size(),
                 loc.raw_size, data);
  if (!s.ok()) return s.WithContext(Name(id) + ": chunk " + fp.ToHex());
  Fingerprint actual;
  ComputeFingerprint(options_.fp_type, reinterpret_cast<const uint8_t*>(data->data()), data->size(), &actual);
  if (actual != fp) {
    data->clear();
    return Status::Corruption(Name(id) + ": chunk " + fp.ToHex() +
                              " does not match its fingerprint (the container's data is damaged)");
  }
  return Status::OK();
}

Status ChunkStore::ReadHead(ContainerId id, std::string* head) {
  metadata_reads_.fetch_add(1, std::memory_order_relaxed);
  DEDUPV1_RETURN_IF_ERROR(store_->GetHead(id, kMetadataGuess, head));
  size_t meta_size = 0;
  DEDUPV1_RETURN_IF_ERROR(Container::MetadataSize(id, *head, &meta_size));
  if (meta_size > head->size() && head->size() == kMetadataGuess) {
    DEDUPV1_RETURN_IF_ERROR(store_->GetHead(id, meta_size, head));
  }
  return Status::OK();
}

Status ChunkStore::GetFingerprints(ContainerId requested, std::vector<Fingerprint>* fps) {
  if (requested == kNoContainer || requested == kZeroContainer) {
    return Status::InvalidArgument("chunk store: pseudo container " + std::to_string(requested) +
                                   " has no fingerprints");
  }
  std::shared_ptr<const Container> c;
  {
    std::lock_guard<std::mutex> l(mu_);
    bool open = false;
    c = FindUncommittedLocked(requested, &open);
    if (c && open) {
      *fps = c->Fingerprints();
      return Status::OK();
    }
  }
  const ContainerId id = aliases_.Resolve(requested);
  if (!c) c = read_cache_.Lookup(id);
  if (c) {
    *fps = c->Fingerprints();
  } else {
    Status s = ReadMetadata(id, fps, nullptr, nullptr);
    if (s.IsNotFound() && aliases_.Resolve(requested) != id) {
      // Merged into another container between Resolve and the read.
      return GetFingerprints(requested, fps);
    }
    DEDUPV1_RETURN_IF_ERROR(s);
  }
  RemoveDead(id, fps);
  return Status::OK();
}

Status ChunkStore::ReadMetadata(ContainerId id, std::vector<Fingerprint>* fps,
                                std::vector<size_t>* footprints, uint64_t* total) {
  // Only the metadata at the head of the container, not its chunk data, and
  // not into the read cache, whose entries serve reads.
  std::string head;
  DEDUPV1_RETURN_IF_ERROR(ReadHead(id, &head));
  return Container::ParseFingerprints(id, head, fps, footprints, total);
}

Status ChunkStore::GetFingerprintsVerified(ContainerId id, std::vector<Fingerprint>* fps) {
  if (id == kNoContainer || id == kZeroContainer) return GetFingerprints(id, fps);
  std::shared_ptr<const Container> c;
  {
    std::lock_guard<std::mutex> l(mu_);
    bool open = false;
    c = FindUncommittedLocked(id, &open);
    if (c && open) {
      *fps = c->Fingerprints();
      return Status::OK();
    }
  }
  if (!c) DEDUPV1_RETURN_IF_ERROR(LoadCommitted(id, &c));
  *fps = c->Fingerprints();
  RemoveDead(c->id(), fps);
  return Status::OK();
}

void ChunkStore::RemoveDead(ContainerId id, std::vector<Fingerprint>* fps) const {
  dead_marks_.WithMarksOf(id, [fps](const FingerprintSet* dead) {
    if (dead == nullptr) return;
    fps->erase(std::remove_if(fps->begin(), fps->end(), [dead](const Fingerprint& fp) { return dead->count(fp) != 0; }),
               fps->end());
  });
}

}  // namespace dedupv1

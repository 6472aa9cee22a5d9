// ChunkStore's reads: open and in-flight containers first (data is readable
// before it is committed), then the read cache of parsed containers, then
// the ContainerStore, from which chunks are read as ranges of their
// container (located through the metadata cache; ReadChunks coalesces a
// batch's neighbours into one range), never with the whole container.
#include "chunkstore/chunk_store.h"

#include <algorithm>
#include <unordered_map>

#include "core/base/coding.h"

namespace dedupv1 {
namespace {

std::string Name(ContainerId id) { return "container " + std::to_string(id); }

// Chunk |fp| of container |id| as read from the store (|stored|, kept as
// |loc| says): checked against its CRC32C (format 2 containers), decompressed
// into |scratch| if it was compressed, and, in a format 1 container, checked
// against |fp|. |*raw| views the chunk's bytes (in |stored| or |scratch|).
// Corruption naming the container and the chunk if a step fails.
Status UnpackStoredChunk(FingerprintType fp_type, ContainerId id, const Fingerprint& fp,
                         const Container::ChunkLocation& loc, std::string_view stored, std::string* scratch,
                         std::string_view* raw) {
  // Format 2 containers carry each chunk's CRC32C: checked before the bytes
  // are decompressed or used; the fingerprint is not recomputed then.
  if (loc.has_crc && Crc32c(stored.data(), stored.size()) != loc.crc) {
    return Status::Corruption(Name(id) + ": chunk " + fp.ToHex() +
                              " does not match its checksum (the container's data is damaged)");
  }
  *raw = stored;
  if (loc.compression != Compression::kNone) {
    Status s = Decompress(loc.compression, reinterpret_cast<const uint8_t*>(stored.data()), stored.size(),
                          loc.raw_size, scratch);
    if (!s.ok()) return s.WithContext(Name(id) + ": chunk " + fp.ToHex());
    *raw = *scratch;
  }
  if (loc.has_crc) return Status::OK();
  Fingerprint actual;
  ComputeFingerprint(fp_type, reinterpret_cast<const uint8_t*>(raw->data()), raw->size(), &actual);
  if (actual != fp) {
    return Status::Corruption(Name(id) + ": chunk " + fp.ToHex() +
                              " does not match its fingerprint (the container's data is damaged)");
  }
  return Status::OK();
}

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
  bytes_read_.fetch_add(bytes.size(), std::memory_order_relaxed);
  std::unique_ptr<Container> parsed;
  DEDUPV1_RETURN_IF_ERROR(Container::Parse(id, std::move(bytes), &parsed));
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

Status ChunkStore::LoadMetadata(ContainerId id, std::shared_ptr<const Container>* meta) {
  *meta = metadata_cache_.Lookup(id);
  if (*meta) return Status::OK();
  std::string head;
  DEDUPV1_RETURN_IF_ERROR(ReadHead(id, &head));
  std::unique_ptr<Container> parsed;
  DEDUPV1_RETURN_IF_ERROR(Container::ParseMetadataOnly(id, head, &parsed));
  *meta = std::shared_ptr<const Container>(std::move(parsed));
  metadata_cache_.Insert(id, *meta);
  return Status::OK();
}

// A chunk is read alone, not with its whole container: backup data refers to
// old containers in no particular order, and loading 4 MiB for each 8 KiB
// chunk made restores crawl. Without the container's data CRC the chunk is
// verified by its fingerprint instead.
Status ChunkStore::ReadChunkFromStore(ContainerId requested, ContainerId id, const Fingerprint& fp,
                                      std::string* data) {
  std::shared_ptr<const Container> meta;
  Status m = LoadMetadata(id, &meta);
  if (m.IsNotFound() && aliases_.Resolve(requested) != id) return ReadChunk(requested, fp, data);
  DEDUPV1_RETURN_IF_ERROR(m);
  Container::ChunkLocation loc;
  DEDUPV1_RETURN_IF_ERROR(meta->Locate(fp, &loc));
  std::string stored;
  Status s = store_->GetRange(id, loc.offset, loc.stored_size, &stored);
  if (s.IsNotFound() && aliases_.Resolve(requested) != id) return ReadChunk(requested, fp, data);
  DEDUPV1_RETURN_IF_ERROR(s);
  chunk_reads_.fetch_add(1, std::memory_order_relaxed);
  bytes_read_.fetch_add(stored.size(), std::memory_order_relaxed);
  std::string_view raw;
  s = UnpackStoredChunk(options_.fp_type, id, fp, loc, stored, data, &raw);
  if (!s.ok()) {
    data->clear();
    return s;
  }
  if (raw.data() == stored.data()) *data = std::move(stored);  // stored raw: the range is the chunk
  return Status::OK();
}

Status ChunkStore::ReadChunks(ChunkReadBatch* batch) {
  std::vector<std::pair<ContainerId, std::vector<size_t>>> wanted;  // resolved id, chunks
  std::unordered_map<ContainerId, size_t> group_of;
  for (size_t i = 0; i < batch->size(); i++) {
    const ContainerId id = batch->container(i);
    const Fingerprint& fp = batch->fingerprint(i);
    bool copy = id == kNoContainer || id == kZeroContainer || foreign_.IsForeign(id);
    std::shared_ptr<const Container> c;
    if (!copy) {
      std::lock_guard<std::mutex> l(mu_);
      bool open = false;
      c = FindUncommittedLocked(id, &open);
      copy = c && open;  // still being appended to: read (and copied) under the lock
    }
    if (copy) {
      std::string* buf = batch->NewBuffer();
      DEDUPV1_RETURN_IF_ERROR(ReadChunk(id, fp, buf));
      batch->SetData(i, *buf);
      continue;
    }
    const ContainerId resolved = aliases_.Resolve(id);
    if (!c) c = read_cache_.Lookup(resolved);
    if (c) {  // committing (immutable now) or cached whole
      std::string_view view;
      DEDUPV1_RETURN_IF_ERROR(c->ChunkView(fp, batch->NewBuffer(), &view));
      batch->SetData(i, view);
      batch->Pin(std::move(c));
      continue;
    }
    auto [it, added] = group_of.emplace(resolved, wanted.size());
    if (added) wanted.emplace_back(resolved, std::vector<size_t>());
    wanted[it->second].second.push_back(i);
  }
  return wanted.empty() ? Status::OK() : ReadChunksFromStore(batch, wanted);
}

namespace {

// Chunks at most this far apart are read with one range (the bytes between
// them are read in vain); a range is at most kMaxRange long.
constexpr uint64_t kMaxGap = 16 << 10;
constexpr uint64_t kMaxRange = 1 << 20;

}  // namespace

Status ChunkStore::ReadChunksFromStore(ChunkReadBatch* batch,
                                       const std::vector<std::pair<ContainerId, std::vector<size_t>>>& wanted) {
  struct Piece {
    size_t index;  // in the batch
    Container::ChunkLocation loc;
    uint8_t* place = nullptr;  // stored raw and placed by the reader: read straight there
  };
  std::vector<ContainerStore::RangeRead> reads;
  std::vector<std::vector<Piece>> pieces_of;  // per read
  std::vector<size_t> one_by_one;             // moved or merged meanwhile: ReadChunk follows
  for (const auto& [id, indexes] : wanted) {
    std::shared_ptr<const Container> meta;
    Status s = LoadMetadata(id, &meta);
    if (s.IsNotFound()) {
      one_by_one.insert(one_by_one.end(), indexes.begin(), indexes.end());
      continue;
    }
    DEDUPV1_RETURN_IF_ERROR(s);
    std::vector<Piece> pieces;
    for (size_t i : indexes) {
      Piece p{i, {}};
      DEDUPV1_RETURN_IF_ERROR(meta->Locate(batch->fingerprint(i), &p.loc));
      if (store_->ReadsIntoPlace() && p.loc.compression == Compression::kNone &&
          p.loc.stored_size == p.loc.raw_size) {
        p.place = batch->placement(i, p.loc.raw_size);
      }
      pieces.push_back(p);
    }
    std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.loc.offset < b.loc.offset; });
    for (const Piece& p : pieces) {
      const uint64_t end = p.loc.offset + p.loc.stored_size;
      ContainerStore::RangeRead* last = reads.empty() || reads.back().id != id ? nullptr : &reads.back();
      // A placed chunk joins a range read into place only where it follows
      // both in the container and in the reader's output; other chunks
      // share a range read into a buffer, with gaps.
      const bool joins =
          last != nullptr && (p.place != nullptr
                                  ? last->into != nullptr && p.loc.offset == last->offset + last->n &&
                                        reinterpret_cast<char*>(p.place) == last->into + last->n
                                  : last->into == nullptr && p.loc.offset <= last->offset + last->n + kMaxGap) &&
          end - last->offset <= kMaxRange;
      if (joins) {
        last->n = static_cast<size_t>(std::max<uint64_t>(last->offset + last->n, end) - last->offset);
        pieces_of.back().push_back(p);
        continue;
      }
      ContainerStore::RangeRead r;
      r.id = id;
      r.offset = p.loc.offset;
      r.n = p.loc.stored_size;
      r.into = reinterpret_cast<char*>(p.place);
      reads.push_back(std::move(r));
      pieces_of.push_back({p});
    }
  }
  if (!reads.empty()) store_->GetRanges(&reads);
  for (size_t r = 0; r < reads.size(); r++) {
    ContainerStore::RangeRead& read = reads[r];
    if (read.status.IsNotFound()) {
      for (const Piece& p : pieces_of[r]) one_by_one.push_back(p.index);
      continue;
    }
    DEDUPV1_RETURN_IF_ERROR(read.status);
    range_reads_.fetch_add(1, std::memory_order_relaxed);
    bytes_read_.fetch_add(read.n, std::memory_order_relaxed);
    std::string_view range;
    if (read.into != nullptr) {
      range = std::string_view(read.into, read.n);  // in place: checked there, never copied
    } else {
      std::string* buffer = batch->NewBuffer();
      buffer->swap(read.bytes);
      range = *buffer;
    }
    for (const Piece& p : pieces_of[r]) {
      const std::string_view stored = range.substr(p.loc.offset - read.offset, p.loc.stored_size);
      std::string* scratch = p.loc.compression == Compression::kNone ? nullptr : batch->NewBuffer();
      std::string_view raw;
      DEDUPV1_RETURN_IF_ERROR(
          UnpackStoredChunk(options_.fp_type, read.id, batch->fingerprint(p.index), p.loc, stored, scratch, &raw));
      batch->SetData(p.index, raw);
    }
    if (read.into != nullptr) chunks_read_in_place_.fetch_add(pieces_of[r].size(), std::memory_order_relaxed);
  }
  for (size_t i : one_by_one) {
    std::string* buf = batch->NewBuffer();
    DEDUPV1_RETURN_IF_ERROR(ReadChunk(batch->container(i), batch->fingerprint(i), buf));
    batch->SetData(i, *buf);
  }
  return Status::OK();
}

Status ChunkStore::ReadHead(ContainerId id, std::string* head) {
  metadata_reads_.fetch_add(1, std::memory_order_relaxed);
  DEDUPV1_RETURN_IF_ERROR(store_->GetHead(id, kMetadataGuess, head));
  bytes_read_.fetch_add(head->size(), std::memory_order_relaxed);
  size_t meta_size = 0;
  DEDUPV1_RETURN_IF_ERROR(Container::MetadataSize(id, *head, &meta_size));
  if (meta_size > head->size() && head->size() == kMetadataGuess) {
    DEDUPV1_RETURN_IF_ERROR(store_->GetHead(id, meta_size, head));
    bytes_read_.fetch_add(head->size(), std::memory_order_relaxed);
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

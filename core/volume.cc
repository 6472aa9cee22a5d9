#include "core/volume.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "core/dedup_system.h"
#include "index/block_mapping.h"

namespace dedupv1 {

Volume::Volume(DedupSystem* system, uint32_t id, std::string name, uint64_t size, const Id128& uid)
    : system_(system), id_(id), name_(std::move(name)), size_(size), uid_(uid),
      block_size_(system->options().block_size), buffer_(block_size_, &system->budget_) {}

Volume::Counters Volume::counters() const {
  Counters c;
  c.bytes_written = bytes_written_.load(std::memory_order_relaxed);
  c.bytes_read = bytes_read_.load(std::memory_order_relaxed);
  c.bytes_unmapped = bytes_unmapped_.load(std::memory_order_relaxed);
  c.write_ops = write_ops_.load(std::memory_order_relaxed);
  c.read_ops = read_ops_.load(std::memory_order_relaxed);
  c.unmap_ops = unmap_ops_.load(std::memory_order_relaxed);
  return c;
}

Status Volume::CheckRange(uint64_t offset, uint64_t length, const char* op) const {
  if (offset > size_ || length > size_ - offset) {
    return Status::InvalidArgument(std::string(op) + " of " + std::to_string(length) + " bytes at offset " +
                                   std::to_string(offset) + " is beyond the end of volume " + name_ +
                                   " (" + std::to_string(size_) + " bytes)");
  }
  return Status::OK();
}

Status Volume::ReadBlockPiece(uint64_t block, uint32_t offset, uint32_t len, uint8_t* out) {
  BlockId id{id_, block};
  std::shared_lock<std::shared_mutex> lock(system_->block_locks_.For(id));
  // Bytes still in the write buffer are the newest; if they cover the whole
  // piece the block mapping is not needed.
  if (buffer_.Overlay(block, offset, len, out)) return Status::OK();

  BlockMapping mapping;
  Status s = system_->block_index_->Get(id, &mapping);
  if (s.IsNotFound()) {
    std::memset(out, 0, len);
  } else if (!s.ok()) {
    return s.WithContext("read block " + std::to_string(block) + " of volume " + name_);
  } else {
    std::string chunk;
    Fingerprint chunk_fp;
    ContainerId chunk_container = kNoContainer;
    Status read_status;
    mapping.ForEachPiece(offset, len, [&](const BlockMappingItem& item, uint32_t block_offset,
                                          uint32_t chunk_offset, uint32_t size) {
      uint8_t* dst = out + (block_offset - offset);
      if (!read_status.ok()) return;
      if (item.container == kZeroContainer) {
        std::memset(dst, 0, size);
        return;
      }
      if (item.container != chunk_container || item.fp != chunk_fp) {
        read_status = system_->chunk_store_->ReadChunk(item.container, item.fp, &chunk);
        if (!read_status.ok()) return;
        chunk_fp = item.fp;
        chunk_container = item.container;
      }
      if (static_cast<uint64_t>(chunk_offset) + size > chunk.size()) {
        read_status = Status::Corruption("block " + std::to_string(block) + " of volume " + name_ +
                                         " maps bytes beyond the end of chunk " + item.fp.ToHex());
        return;
      }
      std::memcpy(dst, chunk.data() + chunk_offset, size);
    });
    if (!read_status.ok()) {
      return read_status.WithContext("read block " + std::to_string(block) + " of volume " + name_);
    }
  }
  buffer_.Overlay(block, offset, len, out);
  return Status::OK();
}

Status Volume::ForEachPiece(uint64_t offset, uint64_t length,
                            const std::function<Status(const Piece&, bool* stop)>& f) const {
  bool stop = false;
  for (uint64_t pos = offset; pos < offset + length && !stop;) {
    Piece p;
    p.block = pos / block_size_;
    p.offset = static_cast<uint32_t>(pos % block_size_);
    p.length = static_cast<uint32_t>(std::min<uint64_t>(block_size_ - p.offset, offset + length - pos));
    p.done = pos - offset;
    DEDUPV1_RETURN_IF_ERROR(f(p, &stop));
    pos += p.length;
  }
  return Status::OK();
}

namespace {

// Adds a request's latency to the counters idle detection samples.
class RequestTimer {
 public:
  explicit RequestTimer(SystemStats* stats) : stats_(stats), start_(std::chrono::steady_clock::now()) {}
  ~RequestTimer() {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_);
    stats_->request_ns.fetch_add(static_cast<uint64_t>(ns.count()), std::memory_order_relaxed);
    stats_->requests_timed.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  SystemStats* const stats_;
  const std::chrono::steady_clock::time_point start_;
};

}  // namespace

Status Volume::Read(uint64_t offset, uint64_t length, uint8_t* out) {
  RequestTimer timer(&system_->stats_);
  DEDUPV1_RETURN_IF_ERROR(CheckRange(offset, length, "read"));
  system_->stats_.read_ops++;
  DEDUPV1_RETURN_IF_ERROR(ForEachPiece(offset, length, [&](const Piece& p, bool*) {
    return ReadBlockPiece(p.block, p.offset, p.length, out + p.done);
  }));
  system_->stats_.bytes_read += length;
  read_ops_.fetch_add(1, std::memory_order_relaxed);
  bytes_read_.fetch_add(length, std::memory_order_relaxed);
  return Status::OK();
}

Status Volume::Write(uint64_t offset, uint64_t length, const uint8_t* data, bool fua) {
  RequestTimer timer(&system_->stats_);
  DEDUPV1_RETURN_IF_ERROR(CheckRange(offset, length, "write"));
  // A store that cannot take data (e.g. the disk is full) refuses new writes
  // with the reason instead of buffering what it cannot keep. A full chunk
  // index is no such reason: known and zero data need no new entry, and a
  // run that does need one is parked and fails the sync that covers it.
  DEDUPV1_RETURN_IF_ERROR(system_->PendingError());
  system_->budget_.WaitForSpace(&system_->refuse_waiting_writers_);
  // Woken because the buffer may never drain (a processing error, or the
  // chunk index is full and parked runs keep the buffer full): refuse
  // instead of waiting for ever.
  DEDUPV1_RETURN_IF_ERROR(system_->WriteRefusal());
  system_->stats_.write_ops++;
  const uint64_t epoch = system_->epoch_.load();
  ForEachPiece(offset, length, [&](const Piece& p, bool*) {
    std::unique_lock<std::shared_mutex> lock(system_->block_locks_.For(BlockId{id_, p.block}));
    buffer_.Put(p.block, p.offset, data + p.done, p.length, epoch);
    return Status::OK();
  });
  system_->stats_.bytes_written += length;
  write_ops_.fetch_add(1, std::memory_order_relaxed);
  bytes_written_.fetch_add(length, std::memory_order_relaxed);
  system_->WakeWorkers();
  if (fua) return Sync();
  return Status::OK();
}

Status Volume::Unmap(uint64_t offset, uint64_t length) {
  RequestTimer timer(&system_->stats_);
  DEDUPV1_RETURN_IF_ERROR(CheckRange(offset, length, "unmap"));
  DEDUPV1_RETURN_IF_ERROR(system_->WaitForLogSpace());
  system_->stats_.unmap_ops++;
  DEDUPV1_RETURN_IF_ERROR(ForEachPiece(offset, length, [&](const Piece& p, bool*) -> Status {
    BlockId id{id_, p.block};
    std::unique_lock<std::shared_mutex> lock(system_->block_locks_.For(id));
    BlockMapping old;
    Status s = system_->block_index_->Get(id, &old);
    if (s.IsNotFound()) {
      // Never written: without its buffered bytes it reads zeros, also after a crash.
      buffer_.Discard(p.block, p.offset, p.length);
      return Status::OK();
    }
    DEDUPV1_RETURN_IF_ERROR(s);
    BlockMappingItem hole{Fingerprint::Zero(system_->options().fingerprint), kZeroContainer, 0, p.length};
    BlockMapping mapping = old;
    DEDUPV1_RETURN_IF_ERROR(mapping.Overlay(p.offset, {hole}));
    DEDUPV1_RETURN_IF_ERROR(system_->InstallMapping(id, &old, &mapping, /*unmap=*/true));
    // Buffered bytes go only once the unmap is logged: a sync that finds them
    // gone finds the event that supersedes them (as for a dedup run).
    buffer_.Discard(p.block, p.offset, p.length);
    return Status::OK();
  }));
  system_->stats_.bytes_unmapped += length;
  unmap_ops_.fetch_add(1, std::memory_order_relaxed);
  bytes_unmapped_.fetch_add(length, std::memory_order_relaxed);
  return Status::OK();
}

Status Volume::Sync() {
  system_->stats_.sync_ops++;
  Status s = system_->Sync();
  // After the system sync: a sync that gives this volume's bytes up notes it
  // first, so it is reported here (or by the next Sync, if it was another's).
  std::lock_guard<std::mutex> l(lost_mu_);
  if (!lost_.ok()) {
    if (s.ok()) s = lost_;
    lost_ = Status::OK();
  }
  return s;
}

void Volume::NoteLostWrites(const Status& why) {
  std::lock_guard<std::mutex> l(lost_mu_);
  lost_ = why;
}

Status Volume::IsMapped(uint64_t offset, uint64_t length, bool* mapped, uint64_t* run) {
  DEDUPV1_RETURN_IF_ERROR(CheckRange(offset, length, "get lba status"));
  *run = 0;
  return ForEachPiece(offset, length, [&](const Piece& p, bool* stop) -> Status {
    BlockId id{id_, p.block};
    bool this_mapped;
    {
      std::shared_lock<std::shared_mutex> lock(system_->block_locks_.For(id));
      this_mapped = buffer_.Intersects(p.block, p.offset, p.length);
      if (!this_mapped) {
        BlockMapping mapping;
        Status s = system_->block_index_->Get(id, &mapping);
        if (s.ok()) {
          mapping.ForEachPiece(p.offset, p.length, [&](const BlockMappingItem& item, uint32_t, uint32_t, uint32_t) {
            if (item.container != kZeroContainer) this_mapped = true;
          });
        } else if (!s.IsNotFound()) {
          return s;
        }
      }
    }
    if (p.done == 0) {
      *mapped = this_mapped;
    } else if (this_mapped != *mapped) {
      *stop = true;
      return Status::OK();
    }
    *run += p.length;
    return Status::OK();
  });
}

namespace {
uint64_t NanosSince(std::chrono::steady_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t).count());
}
}  // namespace

bool Volume::ProcessOneRun(const WriteBuffer::ClaimPolicy& policy, RunOutcome* outcome) {
  // Reused per thread: a run copies up to several MiB.
  thread_local WriteBuffer::Run run;
  auto t0 = std::chrono::steady_clock::now();
  bool claimed = buffer_.ClaimRun(policy, WriteBuffer::Clock::now(), &run);
  system_->stats_.ns_claiming += NanosSince(t0);
  if (!claimed) return false;
  *outcome = RunOutcome();
  outcome->error = ProcessRun(&run, outcome);
  if (outcome->parked) {
    buffer_.Park(run);
  } else {
    buffer_.Unclaim(run);
  }
  return true;
}

Status Volume::ProcessRun(WriteBuffer::Run* run, RunOutcome* outcome) {
  DedupSystem* sys = system_;
  DEDUPV1_RETURN_IF_ERROR(sys->WaitForLogSpace());
  const FingerprintType fp_type = sys->options().fingerprint;
  const uint8_t* data = run->data.data();

  // 1. Chunk boundaries. Without |final| the last unfinished chunk stays in
  //    the buffer and is chunked again together with the bytes that follow.
  std::vector<size_t> ends;
  auto phase = std::chrono::steady_clock::now();
  sys->chunker_->Split(data, run->data.size(), run->final, &ends);
  sys->stats_.ns_chunking += NanosSince(phase);
  if (ends.empty()) return Status::OK();
  const size_t n = ends.size();
  const uint64_t processed = ends.back();
  // The boundaries are known: hand the unfinished tail to the next run of
  // this stream now, so another worker chunks on while this one fingerprints
  // and stores.
  buffer_.SealClaim(*run, run->start + processed);
  if (processed < run->data.size()) sys->WakeWorkers();

  // 2. Fingerprints, in parallel. All-zero chunks are not hashed.
  std::vector<ChunkRequest> chunks(n);
  phase = std::chrono::steady_clock::now();
  sys->hash_pool_.ParallelFor(n, 16, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; i++) {
      size_t start = i == 0 ? 0 : ends[i - 1];
      ChunkRequest& c = chunks[i];
      c.data = data + start;
      c.size = ends[i] - start;
      // Zero chunks are recognised (and never stored) only when the
      // zero-chunk filter is in the chain; otherwise they are ordinary data.
      c.is_zero = sys->zero_chunks_ && IsAllZero(c.data, c.size);
      if (c.is_zero) c.fp = Fingerprint::Zero(fp_type);
      else ComputeFingerprint(fp_type, c.data, c.size, &c.fp);
    }
  });

  sys->stats_.ns_fingerprinting += NanosSince(phase);
  phase = std::chrono::steady_clock::now();

  // GC barrier (core/garbage_collector.h) until this run's mappings are logged.
  auto gc_barrier = sys->gc_barrier_.Shared();

  // 3. What the overwritten blocks referenced before (block-index filter).
  const uint64_t first_block = run->start / block_size_;
  const uint64_t last_block = (run->start + processed - 1) / block_size_;
  std::unordered_map<Fingerprint, ContainerId, FingerprintHasher> previous;
  for (uint64_t b = first_block; b <= last_block; b++) {
    BlockMapping old;
    if (sys->block_index_->Get(BlockId{id_, b}, &old).ok()) {
      for (const auto& item : old.items()) {
        if (item.container != kZeroContainer) previous[item.fp] = item.container;
      }
    }
  }

  // 4. The filter chain decides; new chunks are stored. The fingerprint lock
  //    covers decide + store + update so a chunk is stored once.
  for (size_t i = 0; i < n; i++) {
    ChunkRequest& c = chunks[i];
    c.previous_chunks = &previous;
    std::lock_guard<std::mutex> fp_lock(sys->fp_locks_.For(c.fp));
    Status error;
    FilterResult r = sys->filter_chain_.Decide(&c, &error);
    if (r == FilterResult::kError) return error;
    if (FilterChain::IsKnown(r)) {
      DEDUPV1_RETURN_IF_ERROR(sys->filter_chain_.UpdateKnown(c));
      if (c.is_zero) {
        sys->stats_.chunks_zero++;
        sys->stats_.bytes_zero += c.size;
      } else {
        sys->stats_.chunks_known++;
      }
    } else {
      DEDUPV1_RETURN_IF_ERROR(sys->chunk_store_->StoreChunk(c.fp, c.data, c.size, id_, &c.container));
      Status updated = sys->filter_chain_.UpdateNew(c);
      // Only the chunk index refuses an insert for want of space ("chunk
      // index full"): the run waits parked, the rest of the buffer goes on.
      // The chunk just stored stays in its container as garbage.
      outcome->parked = updated.IsNoSpace();
      DEDUPV1_RETURN_IF_ERROR(updated);
      outcome->new_chunks = true;
      sys->stats_.chunks_new++;
      sys->stats_.bytes_new += c.size;
    }
  }
  sys->stats_.ns_filtering += NanosSince(phase);
  phase = std::chrono::steady_clock::now();
  sys->stats_.runs++;
  sys->stats_.chunks += n;
  sys->stats_.bytes_chunked += processed;

  // 5. Install the new mappings block by block. A block rewritten or unmapped
  //    since its bytes were copied keeps its dirty bytes and is redone later.
  size_t chunk_index = 0;
  for (size_t bi = 0; bi < run->blocks.size(); bi++) {
    const uint64_t block = run->blocks[bi];
    const uint64_t block_start = block * block_size_;
    const uint64_t begin = std::max<uint64_t>(block_start, run->start);
    const uint64_t end = std::min<uint64_t>(block_start + block_size_, run->start + processed);
    if (begin >= end) break;
    std::vector<BlockMappingItem> items;
    while (chunk_index < n) {
      uint64_t cs = run->start + (chunk_index == 0 ? 0 : ends[chunk_index - 1]);
      uint64_t ce = run->start + ends[chunk_index];
      if (cs >= end) break;
      uint64_t pb = std::max(cs, begin), pe = std::min(ce, end);
      const ChunkRequest& c = chunks[chunk_index];
      items.push_back(BlockMappingItem{c.fp, c.container, static_cast<uint32_t>(pb - cs),
                                       static_cast<uint32_t>(pe - pb)});
      if (ce > end) break;  // the chunk continues into the next block
      chunk_index++;
    }
    BlockId id{id_, block};
    std::unique_lock<std::shared_mutex> lock(sys->block_locks_.For(id));
    uint32_t in_begin = static_cast<uint32_t>(begin - block_start);
    uint32_t in_end = static_cast<uint32_t>(end - block_start);
    // Only the copy we chunked may be replaced: check the sequence first,
    // then log and install the mapping, then clear the bytes (all under the
    // lock, which Put and Discard need too, so the sequence cannot change in
    // between). The bytes leave the buffer only after their event is logged:
    // a sync that finds them gone (DrainUpTo) finds the event logged and
    // makes it durable. If the install fails, they simply stay dirty.
    BlockMapping old(block_size_);
    Status s = sys->block_index_->Get(id, &old);
    // A block whose stored mapping cannot be read (Corruption: a damaged
    // record) can still be overwritten whole: the new mapping needs nothing
    // of the old one. It is logged without an old mapping, so the old
    // chunks keep their references (too high a count only keeps garbage
    // until dedupv1_check --repair recounts). A partial write needs the old
    // mapping and fails, naming the block.
    const bool whole_block = in_begin == 0 && in_end == block_size_;
    if (!s.ok() && !s.IsNotFound() && !(s.IsCorruption() && whole_block)) return s;
    if (s.IsCorruption()) sys->stats_.damaged_mappings_overwritten++;
    const bool had_old = s.ok();
    if (!had_old) old = BlockMapping(block_size_);
    BlockMapping mapping = old;
    DEDUPV1_RETURN_IF_ERROR(mapping.Overlay(in_begin, items));
    if (!buffer_.Unchanged(block, run->seqs[bi])) {
      sys->stats_.mappings_skipped++;
      continue;
    }
    DEDUPV1_RETURN_IF_ERROR(sys->InstallMapping(id, had_old ? &old : nullptr, &mapping));
    buffer_.ClearIfUnchanged(block, run->seqs[bi], in_begin, in_end);
  }
  sys->stats_.ns_installing += NanosSince(phase);
  return Status::OK();
}

}  // namespace dedupv1

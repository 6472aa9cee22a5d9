#include "core/engine/volume.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "chunkstore/chunk_store.h"
#include "index/block_index.h"
#include "index/block_mapping.h"

namespace dedupv1 {

Volume::Volume(const Context& context, uint32_t id, std::string name, uint64_t size, const Id128& uid)
    : context_(context), id_(id), name_(std::move(name)), size_(size), uid_(uid),
      block_size_(context.block_size), buffer_(block_size_, context.budget) {}

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
  const uint64_t size = this->size();
  if (offset > size || length > size - offset) {
    return Status::InvalidArgument(std::string(op) + " of " + std::to_string(length) + " bytes at offset " +
                                   std::to_string(offset) + " is beyond the end of volume " + name_ +
                                   " (" + std::to_string(size) + " bytes)");
  }
  return Status::OK();
}

void Volume::Grow(uint64_t new_size) {
  uint64_t size = size_.load(std::memory_order_acquire);
  while (new_size > size && !size_.compare_exchange_weak(size, new_size, std::memory_order_acq_rel)) {
  }
}

Status Volume::PlanPiece(uint64_t block, uint32_t offset, uint32_t len, uint8_t* out, ChunkReadBatch* batch,
                         PiecePlan* plan) {
  // Bytes still in the write buffer are the newest; if they cover the whole
  // piece the block mapping is not needed.
  if (buffer_.Overlay(block, offset, len, out)) {
    plan->done = true;
    return Status::OK();
  }
  BlockMapping mapping;
  Status s = context_.block_index->Get(BlockId{id_, block}, &mapping);
  if (s.IsNotFound()) {
    std::memset(out, 0, len);
    return Status::OK();
  }
  if (!s.ok()) return s.WithContext("read block " + std::to_string(block) + " of volume " + name_);
  plan->mapped = true;
  plan->version = mapping.version();
  mapping.ForEachPiece(offset, len, [&](const BlockMappingItem& item, uint32_t block_offset, uint32_t chunk_offset,
                                        uint32_t size) {
    uint8_t* dst = out + (block_offset - offset);
    if (item.container == kZeroContainer) {
      std::memset(dst, 0, size);
      return;
    }
    const size_t chunk = batch->Add(item.container, item.fp);
    batch->Place(chunk, dst, chunk_offset, size);
    plan->copies.push_back(PiecePlan::Copy{dst, chunk, chunk_offset, size});
  });
  return Status::OK();
}

Status Volume::FinishPiece(uint64_t block, uint32_t offset, uint32_t len, uint8_t* out, const ChunkReadBatch& batch,
                           const PiecePlan& plan) {
  if (plan.done) return Status::OK();
  for (const PiecePlan::Copy& c : plan.copies) {
    const std::string_view chunk = batch.data(c.chunk);
    if (static_cast<uint64_t>(c.chunk_offset) + c.size > chunk.size()) {
      return Status::Corruption("read block " + std::to_string(block) + " of volume " + name_ +
                                ": it maps bytes beyond the end of chunk " + batch.fingerprint(c.chunk).ToHex());
    }
    // A chunk the store read straight into place needs no copy.
    const char* src = chunk.data() + c.chunk_offset;
    if (src != reinterpret_cast<const char*>(c.dst)) std::memcpy(c.dst, src, c.size);
  }
  buffer_.Overlay(block, offset, len, out);
  return Status::OK();
}

Status Volume::ReadPieceLocked(uint64_t block, uint32_t offset, uint32_t len, uint8_t* out) {
  PiecePlan plan;
  ChunkReadBatch batch;
  DEDUPV1_RETURN_IF_ERROR(PlanPiece(block, offset, len, out, &batch, &plan));
  if (batch.size() > 0) {
    Status s = context_.chunk_store->ReadChunks(&batch);
    if (!s.ok()) return s.WithContext("read block " + std::to_string(block) + " of volume " + name_);
  }
  return FinishPiece(block, offset, len, out, batch, plan);
}

Status Volume::ReadPieces(const std::vector<Piece>& pieces, uint8_t* out) {
  const uint64_t installs = context_.pipeline->mapping_installs();
  std::vector<PiecePlan> plans(pieces.size());
  ChunkReadBatch batch;
  for (size_t i = 0; i < pieces.size(); i++) {
    const Piece& p = pieces[i];
    std::shared_lock<std::shared_mutex> lock(context_.block_locks->For(BlockId{id_, p.block}));
    DEDUPV1_RETURN_IF_ERROR(PlanPiece(p.block, p.offset, p.length, out + p.done, &batch, &plans[i]));
  }
  // No block lock is held here: a block may be rewritten meanwhile, and
  // garbage collection may even take a chunk it no longer maps. Such a
  // block's chunks are not used; it is read again below, so a failure here
  // is only trusted from that second read.
  const bool read_ok = batch.size() == 0 || context_.chunk_store->ReadChunks(&batch).ok();
  for (size_t i = 0; i < pieces.size(); i++) {
    const Piece& p = pieces[i];
    const PiecePlan& plan = plans[i];
    if (plan.done) continue;
    std::shared_lock<std::shared_mutex> lock(context_.block_locks->For(BlockId{id_, p.block}));
    bool unchanged = read_ok;
    if (unchanged && context_.pipeline->mapping_installs() != installs) {
      BlockMapping now;
      Status g = context_.block_index->Get(BlockId{id_, p.block}, &now);
      unchanged = plan.mapped ? g.ok() && now.version() == plan.version : g.IsNotFound();
    }
    if (unchanged) {
      DEDUPV1_RETURN_IF_ERROR(FinishPiece(p.block, p.offset, p.length, out + p.done, batch, plan));
    } else {
      context_.stats->reads_redone++;
      DEDUPV1_RETURN_IF_ERROR(ReadPieceLocked(p.block, p.offset, p.length, out + p.done));
    }
  }
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
  RequestTimer timer(context_.stats);
  DEDUPV1_RETURN_IF_ERROR(CheckRange(offset, length, "read"));
  context_.stats->read_ops++;
  std::vector<Piece> pieces;
  DEDUPV1_RETURN_IF_ERROR(ForEachPiece(offset, length, [&](const Piece& p, bool*) {
    pieces.push_back(p);
    return Status::OK();
  }));
  if (pieces.size() == 1) {
    const Piece& p = pieces[0];
    std::shared_lock<std::shared_mutex> lock(context_.block_locks->For(BlockId{id_, p.block}));
    DEDUPV1_RETURN_IF_ERROR(ReadPieceLocked(p.block, p.offset, p.length, out));
  } else if (!pieces.empty()) {
    DEDUPV1_RETURN_IF_ERROR(ReadPieces(pieces, out));
  }
  context_.stats->bytes_read += length;
  read_ops_.fetch_add(1, std::memory_order_relaxed);
  bytes_read_.fetch_add(length, std::memory_order_relaxed);
  return Status::OK();
}

Status Volume::Write(uint64_t offset, uint64_t length, const uint8_t* data, bool fua) {
  RequestTimer timer(context_.stats);
  DEDUPV1_RETURN_IF_ERROR(CheckRange(offset, length, "write"));
  // A store that cannot take data (e.g. the disk is full) refuses new writes
  // with the reason instead of buffering what it cannot keep. A full chunk
  // index is no such reason: known and zero data need no new entry, and a
  // run that does need one is parked and fails the sync that covers it.
  DEDUPV1_RETURN_IF_ERROR(context_.host->AdmitWrite());
  context_.stats->write_ops++;
  const uint64_t epoch = context_.host->current_epoch();
  // A selective volume deduplicates per request: the buffer keeps where
  // this one begins and ends (core/engine/select_dedupe.h).
  const bool per_request = policy() == DedupPolicy::kSelective;
  uint64_t stretch = 0;
  ForEachPiece(offset, length, [&](const Piece& p, bool*) {
    std::unique_lock<std::shared_mutex> lock(context_.block_locks->For(BlockId{id_, p.block}));
    WriteBuffer::RequestEdges edges;
    if (per_request) edges = {p.done == 0, p.done + p.length == length};
    stretch = std::max(stretch, buffer_.Put(p.block, p.offset, data + p.done, p.length, epoch, edges));
    return Status::OK();
  });
  context_.stats->bytes_written += length;
  write_ops_.fetch_add(1, std::memory_order_relaxed);
  bytes_written_.fetch_add(length, std::memory_order_relaxed);
  context_.host->BufferedWrite(stretch);
  if (fua) return Sync();
  return Status::OK();
}

Status Volume::Unmap(uint64_t offset, uint64_t length) {
  RequestTimer timer(context_.stats);
  DEDUPV1_RETURN_IF_ERROR(CheckRange(offset, length, "unmap"));
  DEDUPV1_RETURN_IF_ERROR(context_.host->WaitForLogSpace());
  context_.stats->unmap_ops++;
  DEDUPV1_RETURN_IF_ERROR(ForEachPiece(offset, length, [&](const Piece& p, bool*) -> Status {
    BlockId id{id_, p.block};
    std::unique_lock<std::shared_mutex> lock(context_.block_locks->For(id));
    BlockMapping old;
    Status s = context_.block_index->Get(id, &old);
    if (s.IsNotFound()) {
      // Never written: without its buffered bytes it reads zeros, also after a crash.
      buffer_.Discard(p.block, p.offset, p.length);
      return Status::OK();
    }
    DEDUPV1_RETURN_IF_ERROR(s);
    BlockMappingItem hole{Fingerprint::Zero(context_.fingerprint), kZeroContainer, 0, p.length};
    BlockMapping mapping = old;
    DEDUPV1_RETURN_IF_ERROR(mapping.Overlay(p.offset, {hole}));
    DEDUPV1_RETURN_IF_ERROR(context_.pipeline->InstallMapping(id, &old, &mapping, /*unmap=*/true));
    // Buffered bytes go only once the unmap is logged: a sync that finds them
    // gone finds the event that supersedes them (as for a dedup run).
    buffer_.Discard(p.block, p.offset, p.length);
    return Status::OK();
  }));
  context_.stats->bytes_unmapped += length;
  unmap_ops_.fetch_add(1, std::memory_order_relaxed);
  bytes_unmapped_.fetch_add(length, std::memory_order_relaxed);
  return Status::OK();
}

Status Volume::Sync() {
  context_.stats->sync_ops++;
  Status s = context_.host->Sync();
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
      std::shared_lock<std::shared_mutex> lock(context_.block_locks->For(id));
      this_mapped = buffer_.Intersects(p.block, p.offset, p.length);
      if (!this_mapped) {
        BlockMapping mapping;
        Status s = context_.block_index->Get(id, &mapping);
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
  context_.stats->ns_claiming += NanosSince(t0);
  if (!claimed) return false;
  *outcome = RunOutcome();
  // Log space first, before the pipeline takes any lock (core/engine/write_pipeline.h).
  outcome->error = context_.host->WaitForLogSpace();
  if (outcome->error.ok()) outcome->error = context_.pipeline->ProcessRun(id_, this->policy(), &buffer_, &run, outcome);
  if (outcome->parked) {
    buffer_.Park(run);
  } else {
    buffer_.Unclaim(run);
  }
  return true;
}

}  // namespace dedupv1

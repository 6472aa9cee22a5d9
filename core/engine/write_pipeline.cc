#include "core/engine/write_pipeline.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "chunkstore/chunk_store.h"
#include "core/base/static_chunker.h"
#include "core/engine/claim_step.h"
#include "filters/zero_chunk_filter.h"
#include "index/block_index.h"
#include "log/log_event.h"
#include "log/operations_log.h"

namespace dedupv1 {
namespace {

uint64_t NanosSince(std::chrono::steady_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t).count());
}

// Payload of a block-mapping event (log/log_event.h): the block, the new
// mapping and the one it replaced (empty if none), each with its own CRC
// and the block's id (checked against the event's block when decoded).
std::string EncodeMappingEvent(const BlockId& id, const BlockMapping& mapping, const BlockMapping* old) {
  BlockMappingWrittenData data;
  data.block = id;
  mapping.Serialize(id, &data.new_mapping);
  if (old != nullptr) old->Serialize(id, &data.old_mapping);
  return data.Encode();
}

}  // namespace

WritePipeline::WritePipeline(Parts parts)
    : block_size_(parts.block_size),
      fingerprint_(parts.fingerprint),
      chunker_(std::move(parts.chunker)),
      chunk_store_(parts.chunk_store),
      block_index_(parts.block_index),
      log_(parts.log),
      block_locks_(parts.block_locks),
      stats_(parts.stats),
      wake_workers_(std::move(parts.wake_workers)),
      claim_index_(parts.claim_index),
      rewrite_(parts.rewrite),
      selective_threshold_(parts.selective_threshold),
      copy_replaced_(std::move(parts.copy_replaced)),
      hash_pool_(1) {}

void WritePipeline::InstallFilterChain(FilterChain chain) {
  filter_chain_ = std::move(chain);
  zero_chunks_ = filter_chain_.Contains(ZeroChunkFilter::kName);
}

Status WritePipeline::ProcessRun(uint32_t volume_id, DedupPolicy policy, WriteBuffer* buffer, WriteBuffer::Run* run,
                                 RunOutcome* outcome) {
  const uint8_t* data = run->data.data();

  // 1. Chunk boundaries. Without |final| the last unfinished chunk stays in
  //    the buffer and is chunked again together with the bytes that follow.
  std::vector<size_t> ends;
  auto phase = std::chrono::steady_clock::now();
  SplitRun(volume_id, policy, *run, &ends);
  stats_->ns_chunking += NanosSince(phase);
  if (ends.empty()) return Status::OK();
  const size_t n = ends.size();
  const uint64_t processed = ends.back();
  // The boundaries are known: hand the unfinished tail to the next run of
  // this stream now, so another worker chunks on while this one fingerprints
  // and stores.
  buffer->SealClaim(*run, run->start + processed);
  if (processed < run->data.size()) wake_workers_();

  // 2. Fingerprints.
  Chunks chunks(n);
  phase = std::chrono::steady_clock::now();
  ComputeFingerprints(data, ends, &chunks);
  stats_->ns_fingerprinting += NanosSince(phase);
  phase = std::chrono::steady_clock::now();

  // GC barrier (core/engine/garbage_collector.h) until this run's mappings are logged.
  auto gc_barrier = gc_barrier_.Shared();

  // 3. What the overwritten blocks referenced before (block-index filter).
  const uint64_t first_block = run->start / block_size_;
  const uint64_t last_block = (run->start + processed - 1) / block_size_;
  std::unordered_map<Fingerprint, ContainerId, FingerprintHasher> previous;
  for (uint64_t b = first_block; b <= last_block; b++) {
    BlockMapping old;
    if (block_index_->Get(BlockId{volume_id, b}, &old).ok()) {
      for (const auto& item : old.items()) {
        if (item.container != kZeroContainer) previous[item.fp] = item.container;
      }
    }
  }
  for (ChunkRequest& c : chunks) c.previous_chunks = &previous;

  // 4. The filter chain decides; new chunks are stored.
  std::vector<size_t> stored;
  //     With container rewriting on, known chunks of sparse old containers
  //     are stored again too, between this run's new chunks.
  //     A selective volume's chunks are grouped into the write requests
  //     they came in (select_dedupe.h).
  std::vector<uint32_t> request_of;
  if (policy == DedupPolicy::kSelective) request_of = RequestOfChunks(run->start, ends, run->request_edges);
  DEDUPV1_RETURN_IF_ERROR(FilterAndStore(volume_id, policy, processed, request_of, &chunks, outcome, &stored));
  // 4b. Cluster scope: the new chunks are claimed in the shared chunk index;
  //     lost claims map the winner's container. The claims' journal record
  //     is handed back when the run ends (claim_step.h).
  RunClaims run_claims(claim_index_);
  if (claim_index_ != nullptr) {
    DEDUPV1_RETURN_IF_ERROR(ClaimNewChunks(claim_index_, chunk_store_, stored, &chunks, run_claims.ticket()));
  }
  stats_->ns_filtering += NanosSince(phase);
  phase = std::chrono::steady_clock::now();
  stats_->runs++;
  stats_->chunks += n;
  stats_->bytes_chunked += processed;

  // 5. The blocks' new mappings.
  bool skipped = false;
  DEDUPV1_RETURN_IF_ERROR(InstallRunMappings(volume_id, buffer, *run, ends, chunks, &skipped));
  run_claims.Release(!skipped);
  stats_->ns_installing += NanosSince(phase);
  return Status::OK();
}

void WritePipeline::SplitRun(uint32_t volume_id, DedupPolicy policy, const WriteBuffer::Run& run,
                             std::vector<size_t>* ends) {
  const uint8_t* data = run.data.data();
  const auto split = [&](size_t n, bool final) {
    if (policy == DedupPolicy::kSelective) {
      SplitAtAlignedOffsets(run.start, n, final, kSelectiveChunkSize, ends);
    } else {
      chunker_->Split(data, n, final, ends);
    }
  };
  split(run.data.size(), run.final);
  if (run.final || ends->empty() || ends->back() == run.data.size()) return;
  const uint64_t cut = run.start + ends->back();
  if (cut % block_size_ == 0) return;
  const uint64_t block = cut / block_size_;
  const uint64_t block_end = (block + 1) * block_size_;
  if (block_end > run.start + run.data.size()) return;  // the rest of the block is not here: a partial write
  // Step 3 reads this block again: its reads must come after the GC barrier
  // is taken (a mapping read before it may name chunks GC then removes), and
  // this one must come before, as the cut decides what the claim hands on.
  BlockMapping stored;
  if (!block_index_->Get(BlockId{volume_id, block}, &stored).IsCorruption()) return;
  ends->clear();
  split(block_end - run.start, true);
}

void WritePipeline::ComputeFingerprints(const uint8_t* data, const std::vector<size_t>& ends, Chunks* chunks) {
  hash_pool_.ParallelFor(ends.size(), 16, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; i++) {
      size_t start = i == 0 ? 0 : ends[i - 1];
      ChunkRequest& c = (*chunks)[i];
      c.data = data + start;
      c.size = ends[i] - start;
      // Zero chunks are recognised (and never stored) only when the
      // zero-chunk filter is in the chain; otherwise they are ordinary data.
      c.is_zero = zero_chunks_ && IsAllZero(c.data, c.size);
      if (c.is_zero) c.fp = Fingerprint::Zero(fingerprint_);
      else ComputeFingerprint(fingerprint_, c.data, c.size, &c.fp);
    }
  });
}

// The fingerprint lock covers decide + store + update so a chunk is stored
// once. Holds the GC barrier shared (ProcessRun), so the copies the filter
// chain finds stay where it found them until the run's mappings are logged.
//
// With container rewriting on, two passes: the first decides every chunk
// (known ones are done), the rewrite policy picks known chunks of sparse
// containers, and the second, in the run's order, stores the new chunks
// (each decided again under its lock: another run may have stored it since)
// and the picked ones. So a rewritten chunk lands between the run's new
// chunks as in the stream, and a restore reads them in one range. Deciding
// a new chunk twice costs little: the filters before the chunk index answer
// from memory, and the bloom filter stops a new chunk there.
Status WritePipeline::FilterAndStore(uint32_t volume_id, DedupPolicy policy, uint64_t run_bytes,
                                     const std::vector<uint32_t>& request_of, Chunks* chunks, RunOutcome* outcome,
                                     std::vector<size_t>* stored) {
  // Filters that read a remote table (the chunk index on RADOS) fetch the
  // run's answers in one batch first; nothing happens on the local backend.
  auto prepared = filter_chain_.PrepareRun(*chunks);
  // Policy off stores every known chunk again through the rewrite's second
  // pass (no budget: the volume asked for it), selective those of the
  // requests it writes in full. Out-of-band stores them again too, but
  // beside the copy the index names (the entry stays, the filters are not
  // told): the background pass later remaps the blocks to that copy.
  const bool beside = policy == DedupPolicy::kOutOfBand;
  const bool store_known = policy == DedupPolicy::kOff || beside;
  const bool selective = policy == DedupPolicy::kSelective;
  const bool by_policy = store_known || selective;  // else the rewrite policy picks
  const bool rewriting = rewrite_.options().enabled || by_policy;
  std::vector<bool> known(chunks->size(), false);
  for (size_t i = 0; i < chunks->size(); i++) {
    ChunkRequest& c = (*chunks)[i];
    std::lock_guard<std::mutex> fp_lock(fp_locks_.For(c.fp));
    bool is_known = false;
    DEDUPV1_RETURN_IF_ERROR(DecideChunk(&c, &is_known));
    known[i] = is_known;
    if (!is_known && !rewriting) DEDUPV1_RETURN_IF_ERROR(StoreNewChunk(volume_id, i, &c, outcome, stored));
  }
  if (!rewriting) return Status::OK();

  std::vector<bool> rewrite = store_known ? KnownOldCopies(*chunks, known)
                              : selective  ? SelectStoredAgain(*chunks, known, request_of)
                                           : ChooseRewrites(volume_id, run_bytes, *chunks, known);
  // The rewrite budget was charged for the chooser's picks: counted before
  // the other occurrences join them (they add no stored bytes).
  uint64_t picked = 0, rewritten = 0;
  for (size_t i = 0; i < chunks->size(); i++) picked += rewrite[i] ? (*chunks)[i].size : 0;
  PickEveryOccurrence(*chunks, known, &rewrite);
  // A chunk that repeats in the run is stored again once; the later ones
  // name that copy.
  std::unordered_map<Fingerprint, ContainerId, FingerprintHasher> copies;
  Status s;
  for (size_t i = 0; i < chunks->size() && s.ok(); i++) {
    if (known[i] && !rewrite[i]) continue;
    ChunkRequest& c = (*chunks)[i];
    std::lock_guard<std::mutex> fp_lock(fp_locks_.For(c.fp));
    if (rewrite[i]) {
      auto copy = copies.find(c.fp);
      if (copy != copies.end()) {
        c.container = copy->second;
        continue;
      }
      s = chunk_store_->StoreChunk(c.fp, c.data, c.size, beside ? BesideStream(volume_id) : volume_id, &c.container);
      if (s.ok() && !beside) s = filter_chain_.UpdateMoved(&c);
      if (!s.ok()) break;
      // The copy the index named before may now be named by nothing.
      if (copy_replaced_ && !beside && c.moved_off != kNoContainer) copy_replaced_(c.moved_off);
      copies.emplace(c.fp, c.container);
      if (by_policy) {
        stats_->chunks_stored_again++;
        stats_->bytes_stored_again += c.size;
        continue;
      }
      rewritten += c.size;
      stats_->chunks_rewritten++;
      stats_->bytes_rewritten += c.size;
      continue;
    }
    bool is_known = false;
    s = DecideChunk(&c, &is_known, /*counted=*/false);
    if (s.ok() && !is_known) s = StoreNewChunk(volume_id, i, &c, outcome, stored);
  }
  // The budget keeps only what was stored again; a failed (or parked) run is
  // charged again when it is redone.
  if (!by_policy) rewrite_.Refund(volume_id, s.ok() ? 0 : run_bytes, picked - rewritten);
  return s;
}

Status WritePipeline::DecideChunk(ChunkRequest* c, bool* known, bool counted) {
  Status error;
  FilterResult r = filter_chain_.Decide(c, &error, counted);
  if (r == FilterResult::kError) return error;
  *known = FilterChain::IsKnown(r);
  if (!*known) return Status::OK();
  DEDUPV1_RETURN_IF_ERROR(filter_chain_.UpdateKnown(*c));
  if (c->is_zero) {
    stats_->chunks_zero++;
    stats_->bytes_zero += c->size;
  } else {
    stats_->chunks_known++;
  }
  return Status::OK();
}

Status WritePipeline::StoreNewChunk(uint32_t volume_id, size_t i, ChunkRequest* c, RunOutcome* outcome,
                                    std::vector<size_t>* stored) {
  DEDUPV1_RETURN_IF_ERROR(chunk_store_->StoreChunk(c->fp, c->data, c->size, volume_id, &c->container));
  stored->push_back(i);
  Status updated = filter_chain_.UpdateNew(*c);
  // Only the chunk index refuses an insert for want of space ("chunk
  // index full"): the run waits parked, the rest of the buffer goes on.
  // The chunk just stored stays in its container as garbage.
  outcome->parked = updated.IsNoSpace();
  DEDUPV1_RETURN_IF_ERROR(updated);
  outcome->new_chunks = true;
  stats_->chunks_new++;
  stats_->bytes_new += c->size;
  return Status::OK();
}

std::vector<bool> WritePipeline::ChooseRewrites(uint32_t volume_id, uint64_t run_bytes, const Chunks& chunks,
                                                const std::vector<bool>& known) {
  std::vector<RewritePolicy::Chunk> seen(chunks.size());
  for (size_t i = 0; i < chunks.size(); i++) {
    seen[i].size = chunks[i].size;
    seen[i].container = OldCopyOf(chunks[i], known[i]);
  }
  std::vector<bool> rewrite(chunks.size(), false);
  for (size_t i : rewrite_.Choose(volume_id, run_bytes, seen)) rewrite[i] = true;
  return rewrite;
}

std::vector<bool> WritePipeline::KnownOldCopies(const Chunks& chunks, const std::vector<bool>& known) const {
  std::vector<bool> again(chunks.size(), false);
  for (size_t i = 0; i < chunks.size(); i++) again[i] = OldCopyOf(chunks[i], known[i]) != kNoContainer;
  return again;
}

std::vector<bool> WritePipeline::SelectStoredAgain(const Chunks& chunks, const std::vector<bool>& known,
                                                  const std::vector<uint32_t>& request_of) {
  std::vector<bool> again(chunks.size(), false);
  for (size_t first = 0; first < chunks.size();) {
    size_t end = first, known_count = 0, zero_count = 0;
    uint64_t bytes = 0;
    for (; end < chunks.size() && request_of[end] == request_of[first]; end++) {
      known_count += known[end] ? 1 : 0;
      zero_count += known[end] && chunks[end].is_zero ? 1 : 0;
      bytes += chunks[end].size;
    }
    const RequestCategory category = ClassifyRequest(end - first, known_count, zero_count, selective_threshold_);
    switch (category) {
      case RequestCategory::kAllNew:
        stats_->requests_all_new++;
        stats_->bytes_all_new += bytes;
        break;
      case RequestCategory::kFullDedup:
        stats_->requests_full_dedup++;
        stats_->bytes_full_dedup += bytes;
        break;
      case RequestCategory::kPartialDedup:
        stats_->requests_partial_dedup++;
        stats_->bytes_partial_dedup += bytes;
        break;
      case RequestCategory::kWrittenInFull:
        stats_->requests_written_in_full++;
        stats_->bytes_written_in_full += bytes;
        for (size_t i = first; i < end; i++) again[i] = OldCopyOf(chunks[i], known[i]) != kNoContainer;
        break;
    }
    first = end;
  }
  return again;
}

void WritePipeline::PickEveryOccurrence(const Chunks& chunks, const std::vector<bool>& known,
                                        std::vector<bool>* rewrite) const {
  std::unordered_set<Fingerprint, FingerprintHasher> picked;
  for (size_t i = 0; i < chunks.size(); i++) {
    if ((*rewrite)[i]) picked.insert(chunks[i].fp);
  }
  if (picked.empty()) return;
  for (size_t i = 0; i < chunks.size(); i++) {
    if (!(*rewrite)[i] && picked.count(chunks[i].fp) > 0) {
      (*rewrite)[i] = OldCopyOf(chunks[i], known[i]) != kNoContainer;
    }
  }
}

uint64_t WritePipeline::BesideStream(uint32_t volume_id) const {
  return volume_id + static_cast<uint64_t>(std::max(1, chunk_store_->options().open_containers / 2));
}

ContainerId WritePipeline::OldCopyOf(const ChunkRequest& c, bool known) const {
  if (!known || c.is_zero || c.container == kNoContainer || c.container == kZeroContainer ||
      !chunk_store_->IsCommitted(c.container)) {
    return kNoContainer;
  }
  return chunk_store_->Resolve(c.container);
}

// Block by block, in the run's order. A block rewritten or unmapped since its
// bytes were copied keeps its dirty bytes and is redone later. Holds the GC
// barrier shared (ProcessRun).
Status WritePipeline::InstallRunMappings(uint32_t volume_id, WriteBuffer* buffer, const WriteBuffer::Run& run,
                                         const std::vector<size_t>& ends, const Chunks& chunks, bool* skipped) {
  const size_t n = ends.size();
  const uint64_t processed = ends.back();
  size_t chunk_index = 0;
  for (size_t bi = 0; bi < run.blocks.size(); bi++) {
    const uint64_t block = run.blocks[bi];
    const uint64_t block_start = block * block_size_;
    const uint64_t begin = std::max<uint64_t>(block_start, run.start);
    const uint64_t end = std::min<uint64_t>(block_start + block_size_, run.start + processed);
    if (begin >= end) break;
    std::vector<BlockMappingItem> items;
    while (chunk_index < n) {
      uint64_t cs = run.start + (chunk_index == 0 ? 0 : ends[chunk_index - 1]);
      uint64_t ce = run.start + ends[chunk_index];
      if (cs >= end) break;
      uint64_t pb = std::max(cs, begin), pe = std::min(ce, end);
      const ChunkRequest& c = chunks[chunk_index];
      items.push_back(BlockMappingItem{c.fp, c.container, static_cast<uint32_t>(pb - cs),
                                       static_cast<uint32_t>(pe - pb)});
      if (ce > end) break;  // the chunk continues into the next block
      chunk_index++;
    }
    DEDUPV1_RETURN_IF_ERROR(InstallBlock(BlockId{volume_id, block}, buffer, run.seqs[bi],
                                         static_cast<uint32_t>(begin - block_start),
                                         static_cast<uint32_t>(end - block_start), items, skipped));
  }
  return Status::OK();
}

Status WritePipeline::InstallBlock(const BlockId& id, WriteBuffer* buffer, uint64_t seq, uint32_t in_begin,
                                   uint32_t in_end, const std::vector<BlockMappingItem>& items, bool* skipped) {
  std::unique_lock<std::shared_mutex> lock(block_locks_->For(id));
  // Only the copy we chunked may be replaced: check the sequence first,
  // then log and install the mapping, then clear the bytes (all under the
  // lock, which Put and Discard need too, so the sequence cannot change in
  // between). The bytes leave the buffer only after their event is logged:
  // a sync that finds them gone (DrainUpTo) finds the event logged and
  // makes it durable. If the install fails, they simply stay dirty.
  BlockMapping old(block_size_);
  Status s = block_index_->Get(id, &old);
  // A block whose stored mapping cannot be read (Corruption: a damaged
  // record) can still be overwritten whole: the new mapping needs nothing
  // of the old one. It is logged without an old mapping, so the old
  // chunks keep their references (too high a count only keeps garbage
  // until dedupv1_check --repair recounts). A partial write needs the old
  // mapping and fails, naming the block.
  const bool whole_block = in_begin == 0 && in_end == block_size_;
  if (!s.ok() && !s.IsNotFound() && !(s.IsCorruption() && whole_block)) return s;
  if (s.IsCorruption()) stats_->damaged_mappings_overwritten++;
  const bool had_old = s.ok();
  if (!had_old) old = BlockMapping(block_size_);
  BlockMapping mapping = old;
  DEDUPV1_RETURN_IF_ERROR(mapping.Overlay(in_begin, items));
  if (!buffer->Unchanged(id.block, seq)) {
    stats_->mappings_skipped++;
    *skipped = true;
    return Status::OK();
  }
  DEDUPV1_RETURN_IF_ERROR(InstallMapping(id, had_old ? &old : nullptr, &mapping));
  buffer->ClearIfUnchanged(id.block, seq, in_begin, in_end);
  return Status::OK();
}

Status WritePipeline::InstallMapping(const BlockId& id, const BlockMapping* old, BlockMapping* mapping, bool unmap) {
  // Everything that can refuse the mapping comes before its event is logged:
  // a logged event is replayed after a crash and counted into usage counts,
  // so the mapping it describes must then be installed.
  DEDUPV1_RETURN_IF_ERROR(block_index_->PrepareInstall(id, *mapping));
  LogEventType type = LogEventType::kBlockMappingWritten;
  std::string payload;
  if (unmap && mapping->IsAllZero()) {
    // The block index keeps the all-zero mapping (the block reads zeros).
    BlockMappingDeletedData deleted;
    deleted.block = id;
    if (old != nullptr) old->Serialize(id, &deleted.old_mapping);
    type = LogEventType::kBlockMappingDeleted;
    payload = deleted.Encode();
  } else {
    payload = EncodeMappingEvent(id, *mapping, old);
  }
  std::shared_lock<std::shared_mutex> l(mapping_mu_);
  uint64_t event_id;
  DEDUPV1_RETURN_IF_ERROR(log_->Append(type, payload, &event_id));
  // The version is the event's id: replay applies an event only to an older mapping.
  mapping->set_version(event_id);
  Status s = block_index_->Install(id, *mapping);
  mapping_installs_.fetch_add(1, std::memory_order_acq_rel);  // also after a failure: the block may have changed
  return s;
}

uint64_t WritePipeline::LastAppliedEventId() {
  std::unique_lock<std::shared_mutex> l(mapping_mu_);
  return log_->last_id();
}

}  // namespace dedupv1

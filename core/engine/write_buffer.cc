#include "core/engine/write_buffer.h"

#include <algorithm>
#include <cstring>

namespace dedupv1 {

void WriteBufferBudget::WaitForSpace(const std::atomic<bool>* stop) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return used_ < limit_ || (stop != nullptr && stop->load()); });
}

void WriteBufferBudget::Charge(uint64_t bytes) {
  std::lock_guard<std::mutex> l(mu_);
  used_ += bytes;
}

void WriteBufferBudget::Release(uint64_t bytes) {
  {
    std::lock_guard<std::mutex> l(mu_);
    used_ -= std::min(used_, bytes);
  }
  cv_.notify_all();
}

uint64_t WriteBufferBudget::used() const {
  std::lock_guard<std::mutex> l(mu_);
  return used_;
}

bool WriteBufferBudget::UnderPressure() const {
  std::lock_guard<std::mutex> l(mu_);
  return used_ * 4 >= limit_ * 3;
}

void WriteBufferBudget::WakeAll() { cv_.notify_all(); }

WriteBuffer::WriteBuffer(uint32_t block_size, WriteBufferBudget* budget)
    : block_size_(block_size), budget_(budget) {}

WriteBuffer::~WriteBuffer() {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t pages = 0;
  for (const auto& [block, b] : blocks_) pages += b.data.pages();
  budget_->Release(pages * PagePool::kPageSize + blocks_.size() * kBlockBookkeeping);
  blocks_.clear();
}

WriteBuffer::DirtyBlock* WriteBuffer::GetOrCreateLocked(uint64_t block, uint64_t epoch) {
  auto it = blocks_.find(block);
  if (it != blocks_.end()) {
    if (it->second.dirty.empty()) {
      it->second.first_epoch = epoch;
      it->second.edges.clear();  // of requests already processed
    }
    return &it->second;
  }
  DirtyBlock& b = blocks_.try_emplace(block, block_size_).first->second;
  b.first_epoch = epoch;
  if (free_slots_.empty()) {
    b.slot = static_cast<uint32_t>(summaries_.size());
    summaries_.emplace_back();
  } else {
    b.slot = free_slots_.top();
    free_slots_.pop();
  }
  summaries_[b.slot].block = block;
  budget_->Charge(kBlockBookkeeping);
  return &b;
}

void WriteBuffer::SummarizeLocked(const DirtyBlock& b) {
  Summary& s = summaries_[b.slot];
  s.first_epoch = b.first_epoch;
  s.last_write = b.last_write;
  s.longest_range = 0;
  for (const auto& r : b.dirty.ranges()) s.longest_range = std::max(s.longest_range, r.second - r.first);
  s.dirty_at_start = !b.dirty.empty() && b.dirty.ranges().front().first == 0;
  s.dirty_at_end = !b.dirty.empty() && b.dirty.ranges().back().second == block_size_;
}

void WriteBuffer::FreeIfCleanLocked(std::map<uint64_t, DirtyBlock>::iterator it) {
  TrimLocked(&it->second);
  if (it->second.dirty.empty() && !BlockClaimedLocked(it->first)) {
    summaries_[it->second.slot] = Summary();
    free_slots_.push(it->second.slot);
    blocks_.erase(it);
    budget_->Release(kBlockBookkeeping);
  }
}

void WriteBuffer::TrimLocked(DirtyBlock* b) {
  const uint32_t released = b->data.ReleaseOutside(b->dirty, &pool_);
  if (released > 0) budget_->Release(static_cast<uint64_t>(released) * PagePool::kPageSize);
}

const WriteBuffer::Claim* WriteBuffer::ClaimAtLocked(uint64_t pos) const {
  for (const auto& c : claims_) {
    if (c.start <= pos && pos < c.end) return &c;
  }
  return nullptr;
}

bool WriteBuffer::BlockClaimedLocked(uint64_t block) const {
  const uint64_t b = block * block_size_, e = b + block_size_;
  for (const auto& c : claims_) {
    if (c.start < e && c.end > b) return true;
  }
  return false;
}

IntervalSet WriteBuffer::DirtyBlock::Claimable() const {
  IntervalSet out = dirty;  // a copy either way: most blocks have nothing parked
  for (const auto& r : parked.ranges()) out.Remove(r.first, r.second);
  return out;
}

bool WriteBuffer::IsDirtyLocked(uint64_t pos) const {
  auto it = blocks_.find(pos / block_size_);
  if (it == blocks_.end()) return false;
  const uint32_t off = static_cast<uint32_t>(pos % block_size_);
  return it->second.dirty.Covers(off, off + 1) && !it->second.parked.Covers(off, off + 1);
}

namespace {

void AddEdge(std::vector<uint32_t>* edges, uint32_t at) {
  auto pos = std::lower_bound(edges->begin(), edges->end(), at);
  if (pos != edges->end() && *pos == at) return;
  if (edges->size() >= WriteBuffer::kMaxRequestEdges) return;  // the requests merge
  edges->insert(pos, at);
}

}  // namespace

uint64_t WriteBuffer::Put(uint64_t block, uint32_t offset, const uint8_t* data, uint32_t len,
                          uint64_t epoch, RequestEdges edges) {
  std::lock_guard<std::mutex> l(mu_);
  DirtyBlock* b = GetOrCreateLocked(block, epoch);
  if (edges.begins) AddEdge(&b->edges, offset);
  if (edges.ends) AddEdge(&b->edges, offset + len);
  const uint32_t added = b->data.Write(offset, data, len, &pool_);
  if (added > 0) budget_->Charge(static_cast<uint64_t>(added) * PagePool::kPageSize);
  b->dirty.Add(offset, offset + len);
  if (!b->parked.empty()) b->parked.Remove(offset, offset + len);  // new data may need no new entry
  b->seq++;
  b->last_epoch = epoch;
  b->last_write = Clock::now();
  SummarizeLocked(*b);
  return StretchLocked(block, *b, offset, offset + len);
}

uint64_t WriteBuffer::StretchLocked(uint64_t block, const DirtyBlock& b, uint32_t begin, uint32_t end) const {
  uint32_t first = begin, last = end;
  for (const auto& r : b.dirty.ranges()) {
    if (r.first <= begin && r.second >= end) {
      first = r.first;
      last = r.second;
      break;
    }
  }
  uint64_t len = last - first;
  if (first == 0 && block > 0) {
    auto before = blocks_.find(block - 1);
    if (before != blocks_.end() && !before->second.dirty.empty()) {
      const auto& tail = before->second.dirty.ranges().back();
      if (tail.second == block_size_) {
        if (tail.first == 0) return kLongStretch;
        len += block_size_ - tail.first;
      }
    }
  }
  if (last == block_size_) {
    auto after = blocks_.find(block + 1);
    if (after != blocks_.end() && !after->second.dirty.empty()) {
      const auto& head = after->second.dirty.ranges().front();
      if (head.first == 0) {
        if (head.second == block_size_) return kLongStretch;
        len += head.second;
      }
    }
  }
  return len;
}

void WriteBuffer::Discard(uint64_t block, uint32_t offset, uint32_t len) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = blocks_.find(block);
  if (it == blocks_.end()) return;
  it->second.dirty.Remove(offset, offset + len);
  if (!it->second.parked.empty()) it->second.parked.Remove(offset, offset + len);
  it->second.seq++;
  SummarizeLocked(it->second);
  FreeIfCleanLocked(it);
}

bool WriteBuffer::Overlay(uint64_t block, uint32_t offset, uint32_t len, uint8_t* out) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = blocks_.find(block);
  if (it == blocks_.end()) return false;
  const uint32_t end = offset + len;
  for (const auto& r : it->second.dirty.ranges()) {
    uint32_t b = std::max(r.first, offset), e = std::min(r.second, end);
    if (b < e) it->second.data.Read(b, e - b, out + (b - offset));
  }
  return it->second.dirty.Covers(offset, end);
}

bool WriteBuffer::Intersects(uint64_t block, uint32_t offset, uint32_t len) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = blocks_.find(block);
  return it != blocks_.end() && it->second.dirty.Intersects(offset, offset + len);
}

bool WriteBuffer::ClaimRun(const ClaimPolicy& policy, Clock::time_point now, Run* run) {
  std::lock_guard<std::mutex> l(mu_);
  const size_t n = summaries_.size();
  size_t slot = scan_from_ < n ? scan_from_ : 0;
  for (size_t visited = 0; visited < n; visited++, slot = slot + 1 < n ? slot + 1 : 0) {
    const Summary& s = summaries_[slot];
    if (!MayBeReadyLocked(s, policy, now)) continue;  // a free slot has no dirty range
    if (ClaimInBlockLocked(blocks_.find(s.block), policy, now, run)) {
      scan_from_ = static_cast<uint32_t>(slot);
      return true;
    }
  }
  return false;
}

bool WriteBuffer::MayBeReadyLocked(const Summary& s, const ClaimPolicy& policy, Clock::time_point now) const {
  if (s.longest_range == 0) return false;
  if (policy.force_all || policy.flush_short_runs || s.first_epoch <= policy.force_epoch ||
      now - s.last_write >= policy.flush_delay || s.longest_range >= policy.min_ready_bytes) {
    return true;
  }
  // Most blocks of a buffer that random small writes filled hold short young
  // stretches, often several: a run starting in the block is no longer than
  // the longest of them unless its bytes go on into the next block.
  if (!s.dirty_at_end) return false;
  auto next = blocks_.find(s.block + 1);
  return next != blocks_.end() && summaries_[next->second.slot].dirty_at_start;
}

bool WriteBuffer::ClaimInBlockLocked(std::map<uint64_t, DirtyBlock>::iterator it, const ClaimPolicy& policy,
                                     Clock::time_point now, Run* run) {
  const DirtyBlock& b = it->second;
  const uint64_t base = it->first * block_size_;
  // Candidates: dirty bytes no run has claimed and none is parked.
  IntervalSet candidates = b.Claimable();
  for (const auto& c : claims_) {
    if (c.start < base + block_size_ && c.end > base) {
      candidates.Remove(static_cast<uint32_t>(std::max(c.start, base) - base),
                        static_cast<uint32_t>(std::min(c.end, base + block_size_) - base));
    }
  }
  for (const auto& range : candidates.ranges()) {
    const uint64_t start = base + range.first;
    // A run starts only where a chunk starts: after clean bytes, or at the
    // sealed end of another run. Bytes that continue an unclaimed stretch
    // belong to the run that starts where that stretch starts.
    if (start > 0) {
      const Claim* before = ClaimAtLocked(start - 1);
      if (before != nullptr ? !before->sealed : IsDirtyLocked(start - 1)) continue;
    }
    struct Piece { std::map<uint64_t, DirtyBlock>::iterator it; uint32_t begin, end; };
    std::vector<Piece> pieces{{it, range.first, range.second}};
    size_t len = range.second - range.first;
    bool forced = policy.force_all || b.first_epoch <= policy.force_epoch;
    auto last = it;
    while (pieces.back().end == block_size_ && len < policy.max_run_bytes) {
      auto next = std::next(last);
      const uint64_t next_base = (last->first + 1) * block_size_;
      if (next == blocks_.end() || next->first != last->first + 1) break;
      const IntervalSet next_claimable = next->second.Claimable();
      if (next_claimable.empty() || next_claimable.ranges().front().first != 0 ||
          ClaimAtLocked(next_base) != nullptr) {
        break;
      }
      uint32_t e = next_claimable.ranges().front().second;
      for (const auto& c : claims_) {  // stop where another run's claim begins
        if (c.start > next_base && c.start < next_base + e) e = static_cast<uint32_t>(c.start - next_base);
      }
      pieces.push_back({next, 0, e});
      len += e;
      forced |= next->second.first_epoch <= policy.force_epoch;
      last = next;
    }
    // If the byte after the run is dirty the data goes on (another run, a
    // length limit): its last chunk must not be forced to end here.
    const bool cut = IsDirtyLocked(start + len);
    const bool aged = now - last->second.last_write >= policy.flush_delay;
    bool final = (forced || aged) && !cut;
    if (!final && len < policy.min_ready_bytes) {
      if (!policy.flush_short_runs || cut) continue;
      final = true;
    }

    run->start = start;
    run->final = final;
    run->data.resize(len);
    run->blocks.clear();
    run->seqs.clear();
    run->request_edges.clear();
    size_t pos = 0;
    for (const auto& p : pieces) {
      p.it->second.data.Read(p.begin, p.end - p.begin, run->data.data() + pos);
      pos += p.end - p.begin;
      run->blocks.push_back(p.it->first);
      run->seqs.push_back(p.it->second.seq);
      const uint64_t piece_base = p.it->first * block_size_;
      for (uint32_t e : p.it->second.edges) {
        const uint64_t at = piece_base + e;
        if (e >= p.begin && e <= p.end && at > start && at < start + len) run->request_edges.push_back(at);
      }
    }
    // An edge at a block boundary may be recorded on both sides of it.
    run->request_edges.erase(std::unique(run->request_edges.begin(), run->request_edges.end()),
                             run->request_edges.end());
    run->claim = next_claim_++;
    claims_.push_back(Claim{run->claim, start, start + len, false});
    return true;
  }
  return false;
}

bool WriteBuffer::Unchanged(uint64_t block, uint64_t seq) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = blocks_.find(block);
  return it != blocks_.end() && it->second.seq == seq;
}

bool WriteBuffer::ClearIfUnchanged(uint64_t block, uint64_t seq, uint32_t begin, uint32_t end) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = blocks_.find(block);
  if (it == blocks_.end() || it->second.seq != seq) return false;
  // Clearing does not change the sequence: another run's copy of other bytes
  // of this block stays valid.
  it->second.dirty.Remove(begin, end);
  if (!it->second.parked.empty()) it->second.parked.Remove(begin, end);
  SummarizeLocked(it->second);
  TrimLocked(&it->second);
  return true;
}

void WriteBuffer::SealClaim(const Run& run, uint64_t end) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& c : claims_) {
    if (c.id == run.claim) {
      c.end = end;
      c.sealed = true;
    }
  }
}

void WriteBuffer::Unclaim(const Run& run) {
  std::lock_guard<std::mutex> l(mu_);
  for (size_t i = 0; i < claims_.size(); i++) {
    if (claims_[i].id == run.claim) {
      claims_.erase(claims_.begin() + i);
      break;
    }
  }
  for (uint64_t block : run.blocks) {
    auto it = blocks_.find(block);
    if (it != blocks_.end()) FreeIfCleanLocked(it);
  }
}

void WriteBuffer::Park(const Run& run) {
  std::lock_guard<std::mutex> l(mu_);
  for (size_t i = 0; i < claims_.size(); i++) {
    if (claims_[i].id != run.claim) continue;
    const Claim c = claims_[i];
    for (size_t k = 0; k < run.blocks.size(); k++) {
      auto it = blocks_.find(run.blocks[k]);
      if (it == blocks_.end() || it->second.seq != run.seqs[k]) continue;
      const uint64_t base = run.blocks[k] * block_size_;
      if (c.end <= base || c.start >= base + block_size_) continue;  // released by SealClaim
      const uint32_t begin = static_cast<uint32_t>(std::max(c.start, base) - base);
      const uint32_t end = static_cast<uint32_t>(std::min(c.end, base + block_size_) - base);
      for (const auto& r : it->second.dirty.ranges()) {
        it->second.parked.Add(std::max(r.first, begin), std::min(r.second, end));
      }
    }
    claims_.erase(claims_.begin() + i);
    break;
  }
  for (uint64_t block : run.blocks) {
    auto it = blocks_.find(block);
    if (it != blocks_.end()) FreeIfCleanLocked(it);
  }
}

bool WriteBuffer::UnparkAll() {
  std::lock_guard<std::mutex> l(mu_);
  bool any = false;
  for (auto& [block, b] : blocks_) {
    any |= !b.parked.empty();
    b.parked = IntervalSet();
  }
  return any;
}

std::vector<uint64_t> WriteBuffer::ParkedBlocksUpTo(uint64_t epoch) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<uint64_t> out;
  for (const auto& [block, b] : blocks_) {
    if (!b.parked.empty() && b.first_epoch <= epoch) out.push_back(block);
  }
  return out;
}

uint64_t WriteBuffer::DropParked(uint64_t block, uint64_t epoch) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = blocks_.find(block);
  if (it == blocks_.end() || it->second.parked.empty() || it->second.last_epoch > epoch) return 0;
  const uint64_t n = it->second.parked.bytes();
  for (const auto& r : it->second.parked.ranges()) it->second.dirty.Remove(r.first, r.second);
  it->second.parked = IntervalSet();
  it->second.seq++;  // as an unmap: a run's copy of these bytes is stale
  SummarizeLocked(it->second);
  FreeIfCleanLocked(it);
  return n;
}

bool WriteBuffer::HasDirtyUpTo(uint64_t epoch) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [block, b] : blocks_) {
    if (!b.dirty.empty() && b.first_epoch <= epoch) return true;
  }
  return false;
}

bool WriteBuffer::HasPendingUpTo(uint64_t epoch) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [block, b] : blocks_) {
    if (b.first_epoch <= epoch && b.dirty.bytes() > b.parked.bytes()) return true;
  }
  return false;
}

void WriteBuffer::PendingAndParkedUpTo(uint64_t epoch, bool* pending, bool* parked) const {
  std::lock_guard<std::mutex> l(mu_);
  *pending = false;
  *parked = false;
  for (const auto& [block, b] : blocks_) {
    if (b.first_epoch > epoch) continue;
    *pending |= b.dirty.bytes() > b.parked.bytes();
    *parked |= !b.parked.empty();
  }
}

uint64_t WriteBuffer::parked_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t n = 0;
  for (const auto& [block, b] : blocks_) n += b.parked.bytes();
  return n;
}

uint64_t WriteBuffer::dirty_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t n = 0;
  for (const auto& [block, b] : blocks_) n += b.dirty.bytes();
  return n;
}

size_t WriteBuffer::dirty_blocks() const {
  std::lock_guard<std::mutex> l(mu_);
  return blocks_.size();
}

}  // namespace dedupv1

#include "index/block_index.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include <fmt/format.h>

#include "core/base/thread_name.h"

namespace dedupv1 {

namespace {

constexpr size_t kBlockKeySize = 12;
// How long the background thread waits before retrying a failed write-back.
constexpr std::chrono::milliseconds kRetryDelay(500);

Status AbortedClosed() { return Status::Aborted("block index is closed"); }

}  // namespace

std::string EncodeBlockKey(const BlockId& id) {
  std::string key(kBlockKeySize, '\0');
  for (int i = 0; i < 4; i++) key[i] = static_cast<char>(id.volume >> (24 - 8 * i));
  for (int i = 0; i < 8; i++) key[4 + i] = static_cast<char>(id.block >> (56 - 8 * i));
  return key;
}

bool DecodeBlockKey(std::string_view key, BlockId* id) {
  if (key.size() != kBlockKeySize) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(key.data());
  uint32_t volume = 0;
  for (int i = 0; i < 4; i++) volume = (volume << 8) | p[i];
  uint64_t block = 0;
  for (int i = 0; i < 8; i++) block = (block << 8) | p[4 + i];
  id->volume = volume;
  id->block = block;
  return true;
}

BlockIndex::BlockIndex(const BlockIndexOptions& options, std::unique_ptr<KvStore> store,
                       std::function<bool(ContainerId)> is_committed)
    : options_(options), is_committed_(std::move(is_committed)), store_(std::move(store)) {}

Status BlockIndex::Open(const BlockIndexOptions& options, Env* env,
                        std::function<bool(ContainerId)> is_committed,
                        std::unique_ptr<BlockIndex>* out) {
  if (options.path.empty()) return Status::InvalidArgument("block index: path is empty");
  std::unique_ptr<KvStore> store;
  Status s = OpenKvStore(options.backend, options.path, env, &store);
  if (!s.ok()) return s.WithContext("block index");
  return Open(options, std::move(store), std::move(is_committed), out);
}

Status BlockIndex::Open(const BlockIndexOptions& options, std::unique_ptr<KvStore> store,
                        std::function<bool(ContainerId)> is_committed,
                        std::unique_ptr<BlockIndex>* out) {
  if (store == nullptr) return Status::InvalidArgument("block index: no store");
  if (options.block_size == 0) return Status::InvalidArgument("block index: block size 0");
  if (options.aux_hard_limit == 0) {
    return Status::InvalidArgument("block index: auxiliary hard limit 0");
  }
  if (options.aux_soft_limit > options.aux_hard_limit) {
    return Status::InvalidArgument(fmt::format(
        "block index: auxiliary soft limit {} above the hard limit {}", options.aux_soft_limit,
        options.aux_hard_limit));
  }
  if (options.write_back_batch == 0) {
    return Status::InvalidArgument("block index: write-back batch size 0");
  }
  std::unique_ptr<BlockIndex> index(
      new BlockIndex(options, std::move(store), std::move(is_committed)));
  DEDUPV1_RETURN_IF_ERROR(index->LoadWrittenBlocks());
  index->background_ = std::thread([raw = index.get()] {
    NameThisThread("dd-block-index");
    raw->BackgroundLoop();
  });
  *out = std::move(index);
  return Status::OK();
}

BlockIndex::~BlockIndex() { Close(); }

std::string BlockIndex::StoreName() const {
  return options_.path.empty() ? std::string("block index store") : "block index " + options_.path;
}

Status BlockIndex::DamagedError(const BlockId& id, const std::string& why) const {
  return Status::Corruption(fmt::format("{}: block {}: {}; reads of it fail until dedupv1_check --repair puts "
                                        "the store right (or a new write replaces it)",
                                        StoreName(), BlockIdString(id), why));
}

Status BlockIndex::LoadWrittenBlocks() {
  std::lock_guard<std::mutex> lock(mu_);
  BlockStoreScanOptions scan_options;
  scan_options.upgrade_old_records = options_.upgrade_old_records;
  // As large as a flush's transactions: one synced TC transaction per 512
  // records made the upgrade of 200 K records take 138 s instead of 11 s.
  scan_options.upgrade_batch = std::max<size_t>(options_.write_back_batch, kFlushBatch);
  scan_options.on_key = [this](const BlockId& id) { written_.Mark(id); };
  BlockStoreScan scan;
  DEDUPV1_RETURN_IF_ERROR(ScanBlockStore(store_.get(), scan_options, &scan));
  upgraded_at_open_ = scan.upgraded;
  old_format_records_ = scan.old_format;
  if (scan.upgraded > 0) {
    std::fprintf(stderr, "dedupv1: %s: rewrote %llu block mappings of older builds with their block id\n",
                 StoreName().c_str(), static_cast<unsigned long long>(scan.upgraded));
  }
  ApplyScanLocked(scan);
  if (!scan.problems.empty()) {
    // Never silent: tgtd's log names what is damaged (dedupv1_check lists
    // all of it and repairs what it can).
    std::fprintf(stderr, "dedupv1: %s: %zu damaged record%s found at open; %zu block%s refused until repaired\n",
                 StoreName().c_str(), scan.problems.size(), scan.problems.size() == 1 ? "" : "s",
                 damaged_.size(), damaged_.size() == 1 ? "" : "s");
    size_t shown = 0;
    for (const BlockStoreProblem& p : scan.problems) {
      if (shown++ == 10) break;
      std::fprintf(stderr, "dedupv1:   %s\n", DescribeBlockStoreProblem(p).c_str());
    }
  }
  return Status::OK();
}

void BlockIndex::ApplyScanLocked(const BlockStoreScan& scan) {
  damaged_.clear();
  for (const auto& [id, r] : scan.blocks) {
    if (r.ambiguous_key) {
      damaged_[id] = Damage{true, r.why};
    } else if (r.displaced && aux_.find(id) == aux_.end()) {
      // A mapping in memory is newer than any record; once written back it
      // is found under the block's own key.
      damaged_[id] = Damage{false, r.why};
    }
  }
  held_count_ = 0;
  for (auto& [id, entry] : aux_) {
    auto d = damaged_.find(id);
    const bool hold = d != damaged_.end() && d->second.ambiguous_key;
    if (hold != entry.held) {
      Unregister(id, entry);
      if (hold) DropStable(&entry);
      entry.held = hold;
      Register(id, entry);
    }
    if (entry.held) held_count_++;
  }
  if (WriteBackWanted()) bg_cv_.notify_one();
}

void BlockIndex::Register(const BlockId& id, const AuxEntry& entry) {
  if (!entry.uncommitted.empty()) {
    for (ContainerId c : entry.uncommitted) waiting_[c].insert(id);
  } else if (!entry.held) {
    persistable_.emplace(entry.seq, id);
  }
}

Status BlockIndex::Get(const BlockId& id, BlockMapping* mapping) {
  reads_++;
  if (store_ == nullptr) return AbortedClosed();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = aux_.find(id);
    if (it != aux_.end()) {
      *mapping = it->second.mapping;
      aux_hits_++;
      return Status::OK();
    }
    if (!damaged_.empty()) {
      auto d = damaged_.find(id);
      if (d != damaged_.end()) return DamagedError(id, d->second.why);
    }
    if (!written_.MayBeWritten(id)) {
      misses_++;
      fresh_misses_++;
      return Status::NotFound(fmt::format("block {}/{} was never written", id.volume, id.block));
    }
  }
  // Not in the auxiliary index: the store holds the newest version, because
  // a mapping leaves the auxiliary index only after it was written there.
  std::string value;
  Status s = store_->Get(EncodeBlockKey(id), &value);
  if (s.IsNotFound()) {
    // The block has a mapping (written_), so the store lost track of it
    // (e.g. a damaged inner page sends the lookup to the wrong leaf).
    return DamagedError(id, "the store holds a record for it (its scan lists the key) but a lookup does not find it");
  }
  if (!s.ok()) return s.WithContext(fmt::format("block index: reading block {}/{}", id.volume, id.block));
  BlockMapping parsed;
  s = BlockMapping::Parse(value, id, &parsed);
  if (!s.ok()) return s.WithContext(StoreName());
  if (parsed.block_size() != options_.block_size) {
    return Status::Corruption(fmt::format(
        "block mapping of block {}/{}: block size {}, but the index uses {}", id.volume,
        id.block, parsed.block_size(), options_.block_size));
  }
  persistent_hits_++;
  *mapping = std::move(parsed);
  return Status::OK();
}

Status BlockIndex::Put(const BlockId& id, const BlockMapping& mapping) {
  DEDUPV1_RETURN_IF_ERROR(PrepareInstall(id, mapping));
  return Install(id, mapping);
}

Status BlockIndex::PrepareInstall(const BlockId& id, const BlockMapping& mapping) {
  if (mapping.block_size() != options_.block_size) {
    return Status::InvalidArgument(fmt::format(
        "block index: mapping of block {}/{} has block size {}, the index uses {}", id.volume,
        id.block, mapping.block_size(), options_.block_size));
  }
  Status valid = mapping.CheckInvariants();
  if (!valid.ok()) {
    return Status::InvalidArgument(
        fmt::format("block index: mapping of block {}/{}: {}", id.volume, id.block, valid.message()));
  }

  std::unique_lock<std::mutex> lock(mu_);
  // A replacement does not grow the index; a new block waits while the index
  // is full of mappings that can be written back. If everything waits for a
  // container commit, waiting would not help (the commit frees them), so the
  // index grows beyond the hard limit instead.
  while (!closing_ && aux_.size() >= options_.aux_hard_limit && !persistable_.empty() &&
         aux_.find(id) == aux_.end()) {
    if (!writeback_error_.ok()) {
      return writeback_error_.WithContext(fmt::format(
          "block index: {} mappings in memory (hard limit {}) and write-back fails",
          aux_.size(), options_.aux_hard_limit));
    }
    put_waiters_++;
    bg_cv_.notify_one();
    space_cv_.wait(lock);
    put_waiters_--;
  }
  if (closing_) return AbortedClosed();
  return Status::OK();
}

Status BlockIndex::Install(const BlockId& id, const BlockMapping& mapping) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closing_) return AbortedClosed();
  std::vector<ContainerId> uncommitted;
  for (const BlockMappingItem& item : mapping.items()) {
    if (item.IsZero()) continue;
    if (std::find(uncommitted.begin(), uncommitted.end(), item.container) != uncommitted.end()) {
      continue;
    }
    if (is_committed_ && !is_committed_(item.container)) uncommitted.push_back(item.container);
  }

  written_.Mark(id);
  // A new mapping replaces a record the store scan found out of place; one
  // under an ambiguous key is held in memory (never written back there).
  bool held = false;
  if (!damaged_.empty()) {
    auto d = damaged_.find(id);
    if (d != damaged_.end()) {
      if (d->second.ambiguous_key) {
        held = true;
      } else {
        damaged_.erase(d);
      }
    }
  }
  auto [it, inserted] = aux_.try_emplace(id);
  AuxEntry& entry = it->second;
  if (inserted) {
    entry.first_unwritten = mapping.version();
  } else {
    // The replaced mapping may never have reached the store.
    Unregister(id, entry);
    entry.first_unwritten = std::min(entry.first_unwritten, mapping.version());
    if (uncommitted.empty() || held) {
      DropStable(&entry);  // the new mapping supersedes it
    } else if (entry.uncommitted.empty()) {
      // A persistable mapping replaced by one that waits: keep it as the
      // block's stable version until it is written.
      DropStable(&entry);
      entry.stable = std::move(entry.mapping);
      entry.stable_seq = entry.seq;
      entry.after_stable = mapping.version();
      persistable_.emplace(entry.stable_seq, id);
      stable_count_++;
    }
  }
  entry.mapping = mapping;
  entry.seq = ++next_seq_;
  entry.uncommitted = std::move(uncommitted);
  if (held != entry.held) held_count_ += held ? 1 : -1;
  entry.held = held;
  Register(id, entry);
  if (WriteBackWanted()) bg_cv_.notify_one();
  return Status::OK();
}

uint64_t BlockIndex::OldestUnwrittenVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t oldest = std::numeric_limits<uint64_t>::max();
  for (const auto& [id, entry] : aux_) oldest = std::min(oldest, entry.first_unwritten);
  return oldest;
}

void BlockIndex::DropStable(AuxEntry* entry) {
  if (!entry->stable) return;
  persistable_.erase(entry->stable_seq);
  entry->stable.reset();
  stable_count_--;
}

void BlockIndex::Unregister(const BlockId& id, const AuxEntry& entry) {
  if (entry.uncommitted.empty()) {
    persistable_.erase(entry.seq);
    return;
  }
  for (ContainerId c : entry.uncommitted) {
    auto w = waiting_.find(c);
    if (w == waiting_.end()) continue;
    w->second.erase(id);
    if (w->second.empty()) waiting_.erase(w);
  }
}

void BlockIndex::OnContainerCommitted(ContainerId container) {
  std::lock_guard<std::mutex> lock(mu_);
  auto w = waiting_.find(container);
  if (w == waiting_.end()) return;
  for (const BlockId& id : w->second) {
    auto it = aux_.find(id);
    if (it == aux_.end()) continue;
    AuxEntry& entry = it->second;
    auto c = std::find(entry.uncommitted.begin(), entry.uncommitted.end(), container);
    if (c != entry.uncommitted.end()) entry.uncommitted.erase(c);
    if (entry.uncommitted.empty()) {
      DropStable(&entry);
      if (!entry.held) persistable_.emplace(entry.seq, id);
    }
  }
  waiting_.erase(w);
  if (WriteBackWanted()) bg_cv_.notify_one();
}

void BlockIndex::SetIdle(bool idle) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_ = idle;
  if (WriteBackWanted()) bg_cv_.notify_one();
}

bool BlockIndex::WriteBackWanted() const {
  return !closing_ && !persistable_.empty() &&
         (idle_ || put_waiters_ > 0 || aux_.size() > options_.aux_soft_limit);
}

void BlockIndex::BackgroundLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!closing_) {
    if (!WriteBackWanted()) {
      bg_cv_.wait(lock);
      continue;
    }
    lock.unlock();
    size_t written = 0;
    Status s = WriteBackBatch(std::numeric_limits<uint64_t>::max(), options_.write_back_batch, &written);
    lock.lock();
    if (!s.ok()) {
      // The error is in stats().last_error and fails Puts at the hard limit;
      // retry later in case it was transient (e.g. space was freed).
      bg_cv_.wait_for(lock, kRetryDelay, [this] { return closing_; });
    }
  }
}

Status BlockIndex::WriteBackBatch(uint64_t max_seq, size_t limit, size_t* written) {
  *written = 0;
  std::lock_guard<std::mutex> writeback_lock(writeback_mu_);
  struct Pending {
    BlockId id;
    uint64_t seq;
    uint64_t version;
  };
  std::vector<Pending> pending;
  std::vector<KvStore::WriteOp> ops;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = persistable_.begin();
         it != persistable_.end() && pending.size() < limit; ++it) {
      if (it->first > max_seq) break;
      const AuxEntry& entry = aux_.at(it->second);
      // Either the block's current mapping or its stable one.
      const BlockMapping& m = entry.seq == it->first ? entry.mapping : *entry.stable;
      pending.push_back({it->second, it->first, m.version()});
      KvStore::WriteOp op;
      op.key = EncodeBlockKey(it->second);
      m.Serialize(it->second, &op.value);
      ops.push_back(std::move(op));
    }
  }
  if (ops.empty()) return Status::OK();
  Status hook = options_.before_write_back ? options_.before_write_back() : Status::OK();
  // Key order: neighbouring blocks share B+tree leaves.
  std::sort(ops.begin(), ops.end(),
            [](const KvStore::WriteOp& a, const KvStore::WriteOp& b) { return a.key < b.key; });
  Status s = hook.ok() ? store_->Write(ops) : hook;

  std::lock_guard<std::mutex> lock(mu_);
  if (!s.ok()) {
    s = s.WithContext(fmt::format("block index write-back of {} mappings", ops.size()));
    writeback_error_ = s;
    last_error_ = s.ToString();
    space_cv_.notify_all();  // Puts at the hard limit return the error
    return s;
  }
  writeback_error_ = Status::OK();
  for (const Pending& p : pending) {
    auto it = aux_.find(p.id);
    if (it == aux_.end()) continue;
    AuxEntry& entry = it->second;
    if (entry.seq == p.seq) {
      persistable_.erase(p.seq);
      DropStable(&entry);
      aux_.erase(it);
      continue;
    }
    if (entry.stable && entry.stable_seq == p.seq) {
      // The stable version is stored; the newer ones are not.
      DropStable(&entry);
      entry.first_unwritten = std::max(entry.first_unwritten, entry.after_stable);
      continue;
    }
    // A newer Put replaced it meanwhile: that version stays until written;
    // the store now has everything up to the one just written.
    entry.first_unwritten = std::max(entry.first_unwritten, p.version + 1);
  }
  written_back_ += pending.size();
  write_back_batches_++;
  *written = pending.size();
  space_cv_.notify_all();
  return Status::OK();
}

Status BlockIndex::Flush() {
  if (store_ == nullptr) return AbortedClosed();
  // Only what was put before the flush started, so steady Puts cannot keep
  // it running forever.
  uint64_t max_seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    max_seq = next_seq_;
  }
  // Each store write is one synced transaction: a flush (a checkpoint waits
  // for it) writes in larger ones than the background thread, which keeps
  // its batches small so readers of the store are not held up long.
  const size_t limit = std::max<size_t>(options_.write_back_batch, kFlushBatch);
  for (;;) {
    size_t written = 0;
    DEDUPV1_RETURN_IF_ERROR(WriteBackBatch(max_seq, limit, &written));
    if (written == 0) break;
  }
  Status s = store_->Sync();
  if (!s.ok()) return s.WithContext("block index: sync");
  return Status::OK();
}

Status BlockIndex::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return Status::OK();
    closing_ = true;
  }
  bg_cv_.notify_all();
  space_cv_.notify_all();
  if (background_.joinable()) background_.join();
  Status s = Flush();
  persistent_at_close_ = store_->Count();
  store_.reset();
  return s;
}

BlockIndexStats BlockIndex::stats() const {
  BlockIndexStats st;
  {
    std::lock_guard<std::mutex> lock(mu_);
    st.aux_mappings = aux_.size();
    // Held mappings (which may also wait for a commit) are counted apart.
    st.aux_waiting_for_commit = aux_.size() - (persistable_.size() - stable_count_) - held_count_;
    st.aux_held = held_count_;
    st.damaged_blocks = damaged_.size();
    st.upgraded_at_open = upgraded_at_open_;
    st.old_format_records = old_format_records_;
    st.written_back = written_back_;
    st.write_back_batches = write_back_batches_;
    st.last_error = last_error_;
    st.written_bitmap_bytes = written_.MemoryBytes();
  }
  st.reads = reads_.load();
  st.aux_hits = aux_hits_.load();
  st.persistent_hits = persistent_hits_.load();
  st.misses = misses_.load();
  st.fresh_misses = fresh_misses_.load();
  st.persistent_mappings = store_ != nullptr ? store_->Count() : persistent_at_close_;
  return st;
}

Status BlockIndex::ForEachBlock(uint32_t volume,
                                const std::function<bool(uint64_t, const BlockMapping&)>& f,
                                const SkippedRecord& skipped) {
  if (store_ == nullptr) return AbortedClosed();
  std::map<BlockId, BlockMapping> aux_blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, entry] : aux_) {
      if (id.volume == volume) aux_blocks.emplace(id, entry.mapping);
    }
  }
  const std::string begin = EncodeBlockKey(BlockId{volume, 0});
  // The last volume's range runs to the end of the key space.
  const std::string end =
      volume == std::numeric_limits<uint32_t>::max() ? "" : EncodeBlockKey(BlockId{volume + 1, 0});
  return ForEachBlockIn(
      begin, end, std::move(aux_blocks),
      [&](const BlockId& id, const BlockMapping& mapping) {
        if (id.volume != volume) {
          // A key of another volume inside this volume's range: a damaged key.
          if (skipped) {
            skipped(EncodeBlockKey(id), Status::Corruption(fmt::format(
                                            "{}: key {} lies in the key range of volume {}", StoreName(),
                                            BlockIdString(id), volume)));
          }
          return true;
        }
        return f(id.block, mapping);
      },
      skipped);
}

Status BlockIndex::ForEachBlock(const std::function<bool(const BlockId&, const BlockMapping&)>& f,
                                const SkippedRecord& skipped) {
  if (store_ == nullptr) return AbortedClosed();
  std::map<BlockId, BlockMapping> aux_blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, entry] : aux_) aux_blocks.emplace(id, entry.mapping);
  }
  return ForEachBlockIn("", "", std::move(aux_blocks), f, skipped);
}

Status BlockIndex::ForEachBlockIn(const std::string& begin, const std::string& end,
                                  std::map<BlockId, BlockMapping> aux_blocks,
                                  const std::function<bool(const BlockId&, const BlockMapping&)>& f,
                                  const SkippedRecord& skipped) {
  std::unordered_map<BlockId, Damage, BlockIdHasher> damaged;
  {
    std::lock_guard<std::mutex> lock(mu_);
    damaged = damaged_;
  }
  auto skip = [&](const std::string& key, const Status& why) {
    if (skipped) skipped(key, why);
  };
  auto next_aux = aux_blocks.begin();
  bool stopped = false;
  bool has_prev = false;
  BlockId prev;
  Status s = store_->Scan(begin, end, [&](const std::string& key, const std::string& value) {
    BlockId id;
    if (!DecodeBlockKey(key, &id)) {
      skip(key, Status::Corruption(fmt::format("{}: a key of {} bytes is not a block key", StoreName(), key.size())));
      return true;
    }
    for (; next_aux != aux_blocks.end() && next_aux->first < id; ++next_aux) {
      if (!f(next_aux->first, next_aux->second)) {
        stopped = true;
        return false;
      }
    }
    // The auxiliary version is newer than any stored one (it was passed to
    // f, or will be, in its place in key order).
    if (aux_blocks.count(id) != 0) return true;
    auto d = damaged.find(id);
    if (d != damaged.end()) {
      skip(key, DamagedError(id, d->second.why));
      return true;
    }
    BlockMapping mapping;
    Status parsed = BlockMapping::Parse(value, id, &mapping);
    if (!parsed.ok()) {
      skip(key, parsed.WithContext(StoreName()));
      return true;
    }
    if (has_prev && !(prev < id)) {
      // Only a store damaged since the last scan gets here (the scan names
      // both keys as damaged).
      skip(key, Status::Corruption(fmt::format("{}: key {} follows key {} in the store's order", StoreName(),
                                               BlockIdString(id), BlockIdString(prev))));
      return true;
    }
    has_prev = true;
    prev = id;
    if (!f(id, mapping)) stopped = true;
    return !stopped;
  });
  if (!s.ok()) return s.WithContext(StoreName() + ": scanning");
  if (stopped) return Status::OK();
  for (; next_aux != aux_blocks.end(); ++next_aux) {
    if (!f(next_aux->first, next_aux->second)) break;
  }
  return Status::OK();
}

Status BlockIndex::VerifyStore(BlockStoreScan* scan) {
  if (store_ == nullptr) return AbortedClosed();
  // No write-back while the store is scanned: the records listed stay true.
  std::lock_guard<std::mutex> writeback_lock(writeback_mu_);
  DEDUPV1_RETURN_IF_ERROR(ScanBlockStore(store_.get(), BlockStoreScanOptions(), scan));
  std::lock_guard<std::mutex> lock(mu_);
  ApplyScanLocked(*scan);
  return Status::OK();
}

Status BlockIndex::RepairStore(std::vector<BlockId>* repaired, BlockStoreScan* after) {
  repaired->clear();
  if (store_ == nullptr) return AbortedClosed();
  std::lock_guard<std::mutex> writeback_lock(writeback_mu_);
  BlockStoreScan before;
  DEDUPV1_RETURN_IF_ERROR(ScanBlockStore(store_.get(), BlockStoreScanOptions(), &before));
  Status s = RepairBlockStore(store_.get(), before, repaired);
  Status rescanned = ScanBlockStore(store_.get(), BlockStoreScanOptions(), after);
  std::lock_guard<std::mutex> lock(mu_);
  if (s.ok()) {
    for (const BlockId& id : *repaired) {
      // A key that only held other blocks' records has none now.
      if (before.blocks.at(id).has_newest) {
        written_.Mark(id);
      } else if (aux_.find(id) == aux_.end()) {
        written_.Unmark(id);
      }
    }
  }
  if (rescanned.ok()) ApplyScanLocked(*after);
  DEDUPV1_RETURN_IF_ERROR(s);
  return rescanned;
}

}  // namespace dedupv1

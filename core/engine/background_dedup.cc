#include "core/engine/background_dedup.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <shared_mutex>
#include <utility>

#include "chunkstore/chunk_store.h"
#include "core/base/thread_name.h"
#include "core/engine/write_pipeline.h"
#include "index/block_index.h"
#include "index/block_mapping.h"
#include "index/chunk_index.h"

namespace dedupv1 {

BackgroundDedup::BackgroundDedup(Parts parts, BackgroundDedupOptions options)
    : parts_(std::move(parts)), options_(options) {
  // Everything written before the open is cold (see the header).
  previous_period_start_ = current_period_start_ = parts_.last_event_id();
}

BackgroundDedup::~BackgroundDedup() { Stop(); }

void BackgroundDedup::Start(std::function<std::vector<uint32_t>()> volumes, std::function<bool()> idle) {
  thread_ = std::thread([this, volumes = std::move(volumes), idle = std::move(idle)] {
    NameThisThread("dd-background");
    Loop(volumes, idle);
  });
}

void BackgroundDedup::Stop() {
  {
    std::lock_guard<std::mutex> l(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // A round run by another caller (RunBackgroundDedup) ends at its next
  // block; wait for it, so nothing the pass uses goes away under it.
  std::lock_guard<std::mutex> round(round_mu_);
}

bool BackgroundDedup::stopping() const {
  std::lock_guard<std::mutex> l(stop_mu_);
  return stop_;
}

BackgroundDedup::Pace BackgroundDedup::Throttle(const std::function<bool()>& idle) {
  using Clock = std::chrono::steady_clock;
  // At most rate bytes per second of examined blocks while busy, measured
  // over a window that restarts whenever the pass runs free (idle) or falls
  // behind by more than a second, so neither idle time nor a stall (a long
  // log-space wait) turns into credit or debt. Sleeps wake early on Stop.
  struct Window {
    Clock::time_point start = Clock::now();
    double bytes = 0;
  };
  auto window = std::make_shared<Window>();
  return [this, idle, window](uint64_t bytes) {
    if (stopping()) return false;
    const auto now = Clock::now();
    if (options_.rate_bytes_per_s == 0 || idle()) {
      *window = Window();
      return true;
    }
    window->bytes += static_cast<double>(bytes);
    const auto due = window->start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                         window->bytes / static_cast<double>(options_.rate_bytes_per_s)));
    if (due + std::chrono::seconds(1) < now) {
      *window = Window();
      return true;
    }
    std::unique_lock<std::mutex> l(stop_mu_);
    stop_cv_.wait_until(l, due, [this] { return stop_; });
    return !stop_;
  };
}

void BackgroundDedup::Loop(std::function<std::vector<uint32_t>()> volumes, std::function<bool()> idle) {
  using Clock = std::chrono::steady_clock;
  const auto period = std::chrono::milliseconds(options_.period_ms);
  auto period_start = Clock::now();
  bool backoff = false;
  for (;;) {
    {
      std::unique_lock<std::mutex> l(stop_mu_);
      stop_cv_.wait_for(l, std::min<std::chrono::milliseconds>(period, std::chrono::seconds(1)),
                        [this] { return stop_; });
      if (stop_) return;
    }
    if (Clock::now() - period_start >= period) {
      StartPeriod();
      period_start = Clock::now();
      backoff = false;
    }
    const std::vector<uint32_t> ids = volumes();
    if (backoff || ids.empty() || !HasWork(ids)) continue;
    // A failure is in stats().last_error; the pass waits for the next
    // period, whose round tries the blocks that failed again.
    backoff = !RunRound(ids, /*ignore_hotspots=*/false, Throttle(idle)).ok();
  }
}

void BackgroundDedup::StartPeriod() {
  const uint64_t now = parts_.last_event_id();
  std::lock_guard<std::mutex> l(mu_);
  previous_period_start_ = current_period_start_;
  current_period_start_ = now;
  stats_.periods++;
}

bool BackgroundDedup::HasWork(const std::vector<uint32_t>& volumes) const {
  std::lock_guard<std::mutex> l(mu_);
  for (uint32_t v : volumes) {
    auto it = done_.find(v);
    if (it == done_.end() || it->second < previous_period_start_) return true;
  }
  return false;
}

Status BackgroundDedup::RunRound(const std::vector<uint32_t>& volumes, bool ignore_hotspots, const Pace& pace) {
  std::lock_guard<std::mutex> round(round_mu_);
  if (stopping()) return Status::Aborted("background dedup: the system is closing");
  uint64_t cold_limit;
  std::map<uint32_t, uint64_t> done;
  std::map<uint32_t, std::map<uint64_t, uint64_t>> retry;
  {
    std::lock_guard<std::mutex> l(mu_);
    done = done_;
    retry.swap(retry_);
  }
  // Read before the walks, and applied (every event up to it is in the
  // block index): a block written after this point has a higher version
  // and is never taken for cold, and one written before shows its version.
  if (ignore_hotspots) {
    cold_limit = parts_.last_event_id();
  } else {
    std::lock_guard<std::mutex> l(mu_);
    cold_limit = previous_period_start_;
  }
  uint64_t hot = 0, pending = 0;
  Status result;
  for (uint32_t volume : volumes) {
    const uint64_t mark = done.count(volume) > 0 ? done[volume] : 0;
    // The walk only collects (it may not hold locks the examination takes).
    // Blocks a failure left behind are examined again first.
    std::map<uint64_t, uint64_t> cold = std::move(retry[volume]);  // block -> version
    Status s = parts_.block_index->ForEachBlock(volume, [&](uint64_t block, const BlockMapping& m) {
      if (m.version() <= mark) return true;
      pending++;
      if (m.version() > cold_limit) hot++;
      else cold[block] = m.version();
      return true;
    });
    if (!s.ok()) {
      result = s.WithContext("background dedup: walking volume " + std::to_string(volume));
      continue;  // its mark stays: the next round walks it again
    }
    std::map<uint64_t, uint64_t> failed;
    for (const auto& [block, version] : cold) {
      if (stopping() || (pace && !pace(parts_.block_size))) {
        return Finish(Status::Aborted("background dedup: the system is closing"), hot, pending);
      }
      s = ExamineBlock(BlockId{volume, block}, version);
      if (s.ok()) continue;
      // One block's trouble (a damaged record, a full disk) does not hold
      // the others up: it is tried again in a later round.
      result = s.WithContext("background dedup of volume " + std::to_string(volume) + " block " +
                             std::to_string(block));
      failed[block] = version;
      if (failed.size() >= kMaxRetries) break;
    }
    std::lock_guard<std::mutex> l(mu_);
    stats_.blocks_failed += failed.size();
    if (failed.size() >= kMaxRetries) continue;  // too many: the mark stays, the next round walks all again
    retry_[volume].insert(failed.begin(), failed.end());
    // Every cold block above the old mark was examined (or is to be retried).
    done_[volume] = std::max(mark, cold_limit);
  }
  return Finish(result, hot, pending);
}

Status BackgroundDedup::Finish(const Status& result, uint64_t hot, uint64_t pending) {
  std::lock_guard<std::mutex> l(mu_);
  stats_.hot_blocks_left = hot;
  stats_.blocks_pending = pending;
  if (result.ok()) {
    stats_.rounds++;
    stats_.last_error.clear();
  } else if (!result.IsAborted()) {
    stats_.last_error = result.ToString();
  }
  return result;
}

Status BackgroundDedup::ExamineBlock(const BlockId& id, uint64_t version) {
  {
    std::lock_guard<std::mutex> l(mu_);
    stats_.blocks_examined++;
  }
  // Log space first, as every writer does (write_pipeline.h's lock order).
  DEDUPV1_RETURN_IF_ERROR(parts_.wait_for_log_space());
  // The copies the new mapping names (the index's, committed) stay until its
  // event is logged: GC judges only under the barrier held exclusively.
  auto barrier = parts_.pipeline->gc_barrier().Shared();
  BlockMapping mapping;
  Status s = parts_.block_index->Get(id, &mapping);
  if (s.IsNotFound()) return Status::OK();  // dropped meanwhile
  DEDUPV1_RETURN_IF_ERROR(s);
  if (mapping.version() != version) return Status::OK();  // written meanwhile: a later round
  std::vector<BlockMappingItem> items = mapping.items();
  uint64_t chunks = 0, bytes = 0;
  for (BlockMappingItem& item : items) {
    if (item.IsZero()) continue;
    ChunkIndexEntry entry;
    s = parts_.chunk_index->Lookup(item.fp, &entry);
    if (s.IsNotFound()) continue;  // GC's business (a recount re-adds a referenced entry)
    DEDUPV1_RETURN_IF_ERROR(s);
    if (!entry.committed || entry.container == kNoContainer || entry.container == kZeroContainer) continue;
    const ContainerId shared = parts_.chunk_store->Resolve(entry.container);
    if (!parts_.chunk_store->IsCommitted(shared) || shared == parts_.chunk_store->Resolve(item.container)) continue;
    item.container = shared;
    chunks++;
    bytes += item.size;
  }
  if (chunks == 0) return Status::OK();

  BlockMapping remapped_mapping(parts_.block_size);
  DEDUPV1_RETURN_IF_ERROR(remapped_mapping.Overlay(0, items));
  if (options_.before_remap_install) options_.before_remap_install(id);
  std::unique_lock<std::shared_mutex> lock(parts_.block_locks->For(id));
  BlockMapping now;
  s = parts_.block_index->Get(id, &now);
  if (s.IsNotFound()) return Status::OK();
  DEDUPV1_RETURN_IF_ERROR(s);
  if (now.version() != version) {
    // A write (or an unmap) came between: it wins, the block is examined again later.
    std::lock_guard<std::mutex> l(mu_);
    stats_.blocks_lost_to_writes++;
    return Status::OK();
  }
  DEDUPV1_RETURN_IF_ERROR(parts_.pipeline->InstallMapping(id, &now, &remapped_mapping));
  std::lock_guard<std::mutex> l(mu_);
  stats_.blocks_remapped++;
  stats_.chunks_remapped += chunks;
  stats_.bytes_remapped += bytes;
  return Status::OK();
}

BackgroundDedup::Stats BackgroundDedup::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

}  // namespace dedupv1

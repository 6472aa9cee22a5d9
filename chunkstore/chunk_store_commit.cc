// ChunkStore's commit threads: writer threads serialize the containers
// handed off to them and Put them into the ContainerStore; the timer hands
// off containers open longer than the commit timeout and retries failed
// commits; Flush waits for everything handed off so far.
#include "chunkstore/chunk_store.h"

#include <algorithm>

namespace dedupv1 {
namespace {

// A failed commit becomes the sticky error; it names the container and, for
// a full store, says so plainly.
Status CommitError(ContainerId id, const Status& s) {
  const std::string name = "container " + std::to_string(id);
  if (s.IsNoSpace()) {
    return Status::NoSpace("container store full: cannot commit " + name + ": " + s.message());
  }
  return s.WithContext("cannot commit " + name);
}

// How often the timer looks for expired containers, and how often it retries
// failed commits.
std::chrono::milliseconds TimerTick(uint64_t timeout_ms) {
  return std::chrono::milliseconds(std::clamp<uint64_t>(timeout_ms / 2, 10, 100));
}
std::chrono::milliseconds RetryInterval(uint64_t timeout_ms) {
  return std::chrono::milliseconds(std::clamp<uint64_t>(timeout_ms, 100, 1000));
}

}  // namespace

void ChunkStore::HandOffLocked(size_t slot) {
  std::shared_ptr<Container> c = std::move(open_[slot]);
  if (!c) return;
  const ContainerId id = c->id();
  Pending p;
  p.container = std::move(c);
  p.state = CommitState::kQueued;
  pending_.emplace(id, std::move(p));
  queue_.push_back(id);
  work_cv_.notify_one();
}

void ChunkStore::RequeueFailedLocked() {
  std::vector<ContainerId> failed;
  for (auto& [id, p] : pending_) {
    if (p.state == CommitState::kFailed) failed.push_back(id);
  }
  std::sort(failed.begin(), failed.end());
  for (ContainerId id : failed) {
    pending_[id].state = CommitState::kQueued;
    queue_.push_back(id);
    commit_retries_.fetch_add(1, std::memory_order_relaxed);
  }
  last_retry_ = std::chrono::steady_clock::now();
  if (!failed.empty()) work_cv_.notify_all();
}

Status ChunkStore::CommitContainer(const Container& c, std::string* bytes) {
  Status s = c.Serialize(bytes);
  // PutNew: a retry finds its own earlier attempt (same bytes, OK); a
  // container of another writer under this id is never replaced.
  if (s.ok()) s = store_->PutNew(c.id(), *bytes);
  if (s.ok()) summaries_.Record(c.id(), SummarizeContainer(c));
  return s;
}

void ChunkStore::WriterLoop() {
  // The serialized container, reused: a fresh 4 MiB string per container
  // came from fresh pages (page faults and zeroing, ~2% of an ingest's CPU).
  std::string bytes;
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    work_cv_.wait(l, [this] { return !queue_.empty() || stop_threads_; });
    if (queue_.empty()) return;  // stop_threads_ and nothing left to write
    const ContainerId id = queue_.front();
    queue_.pop_front();
    Pending& p = pending_.at(id);
    p.state = CommitState::kCommitting;
    std::shared_ptr<const Container> c = p.container;
    const CommitFailureListener failure_listener = failure_listener_;
    committing_++;
    l.unlock();

    const auto start = std::chrono::steady_clock::now();
    const Status s = CommitContainer(*c, &bytes);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    // Told before the failure is published: a Flush that returns the error
    // must find the failure already recorded (the commit-failed log event).
    if (!s.ok() && failure_listener) failure_listener(id, s);

    l.lock();
    FinishCommitLocked(id, c, s, ms, &l);
    committing_--;
    done_cv_.notify_all();
  }
}

void ChunkStore::FinishCommitLocked(ContainerId id, const std::shared_ptr<const Container>& c, const Status& s,
                                    int64_t ms, std::unique_lock<std::mutex>* lock) {
  Pending& done = pending_.at(id);  // only this thread changes a kCommitting entry
  if (!s.ok()) {
    done.state = CommitState::kFailed;
    done.error = CommitError(id, s);
    if (!done.has_failed) {
      done.has_failed = true;
      failed_count_++;
    }
    sticky_error_ = done.error;
    containers_failed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  done.state = CommitState::kNotifying;
  uncommitted_.erase(id);
  if (done.has_failed) {
    done.has_failed = false;
    if (--failed_count_ == 0) sticky_error_ = Status::OK();
  }
  containers_committed_.fetch_add(1, std::memory_order_relaxed);
  commit_latency_ms_total_.fetch_add(static_cast<uint64_t>(ms), std::memory_order_relaxed);
  CommitListener listener = listener_;
  lock->unlock();
  // The committed container is likely read soon (container-cache filter,
  // byte compare): keep it parsed in the cache.
  read_cache_.Insert(id, c);
  if (listener) listener(id, c->Fingerprints());
  lock->lock();
  pending_.erase(id);
}

void ChunkStore::TimerLoop() {
  const auto tick = TimerTick(options_.commit_timeout_ms);
  const auto timeout = std::chrono::milliseconds(options_.commit_timeout_ms);
  const auto retry_interval = RetryInterval(options_.commit_timeout_ms);
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_threads_) {
    timer_cv_.wait_for(l, tick);
    if (stop_threads_) break;
    const auto now = std::chrono::steady_clock::now();
    for (size_t slot = 0; slot < open_.size(); slot++) {
      if (open_[slot] && now - open_[slot]->created() >= timeout) HandOffLocked(slot);
    }
    if (failed_count_ > 0 && now - last_retry_ >= retry_interval) RequeueFailedLocked();
  }
}

Status ChunkStore::FlushLocked(std::unique_lock<std::mutex>* lock) {
  if (stop_threads_) {
    // Closed: nothing can be committed any more.
    return failed_count_ > 0 ? sticky_error_ : Status::OK();
  }
  for (size_t slot = 0; slot < open_.size(); slot++) HandOffLocked(slot);
  RequeueFailedLocked();
  std::vector<ContainerId> wait_for;
  wait_for.reserve(pending_.size());
  for (const auto& [id, p] : pending_) wait_for.push_back(id);
  std::sort(wait_for.begin(), wait_for.end());
  auto settled = [&] {
    for (ContainerId id : wait_for) {
      auto it = pending_.find(id);
      if (it != pending_.end() && it->second.state != CommitState::kFailed) return false;
    }
    return true;
  };
  done_cv_.wait(*lock, settled);
  for (ContainerId id : wait_for) {
    auto it = pending_.find(id);
    if (it != pending_.end()) return it->second.error;
  }
  return Status::OK();
}

Status ChunkStore::Flush() {
  std::unique_lock<std::mutex> l(mu_);
  return FlushLocked(&l);
}

bool ChunkStore::IsCommitted(ContainerId requested) const {
  if (requested == kNoContainer || requested == kZeroContainer) return false;
  if (foreign_.IsForeign(requested)) return true;
  std::lock_guard<std::mutex> l(mu_);
  const ContainerId id = aliases_.Resolve(requested);
  if (id >= ids_.next() || deleted_.count(id) != 0) return false;
  if (id < ids_.session_first()) {
    return std::binary_search(committed_at_open_.begin(), committed_at_open_.end(), id);
  }
  return uncommitted_.count(id) == 0;
}

}  // namespace dedupv1

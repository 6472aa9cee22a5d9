#include "core/base/thread_pool.h"

#include <algorithm>
#include <atomic>

namespace dedupv1 {

ThreadPool::ThreadPool(int threads) {
  for (int i = 0; i < threads; i++) threads_.emplace_back([this] { Loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> l(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

void ThreadPool::ParallelFor(size_t n, size_t min_slice,
                             const std::function<void(size_t, size_t)>& f) {
  size_t parts = std::min<size_t>(threads_.size() + 1, std::max<size_t>(1, n / std::max<size_t>(1, min_slice)));
  if (parts <= 1) {
    if (n > 0) f(0, n);
    return;
  }
  size_t per = (n + parts - 1) / parts;
  std::mutex done_mu;
  std::condition_variable done_cv;
  size_t pending = parts - 1;
  for (size_t p = 1; p < parts; p++) {
    size_t b = p * per, e = std::min(n, b + per);
    Submit([&, b, e] {
      if (b < e) f(b, e);
      std::lock_guard<std::mutex> l(done_mu);
      if (--pending == 0) done_cv.notify_one();
    });
  }
  f(0, std::min(n, per));
  std::unique_lock<std::mutex> l(done_mu);
  done_cv.wait(l, [&] { return pending == 0; });
}

}  // namespace dedupv1

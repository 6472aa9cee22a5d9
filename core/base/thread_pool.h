// ThreadPool runs closures on a fixed set of threads. ParallelFor splits an
// index range into one slice per thread plus one for the caller, so the
// caller works too and a pool of (cores - 1) threads keeps every core busy.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dedupv1 {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  void Submit(std::function<void()> task);
  // Calls f(begin, end) over slices of [0, n) in parallel and waits for all.
  void ParallelFor(size_t n, size_t min_slice, const std::function<void(size_t, size_t)>& f);
  int size() const { return static_cast<int>(threads_.size()); }

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace dedupv1

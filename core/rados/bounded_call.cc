#include "core/rados/bounded_call.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace dedupv1 {

bool RunBounded(std::function<int()> work, std::chrono::milliseconds limit, int* result) {
  // Shared with the helper, which may outlive this call.
  struct Outcome {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    int result = 0;
  };
  auto outcome = std::make_shared<Outcome>();
  std::thread([outcome, work = std::move(work)] {
    const int r = work();
    std::lock_guard<std::mutex> l(outcome->mu);
    outcome->done = true;
    outcome->result = r;
    outcome->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> l(outcome->mu);
  if (!outcome->cv.wait_for(l, limit, [&] { return outcome->done; })) return false;
  *result = outcome->result;
  return true;
}

}  // namespace dedupv1

// RunBounded (core/rados/bounded_call.h): a call that hangs is given up on
// after its limit; one that returns in time gives its result.
#include "core/rados/bounded_call.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace dedupv1 {
namespace {

using Clock = std::chrono::steady_clock;

TEST(BoundedCallTest, ResultOfACallThatReturnsInTime) {
  int r = 0;
  ASSERT_TRUE(RunBounded([] { return -5; }, std::chrono::seconds(10), &r));
  EXPECT_EQ(-5, r);
}

// A call blocked until released (wait_for_latest_osdmap with silent
// monitors): RunBounded returns false after about its limit, and the call,
// released afterwards, finishes on its own without touching the caller.
TEST(BoundedCallTest, HangingCallIsGivenUpAfterItsLimit) {
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
    bool finished = false;
  };
  auto gate = std::make_shared<Gate>();
  int r = 42;
  const auto start = Clock::now();
  const bool returned = RunBounded(
      [gate] {
        std::unique_lock<std::mutex> l(gate->mu);
        gate->cv.wait(l, [&] { return gate->open; });
        gate->finished = true;
        gate->cv.notify_all();
        return 0;
      },
      std::chrono::milliseconds(200), &r);
  const auto took = Clock::now() - start;
  EXPECT_FALSE(returned);
  EXPECT_EQ(42, r);
  EXPECT_GE(took, std::chrono::milliseconds(200));
  EXPECT_LT(took, std::chrono::seconds(5));
  // Released, the helper finishes (bounded wait).
  std::unique_lock<std::mutex> l(gate->mu);
  gate->open = true;
  gate->cv.notify_all();
  EXPECT_TRUE(gate->cv.wait_for(l, std::chrono::seconds(10), [&] { return gate->finished; }));
}

}  // namespace
}  // namespace dedupv1

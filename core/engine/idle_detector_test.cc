// IdleDetector driven by made-up times and counters: no clock, no sleeps.
#include "core/engine/idle_detector.h"

#include <gtest/gtest.h>

namespace dedupv1 {
namespace {

IdleOptions TestOptions() {
  IdleOptions o;
  o.throughput_threshold = 1000;  // bytes/s
  o.period_ms = 5000;
  o.window_ms = 1000;
  return o;
}

// Feeds a sample every |step_ms| from |*now| to |until| at |rate| bytes/s of
// writes; returns the events seen (kNone left out).
std::vector<IdleEvent> Feed(IdleDetector* d, uint64_t* now, uint64_t* written, uint64_t until, uint64_t rate,
                           uint64_t step_ms = 250) {
  std::vector<IdleEvent> out;
  while (*now < until) {
    *now += step_ms;
    *written += rate * step_ms / 1000;
    IdleEvent e = d->Update(*now, *written, 0);
    if (e != IdleEvent::kNone) out.push_back(e);
  }
  return out;
}

TEST(IdleDetectorTest, BecomesIdleAfterThePeriodBelowTheThreshold) {
  IdleDetector d(TestOptions());
  uint64_t now = 0, written = 0;
  // Busy at 100 KB/s for 10 s: never idle.
  EXPECT_TRUE(Feed(&d, &now, &written, 10000, 100000).empty());
  EXPECT_FALSE(d.state().idle);
  EXPECT_NEAR(d.state().write_bytes_per_second, 100000, 1);
  // Quiet: the window still sees the burst for 1 s, then 5 s below it.
  EXPECT_TRUE(Feed(&d, &now, &written, 15000, 0).empty());
  EXPECT_FALSE(d.state().idle);
  std::vector<IdleEvent> ev = Feed(&d, &now, &written, 16500, 0);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], IdleEvent::kStart);
  IdleState st = d.state();
  EXPECT_TRUE(st.idle);
  EXPECT_GE(st.idle_since_ms, 16000u);
  EXPECT_LE(st.idle_since_ms, 16250u);
  EXPECT_EQ(st.starts, 1u);
}

TEST(IdleDetectorTest, LowTrafficBelowTheThresholdStillCountsAsIdle) {
  IdleDetector d(TestOptions());
  uint64_t now = 0, written = 0;
  std::vector<IdleEvent> ev = Feed(&d, &now, &written, 6000, 400);  // 400 B/s < 1000
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], IdleEvent::kStart);
}

TEST(IdleDetectorTest, TicksEveryPeriodWhileIdleAndEndsOnTraffic) {
  IdleDetector d(TestOptions());
  uint64_t now = 0, written = 0;
  std::vector<IdleEvent> ev = Feed(&d, &now, &written, 5250, 0);  // quiet since the first sample (250)
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], IdleEvent::kStart);
  // 12 s idle: ticks at +5 s and +10 s.
  ev = Feed(&d, &now, &written, 17000, 0);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0], IdleEvent::kTick);
  EXPECT_EQ(ev[1], IdleEvent::kTick);
  // One burst above the threshold ends idleness at once.
  written += 10000;
  now += 250;
  EXPECT_EQ(d.Update(now, written, 0), IdleEvent::kEnd);
  IdleState st = d.state();
  EXPECT_FALSE(st.idle);
  EXPECT_EQ(st.ends, 1u);
  EXPECT_EQ(st.ticks, 2u);
  EXPECT_EQ(st.below_for_ms, 0u);
}

TEST(IdleDetectorTest, ReadsCountToo) {
  IdleDetector d(TestOptions());
  uint64_t read = 0;
  for (uint64_t now = 250; now <= 10000; now += 250) {
    read += 500;  // 2000 B/s of reads
    EXPECT_EQ(d.Update(now, 0, read), IdleEvent::kNone) << now;
  }
  EXPECT_NEAR(d.state().read_bytes_per_second, 2000, 1);
  EXPECT_FALSE(d.state().idle);
}

TEST(IdleDetectorTest, ForcedModesOverrideTheThroughput) {
  IdleDetector d(TestOptions());
  uint64_t now = 0, written = 0;
  Feed(&d, &now, &written, 3000, 100000);
  d.SetMode(IdleMode::kIdle);
  std::vector<IdleEvent> ev = Feed(&d, &now, &written, 3250, 100000);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], IdleEvent::kStart) << "forced idle starts at the next sample despite the traffic";
  EXPECT_EQ(d.state().mode, IdleMode::kIdle);
  ev = Feed(&d, &now, &written, 8250, 100000);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], IdleEvent::kTick);

  d.SetMode(IdleMode::kBusy);
  ev = Feed(&d, &now, &written, 8500, 0);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], IdleEvent::kEnd);
  // Forced busy: a long quiet stretch does not make it idle.
  EXPECT_TRUE(Feed(&d, &now, &written, 30000, 0).empty());
  EXPECT_FALSE(d.state().idle);
  // Released: it has been quiet long enough, so it is idle at once.
  d.SetMode(IdleMode::kAuto);
  EXPECT_EQ(d.Update(now + 250, written, 0), IdleEvent::kStart);
}

TEST(IdleDetectorTest, ZeroPeriodIsIdleAtTheFirstQuietSampleAndTicksEverySample) {
  IdleOptions o = TestOptions();
  o.period_ms = 0;
  IdleDetector d(o);
  EXPECT_EQ(d.Update(0, 0, 0), IdleEvent::kStart);
  EXPECT_EQ(d.Update(250, 0, 0), IdleEvent::kTick);
  EXPECT_EQ(d.Update(500, 0, 0), IdleEvent::kTick);
}

TEST(IdleDetectorTest, ParseAndNameModes) {
  for (IdleMode m : {IdleMode::kAuto, IdleMode::kIdle, IdleMode::kBusy}) {
    IdleMode parsed;
    ASSERT_TRUE(ParseIdleMode(IdleModeName(m), &parsed).ok());
    EXPECT_EQ(parsed, m);
  }
  IdleMode parsed;
  EXPECT_TRUE(ParseIdleMode("sleepy", &parsed).IsInvalidArgument());
}

}  // namespace
}  // namespace dedupv1

namespace dedupv1 {
namespace {

// Few bytes but slow requests: busy. The same requests when fast: idle.
// With the latency threshold at 0 only throughput counts.
TEST(IdleDetectorTest, SlowRequestsKeepItBusyAtLowThroughput) {
  IdleOptions o;
  o.throughput_threshold = 1 << 20;
  o.period_ms = 1000;
  o.window_ms = 500;
  o.latency_threshold_ms = 10;
  for (uint64_t latency_ms : {50, 1}) {
    IdleDetector d(o);
    uint64_t requests = 0, ns = 0, read = 0;
    bool went_idle = false;
    for (uint64_t now = 0; now <= 5000; now += 100) {
      requests += 2;  // 20 requests/s of 4 KiB: 80 KiB/s, far below the throughput threshold
      read += 2 * 4096;
      ns += 2 * latency_ms * 1000000;
      went_idle |= d.Update(now, 0, read, requests, ns) == IdleEvent::kStart;
    }
    EXPECT_NEAR(d.state().mean_latency_ms, static_cast<double>(latency_ms), 0.01);
    EXPECT_NEAR(d.state().requests_per_second, 20.0, 0.01);
    EXPECT_EQ(went_idle, latency_ms < o.latency_threshold_ms) << "latency " << latency_ms << " ms";
  }
  // Threshold 0: latency is not looked at.
  o.latency_threshold_ms = 0;
  IdleDetector d(o);
  uint64_t requests = 0, ns = 0;
  bool went_idle = false;
  for (uint64_t now = 0; now <= 5000; now += 100) {
    requests += 2;
    ns += 2 * 50 * 1000000ull;
    went_idle |= d.Update(now, 0, 0, requests, ns) == IdleEvent::kStart;
  }
  EXPECT_TRUE(went_idle);
  // Once requests stop, the window holds none and the latency is forgotten.
  o.latency_threshold_ms = 10;
  IdleDetector quiet(o);
  EXPECT_EQ(quiet.Update(0, 0, 0, 10, 10 * 50 * 1000000ull), IdleEvent::kNone);
  IdleEvent last = IdleEvent::kNone;
  for (uint64_t now = 100; now <= 3000 && last != IdleEvent::kStart; now += 100) {
    last = quiet.Update(now, 0, 0, 10, 10 * 50 * 1000000ull);
  }
  EXPECT_EQ(last, IdleEvent::kStart);
  EXPECT_EQ(quiet.state().mean_latency_ms, 0.0);
}

}  // namespace
}  // namespace dedupv1

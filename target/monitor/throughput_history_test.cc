#include "target/monitor/throughput_history.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "target/monitor/throughput_sampler.h"

namespace dedupv1 {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

ThroughputCounters Written(uint64_t bytes, uint64_t ops = 0) {
  ThroughputCounters c;
  c.bytes_written = bytes;
  c.write_ops = ops;
  return c;
}

TEST(ThroughputHistoryTest, FirstReadingOnlySetsTheBase) {
  ThroughputHistory h;
  ThroughputSample s;
  EXPECT_FALSE(h.Latest(&s));
  h.Record(Written(1000), Clock::time_point(milliseconds(1000)), 1);
  EXPECT_FALSE(h.Latest(&s));
  EXPECT_TRUE(h.Fine().empty());
}

TEST(ThroughputHistoryTest, RateIsDeltaOverElapsedTime) {
  ThroughputHistory h;
  const Clock::time_point t0(milliseconds(5000));
  ThroughputCounters a;
  a.bytes_written = 1000, a.bytes_read = 50, a.write_ops = 10, a.read_ops = 1, a.bytes_chunked = 7;
  h.Record(a, t0, 100);
  ThroughputCounters b = a;
  b.bytes_written += 4096, b.bytes_read += 2048, b.write_ops += 8, b.read_ops += 4,
      b.bytes_chunked += 1024;
  h.Record(b, t0 + milliseconds(2000), 2100);
  ThroughputSample s;
  ASSERT_TRUE(h.Latest(&s));
  EXPECT_EQ(s.time_ms, 2100);
  EXPECT_DOUBLE_EQ(s.interval_seconds, 2.0);
  EXPECT_DOUBLE_EQ(s.write_bytes_per_second, 2048.0);
  EXPECT_DOUBLE_EQ(s.read_bytes_per_second, 1024.0);
  EXPECT_DOUBLE_EQ(s.write_ops_per_second, 4.0);
  EXPECT_DOUBLE_EQ(s.read_ops_per_second, 2.0);
  EXPECT_DOUBLE_EQ(s.dedup_bytes_per_second, 512.0);
}

TEST(ThroughputHistoryTest, BackwardsCounterAndStaleTimeAreHarmless) {
  ThroughputHistory h;
  const Clock::time_point t0(milliseconds(1000));
  h.Record(Written(5000), t0, 1);
  h.Record(Written(1000), t0 + milliseconds(1000), 2);  // went backwards
  ThroughputSample s;
  ASSERT_TRUE(h.Latest(&s));
  EXPECT_EQ(s.write_bytes_per_second, 0.0);
  h.Record(Written(9000), t0 + milliseconds(1000), 3);  // no time passed: ignored
  EXPECT_EQ(h.Fine().size(), 1u);
  h.Record(Written(3000), t0 + milliseconds(2000), 4);  // from the new base of 1000
  ASSERT_TRUE(h.Latest(&s));
  EXPECT_DOUBLE_EQ(s.write_bytes_per_second, 2000.0);
}

TEST(ThroughputHistoryTest, RingsAreBoundedAndCoarseSamplesSumFineOnes) {
  ThroughputHistory h(/*fine=*/5, /*coarse=*/3, /*factor=*/4);
  const Clock::time_point t0(milliseconds(0));
  uint64_t bytes = 0;
  h.Record(Written(bytes), t0, 0);
  for (int i = 1; i <= 20; i++) {
    bytes += static_cast<uint64_t>(i) * 100;  // second i writes i*100 bytes
    h.Record(Written(bytes), t0 + milliseconds(1000 * i), 1000 * i);
  }
  auto fine = h.Fine();
  ASSERT_EQ(fine.size(), 5u);
  EXPECT_EQ(fine.front().time_ms, 16000);
  EXPECT_EQ(fine.back().time_ms, 20000);
  EXPECT_DOUBLE_EQ(fine.back().write_bytes_per_second, 2000.0);
  auto coarse = h.Coarse();
  ASSERT_EQ(coarse.size(), 3u);  // 5 made, the first 2 dropped
  // The last coarse sample covers seconds 17..20: (1700+1800+1900+2000)/4.
  EXPECT_EQ(coarse.back().time_ms, 20000);
  EXPECT_DOUBLE_EQ(coarse.back().interval_seconds, 4.0);
  EXPECT_DOUBLE_EQ(coarse.back().write_bytes_per_second, 1850.0);
  EXPECT_EQ(coarse.front().time_ms, 12000);
  EXPECT_DOUBLE_EQ(coarse.front().write_bytes_per_second, 1050.0);  // seconds 9..12
}

TEST(ThroughputSamplerTest, SamplesPeriodicallyAndStopsPromptly) {
  std::atomic<uint64_t> bytes{0};
  ThroughputHistory history;
  ThroughputSampler sampler([&] { return Written(bytes.load()); }, &history, milliseconds(20));
  sampler.Start();
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (history.Fine().size() < 3 && Clock::now() < deadline) {
    bytes += 1 << 20;
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_GE(history.Fine().size(), 3u);
  double total = 0;
  for (const auto& s : history.Fine()) total += s.write_bytes_per_second * s.interval_seconds;
  EXPECT_GT(total, 0);
  EXPECT_LE(total, static_cast<double>(bytes.load()) + 1);  // never more than was written
  sampler.Stop();
  const size_t n = history.Fine().size();
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(history.Fine().size(), n);  // no samples after Stop
  sampler.Stop();                       // idempotent
}

}  // namespace
}  // namespace dedupv1

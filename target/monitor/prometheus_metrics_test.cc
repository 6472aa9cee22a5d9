#include "target/monitor/prometheus_metrics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "target/monitor/monitor_test_util.h"

namespace dedupv1 {
namespace {

TEST(PrometheusWriterTest, GroupsFamiliesAndEscapesLabels) {
  PrometheusWriter w;
  w.Gauge("a_bytes", "A.", 1, {{"volume", "x\"y\\z\nw"}});
  w.Counter("b_total", "B.", 2);
  w.Gauge("a_bytes", "A.", 3, {{"volume", "v"}});
  const std::string text = w.Render();
  EXPECT_EQ(text,
            "# HELP a_bytes A.\n"
            "# TYPE a_bytes gauge\n"
            "a_bytes{volume=\"x\\\"y\\\\z\\nw\"} 1\n"
            "a_bytes{volume=\"v\"} 3\n"
            "# HELP b_total B.\n"
            "# TYPE b_total counter\n"
            "b_total 2\n");
}

TEST(PrometheusWriterTest, FormatsValues) {
  EXPECT_EQ(PrometheusWriter::FormatValue(0), "0");
  EXPECT_EQ(PrometheusWriter::FormatValue(18446744073709.0), "18446744073709");
  EXPECT_EQ(PrometheusWriter::FormatValue(2.5), "2.5");
  EXPECT_EQ(PrometheusWriter::FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(PrometheusWriter::FormatValue(-INFINITY), "-Inf");
}

// The value of the sample |series| (name plus labels, exactly as printed) in
// exposition text, or -1.
double SampleValue(const std::string& text, const std::string& series) {
  const std::string needle = "\n" + series + " ";
  const size_t pos = text.find(needle);
  if (pos == std::string::npos) return -1;
  return std::stod(text.substr(pos + needle.size()));
}

class MetricsEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(h_.ok()) << h_.status().ToString();
    Volume* v = h_.volume("vol1");
    for (uint64_t i = 0; i < 8; i++) {
      ASSERT_TRUE(v->Write(i << 20, 1 << 20, test::PatternBlock(i).data(), false).ok());
    }
    std::vector<uint8_t> buf(1 << 20);
    ASSERT_TRUE(v->Read(0, buf.size(), buf.data()).ok());
    ASSERT_TRUE(h_.system()->Sync().ok());
  }
  std::string Metrics(HttpResult* r) {
    MonitorClient client("127.0.0.1", h_.port());
    EXPECT_TRUE(client.Get("/metrics", r).ok());
    return r->body;
  }
  test::MonitorHarness h_;
};

TEST_F(MetricsEndpointTest, FiguresMatchTheSystem) {
  HttpResult r;
  const std::string text = "\n" + Metrics(&r);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const SystemStats& st = h_.system()->stats();
  EXPECT_EQ(SampleValue(text, "dedupv1_written_bytes_total"), 8.0 * (1 << 20));
  EXPECT_EQ(SampleValue(text, "dedupv1_write_operations_total"), 8.0);
  EXPECT_EQ(SampleValue(text, "dedupv1_read_bytes_total"), static_cast<double>(st.bytes_read.load()));
  EXPECT_EQ(SampleValue(text, "dedupv1_chunks_total{result=\"new\"}"),
            static_cast<double>(st.chunks_new.load()));
  EXPECT_EQ(SampleValue(text, "dedupv1_chunk_store_stored_bytes_total"),
            static_cast<double>(h_.system()->chunk_store()->stats().bytes_stored));
  EXPECT_NEAR(SampleValue(text, "dedupv1_dedup_ratio"), h_.system()->DedupRatio(), 1e-9);
  EXPECT_EQ(SampleValue(text, "dedupv1_volume_size_bytes{volume=\"vol2\"}"), 32.0 * (1 << 20));
  EXPECT_EQ(SampleValue(text, "dedupv1_build_info{version=\"" +
                                  std::string(MonitorVersionString()) + "\"}"),
            1.0);
  const FilterChain& chain = h_.system()->filter_chain();
  for (size_t i = 0; i < chain.size(); i++) {
    const std::string series = "dedupv1_filter_results_total{filter=\"" +
                               std::string(chain.filter(i).name()) + "\",result=\"not_existing\"}";
    EXPECT_EQ(SampleValue(text, series), static_cast<double>(chain.counters(i).not_existing.load()))
        << series;
  }
  // Every sample line is "name{labels} value" with a known family.
  std::regex line(R"(^[a-z_][a-z0-9_]*(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? \S+$)");
  std::istringstream in(text);
  std::string l;
  int samples = 0;
  while (std::getline(in, l)) {
    if (l.empty() || l[0] == '#') continue;
    EXPECT_TRUE(std::regex_match(l, line)) << l;
    EXPECT_EQ(l.rfind("dedupv1_", 0), 0u) << l;
    samples++;
  }
  EXPECT_GT(samples, 40);
}

TEST_F(MetricsEndpointTest, IdleAndReplayPauseGauges) {
  DedupSystem* sys = h_.system();
  HttpResult r;
  sys->ForceIdle(IdleMode::kIdle);
  sys->PauseReplay(true);
  ASSERT_TRUE(test::WaitFor([&] { return sys->idle_info().detector.idle; }));
  std::string text = "\n" + Metrics(&r);
  EXPECT_EQ(SampleValue(text, "dedupv1_idle"), 1.0);
  EXPECT_EQ(SampleValue(text, "dedupv1_idle_forced"), 1.0);
  EXPECT_EQ(SampleValue(text, "dedupv1_replay_paused"), 1.0);
  EXPECT_GE(SampleValue(text, "dedupv1_idle_starts_total"), 1.0);

  sys->ForceIdle(IdleMode::kBusy);
  sys->PauseReplay(false);
  ASSERT_TRUE(test::WaitFor([&] { return !sys->idle_info().detector.idle; }));
  text = "\n" + Metrics(&r);
  EXPECT_EQ(SampleValue(text, "dedupv1_idle"), 0.0);
  EXPECT_EQ(SampleValue(text, "dedupv1_idle_forced"), 1.0);
  EXPECT_EQ(SampleValue(text, "dedupv1_replay_paused"), 0.0);
  sys->ForceIdle(IdleMode::kAuto);
  text = "\n" + Metrics(&r);
  EXPECT_EQ(SampleValue(text, "dedupv1_idle_forced"), 0.0);
}

TEST_F(MetricsEndpointTest, PassesPromtool) {
  if (!test::HaveProgram("promtool")) {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  }
  HttpResult r;
  const std::string text = Metrics(&r);
  ASSERT_EQ(r.status, 200);
  test::TempDir dir;
  const std::string path = dir.Sub("metrics.txt");
  std::ofstream(path) << text;
  std::string out;
  const int rc = test::RunCommand("promtool check metrics < " + path + " 2>&1", &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "") << "promtool found problems:\n" << out;
}

}  // namespace
}  // namespace dedupv1

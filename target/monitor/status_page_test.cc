// The status page rendered by a real browser (headless Chromium) while a
// writer thread keeps traffic flowing: the figures the page shows must be the
// ones the JSON endpoints report.
#include "target/monitor/status_page.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "target/monitor/monitor_test_util.h"

namespace dedupv1 {
namespace {

struct Element {
  bool found = false;
  std::string data_value;
  std::string data_time;
  std::string text;  // text up to the first child tag
};

// The element with id |id| in a serialized DOM.
Element FindElement(const std::string& dom, const std::string& id) {
  Element e;
  std::smatch m;
  if (!std::regex_search(dom, m, std::regex("<[a-z]+\\b[^>]*\\bid=\"" + id + "\"[^>]*>"))) return e;
  e.found = true;
  const std::string tag = m.str();
  std::smatch a;
  if (std::regex_search(tag, a, std::regex("data-value=\"([^\"]*)\""))) e.data_value = a[1];
  if (std::regex_search(tag, a, std::regex("data-time=\"([^\"]*)\""))) e.data_time = a[1];
  const size_t start = static_cast<size_t>(m.position()) + tag.size();
  e.text = dom.substr(start, dom.find('<', start) - start);
  return e;
}

std::string ChromiumCommand(const std::string& profile_dir, const std::string& extra,
                            const std::string& url) {
  return "timeout 300 chromium --headless --no-sandbox --disable-gpu --disable-quic "
         "--no-first-run --disable-background-networking --disable-component-update "
         "--disable-sync --user-data-dir=" +
         profile_dir + " --virtual-time-budget=5000 " + extra + " " + url;
}

TEST(StatusPageTest, BrowserShowsLiveFiguresMatchingTheJson) {
  if (!test::HaveProgram("chromium")) {
    GTEST_SKIP() << "chromium not installed (Debian package chromium)";
  }
  test::MonitorHarness h("", std::chrono::milliseconds(1000));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  test::PatternWriter writer(h.volume("vol1"), 48 << 20, 256 << 10, 5, /*once=*/false);
  MonitorClient client("127.0.0.1", h.port());

  // Wait for a throughput sample that saw the writer.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    Json t = test::FetchJson(&client, "GET", "/throughput");
    if (t["available"] == true && t["write_bytes_per_second"].get<double>() > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const Json before = test::FetchJson(&client, "GET", "/stats");
  ASSERT_EQ(before["throughput"]["available"], true) << before.dump();

  test::TempDir tmp;
  const std::string url = h.server()->url();
  std::string dom;
  const int rc = test::RunCommand(
      ChromiumCommand(tmp.Sub("profile"), "--dump-dom", url) + " 2>" + tmp.Sub("chromium.log"),
      &dom);
  const Json after = test::FetchJson(&client, "GET", "/stats");
  const Json history = test::FetchJson(&client, "GET", "/history");
  ASSERT_EQ(rc, 0) << "chromium failed; see its log";
  ASSERT_NE(dom.find("</html>"), std::string::npos) << dom.substr(0, 500);

  // Live: the script fetched /stats and rendered it.
  EXPECT_EQ(FindElement(dom, "conn").text, "live");
  EXPECT_EQ(FindElement(dom, "version").text, MonitorVersionString());

  // Dedup ratio: between what /stats said before and after the page loaded
  // (it only grows while the same data is rewritten), and shown as its value.
  const Element ratio = FindElement(dom, "dedup-ratio");
  ASSERT_TRUE(ratio.found);
  ASSERT_FALSE(ratio.data_value.empty()) << "ratio never rendered";
  const double page_ratio = std::stod(ratio.data_value);
  const double r0 = before["dedup"]["ratio"].get<double>();
  const double r1 = after["dedup"]["ratio"].get<double>();
  EXPECT_GE(page_ratio, std::min(r0, r1) * 0.95) << r0 << " .. " << r1;
  EXPECT_LE(page_ratio, std::max(r0, r1) * 1.05) << r0 << " .. " << r1;
  EXPECT_GT(page_ratio, 1.5);
  EXPECT_NEAR(std::stod(ratio.text), page_ratio, 0.006) << ratio.text;

  // Write throughput: exactly the sample /history holds for the time shown.
  const Element write = FindElement(dom, "write-now");
  ASSERT_TRUE(write.found);
  ASSERT_FALSE(write.data_time.empty()) << "throughput never rendered";
  const int64_t shown_time = std::stoll(write.data_time);
  const double shown_rate = std::stod(write.data_value);
  EXPECT_GT(shown_rate, 0.0);
  EXPECT_NE(write.text.find("/s"), std::string::npos) << write.text;
  const Json& fine = history["fine"];
  bool matched = false;
  for (size_t i = 0; i < fine["time_ms"].size(); i++) {
    if (fine["time_ms"][i].get<int64_t>() != shown_time) continue;
    matched = true;
    EXPECT_NEAR(shown_rate, fine["write_bytes_per_second"][i].get<double>(),
                1e-9 * shown_rate + 1e-9);
  }
  EXPECT_TRUE(matched) << "no /history sample at " << shown_time;
  // And it is a rate that /stats reported as "now" at some point in between.
  EXPECT_GE(shown_time, before["throughput"]["time_ms"].get<int64_t>());
  EXPECT_LE(shown_time, after["throughput"]["time_ms"].get<int64_t>());

  // Tables and sections.
  EXPECT_NE(dom.find("<td>vol1</td>"), std::string::npos);
  EXPECT_NE(dom.find("<td>vol2</td>"), std::string::npos);
  EXPECT_NE(dom.find("<td>" + std::string(h.system()->filter_chain().filter(0).name()) + "</td>"),
            std::string::npos);
  EXPECT_NE(dom.find("<dt>Replay position (head)</dt>"), std::string::npos);  // the log section is rendered
  // The idle section shows the detector's state.
  EXPECT_NE(dom.find("<dt>Mode</dt><dd>auto (detected)</dd>"), std::string::npos);
  EXPECT_NE(dom.find("<dt>Background replay</dt><dd>running</dd>"), std::string::npos);
  // The GC section lists the collector's figures.
  EXPECT_NE(dom.find("<dt>chunks_deleted</dt>"), std::string::npos);
  EXPECT_NE(dom.find("<dt>reclaimed_bytes</dt>"), std::string::npos);

  // A screenshot for people, taken while the writer still runs.
  const std::string shot = test::TestOutputDir() + "/monitor_status_page.png";
  std::remove(shot.c_str());
  const int shot_rc = test::RunCommand(
      ChromiumCommand(tmp.Sub("profile2"), "--screenshot=" + shot + " --window-size=1280,1600",
                      url) +
      " >" + tmp.Sub("shot.log") + " 2>&1");
  EXPECT_EQ(shot_rc, 0);
  std::ifstream png(shot, std::ios::binary);
  char magic[8] = {};
  png.read(magic, 8);
  EXPECT_EQ(std::string(magic, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << shot;
  std::printf("screenshot: %s\n", shot.c_str());

  writer.Stop();
  EXPECT_TRUE(writer.status().ok()) << writer.status().ToString();
}

}  // namespace
}  // namespace dedupv1

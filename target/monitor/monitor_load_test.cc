// Many monitor requests while a volume is being written: they must neither
// change what is written nor stall the writer.
#include "target/monitor/monitor_server.h"

#include <gtest/gtest.h>

#include <future>

#include "target/monitor/monitor_test_util.h"

namespace dedupv1 {
namespace {

TEST(MonitorLoadTest, ConcurrentRequestsDuringWritesChangeNothing) {
  const int kThreads = static_cast<int>(test::EnvKnob("DEDUPV1_MONITOR_LOAD_THREADS", 8));
  const int kRequests = static_cast<int>(test::EnvKnob("DEDUPV1_MONITOR_LOAD_REQUESTS", 200));
  test::MonitorHarness h("tok", std::chrono::milliseconds(100));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  Volume* v = h.volume("vol2");
  ASSERT_NE(v, nullptr);

  // 24 MiB: the duplicate pattern with every 3rd MiB unique, written in
  // 192 KiB requests (not block aligned), then synced.
  const uint64_t kBytes = 24 << 20;
  std::vector<uint8_t> expected(kBytes);
  for (uint64_t mib = 0; mib < kBytes >> 20; mib++) {
    const std::vector<uint8_t> unique = test::RandomBytes(1 << 20, 77 + mib);
    const auto& src = mib % 3 == 2 ? unique : test::PatternBlock(mib);
    std::copy(src.begin(), src.end(), expected.begin() + static_cast<ptrdiff_t>(mib << 20));
  }
  std::atomic<bool> writing{true};
  auto writer = std::async(std::launch::async, [&]() -> Status {
    const size_t io = 192 << 10;
    for (uint64_t off = 0; off < kBytes; off += io) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(io, kBytes - off));
      DEDUPV1_RETURN_IF_ERROR(v->Write(off, n, expected.data() + off, false));
    }
    Status s = v->Sync();
    writing = false;
    return s;
  });

  const std::vector<std::string> paths = {"/stats", "/metrics", "/volumes", "/index",
                                          "/containers", "/filters", "/history", "/"};
  std::atomic<int> failures{0}, served{0}, during_writes{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < kThreads; t++) {
    clients.emplace_back([&, t] {
      MonitorClient client("127.0.0.1", h.port(), "tok");
      for (int i = 0; i < kRequests; i++) {
        HttpResult r;
        Status s;
        if (t == 0 && i % 50 == 25) {
          s = client.Post("/idle", {{"state", i % 100 == 25 ? "idle" : "busy"}}, &r);
        } else if (t == 1 && i % 100 == 50) {
          s = client.Post("/flush", {}, &r);  // a flush racing the writer
        } else {
          s = client.Get(paths[static_cast<size_t>(i + t) % paths.size()], &r);
        }
        if (!s.ok() || r.status != 200) {
          if (failures.fetch_add(1) < 5) {
            ADD_FAILURE() << s.ToString() << " HTTP " << r.status << " " << r.body.substr(0, 200);
          }
        } else {
          served++;
          if (writing.load()) during_writes++;
        }
      }
    });
  }
  // Stall detection only: generous, far above what the writer needs.
  ASSERT_EQ(writer.wait_for(std::chrono::seconds(600)), std::future_status::ready)
      << "the writer stalled under monitor load";
  Status ws = writer.get();
  for (auto& c : clients) c.join();
  ASSERT_TRUE(ws.ok()) << ws.ToString();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(served.load(), kThreads * kRequests);
  std::printf("monitor requests served: %d (%d while writing)\n", served.load(),
              during_writes.load());

  std::vector<uint8_t> got(kBytes);
  ASSERT_TRUE(v->Read(0, kBytes, got.data()).ok());
  EXPECT_TRUE(got == expected) << "data read back differs from what was written";
  // The monitor's own count of what was written agrees with the writer.
  MonitorClient client("127.0.0.1", h.port());
  Json s = test::FetchJson(&client, "GET", "/stats");
  EXPECT_EQ(s["io"]["written_bytes"].get<uint64_t>(), kBytes);
  EXPECT_EQ(s["volumes"][1]["dirty_bytes"].get<uint64_t>(), 0u);
  EXPECT_GE(h.server()->handler().requests(), static_cast<uint64_t>(kThreads * kRequests));
}

}  // namespace
}  // namespace dedupv1

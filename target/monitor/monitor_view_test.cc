#include "target/monitor/monitor_view.h"

#include <gtest/gtest.h>

namespace dedupv1 {
namespace {

using Json = nlohmann::ordered_json;

TEST(MonitorViewTest, HumanFigures) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1536), "1.50 KiB");
  EXPECT_EQ(HumanBytes(64.0 * (1 << 20)), "64.0 MiB");
  EXPECT_EQ(HumanBytes(3.0 * (1ull << 40)), "3.00 TiB");
  EXPECT_EQ(HumanDuration(59), "0m 59s");
  EXPECT_EQ(HumanDuration(3723), "1h 02m 03s");
  EXPECT_EQ(HumanDuration(2 * 86400 + 5), "2d 0h 00m 05s");
  EXPECT_EQ(GroupedInteger(0), "0");
  EXPECT_EQ(GroupedInteger(999), "999");
  EXPECT_EQ(GroupedInteger(1234567), "1,234,567");
}

TEST(MonitorViewTest, FormatsByUnitInTheFieldName) {
  Json doc = Json::parse(R"({
    "uptime_seconds": 3723.4,
    "dedup": {"ratio": 3.14159, "saved_bytes": 2097152, "chunks": 1234567},
    "throughput": {"write_bytes_per_second": 1048576, "write_ops_per_second": 2.25},
    "containers": {"read_cache_hit_ratio": 0.875, "average_commit_latency_ms": 12.25},
    "gc": {"available": false, "message": "garbage collection is not available in this version"}
  })");
  const std::string out = RenderMonitorView("stats", doc);
  EXPECT_NE(out.find("uptime  1h 02m 03s"), std::string::npos) << out;
  EXPECT_NE(out.find("[dedup]"), std::string::npos) << out;
  EXPECT_NE(out.find("ratio   3.14"), std::string::npos) << out;
  EXPECT_NE(out.find("saved   2.00 MiB"), std::string::npos) << out;
  EXPECT_NE(out.find("chunks  1,234,567"), std::string::npos) << out;
  EXPECT_NE(out.find("1.00 MiB/s"), std::string::npos) << out;
  EXPECT_NE(out.find("2.2/s"), std::string::npos) << out;
  EXPECT_NE(out.find("87.5 %"), std::string::npos) << out;
  EXPECT_NE(out.find("12.2 ms"), std::string::npos) << out;
  EXPECT_NE(out.find("[gc]\n  garbage collection is not available in this version\n"),
            std::string::npos)
      << out;
}

TEST(MonitorViewTest, ArraysOfObjectsAreTables) {
  Json doc = Json::parse(R"({"volumes": [
    {"name": "vol1", "id": 1, "size_bytes": 67108864, "dirty_bytes": 0},
    {"name": "backup-volume", "id": 2, "size_bytes": 1073741824, "dirty_bytes": 4096}]})");
  const std::string out = RenderMonitorView("volumes", doc);
  EXPECT_EQ(out,
            "\n[volumes]\n"
            "  name           id      size     dirty\n"
            "  -------------  --  --------  --------\n"
            "  vol1            1  64.0 MiB       0 B\n"
            "  backup-volume   2  1.00 GiB  4.00 KiB\n");
}

TEST(MonitorViewTest, HistoryShowsTheNewestSamples) {
  Json series = Json::parse(R"({"time_ms": [1000, 2000], "write_bytes_per_second": [1024, 2048],
    "read_bytes_per_second": [0, 512], "write_ops_per_second": [1, 2],
    "read_ops_per_second": [0, 1], "dedup_bytes_per_second": [0, 0]})");
  Json doc;
  doc["available"] = true;
  doc["fine"] = series;
  doc["coarse"] = series;
  const std::string out = RenderMonitorView("history", doc);
  EXPECT_NE(out.find("[1 s samples] 2 samples"), std::string::npos) << out;
  EXPECT_NE(out.find("2.00 KiB/s"), std::string::npos) << out;
  EXPECT_NE(out.find("512 B/s"), std::string::npos) << out;
}

}  // namespace
}  // namespace dedupv1

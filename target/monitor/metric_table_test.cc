// The metric table (metric_table.h): its rows are consistent (one row per
// section and key, one type and help per Prometheus family, page lines that
// name only keys of their section), the JSON the collector builds holds
// exactly the rows' keys, and docs/monitoring.md names every row.
#include "target/monitor/metric_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "core/base/testutil.h"
#include "target/monitor/monitor_test_util.h"

namespace dedupv1 {
namespace {

const char* TypeName(PrometheusType t) {
  return t == PrometheusType::kCounter ? "counter" : t == PrometheusType::kGauge ? "gauge" : "";
}

// The line docs/monitoring.md has for |row| in its metric reference.
std::string DocLine(const MetricRow& row) {
  std::string prom;
  if (row.prom_type != PrometheusType::kNone) {
    prom = "`" + std::string(row.prom_name) + "`";
    if (row.label != nullptr) prom += "{" + std::string(row.label) + "=\"" + row.label_value + "\"}";
    prom += " " + std::string(TypeName(row.prom_type));
  }
  return "| `" + row.Path() + "` | " + MetricUnitName(row.unit) + " | " + prom + " |";
}

TEST(MetricTableTest, RowsAreConsistent) {
  std::set<std::string> paths;
  std::map<std::string, std::pair<PrometheusType, std::string>> families;
  std::map<std::string, std::set<int>> positions;
  std::map<std::string, std::set<std::string>> keys;
  for (const MetricRow& r : MetricTable()) keys[r.section].insert(r.key);
  for (const MetricRow& r : MetricTable()) {
    EXPECT_TRUE(paths.insert(r.Path()).second) << r.Path() << " is in the table twice";
    EXPECT_NE(r.read, nullptr) << r.Path();
    if (r.prom_type != PrometheusType::kNone) {
      const std::string name = r.prom_name;
      EXPECT_EQ(name.rfind("dedupv1_", 0), 0u) << name;
      EXPECT_EQ(r.prom_type == PrometheusType::kCounter, name.size() > 6 && name.substr(name.size() - 6) == "_total")
          << name << ": counters, and only counters, end in _total";
      auto [it, first] = families.emplace(name, std::make_pair(r.prom_type, std::string(r.help)));
      if (!first) {
        EXPECT_EQ(it->second.first, r.prom_type) << name << ": one type per family";
        EXPECT_EQ(it->second.second, r.help) << name << ": one help text per family";
        EXPECT_NE(r.label, nullptr) << name << ": rows of one family differ in a label";
      }
    }
    if (r.page_label != nullptr) {
      EXPECT_TRUE(positions[r.section].insert(r.page_position).second)
          << r.Path() << ": page position " << r.page_position << " is taken";
      // The page line reads only keys of its own section.
      const std::string js = r.PageExpression();
      std::regex field(R"(\bv\.([a-z_]+))");
      for (auto m = std::sregex_iterator(js.begin(), js.end(), field); m != std::sregex_iterator(); ++m) {
        EXPECT_TRUE(keys[r.section].count((*m)[1].str())) << r.Path() << ": page line reads v." << (*m)[1];
      }
    }
  }
  EXPECT_GT(MetricTable().size(), 150u);
}

TEST(MetricTableTest, PageListsKeepTheirOrder) {
  const std::string script = StatusPageListsScript();
  // Lines come in page order, whatever the order of the rows.
  EXPECT_LT(script.find("\"State\""), script.find("\"Mode\""));
  EXPECT_LT(script.find("\"Read-cache hit rate\""), script.find("\"Containers read\""));
  EXPECT_NE(script.find(R"js(["Entries (persistent)", (v) => count(v.persistent_entries)])js"), std::string::npos)
      << script;
}

// Every section the collector builds holds exactly its rows' keys (those
// with a condition only while it holds), in table order.
TEST(MetricTableTest, CollectorJsonHasTheRowsKeys) {
  test::MonitorHarness h;
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  const Json stats = h.server()->collector().Stats();
  std::map<std::string, std::vector<std::string>> expected;
  for (const MetricRow& r : MetricTable()) {
    if (r.present == nullptr) expected[r.section].push_back(r.key);
  }
  for (const auto& [section, keys] : expected) {
    const Json* j = &stats;
    if (section == "volumes[]") j = &stats["volumes"][0];
    else if (section == "filters[]") j = &stats["filters"][0];
    else if (section == "containers.merge") j = &stats["containers"]["merge"];
    else j = &stats[section];
    std::vector<std::string> got;
    for (auto it = j->begin(); it != j->end(); ++it) {
      if (section == "containers" && it.key() == "merge") continue;
      got.push_back(it.key());
    }
    EXPECT_EQ(got, keys) << section;
  }
}

TEST(MetricTableTest, DocsNameEveryMetric) {
  const std::string path = test::FindSourceFile("docs/monitoring.md");
  ASSERT_FALSE(path.empty()) << "docs/monitoring.md not found above the binary or the working directory";
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string doc = buf.str();
  std::string missing;
  for (const MetricRow& r : MetricTable()) {
    if (doc.find(DocLine(r)) == std::string::npos) missing += DocLine(r) + "\n";
  }
  EXPECT_EQ(missing, "") << path << " lacks these lines of its metric reference (or has them differently):\n"
                         << missing;
}

}  // namespace
}  // namespace dedupv1

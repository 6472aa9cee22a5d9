// Endpoint tests over real HTTP against a running DedupSystem.
#include "target/monitor/monitor_server.h"

#include <gtest/gtest.h>

#include <regex>
#include <thread>

#include "target/monitor/monitor_test_util.h"
#include "target/service_options.h"

namespace dedupv1 {
namespace {

using test::FetchJson;
using test::MonitorHarness;

// Writes |mib| MiB of the 4-way duplicate pattern to vol1 and syncs.
void WriteAndSync(MonitorHarness* h, uint64_t mib) {
  Volume* v = h->volume("vol1");
  ASSERT_NE(v, nullptr);
  for (uint64_t i = 0; i < mib; i++) {
    ASSERT_TRUE(v->Write(i << 20, 1 << 20, test::PatternBlock(i).data(), false).ok());
  }
  ASSERT_TRUE(h->system()->Sync().ok());
}

TEST(MonitorServerTest, ServesStatsOfTheRunningSystem) {
  MonitorHarness h;
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_NE(h.port(), 0);
  EXPECT_EQ(h.server()->url(), "http://127.0.0.1:" + std::to_string(h.port()) + "/");
  WriteAndSync(&h, 16);

  MonitorClient client("127.0.0.1", h.port());
  long code = 0;
  Json s = FetchJson(&client, "GET", "/stats", &code);
  ASSERT_EQ(code, 200) << s.dump();
  EXPECT_EQ(s["version"], MonitorVersionString());
  EXPECT_GE(s["uptime_seconds"].get<double>(), 0.0);
  EXPECT_EQ(s["io"]["written_bytes"].get<uint64_t>(), 16u << 20);
  EXPECT_EQ(s["io"]["write_ops"].get<uint64_t>(), 16u);
  const Json& d = s["dedup"];
  EXPECT_EQ(d["logical_bytes"].get<uint64_t>(), 16u << 20);
  EXPECT_EQ(d["stored_bytes"].get<uint64_t>(), h.system()->chunk_store()->stats().bytes_stored);
  EXPECT_NEAR(d["ratio"].get<double>(), h.system()->DedupRatio(), 1e-9);
  EXPECT_GT(d["ratio"].get<double>(), 2.0);  // four distinct MiB written four times over
  EXPECT_EQ(d["saved_bytes"].get<uint64_t>(),
            d["logical_bytes"].get<uint64_t>() - d["stored_bytes"].get<uint64_t>());
  EXPECT_EQ(d["chunks"].get<uint64_t>(), d["chunks_new"].get<uint64_t>() +
                                             d["chunks_known"].get<uint64_t>() +
                                             d["chunks_zero"].get<uint64_t>());

  ASSERT_EQ(s["volumes"].size(), 2u);
  EXPECT_EQ(s["volumes"][0]["name"], "vol1");
  EXPECT_EQ(s["volumes"][0]["size_bytes"].get<uint64_t>(), 64u << 20);
  EXPECT_EQ(s["volumes"][0]["dirty_bytes"].get<uint64_t>(), 0u);  // synced
  // Per-volume counters: everything went to vol1.
  EXPECT_EQ(s["volumes"][0]["written_bytes"].get<uint64_t>(), 16u << 20);
  EXPECT_EQ(s["volumes"][0]["write_ops"].get<uint64_t>(), 16u);
  EXPECT_EQ(s["volumes"][1]["written_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(s["volumes"][0]["read_bytes"].get<uint64_t>(), 0u);

  const FilterChain& chain = h.system()->filter_chain();
  ASSERT_EQ(s["filters"].size(), chain.size());
  uint64_t decided = 0;
  for (size_t i = 0; i < chain.size(); i++) {
    EXPECT_EQ(s["filters"][i]["name"], chain.filter(i).name());
    decided += s["filters"][i]["existing"].get<uint64_t>() +
               s["filters"][i]["strong_maybe"].get<uint64_t>() +
               s["filters"][i]["not_existing"].get<uint64_t>();
  }
  EXPECT_GT(decided, 0u);

  EXPECT_EQ(s["chunk_index"]["persistent_entries"].get<uint64_t>() +
                s["chunk_index"]["aux_entries"].get<uint64_t>(),
            h.system()->chunk_index()->stats().persistent_entries +
                h.system()->chunk_index()->stats().aux_entries);
  EXPECT_GT(s["chunk_index"]["capacity_entries"].get<uint64_t>(), 0u);
  EXPECT_GT(s["block_index"]["persistent_mappings"].get<uint64_t>() +
                s["block_index"]["aux_mappings"].get<uint64_t>(),
            0u);
  EXPECT_GE(s["containers"]["committed"].get<uint64_t>(), 1u);
  EXPECT_EQ(s["containers"]["merge"]["available"], true);

  // The operations log: every mapping change of the writes above is an event.
  EXPECT_GT(s["log"]["appended_events"].get<uint64_t>(), 0u);
  EXPECT_LE(s["log"]["appended_events"].get<uint64_t>(), h.system()->log()->stats().appended_events);
  EXPECT_GE(s["log"]["fill"].get<double>(), 0.0);
  EXPECT_LT(s["log"]["fill"].get<double>(), 1.0);
  EXPECT_EQ(s["log"]["last_start"], "clean");

  EXPECT_EQ(s["gc"]["available"], true);
  EXPECT_EQ(s["gc"]["running"], false);
  EXPECT_TRUE(s["gc"].contains("chunks_deleted"));
  EXPECT_EQ(s["idle"]["available"], true);
  EXPECT_EQ(s["idle"]["mode"], "auto");
  EXPECT_EQ(s["idle"]["forced"], false);
  EXPECT_EQ(s["idle"]["replay_paused"], false);
  EXPECT_EQ(s["idle"]["throughput_threshold_bytes_per_second"].get<uint64_t>(),
            h.system()->options().idle.throughput_threshold);
  EXPECT_EQ(s["log"]["replay_paused"], false);
}

TEST(MonitorServerTest, EveryJsonEndpointAnswers) {
  MonitorHarness h;
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  MonitorClient client("127.0.0.1", h.port());
  const std::vector<std::pair<std::string, std::string>> endpoints = {
      {"/stats", "dedup"},           {"/volumes", "volumes"},   {"/filters", "filters"},
      {"/index", "chunk_index"},     {"/containers", "committed"}, {"/log", "fill"},
      {"/gc", "available"},          {"/idle", "mode"},         {"/config", "entries"},
      {"/version", "version"},       {"/throughput", "available"}, {"/history", "fine"},
      {"/api", "endpoints"}};
  for (const auto& [path, key] : endpoints) {
    HttpResult r;
    ASSERT_TRUE(client.Get(path, &r).ok()) << path;
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    EXPECT_EQ(r.content_type, "application/json") << path;
    Json doc = Json::parse(r.body, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << path;
    EXPECT_TRUE(doc.contains(key)) << path << " lacks " << key << ": " << r.body;
  }
  Json config = FetchJson(&client, "GET", "/config");
  bool found_volume = false;
  for (const auto& e : config["entries"]) {
    if (e["key"] == "volume" && e["value"].get<std::string>().rfind("vol2 ", 0) == 0) found_volume = true;
    if (e["key"] == "monitor.token") {
      EXPECT_EQ(e["value"], "");  // never the token itself
    }
  }
  EXPECT_TRUE(found_volume) << config.dump();
}

// While the chunk index is full /index shows it: the fill counts the entries
// not written back yet (before, only persistent ones: 0.0 with a full index
// whose entries all waited in memory), and the refusal is the last error.
TEST(MonitorServerTest, IndexShowsAFullChunkIndex) {
  MonitorHarness h("", std::chrono::milliseconds(200), [](Options* o) {
    o->chunk_index.table.size_bytes = 64 << 10;  // 15 buckets of 4 KiB: ~1,000 entries
    o->chunk_index.table.page_size = 4096;
    o->chunk_index.grow_at = 0;  // no online growth: the index fills
  });
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  Volume* v = h.volume("vol1");
  ASSERT_NE(v, nullptr);
  const auto data = test::RandomBytes(24 << 20, 31);  // ~3,000 chunks
  for (uint64_t off = 0; off < data.size(); off += 1 << 20) {
    if (!v->Write(off, 1 << 20, data.data() + off, false).ok()) break;
  }
  MonitorClient client("127.0.0.1", h.port());
  // The runs that need new entries wait parked (bounded wait for the workers).
  uint64_t parked = 0;
  for (int i = 0; i < 600 && parked == 0; i++) {
    parked = FetchJson(&client, "GET", "/volumes")["volumes"][0]["parked_bytes"].get<uint64_t>();
    if (parked == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GT(parked, 0u);
  Status s = h.system()->Sync();
  ASSERT_TRUE(s.IsNoSpace()) << s.ToString();
  // Reported by the sync and given up.
  EXPECT_EQ(FetchJson(&client, "GET", "/volumes")["volumes"][0]["parked_bytes"].get<uint64_t>(), 0u);

  long code = 0;
  Json ci = FetchJson(&client, "GET", "/index", &code)["chunk_index"];
  ASSERT_EQ(code, 200) << ci.dump();
  const uint64_t capacity = ci["capacity_entries"].get<uint64_t>();
  EXPECT_EQ(ci["used_entries"].get<uint64_t>(),
            ci["persistent_entries"].get<uint64_t>() + ci["new_entries"].get<uint64_t>());
  // A write-back in flight may count an entry in both for a moment.
  EXPECT_GE(ci["used_entries"].get<uint64_t>(), capacity) << ci.dump();
  EXPECT_GE(ci["fill_ratio"].get<double>(), 1.0) << ci.dump();
  EXPECT_GT(ci["refused_puts"].get<uint64_t>(), 0u) << ci.dump();
  EXPECT_NE(ci["last_error"].get<std::string>().find("chunk index full"), std::string::npos) << ci.dump();
}

TEST(MonitorServerTest, StatusPageIsSelfContained) {
  MonitorHarness h;
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  MonitorClient client("127.0.0.1", h.port());
  HttpResult r;
  ASSERT_TRUE(client.Get("/", &r).ok());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_NE(r.body.find("id=\"dedup-ratio\""), std::string::npos);
  EXPECT_NE(r.body.find("fetch(\"stats\""), std::string::npos);
  // Nothing is loaded from another host: no absolute or protocol-relative URLs.
  std::smatch m;
  EXPECT_FALSE(std::regex_search(r.body, m, std::regex(R"((src|href)\s*=\s*["']?(https?:)?//)")))
      << m.str();
  EXPECT_EQ(r.body.find("http://"), std::string::npos);
  EXPECT_EQ(r.body.find("https://"), std::string::npos);
  HttpResult head;
  ASSERT_TRUE(client.Request("HEAD", "/", {}, &head).ok());
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
}

TEST(MonitorServerTest, ErrorsAreJsonWithTheRightStatus) {
  MonitorHarness h;
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  MonitorClient client("127.0.0.1", h.port());
  struct Case {
    std::string method, path;
    std::map<std::string, std::string> params;
    long status;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"GET", "/nope", {}, 404, "no endpoint /nope"},
      {"GET", "/stats/extra", {}, 404, "no endpoint"},
      {"POST", "/stats", {}, 405, "POST is not allowed on /stats"},
      {"DELETE", "/volumes", {}, 405, "not allowed"},
      {"GET", "/flush", {}, 405, "use POST"},
      {"GET", "/stats", {{"verbose", "1"}}, 400, "unknown parameter 'verbose'"},
      {"POST", "/flush", {{"now", "1"}}, 400, "unknown parameter 'now'"},
      {"POST", "/idle", {}, 400, "state=idle, state=busy or state=auto"},
      {"POST", "/idle", {{"state", "sleepy"}}, 400, "state=idle, state=busy or state=auto"},
      {"GET", "/volumes", {{"name", "nope"}}, 404, "volumes: vol1, vol2"},
      {"GET", "/log/replay/pause", {}, 405, "use POST"},
      {"GET", "/cluster", {}, 404, "not a gateway slot"},  // a local store: no cluster view
      {"POST", "/log/replay/resume", {{"now", "1"}}, 400, "unknown parameter 'now'"},
  };
  for (const Case& c : cases) {
    HttpResult r;
    ASSERT_TRUE(client.Request(c.method, c.path, c.params, &r).ok());
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.path << ": " << r.body;
    EXPECT_EQ(r.content_type, "application/json") << c.path;
    Json doc = Json::parse(r.body, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.body;
    EXPECT_EQ(doc["status"].get<long>(), c.status);
    EXPECT_NE(doc["message"].get<std::string>().find(c.message_part), std::string::npos)
        << c.method << " " << c.path << ": " << r.body;
    if (c.status == 405) {
      EXPECT_FALSE(r.allow.empty()) << c.path;
    }
  }
}

TEST(MonitorServerTest, FlushMakesBufferedWritesDurable) {
  MonitorHarness h;
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  Volume* v = h.volume("vol2");
  ASSERT_NE(v, nullptr);
  auto data = test::RandomBytes(3 << 20, 42);
  ASSERT_TRUE(v->Write(4096, data.size(), data.data(), false).ok());
  MonitorClient client("127.0.0.1", h.port());
  long code = 0;
  Json r = FetchJson(&client, "POST", "/flush", &code);
  ASSERT_EQ(code, 200) << r.dump();
  EXPECT_EQ(r["ok"], true);
  EXPECT_EQ(v->buffer().dirty_bytes(), 0u);
  EXPECT_EQ(h.system()->block_index()->stats().aux_waiting_for_commit, 0u);
  Json vol = FetchJson(&client, "GET", "/volumes", &code, {{"name", "vol2"}});
  ASSERT_EQ(code, 200);
  EXPECT_EQ(vol["name"], "vol2");
  EXPECT_EQ(vol["dirty_bytes"].get<uint64_t>(), 0u);
  std::vector<uint8_t> out(data.size());
  ASSERT_TRUE(v->Read(4096, out.size(), out.data()).ok());
  EXPECT_EQ(out, data);
}

TEST(MonitorServerTest, GcRunCollectsOverwrittenData) {
  MonitorHarness h;
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  Volume* v = h.volume("vol2");
  ASSERT_NE(v, nullptr);
  auto old_data = test::RandomBytes(2 << 20, 7);
  ASSERT_TRUE(v->Write(0, old_data.size(), old_data.data(), false).ok());
  ASSERT_TRUE(v->Sync().ok());
  auto data = test::RandomBytes(2 << 20, 8);
  ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
  ASSERT_TRUE(v->Sync().ok());
  MonitorClient client("127.0.0.1", h.port());
  long code = 0;
  Json r = FetchJson(&client, "POST", "/gc/run", &code);
  ASSERT_EQ(code, 200) << r.dump();
  EXPECT_EQ(r["ok"], true);
  EXPECT_GT(r["gc"]["chunks_deleted"].get<uint64_t>(), 0u) << r.dump();
  EXPECT_GT(r["gc"]["reclaimed_bytes"].get<uint64_t>(), 0u) << r.dump();
  Json gc = FetchJson(&client, "GET", "/gc", &code);
  ASSERT_EQ(code, 200);
  EXPECT_GE(gc["runs"].get<uint64_t>(), 1u);
  EXPECT_EQ(gc["running"], false);
  EXPECT_GT(gc["last_run_unix"].get<int64_t>(), 0);
  // The chunks deleted from containers that stay are kept as marked garbage;
  // a finished round leaves none of its marks unpersisted.
  EXPECT_EQ(gc["garbage_chunks_kept"].get<uint64_t>(), h.system()->chunk_store()->stats().dead_chunks_marked);
  EXPECT_EQ(gc["garbage_marks_unpersisted"].get<uint64_t>(), 0u) << gc.dump();
  HttpResult metrics;
  ASSERT_TRUE(client.Get("/metrics", &metrics).ok());
  EXPECT_NE(metrics.body.find("dedupv1_gc_chunks_deleted_total "), std::string::npos) << metrics.body;
  EXPECT_EQ(metrics.body.find("dedupv1_gc_chunks_deleted_total 0\n"), std::string::npos) << metrics.body;
  std::vector<uint8_t> out(data.size());
  ASSERT_TRUE(v->Read(0, out.size(), out.data()).ok());
  EXPECT_EQ(out, data);
}

// The replay position (log head) has moved past |last|: a checkpoint replayed
// the events up to it and trimmed the log.
bool ReplayedPast(MonitorClient* client, uint64_t last) {
  Json log = FetchJson(client, "GET", "/log");
  return log.contains("replay_position") && log["replay_position"].get<uint64_t>() > last;
}

// Waits until the checkpoint thread took |n| more samples.
void WaitLoopTicks(MonitorHarness* h, uint64_t n) {
  const uint64_t start = h->system()->idle_info().loop_ticks;
  ASSERT_TRUE(test::WaitFor([&] { return h->system()->idle_info().loop_ticks >= start + n; }));
}

TEST(MonitorServerTest, ForceIdleBusyAndAuto) {
  MonitorHarness h;
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  MonitorClient client("127.0.0.1", h.port());
  Json idle = FetchJson(&client, "GET", "/idle");
  EXPECT_EQ(idle["mode"], "auto");
  EXPECT_EQ(idle["forced"], false);
  long code = 0;
  // Busy first, so the test's own quiet spells do not make it idle.
  Json r = FetchJson(&client, "POST", "/idle", &code, {{"state", "busy"}});
  ASSERT_EQ(code, 200) << r.dump();
  EXPECT_EQ(r["mode"], "busy");
  ASSERT_TRUE(test::WaitFor([&] { return FetchJson(&client, "GET", "/idle")["idle"] == false; }));
  WriteAndSync(&h, 2);
  const uint64_t last = h.system()->log()->last_id();
  WaitLoopTicks(&h, 4);
  EXPECT_FALSE(ReplayedPast(&client, last)) << "forced busy: no idle replay";
  idle = FetchJson(&client, "GET", "/idle");
  EXPECT_EQ(idle["mode"], "busy");
  EXPECT_EQ(idle["forced"], true);
  EXPECT_EQ(idle["since_unix"], 0);

  r = FetchJson(&client, "POST", "/idle", &code, {{"state", "idle"}});
  ASSERT_EQ(code, 200) << r.dump();
  EXPECT_EQ(r["mode"], "idle");
  // The counter is bumped just after the checkpoint trims the log.
  ASSERT_TRUE(test::WaitFor([&] {
    return ReplayedPast(&client, last) && FetchJson(&client, "GET", "/idle")["idle_checkpoints"].get<uint64_t>() >= 1;
  })) << "forced idle did not replay the log";
  idle = FetchJson(&client, "GET", "/idle");
  EXPECT_EQ(idle["idle"], true);
  EXPECT_EQ(idle["forced"], true);
  EXPECT_GT(idle["since_unix"].get<int64_t>(), 0);
  EXPECT_GE(idle["idle_checkpoints"].get<uint64_t>(), 1u);
  EXPECT_EQ(FetchJson(&client, "GET", "/stats")["idle"]["mode"], "idle");

  r = FetchJson(&client, "POST", "/idle", &code, {{"state", "auto"}});
  ASSERT_EQ(code, 200) << r.dump();
  idle = FetchJson(&client, "GET", "/idle");
  EXPECT_EQ(idle["mode"], "auto");
  EXPECT_EQ(idle["forced"], false);
}

TEST(MonitorServerTest, ReplayPauseAndResume) {
  MonitorHarness h;
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  MonitorClient client("127.0.0.1", h.port());
  long code = 0;
  Json r = FetchJson(&client, "POST", "/log/replay/pause", &code);
  ASSERT_EQ(code, 200) << r.dump();
  EXPECT_EQ(r["replay_paused"], true);
  EXPECT_EQ(FetchJson(&client, "GET", "/log")["replay_paused"], true);
  EXPECT_EQ(FetchJson(&client, "GET", "/idle")["replay_paused"], true);
  // Idle but paused: the log keeps its events.
  FetchJson(&client, "POST", "/idle", &code, {{"state", "idle"}});
  ASSERT_EQ(code, 200);
  WriteAndSync(&h, 2);
  const uint64_t last = h.system()->log()->last_id();
  ASSERT_TRUE(test::WaitFor([&] { return FetchJson(&client, "GET", "/idle")["idle"] == true; }));
  WaitLoopTicks(&h, 4);
  EXPECT_FALSE(ReplayedPast(&client, last)) << "paused: no background replay";
  EXPECT_GT(FetchJson(&client, "GET", "/log")["checkpoints_skipped_paused"].get<uint64_t>(), 0u);

  r = FetchJson(&client, "POST", "/log/replay/resume", &code);
  ASSERT_EQ(code, 200) << r.dump();
  EXPECT_EQ(r["replay_paused"], false);
  EXPECT_EQ(FetchJson(&client, "GET", "/log")["replay_paused"], false);
  ASSERT_TRUE(test::WaitFor([&] { return ReplayedPast(&client, last); })) << "resumed replay did not trim the log";
}

TEST(MonitorServerTest, ControlNeedsTheTokenWhenOneIsConfigured) {
  MonitorHarness h("s3cret");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  MonitorClient anonymous("127.0.0.1", h.port());
  MonitorClient wrong("127.0.0.1", h.port(), "s3cre");
  MonitorClient right("127.0.0.1", h.port(), "s3cret");
  long code = 0;
  Json r = FetchJson(&anonymous, "POST", "/flush", &code);
  EXPECT_EQ(code, 403);
  EXPECT_NE(r["message"].get<std::string>().find("Authorization: Bearer"), std::string::npos);
  FetchJson(&wrong, "POST", "/flush", &code);
  EXPECT_EQ(code, 403);
  FetchJson(&wrong, "POST", "/idle", &code, {{"state", "idle"}});
  EXPECT_EQ(code, 403);
  FetchJson(&anonymous, "POST", "/gc/run", &code);
  EXPECT_EQ(code, 403);
  FetchJson(&wrong, "POST", "/log/replay/pause", &code);
  EXPECT_EQ(code, 403);
  EXPECT_EQ(h.system()->idle_info().detector.mode, IdleMode::kAuto);
  EXPECT_FALSE(h.system()->idle_info().replay_paused);
  FetchJson(&right, "POST", "/flush", &code);
  EXPECT_EQ(code, 200);
  FetchJson(&right, "POST", "/idle", &code, {{"state", "idle"}});
  EXPECT_EQ(code, 200);
  // Reading needs no token.
  FetchJson(&anonymous, "GET", "/stats", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(FetchJson(&anonymous, "GET", "/api")["token_required"], true);
}

TEST(MonitorServerTest, ThroughputIsSampledWhileWriting) {
  MonitorHarness h("", std::chrono::milliseconds(100));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  MonitorClient client("127.0.0.1", h.port());
  test::PatternWriter writer(h.volume("vol1"), 32 << 20, 256 << 10, 2, /*once=*/false);
  double peak = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (peak == 0 && std::chrono::steady_clock::now() < deadline) {
    Json t = FetchJson(&client, "GET", "/throughput");
    if (t["available"] == true) peak = t["write_bytes_per_second"].get<double>();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  writer.Stop();
  ASSERT_TRUE(writer.status().ok()) << writer.status().ToString();
  EXPECT_GT(peak, 0.0);
  Json hist = FetchJson(&client, "GET", "/history");
  ASSERT_EQ(hist["available"], true);
  const Json& fine = hist["fine"];
  ASSERT_GE(fine["time_ms"].size(), 1u);
  ASSERT_EQ(fine["time_ms"].size(), fine["write_bytes_per_second"].size());
  // All the bytes the samples account for were really written.
  double sampled = 0;
  auto samples = h.server()->history().Fine();
  for (const auto& s : samples) sampled += s.write_bytes_per_second * s.interval_seconds;
  EXPECT_GT(sampled, 0);
  EXPECT_LE(sampled, static_cast<double>(writer.bytes_written()) * 1.0001 + 1);
}

TEST(MonitorServerTest, StartRefusesUnsafeOrBadAddresses) {
  test::TempDir dir;
  std::unique_ptr<DedupSystem> sys;
  ASSERT_TRUE(DedupSystem::Open(test::SmallMonitorOptions(dir.path()), Env::Default(), &sys).ok());
  std::unique_ptr<MonitorServer> server;
  MonitorOptions o;
  o.port = 0;
  o.host = "0.0.0.0";  // beyond loopback without a token
  Status s = MonitorServer::Start(sys.get(), o, &server);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("monitor.token"), std::string::npos);
  o.host = "no-such-host.invalid";
  s = MonitorServer::Start(sys.get(), o, &server);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();

  o.host = "127.0.0.1";
  ASSERT_TRUE(MonitorServer::Start(sys.get(), o, &server).ok());
  std::unique_ptr<MonitorServer> second;
  o.port = server->port();  // taken
  s = MonitorServer::Start(sys.get(), o, &second);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("127.0.0.1:" + std::to_string(o.port)), std::string::npos)
      << s.ToString();

  // Stopped: nothing answers any more.
  const uint16_t port = server->port();
  server->Stop();
  server->Stop();  // idempotent
  MonitorClient client("127.0.0.1", port, "", 2000);
  HttpResult r;
  EXPECT_FALSE(client.Get("/stats", &r).ok());
  server.reset();
  ASSERT_TRUE(sys->Close().ok());
}

TEST(MonitorServerTest, OptionsComeFromTheConfig) {
  Config c;
  ASSERT_TRUE(Config::Parse("monitor.host = ::1\nmonitor.port = 9123\nmonitor.token = t\n", "t.conf", &c).ok());
  ServiceOptions o;
  ASSERT_TRUE(ServiceOptions::FromConfig(c, &o).ok());
  const MonitorOptions& m = o.monitor;
  EXPECT_EQ(m.host, "::1");
  EXPECT_EQ(m.port, 9123);
  EXPECT_EQ(m.token, "t");
}

}  // namespace
}  // namespace dedupv1

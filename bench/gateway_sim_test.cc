#include "bench/gateway_sim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/shard_balance.h"
#include "core/base/chunker.h"
#include "core/base/fingerprint.h"
#include "core/base/testutil.h"
#include "index/rados_chunk_table.h"

namespace dedupv1 {
namespace bench {
namespace {

// A world small enough to compute by hand: a gateway of 100 MB/s, OSDs of
// 100 MB/s each at 3 replicas (300 MB/s of replica writes), no small writes,
// an index whose omap operations cost (almost) nothing, no round-trip waits.
GatewaySimInputs HandInputs() {
  GatewaySimInputs in;
  in.dup = 0;
  in.chunk_bytes = 10000;
  in.gw_known_mbps = 100;
  in.gw_new_mbps = 100;
  in.gw_net_mbps = 1000;
  in.rtt_ms = 0;
  in.measured_osds = 3;
  in.measured_replicas = 3;
  in.rados_bench_mbps = 300;
  in.container_vs_rados_bench = 1;
  in.replicas = 3;
  in.other_ops_per_100_chunks = 0;
  in.omap_keys_s_lo = 1e12;
  in.omap_keys_s_hi = 1e12;
  in.shards = 64;
  Status s = ValidateGatewaySimInputs(in);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return in;
}

TEST(GatewaySimTest, ShardsTouched) {
  EXPECT_DOUBLE_EQ(GatewaySim::ShardsTouched(1, 64), 1.0);
  EXPECT_DOUBLE_EQ(GatewaySim::ShardsTouched(2, 2), 1.5);  // 2 (1 - 1/4)
  EXPECT_DOUBLE_EQ(GatewaySim::ShardsTouched(0, 64), 0.0);
  EXPECT_NEAR(GatewaySim::ShardsTouched(100000, 64), 64.0, 1e-9);
}

TEST(GatewaySimTest, OmapCostIsTheLineThroughTheMeasuredPoints) {
  GatewaySimInputs in;  // defaults: 3 OSDs, 3 replicas, so one replica op = 1 / (cluster ops/s)
  GatewaySim sim(in);
  EXPECT_NEAR(sim.OmapOpSeconds(in.omap_keys_per_op_lo), in.omap_keys_per_op_lo / in.omap_keys_s_lo, 1e-12);
  EXPECT_NEAR(sim.OmapOpSeconds(in.omap_keys_per_op_hi), in.omap_keys_per_op_hi / in.omap_keys_s_hi, 1e-12);
  EXPECT_GT(sim.OmapOpSeconds(1), 0);
}

TEST(GatewaySimTest, LinearWhileOsdsArePlentifulThenOsdBandwidth) {
  GatewaySim sim(HandInputs());
  // 30 OSDs take 30 x 300 / 3 = 3000 MB/s of new data: 30 gateways of 100 MB/s.
  std::vector<Projection> rows = sim.ProjectGateways({1, 10, 30, 60}, 30);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_NEAR(rows[0].mbps, 100, 1e-6);
  EXPECT_STREQ(rows[0].bottleneck, "gateway CPU");
  EXPECT_NEAR(rows[1].mbps, 1000, 1e-6);
  EXPECT_NEAR(rows[1].efficiency, 1.0, 1e-9);
  EXPECT_NEAR(rows[1].marginal, 1.0, 1e-9);
  EXPECT_NEAR(rows[2].mbps, 3000, 0.01);
  EXPECT_NEAR(rows[2].marginal, 1.0, 1e-6);
  EXPECT_NEAR(rows[3].mbps, 3000, 0.01);  // the cluster is full
  EXPECT_STREQ(rows[3].bottleneck, "OSD bandwidth");
  EXPECT_NEAR(rows[3].efficiency, 0.5, 1e-6);
  EXPECT_NEAR(rows[3].marginal, 0.0, 1e-6);
  // Plain writes of the same bytes by 60 clients fill the same cluster: no loss.
  EXPECT_NEAR(rows[3].plain_rados_mbps, 3000, 1e-6);
  EXPECT_NEAR(rows[3].loss, 0.0, 1e-5);
}

// The index pool on OSDs of its own (a CRUSH rule): an index that costs the
// data OSDs as much time as the container bytes halves the cluster when it
// shares them; on as many OSDs of its own it bounds at about the data OSDs'
// rate, and on twice as many (or on OSDs twice as fast) the data OSDs set the
// rate and nothing is lost against plain writes to them.
TEST(GatewaySimTest, IndexPoolOnOsdsOfItsOwn) {
  GatewaySimInputs in = HandInputs();
  // No lookups, no GC hints: per new chunk a claim (2 keys), a flip (1) and
  // a usage write (1) on 3 replicas, a usage read (1) on the primary: 13
  // key-replicas x 100 chunks per MB; at 130 K keys/s per OSD and no fixed
  // cost per operation that is 0.01 s per MB, what 3 replicas of a MB of
  // containers cost (3 / 300 MB/s).
  in.lookup_share = 0;
  in.gc_hint_page = 0;
  in.omap_keys_s_lo = 130000;
  in.omap_keys_s_hi = 130000;
  in.shards = 65536;  // every shard on all 3 index OSDs: writes spread evenly
  ASSERT_TRUE(ValidateGatewaySimInputs(in).ok());
  const Projection shared = GatewaySim(in).Project(100, 3);
  EXPECT_EQ(shared.index_osds, 0);
  EXPECT_NEAR(shared.cluster_mbps, 150, 1.5);
  EXPECT_NEAR(shared.loss, 0.5, 0.01);

  in.index_osd_ratio = 1;
  const Projection own = GatewaySim(in).Project(100, 3);
  EXPECT_EQ(own.index_osds, 3);
  EXPECT_NEAR(own.cluster_mbps, 300, 3);
  EXPECT_LE(own.cluster_mbps, 300 + 1e-6);
  EXPECT_STREQ(own.bottleneck, "index OSDs");
  EXPECT_NEAR(own.plain_rados_mbps, 300, 1e-6);  // plain writes to the 3 data OSDs

  in.index_osd_ratio = 2;
  const Projection twice = GatewaySim(in).Project(100, 3);
  EXPECT_EQ(twice.index_osds, 6);
  EXPECT_NEAR(twice.cluster_mbps, 300, 1e-6);
  EXPECT_STREQ(twice.bottleneck, "OSD bandwidth");
  EXPECT_NEAR(twice.loss, 0.0, 1e-6);

  in.index_osd_ratio = 1;
  in.index_osd_speed = 2;
  EXPECT_NEAR(GatewaySim(in).Project(100, 3).cluster_mbps, 300, 1e-6);

  in.index_osd_ratio = 0.01;  // never fewer index OSDs than replicas
  in.index_osd_speed = 1;
  EXPECT_EQ(GatewaySim(in).Project(100, 30).index_osds, 3);
}

TEST(GatewaySimTest, DuplicatesCostNoContainerBandwidth) {
  GatewaySimInputs in = HandInputs();
  in.dup = 0.75;
  GatewaySim sim(in);
  // 3 OSDs store 300 MB/s of new data; a quarter of the bytes are new: 1200 MB/s of ingest.
  EXPECT_NEAR(sim.Project(10, 3).cluster_mbps, 1200, 0.01);
  EXPECT_NEAR(sim.Project(10, 3).dedup_ratio, 4.0, 1e-9);
}

TEST(GatewaySimTest, ContainerEfficiencyIsTheClusterLoss) {
  GatewaySimInputs in = HandInputs();
  in.container_vs_rados_bench = 0.5;
  Projection p = GatewaySim(in).Project(100, 30);
  EXPECT_NEAR(p.cluster_mbps, 1500, 0.01);
  EXPECT_NEAR(p.cluster_loss, 0.5, 1e-5);
  EXPECT_NEAR(p.loss, 0.5, 1e-5);
}

TEST(GatewaySimTest, IndexOpsPerChunkFallWithBatchSize) {
  GatewaySimInputs in = HandInputs();
  in.gc_hint_page = 0;  // ingest only
  in.run_bytes = 10000;  // one chunk per run: a lookup and a claim op per chunk
  GatewaySim one_per_run(in);
  // Write-back batches: 256 x 64 = 16384 keys touch (almost) all 64 shards.
  const double writeback = GatewaySim::ShardsTouched(16384, 64) / 16384;
  EXPECT_NEAR(one_per_run.Cluster(3, 64).index_ops_per_chunk, 2 + 3 * writeback, 1e-9);
  in.run_bytes = 640000;  // 64 chunks per run
  const double per_run = GatewaySim::ShardsTouched(64, 64) / 64;  // 1 - (63/64)^64 = 0.6349
  EXPECT_NEAR(per_run, 1 - std::pow(63.0 / 64, 64), 1e-12);
  GatewaySim sixty_four(in);
  EXPECT_NEAR(sixty_four.Cluster(3, 64).index_ops_per_chunk, 2 * per_run + 3 * writeback, 1e-9);
  in.run_bytes = 8388608;
  EXPECT_LT(GatewaySim(in).Cluster(3, 64).index_ops_per_chunk, sixty_four.Cluster(3, 64).index_ops_per_chunk);
  // More shards, the same batch: fewer keys per op, more ops.
  EXPECT_GT(GatewaySim(in).Cluster(3, 4096).index_ops_per_chunk, GatewaySim(in).Cluster(3, 64).index_ops_per_chunk);
}

TEST(GatewaySimTest, SkippedLookupsAndGcHintsInOpsPerChunk) {
  GatewaySimInputs in = HandInputs();
  in.gc_hint_page = 0;
  in.run_bytes = 10000;  // one chunk per run: a lookup and a claim op per chunk
  const double writeback = GatewaySim::ShardsTouched(16384, 64) / 16384;
  in.lookup_share = 0.25;
  EXPECT_NEAR(GatewaySim(in).Cluster(3, 64).index_ops_per_chunk, 1.25 + 3 * writeback, 1e-9);
  in.lookup_share = 0;
  EXPECT_NEAR(GatewaySim(in).Cluster(3, 64).index_ops_per_chunk, 1 + 3 * writeback, 1e-9);
  // GC: per new chunk two page reads, a record read and a drop, 256 a page.
  in.gc_hint_page = 256;
  const double page = GatewaySim::ShardsTouched(256 * 64, 64) / (256 * 64);
  EXPECT_NEAR(GatewaySim(in).Cluster(3, 64).index_ops_per_chunk, 1 + 3 * writeback + 4 * page, 1e-9);
}

TEST(GatewaySimTest, GatewayScopeSkipsLookupsAndClaims) {
  GatewaySimInputs in = HandInputs();
  in.cluster_scope = 0;
  GatewaySim sim(in);
  const double writeback = GatewaySim::ShardsTouched(16384, 64) / 16384;
  EXPECT_NEAR(sim.Cluster(3, 64).index_ops_per_chunk, 2 * writeback, 1e-9);
}

TEST(GatewaySimTest, HotFactorOfOneShardIsOsdsOverReplicas) {
  GatewaySim sim(HandInputs());
  // One shard on 3 of 30 OSDs, writes only: those 3 carry all, 10x the mean.
  EXPECT_NEAR(sim.HotFactor(1, 30, 0, 1), 10.0, 1e-9);
  // Reads go to the primary only: it carries everything, 30x the mean.
  EXPECT_NEAR(sim.HotFactor(1, 30, 1, 0), 30.0, 1e-9);
  // 3 OSDs, 3 replicas: every OSD holds every shard's writes.
  EXPECT_NEAR(sim.HotFactor(64, 3, 0, 1), 1.0, 1e-9);
  // Many shards spread evenly; few shards on many OSDs do not.
  EXPECT_LT(sim.HotFactor(65536, 30, 1, 1), 1.1);
  EXPECT_GT(sim.HotFactor(64, 300, 1, 1), 3.0);
}

TEST(GatewaySimTest, ShardHotSpotBoundsABigClusterWithFewShards) {
  GatewaySimInputs in;  // measured defaults: the index costs real OSD time
  in.shards = 64;
  Projection few = GatewaySim(in).Project(100, 300);
  EXPECT_STREQ(few.bottleneck, "shard hot spot");
  EXPECT_GT(few.hot, 3.0);
  // Auto picks the count with the most capacity among the powers of two.
  in.shards = 0;
  Projection best = GatewaySim(in).Project(100, 300);
  for (double s : {16.0, 64.0, 256.0, 1024.0, 4096.0, 65536.0}) {
    GatewaySimInputs fixed = in;
    fixed.shards = s;
    EXPECT_GE(best.cluster_mbps, GatewaySim(fixed).Project(100, 300).cluster_mbps * 0.9999) << s;
  }
  // When an op costs only its keys (no fixed part), more shards only spread
  // the load: auto goes past 64 and the hot spot shrinks.
  in.omap_keys_s_lo = in.omap_keys_s_hi = 100000;
  Projection spread = GatewaySim(in).Project(100, 300);
  EXPECT_GT(spread.shards, 64u);
  EXPECT_LT(spread.hot, few.hot);
}

TEST(GatewaySimTest, RoundTripsBoundAGatewayWithFewWorkers) {
  GatewaySimInputs in = HandInputs();
  in.run_bytes = 10e6;  // 0.2 core-seconds per run on 2 cores at 100 MB/s
  in.rtt_ms = 100;      // 2 rounds: 0.2 s waiting per run
  in.gw_workers = 1;
  GatewayCap g = GatewaySim(in).Gateway();
  EXPECT_NEAR(g.latency_mbps, 25, 1e-9);  // 10 MB per 0.4 s
  EXPECT_STREQ(g.limit, "gateway round trips");
  in.gw_workers = 4;  // enough runs in flight to hide the waits
  g = GatewaySim(in).Gateway();
  EXPECT_NEAR(g.mbps, 100, 1e-9);
  EXPECT_STREQ(g.limit, "gateway CPU");
}

TEST(GatewaySimTest, PerGatewayScopeLosesCrossGatewayDuplicates) {
  GatewaySimInputs in = HandInputs();
  in.dup = 0.5;
  in.dup_locality = 0;
  GatewaySim sim(in);
  EXPECT_NEAR(sim.PerGatewayDedupRatio(1), 2.0, 1e-12);
  EXPECT_NEAR(sim.PerGatewayDedupRatio(2), 1 / 0.75, 1e-12);
  EXPECT_NEAR(sim.Project(2, 30).dedup_ratio, 2.0, 1e-12);  // cluster scope: independent of G
  EXPECT_NEAR(sim.Project(100, 30).dedup_ratio, 2.0, 1e-12);
  in.cluster_scope = 0;
  EXPECT_NEAR(GatewaySim(in).Project(2, 30).dedup_ratio, 1 / 0.75, 1e-12);
}

TEST(GatewaySimTest, InputsParseAndValidate) {
  GatewaySimInputs in;
  ASSERT_TRUE(ParseGatewaySimInputs("# measured\n dup = 0.25 \n\nshards=1024 # comment\n", &in).ok());
  EXPECT_DOUBLE_EQ(in.dup, 0.25);
  EXPECT_DOUBLE_EQ(in.shards, 1024);
  Status s = ParseGatewaySimInputs("dupe = 1\n", &in);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.ToString().find("dupe"), std::string::npos);
  EXPECT_TRUE(ParseGatewaySimInputs("dup = lots\n", &in).IsInvalidArgument());
  EXPECT_TRUE(ParseGatewaySimInputs("dup\n", &in).IsInvalidArgument());
  in = GatewaySimInputs();
  in.dup = 1;
  EXPECT_TRUE(ValidateGatewaySimInputs(in).IsInvalidArgument());
  in = GatewaySimInputs();
  in.shards = 100;
  EXPECT_TRUE(ValidateGatewaySimInputs(in).IsInvalidArgument());
  in = GatewaySimInputs();
  in.gw_new_mbps = 2000;  // faster than chunking and hashing alone
  EXPECT_TRUE(ValidateGatewaySimInputs(in).IsInvalidArgument());
  EXPECT_TRUE(ValidateGatewaySimInputs(GatewaySimInputs()).ok());
  for (const InputSpec& spec : InputSpecs()) EXPECT_GT(std::strlen(spec.source), 0u) << spec.key;
}

Fingerprint Sha1Of(uint64_t i) {
  Fingerprint fp;
  ComputeFingerprint(FingerprintType::kSha1, reinterpret_cast<const uint8_t*>(&i), sizeof(i), &fp);
  return fp;
}

TEST(ShardBalanceTest, CountsDistinctKeysWithTheTablesShardFunction) {
  ShardBalance balance({1, 64});
  Fingerprint fp;
  fp.size = 20;
  fp.bytes[0] = 0xfc;  // first 6 bits 111111: shard 63 of 64
  EXPECT_EQ(RadosChunkTable::ShardOf(fp, 6), 63u);
  EXPECT_TRUE(balance.Add(fp));
  EXPECT_FALSE(balance.Add(fp));  // a shard holds one entry per fingerprint
  std::vector<ShardBalanceRow> rows = balance.Rows(1);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].keys, 1u);
  EXPECT_EQ(rows[1].max, 1u);
  EXPECT_NEAR(rows[1].max_over_mean, 64.0, 1e-9);
}

TEST(ShardBalanceTest, Sha1SpreadsLikeRandomKeys) {
  ShardBalance balance({64, 1024});
  for (uint64_t i = 0; i < 200000; i++) balance.Add(Sha1Of(i));
  std::vector<ShardBalanceRow> rows = balance.Rows(5);
  // 3,125 keys per shard: random keys give max/mean ~1.05.
  EXPECT_LT(rows[0].max_over_mean, 1.1);
  EXPECT_NEAR(rows[0].max_over_mean, rows[0].random_max_over_mean, 0.05);
  EXPECT_NEAR(rows[1].max_over_mean, rows[1].random_max_over_mean, 0.15);
}

TEST(ShardBalanceTest, FingerprintsFilesLikeTheEngine) {
  test::TempDir dir;
  std::vector<uint8_t> data = test::RandomBytes(1 << 20, 7);
  data.resize(data.size() + (256 << 10), 0);  // zeros: all-zero chunks are never stored
  {
    std::ofstream f(dir.Sub("a"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  }
  std::unique_ptr<Chunker> chunker;
  ASSERT_TRUE(Chunker::Create(ChunkerOptions(), &chunker).ok());
  std::vector<size_t> ends;
  chunker->Split(data.data(), data.size(), true, &ends);
  size_t nonzero = 0, start = 0;
  for (size_t end : ends) nonzero += IsAllZero(data.data() + start, end - start) ? 0 : 1, start = end;

  ShardBalance balance({64});
  FingerprintFilesStats stats;
  // The file twice (named and through its directory): the same fingerprints.
  ASSERT_TRUE(FingerprintFiles({dir.Sub("a"), dir.path()}, *chunker, FingerprintType::kSha1, 1ull << 30,
                               [&](const Fingerprint& fp) { balance.Add(fp); }, &stats)
                  .ok());
  EXPECT_EQ(stats.files, 2u);
  EXPECT_EQ(stats.bytes, 2 * data.size());
  EXPECT_EQ(stats.chunks, 2 * ends.size());
  EXPECT_GT(stats.zero_chunks, 0u);
  EXPECT_EQ(balance.distinct(), nonzero);
  // A byte budget stops reading.
  FingerprintFilesStats bounded;
  ASSERT_TRUE(FingerprintFiles({dir.path()}, *chunker, FingerprintType::kSha1, 100000, [](const Fingerprint&) {},
                               &bounded)
                  .ok());
  EXPECT_EQ(bounded.bytes, 100000u);
}

}  // namespace
}  // namespace bench
}  // namespace dedupv1

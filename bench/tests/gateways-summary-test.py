#!/usr/bin/env python3
"""Checks bench/gateways_summary.py (the arithmetic of bench/gateways-bench.sh)
on hand-made reports whose figures are computed by hand below."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gateways_summary as gs  # noqa: E402

MB = 1000000


def engine(size, g1, g2, ops, chunks, cpu, dedup, stored=(0, 0), ceiling=100.0, lat=None, kinds=None):
    """An engine JSON: g1/g2 = (start, end) epochs, ops = (gen1, gen2, close),
    chunks = (gen1, gen2), cpu = (gen1, gen2) s, dedup = (gen1, gen2) ratios."""
    return {"size": size, "gen1_start_epoch": g1[0], "gen1_end_epoch": g1[1], "gen2_start_epoch": g2[0],
            "gen2_end_epoch": g2[1], "gen1_mb_s": size / MB / (g1[1] - g1[0]),
            "gen2_mb_s": size / MB / (g2[1] - g2[0]), "gen1_rados_ops": ops[0], "gen2_rados_ops": ops[1],
            "close_rados_ops": ops[2], "gen1_chunks": chunks[0], "gen2_chunks": chunks[1],
            "gen1_cpu_seconds": cpu[0], "gen2_cpu_seconds": cpu[1], "gen1_dedup_ratio": dedup[0],
            "gen2_dedup_ratio": dedup[1], "gen1_stored_bytes": stored[0], "gen2_stored_bytes": stored[1],
            "ceiling_mb_s": ceiling, "ceiling_cpu_seconds": size / MB / ceiling, "rados_latency_us_by_kind": lat or {},
            "rados_ops_by_kind": kinds or {"gen1": {}, "gen2": {}}}


class Aggregate(unittest.TestCase):
    def test_window_not_sum_of_rates(self):
        # Two gateways of 100 MB each; gen 1 from t=10 to t=12 and t=11 to t=14:
        # 200 MB over 4 s = 50 MB/s (the sum of rates would be 50 + 33.3).
        a = engine(100 * MB, (10, 12), (12, 13), (10, 20, 30), (1000, 1000), (1, 1), (0.2, 0.9))
        b = engine(100 * MB, (11, 14), (14, 16), (30, 20, 10), (3000, 3000), (1, 1), (0.2, 0.9))
        r = gs.aggregate([a, b])
        self.assertAlmostEqual(r["gen1_mb_s"], 50.0)
        self.assertAlmostEqual(r["gen2_mb_s"], 200 / 4)  # 12 .. 16
        self.assertAlmostEqual(r["total_mb_s"], 400 / 6)  # 10 .. 16
        # 120 ops for 400 MB written; 8000 chunks.
        self.assertAlmostEqual(r["ops_per_gib"], 120 / (400 * MB / float(1 << 30)))
        self.assertAlmostEqual(r["ops_per_100_chunks"], 1.5)
        self.assertEqual(r["gateways"], 2)
        self.assertAlmostEqual(r["start_spread_s"], 1.0)


class ShardBalance(unittest.TestCase):
    def test_max_over_mean(self):
        b = gs.shard_balance([90, 100, 110, 100])
        self.assertEqual((b["min"], b["max"], b["keys"]), (90, 110, 400))
        self.assertAlmostEqual(b["max_over_mean"], 1.1)
        self.assertIsNone(gs.shard_balance([]))

    def test_random_keys_noise(self):
        # One shard: max = mean. Many keys on few shards: close to 1; few keys
        # on many shards: well above (8 keys on 64 shards: max >= 1 = 8x the mean).
        self.assertAlmostEqual(gs.random_max_over_mean(100, 1), 1.0)
        self.assertLess(gs.random_max_over_mean(64000, 4, trials=3), 1.03)
        self.assertGreaterEqual(gs.random_max_over_mean(8, 64, trials=3), 8.0)

    def test_counts_grouped_by_table(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("gw.gw-1/ci.00 5\ngw.gw-1/ci.01 7\ngw.gw-2/ci.00 3\ngw.gw-2/ci.01 1\n"
                    "gw.gw-2/ci.header 0\nci.00 4\ngarbage\n")
        try:
            t = gs.read_shard_counts(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(t, {"gw.gw-1/": [5, 7], "gw.gw-2/": [3, 1], "": [4]})


class Costs(unittest.TestCase):
    def test_cpu_solved_for_known_and_new(self):
        # known 1 ms/MB, new 3 ms/MB; gen 1 25% known: 0.25 + 2.25 = 2.5 ms/MB;
        # gen 2 95% known: 0.95 + 0.15 = 1.1 ms/MB; 1000 MB each.
        r = engine(1000 * MB, (0, 1), (1, 2), (0, 0, 0), (1, 1), (2.5, 1.1), (0.25, 0.95))
        c = gs.cpu_costs(r)
        self.assertAlmostEqual(c["known_s_per_mb"], 0.001)
        self.assertAlmostEqual(c["new_s_per_mb"], 0.003)
        self.assertIsNone(gs.cpu_costs(engine(MB, (0, 1), (1, 2), (0, 0, 0), (1, 1), (1, 1), (0.5, 0.5))))
        # Noise that makes the cost of new chunks come out negative: no figure.
        self.assertIsNone(gs.cpu_costs(engine(MB, (0, 1), (1, 2), (0, 0, 0), (1, 1), (1, 5), (0.5, 0.6))))

    def test_small_op_latency_weighted_by_count(self):
        # 30 omap reads at 1000 us, 10 stats at 3000 us; writes (bulk) left out.
        kinds = {"gen1": {"omap_read": 20, "stat": 10, "write": 50}, "gen2": {"omap_read": 10}}
        r = engine(MB, (0, 1), (1, 2), (0, 0, 0), (1, 1), (1, 1), (0, 1),
                   lat={"omap_read": 1000, "stat": 3000, "write": 90000}, kinds=kinds)
        self.assertAlmostEqual(gs.mean_small_latency_ms(r), (30 * 1.0 + 10 * 3.0) / 40)

    def test_rados_bench_mib_to_mb(self):
        self.assertAlmostEqual(gs.rados_bench_mb_s("x\nBandwidth (MB/sec):     100\n"), 104.8576)
        self.assertIsNone(gs.rados_bench_mb_s("nothing"))


class Summarize(unittest.TestCase):
    def test_files_to_summary_and_inputs(self):
        with tempfile.TemporaryDirectory() as raw:
            open(os.path.join(raw, "gateways-rados-bench.txt"), "w").write("Bandwidth (MB/sec): 200\n")
            one = engine(100 * MB, (0, 2), (2, 3), (10, 10, 0), (5000, 5000), (2.5e-1, 1.1e-1), (0.25, 0.95),
                         ceiling=4000)
            json.dump(one, open(os.path.join(raw, "gateways-r1-n1-gw1.json"), "w"))
            for i in (1, 2):
                json.dump(one, open(os.path.join(raw, f"gateways-r2-n2-gw{i}.json"), "w"))
            open(os.path.join(raw, "gateways-shards-r2.txt"), "w").write(
                "gw.gw-1/ci.00 10\ngw.gw-1/ci.01 30\ngw.gw-2/ci.00 30\ngw.gw-2/ci.01 10\n")
            text, inputs = gs.summarize(raw, "gateway", "distinct", "100M")
        self.assertIn("1 gateway(s): gen1 50.0, both 66.7 MB/s (1.00x", text)
        self.assertIn("2 gateway(s): gen1 100.0, both 133.3 MB/s (2.00x", text)
        self.assertIn("all tables per shard: 80 keys, max/mean 1.000 (random keys: ", text)
        parsed = dict(line.split("#")[0].split("=") for line in inputs.splitlines() if "=" in line)
        parsed = {k.strip(): float(v) for k, v in parsed.items()}
        self.assertAlmostEqual(parsed["chunk_bytes"], 20000, places=3)  # 200 MB / 10000 chunks
        self.assertAlmostEqual(parsed["rados_bench_mbps"], 209.715, places=3)
        self.assertAlmostEqual(parsed["gw_chunk_hash_mbps"], 8000)  # 100 MB per 0.025 CPU s x 2 cores
        self.assertAlmostEqual(parsed["gw_known_mbps"], 2000, places=2)  # 2 cores / 1 ms per MB
        self.assertAlmostEqual(parsed["gw_new_mbps"], 666.667, places=2)  # 2 cores / 3 ms per MB
        self.assertAlmostEqual(parsed["key_skew"], 1.0)  # 1.000 is below random keys' figure: clamped
        self.assertEqual(parsed["cluster_scope"], 0.0)
        self.assertNotIn("rtt_ms", parsed)  # no latencies in the reports

    def test_rados_bench_after_the_rounds_is_averaged(self):
        with tempfile.TemporaryDirectory() as raw:
            open(os.path.join(raw, "gateways-rados-bench.txt"), "w").write("Bandwidth (MB/sec): 200\n")
            open(os.path.join(raw, "gateways-rados-bench-after.txt"), "w").write("Bandwidth (MB/sec): 100\n")
            one = engine(100 * MB, (0, 2), (2, 3), (10, 10, 0), (5000, 5000), (2.5e-1, 1.1e-1), (0.25, 0.95),
                         ceiling=4000)
            json.dump(one, open(os.path.join(raw, "gateways-r1-n1-gw1.json"), "w"))
            text, inputs = gs.summarize(raw, "cluster", "distinct", "100M")
        self.assertIn("157.3 MB/s (mean of 209.7 before and 104.9 after the rounds)", text)
        parsed = dict(line.split("#")[0].split("=") for line in inputs.splitlines() if "=" in line)
        parsed = {k.strip(): float(v) for k, v in parsed.items()}
        self.assertAlmostEqual(parsed["rados_bench_mbps"], 157.286, places=2)

    def test_cpu_bound_of_the_shared_cores(self):
        # rados bench at 209.715 MB/s kept 1.5 of 2 cores busy (300 of 400
        # ticks): 7.153 ms of CPU per MB. The gateway: 0.25 CPU s per 100 MB
        # of generation 1 = 2.5 ms per MB. 2 cores / 9.653 ms per MB = 207.2
        # MB/s at most, 0.988 of rados bench.
        with tempfile.TemporaryDirectory() as raw:
            open(os.path.join(raw, "gateways-rados-bench.txt"), "w").write("Bandwidth (MB/sec): 200\n")
            open(os.path.join(raw, "gateways-rados-bench.txt.cpu"), "w").write("1000 500 1300 600 2\n")
            one = engine(100 * MB, (0, 2), (2, 3), (10, 10, 0), (5000, 5000), (2.5e-1, 1.1e-1), (0.25, 0.95),
                         ceiling=4000)
            one["index_ops_by_step"] = {"gen1": {"claim": [10, 5000], "journal": [2, 2]}}
            json.dump(one, open(os.path.join(raw, "gateways-r1-n1-gw1.json"), "w"))
            text, inputs = gs.summarize(raw, "cluster", "distinct", "100M")
        self.assertIn("rados bench kept 75% of 2 cores busy, 7.15 ms of CPU per MB stored", text)
        self.assertIn("own CPU per MB of generation 1 (1-gateway rounds): 2.50 ms", text)
        self.assertIn("at most 0.99 of rados bench", text)
        parsed = dict(line.split("#")[0].split("=") for line in inputs.splitlines() if "=" in line)
        parsed = {k.strip(): float(v) for k, v in parsed.items()}
        self.assertEqual(parsed["claim_keys"], 1.0)  # journaled claims: the entry only
        self.assertEqual(parsed["gc_hint_page"], 0.0)

    def test_omap_rates_of_the_run_feed_the_simulator(self):
        with tempfile.TemporaryDirectory() as raw:
            open(os.path.join(raw, "gateways-rados-bench.txt"), "w").write("Bandwidth (MB/sec): 200\n")
            open(os.path.join(raw, "gateways-omap-rates.txt"), "w").write(
                " 16 keys/op 1 caller(s) claim     41000 keys/s   62.5 ops per 1000 keys\n"
                " 16 keys/op 1 caller(s) flip      44000 keys/s   62.5 ops per 1000 keys\n"
                "256 keys/op 1 caller(s) flip      86000 keys/s    3.9 ops per 1000 keys\n"
                " 16 keys/op 4 caller(s) flip      46000 keys/s   62.5 ops per 1000 keys\n"
                "256 keys/op 4 caller(s) flip     106000 keys/s    3.9 ops per 1000 keys\n")
            one = engine(100 * MB, (0, 2), (2, 3), (10, 10, 0), (5000, 5000), (2.5e-1, 1.1e-1), (0.25, 0.95),
                         ceiling=4000)
            json.dump(one, open(os.path.join(raw, "gateways-r1-n1-gw1.json"), "w"))
            _, inputs = gs.summarize(raw, "cluster", "distinct", "100M")
        parsed = dict(line.split("#")[0].split("=") for line in inputs.splitlines() if "=" in line)
        parsed = {k.strip(): float(v) for k, v in parsed.items()}
        self.assertEqual(parsed["omap_keys_per_op_lo"], 16)
        self.assertEqual(parsed["omap_keys_s_lo"], 45000)  # flips only, mean of 1 and 4 callers
        self.assertEqual(parsed["omap_keys_per_op_hi"], 256)
        self.assertEqual(parsed["omap_keys_s_hi"], 96000)

    def test_engine_faster_than_ceiling_left_out(self):
        # The engine at 1 ms per MB of known chunks, the ceiling at 2 ms per MB:
        # inconsistent (noise), so both engine figures stay at the model's defaults.
        one = engine(100 * MB, (0, 2), (2, 3), (10, 10, 0), (5000, 5000), (0.25, 0.11), (0.25, 0.95))
        one["ceiling_cpu_seconds"] = 0.2
        inputs = gs.simulator_inputs([(1, 1, [one])], 100.0, None, "gateway")
        self.assertAlmostEqual(inputs["gw_chunk_hash_mbps"][0], 1000)
        self.assertNotIn("gw_known_mbps", inputs)
        self.assertNotIn("gw_new_mbps", inputs)

    def test_key_skew_is_excess_over_random_keys(self):
        one = engine(100 * MB, (0, 2), (2, 3), (10, 10, 0), (5000, 5000), (0.25, 0.11), (0.25, 0.95))
        balance = gs.shard_balance([100] * 63 + [300])  # max/mean 300 / 103.125
        inputs = gs.simulator_inputs([(1, 1, [one])], 100.0, balance, "cluster")
        expected = (300 / 103.125) / gs.random_max_over_mean(6600, 64)
        self.assertAlmostEqual(inputs["key_skew"][0], expected)
        self.assertGreater(inputs["key_skew"][0], 2.0)
        self.assertEqual(inputs["cluster_scope"][0], 1.0)


if __name__ == "__main__":
    unittest.main()

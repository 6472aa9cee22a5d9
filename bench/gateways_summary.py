#!/usr/bin/env python3
"""The arithmetic of bench/gateways-bench.sh: from the raw reports of one run
(rados bench, one dedupv1_bench engine JSON per gateway and round, omap key
counts per chunk-table shard) it writes the summary and an inputs file for
dedupv1_gateway_sim (bench/gateway_sim.h) with the costs measured in the run.

    gateways_summary.py RAW_DIR SUMMARY INPUTS SCOPE SEEDS SIZE

Raw files (RAW_DIR):
    gateways-rados-bench.txt        `rados bench ... write` output
    gateways-r<R>-n<N>-gw<I>.json   engine JSON of gateway I in round R (N gateways)
    gateways-shards-r<R>.txt        "<object> <keys>" per chunk-table object of round R

Units as in the engine: MB = 10^6 bytes; rados bench reports MiB/s. Kept
free of side effects besides the two files so that bench/tests can check
the figures on hand-made reports (gateways-summary-test.py).
"""
import glob
import json
import os
import random
import re
import sys

MIB_IN_MB = 1048576 / 1e6
GIB = float(1 << 30)
# Point operations: one round trip each, no bulk data (omap writes carry
# a write-back batch of hundreds of keys, writes whole containers).
SMALL_KINDS = ("read", "omap_read", "stat")


def aggregate(runs):
    """Totals of the gateways of one round, which wrote at the same time.

    Aggregate MB/s of a generation is all gateways' bytes over the window from
    the first start to the last end (not the sum of per-gateway rates, which
    would count overlapping time once per gateway)."""
    def window(a, b):
        return max(r[b] for r in runs) - min(r[a] for r in runs)

    size = sum(r["size"] for r in runs)
    ops = sum(r["gen1_rados_ops"] + r["gen2_rados_ops"] + r["close_rados_ops"] for r in runs)
    chunks = sum(r["gen1_chunks"] + r["gen2_chunks"] for r in runs)
    return {
        "gateways": len(runs),
        "gen1_mb_s": size / 1e6 / window("gen1_start_epoch", "gen1_end_epoch"),
        "gen2_mb_s": size / 1e6 / window("gen2_start_epoch", "gen2_end_epoch"),
        "total_mb_s": 2 * size / 1e6 / window("gen1_start_epoch", "gen2_end_epoch"),
        "per_gateway_gen1": [r["gen1_mb_s"] for r in runs],
        "per_gateway_gen2": [r["gen2_mb_s"] for r in runs],
        "ops_per_gib": ops / (2 * size / GIB),
        "ops_per_100_chunks": 100.0 * ops / max(1, chunks),
        "stored_bytes": sum(r["gen1_stored_bytes"] + r["gen2_stored_bytes"] for r in runs),
        "written_bytes": 2 * size,
        "chunks": chunks,
        # How far apart the gateways began generation 1 (--start-at aligns them when all are ready).
        "start_spread_s": max(r["gen1_start_epoch"] for r in runs) - min(r["gen1_start_epoch"] for r in runs),
    }


def shard_balance(counts):
    """max/mean of keys per shard; counts: list of key counts, one per shard."""
    if not counts:
        return None
    mean = sum(counts) / len(counts)
    return {"shards": len(counts), "keys": sum(counts), "min": min(counts), "max": max(counts),
            "mean": mean, "max_over_mean": max(counts) / mean if mean else float("nan")}


def random_max_over_mean(keys, shards, trials=20, seed=1):
    """The max/mean keys per shard that |keys| uniformly random keys give,
    averaged over |trials| fixed-seed trials: what sampling noise alone gives
    (next to the measured figure, as `dedupv1_gateway_sim shard-balance` does)."""
    rng = random.Random(seed)
    total = 0.0
    for _ in range(trials):
        counts = [0] * shards
        for _ in range(keys):
            counts[rng.randrange(shards)] += 1
        total += max(counts) / (keys / shards)
    return total / trials


def read_shard_counts(path):
    """{table prefix: [keys per shard]} from "<object> <keys>" lines; the
    prefix is what precedes "ci." ("gw.NAME/" for a slot's table)."""
    tables = {}
    with open(path) as f:
        lines = f.read().splitlines()
    for line in lines:
        parts = line.split()
        if len(parts) != 2:
            continue
        m = re.match(r"^(.*)ci\.([0-9a-f]+)$", parts[0])
        if m:
            tables.setdefault(m.group(1), []).append(int(parts[1]))
    return tables


def cpu_costs(run):
    """CPU seconds per MB of known and of new chunks, solved from the two
    generations of one gateway run: c_g = d_g k + (1 - d_g) n with d_g the
    share of generation g the engine removed. None when they do not solve
    (equal shares, or a cost that comes out <= 0: noise)."""
    c1 = run["gen1_cpu_seconds"] / (run["size"] / 1e6)
    c2 = run["gen2_cpu_seconds"] / (run["size"] / 1e6)
    d1, d2 = run["gen1_dedup_ratio"], run["gen2_dedup_ratio"]
    if abs(d2 - d1) < 1e-6:
        return None
    slope = (c2 - c1) / (d2 - d1)  # k - n
    new = c1 - d1 * slope
    known = new + slope
    if new <= 0 or known <= 0:
        return None
    return {"known_s_per_mb": known, "new_s_per_mb": new}


def mean_small_latency_ms(run):
    """Op-weighted mean latency (ms) of the point operations (SMALL_KINDS)
    during generations 1 and 2: the round trip the model calls rtt_ms."""
    lat = run.get("rados_latency_us_by_kind", {})
    kinds = run["rados_ops_by_kind"]
    total_us = total_ops = 0.0
    for k in SMALL_KINDS:
        if k in lat:
            n = kinds["gen1"].get(k, 0) + kinds["gen2"].get(k, 0)
            total_us += lat[k] * n
            total_ops += n
    return total_us / total_ops / 1000 if total_ops else None


def rados_bench_mb_s(text):
    m = re.search(r"^Bandwidth \(MB/sec\):\s*([\d.]+)", text, re.M)
    return float(m.group(1)) * MIB_IN_MB if m else None


def load_rounds(raw):
    """[(round, gateways, [engine JSON per gateway])] in the order run."""
    rounds = {}
    for path in glob.glob(os.path.join(raw, "gateways-r*-n*-gw*.json")):
        m = re.search(r"gateways-r(\d+)-n(\d+)-gw(\d+)\.json$", path)
        r, n, i = int(m.group(1)), int(m.group(2)), int(m.group(3))
        with open(path) as f:
            rounds.setdefault((r, n), []).append((i, json.load(f)))
    return [(r, n, [j for _, j in sorted(v, key=lambda x: x[0])]) for (r, n), v in sorted(rounds.items())]


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def index_steps_per_gib(rounds):
    """[(step, ops per GiB, keys per op)] of generation 1 over the 1-gateway
    runs that report index_ops_by_step (cluster scope); [] otherwise."""
    ones = [runs[0] for _, n, runs in rounds if n == 1 and runs[0].get("index_ops_by_step", {}).get("gen1")]
    if not ones:
        return []
    gib = sum(r["size"] for r in ones) / float(1 << 30)
    totals = {}
    for r in ones:
        for name, (ops, keys) in r["index_ops_by_step"]["gen1"].items():
            t = totals.setdefault(name, [0, 0])
            t[0] += ops
            t[1] += keys
    return [(name, ops / gib, keys / ops if ops else 0.0) for name, (ops, keys) in totals.items()]


def simulator_inputs(rounds, bench_mb_s, balance, scope, rates=None):
    """{sim key: (value, source)} of what this run measured."""
    ones = [runs[0] for _, n, runs in rounds if n == 1]
    cores = 2.0  # the engine's dedup threads and this machine's cores
    out = {}
    chunks = sum(r["gen1_chunks"] + r["gen2_chunks"] for _, _, runs in rounds for r in runs)
    written = sum(2 * r["size"] for _, _, runs in rounds for r in runs)
    if chunks:
        out["chunk_bytes"] = (written / chunks, "bytes written / chunks cut, all gateways and rounds")
    if bench_mb_s:
        out["rados_bench_mbps"] = (bench_mb_s, "rados bench 4 MiB -t 16 of the same bytes, this run")
    # CPU-based like the engine's figures below: on a busy machine the
    # wall-clock ceiling and CPU seconds per MB do not compare.
    ceiling = mean(cores * r["size"] / 1e6 / r["ceiling_cpu_seconds"] for r in ones
                   if r.get("ceiling_cpu_seconds", 0) > 0)
    if ceiling:
        out["gw_chunk_hash_mbps"] = (ceiling, "1-gateway runs: chunk+hash ceiling, MB per CPU second x 2 cores")
    costs = [c for c in (cpu_costs(r) for r in ones) if c]
    if costs:
        out["gw_known_mbps"] = (cores / mean(c["known_s_per_mb"] for c in costs),
                                "1-gateway runs: CPU s per MB solved from gen 1 and gen 2, x 2 cores")
        out["gw_new_mbps"] = (cores / mean(c["new_s_per_mb"] for c in costs),
                              "1-gateway runs: CPU s per MB solved from gen 1 and gen 2, x 2 cores")
    if "gw_known_mbps" in out and "gw_chunk_hash_mbps" in out and \
            out["gw_known_mbps"][0] > out["gw_chunk_hash_mbps"][0]:
        # Noise made the engine faster than chunking and hashing alone: the
        # simulator refuses that; keep its defaults for both engine figures.
        del out["gw_known_mbps"], out["gw_new_mbps"]
    rtt = mean(mean_small_latency_ms(r) for r in ones)
    if rtt:
        out["rtt_ms"] = (rtt, "1-gateway runs: mean latency of reads, omap reads, stats (RadosOpTimer)")
    if balance:
        # The model's skew is that of the shard function on a large store; a
        # small run's max/mean is mostly sampling noise, so the excess over
        # what random keys of the same count give is what carries over.
        random_mm = random_max_over_mean(balance["keys"], balance["shards"])
        out["key_skew"] = (max(1.0, balance["max_over_mean"] / random_mm),
                           f"max/mean keys per shard {balance['max_over_mean']:.3f} over random keys' "
                           f"{random_mm:.3f}, {balance['shards']} shards, this run")
    lookups = [r["index_ops_by_step"]["gen1"].get("lookup", [0, 0])[1] / r["gen1_chunks"] for r in ones
               if r.get("index_ops_by_step", {}).get("gen1") and r.get("gen1_chunks")]
    if scope == "cluster" and lookups:
        share = min(1.0, mean(lookups))
        out["lookup_share"] = (share, "1-gateway runs: keys looked up in the shared index per gen 1 chunk")
        out["rounds_per_run"] = (1 + share, "1-gateway runs: the claim, plus the lookup of lookup_share of the runs")
    journaled = [r for r in ones if r.get("index_ops_by_step", {}).get("gen1", {}).get("journal")]
    if scope == "cluster" and journaled:
        # Claims journaled per run (index/claim_journal.h): the entry is the
        # claim's only key, and GC meets no hint of a new chunk.
        out["claim_keys"] = (1.0, "1-gateway runs journal their claims: the entry only, no GC hint")
        out["gc_hint_page"] = (0.0, "1-gateway runs journal their claims: no GC hint per new chunk")
    out["cluster_scope"] = (1.0 if scope == "cluster" else 0.0, f"storage.rados.dedup-scope = {scope}")
    if rates and len(rates) >= 2:
        lo, hi = min(rates), max(rates)
        # The simulator's rule: an operation with more keys costs no less.
        if hi > lo and lo / rates[lo] <= hi / rates[hi]:
            src = "MeasureKeysPerOp on this run's cluster: compare-and-set flips, mean of 1 and 4 callers"
            out["omap_keys_per_op_lo"] = (float(lo), src)
            out["omap_keys_s_lo"] = (rates[lo], src)
            out["omap_keys_per_op_hi"] = (float(hi), src)
            out["omap_keys_s_hi"] = (rates[hi], src)
    return out


def omap_rates(raw):
    """{keys per op: mean keys/s of flips} from the MeasureKeysPerOp output of
    this run's cluster (lines like " 16 keys/op 1 caller(s) flip  44615
    keys/s ..."); {} without it. Flips are the compare-and-set writes the
    model prices (claims and flips alike)."""
    path = os.path.join(raw, "gateways-omap-rates.txt")
    if not os.path.exists(path):
        return {}
    rates = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*(\d+) keys/op (\d+) caller\(s\) flip\s+(\d+) keys/s", line)
            if m:
                rates.setdefault(int(m.group(1)), []).append(float(m.group(3)))
    return {k: mean(v) for k, v in rates.items()}


def rados_bench_cpu(raw):
    """(busy share of the machine's cores, cores) while rados bench ran,
    the mean over its runs' .cpu files (before and after the rounds); None
    without them."""
    shares, cores = [], 0
    for name in ("gateways-rados-bench.txt.cpu", "gateways-rados-bench-after.txt.cpu"):
        path = os.path.join(raw, name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            v = [float(x) for x in f.read().split()]
        if len(v) != 5 or v[2] + v[3] <= v[0] + v[1]:
            continue
        shares.append((v[2] - v[0]) / ((v[2] + v[3]) - (v[0] + v[1])))
        cores = int(v[4])
    return (mean(shares), cores) if shares else None


def cpu_bound_lines(raw, rounds, bench):
    """What the shared cores alone allow: rados bench's CPU per MB against a
    gateway's own CPU per MB of generation 1, both on the same cores."""
    cpu = rados_bench_cpu(raw)
    ones = [runs[0] for _, n, runs in rounds if n == 1 and runs[0].get("gen1_cpu_seconds")]
    if not cpu or not bench or not ones:
        return []
    share, cores = cpu
    osd_ms = share * cores / bench * 1000  # CPU ms per MB while rados bench stores it (OSDs and client)
    gw_ms = mean(r["gen1_cpu_seconds"] / (r["size"] / 1e6) for r in ones) * 1000
    # Both costs on the same cores: at most cores / (osd + gateway) per MB,
    # never more than rados bench itself.
    bound = min(1.0, cores * 1000 / (osd_ms + gw_ms) / bench)
    return ["", "the shared cores: rados bench kept %.0f%% of %d cores busy, %.2f ms of CPU per MB stored;" %
            (100 * share, cores, osd_ms),
            "    a gateway's own CPU per MB of generation 1 (1-gateway rounds): %.2f ms; both on the same cores," % gw_ms,
            "    generation 1 reaches at most %.2f of rados bench even if the OSDs spent nothing on its index" % bound]


def format_inputs(inputs):
    lines = ["# dedupv1_gateway_sim --inputs: costs measured by bench/gateways-bench.sh"]
    for k, (v, src) in inputs.items():
        lines.append(f"{k} = {v:.6g}  # {src}")
    return "\n".join(lines) + "\n"


def summarize(raw, scope, seeds, size, machine=""):
    """The summary text and the simulator inputs of the run in |raw|."""
    with open(os.path.join(raw, "gateways-rados-bench.txt")) as f:
        text = f.read()
    bench = before = rados_bench_mb_s(text)
    after = None
    after_path = os.path.join(raw, "gateways-rados-bench-after.txt")
    if os.path.exists(after_path):  # a second run after the rounds: the mean of both
        with open(after_path) as f:
            after = rados_bench_mb_s(f.read())
        if before and after:
            bench = (before + after) / 2
    rounds = load_rounds(raw)
    out = [f"# dedupv1 through 1, 2, 3 gateways on one cluster (bench/gateways-bench.sh) {machine}".rstrip(),
           f"# scope {scope}; seeds {seeds}; {size} per generation per gateway; private bluestore cluster,",
           "# 3 OSDs on sparse files of one disk, size 3; every process on the same 2 cores", ""]
    out.append(f"rados bench 4 MiB -t 16, as many bytes as the largest round: "
               + (f"{bench:.1f} MB/s" if bench else "no figure")
               + (f" (mean of {before:.1f} before and {after:.1f} after the rounds)" if after and before else ""))
    out.append("")
    out.append("MB/s = 10^6 bytes/s incl. sync; total = all gateways' bytes over the window first start .. last end")
    out.append(f"{'round':>5} {'gw':>3} {'gen1 MB/s':>9} {'gen2 MB/s':>9} {'both MB/s':>9} {'vs bench':>8} "
               f"{'per gw gen1':>20} {'ops/GiB':>8} {'ops/100ch':>9} {'stored/written':>14} {'ceiling':>8} {'spread s':>8}")
    by_n = {}
    for r, n, runs in rounds:
        a = aggregate(runs)
        by_n.setdefault(n, []).append(a)
        per = "/".join(f"{x:.0f}" for x in a["per_gateway_gen1"])
        ceil = mean(x["ceiling_mb_s"] for x in runs)
        vs = f"{a['gen1_mb_s'] / bench:.2f}" if bench else "-"
        out.append(f"{r:>5} {n:>3} {a['gen1_mb_s']:>9.1f} {a['gen2_mb_s']:>9.1f} {a['total_mb_s']:>9.1f} {vs:>8} "
                   f"{per:>20} {a['ops_per_gib']:>8.1f} {a['ops_per_100_chunks']:>9.3f} "
                   f"{a['stored_bytes'] / a['written_bytes']:>14.3f} {ceil:>8.0f} {a['start_spread_s']:>8.2f}")
    out.append("")
    out.append("mean over rounds of the same gateway count (gen1 MB/s, both MB/s, scaling vs 1 gateway):")
    base = mean(a["total_mb_s"] for a in by_n.get(1, []))
    for n in sorted(by_n):
        t = mean(a["total_mb_s"] for a in by_n[n])
        g1 = mean(a["gen1_mb_s"] for a in by_n[n])
        sc = f"{t / base:.2f}x" if base else "-"
        out.append(f"    {n} gateway(s): gen1 {g1:.1f}, both {t:.1f} MB/s ({sc}; {len(by_n[n])} round(s))")
    out.extend(cpu_bound_lines(raw, rounds, bench))
    balance = None
    out.append("")
    out.append("chunk-table shards after the first round with the most gateways (keys per shard):")
    shard_files = sorted(glob.glob(os.path.join(raw, "gateways-shards-r*.txt")))
    for path in shard_files:
        tables = read_shard_counts(path)
        union = None
        for prefix, counts in sorted(tables.items()):
            b = shard_balance(counts)
            out.append(f"    table '{prefix}ci.*': {b['shards']} shards, {b['keys']} keys, min {b['min']}, "
                       f"max {b['max']}, mean {b['mean']:.1f}, max/mean {b['max_over_mean']:.3f} "
                       f"(random keys: {random_max_over_mean(b['keys'], b['shards']):.3f})")
            union = counts if union is None else [x + y for x, y in zip(union, counts)]
        if union and len(tables) > 1:
            b = shard_balance(union)
            out.append(f"    all tables per shard: {b['keys']} keys, max/mean {b['max_over_mean']:.3f} "
                       f"(random keys: {random_max_over_mean(b['keys'], b['shards']):.3f})")
        if union:
            balance = shard_balance(union)
    steps = index_steps_per_gib(rounds)
    if steps:
        out.append("")
        out.append("shared chunk index operations per GiB of generation 1 by step, 1-gateway rounds "
                   "(ops, keys per op):")
        out.append("    " + ", ".join(f"{name} {ops:.0f} ({keys:.1f})" for name, ops, keys in steps))
    inputs = simulator_inputs(rounds, bench, balance, scope, omap_rates(raw))
    return "\n".join(out) + "\n", format_inputs(inputs)


def main(argv):
    if len(argv) != 7:
        sys.stderr.write(__doc__)
        return 2
    raw, summary, inputs, scope, seeds, size = argv[1:7]
    text, inp = summarize(raw, scope, seeds, size)
    open(summary, "w").write(text)
    open(inputs, "w").write(inp)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

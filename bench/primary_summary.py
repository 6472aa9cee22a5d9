#!/usr/bin/env python3
"""The figures of bench/primary-bench.sh: reads its fio reports and store
figures from OUT and prints one JSON document (targets, then the issue's
ratios measured in the same run).

  primary_summary.py OUT SIZE REGION ROUNDS RUNTIME
"""
import json
import os
import sys

TARGETS = ["inline", "selective", "off", "out-of-band", "rdwr"]


def load(out, target, name):
    with open(os.path.join(out, "primary-%s-%s.json" % (target, name))) as f:
        return json.load(f)["jobs"][0]


def pct(side, p):
    return side["clat_ns"]["percentile"]["%.6f" % p] / 1000.0


def target_figures(out, target, size):
    fill = load(out, target, "fill")
    with open(os.path.join(out, "primary-%s-trace.json" % target)) as f:
        trace = json.load(f)
    lat, mixed, read = load(out, target, "latency"), load(out, target, "mixed"), load(out, target, "read")
    with open(os.path.join(out, "primary-%s-stats.json" % target)) as f:
        stats = json.load(f)
    written = fill["write"]["io_bytes"] + trace["write_bytes"]
    r = {
        "written_bytes": written,
        "write_p50_us": pct(lat["write"], 50),
        "write_p99_us": pct(lat["write"], 99),
        "write_iops_qd1": lat["write"]["iops"],
        "mixed_iops": mixed["read"]["iops"] + mixed["write"]["iops"],
        "mixed_write_p99_us": pct(mixed["write"], 99),
        "mixed_read_p99_us": pct(mixed["read"], 99),
        "trace_write_p50_us": trace["write_p50_us"],
        "trace_write_p99_us": trace["write_p99_us"],
        "trace_read_p99_us": trace["read_p99_us"],
        "trace_iops": trace["iops"],
        "read_mbps": read["read"]["bw_bytes"] / 1e6,
    }
    if target == "rdwr":
        r["stored_bytes"] = stats["stored_bytes"]
    else:
        d = stats["dedup"]
        r["stored_bytes"] = d["stored_bytes"]
        r["logical_bytes"] = d["logical_bytes"]
        r["stored_again_bytes"] = d["stored_again_bytes"]
        r["selective"] = {k[len("selective_"):]: v for k, v in d.items() if k.startswith("selective_")}
        # After the out-of-band pass (if any) and two GC rounds: the container
        # store's bytes then (GC's used_bytes; stored_bytes only ever grows).
        with open(os.path.join(out, "primary-%s-stats-gc.json" % target)) as f:
            after = json.load(f)
        r["used_bytes_after_gc"] = after["gc"]["used_bytes"]
        r["background"] = {k[len("background_"):]: v for k, v in after["dedup"].items()
                           if k.startswith("background_")}
    # Bytes the dedup store did not have to store of those written (until GC
    # gives overwritten ones back). A plain LUN overwrites in place: for it
    # this share would say nothing about dedup, so it has none.
    if target != "rdwr":
        r["saved_share"] = max(0.0, 1.0 - r["stored_bytes"] / written) if written else 0.0
        # What dedup saves of the data the LUN holds at the end (the fill wrote
        # every block: SIZE logical bytes).
        r["saved_share_after_gc"] = max(0.0, 1.0 - r["used_bytes_after_gc"] / size)
    return r


def main():
    out, size, region, rounds, runtime = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    t = {name: target_figures(out, name, size) for name in TARGETS}
    rd = t["rdwr"]
    saved = {name: t[name]["written_bytes"] - t[name]["stored_bytes"] for name in TARGETS}
    gc_saved = {name: size - t[name]["used_bytes_after_gc"] for name in TARGETS if name != "rdwr"}
    ratios = {
        "selective_p99_vs_rdwr": t["selective"]["write_p99_us"] / rd["write_p99_us"],
        "selective_trace_p99_vs_rdwr": t["selective"]["trace_write_p99_us"] / rd["trace_write_p99_us"],
        "inline_trace_p99_vs_rdwr": t["inline"]["trace_write_p99_us"] / rd["trace_write_p99_us"],
        "inline_p99_vs_rdwr": t["inline"]["write_p99_us"] / rd["write_p99_us"],
        "off_p99_vs_rdwr": t["off"]["write_p99_us"] / rd["write_p99_us"],
        "selective_p50_vs_rdwr": t["selective"]["write_p50_us"] / rd["write_p50_us"],
        "inline_p50_vs_rdwr": t["inline"]["write_p50_us"] / rd["write_p50_us"],
        "selective_savings_of_inline": saved["selective"] / saved["inline"] if saved["inline"] > 0 else 0.0,
        "selective_read_vs_inline": t["selective"]["read_mbps"] / t["inline"]["read_mbps"],
        # Out-of-band (DEDIS's targets): write latency against rdwr's, and
        # the savings after its pass (and GC) against inline's after GC.
        "out_of_band_p50_vs_rdwr": t["out-of-band"]["write_p50_us"] / rd["write_p50_us"],
        "out_of_band_p99_vs_rdwr": t["out-of-band"]["write_p99_us"] / rd["write_p99_us"],
        "out_of_band_trace_p99_vs_rdwr": t["out-of-band"]["trace_write_p99_us"] / rd["trace_write_p99_us"],
        "out_of_band_savings_of_inline_after_pass": (
            gc_saved["out-of-band"] / gc_saved["inline"] if gc_saved["inline"] > 0 else 0.0),
        "out_of_band_savings_of_inline_before_pass": (
            saved["out-of-band"] / saved["inline"] if saved["inline"] > 0 else 0.0),
    }
    json.dump({"size": size, "region": region, "rounds": rounds, "runtime_s": runtime, "cores": os.cpu_count(),
               "targets": t, "ratios": ratios}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()

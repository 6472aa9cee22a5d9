#!/usr/bin/env python3
"""Turns the raw benchmark reports (RESULTS/raw/*) into CSV files for the
charts (bench/plot.sh) and RESULTS/summary.md: tables with the machine facts
and the issue's targets next to what was measured.

    summarize.py RESULTS_DIR

Stages whose raw files are missing are left out. Every ratio in the summary
is between numbers of the same stage, measured side by side in one run.
"""
import csv
import json
import os
import re
import sys

RES = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
RAW = os.path.join(RES, "raw")


def raw(name):
    return os.path.join(RAW, name)


def load(name):
    try:
        with open(raw(name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_lines(name):
    try:
        with open(raw(name)) as f:
            return [json.loads(l) for l in f if l.strip()]
    except (OSError, ValueError):
        return []


def write_csv(name, header, rows):
    with open(os.path.join(RES, name), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def mib(b):
    return f"{b / 2**20:,.1f} MiB"


def human(b):
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= div:
            return f"{b / div:.2f} {unit}"
    return f"{b} B"


def rate(x, unit):
    for p, d in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= d:
            return f"{x / d:.2f} {p}{unit}"
    return f"{x:.1f} {unit}"


def dur(x, unit="ns"):
    ns = x * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]
    for u, d in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= d:
            return f"{ns / d:.3g} {u}"
    return f"{ns:.3g} ns"


def met(ok):
    return "**met**" if ok else "**not met**"


out = []  # lines of summary.md


def p(line=""):
    out.append(line)


def table(header, rows):
    p("| " + " | ".join(header) + " |")
    p("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        p("| " + " | ".join(str(c) for c in r) + " |")
    p()


# --- machine ---------------------------------------------------------------------------

machine = load("machine.json") or {}
marks = load_lines("stages.jsonl")
stage_load = {}
for m in marks:  # the last start/end of each stage wins
    stage_load.setdefault(m["stage"], {})[m["event"]] = m


def stage_note(stage):
    s = stage_load.get(stage, {})
    if "start" in s and "end" in s:
        return (f"Load average (1 min) {s['start']['load1']} at the start of the stage, "
                f"{s['end']['load1']} at the end; {s['end']['time'] - s['start']['time']} s.")
    return ""


NOISE = ("Shared machine: {n} cores, other jobs were running (see the load averages); absolute numbers "
         "move by tens of percent from run to run, ratios measured side by side are steadier.")

p("# Benchmark results")
p()
p("Written by `bench/summarize.py` from `bench/results/raw/` (see docs/benchmarks.md for what each "
  "number means and how it was measured).")
p()
v = machine.get("versions", {})
table(["fact", "value"], [
    ["date", machine.get("date", "?")],
    ["CPU", f"{machine.get('cpu_model', '?')} ({machine.get('cpu_mhz', '?')} MHz), SHA-NI: "
            f"{'yes' if machine.get('sha_ni') else 'no'}"],
    ["nproc", machine.get("nproc", "?")],
    ["memory", f"{machine.get('mem_total_gib', '?')} GiB"],
    ["OS / kernel", f"{machine.get('os', '?')} / {machine.get('kernel', '?')}"],
    ["disk / file system", f"{machine.get('disk', '?')} / {machine.get('filesystem', '?')} (virtual disk)"],
    ["compiler / build", f"{machine.get('compiler', '?')} / {machine.get('build_type') or 'RelWithDebInfo (the project default)'}"
                         ", -O2 -march=x86-64-v2 -msse4.2 -msha"],
    ["dedupv1 commit", machine.get("git", "?")],
    ["load at start", machine.get("load_at_start", "?")],
    ["tgt / libiscsi", f"{v.get('tgt', '?')} / {v.get('libiscsi', '?')}"],
    ["peers", f"{v.get('borg') or 'borg: -'}; {v.get('restic') or 'restic: -'}; casync {v.get('casync') or '-'}"],
    ["tools", f"{v.get('fio') or 'fio: -'}; {v.get('gnuplot') or 'gnuplot: -'}; "
              f"libbenchmark {v.get('libbenchmark', '?')}; {v.get('openssl', '')}"],
])
nproc = machine.get("nproc", "?")
targets = []  # (target, measured, verdict)

# --- micro ---------------------------------------------------------------------------------

micro = load("micro.json")
fio_micro = load_lines("fio-micro.json")
if micro:
    p("## 1. Micro benchmarks (`dedupv1_micro_bench`)")
    p()
    p(NOISE.format(n=nproc) + " " + stage_note("micro"))
    p("Single-threaded rates are per CPU second of the benchmark thread (Google Benchmark's default), "
      "so time taken by other jobs counts less; the wall time per operation is shown too. Index lookups "
      "from the table are per wall second (they wait for the disk).")
    p()
    rows, csv_rows = [], []
    cold = {}
    cold_entries = 0
    for b in micro["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("run_type") == "iteration" and b.get("repetitions", 1) > 1:
            continue
        name = re.sub(r"/(iterations:\d+|repeats:\d+|real_time)", "", b["name"]).replace("_median", "")
        name = re.sub(r"^BM_", "", name)
        unit = "B/s" if "bytes_per_second" in b else "op/s"
        r = b.get("bytes_per_second") or b.get("items_per_second") or 0
        extra = []
        for k in ("avg_chunk_bytes", "compression_ratio", "might_contain_share", "table_entries"):
            if k in b:
                extra.append(f"{k}={b[k]:.4g}")
        tu = b.get("time_unit", "ns")
        rows.append([name, dur(b["real_time"], tu), dur(b["cpu_time"], tu), rate(r, unit), " ".join(extra)])
        csv_rows.append([name, b["real_time"], b["cpu_time"], tu, r, unit])
        m = re.match(r"IndexTable/cold/threads:(\d+)", name)
        if m:
            cold[int(m.group(1))] = r
            cold_entries = int(b.get("table_entries", 0))
    table(["benchmark", "wall / op", "CPU / op", "rate", "notes"], rows)
    write_csv("micro.csv", ["benchmark", "real_time", "cpu_time", "time_unit", "rate", "unit"], csv_rows)
    p("`ContainerPack` with zlib/bzip2 on "
      "random data pays for a compression attempt that is then thrown away (chunks are kept raw when "
      "compression does not make them smaller); the generator's data is incompressible, like most backup "
      "data that is already compressed. `IndexTable/cold`: each run does 4096 lookups of different pages (under a tenth of the table's) "
      f"after {micro['context'].get('cold_cache_method', 'dropping the page cache')}; median of 3 runs.")
    p()
    if fio_micro and cold:
        p("### Cold index lookups next to the disk's 4 KiB random reads (same disk, same concurrency)")
        p()
        rows, csv_rows = [], []
        fio_by_jobs = {f["jobs"]: f for f in fio_micro if f["ioengine"] == "psync"}
        for t in sorted(cold):
            f = fio_by_jobs.get(t)
            if not f:
                continue
            share = cold[t] / f["iops"] if f["iops"] else 0
            rows.append([t, f"{cold[t]:,.0f}", f"{f['iops']:,}", f"{share:.0%}"])
            csv_rows.append([t, round(cold[t]), f["iops"], round(share, 3)])
        qd = [f for f in fio_micro if f["ioengine"] == "libaio"]
        table(["threads / fio jobs", "index lookups/s (cold)", "fio IOPS (O_DIRECT, psync)", "lookups / IOPS"], rows)
        if qd:
            p(f"fio with libaio at queue depth {qd[0]['iodepth']}: {qd[0]['iops']:,} IOPS (the disk's "
              "ceiling with deep queues; the engine issues one lookup per dedup worker).")
            p()
        write_csv("index_vs_disk.csv", ["threads", "lookups_per_s", "fio_iops", "share"], csv_rows)
        if csv_rows:
            worst = min(r[3] for r in csv_rows)
            targets.append(["cold index lookups >= 80% of the disk's random-read IOPS (micro, "
                            f"{cold_entries:,} entries)",
                            f"{worst:.0%} .. {max(r[3] for r in csv_rows):.0%} over 1-8 threads", met(worst >= 0.8)])

# --- engine ----------------------------------------------------------------------------------

e1 = load("engine-1.json")
if e1:
    p("## 2. Engine in process (`dedupv1_bench engine`)")
    p()
    p(NOISE.format(n=nproc) + " " + stage_note("engine"))
    p("Generation 1 and generation 2 written into two volumes of a fresh store in 1 MiB requests "
      "(MB/s include the final sync); the chunk+hash ceiling is Rabin chunking + SHA-1 over the same "
      "bytes on `dedup.threads` threads with no storage, measured in the same process just before.")
    p()
    runs = [("run 1 (JSON)", e1)]
    e2txt = None
    try:
        e2txt = open(raw("engine-2.txt")).read()
        e2err = open(raw("engine-2.err")).read()
    except OSError:
        e2err = ""
    e2 = None
    if e2txt:
        def two(label):
            m = re.search(re.escape(label) + r"\s+([\d.]+)%?\s+([\d.]+)%?", e2txt)
            return (float(m.group(1)), float(m.group(2))) if m else (0, 0)
        tp, ceil_ = two("throughput MB/s (incl. sync)"), two("chunk+hash ceiling MB/s")
        red, truth = two("redundancy removed"), two("ground truth (generator)")
        m = re.search(r"peak RSS (\d+) MB", e2txt)
        t2 = load("engine-2.time.json") or {}
        e2 = {"gen1_mb_s": tp[0], "gen2_mb_s": tp[1], "ceiling_mb_s": ceil_[0],
              "gen1_vs_ceiling": tp[0] / ceil_[0] if ceil_[0] else 0,
              "gen2_vs_ceiling": tp[1] / ceil_[0] if ceil_[0] else 0,
              "gen1_dedup_ratio": red[0] / 100, "gen2_dedup_ratio": red[1] / 100,
              "gen1_ground_truth_ratio": truth[0] / 100, "ground_truth_ratio": truth[1] / 100,
              "peak_rss_mb": float(m.group(1)) if m else 0,
              "cpu_seconds": t2.get("user_seconds", 0) + t2.get("sys_seconds", 0)}
        runs.append(("run 2 (text)", e2))
    rows, csv_rows = [], []
    for label, r in runs:
        rows.append([label, human(e1["size"]), f"{r['gen1_mb_s']:.0f}", f"{r['gen2_mb_s']:.0f}",
                     f"{r['ceiling_mb_s']:.0f}", f"{r['gen1_vs_ceiling']:.0%}", f"{r['gen2_vs_ceiling']:.0%}",
                     f"{r['gen1_dedup_ratio']:.1%} / {r['gen1_ground_truth_ratio']:.1%}",
                     f"{r['gen2_dedup_ratio']:.1%} / {r['ground_truth_ratio']:.1%}",
                     f"{r['cpu_seconds']:.0f}", f"{r['peak_rss_mb']:.0f}"])
        csv_rows.append([label.split(" (")[0].replace(" ", "_"), e1["size"], r["gen1_mb_s"], r["gen2_mb_s"],
                         r["ceiling_mb_s"], round(r["gen1_vs_ceiling"], 3), round(r["gen2_vs_ceiling"], 3),
                         r["gen1_dedup_ratio"], r["gen2_dedup_ratio"], r["peak_rss_mb"]])
    table(["run", "per generation", "gen 1 MB/s", "gen 2 MB/s", "ceiling MB/s", "gen 1 / ceiling",
           "gen 2 / ceiling", "gen 1 removed / truth", "gen 2 removed / truth", "CPU s", "peak RSS MB"], rows)
    write_csv("engine.csv", ["run", "size", "gen1_mb_s", "gen2_mb_s", "ceiling_mb_s", "gen1_vs_ceiling",
                             "gen2_vs_ceiling", "gen1_removed", "gen2_removed", "peak_rss_mb"], csv_rows)
    m = re.search(r"worker time: claim ([\d.]+)s chunk ([\d.]+)s fingerprint ([\d.]+)s filter\+store ([\d.]+)s "
                  r"install ([\d.]+)s", e2err)
    if m:
        parts = dict(zip(["claim", "chunk", "fingerprint", "filter+store", "install"], map(float, m.groups())))
        tot = sum(parts.values())
        p("Where the dedup workers' time went in run 2 (SystemStats `ns_*`, summed over both generations and "
          "all workers):")
        p()
        table(["phase", "seconds", "share"], [[k, f"{s:.1f}", f"{s / tot:.0%}"] for k, s in parts.items()])
        write_csv("engine_worker_time.csv", ["phase", "seconds"], [[k, s] for k, s in parts.items()])
    g1 = [r["gen1_vs_ceiling"] for _, r in runs]
    g2 = [r["gen2_vs_ceiling"] for _, r in runs]
    targets.append(["engine gen 2 >= 85% of the chunk+hash ceiling",
                    " / ".join(f"{x:.0%}" for x in g2) + f" ({human(e1['size'])} per generation)",
                    met(max(g2) >= 0.85)])
    targets.append(["engine gen 1 >= 70% of the chunk+hash ceiling", " / ".join(f"{x:.0%}" for x in g1),
                    met(max(g1) >= 0.70)])

gc = load("gc.json")
if gc:
    p("### Garbage collection rounds (`dedupv1_bench gc`)")
    p()
    p(f"Generation 1 ({human(gc['size'])}) written into one volume, then a round (the full scan every open "
      "starts with); generation 2 written over it and a round (gives generation 1's replaced chunks back; "
      "space returns only where a container falls below half live); the first half of the volume unmapped "
      "and a round; the system closed and reopened and a round (the full scan after a restart). Automatic "
      "idle rounds are off (`ForceIdle(busy)`). \"RSS growth\" is the process's peak RSS during the round "
      "minus its RSS before (freed memory trimmed and the kernel's peak reset first).")
    p()
    rows, csv_rows = [], []
    for r in gc["rounds"]:
        rows.append([r["round"], f"{r['seconds']:.2f}", f"{r['containers']:,}", f"{r['chunks']:,}",
                     rate(r["chunks_per_s"], "/s"), human(r["bytes_reclaimed"]), f"{r['chunks_deleted']:,}",
                     f"{r.get('containers_looked_up', 0):,}", f"{r.get('containers_summarized', 0):,}",
                     f"{r.get('garbage_chunks_kept', 0):,}",
                     human(r["rss_growth_bytes"])])
        csv_rows.append([r["round"], r["seconds"], r["containers"], r["chunks"], r["chunks_per_s"],
                         r["bytes_reclaimed"], r["chunks_deleted"], r.get("containers_looked_up", 0),
                         r.get("containers_summarized", 0), r.get("garbage_chunks_kept", 0), r["rss_growth_bytes"]])
    table(["round", "seconds", "containers", "index entries", "entries / s", "reclaimed", "chunks deleted",
           "containers looked up", "containers summarized", "garbage chunks kept", "RSS growth"], rows)
    write_csv("gc.csv", ["round", "seconds", "containers", "index_entries", "entries_per_s", "bytes_reclaimed",
                         "chunks_deleted", "containers_looked_up", "containers_summarized", "garbage_chunks_kept",
                         "rss_growth_bytes"],
              csv_rows)

# --- restore ----------------------------------------------------------------------------------

rs = load("restore.json")
if rs:
    p("## Restores as generations age (`dedupv1_bench restore`)")
    p()
    p(NOISE.format(n=nproc) + " " + stage_note("restore"))
    p(f"{len(rs['generations'])} weekly generations of {human(rs['size'])} written into one volume; after "
      f"generation 1, every few and the last the volume was restored warm (right after the write) and cold "
      f"(engine reopened, page cache dropped), {rs['readers']} readers x 512 KiB in order, and compared. The "
      f"same bytes as a plain file on the same file system read {rs['plain_warm_mb_s']:.0f} MB/s warm and "
      f"{rs['plain_cold_mb_s']:.0f} MB/s cold. Factor: MiB restored per read of container data (a range, a "
      "single chunk or a whole container; metadata heads not counted); ratio: share of the written bytes not "
      "stored.")
    p()
    rows, csv_rows = [], []
    first_cold = None
    for g in rs["generations"]:
        if "cold_mb_s" not in g:
            continue
        first_cold = first_cold or g["cold_mb_s"]
        ratio = 1 - g["stored_bytes"] / g["written_bytes"]
        rows.append([g["gen"], f"{g['write_mb_s']:.0f}", human(g["stored_bytes"]), f"{ratio:.3f}",
                     f"{g['warm_mb_s']:.0f}", f"{g['warm_speed_factor']:.2f}", f"{g['cold_mb_s']:.0f}",
                     f"{g['cold_mb_s'] / rs['plain_cold_mb_s']:.2f}x", f"{g['cold_speed_factor']:.2f}",
                     f"{g['cold_mb_s'] / first_cold:.2f}"])
        csv_rows.append([g["gen"], g["warm_mb_s"], g["cold_mb_s"], g["cold_speed_factor"], ratio])
    table(["generation", "write MB/s", "stored", "ratio", "warm MB/s", "warm factor", "cold MB/s",
           "cold / plain cold", "cold factor", "cold / gen 1"], rows)
    write_csv("restore.csv", ["generation", "warm_mb_s", "cold_mb_s", "cold_speed_factor", "dedup_ratio"], csv_rows)

# --- iscsi ------------------------------------------------------------------------------------

iw = {k: load(f"iscsi-{k}.json") for k in ("dedup-write", "rdwr-write", "dedup-verify", "rdwr-verify")}
stored = load("iscsi-stored.json")
iw_cold = {k: load(f"iscsi-{k}-verify-cold.json") for k in ("dedup", "rdwr")}
if all(iw.values()):
    p("## 3. Through iSCSI (`bench/iscsi-bench.sh`)")
    p()
    p(NOISE.format(n=nproc) + " " + stage_note("iscsi"))
    size = iw["dedup-write"]["size"]
    p(f"One private tgtd on 127.0.0.1 (4 I/O threads) serving LUNs 1-2 from the dedupv1 module (one engine, "
      f"volumes gen1/gen2) and LUNs 3-4 from tgt's `rdwr` store (sparse files on the same disk); the same "
      f"client (`dedupv1_traffic`, libiscsi, {iw['dedup-write']['streams']} sessions x queue depth "
      f"{iw['dedup-write']['queue_depth']}, {iw['dedup-write']['request_size'] // 1024} KiB requests) wrote "
      f"generation 1 then 2 ({human(size)} each, SYNCHRONIZE CACHE at the end, included) to the dedup LUNs, "
      "then to the rdwr LUNs, then read both back and compared every byte (warm); then tgtd was restarted "
      "and both were read again with the page cache dropped before each (cold).")
    p()
    cold = all(iw_cold.values())
    rows, csv_rows = [], []
    for g in (1, 2):
        dw = iw["dedup-write"]["generations"][g - 1]
        rw = iw["rdwr-write"]["generations"][g - 1]
        dv = iw["dedup-verify"]["generations"][g - 1]
        rv = iw["rdwr-verify"]["generations"][g - 1]
        ok = dv.get("ok") and rv.get("ok")
        row = [g, f"{dw['mb_s']:.0f}", f"{rw['mb_s']:.0f}", f"{dw['mb_s'] / rw['mb_s']:.2f}x",
               f"{dv['mb_s']:.0f}", f"{rv['mb_s']:.0f}", f"{dv['mb_s'] / rv['mb_s']:.2f}x"]
        csv_row = [g, dw["mb_s"], rw["mb_s"], dv["mb_s"], rv["mb_s"]]
        if cold:
            dc = iw_cold["dedup"]["generations"][g - 1]
            rc = iw_cold["rdwr"]["generations"][g - 1]
            ok = ok and dc.get("ok") and rc.get("ok")
            row += [f"{dc['mb_s']:.0f}", f"{rc['mb_s']:.0f}", f"{dc['mb_s'] / rc['mb_s']:.2f}x"]
            csv_row += [dc["mb_s"], rc["mb_s"]]
        rows.append(row + ["ok" if ok else "MISMATCH"])
        csv_rows.append(csv_row)
    table(["generation", "write dedup MB/s", "write rdwr MB/s", "dedup / rdwr", "warm read dedup MB/s",
           "warm read rdwr MB/s", "dedup / rdwr"] +
          (["cold read dedup MB/s", "cold read rdwr MB/s", "dedup / rdwr"] if cold else []) + ["verified"], rows)
    write_csv("iscsi.csv", ["generation", "write_dedup", "write_rdwr", "read_dedup", "read_rdwr"] +
              (["cold_read_dedup", "cold_read_rdwr"] if cold else []), csv_rows)
    if stored:
        ideal = iw["dedup-write"]["total"]["ideal_stored_bytes"]
        p(f"Stored: dedup LUNs {human(stored['dedup_container_bytes'])} in containers (ideal "
          f"{human(ideal)} from the ground truth) for {human(2 * size)} written; rdwr LUNs "
          f"{human(stored['rdwr_allocated_bytes'])} allocated.")
        p()
    r2 = csv_rows[1][1] / csv_rows[1][2]
    targets.append(["through iSCSI, gen 2 to the dedup LUN faster than to tgt's rdwr LUN",
                    f"{csv_rows[1][1]:.0f} vs {csv_rows[1][2]:.0f} MB/s ({r2:.2f}x)", met(r2 > 1)])

# --- peers ----------------------------------------------------------------------------------

truth = load("peers-truth.json")
ours = load("peers-dedupv1.json")
ours_stored = load("peers-dedupv1-stored.json")
peers = {t: load_lines(f"peers-{t}.json") for t in ("borg", "restic", "casync")}
peers = {t: v for t, v in peers.items() if len(v) == 2}
if truth and ours and peers:
    p("## 4. Peers on the same generations (`bench/peers-bench.sh`)")
    p()
    p(NOISE.format(n=nproc) + " " + stage_note("peers"))
    size = truth["size"]
    ideal1 = truth["generations"][0]["truth"]["unique_bytes"]
    ideal2 = truth["generations"][1]["truth"]["unique_bytes"]
    p(f"Two generations of {human(size)} (seed 1; ground truth: generation 1 {human(ideal1)} unique, "
      f"generation 2 {human(ideal2)} unique, so an ideal deduplicator stores {human(ideal1 + ideal2)}). "
      "dedupv1 is the engine in process (`dedupv1_bench engine`, input generated in memory, MB/s include "
      "the final sync); the peers read the generations as files from the page cache, each run followed by "
      "`sync` (included). Stored = bytes of the files in the repository's data directory after each "
      "generation (dedupv1: its container files).")
    p()
    rows, csv_rows = [], []
    o1, o2 = ours["gen1_mb_s"], ours["gen2_mb_s"]
    # Chunk bytes stored (the engine's count) after each generation; the
    # container files (with their metadata) after both are compared below.
    s1, s12 = ours["gen1_stored_bytes"], ours["gen1_stored_bytes"] + ours["gen2_stored_bytes"]
    ostored = ours_stored["container_bytes"] if ours_stored else s12
    rows.append(["dedupv1 (engine)", "2K/8K/32K Rabin, no compression", f"{o1:.0f}", f"{o2:.0f}",
                 human(s1), human(s12), "1.00x / 1.00x"])
    csv_rows.append(["dedupv1", o1, o2, s1, s12])
    settings = {"borg": "buzhash 2K/8K/32K, -e none, no compression",
                "restic": "fixed CDC ~1 MiB avg (512K/8M), AES always, compression off",
                "casync": "2K/8K/32K, zstd (no 'none')"}
    worst_ratio = {}
    for t, (r1, r2) in peers.items():
        rows.append([f"{t} {r1['version']}", settings[t], f"{r1['mb_s']:.0f}", f"{r2['mb_s']:.0f}",
                     human(r1["data_bytes"]), human(r2["data_bytes"]),
                     f"{o1 / r1['mb_s']:.2f}x / {o2 / r2['mb_s']:.2f}x"])
        csv_rows.append([t, r1["mb_s"], r2["mb_s"], r1["data_bytes"], r2["data_bytes"]])
        worst_ratio[t] = (min(o1 / r1["mb_s"], o2 / r2["mb_s"]), ostored <= r2["data_bytes"])
    table(["system", "chunking / settings", "gen 1 MB/s", "gen 2 MB/s", "stored after gen 1",
           "stored after gen 2", "dedupv1 speed / this (gen 1 / gen 2)"], rows)
    p(f"dedupv1's container files after both generations: {human(ostored)} (chunk data plus container "
      f"metadata); its chunk and block indexes and log are preallocated files and not counted, as the "
      f"peers' index files are not (their data directories only).")
    p()
    write_csv("peers.csv", ["system", "gen1_mb_s", "gen2_mb_s", "stored_after_gen1", "stored_after_gen2"], csv_rows)
    for t in ("borg", "restic"):
        if t in worst_ratio:
            r, dedup_ok = worst_ratio[t]
            targets.append([f">= 2x {t}'s throughput at equal or better dedup",
                            f"{r:.2f}x (slower generation); stored {'<=' if dedup_ok else '>'} {t}'s",
                            met(r >= 2 and dedup_ok)])

# --- real data ------------------------------------------------------------------------------

real_ours = load("real-dedupv1.json")
real_stored = load("real-dedupv1-stored.json")
real_peers = {t: load_lines(f"real-{t}.json") for t in ("borg", "restic")}
real_peers = {t: v for t, v in real_peers.items() if len(v) == 2}
real_iscsi = {k: load(f"real-iscsi-{k}.json") for k in ("dedup-write", "rdwr-write")}
if real_ours:
    p("## 4b. Real data: Debian packages as two weekly full backups (`bench/real-data-bench.sh`)")
    p()
    p(NOISE.format(n=nproc) + " " + stage_note("real"))
    versions = []
    try:
        versions = [line.split() for line in open(raw("real-versions.txt"))]
    except OSError:
        pass
    changed = [v[0] for v in versions if len(v) == 3 and v[1] != v[2]]
    g1, g2 = real_ours["generations"]
    p(f"Generation 1 is {len(versions) or '?'} Debian packages unpacked at their bookworm point-release "
      f"version, as one tar stream ({human(g1['bytes'])}); generation 2 is the same packages after every "
      f"security update since the point release ({human(g2['bytes'])}; {len(changed)} changed: "
      f"{', '.join(changed)}). "
      "Every system ingests the same two tar files: dedupv1's engine in process (`dedupv1_bench files`, "
      "MB/s include the final sync), borg and restic backing them up from the page cache (each run "
      "followed by `sync`, included), and one iSCSI client (`dedupv1_traffic --input`, one session, "
      "queue depth 4) into a dedup LUN and into tgt's rdwr LUN of the same tgtd. Stored = the "
      "repository's data files (dedupv1: its container files; its preallocated indexes and log are not "
      "counted, as the peers' index files are not).")
    p()
    rows = []
    o1, o2 = g1["mb_s"], g2["mb_s"]
    ostored = real_stored["container_bytes"] if real_stored else real_ours["stored_bytes"]
    written = real_ours["written_bytes"]
    rows.append(["dedupv1 (engine, in process)", f"{o1:.0f}", f"{o2:.0f}", human(ostored),
                 f"{100 * (1 - ostored / written):.1f}%", "-"])
    real_csv = [["dedupv1-engine", o1, o2, ostored]]
    speed = {}
    for t, (r1, r2) in real_peers.items():
        rows.append([f"{t} {r1['version']}", f"{r1['mb_s']:.0f}", f"{r2['mb_s']:.0f}", human(r2["data_bytes"]),
                     f"{100 * (1 - r2['data_bytes'] / written):.1f}%",
                     f"{o1 / r1['mb_s']:.2f}x / {o2 / r2['mb_s']:.2f}x"])
        real_csv.append([t, r1["mb_s"], r2["mb_s"], r2["data_bytes"]])
        speed[t] = (min(o1 / r1["mb_s"], o2 / r2["mb_s"]), ostored <= r2["data_bytes"])
    dw, rw = real_iscsi["dedup-write"], real_iscsi["rdwr-write"]
    if dw and rw:
        d1, d2 = (g["mb_s"] for g in dw["generations"])
        w1, w2 = (g["mb_s"] for g in rw["generations"])
        rows.append(["dedupv1 LUN through iSCSI (one client)", f"{d1:.0f}", f"{d2:.0f}", "", "", ""])
        rows.append(["tgt rdwr LUN through iSCSI (same client)", f"{w1:.0f}", f"{w2:.0f}", "", "0%", ""])
        real_csv += [["dedupv1-iscsi", d1, d2, ""], ["rdwr-iscsi", w1, w2, ""]]
    table(["system", "gen 1 MB/s", "gen 2 MB/s", "stored after both", "saved", "engine speed / this"], rows)
    p(f"Chunk+hash ceiling on generation 1 (Rabin + SHA-1, 2 threads): {real_ours['ceiling_mb_s']:.0f} MB/s; "
      f"the engine ran at {o1 / real_ours['ceiling_mb_s']:.2f}x / {o2 / real_ours['ceiling_mb_s']:.2f}x of it.")
    p()
    write_csv("real.csv", ["system", "gen1_mb_s", "gen2_mb_s", "stored_after_both"], real_csv)
    for t, (r, dedup_ok) in speed.items():
        targets.append([f"real data: engine >= 2x {t}'s throughput at equal or better dedup",
                        f"{r:.2f}x (slower generation); stored {'<=' if dedup_ok else '>'} {t}'s",
                        met(r >= 2 and dedup_ok)])
    if dw and rw:
        best_peer = max((max(r1["mb_s"], r2["mb_s"]) for r1, r2 in real_peers.values()), default=0)
        ratio = min(d1 / w1, d2 / w2)
        if real_peers:
            targets.append(["real data through iSCSI: at least the peers' throughput",
                            f"{min(d1, d2):.0f} MB/s (slower generation) vs the peers' best {best_peer:.0f}",
                            met(min(d1, d2) >= best_peer)])
        targets.append(["real data through iSCSI: >= 1.0x of tgt's rdwr LUN, same client",
                        f"{ratio:.2f}x (slower generation)", met(ratio >= 1.0)])

# --- streams --------------------------------------------------------------------------------

streams = load("streams.json")
if streams:
    p("## 4c. Four backup streams at once (`bench/streams-bench.sh`)")
    p()
    p(NOISE.format(n=nproc) + " " + stage_note("streams"))
    n = streams["clients"]
    p(f"A client (`dedupv1_traffic`, one iSCSI session, queue depth 4) writes its backup server's two weekly "
      f"generations of {human(streams['size'])} each to two LUNs of its own (client k: seed k, its own data). "
      f"The same {n} clients run twice, each time into a fresh store behind a fresh tgtd: one after the other, "
      "then all at once (own processes and sessions). Wall time from the first write to the last SYNCHRONIZE "
      "CACHE; CPU seconds of the whole machine and of tgtd alone over the same span.")
    p()
    rows, mbs = [], {}
    for phase, label in (("one", f"{n} clients one after the other"), ("many", f"{n} clients at once")):
        secs = streams[f"{phase}_seconds"]
        mbs[phase] = streams["bytes"] / 1e6 / secs
        rows.append([label, human(streams["bytes"]), f"{secs:.1f}", f"{mbs[phase]:.0f}",
                     f"{streams[phase + '_machine_cpu_seconds']:.1f}", f"{streams[phase + '_tgtd_cpu_seconds']:.1f}"])
        for k in range(1, n + 1):
            c = load(f"streams-{phase}-{k}.json")
            if c:
                g = c["generations"]
                rows.append([f"  client {k}", human(sum(x["bytes"] for x in g)),
                             f"{sum(x['seconds'] for x in g):.1f}",
                             " / ".join(f"{x['mb_s']:.0f}" for x in g) + " (gen 1 / gen 2)", "", ""])
    table(["", "bytes", "seconds", "MB/s", "CPU s (machine)", "CPU s (tgtd)"], rows)
    write_csv("streams.csv", ["clients_at_once", "bytes", "seconds", "mb_s"],
              [[1, streams["bytes"], streams["one_seconds"], mbs["one"]],
               [n, streams["bytes"], streams["many_seconds"], mbs["many"]]])
    targets.append([f"{n} backup streams at once reach at least one stream's throughput in total",
                    f"{mbs['many']:.0f} vs {mbs['one']:.0f} MB/s ({mbs['many'] / mbs['one']:.2f}x)",
                    met(mbs["many"] >= mbs["one"])])

# --- scale ----------------------------------------------------------------------------------

build = load("scale-build.json")
lookups = load_lines("scale-lookup.json")
sfio = load_lines("scale-fio.json")
insert = load("scale-insert.json")
rss = load_lines("scale-rss.json")
if build or rss:
    p("## 5. Scale (`bench/scale-bench.sh`, run separately: `bench/run-bench scale`)")
    p()
    p(NOISE.format(n=nproc) + " " + stage_note("scale"))
if build and lookups:
    p(f"Chunk index: {build['entries']:,} entries bulk-loaded in bucket order through "
      f"`DiskHashTable::Apply` into a {human(build['table_bytes'])} table ({build['fill']:.0%} of the "
      f"slots) in {build['seconds']:.0f} s ({build['entries_per_s']:,.0f} entries/s, peak RSS "
      f"{build['peak_rss_mb']:.0f} MB). Lookups through `ChunkIndex::Lookup` (empty auxiliary index), "
      "in rounds of one key in each of a tenth of the pages (random), the page cache dropped with "
      "posix_fadvise DONTNEED before each round; fio on the same file with O_DIRECT.")
    p()
    rows, csv_rows = [], []
    fio_by_jobs = {f["jobs"]: f for f in sfio if f["ioengine"] == "psync"}
    for l in lookups:
        if l["miss"]:
            continue
        f = fio_by_jobs.get(l["threads"])
        share = l["lookups_per_s"] / f["iops"] if f and f["iops"] else 0
        rows.append([l["threads"], f"{l['lookups_per_s']:,.0f}", f"{l['p50_us']:.0f} / {l['p99_us']:.0f}",
                     f"{f['iops']:,}" if f else "-", f"{f['p50_us']:.0f} / {f['p99_us']:.0f}" if f else "-",
                     f"{share:.0%}" if f else "-", f"{l['peak_rss_mb']:.0f}"])
        csv_rows.append([l["threads"], l["lookups_per_s"], f["iops"] if f else 0, round(share, 3)])
    table(["threads / fio jobs", "lookups/s", "lookup p50 / p99 us", "fio IOPS", "fio p50 / p99 us",
           "lookups / IOPS", "RSS MB"], rows)
    write_csv("scale_index.csv", ["threads", "lookups_per_s", "fio_iops", "share"], csv_rows)
    miss = [l for l in lookups if l["miss"]]
    if miss:
        p(f"Absent keys (1 thread, cold): {miss[0]['lookups_per_s']:,.0f} lookups/s (one page read each: "
          "the home page is neither full nor overflowed).")
    qd = [f for f in sfio if f["ioengine"] == "libaio"]
    if qd:
        p(f"fio libaio queue depth {qd[0]['iodepth']}: {qd[0]['iops']:,} IOPS.")
    p()
    if csv_rows and any(r[2] for r in csv_rows):
        worst = min(r[3] for r in csv_rows if r[2])
        targets.append([f"cold index lookups >= 80% of the disk's random-read IOPS ({build['entries']:,} entries)",
                        f"{worst:.0%} .. {max(r[3] for r in csv_rows):.0%} over "
                        f"{min(r[0] for r in csv_rows)}-{max(r[0] for r in csv_rows)} threads", met(worst >= 0.8)])
if insert:
    per100m = 100e6 / insert["entries_per_s"] if insert["entries_per_s"] else 0
    p(f"The engine's own insert path (`ChunkIndex::PutNew`, write-back in batches of 1024 random pages, "
      f"journal + 2 fsyncs per batch): {insert['entries']:,} entries in {insert['seconds']:.0f} s = "
      f"{insert['entries_per_s']:,.0f} entries/s into a {human(insert['table_bytes'])} table; at that rate "
      f"100 million entries would take {per100m / 3600:.1f} h"
      + (f" (bulk load above: {100e6 / build['entries_per_s'] / 60:.1f} min)." if build else "."))
    p()
if rss:
    rows, csv_rows = [], []

    def engine_anon(r):
        # The sampled anonymous RSS without the bench's own generator (its
        # description of both generations grows with their size).
        return r.get("max_rss_anon_mb", 0) - r.get("generator_mb", 0)

    for r in rss:
        chunks = r.get("chunks", 0)
        per_chunk = engine_anon(r) * 2**20 / chunks if chunks else 0
        rows.append([human(r["size"]), f"{r['gen1_mb_s']:.0f}", f"{r['gen2_mb_s']:.0f}",
                     human(r["gen1_stored_bytes"] + r["gen2_stored_bytes"]), f"{r['peak_rss_mb']:.0f}",
                     f"{r.get('max_rss_anon_mb', 0):.0f} / {r.get('max_rss_file_mb', 0):.0f}",
                     f"{r.get('generator_mb', 0):.0f}", f"{engine_anon(r):.0f}", f"{per_chunk:.0f}",
                     f"{r.get('wall_seconds', 0):.0f}"])
        csv_rows.append([r["size"] / 2**30, r["peak_rss_mb"], r["gen1_stored_bytes"] + r["gen2_stored_bytes"],
                         round(engine_anon(r), 1)])
    p("Engine memory as stored data grows (`dedupv1_bench engine` at each size, fresh store each time; "
      "engine anon = sampled anonymous RSS minus the bench generator's own memory; bytes per chunk = engine "
      "anon over the chunks written):")
    p()
    table(["per generation", "gen 1 MB/s", "gen 2 MB/s", "stored", "peak RSS MB", "anon / file MB (sampled)",
           "generator MB", "engine anon MB", "bytes per chunk", "wall s"], rows)
    write_csv("scale_rss.csv", ["gib_per_generation", "peak_rss_mb", "stored_bytes", "engine_anon_mb"], csv_rows)
    full = [r for r in rss if r["size"] >= 10 * 2**30]  # the configured caches are full by about 10 GiB
    if len(full) >= 2:
        lo, hi = full[0], full[-1]
        rr = engine_anon(hi) / engine_anon(lo) if engine_anon(lo) else 0
        targets.append(["RSS flat (within 10%) once the caches are full",
                        f"{human(lo['size'])} -> {human(hi['size'])} per generation: engine anon "
                        f"{engine_anon(lo):.0f} -> {engine_anon(hi):.0f} MB (x{rr:.2f})", met(rr <= 1.10)])
    elif len(rss) >= 2:
        targets.append(["RSS flat (within 10%) once the caches are full",
                        "not assessed (needs two sizes of 10 GiB or more: BENCH_RSS_SIZES)", "-"])

# --- targets ------------------------------------------------------------------------------------

if targets:
    block = ["## Targets of the issue", "", "| target | measured | verdict |", "|---|---|---|"]
    block += [f"| {a} | {b} | {c} |" for a, b, c in targets]
    block += ["", "Why the misses happen: docs/benchmarks.md.", ""]
    # After the machine table.
    idx = next((i for i, l in enumerate(out) if l.startswith("## ")), len(out))
    out[idx:idx] = block
    write_csv("targets.csv", ["target", "measured", "verdict"], [[a, b, c.replace("*", "")] for a, b, c in targets])

with open(os.path.join(RES, "summary.md"), "w") as f:
    f.write("\n".join(out).rstrip() + "\n")
print(f"summarize: {os.path.join(RES, 'summary.md')}", file=sys.stderr)

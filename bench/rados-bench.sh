#!/usr/bin/env bash
# Scale-out I (issue 14, "Speed"): the "rados" storage backend against the
# cluster it runs on and against the local backend, all in one run on one
# private bluestore cluster (scripts/ceph-cluster), so the ratios compare
# figures measured side by side:
#   (a) rados bench: `rados bench -p dedupv1-data 10 write -t 16` (4 MiB
#       objects), then its cleanup: the cluster's write bandwidth
#   (b) dedupv1_rados_container_bench: store.Put and the chunk store's
#       container writes next to its own rados bench (the ratio)
#   (c) dedupv1_bench engine --json on the local backend and on RADOS,
#       alternated twice (local, rados, local, rados): gen 1 / gen 2 MB/s,
#       RADOS operations per GiB and chunks per operation, a fresh gateway's
#       open time over the store and generation 3 after it
# The cluster is destroyed at the end whatever happens (trap); the cluster
# script stops each daemon by the pid its own pid file names.
#
#   bench/rados-bench.sh [BIN_DIR [WORK_DIR [RESULTS_DIR]]]
#
# BIN_DIR (default build/bin) holds dedupv1_bench and
# dedupv1_rados_container_bench; WORK_DIR (default a fresh
# /var/tmp/dedupv1-rados-bench.XXXXXX, removed after; a WORK_DIR given is
# emptied first and left in place) takes the cluster and the local data;
# RESULTS_DIR (default bench/results) gets rados-<date>.txt (the summary)
# and raw/rados-*.{json,txt} (the tools' own reports).
#
# Environment:
#   BENCH_RADOS_SIZE=512M        bytes per generation for the engine runs
#   BENCH_RADOS_PORT_BASE=20700  the cluster's ports (N..N+99)
#   BENCH_RADOS_OSD_BYTES=8G     bluestore file per OSD (sparse)
#   BENCH_RADOS_CONTAINERS=48    4 MiB containers per container-bench figure
#   BENCH_RADOS_THREADS=1,4,16   writer threads of the container bench
#
# Exits 77 (skipped) when ceph-mon or rados is not installed.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
. "$here/bench-lib.sh"

bin="${1:-$repo/build/bin}"
work="${2:-}"
results="${3:-$repo/bench/results}"
size_arg="${BENCH_RADOS_SIZE:-512M}"
port_base="${BENCH_RADOS_PORT_BASE:-20700}"
osd_bytes="${BENCH_RADOS_OSD_BYTES:-8G}"

bench_need_ceph_and rados "$bin" dedupv1_bench dedupv1_rados_container_bench
bench_bytes "$size_arg" >/dev/null || bench_die "rados: bad BENCH_RADOS_SIZE $size_arg"

bench_work_dir "$work" dedupv1-rados-bench
raw="$results/raw"
mkdir -p "$raw"
cluster="$work/ceph"
conf="$cluster/ceph.conf"
stamp="$(date -u +%Y%m%d-%H%M)"
summary="$results/rados-$stamp.txt"

cleanup() {
  "$repo/scripts/ceph-cluster" destroy --dir "$cluster" >/dev/null 2>&1 || true
  [ "$own_work" -eq 0 ] || rm -rf "$work"
}
trap cleanup EXIT

bench_step "rados: private bluestore cluster in $cluster (port base $port_base, $osd_bytes per OSD)"
t0="$(bench_now)"
bench_ceph_start "$repo" "$cluster" "$port_base" "$osd_bytes"
bench_say "cluster up in $(awk -v a="$t0" -v b="$(bench_now)" 'BEGIN { printf "%.0f", b - a }') s"

# (a) rados bench, then its cleanup.
bench_step "rados: rados bench -p dedupv1-data 10 write -t 16"
rados -c "$conf" bench -p dedupv1-data 10 write -t 16 --no-cleanup --run-name dedupv1-bench \
  >"$raw/rados-bench.txt" 2>&1 || { cat "$raw/rados-bench.txt" >&2; bench_die "rados: rados bench failed"; }
rados -c "$conf" -p dedupv1-data cleanup --run-name dedupv1-bench >/dev/null 2>&1 ||
  bench_say "rados: warning: rados cleanup failed"
grep -E '^(Bandwidth|Average IOPS|Average Latency)' "$raw/rados-bench.txt" >&2

# (b) container writes next to rados bench.
bench_step "rados: dedupv1_rados_container_bench"
"$bin/dedupv1_rados_container_bench" --conf "$conf" --containers "${BENCH_RADOS_CONTAINERS:-48}" \
  --threads "${BENCH_RADOS_THREADS:-1,4,16}" >"$raw/rados-container.txt" 2>&1 || {
  cat "$raw/rados-container.txt" >&2
  bench_die "rados: dedupv1_rados_container_bench failed"
}
cat "$raw/rados-container.txt" >&2

# (c) the engine, local and rados alternated twice.
rm -f "$raw"/rados-engine-*.json
for round in 1 2; do
  for backend in local rados; do
    bench_step "rados: dedupv1_bench engine --size $size_arg, $backend, round $round (load $(bench_load))"
    set -- engine --size "$size_arg" --json --data-dir "$work/engine"
    if [ "$backend" = rados ]; then
      set -- "$@" --set storage.backend=rados --set "storage.rados.conf=$conf" \
        --set "storage.rados.store=bench-$$-$round"
    fi
    "$bin/dedupv1_bench" "$@" >"$raw/rados-engine-$backend-$round.json" 2>"$work/engine.err" || {
      cat "$work/engine.err" >&2
      bench_die "rados: dedupv1_bench engine ($backend, round $round) failed"
    }
    cat "$raw/rados-engine-$backend-$round.json" >&2
    rm -rf "$work/engine" "$work/engine-reopen"
  done
done

# The summary: every figure of this one run, ratios within it.
python3 - "$raw" "$size_arg" "$(nproc)" "$(cat /proc/loadavg)" >"$summary" <<'PY'
import json, re, sys
raw, size, nproc, load = sys.argv[1:5]
MIB = 1048576 / 1e6  # rados bench and the container bench count MiB; the engine 10^6 bytes
bench = open(f"{raw}/rados-bench.txt").read()
bw = float(re.search(r"^Bandwidth \(MB/sec\):\s*([\d.]+)", bench, re.M).group(1))
iops = re.search(r"^Average IOPS:\s*([\d.]+)", bench, re.M)
print(f"# dedupv1 on RADOS (bench/rados-bench.sh): one run, {nproc} cores, load at the end {load}")
print(f"# private bluestore cluster, 3 OSDs on sparse files of one disk, size 3; engine size {size} per generation")
print()
print(f"(a) rados bench 10 s write -t 16, 4 MiB objects: {bw:.1f} MiB/s = {bw * MIB:.1f} MB/s"
      + (f", {float(iops.group(1)):.0f} IOPS" if iops else ""))
print()
print("(b) dedupv1_rados_container_bench (MiB/s; ratio = against its own rados bench in the same run):")
for line in open(f"{raw}/rados-container.txt"):
    print("    " + line.rstrip())
print()
runs = {}
for b in ("local", "rados"):
    for r in (1, 2):
        runs[(b, r)] = json.load(open(f"{raw}/rados-engine-{b}-{r}.json"))
print("(c) dedupv1_bench engine (MB/s = 10^6 bytes/s, incl. the final sync), in the order run:")
hdr = f"    {'run':<10} {'gen1 MB/s':>9} {'gen2 MB/s':>9} {'chunks g1/g2':>15} {'ops g1/g2/close':>17} {'ops/GiB':>8} {'chunks/op':>9} {'ops/100ch':>9} {'reopen s':>8} {'gen3 MB/s':>9}"
print(hdr)
for r in (1, 2):
    for b in ("local", "rados"):
        j = runs[(b, r)]
        line = f"    {b + ' ' + str(r):<10} {j['gen1_mb_s']:>9.1f} {j['gen2_mb_s']:>9.1f} {str(j['gen1_chunks']) + '/' + str(j['gen2_chunks']):>15}"
        if b == "rados":
            ops = f"{j['gen1_rados_ops']}/{j['gen2_rados_ops']}/{j['close_rados_ops']}"
            line += (f" {ops:>17} {j['rados_ops_per_gib']:>8.1f} {j['chunks_per_rados_op']:>9.1f}"
                     f" {j['rados_ops_per_100_chunks']:>9.3f} {j['reopen_seconds']:>8.2f} {j['gen3_after_reopen_mb_s']:>9.1f}")
        print(line)
print()
print("RADOS operations by kind (gen1 incl. its sync / gen2 / close / a fresh gateway's open):")
for r in (1, 2):
    k = runs[("rados", r)]["rados_ops_by_kind"]
    print(f"    rados {r}: gen1 {json.dumps(k['gen1'])}; gen2 {json.dumps(k['gen2'])}")
    print(f"             close {json.dumps(k['close'])}; reopen {json.dumps(k['reopen'])}")
print()
print("ratios within each round (rados run right after its local run):")
for r in (1, 2):
    l, d = runs[("local", r)], runs[("rados", r)]
    print(f"    round {r}: gen1 rados/local {d['gen1_mb_s'] / l['gen1_mb_s']:.2f}, gen2 rados/local "
          f"{d['gen2_mb_s'] / l['gen2_mb_s']:.2f} (target >= 0.7); gen1 rados / rados bench "
          f"{d['gen1_mb_s'] / (bw * MIB):.2f}; gen3 after reopen / gen2 rados {d['gen3_after_reopen_mb_s'] / d['gen2_mb_s']:.2f}")
PY
cat "$summary" >&2
bench_say "rados: summary in $summary"

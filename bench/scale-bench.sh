#!/usr/bin/env bash
# Scale: the chunk index with many entries on disk, and the engine's memory
# as stored data grows. Raw reports go to OUT/scale-*.json.
#
#   scale-bench.sh DEDUPV1_INDEX_BENCH DEDUPV1_BENCH WORK_DIR OUT_DIR
#
# Environment:
#   BENCH_SCALE_ENTRIES=10000000   chunk index entries (bulk-loaded, bucket order)
#   BENCH_SCALE_SECONDS=15         per lookup / fio run
#   BENCH_SCALE_THREADS="1 2 4 8"  concurrency of the lookup and fio runs
#   BENCH_SCALE_INSERT_SECONDS=60  the engine's own insert path (PutNew + write-back)
#   BENCH_RSS_SIZES="512M 1G 2G 5G"  dedupv1_bench engine sizes for the RSS curve
#                                  (empty: skip)
#   BENCH_SCALE_KEEP=1             keep the table file (WORK_DIR/chunk-index)
#   BENCH_SCALE_GROW=0             skip the online growth runs
#
# Steps: build the table (dedupv1_index_bench build); cold random lookups of
# existing keys at each concurrency (page cache dropped first with
# posix_fadvise DONTNEED on the table, every lookup a different page), one
# run of misses; fio 4 KiB random reads (O_DIRECT, psync, same concurrency,
# plus libaio at queue depth 32) on the same table file; the engine's insert
# path for a bounded time; the table's online growth alone and beside
# writes; dedupv1_bench engine at growing sizes.
set -uo pipefail

index_bench="$(readlink -f "${1:?usage: scale-bench.sh DEDUPV1_INDEX_BENCH DEDUPV1_BENCH WORK OUT}")"
engine="$(readlink -f "${2:?}")"
work="${3:?}"
out="${4:?}"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/bench-lib.sh"

entries="${BENCH_SCALE_ENTRIES:-10000000}"
secs="${BENCH_SCALE_SECONDS:-15}"
threads="${BENCH_SCALE_THREADS:-1 2 4 8}"
insert_secs="${BENCH_SCALE_INSERT_SECONDS:-60}"
rss_sizes="${BENCH_RSS_SIZES-512M 1G 2G 5G}"
table="$work/chunk-index"

mkdir -p "$work" "$out"
rm -f "$out"/scale-*.json

bench_step "scale: building a chunk index with $entries entries in $table"
"$index_bench" build --path "$table" --entries "$entries" >"$out/scale-build.json" ||
  bench_die "scale: build failed"
cat "$out/scale-build.json" >&2

for t in $threads; do
  bench_say "scale: cold lookups, $t thread(s), ${secs}s"
  "$index_bench" lookup --path "$table" --threads "$t" --seconds "$secs" --cold >>"$out/scale-lookup.json" ||
    bench_die "scale: lookup failed"
  tail -n 1 "$out/scale-lookup.json" >&2
done
bench_say "scale: cold lookups of absent keys, 1 thread"
"$index_bench" lookup --path "$table" --threads 1 --seconds "$secs" --cold --miss >>"$out/scale-lookup.json" ||
  bench_die "scale: lookup --miss failed"

if command -v fio >/dev/null; then
  # fio_run JOBS IODEPTH ENGINE
  fio_run() {
    fio --name=randread --filename="$table" --readonly --rw=randread --bs=4k --direct=1 \
      --ioengine="$3" --iodepth="$2" --numjobs="$1" --group_reporting --time_based --runtime="$secs" \
      --output-format=json >"$work/fio.json" 2>"$work/fio.err" || { cat "$work/fio.err" >&2; return 1; }
    python3 - "$work/fio.json" "$1" "$2" "$3" <<'PY' >>"$out/scale-fio.json"
import json, sys
j = json.load(open(sys.argv[1]))
r = j["jobs"][0]["read"]
lat = r.get("clat_ns", {}).get("percentile", {})
print(json.dumps({"jobs": int(sys.argv[2]), "iodepth": int(sys.argv[3]), "ioengine": sys.argv[4],
                  "iops": round(r["iops"]), "p50_us": lat.get("50.000000", 0) / 1000,
                  "p99_us": lat.get("99.000000", 0) / 1000, "fio": j.get("fio version", "")}))
PY
    tail -n 1 "$out/scale-fio.json" >&2
  }
  for t in $threads; do
    bench_say "scale: fio 4K random read, $t job(s), O_DIRECT"
    fio_run "$t" 1 psync || bench_die "scale: fio failed"
  done
  bench_say "scale: fio 4K random read, libaio queue depth 32"
  fio_run 1 32 libaio || bench_die "scale: fio failed"
else
  bench_say "scale: fio not installed (apt-get install fio): no disk comparison"
fi
if [ "${BENCH_SCALE_GROW:-1}" = 1 ]; then
  # The online growth (issue 16): once alone on a copy, once beside batches
  # of new entries on the table itself (their rate before and during it).
  bench_say "scale: online growth of the table to twice its buckets, alone"
  cp "$table" "$table.copy" && : >"$table.copy.journal" || bench_die "scale: cannot copy the table"
  "$index_bench" grow --path "$table.copy" >>"$out/scale-grow.json" || bench_die "scale: grow failed"
  tail -n 1 "$out/scale-grow.json" >&2
  rm -f "$table.copy" "$table.copy.journal" "$table.copy.next" "$table.copy.next.journal"
  bench_say "scale: online growth beside writes (${secs}s of writes alone first)"
  "$index_bench" grow --path "$table" --with-writes --seconds "$secs" >>"$out/scale-grow.json" ||
    bench_die "scale: grow --with-writes failed"
  tail -n 1 "$out/scale-grow.json" >&2
fi
[ "${BENCH_SCALE_KEEP:-0}" = 1 ] || rm -f "$table" "$table.journal" "$table.synthetic" "$table.next" "$table.next.journal"

bench_say "scale: the engine's insert path (PutNew + write-back), ${insert_secs}s"
"$index_bench" insert --dir "$work/insert" --entries 100000000 --seconds "$insert_secs" \
  --table-entries "$entries" >"$out/scale-insert.json" || bench_die "scale: insert failed"
cat "$out/scale-insert.json" >&2

for s in $rss_sizes; do
  bench_say "scale: dedupv1_bench engine --size $s (memory as data grows)"
  # Peak anonymous and file-backed resident memory, sampled every 0.2 s.
  t0="$(bench_now)"
  "$engine" engine --size "$s" --json --data-dir "$work/engine" >"$work/engine.json" &
  pid=$!
  max_anon=0
  max_file=0
  while kill -0 "$pid" 2>/dev/null; do
    read -r a f < <(awk '/^RssAnon/ { a = $2 } /^RssFile/ { f = $2 } END { print a + 0, f + 0 }' \
      "/proc/$pid/status" 2>/dev/null || echo "0 0")
    [ "${a:-0}" -le "$max_anon" ] || max_anon="$a"
    [ "${f:-0}" -le "$max_file" ] || max_file="$f"
    sleep 0.2
  done
  wait "$pid" || bench_die "scale: dedupv1_bench --size $s failed"
  wall="$(awk -v a="$t0" -v b="$(bench_now)" 'BEGIN { printf "%.1f", b - a }')"
  python3 - "$work/engine.json" "$s" "$wall" "$max_anon" "$max_file" <<'PY' >>"$out/scale-rss.json"
import json, sys
e = json.load(open(sys.argv[1]))
e["size_arg"] = sys.argv[2]; e["wall_seconds"] = float(sys.argv[3])
e["max_rss_anon_mb"] = int(sys.argv[4]) / 1024; e["max_rss_file_mb"] = int(sys.argv[5]) / 1024
print(json.dumps(e))
PY
  tail -n 1 "$out/scale-rss.json" >&2
  rm -rf "$work/engine"
done
rm -rf "$work"
bench_say "scale: done"

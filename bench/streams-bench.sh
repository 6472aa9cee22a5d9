#!/usr/bin/env bash
# Four backup streams at once against one (issue 17, item 3). A client
# (dedupv1_traffic, one iSCSI session, queue depth 4) writes its backup
# server's two weekly generations to two LUNs of its own, ending with
# SYNCHRONIZE CACHE; client k has seed k (its own data). The same CLIENTS
# clients run twice, each time into a fresh store behind a fresh private tgtd
# on 127.0.0.1 (2 x CLIENTS dedupv1 LUNs of one engine): first one after the
# other (one stream at a time), then all at once (own processes and
# sessions). Same bytes, same store state at the start: only the concurrency
# differs. Reports: OUT/streams-one-K.json and OUT/streams-many-K.json
# (dedupv1_traffic's own) and OUT/streams.json (bytes, wall time, the
# machine's and tgtd's CPU seconds of both phases).
#
#   streams-bench.sh MODULE.so DEDUPV1_TRAFFIC WORK_DIR OUT_DIR SIZE [CLIENTS]
#
# SIZE is per generation and client. Needs root and tgtd; exits 77 without.
set -uo pipefail
module="$(readlink -f "${1:?usage: streams-bench.sh MODULE.so DEDUPV1_TRAFFIC WORK OUT SIZE [CLIENTS]}")"
traffic="$(readlink -f "${2:?}")"
work="${3:?}"
out="${4:?}"
size_arg="${5:?}"
clients="${6:-4}"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../scripts/tgt-test-lib.sh"
. "$here/bench-lib.sh"

[ "$(id -u)" -eq 0 ] || { bench_say "streams: skipped (needs root for tgtd)"; exit 77; }
command -v tgtd >/dev/null || { bench_say "streams: skipped (tgtd not installed)"; exit 77; }
[ -f "$module" ] || bench_die "streams: no module $module"
size="$(bench_bytes "$size_arg")" || bench_die "streams: bad size $size_arg"
size=$(( (size + (1 << 20) - 1) >> 20 << 20 ))
[ "$clients" -ge 2 ] && [ "$clients" -le 8 ] || bench_die "streams: CLIENTS must be 2..8"

rm -rf "$work"
mkdir -p "$work" "$out"
rm -f "$out"/streams-*.json "$out/streams.json"
IQN=iqn.2026-11.org.dedupv1:streams-bench
TGT_ADM_TIMEOUT=600
cleanup() { tgt_stop >/dev/null 2>&1 || true; }
trap cleanup EXIT
luns=$((2 * clients))
index_size=$(( size * luns / 16 ))
[ "$index_size" -ge $((64 << 20)) ] || index_size=$((64 << 20))

# serve PHASE: a fresh store in WORK/PHASE behind a fresh tgtd, LUNs 1..luns.
serve() {
  local dir="$work/$1" l
  mkdir -p "$dir"
  {
    echo "# written by bench/streams-bench.sh"
    echo "data-dir = $dir/data"
    for l in $(seq 1 "$luns"); do echo "volume = v$l $size"; done
    echo "chunk-index.size = $index_size"
    echo "monitor.enabled = false"
  } >"$dir/dedupv1.conf"
  tgt_start "$dir/tgtd.log" "$module" || bench_die "streams: tgtd did not start (log $dir/tgtd.log)"
  tgt_adm --lld iscsi --op new --mode target --tid 1 -T "$IQN" || bench_die "streams: no target"
  for l in $(seq 1 "$luns"); do
    tgt_adm --lld iscsi --op new --mode logicalunit --tid 1 --lun "$l" --bstype dedupv1 \
      --backing-store "$dir/dedupv1.conf" --bsopts "volume=v$l" ||
      { tail -n 20 "$dir/tgtd.log" >&2; bench_die "streams: LUN $l"; }
  done
  tgt_adm --lld iscsi --op bind --mode target --tid 1 -I ALL || bench_die "streams: bind"
}

# client K REPORT: client K's two generations to LUNs 2K-1 and 2K.
client() {
  "$traffic" write --size "$size" --generations 2 --seed "$1" --streams 1 --queue-depth 4 --no-progress --json \
    --lun-per-generation "$(tgt_url "$IQN" $((2 * $1 - 1)))" >"$2" 2>"$2.err" ||
    { cat "$2.err" >&2; return 1; }
  rm -f "$2.err"
}
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
# CPU seconds so far: the machine's busy time (all cores) and tgtd's own.
machine_cpu() { awk '/^cpu / { printf "%.2f", ($2 + $3 + $4 + $7 + $8) / 100 }' /proc/stat; }
tgtd_cpu() { awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$TGT_PID/stat"; }

# phase one|many: sets ${phase}_s, ${phase}_cpu, ${phase}_tgtd.
phase() {
  local name="$1" k t0 m0 c0 rc=0 pids=()
  serve "$name"
  bench_say "streams: $clients clients $([ "$name" = one ] && echo "one after the other" || echo "at once")," \
    "2 x $(numfmt --to=iec "$size") each (tgtd pid $TGT_PID, $luns LUNs)"
  m0="$(machine_cpu)" c0="$(tgtd_cpu)" t0="$(bench_now)"
  for k in $(seq 1 "$clients"); do
    if [ "$name" = one ]; then
      client "$k" "$out/streams-$name-$k.json" || rc=1
    else
      client "$k" "$out/streams-$name-$k.json" &
      pids+=($!)
    fi
  done
  for k in "${pids[@]}"; do wait "$k" || rc=1; done
  printf -v "${name}_s" '%s' "$(elapsed "$t0" "$(bench_now)")"
  printf -v "${name}_cpu" '%s' "$(elapsed "$m0" "$(machine_cpu)")"
  printf -v "${name}_tgtd" '%s' "$(elapsed "$c0" "$(tgtd_cpu)")"
  [ "$rc" -eq 0 ] || bench_die "streams: a client failed ($name)"
  tgt_stop >/dev/null 2>&1 || bench_die "streams: tgtd did not stop"
  rm -rf "$work/$name/data"
}
phase one
phase many

bytes=$((2 * size * clients))
printf '{"size": %d, "clients": %d, "bytes": %d, "cores": %d, "one_seconds": %s, "many_seconds": %s, "one_machine_cpu_seconds": %s, "many_machine_cpu_seconds": %s, "one_tgtd_cpu_seconds": %s, "many_tgtd_cpu_seconds": %s}\n' \
  "$size" "$clients" "$bytes" "$(nproc)" "$one_s" "$many_s" "$one_cpu" "$many_cpu" "$one_tgtd" "$many_tgtd" \
  >"$out/streams.json"
bench_say "streams: one at a time $(awk -v b="$bytes" -v s="$one_s" 'BEGIN { printf "%.0f", b / 1e6 / s }') MB/s," \
  "$clients at once $(awk -v b="$bytes" -v s="$many_s" 'BEGIN { printf "%.0f", b / 1e6 / s }') MB/s in total"
trap - EXIT
rm -rf "$work"

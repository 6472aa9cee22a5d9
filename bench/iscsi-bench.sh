#!/usr/bin/env bash
# Through iSCSI: the same two backup generations written by the same client
# (dedupv1_traffic, libiscsi) into a dedup LUN pair and into a pair of tgt
# "rdwr" LUNs (plain files in the work dir), both served by one private tgtd
# on 127.0.0.1 in the same run, then read back and verified. Raw reports go
# to OUT/iscsi-*.json (bench/summarize.py turns them into tables).
#
#   iscsi-bench.sh MODULE.so DEDUPV1_TRAFFIC WORK_DIR OUT_DIR SIZE [STREAMS]
#
# Order: dedup write, rdwr write, dedup verify, rdwr verify (each generation
# 1 then 2, each ending with SYNCHRONIZE CACHE); then tgtd is restarted and
# both are verified again cold (page cache dropped before each:
# OUT/iscsi-*-verify-cold.json). Needs root and tgtd; exits 77 when they are
# missing.
#
# Real data instead (bench/real-data-bench.sh): ISCSI_BENCH_INPUT=FILE with
# "%d" for the generation number (dedupv1_traffic --input; the LUNs are sized
# to the larger file, SIZE is ignored), reports named ISCSI_BENCH_PREFIX-*.json
# (default "iscsi").
set -uo pipefail

module="$(readlink -f "${1:?usage: iscsi-bench.sh MODULE.so DEDUPV1_TRAFFIC WORK OUT SIZE [STREAMS]}")"
traffic="$(readlink -f "${2:?}")"
work="${3:?}"
out="${4:?}"
size_arg="${5:?}"
streams="${6:-2}"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../scripts/tgt-test-lib.sh"
. "$here/bench-lib.sh"

if [ "$(id -u)" -ne 0 ]; then
  bench_say "iscsi: skipped (needs root for tgtd)"
  exit 77
fi
command -v tgtd >/dev/null || { bench_say "iscsi: skipped (tgtd not installed: apt-get install tgt)"; exit 77; }
[ -f "$module" ] || bench_die "iscsi: no module $module"
size="$(bench_bytes "$size_arg")" || bench_die "iscsi: bad size $size_arg"
input="${ISCSI_BENCH_INPUT:-}"
prefix="${ISCSI_BENCH_PREFIX:-iscsi}"
if [ -n "$input" ]; then
  size=0
  for g in 1 2; do
    f="${input//%d/$g}"
    [ -s "$f" ] || bench_die "iscsi: generation file $f is missing or empty"
    [ "$(stat -c %s "$f")" -le "$size" ] || size="$(stat -c %s "$f")"
  done
fi
size=$(( (size + (1 << 20) - 1) >> 20 << 20 ))

rm -rf "$work"
mkdir -p "$work" "$out"
IQN=iqn.2026-11.org.dedupv1:bench
TGT_ADM_TIMEOUT=600

cleanup() { tgt_stop >/dev/null 2>&1 || true; }
trap cleanup EXIT

# The chunk index file is preallocated: ~4x what two generations of 8 KiB chunks need.
index_size=$(( size / 16 ))
[ "$index_size" -ge $((64 << 20)) ] || index_size=$((64 << 20))
cat >"$work/dedupv1.conf" <<EOF
# written by bench/iscsi-bench.sh
data-dir = $work/data
volume = gen1 $size
volume = gen2 $size
chunk-index.size = $index_size
monitor.enabled = false
EOF
truncate -s "$size" "$work/rdwr-gen1.img" "$work/rdwr-gen2.img"

# Starts the private tgtd and sets up the four LUNs (again after a restart:
# the engine reopens the store with empty caches).
serve() {
  tgt_start "$work/tgtd.log" "$module" || bench_die "iscsi: tgtd did not start (log $work/tgtd.log)"
  bench_say "tgtd pid $TGT_PID on 127.0.0.1:$TGT_PORT (LUN 1,2: dedupv1 gen1/gen2; LUN 3,4: rdwr files)"
  tgt_adm --lld iscsi --op new --mode target --tid 1 -T "$IQN" &&
    tgt_adm --lld iscsi --op new --mode logicalunit --tid 1 --lun 1 --bstype dedupv1 \
      --backing-store "$work/dedupv1.conf" --bsopts "volume=gen1" &&
    tgt_adm --lld iscsi --op new --mode logicalunit --tid 1 --lun 2 --bstype dedupv1 \
      --backing-store "$work/dedupv1.conf" --bsopts "volume=gen2" &&
    tgt_adm --lld iscsi --op new --mode logicalunit --tid 1 --lun 3 --bstype rdwr \
      --backing-store "$work/rdwr-gen1.img" &&
    tgt_adm --lld iscsi --op new --mode logicalunit --tid 1 --lun 4 --bstype rdwr \
      --backing-store "$work/rdwr-gen2.img" &&
    tgt_adm --lld iscsi --op bind --mode target --tid 1 -I ALL ||
    { tail -n 20 "$work/tgtd.log" >&2; bench_die "iscsi: could not set up the LUNs"; }
}
serve

opts=(--size "$size" --seed 1)
[ -z "$input" ] || opts=(--input "$input")
opts+=(--generations 2 --streams "$streams" --queue-depth 4 --no-progress --json --lun-per-generation)
run() {  # run NAME write|verify LUN [cold]
  local name="$1" cmd="$2" lun="$3" tag="$2${4:+-$4}"
  bench_say "iscsi: $cmd $name${4:+ ($4)} (2 x $(numfmt --to=iec "$size")${input:+ of real data}, $streams streams, LUN $lun and $((lun + 1)))"
  if ! "$traffic" "$cmd" "${opts[@]}" "$(tgt_url "$IQN" "$lun")" >"$out/$prefix-$name-$tag.json" 2>"$work/$name-$tag.err"; then
    tail -n 5 "$work/$name-$tag.err" >&2
    tail -n 20 "$work/tgtd.log" >&2
    bench_die "iscsi: $cmd $name failed"
  fi
}
# Real data: the client reads its input files from the page cache, in every
# run (also after the cold runs' drop_caches), as the synthetic generator
# makes its bytes in memory; only the target's reads are cold.
warm_inputs() {
  local g
  [ -z "$input" ] || for g in 1 2; do cat "${input//%d/$g}" >/dev/null; done
}
warm_inputs
run dedup write 1
run rdwr write 3
run dedup verify 1
run rdwr verify 3
# Cold: tgtd restarted (the engine's caches empty) and the page cache dropped
# before each read.
drop_caches() { sync && echo 3 >/proc/sys/vm/drop_caches; }
tgt_stop >/dev/null 2>&1 || bench_die "iscsi: tgtd did not stop"
serve
drop_caches || bench_die "iscsi: could not drop the page cache"
warm_inputs
run dedup verify 1 cold
drop_caches || bench_die "iscsi: could not drop the page cache"
warm_inputs
run rdwr verify 3 cold

# What each kept: the dedup store's container files (after the syncs), the
# rdwr files' allocated bytes (sparse files: only what was written).
containers="$(bench_file_bytes "$work/data/containers")"
rdwr="$(du -B1 -c "$work/rdwr-gen1.img" "$work/rdwr-gen2.img" | awk 'END { print $1 }')"
printf '{"size": %d, "streams": %d, "dedup_container_bytes": %d, "rdwr_allocated_bytes": %d}\n' \
  "$size" "$streams" "$containers" "$rdwr" >"$out/$prefix-stored.json"
cleanup
trap - EXIT
rm -rf "$work"
bench_say "iscsi: done"

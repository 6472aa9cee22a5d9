#!/usr/bin/env bash
# Primary-storage workloads per dedup policy (issue 18; docs/design-18.md
# section 7). fio has no iSCSI engine: each LUN is exported by qemu-nbd (the
# iSCSI URL as its image) and fio's nbd engine drives it. One after the
# other, on the same bytes (fixed fio seeds), each into a fresh store behind
# a fresh private tgtd on 127.0.0.1: a dedupv1 LUN of policy inline, one of
# selective, one of off, one of out-of-band (its pass every second:
# dedup.background.period = 1s) and tgt's rdwr LUN on a file of the same
# work dir.
# Per target:
#   fill       the LUN written once, sequentially, 1 MiB requests;
#   trace      a block trace in the FIU format (bench/fiu-trace-gen: mail-like,
#              4-64 KiB requests, identical rewrites of the same address, a few
#              scattered duplicate blocks among new ones, ...) of ROUNDS times
#              the first quarter's blocks in requests, replayed through iSCSI at
#              queue depth 1 (dedupv1_fiu_replay: p50/p99 latency, reads checked);
#              then the store's figures (logical bytes, stored bytes,
#              Select-Dedupe's decisions) from the monitor; then (out-of-band)
#              the pass waited for until no block is pending, and two GC
#              rounds (every dedup LUN), and the figures again ("after GC");
#   read       tgtd restarted and the page cache dropped, that quarter read
#              sequentially (1 MiB, queue depth 4): reads after overwrites;
#   latency    random 4-64 KiB writes at queue depth 1 for RUNTIME seconds:
#              p50/p99 write latency and IOPS;
#   mixed      70/30 random reads/writes at queue depth 16 for RUNTIME s.
# Every fio write has dedupe_percentage=50 and buffer_compress_percentage=50.
# Reports: OUT/primary-TARGET-JOB.json (fio's and the replayer's own),
# OUT/primary-TARGET-stats.json (the monitor's /stats after the trace), OUT/primary-TARGET-stats-gc.json
# (after the pass and GC) and OUT/primary.json (the
# figures bench/summarize.py and docs/benchmarks.md quote).
#
#   primary-bench.sh MODULE.so FIU_REPLAY WORK_DIR OUT_DIR SIZE [RUNTIME] [ROUNDS]
#
# SIZE is each LUN's size. Needs root, tgtd, qemu-nbd and fio with the nbd
# engine; exits 77 without.
set -uo pipefail
module="$(readlink -f "${1:?usage: primary-bench.sh MODULE.so FIU_REPLAY WORK OUT SIZE [RUNTIME] [ROUNDS]}")"
replay="$(readlink -f "${2:?}")"
work="${3:?}"
out="${4:?}"
size_arg="${5:?}"
runtime="${6:-30}"
rounds="${7:-20}"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../scripts/tgt-test-lib.sh"
. "$here/bench-lib.sh"

[ "$(id -u)" -eq 0 ] || { bench_say "primary: skipped (needs root for tgtd)"; exit 77; }
for t in tgtd qemu-nbd fio curl; do
  command -v "$t" >/dev/null || { bench_say "primary: skipped ($t not installed)"; exit 77; }
done
fio --enghelp 2>/dev/null | grep -qw nbd || { bench_say "primary: skipped (this fio has no nbd engine)"; exit 77; }
[ -f "$module" ] || bench_die "primary: no module $module"
[ -x "$replay" ] || bench_die "primary: no replayer $replay"
size="$(bench_bytes "$size_arg")" || bench_die "primary: bad size $size_arg"
size=$(( size >> 20 << 20 ))
[ "$size" -ge $((64 << 20)) ] || bench_die "primary: SIZE must be at least 64M"
region=$((size / 4))

rm -rf "$work"
mkdir -p "$work" "$out"
rm -f "$out"/primary-*.json "$out/primary.json"
IQN=iqn.2026-11.org.dedupv1:primary-bench
TGT_ADM_TIMEOUT=600
NBD_PID=""
stop_nbd() {
  [ -n "$NBD_PID" ] || return 0
  kill "$NBD_PID" 2>/dev/null
  wait "$NBD_PID" 2>/dev/null
  NBD_PID=""
}
cleanup() { stop_nbd; tgt_stop >/dev/null 2>&1 || true; }
trap cleanup EXIT

# serve TARGET: tgtd with LUN 1 of TARGET (its store or file kept across
# restarts), exported by qemu-nbd on WORK/TARGET/nbd.sock.
serve() {
  local target="$1" dir="$work/$1"
  mkdir -p "$dir"
  tgt_start "$dir/tgtd.log" "$module" || bench_die "primary: tgtd did not start (log $dir/tgtd.log)"
  tgt_adm --lld iscsi --op new --mode target --tid 1 -T "$IQN" || bench_die "primary: no target"
  if [ "$target" = rdwr ]; then
    [ -f "$dir/lun.img" ] || truncate -s "$size" "$dir/lun.img"
    tgt_adm --lld iscsi --op new --mode logicalunit --tid 1 --lun 1 --bstype rdwr --backing-store "$dir/lun.img" ||
      bench_die "primary: rdwr LUN"
  else
    if [ ! -f "$dir/dedupv1.conf" ]; then
      {
        echo "# written by bench/primary-bench.sh"
        echo "data-dir = $dir/data"
        echo "volume = vol $size policy=$target"
        echo "chunk-index.size = $(( size / 16 > (64 << 20) ? size / 16 : 64 << 20 ))"
        echo "monitor.port = $MON_PORT"
        [ "$target" != out-of-band ] || echo "dedup.background.period = 1s"
      } >"$dir/dedupv1.conf"
    fi
    tgt_adm --lld iscsi --op new --mode logicalunit --tid 1 --lun 1 --bstype dedupv1 \
      --backing-store "$dir/dedupv1.conf" --bsopts "volume=vol" ||
      { tail -n 20 "$dir/tgtd.log" >&2; bench_die "primary: dedupv1 LUN ($target)"; }
  fi
  tgt_adm --lld iscsi --op bind --mode target --tid 1 -I ALL || bench_die "primary: bind"
  rm -f "$dir/nbd.sock"
  qemu-nbd -f raw --cache=none -t -e 16 -k "$dir/nbd.sock" "$(tgt_url "$IQN" 1)" >"$dir/qemu-nbd.log" 2>&1 &
  NBD_PID=$!
  tgt_wait_for "[ -S '$dir/nbd.sock' ]" 30 || { cat "$dir/qemu-nbd.log" >&2; bench_die "primary: qemu-nbd ($target)"; }
}

unserve() {
  stop_nbd
  tgt_stop >/dev/null 2>&1 || bench_die "primary: tgtd did not stop"
}

# job TARGET NAME FIO-ARGS...: one fio job against TARGET's export; its JSON
# report in OUT/primary-TARGET-NAME.json.
job() {
  local target="$1" name="$2" report="$out/primary-$1-$2.json"
  shift 2
  fio --name="$name" --ioengine=nbd --uri="nbd+unix:///?socket=$work/$target/nbd.sock" \
    --randrepeat=1 --randseed=1818 --dedupe_percentage=50 --buffer_compress_percentage=50 \
    --output-format=json "$@" >"$report.out" 2>"$report.err" ||
    { cat "$report.err" >&2; bench_die "primary: fio $name on $target"; }
  # fio may print notes before its JSON document.
  sed -n '/^{/,$p' "$report.out" >"$report" && rm -f "$report.out" "$report.err"
}

# Below the kernel's ephemeral ports, so no outgoing connection takes it
# between the tgtd starts that reuse it.
MON_PORT="$(tgt_free_port 23000 32000)"
mix=4k/40:8k/20:16k/20:64k/20
# About 3.6 blocks of 4 KiB written per request of the trace's mix: ROUNDS
# times the quarter's blocks.
requests=$(( rounds * (region / 4096) * 10 / 36 ))
"$here/fiu-trace-gen" --size "$region" --requests "$requests" --seed 18 >"$work/trace.fiu" ||
  bench_die "primary: fiu-trace-gen"
bench_say "primary: trace of $requests requests over $(numfmt --to=iec "$region") ($(wc -l <"$work/trace.fiu") records)"
for target in inline selective off out-of-band rdwr; do
  bench_say "primary: $target: fill $(numfmt --to=iec "$size"), the trace ($rounds rounds of $(numfmt --to=iec "$region"))," \
    "read, ${runtime} s latency, ${runtime} s mixed"
  serve "$target"
  job "$target" fill --rw=write --bs=1M --size="$size" --iodepth=4 --end_fsync=1
  "$replay" "$work/trace.fiu" "$(tgt_url "$IQN" 1)" >"$out/primary-$target-trace.json" ||
    bench_die "primary: the trace replay on $target failed"
  if [ "$target" = rdwr ]; then
    echo "{\"stored_bytes\": $(( $(stat -c %b "$work/rdwr/lun.img") * 512 ))}" >"$out/primary-rdwr-stats.json"
  else
    curl -sf "http://127.0.0.1:$MON_PORT/stats" >"$out/primary-$target-stats.json" ||
      bench_die "primary: the monitor of $target did not answer"
    if [ "$target" = out-of-band ]; then
      # The pass: rounds until no block of the volume is pending (blocks
      # stay hot for up to two periods, remapped ones are looked at once
      # more). Bounded: 300 s.
      t0=$SECONDS
      tgt_wait_for "curl -sf http://127.0.0.1:$MON_PORT/stats | python3 -c 'import json,sys; d=json.load(sys.stdin)[\"dedup\"]; sys.exit(0 if d[\"background_rounds\"] > 0 and d[\"background_blocks_pending\"] == 0 else 1)'" 300 ||
        bench_die "primary: the out-of-band pass did not finish in 300 s"
      bench_say "primary: out-of-band: the pass finished $((SECONDS - t0)) s after the trace"
    fi
    for _ in 1 2; do
      curl -sf -X POST "http://127.0.0.1:$MON_PORT/gc/run" >/dev/null || bench_die "primary: GC round on $target"
    done
    curl -sf "http://127.0.0.1:$MON_PORT/stats" >"$out/primary-$target-stats-gc.json" ||
      bench_die "primary: the monitor of $target did not answer"
  fi
  unserve
  sync
  echo 3 >/proc/sys/vm/drop_caches
  serve "$target"
  job "$target" read --rw=read --bs=1M --size="$region" --iodepth=4
  job "$target" latency --rw=randwrite --bssplit="$mix" --size="$size" --iodepth=1 --time_based --runtime="$runtime"
  job "$target" mixed --rw=randrw --rwmixread=70 --bssplit="$mix" --size="$size" --iodepth=16 --time_based \
    --runtime="$runtime"
  unserve
  [ "$target" = rdwr ] || rm -rf "$work/$target/data"
done

python3 "$here/primary_summary.py" "$out" "$size" "$region" "$rounds" "$runtime" >"$out/primary.json" ||
  bench_die "primary: summary"
python3 - "$out/primary.json" <<'EOF' >&2
import json, sys
j = json.load(open(sys.argv[1]))
for t in j["targets"]:
    r = j["targets"][t]
    print("primary: %-9s fio write p50 %5.0f p99 %6.0f us, %5.0f IOPS qd1, mixed %5.0f IOPS; trace write p50 %5.0f p99 %6.0f us;"
          " read after the trace %4.0f MB/s; saved %5.1f%%"
          % (t, r["write_p50_us"], r["write_p99_us"], r["write_iops_qd1"], r["mixed_iops"], r["trace_write_p50_us"],
             r["trace_write_p99_us"], r["read_mbps"], 100 * r.get("saved_share", float("nan"))))
    if "saved_share_after_gc" in r:
        print("primary: %-9s saved after %sGC %5.1f%%" % (t, "the pass and " if t == "out-of-band" else "",
                                                          100 * r["saved_share_after_gc"]))
EOF
trap - EXIT
rm -rf "$work"

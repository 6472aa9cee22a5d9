#!/usr/bin/env bash
# Scale-out II (issue 15, design-15 phase 6): ingest through 1, 2 and 3
# gateways on one private bluestore cluster (scripts/ceph-cluster), all in one
# run so that the figures compare side by side:
#   (a) rados bench of as many bytes as the largest round writes (4 MiB
#       objects, 16 in flight): the cluster's write bandwidth, the ceiling;
#       once before the rounds and once after them (the machine is noisy:
#       the rounds are compared with the mean of both)
#   (b) rounds of N gateways (BENCH_GATEWAYS_ORDER, default 1,2,3,3,2,1: the
#       order alternates because the machine is noisy): N dedupv1_bench
#       engine processes, gateway slots gw-1 .. gw-N of ONE store (a fresh
#       store per round), started together (--start-at), each writing its
#       own backup stream of two generations; per round the aggregate MB/s
#       (all bytes over the first start .. last end), per gateway MB/s,
#       RADOS ops per GiB and per 100 chunks, the chunk+hash ceiling
#   (c) shard load balance on the run's real fingerprints: keys per
#       chunk-table shard object (rados listomapvals per ci.*), max/mean,
#       after the first round with the most gateways
#   (a2) the cluster's omap rates (rados_tests GatewaySharedTable.
#       MeasureKeysPerOp, if built): keys per second of compare-and-set
#       writes at 16 and 256 keys per operation, for the simulator
#   (d) bench/gateways_summary.py: the summary and an inputs file for
#       dedupv1_gateway_sim with the costs measured here, then the simulator
#       on it (--inputs)
# The cluster is destroyed at the end whatever happens (trap); every engine
# process is waited for with a time bound and killed by its own pid after it.
#
#   bench/gateways-bench.sh [BIN_DIR [WORK_DIR [RESULTS_DIR]]]
#
# BIN_DIR (default build/bin) holds dedupv1_bench and dedupv1_gateway_sim;
# WORK_DIR (default a fresh /var/tmp/dedupv1-gateways-bench.XXXXXX, removed
# after; a WORK_DIR given is emptied first and left in place) takes the
# cluster and the gateways' local dirs; RESULTS_DIR (default bench/results)
# gets gateways-<date>.txt (summary and simulator output),
# gateways-sim-inputs-<date>.txt and raw/gateways-* (the tools' reports).
#
# Environment:
#   BENCH_GATEWAYS_SIZE=512M        bytes per generation per gateway
#   BENCH_GATEWAYS_ORDER=1,2,3,3,2,1  gateway counts of the rounds, in order
#   BENCH_GATEWAYS_SCOPE=gateway    gateway | cluster; cluster passes
#                                   --set storage.rados.dedup-scope=cluster
#                                   (one shared chunk index, claims and flips)
#   BENCH_GATEWAYS_SEEDS=distinct   distinct: gateway i writes the generator's
#                                   seed i, streams share no data (the issue's
#                                   0%-duplicates ingest); same: all write seed 1
#                                   (cluster scope stores it once, gateway scope N times)
#   BENCH_GATEWAYS_REDUNDANCY=      generation 1's internal redundancy (dedupv1_bench
#                                   --internal-redundancy; empty: the generator's
#                                   0.325); 0 with distinct seeds: no duplicate at all
#                                   in generation 1, the issue's 0%-duplicates ingest
#   BENCH_GATEWAYS_SHARDS=64        storage.rados.index-shards of the stores
#   BENCH_GATEWAYS_SET=             more engine settings, KEY=VALUE separated by
#                                   spaces (e.g. "dedup.threads=6"), passed as --set
#   BENCH_GATEWAYS_PORT_BASE=20750  the cluster's ports (N..N+99)
#   BENCH_GATEWAYS_OSD_BYTES=8G     bluestore file per OSD (sparse)
#   BENCH_GATEWAYS_ROUND_TIMEOUT=900  seconds a round may take before its processes are killed
#
# Exits 77 (skipped) when ceph-mon or rados is not installed.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
. "$here/bench-lib.sh"

bin="${1:-$repo/build/bin}"
work="${2:-}"
results="${3:-$repo/bench/results}"
size_arg="${BENCH_GATEWAYS_SIZE:-512M}"
order="${BENCH_GATEWAYS_ORDER:-1,2,3,3,2,1}"
scope="${BENCH_GATEWAYS_SCOPE:-gateway}"
seeds="${BENCH_GATEWAYS_SEEDS:-distinct}"
redundancy="${BENCH_GATEWAYS_REDUNDANCY:-}"
extra_set=()
for kv in ${BENCH_GATEWAYS_SET:-}; do
  [[ "$kv" == *=* ]] || bench_die "gateways: BENCH_GATEWAYS_SET takes KEY=VALUE words, not '$kv'"
  extra_set+=(--set "$kv")
done
shards="${BENCH_GATEWAYS_SHARDS:-64}"
port_base="${BENCH_GATEWAYS_PORT_BASE:-20750}"
osd_bytes="${BENCH_GATEWAYS_OSD_BYTES:-8G}"
round_timeout="${BENCH_GATEWAYS_ROUND_TIMEOUT:-900}"

bench_need_ceph_and gateways "$bin" dedupv1_bench dedupv1_gateway_sim
size="$(bench_bytes "$size_arg")" || bench_die "gateways: bad BENCH_GATEWAYS_SIZE $size_arg"
case "$scope" in gateway | cluster) ;; *) bench_die "gateways: BENCH_GATEWAYS_SCOPE is gateway or cluster, not '$scope'" ;; esac
case "$seeds" in distinct | same) ;; *) bench_die "gateways: BENCH_GATEWAYS_SEEDS is distinct or same, not '$seeds'" ;; esac
redundancy_args=()
if [ -n "$redundancy" ]; then
  [[ "$redundancy" =~ ^(0(\.[0-9]+)?|1(\.0+)?)$ ]] || bench_die "gateways: BENCH_GATEWAYS_REDUNDANCY is a share 0..1, not '$redundancy'"
  redundancy_args=(--internal-redundancy "$redundancy")
fi
[[ "$order" =~ ^[1-9](,[1-9])*$ ]] || bench_die "gateways: BENCH_GATEWAYS_ORDER is a list of counts 1-9, not '$order'"
IFS=, read -r -a counts <<<"$order"
most=0
for n in "${counts[@]}"; do [ "$n" -le "$most" ] || most="$n"; done

bench_work_dir "$work" dedupv1-gateways-bench
raw="$results/raw"
mkdir -p "$raw"
cluster="$work/ceph"
conf="$cluster/ceph.conf"
stamp="$(date -u +%Y%m%d-%H%M)"
summary="$results/gateways-$stamp.txt"
inputs="$results/gateways-sim-inputs-$stamp.txt"
pids=()

cleanup() {
  local p
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  "$repo/scripts/ceph-cluster" destroy --dir "$cluster" >/dev/null 2>&1 || true
  [ "$own_work" -eq 0 ] || rm -rf "$work"
}
trap cleanup EXIT

bench_step "gateways: private bluestore cluster in $cluster (port base $port_base, $osd_bytes per OSD)"
bench_ceph_start "$repo" "$cluster" "$port_base" "$osd_bytes"

# (a) rados bench of as many bytes as the largest round writes (two generations per gateway),
# into $1.
objects=$(((2 * most * size + (4 << 20) - 1) / (4 << 20)))
# The machine's CPU ticks (busy, idle+iowait) from /proc/stat, to say how
# much of the shared cores rados bench itself used (the summary's CPU bound).
cpu_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat; }
rados_bench() {
  bench_step "gateways: rados bench -p dedupv1-data write -t 16, $objects objects of 4 MiB (load $(bench_load))"
  local before
  before="$(cpu_ticks)"
  rados -c "$conf" bench -p dedupv1-data 300 write -t 16 --max-objects "$objects" --no-cleanup \
    --run-name dedupv1-gateways >"$1" 2>&1 ||
    { cat "$1" >&2; bench_die "gateways: rados bench failed"; }
  echo "$before $(cpu_ticks) $(nproc)" >"$1.cpu"  # busy idle before, busy idle after, cores
  rados -c "$conf" -p dedupv1-data cleanup --run-name dedupv1-gateways >/dev/null 2>&1 ||
    bench_say "gateways: warning: rados cleanup failed"
  grep -E '^(Bandwidth|Average IOPS|Average Latency)' "$1" >&2
}
rm -f "$raw/gateways-rados-bench-after.txt"
rados_bench "$raw/gateways-rados-bench.txt"

# The omap rates of this cluster for the simulator (compare-and-set writes
# of 16 and 256 keys per operation, GatewaySharedTable.MeasureKeysPerOp),
# when the test binary is there; else the simulator keeps its defaults.
if [ -x "$bin/rados_tests" ]; then
  bench_step "gateways: omap keys per second of this cluster (rados_tests MeasureKeysPerOp, load $(bench_load))"
  DEDUPV1_TEST_CEPH_CONF="$conf" timeout 300 "$bin/rados_tests" --gtest_also_run_disabled_tests \
    --gtest_filter=GatewaySharedTable.DISABLED_MeasureKeysPerOp >"$raw/gateways-omap-rates.txt" 2>&1 ||
    bench_say "gateways: warning: the omap rate measurement failed (the simulator keeps its defaults)"
fi

# Removes every object of namespace $1 in both pools (the round's store), so
# that the rounds do not fill the cluster.
remove_store() {
  local pool
  for pool in dedupv1-data dedupv1-index; do
    rados -c "$conf" -p "$pool" -N "$1" ls >"$work/objects" 2>/dev/null || continue
    [ -s "$work/objects" ] || continue
    xargs -a "$work/objects" -d '\n' -n 256 rados -c "$conf" -p "$pool" -N "$1" rm ||
      bench_say "gateways: warning: could not remove all of store $1 in $pool"
  done
}

# Keys per chunk-table object of store $1 into $2: "<object> <keys>" lines.
# Counted from listomapvals, which prints each key as a hex dump under a
# "key (N bytes):" line: listomapkeys prints the raw fingerprint bytes, and
# those that hold a newline byte would count twice.
count_shard_keys() {
  local obj
  rados -c "$conf" -p dedupv1-index -N "$1" ls | grep -E '(^|/)ci\.[0-9a-f]+$' | sort >"$work/shards"
  : >"$2"
  while read -r obj; do
    echo "$obj $(rados -c "$conf" -p dedupv1-index -N "$1" listomapvals "$obj" | grep -ac '^key ([0-9]* bytes):$')" >>"$2"
  done <"$work/shards"
}

# Waits for the pids in "${pids[@]}" until $1 (epoch seconds); kills what is left.
wait_round() {
  local deadline="$1" p rc=0 alive
  while :; do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" -eq 1 ] || break
    if [ "$(date +%s)" -ge "$deadline" ]; then
      for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
      bench_say "gateways: round timed out after $round_timeout s"
      rc=1
    fi
    sleep 1
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  pids=()
  return $rc
}

# (b) the rounds.
rm -f "$raw"/gateways-r*-n*-gw*.json "$raw"/gateways-shards-r*.txt
scope_set=()
[ "$scope" = gateway ] || scope_set=(--set "storage.rados.dedup-scope=$scope")
shards_counted=0
round=0
for n in "${counts[@]}"; do
  round=$((round + 1))
  store="gwbench-$$-r$round"
  # After every process measured its ceiling and opened its slot (the ceilings run at once).
  start_at=$(($(date +%s) + 5 + 3 * n))
  bench_step "gateways: round $round, $n gateway(s) on store $store, --size $size_arg each (load $(bench_load))"
  for i in $(seq 1 "$n"); do
    seed=1
    [ "$seeds" = same ] || seed="$i"
    "$bin/dedupv1_bench" engine --size "$size_arg" --json --no-reopen --seed "$seed" --start-at "$start_at" \
      --data-dir "$work/gw-$i" --set storage.backend=rados --set "storage.rados.conf=$conf" \
      --set "storage.rados.store=$store" --set "storage.rados.gateway=gw-$i" \
      --set "storage.rados.index-shards=$shards" "${scope_set[@]}" "${redundancy_args[@]}" "${extra_set[@]}" \
      >"$raw/gateways-r$round-n$n-gw$i.json" 2>"$work/gw-$i.err" &
    pids+=($!)
  done
  if ! wait_round $(($(date +%s) + round_timeout)); then
    for i in $(seq 1 "$n"); do cat "$work/gw-$i.err" >&2; done
    bench_die "gateways: round $round ($n gateways) failed"
  fi
  cat "$raw"/gateways-r$round-n$n-gw*.json >&2
  if [ "$n" -eq "$most" ] && [ "$shards_counted" -eq 0 ]; then
    bench_step "gateways: keys per chunk-table shard of store $store"
    count_shard_keys "$store" "$raw/gateways-shards-r$round.txt"
    shards_counted=1
  fi
  remove_store "$store"
  rm -rf "$work"/gw-*
done

rados_bench "$raw/gateways-rados-bench-after.txt"

# (d) summary, simulator inputs, simulator.
python3 "$here/gateways_summary.py" "$raw" "$summary" "$inputs" "$scope" "$seeds${redundancy:+ (generation 1 internal redundancy $redundancy)}${BENCH_GATEWAYS_SET:+; settings $BENCH_GATEWAYS_SET}" "$size_arg"
{
  echo
  echo "dedupv1_gateway_sim --inputs $(basename "$inputs") --gateways 1,2,3,10,30,100 --osds 3,30,300:"
  "$bin/dedupv1_gateway_sim" --inputs "$inputs" --gateways 1,2,3,10,30,100 --osds 3,30,300 2>&1 ||
    echo "(the simulator refused the inputs)"
  echo
  echo "the inputs file:"
  cat "$inputs"
} >>"$summary"
cat "$summary" >&2
bench_say "gateways: summary in $summary"

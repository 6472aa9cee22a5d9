#!/usr/bin/env bash
# Real data (issue 17, item 5): two full backups made from files that Debian
# packages ship (bench/real-data-gen.sh: 16 packages, the second generation
# after the security updates since the point release), ingested in one run
#   - by borg and restic (bench/peers-bench.sh: they back up the same tar
#     files), next to dedupv1's engine in process (dedupv1_bench files);
#   - through iSCSI by one client (dedupv1_traffic --input, one stream) into
#     a dedup LUN pair and into tgt's rdwr LUN pair of the same private tgtd
#     (bench/iscsi-bench.sh).
# Reports: OUT/real-*.json (peers and engine), OUT/real-iscsi-*.json.
#
#   real-data-bench.sh BUILD_DIR WORK_DIR OUT_DIR [TOOLS]
#
# BENCH_REAL_CACHE (default /var/cache/dedupv1/realdata) keeps the packages
# and the generations between runs. Exits 77 when the packages cannot be
# downloaded (no Debian archive reachable).
set -uo pipefail
build="$(readlink -f "${1:?usage: real-data-bench.sh BUILD_DIR WORK OUT [TOOLS]}")"
work="${2:?}"
out="${3:?}"
tools="${4:-borg,restic}"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/bench-lib.sh"
cache="${BENCH_REAL_CACHE:-/var/cache/dedupv1/realdata}"

bench_say "real: the generations (Debian packages, cached in $cache)"
rc=0
bash "$here/real-data-gen.sh" "$cache" || rc=$?
if [ "$rc" -eq 3 ]; then
  bench_say "real: skipped (a package could not be downloaded: no Debian archive reachable)"
  exit 77
fi
[ "$rc" -eq 0 ] || bench_die "real: the generations could not be built (exit $rc)"
cp "$cache/versions.txt" "$out/real-versions.txt"

rc=0
PEERS_FILES="$cache/gen1.tar $cache/gen2.tar" PEERS_PREFIX=real \
  bash "$here/peers-bench.sh" "$build/bin/dedupv1_traffic" "$build/bin/dedupv1_bench" "$work/peers" "$out" 0 \
  "$tools" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || bench_die "real: the peers failed"

rc=0
ISCSI_BENCH_INPUT="$cache/gen%d.tar" ISCSI_BENCH_PREFIX=real-iscsi \
  bash "$here/iscsi-bench.sh" "$build/lib/bs_dedupv1.so" "$build/bin/dedupv1_traffic" "$work/iscsi" "$out" 0 1 ||
  rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || bench_die "real: the iSCSI run failed"
bench_say "real: done"

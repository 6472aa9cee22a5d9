#!/usr/bin/env bash
# The whole Ceph cluster stopped under a running dedupv1d target (storage
# backend rados, storage.rados.op-timeout = 10s), on a bluestore cluster of
# the test's own (scripts/ceph-cluster; restartable with its data):
#  - while the cluster is down, a write's SYNCHRONIZE CACHE fails with an
#    I/O error at the initiator within a bounded time (no hang), and reads
#    return the stored data or an error, never other data;
#  - after the cluster is back, the same target serves again: a write and
#    its sync succeed, and every write synced before the outage reads back;
#  - the store checks clean afterwards.
#
#   dedupv1d-rados-outage-test.sh DEDUPV1D [PORT_BASE]
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-600}"
dd_init dedupv1d-rados-outage "${1:?usage: dedupv1d-rados-outage-test.sh DEDUPV1D [PORT_BASE]}" qemu-img qemu-io ceph
port_base="${2:-20300}"
cluster="$here/../../scripts/ceph-cluster"
bin="$(dirname "$DEDUPV1D")"
ceph_dir="$WORK/ceph"

# The cluster goes before the work dir does (dd_cleanup removes it).
cluster_cleanup() { "$cluster" destroy --dir "$ceph_dir" >/dev/null 2>&1 || true; dd_cleanup; }
trap cluster_cleanup EXIT

check "a private bluestore cluster starts" "$cluster" start --dir "$ceph_dir" --objectstore bluestore \
  --port-base "$port_base" --osd-bytes 4G
conf="$WORK/dedupv1.conf"
data="$WORK/data"
DEDUPV1_TEST_CEPH_CONF="$ceph_dir/ceph.conf" DD_STORAGE=rados DD_RADOS_TIMEOUT=10s \
  dd_write_config "$conf" "$data" "volume = vol1 64M"
head -c $((16 << 20)) /dev/urandom >"$WORK/before.img"
head -c $((1 << 20)) /dev/urandom >"$WORK/during.img"
head -c $((1 << 20)) /dev/urandom >"$WORK/after.img"

# io CMD...: one bounded qemu-io session on LUN 1 (-c commands).
io() { timeout -s KILL 120 qemu-io -f raw "$@" "$(dd_url 1)"; }
# readback OFFSET FILE: the LUN at OFFSET holds FILE.
readback() {
  local n
  n=$(stat -c %s "$2")
  timeout 300 qemu-img convert -f raw -O raw "$(dd_url 1)" "$WORK/lun.img" &&
    cmp -i "$1:0" -n "$n" "$WORK/lun.img" "$2"
}

check "start on the rados store" dd_start "$conf"
check "16 MiB written and synced" timeout 300 qemu-img convert -n -t writeback -f raw -O raw "$WORK/before.img" "$(dd_url 1)"
check "it reads back" readback 0 "$WORK/before.img"

check "the whole cluster stops" "$cluster" stop --dir "$ceph_dir"
start=$(date +%s)
io -c "write -s $WORK/during.img $((32 << 20)) $((1 << 20))" -c flush >"$WORK/last.out" 2>&1
rc=$?
elapsed=$(($(date +%s) - start))
if [ "$rc" -ne 0 ] && grep -qiE "error|failed" "$WORK/last.out"; then
  ok "a write with its sync fails with an I/O error while the cluster is down (${elapsed} s)"
else
  fail "the write and sync did not fail while the cluster was down (exit $rc)"
  sed 's/^/     /' "$WORK/last.out" | tail -n 10
fi
if [ "$elapsed" -lt 110 ]; then ok "the error came within ${elapsed} s (no hang)"; else
  fail "the error took ${elapsed} s"; fi
# A read may be served from the caches or fail; never other data.
if timeout -s KILL 120 qemu-img convert -f raw -O raw "$(dd_url 1)" "$WORK/lun.img" 2>"$WORK/read.err"; then
  if cmp -n $((16 << 20)) "$WORK/lun.img" "$WORK/before.img"; then ok "a read during the outage returned the stored data"
  else fail "a read during the outage returned other data"; fi
else
  ok "a read during the outage failed with an error ($(head -c 120 "$WORK/read.err"))"
fi

check "the cluster starts again with its data" "$cluster" start --dir "$ceph_dir" --objectstore bluestore \
  --port-base "$port_base"
# The target serves again: bounded retries while the engine's backoff ends.
served=0
for _ in $(seq 1 12); do
  if io -c "write -s $WORK/after.img $((40 << 20)) $((1 << 20))" -c flush >"$WORK/last.out" 2>&1 &&
     ! grep -qiE "error|failed" "$WORK/last.out"; then
    served=1
    break
  fi
  sleep 5
done
if [ "$served" = 1 ]; then ok "after the cluster returned, a write and its sync succeed"; else
  fail "the target did not serve again"; sed 's/^/     /' "$WORK/last.out" | tail -n 10; fi
check "the data synced before the outage reads back" readback 0 "$WORK/before.img"
check "the write after the outage reads back" readback $((40 << 20)) "$WORK/after.img"
check "stop" dd_stop "$conf"
check "dedupv1_check is clean" "$bin/dedupv1_check" --config "$conf"
dd_summary

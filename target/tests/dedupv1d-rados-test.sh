#!/usr/bin/env bash
# dedupv1d on the RADOS backend (storage.backend = rados) in the ctest Ceph
# cluster (fixture "ceph", DEDUPV1_TEST_CEPH_CONF), seen through iSCSI:
#  - backup data written and synced through the LUNs reads back;
#  - kill -9 of one OSD during writes: the writes go on, nothing is lost, the
#    OSD comes back and the cluster heals;
#  - the offline tools (check, debug, replay) work on the RADOS-backed store;
#  - the gateway is only a cache: its local directory deleted, the same config
#    on a fresh directory serves every volume with every synced write;
#  - bad input: a wrong pool name, an unreachable cluster and a cephx user
#    without write caps stop the start with an error naming them, and what
#    was stored stays readable.
#
#   dedupv1d-rados-test.sh DEDUPV1D
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-600}"
dd_init dedupv1d-rados "${1:?usage: dedupv1d-rados-test.sh DEDUPV1D}" qemu-img qemu-io
: "${DEDUPV1_TEST_CEPH_CONF:?needs the ctest Ceph cluster (DEDUPV1_TEST_CEPH_CONF)}"
export DD_STORAGE=rados DD_IO_TIMEOUT=300  # put, same: 48 MiB with an OSD down
cluster_dir="$(dirname "$DEDUPV1_TEST_CEPH_CONF")"
cluster="$here/../../scripts/ceph-cluster"
bin="$(dirname "$DEDUPV1D")"

conf="$WORK/dedupv1.conf"
data="$WORK/data"
dd_write_config "$conf" "$data" "volume = vol1 64M" "volume = vol2 64M"
# Backup-like data: a generation with repeats, so it deduplicates.
head -c $((24 << 20)) /dev/urandom >"$WORK/gen1.img"
cat "$WORK/gen1.img" "$WORK/gen1.img" | head -c $((40 << 20)) >"$WORK/gen2.img"
head -c $((8 << 20)) /dev/urandom >>"$WORK/gen2.img"


check "start on the rados store" dd_start "$conf"
check "generation 1 written to LUN 1" put "$WORK/gen1.img" 1
check "generation 1 reads back" same "$WORK/gen1.img" 1
check "nothing but runtime files in the local data dir" \
  bash -c "! find '$data' -type f ! -name LOCK ! -name 'dedupv1d*' ! -name 'tgtd*' | grep ."

# kill -9 of one OSD while generation 2 is written.
put "$WORK/gen2.img" 2 >"$WORK/writer.out" 2>&1 &
writer=$!
DD_PIDS+=("$writer")
sleep 1
check "kill -9 of osd.2 during the writes" "$cluster" kill-osd --dir "$cluster_dir" --id 2
if wait "$writer"; then ok "the writes went on and were synced with an OSD down"; else
  fail "writes failed with an OSD down"; sed 's/^/     /' "$WORK/writer.out"; fi
check "generation 2 reads back with the OSD down" same "$WORK/gen2.img" 2
check "osd.2 restarted" "$cluster" start-osd --dir "$cluster_dir" --id 2
check "generation 1 still reads back" same "$WORK/gen1.img" 1

check "stop" dd_stop "$conf"
check "dedupv1_check is clean on the RADOS store" "$bin/dedupv1_check" --config "$conf"
check "dedupv1_debug volumes reads the store" "$bin/dedupv1_debug" --config "$conf" volumes
check_output "dedupv1_debug lists vol2" "vol2"
check "dedupv1_debug log reads the RADOS log" "$bin/dedupv1_debug" --config "$conf" log
check "dedupv1_replay checkpoints the store" "$bin/dedupv1_replay" --config "$conf"

# The gateway is only a cache.
rm -rf "$data"
check "start on a fresh local directory" dd_start "$conf"
check "generation 1 reads back through the new gateway dir" same "$WORK/gen1.img" 1
check "generation 2 reads back through the new gateway dir" same "$WORK/gen2.img" 2
check "stop again" dd_stop "$conf"

# Bad input.
bad="$WORK/bad-pool.conf"
sed 's/^storage.rados.store = .*/&\nstorage.rados.index-pool = no-such-pool/' "$conf" >"$bad"
check_fails "start with a missing pool is refused" dd_start "$bad"
check_output "the error names the pool" "no-such-pool"
printf '[global]\nmon_host = 127.0.0.1:9\nauth_client_required = none\n' >"$WORK/nowhere.ceph.conf"
unreachable="$WORK/unreachable.conf"
sed -e "s|^storage.rados.conf = .*|storage.rados.conf = $WORK/nowhere.ceph.conf|" \
  -e 's/^storage.rados.op-timeout = .*/storage.rados.op-timeout = 3s/' "$conf" >"$unreachable"
start=$(date +%s)
check_fails "start with an unreachable cluster is refused" dd_start "$unreachable"
check_output "the error says the cluster is unreachable" "unreachable"
elapsed=$(($(date +%s) - start))
if [ "$elapsed" -lt 60 ]; then ok "refused within ${elapsed} s (op timeout 3 s)"; else
  fail "the refusal took ${elapsed} s"; fi
# A cephx user without write caps on the pools.
ro_user="client.dd-readonly-$$"
ceph -c "$DEDUPV1_TEST_CEPH_CONF" auth get-or-create "$ro_user" mon 'allow r' osd 'allow r' \
  -o "$WORK/readonly.keyring" >/dev/null 2>&1
readonly_conf="$WORK/readonly.conf"
{ cat "$conf"; echo "storage.rados.client = $ro_user"; echo "storage.rados.keyring = $WORK/readonly.keyring"; } \
  >"$readonly_conf"
check_fails "start as a user without write caps is refused" dd_start "$readonly_conf"
check_output "the error names the user's missing caps" "lacks the caps|not permitted|Operation not permitted"
ceph -c "$DEDUPV1_TEST_CEPH_CONF" auth del "$ro_user" >/dev/null 2>&1 || true
check "after the refusals the store starts again" dd_start "$conf"
check "generation 2 still reads back" same "$WORK/gen2.img" 2
check "final stop" dd_stop "$conf"
dd_summary

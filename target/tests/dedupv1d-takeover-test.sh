#!/usr/bin/env bash
# dedupv1d takeover (design-15 2.2, docs/ceph.md): gateway slot gw-a of one
# RADOS store in the ctest Ceph cluster (fixture "ceph",
# DEDUPV1_TEST_CEPH_CONF), served by instance A, then taken over by instance
# B (another data dir, portal and control port: another machine):
#  - A's tgtd killed -9 after a synced write: `takeover` (no force) waits for
#    A's lease, fences A's recorded address, starts B, and every synced byte
#    reads back through B;
#  - B alive: `takeover` of A without --force is refused after two leases
#    naming the holder, and starts nothing;
#  - `takeover --force` fences B at once: A serves again, B's writes fail,
#    A's data reads back.
#
#   dedupv1d-takeover-test.sh DEDUPV1D
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-600}"
dd_init dedupv1d-takeover "${1:?usage: dedupv1d-takeover-test.sh DEDUPV1D}" qemu-img
: "${DEDUPV1_TEST_CEPH_CONF:?needs the ctest Ceph cluster (DEDUPV1_TEST_CEPH_CONF)}"
export DD_STORAGE=rados DD_RADOS_LEASE=5s DD_IO_TIMEOUT=120

PORT2="$(tgt_free_port 20000 60000)" || exit 1
CTL2="$(tgt_free_control_port)" || exit 1
mkdir -p "$WORK/a" "$WORK/b"
confA="$WORK/a/dedupv1.conf"
confB="$WORK/b/dedupv1.conf"
slot=("volume = vol1 32M" "storage.rados.store = dd-$$-takeover" "storage.rados.gateway = gw-a")
dd_write_config "$confA" "$WORK/a/data" "${slot[@]}"
dd_write_config "$confB" "$WORK/b/data" "${slot[@]}" "target.control-port = $CTL2"
head -c $((12 << 20)) /dev/urandom >"$WORK/gen1.img"
head -c $((12 << 20)) /dev/urandom >"$WORK/gen2.img"
head -c $((4 << 20)) /dev/urandom >"$WORK/late.img"

urlA() { echo "iscsi://127.0.0.1:$PORT/$IQN/1"; }
urlB() { echo "iscsi://127.0.0.1:$PORT2/$IQN/1"; }
takeoverA() { DD_CONFIGS+=("$confA"); timeout 300 "$DEDUPV1D" takeover --config "$confA" --portal "127.0.0.1:$PORT" "$@"; }
takeoverB() { DD_CONFIGS+=("$confB"); timeout 300 "$DEDUPV1D" takeover --config "$confB" --portal "127.0.0.1:$PORT2" "$@"; }

check "A starts gateway slot gw-a" dd_start "$confA"
check "generation 1 written and synced through A" put "$WORK/gen1.img" "$(urlA)"
pidA="$(dd_pid "$WORK/a/data")"
check "kill -9 of A's tgtd" kill -KILL "$pidA"
check "A's tgtd is gone" tgt_wait_for "! tgt_alive $pidA" 10

check "B takes the slot over (no force: waits for A's lease)" takeoverB
check_output "the takeover fenced A's recorded address" "fenced: [^n]"
check_output "the registry counts the takeover" "incarnation 2, takeover 1"
check "generation 1 reads back through B" same "$WORK/gen1.img" "$(urlB)"

check_exit 1 "takeover of a live holder without --force is refused" takeoverA
check_output "the refusal names the holder and --force" "still held by client\..*pid [0-9]+.*--force"
check "nothing runs for A" bash -c "! test -e '$WORK/a/data/dedupv1d.state'"
check "B still serves" same "$WORK/gen1.img" "$(urlB)"

check "A takes the slot back with --force (no wait)" takeoverA --force
check_output "the registry counts the second takeover" "incarnation 3, takeover 2"
check "B's writes are refused: it was fenced" refused put "$WORK/late.img" "$(urlB)"
check "B's log names the fence" grep -Eq "blocklisted|fenced" "$WORK/b/data/tgtd.log"
check "generation 2 written and synced through A" put "$WORK/gen2.img" "$(urlA)"
check "generation 2 reads back through A" same "$WORK/gen2.img" "$(urlA)"
check "stop A" dd_stop "$confA"
# B's engine was fenced: its stop cannot close the slot cleanly.
timeout 300 "$DEDUPV1D" stop --config "$confB" >"$WORK/stopB.out" 2>&1
check "B's tgtd is gone after its stop" tgt_wait_for "! dd_tgtd_with_ctl $CTL2" 60

dd_summary

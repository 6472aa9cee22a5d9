#!/usr/bin/env bash
# dedupv1d watch (design-15 2.2 "Automatic", docs/ceph.md): gateway slot gw-a
# of one RADOS store in the ctest Ceph cluster (fixture "ceph",
# DEDUPV1_TEST_CEPH_CONF), served by instance A; B (another data dir, portal,
# control port and monitor: another machine) runs `dedupv1d watch` for it.
#  - synced writes through A, then kill -9 of A's tgtd: B's watcher takes the
#    slot over within the lease + a bound, and every synced byte reads back
#    through B's portal;
#  - B's LUN has A's SCSI identity (VPD 0x80 serial = the volume's uid,
#    VPD 0x83 device ids): the same WWID, so dm-multipath treats both portals
#    as paths of one device;
#  - `dedupv1d cluster --json` and B's monitor (GET /cluster) show B as the
#    holder (lock held, its tgtd's pid, its portal in the heartbeat) and
#    takeovers = 1;
#  - the watcher ends cleanly on SIGTERM;
#  - two watchers (A's machine and a third, C) race for the slot after kill -9
#    of B: exactly one wins (the slot's lock), the other says so and watches
#    on; every synced byte of both generations reads back through the winner;
#    takeovers = 2;
#  - the winner's tgtd paused (SIGSTOP) until B's new watcher took the slot
#    over, then resumed: its writes are refused, B's data stays; its
#    heartbeat never overwrites B's;
#  - a slot stopped cleanly by its holder is left alone by a watcher
#    (`watch --once`).
#
#   dedupv1d-auto-failover-test.sh DEDUPV1D
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-800}"
dd_init dedupv1d-auto-failover "${1:?usage: dedupv1d-auto-failover-test.sh DEDUPV1D}" qemu-img curl jq iscsi-inq
: "${DEDUPV1_TEST_CEPH_CONF:?needs the ctest Ceph cluster (DEDUPV1_TEST_CEPH_CONF)}"
export DD_STORAGE=rados DD_RADOS_LEASE=5s DD_IO_TIMEOUT=120
LEASE=5
TAKEOVER_BOUND=60  # after the lease: two looks, the fence, tgtd's start and the slot's recovery

PORT2="$(tgt_free_port 20000 60000)" || exit 1
CTL2="$(tgt_free_control_port)" || exit 1
MON2="$(tgt_free_port 20000 60000)" || exit 1
while [ "$MON2" = "$PORT2" ] || [ "$MON2" = "$PORT" ]; do MON2="$(tgt_free_port 20000 60000)" || exit 1; done
PORT3="$(tgt_free_port 20000 60000)" || exit 1
CTL3="$(tgt_free_control_port)" || exit 1
while [ "$PORT3" = "$PORT2" ] || [ "$PORT3" = "$PORT" ] || [ "$PORT3" = "$MON2" ]; do
  PORT3="$(tgt_free_port 20000 60000)" || exit 1
done
while [ "$CTL3" = "$CTL2" ] || [ "$CTL3" = "$CTL" ]; do CTL3="$(tgt_free_control_port)" || exit 1; done
mkdir -p "$WORK/a" "$WORK/b" "$WORK/c"
confA="$WORK/a/dedupv1.conf"
confB="$WORK/b/dedupv1.conf"
confC="$WORK/c/dedupv1.conf"
slot=("volume = vol1 32M" "storage.rados.store = dd-$$-autofailover" "storage.rados.gateway = gw-a")
dd_write_config "$confA" "$WORK/a/data" "${slot[@]}"
dd_write_config "$confB" "$WORK/b/data" "${slot[@]}" "target.control-port = $CTL2" \
  "monitor.enabled = true" "monitor.host = 127.0.0.1" "monitor.port = $MON2"
dd_write_config "$confC" "$WORK/c/data" "${slot[@]}" "target.control-port = $CTL3"
head -c $((12 << 20)) /dev/urandom >"$WORK/gen1.img"
head -c $((8 << 20)) /dev/urandom >"$WORK/gen2.img"

urlA() { echo "iscsi://127.0.0.1:$PORT/$IQN/1"; }
urlB() { echo "iscsi://127.0.0.1:$PORT2/$IQN/1"; }
urlC() { echo "iscsi://127.0.0.1:$PORT3/$IQN/1"; }
cluster_json() { timeout 120 "$DEDUPV1D" cluster --config "$confB" --json; }
# gw JQ_FILTER: true if the filter holds for slot gw-a in `cluster --json`.
gw() { cluster_json >"$WORK/cluster.json" && jq -e ".gateways[] | select(.gateway == \"gw-a\") | $1" "$WORK/cluster.json"; }
# mon_gw JQ_FILTER: the same through B's monitor.
mon_gw() {
  curl -sf --max-time 60 "http://127.0.0.1:$MON2/cluster" >"$WORK/mon.json" &&
    jq -e ".gateways[] | select(.gateway == \"gw-a\") | $1" "$WORK/mon.json"
}

check "A starts gateway slot gw-a" dd_start "$confA"
pidA="$(dd_pid "$WORK/a/data")"
check "generation 1 written and synced through A" put "$WORK/gen1.img" "$(urlA)"
# The heartbeat thread writes the volume list after the LUN was added:
# waited for, like B's below.
check "cluster view: A holds gw-a and beats, vol1 belongs to gw-a" \
  tgt_wait_for "gw '.lock_held and .state == \"serving\" and .holder.pid == $pidA and .heartbeat.state == \"serving\"
      and .heartbeat.portal == \"127.0.0.1:$PORT\" and .heartbeat.volumes == [\"vol1\"] and .takeovers == 0'" 10
check "cluster view: the volume -> slot map" jq -e '.volumes.vol1 == "gw-a"' "$WORK/cluster.json"
# The LUN's identity (VPD 0x80 serial, 0x83 device ids: what multipath's
# WWID is made of) comes from the volume's uid in the slot's volume table.
check "A's LUN: VPD 0x80 serial" bash -c "timeout 60 iscsi-inq -e 1 -c 128 '$(urlA)' >'$WORK/vpd80.a'"
check "A's LUN: VPD 0x83 device ids" bash -c "timeout 60 iscsi-inq -e 1 -c 131 '$(urlA)' >'$WORK/vpd83.a'"
uid="$(jq -r '.gateways[0].volumes[0].uid' "$WORK/cluster.json")"
check "the serial is the volume's uid" grep -aq "Unit Serial Number:\[ *$uid\]" "$WORK/vpd80.a"
check "the T10 device id is made of the uid" grep -aq "Designator:\[DEDUPV1 ${uid:4}\]" "$WORK/vpd83.a"
check "cluster (text) prints the slot" bash -c "timeout 120 '$DEDUPV1D' cluster --config '$confB' | grep -E '^gw-a +1 +serving'"

DD_CONFIGS+=("$confB")
"$DEDUPV1D" watch --config "$confB" --portal "127.0.0.1:$PORT2" --interval 1 >"$WORK/watch.log" 2>&1 &
watcher=$!
DD_PIDS+=("$watcher")
check "the watcher sees A holding the slot" tgt_wait_for "grep -q 'gw-a: lock held by' '$WORK/watch.log'" 30

check "kill -9 of A's tgtd" kill -KILL "$pidA"
killed_at=$(date +%s)
check "A's tgtd is gone" tgt_wait_for "! tgt_alive $pidA" 10
check "B's watcher takes gw-a over within the lease + $TAKEOVER_BOUND s" \
  tgt_wait_for "grep -q 'took gateway slot gw-a over' '$WORK/watch.log'" $((LEASE + TAKEOVER_BOUND))
echo "     takeover done $(($(date +%s) - killed_at)) s after the kill -9 (lease $LEASE s)"
check "the watcher fenced A's recorded address" grep -q "fenced: [^n]" "$WORK/watch.log"
check "generation 1 reads back through B" same "$WORK/gen1.img" "$(urlB)"
check "B's LUN has A's VPD 0x80 serial (same WWID for multipath)" bash -c "timeout 60 iscsi-inq -e 1 -c 128 '$(urlB)' | cmp - '$WORK/vpd80.a'"
check "B's LUN has A's VPD 0x83 device ids" bash -c "timeout 60 iscsi-inq -e 1 -c 131 '$(urlB)' | cmp - '$WORK/vpd83.a'"
pidB="$(dd_pid "$WORK/b/data")"
check "cluster view: B holds gw-a, takeovers = 1, incarnation 2" \
  gw ".lock_held and .state == \"serving\" and .holder.pid == $pidB and .takeovers == 1 and .incarnation == 2"
check "cluster view: B's heartbeat names B's portal" \
  tgt_wait_for "gw '.heartbeat.incarnation == 2 and .heartbeat.portal == \"127.0.0.1:$PORT2\" and .heartbeat.volumes == [\"vol1\"]'" 10
check "B's monitor /cluster shows the same holder and takeovers = 1" \
  mon_gw ".lock_held and .holder.pid == $pidB and .takeovers == 1 and .incarnation == 2"
check "B's monitor /cluster: total takeovers and the volume's slot" jq -e '.takeovers == 1 and .volumes.vol1 == "gw-a"' "$WORK/mon.json"
check "the watcher sees B holding the slot" tgt_wait_for "grep -c 'gw-a: lock held by' '$WORK/watch.log' | grep -qx '[2-9]'" 30

kill -TERM "$watcher"
rc=0
wait "$watcher" || rc=$?
check "the watcher ends cleanly on SIGTERM (exit 0)" test "$rc" -eq 0
check "the watcher says why it ended" grep -q "stopped by a signal" "$WORK/watch.log"
check "B keeps serving after its watcher ended" same "$WORK/gen1.img" "$(urlB)"

# Two watchers race for the slot (A's machine again and a third, C): the
# slot's lock lets one win; the other's takeover fails and it watches on.
check "generation 2 written and synced through B" put "$WORK/gen2.img" "$(urlB)"
"$DEDUPV1D" watch --config "$confA" --portal "127.0.0.1:$PORT" --interval 1 >"$WORK/watchA.log" 2>&1 &
watchA=$!
"$DEDUPV1D" watch --config "$confC" --portal "127.0.0.1:$PORT3" --interval 1 >"$WORK/watchC.log" 2>&1 &
watchC=$!
DD_PIDS+=("$watchA" "$watchC")
DD_CONFIGS+=("$confA" "$confC")
check "both watchers see B holding the slot" \
  tgt_wait_for "grep -q 'gw-a: lock held by' '$WORK/watchA.log' && grep -q 'gw-a: lock held by' '$WORK/watchC.log'" 30
check "kill -9 of B's tgtd" kill -KILL "$pidB"
killed_at=$(date +%s)
took() { grep -l 'took gateway slot gw-a over' "$WORK/watchA.log" "$WORK/watchC.log" 2>/dev/null | wc -l; }
check "one watcher takes gw-a over within the lease + $TAKEOVER_BOUND s" \
  tgt_wait_for '[ "$(took)" -ge 1 ]' $((LEASE + TAKEOVER_BOUND))
echo "     takeover done $(($(date +%s) - killed_at)) s after the kill -9"
if grep -q 'took gateway slot gw-a over' "$WORK/watchA.log"; then
  winner=a url="$(urlA)" loser_log="$WORK/watchC.log" winner_conf="$confA" loser_conf="$confC" loser_ctl="$CTL3"
  loser_portal="127.0.0.1:$PORT3"
else
  winner=c url="$(urlC)" loser_log="$WORK/watchA.log" winner_conf="$confC" loser_conf="$confA" loser_ctl="$CTL"
  loser_portal="127.0.0.1:$PORT"
fi
# The loser either raced (its takeover fails within two leases of waiting
# plus its start) or looked only after the winner held the lock.
check "the other watcher lost the race or saw the winner holding the slot" \
  tgt_wait_for "grep -q 'watch: takeover of gw-a failed' '$loser_log' || grep -q 'lock held by .*(incarnation 3' '$loser_log'" \
  $((3 * LEASE + TAKEOVER_BOUND))
if grep -q 'watch: takeover of gw-a failed' "$loser_log"; then
  echo "     winner: $winner; the other watcher raced and lost"
  check "the loser said it lost and watches on" grep -q "another watcher may have won" "$loser_log"
else
  echo "     winner: $winner; the other watcher saw the winner's lock before it tried"
fi
check "exactly one watcher took the slot" test "$(took)" -eq 1
# Generation 2 overwrote the first 8 MiB of generation 1.
cp "$WORK/gen1.img" "$WORK/both.img" && dd if="$WORK/gen2.img" of="$WORK/both.img" conv=notrunc status=none
check "both generations read back through the winner" same "$WORK/both.img" "$url"
pidW="$(dd_pid "$WORK/$winner/data")"
check "cluster view: the winner holds gw-a, takeovers = 2, incarnation 3" \
  gw ".lock_held and .holder.pid == $pidW and .takeovers == 2 and .incarnation == 3"
kill -TERM "$watchA" "$watchC"
rc=0
wait "$watchA" || rc=$?
wait "$watchC" || rc=$?
echo "--- watchA.log"; sed 's/^/     /' "$WORK/watchA.log" | grep -v '  | ' | tail -n 12
echo "--- watchC.log"; sed 's/^/     /' "$WORK/watchC.log" | grep -v '  | ' | tail -n 12

# A hung (not dead) holder: the winner's tgtd stopped with SIGSTOP until B's
# watcher took the slot over (its lease ran out; the takeover fences the
# address it recorded), then resumed: none of its writes may land.
"$DEDUPV1D" watch --config "$confB" --portal "127.0.0.1:$PORT2" --interval 1 >"$WORK/watchB2.log" 2>&1 &
watchB2=$!
DD_PIDS+=("$watchB2")
check "B's new watcher sees the winner holding the slot" \
  tgt_wait_for "grep -q 'gw-a: lock held by .*(incarnation 3' '$WORK/watchB2.log'" 30
check "SIGSTOP of the winner's tgtd" kill -STOP "$pidW"
stopped_at=$(date +%s)
check "B's watcher takes the paused winner's slot over within the lease + $TAKEOVER_BOUND s" \
  tgt_wait_for "grep -q 'took gateway slot gw-a over' '$WORK/watchB2.log'" $((LEASE + TAKEOVER_BOUND))
echo "     takeover done $(($(date +%s) - stopped_at)) s after the SIGSTOP"
check "the takeover fenced the paused winner's recorded address" grep -q "fenced: [^n]" "$WORK/watchB2.log"
head -c $((4 << 20)) /dev/urandom >"$WORK/gen3.img"
check "generation 3 written and synced through B" put "$WORK/gen3.img" "$(urlB)"
dd if="$WORK/gen3.img" of="$WORK/both.img" conv=notrunc status=none
check "SIGCONT of the winner's tgtd" kill -CONT "$pidW"
head -c $((4 << 20)) /dev/urandom >"$WORK/late.img"
check "the resumed winner's writes are refused (fenced)" refused put "$WORK/late.img" "$url"
check "every synced byte reads back through B, none of the late write" same "$WORK/both.img" "$(urlB)"
check "cluster view: B holds gw-a, takeovers = 3, incarnation 4" \
  gw ".lock_held and .holder.pid == $(dd_pid "$WORK/b/data") and .takeovers == 3 and .incarnation == 4"
kill -TERM "$watchB2"
wait "$watchB2"

check "stop B (clean)" dd_stop "$confB"
# The fenced winner cannot close cleanly; its heartbeat (incarnation 3) can
# never overwrite B's (incarnation 4).
timeout 300 "$DEDUPV1D" stop --config "$winner_conf" >"$WORK/stopW.out" 2>&1
check "the winner's tgtd is gone after its stop" tgt_wait_for "! tgt_alive $pidW" 60
check "cluster view: a clean stop says stopped, the fenced old holder did not overwrite it" \
  gw '.state == "stopped" and (.lock_held | not) and .heartbeat.state == "stopped" and .heartbeat.incarnation == 4'
check "a watcher leaves a cleanly stopped slot alone" \
  timeout 120 "$DEDUPV1D" watch --config "$loser_conf" --portal "$loser_portal" --interval 1 --once
check_output "it says the stop is the admin's" "left to the admin"
check_fails "nothing was started for the loser's config" dd_tgtd_with_ctl "$loser_ctl"
echo "--- watch.log"; sed 's/^/     /' "$WORK/watch.log" | tail -n 30

dd_summary

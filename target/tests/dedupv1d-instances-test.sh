#!/usr/bin/env bash
# Two instances on one host, and changes to a running instance's config
# (issue 19):
#  - a relative data-dir is relative to the config file: status and stop find
#    the instance from any directory (defect 7);
#  - a monitor port in use is refused before tgtd starts, naming the port and
#    who holds it (another instance's monitor, or another program), and
#    nothing is left running; a port taken after that check (test hook) fails
#    the start at the monitor identity check; dedupv1_mon --config of one
#    instance never acts on the other (defect 5);
#  - every LUN has its own SCSI serial and device id (two instances, two
#    volumes each), taken from the volume's uid; removing or reordering volume
#    lines keeps each volume's LUN and serial;
#  - growing a volume by recreating its LUN while the engine stays open grows
#    it at once; shrinking it that way is refused with the reason.
#
#   dedupv1d-instances-test.sh DEDUPV1D
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-600}"
dd_init dedupv1d-instances "${1:?usage: dedupv1d-instances-test.sh DEDUPV1D}" iscsi-inq iscsi-readcapacity16 python3
MON="$(dirname "$DEDUPV1D")/dedupv1_mon"
[ -x "$MON" ] || { echo "FAIL: $MON is not executable"; exit 1; }

PORT2="$(tgt_free_port 20000 60000)" || exit 1
CTL2="$(tgt_free_control_port)" || exit 1
MA="$(tgt_free_port 20000 60000)" || exit 1
MB="$(tgt_free_port 20000 60000)" || exit 1
mkdir -p "$WORK/a" "$WORK/b"
confA="$WORK/a/dedupv1.conf"
confB="$WORK/b/dedupv1.conf"
dataA="$WORK/a/data"
dataB="$WORK/b/data"
# A's data-dir is relative: "data", next to its config.
dd_write_config "$confA" data "volume = vol1 64M" "volume = vol2 32M" \
  "monitor.enabled = true" "monitor.port = $MA"
writeB() {  # writeB MONITOR_PORT
  dd_write_config "$confB" "$dataB" "volume = vol1 64M" "volume = vol2 32M" \
    "monitor.enabled = true" "monitor.port = $1" "target.control-port = $CTL2"
}
startB() { DD_CONFIGS+=("$confB"); timeout 300 "$DEDUPV1D" start --config "$confB" --portal "127.0.0.1:$PORT2" "$@"; }
# The test hook: as if the port were taken between start's check and the bind.
startB_past_the_port_check() { DEDUPV1D_TEST_SKIP_MONITOR_PORT_CHECK=1 startB; }
urlA() { echo "iscsi://127.0.0.1:$PORT/$IQN/$1"; }
urlB() { echo "iscsi://127.0.0.1:$PORT2/$IQN/$1"; }
serial() { iscsi-inq -e 1 -c 128 "$1" 2>/dev/null | sed -n 's/^Unit Serial Number:\[ *\(.*\)\]$/\1/p'; }
devid() { iscsi-inq -e 1 -c 131 "$1" 2>/dev/null | md5sum | cut -d' ' -f1; }
# uid of volume $2 in data dir $1's volume table.
uid() { awk -v v="$2" '$2 == v {print $4}' "$1/volumes"; }

# --- A relative data-dir (defect 7) ----------------------------------------
check "start A from its config's directory" sh -c "cd '$WORK/a' && exec timeout 300 '$DEDUPV1D' start --config dedupv1.conf --portal 127.0.0.1:$PORT"
DD_CONFIGS+=("$confA")
check "A's data dir is next to its config" test -e "$dataA/dedupv1d.state"
check "status from another directory" sh -c "cd / && exec timeout 60 '$DEDUPV1D' status --config '$confA'"
check_output "status names A's data dir" "^data dir: $dataA$"
check "status with a relative config path from the parent directory" \
  sh -c "cd '$WORK' && exec timeout 60 '$DEDUPV1D' status --config a/dedupv1.conf"

# --- The monitor port (defect 5) -------------------------------------------
idA="$(cat "$dataA/instance-id")"
writeB "$MA"
check_exit 1 "B on A's monitor port: refused" startB
check_output "B: names the port and the other instance" \
  "monitor port 127.0.0.1:$MA is in use by the monitor of data dir $dataA \\(instance $idA, pid [0-9]+\\).*nothing started"
check_fails "B: no tgtd" dd_tgtd_with_ctl "$CTL2"
check_fails "B: no state file" test -e "$dataB/dedupv1d.state"
check_exit 1 "B, port taken after the check: start fails" startB_past_the_port_check
check_output "B past the check: the identity check names the other instance" \
  "start failed: the monitor at http://127.0.0.1:$MA belongs to data dir $dataA \\(instance $idA"
check_output "B past the check: torn down" "nothing is running"
check_fails "B past the check: no tgtd" dd_tgtd_with_ctl "$CTL2"
check_fails "B past the check: no state file" test -e "$dataB/dedupv1d.state"
check "A untouched" dd_status "$confA"

# A program that is not dedupv1 on B's monitor port.
python3 -c "
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $MB)); s.listen(4); sys.stdout.write('listening\n'); sys.stdout.flush(); time.sleep(600)
" >"$WORK/squatter.out" 2>&1 &
squatter=$!
DD_PIDS+=("$squatter")
tgt_wait_for "grep -q listening '$WORK/squatter.out'" 30 || fail "the squatter does not listen"
writeB "$MB"
check_exit 1 "B on a port another program holds: refused" startB
check_output "B: names the program" "monitor port 127.0.0.1:$MB is in use by pid $squatter \\(python3\\)"
check_fails "B: no tgtd" dd_tgtd_with_ctl "$CTL2"
kill -TERM "$squatter" && wait "$squatter" 2>/dev/null
tgt_wait_for "! ss -Htln 'sport = :$MB' | grep -q ." 30
check "B with its own free monitor port starts" startB
check "dedupv1_mon --config A acts on A" timeout 60 "$MON" --config "$confA" flush
check "dedupv1_mon --config B acts on B" timeout 60 "$MON" --config "$confB" flush
check_exit 4 "dedupv1_mon for B at A's port: nothing sent" timeout 60 "$MON" --config "$confB" --port "$MA" gc-run
check_output "dedupv1_mon says which instance answers" "belongs to data dir $dataA .*not to data dir $dataB"

# --- SCSI identity ---------------------------------------------------------
sA1="$(serial "$(urlA 1)")" sA2="$(serial "$(urlA 2)")" sB1="$(serial "$(urlB 1)")" sB2="$(serial "$(urlB 2)")"
echo "serials: A1 $sA1, A2 $sA2, B1 $sB1, B2 $sB2"
n="$(printf '%s\n' "$sA1" "$sA2" "$sB1" "$sB2" | grep -c .)"
u="$(printf '%s\n' "$sA1" "$sA2" "$sB1" "$sB2" | sort -u | grep -c .)"
[ "$n" -eq 4 ] && [ "$u" -eq 4 ] && ok "4 LUNs, 4 different serials" || fail "serials not all different: $sA1 $sA2 $sB1 $sB2"
[ "$sA1" = "$(uid "$dataA" vol1)" ] && ok "A LUN 1's serial is vol1's uid" || fail "A LUN 1 serial $sA1, vol1 uid $(uid "$dataA" vol1)"
dA1="$(devid "$(urlA 1)")" dA2="$(devid "$(urlA 2)")" dB1="$(devid "$(urlB 1)")" dB2="$(devid "$(urlB 2)")"
u="$(printf '%s\n' "$dA1" "$dA2" "$dB1" "$dB2" | sort -u | wc -l)"
[ "$u" -eq 4 ] && ok "4 LUNs, 4 different device identification pages" || fail "device ids not all different"
check "stop B" dd_stop "$confB"

# vol1's line removed: vol2 stays LUN 2 with its serial, LUN 1 is gone.
check "stop A" dd_stop "$confA"
dd_write_config "$confA" data "volume = vol2 32M" "monitor.enabled = true" "monitor.port = $MA"
check "start A with vol1's line removed" dd_start "$confA"
check_output "vol2 is still LUN 2" "^LUN 2: +volume vol2, 32.0 MiB"
[ "$(serial "$(urlA 2)")" = "$sA2" ] && ok "LUN 2 keeps vol2's serial" || fail "LUN 2 serial $(serial "$(urlA 2)"), was $sA2"
[ "$(devid "$(urlA 2)")" = "$dA2" ] && ok "LUN 2 keeps vol2's device id" || fail "LUN 2 device id changed"
check_fails "no LUN 1" iscsi-inq "$(urlA 1)"
check "stop A" dd_stop "$confA"
# Back, in the other order: each volume has its old LUN and serial.
dd_write_config "$confA" data "volume = vol2 32M" "volume = vol1 64M" "monitor.enabled = true" "monitor.port = $MA"
check "start A with the lines reordered" dd_start "$confA"
check_output "vol1 is LUN 1 again" "^LUN 1: +volume vol1, 64.0 MiB"
[ "$(serial "$(urlA 1)")" = "$sA1" ] && ok "LUN 1 has vol1's serial" || fail "LUN 1 serial $(serial "$(urlA 1)"), was $sA1"
[ "$(serial "$(urlA 2)")" = "$sA2" ] && ok "LUN 2 has vol2's serial" || fail "LUN 2 serial changed"

# --- Growing a volume by recreating its LUN (the engine stays open) --------
dd_write_config "$confA" data "volume = vol2 32M" "volume = vol1 128M" "monitor.enabled = true" "monitor.port = $MA"
check "delete LUN 1 by hand" timeout 120 tgtadm -C "$CTL" --lld iscsi --op delete --mode logicalunit --tid 1 --lun 1
check "recreating LUN 1 grows vol1 in the open engine" timeout 120 tgtadm -C "$CTL" --lld iscsi --op new \
  --mode logicalunit --tid 1 --lun 1 --bstype dedupv1 --backing-store "$confA" --bsopts "volume=vol1;datadir=$dataA"
check "tgtd.log says so, with its policy" grep -q "volume 'vol1' is 134217728 bytes from now on (policy inline" "$dataA/tgtd.log"
check "LUN 1 has the new size at once" iscsi-readcapacity16 "$(urlA 1)"
check_output "LUN 1 is 128 MiB" "RETURNED LOGICAL BLOCK ADDRESS:$(((128 << 20) / 512 - 1))$"
[ "$(serial "$(urlA 1)")" = "$sA1" ] && ok "the grown LUN 1 keeps vol1's serial" || fail "LUN 1 serial changed by growing"
# A shrink the same way is refused, naming why; nothing changes.
dd_write_config "$confA" data "volume = vol2 32M" "volume = vol1 64M" "monitor.enabled = true" "monitor.port = $MA"
check "delete LUN 1 again" timeout 120 tgtadm -C "$CTL" --lld iscsi --op delete --mode logicalunit --tid 1 --lun 1
check_fails "recreating LUN 1 to shrink vol1 is refused" timeout 120 tgtadm -C "$CTL" --lld iscsi --op new \
  --mode logicalunit --tid 1 --lun 1 --bstype dedupv1 --backing-store "$confA" --bsopts "volume=vol1;datadir=$dataA"
check "tgtd.log says why" grep -q "cannot be applied to the open engine: .*volume vol1 holds 134217728 bytes" "$dataA/tgtd.log"
check_exit 1 "status reports the missing LUN" dd_status "$confA"
check_output "status names LUN 1" "^missing: +LUN 1 \\(volume vol1\\)"
check "stop A" dd_stop "$confA"
dd_write_config "$confA" data "volume = vol2 32M" "volume = vol1 128M" "monitor.enabled = true" "monitor.port = $MA"
check "start A" dd_start "$confA"
check "vol1 still 128 MiB after the restart" iscsi-readcapacity16 "$(urlA 1)"
check_output "LUN 1 is 128 MiB" "RETURNED LOGICAL BLOCK ADDRESS:$(((128 << 20) / 512 - 1))$"
check "stop A" dd_stop "$confA"

dd_summary

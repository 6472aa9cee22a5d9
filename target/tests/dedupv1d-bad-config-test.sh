#!/usr/bin/env bash
# dedupv1d refuses what it cannot serve, says why, and leaves nothing running:
#  - config errors (unknown key, bad volume size, unknown volume, bad target.*
#    values, missing file, no volume) are refused before tgtd is started
#    (exit 2, the engine's message naming the file, line and key; no tgtd,
#    no tgtd.log, no state file);
#  - a data dir that cannot be created, and a volume shrunk below the size in
#    the data dir's volume table, are refused the same way (exit 2);
#  - what only the engine can tell (a changed block size) fails the LUN
#    creation: dedupv1d prints tgtd's reason, tears tgtd down (exit 1);
#  - a store that lost its volume table is refused before tgtd starts too
#    (exit 2, naming the file; it is not recreated);
#  - a portal or control port already taken is refused before tgtd starts,
#    and the instance holding it keeps running.
#
#   dedupv1d-bad-config-test.sh DEDUPV1D
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-300}"
dd_init dedupv1d-bad-config "${1:?usage: dedupv1d-bad-config-test.sh DEDUPV1D}" iscsi-ls

data="$WORK/data"

# refused_early DESCRIPTION REGEX CONFIG [ARGS...]: exit 2, REGEX on stderr,
# nothing started.
refused_early() {
  local what="$1" regex="$2" conf="$3" rc
  shift 3
  dd_start "$conf" "$@" >"$WORK/last.out" 2>&1
  rc=$?
  if [ "$rc" -eq 2 ]; then ok "$what: refused (exit 2)"; else fail "$what: exit $rc, not 2"; sed 's/^/     /' "$WORK/last.out"; fi
  check_output "$what: says why" "$regex"
  if dd_tgtd_with_ctl "$CTL"; then fail "$what: a tgtd runs"; else ok "$what: no tgtd"; fi
  if [ -e "$data/tgtd.log" ] || [ -e "$data/dedupv1d.state" ]; then
    fail "$what: tgtd.log or state file created"
  else
    ok "$what: no tgtd.log, no state file"
  fi
}

c="$WORK/unknown-key.conf"
dd_write_config "$c" "$data" "volume = vol1 64M" "colour = blue"
refused_early "unknown key" "unknown-key.conf:7: unknown key 'colour'" "$c"

c="$WORK/bad-size.conf"
dd_write_config "$c" "$data" "volume = vol1 1000"
refused_early "size not a multiple of 512" "bad-size.conf:6: volume: volume vol1: size must be a non-zero multiple of 512" "$c"

c="$WORK/bad-unit.conf"
dd_write_config "$c" "$data" "volume = vol1 12Q"
refused_early "size with an unknown unit" "bad-unit.conf:6: volume: .*12Q" "$c"

c="$WORK/good.conf"
dd_write_config "$c" "$data" "volume = vol1 64M" "volume = vol2 32M"
refused_early "unknown volume" "no volume named 'nosuch' in .*good.conf \(volumes: vol1, vol2\)" "$c" --volume nosuch

c="$WORK/no-volume.conf"
dd_write_config "$c" "$data"
refused_early "no volume" "declares no volume" "$c"

refused_early "missing config file" "config file .*nosuch.conf does not exist" "$WORK/nosuch.conf"

c="$WORK/bad-iqn.conf"
dd_write_config "$c" "$data" "volume = vol1 64M" "target.iqn = IQN.2026-11.org.Example"
refused_early "bad target.iqn" "target.iqn 'IQN.2026-11.org.Example' is not an iSCSI name" "$c"

c="$WORK/bad-portal.conf"
dd_write_config "$c" "$data" "volume = vol1 64M" "target.portal = localhost:3260"
refused_early "portal not numeric" "target.portal 'localhost:3260'.*not a numeric IPv4 address" "$c"
refused_early "--portal port out of range" "override: target.portal: .*'127.0.0.1:99999': port must be 1..65535" \
  "$WORK/good.conf" --portal 127.0.0.1:99999

c="$WORK/chap.conf"
dd_write_config "$c" "$data" "volume = vol1 64M" "target.chap-user = backup"
refused_early "CHAP user without password" "target.chap-user and target.chap-password go together" "$c"

c="$WORK/chap-short.conf"
dd_write_config "$c" "$data" "volume = vol1 64M" "target.chap-user = backup" "target.chap-password = short"
refused_early "CHAP secret too short" "target.chap-password must be 12..255 characters" "$c"

c="$WORK/acl.conf"
dd_write_config "$c" "$data" "volume = vol1 64M" "target.initiator-address = 10.0.0.0/33"
refused_early "bad initiator network" "target.initiator-address '10.0.0.0/33'" "$c"

# A data dir that cannot be created is refused like a config (exit 2).
touch "$WORK/a-file"
c="$WORK/bad-dir.conf"
dd_write_config "$c" "$WORK/a-file/data" "volume = vol1 64M"
refused_early "data dir under a file" "data dir refused, nothing started: cannot create $WORK/a-file/data" "$c"

# vol1 holds 64 MiB: a config shrinking it to 32 MiB is refused from the data
# dir's volume table before tgtd starts (exit 2).
check "start vol1 64M" dd_start "$WORK/good.conf"
check "stop" dd_stop "$WORK/good.conf"
rm -f "$data/tgtd.log"
c="$WORK/shrunk.conf"
dd_write_config "$c" "$data" "volume = vol1 32M" "volume = vol2 32M"
refused_early "shrunk volume" "data dir refused, nothing started: .*volume vol1 holds 67108864 bytes but the config says 33554432; shrinking a volume would lose data" "$c"

# Only the engine knows the data dir's block size: a config changing it is
# refused when tgtd creates the first LUN; dedupv1d reports tgtd's reason and
# tears tgtd down (exit 1).
c="$WORK/block-size.conf"
dd_write_config "$c" "$data" "volume = vol1 64M" "volume = vol2 32M" "block-size = 64K"
check_exit 1 "changed block size: start fails" dd_start "$c"
check_output "changed block size: names the failed step" "start failed: creating LUN 1 \(volume vol1\)"
check_output "changed block size: the engine's reason from tgtd.log" "was created with block-size = 131072 but the config says 65536"
check_output "changed block size: torn down" "nothing is running"
check_fails "changed block size: no tgtd left" dd_tgtd_with_ctl "$CTL"
check_fails "changed block size: no state file" test -e "$data/dedupv1d.state"
check_fails "changed block size: no control socket left" test -e "/var/run/tgtd/socket.$CTL"

# A store that lost its volume table (issue 19): refused before tgtd starts
# (exit 2, InspectDataDir, the engine's own rule) naming the file, instead of
# giving the volumes new ids in config order; the file is not recreated, and
# dedupv1_check says the same.
mv "$data/volumes" "$WORK/volumes.aside"
rm -f "$data/tgtd.log"
refused_early "volumes missing" "data dir refused, nothing started: .*$data/volumes is missing" "$WORK/good.conf"
check_fails "volumes missing: not recreated" test -e "$data/volumes"
check_dir="$(dirname "$DEDUPV1D")"
"$check_dir/dedupv1_check" --config "$WORK/good.conf" >"$WORK/last.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] && ok "volumes missing: dedupv1_check refuses too (exit 1)" || fail "volumes missing: dedupv1_check exit $rc, not 1"
check_output "volumes missing: dedupv1_check names the file" "$data/volumes is missing"
mv "$WORK/volumes.aside" "$data/volumes"

# Portal and control port taken by a running instance.
check "start the first instance" dd_start "$WORK/good.conf"
first="$(dd_pid "$data")"
other_ctl="$(tgt_free_control_port)"
c="$WORK/other.conf"
dd_write_config "$c" "$WORK/other-data" "volume = vol1 64M"
check_exit 1 "portal in use: refused" dd_start "$c" --control-port "$other_ctl"
check_output "portal in use: says why" "portal 127.0.0.1:$PORT is not available: Address already in use"
check_fails "portal in use: no second tgtd" dd_tgtd_with_ctl "$other_ctl"
other_port="$(tgt_free_port 20000 60000)"
check_exit 1 "control port in use: refused" timeout 60 "$DEDUPV1D" start --config "$c" --portal "127.0.0.1:$other_port"
check_output "control port in use: says why" "tgtd control port $CTL is in use by another tgtd"
check_fails "control port in use: no state file" test -e "$WORK/other-data/dedupv1d.state"
check "first instance still runs" tgt_alive "$first"
check "first instance still answers" dd_status "$WORK/good.conf"
cp "$data/dedupv1d.state" "$WORK/state.kept"
check "stop the first instance" dd_stop "$WORK/good.conf"
check_fails "no tgtd left" dd_tgtd_with_ctl "$CTL"

# A killed tgtd whose main thread is gone (a zombie) while another thread still
# holds its files and the control socket's lock (as one in a long fsync does):
# a start waits for the last thread instead of refusing the port.
python3 - "$CTL" "$WORK/dying.ready" <<'PYEOF' &
import ctypes, fcntl, os, sys, threading, time
fd = os.open("/var/run/tgtd/socket.%s.lock" % sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
libc = ctypes.CDLL(None)
threading.Thread(target=libc.pause).start()  # ctypes drops the GIL in pause()
time.sleep(0.5)
open(sys.argv[2], "w").close()
libc.pthread_exit(None)  # only the main thread ends: the leader is a zombie
PYEOF
dying=$!
tgt_wait_for "test -e '$WORK/dying.ready'" 10
sed "s/^pid = .*/pid = $dying/" "$WORK/state.kept" >"$data/dedupv1d.state"
check "the dying process's main thread is a zombie" tgt_wait_for "ps -o stat= -p $dying | grep -q '^Z'" 10
(sleep 3; kill -KILL "$dying") &
killer=$!
check "start after a kill whose last thread lingers: waits for it" dd_start "$WORK/good.conf"
check_output "it says the last start is gone" "of the last start is gone"
wait "$killer"
wait "$dying" 2>/dev/null
check "that start serves" dd_status "$WORK/good.conf"
check "stop it" dd_stop "$WORK/good.conf"

dd_summary

#!/usr/bin/env bash
# dedupv1d start/status/stop seen from an initiator (libiscsi's tools): the
# target and one LUN per config volume in config order with the volume's size
# and thin provisioning, a second start refused, a clean stop (no tgtd, socket
# or state file left); initiator-name ACL and incoming CHAP enforced; the
# shipped docs/examples/dedupv1.conf works as is; discovery needs CHAP when
# CHAP is configured (unless target.discovery-auth = false); a stall of
# tgtd's event loop is logged.
#
#   dedupv1d-iscsi-test.sh DEDUPV1D
#
# Exits 77 (skipped) when not root or tgtd / libiscsi-bin are missing.
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-300}"
dd_init dedupv1d-iscsi "${1:?usage: dedupv1d-iscsi-test.sh DEDUPV1D}" iscsi-ls iscsi-inq iscsi-readcapacity16

conf="$WORK/dedupv1.conf"
data="$WORK/data"
dd_write_config "$conf" "$data" "volume = vol1 64M" "volume = vol2 32M" "volume = vol3 16M"

check "dedupv1d start" dd_start "$conf"
pid="$(dd_pid "$data")"
check "state file names a running tgtd" tgt_alive "${pid:-0}"
check "status while running exits 0" dd_status "$conf"
check_output "status names the target" "^target: +$IQN "
check_output "status names the portal" "^portal: +127.0.0.1:$PORT$"
check_output "status lists LUN 1 = vol1" "^LUN 1: +volume vol1, 64.0 MiB \(67108864 bytes\), dedupv1, .*online"
check_output "status lists LUN 2 = vol2" "^LUN 2: +volume vol2, 32.0 MiB"
check_output "status lists LUN 3 = vol3" "^LUN 3: +volume vol3, 16.0 MiB"
# A state file of an older dedupv1d (no "configured" line) is a finished start.
sed -i '/^configured = /d' "$data/dedupv1d.state"
check "status with an older state file exits 0" dd_status "$conf"
check_fails "second start refused" dd_start "$conf"
check_output "second start says why" "already running: tgtd pid $pid"
check "first tgtd still serves after the refused start" tgt_alive "$pid"

check "iscsi-ls lists the target and its LUNs" iscsi-ls -s "iscsi://127.0.0.1:$PORT"
check_output "iscsi-ls: target" "Target:$IQN Portal:127.0.0.1:$PORT"
for lun in 1 2 3; do
  grep -q "^Lun:$lun *Type:DIRECT_ACCESS" "$WORK/last.out" && ok "iscsi-ls: LUN $lun is a disk" ||
    fail "iscsi-ls: LUN $lun missing"
done
lun=1
for size in 64 32 16; do
  check "iscsi-inq LUN $lun" iscsi-inq "$(dd_url $lun)"
  check_output "LUN $lun: direct access device" "^Peripheral Device Type:DIRECT_ACCESS$"
  check "iscsi-readcapacity16 LUN $lun" iscsi-readcapacity16 "$(dd_url $lun)"
  check_output "LUN $lun: $size MiB" "RETURNED LOGICAL BLOCK ADDRESS:$(((size << 20) / 512 - 1))$"
  check_output "LUN $lun: thin provisioned (LBPME)" "LBPME:1"
  lun=$((lun + 1))
done
check "iscsi-inq logical block provisioning VPD" iscsi-inq -e 1 -c 178 "$(dd_url 1)"
check_output "VPD 0xb2 announces UNMAP" "^lbpu:1"

# tgtd's event loop stood still (the process stopped for 7 s): the module
# says so in tgtd's log once the loop runs again, and the target serves on.
before="$(wc -l <"$data/tgtd.log")"
kill -STOP "$pid"
sleep 7
kill -CONT "$pid"
stall_logged() { tail -n +"$((before + 1))" "$data/tgtd.log" | grep -o "event loop ran again after [0-9]*\.[0-9] s"; }
if tgt_wait_for stall_logged 10; then
  ok "tgtd's log names the event loop's stall: $(stall_logged | tail -n 1)"
else
  fail "no stall of tgtd's event loop in its log"
fi
check "iscsi-inq after the stall" iscsi-inq "$(dd_url 1)"

check "dedupv1d stop" dd_stop "$conf"
check_output "stop says so" "tgtd pid $pid stopped"
check_fails "tgtd gone" tgt_alive "$pid"
check_fails "no tgtd with our control port" dd_tgtd_with_ctl "$CTL"
check_fails "control socket removed" test -e "/var/run/tgtd/socket.$CTL"
check_fails "state file removed" test -e "$data/dedupv1d.state"
check_exit 3 "status when stopped" dd_status "$conf"
check_output "status says not running" "not running"
check_exit 3 "stop when stopped" dd_stop "$conf"
check_output "stop when stopped says so" "not running: no instance serves data dir $data .*nothing stopped"

# ACL by initiator name, incoming CHAP, a target name of our own.
acl_iqn=iqn.2026-11.org.example.test:target
good=iqn.2026-11.org.example:backup1
conf2="$WORK/acl.conf"
dd_write_config "$conf2" "$data" "volume = vol1 64M" "target.iqn = $acl_iqn" \
  "target.initiator-name = $good" "target.chap-user = backup" "target.chap-password = s3cret-s3cret"
check "start with ACL and CHAP" dd_start "$conf2"
check_output "status shows the name ACL" "^ACL: +$good$"
check_output "status shows the CHAP account, for discovery too" "^CHAP: +backup \(discovery too\)$"
chap_url="iscsi://backup%s3cret-s3cret@127.0.0.1:$PORT/$acl_iqn/1"
# Discovery (SendTargets) needs the CHAP account too (target.discovery-auth).
check "discovery with CHAP lists the target" iscsi-ls -i "$good" "iscsi://backup%s3cret-s3cret@127.0.0.1:$PORT"
check_output "discovery with CHAP: the target" "Target:$acl_iqn Portal:127.0.0.1:$PORT"
iscsi-ls -i "$good" "iscsi://127.0.0.1:$PORT" >"$WORK/last.out" 2>&1
if grep -q "$acl_iqn" "$WORK/last.out"; then fail "discovery without CHAP lists the target"; else ok "discovery without CHAP lists nothing"; fi
iscsi-ls -i "$good" "iscsi://backup%wrong-secret-1@127.0.0.1:$PORT" >"$WORK/last.out" 2>&1
if grep -q "$acl_iqn" "$WORK/last.out"; then fail "discovery with a wrong secret lists the target"; else ok "discovery with a wrong secret lists nothing"; fi
check "admitted name with CHAP logs in" iscsi-inq -i "$good" "$chap_url"
check_fails "admitted name without CHAP refused" iscsi-inq -i "$good" "iscsi://127.0.0.1:$PORT/$acl_iqn/1"
check_fails "wrong CHAP secret refused" iscsi-inq -i "$good" \
  "iscsi://backup%wrong-secret-1@127.0.0.1:$PORT/$acl_iqn/1"
check_fails "other initiator name refused" iscsi-inq -i iqn.2026-11.org.example:intruder "$chap_url"
check "stop (ACL)" dd_stop "$conf2"
# target.discovery-auth = false: logins still need CHAP, discovery does not.
conf3="$WORK/open-discovery.conf"
dd_write_config "$conf3" "$data" "volume = vol1 64M" "target.iqn = $acl_iqn" \
  "target.initiator-name = $good" "target.chap-user = backup" "target.chap-password = s3cret-s3cret" \
  "target.discovery-auth = false"
check "start with open discovery" dd_start "$conf3"
check_output "status: CHAP for logins only" "^CHAP: +backup$"
check "discovery without CHAP lists the target" iscsi-ls -i "$good" "iscsi://127.0.0.1:$PORT"
check_output "open discovery: the target" "Target:$acl_iqn"
check_fails "login without CHAP still refused" iscsi-inq -i "$good" "iscsi://127.0.0.1:$PORT/$acl_iqn/1"
check "stop (open discovery)" dd_stop "$conf3"

# The shipped example config, as is, with a data dir and portal of ours. It
# uses control port 0 (tgtd's default): skipped if a tgtd already has it.
example="$here/../../docs/examples/dedupv1.conf"
DD_CONFIGS+=("$example --data-dir $WORK/example")
timeout 300 "$DEDUPV1D" start --config "$example" --data-dir "$WORK/example" \
  --portal "127.0.0.1:$PORT" >"$WORK/last.out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q "control port 0 is in use" "$WORK/last.out"; then
  echo "skip docs/examples/dedupv1.conf: a tgtd already uses control port 0"
else
  [ "$rc" -eq 0 ] && ok "docs/examples/dedupv1.conf starts as is" ||
    { fail "docs/examples/dedupv1.conf starts as is"; sed 's/^/     /' "$WORK/last.out"; }
  check_output "example: LUN 1 = backup1" "^LUN 1: +volume backup1, 100(\.0)? GiB"
  check_output "example: LUN 2 = backup2" "^LUN 2: +volume backup2, 100(\.0)? GiB"
  check "example: iscsi-readcapacity16 LUN 2" iscsi-readcapacity16 "$(dd_url 2)"
  check_output "example: LUN 2 is 100 GiB" "RETURNED LOGICAL BLOCK ADDRESS:$(((100 << 30) / 512 - 1))$"
  check "example: stop" timeout 300 "$DEDUPV1D" stop --config "$example" --data-dir "$WORK/example"
fi

dd_summary

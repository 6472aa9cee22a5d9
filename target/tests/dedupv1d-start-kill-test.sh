#!/usr/bin/env bash
# A target is never reachable before its authentication and ACL are complete
# (issue 19 defect 4): dedupv1d start is SIGKILLed after each of its steps in
# turn (test hook DEDUPV1D_TEST_KILL_AFTER_STEP, target/dedupv1d_main.cc) and
# each time
#  - no initiator logs in or discovers the target without CHAP credentials,
#  - `dedupv1d status` says FAILED and names what is missing (exit 1), until
#    the last step, after which the instance is complete (exit 0),
#  - a second start refuses to run beside it, and stop removes it.
# The start that is not killed serves with CHAP for logins and discovery.
#
#   dedupv1d-start-kill-test.sh DEDUPV1D
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-600}"
dd_init dedupv1d-start-kill "${1:?usage: dedupv1d-start-kill-test.sh DEDUPV1D}" iscsi-ls iscsi-inq

conf="$WORK/dedupv1.conf"
data="$WORK/data"
mport="$(tgt_free_port 20000 60000)" || exit 1
dd_write_config "$conf" "$data" "volume = vol1 64M" "volume = vol2 32M" \
  "target.chap-user = backup" "target.chap-password = s3cret-s3cret" \
  "monitor.enabled = true" "monitor.port = $mport"
creds="backup%s3cret-s3cret@"

# The ways in without credentials (all must fail or list nothing).
no_way_in() {  # no_way_in WHAT
  if iscsi-inq "iscsi://127.0.0.1:$PORT/$IQN/1" >"$WORK/inq.out" 2>&1; then
    fail "$1: a login without CHAP got in"
  else
    ok "$1: no login without CHAP"
  fi
  iscsi-ls "iscsi://127.0.0.1:$PORT" >"$WORK/ls.out" 2>&1
  if grep -q "$IQN" "$WORK/ls.out"; then fail "$1: discovery without CHAP lists the target"; else ok "$1: discovery without CHAP lists nothing"; fi
}

steps=0
for k in $(seq 1 20); do
  DEDUPV1D_TEST_KILL_AFTER_STEP=$k dd_start "$conf" >"$WORK/start.out" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    steps=$((k - 1))
    break
  fi
  if [ "$rc" -ne 137 ]; then
    fail "kill after step $k: start exit $rc, not 137 (SIGKILL)"
    sed 's/^/     /' "$WORK/start.out" | tail -n 20
    break
  fi
  what="killed after step $k ($(sed -n 's/.*test hook: killing dedupv1d after step [0-9]* (\(.*\))$/\1/p' "$WORK/start.out"))"
  pid="$(dd_pid "$data")"
  check "$what: tgtd runs" tgt_alive "${pid:-0}"
  no_way_in "$what"
  dd_status "$conf" >"$WORK/last.out" 2>&1
  rc=$?
  if grep -q "^configured = yes" "$data/dedupv1d.state"; then
    # Killed after the last step: complete.
    [ "$rc" -eq 0 ] && ok "$what: status says running (complete)" || fail "$what: status exit $rc, not 0"
    check "$what: login with CHAP" iscsi-inq "iscsi://${creds}127.0.0.1:$PORT/$IQN/1"
  else
    [ "$rc" -eq 1 ] && ok "$what: status exits 1" || fail "$what: status exit $rc, not 1"
    check_output "$what: status says FAILED" "^dedupv1d: FAILED: tgtd pid $pid .* runs half configured"
    check_output "$what: status says the start did not finish" "^missing: +the start did not finish"
    case "$what" in
      *admitting*) check_output "$what: status shows the ACL" "^ACL: +ALL$" ;;
      *) check_output "$what: status names the missing ACL" "^missing: +ACL entry ALL" ;;
    esac
    check_exit 1 "$what: a second start is refused" dd_start "$conf"
    check_output "$what: the second start says why" "a half-configured instance runs: tgtd pid $pid"
  fi
  check "$what: stop" dd_stop "$conf"
  check_fails "$what: no tgtd left" dd_tgtd_with_ctl "$CTL"
done
# target, LUN 1, LUN 2, monitor, CHAP account, bound to the target, to
# discovery, ACL ALL, the state marked complete.
[ "$steps" -eq 9 ] && ok "start has 9 steps, each killed once" || fail "start had $steps steps, expected 9"

# The complete start (from the loop's last round).
check "status of the complete start" dd_status "$conf"
check_output "CHAP for logins and discovery" "^CHAP: +backup \(discovery too\)$"
no_way_in "complete"
check "login with CHAP" iscsi-inq "iscsi://${creds}127.0.0.1:$PORT/$IQN/1"
check "discovery with CHAP" iscsi-ls "iscsi://${creds}127.0.0.1:$PORT"
check_output "discovery with CHAP lists the target" "Target:$IQN"

# A piece removed behind dedupv1d's back is reported: the account unbound
# from discovery, then from the target.
check "unbind the CHAP account from discovery by hand" timeout 60 tgtadm -C "$CTL" --lld iscsi --op unbind \
  --mode account --user backup
check_exit 1 "status of discovery without CHAP" dd_status "$conf"
check_output "status names the missing discovery binding" "^missing: +CHAP account backup is not bound to discovery"
check "unbind the CHAP account by hand" timeout 60 tgtadm -C "$CTL" --lld iscsi --op unbind --mode account \
  --tid 1 --user backup
check_exit 1 "status of a target without its CHAP binding" dd_status "$conf"
check_output "status names the missing binding" "^missing: +CHAP account backup is not bound to the target"
check "stop" dd_stop "$conf"

dd_summary

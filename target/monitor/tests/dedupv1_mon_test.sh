#!/usr/bin/env bash
# dedupv1_mon against a live monitor (monitor_test_server): readable views,
# raw JSON, control with and without the token, --watch, the instance check
# (--config / --data-dir / --instance: another instance answering gets nothing),
# and the exit codes (0 ok, 1 server error, 2 usage, 3 cannot connect, 4 wrong
# instance).
#
#   dedupv1_mon_test.sh DEDUPV1_MON MONITOR_TEST_SERVER
set -u
MON=${1:?usage: $0 DEDUPV1_MON MONITOR_TEST_SERVER}
SERVER=${2:?usage: $0 DEDUPV1_MON MONITOR_TEST_SERVER}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dedupv1-mon-test.XXXXXX")
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill -TERM "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
not_ok() { failed=$((failed + 1)); echo "FAILED: $1"; }

# expect CODE DESCRIPTION PATTERN -- COMMAND...: runs COMMAND, checks its exit
# code and that stdout+stderr match the extended regex PATTERN ("" = any).
expect() {
  local code=$1 what=$2 pattern=$3
  shift 4
  "$@" >"$tmp/out" 2>&1
  local rc=$?
  if [ "$rc" -ne "$code" ]; then
    not_ok "$what: exit $rc, expected $code"
    sed 's/^/    /' "$tmp/out" | head -20
  elif [ -n "$pattern" ] && ! grep -Eq -- "$pattern" "$tmp/out"; then
    not_ok "$what: output does not match /$pattern/"
    sed 's/^/    /' "$tmp/out" | head -20
  else
    ok "$what"
  fi
}

# eventually CODE DESCRIPTION PATTERN -- COMMAND...: like expect, but retries
# up to 300 times (0.1 s apart) until the output matches: for effects the
# engine's background thread applies at its next tick.
eventually() {
  local code=$1 what=$2 pattern=$3
  shift 4
  local rc
  for _ in $(seq 1 300); do
    "$@" >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" -eq "$code" ] && grep -Eq -- "$pattern" "$tmp/out"; then
      ok "$what"
      return
    fi
    sleep 0.1
  done
  not_ok "$what: exit $rc, output does not match /$pattern/"
  sed 's/^/    /' "$tmp/out" | head -20
}

# wait_for_port PID FILE: until the server PID wrote its port to FILE (at
# most 60 s) or exited.
wait_for_port() {
  for _ in $(seq 1 600); do
    [ -s "$2" ] && return 0
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

"$SERVER" --data-dir "$tmp/data" --port-file "$tmp/port" --token s3cret --write-mib 8 \
  >"$tmp/server.out" 2>&1 &
server_pid=$!
if ! wait_for_port "$server_pid" "$tmp/port"; then
  echo "monitor_test_server did not start:"; cat "$tmp/server.out"
  echo "0 passed, 1 failed"
  exit 1
fi
port=$(cat "$tmp/port")
m() { "$MON" --port "$port" --data-dir "$tmp/data" "$@"; }

expect 0 "stats view" "ratio +[0-9]+\.[0-9]{2}" -- m stats
expect 0 "stats shows human sizes" "logical +8\.00 MiB" -- m stats
expect 0 "volumes table" "vol1 +1 +64\.0 MiB" -- m volumes
expect 0 "one volume" "name +vol2" -- m volumes name=vol2
expect 0 "raw JSON" '^\{' -- m --json stats
expect 0 "leading slash" "dedupv1" -- m /version
expect 0 "metrics as text" "^dedupv1_written_bytes_total 8388608$" -- m metrics
expect 0 "config table" "volume +vol1 67108864" -- m config
expect 0 "idle view" "mode +auto" -- m idle
expect 0 "idle thresholds" "throughput threshold +1\.00 MiB/s" -- m idle
expect 0 "gc view" "chunks deleted +[0-9]+" -- m gc
expect 0 "history" "\[1 s samples\]" -- m history
expect 0 "watch with count" "" -- m --watch 0.2 --count 3 version
if [ "$(grep -c '^version ' "$tmp/out")" -eq 3 ]; then ok "watch printed 3 rounds"; else not_ok "watch printed $(grep -c '^version ' "$tmp/out") rounds"; fi

expect 1 "unknown monitor" "no endpoint /nosuch" -- m nosuch
expect 1 "unknown volume" "no volume 'nope'" -- m volumes name=nope
expect 1 "unknown parameter" "unknown parameter 'x'" -- m stats x=1
expect 1 "control without token" "answered 403" -- m flush
expect 1 "control with wrong token" "answered 403" -- m --token wrong flush
expect 0 "flush with token" "flushed" -- m --token s3cret flush
expect 1 "force-idle without token" "answered 403" -- m force-idle
expect 0 "token from the environment" "mode +idle" -- env DEDUPV1_MON_TOKEN=s3cret "$MON" --port "$port" --data-dir "$tmp/data" force-idle
expect 0 "idle state forced" "forced +yes" -- m idle
eventually 0 "forced idle becomes idle" "^idle +yes" -- m idle
eventually 0 "forced idle checkpoints" "idle checkpoints +[1-9]" -- m idle
expect 0 "idle metric" "^dedupv1_idle 1$" -- m metrics
expect 0 "force busy" "mode +busy" -- m --token s3cret force-busy
eventually 0 "forced busy is not idle" "^idle +no" -- m idle
expect 0 "idle metric busy" "^dedupv1_idle 0$" -- m metrics
expect 0 "force auto" "mode +auto" -- m --token s3cret force-auto
expect 0 "auto is not forced" "forced +no" -- m idle
expect 1 "gc-run without token" "answered 403" -- m gc-run
expect 0 "gc-run" "garbage collection round finished" -- m --token s3cret gc-run
expect 1 "replay-pause without token" "answered 403" -- m replay-pause
expect 0 "replay-pause" "replay paused +yes" -- m --token s3cret replay-pause
expect 0 "log shows the pause" "replay paused +yes" -- m log
expect 0 "replay paused metric" "^dedupv1_replay_paused 1$" -- m metrics
expect 0 "replay-resume" "replay paused +no" -- m --token s3cret replay-resume
expect 0 "log shows the resume" "replay paused +no" -- m log
expect 0 "replay resumed metric" "^dedupv1_replay_paused 0$" -- m metrics
expect 1 "raw JSON error" '"status": 404' -- m --json nosuch

# Which instance answers. A second data dir with an instance id of its own
# (a second server, started and stopped), and configs naming each.
"$SERVER" --data-dir "$tmp/other" --port-file "$tmp/other-port" --write-mib 0 >"$tmp/other.out" 2>&1 &
other_pid=$!
wait_for_port "$other_pid" "$tmp/other-port"
kill -TERM "$other_pid" 2>/dev/null
wait "$other_pid"
[ -s "$tmp/other/instance-id" ] && ok "second data dir has an instance id" || not_ok "no $tmp/other/instance-id"
printf 'data-dir = data\nmonitor.port = %s\nmonitor.token = s3cret\n' "$port" >"$tmp/this.conf"
printf 'data-dir = %s/other\nmonitor.port = %s\nmonitor.token = s3cret\n' "$tmp" "$port" >"$tmp/other.conf"
expect 0 "identity" "instance id +$(cat "$tmp/data/instance-id")" -- m identity
expect 2 "control without naming the instance" "needs --config FILE, --data-dir DIR or --instance ID" -- \
  "$MON" --port "$port" --token s3cret flush
expect 0 "control with --config (port, token, data dir from it)" "flushed" -- "$MON" --config "$tmp/this.conf" flush
expect 0 "control with --instance" "flushed" -- "$MON" --port "$port" --token s3cret \
  --instance "$(cat "$tmp/data/instance-id")" flush
expect 4 "another instance's config: nothing sent" \
  "monitor at http://127.0.0.1:$port belongs to data dir $tmp/data .*not to data dir $tmp/other.*nothing sent" -- \
  "$MON" --config "$tmp/other.conf" gc-run
expect 4 "another instance's data dir, GET too" "belongs to data dir $tmp/data" -- \
  "$MON" --port "$port" --data-dir "$tmp/other" stats
expect 4 "a wrong instance id" "belongs to .*not to instance 0123456789abcdef0123456789abcdef" -- \
  "$MON" --port "$port" --token s3cret --instance 0123456789abcdef0123456789abcdef flush
expect 4 "a data dir never opened" "has no instance id.*nothing sent" -- \
  "$MON" --port "$port" --data-dir "$tmp/never" flush
expect 2 "a bad instance id" "--instance needs 32 hex digits" -- "$MON" --port "$port" --instance xyz flush

expect 2 "no monitor" "no monitor given" -- "$MON"
expect 2 "bad port" "--port needs" -- "$MON" --port abc stats
expect 2 "unknown option" "unknown option --bogus" -- "$MON" --bogus stats
expect 2 "watch of a control command" "--watch only" -- m --watch 1 flush
expect 2 "bad key=value" "expected key=value" -- m volumes vol1
expect 0 "help" "exit codes" -- "$MON" --help

kill -TERM "$server_pid"
wait "$server_pid"
rc=$?
server_pid=""
if [ "$rc" -eq 0 ]; then ok "server stopped cleanly"; else not_ok "server exit $rc"; cat "$tmp/server.out"; fi
expect 3 "cannot connect" "cannot talk to the monitor" -- m --timeout 5 stats

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

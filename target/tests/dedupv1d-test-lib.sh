# Shared by the dedupv1d tests (target/tests/dedupv1d-*-test.sh): a work dir,
# free ports on 127.0.0.1, engine configs, dedupv1d start/stop, check helpers,
# and a trap that leaves no tgtd behind whatever happens. Source it:
#
#   . "$(dirname "$0")/dedupv1d-test-lib.sh"
#   DD_BUDGET=SECONDS                # the test's time budget (default 600)
#   dd_init NAME DEDUPV1D TOOL...   # exits 77 (skipped) without root or a tool
#
# Time: every client command and dedupv1d call is bounded; on top, a watchdog
# ends the script with SIGTERM when DD_BUDGET is spent, so the cleanup trap
# runs (ctest's TIMEOUT is set above budget + the longest single bound, so
# ctest never has to kill the script and leave a tgtd behind).
#
# Sets: DEDUPV1D, WORK, PORT (iSCSI portal port), CTL (tgtd control port),
# IQN (the default target.iqn). DEDUPV1_TEST_KEEP=1 keeps the work dir.
# Client helpers (put, same, refused) and RADOS views (dd_shared_entries,
# dd_container_bytes) are at the end.
set -uo pipefail

dd_lib_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$dd_lib_dir/../../scripts/tgt-test-lib.sh"

IQN=iqn.2026-11.org.dedupv1:storage
passed=0
failed=0
DD_CONFIGS=()  # every config started, so cleanup can stop what is left
DD_PIDS=()     # background helpers of the test (e.g. a client loop), ended by cleanup
DD_MOUNTS=()   # file systems the test mounted (e.g. a small tmpfs), unmounted by cleanup
DD_ON_EXIT=()  # commands cleanup runs last (e.g. restart a killed OSD of the shared test cluster)

ok() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
# check DESCRIPTION COMMAND...: COMMAND must succeed (its output in $WORK/last.out).
check() {
  local what="$1"
  shift
  if "$@" >"$WORK/last.out" 2>&1; then
    ok "$what"
  else
    fail "$what"
    sed 's/^/     /' "$WORK/last.out" | tail -n 20
  fi
}
# check_fails DESCRIPTION COMMAND...: COMMAND must fail.
check_fails() {
  local what="$1"
  shift
  if "$@" >"$WORK/last.out" 2>&1; then
    fail "$what (succeeded)"
    sed 's/^/     /' "$WORK/last.out" | tail -n 20
  else
    ok "$what"
  fi
}
# check_exit CODE DESCRIPTION COMMAND...: COMMAND must exit with CODE (its
# output in $WORK/last.out).
check_exit() {
  local code="$1" what="$2" rc
  shift 2
  "$@" >"$WORK/last.out" 2>&1
  rc=$?
  if [ "$rc" -eq "$code" ]; then
    ok "$what (exit $code)"
  else
    fail "$what: exit $rc, not $code"
    sed 's/^/     /' "$WORK/last.out" | tail -n 20
  fi
}
# check_output DESCRIPTION REGEX: the last command's output matches REGEX.
check_output() {
  if grep -Eq -- "$2" "$WORK/last.out"; then
    ok "$1"
  else
    fail "$1 (no line matching '$2')"
    sed 's/^/     /' "$WORK/last.out" | tail -n 20
  fi
}
dd_summary() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

dd_init() {  # dd_init NAME DEDUPV1D TOOL...
  local name="$1" tool
  DEDUPV1D="$(readlink -f "$2")"
  shift 2
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: needs root (tgtd)"
    exit 77
  fi
  for tool in tgtd tgtadm "$@"; do
    if ! command -v "$tool" >/dev/null; then
      echo "SKIP: $tool not installed"
      exit 77
    fi
  done
  [ -x "$DEDUPV1D" ] || { echo "FAIL: $DEDUPV1D is not executable"; exit 1; }
  WORK="$(mktemp -d "/tmp/dedupv1-$name.XXXXXX")"
  PORT="$(tgt_free_port 20000 60000)" || exit 1
  CTL="$(tgt_free_control_port)" || exit 1
  trap dd_cleanup EXIT
  trap 'echo "FAIL: interrupted (time budget of ${DD_BUDGET:-600} s spent?)"; exit 124' INT TERM
  # The watchdog: one subshell and its sleep, both ended by dd_cleanup.
  (
    trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
    sleep "${DD_BUDGET:-600}" &
    sleeper=$!
    wait "$sleeper" && kill -TERM $$
  ) </dev/null >/dev/null 2>&1 &
  DD_WATCHDOG=$!
  echo "work dir $WORK, portal 127.0.0.1:$PORT, control port $CTL"
}

# Stops every instance started (bounded); a tgtd that still runs is killed.
dd_cleanup() {
  local conf pid
  [ -z "${DD_WATCHDOG:-}" ] || kill -TERM "$DD_WATCHDOG" 2>/dev/null
  for pid in "${DD_PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  # An entry may carry more arguments ("CONFIG --data-dir DIR"); no blanks in paths.
  for conf in "${DD_CONFIGS[@]}"; do
    # shellcheck disable=SC2086
    timeout 150 "$DEDUPV1D" stop --config $conf >/dev/null 2>&1 || true
  done
  for pid in $(dd_state_pids); do
    if tgt_alive "$pid"; then
      echo "cleanup: tgtd $pid still runs, killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for conf in "${DD_MOUNTS[@]}"; do
    umount "$conf" 2>/dev/null || umount -l "$conf" 2>/dev/null || echo "cleanup: cannot unmount $conf"
  done
  for conf in "${DD_ON_EXIT[@]}"; do
    eval "$conf" || echo "cleanup: '$conf' failed"
  done
  if [ "${DEDUPV1_TEST_KEEP:-0}" = 1 ]; then
    echo "work dir kept: $WORK"
  else
    rm -rf "$WORK"
  fi
}

# tgtd pids named by the state files under $WORK.
dd_state_pids() {
  find "$WORK" -name dedupv1d.state -exec sed -n 's/^pid = //p' {} + 2>/dev/null
}

# The tgtd pid of the instance whose data dir is $1.
dd_pid() { sed -n 's/^pid = //p' "$1/dedupv1d.state" 2>/dev/null; }

# True if some tgtd runs with control port $1.
dd_tgtd_with_ctl() { pgrep -f "tgtd -f -C $1 --iscsi" >/dev/null; }

# dd_write_config FILE DATA_DIR [LINE...]: an engine config for tests (small
# chunk index, monitor off so tests never fight over its port) plus LINEs.
# DD_STORAGE=rados puts the store in the test cluster (DEDUPV1_TEST_CEPH_CONF).
dd_write_config() {
  local file="$1" dir="$2" line
  shift 2
  {
    echo "# written by $(basename "$0")"
    echo "data-dir = $dir"
    echo "chunk-index.size = 64M"
    echo "monitor.enabled = false"
    echo "target.control-port = $CTL"
    if [ "${DD_STORAGE:-local}" = rados ]; then
      # The store in the test cluster (ctest fixture "ceph"), a namespace
      # per data dir and test run.
      echo "storage.backend = rados"
      echo "storage.rados.conf = ${DEDUPV1_TEST_CEPH_CONF:?DD_STORAGE=rados needs DEDUPV1_TEST_CEPH_CONF}"
      echo "storage.rados.store = dd-$$-$(basename "$dir")"
      echo "storage.rados.lock-lease = ${DD_RADOS_LEASE:-5s}"
      echo "storage.rados.op-timeout = ${DD_RADOS_TIMEOUT:-30s}"
    fi
    for line in "$@"; do echo "$line"; done
  } >"$file"
}

# dd_service_config FILE: the installed package's config as a test makes it
# (the conffile is the admin's to edit): data dir $WORK/data, volumes backup1
# (64M) and backup2 (32M), our portal and control port, a monitor port of its
# own (MON). Its instance is stopped by the cleanup.
dd_service_config() {
  dd_new_port MON || return 1
  cat >"$1" <<EOF
# written by $(basename "$0")
data-dir = $WORK/data
volume = backup1 64M
volume = backup2 32M
chunk-index.size = 64M
target.portal = 127.0.0.1:$PORT
target.control-port = $CTL
monitor.port = $MON
EOF
  DD_CONFIGS+=("$1")
}

# dd_start CONFIG [ARGS...]: dedupv1d start on our portal (bounded).
dd_start() {
  local conf="$1"
  shift
  DD_CONFIGS+=("$conf")
  timeout 300 "$DEDUPV1D" start --config "$conf" --portal "127.0.0.1:$PORT" "$@"
}
dd_stop() { timeout 300 "$DEDUPV1D" stop --config "$@"; }
dd_status() { timeout 60 "$DEDUPV1D" status --config "$@"; }

# iSCSI URL of LUN $1 of target $2 (default $IQN) on our portal.
dd_url() { echo "iscsi://127.0.0.1:$PORT/${2:-$IQN}/$1"; }

# The iSCSI URL of $1: a URL as it is, a LUN number on our portal (dd_url).
dd_lun_url() { case "$1" in *://*) echo "$1" ;; *) dd_url "$1" ;; esac; }
# put FILE LUN_OR_URL: the file onto the LUN, then SYNCHRONIZE CACHE.
# (-t writeback: convert's default cache mode for the target, "unsafe", never
# flushes, and a crash would rightly lose the data.) Bounded by DD_IO_TIMEOUT
# seconds (default 180).
put() { timeout "${DD_IO_TIMEOUT:-180}" qemu-img convert -n -t writeback -f raw -O raw "$1" "$(dd_lun_url "$2")"; }
# same FILE LUN_OR_URL: the LUN starts with the file (LUNs may be longer),
# read back into $WORK/readback.img.
same() {
  timeout "${DD_IO_TIMEOUT:-180}" qemu-img convert -f raw -O raw "$(dd_lun_url "$2")" "$WORK/readback.img" &&
    cmp -n "$(stat -c %s "$1")" "$1" "$WORK/readback.img"
}
# refused COMMAND...: COMMAND failed, or said so (qemu-img convert reports a
# failed SYNCHRONIZE CACHE but exits 0).
refused() {
  local out rc
  out="$("$@" 2>&1)"
  rc=$?
  echo "$out"
  [ "$rc" -ne 0 ] || grep -q "failed" <<<"$out"
}

# dd_shared_entries STORE: one line "STATE SLOT INCARNATION CONTAINER" (state
# U, C or D; decimal numbers) per entry of the cluster-scope chunk index of
# RADOS store STORE (index pool dedupv1-index of DEDUPV1_TEST_CEPH_CONF).
# Reads the shards' omap values with `rados listomapvals`: an entry value is
# the only 28-byte value (index/rados_shared_chunk_table.cc: version 2, state,
# container u64, claimer slot u16, incarnation u32, epoch u64, CRC32C; little
# endian). Fails if a shard cannot be read.
dd_shared_entries() {
  local store="$1" shard
  local -a rados=(timeout 60 rados -c "$DEDUPV1_TEST_CEPH_CONF" -p dedupv1-index -N "$store")
  "${rados[@]}" ls >"$WORK/shards.list" || return 1
  for shard in $(grep -E '^ci\.[0-9a-f]+$' "$WORK/shards.list"); do
    "${rados[@]}" listomapvals "$shard" || return 1
  done | awk '
    BEGIN { for (i = 0; i < 16; i++) hex[substr("0123456789abcdef", i + 1, 1)] = i }
    function byte(i) { return hex[substr(b[i], 1, 1)] * 16 + hex[substr(b[i], 2, 1)] }
    function le(from, n,   v, i) { v = 0; for (i = from + n - 1; i >= from; i--) v = v * 256 + byte(i); return v }
    /^value \(28 bytes\) :$/ { want = 2; n = 0; next }
    # A dump line: offset, up to 16 hex bytes, then the characters column "|...|".
    want > 0 { for (i = 2; i <= NF && n < 28 && $i !~ /^\|/; i++) b[n++] = $i
               if (--want == 0) printf "%c %d %d %.0f\n", byte(1), le(10, 2), le(12, 4), le(2, 8) }'
}
# dd_container_bytes STORE [SLOT]: bytes of the containers of gateway slot
# SLOT (4 hex digits; ids (SLOT << 48) + sequence: data-pool objects
# c.SLOT<12 hex digits>) of RADOS store STORE, of every slot without SLOT.
dd_container_bytes() {
  local store="$1" slot="${2:-[0-9a-f]{4\}}" total=0 obj size
  local -a rados=(timeout 60 rados -c "$DEDUPV1_TEST_CEPH_CONF" -p dedupv1-data -N "$store")
  for obj in $("${rados[@]}" ls | grep -E "^c\.${slot}[0-9a-f]{12}\$"); do
    size="$("${rados[@]}" stat "$obj" | sed -n 's/.* size \([0-9]*\).*/\1/p')"
    total=$((total + ${size:-0}))
  done
  echo "$total"
}

# dd_segment_writer NAME URL IMAGE SEGMENT_BYTES [TRIES [LEADER [LAG]]]: writes IMAGE onto
# the LUN at URL from offset 0, one segment after the other, each in its own
# qemu-io session ending with `flush` (SYNCHRONIZE CACHE). The ledger
# $WORK/NAME.ledger gets "C K" once segment K's session returned OK: its
# bytes and every earlier segment's are synced. A failed session appends
# "F K" (its output goes to $WORK/NAME.err) and is tried again up to TRIES
# sessions in all (default 1); then the writer gives up (exit 1). It ends
# early (exit 0) when $WORK/NAME.stop exists or the test script is gone. Run
# it in the background (and add its pid to DD_PIDS); each session is bounded
# by DD_IO_TIMEOUT. With LEADER (another writer's NAME), segment K is written
# only after LEADER synced its segments up to K - LAG (LAG 0, the default:
# the same stream following another gateway's, a second backup of the same
# data running at the same time; LAG 1: both write segment K at once, racing
# for its new chunks), or once $WORK/NAME.free exists; each wait is bounded by
# DD_LEAD_TIMEOUT seconds (default DD_IO_TIMEOUT).
dd_segment_writer() {
  local name="$1" url="$2" image="$3" seg="$4" tries="${5:-1}" leader="${6:-}" lag="${7:-0}" k n try len i
  local out="$WORK/$name.out" piece="$WORK/$name.segment"
  n=$((($(stat -c %s "$image") + seg - 1) / seg))
  : >>"$WORK/$name.ledger"
  for ((k = 0; k < n; k++)); do
    dd if="$image" of="$piece" bs="$seg" skip="$k" count=1 status=none || return 1
    len=$(stat -c %s "$piece")
    for ((i = 0; i < ${DD_LEAD_TIMEOUT:-${DD_IO_TIMEOUT:-180}} * 10; i++)); do
      [ -z "$leader" ] || [ -e "$WORK/$name.free" ] ||
        [ "$(dd_synced_segments "$leader")" -ge $((k + 1 - lag)) ] && break
      sleep 0.1
    done
    for ((try = 1; ; try++)); do
      [ ! -e "$WORK/$name.stop" ] && kill -0 $$ 2>/dev/null || return 0
      if timeout -s KILL "${DD_IO_TIMEOUT:-180}" qemu-io -f raw -t writeback \
        -c "write -s $piece $((k * seg)) $len" -c flush "$url" >"$out" 2>&1 && ! grep -q "failed" "$out"; then
        echo "C $k" >>"$WORK/$name.ledger"
        break
      fi
      echo "F $k" >>"$WORK/$name.ledger"
      cat "$out" >>"$WORK/$name.err"
      [ "$try" -lt "$tries" ] || return 1
    done
  done
}
# dd_synced_segments NAME: how many segments writer NAME has confirmed.
dd_synced_segments() { cat "$WORK/$1.ledger" 2>/dev/null | grep -c '^C '; }
# dd_failed_sessions NAME: how many sessions of writer NAME failed.
dd_failed_sessions() { cat "$WORK/$1.ledger" 2>/dev/null | grep -c '^F '; }

# dd_new_port VAR / dd_new_control_port VAR: sets VAR to a free iSCSI or
# monitor port (a free tgtd control port) that differs from every one handed
# out before, $PORT and $CTL included; a test with several gateways takes its
# ports from these (not in a subshell: they remember what they handed out).
DD_PORTS_TAKEN=()
dd_new_port() { dd_new_of "$1" tgt_free_port 20000 60000; }
dd_new_control_port() { dd_new_of "$1" tgt_free_control_port; }
dd_new_of() {
  local var="$1" p i
  shift
  for i in $(seq 1 20); do
    p="$("$@")" || return 1
    if [[ " ${DD_PORTS_TAKEN[*]} $PORT $CTL " != *" $p "* ]]; then
      DD_PORTS_TAKEN+=("$p")
      printf -v "$var" '%s' "$p"
      return 0
    fi
  done
  echo "dedupv1d-test-lib: no port distinct from ${DD_PORTS_TAKEN[*]}" >&2
  return 1
}

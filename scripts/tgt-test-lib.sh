# Shell functions to run a private tgtd for tests: its own iSCSI portal on
# 127.0.0.1:PORT and its own management port, so it never touches a system tgtd.
# Every wait is bounded. Source it:
#
#   . scripts/tgt-test-lib.sh
#   tgt_start LOGFILE [PRELOAD.so]     # sets TGT_PORT, TGT_CTL, TGT_PID
#   tgt_adm --op new --mode target --tid 1 -T iqn....   # tgtadm -C $TGT_CTL ...
#   tgt_stop                           # deletes targets (--force), stops tgtd
#
# Variables read: TGT_PORT / TGT_CTL (chosen free when unset), TGT_IOTHREADS (4),
# TGT_ADM_TIMEOUT (120).
# tgtd ignores SIGTERM; it stops through tgtadm (offline, then delete system),
# which it refuses while targets exist.

TGT_PID=""

# A TCP port no socket uses, from [$1, $2) below the kernel's ephemeral range:
# a port in that range may be taken at any moment as the local port of an
# outgoing connection (another test's initiator), and then the portal's bind
# fails with "Address already in use" although nothing listened when it was picked.
# Ports 20000-22999 are left out: the private Ceph clusters of tests and
# benches take 100 ports from their port bases there (20300-22600), often
# after the portal was picked (a test's own cluster: its OSDs took one once).
tgt_free_port() {
  local lo="${1:-20000}" hi="${2:-60000}" port i eph_lo
  eph_lo="$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)"
  if [ -n "$eph_lo" ] && [ "$eph_lo" -gt "$lo" ] && [ "$hi" -gt "$eph_lo" ]; then hi="$eph_lo"; fi
  for i in $(seq 1 50); do
    port=$((lo + RANDOM % (hi - lo)))
    if [ "$port" -ge 20000 ] && [ "$port" -lt 23000 ] && { [ "$lo" -lt 20000 ] || [ "$hi" -gt 23000 ]; }; then
      continue  # a Ceph cluster's range (above), when the caller's range has room elsewhere
    fi
    if ! ss -Htan "sport = :$port" 2>/dev/null | grep -q .; then
      echo "$port"
      return 0
    fi
  done
  echo "tgt-test-lib: no free port in [$lo, $hi)" >&2
  return 1
}

# True while process $1 runs (a zombie does not count).
tgt_alive() {
  local state
  state="$(ps -o stat= -p "$1" 2>/dev/null)"
  [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}

# A management port (tgtd -C: a number naming the unix socket
# /var/run/tgtd/socket.N, at most 32767) no tgtd uses.
tgt_free_control_port() {
  local n i
  for i in $(seq 1 50); do
    n=$((1000 + RANDOM % 31000))
    if [ ! -e "/var/run/tgtd/socket.$n" ] && [ ! -e "/var/run/tgtd/socket.$n.lock" ]; then
      echo "$n"
      return 0
    fi
  done
  echo "tgt-test-lib: no free tgtd control port" >&2
  return 1
}

# tgtadm against our tgtd, bounded (TGT_ADM_TIMEOUT seconds, default 120: deleting
# the last dedupv1 LUN closes the engine, which flushes).
tgt_adm() {
  timeout "${TGT_ADM_TIMEOUT:-120}" tgtadm -C "$TGT_CTL" "$@"
}

# Waits up to $2 seconds (default 10) for "$1" (a command string) to succeed.
tgt_wait_for() {
  local cmd="$1" limit="${2:-10}" i
  for i in $(seq 1 $((limit * 10))); do
    if eval "$cmd" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# Starts tgtd in the background (own session, log to $1). With $2, that module
# is LD_PRELOADed into tgtd (registers its bstype before tgtd scans
# /usr/lib/tgt/backing-store), so tests need not install it. TGT_PID is tgtd,
# or `setsid -w` waiting for it when setsid had to fork (under job control).
tgt_start() {
  local log="${1:?tgt_start LOGFILE [PRELOAD.so]}" preload="${2:-}"
  command -v tgtd >/dev/null || { echo "tgt-test-lib: tgtd not installed" >&2; return 1; }
  : "${TGT_PORT:=$(tgt_free_port 20000 60000)}"
  : "${TGT_CTL:=$(tgt_free_control_port)}"
  if [ -n "$preload" ]; then
    setsid -w env LD_PRELOAD="$preload" tgtd -f -C "$TGT_CTL" -t "${TGT_IOTHREADS:-4}" \
      --iscsi "portal=127.0.0.1:$TGT_PORT" >"$log" 2>&1 </dev/null &
  else
    setsid -w tgtd -f -C "$TGT_CTL" -t "${TGT_IOTHREADS:-4}" \
      --iscsi "portal=127.0.0.1:$TGT_PORT" >"$log" 2>&1 </dev/null &
  fi
  TGT_PID=$!
  if ! tgt_wait_for "tgt_alive $TGT_PID && tgtadm -C $TGT_CTL --op show --mode sys" 15 ||
     ! tgt_wait_for "ss -Htln 'sport = :$TGT_PORT' | grep -q ." 15; then
    echo "tgt-test-lib: tgtd did not come up on 127.0.0.1:$TGT_PORT (control port $TGT_CTL); log:" >&2
    tail -n 20 "$log" >&2
    tgt_kill
    return 1
  fi
}

# Target ids our tgtd has.
tgt_tids() {
  tgt_adm --lld iscsi --op show --mode target 2>/dev/null |
    sed -n 's/^Target \([0-9][0-9]*\):.*/\1/p'
}

# Stops tgtd the way it accepts: targets deleted (--force), system offline,
# system deleted; waits up to 20 s, then SIGKILLs it (and says so).
tgt_stop() {
  local tid
  [ -n "$TGT_PID" ] || return 0
  if tgt_alive "$TGT_PID"; then
    for tid in $(tgt_tids); do
      tgt_adm --lld iscsi --op delete --mode target --tid "$tid" --force >/dev/null 2>&1 ||
        echo "tgt-test-lib: could not delete target $tid" >&2
    done
    tgt_adm --op update --mode sys --name State -v offline >/dev/null 2>&1 || true
    tgt_adm --op delete --mode system >/dev/null 2>&1 || true
    if ! tgt_wait_for "! tgt_alive $TGT_PID" 20; then
      echo "tgt-test-lib: tgtd $TGT_PID did not stop, killing it" >&2
      tgt_kill
      return 1
    fi
  fi
  wait "$TGT_PID" 2>/dev/null || true
  TGT_PID=""
  tgt_remove_socket
}

# tgtd leaves its management socket and lock file behind; ours go with it.
tgt_remove_socket() {
  rm -f "/var/run/tgtd/socket.$TGT_CTL" "/var/run/tgtd/socket.$TGT_CTL.lock"
}

# Last resort: SIGKILL our tgtd (data not flushed).
tgt_kill() {
  [ -n "$TGT_PID" ] || return 0
  pkill -KILL -P "$TGT_PID" 2>/dev/null || true  # tgtd, if TGT_PID is setsid
  kill -KILL "$TGT_PID" 2>/dev/null || true
  wait "$TGT_PID" 2>/dev/null || true
  TGT_PID=""
  tgt_remove_socket
}

# iSCSI URL of LUN $2 of target IQN $1 on our portal.
tgt_url() {
  echo "iscsi://127.0.0.1:$TGT_PORT/$1/$2"
}

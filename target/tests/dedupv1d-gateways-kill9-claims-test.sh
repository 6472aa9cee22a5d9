#!/usr/bin/env bash
# kill -9 of gateway A while A and B write the same new data in cluster scope
# (issue 15, design-15 phases 3 and 5): gateway slots gw-a and gw-b of one
# RADOS store in the ctest Ceph cluster (fixture "ceph",
# DEDUPV1_TEST_CEPH_CONF), storage.rados.dedup-scope = cluster, claim hold
# 2 s, each a dedupv1d instance with its own data dir, portal and control
# port (the engine runs inside tgtd: `dedupv1d start` returns once tgtd
# serves, so killing A is killing its tgtd).
#  - A and B write the same new stream at once onto a LUN each, in synced
#    segments (one qemu-io session per segment, ending with SYNCHRONIZE
#    CACHE); B writes segment K while A writes it (B starts K once A synced
#    K - 1), so they race for the same new chunks' claims.
#  - After A synced some segments, A's last session writes, without a sync,
#    half of the segment B waits for and 1 MiB of its own: 2 MiB, less than
#    a container, and A's container commit timeout and idle period are
#    10 min (no idle checkpoint commits it), so the chunks stay in A's open
#    container (claims whose container is never written);
#    then kill -9 of A, and B goes on alone.
#  - B's machine takes slot gw-a over (`dedupv1d takeover`: waits for A's
#    lease, fences A's recorded address); every segment A synced reads back
#    through the taker (0 lost); B's writes all complete (B meets A's dead
#    claims and takes them over after the hold) and B's LUN reads back.
#  - The shared chunk index before GC: the U entries of A's dead incarnation
#    (slot 1, incarnation 1) are counted (some: the unsynced write's).
#  - Cluster GC (design-15 2.6), only on request (B and the taker have an
#    idle period of 10 min, so no background round ran before): the first
#    round (POST /gc/run to both gateways' monitors) leaves every U entry of
#    A's dead incarnation in place (none is older than the hold yet); GC
#    rounds a hold apart (bounded) then leave none (erased only after the
#    hold and a recheck); the monitors' cluster index GC stats count an
#    erasure for every claim whose container was missing; if they show bytes
#    reclaimed, the store's containers shrank. Both LUNs still read back, and
#    `dedupv1_check --cluster` is clean after every gateway stopped.
#  - Orphan copies (target/tools/orphan_copies.h): the check reports the
#    copies nothing names (A's dead marks made since its last checkpoint die
#    with it); `--cluster --repair` marks them dead, a second check finds
#    none; if there were any, B and the taker start again, a GC round each
#    acts on the marks (containers under half live go), and both LUNs still
#    read back.
#
#   dedupv1d-gateways-kill9-claims-test.sh DEDUPV1D
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-240}"
dd_init dedupv1d-gateways-kill9-claims "${1:?usage: dedupv1d-gateways-kill9-claims-test.sh DEDUPV1D}" \
  qemu-img qemu-io rados curl jq
: "${DEDUPV1_TEST_CEPH_CONF:?needs the ctest Ceph cluster (DEDUPV1_TEST_CEPH_CONF)}"
export DD_STORAGE=rados DD_RADOS_LEASE=5s DD_IO_TIMEOUT=60 DD_LEAD_TIMEOUT=200
HOLD=2
SEG=$((2 << 20))
bin="$(dirname "$DEDUPV1D")"

dd_new_port PORT2 && dd_new_control_port CTL2 && dd_new_port MON2 &&
  dd_new_port PORT3 && dd_new_control_port CTL3 && dd_new_port MON3 || exit 1
mkdir -p "$WORK/a" "$WORK/b" "$WORK/a2"
confA="$WORK/a/dedupv1.conf"
confB="$WORK/b/dedupv1.conf"
confA2="$WORK/a2/dedupv1.conf"  # slot gw-a on B's machine, for the takeover
store="dd-$$-gwkill9claims"
common=("volume = vol1 32M" "storage.rados.store = $store" "storage.rados.dedup-scope = cluster"
  "storage.rados.claim-hold = ${HOLD}s")
dd_write_config "$confA" "$WORK/a/data" "${common[@]}" "storage.rados.gateway = gw-a" "container.commit-timeout = 10m" \
  "idle.period = 10m"
dd_write_config "$confB" "$WORK/b/data" "${common[@]}" "storage.rados.gateway = gw-b" "target.control-port = $CTL2" \
  "monitor.enabled = true" "monitor.host = 127.0.0.1" "monitor.port = $MON2" "idle.period = 10m"
dd_write_config "$confA2" "$WORK/a2/data" "${common[@]}" "storage.rados.gateway = gw-a" "target.control-port = $CTL3" \
  "monitor.enabled = true" "monitor.host = 127.0.0.1" "monitor.port = $MON3" "idle.period = 10m"
# The new data both write: 16 MiB random; A's own: 1 MiB more, behind it.
stream=$((16 << 20))
segments=$((stream / SEG))
head -c "$stream" /dev/urandom >"$WORK/stream.img"
head -c $((1 << 20)) /dev/urandom >"$WORK/ownA.img"

urlA() { echo "iscsi://127.0.0.1:$PORT/$IQN/1"; }
urlB() { echo "iscsi://127.0.0.1:$PORT2/$IQN/1"; }
urlA2() { echo "iscsi://127.0.0.1:$PORT3/$IQN/1"; }
# dead_claims: U entries of A's first incarnation (slot 1, incarnation 1).
dead_claims() { dd_shared_entries "$store" >"$WORK/entries" && grep -c '^U 1 1 ' "$WORK/entries" || true; }
# missing_claims: how many of those name a container that does not exist
# (-1: the store could not be read).
missing_claims() {
  local c n=0
  dd_shared_entries "$store" >"$WORK/entries" &&
    timeout 60 rados -c "$DEDUPV1_TEST_CEPH_CONF" -p dedupv1-data -N "$store" ls >"$WORK/objects" || { echo -1; return; }
  for c in $(awk '$1 == "U" && $2 == 1 && $3 == 1 { print $4 }' "$WORK/entries" | sort -u); do
    grep -qx "$(printf 'c.%016x' "$c")" "$WORK/objects" ||
      n=$((n + $(awk -v c="$c" '$1 == "U" && $2 == 1 && $3 == 1 && $4 == c' "$WORK/entries" | wc -l)))
  done
  echo "$n"
}
# A's claims of its unsynced writes: its workers process acknowledged writes
# in the background, so they are polled (bounded: 10 looks).
unsynced_claimed() {
  local i
  for i in $(seq 1 10); do
    [ "$(missing_claims)" -ge "$1" ] && return 0
    sleep 1
  done
  echo "$(missing_claims) claims of A whose container is missing"
  return 1
}
entries_summary() { awk '{ print $1, $2, $3 }' "$WORK/entries" | sort | uniq -c | sed 's/^/       /'; }
# gc_round: one GC round on each gateway (either may hold the GC leader lease).
gc_round() {
  local mon
  for mon in "$MON2" "$MON3"; do
    curl -sf --max-time 60 -X POST "http://127.0.0.1:$mon/gc/run" >>"$WORK/gc.out" || return 1
    echo >>"$WORK/gc.out"
  done
}
# gc_sum FIELD: FIELD of the gc section summed over both gateways' monitors
# (GET /gc; -1 if a monitor does not answer or lacks the field).
gc_sum() {
  local mon v sum=0
  for mon in "$MON2" "$MON3"; do
    v="$(curl -sf --max-time 30 "http://127.0.0.1:$mon/gc" | jq -e ".$1")" || { echo -1; return; }
    sum=$((sum + v))
  done
  echo "$sum"
}
# gc_until_no_dead_claims ROUNDS: GC rounds a hold (+0.5 s) apart until no U
# entry of A's dead incarnation is left; at most ROUNDS rounds.
gc_until_no_dead_claims() {
  local i
  for ((i = 1; i <= $1; i++)); do
    gc_round || return 1
    [ "$(dead_claims)" -eq 0 ] && { echo "none left after $i rounds"; return 0; }
    sleep "$HOLD.5"
  done
  echo "$(dead_claims) left after $1 rounds"
  return 1
}

check "A starts gateway slot gw-a (cluster scope)" dd_start "$confA"
pidA="$(dd_pid "$WORK/a/data")"
DD_CONFIGS+=("$confB")
check "B starts gateway slot gw-b (cluster scope)" \
  timeout 300 "$DEDUPV1D" start --config "$confB" --portal "127.0.0.1:$PORT2"

dd_segment_writer A "$(urlA)" "$WORK/stream.img" "$SEG" &
writerA=$!
dd_segment_writer B "$(urlB)" "$WORK/stream.img" "$SEG" 3 A 1 &
writerB=$!
DD_PIDS+=("$writerA" "$writerB")
check "A synced 3 segments while B writes the same" tgt_wait_for '[ "$(dd_synced_segments A)" -ge 3 ]' 60
touch "$WORK/A.stop"
check "A's writer ends after its current session" tgt_wait_for "! kill -0 $writerA" 60
synced=$(dd_synced_segments A)
# A's last session, not synced: half of the segment B waits for (B may be
# writing segment $synced now), and A's own data.
ahead=$((synced + 1))
cmds=()
if [ "$ahead" -lt "$segments" ]; then
  dd if="$WORK/stream.img" of="$WORK/ahead.img" bs=$((SEG / 2)) skip=$((2 * ahead)) count=1 status=none
  cmds+=(-c "write -s $WORK/ahead.img $((ahead * SEG)) $((SEG / 2))")
fi
cmds+=(-c "write -s $WORK/ownA.img $stream $((1 << 20))" -c "sleep 120000")
timeout -s KILL 150 stdbuf -oL qemu-io -f raw -t writeback "${cmds[@]}" "$(urlA)" >"$WORK/unsynced.out" 2>&1 &
unsynced=$!
DD_PIDS+=("$unsynced")
check "A acknowledged its last writes (not synced)" \
  tgt_wait_for "[ \"\$(grep -c '^wrote' '$WORK/unsynced.out')\" -eq $((${#cmds[@]} / 2 - 1)) ]" 60
check "A claimed its unsynced chunks (50 or more claims whose container is missing)" unsynced_claimed 50
# qemu-io's own pid ($unsynced is its timeout wrapper): the client dies with A.
qemu_io="$(pgrep -P "$unsynced" -x qemu-io)"
check "kill -9 of A's tgtd after $synced synced segments" kill -KILL "$pidA"
check "A's tgtd is gone" tgt_wait_for "! tgt_alive $pidA" 10
check "kill -9 of A's client (qemu-io ${qemu_io:-not found})" kill -KILL "${qemu_io:-none}"
check "A's client and its timeout wrapper are gone" tgt_wait_for "! kill -0 $unsynced 2>/dev/null" 10
check "B still writes at the kill ($(dd_synced_segments B) of $segments segments synced)" kill -0 "$writerB"
touch "$WORK/B.free"
[ "$ahead" -lt "$segments" ] && echo "     A's unsynced writes: half of segment $ahead of the stream and 1 MiB of its own"
echo "     U entries of A's dead incarnation at the kill: $(dead_claims), $(missing_claims) of them naming a missing container"
entries_summary

DD_CONFIGS+=("$confA2")
check "B's machine takes slot gw-a over (waits for A's lease, fences A)" \
  timeout 300 "$DEDUPV1D" takeover --config "$confA2" --portal "127.0.0.1:$PORT3"
check_output "the takeover fenced A's recorded address" "fenced: [^n]"
check_output "the registry counts the takeover" "incarnation 2, takeover 1"
head -c $((synced * SEG)) "$WORK/stream.img" >"$WORK/syncedA.img"
check "every segment A synced ($synced) reads back through the taker" same "$WORK/syncedA.img" "$(urlA2)"
rcB=0
wait "$writerB" || rcB=$?
echo "     B: $(dd_synced_segments B) segments synced, $(dd_failed_sessions B) sessions failed, done after $SECONDS s"
[ ! -s "$WORK/B.err" ] || sed 's/^/       /' "$WORK/B.err" | tail -n 6
check "every segment of B synced" test "$rcB" -eq 0 -a "$(dd_synced_segments B)" -eq "$segments"
check "B's LUN reads back intact" same "$WORK/stream.img" "$(urlB)"
missing_before_gc="$(missing_claims)"
echo "     U entries of A's dead incarnation after the takeover and B's writes: $(dead_claims)," \
  "$missing_before_gc of them naming a missing container"
entries_summary
check "A's unsynced writes left claims of its dead incarnation (what GC must collect)" test "$missing_before_gc" -gt 0

dead_before_gc="$(dead_claims)"
bytes_before_gc="$(dd_container_bytes "$store")"
check "the first GC round ran on both gateways" gc_round
check "the first GC round (within the hold) leaves all $dead_before_gc U entries of A's dead incarnation" \
  test "$(dead_claims)" -eq "$dead_before_gc"
sleep "$HOLD.5"
check "GC rounds leave no U entry of A's dead incarnation (hold + recheck)" gc_until_no_dead_claims 10
sed 's/^/     /' "$WORK/last.out"
entries_summary
erased="$(gc_sum cluster_index_stale_claims_erased)"
flipped="$(gc_sum cluster_index_stale_claims_flipped)"
reclaimed="$(gc_sum reclaimed_bytes)"
bytes_after_gc="$(dd_container_bytes "$store")"
echo "     cluster index GC (both monitors): rounds $(gc_sum cluster_index_rounds), stale claims erased $erased," \
  "flipped $flipped, races $(gc_sum cluster_index_races), failed rounds $(gc_sum cluster_index_failed_rounds)," \
  "claim journal records of ended incarnations hinted $(gc_sum cluster_index_journal_records)"
echo "     container GC (both monitors): reclaimed $reclaimed bytes, containers deleted $(gc_sum containers_deleted)," \
  "merged $(gc_sum containers_merged); the store's containers $bytes_before_gc -> $bytes_after_gc bytes"
check "the monitors count an erasure for each of the $missing_before_gc claims whose container is missing" \
  test "$erased" -eq "$missing_before_gc"
check "the monitors count an erasure or a flip for each of the $dead_before_gc U entries" \
  test $((erased + flipped)) -ge "$dead_before_gc"
if [ "$reclaimed" -gt 0 ]; then
  check "GC reclaimed the losers' copies: the store's containers shrank" test "$bytes_after_gc" -lt "$bytes_before_gc"
else
  echo "     (no bytes reclaimed: no loser's copy was garbage yet)"
fi
check "B's LUN reads back intact after GC" same "$WORK/stream.img" "$(urlB)"
check "every segment A synced reads back through the taker after GC" same "$WORK/syncedA.img" "$(urlA2)"
check "stop B" dd_stop "$confB"
check "stop gw-a on B's machine" dd_stop "$confA2"
check "dedupv1_check --cluster is clean" timeout 300 "$bin/dedupv1_check" --cluster --config "$confB"
sed 's/^/     /' "$WORK/last.out" | tail -n 12
# cluster_check_json FILE ARGS...: dedupv1_check --cluster --json ARGS, the
# report into FILE.
cluster_check_json() {
  local out="$1"
  shift
  timeout 300 "$bin/dedupv1_check" --cluster --json --config "$confB" "$@" >"$WORK/check.raw" || return 1
  sed -n '/^{/,$p' "$WORK/check.raw" >"$out"
}
check "dedupv1_check --cluster --json is clean" cluster_check_json "$WORK/check1.json"
orphans="$(jq -e .orphans.copies "$WORK/check1.json" || echo -1)"
orphan_bytes="$(jq -e .orphans.bytes "$WORK/check1.json" || echo -1)"
echo "     orphan copies after the kill -9 and GC: $orphans ($orphan_bytes bytes)," \
  "per slot: $(jq -c '[.slots[] | {(.name): .orphan_copies}] | add' "$WORK/check1.json")"
check "the check counted the orphan copies" test "$orphans" -ge 0
check "dedupv1_check --cluster --repair marks every orphan copy dead" cluster_check_json "$WORK/check2.json" --repair
check "--repair reclaimed all $orphans" test "$(jq .orphans.reclaimed "$WORK/check2.json")" -eq "$orphans"
check "dedupv1_check --cluster: clean, and no orphan copy left" cluster_check_json "$WORK/check3.json"
check "no orphan copy left" test "$(jq .orphans.copies "$WORK/check3.json")" -eq 0
if [ "$orphans" -gt 0 ]; then
  bytes_before_orphan_gc="$(dd_container_bytes "$store")"
  check "B starts again" timeout 300 "$DEDUPV1D" start --config "$confB" --portal "127.0.0.1:$PORT2"
  check "slot gw-a starts again on B's machine" timeout 300 "$DEDUPV1D" start --config "$confA2" --portal "127.0.0.1:$PORT3"
  check "a GC round on each gives the orphans' space back" gc_round
  bytes_after_orphan_gc="$(dd_container_bytes "$store")"
  echo "     the store's containers $bytes_before_orphan_gc -> $bytes_after_orphan_gc bytes (a container at least" \
    "half live keeps its dead chunks until it falls below half)"
  check "the store's containers did not grow" test "$bytes_after_orphan_gc" -le "$bytes_before_orphan_gc"
  check "B's LUN reads back intact after the orphans' GC" same "$WORK/stream.img" "$(urlB)"
  check "every segment A synced reads back after the orphans' GC" same "$WORK/syncedA.img" "$(urlA2)"
  check "stop B" dd_stop "$confB"
  check "stop gw-a on B's machine" dd_stop "$confA2"
  check "dedupv1_check --cluster is clean after the orphans' GC" cluster_check_json "$WORK/check4.json"
else
  echo "     (no orphan copy this run)"
fi
a_bytes="$(dd_container_bytes "$store" 0001)"
b_bytes="$(dd_container_bytes "$store" 0002)"
echo "     containers: A $a_bytes bytes, B $b_bytes bytes; the stream $stream bytes" \
  "after GC (copies of chunks whose claims the other won are reclaimed by it)"

dd_summary

#!/usr/bin/env bash
# kill -9 of one OSD during cross-gateway writes in cluster scope (issue 15,
# design-15 phase 3): gateway slots gw-a and gw-b of one RADOS store in the
# ctest Ceph cluster (fixture "ceph", DEDUPV1_TEST_CEPH_CONF; 3 OSDs, pools
# of size 3 and min_size 2), storage.rados.dedup-scope = cluster, each a
# dedupv1d instance with its own data dir, portal and control port.
#  - A and B write at once the same backup stream onto a LUN each, then data
#    of their own, in synced segments (one qemu-io session per segment,
#    ending with SYNCHRONIZE CACHE); B's stream follows A's (B writes segment
#    K once A synced it: a second backup of the same data running at the
#    same time; target_gateways_kill9_claims has them race for the same new
#    chunks). osd.2 is killed with -9 once both have synced some segments,
#    and started again once both have synced more with it down. A failed
#    session is tried again (at most 3 sessions per segment; the test says
#    how many failed): every segment ends synced.
#  - The cluster serves again: the OSD up, every PG active (recovering).
#  - Every synced byte reads back through its own gateway, and A's through
#    B's machine after B's machine took slot gw-a over (`dedupv1d takeover`
#    after A's clean stop).
#  - B stores under 5% new bytes for the shared part: its containers hold
#    its own data and under 5% of the shared part besides.
#  - The shared chunk index has an entry for each distinct chunk (at least
#    the distinct bytes / the largest chunk size), every one committed.
#
#   dedupv1d-gateways-osd-kill-test.sh DEDUPV1D
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-170}"
dd_init dedupv1d-gateways-osd-kill "${1:?usage: dedupv1d-gateways-osd-kill-test.sh DEDUPV1D}" qemu-img qemu-io rados ceph
: "${DEDUPV1_TEST_CEPH_CONF:?needs the ctest Ceph cluster (DEDUPV1_TEST_CEPH_CONF)}"
# The product's default lease (20 s): it must outlast the cluster's detection
# of a dead OSD (scripts/ceph-cluster: osd_heartbeat_grace 10 s), or a lease
# renewal that meets a PG of the killed OSD self-fences the gateway. With a
# 5 s lease one loaded full run saw gw-b fenced while osd.2 was down.
export DD_STORAGE=rados DD_RADOS_LEASE=20s DD_IO_TIMEOUT=60
cluster_dir="$(dirname "$DEDUPV1_TEST_CEPH_CONF")"
cluster="$here/../../scripts/ceph-cluster"
OSD=2
SEG=$((2 << 20))

dd_new_port PORT2 && dd_new_control_port CTL2 && dd_new_port PORT3 && dd_new_control_port CTL3 || exit 1
mkdir -p "$WORK/a" "$WORK/b" "$WORK/a2"
confA="$WORK/a/dedupv1.conf"
confB="$WORK/b/dedupv1.conf"
confA2="$WORK/a2/dedupv1.conf"  # slot gw-a on B's machine, for the takeover
store="dd-$$-gwosdkill"
common=("volume = vol1 32M" "storage.rados.store = $store" "storage.rados.dedup-scope = cluster"
  "storage.rados.claim-hold = 2s")
dd_write_config "$confA" "$WORK/a/data" "${common[@]}" "storage.rados.gateway = gw-a"
dd_write_config "$confB" "$WORK/b/data" "${common[@]}" "storage.rados.gateway = gw-b" "target.control-port = $CTL2"
dd_write_config "$confA2" "$WORK/a2/data" "${common[@]}" "storage.rados.gateway = gw-a" "target.control-port = $CTL3"
# The backup stream: 16 MiB random; each gateway adds 4 MiB of its own.
shared=$((16 << 20)) own=$((4 << 20))
head -c "$shared" /dev/urandom >"$WORK/shared.img"
{ cat "$WORK/shared.img"; head -c "$own" /dev/urandom; } >"$WORK/imgA.img"
{ cat "$WORK/shared.img"; head -c "$own" /dev/urandom; } >"$WORK/imgB.img"
segments=$(((shared + own) / SEG))

urlA() { echo "iscsi://127.0.0.1:$PORT/$IQN/1"; }
urlB() { echo "iscsi://127.0.0.1:$PORT2/$IQN/1"; }
urlA2() { echo "iscsi://127.0.0.1:$PORT3/$IQN/1"; }
osd_up() { timeout 30 ceph -c "$DEDUPV1_TEST_CEPH_CONF" osd dump | grep -q "^osd\.$OSD up "; }
# serving: the OSD is up and every PG active (recovery may still run: it
# copies every store of the shared test cluster, minutes with a few hundred MiB).
serving() {
  osd_up && timeout 30 ceph -c "$DEDUPV1_TEST_CEPH_CONF" pg stat >"$WORK/pgstat" &&
    awk -F'; ' '{ sub(/^[0-9]+ pgs: /, "", $1); n = split($1, st, ", ")
                  for (i = 1; i <= n; i++) if (st[i] !~ /^[0-9]+ active/) exit 1 }' "$WORK/pgstat"
}
# both_synced N: each writer has synced at least N segments (or gave up).
both_synced() {
  local w
  for w in A B; do
    [ "$(dd_synced_segments "$w")" -ge "$1" ] || ! kill -0 "${writer[$w]}" 2>/dev/null || return 1
  done
}

check "A starts gateway slot gw-a (cluster scope)" dd_start "$confA"
DD_CONFIGS+=("$confB")
check "B starts gateway slot gw-b (cluster scope)" \
  timeout 300 "$DEDUPV1D" start --config "$confB" --portal "127.0.0.1:$PORT2"

declare -A writer
dd_segment_writer A "$(urlA)" "$WORK/imgA.img" "$SEG" 3 &
writer[A]=$!
dd_segment_writer B "$(urlB)" "$WORK/imgB.img" "$SEG" 3 A &
writer[B]=$!
DD_PIDS+=("${writer[A]}" "${writer[B]}")
check "both gateways synced 2 segments" tgt_wait_for "both_synced 2" 60
before_kill="A $(dd_synced_segments A), B $(dd_synced_segments B) of $segments segments synced"
if kill -0 "${writer[A]}" 2>/dev/null && kill -0 "${writer[B]}" 2>/dev/null; then
  ok "both writers still write ($before_kill)"
else
  fail "a writer ended before the OSD was killed ($before_kill)"
fi
DD_ON_EXIT+=("osd_up || '$cluster' start-osd --dir '$cluster_dir' --id $OSD")
check "kill -9 of osd.$OSD during the writes" "$cluster" kill-osd --dir "$cluster_dir" --id $OSD
killed="A $(dd_synced_segments A), B $(dd_synced_segments B)"
more=$(($(dd_synced_segments A) < $(dd_synced_segments B) ? $(dd_synced_segments A) + 2 : $(dd_synced_segments B) + 2))
[ "$more" -le "$segments" ] || more=$segments
check "both gateways synced $more segments with osd.$OSD down" tgt_wait_for "both_synced $more" 90
check "osd.$OSD started again" "$cluster" start-osd --dir "$cluster_dir" --id $OSD
restarted="A $(dd_synced_segments A), B $(dd_synced_segments B)"
rcA=0 rcB=0
wait "${writer[A]}" || rcA=$?
wait "${writer[B]}" || rcB=$?
echo "     synced segments at the kill: $killed; at the restart: $restarted; all synced after $SECONDS s;" \
  "failed sessions: A $(dd_failed_sessions A), B $(dd_failed_sessions B)"
[ ! -s "$WORK/A.err" ] || { echo "     A's failed sessions:"; sed 's/^/       /' "$WORK/A.err" | tail -n 6; }
[ ! -s "$WORK/B.err" ] || { echo "     B's failed sessions:"; sed 's/^/       /' "$WORK/B.err" | tail -n 6; }
check "every segment of A synced" test "$rcA" -eq 0 -a "$(dd_synced_segments A)" -eq "$segments"
check "every segment of B synced" test "$rcB" -eq 0 -a "$(dd_synced_segments B)" -eq "$segments"
check "A's data reads back through A" same "$WORK/imgA.img" "$(urlA)"
check "B's data reads back through B" same "$WORK/imgB.img" "$(urlB)"
check "the cluster serves again: osd.$OSD up, every PG active" tgt_wait_for serving 60
echo "     after $SECONDS s: $(cut -d';' -f1 "$WORK/pgstat")"

check "stop A" dd_stop "$confA"
DD_CONFIGS+=("$confA2")
check "B's machine takes slot gw-a over" \
  timeout 300 "$DEDUPV1D" takeover --config "$confA2" --portal "127.0.0.1:$PORT3"
check "A's data reads back through B's machine" same "$WORK/imgA.img" "$(urlA2)"
check "B's data still reads back through B" same "$WORK/imgB.img" "$(urlB)"
check "stop B" dd_stop "$confB"
check "stop gw-a on B's machine" dd_stop "$confA2"

# Slot numbers follow registration: gw-a is 1, gw-b is 2.
a_bytes="$(dd_container_bytes "$store" 0001)"
b_bytes="$(dd_container_bytes "$store" 0002)"
all_bytes="$(dd_container_bytes "$store")"
distinct=$((shared + 2 * own))
echo "     containers: A $a_bytes bytes, B $b_bytes bytes, all $all_bytes; distinct data $distinct bytes;" \
  "B's beyond its own data: $((b_bytes - own)) bytes = $(((b_bytes - own) * 1000 / shared / 10)).$(((b_bytes - own) * 1000 / shared % 10))% of the shared part"
check "every container is A's or B's" test "$all_bytes" -eq $((a_bytes + b_bytes))
check "each slot stored at least its own data" test "$a_bytes" -ge "$own" -a "$b_bytes" -ge "$own"
check "B stored under 5% new bytes for the shared part" test $(((b_bytes - own) * 100)) -lt $((5 * shared))
if dd_shared_entries "$store" >"$WORK/entries" 2>"$WORK/entries.err"; then
  ok "the shared chunk index reads"
else
  fail "the shared chunk index reads"
  sed 's/^/     /' "$WORK/entries.err" | tail -n 20
fi
entries=$(wc -l <"$WORK/entries")
committed=$(grep -c '^C ' "$WORK/entries")
echo "     shared chunk index: $entries entries (state slot incarnation):"
awk '{ print $1, $2, $3 }' "$WORK/entries" | sort | uniq -c | sed 's/^/       /'
# Every distinct chunk has an entry; chunks are at most 32 KiB (chunking.max-size).
check "the index has an entry for each distinct chunk (at least $((distinct / 32768)))" \
  test "$entries" -ge $((distinct / 32768))
check "every entry committed ($committed of $entries)" test "$committed" -eq "$entries"

dd_summary

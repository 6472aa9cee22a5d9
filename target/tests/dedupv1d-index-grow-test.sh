#!/usr/bin/env bash
# The chunk index grows online (issue 16, item 4; ctest label "service"),
# through iSCSI:
#  - a store created with a tiny chunk index (64 KiB: 15 buckets, 1039
#    entries) takes more than ten times that many unique chunks (128 MiB of
#    random data, ~12000 chunks) written through LUN 1, without one failed
#    write: the table grows by itself past its fill threshold;
#  - tgtd is killed with SIGKILL while the writer is paused, and again in the
#    middle of a growth asked for with `dedupv1d index grow SIZE` (moving one
#    page per step, chunk-index.grow-step = 1): after each restart every
#    synced segment reads back, and the growth resumes and finishes;
#  - the monitor shows the table's size and its growths; `dedupv1d index
#    grow SIZE --wait` grows it on request while LUN 1 reads, and follows the
#    growth to its end;
#  - refused with a clear error: a SIZE that is no size, the command without
#    a running instance (it says how the config grows the table instead);
#  - after a clean stop dedupv1_check finds the index and every usage count
#    right, and a restart with the config's (smaller) size keeps the grown
#    table and every byte.
#
#   dedupv1d-index-grow-test.sh DEDUPV1D
#
# Exits 77 (skipped) when not root or tgtd / libiscsi-bin / qemu are missing.
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-600}"
dd_init dedupv1d-index-grow "${1:?usage: dedupv1d-index-grow-test.sh DEDUPV1D}" qemu-img qemu-io
MiB=$((1 << 20))

conf="$WORK/dedupv1.conf"
data="$WORK/data"
dd_new_port MON || fail "no free monitor port"
cat >"$conf" <<EOF
# written by $(basename "$0")
data-dir = $data
volume = vol1 256M
chunk-index.size = 64K
chunk-index.aux-soft-limit = 512
chunk-index.grow-step = 1
target.control-port = $CTL
monitor.port = $MON
EOF
index_value() {  # index_value KEY: the monitor's chunk_index.KEY
  curl -sf "http://127.0.0.1:$MON/index" | python3 -c "import json,sys; print(json.load(sys.stdin)['chunk_index']['$1'])"
}
grow() { timeout 300 "$DEDUPV1D" index grow "$@" --config "$conf"; }

check "dedupv1d start with a 64 KiB chunk index" dd_start "$conf"
pid="$(dd_pid "$data")"
capacity0="$(index_value capacity_entries)"
check "the monitor shows the first capacity (1039 entries)" test "$capacity0" = 1039

# 128 MiB of random data in 4 MiB segments, each synced (dd_segment_writer).
# Before the kill the writer is stopped and its qemu-io ended: a write in
# flight when tgtd dies may be replayed by libiscsi to the new tgtd after its
# acknowledgement was lost, and its session would report the flush of the
# new tgtd (dedupv1d-kill9-test.sh covers that case); here what the writer
# synced before the kill must survive it.
head -c $((128 * MiB)) /dev/urandom >"$WORK/w.img"
seg=$((4 * MiB))
dd_segment_writer w1 "$(dd_url 1)" "$WORK/w.img" "$seg" &
writer=$!
DD_PIDS+=("$writer")
tgt_wait_for "[ \"\$(dd_synced_segments w1)\" -ge 7 ]" 300 || fail "the writer did not reach segment 7"
touch "$WORK/w1.stop"
pkill -KILL -f "qemu-io .*127.0.0.1:$PORT/" 2>/dev/null
wait "$writer"
synced="$(dd_synced_segments w1)"
kill -KILL "$pid"
tgt_wait_for "! tgt_alive $pid" 10
check "start after kill -9 (the writer had synced $synced segments)" dd_start "$conf"
pid="$(dd_pid "$data")"
check "every synced segment reads back" bash -c "timeout 180 qemu-img convert -f raw -O raw '$(dd_url 1)' '$WORK/r.img' &&
  cmp -n $((synced * seg)) '$WORK/w.img' '$WORK/r.img'"
# The whole image again (what is stored deduplicates).
check "the writer writes all 128 MiB" dd_segment_writer w2 "$(dd_url 1)" "$WORK/w.img" "$seg"
check "LUN 1 reads back all 128 MiB" same "$WORK/w.img" 1
# A growth of the table's own may still run or wait after the writes; the
# sizes below are read once it is done (a growth changes them).
check "no growth of its own runs or waits any more" \
  tgt_wait_for "[ \"\$(index_value growing)\" = 0 ] && [ \"\$(index_value growth_requested)\" = 0 ]" 120
used="$(index_value used_entries)"
capacity="$(index_value capacity_entries)"
table="$(index_value table_size_bytes)"
check "the index holds ten times its first capacity ($used entries, first capacity $capacity0)" \
  test "$used" -ge $((10 * capacity0))
check "the table grew at least eightfold (now $table bytes, capacity $capacity)" test "$table" -ge $((8 * 64 << 10))
check "no new chunk was refused" test "$(index_value refused_puts)" = 0
check "the status page has the growth line" bash -c "curl -sf http://127.0.0.1:$MON/ | grep -q 'Growth'"
check "Prometheus has the table size" bash -c "curl -sf http://127.0.0.1:$MON/metrics | grep -q '^dedupv1_chunk_index_table_bytes $table'"

# ---- kill -9 in the middle of a growth asked for
# Asked for once the table's own growths are done (above): a request behind
# a running growth waits in memory only, and a restart forgets it.
check "index grow 16M" grow 16M
check_output "it says the growth runs" "chunk index growth requested \(to at least 16777216 bytes"
# The request is queued for the index's background thread, which begins the
# growth on its next turn: wait for it (a check right away can see it still
# requested, not yet running).
check "the growth to 16 MiB is running" \
  tgt_wait_for "[ \"\$(index_value growing)\" = 1 ] && [ \"\$(index_value table_size_bytes)\" -ge $((16 * MiB)) ]" 60
moved="$(index_value growth_pages_moved) of $(index_value growth_pages_total)"
kill -KILL "$pid"
tgt_wait_for "! tgt_alive $pid" 10
check "the growth's table is beside the table after the kill ($moved pages moved)" test -e "$data/chunk-index.next"
check "start after kill -9 in the growth" dd_start "$conf"
pid="$(dd_pid "$data")"
check "the growth resumes and finishes" tgt_wait_for "[ \"\$(index_value growing)\" = 0 ]" 120
check "the table is 16 MiB now" test "$(index_value table_size_bytes)" -ge $((16 * MiB))
check "LUN 1 reads back all 128 MiB after it" same "$WORK/w.img" 1

# ---- on request, while LUN 1 is read
(timeout 180 qemu-img convert -f raw -O raw "$(dd_url 1)" "$WORK/during.img") &
reader=$!
DD_PIDS+=("$reader")
check "index grow 40M --wait" grow 40M --wait
check_output "it follows the growth to its end" "chunk index: done"
check_output "it says the new size" "the chunk index table is [0-9]{8} bytes"
wait "$reader"
check "a read of LUN 1 during the growth got every byte" cmp -n $((128 * MiB)) "$WORK/w.img" "$WORK/during.img"
check "the monitor shows the size" test "$(index_value table_size_bytes)" -ge $((40 * MiB))
check "the monitor shows no growth running" test "$(index_value growing)" = 0
check_exit 2 "index grow with a size that is none" grow lots
check_output "it names the size" "SIZE 'lots' is not a size"

check "stop" dd_stop "$conf"
check "the engine closed cleanly" test -e "$data/clean"
check_exit 3 "index grow without a running instance" grow
check_output "it says how the config grows the table" "raise chunk-index.size in"
check "dedupv1_check: the index and every usage count are right" \
  timeout 300 "$(dirname "$DEDUPV1D")/dedupv1_check" --config "$conf"
check "the grown table is the only one left" test ! -e "$data/chunk-index.next"

# The config still says 64K: the grown table is kept as it is.
check "start again" dd_start "$conf"
check "the table kept its size" test "$(index_value table_size_bytes)" -ge $((40 * MiB))
check "LUN 1 reads back all 128 MiB" same "$WORK/w.img" 1
check "stop" dd_stop "$conf"

echo "index: first capacity $capacity0 entries; after 128 MiB $used entries in a $table-byte table"
dd_summary

#!/usr/bin/env bash
# Issue 19, defect 2, through iSCSI: a damaged operations log must stop the
# start, never drop synced writes without a word.
#
# One qemu-io session writes 64 x 1 MiB (pattern i+1 in MiB i) to LUN 1 and
# flushes (SYNCHRONIZE CACHE); no checkpoint runs (idle.period = 1h), so the
# mapping events stay in the log. tgtd is killed with SIGKILL and 8 payload
# bytes of the mapping slot in the middle of the log are flipped. Then:
#  - `dedupv1d start` fails and shows tgtd's line naming the log and the slot;
#  - dedupv1_check exits 1 naming the damage and changes nothing (the log is
#    byte for byte the same, no clean marker);
#  - dedupv1_replay --accept-log-damage lists the lost event and recovers;
#  - `dedupv1d start` succeeds and every 128 KiB block reads its flushed
#    pattern, except the block of the lost event, which may read what was
#    there before (zeros: never written) in place of it; dedupv1_check is clean.
#
#   dedupv1d-log-damage-test.sh DEDUPV1D
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-600}"
dd_init dedupv1d-log-damage "${1:?usage: dedupv1d-log-damage-test.sh DEDUPV1D}" qemu-img qemu-io od dd
bin="$(dirname "$DEDUPV1D")"
for tool in dedupv1_check dedupv1_replay dedupv1_debug; do
  [ -x "$bin/$tool" ] || { echo "FAIL: $bin/$tool is missing"; exit 1; }
done

conf="$WORK/dedupv1.conf"
data="$WORK/data"
log="$data/log"
dd_write_config "$conf" "$data" "volume = vol1 64M" "idle.period = 1h"
mib=$((1 << 20))
block=$((128 << 10))

# Header of the data slot at byte OFFSET of the log (docs/formats.md):
# "MAGIC ID TYPE FRAGMENT" (u32 words of the 48-byte header).
slot_header() {
  od -A n -t u4 -j "$1" -N 48 "$log" | tr -s ' \n' '  ' |
    awk '{ printf "%s %s %d %s\n", $1, $5 + $6 * 4294967296, $8 % 65536, $9 }'
}

check "start" dd_start "$conf"
pid="$(dd_pid "$data")"
cmds=()
for i in $(seq 0 63); do cmds+=(-c "write -P $((i + 1)) $((i * mib)) $mib"); done
check "64 x 1 MiB written and flushed in one session" \
  timeout 300 qemu-io -f raw "${cmds[@]}" -c flush "$(dd_url 1)"
if tgt_alive "$pid"; then
  kill -KILL "$pid"
  ok "tgtd $pid killed with SIGKILL"
else
  fail "tgtd $pid was not running"
fi
for _ in $(seq 1 100); do tgt_alive "$pid" || break; sleep 0.1; done

# The mapping slots (event type 20, first fragment) in the first slots of
# the log; the one in the middle gets 8 payload bytes flipped (after the
# event's volume and block: format byte, u32 volume, u64 block).
slot_size=4096
mappings=()
for slot in $(seq 2 1500); do
  read -r magic id type fragment <<<"$(slot_header $((slot * slot_size)))"
  [ "$magic" = 1397511748 ] || continue  # "DVLS"
  [ "$type" -eq 20 ] && [ "$fragment" -eq 0 ] && mappings+=("$slot")
done
echo "     ${#mappings[@]} mapping events in the log"
[ "${#mappings[@]}" -ge 64 ] && ok "the mapping events are still in the log" ||
  fail "only ${#mappings[@]} mapping events in the log (a checkpoint trimmed them?)"
damaged="${mappings[$((${#mappings[@]} / 2))]}"
offset=$((damaged * slot_size))
lost_block="$(od -A n -t u8 -j $((offset + 48 + 5)) -N 8 "$log" | tr -d ' ')"
flipped=""
for b in $(od -A n -t u1 -j $((offset + 48 + 16)) -N 8 "$log"); do flipped+="$(printf '\\%03o' $((255 - b)))"; done
printf "$flipped" | dd of="$log" bs=1 seek=$((offset + 48 + 16)) conv=notrunc status=none
echo "     flipped 8 payload bytes of slot $damaged (offset $offset), the mapping of block $lost_block"
cp "$log" "$WORK/log.damaged"

check_fails "start refuses the damaged log" dd_start "$conf"
check_output "start names the log and the slot" "operations log $log is damaged: slot $damaged \\(slot sequence [0-9]+, offset $offset\\)"
check_output "start tells what to do" "accept-log-damage"
check_fails "dedupv1_check refuses the damaged log" "$bin/dedupv1_check" --config "$conf"
check_output "dedupv1_check names the slot" "is damaged: slot $damaged \\("
check "the refusals changed nothing in the log" cmp "$log" "$WORK/log.damaged"
check_fails "no clean marker" test -e "$data/clean"
check_fails "dedupv1_debug log shows the damage (exit 1)" "$bin/dedupv1_debug" --config "$conf" log
check_output "dedupv1_debug log lists the slot" "slot $damaged \\(slot sequence [0-9]+, offset $offset\\): checksum mismatch"

check "dedupv1_replay --accept-log-damage" "$bin/dedupv1_replay" --config "$conf" --accept-log-damage
check_output "it lists one lost event" "region 1: event [0-9]+ lost"
check_output "it recovers" "damage: +accepted: 1 events lost"
check "dedupv1_check is clean after accepting" "$bin/dedupv1_check" --config "$conf"

check "start after accepting" dd_start "$conf"
image="$WORK/lun1.img"
check "read LUN 1" timeout 300 qemu-img convert -f raw -O raw "$(dd_url 1)" "$image"
# Every block holds its pattern; the lost event's block may also hold zeros.
verify() {
  local i b n pattern rest
  for i in $(seq 0 63); do
    pattern="$(printf '\\%03o' $((i + 1)))"
    for b in $(seq 0 $((mib / block - 1))); do
      n=$((i * mib / block + b))
      if [ "$n" -eq "$lost_block" ]; then
        rest="$(dd if="$image" bs="$block" skip="$n" count=1 status=none | tr -d "\\000$pattern" | wc -c)"
      else
        rest="$(dd if="$image" bs="$block" skip="$n" count=1 status=none | tr -d "$pattern" | wc -c)"
      fi
      [ "$rest" -eq 0 ] || { echo "block $n: $rest bytes that were never written there"; return 1; }
    done
  done
}
check "every flushed block reads back (the lost event's block: its data or what was there before)" verify
check "stop" dd_stop "$conf"
check "dedupv1_check is clean after the restart" "$bin/dedupv1_check" --config "$conf"
dd_summary

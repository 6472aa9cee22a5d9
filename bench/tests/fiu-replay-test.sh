#!/usr/bin/env bash
# bench/fiu-trace-gen's traces replay with dedupv1_fiu_replay (no root, on a
# file): every line is in the FIU format, the mix has identical rewrites and
# reads, the same seed gives the same trace, the replayer checks every read
# against what it wrote and fails on a target that loses writes.
#
#   fiu-replay-test.sh DEDUPV1_FIU_REPLAY
set -u
replay="${1:?usage: fiu-replay-test.sh DEDUPV1_FIU_REPLAY}"
gen="$(cd "$(dirname "$0")/.." && pwd)/fiu-trace-gen"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fails=0
check() { if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi; }

"$gen" --size $((8 << 20)) --requests 3000 --seed 7 >"$work/a.fiu" || { echo "FAIL fiu-trace-gen"; exit 1; }
"$gen" --size $((8 << 20)) --requests 3000 --seed 7 >"$work/b.fiu"
check "the same seed gives the same trace" cmp -s "$work/a.fiu" "$work/b.fiu"
check "every record line has the FIU format" \
  bash -c "! grep -v '^#' '$work/a.fiu' | grep -Ev '^[0-9]+ 4670 mail [0-9]+ 8 [WR] 6 0 [0-9a-f]{32}$' | grep -q ."
check "writes repeat MD5s at the same LBA (identical rewrites)" \
  bash -c "grep ' W ' '$work/a.fiu' | awk '{print \$4, \$9}' | sort | uniq -d | grep -q ."
check "it has reads" grep -q ' R ' "$work/a.fiu"
truncate -s $((8 << 20)) "$work/lun.img"
check "the replay on a file" bash -c "'$replay' '$work/a.fiu' '$work/lun.img' >'$work/r.json'"
check "its report counts checked reads" python3 -c "
import json, sys
j = json.load(open('$work/r.json'))
assert j['writes'] > 2000 and j['reads'] > 200 and j['checked_bytes'] > 0, j
assert j['write_p99_us'] >= j['write_p50_us'] > 0, j"
# A target that loses what is written (/dev/zero: writes vanish, reads give
# zeros): the first read of a written block differs, the replay says so.
"$replay" "$work/a.fiu" /dev/zero >/dev/null 2>"$work/err"
rc=$?
check "a target that loses writes fails the replay (exit 1)" test "$rc" -eq 1
check "it names the offset" grep -q "the read at [0-9]* differs from what was written there" "$work/err"
echo "$(( $(wc -l <"$work/a.fiu") - 1 )) records"
[ "$fails" -eq 0 ]

#!/usr/bin/env bash
# dedupv1_traffic on files (no target needed): generations written and
# verified, the same seed gives the same bytes and another seed others, the
# JSON report carries a consistent ground truth, a flipped byte is found at
# its offset (exit 1), stdout/stdin round trip, usage errors exit 2.
# Exits 77 (skipped) without python3.
#
#   traffic-file-test.sh DEDUPV1_TRAFFIC
set -uo pipefail

traffic="${1:?usage: traffic-file-test.sh DEDUPV1_TRAFFIC}"
if ! command -v python3 >/dev/null; then
  echo "SKIP: python3 (checks the JSON reports) not installed"
  exit 77
fi
work="$(mktemp -d /tmp/dedupv1-traffic-file.XXXXXX)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
check() {  # check DESCRIPTION COMMAND...
  local what="$1"
  shift
  if "$@" >"$work/last.out" 2>&1; then ok "$what"; else fail "$what"; tail -n 15 "$work/last.out" | sed 's/^/     /'; fi
}
expect_exit() {  # expect_exit CODE DESCRIPTION COMMAND...
  local code="$1" what="$2" rc
  shift 2
  "$@" >"$work/last.out" 2>&1
  rc=$?
  if [ "$rc" -eq "$code" ]; then ok "$what"; else fail "$what (exit $rc, want $code)"; tail -n 15 "$work/last.out" | sed 's/^/     /'; fi
}
# json_get FILE EXPR: evaluates a python expression over the JSON object j.
json_get() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

T=(--size 8M --generations 3 --seed 7 --request-size 64K --no-progress)

check "write 3 generations to files (2 streams)" \
  "$traffic" write "${T[@]}" --streams 2 --json "$work/gen%d.img"
cp "$work/last.out" "$work/write.json"
for g in 1 2 3; do
  [ "$(stat -c %s "$work/gen$g.img")" = $((8 << 20)) ] && ok "gen$g.img is 8 MiB" || fail "gen$g.img size"
done
check "JSON parses, 3 generations, truth adds up to the size" python3 - "$work/write.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["command"] == "write" and j["seed"] == 7 and j["size"] == 8 << 20, j
gens = j["generations"]
assert [g["generation"] for g in gens] == [1, 2, 3], gens
for g in gens:
    t = g["truth"]
    assert g["bytes"] == 8 << 20, g
    assert t["unique_bytes"] + t["internal_redundant_bytes"] + t["temporal_redundant_bytes"] == 8 << 20, t
    assert abs(t["redundancy"] - (1 - t["unique_bytes"] / (8 << 20))) < 1e-5, t
    assert g["mb_s"] > 0 and g["seconds"] > 0 and g["target"].endswith("gen%d.img" % g["generation"])
assert gens[0]["truth"]["temporal_redundant_bytes"] == 0
assert gens[1]["truth"]["temporal_redundant_bytes"] > 0
tot = j["total"]
assert tot["bytes"] == 3 * (8 << 20)
assert tot["ideal_stored_bytes"] == sum(g["truth"]["unique_bytes"] for g in gens)
PY
check "verify all 3" "$traffic" verify "${T[@]}" --streams 3 "$work/gen%d.img"
grep -q "identical" "$work/last.out" || fail "verify output lacks 'identical'"

# Determinism: the same options write the same bytes, another seed others.
check "write again, 1 stream, other request size" \
  "$traffic" "${T[@]}" --request-size 1M "$work/again%d.img"
check "same seed, same bytes" cmp "$work/gen2.img" "$work/again2.img"
check "another seed" "$traffic" --size 8M --generations 2 --seed 8 --no-progress "$work/other%d.img"
if cmp -s "$work/gen2.img" "$work/other2.img"; then fail "seed 8 wrote the same bytes as seed 7"; else ok "another seed, other bytes"; fi
if cmp -s "$work/gen1.img" "$work/gen2.img"; then fail "generation 2 equals generation 1"; else ok "generations differ"; fi
expect_exit 1 "verify with the wrong seed fails" "$traffic" verify --size 8M --seed 8 --no-progress "$work/gen1.img"

# A flipped byte is found at its offset.
off=$((5 * 1048576 + 12345))
python3 - "$work/gen2.img" "$off" <<'PY'
import sys
p, off = sys.argv[1], int(sys.argv[2])
with open(p, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0xff]))
PY
expect_exit 1 "verify finds the flipped byte" "$traffic" verify "${T[@]}" --streams 4 --json "$work/gen%d.img"
grep -q "differs from .*gen2.img at byte offset $off " "$work/last.out" && ok "mismatch names offset $off" ||
  { fail "mismatch message lacks offset $off"; cat "$work/last.out"; }
grep -v '^dedupv1_traffic:' "$work/last.out" >"$work/verify.json"
check "verify JSON: generation 2 not ok at $off, others ok" python3 - "$work/verify.json" "$off" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); off = int(sys.argv[2])
assert j["ok"] is False
g = {x["generation"]: x for x in j["generations"]}
assert g[1]["ok"] and g[3]["ok"] and not g[2]["ok"], g
assert g[2]["first_mismatch"] == off, g[2]
PY

# Standard streams: generations concatenated.
"$traffic" --size 1M --generations 2 --no-progress - 2>"$work/stdout.report" >"$work/stream.bin"
[ "$(stat -c %s "$work/stream.bin")" = $((2 << 20)) ] && ok "stdout carries 2 generations" || fail "stdout size"
grep -q "generation 2 -> -" "$work/stdout.report" && ok "report on stderr when data is on stdout" ||
  fail "report not on stderr"
check "stdin verifies" sh -c "'$traffic' verify --size 1M --generations 2 --no-progress - <'$work/stream.bin'"
check "null: (generator alone)" "$traffic" --size 16M --generations 2 --streams 2 --no-progress null:
grep -q "generator:" "$work/last.out" || fail "no generator line"

# Real data (--input): each generation is a file's bytes, padded to 4 KiB.
head -c 3000001 /dev/urandom >"$work/in1.bin"
cat "$work/in1.bin" "$work/in1.bin" >"$work/in2.bin"
check "--input: two files written" "$traffic" write --input "$work/in%d.bin" --generations 2 --no-progress \
  --json "$work/real%d.img"
cp "$work/last.out" "$work/real.json"
[ "$(stat -c %s "$work/real1.img")" = 3002368 ] && ok "--input: padded to whole 4 KiB blocks" || fail "--input: size"
cmp -s -n 3000001 "$work/in1.bin" "$work/real1.img" && cmp -s -n 6000002 "$work/in2.bin" "$work/real2.img" &&
  [ -z "$(tail -c +3000002 "$work/real1.img" | tr -d '\0')" ] && ok "--input: the files' bytes, then zeros" ||
  fail "--input: bytes differ"
check "--input: JSON names the files" python3 -c "import json,sys; j=json.load(open(sys.argv[1])); \
assert [g['input'] for g in j['generations']] == [sys.argv[2] % 1, sys.argv[2] % 2], j" "$work/real.json" "$work/in%d.bin"
check "--input: verify" "$traffic" verify --input "$work/in%d.bin" --generations 2 --no-progress "$work/real%d.img"
printf 'X' | dd of="$work/real2.img" bs=1 seek=4000000 conv=notrunc status=none
expect_exit 1 "--input: verify finds a changed byte" "$traffic" verify --input "$work/in%d.bin" --generations 2 \
  --no-progress "$work/real%d.img"
expect_exit 2 "--input: one file for two generations" "$traffic" --input "$work/in1.bin" --generations 2 "$work/x%d"
expect_exit 3 "--input: a missing file" "$traffic" --input "$work/none%d.bin" --generations 2 "$work/x%d"
: >"$work/empty.bin"
expect_exit 2 "--input: an empty file" "$traffic" --input "$work/empty.bin" "$work/x"
expect_exit 2 "--input: not a regular file" "$traffic" --input /dev/null "$work/x"

# Usage errors.
expect_exit 2 "no target" "$traffic" --size 1M
expect_exit 2 "unknown option" "$traffic" --colour blue x
expect_exit 2 "bad size" "$traffic" --size lots x
expect_exit 2 "probabilities above 1" "$traffic" --tr-to-u 0.9 --tr-to-ir 0.2 x
expect_exit 2 "two targets for three generations" "$traffic" --generations 3 a b
expect_exit 2 "--lun-per-generation on a file" "$traffic" --generations 2 --lun-per-generation x
expect_exit 2 "two streams on stdout" "$traffic" --streams 2 --size 1M -
expect_exit 0 "--help" "$traffic" --help

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

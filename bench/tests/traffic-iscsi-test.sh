#!/usr/bin/env bash
# dedupv1_traffic through iSCSI: a private tgtd on 127.0.0.1 with the dedupv1
# module LD_PRELOADed and two dedup LUNs; two 64 MiB backup generations
# written (2 streams, one LUN per generation, SYNCHRONIZE CACHE at the end)
# and verified back; the JSON report checked against the ground truth; the
# stored container bytes checked against what an ideal deduplicator would
# keep; a wrong seed detected; and the data still there after tgtd was
# SIGKILLed right after the write (the final SYNCHRONIZE CACHE made it durable).
#
#   traffic-iscsi-test.sh MODULE.so DEDUPV1_TRAFFIC
#
# Exits 77 (skipped) when not root or tgtd is missing. DEDUPV1_TRAFFIC_KEEP=1
# keeps the work dir.
set -uo pipefail

module="$(readlink -f "${1:?usage: traffic-iscsi-test.sh MODULE.so DEDUPV1_TRAFFIC}")"
traffic="$(readlink -f "${2:?usage: traffic-iscsi-test.sh MODULE.so DEDUPV1_TRAFFIC}")"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../../scripts/tgt-test-lib.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: needs root (tgtd)"
  exit 77
fi
for tool in tgtd tgtadm python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool not installed"
    exit 77
  fi
done

work="$(mktemp -d /tmp/dedupv1-traffic-iscsi.XXXXXX)"
IQN=iqn.2026-11.dedupv1:traffic-test
SIZE=$((64 << 20))
passed=0
failed=0

cleanup() {
  tgt_stop || true
  if [ "${DEDUPV1_TRAFFIC_KEEP:-0}" = 1 ]; then echo "work dir kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

ok() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
check() {  # check DESCRIPTION COMMAND...
  local what="$1"
  shift
  if "$@" >"$work/last.out" 2>"$work/last.err"; then
    ok "$what"
  else
    fail "$what"
    tail -n 15 "$work/last.out" "$work/last.err" | sed 's/^/     /'
  fi
}

cat >"$work/dedupv1.conf" <<CONF
# written by traffic-iscsi-test.sh
data-dir = $work/data
volume = gen1 64M
volume = gen2 64M
chunk-index.size = 64M
monitor.enabled = false
CONF

setup_target() {
  tgt_adm --lld iscsi --op new --mode target --tid 1 -T "$IQN" &&
    tgt_adm --lld iscsi --op new --mode logicalunit --tid 1 --lun 1 --bstype dedupv1 \
      --backing-store "$work/dedupv1.conf" --bsopts "volume=gen1" &&
    tgt_adm --lld iscsi --op new --mode logicalunit --tid 1 --lun 2 --bstype dedupv1 \
      --backing-store "$work/dedupv1.conf" --bsopts "volume=gen2" &&
    tgt_adm --lld iscsi --op bind --mode target --tid 1 -I ALL
}

tgt_start "$work/tgtd.log" "$module" || { echo "FAIL tgtd did not start"; exit 1; }
echo "tgtd pid $TGT_PID portal 127.0.0.1:$TGT_PORT control port $TGT_CTL"
check "target with LUN 1 = gen1, LUN 2 = gen2" setup_target

url1="$(tgt_url "$IQN" 1)"
OPTS=(--size "$SIZE" --generations 2 --seed 5 --streams 2 --queue-depth 4 --no-progress --json)
check "write 2 generations of 64 MiB (2 streams, LUN per generation)" \
  "$traffic" write "${OPTS[@]}" --lun-per-generation "$url1"
cp "$work/last.out" "$work/write.json"
cat "$work/write.json"

check "write report: fields present, bytes and ground truth consistent" python3 - "$work/write.json" "$SIZE" "$TGT_PORT" "$IQN" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); size = int(sys.argv[2]); port = sys.argv[3]; iqn = sys.argv[4]
for k in ("command", "seed", "size", "request_size", "streams", "queue_depth", "params", "generations", "total", "generator"):
    assert k in j, k
assert j["command"] == "write" and j["size"] == size and j["streams"] == 2 and j["sync"] is True
gens = j["generations"]
assert [g["generation"] for g in gens] == [1, 2], gens
for g in gens:
    for k in ("target", "bytes", "seconds", "sync_seconds", "mb_s", "generator_seconds", "truth"):
        assert k in g, k
    assert g["target"] == "iscsi://127.0.0.1:%s/%s/%d" % (port, iqn, g["generation"]), g["target"]
    assert g["bytes"] == size, g
    t = g["truth"]
    assert t["unique_bytes"] + t["internal_redundant_bytes"] + t["temporal_redundant_bytes"] == size, t
    assert abs(t["redundancy"] - (1 - t["unique_bytes"] / size)) < 1e-5, t
    assert g["mb_s"] > 0 and g["seconds"] >= g["sync_seconds"] >= 0, g
g1, g2 = gens
assert g1["truth"]["temporal_redundant_bytes"] == 0 and g1["truth"]["internal_redundant_bytes"] > 0
assert g2["truth"]["temporal_redundant_bytes"] > size // 2
assert j["total"]["bytes"] == 2 * size
assert j["total"]["ideal_stored_bytes"] == g1["truth"]["unique_bytes"] + g2["truth"]["unique_bytes"]
PY

# What the engine stored: the containers' bytes after the sync. Chunks cut
# at content-defined boundaries lose some redundancy at run edges, so the
# store keeps somewhat more than the ideal, but far less than was written.
stored=$(find "$work/data/containers" -name '*.ctr' -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}')
ideal=$(python3 -c "import json; print(json.load(open('$work/write.json'))['total']['ideal_stored_bytes'])")
echo "stored $stored bytes in containers; ideal $ideal; written $((2 * SIZE))"
if [ "$stored" -ge "$((ideal * 9 / 10))" ] && [ "$stored" -le "$((ideal * 3 / 2))" ]; then
  ok "stored bytes within [0.9, 1.5] x the ground truth's unique bytes"
else
  fail "stored $stored bytes, ground truth unique $ideal"
fi

check "verify both generations (2 streams)" "$traffic" verify "${OPTS[@]}" --lun-per-generation "$url1"
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['ok'] and all(g['ok'] for g in j['generations'])" \
  "$work/last.out" && ok "verify report: ok" || fail "verify report not ok"

"$traffic" verify --size "$SIZE" --seed 6 --no-progress "$url1" >"$work/wrong.out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "differs from $url1 at byte offset" "$work/wrong.out"; then
  ok "a wrong seed is a mismatch (exit 1, offset named)"
else
  fail "wrong seed: exit $rc"
  sed 's/^/     /' "$work/wrong.out"
fi

# Durable after the final SYNCHRONIZE CACHE: new generations (seed 9), then
# SIGKILL (no LUN close, no engine flush), restart, verify.
check "write 2 generations with seed 9" "$traffic" write --size "$SIZE" --generations 2 --seed 9 \
  --no-progress "$(tgt_url "$IQN" %d)"
tgt_kill
tgt_start "$work/tgtd-restarted.log" "$module" || { fail "tgtd restart after SIGKILL"; exit 1; }
check "target set up again after SIGKILL" setup_target
check "seed 9 generations intact after SIGKILL" "$traffic" verify --size "$SIZE" --generations 2 --seed 9 \
  --no-progress "$(tgt_url "$IQN" %d)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

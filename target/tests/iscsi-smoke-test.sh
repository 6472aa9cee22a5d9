#!/usr/bin/env bash
# End-to-end test of bs_dedupv1.so in a private tgtd on 127.0.0.1 (module
# LD_PRELOADed, nothing installed), driven by libiscsi's tools and qemu-img:
# LUN creation and its refusals, thin provisioning as initiators see it, data
# written and read back, data kept across LUN re-creation and tgtd restarts,
# and flushed data kept when tgtd is killed.
#
#   iscsi-smoke-test.sh MODULE.so [SCSI_SEMANTICS_TEST]
#
# With the second argument, that driver (scsi_semantics_test.cc) checks the
# SCSI commands one by one on a second LUN.
#
# Exits 77 (skipped) when not root or tgtd / libiscsi-bin / qemu-img are missing.
# DEDUPV1_SMOKE_KEEP=1 keeps the work dir (tgtd.log, config, data).
set -uo pipefail

module="$(readlink -f "${1:?usage: iscsi-smoke-test.sh MODULE.so [SCSI_SEMANTICS_TEST]}")"
semantics="${2:-}"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../../scripts/tgt-test-lib.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: needs root (tgtd)"
  exit 77
fi
for tool in tgtd tgtadm iscsi-ls iscsi-inq iscsi-readcapacity16 qemu-img qemu-io; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool not installed"
    exit 77
  fi
done

work="$(mktemp -d /tmp/dedupv1-iscsi-smoke.XXXXXX)"
IQN=iqn.2026-11.dedupv1:smoke
passed=0
failed=0

cleanup() {
  tgt_stop || true
  if [ "${DEDUPV1_SMOKE_KEEP:-0}" = 1 ]; then
    echo "work dir kept: $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

ok() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
check() {  # check DESCRIPTION COMMAND...
  local what="$1"
  shift
  if "$@" >"$work/last.out" 2>&1; then ok "$what"; else fail "$what"; sed 's/^/     /' "$work/last.out" | tail -n 15; fi
}
check_fails() {  # check_fails DESCRIPTION COMMAND...
  local what="$1"
  shift
  if "$@" >"$work/last.out" 2>&1; then fail "$what (succeeded)"; else ok "$what"; fi
}

# The engine's config: a data dir and the volumes it serves.
write_engine_config() {  # write_engine_config FILE DATA_DIR
  cat >"$1" <<EOF
# dedupv1 config written by iscsi-smoke-test.sh
data-dir = $2
volume = vol1 64M
volume = vol2 32M
EOF
}

new_lun() {  # new_lun LUN CONFIG BSOPTS
  tgt_adm --lld iscsi --op new --mode logicalunit --tid 1 --lun "$1" \
    --bstype dedupv1 --backing-store "$2" --bsopts "$3"
}
delete_lun() {
  tgt_adm --lld iscsi --op delete --mode logicalunit --tid 1 --lun "$1"
}
lun_exists() {
  tgt_adm --lld iscsi --op show --mode target | grep -q "LUN: $1\$"
}
lun_absent() { ! lun_exists "$1"; }
log_has() { grep -q -- "$1" "$work/tgtd.log"; }
url() { tgt_url "$IQN" "$1"; }
read_lun() {  # read_lun LUN FILE
  qemu-img convert -f raw -O raw "$(url "$1")" "$2"
}

config="$work/dedupv1.conf"
write_engine_config "$config" "$work/data"
# 64 MiB image: 8 MiB random, 8 MiB of a repeated 64 KiB pattern (dedups), rest zeros.
head -c $((8 << 20)) /dev/urandom >"$work/in.img"
head -c $((64 << 10)) /dev/urandom >"$work/pattern"
for _ in $(seq 128); do cat "$work/pattern"; done >>"$work/in.img"
truncate -s 64M "$work/in.img"

tgt_start "$work/tgtd.log" "$module" || { echo "FAIL tgtd did not start"; exit 1; }
echo "tgtd pid $TGT_PID portal 127.0.0.1:$TGT_PORT control port $TGT_CTL"
check "bstype dedupv1 registered" tgt_adm --op show --mode sys
grep -q dedupv1 "$work/last.out" || fail "tgtadm --mode sys lists no dedupv1 backing store"

check "new target" tgt_adm --lld iscsi --op new --mode target --tid 1 -T "$IQN"

# Refusals: tgtadm fails, tgtd logs why, and no LUN is left behind.
check_fails "unknown volume refused" new_lun 1 "$config" "volume=nosuch"
log_has "cannot open volume 'nosuch'" || fail "no log line for the unknown volume"
check_fails "missing bsopts refused" tgt_adm --lld iscsi --op new --mode logicalunit \
  --tid 1 --lun 1 --bstype dedupv1 --backing-store "$config"
check_fails "unknown bsopts key refused" new_lun 1 "$config" "volume=vol1;colour=blue"
log_has "unknown bsopts key 'colour'" || fail "no log line for the unknown bsopts key"
check_fails "relative datadir refused" new_lun 1 "$config" "volume=vol1;datadir=data"
check_fails "missing config refused" new_lun 1 "$work/nosuch.conf" "volume=vol1"
check "no LUN left by the refusals" lun_absent 1

check "LUN 1 = vol1" new_lun 1 "$config" "volume=vol1"
check_fails "second LUN on the same volume refused" new_lun 2 "$config" "volume=vol1"
cp "$config" "$work/other.conf"
check_fails "LUN from another config refused" new_lun 2 "$work/other.conf" "volume=vol2"
check "LUN 2 = vol2" new_lun 2 "$config" " volume=vol2 ; "
check "bind" tgt_adm --lld iscsi --op bind --mode target --tid 1 -I ALL

check "iscsi-ls lists the target" iscsi-ls "iscsi://127.0.0.1:$TGT_PORT"
grep -q "$IQN" "$work/last.out" || fail "iscsi-ls output lacks $IQN"
check "iscsi-inq" iscsi-inq "$(url 1)"
check "iscsi-inq logical block provisioning VPD" iscsi-inq -e 1 -c 178 "$(url 1)"
grep -q "^lbpu:1" "$work/last.out" || fail "VPD 0xb2 does not announce UNMAP (LBPU)"
check "iscsi-readcapacity16" iscsi-readcapacity16 "$(url 1)"
grep -q "LBPME:1" "$work/last.out" || fail "READ CAPACITY(16) does not announce thin provisioning"
grep -q "RETURNED LOGICAL BLOCK ADDRESS:$(((64 << 20) / 512 - 1))" "$work/last.out" ||
  fail "LUN 1 is not 64 MiB"

check "write 64 MiB to LUN 1" qemu-img convert -n -f raw -O raw "$work/in.img" "$(url 1)"
check "read LUN 1 back" read_lun 1 "$work/out1.img"
check "LUN 1 data equal" cmp "$work/in.img" "$work/out1.img"
check "read LUN 2" read_lun 2 "$work/out2.img"
check "LUN 2 still zeros" cmp "$work/out2.img" <(head -c $((32 << 20)) /dev/zero)

if [ -n "$semantics" ]; then
  if "$semantics" "$(url 2)" >"$work/semantics.out" 2>&1; then
    ok "SCSI semantics on LUN 2 ($(tail -n 1 "$work/semantics.out"))"
  else
    fail "SCSI semantics on LUN 2"
    grep -v '^ok ' "$work/semantics.out" | sed 's/^/     /'
  fi
fi

# LUN re-created while the engine stays open (LUN 2 holds it) ...
check "delete LUN 1" delete_lun 1
check "re-create LUN 1" new_lun 1 "$config" "volume=vol1"
check "LUN 1 data kept" sh -c "qemu-img convert -f raw -O raw '$(url 1)' '$work/out1b.img' && cmp '$work/in.img' '$work/out1b.img'"
# ... and after the last LUN closed the engine.
check "delete LUN 1 again" delete_lun 1
check "delete LUN 2" delete_lun 2
check "LUN 1 re-opens the engine" new_lun 1 "$config" "volume=vol1"
check "LUN 1 data kept across engine close" sh -c "qemu-img convert -f raw -O raw '$(url 1)' '$work/out1c.img' && cmp '$work/in.img' '$work/out1c.img'"

# tgtd restart.
check "stop tgtd" tgt_stop
tgt_start "$work/tgtd-restarted.log" "$module" || { fail "tgtd restart"; exit 1; }
check "new target after restart" tgt_adm --lld iscsi --op new --mode target --tid 1 -T "$IQN"
check "LUN 1 after restart" new_lun 1 "$config" "volume=vol1"
check "bind after restart" tgt_adm --lld iscsi --op bind --mode target --tid 1 -I ALL
check "LUN 1 data kept across tgtd restart" sh -c "qemu-img convert -f raw -O raw '$(url 1)' '$work/out1d.img' && cmp '$work/in.img' '$work/out1d.img'"

# SYNCHRONIZE CACHE makes acknowledged writes durable: new data, a flush,
# then tgtd is killed (no LUN close, no engine flush) and restarted.
head -c $((4 << 20)) /dev/urandom >"$work/in2.img"
truncate -s 64M "$work/in2.img"
check "write new data to LUN 1" qemu-img convert -n -f raw -O raw "$work/in2.img" "$(url 1)"
# qemu sends SYNCHRONIZE CACHE only after a write of the same session.
check "write 4 KiB and SYNCHRONIZE CACHE" qemu-io -f raw -c "write -P 0x5a 0 4k" -c flush "$(url 1)"
head -c 4096 /dev/zero | tr '\0' '\132' | dd of="$work/in2.img" conv=notrunc status=none
tgt_kill
tgt_start "$work/tgtd-killed.log" "$module" || { fail "tgtd start after SIGKILL"; exit 1; }
check "new target after SIGKILL" tgt_adm --lld iscsi --op new --mode target --tid 1 -T "$IQN"
check "LUN 1 after SIGKILL" new_lun 1 "$config" "volume=vol1"
check "bind after SIGKILL" tgt_adm --lld iscsi --op bind --mode target --tid 1 -I ALL
check "flushed data kept across SIGKILL" sh -c "qemu-img convert -f raw -O raw '$(url 1)' '$work/out2.img' && cmp '$work/in2.img' '$work/out2.img'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

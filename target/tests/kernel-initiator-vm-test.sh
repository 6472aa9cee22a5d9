#!/usr/bin/env bash
# A backup client with the real Linux kernel iSCSI initiator (open-iscsi in a
# small VM) against a dedup LUN served by dedupv1d, and the same data read
# back on the host through a userspace initiator (libiscsi, qemu-img).
#
#   kernel-initiator-vm-test.sh DEDUPV1D
#
# In a private network namespace (unshare -n; gone when the test ends) with a
# tap device (host 192.0.2.1/24, guest 192.0.2.2) dedupv1d serves one 512 MiB
# volume on 192.0.2.1:3260. The guest (scripts/build-initiator-vm: Debian
# cloud kernel, busybox, open-iscsi; /init is target/tests/vm-guest-init,
# qemu TCG, 256 MiB) runs the users' steps: iscsiadm discovery, --login,
# mkfs.ext4 on the LUN, mount, copy a 32 MiB backup from its source disk, sync,
# sha256, umount, --logout, and reports checksums on the serial console. The
# host compares them with the source, then copies the LUN out with qemu-img,
# checks the file system with e2fsck -fn and dumps the file with debugfs.
# dedupv1d is then restarted (stop + start, data dir kept) and a second boot
# mounts the existing file system, verifies the first backup, and writes a
# second one that shares most of its bytes with the first; the host checks
# both files again. A third boot mounts it, and while it is logged in the
# host grows the volume online (dedupv1d volume grow 512M -> 1G): the guest
# rescans the session, sees the new size, grows ext4 with resize2fs while
# mounted, and both backups still check out; e2fsck on the host checks the
# file system across the new half (resize2fs wrote its new groups there).
#
# Exits 77 (skipped), saying why, when the host cannot run it: not root, no
# /dev/net/tun, tgtd / qemu-system-x86_64 / qemu-img (with iscsi) / debugfs
# missing, no network namespace or tap device, or the guest's Debian packages
# cannot be downloaded. DEDUPV1_VM_CACHE: guest cache dir (default
# /var/cache/dedupv1/vm); DEDUPV1_VM_ACCEL=tcg|kvm overrides the accelerator;
# DEDUPV1_TEST_KEEP=1 keeps the work dir (with the VMs' console logs).
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
self="$here/$(basename "$0")"
vm_cache="${DEDUPV1_VM_CACHE:-/var/cache/dedupv1/vm}"
skip() {
  echo "SKIP: $*"
  exit 77
}

# Outside the namespace: what the host must have, the guest (needs apt), then
# the same script again in a network namespace of its own.
if [ "${DEDUPV1_VM_IN_NETNS:-0}" != 1 ]; then
  [ $# -eq 1 ] || { echo "usage: kernel-initiator-vm-test.sh DEDUPV1D" >&2; exit 1; }
  [ "$(id -u)" -eq 0 ] || skip "needs root (tgtd, network namespace, tap device)"
  [ -c /dev/net/tun ] || skip "no /dev/net/tun (tap devices unavailable)"
  for tool in tgtd tgtadm qemu-system-x86_64 qemu-img debugfs e2fsck unshare ip openssl sha256sum; do
    command -v "$tool" >/dev/null || skip "$tool not installed"
  done
  qemu-img --help | grep -qw iscsi || skip "qemu-img has no iscsi driver (qemu-block-extra)"
  [ -x "$1" ] || { echo "FAIL: $1 is not executable"; exit 1; }
  unshare -n true 2>/dev/null || skip "cannot create a network namespace (unshare -n)"
  t0=$SECONDS
  timeout 300 "$here/../../scripts/build-initiator-vm" --cache "$vm_cache"
  rc=$?
  [ "$rc" -eq 3 ] && skip "the guest's Debian packages cannot be downloaded (apt-get download)"
  [ "$rc" -eq 0 ] || { echo "FAIL: scripts/build-initiator-vm exited $rc"; exit 1; }
  [ $((SECONDS - t0)) -lt 2 ] || echo "guest built in $((SECONDS - t0)) s"
  # Every step inside is bounded, and all of them together by this deadline
  # (epoch seconds), so that the cleanup (<= 150 s) ends within ctest's 900 s.
  DEDUPV1_VM_DEADLINE=$(($(date +%s) + 700 - (SECONDS - t0))) DEDUPV1_VM_IN_NETNS=1 \
    exec unshare -n -- "$self" "$(readlink -f "$1")"
fi

. "$here/dedupv1d-test-lib.sh"
DEDUPV1D="$1"
HOST_IP=192.0.2.1
GUEST_IP=192.0.2.2
TAP=dd-tap0
IQN=iqn.2026-11.org.dedupv1:kernel-initiator-test
PORTAL="$HOST_IP:3260"
LUN_URL="iscsi://$PORTAL/$IQN/1"
SIZE=$((32 << 20))  # each backup file
QEMU_BOUND=180      # seconds one boot may take (it takes 15-40 s)
qemu_pid=""
# bound N: N seconds, or what is left until the deadline if that is less.
bound() {
  local left=$((${DEDUPV1_VM_DEADLINE:-0} - $(date +%s)))
  [ "$left" -ge 10 ] || left=10
  [ "$1" -lt "$left" ] && echo "$1" || echo "$left"
}

vm_cleanup() {
  # qemu_pid is timeout(1), which passes SIGTERM on to qemu.
  if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
    echo "cleanup: stopping qemu (timeout pid $qemu_pid)"
    kill -TERM "$qemu_pid" 2>/dev/null
    tgt_wait_for "! kill -0 $qemu_pid" 5 || {
      pkill -KILL -P "$qemu_pid" 2>/dev/null
      kill -KILL "$qemu_pid" 2>/dev/null
    }
    wait "$qemu_pid" 2>/dev/null
  fi
  dd_cleanup  # stops dedupv1d (bounded), kills a tgtd left over, removes $WORK
  ip link del "$TAP" 2>/dev/null || true
}
WORK="$(mktemp -d /tmp/dedupv1-kernel-initiator-vm.XXXXXX)"
CTL="$(tgt_free_control_port)" || exit 1
trap vm_cleanup EXIT
trap 'exit 130' INT TERM

ip link set lo up
if ! ip tuntap add dev "$TAP" mode tap 2>"$WORK/last.out"; then
  cat "$WORK/last.out"
  skip "cannot create a tap device"
fi
ip addr add "$HOST_IP/24" dev "$TAP" && ip link set "$TAP" up || { echo "FAIL: tap setup"; exit 1; }
if [ -n "${DEDUPV1_VM_ACCEL:-}" ]; then
  accel="$DEDUPV1_VM_ACCEL"
elif [ -w /dev/kvm ] && grep -Eqw 'vmx|svm' /proc/cpuinfo; then
  accel=kvm  # never "try kvm, fall back": a KVM without vmx/svm can hang the guest
else
  accel=tcg
fi
echo "work dir $WORK, portal $PORTAL (private network namespace), control port $CTL, accel $accel"

# Deterministic backup sources: AES-CTR keystreams of named seeds. backup2 is
# backup1 with 5 of its 32 MiB rewritten (a second backup generation).
stream() { head -c "$2" /dev/zero | openssl enc -aes-256-ctr -nosalt -pbkdf2 -pass "pass:$1"; }
patch_at() {  # patch_at FILE OFFSET_MIB LENGTH_MIB SEED
  stream "$4" $(($3 << 20)) | dd of="$1" bs=1M seek="$2" conv=notrunc status=none
}
stream dedupv1-vm-backup1 "$SIZE" >"$WORK/src1.img"
cp "$WORK/src1.img" "$WORK/src2.img"
patch_at "$WORK/src2.img" 4 2 dedupv1-vm-backup2-a
patch_at "$WORK/src2.img" 20 1 dedupv1-vm-backup2-b
patch_at "$WORK/src2.img" 30 2 dedupv1-vm-backup2-c
sum_of() { sha256sum "$1" | cut -d' ' -f1; }
want1="$(sum_of "$WORK/src1.img")"
want2="$(sum_of "$WORK/src2.img")"
[ "$(stat -c %s "$WORK/src2.img")" -eq "$SIZE" ] && [ "$want1" != "$want2" ] ||
  { echo "FAIL: backup sources not made"; exit 1; }
echo "backup1 sha256 $want1"
echo "backup2 sha256 $want2"

conf="$WORK/dedupv1.conf"
data="$WORK/data"
dd_write_config "$conf" "$data" "volume = backup 512M" "target.iqn = $IQN" \
  "target.initiator-address = 192.0.2.0/24"
target_start() {
  DD_CONFIGS+=("$conf")
  timeout "$(bound 120)" "$DEDUPV1D" start --config "$conf" --portal "$PORTAL"
}
stored() { du -sb --apparent-size "$data/containers" 2>/dev/null | cut -f1; }

# boot PHASE SOURCE [EXPECT1]: one guest run; its console in $WORK/vmPHASE.console,
# its DEDUPV1VM lines in $WORK/vmPHASE.out.
boot() {
  local phase="$1" src="$2" expect="${3:-}" t0=$SECONDS rc accel_opts=(-accel tcg)
  [ "$accel" = kvm ] && accel_opts=(-accel kvm -cpu host)
  timeout -s KILL "$(bound "$QEMU_BOUND")" qemu-system-x86_64 "${accel_opts[@]}" -m 256 -smp 1 \
    -nodefaults -no-user-config -display none -no-reboot \
    -serial "file:$WORK/vm$phase.console" \
    -kernel "$vm_cache/vmlinuz" -initrd "$vm_cache/initrd.img" \
    -append "console=ttyS0 panic=-1 quiet dd_phase=$phase dd_portal=$HOST_IP dd_ip=$GUEST_IP/24 dd_iqn=$IQN${expect:+ dd_expect1=$expect}" \
    -netdev "tap,id=n0,ifname=$TAP,script=no,downscript=no" \
    -device virtio-net-pci,netdev=n0,romfile= \
    -drive "file=$src,format=raw,if=virtio,readonly=on" \
    </dev/null >"$WORK/qemu$phase.log" 2>&1 &
  qemu_pid=$!
  [ -z "${BOOT_DURING:-}" ] || "$BOOT_DURING"  # what the host does while the guest runs
  wait "$qemu_pid"
  rc=$?
  qemu_pid=""
  tr -d '\r' <"$WORK/vm$phase.console" | sed -n 's/^DEDUPV1VM //p' >"$WORK/vm$phase.out"
  sed 's/^/     guest: /' "$WORK/vm$phase.out"
  echo "     (boot $phase: $((SECONDS - t0)) s, qemu exit $rc)"
  if grep -qE "^kmsg .*(ping timeout|timing out)" "$WORK/vm$phase.out"; then
    echo "     NOTE: the target did not answer the guest for a while (ping timeout or command timeout above);" \
      "what tgtd's log says of slow commands and of its event loop:"
    grep -E "took [0-9.]* s|event loop" "$data/tgtd.log" 2>/dev/null | tail -n 5 | sed 's/^/     tgtd: /'
  fi
  if grep -qx "RESULT OK" "$WORK/vm$phase.out"; then
    ok "guest $phase: discovery, login, $([ "$phase" = 1 ] && echo "mkfs.ext4, ")mount, copy, sync, umount, logout"
  else
    fail "guest $phase did not finish its steps (qemu exit $rc); console:"
    tr -d '\r' <"$WORK/vm$phase.console" | tail -n 40 | sed 's/^/     /'
    sed 's/^/     qemu: /' "$WORK/qemu$phase.log"
  fi
}
# guest_sum PHASE NAME: the checksum the guest reported for NAME.
guest_sum() { sed -n "s/^sha256 $2 //p" "$WORK/vm$1.out" | head -n 1; }
same() {  # same DESCRIPTION GOT WANT
  if [ -n "$2" ] && [ "$2" = "$3" ]; then ok "$1"; else fail "$1 (got '${2:-nothing}', want $3)"; fi
}
# readback FILE...: the LUN copied out through libiscsi (qemu-img), its file
# system checked, each FILE dumped with debugfs and compared by checksum.
readback() {
  local f want t0=$SECONDS
  rm -f "$WORK/lun.raw"
  check "host: LUN copied out through libiscsi (qemu-img convert $LUN_URL)" \
    timeout "$(bound 120)" qemu-img convert -f raw -O raw "$LUN_URL" "$WORK/lun.raw"
  check "host: e2fsck -fn finds the file system clean" e2fsck -fn "$WORK/lun.raw"
  for f in "$@"; do
    want="$want2"  # backup2.img and backup3.img are copies of src2.img
    [ "$f" = backup1.img ] && want="$want1"
    rm -f "$WORK/$f"
    debugfs -R "dump /$f $WORK/$f" "$WORK/lun.raw" >/dev/null 2>&1
    same "host: $f read back through libiscsi + debugfs matches" "$( [ -f "$WORK/$f" ] && sum_of "$WORK/$f")" "$want"
    rm -f "$WORK/$f"
  done
  rm -f "$WORK/lun.raw"
  echo "     (read back: $((SECONDS - t0)) s)"
}

# Phase 1: a new file system and the first backup.
check "dedupv1d start on $PORTAL" target_start
check_output "status names the target" "^target: +$IQN "
boot 1 "$WORK/src1.img"
same "guest 1: source disk checksum = backup1" "$(guest_sum 1 source)" "$want1"
same "guest 1: backup1.img on the LUN (read after drop_caches) = backup1" "$(guest_sum 1 backup1.img)" "$want1"
readback backup1.img

# Restart the target; data dir kept.
pid="$(dd_pid "$data")"
check "dedupv1d stop" timeout "$(bound 120)" "$DEDUPV1D" stop --config "$conf"
check_fails "tgtd ${pid:-?} gone" tgt_alive "${pid:-0}"
stored1="$(stored)"
check "dedupv1d start again (same data dir)" target_start

# Phase 2: the existing file system, the first backup verified, a second one.
boot 2 "$WORK/src2.img" "$want1"
same "guest 2: backup1.img intact after the restart (kernel read)" "$(guest_sum 2 backup1.img-before)" "$want1"
same "guest 2: source disk checksum = backup2" "$(guest_sum 2 source)" "$want2"
same "guest 2: backup1.img after the second copy = backup1" "$(guest_sum 2 backup1.img)" "$want1"
same "guest 2: backup2.img on the LUN = backup2" "$(guest_sum 2 backup2.img)" "$want2"
readback backup1.img backup2.img

# Phase 3: the volume grows while the guest is logged in with the file
# system mounted; the guest rescans, sees the new size and grows ext4 online.
grow_when_ready() {
  local i
  for i in $(seq 1 $(($(bound "$QEMU_BOUND") * 5))); do
    tr -d '\r' <"$WORK/vm3.console" 2>/dev/null | grep -q "^DEDUPV1VM grow-ready" && break
    kill -0 "$qemu_pid" 2>/dev/null || return
    sleep 0.2
  done
  check "dedupv1d volume grow backup 1G while the kernel initiator is logged in" \
    timeout "$(bound 120)" "$DEDUPV1D" volume grow backup 1G --config "$conf" --overcommit
}
check "dedupv1d stop" timeout "$(bound 120)" "$DEDUPV1D" stop --config "$conf"
stored2="$(stored)"
check "dedupv1d start again" target_start
BOOT_DURING=grow_when_ready boot 3 "$WORK/src2.img" "$want1"
grown="$(sed -n 's/^grown \([0-9]*\) .*/\1/p' "$WORK/vm3.out")"
same "guest 3: after a rescan the disk is 1 GiB" "$grown" $((1 << 30))
grep -qx "read the last MiB of the grown disk" "$WORK/vm3.out" && ok "guest 3: the kernel reads beyond the old end" ||
  fail "guest 3: the kernel did not read the last MiB of the grown disk"
read -r kib0 kib1 <<<"$(sed -n 's/^fs-kib //p' "$WORK/vm3.out")"
[ -n "${kib1:-}" ] && [ "$kib1" -gt $((${kib0:-0} * 3 / 2)) ] &&
  ok "guest 3: resize2fs grew the mounted file system ($kib0 -> $kib1 KiB)" ||
  fail "guest 3: the file system did not grow (${kib0:-?} -> ${kib1:-?} KiB)"
same "guest 3: backup1.img intact after the grow (kernel read)" "$(guest_sum 3 backup1.img)" "$want1"
same "guest 3: backup2.img intact after the grow (kernel read)" "$(guest_sum 3 backup2.img)" "$want2"
same "guest 3: backup3.img, written after the grow (kernel read)" "$(guest_sum 3 backup3.img)" "$want2"
readback backup1.img backup2.img backup3.img

check "dedupv1d stop (final)" timeout "$(bound 120)" "$DEDUPV1D" stop --config "$conf"
# Stored bytes = apparent size of DATA-DIR/containers after a stop (the engine
# closed, everything committed), as in dedupv1d-dedup-test.sh. backup1 is
# random: it must really be stored, else the figure below proves nothing.
# backup2 shares 27 of its 32 MiB with backup1, at the same offsets in a file
# ext4 placed elsewhere: it must cost far less than a full copy (measured
# here: +5.5 MB, i.e. the 5 MiB that are new plus file system metadata).
growth=$((${stored2:-0} - ${stored1:-0}))
echo "     stored bytes: ${stored1:-?} after backup1, ${stored2:-?} after backup2 (+$growth)"
[ "${stored1:-0}" -ge $((SIZE * 95 / 100)) ] && ok "backup1 stored (>= 95% of 32 MiB of random data)" ||
  fail "only ${stored1:-0} bytes stored after backup1 (32 MiB of random data)"
[ "$growth" -gt 0 ] && [ "$growth" -lt $((SIZE / 2)) ] &&
  ok "backup2 deduplicated against backup1 through ext4 (+$growth bytes < 16 MiB)" ||
  fail "backup2 added $growth bytes (expected more than 0, less than 16 MiB for 5 MiB new)"

if [ "$failed" -gt 0 ] && [ -f "$data/tgtd.log" ]; then
  echo "     tgtd's log (tail):"
  tail -n 40 "$data/tgtd.log" | sed 's/^/     tgtd: /'
fi
dd_summary

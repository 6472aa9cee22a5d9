#!/usr/bin/env bash
# `dedupv1d stop` reports an engine that did not close cleanly (issue 19:
# stop exited 0 when closing the engine failed with ENOSPC, which only
# tgtd.log said). The data dir lives on a small tmpfs the test mounts; data is
# written and synced through iSCSI, the file system is filled, and stop must
# exit 1 naming the unclean close with tgtd.log's lines. With space again, the
# next start recovers and the synced data reads back; that stop is clean.
#
#   dedupv1d-full-disk-test.sh DEDUPV1D
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-600}"
dd_init dedupv1d-full-disk "${1:?usage: dedupv1d-full-disk-test.sh DEDUPV1D}" qemu-img mount umount

fs="$WORK/fs"
mkdir -p "$fs"
if ! mount -t tmpfs -o size=96m dedupv1-test "$fs"; then
  echo "SKIP: cannot mount a tmpfs"
  exit 77
fi
DD_MOUNTS+=("$fs")
conf="$WORK/dedupv1.conf"
data="$fs/data"
dd_write_config "$conf" "$data" "volume = vol1 64M" "chunk-index.size = 16M" "log.size = 16M" \
  "bloom.expected-chunks = 256K" "container.size = 1M"

head -c $((16 << 20)) /dev/urandom >"$WORK/backup.bin"
check "start on the tmpfs" dd_start "$conf"
check "write 16 MiB through iSCSI and flush (-t writeback: SYNCHRONIZE CACHE at the end)" timeout 120 \
  qemu-img convert -n -t writeback -f raw -O raw "$WORK/backup.bin" "$(dd_url 1)"
# Fill the file system: the engine's close now has no room for its files.
dd if=/dev/zero of="$fs/filler" bs=1M status=none 2>/dev/null
check "the file system is full" sh -c "[ \"\$(df --output=avail -B1 '$fs' | tail -n 1)\" -lt 65536 ]"
pid="$(dd_pid "$data")"
check_exit 1 "stop on a full disk fails" dd_stop "$conf"
check_output "stop says the engine did not close cleanly" "the engine did not close cleanly \\(no $data/clean\\)"
check_output "stop shows tgtd's reason" "tgtd.log: .*dedupv1: closing the engine .*failed: .*(ENOSPC|No space left)"
check_fails "tgtd gone" tgt_alive "${pid:-0}"
check_fails "state file removed" test -e "$data/dedupv1d.state"

rm -f "$fs/filler"
check "start again with space" dd_start "$conf"
check "the synced data reads back" timeout 120 qemu-img compare -f raw -F raw "$WORK/backup.bin" "$(dd_url 1)"
check "stop with space is clean" dd_stop "$conf"
check_output "stop says the engine closed cleanly" "stopped; the engine closed cleanly"
dd_summary

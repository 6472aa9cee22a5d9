#!/usr/bin/env bash
# Deduplication across LUNs through iSCSI: qemu-img writes a 256 MiB file of
# random bytes to LUN 1 of a dedupv1d target (iscsi:// URL) and reads it back
# byte-identical; the same file written to LUN 2 must store less than 2% more.
#
# Stored bytes = the apparent size of DATA-DIR/containers (du --apparent-size),
# measured after `dedupv1d stop`: deleting the LUNs closes the engine, which
# deduplicates everything buffered and commits every container, so the figure
# is complete. (The monitor's GET /stats is not used: the tgt module does not
# start the monitor server yet.)
#
#   dedupv1d-dedup-test.sh DEDUPV1D
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-900}"
dd_init dedupv1d-dedup "${1:?usage: dedupv1d-dedup-test.sh DEDUPV1D}" qemu-img

conf="$WORK/dedupv1.conf"
data="$WORK/data"
dd_write_config "$conf" "$data" "volume = vol1 256M" "volume = vol2 256M"
size=$((256 << 20))
head -c "$size" /dev/urandom >"$WORK/in.img"

stored() { du -sb --apparent-size "$data/containers" | cut -f1; }
timed() {  # timed DESCRIPTION COMMAND...: check, with the time taken
  local what="$1" t0=$SECONDS
  shift
  check "$what" "$@"
  echo "     ($((SECONDS - t0)) s)"
}
# Bounded: libiscsi reconnects forever when the target goes away.
write_lun() { timeout 300 qemu-img convert -n -f raw -O raw "$WORK/in.img" "$(dd_url "$1")"; }
same_as_input() {  # same_as_input LUN
  timeout 300 qemu-img convert -f raw -O raw "$(dd_url "$1")" "$WORK/out.img" && cmp "$WORK/in.img" "$WORK/out.img"
  local rc=$?
  rm -f "$WORK/out.img"
  return $rc
}

check "start" dd_start "$conf"
timed "write 256 MiB to LUN 1 (qemu-img convert)" write_lun 1
timed "LUN 1 reads back byte-identical" same_as_input 1
check "stop (engine closes, everything committed)" dd_stop "$conf"
s1="$(stored)"
echo "     stored after LUN 1: $s1 bytes"
# Random bytes do not compress: LUN 1's data must really be in the containers
# (else the figure below would prove nothing).
[ "$s1" -ge $((size * 95 / 100)) ] && ok "LUN 1 stored its data (>= 95% of 256 MiB)" ||
  fail "only $s1 bytes stored for 256 MiB of random data"

check "start again" dd_start "$conf"
timed "write the same file to LUN 2" write_lun 2
timed "LUN 2 reads back byte-identical" same_as_input 2
timed "LUN 1 still byte-identical" same_as_input 1
check "stop" dd_stop "$conf"
s2="$(stored)"
growth=$((s2 - s1))
echo "     stored after LUN 2: $s2 bytes (+$growth bytes, limit $((s1 / 50)))"
[ "$growth" -lt $((s1 / 50)) ] && ok "LUN 2 stored < 2% more ($growth bytes)" ||
  fail "LUN 2 stored $growth bytes more (>= 2% of $s1)"

dd_summary

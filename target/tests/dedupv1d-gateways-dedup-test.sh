#!/usr/bin/env bash
# Cluster-wide dedup through two real gateways (design-15 2.4,
# storage.rados.dedup-scope = cluster): gateway slots gw-a and gw-b of one
# RADOS store in the ctest Ceph cluster (fixture "ceph",
# DEDUPV1_TEST_CEPH_CONF), each a dedupv1d instance with its own data dir,
# portal and control port. The same backup written through A, then through
# B: B's containers (data-pool objects of its slot's id range) hold under 1%
# of the backup's bytes, and the backup reads back through both.
# `dedupv1_check --cluster` refuses while a gateway serves (exit 3) and
# finds both slots and the shared chunk index clean once both stopped.
#
#   dedupv1d-gateways-dedup-test.sh DEDUPV1D
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-600}"
dd_init dedupv1d-gateways-dedup "${1:?usage: dedupv1d-gateways-dedup-test.sh DEDUPV1D}" qemu-img rados
bin="$(dirname "$DEDUPV1D")"
[ -x "$bin/dedupv1_check" ] || { echo "FAIL: $bin/dedupv1_check is missing"; exit 1; }
: "${DEDUPV1_TEST_CEPH_CONF:?needs the ctest Ceph cluster (DEDUPV1_TEST_CEPH_CONF)}"
export DD_STORAGE=rados DD_RADOS_LEASE=5s

PORT2="$(tgt_free_port 20000 60000)" || exit 1
CTL2="$(tgt_free_control_port)" || exit 1
mkdir -p "$WORK/a" "$WORK/b"
confA="$WORK/a/dedupv1.conf"
confB="$WORK/b/dedupv1.conf"
store="dd-$$-gwdedup"
common=("volume = vol1 40M" "storage.rados.store = $store" "storage.rados.dedup-scope = cluster")
dd_write_config "$confA" "$WORK/a/data" "${common[@]}" "storage.rados.gateway = gw-a"
dd_write_config "$confB" "$WORK/b/data" "${common[@]}" "storage.rados.gateway = gw-b" "target.control-port = $CTL2"
# A backup of 32 MiB: 24 MiB random, the last 8 MiB repeat the first.
head -c $((24 << 20)) /dev/urandom >"$WORK/part.img"
cat "$WORK/part.img" <(head -c $((8 << 20)) "$WORK/part.img") >"$WORK/backup.img"
backup_bytes=$(stat -c %s "$WORK/backup.img")

urlA() { echo "iscsi://127.0.0.1:$PORT/$IQN/1"; }
urlB() { echo "iscsi://127.0.0.1:$PORT2/$IQN/1"; }
check "A starts gateway slot gw-a (cluster scope)" dd_start "$confA"
check "the backup written and synced through A" put "$WORK/backup.img" "$(urlA)"
DD_CONFIGS+=("$confB")
check "B starts gateway slot gw-b (cluster scope)" \
  timeout 300 "$DEDUPV1D" start --config "$confB" --portal "127.0.0.1:$PORT2"
check "the same backup written and synced through B" put "$WORK/backup.img" "$(urlB)"
check "the backup reads back through A" same "$WORK/backup.img" "$(urlA)"
check "the backup reads back through B" same "$WORK/backup.img" "$(urlB)"
# The shard load rides in each gateway's heartbeat, written every few
# seconds: B's figures appear with its first beat after its writes.
# At most 20 looks, 2 s apart.
cluster_shows_b_load() {
  local i
  for ((i = 1; i <= 20; i++)); do
    timeout 60 "$DEDUPV1D" cluster --config "$confA" >"$WORK/cluster.out" 2>&1 &&
      grep -Eq -- "gw-b .* [1-9][0-9]* ops, max/mean [0-9.]+" "$WORK/cluster.out" && return 0
    sleep 2
  done
  return 1
}
check "dedupv1d cluster while both serve: gw-b's shard load from its heartbeat (20 looks, 2 s apart)" \
  cluster_shows_b_load
cp "$WORK/cluster.out" "$WORK/last.out"
check_output "dedupv1d cluster: claims pending and shard load of the cluster" \
  "^claims pending: [0-9]+ \(all gateways\); shard load max/mean: [0-9.]+"
check_output "dedupv1d cluster: gw-b's shard load from its heartbeat" "gw-b .* [1-9][0-9]* ops, max/mean [0-9.]+"
check "stop B" dd_stop "$confB"
check_exit 3 "dedupv1_check --cluster refuses while A serves its slot" \
  timeout 120 "$bin/dedupv1_check" --cluster --config "$confB"
check_output "dedupv1_check --cluster names the busy slot" "gateway slot gw-a"
check "stop A" dd_stop "$confA"
check "dedupv1_check --cluster: both slots and the shared chunk index are clean" \
  timeout 300 "$bin/dedupv1_check" --cluster --config "$confA"
check_output "dedupv1_check --cluster reports clean" "result: clean"
check_output "dedupv1_check --cluster: B's mappings name A's containers" \
  "slot gw-b .* chunk references \([1-9][0-9]* to other slots' containers\)"
check "dedupv1d cluster --shards" timeout 120 "$DEDUPV1D" cluster --config "$confA" --shards
check_output "dedupv1d cluster --shards: keys per shard of the shared table" \
  "^chunk index ci: [0-9]+ shards, [1-9][0-9]* keys; per shard min [0-9]+, max [0-9]+, mean [0-9.]+, max/mean [0-9.]+"

# Slot numbers follow registration: gw-a is 1, gw-b is 2.
a_bytes="$(dd_container_bytes "$store" 0001)"
b_bytes="$(dd_container_bytes "$store" 0002)"
all_bytes="$(dd_container_bytes "$store")"
echo "A's containers: $a_bytes bytes; B's containers: $b_bytes bytes; all: $all_bytes; backup: $backup_bytes bytes"
check "every container is A's or B's (the slot numbers are 1 and 2)" test "$all_bytes" -eq $((a_bytes + b_bytes))
check "A stored the backup's distinct bytes" test "$a_bytes" -gt $((backup_bytes / 2))
check "B stored under 1% of the backup" test "$((b_bytes * 100))" -lt "$backup_bytes"

dd_summary

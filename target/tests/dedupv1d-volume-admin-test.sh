#!/usr/bin/env bash
# Volumes added and grown online with `dedupv1d volume add|grow` (issue 16,
# item 3; ctest label "service"), while LUN 1 keeps serving a writer:
#  - add: the config gets the line (comments, mode kept), the running target
#    serves the new volume as a new LUN at once;
#  - grow: the config and the running LUN grow; a session that stays logged
#    in gets UNIT ATTENTION, CAPACITY DATA HAS CHANGED, and the new capacity;
#    data written beyond the old end reads back;
#  - refused, the config unchanged: a name that exists, a bad name, a size
#    not a multiple of 512, a shrink, an unknown volume, a grow beyond the free
#    space of the data dir (allowed with --overcommit), a command while another
#    holds the data dir;
#  - an interrupted add (its LUN made, the state file not told) is adopted;
#  - remove: refused while a session is logged in (unless --force), then the
#    LUN, the config line and the data go (tgtd drops it in the background);
#    while stopped, an engine of dedupv1d's own drops it; the last volume
#    stays; dedupv1_check finds the usage counts right afterwards;
#  - policy (issue 18): a volume added with --policy off serves with it;
#    changes with `volume policy` (selective, out-of-band, inline) reach the config and
#    the running engine, and the data written under each reads back;
#    unbuilt and unknown policies and unknown volumes are refused;
#  - the writer of LUN 1 never failed; after kill -9 of tgtd a new start serves
#    both volumes with their new sizes and every synced byte.
#
#   dedupv1d-volume-admin-test.sh DEDUPV1D CAPACITY_WATCH
#
# Exits 77 (skipped) when not root or tgtd / libiscsi-bin / qemu are missing.
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-600}"
dd_init dedupv1d-volume-admin "${1:?usage: dedupv1d-volume-admin-test.sh DEDUPV1D CAPACITY_WATCH}" \
  qemu-img qemu-io iscsi-ls iscsi-readcapacity16
WATCH="${2:?CAPACITY_WATCH}"
MiB=$((1 << 20))

conf="$WORK/dedupv1.conf"
data="$WORK/data"
# The data dir on a small file system, so "beyond the free space" is real.
mkdir -p "$data" && mount -t tmpfs -o size=512M tmpfs "$data" && DD_MOUNTS+=("$data") ||
  { echo "FAIL: cannot mount a tmpfs for the data dir"; exit 1; }
dd_write_config "$conf" "$data" "volume = vol1 64M" "# the admin's own comment"
chmod 600 "$conf"
vol() { timeout 300 "$DEDUPV1D" volume "$@" --config "$conf"; }
capacity_is() {  # capacity_is LUN BYTES
  iscsi-readcapacity16 "$(dd_url "$1")" | grep -q "RETURNED LOGICAL BLOCK ADDRESS:$(($2 / 512 - 1))$"
}

check "dedupv1d start with vol1" dd_start "$conf"
pid="$(dd_pid "$data")"

# LUN 1 keeps a writer busy through every change below: one-MiB sessions
# over its first 32 MiB, each ending with SYNCHRONIZE CACHE, until told to
# stop (at most 400). Its ledger: "C i" per synced session, "F i" per failed.
# Each MiB has its own content, so a write landing elsewhere would show.
head -c $((32 * MiB)) /dev/urandom >"$WORK/w.img"
for k in $(seq 0 31); do dd if="$WORK/w.img" of="$WORK/seg.$k" bs="$MiB" skip="$k" count=1 status=none; done
(
  for i in $(seq 0 399); do
    [ -e "$WORK/w.stop" ] && break
    if timeout 60 qemu-io -f raw -t writeback -c "write -s $WORK/seg.$((i % 32)) $(((i % 32) * MiB)) $MiB" -c flush \
      "$(dd_url 1)" >"$WORK/w.out" 2>&1 && ! grep -q failed "$WORK/w.out"; then
      echo "C $i" >>"$WORK/w.ledger"
    else
      echo "F $i" >>"$WORK/w.ledger"
    fi
  done
) &
writer=$!
DD_PIDS+=("$writer")
synced() { grep -c '^C ' "$WORK/w.ledger" 2>/dev/null; }
tgt_wait_for "[ \"\$(synced)\" -ge 2 ]" 60 || fail "the writer of LUN 1 did not get going"
synced_before_add="$(synced)"

# ---- add
check "volume add vol2 32M" vol add vol2 32M
check_output "it says the new LUN" "volume vol2 is served as LUN 2"
check "the config has the new line" grep -q "^volume = vol2 32M$" "$conf"
check "the config kept the admin's comment" grep -q "^# the admin's own comment$" "$conf"
check "the config kept its mode" test "$(stat -c %a "$conf")" = 600
check "iscsi-ls lists LUN 2" iscsi-ls -s "iscsi://127.0.0.1:$PORT"
check_output "LUN 2 is a disk" "^Lun:2 +Type:DIRECT_ACCESS"
check "LUN 2 is 32 MiB" capacity_is 2 $((32 * MiB))
head -c $((8 * MiB)) /dev/urandom >"$WORK/c.img"
check "write 8 MiB to LUN 2 (synced)" put "$WORK/c.img" 2
check "read them back" same "$WORK/c.img" 2
check "status lists LUN 2 = vol2" dd_status "$conf"
check_output "status: LUN 2" "^LUN 2: +volume vol2, 32.0 MiB"
check "volume add vol2 32M again: nothing to do" vol add vol2 32M
check_output "it says so" "served as LUN 2 .* already; nothing to do"

# ---- refused, the config unchanged
cp "$conf" "$WORK/conf.before"
check_exit 2 "add of a name that exists, another size" vol add vol2 64M
check_output "it names the volume" "volume vol2 exists already .*nothing changed"
check_exit 2 "add of a bad name" vol add "bad/name" 32M
check_output "it names the rule" "may only use letters"
check_exit 2 "add of a size not a multiple of 512" vol add vol3 1000
check_output "it names the size rule" "multiple of 512"
check_exit 2 "grow to a smaller size" vol grow vol1 32M
check_output "it refuses the shrink" "shrinking it to .* is refused"
check_exit 2 "grow of an unknown volume" vol grow vol9 1G
check_output "it lists the volumes" "no volume named 'vol9' .*volumes: vol1, vol2"
check_exit 2 "grow beyond the free space" vol grow vol1 2G
check_output "it names the free space and --overcommit" "more than the .* free in $data; .*--overcommit"
flock "$data/dedupv1d.lock" -c "touch $WORK/locked; sleep 30" &
holder=$!
DD_PIDS+=("$holder")
tgt_wait_for "test -e $WORK/locked" 10 || fail "flock did not take the data dir's lock"
check_exit 1 "add while another command holds the data dir" vol add vol3 16M
check_output "it says to try again" "another dedupv1d command is working on $data; try again"
pkill -P "$holder" sleep 2>/dev/null
wait "$holder" 2>/dev/null
check "the config is unchanged after every refusal" cmp "$conf" "$WORK/conf.before"

# ---- grow, seen from a session that stays logged in
rm -f "$WORK/ready" "$WORK/go"
"$WATCH" "$(dd_url 1)" "$WORK/ready" "$WORK/go" $((128 * MiB)) >"$WORK/watch.out" 2>&1 &
watcher=$!
DD_PIDS+=("$watcher")
tgt_wait_for "test -e $WORK/ready" 60 || fail "the watching session did not log in"
check "volume grow vol1 128M" vol grow vol1 128M
check_output "it says the new size" "volume vol1 grew to 134217728 bytes .* on LUN 1"
touch "$WORK/go"
if wait "$watcher"; then ok "the logged-in session saw the change"; else fail "the logged-in session"; fi
sed 's/^/     /' "$WORK/watch.out"
check "the config says 128M" grep -q "^volume = vol1 128M$" "$conf"
check "a new session sees 128 MiB" capacity_is 1 $((128 * MiB))
head -c $((4 * MiB)) /dev/urandom >"$WORK/d.img"
check "write 4 MiB at 100 MiB, beyond the old end (synced)" \
  timeout 120 qemu-io -f raw -t writeback -c "write -s $WORK/d.img $((100 * MiB)) $((4 * MiB))" -c flush "$(dd_url 1)"
check "read them back" bash -c "timeout 120 qemu-img convert -f raw -O raw '$(dd_url 1)' '$WORK/lun1.img' &&
  cmp -n $((4 * MiB)) '$WORK/d.img' <(tail -c +$((100 * MiB + 1)) '$WORK/lun1.img')"
check "grow vol2 to 1G, beyond the free space, with --overcommit" vol grow vol2 1G --overcommit
check "LUN 2 is 1 GiB" capacity_is 2 $((1 << 30))

# ---- an interrupted add (the LUN made, the state file not told) is finished
echo "volume = vol4 16M" >>"$conf"
check "a LUN 3 for vol4, as an interrupted run would leave it" timeout 120 tgtadm -C "$CTL" --lld iscsi --op new \
  --mode logicalunit --tid 1 --lun 3 --bstype dedupv1 --backing-store "$conf" --bsopts "volume=vol4;datadir=$data"
check "volume add vol4 16M again" vol add vol4 16M --overcommit
check_output "it adopts the LUN" "adopting LUN 3 \(volume vol4\)"
check "status: LUN 3 = vol4" dd_status "$conf"
check_output "status lists it" "^LUN 3: +volume vol4, 16.0 MiB"

# ---- remove: not while an initiator is logged in, unless --force
check "write 4 MiB to vol4's LUN 3 (synced)" put "$WORK/d.img" 3
# A session of its own initiator name: the LUN 1 writer's short sessions come
# and go meanwhile, so only this one's login says a session stays logged in.
sleeper_iqn="iqn.2026-11.org.dedupv1.test:sleeper-$$"
timeout 60 qemu-io -c "sleep 50000" --image-opts \
  "driver=iscsi,transport=tcp,portal=127.0.0.1:$PORT,target=$IQN,lun=1,initiator-name=$sleeper_iqn" \
  >"$WORK/sleeper.out" 2>&1 &
session=$!
DD_PIDS+=("$session")
tgt_wait_for "tgtadm -C $CTL --lld iscsi --op show --mode target | grep -q 'Initiator: $sleeper_iqn'" 20 ||
  fail "the session did not log in: $(cat "$WORK/sleeper.out")"
cp "$conf" "$WORK/conf.before"
check_exit 2 "volume remove vol4 while a session is logged in" vol remove vol4
check_output "it names the sessions and --force" "session\(s\) are logged in to $IQN and may use LUN 3 \(volume vol4\).*--force"
check "the config is unchanged" cmp "$conf" "$WORK/conf.before"
check "LUN 3 still serves" same "$WORK/d.img" 3
check "volume remove vol4 --force" vol remove vol4 --force
check_output "its data is dropped" "volume vol4 removed: its data is dropped"
check_fails "the config has no vol4 line" grep -q "vol4" "$conf"
check "iscsi-ls" iscsi-ls -s "iscsi://127.0.0.1:$PORT"
if grep -q "^Lun:3 " "$WORK/last.out"; then fail "LUN 3 is still listed"; else ok "LUN 3 is gone"; fi
check "tgtd's log says vol4 was dropped" grep -q "volume 'vol4' dropped" "$data/tgtd.log"
kill "$session" 2>/dev/null
check_exit 2 "volume add of the removed name vol4" vol add vol4 8M
check_output "names are not reused" "volume vol4 is in the store's volume table already .*choose another"
check_exit 2 "volume remove of an unknown volume" vol remove vol9
check_output "it says so" "no volume named 'vol9'"

# ---- policy (issue 18): a volume added with policy off, policies changed online
check "volume add vol5 16M --policy off" vol add vol5 16M --policy off --overcommit
check_output "it says the new LUN" "volume vol5 is served as LUN [0-9]+"
lun5="$(sed -n 's/.*volume vol5 is served as LUN \([0-9]*\).*/\1/p' "$WORK/last.out")"
check "the config line says policy=off" grep -q "^volume = vol5 16M policy=off$" "$conf"
check "tgtd's engine serves vol5 with policy off" grep -q "volume 'vol5' is [0-9]* bytes from now on (policy off" "$data/tgtd.log"
check "write LUN 2's 8 MiB to vol5 too, stored again there (synced)" put "$WORK/c.img" "$lun5"
check "vol5 reads them back" same "$WORK/c.img" "$lun5"
check "volume policy vol5 selective" vol policy vol5 selective
check "the config line says policy=selective" grep -q "^volume = vol5 16M policy=selective$" "$conf"
check "tgtd's engine took it" grep -q "volume 'vol5' is [0-9]* bytes from now on (policy selective" "$data/tgtd.log"
check "write 4 MiB to vol5 with policy selective (synced)" put "$WORK/d.img" "$lun5"
check "vol5 reads them back" same "$WORK/d.img" "$lun5"
check "volume policy vol5 out-of-band" vol policy vol5 out-of-band
check "the config line says policy=out-of-band" grep -q "^volume = vol5 16M policy=out-of-band$" "$conf"
check "tgtd's engine took it" grep -q "volume 'vol5' is [0-9]* bytes from now on (policy out-of-band" "$data/tgtd.log"
check "write the 4 MiB to vol5 again with policy out-of-band: stored beside (synced)" put "$WORK/d.img" "$lun5"
check "vol5 reads them back" same "$WORK/d.img" "$lun5"
check "volume policy vol5 inline" vol policy vol5 inline
check_output "it says the writes that follow" "volume vol5 \(LUN $lun5\) has policy inline for the writes that follow"
check "the config line has no policy word (inline is the default)" grep -q "^volume = vol5 16M$" "$conf"
check "tgtd's engine took it" grep -q "volume 'vol5' is [0-9]* bytes from now on (policy inline" "$data/tgtd.log"
check "volume policy vol2 off" vol policy vol2 off
check "tgtd's engine took it" grep -q "volume 'vol2' is [0-9]* bytes from now on (policy off" "$data/tgtd.log"
check "vol2 still reads back" same "$WORK/c.img" 2
check "volume policy vol2 off again: the config stays, the engine is asked again" vol policy vol2 off
check "the config says policy=off once" test "$(grep -c '^volume = vol2 1G policy=off$' "$conf")" -eq 1
cp "$conf" "$WORK/conf.before"
check_exit 2 "volume policy vol1 fast" vol policy vol1 fast
check_output "it names the policies" "policy must be inline, selective, out-of-band or off, got 'fast'.*nothing changed"
check_exit 2 "volume policy of an unknown volume" vol policy vol9 off
check_output "it lists the volumes" "no volume named 'vol9'"
check_exit 2 "volume add vol2 1G --policy inline (vol2 is off)" vol add vol2 1G --policy inline
check_output "it points to volume policy" "with policy off \(to change it: dedupv1d volume policy\)"
check "the config is unchanged after every refusal" cmp "$conf" "$WORK/conf.before"
check "volume add vol2 1G again without --policy: nothing to do (a provisioning script re-run)" vol add vol2 1G
check_output "it says so" "served as LUN 2 .* already; nothing to do"

# ---- the writer of LUN 1 went on through all of it
synced_after_grow="$(synced)"
tgt_wait_for "[ \"\$(synced)\" -ge 32 ]" 120 || fail "the writer of LUN 1 did not cover its 32 MiB"
touch "$WORK/w.stop"
wait "$writer"
check "the writer synced sessions while volumes were added and grown ($synced_before_add before, $synced_after_grow after)" \
  test "$synced_after_grow" -gt "$synced_before_add"
check "none of its sessions failed" test "$(grep -c '^F ' "$WORK/w.ledger")" -eq 0
check "LUN 1 reads what it wrote" same "$WORK/w.img" 1

# ---- kill -9, start again: the new volume and sizes, every synced byte
kill -KILL "$pid"
tgt_wait_for "! tgt_alive $pid" 10
check "start after kill -9" dd_start "$conf"
check "LUN 1 is 128 MiB" capacity_is 1 $((128 * MiB))
check "LUN 2 is 1 GiB" capacity_is 2 $((1 << 30))
check "LUN 2 reads back" same "$WORK/c.img" 2
check "vol5 (LUN $lun5) reads back" same "$WORK/d.img" "$lun5"
check "the new start serves vol2 with policy off, vol5 inline" \
  bash -c "grep -q \"volume 'vol2' served: $((1 << 30)) bytes, policy off\" '$data/tgtd.log' &&
    grep -q \"volume 'vol5' served: $((16 * MiB)) bytes, policy inline\" '$data/tgtd.log'"
check "LUN 1 reads back from 0" same "$WORK/w.img" 1
check "LUN 1 reads back beyond the old end" bash -c "timeout 120 qemu-img convert -f raw -O raw '$(dd_url 1)' '$WORK/lun1.img' &&
  cmp -n $((4 * MiB)) '$WORK/d.img' <(tail -c +$((100 * MiB + 1)) '$WORK/lun1.img')"
check "stop" dd_stop "$conf"
check "the engine closed cleanly" test -e "$data/clean"
check "grow while stopped: the config only" vol grow vol2 2G --overcommit
check_output "it says when it applies" "no instance serves $data: the volume is this size from the next start"
check "volume remove vol2 while stopped (an engine of its own drops it)" vol remove vol2
check_output "its data is dropped" "volume vol2 removed: its data is dropped"
check "volume policy vol5 off while stopped: the config only" vol policy vol5 off
check_output "it says when it applies" "no instance serves volume vol5 of $data: its writes have policy off from its next start"
check "volume remove vol5 while stopped" vol remove vol5
check_exit 2 "removing the only volume left" vol remove vol1
check_output "it says a config needs one" "is the only volume of .* add another first"
check "dedupv1_check: every usage count matches the mappings" \
  timeout 300 "$(dirname "$DEDUPV1D")/dedupv1_check" --config "$conf"

dd_summary

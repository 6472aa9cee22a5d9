#!/usr/bin/env bash
# Crash consistency through iSCSI: a client writes and syncs while tgtd is
# killed with SIGKILL; after a restart through dedupv1d every byte whose
# SYNCHRONIZE CACHE returned GOOD reads back. CYCLES (default 5) rounds.
#
# The client: a loop of qemu-io sessions, each writing two random 96 KiB
# regions of LUN 1 (64 MiB; 96 KiB straddles the engine's 128 KiB blocks, so
# partial-block writes are covered) with a one-byte pattern, then `flush`
# (SYNCHRONIZE CACHE). A ledger records every write before it is sent ("A id
# region pattern") and the session's flush when it returned OK ("C id").
# After each restart LUN 1 is read whole and every region checked against the
# ledger: a region whose last write was confirmed must hold exactly that
# pattern (zeros if never written); a region with unconfirmed writes after
# its last confirmed one may hold any mix of those patterns, nothing else.
# An unconfirmed write of a session cut off while tgtd lived on (timeout)
# may still be carried out after a later session's confirmed write (SCSI
# gives no order for the commands of a dropped connection), so its pattern
# stays allowed until tgtd is killed ("R" in the ledger marks each restart).
# At the end, after a clean stop, dedupv1_check finds every usage count right.
#
# DD_POLICY=selective|off|out-of-band gives LUN 1 that dedup policy (issue 18; default
# inline, the config's default); the out-of-band pass runs a round every second.
#
#   dedupv1d-kill9-test.sh DEDUPV1D [CYCLES]
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-900}"
dd_init dedupv1d-kill9 "${1:?usage: dedupv1d-kill9-test.sh DEDUPV1D [CYCLES]}" qemu-img qemu-io
cycles="${2:-5}"

conf="$WORK/dedupv1.conf"
data="$WORK/data"
dd_write_config "$conf" "$data" "volume = vol1 64M${DD_POLICY:+ policy=$DD_POLICY}" \
  "# out-of-band: the pass starts a round every second" "dedup.background.period = 1s"
region=$((96 << 10))
regions=$(((64 << 20) / region))
ledger="$WORK/ledger"
: >"$ledger"
next_id=0

# One writer session after another until $WORK/stop exists. Each session is
# bounded (libiscsi keeps reconnecting to a dead target).
writer() {
  local id="$1" r1 r2 p1 p2
  # Also ends when the test script is gone (its cleanup kills us too).
  while [ ! -e "$WORK/stop" ] && kill -0 $$ 2>/dev/null; do
    id=$((id + 1))
    r1=$((RANDOM % regions)) r2=$((RANDOM % regions))
    p1=$((1 + RANDOM % 255)) p2=$((1 + RANDOM % 255))
    printf 'A %d %d %d\nA %d %d %d\n' "$id" "$r1" "$p1" "$id" "$r2" "$p2" >>"$ledger"
    if timeout -s KILL 20 qemu-io -f raw -c "write -P $p1 $((r1 * region)) $region" \
      -c "write -P $p2 $((r2 * region)) $region" -c flush "$(dd_url 1)" >"$WORK/writer.out" 2>&1; then
      echo "C $id" >>"$ledger"
    fi
  done
}

# Per region, the patterns it may hold: "REGION P..." (one pattern: exact).
allowed() {
  awk -v n="$regions" '
    $1 == "A" { k++; id[k] = $2; reg[k] = $3; pat[k] = $4 }
    $1 == "R" { k++; id[k] = "R" }
    $1 == "C" { confirmed[$2] = 1 }
    END {
      for (r = 0; r < n; r++) allow[r] = "0"
      for (i = 1; i <= k; i++) {
        if (id[i] == "R") { delete loose; continue }
        if (confirmed[id[i]]) {
          allow[reg[i]] = pat[i] loose[reg[i]]
        } else {
          allow[reg[i]] = allow[reg[i]] " " pat[i]
          loose[reg[i]] = loose[reg[i]] " " pat[i]
        }
      }
      for (r = 0; r < n; r++) print r, allow[r]
    }' "$ledger"
}

# Reads LUN 1 and checks every region against the ledger: the image is
# compared with one holding each region's last confirmed pattern; a differing
# byte is only allowed in a region with later unconfirmed writes, and only
# with one of their patterns.
verify() {
  local image="$WORK/lun1.img" expected="$WORK/expected.img" r pats first
  timeout 300 qemu-img convert -f raw -O raw "$(dd_url 1)" "$image" || { echo "cannot read LUN 1"; return 1; }
  rm -f "$expected"
  truncate -s 64M "$expected"
  allowed >"$WORK/allowed"
  while read -r r first _; do
    [ "$first" -eq 0 ] && continue
    head -c "$region" /dev/zero | tr '\0' "\\$(printf '%03o' "$first")" |
      dd of="$expected" bs="$region" seek="$r" conv=notrunc status=none
  done <"$WORK/allowed"
  # cmp -l: "OFFSET(1-based) EXPECTED ACTUAL" per differing byte, octal values
  # (exit 1 just means "differ": the awk below judges; 2 is trouble).
  { cmp -l "$expected" "$image" || [ $? -eq 1 ] || echo "cmp failed"; } | awk -v region="$region" '
    FILENAME == ARGV[1] { for (i = 2; i <= NF; i++) ok[$1, $i] = 1; loose[$1] = NF > 2; n[$1] = $0; next }
    $0 == "cmp failed" { print; nb++; next }
    {
      r = int(($1 - 1) / region); v = 0
      for (i = 1; i <= length($3); i++) v = v * 8 + substr($3, i, 1)
      if (!ok[r, v]) { bad[r]++; got[r] = v }
    }
    END {
      for (r in n) { if (loose[r]) nl++; else ns++ }
      for (r in bad) { printf "region %d: %d bytes wrong (e.g. %d; allowed: %s)\n", r, bad[r], got[r], n[r]; nb++ }
      printf "%d regions exact, %d regions with unconfirmed writes, %d wrong\n", ns, nl, nb
      exit (nb > 0)
    }' "$WORK/allowed" -
  local rc=$?
  rm -f "$image" "$expected"
  return $rc
}

confirmed_count() { grep -c '^C ' "$ledger"; }

for cycle in $(seq 1 "$cycles"); do
  check "cycle $cycle: dedupv1d start" dd_start "$conf"
  [ "$cycle" -eq 1 ] || check_output "cycle $cycle: start notices the killed tgtd" "is gone \(killed or crashed\)"
  check "tgtd serves vol1 with policy ${DD_POLICY:-inline}" \
    grep -q "volume 'vol1' served: [0-9]* bytes, policy ${DD_POLICY:-inline}\$" "$data/tgtd.log"
  check "cycle $cycle: flushed data intact after restart" verify
  pid="$(dd_pid "$data")"
  rm -f "$WORK/stop"
  before="$(confirmed_count)"
  writer "$next_id" &
  writer_pid=$!
  DD_PIDS+=("$writer_pid")
  # Kill while the client is busy: after at least two confirmed sessions of
  # this cycle, then 0-2 s more (bounded: 120 s).
  for _ in $(seq 1 1200); do
    [ "$(confirmed_count)" -ge $((before + 2)) ] && break
    sleep 0.1
  done
  sleep "$((RANDOM % 3)).$((RANDOM % 10))"
  if tgt_alive "$pid"; then
    kill -KILL "$pid"
    echo R >>"$ledger"
    ok "cycle $cycle: tgtd $pid killed with SIGKILL while the client writes"
  else
    fail "cycle $cycle: tgtd $pid was not running"
  fi
  touch "$WORK/stop"
  wait "$writer_pid"
  next_id="$(awk '$1 == "A" { id = $2 } END { print id + 0 }' "$ledger")"
  echo "     cycle $cycle: $(($(confirmed_count) - before)) sessions confirmed," \
    "$(awk '$1 == "A"' "$ledger" | wc -l) writes so far"
  [ "$(confirmed_count)" -ge $((before + 2)) ] || fail "cycle $cycle: the client confirmed fewer than 2 sessions"
done

check "final start" dd_start "$conf"
check "all flushed data intact after $cycles kills" verify
cat "$WORK/last.out" | sed 's/^/     /'
check "stop" dd_stop "$conf"
check "data intact after a clean stop and start" sh -c "'$DEDUPV1D' start --config '$conf' --portal 127.0.0.1:$PORT >/dev/null"
check "verify after clean restart" verify
check "stop" dd_stop "$conf"
check "dedupv1_check: every usage count matches the mappings (policy ${DD_POLICY:-inline})" \
  timeout 300 "$(dirname "$DEDUPV1D")/dedupv1_check" --config "$conf"
dd_summary

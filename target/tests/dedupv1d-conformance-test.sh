#!/usr/bin/env bash
# SCSI conformance of a dedupv1 LUN, measured against tgt's own rdwr store in
# the same tgtd: libiscsi's `iscsi-test-cu --test=SCSI --dataloss` runs against
# LUN 1 of a dedupv1d target (128 MiB volume) and against a 128 MiB rdwr LUN
# (a file; tgt's default store, not thin provisioned).
#
# Passes when
#  - the dedupv1 LUN passes at least as many tests as rdwr, counting tests
#    that really ran (a test libiscsi skips, e.g. UNMAP on a store without
#    thin provisioning, counts as "passed" for CUnit but not here), and
#  - the thin-provisioning tests ran on the dedupv1 LUN (not skipped): the
#    Unmap and GetLBAStatus suites and WriteSame10/16.Unmap*.
# Prints both counts, each store's failures, and the tests rdwr passes that
# dedupv1 does not.
#
#   dedupv1d-conformance-test.sh DEDUPV1D
#
# DEDUPV1_CU_TESTS overrides the test selection (default SCSI).
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-1500}"
dd_init dedupv1d-conformance "${1:?usage: dedupv1d-conformance-test.sh DEDUPV1D}" iscsi-test-cu

tests="${DEDUPV1_CU_TESTS:-SCSI}"
conf="$WORK/dedupv1.conf"
dd_write_config "$conf" "$WORK/data" "volume = vol1 128M"
rdwr_iqn=iqn.2026-11.org.dedupv1:rdwr-reference
truncate -s 128M "$WORK/rdwr.img"

check "start" dd_start "$conf"
check "rdwr target" tgtadm -C "$CTL" --lld iscsi --op new --mode target --tid 2 -T "$rdwr_iqn"
check "rdwr LUN" tgtadm -C "$CTL" --lld iscsi --op new --mode logicalunit --tid 2 --lun 1 \
  --bstype rdwr --backing-store "$WORK/rdwr.img"
check "rdwr ACL" tgtadm -C "$CTL" --lld iscsi --op bind --mode target --tid 2 -I ALL

# Per test: "SUITE.TEST passed|skipped|FAILED" from iscsi-test-cu's verbose
# output: "  Test: NAME ..." then the result ("passed"/"FAILED") either right
# after the dots or at the end of a later line, with [SKIPPED] notes between
# (and sometimes a next test's message after the result on the same line).
results() {
  awk '
    function result(t) {
      if (t ~ /\[SKIPPED\]/) skipped = 1
      if (t ~ /^(passed|FAILED)/ || t ~ /(passed|FAILED)$/) {
        failed = t ~ /^FAILED/ || (t !~ /^passed/ && t ~ /FAILED$/)
        print name, failed ? "FAILED" : (skipped ? "skipped" : "passed")
        name = ""
      }
    }
    /^Suite: / { suite = $2; name = ""; next }
    /^  Test: / {
      name = suite "." $2; skipped = 0
      rest = $0; sub(/^  Test: [^ ]+ \.\.\./, "", rest)
      result(rest)
      next
    }
    name != "" { result($0) }' "$1"
}

run_cu() {  # run_cu NAME URL
  local t0=$SECONDS rc
  timeout 600 iscsi-test-cu --test="$tests" --dataloss "$2" >"$WORK/cu-$1.txt" 2>&1
  rc=$?
  echo "     iscsi-test-cu on $1: exit $rc, $((SECONDS - t0)) s"
  [ "$rc" -ne 124 ] || fail "iscsi-test-cu on $1 timed out"
  results "$WORK/cu-$1.txt" >"$WORK/res-$1.txt"
  grep -A4 "^Run Summary" "$WORK/cu-$1.txt" | sed 's/^/     /'
}
run_cu dedupv1 "$(dd_url 1)"
run_cu rdwr "$(dd_url 1 "$rdwr_iqn")"

count() { grep -c " $2\$" "$WORK/res-$1.txt"; }
for store in dedupv1 rdwr; do
  echo "$store: $(count "$store" passed) passed, $(count "$store" skipped) skipped," \
    "$(count "$store" FAILED) failed of $(wc -l <"$WORK/res-$store.txt") tests"
  echo "  failed: $(awk '$2 == "FAILED" { printf "%s ", $1 }' "$WORK/res-$store.txt")"
done
[ "$(wc -l <"$WORK/res-dedupv1.txt")" -gt 100 ] && ok "dedupv1: the SCSI family ran" ||
  { [ "$tests" != SCSI ] || fail "dedupv1: only $(wc -l <"$WORK/res-dedupv1.txt") tests ran"; }

dedup_pass="$(count dedupv1 passed)"
rdwr_pass="$(count rdwr passed)"
if [ "$dedup_pass" -ge "$rdwr_pass" ]; then
  ok "dedupv1 passes $dedup_pass tests >= rdwr's $rdwr_pass"
else
  fail "dedupv1 passes $dedup_pass tests < rdwr's $rdwr_pass"
fi
echo "  passed on rdwr, not on dedupv1: $(join <(awk '$2 == "passed" { print $1 }' "$WORK/res-rdwr.txt" | sort) \
  <(awk '$2 != "passed" { print $1 }' "$WORK/res-dedupv1.txt" | sort) | tr '\n' ' ')"

if [ "$tests" = SCSI ]; then
  tp="$(grep -E '^(Unmap|GetLBAStatus)\.|^WriteSame1[06]\.Unmap' "$WORK/res-dedupv1.txt")"
  tp_ran="$(echo "$tp" | grep -cv ' skipped$')"
  tp_all="$(echo "$tp" | grep -c .)"
  # Unmap: 3, GetLBAStatus: 3, WriteSame10/16: 4 Unmap* each (libiscsi 1.19).
  if [ "$tp_all" -ge 14 ] && [ "$tp_ran" -eq "$tp_all" ]; then
    ok "thin-provisioning tests ran on dedupv1 ($tp_ran of $tp_all; $(echo "$tp" | grep -c ' passed$') passed)"
  else
    fail "thin-provisioning tests: $tp_ran of $tp_all ran"
    echo "$tp" | sed 's/^/     /'
  fi
fi

check "stop" dd_stop "$conf"
dd_summary

#!/usr/bin/env bash
# SCSI conformance of a dedupv1 LUN, measured against tgt's own rdwr store in
# the same tgtd: libiscsi's `iscsi-test-cu --test=SCSI --dataloss` runs against
# LUN 1 of a dedupv1d target (128 MiB volume) and against a 128 MiB rdwr LUN
# (a file; tgt's default store, not thin provisioned).
#
# The dedupv1 LUN announces 4096-byte physical blocks (8 logical blocks per
# physical block). libiscsi 1.19 has one thin-provisioning test that is only
# right with 1 logical block per physical block (GetLBAStatus.UnmapSingle asks
# about LBA i+1 and expects the answer to start at i+lbppb) and others that
# only run with more than one (WriteSame10/16.UnmapUnaligned). So the
# thin-provisioning suites run a second time on the same LUN switched to
# 512-byte physical blocks (tgtadm --params lbppbe=0).
#
# Passes when
#  - the dedupv1 LUN passes at least as many tests as rdwr in the same run,
#    both counting tests that really ran (a test libiscsi skips, e.g. UNMAP on
#    a store without thin provisioning, counts as "passed" for CUnit but not
#    here) and counting CUnit's "passed", and
#  - every thin-provisioning test (the Unmap and GetLBAStatus suites and
#    WriteSame10/16.Unmap*) ran and passed on the dedupv1 LUN in at least one
#    of the two geometries, and none failed in either, except
#    GetLBAStatus.UnmapSingle with 4096-byte physical blocks, and that only
#    with libiscsi's "lba offset in first descriptor does not match request".
# Prints both counts, each store's failures, and the tests rdwr passes that
# dedupv1 does not.
#
#   dedupv1d-conformance-test.sh DEDUPV1D
#
# At the end, after a clean stop, dedupv1_check finds every usage count right.
# DD_POLICY=selective|off|out-of-band gives the dedupv1 volume that dedup policy (issue
# 18; default inline); the out-of-band pass runs a round every second.
#
# DEDUPV1_CU_TESTS overrides the test selection (default SCSI; the
# thin-provisioning checks run only with the default).
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-1500}"
dd_init dedupv1d-conformance "${1:?usage: dedupv1d-conformance-test.sh DEDUPV1D}" iscsi-test-cu \
  iscsi-readcapacity16

tests="${DEDUPV1_CU_TESTS:-SCSI}"
conf="$WORK/dedupv1.conf"
dd_write_config "$conf" "$WORK/data" "volume = vol1 128M${DD_POLICY:+ policy=$DD_POLICY}" \
  "# out-of-band: the pass starts a round every second" "dedup.background.period = 1s"
rdwr_iqn=iqn.2026-11.org.dedupv1:rdwr-reference
truncate -s 128M "$WORK/rdwr.img"

check "start" dd_start "$conf"
check "tgtd serves vol1 with policy ${DD_POLICY:-inline}" \
  grep -q "volume 'vol1' served: [0-9]* bytes, policy ${DD_POLICY:-inline}\$" "$WORK/data/tgtd.log"
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

# test_log SUITE.TEST FILE: the lines iscsi-test-cu printed for one test.
test_log() {
  awk -v suite="${1%%.*}" -v name="${1#*.}" '
    /^Suite: / { in_suite = $2 == suite; printing = 0; next }
    /^  Test: / { printing = in_suite && $2 == name }
    /^Run Summary/ { printing = 0 }
    printing' "$2"
}

run_cu() {  # run_cu NAME URL [TESTS]
  local t0=$SECONDS rc
  timeout 600 iscsi-test-cu --test="${3:-$tests}" --dataloss "$2" >"$WORK/cu-$1.txt" 2>&1
  rc=$?
  echo "     iscsi-test-cu on $1: exit $rc, $((SECONDS - t0)) s"
  [ "$rc" -ne 124 ] || fail "iscsi-test-cu on $1 timed out"
  results "$WORK/cu-$1.txt" >"$WORK/res-$1.txt"
  grep -A4 "^Run Summary" "$WORK/cu-$1.txt" | sed 's/^/     /'
}
# LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT of the dedupv1 LUN (READ CAPACITY 16).
lbppbe() { timeout 60 iscsi-readcapacity16 "$(dd_url 1)" | sed -n 's/.*PER PHYSICAL BLOCK EXPONENT:\([0-9]*\).*/\1/p'; }
[ "$(lbppbe)" = 3 ] && ok "dedupv1 LUN: 4096-byte physical blocks (lbppbe 3)" ||
  fail "dedupv1 LUN: lbppbe '$(lbppbe)', expected 3 (4096-byte physical blocks)"
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

# CUnit's own "passed" count (skipped tests included) from the Run Summary.
cunit_passed() { awk '$1 == "tests" { print $4 }' "$WORK/cu-$1.txt"; }
dedup_pass="$(count dedupv1 passed)"
rdwr_pass="$(count rdwr passed)"
if [ "$dedup_pass" -ge "$rdwr_pass" ]; then
  ok "dedupv1 passes $dedup_pass tests that ran >= rdwr's $rdwr_pass"
else
  fail "dedupv1 passes $dedup_pass tests that ran < rdwr's $rdwr_pass"
fi
dedup_cunit="$(cunit_passed dedupv1)"
rdwr_cunit="$(cunit_passed rdwr)"
if [ -n "$dedup_cunit" ] && [ -n "$rdwr_cunit" ] && [ "$dedup_cunit" -ge "$rdwr_cunit" ]; then
  ok "dedupv1's CUnit passed count $dedup_cunit >= rdwr's $rdwr_cunit"
else
  fail "dedupv1's CUnit passed count '$dedup_cunit' < rdwr's '$rdwr_cunit'"
fi
echo "  passed on rdwr, not on dedupv1: $(join <(awk '$2 == "passed" { print $1 }' "$WORK/res-rdwr.txt" | sort) \
  <(awk '$2 != "passed" { print $1 }' "$WORK/res-dedupv1.txt" | sort) | tr '\n' ' ')"

if [ "$tests" = SCSI ]; then
  thin='^(Unmap|GetLBAStatus)\.|^WriteSame1[06]\.Unmap'
  # The known libiscsi 1.19 failure with more than one block per physical block.
  excused=GetLBAStatus.UnmapSingle
  excuse='lba offset in first descriptor does not'
  check "dedupv1 LUN switched to 512-byte physical blocks" \
    tgtadm -C "$CTL" --lld iscsi --op update --mode logicalunit --tid 1 --lun 1 --params lbppbe=0
  [ "$(lbppbe)" = 0 ] && ok "dedupv1 LUN: 512-byte physical blocks (lbppbe 0)" ||
    fail "dedupv1 LUN: lbppbe '$(lbppbe)' after the switch, expected 0"
  run_cu dedupv1-512 "$(dd_url 1)" SCSI.Unmap,SCSI.GetLBAStatus,SCSI.WriteSame10,SCSI.WriteSame16
  grep -E "$thin" "$WORK/res-dedupv1.txt" >"$WORK/thin-4096.txt"
  grep -E "$thin" "$WORK/res-dedupv1-512.txt" >"$WORK/thin-512.txt"
  echo "dedupv1 thin-provisioning tests, 4096-byte physical blocks:" \
    "$(grep -c ' passed$' "$WORK/thin-4096.txt") passed, $(grep -c ' skipped$' "$WORK/thin-4096.txt") skipped," \
    "$(grep -c ' FAILED$' "$WORK/thin-4096.txt") failed of $(grep -c . "$WORK/thin-4096.txt")"
  echo "dedupv1 thin-provisioning tests, 512-byte physical blocks:" \
    "$(grep -c ' passed$' "$WORK/thin-512.txt") passed, $(grep -c ' skipped$' "$WORK/thin-512.txt") skipped," \
    "$(grep -c ' FAILED$' "$WORK/thin-512.txt") failed of $(grep -c . "$WORK/thin-512.txt")"
  # Unmap: 3, GetLBAStatus: 3, WriteSame10/16: 4 Unmap* each (libiscsi 1.19).
  names="$(cut -d' ' -f1 "$WORK/thin-4096.txt" "$WORK/thin-512.txt" | sort -u)"
  [ "$(echo "$names" | grep -c .)" -ge 14 ] && ok "the 14 thin-provisioning tests are there" ||
    fail "only $(echo "$names" | grep -c .) thin-provisioning tests: $(echo $names)"
  unmet=""
  for t in $names; do
    grep -qxF "$t passed" "$WORK/thin-4096.txt" "$WORK/thin-512.txt" ||
      unmet="$unmet $t(never ran and passed)"
    ! grep -qxF "$t FAILED" "$WORK/thin-512.txt" ||
      unmet="$unmet $t(failed with 512-byte physical blocks)"
    if grep -qxF "$t FAILED" "$WORK/thin-4096.txt"; then
      # Allowed for the excused test, with the known assertion only.
      log="$(test_log "$t" "$WORK/cu-dedupv1.txt")"
      if [ "$t" != "$excused" ] || ! grep -qF "$excuse" <<<"$log" ||
         [ "$(grep -c 'CU_' <<<"$log")" -ne 1 ]; then
        unmet="$unmet $t(failed with 4096-byte physical blocks)"
      fi
    fi
  done
  if [ -z "$unmet" ]; then
    ok "every thin-provisioning test ran and passed on dedupv1 (skipped with" \
      "512-byte physical blocks: $(awk '$2 == "skipped" { printf "%s ", $1 }' "$WORK/thin-512.txt")-" \
      "failed with 4096-byte ones, as libiscsi 1.19 expects lbppb 1:" \
      "$(awk '$2 == "FAILED" { printf "%s ", $1 }' "$WORK/thin-4096.txt"))"
  else
    fail "thin-provisioning tests on dedupv1:$unmet"
    sed 's/^/     4096-byte physical blocks: /' "$WORK/thin-4096.txt"
    sed 's/^/     512-byte physical blocks: /' "$WORK/thin-512.txt"
  fi
fi

check "stop" dd_stop "$conf"
check "dedupv1_check: every usage count matches the mappings (policy ${DD_POLICY:-inline})" \
  timeout 300 "$(dirname "$DEDUPV1D")/dedupv1_check" --config "$conf"
dd_summary

#!/usr/bin/env bash
# Stores written by earlier releases open with this tree (issue 16, item 5;
# ctest label "service"). Each fixtures/store-RELEASE.tar.xz is a data
# directory that RELEASE's own dedupv1d wrote through iSCSI and stopped
# cleanly (make-store-fixture.sh). For each, this tree's dedupv1d:
#  - opens it (its format is older than this build's) and serves both LUNs
#    byte for byte as the release wrote them (store-fixture-data.sh makes
#    the expected bytes again);
#  - takes new synced writes, stops, starts again and reads everything back;
#  - leaves a store that dedupv1_check finds clean, in this build's format.
# The package route (the previous release's package upgraded in place,
# upgrade-test.sh) needs the release's tree in the clone; this test needs
# only the tree itself, so it runs in every clone.
#
#   store-fixture-test.sh DEDUPV1D
#
# Exits 77 (skipped) when not root or tgtd / qemu-img are missing.
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/dedupv1d-test-lib.sh"
. "$here/store-fixture-data.sh"
DD_BUDGET="${DD_BUDGET:-600}"
dd_init store-fixture "${1:?usage: store-fixture-test.sh DEDUPV1D}" qemu-img
CHECK="$(dirname "$DEDUPV1D")/dedupv1_check"
fixture_generate "$WORK"
head -c $((1 << 20)) /dev/urandom >"$WORK/c.img"
format_of() { sed -n 's/^format = //p' "$1/system"; }
# This build's format: the one a store it creates says.
dd_write_config "$WORK/fresh.conf" "$WORK/fresh" "${FIXTURE_CONFIG[@]}"
check "a fresh store of this build" dd_start "$WORK/fresh.conf"
check "stop it" dd_stop "$WORK/fresh.conf"
format_now="$(format_of "$WORK/fresh")"
echo "this build writes data directory format ${format_now:-?}"

# release-commits names the commit of each release (the upgrade test's
# fallback in a clone without tags): where the clone has the tag too, both
# must agree (an annotated tag's own id there would never be found).
while read -r tag commit; do
  case "$tag" in v[0-9]*) ;; *) continue ;; esac
  tagged="$(git -C "$here" rev-parse -q --verify "refs/tags/$tag^{commit}" 2>/dev/null)" || continue
  check "release-commits: $tag is commit $tagged" test "$commit" = "$tagged"
done <"$here/release-commits"

fixtures=("$here"/fixtures/store-*.tar.xz)
[ -e "${fixtures[0]}" ] || { echo "FAIL: no store fixture in $here/fixtures"; exit 1; }
for fixture in "${fixtures[@]}"; do
  name="$(basename "$fixture" .tar.xz)"
  data="$WORK/$name"
  conf="$WORK/$name.conf"
  mkdir -p "$data"
  check "$name: unpack" tar -C "$data" -xJf "$fixture"
  release="$(sed -n 's/^release = //p' "$data/MADE-BY")"
  commit="$(sed -n 's/^commit = //p' "$data/MADE-BY")"
  # The fixture says which release made it; that release is the one
  # release-commits names (so it was not made by some other tree).
  check "$name: made by $release ($commit), a release of release-commits" \
    grep -qx "$release $commit" "$here/release-commits"
  old_format="$(format_of "$data")"
  echo "$name: data directory format $old_format"
  dd_write_config "$conf" "$data" "${FIXTURE_CONFIG[@]}"
  check "$name: dedupv1d start on the store $release wrote" dd_start "$conf"
  check "$name: LUN 1 reads back what $release wrote" same "$WORK/lun1.img" 1
  check "$name: LUN 2 reads back what $release wrote" same "$WORK/b.img" 2
  check "$name: new writes to LUN 2 (synced)" put "$WORK/c.img" 2
  check "$name: stop" dd_stop "$conf"
  check "$name: start again" dd_start "$conf"
  check "$name: LUN 1 still reads back" same "$WORK/lun1.img" 1
  check "$name: LUN 2 reads back the new writes" same "$WORK/c.img" 2
  check "$name: stop" dd_stop "$conf"
  check "$name: the engine closed cleanly" test -e "$data/clean"
  check "$name: dedupv1_check finds the store clean" timeout 300 "$CHECK" --config "$conf"
  new_format="$(format_of "$data")"
  check "$name: the store is in this build's format now ($old_format -> $new_format)" \
    test -n "$format_now" -a "$new_format" = "$format_now"
done
dd_summary

#!/usr/bin/env bash
# Makes the store fixture of a release (target/tests/fixtures/store-RELEASE.tar.xz)
# that store-fixture-test.sh opens with this tree: the release's dedupv1d
# (built from its tag) creates a store, writes the fixture's data through
# iSCSI (store-fixture-data.sh), stops cleanly, and the data directory is
# packed with a MADE-BY file naming the release and its commit.
#
#   make-store-fixture.sh RELEASE RELEASE_DEDUPV1D OUT.tar.xz
#
# RELEASE is the tag (v0.1.0); RELEASE_DEDUPV1D the dedupv1d of a build of
# that tag (its module beside it, as in a build tree). Run once per release,
# by hand (a release tag is made once); the tarball is committed. Root.
here="$(cd "$(dirname "$0")" && pwd)"
release="${1:?usage: make-store-fixture.sh RELEASE RELEASE_DEDUPV1D OUT.tar.xz}"
old_dedupv1d="${2:?RELEASE_DEDUPV1D}"
out="$(readlink -f "${3:?OUT.tar.xz}")"
. "$here/dedupv1d-test-lib.sh"
. "$here/store-fixture-data.sh"
DD_BUDGET="${DD_BUDGET:-300}"
dd_init make-store-fixture "$old_dedupv1d" qemu-img

fixture_generate "$WORK"
conf="$WORK/dedupv1.conf"
# The store's own settings (volumes, chunk-index size) are the fixture's;
# store-fixture-test.sh writes the same lines.
dd_write_config "$conf" "$WORK/data" "${FIXTURE_CONFIG[@]}"
check "$release: dedupv1d start" dd_start "$conf"
check "$release: write generation 1 to LUN 1 (synced)" put "$WORK/a.img" 1
check "$release: write LUN 2 (synced)" put "$WORK/b.img" 2
check "$release: write generation 2 over LUN 1 (synced)" put "$WORK/a2.img" 1
check "$release: LUN 1 reads back" same "$WORK/lun1.img" 1
check "$release: LUN 2 reads back" same "$WORK/b.img" 2
check "$release: stop" dd_stop "$conf"
check "$release: the engine closed cleanly" test -e "$WORK/data/clean"
commit="$(git -C "$here" rev-parse "$release^{commit}" 2>/dev/null || echo unknown)"
{
  echo "release = $release"
  echo "commit = $commit"
  echo "made = $(date -u +%Y-%m-%d)"
  echo "by = target/tests/make-store-fixture.sh (data: store-fixture-data.sh)"
} >"$WORK/data/MADE-BY"
# Only the store: no sockets, pid or state files of the stopped instance.
rm -f "$WORK/data/dedupv1d.state" "$WORK/data/tgtd.log"
check "pack the data directory into $out" tar -C "$WORK/data" --owner=0 --group=0 --sort=name -cJf "$out" .
ls -l "$out"
dd_summary

#!/usr/bin/env bash
# An upgrade as an admin makes it (issue 16, item 5; ctest label "service"):
# the package of the previous release tag is installed and its service runs
# and holds data; this tree's package is installed over it while it serves;
# the service is restarted (this release's ExecStop stops what the previous
# release's ExecStart started, then its ExecStart opens the store); every
# byte written and synced through the previous release reads back through
# this one, new writes work, and dedupv1_check finds the store clean.
#
#   upgrade-test.sh OLD_PACKAGE_DIR NEW_PACKAGE_DIR DEDUPV1D
#
# OLD_PACKAGE_DIR is made by `package-test.sh build ... previous-release`,
# NEW_PACKAGE_DIR by `package-test.sh build`. DEDUPV1D (the build tree's)
# only stops what is left if the test fails half way. Root; skipped (77)
# when either package was not built (no release tag in the clone) or a
# dedupv1 package or hand-installed module is already on the machine.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
MODULE=/usr/lib/tgt/backing-store/bs_dedupv1.so
UNIT=/lib/systemd/system/dedupv1.service
CONF=/etc/dedupv1/dedupv1.conf
old_out="${1:?usage: upgrade-test.sh OLD_PACKAGE_DIR NEW_PACKAGE_DIR DEDUPV1D}"
new_out="${2:?NEW_PACKAGE_DIR}"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-600}"
for dir in "$old_out" "$new_out"; do
  [ ! -e "$dir/skipped" ] || { echo "SKIP: a package was not built: $(cat "$dir/skipped")"; exit 77; }
done
if dpkg-query -W -f='${Status}' dedupv1 2>/dev/null | grep -q "installed"; then
  echo "SKIP: a dedupv1 package is installed on this machine; the test does not replace it"
  exit 77
fi
[ ! -e "$MODULE" ] || { echo "SKIP: $MODULE exists (installed by hand?); the test does not replace it"; exit 77; }
dd_init upgrade "${3:?DEDUPV1D}" qemu-img
old_deb="$(ls "$old_out"/dedupv1_*_amd64.deb 2>/dev/null | head -n 1)"
new_deb="$(ls "$new_out"/dedupv1_*_amd64.deb 2>/dev/null | head -n 1)"
[ -n "$old_deb" ] && [ -n "$new_deb" ] || { echo "FAIL: packages missing in $old_out or $new_out"; exit 1; }
release="$(cat "$old_out/release")"
old_version="$(dpkg-deb -f "$old_deb" Version)"
new_version="$(dpkg-deb -f "$new_deb" Version)"
echo "upgrade from $release ($old_version) to $new_version"
var_before=absent
[ -e /var/lib/dedupv1 ] && var_before=present
purge_package() {
  if dpkg-query -W -f='${Status}' dedupv1 2>/dev/null | grep -q "installed"; then
    echo "cleanup: purging the dedupv1 package"
    timeout 120 dpkg --purge dedupv1 >/dev/null 2>&1 || echo "cleanup: dpkg --purge dedupv1 failed"
  fi
  [ "$var_before" = present ] || rm -rf /var/lib/dedupv1
  rmdir /run/dedupv1 2>/dev/null
}
DD_ON_EXIT+=(purge_package)
unit_line() { sed -n "s/^$1=//p" "$UNIT"; }
installed_version() { dpkg-query -W -f='${Version}' dedupv1; }

check "$new_version is newer than $old_version" dpkg --compare-versions "$new_version" gt "$old_version"

# ---- the previous release, installed and serving
check "dpkg -i the $release package" timeout 300 dpkg -i "$old_deb"
check "$old_version is installed" test "$(installed_version)" = "$old_version"
dd_service_config "$CONF"
mkdir -p /run/dedupv1  # RuntimeDirectory=dedupv1
# shellcheck disable=SC2086
check "$release's ExecStart" timeout 600 $(unit_line ExecStart)
old_pid="$(dd_pid "$WORK/data")"
head -c $((16 << 20)) /dev/urandom >"$WORK/a.img"
head -c $((8 << 20)) /dev/urandom >"$WORK/b.img"
check "write 16 MiB to LUN 1 through $release (synced)" put "$WORK/a.img" 1
check "write 8 MiB to LUN 2 through $release (synced)" put "$WORK/b.img" 2
# Generation 2 over generation 1, partly the same data: deduplicated chunks
# and overwritten blocks in the store the new release opens.
cat "$WORK/b.img" "$WORK/b.img" >"$WORK/a2.img"
check "write a second generation to LUN 1 (synced)" put "$WORK/a2.img" 1

# ---- the upgrade, while it serves
# --force-confold: the admin keeps the config they edited when the shipped
# example changed (dpkg would ask).
check "dpkg -i this tree's package while $release serves (an upgrade)" \
  timeout 300 dpkg -i --force-confold "$new_deb"
check "$new_version is installed" test "$(installed_version)" = "$new_version"
check "the config of the admin is kept" grep -q "^data-dir = $WORK/data$" "$CONF"
check "the running tgtd still serves $release's module (replaced on disk)" \
  grep -q " $MODULE (deleted)\$" "/proc/$old_pid/maps"
check "it still serves LUN 1" same "$WORK/a2.img" 1

# ---- systemctl restart: this release's ExecStop, then its ExecStart
# shellcheck disable=SC2086
check "the new ExecStop stops what $release started" timeout 600 $(unit_line ExecStop)
check_fails "the old tgtd is gone" tgt_alive "$old_pid"
check "the engine closed cleanly" test -e "$WORK/data/clean"
# shellcheck disable=SC2086
check "the new ExecStart opens the store $release wrote" timeout 600 $(unit_line ExecStart)
new_pid="$(dd_pid "$WORK/data")"
check "the new tgtd maps the installed (new) module" grep -q " $MODULE\$" "/proc/${new_pid:-0}/maps"
check "LUN 1 reads back what $release wrote" same "$WORK/a2.img" 1
check "LUN 2 reads back what $release wrote" same "$WORK/b.img" 2
head -c $((4 << 20)) /dev/urandom >"$WORK/c.img"
check "new writes to LUN 2 (synced)" put "$WORK/c.img" 2
check "read them back" same "$WORK/c.img" 2
# shellcheck disable=SC2086
check "the new ExecStop" timeout 600 $(unit_line ExecStop)
check "dedupv1_check of $new_version: the store is clean" timeout 300 /usr/bin/dedupv1_check --config "$CONF"
check "dpkg --purge" timeout 120 dpkg --purge dedupv1

dd_summary

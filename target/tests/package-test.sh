#!/usr/bin/env bash
# The Debian package as an admin meets it (issue 16, ctest label "service").
#
#   package-test.sh build SOURCE_DIR OUT_DIR [previous-release]
#       dpkg-buildpackage -b -us -uc on a copy of the tree (its committed and
#       uncommitted files, no build output); the .deb lands in OUT_DIR. With
#       "previous-release": the tree of the newest release tag (v*) before
#       this tree's version instead (git archive), for the upgrade test
#       (upgrade-test.sh); skipped (77) when the clone has no such tag.
#   package-test.sh install OUT_DIR DEDUPV1D
#       installs that .deb on this machine and uses only what it installed:
#       - the files where tgtd, systemd and admins look, the exact tgt version
#         as dependency, the unit accepted by systemd-analyze;
#       - the unit's own ExecStart line (systemd is not PID 1 here, so the test
#         runs the line itself, in the RuntimeDirectory systemd would make):
#         tgtd runs without LD_PRELOAD and has the installed module mapped;
#         the pid file names it; a LUN is written and read back with qemu-img;
#       - `dpkg -r` refused while that tgtd runs (nothing changed), installing
#         the same package again while it runs (an upgrade) leaves it serving;
#       - the unit's ExecStop: tgtd gone, the engine closed cleanly;
#       - the system tgt path: a plain tgtd (as tgt.service starts it) loads
#         the installed module by itself; `tgtadm --bstype dedupv1` and a
#         targets.conf stanza applied with `tgt-admin -e` serve volumes of the
#         same store (the data written through the unit reads back);
#       - remove and purge: programs and module gone, stored data kept (a
#         purge says so for a data dir that is not empty).
#     DEDUPV1D (the build tree's) only stops what is left if the test fails
#     half way. Skipped (77) when a dedupv1 package or a hand-installed module
#     is already on the machine: the test never replaces an admin's.
#
# Root; skipped (77) without tgtd, dpkg-buildpackage, qemu-img or libiscsi-bin.
set -uo pipefail
mode="${1:?usage: package-test.sh build SOURCE_DIR OUT_DIR | install OUT_DIR DEDUPV1D}"
here="$(cd "$(dirname "$0")" && pwd)"
MODULE=/usr/lib/tgt/backing-store/bs_dedupv1.so
UNIT=/lib/systemd/system/dedupv1.service
CONF=/etc/dedupv1/dedupv1.conf

if [ "$mode" = build ]; then
  src="$(cd "${2:?SOURCE_DIR}" && pwd)"
  out="${3:?OUT_DIR}"
  [ -z "${4:-}" ] || [ "$4" = previous-release ] || { echo "unknown build option $4"; exit 2; }
  skip() { mkdir -p "$out" && echo "$1" >"$out/skipped"; echo "SKIP: $1"; exit 77; }
  rm -rf "$out"
  [ "$(id -u)" -eq 0 ] || skip "needs root (tgt's source is fetched as root)"
  command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
    skip "dpkg-buildpackage or debhelper missing (scripts/install-deps)"
  mkdir -p "$out/src" || exit 1
  if [ "${4:-}" = previous-release ]; then
    # The newest v* tag reachable from HEAD whose version is below the one
    # debian/changelog gives this tree.
    version="$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)"
    tag="" tagref=""
    for t in $(git -C "$src" tag --merged HEAD --list 'v[0-9]*' --sort=-version:refname 2>/dev/null); do
      if dpkg --compare-versions "${t#v}" lt "$version"; then tag="$t"; tagref="$t"; break; fi
    done
    if [ -z "$tag" ]; then
      # A clone without tags: the commits release-commits records, if the
      # clone has their history.
      while read -r t commit; do
        case "$t" in v[0-9]*) ;; *) continue ;; esac
        dpkg --compare-versions "${t#v}" lt "$version" || continue
        git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null || continue
        if [ -z "$tag" ] || dpkg --compare-versions "${t#v}" gt "${tag#v}"; then tag="$t"; tagref="$commit"; fi
      done <"$here/release-commits"
    fi
    [ -n "$tag" ] || skip "no release tag (v*) below $version in this clone, nor a commit of target/tests/release-commits (a shallow clone?)"
    echo "previous release: $tag (this tree: $version)"
    echo "$tag" >"$out/release"
    git -C "$src" archive "$tagref" | tar -xf - -C "$out/src" || exit 1
  elif git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$src" && git ls-files -co --exclude-standard -z | grep -zv '^var/' | tar --null -cf - -T -) |
      tar -xf - -C "$out/src" || exit 1
  else
    tar -C "$src" --exclude=./build --exclude=./var --exclude=./.git -cf - . | tar -xf - -C "$out/src" || exit 1
  fi
  echo "building the package from a copy of $src in $out/src"
  # parallel=2: the ctest run goes on beside it.
  if ! (cd "$out/src" && DEB_BUILD_OPTIONS="parallel=2" timeout 1500 dpkg-buildpackage -b -us -uc) \
      >"$out/build.log" 2>&1; then
    echo "FAIL: dpkg-buildpackage; the end of $out/build.log:"
    tail -n 40 "$out/build.log"
    exit 1
  fi
  ls "$out"/dedupv1_*.deb || { echo "FAIL: no dedupv1_*.deb in $out"; exit 1; }
  rm -rf "$out/src"
  echo "ok   package built"
  exit 0
fi

[ "$mode" = install ] || { echo "unknown mode $mode"; exit 2; }
out="${2:?OUT_DIR}"
. "$here/dedupv1d-test-lib.sh"
DD_BUDGET="${DD_BUDGET:-600}"
if dpkg-query -W -f='${Status}' dedupv1 2>/dev/null | grep -q "installed"; then
  echo "SKIP: a dedupv1 package is installed on this machine; the test does not replace it"
  exit 77
fi
if [ -e "$MODULE" ]; then
  echo "SKIP: $MODULE exists (installed by hand?); the test does not replace it"
  exit 77
fi
dd_init package "${3:?DEDUPV1D}" qemu-img qemu-io iscsi-inq tgt-admin
[ ! -e "$out/skipped" ] || { echo "SKIP: the package was not built: $(cat "$out/skipped")"; exit 77; }
deb="$(ls "$out"/dedupv1_*_amd64.deb 2>/dev/null | head -n 1)"
[ -n "$deb" ] || { echo "FAIL: no package in $out (did target_package_build run?)"; exit 1; }
# /var/lib/dedupv1 is the package's; the purge check below puts a file there.
var_before=absent
[ -e /var/lib/dedupv1 ] && var_before=present

# Whatever happens: the installed package goes again (after dd_cleanup has
# stopped every instance), and the system tgt test's tgtd is stopped.
purge_package() {
  tgt_stop >/dev/null 2>&1
  if dpkg-query -W -f='${Status}' dedupv1 2>/dev/null | grep -q "installed"; then
    echo "cleanup: purging the dedupv1 package"
    timeout 120 dpkg --purge dedupv1 >/dev/null 2>&1 || echo "cleanup: dpkg --purge dedupv1 failed"
  fi
  [ "$var_before" = present ] || rm -rf /var/lib/dedupv1
}
DD_ON_EXIT+=(purge_package)

# ---- the package's files and dependency
check "dpkg-deb reads the package" dpkg-deb --info "$deb"
tgt_version="$(dpkg-query -W -f='${Version}' tgt)"
check_output "depends on exactly the installed tgt ($tgt_version)" "Depends:.*tgt \(= ${tgt_version//+/\\+}\)"
check "dpkg-deb lists the package's files" dpkg-deb --contents "$deb"
for f in ".$MODULE" ./usr/bin/dedupv1d ./usr/bin/dedupv1_mon ./usr/bin/dedupv1_check ./usr/bin/dedupv1_replay \
         ./usr/bin/dedupv1_debug ./usr/bin/dedupv1_traffic ".$CONF" ".$UNIT" ./var/lib/dedupv1/ \
         ./usr/share/doc/dedupv1/admin-guide.md; do
  check_output "the package ships $f" " ${f//./\\.}\$"
done
if grep -Eq "_test|testutil|micro_bench|/tests?/" "$WORK/last.out"; then
  fail "the package ships test programs"
else
  ok "no test program in the package"
fi

# ---- install
check "dpkg -i installs the package" timeout 300 dpkg -i "$deb"
check "dpkg says it is installed" dpkg-query -W -f='${Status}\n' dedupv1
check_output "status: install ok installed" "^install ok installed$"
for f in "$MODULE" /usr/bin/dedupv1d /usr/bin/dedupv1_mon /usr/bin/dedupv1_check "$CONF" "$UNIT"; do
  check "installed: $f" test -e "$f"
done
check "the example config is installed as $CONF" cmp "$CONF" "$here/../../docs/examples/dedupv1.conf"
check "/var/lib/dedupv1 is a directory only root can write" \
  bash -c '[ -d /var/lib/dedupv1 ] && [ "$(stat -c %U:%a /var/lib/dedupv1)" = root:750 ]'
if command -v systemd-analyze >/dev/null; then
  check "systemd-analyze verify accepts the unit" systemd-analyze verify "$UNIT"
fi
check "the unit starts and stops through dedupv1d with the config of /etc" \
  grep -q "^ExecStart=/usr/bin/dedupv1d start --config $CONF --pid-file /run/dedupv1/tgtd.pid$" "$UNIT"

# ---- the service, as systemd would run it, on a config of the test's
# (the conffile is the admin's to edit: data dir, portal, ports, volumes).
dd_service_config "$CONF"
exec_start="$(sed -n 's/^ExecStart=//p' "$UNIT")"
exec_stop="$(sed -n 's/^ExecStop=//p' "$UNIT")"
pid_file="$(sed -n 's/^PIDFile=//p' "$UNIT")"
mkdir -p /run/dedupv1  # RuntimeDirectory=dedupv1
# shellcheck disable=SC2086
check "the unit's ExecStart" timeout 600 $exec_start
check_output "it uses the installed module (no LD_PRELOAD)" "with module $MODULE"
pid="$(dd_pid "$WORK/data")"
check "the pid file ($pid_file) names the running tgtd" bash -c "[ -n '$pid' ] && [ \"\$(cat $pid_file)\" = '$pid' ]"
check "tgtd runs without LD_PRELOAD" bash -c "! tr '\\0' '\\n' </proc/$pid/environ | grep -q '^LD_PRELOAD='"
check "tgtd mapped the installed module" grep -q " $MODULE\$" "/proc/$pid/maps"
check_fails "the engine is open (its clean marker is gone)" test -e "$WORK/data/clean"
check "the installed dedupv1_mon reads the instance's monitor" timeout 30 /usr/bin/dedupv1_mon --config "$CONF" volumes
check_output "it lists the volumes" "backup2"
head -c $((8 << 20)) /dev/urandom >"$WORK/a.img"
check "write 8 MiB to LUN 1 (qemu-img, synced)" put "$WORK/a.img" 1
check "read them back" same "$WORK/a.img" 1

# ---- removal refused while it serves, reinstall (upgrade) while it serves
check_fails "dpkg -r refused while tgtd serves with the installed module" timeout 120 dpkg -r dedupv1
check_output "the refusal names the tgtd and what to do" "not removed: tgtd pid $pid \(control port $CTL\) serves dedupv1 LUNs.*stop it first"
check "still installed after the refusal" test -e "$MODULE" -a -x /usr/bin/dedupv1d
check "dpkg -i of the same package again while it serves" timeout 300 dpkg -i "$deb"
check "the config of the admin is kept" grep -q "^data-dir = $WORK/data$" "$CONF"
check "tgtd still serves: LUN 1 reads back" same "$WORK/a.img" 1

# ---- ExecStop
# shellcheck disable=SC2086
check "the unit's ExecStop" timeout 600 $exec_stop
check_fails "tgtd is gone" tgt_alive "$pid"
check "the engine closed cleanly" test -e "$WORK/data/clean"
check_fails "the pid file is removed" test -e "$pid_file"
# A stop of a stopped service succeeds, so systemd does not mark the unit
# failed (and restart it) after an admin's own dedupv1d stop or a crash.
# shellcheck disable=SC2086
check "the unit's ExecStop again, with nothing running, exits 0" timeout 60 $exec_stop
rmdir /run/dedupv1 2>/dev/null  # systemd removes its RuntimeDirectory

# ---- the system tgt path: a tgtd as tgt.service runs it, nothing preloaded
TGT_CTL="$CTL"
dd_new_port TGT_PORT
check "a plain tgtd starts" tgt_start "$WORK/tgtd.log"
check "it registered the dedupv1 backing store from $MODULE" tgt_adm --op show --mode sys
check_output "tgtadm lists bstype dedupv1" "^ +dedupv1( |$)"
tiqn=iqn.2026-11.org.dedupv1:system-tgt
check "tgtadm: new target" tgt_adm --lld iscsi --op new --mode target --tid 1 -T "$tiqn"
check "tgtadm: LUN 1 --bstype dedupv1 (volume backup1)" tgt_adm --lld iscsi --op new --mode logicalunit \
  --tid 1 --lun 1 --bstype dedupv1 --backing-store "$CONF" --bsopts "volume=backup1"
check "tgtadm: admit 127.0.0.1" tgt_adm --lld iscsi --op bind --mode target --tid 1 -I 127.0.0.1
check_fails "the system tgtd opened the engine (its clean marker is gone)" test -e "$WORK/data/clean"
turl="iscsi://127.0.0.1:$TGT_PORT/$tiqn/1"
check "what the service stored reads back through the system tgtd" same "$WORK/a.img" "$turl"
head -c $((4 << 20)) /dev/urandom >"$WORK/b.img"
ln -s "$CONF" /etc/dedupv1/lun2.conf  # tgt-admin keys LUNs by path (docs/target.md)
cat >"$WORK/targets.conf" <<EOF
<target iqn.2026-11.org.dedupv1:from-targets-conf>
    allow-in-use yes
    <backing-store /etc/dedupv1/lun2.conf>
        bs-type dedupv1
        bsopts "volume=backup2"
        lun 1
    </backing-store>
    initiator-address 127.0.0.1
</target>
EOF
check "tgt-admin -e applies a targets.conf stanza" timeout 300 tgt-admin -C "$TGT_CTL" -c "$WORK/targets.conf" -e
curl2="iscsi://127.0.0.1:$TGT_PORT/iqn.2026-11.org.dedupv1:from-targets-conf/1"
check "write 4 MiB through the targets.conf LUN" put "$WORK/b.img" "$curl2"
check "read them back" same "$WORK/b.img" "$curl2"
check "the targets.conf LUN is a 32 MiB disk" iscsi-readcapacity16 "$curl2"
check_output "32 MiB" "RETURNED LOGICAL BLOCK ADDRESS:$(((32 << 20) / 512 - 1))$"
check "the system tgtd stops (targets deleted: the engine closes)" tgt_stop
check "the engine closed cleanly" test -e "$WORK/data/clean"
rm -f /etc/dedupv1/lun2.conf

# ---- remove and purge: programs go, stored data stays
# A tgtd without dedupv1 LUNs (tgt's own service) has the module loaded too,
# as every tgtd loads its whole module folder; it does not hold the removal.
check "a plain tgtd without dedupv1 LUNs starts again" tgt_start "$WORK/tgtd2.log"
check "it has the module loaded" grep -q " $MODULE\$" "/proc/$(pgrep -f "tgtd -f -C $TGT_CTL " | head -n 1)/maps"
check "dpkg -r removes the package: no tgtd serves dedupv1 LUNs" timeout 120 dpkg -r dedupv1
check "that tgtd stops" tgt_stop
for f in "$MODULE" /usr/bin/dedupv1d /usr/bin/dedupv1_mon "$UNIT"; do
  check_fails "removed: $f" test -e "$f"
done
check "the conffile stays until a purge" test -e "$CONF"
if [ "$var_before" = absent ]; then
  mkdir -p /var/lib/dedupv1 && echo "not to be lost" >/var/lib/dedupv1/kept
fi
check "dpkg --purge" timeout 120 dpkg --purge dedupv1
if [ "$var_before" = absent ]; then
  check_output "the purge says the data dir is kept" "/var/lib/dedupv1 is kept"
  check "a data dir that is not empty survives the purge" grep -q "not to be lost" /var/lib/dedupv1/kept
fi
check_fails "the config is gone after the purge" test -e "$CONF"
check "the store of the test is untouched" test -e "$WORK/data/clean"

dd_summary

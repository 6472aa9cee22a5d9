#!/usr/bin/env bash
# Two real backup generations from files Debian packages ship: a server's
# installed software backed up in full, before and after it took every
# security update published since the Debian point release.
#
#   real-data-gen.sh CACHE_DIR
#
# Generation 1: the packages below at their version in the bookworm point
# release; generation 2: the same packages at their newest version in
# bookworm, bookworm-security or bookworm-updates (never backports) where one
# exists, else the same version (unchanged packages are most of a server's
# backup). The build fails if no package differs (apt sources that do not
# name bookworm, say): two equal generations would measure nothing. Each generation is
# its packages unpacked (dpkg-deb -x) into one tree, then that tree as one
# tar stream (tar --sort=name, the way a backup client writes a full backup),
# CACHE_DIR/gen1.tar and gen2.tar; CACHE_DIR/versions.txt lists each package
# with its two versions. The .debs (~550 MB) and tars are kept and reused
# while the version list is the same. REAL_PACKAGES overrides the list.
# Exit 3: a package could not be downloaded (no Debian archive reachable);
# any other failure is 1.
set -euo pipefail
cache="${1:?usage: real-data-gen.sh CACHE_DIR}"
packages="${REAL_PACKAGES:-firefox-esr chromium openjdk-17-jre-headless libreoffice-core postgresql-15
  qemu-system-x86 git perl-modules-5.36 libpython3.11-stdlib openssl libssl3 tzdata
  libllvm14 ceph-osd cpp-12 vim-runtime}"
say() { echo "real-data: $*" >&2; }

# versions PKG: "OLD NEW" (OLD: the point release's, NEW: the newest known).
versions() {
  local old="" new="" v
  old="$(apt-cache madison "$1" | awk -F' [|] ' '$3 ~ / bookworm\/main .*Packages/ { print $2; exit }')"
  for v in $(apt-cache madison "$1" |
             awk -F' [|] ' '$3 ~ / bookworm(-security|-updates)?\/main .*Packages/ { print $2 }'); do
    if [ -z "$new" ] || dpkg --compare-versions "$v" gt "$new"; then new="$v"; fi
  done
  [ -n "$old" ] || old="$new"
  [ -n "$new" ] || return 1
  echo "$old $new"
}

mkdir -p "$cache/debs"
list="$cache/versions.new"
: >"$list"
for p in $packages; do
  vv="$(versions "$p")" || { say "apt knows no bookworm version of $p (apt-get update?)"; exit 1; }
  echo "$p $vv" >>"$list"
done
if ! awk '$2 != $3 { found = 1 } END { exit !found }' "$list"; then
  say "no package has a newer version than the point release's (apt sources without bookworm-security?):" \
    "the two generations would be the same"
  exit 1
fi
if [ -s "$cache/gen1.tar" ] && [ -s "$cache/gen2.tar" ] && cmp -s "$list" "$cache/versions.txt"; then
  rm -f "$list"
  say "generations in $cache are current ($(wc -l <"$cache/versions.txt") packages)"
  exit 0
fi

# cached PKG VERSION: the path of that .deb in the cache, if it is there.
cached() {
  local d
  for d in "$cache/debs/${1}_"*.deb; do
    [ -f "$d" ] && [ "$(dpkg-deb -f "$d" Version)" = "$2" ] && { echo "$d"; return 0; }
  done
  return 1
}
# deb PKG VERSION: the .deb's path, downloaded once; exit 3 if it cannot be.
deb() {
  cached "$1" "$2" && return 0
  (cd "$cache/debs" && apt-get download -q "$1=$2" >/dev/null 2>"$cache/debs/.err") ||
    { cat "$cache/debs/.err" >&2; say "cannot download $1=$2"; exit 3; }
  cached "$1" "$2" || { say "apt-get download $1=$2 left no such .deb"; exit 1; }
}

rm -rf "$cache/tree" "$cache/gen1.tar" "$cache/gen2.tar"
for g in 1 2; do
  mkdir -p "$cache/tree/gen$g"
  while read -r p old new; do
    v="$old"
    [ "$g" = 1 ] || v="$new"
    d="$(deb "$p" "$v")" || exit $?
    dpkg-deb -x "$d" "$cache/tree/gen$g"
  done <"$list"
  # Owner and group as the packages ship them: root.
  tar --sort=name --owner=0 --group=0 --numeric-owner -cf "$cache/gen$g.tar" -C "$cache/tree/gen$g" .
  say "generation $g: $(du -h "$cache/gen$g.tar" | cut -f1) ($(find "$cache/tree/gen$g" -type f | wc -l) files)"
done
rm -rf "$cache/tree"
mv "$list" "$cache/versions.txt"
changed="$(awk '$2 != $3' "$cache/versions.txt" | wc -l)"
say "$changed of $(wc -l <"$cache/versions.txt") packages differ between the generations"

#!/usr/bin/env bash
# Peers: borg, restic and casync ingest the same two backup generations as
# files (written by dedupv1_traffic), next to dedupv1's engine writing the
# same generations in process (dedupv1_bench engine, same seed, same bytes),
# all in the same run. Per tool and generation: seconds (including a final
# sync), MB/s and the bytes the repository holds. Raw reports go to
# OUT/peers-*.json.
#
#   peers-bench.sh DEDUPV1_TRAFFIC DEDUPV1_BENCH WORK_DIR OUT_DIR SIZE [TOOLS]
#
# TOOLS: comma separated, default borg,restic,casync; tools not installed are
# skipped (exit 77 if none is). Settings, as close to dedupv1's 2K/8K/32K
# Rabin chunks as each tool allows, no compression or encryption where it can
# be turned off:
#   borg 1.2    init -e none; create --compression none
#               --chunker-params buzhash,11,15,13,4095 (2 KiB min, 32 KiB max, 8 KiB avg)
#   restic      repository version 2, --compression off; chunker fixed by restic
#               (512 KiB min, 8 MiB max, ~1 MiB average); always encrypted
#   casync      make --chunk-size=8K (2K:8K:32K); --compression=zstd (no "none")
# The generation files are read once before the tools run, so every tool
# reads them from the page cache (dedupv1_bench generates its input in memory).
#
# Real data instead (bench/real-data-bench.sh): PEERS_FILES="GEN1 GEN2" names
# the generations' files (SIZE is then ignored); the tools back up those
# files, dedupv1's engine takes them through `dedupv1_bench files`, and the
# reports are named PEERS_PREFIX-*.json (default "peers").
set -uo pipefail

traffic="$(readlink -f "${1:?usage: peers-bench.sh DEDUPV1_TRAFFIC DEDUPV1_BENCH WORK OUT SIZE [TOOLS]}")"
engine="$(readlink -f "${2:?}")"
work="${3:?}"
out="${4:?}"
size_arg="${5:?}"
tools="${6:-borg,restic,casync}"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/bench-lib.sh"

size="$(bench_bytes "$size_arg")" || bench_die "peers: bad size $size_arg"
size=$(( (size + (1 << 20) - 1) >> 20 << 20 ))
prefix="${PEERS_PREFIX:-peers}"
read -r -a files <<<"${PEERS_FILES:-}"
[ ${#files[@]} -eq 0 ] || [ ${#files[@]} -eq 2 ] || bench_die "peers: PEERS_FILES names ${#files[@]} files, not 2"

have=()
for t in ${tools//,/ }; do
  if command -v "$t" >/dev/null; then
    have+=("$t")
  else
    case "$t" in borg) p=borgbackup ;; *) p="$t" ;; esac
    bench_say "peers: $t not installed (apt-get install $p): skipped"
  fi
done
[ ${#have[@]} -gt 0 ] || { bench_say "peers: none of $tools installed"; exit 77; }

rm -rf "$work"
mkdir -p "$work/data" "$out"
rm -f "$out/$prefix"-*.json
cleanup() { rm -rf "$work"; }
trap cleanup EXIT

if [ ${#files[@]} -eq 2 ]; then
  # The real generations, under the names the tools back up (hard links when
  # the file system allows: the tools see regular files, never symlinks).
  for g in 1 2; do
    f="$(readlink -f "${files[$((g - 1))]}")"
    [ -s "$f" ] || bench_die "peers: generation file $f is missing or empty"
    ln "$f" "$work/data/gen$g.img" 2>/dev/null || cp "$f" "$work/data/gen$g.img" || bench_die "peers: cannot copy $f"
  done
  bench_say "peers: real data, generations of $(numfmt --to=iec "$(stat -c %s "$work/data/gen1.img")") and" \
    "$(numfmt --to=iec "$(stat -c %s "$work/data/gen2.img")")"
  cat "$work/data/gen1.img" "$work/data/gen2.img" >/dev/null
  bench_say "peers: dedupv1 engine in process (dedupv1_bench files)"
  "$engine" files "$work/data/gen1.img" "$work/data/gen2.img" --json --data-dir "$work/dedupv1" \
    >"$out/$prefix-dedupv1.json" || bench_die "peers: dedupv1_bench files failed"
else
  bench_say "peers: writing 2 generations of $(numfmt --to=iec "$size") as files"
  "$traffic" write --size "$size" --generations 2 --seed 1 --json --no-progress "$work/data/gen%d.img" \
    >"$out/$prefix-truth.json" || bench_die "peers: dedupv1_traffic failed"
  cat "$work/data/gen1.img" "$work/data/gen2.img" >/dev/null

  # dedupv1, in process, same generations (seed 1).
  bench_say "peers: dedupv1 engine in process"
  "$engine" engine --size "$size" --json --data-dir "$work/dedupv1" >"$out/$prefix-dedupv1.json" ||
    bench_die "peers: dedupv1_bench failed"
fi
printf '{"container_bytes": %d, "data_dir_bytes": %d}\n' "$(bench_file_bytes "$work/dedupv1/containers")" \
  "$(bench_file_bytes "$work/dedupv1")" >"$out/$prefix-dedupv1-stored.json"
rm -rf "$work/dedupv1"

# record TOOL VERSION GENERATION SECONDS REPO_DIR DATA_DIR
record() {
  local tool="$1" version="$2" g="$3" secs="$4" repo="$5" data="$6" bytes
  bytes="$(stat -c %s "$work/data/gen$g.img")"
  printf '{"tool": "%s", "version": "%s", "generation": %d, "bytes": %d, "seconds": %.3f, "mb_s": %.1f, "repo_bytes": %d, "data_bytes": %d}\n' \
    "$tool" "$version" "$g" "$bytes" "$secs" "$(awk -v b="$bytes" -v s="$secs" 'BEGIN { print b / 1e6 / s }')" \
    "$(bench_file_bytes "$repo")" "$(bench_file_bytes "$data")" >>"$out/$prefix-$tool.json"
}

# ingest TOOL GENERATION CMD...: runs CMD then sync, timed; "$@" runs in $work/data.
ingest() {
  local tool="$1" g="$2" t0 t1
  shift 2
  t0="$(bench_now)"
  (cd "$work/data" && "$@") >"$work/$tool-gen$g.log" 2>&1 || {
    tail -n 10 "$work/$tool-gen$g.log" >&2
    bench_die "peers: $tool failed on generation $g"
  }
  sync
  t1="$(bench_now)"
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}

for t in "${have[@]}"; do
  case "$t" in
    borg)
      v="$(borg --version | awk '{ print $2 }')"
      export BORG_BASE_DIR="$work/borg-home" BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK=yes
      borg init -e none "$work/borg" >/dev/null 2>&1 || bench_die "peers: borg init failed"
      for g in 1 2; do
        bench_say "peers: borg generation $g"
        s="$(ingest borg "$g" borg create --compression none --chunker-params buzhash,11,15,13,4095 \
              "$work/borg::gen$g" "gen$g.img")" || exit 1
        record borg "$v" "$g" "$s" "$work/borg" "$work/borg/data"
      done
      ;;
    restic)
      v="$(restic version | awk '{ print $2 }')"
      export RESTIC_PASSWORD=dedupv1-bench RESTIC_CACHE_DIR="$work/restic-cache"
      restic init -q --repo "$work/restic" --repository-version 2 >/dev/null 2>&1 ||
        bench_die "peers: restic init failed"
      for g in 1 2; do
        bench_say "peers: restic generation $g"
        s="$(ingest restic "$g" restic -q --repo "$work/restic" --compression off backup "gen$g.img")" || exit 1
        record restic "$v" "$g" "$s" "$work/restic" "$work/restic/data"
      done
      ;;
    casync)
      v="$(casync --version | awk '{ print $2 }')"
      for g in 1 2; do
        bench_say "peers: casync generation $g"
        s="$(ingest casync "$g" casync make --store="$work/casync.castr" --chunk-size=8K --compression=zstd \
              "$work/gen$g.caibx" "gen$g.img")" || exit 1
        record casync "$v" "$g" "$s" "$work/casync.castr" "$work/casync.castr"
      done
      ;;
  esac
  rm -rf "$work/borg" "$work/borg-home" "$work/restic" "$work/restic-cache" "$work/casync.castr"
done
bench_say "peers: done"

#!/usr/bin/env bash
# Where do the dedup workers wait? A poor man's profiler: runs
# `dedupv1_bench engine --size SIZE`, takes SAMPLES stack snapshots of all its
# threads with gdb (every INTERVAL seconds), and counts, for the dedup worker
# threads (stacks through Volume::ProcessRun), the innermost engine function
# with the ProcessRun line it was called from. gdb stops the process for each
# snapshot, so the benchmark's own MB/s are meaningless here; the shares are
# what counts.
#
#   profile-engine.sh DEDUPV1_BENCH [SIZE] [SAMPLES] [INTERVAL]
#
# Defaults: 1G, 40 samples, 0.5 s. Output: a table on stdout.
set -euo pipefail

bench="$(readlink -f "${1:?usage: profile-engine.sh DEDUPV1_BENCH [SIZE] [SAMPLES] [INTERVAL]}")"
size="${2:-1G}"
samples="${3:-40}"
interval="${4:-0.5}"
command -v gdb >/dev/null || { echo "profile-engine: gdb not installed" >&2; exit 1; }

work="$(mktemp -d /var/tmp/dedupv1-profile.XXXXXX)"
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
"$bench" engine --size "$size" --data-dir "$work/data" >"$work/out" 2>&1 &
pid=$!
sleep 2  # past the ceiling measurement into generation 1
for i in $(seq 1 "$samples"); do
  kill -0 "$pid" 2>/dev/null || break
  timeout 30 gdb -p "$pid" -batch -ex "set pagination off" -ex "thread apply all bt 30" 2>/dev/null \
    >"$work/stack.$i" || true
  sleep "$interval"
done
taken="$(ls "$work"/stack.* 2>/dev/null | wc -l)"

# One line per worker thread and snapshot: innermost dedupv1:: function, and
# the volume.cc line inside ProcessRun it was reached from.
for f in "$work"/stack.*; do
  awk '
    function flush() {
      if (in_run) printf "%s|%s\n", (inner == "" ? "(outside the engine: libc/kernel)" : inner), line
      inner = ""; line = ""; in_run = 0
    }
    /^Thread / { flush(); next }
    /^#/ {
      if (match($0, /dedupv1::[A-Za-z0-9_:~]+/)) {
        fn = substr($0, RSTART, RLENGTH)
        if (fn ~ /ProcessRun$/) {
          in_run = 1
          if (match($0, /volume\.cc:[0-9]+/)) line = substr($0, RSTART, RLENGTH)
          if (inner == "") inner = fn
        } else if (!in_run && inner == "" && fn !~ /^dedupv1::Status/) {
          inner = fn
        }
      }
    }
    END { flush() }' "$f"
done | sort | uniq -c | sort -rn >"$work/counts"
total="$(awk '{ s += $1 } END { print s + 0 }' "$work/counts")"
echo "dedupv1_bench engine --size $size: $taken snapshots, $total worker-thread samples"
echo
printf '%6s  %6s  %-60s %s\n' samples share "innermost engine function" "reached from"
awk -v t="$total" '{ n = $1; $1 = ""; split(substr($0, 2), p, "|");
  printf "%6d  %5.1f%%  %-60s %s\n", n, 100 * n / t, p[1], p[2] }' "$work/counts" | head -n 25

# Shell helpers for the benchmark scripts (bench/run-bench and the
# bench/*-bench.sh stages). Source it; it sets nothing but functions.

bench_say() { printf '%s\n' "$*" >&2; }
bench_step() { printf '\n==> %s\n' "$*" >&2; }
bench_die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

# "1G", "512M", "4096" -> bytes (binary units).
bench_bytes() {
  local v="${1^^}" n unit
  v="${v%IB}"
  v="${v%B}"
  n="${v%[KMGT]}"
  unit="${v#"$n"}"
  [[ "$n" =~ ^[0-9]+$ ]] || return 1
  case "$unit" in
    "") echo "$n" ;;
    K) echo $((n << 10)) ;;
    M) echo $((n << 20)) ;;
    G) echo $((n << 30)) ;;
    T) echo $((n << 40)) ;;
  esac
}

# Sum of the apparent sizes of the regular files under $1 (directories'
# own sizes left out: casync's store has thousands of them). "%.0f", not
# "%d": mawk's %d stops at 2^31 - 1 (2 GiB repositories read as 2147483647).
bench_file_bytes() {
  { find "$1" -type f -printf '%s\n' 2>/dev/null || true; } | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# Seconds since the epoch, with nanoseconds.
bench_now() { date +%s.%N; }

# The 1-minute load average.
bench_load() { cut -d' ' -f1 /proc/loadavg; }

# Runs "$@" and appends "name seconds" of wall time to $BENCH_TIMES (if set).
# Usage: bench_timed NAME CMD...
bench_timed() {
  local name="$1" t0 t1 rc
  shift
  t0="$(bench_now)"
  "$@"
  rc=$?
  t1="$(bench_now)"
  [ -z "${BENCH_TIMES:-}" ] || echo "$name $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" >>"$BENCH_TIMES"
  return $rc
}

# Writes a one-line JSON object {"stage": .., "event": .., "time": .., "load1": ..}
# to $1 (appending): when a stage began and ended and how loaded the machine was.
bench_mark() {
  printf '{"stage": "%s", "event": "%s", "time": %s, "load1": %s}\n' "$2" "$3" "$(date +%s)" "$(bench_load)" >>"$1"
}

# The work directory of a stage script (sets work and own_work): $1 if given
# (emptied first, left in place after: own_work=0), else a fresh
# ${BENCH_WORK:-/var/tmp}/$2.XXXXXX (own_work=1: the caller removes it).
bench_work_dir() {
  if [ -z "$1" ]; then
    work="$(mktemp -d "${BENCH_WORK:-/var/tmp}/$2.XXXXXX")"
    own_work=1
  else
    rm -rf "$1"
    mkdir -p "$1"
    work="$1"
    own_work=0
  fi
}

# Starts a private bluestore Ceph cluster (scripts/ceph-cluster of repo $1)
# in $2 with ports $3..$3+99 and an OSD file of $4 each; the log goes to
# $2.start.log. Dies (after the log's tail) when it does not come up.
bench_ceph_start() {
  "$1/scripts/ceph-cluster" start --dir "$2" --objectstore bluestore --port-base "$3" \
    --osd-bytes "$4" --fresh >"$2.start.log" 2>&1 || {
    tail -n 30 "$2.start.log" >&2
    bench_die "the Ceph cluster in $2 did not start"
  }
}

# Exits 77 (skipped, with a message naming stage $1) unless the Ceph daemons
# and the rados tool are installed; dies unless each of $3... is an
# executable in the directory $2.
bench_need_ceph_and() {
  local stage="$1" dir="$2" t
  shift 2
  for t in ceph-mon ceph-osd rados; do
    command -v "$t" >/dev/null || { bench_say "$stage: skipped ($t not installed: apt-get install ceph)"; exit 77; }
  done
  for t in "$@"; do
    [ -x "$dir/$t" ] || bench_die "$stage: no $dir/$t (cmake --build build --target $t)"
  done
}

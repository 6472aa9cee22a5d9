#!/usr/bin/env bash
# Charts (PNG, gnuplot) from the CSV files bench/summarize.py writes.
#
#   plot.sh RESULTS_DIR PLOT_DIR
#
# engine.png          gen 1 / gen 2 MB/s next to the chunk+hash ceiling
# iscsi.png           write and read MB/s, dedup LUNs vs tgt's rdwr LUNs
# peers.png           MB/s per generation: dedupv1 vs borg, restic, casync
# peers-stored.png    stored bytes after each generation
# index-vs-disk.png   cold chunk index lookups/s vs fio random-read IOPS
#                     (scale run if present, else the micro run)
# rss.png             engine peak RSS as data grows (scale run)
# A chart whose CSV is missing is skipped.
set -euo pipefail

res="${1:?usage: plot.sh RESULTS_DIR PLOT_DIR}"
dir="${2:?}"
mkdir -p "$dir"
command -v gnuplot >/dev/null || { echo "plot: gnuplot not installed (apt-get install gnuplot-nox)" >&2; exit 0; }

note="$(python3 - "$res/raw/machine.json" <<'PY' 2>/dev/null || echo "shared machine"
import json, sys
m = json.load(open(sys.argv[1]))
print(f"{m.get('cpu_model', '?')}, {m.get('nproc', '?')} cores shared with other jobs (load {m.get('load_at_start', '?').split()[0]}), {m.get('date', '?')[:10]}")
PY
)"

common="set terminal pngcairo size 900,520 font 'DejaVu Sans,10' noenhanced
set datafile separator ','
set bmargin 5
set key top left
set grid ytics
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:*]
set xrange [-0.6:*]
set label 99 \"$note\" at screen 0.99, screen 0.025 right font ',8' tc rgb '#555555'"

plot_if() {  # plot_if CSV PNG GNUPLOT-SCRIPT
  if [ -s "$res/$1" ]; then
    gnuplot <<EOF
$common
set output '$dir/$2'
$3
EOF
    echo "plot: $dir/$2" >&2
  fi
}

plot_if engine.csv engine.png "
set title 'Engine in process: MB/s per generation vs the chunk+hash ceiling'
set ylabel 'MB/s'
plot '$res/engine.csv' every ::1 using 3:xtic(1) title 'generation 1', '' every ::1 using 4 title 'generation 2', '' every ::1 using 5 title 'chunk+hash ceiling'"

plot_if iscsi.csv iscsi.png "
set title 'Through iSCSI (tgtd on 127.0.0.1): dedupv1 LUN vs tgt rdwr LUN'
set ylabel 'MB/s'
set xlabel 'generation'
plot '$res/iscsi.csv' every ::1 using 2:xtic(1) title 'write, dedupv1', '' every ::1 using 3 title 'write, rdwr', '' every ::1 using 4 title 'read, dedupv1', '' every ::1 using 5 title 'read, rdwr'"

plot_if peers.csv peers.png "
set title 'Ingest MB/s on the same two backup generations'
set ylabel 'MB/s'
plot '$res/peers.csv' every ::1 using 2:xtic(1) title 'generation 1', '' every ::1 using 3 title 'generation 2'"

plot_if peers.csv peers-stored.png "
set title 'Bytes stored after each generation (less is better)'
set ylabel 'MiB'
plot '$res/peers.csv' every ::1 using (\$4/1048576):xtic(1) title 'after generation 1', '' every ::1 using (\$5/1048576) title 'after generation 2'"

idx=""
[ -s "$res/index_vs_disk.csv" ] && idx="index_vs_disk.csv"
[ -s "$res/scale_index.csv" ] && idx="scale_index.csv"
if [ -n "$idx" ]; then
  plot_if "$idx" index-vs-disk.png "
set title 'Cold chunk index lookups vs the disk''s 4 KiB random reads (same file, same concurrency)'
set ylabel 'per second'
set xlabel 'threads (index) / jobs (fio, O_DIRECT)'
plot '$res/$idx' every ::1 using 2:xtic(1) title 'chunk index lookups/s', '' every ::1 using 3 title 'fio IOPS'"
fi

plot_if scale_rss.csv rss.png "
set style data linespoints
set title 'Engine peak RSS as the data written grows'
set xlabel 'GiB per generation (two generations written)'
set ylabel 'peak RSS (MB)'
set xrange [0:*]
plot '$res/scale_rss.csv' every ::1 using 1:2 title 'peak RSS' lw 2 pt 7"

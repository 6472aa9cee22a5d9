#!/usr/bin/env bash
# Checks that tgtd can load a backing-store module: it exports only
# register_bs_module, and every symbol it needs is defined by tgtd (which
# exports its own symbols with -Wl,-E) or by a library the module links, since
# tgtd dlopen()s modules with RTLD_NOW.
#   check-module-symbols.sh MODULE.so [TGTD]     (TGTD defaults to /usr/sbin/tgtd)
set -euo pipefail

so="${1:?usage: check-module-symbols.sh MODULE.so [TGTD]}"
tgtd="${2:-/usr/sbin/tgtd}"
name="$(basename "$so")"

strip_versions() { sed -E 's/@.*$//' | sort -u; }

exported="$(nm -D --defined-only --extern-only "$so" | awk '{print $3}' | strip_versions)"
if [ "$exported" != "register_bs_module" ]; then
  echo "$name: must export exactly register_bs_module, exports:" >&2
  echo "$exported" | sed 's/^/  /' >&2
  exit 1
fi

needed="$(nm -D --undefined-only "$so" | awk '$1 == "U" {print $2}' | strip_versions)"

providers=()
if [ -x "$tgtd" ]; then
  providers+=("$tgtd")
else
  echo "$name: $tgtd not found; checking without tgtd's symbols" >&2
fi
while read -r lib; do
  [ -n "$lib" ] && providers+=("$lib")
done < <(ldd "$so" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')

provided="$(for p in "${providers[@]}"; do nm -D --defined-only "$p" 2>/dev/null | awk 'NF >= 3 {print $3}'; done | strip_versions)"
missing="$(comm -23 <(echo "$needed") <(echo "$provided") | sed '/^$/d')"
if [ ! -x "$tgtd" ]; then
  # Without tgtd only the engine's own symbols can be judged.
  missing="$(echo "$missing" | grep '^dedupv1_' || true)"
fi
if [ -n "$missing" ]; then
  echo "$name: symbols tgtd could not resolve when loading the module:" >&2
  echo "$missing" | sed 's/^/  /' >&2
  if echo "$missing" | grep -q '^dedupv1_'; then
    echo "$name: the engine's C API (core/engine/dedupv1_c.h) is not linked in" >&2
  fi
  exit 1
fi

#!/usr/bin/env bash
# What kcache costs a program's build: the implementation file (it only defines
# KCACHE_IMPLEMENTATION and includes kcache.h) compiled with gcc -O2, by default (every part, no
# optional library) and with every compile-out switch (KCACHE_NO_*: the core alone). Prints each
# one's compile time (CPU time, the best of RUNS, default 3) and size(1)'s text (code and read-only data) and
# the .text section alone, then the core's ratios to the full build (the goal: text <= 0.7x).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-gcc}
runs=${RUNS:-3}
all="-DKCACHE_NO_REMOTE -DKCACHE_NO_LAYERS -DKCACHE_NO_PUB -DKCACHE_NO_CPU_NAMES -DKCACHE_NO_EXPLAIN -DKCACHE_NO_ENV -DKCACHE_NO_TIDY"
printf '#define KCACHE_IMPLEMENTATION\n#include "kcache.h"\n' >"$tmp/impl.c"

# the compiler's CPU time (user + system, its children included), not wall time: a busy machine
# stretches wall time, not the work
measure() { # name, defines: "name ms text .text"
    local best="" i ms
    for ((i = 0; i < runs; i++)); do
        rm -f "$tmp/$1.o"
        ms=$( { TIMEFORMAT='%3U %3S'; time $cc -std=c99 -O2 $2 -I"$root" -c "$tmp/impl.c" -o "$tmp/$1.o"; } 2>&1 |
              awk 'END { printf "%d", ($1 + $2) * 1000 }')
        [ -f "$tmp/$1.o" ] || exit 1
        if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
    done
    echo "$1 $best $(size "$tmp/$1.o" | awk 'NR==2 {print $1}') $(size -A "$tmp/$1.o" | awk '$1==".text" {print $2}')"
}
read -r _ full_ms full_text full_sect < <(measure full "")
read -r _ core_ms core_text core_sect < <(measure core "$all")
printf '%-34s %15s %12s %12s\n' "implementation file, $cc -O2" "compile (CPU)" "text (size)" ".text"
printf '%-34s %12d ms %12d %12d\n' "full (default)" "$full_ms" "$full_text" "$full_sect"
printf '%-34s %12d ms %12d %12d\n' "core (every KCACHE_NO_* switch)" "$core_ms" "$core_text" "$core_sect"
awk -v a="$core_ms" -v b="$full_ms" -v c="$core_text" -v d="$full_text" -v e="$core_sect" -v f="$full_sect" \
    'BEGIN { printf "core / full: compile time %.2fx, text %.3fx, .text %.3fx (goal: text <= 0.7x)\n", a / b, c / d, e / f }'

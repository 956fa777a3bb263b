#!/usr/bin/env bash
# Instructions per memory hit, disk hit (64 KiB) and put (64 KiB), this checkout's kcache.h against
# the one at git revision REV (default HEAD~1), counted by valgrind's callgrind: a count, not a
# time, so the same on a busy machine (`make bench ICOUNT_REV=...` picks the revision).
# Each figure is (instructions of N operations - of none) / N, for the probe bench/icount_probe.c.
# Usage: bench/bench_icount.sh [REV]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-HEAD~1}
command -v valgrind >/dev/null || { echo "skip bench_icount: no valgrind (scripts/deps.sh installs it)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/then"
git -C "$root" show "$rev:kcache.h" >"$tmp/then/kcache.h" 2>/dev/null || { echo "bench_icount: no kcache.h at $rev" >&2; exit 1; }
for v in then now; do
    inc=$([ $v = then ] && echo "$tmp/then" || echo "$root")
    ${CC:-cc} -std=c99 -O2 -DNDEBUG -I"$inc" -o "$tmp/probe_$v" "$root/bench/icount_probe.c" -lpthread || exit 1
done
count() { # binary mode n
    rm -rf "$tmp/st"; mkdir -m 700 "$tmp/st"
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" "$2" "$tmp/st/s" "$3" 2>&1 | awk '/Collected/ {print $4}'
}
printf '%-24s %14s %14s %8s\n' "per operation" "at $rev" "now" "ratio"
for m in mem disk put; do
    n=2000; [ $m = put ] && n=200
    t=$(( ($(count "$tmp/probe_then" $m $n) - $(count "$tmp/probe_then" $m 0)) / n ))
    w=$(( ($(count "$tmp/probe_now" $m $n) - $(count "$tmp/probe_now" $m 0)) / n ))
    name=$m; [ $m = mem ] && name="memory hit"; [ $m = disk ] && name="disk hit 64 KiB"; [ $m = put ] && name="put 64 KiB"
    awk -v a="$t" -v b="$w" -v s="$name" 'BEGIN { printf "%-24s %14d %14d %7.3fx\n", s, a, b, b / a }'
done

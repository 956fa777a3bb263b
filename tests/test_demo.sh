#!/usr/bin/env bash
# make demo-cc's program, on its own store, run as make demo-cc runs it: the first run compiles and
# says why (never stored), the next one hits and computes the same; --fresh says it cleared the entry.
set -u
demo=${1:-build/demo_cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KCACHE_DIR=$tmp/store
first=$("$demo" 2>&1); rc1=$?
second=$("$demo" 2>&1); rc2=$?
k1=$(echo "$first" | sed -n 's/^  kernel : //p'); k2=$(echo "$second" | sed -n 's/^  kernel : //p')
if [ $rc1 -eq 0 ] && echo "$first" | grep -q "run    : MISS" && echo "$first" | grep -q 'before : miss: cold'; then
    echo "ok demo-first-run-compiles"; else echo "FAIL demo-first-run-compiles: $first"; fi
if [ $rc2 -eq 0 ] && echo "$second" | grep -q "run    : HIT" && echo "$second" | grep -q 'before : hit: disk'; then
    echo "ok demo-second-run-hits"; else echo "FAIL demo-second-run-hits: $second"; fi
if [ -n "$k1" ] && [ "$k1" = "$k2" ]; then echo "ok demo-same-result"; else echo "FAIL demo-same-result: '$k1' vs '$k2'"; fi
third=$("$demo" --fresh 2>&1)
if echo "$third" | grep -q "run    : MISS" && echo "$third" | grep -q 'before : removed on purpose (--fresh)' &&
   ! echo "$third" | grep -q 'never stored'; then
    echo "ok demo-fresh-recompiles"; else echo "FAIL demo-fresh-recompiles: $third"; fi

#!/usr/bin/env bash
# make demo's OpenCL program, on its own store, run as make demo runs it: the first run on an empty
# store compiles and says why (never stored), and on PoCL its kcache_cl_update after the first launch
# stores a larger binary (PoCL's work-group function); the next one loads the binary, computes the
# same, prints the factor and, on PoCL, its hit into an empty PoCL cache against the same cache warm
# (a hit both times: the ratio line; no time is checked); --fresh says it cleared the entry and
# compiles again; the note on PoCL's kernel cache off appears on PoCL with POCL_KERNEL_CACHE=0 only. With opencl_many's path as a second argument:
# 3 processes at once needing 6 programs (kcache_cl_build_many) compile each once, and none the next
# time, every result right.
set -u
demo=${1:-build/opencl_demo}
many=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KCACHE_DIR=$tmp/store POCL_CACHE_DIR=$tmp/pocl
first=$("$demo" 2>&1); rc1=$?
second=$("$demo" 2>&1); rc2=$?
r1=$(echo "$first" | sed -n 's/^  result : //p'); r2=$(echo "$second" | sed -n 's/^  result : //p')
if [ $rc1 -eq 0 ] && echo "$first" | grep -q "run    : MISS - compiled and cached" && echo "$first" | grep -q 'before : miss: cold'; then
    echo "ok demo-opencl-first-run-compiles"; else echo "FAIL demo-opencl-first-run-compiles: $first"; fi
if [ $rc2 -eq 0 ] && echo "$second" | grep -q "run    : HIT  - first result in .* ms; the run that compiled took .* ms: .*x faster" &&
   echo "$second" | grep -q 'before : hit: disk'; then
    echo "ok demo-opencl-second-run-hits"; else echo "FAIL demo-opencl-second-run-hits: $second"; fi
if [ -n "$r1" ] && [ "$r1" = "$r2" ]; then echo "ok demo-opencl-same-result"; else echo "FAIL demo-opencl-same-result: '$r1' vs '$r2'"; fi
third=$("$demo" --fresh 2>&1)
if echo "$third" | grep -q "run    : MISS" && echo "$third" | grep -q 'before : removed on purpose (--fresh)' &&
   ! echo "$third" | grep -q 'never stored'; then
    echo "ok demo-opencl-fresh-recompiles"; else echo "FAIL demo-opencl-fresh-recompiles: $third"; fi
# on PoCL (its cache on, in an empty directory of the demo's own): the update after the first launch
# stored a larger binary, and the hit is timed again on that directory warm (both hits: the ratio
# line); the note on PoCL's kernel cache only with POCL_KERNEL_CACHE=0; on no other platform
# (NVIDIA's OpenCL has no POCL_KERNEL_CACHE) a word of PoCL
plat=$(sed -n 's/^kcache OpenCL demo  (store: .*; platform: \(.*\); device: .*)$/\1/p' <<<"$first")
note="note   : PoCL's own kernel cache is off (POCL_KERNEL_CACHE=0)"
cache_off=$(POCL_KERNEL_CACHE=0 "$demo" 2>&1)
upd=$(sed -n 's/^  update : kcache_cl_update after the first launch stored the binary again: \([0-9]*\) -> \([0-9]*\) bytes.*/\1 \2/p' <<<"$first")
case "$plat" in
"") echo "FAIL demo-opencl-pocl-note: the demo names no platform: $first" ;;
"Portable Computing Language")
    if [ -n "$upd" ] && [ "${upd#* }" -gt "${upd% *}" ]; then echo "ok demo-opencl-update-grew (${upd% *} -> ${upd#* } bytes)"
    else echo "FAIL demo-opencl-update-grew: no larger binary stored after the first launch: $first"; fi
    if grep -q "^  pocl   : this hit went into an empty PoCL cache (a fresh container): .* ms; into the same cache, now" <<<"$second" &&
       grep -q "^           warm: .* ms: .*x$" <<<"$second"; then echo "ok demo-opencl-empty-pocl-cache-ratio"
    else echo "FAIL demo-opencl-empty-pocl-cache-ratio: $second"; fi
    if grep -qF "$note" <<<"$cache_off" && ! grep -q "note   :" <<<"$first$second" && ! grep -q "pocl   :" <<<"$cache_off" &&
       grep -q "run    : HIT" <<<"$cache_off"; then
        echo "ok demo-opencl-pocl-note"
    else echo "FAIL demo-opencl-pocl-note: on PoCL, the note with its cache off and none with it on: $first / $cache_off"; fi ;;
*)
    if ! grep -q "PoCL" <<<"$first$second$cache_off"; then echo "ok demo-opencl-pocl-note (platform $plat: no PoCL note)"
    else echo "FAIL demo-opencl-pocl-note: platform $plat is not PoCL, yet: $first"; fi ;;
esac
# --help says what it does and exits 0; an unknown argument is refused (exit 2), not ignored
help=$("$demo" --help 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -q '^usage: opencl_demo \[--fresh\]' <<<"$help" && grep -q -- '--fresh' <<<"$help" && ! grep -q 'run    :' <<<"$help"
then echo "ok demo-opencl-help"; else echo "FAIL demo-opencl-help: status $rc: $help"; fi
bad=$("$demo" --frsh 2>&1); rc=$?
if [ $rc -eq 2 ] && grep -q "unknown argument '--frsh'" <<<"$bad" && ! grep -q 'run    :' <<<"$bad"
then echo "ok demo-opencl-unknown-argument"; else echo "FAIL demo-opencl-unknown-argument: status $rc: $bad"; fi
# a start-up that compiles a set of programs, run as several processes at once (opencl_many --ranks)
if [ -n "$many" ]; then
    export KCACHE_DIR=$tmp/ranks
    ranks=$("$many" --ranks 3 --programs 6 2>&1); rc1=$?
    again=$("$many" --ranks 3 --programs 6 --threads 2 2>&1); rc2=$?
    if [ $rc1 -eq 0 ] && grep -q "= 6 compiles of 6 programs (each once)" <<<"$ranks" && grep -q "results  : all right" <<<"$ranks"
    then echo "ok demo-opencl-ranks-share-compiles"; else echo "FAIL demo-opencl-ranks-share-compiles: status $rc1: $ranks"; fi
    if [ $rc2 -eq 0 ] && grep -q "= 0 compiles of 6 programs (all from the cache)" <<<"$again" && grep -q "results  : all right" <<<"$again"
    then echo "ok demo-opencl-ranks-warm"; else echo "FAIL demo-opencl-ranks-warm: status $rc2: $again"; fi
    bad=$("$many" --ranks 2 2>&1); rc=$?
    if [ $rc -eq 2 ] && grep -q '^usage: opencl_many' <<<"$bad"; then echo "ok demo-opencl-ranks-usage"
    else echo "FAIL demo-opencl-ranks-usage: status $rc: $bad"; fi
fi

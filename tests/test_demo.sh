#!/usr/bin/env bash
# tests/test_demo.sh DEMO_CC [NVRTC_PTX [KCACHE_INSPECT]] - the JIT examples, each on its own store.
#   demo_cc (make demo-cc's program, run as make demo-cc runs it): the first run compiles and says
#     why (never stored), the next one hits and computes the same; --fresh says it cleared the entry;
#     --ranks 3 --kernels 6: 3 processes at once compile each kernel once, then none on a second run.
#   nvrtc_ptx (CUDA C to PTX with NVRTC; built where a CUDA toolkit is, else one skip line): the
#     first run compiles, the next hits with the same PTX, which the CUDA driver loads and runs
#     correctly where there is a GPU (else one skip line); another architecture is another entry,
#     explained by its field; the key holds the NVRTC library actually loaded: a copy of it loaded
#     instead is a miss, and a change to that copy is a miss that names the library's stamp;
#     --ranks 3 --kernels 4 compiles each variant once, then none.
set -u
demo=${1:-build/demo_cc}
nvrtc=${2:-build/nvrtc_ptx}
inspect=${3:-build/kcache-inspect}
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
# a start-up of 3 processes needing 6 variants (kcache_get_or_build_many): each compiled once (how
# they are shared out is tests/test_many.c's); run again: none compiled, every process has them all
export KCACHE_DIR=$tmp/ranks
ranks=$("$demo" --ranks 3 --kernels 6 2>&1); rc1=$?
again=$("$demo" --ranks 3 --kernels 6 2>&1); rc2=$?
if [ $rc1 -eq 0 ] && echo "$ranks" | grep -q "= 6 compiles of 6 kernels (each once)"; then
    echo "ok demo-ranks-share-compiles"; else echo "FAIL demo-ranks-share-compiles: $ranks"; fi
if [ $rc2 -eq 0 ] && echo "$again" | grep -q "= 0 compiles of 6 kernels (all from the cache)"; then
    echo "ok demo-ranks-warm"; else echo "FAIL demo-ranks-warm: $again"; fi
export KCACHE_DIR=$tmp/store

# ---- NVRTC ----
if [ ! -x "$nvrtc" ]; then
    echo "skip nvrtc: no CUDA toolkit (nvrtc.h in /usr/local/cuda*, or make CUDA=/path), so no $nvrtc" >&2
    exit 0
fi
export KCACHE_DIR=$tmp/nvstore
first=$("$nvrtc" -o "$tmp/1.ptx" 2>&1); rc1=$?
second=$("$nvrtc" -o "$tmp/2.ptx" 2>&1); rc2=$?
if [ $rc1 -eq 0 ] && echo "$first" | grep -q "run    : MISS" && echo "$first" | grep -q 'before : miss: cold' &&
   grep -q '^\.target sm_75' "$tmp/1.ptx"; then
    echo "ok nvrtc-first-run-compiles"; else echo "FAIL nvrtc-first-run-compiles: $first"; fi
if [ $rc2 -eq 0 ] && echo "$second" | grep -q "run    : HIT" && echo "$second" | grep -q 'before : hit: disk' &&
   cmp -s "$tmp/1.ptx" "$tmp/2.ptx"; then
    echo "ok nvrtc-second-run-hits"; else echo "FAIL nvrtc-second-run-hits (same PTX: $(cmp -s "$tmp/1.ptx" "$tmp/2.ptx" && echo yes || echo no)): $second"; fi
# the cached PTX is what the GPU runs: loaded by the CUDA driver, saxpy's every result checked
out=$("$nvrtc" --run 2>&1); rc=$?
if [ $rc -eq 3 ] && echo "$out" | grep -q 'no CUDA driver'; then
    echo "skip nvrtc-cached-ptx-runs: no CUDA driver (libcuda.so.1) here, so the cached PTX is not loaded on a GPU" >&2
elif [ $rc -eq 0 ] && echo "$out" | grep -q "run    : HIT" && echo "$out" | grep -Eq 'gpu    : .*: ([0-9]+) of \1 results correct'; then
    echo "ok nvrtc-cached-ptx-runs"; else echo "FAIL nvrtc-cached-ptx-runs (exit $rc): $out"; fi
# 3 ranks needing 4 variants at once (kcache_get_or_build_many): each compiled once, none the next time
export KCACHE_DIR=$tmp/nvranks
ranks=$("$nvrtc" --ranks 3 --kernels 4 2>&1); rc1=$?
again=$("$nvrtc" --ranks 3 --kernels 4 2>&1); rc2=$?
if [ $rc1 -eq 0 ] && echo "$ranks" | grep -q "= 4 compiles of 4 kernels (each once)" &&
   [ $rc2 -eq 0 ] && echo "$again" | grep -q "= 0 compiles of 4 kernels (all from the cache)"; then
    echo "ok nvrtc-ranks"; else echo "FAIL nvrtc-ranks: $ranks / $again"; fi
export KCACHE_DIR=$tmp/nvstore
out=$("$nvrtc" --arch compute_90 -o "$tmp/3.ptx" 2>&1)
if echo "$out" | grep -q "run    : MISS" && echo "$out" | grep -q 'arch: "compute_75" (stored) vs "compute_90" (now)' &&
   grep -q '^\.target sm_90' "$tmp/3.ptx"; then
    echo "ok nvrtc-arch-in-key"; else echo "FAIL nvrtc-arch-in-key: $out"; fi
if [ -x "$inspect" ]; then
    # (--json: the text output wraps a long path, libnvrtc's included, across lines)
    fields=$(for f in "$KCACHE_DIR"/i/*/*.kci; do "$inspect" --json "$f"; done 2>&1)
    if echo "$fields" | grep -q '"name": "nvrtc.library", "type": "file"' && echo "$fields" | grep -q 'libnvrtc'; then
        echo "ok nvrtc-library-field"; else echo "FAIL nvrtc-library-field: no nvrtc.library field naming libnvrtc in the index: $(echo "$fields" | head -c 1500)"; fi
fi
# the library loaded is what the key names: a copy of it loaded instead (LD_LIBRARY_PATH over the
# example's RUNPATH) is a miss; that copy changed is a miss naming its stamp
lib=$(ldd "$nvrtc" 2>/dev/null | awk '/libnvrtc\.so/ { print $3; exit }')
if [ -n "$lib" ] && [ -f "$lib" ]; then
    mkdir -p "$tmp/lib"
    cp "$lib" "$tmp/lib/$(basename "$lib")"
    # NVRTC dlopens its builtins library by name: beside the copy, so the copy is the whole NVRTC
    for b in "$(dirname "$lib")"/libnvrtc-builtins*.so*; do [ -f "$b" ] && cp "$b" "$tmp/lib/"; done
    out=$(LD_LIBRARY_PATH=$tmp/lib "$nvrtc" 2>&1)
    if echo "$out" | grep -q "run    : MISS" && echo "$out" | grep -q 'nvrtc.library'; then
        echo "ok nvrtc-other-library-misses"; else echo "FAIL nvrtc-other-library-misses: $out"; fi
    out=$(LD_LIBRARY_PATH=$tmp/lib "$nvrtc" 2>&1)
    if echo "$out" | grep -q "run    : HIT"; then echo "ok nvrtc-other-library-hits"; else echo "FAIL nvrtc-other-library-hits: $out"; fi
    printf 'x' >>"$tmp/lib/$(basename "$lib")" # a byte at the end of the ELF file: still loads
    out=$(LD_LIBRARY_PATH=$tmp/lib "$nvrtc" 2>&1)
    if echo "$out" | grep -q "run    : MISS" && echo "$out" | grep -q 'a dependency changed: file nvrtc.library' &&
       echo "$out" | grep -q 'size'; then
        echo "ok nvrtc-library-change-misses"; else echo "FAIL nvrtc-library-change-misses: $out"; fi
else
    echo "FAIL nvrtc-library: ldd does not name the libnvrtc $nvrtc loads"
fi

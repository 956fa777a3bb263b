#!/usr/bin/env bash
# The preload library (build/libkcache_cl.so) with programs nobody here wrote, counting kcache's
# KCACHE_DEBUG lines (compiles, puts, hits), never timing:
#  - Debian's clFFT client, a few transforms, twice, each pass with a fresh PoCL cache: the first
#    stores, the second compiles nothing and hits every program, every transform PASS;
#  - 4 clients starting together on a fresh store put each program once (as many puts as one client
#    alone);
#  - KCACHE_CL_PRELOAD=0 and KCACHE_CL_PRELOAD_SKIP (the executable's name, a kernel's) leave it alone;
#  - PyOpenCL, which caches for itself: its second run loads its own binaries, which pass straight
#    through (kcache neither looks up nor stores anything), results right both times.
# Usage: tests/test_preload.sh [build/libkcache_cl.so]
set -u
lib=$(realpath "${1:-build/libkcache_cl.so}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
client=$(command -v clFFT-client)
# a few transforms: float and double, 1D and 2D, forward and backward, out of place
transforms=("-x 64" "-x 128 --double" "-x 16 -y 16 --inv" "-x 32 -o")

pass() { # pass NAME STORE POCLDIR: runs every transform, the debug lines into $tmp/NAME.log
    local name=$1 store=$2 pocl=$3 t; : >"$tmp/$name.log"
    for t in "${transforms[@]}"; do
        # shellcheck disable=SC2086 # the transform's options are words
        KCACHE_DIR=$store POCL_CACHE_DIR=$pocl KCACHE_DEBUG=1 LD_PRELOAD=$lib "$client" $t >>"$tmp/$name.log" 2>&1 ||
            echo "exit $? ($t)" >>"$tmp/$name.log"
    done
}
count() { grep -c -- "$1" "$2"; }

if [ -z "$client" ]; then
    echo "FAIL preload-clfft: clFFT-client missing (apt-get install clfft-client: scripts/deps.sh)"
else
    n=${#transforms[@]}
    pass first "$tmp/store" "$tmp/pocl1"
    pass second "$tmp/store" "$tmp/pocl2"
    p1=$(count '\*PASS\*' "$tmp/first.log") p2=$(count '\*PASS\*' "$tmp/second.log")
    puts1=$(count '^kcache: put opencl' "$tmp/first.log")
    comp2=$(count '^kcache: compile opencl' "$tmp/second.log") puts2=$(count '^kcache: put opencl' "$tmp/second.log")
    hits2=$(count '^kcache: hit disk opencl' "$tmp/second.log") miss2=$(count '^kcache: miss' "$tmp/second.log")
    if [ "$p1" -eq "$n" ] && [ "$puts1" -gt 0 ]; then echo "ok preload-clfft-first-pass ($n PASS, $puts1 programs stored)"
    else echo "FAIL preload-clfft-first-pass: $p1 of $n PASS, $puts1 puts: $(tail -n 20 "$tmp/first.log")"; fi
    if [ "$p2" -eq "$n" ] && [ "$comp2" -eq 0 ] && [ "$puts2" -eq 0 ] && [ "$miss2" -eq 0 ] && [ "$hits2" -ge "$puts1" ]; then
        echo "ok preload-clfft-second-pass-hits ($n PASS, $hits2 hits, 0 compiles)"
    else echo "FAIL preload-clfft-second-pass-hits: $p2 of $n PASS, $hits2 hits, $miss2 misses, $comp2 compiles, $puts2 puts: $(grep -v '^$' "$tmp/second.log" | tail -n 20)"; fi

    # 4 clients at once on a fresh store: each program put once (one client alone puts $solo)
    KCACHE_DIR=$tmp/solo POCL_CACHE_DIR=$tmp/pocl-solo KCACHE_DEBUG=1 LD_PRELOAD=$lib "$client" -x 64 -y 64 >"$tmp/solo.log" 2>&1
    solo=$(count '^kcache: put opencl' "$tmp/solo.log")
    for i in 1 2 3 4; do
        KCACHE_DIR=$tmp/four POCL_CACHE_DIR=$tmp/pocl-four$i KCACHE_DEBUG=1 LD_PRELOAD=$lib "$client" -x 64 -y 64 >"$tmp/four$i.log" 2>&1 &
    done
    wait
    puts4=$(cat "$tmp"/four?.log | count '^kcache: put opencl' -) pass4=$(cat "$tmp"/four?.log | count '\*PASS\*' -)
    if [ "$solo" -gt 0 ] && [ "$puts4" -eq "$solo" ] && [ "$pass4" -eq 4 ]; then
        echo "ok preload-clfft-four-at-once-store-once ($puts4 puts for $solo programs, 4 PASS)"
    else echo "FAIL preload-clfft-four-at-once-store-once: $puts4 puts by 4 clients, $solo by one, $pass4 PASS: $(cat "$tmp"/four?.log | grep -v '^$' | tail -n 20)"; fi

    # switched off: the whole process, a skipped executable, a skipped kernel name (clFFT's kernels
    # are fft_fwd / fft_back): kcache never opens its store
    off=$(KCACHE_CL_PRELOAD=0 KCACHE_DIR=$tmp/off1 KCACHE_DEBUG=1 LD_PRELOAD=$lib "$client" -x 64 2>&1)
    skip=$(KCACHE_CL_PRELOAD_SKIP=other,clFFT-client KCACHE_DIR=$tmp/off2 KCACHE_DEBUG=1 LD_PRELOAD=$lib "$client" -x 64 2>&1)
    kern=$(KCACHE_CL_PRELOAD_SKIP=fft_fwd KCACHE_DIR=$tmp/off3 KCACHE_DEBUG=1 LD_PRELOAD=$lib "$client" -x 64 2>&1)
    if grep -q '\*PASS\*' <<<"$off" && ! grep -q '^kcache:' <<<"$off" && grep -q '\*PASS\*' <<<"$skip" &&
       ! grep -q '^kcache:' <<<"$skip" && grep -q '\*PASS\*' <<<"$kern" && ! grep -q '^kcache: \(put\|hit\|miss\)' <<<"$kern"; then
        echo "ok preload-switched-off"
    else echo "FAIL preload-switched-off: off: $off / skip: $skip / kernel: $kern"; fi
fi

# PyOpenCL (Debian's, python3-pyopencl) caches built programs itself (its cache under
# XDG_CACHE_HOME): the first run builds from source (kcache stores it too), the second creates the
# programs from its own binaries, which the preload passes straight through
py=/usr/bin/python3
if ! "$py" -c 'import pyopencl' 2>/dev/null; then
    echo "FAIL preload-pyopencl: python3-pyopencl missing (scripts/deps.sh)"
else
    cat >"$tmp/vadd.py" <<'EOF'
import numpy as np, pyopencl as cl
ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
a = np.arange(1024, dtype=np.float32); b = 3 * a
mf = cl.mem_flags
da = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
db = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
dc = cl.Buffer(ctx, mf.WRITE_ONLY, a.nbytes)
prg = cl.Program(ctx, """
__kernel void vadd(__global const float *a, __global const float *b, __global float *c)
{ int i = get_global_id(0); c[i] = a[i] * 2.0f + b[i]; }
""").build(options=["-cl-mad-enable"])
k = prg.vadd
k(q, a.shape, None, da, db, dc)
c = np.empty_like(a); cl.enqueue_copy(q, c, dc)
print("vadd", "right" if np.allclose(c, 5 * a) else "WRONG", prg.get_info(cl.program_info.NUM_KERNELS),
      k.get_info(cl.kernel_info.PROGRAM) == prg)
EOF
    for i in 1 2; do
        XDG_CACHE_HOME=$tmp/xdg KCACHE_DIR=$tmp/pystore POCL_CACHE_DIR=$tmp/pypocl$i PYOPENCL_CTX=0 KCACHE_DEBUG=1 \
            LD_PRELOAD=$lib "$py" "$tmp/vadd.py" >"$tmp/py$i.log" 2>&1
    done
    r1=$(grep -c '^vadd right 1 True' "$tmp/py1.log") r2=$(grep -c '^vadd right 1 True' "$tmp/py2.log")
    put1=$(count '^kcache: put opencl' "$tmp/py1.log") look2=$(count '^kcache: \(hit\|miss\|put\|compile\)' "$tmp/py2.log")
    if [ "$r1" -eq 1 ] && [ "$r2" -eq 1 ] && [ "$put1" -eq 1 ] && [ "$look2" -eq 0 ]; then
        echo "ok preload-pyopencl-own-cache-passes-through (results right; run 1: 1 put, run 2 from PyOpenCL's binaries: no kcache lookup)"
    else echo "FAIL preload-pyopencl-own-cache-passes-through: right $r1/$r2, run 1 puts $put1, run 2 kcache lines $look2: $(cat "$tmp/py1.log" "$tmp/py2.log" | tail -n 20)"; fi
    # and with PyOpenCL's cache off (PYOPENCL_NO_CACHE: it builds the plain source, which its cache
    # prefixes), kcache serves the build: run 3 stores, run 4 hits, results right
    for i in 3 4; do
        PYOPENCL_NO_CACHE=1 XDG_CACHE_HOME=$tmp/xdg KCACHE_DIR=$tmp/pystore POCL_CACHE_DIR=$tmp/pypocl$i PYOPENCL_CTX=0 \
            KCACHE_DEBUG=1 LD_PRELOAD=$lib "$py" "$tmp/vadd.py" >"$tmp/py$i.log" 2>&1
    done
    if grep -q '^vadd right 1 True' "$tmp/py3.log" && grep -q '^vadd right 1 True' "$tmp/py4.log" &&
       [ "$(count '^kcache: hit disk opencl' "$tmp/py4.log")" -eq 1 ] && [ "$(count '^kcache: compile' "$tmp/py4.log")" -eq 0 ]; then
        echo "ok preload-pyopencl-no-own-cache-hits"
    else echo "FAIL preload-pyopencl-no-own-cache-hits: $(tail -n 20 "$tmp/py3.log" "$tmp/py4.log")"; fi
fi

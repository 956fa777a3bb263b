#!/usr/bin/env bash
# The preload library (build/libkcache_cl.so) with programs nobody here wrote, counting kcache's
# KCACHE_DEBUG lines (compiles, puts, hits), never timing:
#  - Debian's clFFT client, a few transforms, twice, each pass with a fresh PoCL cache: the first
#    stores, the second compiles nothing and hits every program, every transform PASS;
#  - the second pass, into an empty PoCL cache, makes PoCL compile no work-group function (the
#    binaries stored again at the release carry the first launches'), counted in POCL_DEBUG's lines;
#  - 4 clients starting together on a fresh store compile and put each program once (as many
#    compiles and puts as one client alone);
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

pass() { # pass NAME STORE POCLDIR [VAR=VALUE...]: runs every transform, the debug lines into $tmp/NAME.log
    local name=$1 store=$2 pocl=$3 t; shift 3; : >"$tmp/$name.log"
    for t in "${transforms[@]}"; do
        # shellcheck disable=SC2086 # the transform's options are words
        env "$@" KCACHE_DIR="$store" POCL_CACHE_DIR="$pocl" KCACHE_DEBUG=1 LD_PRELOAD="$lib" "$client" $t >>"$tmp/$name.log" 2>&1 ||
            echo "exit $? ($t)" >>"$tmp/$name.log"
    done
}
count() { grep -c -- "$1" "$2"; }

if [ -z "$client" ]; then
    echo "FAIL preload-clfft: clFFT-client missing (apt-get install clfft-client: scripts/deps.sh)"
else
    n=${#transforms[@]}
    pass first "$tmp/store" "$tmp/pocl1"
    # (PoCL's own debug lines: one "Temporary kernel.so file" per work-group function it compiles)
    pass second "$tmp/store" "$tmp/pocl2" POCL_DEBUG=llvm
    p1=$(count '\*PASS\*' "$tmp/first.log") p2=$(count '\*PASS\*' "$tmp/second.log")
    puts1=$(count '^kcache: put opencl' "$tmp/first.log") built1=$(count '^kcache: build many: ' "$tmp/first.log")
    comp2=$(count '^kcache: compile opencl' "$tmp/second.log") puts2=$(count '^kcache: put opencl' "$tmp/second.log")
    hits2=$(count '^kcache: hit disk opencl' "$tmp/second.log") miss2=$(count '^kcache: miss' "$tmp/second.log")
    # (each program put at its build, and again at its release when PoCL's binary grew at the launches)
    if [ "$p1" -eq "$n" ] && [ "$built1" -gt 0 ] && [ "$puts1" -ge "$built1" ]; then
        echo "ok preload-clfft-first-pass ($n PASS, $built1 programs compiled, $puts1 puts)"
    else echo "FAIL preload-clfft-first-pass: $p1 of $n PASS, $built1 compiled, $puts1 puts: $(tail -n 20 "$tmp/first.log")"; fi
    if [ "$p2" -eq "$n" ] && [ "$comp2" -eq 0 ] && [ "$puts2" -eq 0 ] && [ "$miss2" -eq 0 ] && [ "$built1" -gt 0 ] && [ "$hits2" -ge "$built1" ]; then
        echo "ok preload-clfft-second-pass-hits ($n PASS, $hits2 hits, 0 compiles)"
    else echo "FAIL preload-clfft-second-pass-hits: $p2 of $n PASS, $hits2 hits, $miss2 misses, $comp2 compiles, $puts2 puts: $(grep -v '^$' "$tmp/second.log" | tail -n 20)"; fi

    # the second pass went into an empty PoCL cache, yet PoCL compiled no work-group function: the
    # binaries stored again at the release (kcache_cl_update) carry those of the first launches,
    # though clFFT asks for its programs' binaries right after each build (served from the store,
    # so that the driver's binary is not frozen before the launches)
    wg2=$(count 'Temporary kernel.so file' "$tmp/second.log")
    if [ "$p2" -eq "$n" ] && [ "$wg2" -eq 0 ] && [ "$built1" -gt 0 ] && [ "$hits2" -ge "$built1" ]; then
        echo "ok preload-clfft-empty-pocl-cache-compiles-nothing ($hits2 hits into an empty PoCL cache, 0 work-group compiles)"
    else echo "FAIL preload-clfft-empty-pocl-cache-compiles-nothing: $wg2 work-group functions compiled by PoCL, $p2 of $n PASS"; fi

    # 4 clients at once on a fresh store: each program put once (one client alone puts $solo)
    KCACHE_DIR=$tmp/solo POCL_CACHE_DIR=$tmp/pocl-solo KCACHE_DEBUG=1 LD_PRELOAD=$lib "$client" -x 64 -y 64 >"$tmp/solo.log" 2>&1
    solo=$(count '^kcache: put opencl' "$tmp/solo.log") csolo=$(count '^kcache: compiled opencl .*CL_SUCCESS' "$tmp/solo.log")
    for i in 1 2 3 4; do
        KCACHE_DIR=$tmp/four POCL_CACHE_DIR=$tmp/pocl-four$i KCACHE_DEBUG=1 LD_PRELOAD=$lib "$client" -x 64 -y 64 >"$tmp/four$i.log" 2>&1 &
    done
    wait
    puts4=$(cat "$tmp"/four?.log | count '^kcache: put opencl' -) pass4=$(cat "$tmp"/four?.log | count '\*PASS\*' -)
    comp4=$(cat "$tmp"/four?.log | count '^kcache: compiled opencl .*CL_SUCCESS' -)
    # compiles: as many by the 4 together as by one alone (each program once; with PoCL's cache on a
    # miss also builds a second program from it, for the binary waiters get: two lines a program)
    if [ "$solo" -gt 0 ] && [ "$puts4" -eq "$solo" ] && [ "$csolo" -gt 0 ] && [ "$comp4" -eq "$csolo" ] && [ "$pass4" -eq 4 ]; then
        echo "ok preload-clfft-four-at-once-store-once ($puts4 puts and $comp4 compiles by 4 clients, as by one alone; 4 PASS)"
    else echo "FAIL preload-clfft-four-at-once-store-once: $puts4 puts and $comp4 compiles by 4 clients, $solo and $csolo by one, $pass4 PASS: $(cat "$tmp"/four?.log | grep -v '^$' | tail -n 20)"; fi

    # switched off: the whole process, a skipped executable, a skipped kernel name (clFFT's kernels
    # are fft_fwd / fft_back): kcache never opens its store
    off=$(KCACHE_CL_PRELOAD=0 KCACHE_DIR=$tmp/off1 KCACHE_DEBUG=1 LD_PRELOAD=$lib "$client" -x 64 2>&1)
    skip=$(KCACHE_CL_PRELOAD_SKIP=other,clFFT-client KCACHE_DIR=$tmp/off2 KCACHE_DEBUG=1 LD_PRELOAD=$lib "$client" -x 64 2>&1)
    kern=$(KCACHE_CL_PRELOAD_SKIP=fft_fwd KCACHE_DIR=$tmp/off3 KCACHE_DEBUG=1 LD_PRELOAD=$lib "$client" -x 64 2>&1)
    if grep -q '\*PASS\*' <<<"$off" && ! grep -q '^kcache:' <<<"$off" && grep -q '\*PASS\*' <<<"$skip" &&
       ! grep -q '^kcache:' <<<"$skip" && grep -q '\*PASS\*' <<<"$kern" && ! grep -q '^kcache: \(put\|hit\|miss\)' <<<"$kern"; then
        echo "ok preload-switched-off"
    else echo "FAIL preload-switched-off: off: $off / skip: $skip / kernel: $kern"; fi
    # named as an ICD loader layer (OPENCL_LAYERS, ocl-icd 2.3.1) it is no layer: skipped, no harm
    layer=$(OPENCL_LAYERS=$lib KCACHE_DIR=$tmp/off4 KCACHE_DEBUG=1 "$client" -x 64 2>&1)
    if grep -q '\*PASS\*' <<<"$layer" && ! grep -q '^kcache:' <<<"$layer"; then echo "ok preload-as-a-layer-skipped"
    else echo "FAIL preload-as-a-layer-skipped: $layer"; fi
fi

# A small program of our own for what clFFT and PyOpenCL do not use: a pfn_notify called once the
# build is done, a program retained by the caller before its build (and released), build status and
# log, kernels asking for their program, the options in the key (-DMUL=3 twice: stored, then a hit;
# -DMUL=2: a miss, built, right), and a build that fails with the driver's error and log
cat >"$tmp/own.c" <<'EOF'
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int notified;
static void CL_CALLBACK note(cl_program p, void *u) { (void)p; if (u == (void *)&notified) notified++; }
int main(int argc, char **argv) {
    const char *src = "__kernel void twice(__global float *a) { size_t i = get_global_id(0); a[i] = a[i] * MUL; }";
    const char *bad = "__kernel void bad(__global float *a) { a[0] = undeclared_thing; }";
    cl_platform_id pl; cl_device_id dev; cl_int e, eb; cl_uint refs = 0; size_t nk = 0; cl_build_status bs = CL_BUILD_NONE;
    cl_program p, q, kp = NULL; cl_kernel k; cl_mem m; float a[16]; size_t i, n = 16, loglen = 0; char log[8192];
    int mul = argc > 2 ? atoi(argv[2]) : 0, right = 1;
    cl_context ctx; cl_command_queue cq;
    if (argc < 3 || clGetPlatformIDs(1, &pl, NULL) || clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 1, &dev, NULL)) return 2;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    cq = clCreateCommandQueue(ctx, dev, 0, &e);
    p = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
    clRetainProgram(p);
    eb = clBuildProgram(p, 1, &dev, argv[1], note, (void *)&notified);
    clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs, NULL);
    clGetProgramInfo(p, CL_PROGRAM_REFERENCE_COUNT, sizeof refs, &refs, NULL);
    clReleaseProgram(p);
    k = clCreateKernel(p, "twice", &e);
    clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof kp, &kp, NULL);
    clGetProgramInfo(p, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL);
    for (i = 0; i < n; i++) a[i] = (float)i;
    m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof a, a, &e);
    clSetKernelArg(k, 0, sizeof m, &m);
    clEnqueueNDRangeKernel(cq, k, 1, NULL, &n, NULL, 0, NULL, NULL);
    clEnqueueReadBuffer(cq, m, CL_TRUE, 0, sizeof a, a, 0, NULL, NULL);
    for (i = 0; i < n; i++) right &= a[i] == (float)(i * (size_t)mul);
    printf("own: built %d notified %d status %d refs %u kernel-program %d kernels %u result %s\n", eb == CL_SUCCESS,
           notified, bs == CL_BUILD_SUCCESS, refs, kp == p, (unsigned)nk, right ? "right" : "WRONG");
    clReleaseKernel(k); clReleaseProgram(p); clReleaseMemObject(m);
    q = clCreateProgramWithSource(ctx, 1, &bad, NULL, &e);
    eb = clBuildProgram(q, 0, NULL, "", NULL, NULL);
    log[0] = 0;
    clGetProgramBuildInfo(q, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, &loglen);
    log[sizeof log - 1] = 0;
    k = clCreateKernel(q, "bad", &e);
    printf("bad: failed %d log-names-it %d kernel %d\n", eb == CL_BUILD_PROGRAM_FAILURE, strstr(log, "undeclared_thing") != NULL,
           k == NULL && e == CL_INVALID_PROGRAM_EXECUTABLE);
    clReleaseProgram(q); clReleaseCommandQueue(cq); clReleaseContext(ctx);
    return 0;
}
EOF
if ! cc -std=c99 -o "$tmp/own" "$tmp/own.c" -lOpenCL 2>"$tmp/own.cc"; then
    echo "FAIL preload-own-program-builds: $(head -c 600 "$tmp/own.cc")"
else
    for r in "1 -DMUL=3 3" "2 -DMUL=3 3" "3 -DMUL=2 2"; do
        read -r i opt mul <<<"$r"
        KCACHE_DIR=$tmp/ownstore POCL_CACHE_DIR=$tmp/ownpocl$i KCACHE_DEBUG=1 LD_PRELOAD=$lib "$tmp/own" "$opt" "$mul" >"$tmp/own$i.log" 2>&1
    done
    good='^own: built 1 notified 1 status 1 refs 2 kernel-program 1 kernels 1 result right$'
    if grep -q "$good" "$tmp/own1.log" && grep -q "$good" "$tmp/own2.log" && grep -q "$good" "$tmp/own3.log"; then
        echo "ok preload-own-program-as-the-driver-does (notify, refs, status, kernel's program, results)"
    else echo "FAIL preload-own-program-as-the-driver-does: $(cat "$tmp"/own?.log | grep '^own:')"; fi
    if [ "$(count '^kcache: put opencl' "$tmp/own1.log")" -ge 1 ] && [ "$(count '^kcache: hit disk opencl' "$tmp/own2.log")" -eq 1 ] &&
       [ "$(count '^kcache: compiled opencl .*CL_SUCCESS' "$tmp/own2.log")" -eq 0 ] && [ "$(count "^kcache: hit disk" "$tmp/own3.log")" -eq 0 ] &&
       [ "$(count '^kcache: compiled opencl .*CL_SUCCESS' "$tmp/own3.log")" -ge 1 ]; then
        echo "ok preload-own-program-options-keyed (stored, hit, another option set missed)"
    else echo "FAIL preload-own-program-options-keyed: $(cat "$tmp"/own?.log | grep '^kcache: \(put\|hit\|miss\|compile\)')"; fi
    # PoCL grows a binary at a kernel's first launch: the release stores it again (kcache_cl_update)
    if ! clinfo -l 2>/dev/null | grep -q 'Portable Computing Language'; then echo "skip preload-own-program-update-at-release: not PoCL"
    else
        sizes=$(sed -n 's/^kcache: put opencl (\([0-9]*\) bytes)$/\1/p' "$tmp/own1.log" | tr '\n' ' ')
        read -r s1 s2 s3 <<<"$sizes"
        if [ -n "${s2:-}" ] && [ -z "${s3:-}" ] && [ "$s2" -gt "$s1" ]; then echo "ok preload-own-program-update-at-release ($s1 then $s2 bytes)"
        else echo "FAIL preload-own-program-update-at-release: puts of $sizes bytes"; fi
    fi
    if grep -q '^bad: failed 1 log-names-it 1 kernel 1$' "$tmp/own1.log" && grep -q '^bad: failed 1 log-names-it 1 kernel 1$' "$tmp/own2.log"; then
        echo "ok preload-own-program-failure-is-the-drivers"
    else echo "FAIL preload-own-program-failure-is-the-drivers: $(grep '^bad:' "$tmp"/own?.log)"; fi
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
    put1=$(count '^kcache: put opencl' "$tmp/py1.log") look2=$(count '^kcache: \(store\|hit\|miss\|put\|compile\)' "$tmp/py2.log")
    if [ "$r1" -eq 1 ] && [ "$r2" -eq 1 ] && [ "$put1" -ge 1 ] && [ "$look2" -eq 0 ]; then
        echo "ok preload-pyopencl-own-cache-passes-through (results right; run 1: $put1 puts, run 2 from PyOpenCL's binaries: no store opened, no lookup)"
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

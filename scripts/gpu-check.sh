#!/usr/bin/env bash
# scripts/gpu-check.sh OUT - the checks that need an NVIDIA GPU machine, which CI never has: run by
# hand where one is lent (x86-64, a CUDA toolkit in /usr/local/cuda*, NVIDIA's driver, a python3
# with numba). It prints what it saw and writes the logs, and a tar of the numba caches it made,
# under OUT.
#   1. NVRTC: tests/test_demo.sh on examples/nvrtc_ptx.c, then nvrtc_ptx --run: the PTX, compiled
#      and then read back from the store, loaded by the CUDA driver and saxpy checked on the GPU;
#      then 16 ranks needing 24 kernels at once (nvrtc_ptx --ranks: kcache_get_or_build_many).
#   2. OpenCL on NVIDIA's driver (not PoCL): opencl_demo and opencl_saxpy twice each on one store,
#      the second run loading the stored binary (PTX) with clCreateProgramWithBinary; 8 ranks
#      needing 24 programs at once (opencl_many --ranks: kcache_cl_build_many, then --serial).
#   3. Vulkan on NVIDIA's driver: bench_vulkan (cold, NVIDIA's own disk cache, a raw blob, kcache's
#      hit: goals hit <= 1.1x raw and >= 10x faster than the driver's cache) and test_vulkan, built
#      beforehand into GPU_BIN; the loader (libvulkan1) carried as the device README says.
#   4. numba: tests/inspect_corpus.py live (kcache-inspect's verdicts against what this numba
#      does on this CPU) and tests/test_host.c, built there (kcache's CPU name against this
#      python3's llvmlite's LLVM).
# Binaries that need what the GPU machine may lack (an OpenCL ICD loader, its headers) are built
# beforehand where they are and carried in GPU_BIN (default dev/bin), with libOpenCL.so.1 there
# (`make gpu-bin` builds them). The numba runs are each cut off after GPU_NUMBA_TIMEOUT seconds (150).
set -u
out=${1:-/tmp/gpu-check}
bin=${GPU_BIN:-dev/bin}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
section() { printf '\n==== %s\n' "$*"; }

section machine
nvidia-smi -L 2>&1
grep -m1 'model name' /proc/cpuinfo
python3 -c 'import numba, llvmlite, sys; print("numba", numba.__version__, "llvmlite", llvmlite.__version__, "python", sys.version.split()[0])' 2>&1

section NVRTC
cuda=$(ls -d /usr/local/cuda /usr/local/cuda-* 2>/dev/null | head -n 1)
echo "toolkit: ${cuda:-none}"
make --no-print-directory CUDA="$cuda" build/demo_cc build/nvrtc_ptx build/kcache-inspect >"$out/build.log" 2>&1 ||
    { echo "build failed:"; tail -n 20 "$out/build.log"; }
bash tests/test_demo.sh build/demo_cc build/nvrtc_ptx build/kcache-inspect 2>&1
export KCACHE_DIR=$tmp/nvrtc
for args in "--run" "--run" "--arch compute_90 --run" "--arch compute_90 --run"; do
    # shellcheck disable=SC2086
    build/nvrtc_ptx $args 2>&1; echo "(nvrtc_ptx $args: exit $?)"
done
# a start-up of 16 ranks needing 24 NVRTC kernels (the issue's measurement, kcache_get_or_build_many):
# each compiled once and shared out, then a warm start
export KCACHE_DIR=$tmp/nvrtc-ranks
for run in cold warm; do
    echo "-- nvrtc ranks, $run"
    build/nvrtc_ptx --ranks 16 --kernels 24 2>&1; echo "(nvrtc_ptx --ranks 16 --kernels 24: exit $?)"
done

section OpenCL on NVIDIA
icd=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -n 1)
if [ -z "$icd" ]; then icd=$(find / -xdev -name 'libnvidia-opencl.so.1' 2>/dev/null | head -n 1); fi
echo "NVIDIA's OpenCL driver: ${icd:-not found}"
if [ -n "$icd" ]; then
    mkdir -p "$tmp/vendors"
    echo "$icd" >"$tmp/vendors/nvidia.icd"
    export OCL_ICD_VENDORS=$tmp/vendors LD_LIBRARY_PATH=$PWD/$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    for prog in opencl_demo opencl_saxpy; do
        export KCACHE_DIR=$tmp/cl-$prog
        for run in first second; do
            echo "-- $prog, $run run"
            "$bin/$prog" 2>&1; echo "($prog: exit $?)"
        done
    done
    # a start-up of 8 ranks needing 24 OpenCL programs at once (kcache_cl_build_many): each compiled
    # once and shared out, then a warm start; the same with one kcache_cl_build per program. NVIDIA's
    # own compile cache (~/.nv/ComputeCache) is off for these, or the second way would reuse the
    # first's compiles (seen: 288 ms batch, then 79 ms "cold" serial)
    if [ -x "$bin/opencl_many" ]; then
        for mode in "" --serial; do
            export KCACHE_DIR=$tmp/cl-ranks$mode
            for run in cold warm; do
                echo "-- opencl_many ranks $mode, $run"
                # shellcheck disable=SC2086
                CUDA_CACHE_DISABLE=1 "$bin/opencl_many" --ranks 8 --programs 24 $mode 2>&1; echo "(opencl_many --ranks 8 --programs 24 $mode: exit $?)"
            done
        done
    fi
    export KCACHE_DIR=$tmp/cl-bench
    [ -x "$bin/bench_opencl" ] && { echo "-- bench_opencl"; "$bin/bench_opencl" 2>&1 | tail -n 30; }
fi

section Vulkan on NVIDIA
nvicd=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -n 1)
echo "NVIDIA's Vulkan driver: ${nvicd:-not found}"
if [ -n "$nvicd" ] && [ -x "$bin/bench_vulkan" ]; then
    VK_DRIVER_FILES=$nvicd VK_ICD_FILENAMES=$nvicd "$bin/test_vulkan" 2>&1
    VK_DRIVER_FILES=$nvicd VK_ICD_FILENAMES=$nvicd "$bin/bench_vulkan" 2>&1 | tee "$out/bench_vulkan.log"
else
    echo "skipped: no NVIDIA Vulkan driver manifest, or $bin/bench_vulkan not built"
fi
section numba
# test_host compares kcache's CPU name and features with the LLVM of the llvmlite of LLVM_PY (built in
# as /usr/bin/python3, Debian's): here that is the python3 with numba, so it is built here for it
py=$(command -v python3)
${CC:-cc} -std=c99 -O2 -I. -DLLVM_PY="\"$py\"" -o "$tmp/test_host" tests/test_host.c -lpthread >>"$out/build.log" 2>&1 ||
    echo "test_host: build failed (see build.log)"
"$tmp/test_host" 2>&1 | grep -E '^(# cpu name|FAIL|ok)'
timeout "${GPU_NUMBA_TIMEOUT:-150}" python3 tests/inspect_corpus.py live "$bin/kcache-inspect" python3 "$tmp/live" --corpus tests/data/numba-corpus >"$out/numba-live.log" 2>&1
echo "inspect_corpus.py live: exit $?, $(grep -c '^ok' "$out/numba-live.log") ok, $(grep -c '^FAIL' "$out/numba-live.log") FAIL"
grep -E '^FAIL' "$out/numba-live.log" | head -n 20
timeout "${GPU_NUMBA_TIMEOUT:-150}" python3 tests/numba_cases.py python3 "$tmp/corpus" >"$out/numba-cases.log" 2>&1
echo "numba_cases.py: exit $?"
tar -C "$tmp" -czf "$out/numba-corpus.tgz" corpus 2>/dev/null && ls -l "$out/numba-corpus.tgz"

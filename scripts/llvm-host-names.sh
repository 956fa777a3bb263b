#!/usr/bin/env bash
# llvm-host-names.sh - what each LLVM's host detection calls made-up x86 CPUs, checked against
# kcache-inspect's per-LLVM table (tools/inspect_llvm.c, "x86 CPU names, per LLVM version").
#
# How that table was made and how to re-check it after an edit or for a new LLVM:
# the LLVMs numba uses (llvmlite's wheels 0.33.0 LLVM 9, 0.36.0 10, 0.39.1 11, 0.43.0 14,
# 0.44.0 15, 0.47.0 20, 0.50.0 22) and Debian 12's libLLVM 13, 16 and 19 are loaded by a tiny
# program run under qemu-x86_64 with a made-up CPUID (-cpu qemu64,vendor=...,family=...,
# model=...,+feature), which asks each for the host CPU name (LLVMPY_GetHostCPUName, or
# LLVMGetHostCPUName); kcache-inspect --host --json is run under the same CPUID, and every
# (CPU, LLVM) pair whose names differ is printed.  TCG (qemu 7.2) has no AVX-512, so the
# guess's AVX-512 steps cannot be checked this way.
#
# Usage: scripts/llvm-host-names.sh [quick|full]   (default quick: the models where names
#        change; full: every model 0x00-0xff of Intel family 6 and AMD families 23, 25, 26)
# Needs: the network (pip download, apt-get download: run once, kept in build/llvm-host-names),
#        qemu-user-static, a C compiler, python3; build/kcache-inspect.  Not part of make test.
# Exit status: 0 when kcache agrees with every LLVM on every CPU, 1 otherwise.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
work=$root/build/llvm-host-names
mode=${1:-quick}
tool=$root/build/kcache-inspect
mkdir -p "$work"
cd "$work" || exit 1
[ -x "$tool" ] || { echo "llvm-host-names: build $tool first (make build/kcache-inspect)" >&2; exit 1; }
command -v qemu-x86_64-static >/dev/null || { echo "llvm-host-names: needs qemu-user-static" >&2; exit 1; }

# the LLVMs: llvmlite wheels (any Python tag: only the shared library is used) and Debian's libLLVM
pip=$(command -v pip3 || echo "$root/build/venv-numba/bin/pip")
for spec in "0.33.0 3.8" "0.36.0 3.9" "0.39.1 3.10" "0.43.0 3.11" "0.44.0 3.11" "0.47.0 3.11" "0.50.0 3.11"; do
    set -- $spec
    [ -f "$1/llvmlite/binding/libllvmlite.so" ] && continue
    "$pip" download --quiet --no-deps --only-binary :all: --python-version "$2" --platform manylinux2014_x86_64 \
        --platform manylinux2010_x86_64 --platform manylinux1_x86_64 -d wheels "llvmlite==$1" &&
        mkdir -p "$1" && unzip -q -o wheels/llvmlite-"$1"-*.whl 'llvmlite/binding/libllvmlite.so' -d "$1" ||
        { echo "llvm-host-names: cannot fetch llvmlite $1 (PyPI reachable?)" >&2; exit 1; }
done
for v in 13 16 19; do
    ls debs/usr/lib/x86_64-linux-gnu/libLLVM*"$v"* >/dev/null 2>&1 && continue
    mkdir -p debs && (cd debs && apt-get download "libllvm$v" >/dev/null 2>&1 && dpkg -x libllvm"$v"_*.deb .) ||
        { echo "llvm-host-names: cannot fetch Debian's libllvm$v" >&2; exit 1; }
done
libs=()
for v in 0.33.0 0.36.0 0.39.1 0.43.0 0.44.0 0.47.0 0.50.0; do libs+=("$work/$v/llvmlite/binding/libllvmlite.so"); done
for f in debs/usr/lib/x86_64-linux-gnu/libLLVM-13.so.1 debs/usr/lib/x86_64-linux-gnu/libLLVM-16.so.1 \
         debs/usr/lib/x86_64-linux-gnu/libLLVM.so.19.1; do libs+=("$work/$f"); done

cc -O1 -o ask "$root/tests/llvm_host_name.c" -ldl || exit 1

specs=()
I=qemu64,vendor=GenuineIntel
A=qemu64,vendor=AuthenticAMD
if [ "$mode" = full ]; then
    for m in $(seq 0 255); do specs+=("$A,family=23,model=$m" "$A,family=25,model=$m" "$A,family=26,model=$m" "$I,family=6,model=$m"); done
    for m in $(seq 0 63); do specs+=("$I,family=18,model=$m" "$I,family=19,model=$m"); done
else
    for m in 0x01 0x0e 0x55 0x8c 0x8f 0x97 0xa5 0xa7 0xaa 0xae 0xb5 0xb7 0xba 0xbd 0xbe 0xcf 0xd5 0xdd 0x9c 0xfe; do specs+=("$I,family=6,model=$((m))"); done
    for m in 0x01 0x31 0x47 0x60 0x71 0x90; do specs+=("$A,family=23,model=$((m))"); done
    for m in 0x01 0x11 0x21 0x61 0x75 0x78 0x7c 0xa0; do specs+=("$A,family=25,model=$((m))"); done
    specs+=("$A,family=26,model=2" "$A,family=26,model=0x44" "$A,family=27,model=1" "$I,family=19,model=1" "$I,family=18,model=1")
fi
for f in 5 15 16 18 20 21 22; do specs+=("$A,family=$f,model=1"); done
specs+=("$I,family=3,model=1" "$I,family=4,model=1" "$I,family=5,model=4" "$I,family=15,model=6" "qemu64,vendor=HygonGenuine,family=24,model=1")
G="$I,family=6,model=254"
for feats in +ssse3 +ssse3,+movbe +ssse3,+sse4.1 +ssse3,+sse4.1,+sse4.2 +ssse3,+sse4.1,+sse4.2,+movbe \
             +ssse3,+sse4.1,+sse4.2,+xsave,+avx +ssse3,+sse4.1,+sse4.2,+xsave,+avx,+avx2 \
             +ssse3,+sse4.1,+sse4.2,+xsave,+avx,+avx2,+adx +ssse3,+sse4.1,+sse4.2,+xsave,+avx,+avx2,+adx,+clflushopt; do
    specs+=("$G,$feats")
done

bad=0 n=0
for s in "${specs[@]}"; do
    llvm=$(qemu-x86_64-static -cpu "$s" ./ask "${libs[@]}" 2>/dev/null)
    ours=$(qemu-x86_64-static -cpu "$s" "$tool" --host --json 2>/dev/null)
    echo "$s | $llvm"
    for pair in $llvm; do
        v=${pair%%:*} want=${pair#*:}
        got=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["llvm"].get(sys.argv[2], "?"))' "$ours" "$v" 2>/dev/null)
        n=$((n + 1))
        [ "$got" = "$want" ] || { echo "MISMATCH $s LLVM $v: LLVM says $want, kcache says $got"; bad=$((bad + 1)); }
    done
done
echo "llvm-host-names: $n (CPU, LLVM) pairs compared, $bad mismatches"
[ "$bad" = 0 ]

#!/usr/bin/env bash
# Installs the Debian packages that are missing, when they are missing.
#   scripts/deps.sh demo   what `make demo` needs: a C compiler, make, PoCL, the ICD loader, the
#                          OpenCL headers (4 packages: build-essential brings gcc and make)
#   scripts/deps.sh        what `make test` and `make bench` need: the above and every test tool
# Idempotent: with everything present it only checks. Installs with apt-get when run as root;
# otherwise prints the command to run (with sudo) and fails.
set -u
demo_pkgs=(build-essential pocl-opencl-icd ocl-icd-opencl-dev opencl-headers)
# compilers and sanitizer runtimes; xxh128sum (the hash reference) and its header (bench);
# valgrind; tmux and ncurses (kcache-top); OpenCL on the CPU; numba (.nbi files for kcache-inspect);
# cross compilers with their C libraries (apt recommends them, and --no-install-recommends
# skips recommends) and qemu-user (aarch64, s390x), musl and 32-bit libraries (tests/compile_more.sh);
# mingw-w64 and wine (the Win32 layer; wine64 named so that apt does not pick wine32); the remote
# tier: redis-server (its tests start their own), hiredis, zstd and libcrypto (HMAC-SHA-256); the
# Vulkan part: the loader and its headers, lavapipe (Mesa's CPU driver), shaderc with glslang and
# SPIRV-Tools (the example compiles GLSL; Debian 12 links them statically).
# Not gcc-multilib: it conflicts with the cross compilers.
pkgs=(
  build-essential clang libclang-rt-14-dev
  xxhash libxxhash-dev
  valgrind tmux libncurses-dev
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo
  python3 python3-numba python3-venv python3-pyopencl clfft-client  # (clfft-client: tests/test_preload.sh, bench/bench_preload.sh)
  python3-setuptools python3-wheel  # (tests/test_numba.sh builds ./python offline)
  qemu-user-static gcc-aarch64-linux-gnu gcc-s390x-linux-gnu libc6-dev-arm64-cross libc6-dev-s390x-cross
  musl-tools libc6-dev-i386 lib32gcc-12-dev
  openssl  # (the command: tests/test_remote.c makes its TLS certificates with it; libssl-dev: rediss://)
  gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 wine wine64
  redis-server libhiredis-dev libzstd-dev libssl-dev
  iproute2  # (ip, tc: tests/test_netfaults.c's network faults in a namespace of its own)
  libvulkan-dev mesa-vulkan-drivers libshaderc-dev glslang-dev spirv-tools
)
[ "${1:-}" = demo ] && pkgs=("${demo_pkgs[@]}")
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "deps: not root; run: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || { echo "deps: apt-get update failed" >&2; exit 1; }
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || { echo "deps: apt-get install failed" >&2; exit 1; }
echo "deps: done"

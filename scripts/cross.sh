#!/usr/bin/env bash
# scripts/cross.sh ARCH [--build-only] [TEST...]
#   TEST: a program of tests/ (default: test_hash test_key test_lru test_store test_index
#   test_flight test_threads test_backend) or kcache-inspect (from tools/inspect_*.c, for scripts/exchange.sh).
#
# Builds the C test programs for ARCH (aarch64: little-endian, NEON hash path; s390x: big-endian,
# scalar hash path) with Debian's cross gcc, statically linked, and runs each under
# qemu-ARCH-static (called explicitly: no binfmt_misc needed). Prints tests/kt.h's protocol with
# every name prefixed "ARCH/PROGRAM/": "ok aarch64/test_store/persistence",
# "FAIL s390x/test_key/...: why". A program that crashes, times out or prints nothing is a FAIL.
# Exit status 0 only when nothing failed.
#
# Build flags are the Makefile's (-std=c99 -O2, -Wall -Wextra -Wpedantic -Werror) plus
# -fsanitize=alignment -fsanitize-undefined-trap-on-error: qemu-user does not fault on a misaligned
# load (neither do aarch64 and s390x for plain loads), so a misaligned typed access anywhere in
# kcache.h's code for these targets traps instead (SIGILL/SIGTRAP, reported as a FAIL). No
# sanitizer runtime is needed, so -static works.
#
# Every program runs in full: nothing is excluded. Notes on running under qemu-user 7.2:
#   - test_hash runs `xxh128sum` through popen: qemu forwards execve to the kernel, so the native
#     xxh128sum checks the emulated hash.
#   - test_store's mount-namespace cases (unshare, tmpfs mounts) and fork/threads/signals in
#     test_flight and test_threads are forwarded to the kernel and work (as root, as in CI).
#   - qemu-user 7.2 does not implement openat2 (ENOSYS), so kcache takes its fallback path for
#     opening files in the store. test_store's symlink_shard / symlink_e then FAIL: that is a real
#     defect of the fallback (it follows a symlinked e/ or e/XX directory), the same one a kernel
#     without openat2 (< 5.6, some seccomp profiles) or a non-Linux POSIX system has; it is
#     reproduced natively by making syscall(SYS_openat2) fail with ENOSYS. Not excluded.
#
# Binaries go to build/cross-ARCH/ (rebuilt when out of date). Environment: KT_TIMEOUT (seconds per
# program, default 300), JOBS (parallel compiles, default nproc).
set -u
usage() { echo "usage: $0 aarch64|s390x [--build-only] [TEST...]" >&2; exit 2; }
arch=${1:-}
case "$arch" in aarch64|s390x) ;; *) usage ;; esac
shift
build_only=0
if [ "${1:-}" = --build-only ]; then build_only=1; shift; fi
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/cross-$arch
limit=${KT_TIMEOUT:-300}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
cc=$arch-linux-gnu-gcc
qemu=qemu-$arch-static
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(test_hash test_key test_lru test_store test_index test_flight test_threads test_backend)
flags="-std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -fsanitize=alignment -fsanitize-undefined-trap-on-error -static"

missing=""
command -v "$cc" >/dev/null || missing="$missing $cc (Debian: gcc-$arch-linux-gnu)"
[ $build_only -eq 1 ] || command -v "$qemu" >/dev/null || missing="$missing $qemu (Debian: qemu-user-static)"
if [ -n "$missing" ]; then
    echo "FAIL $arch/toolchain: not installed:$missing (scripts/deps.sh installs them)"
    exit 1
fi
mkdir -p "$out" || exit 1

# ---- build (in parallel, only what is out of date) ----
failed=0
pids=() names=()
for t in "${tests[@]}"; do
    src=$root/tests/$t.c bin=$out/$t
    srcs=("$src")
    [ "$t" = kcache-inspect ] && src=$root/tools/inspect_main.c srcs=("$root"/tools/inspect_*.c)   # the tool, for scripts/exchange.sh
    if [ ! -f "$src" ]; then echo "FAIL $arch/$t: no tests/$t.c"; failed=1; continue; fi
    fresh=1
    for s in "${srcs[@]}" "$root/tools/inspect.h" "$root/kcache.h" "$root/tests/kt.h" "$0"; do [ "$bin" -nt "$s" ] || fresh=0; done
    if [ -x "$bin" ] && [ $fresh -eq 1 ]; then
        continue
    fi
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n 2>/dev/null || sleep 0.2; done
    ( rm -f "$bin"
      if ! $cc $flags -I"$root" -I"$root/tests" -o "$bin.tmp" "${srcs[@]}" -lpthread >"$out/$t.build.log" 2>&1; then exit 1; fi
      mv "$bin.tmp" "$bin" ) &
    pids+=($!) names+=("$t")
done
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
        echo "FAIL $arch/build/${names[$i]}: $cc failed: $(grep -m3 -E 'error|warning' "$out/${names[$i]}.build.log" | tr '\n' ' ')"
        failed=1
    fi
done
[ $build_only -eq 1 ] && exit $failed

# ---- run, one program at a time (several of them measure waits and CPU use) ----
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "${tests[@]}"; do
    bin=$out/$t
    [ -x "$bin" ] || continue
    start=$(date +%s)
    timeout -k 10 "$limit" "$qemu" "$bin" >"$log" 2>&1
    rc=$?
    # every name gets the arch and program; anything else the program said is kept as context
    sed -e "s|^ok |ok $arch/$t/|" -e "s|^FAIL |FAIL $arch/$t/|" -e "s|^skip |skip $arch/$t/|" "$log"
    p=$(grep -c '^ok ' "$log") f=$(grep -c '^FAIL ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        case $rc in
        124|137) why="timed out after $limit s" ;;
        132|133) why="SIGILL/SIGTRAP: a trapping sanitizer check (misaligned access?) fired; rebuild with -fsanitize-recover to locate" ;;
        *) why="exited with status $rc" ;;
        esac
        echo "FAIL $arch/$t: $why"
        f=1
    elif [ "$rc" -eq 0 ] && [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $arch/$t: ran no check"
        f=1
    fi
    [ "$f" -eq 0 ] || failed=1
    echo "# $arch/$t: $p ok, $f failed ($(( $(date +%s) - start )) s under $qemu)"
done
exit $failed

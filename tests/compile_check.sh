#!/usr/bin/env bash
# The header compiles warning-free as C99 and as C++ with gcc and clang, in every form a user
# includes it: the implementation in one file plus declarations in another, linked together,
# and KCACHE_STATIC; with -Wcast-qual -Wshadow -Wconversion too; whatever system headers came
# before it under every -std (or one clear error where that cannot work), OFD locks on and off;
# and its MSVC branches with clang in MSVC mode. Prints "ok NAME" / "FAIL NAME: ..." lines
# (tests/kt.h's protocol). Every -O level with g++ and clang++, the compile-out switches
# (KCACHE_NO_*) and the constructor check: tests/compile_matrix.sh.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
warn="-Wall -Wextra -Wpedantic -Werror"
cat >"$tmp/impl.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
int use_decls(void);
int main(void) {
    kcache_key k;
    if (kcache_key_init(&k, "unit") != KCACHE_OK) return 1;
    kcache_key_free(&k);
    return use_decls();
}
C
cat >"$tmp/decl.c" <<'C'
#include "kcache.h"
int use_decls(void) { return kcache_strerror(KCACHE_OK)[0] == 'o' ? 0 : 1; }
C
cat >"$tmp/static.c" <<'C'
#define KCACHE_STATIC
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
int main(void) { kcache_config c; kcache_config_init(&c); return c.enable ? 0 : 1; }
C
check() { # name, compiler, language flags
    local name=$1 cc=$2 lang=$3 out
    if ! command -v "$cc" >/dev/null; then echo "FAIL $name: $cc not installed"; return; fi
    if out=$($cc $lang $warn -I"$root" -o "$tmp/$name" "$tmp/impl.c" "$tmp/decl.c" -lpthread 2>&1) && "$tmp/$name" &&
       out=$($cc $lang $warn -I"$root" -o "$tmp/$name-static" "$tmp/static.c" -lpthread 2>&1) && "$tmp/$name-static"; then
        echo "ok $name"
    else
        echo "FAIL $name: $(echo "$out" | head -5 | tr '\n' ' ')"
    fi
}
check_remote() { # name, compiler, language flags: the remote tier's optional parts (Redis, zstd, HMAC, TLS)
    local name=$1 cc=$2 lang=$3 out
    if out=$($cc $lang $warn -DKCACHE_REDIS -DKCACHE_ZSTD -DKCACHE_HMAC_OPENSSL -DKCACHE_TLS_OPENSSL -I"$root" -o "$tmp/$name" "$tmp/impl.c" "$tmp/decl.c" \
             -lhiredis -lzstd -lssl -lcrypto -lpthread 2>&1) && "$tmp/$name"; then
        echo "ok $name"
    else
        echo "FAIL $name: $(echo "$out" | head -5 | tr '\n' ' ')"
    fi
}
check_cl() { # name, compiler, language flags: the OpenCL part too
    local name=$1 cc=$2 lang=$3 out
    if out=$($cc $lang $warn -DKCACHE_OPENCL -I"$root" -o "$tmp/$name" "$tmp/impl.c" "$tmp/decl.c" -lOpenCL -lpthread 2>&1) && "$tmp/$name"; then
        echo "ok $name"
    else
        echo "FAIL $name: $(echo "$out" | head -5 | tr '\n' ' ')"
    fi
}
check gcc-c99 gcc "-std=c99"
check clang-c99 clang "-std=c99"
check gcc-c11-O3 gcc "-std=c11 -O3"
check gxx-cxx11 g++ "-x c++ -std=c++11"
check clangxx-cxx17 clang++ "-x c++ -std=c++17"
check_cl opencl-gcc-c99 gcc "-std=c99"
check_cl opencl-clang-c99 clang "-std=c99"
check_cl opencl-gxx-cxx11 g++ "-x c++ -std=c++11"
check_cl opencl-clangxx-cxx17 clang++ "-x c++ -std=c++17"
check_remote remote-gcc-c99 gcc "-std=c99"
check_remote remote-clang-c99 clang "-std=c99"
check_remote remote-gxx-cxx11 g++ "-x c++ -std=c++11"
check_remote remote-clangxx-cxx17 clang++ "-x c++ -std=c++17"

# ---- warnings vendors turn on: -Wcast-qual -Wshadow -Wconversion, C and C++, OpenCL part too ----
strict="-Wcast-qual -Wshadow -Wconversion -Wsign-conversion"
check_strict() { # name, compiler, language flags
    local name=$1 cc=$2 lang=$3 out
    if out=$($cc $lang $warn $strict -DKCACHE_OPENCL -I"$root" -c -o "$tmp/$name.o" "$tmp/impl.c" 2>&1); then
        echo "ok $name"
    else
        echo "FAIL $name: $(echo "$out" | grep -m3 -E 'error|warning' | tr '\n' ' ')"
    fi
}
check_strict strict-gcc-c99 gcc "-std=c99"
check_strict strict-clang-c99 clang "-std=c99"
check_strict strict-gxx-cxx17 g++ "-x c++ -std=c++17"
check_strict strict-clangxx-cxx20 clang++ "-x c++ -std=c++20"

# ---- the implementation whatever was included before it, under every -std, OFD locks on and off ----
# A system header before kcache.h in the implementation file (a unity build; nvrtc.h pulls in
# <stdlib.h>) fixes the feature macros before kcache.h can. Then kcache.h must work with what that
# left visible, or stop the build with one error that names kcache and says how to include it:
#   - nothing before it, any -std; or a GNU -std / C++ whatever came before: it compiles (-Werror)
#   - a strict -std=c99/c11 with a system header first: exactly one error, naming kcache and include
# (the runtime side: tests/compile_more.sh runs two handles of one store built each way).
include_case() { # name, compiler, flags, expect (ok|error), lines before the implementation
    local name=$1 cc=$2 flags=$3 expect=$4 pre=$5 out rc n
    printf '%b\n#define KCACHE_IMPLEMENTATION\n#include "kcache.h"\nint main(void) { return kcache_version()[0] == 0; }\n' "$pre" >"$tmp/inc-$name.c"
    out=$($cc $flags $warn -I"$root" -fsyntax-only "$tmp/inc-$name.c" 2>&1)
    rc=$?
    n=$(echo "$out" | grep -c 'error:')
    if [ "$expect" = ok ]; then
        if [ $rc -eq 0 ]; then echo "ok include/$name"; else echo "FAIL include/$name: does not compile: $(echo "$out" | grep -m3 -E 'error|warning' | tr '\n' ' ')"; fi
    elif [ $rc -ne 0 ] && [ "$n" -eq 1 ] && echo "$out" | grep 'error:' | grep -q 'kcache' && echo "$out" | grep 'error:' | grep -q 'include'; then
        echo "ok include/$name"
    else
        echo "FAIL include/$name: want one error naming kcache and the include, got rc $rc and $n: $(echo "$out" | grep -m3 'error' | tr '\n' ' ')"
    fi
}
for cc in gcc clang; do
    for std in c99 c11 gnu99 gnu11; do
        for lock in ofd noofd; do
            lf=""; [ $lock = noofd ] && lf="-DKCACHE_TEST_NO_OFD"
            strict_std=0; case $std in c*) strict_std=1 ;; esac
            include_case "$cc-$std-$lock-first" "$cc" "-std=$std $lf" ok ""
            e=ok; [ $strict_std = 1 ] && e=error
            include_case "$cc-$std-$lock-stdio" "$cc" "-std=$std $lf" $e "#include <stdio.h>"
            include_case "$cc-$std-$lock-posix" "$cc" "-std=$std $lf" $e "#include <pthread.h>\n#include <unistd.h>\n#include <fcntl.h>\n#include <time.h>"
            include_case "$cc-$std-$lock-posix2008" "$cc" "-std=$std -D_POSIX_C_SOURCE=200809L $lf" ok "#include <stdlib.h>"
        done
    done
done
for cxx in g++ clang++; do
    for std in c++11 c++14 c++17 c++20; do
        include_case "$cxx-$std-first" "$cxx" "-x c++ -std=$std" ok ""
        include_case "$cxx-$std-cstdio" "$cxx" "-x c++ -std=$std" ok "#include <cstdio>\n#include <cstdlib>"
    done
done
# the check this project's tooling runs before a session ends, as it is written there
for std in c11 gnu11; do
    printf '#include <stdio.h>\n#define KCACHE_IMPLEMENTATION\n#include "kcache.h"\nint main(void){return 0;}\n' >"$tmp/hook.c"
    if out=$(cc -std=$std -I"$root" -c -o "$tmp/hook.o" "$tmp/hook.c" 2>&1) ||
       { [ "$(echo "$out" | grep -c 'error:')" -eq 1 ] && echo "$out" | grep 'error:' | grep -q 'kcache.*include\|include.*kcache'; }; then
        echo "ok include/hook-$std"
    else
        echo "FAIL include/hook-$std: $(echo "$out" | grep -m3 error | tr '\n' ' ')"
    fi
done

# ---- the companions (kcache_vk.h, kcache_redis.h) beside kcache.h: a program built the 0.4 way
# (-DKCACHE_VULKAN / -DKCACHE_REDIS and kcache.h alone) builds and runs; the new way (the companion
# included after kcache.h) too; kcache.h copied alone elsewhere stops with one #error naming the
# missing file; and (issue 37) the Vulkan part after a system header under -std=gnu11 ----
cat >"$tmp/vk-decl.c" <<'C'
#include "kcache.h"
int use_decls(void) { return kcache_vk_key(NULL, NULL) == KCACHE_EINVAL ? 0 : 1; }
C
cat >"$tmp/vk-new.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kcache_vk.h"
int main(void) { return kcache_vk_key(NULL, NULL) == KCACHE_EINVAL ? 0 : 1; }
C
companion_case() { # name, compiler, flags, files, libraries
    local name=$1 cc=$2 flags=$3 files=$4 libs=$5 out
    if out=$($cc $flags $warn -I"$root" -o "$tmp/$name" $files $libs -lpthread 2>&1) && "$tmp/$name"; then
        echo "ok companion/$name"
    else
        echo "FAIL companion/$name: $(echo "$out" | grep -m3 -E 'error|warning' | tr '\n' ' ')"
    fi
}
companion_missing() { # name, switch, the companion's file name
    local name=$1 sw=$2 file=$3 out n
    mkdir -p "$tmp/alone" && cp "$root/kcache.h" "$tmp/alone/"
    out=$(cc -std=c99 $sw -I"$tmp/alone" -fsyntax-only "$tmp/impl.c" 2>&1)
    n=$(echo "$out" | grep -c 'error:')
    if [ "$n" -eq 1 ] && echo "$out" | grep 'error:' | grep -q "$file"; then
        echo "ok companion/$name"
    else
        echo "FAIL companion/$name: want one error naming $file, got $n: $(echo "$out" | grep -m3 error | tr '\n' ' ')"
    fi
}
if [ -f /usr/include/vulkan/vulkan.h ]; then
    companion_case vk-04-gcc-c99 gcc "-std=c99 -Wpedantic -DKCACHE_VULKAN" "$tmp/impl.c $tmp/vk-decl.c" -lvulkan
    companion_case vk-04-gxx-cxx11 g++ "-x c++ -std=c++11 -Wpedantic -DKCACHE_VULKAN" "$tmp/impl.c $tmp/vk-decl.c" -lvulkan
    companion_case vk-new-clang-c99 clang "-std=c99 -Wpedantic" "$tmp/vk-new.c" -lvulkan
    companion_case vk-new-clangxx-cxx17 clang++ "-x c++ -std=c++17 -Wpedantic" "$tmp/vk-new.c" -lvulkan
    printf '#include <stdint.h>\n#define KCACHE_IMPLEMENTATION\n#define KCACHE_VULKAN\n#include "kcache.h"\nint main(void) { return 0; }\n' >"$tmp/vk-gnu.c"
    companion_case vk-gnu11-stdint-first gcc "-std=gnu11" "$tmp/vk-gnu.c" -lvulkan
else
    echo "FAIL companion/vk: <vulkan/vulkan.h> missing (Debian: libvulkan-dev)"
fi
companion_missing vk-missing -DKCACHE_VULKAN kcache_vk.h
cat >"$tmp/redis-new.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include "kcache_redis.h"
#include "kcache.h"
int main(void) { /* KCACHE_REMOTE alone reaches the backend: a port nobody listens on is an error, not "built without" */
    kcache_config cfg;
    kcache *kc;
    char why[512];
    int reached;
    kcache_config_defaults(&cfg);
    cfg.persistent = 0;
    cfg.remote = "redis://127.0.0.1:1";
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return 1;
    reached = kcache_remote_in_use(kc, why, sizeof why) == 1;
    kcache_close(kc);
    return reached ? 0 : 1;
}
C
cat >"$tmp/redis-late.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kcache_redis.h"
int main(void) { return 0; }
C
rlibs="-lhiredis -lzstd -lssl -lcrypto"
rdefs="-DKCACHE_ZSTD -DKCACHE_HMAC_OPENSSL -DKCACHE_TLS_OPENSSL"
companion_case redis-new-gcc-c99 gcc "-std=c99 -Wpedantic $rdefs" "$tmp/redis-new.c" "$rlibs"
companion_case redis-new-gxx-cxx11 g++ "-x c++ -std=c++11 -Wpedantic $rdefs" "$tmp/redis-new.c" "$rlibs"
companion_case redis-new-plain-clang-c99 clang "-std=c99 -Wpedantic" "$tmp/redis-new.c" -lhiredis
companion_case redis-04-gnu11-stdio-first gcc "-std=gnu11 -DKCACHE_REDIS $rdefs -include stdio.h" "$tmp/impl.c $tmp/decl.c" "$rlibs"
out=$(cc -std=c99 -I"$root" -fsyntax-only "$tmp/redis-late.c" 2>&1)
if [ "$(echo "$out" | grep -c 'error:')" -eq 1 ] && echo "$out" | grep 'error:' | grep -q 'kcache_redis.h.*KCACHE_REDIS'; then
    echo "ok companion/redis-too-late"
else
    echo "FAIL companion/redis-too-late: want one error saying how to include kcache_redis.h: $(echo "$out" | grep -m3 error | tr '\n' ' ')"
fi
companion_missing redis-missing -DKCACHE_REDIS kcache_redis.h

# ---- MSVC: the _MSC_VER branches (Interlocked atomics, intrinsics) compiled here with clang in MSVC
# mode against the mingw-w64 headers (no MSVC on this machine; -fsyntax-only: there is no MSVC C
# runtime to link). -fgnuc-version and __declspec as a macro let the mingw headers take their GCC
# paths; kcache.h still takes its _MSC_VER ones (checked in the preprocessed text). 32-bit x86 is
# not covered (no i686 mingw headers here). ----
msvc_case() { # name, target, language flags
    local name=$1 target=$2 lang=$3 out
    local flags="--target=$target -fms-compatibility -fms-extensions -fgnuc-version=4.2.1 -D__declspec(x)=__declspec(x) -isystem $mingw"
    if ! out=$(clang $flags $lang $warn -I"$root" -fsyntax-only "$tmp/impl.c" 2>&1); then
        echo "FAIL msvc/$name: $(echo "$out" | grep -m3 -E 'error|warning' | tr '\n' ' ')"
    elif ! clang $flags $lang -I"$root" -E "$tmp/impl.c" 2>/dev/null | grep -q '_InterlockedCompareExchange64((volatile'; then
        echo "FAIL msvc/$name: the _MSC_VER atomics were not the ones compiled"
    else
        echo "ok msvc/$name"
    fi
}
mingw=/usr/x86_64-w64-mingw32/include
if ! command -v clang >/dev/null || [ ! -d "$mingw" ]; then
    echo "FAIL msvc: needs clang and the mingw-w64 headers ($mingw; Debian: mingw-w64)"
else
    msvc_case x64-c x86_64-pc-windows-msvc "-x c -std=c11"
    msvc_case x64-cxx x86_64-pc-windows-msvc "-x c++ -std=c++17"
    msvc_case arm64-c aarch64-pc-windows-msvc "-x c -std=c11"
fi

# ---- the OpenCL part under -std=c99 -D_POSIX_C_SOURCE=200809L after a system header: no XSI
# realpath there, so the #include scanner makes a found header's path absolute by itself; a key
# made there names the same file, "sub/../h.h" from the working directory, as realpath would ----
mkdir -p "$tmp/clinc/sub"
echo '#define ADD 1' >"$tmp/clinc/h.h"
cat >"$tmp/clinc/key.c" <<'C'
#include <stdint.h>
#define KCACHE_IMPLEMENTATION
#define KCACHE_OPENCL
#include "kcache.h"
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    const char *src = "#include \"sub/../h.h\"\nkernel void k(global float *y) { y[0] = ADD; }\n";
    char want[4096], name[64];
    cl_platform_id plat;
    cl_device_id dev;
    cl_uint n = 0, i;
    kcache_key k;
    int found = 0;
    if (clGetPlatformIDs(1, &plat, &n) != CL_SUCCESS || n == 0 || clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
        puts("no OpenCL device");
        return 1;
    }
    if (!getcwd(want, sizeof want - 8)) return 1;
    strcat(want, "/h.h");
    if (kcache_cl_key(NULL, &k, dev, "k", 1, &src, NULL, "") != KCACHE_OK) { puts("kcache_cl_key failed"); return 1; }
    for (i = 0; i < k.count; i++) {
        const kcache_key_field *f = kcache_key_field_at(&k, i);
        kcache_hash128 h = kcache_hash(want, strlen(want));
        snprintf(name, sizeof name, "%s", f->name);
        if (strcmp(name, "cl.include.0") == 0) found = f->digest.lo == h.lo && f->digest.hi == h.hi ? 1 : -1;
    }
    kcache_key_free(&k);
    if (found != 1) printf("cl.include.0 %s %s\n", found ? "is not" : "missing, want", want);
    return found == 1 ? 0 : 1;
}
C
if ! out=$(gcc -std=c99 -D_POSIX_C_SOURCE=200809L $warn -I"$root" -o "$tmp/clinc/key" "$tmp/clinc/key.c" -lOpenCL -lpthread 2>&1); then
    echo "FAIL opencl-posix2008-include-path: does not build: $(echo "$out" | grep -m3 -E 'error|warning' | tr '\n' ' ')"
elif out=$(cd "$tmp/clinc" && KCACHE_ENABLE=0 ./key 2>&1); then
    echo "ok opencl-posix2008-include-path"
else
    echo "FAIL opencl-posix2008-include-path: $out"
fi

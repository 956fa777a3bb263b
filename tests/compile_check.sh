#!/usr/bin/env bash
# The header compiles warning-free as C99 and as C++ with gcc and clang, in every form a user
# includes it: the implementation in one file plus declarations in another, linked together,
# and KCACHE_STATIC. Prints "ok NAME" / "FAIL NAME: ..." lines (tests/kt.h's protocol).
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
check_remote() { # name, compiler, language flags: the remote tier's optional parts (Redis, zstd, HMAC)
    local name=$1 cc=$2 lang=$3 out
    if out=$($cc $lang $warn -DKCACHE_REDIS -DKCACHE_ZSTD -DKCACHE_HMAC_OPENSSL -I"$root" -o "$tmp/$name" "$tmp/impl.c" "$tmp/decl.c" \
             -lhiredis -lzstd -lcrypto -lpthread 2>&1) && "$tmp/$name"; then
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

#!/usr/bin/env bash
# The implementation file an engine writes (it only defines KCACHE_IMPLEMENTATION and includes
# kcache.h) under the warnings engines build with, -Werror:
#   - gcc, clang (C99) and g++, clang++ (C++17) at -O0 -O1 -O2 -O3 -Os -Og, with -Wall -Wextra
#     -Wshadow -Wconversion -Wcast-qual (-Wpedantic for C);
#   - every combination of the compile-out switches (KCACHE_NO_*): all 64 with clang's full
#     front-end checks (unused functions included), each switch alone and all of them with gcc -O2,
#     all of them with g++, clang and clang++ -O2 too;
#   - no libgcc CPU-model constructor pulled in (__builtin_cpu_supports: __cpu_indicator_init,
#     __cpu_model), and _GNU_SOURCE left as the including file had it.
#   - include order: each part (core, OpenCL, Vulkan, Redis) after <stdint.h> or its own library's
#     header, in gnu11/gnu17, in c99/c11 with -D_POSIX_C_SOURCE=200809L, and as C++17.
# The builds run in parallel (one job per CPU). Prints "ok NAME" / "FAIL NAME: ..." lines
# (tests/kt.h's protocol). tests/compile_check.sh covers the other ways of including kcache.h.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jobs=$(nproc 2>/dev/null || echo 2)
printf '#define KCACHE_IMPLEMENTATION\n#include "kcache.h"\n' >"$tmp/impl.c"
cp "$tmp/impl.c" "$tmp/impl.cpp"
switches="KCACHE_NO_REMOTE KCACHE_NO_LAYERS KCACHE_NO_PUB KCACHE_NO_CPU_NAMES KCACHE_NO_EXPLAIN KCACHE_NO_ENV"
strict="-Wall -Wextra -Werror -Wshadow -Wconversion -Wcast-qual"

# one line per build: NAME<TAB>command (run by build() below)
{
    for o in O0 O1 O2 O3 Os Og; do
        printf 'gcc-%s\tgcc -std=c99 -%s %s -Wpedantic -c impl.c -o gcc-%s.o\n' $o $o "$strict" $o
        printf 'clang-%s\tclang -std=c99 -%s %s -Wpedantic -c impl.c -o clang-%s.o\n' $o $o "$strict" $o
        printf 'gxx-%s\tg++ -std=c++17 -%s %s -c impl.cpp -o gxx-%s.o\n' $o $o "$strict" $o
        printf 'clangxx-%s\tclang++ -std=c++17 -%s %s -c impl.cpp -o clangxx-%s.o\n' $o $o "$strict" $o
    done
    all="-DKCACHE_NO_TIDY" # (independent of the others: in the all-switch builds and alone, not in the combinations)
    for s in $switches; do all="$all -D$s"; done
    printf 'all-switches-gcc-O2\tgcc -std=c99 -O2 %s -Wpedantic %s -c impl.c -o all-gcc.o\n' "$strict" "$all"
    printf 'all-switches-clang-O2\tclang -std=c99 -O2 %s -Wpedantic %s -c impl.c -o all-clang.o\n' "$strict" "$all"
    printf 'all-switches-gxx-O2\tg++ -std=c++17 -O2 %s %s -c impl.cpp -o all-gxx.o\n' "$strict" "$all"
    printf 'all-switches-clangxx-O2\tclang++ -std=c++17 -O2 %s %s -c impl.cpp -o all-clangxx.o\n' "$strict" "$all"
    # each switch beside every optional library part (the built-in Redis tier and its TLS, zstd,
    # the MACs): the switched-out parts' hooks into those parts must still compile
    optional="-DKCACHE_REDIS -DKCACHE_ZSTD -DKCACHE_HMAC_OPENSSL -DKCACHE_TLS_OPENSSL"
    for s in $switches KCACHE_NO_TIDY; do
        printf '%s-with-redis\tclang -std=c99 -fsyntax-only %s -Wpedantic %s -D%s impl.c\n' "$s" "$strict" "$optional" "$s"
    done
    for s in $switches KCACHE_NO_TIDY; do
        printf '%s-gcc-O2\tgcc -std=c99 -O2 %s -Wpedantic -D%s -c impl.c -o %s.o\n' "$s" "$strict" "$s" "$s"
    done
    set -- $switches
    n=$#
    for ((mask = 0; mask < (1 << n); mask++)); do
        defs="" name="combo"
        for ((i = 0; i < n; i++)); do
            if (((mask >> i) & 1)); then
                eval "s=\${$((i + 1))}"
                defs="$defs -D$s"
                name="$name-${s#KCACHE_NO_}"
            fi
        done
        printf '%s\tclang -std=c99 -fsyntax-only %s -Wpedantic %s impl.c\n' "$name" "$strict" "$defs"
    done
    # include order (issue 37): every part with a system header (or its own library's header) before
    # kcache.h, warning-free: C in GNU modes, C in strict modes with the feature macro the README
    # names (-D_POSIX_C_SOURCE=200809L), and C++
    for part in core:none opencl:CL/cl.h vulkan:vulkan/vulkan.h redis:hiredis/hiredis.h; do
        pn=${part%%:*} ph=${part#*:}
        for pre in stdint "$ph"; do
            [ "$pre" = none ] && continue
            f="inc-$pn-${pre//\//_}"
            def=""
            [ "$pn" != core ] && def="#define KCACHE_$(echo "$pn" | tr a-z A-Z)"
            [ "$pre" = stdint ] && inc="#include <stdint.h>" || inc="#include <$pre>"
            # (<CL/cl.h> says, as a note, which OpenCL version it defaults to when none is named)
            [ "$pn" = opencl ] && inc="#define CL_TARGET_OPENCL_VERSION 120\n$inc"
            printf '%b\n#define KCACHE_IMPLEMENTATION\n%s\n#include "kcache.h"\nint main(void) { return kcache_version()[0] == 0; }\n' \
                "$inc" "$def" >"$tmp/$f.c"
            cp "$tmp/$f.c" "$tmp/$f.cpp"
            for m in "gcc:-std=gnu11" "gcc:-std=gnu17" "gcc:-std=c99 -D_POSIX_C_SOURCE=200809L" "gcc:-std=c11 -D_POSIX_C_SOURCE=200809L" \
                     "clang:-std=gnu11" "clang:-std=c11 -D_POSIX_C_SOURCE=200809L" "g++:-std=c++17" "clang++:-std=c++17"; do
                cc=${m%%:*} fl=${m#*:} src="$f.c"
                case $cc in *++) src="$f.cpp" ;; esac
                name="include-order/$pn/${pre//\//_}/$cc${fl// /}"
                printf '%s\t%s %s -Wall -Wextra -Werror -fsyntax-only %s\n' "$name" "$cc" "$fl" "$src"
            done
        done
    done
} >"$tmp/builds"

build() { # NAME<TAB>command: ok/FAIL line
    local name=${1%%$'\t'*} cmd=${1#*$'\t'} out
    if out=$(cd "$tmp" && $cmd -I"$root" 2>&1) && [ -z "$out" ]; then
        echo "ok $name"
    else
        echo "FAIL $name: $(echo "$out" | grep -m3 -E 'error|warning' | tr '\n' ' ')"
    fi
}
export -f build
export tmp root
tr '\n' '\0' <"$tmp/builds" | xargs -0 -P "$jobs" -I{} bash -c 'build "$1"' _ {} | sort

# no CPU-model constructor of libgcc's (it would run before main in every program using kcache)
for o in gcc-O2 clang-O2 gxx-O2 clangxx-O2 gcc-O3; do
    if [ ! -f "$tmp/$o.o" ]; then echo "FAIL no-cpu-constructor/$o: not built"; continue; fi
    refs=$(nm "$tmp/$o.o" | grep -E '__cpu_indicator_init|__cpu_model|__cpu_features' | tr '\n' ' ')
    if [ -z "$refs" ]; then echo "ok no-cpu-constructor/$o"; else echo "FAIL no-cpu-constructor/$o: $refs"; fi
done

# _GNU_SOURCE: kcache's own definition ends with the implementation; the including file's stays
gnu_case() { # name, what comes before, the check after, flags
    local out
    printf '%b\n#define KCACHE_IMPLEMENTATION\n#include "kcache.h"\n%b\nint main(void) { return 0; }\n' "$2" "$3" >"$tmp/gnu-$1.c"
    if out=$(cc -std=c99 $4 -Wall -Werror -I"$root" -fsyntax-only "$tmp/gnu-$1.c" 2>&1); then echo "ok gnu-source/$1"
    else echo "FAIL gnu-source/$1: $(echo "$out" | grep -m2 error | tr '\n' ' ')"; fi
}
gnu_case kcache-defined "" "#ifdef _GNU_SOURCE\n#error _GNU_SOURCE is still defined after kcache.h\n#endif" ""
gnu_case user-defined "#define _GNU_SOURCE" "#ifndef _GNU_SOURCE\n#error kcache.h undefined the _GNU_SOURCE of the including file\n#endif" ""
gnu_case command-line "" "#ifndef _GNU_SOURCE\n#error kcache.h undefined -D_GNU_SOURCE\n#endif" "-D_GNU_SOURCE"

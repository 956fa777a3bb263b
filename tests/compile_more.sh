#!/usr/bin/env bash
# tests/compile_more.sh: the compiler matrix beyond tests/compile_check.sh.
#   gcc-c99-pedantic-errors, clang-c99-pedantic-errors
#       the header in all three forms (implementation + declarations in two files, KCACHE_STATIC)
#       with -std=c99 -pedantic-errors -Wall -Wextra -Werror, linked and run.
#   m32/...  a 32-bit x86 build (gcc -m32) of test_hash, test_key, test_lru and test_index, run.
#       Needs libc6-dev-i386 and lib32gcc-12-dev. Debian's gcc-multilib, which also provides the
#       /usr/include/asm link, conflicts with the cross compilers (scripts/cross.sh), so when
#       <asm/...> is not found for -m32 the x86-64 kernel headers are reached through a private
#       link (/usr/include/x86_64-linux-gnu/asm, as gcc-multilib's link does). Without a 32-bit
#       toolchain this part is skipped, said on stderr, and prints no ok line.
#   musl/...  static musl builds (musl-gcc -static, Debian: musl-tools) of test_key and test_index,
#       run. musl-gcc has no Linux UAPI headers; kcache.h includes <linux/openat2.h>, so:
#       musl-bare        musl-gcc alone, as a user without kernel headers builds (Debian musl-tools)
#       musl/test_*      with the kernel headers reachable (-idirafter a link farm: linux, asm,
#                        asm-generic), as on Alpine with linux-headers installed
#       Without musl-gcc this part is skipped, said on stderr, and prints no ok line.
#   stack/CC-OPT[-opencl]  no function of kcache.h over 4 KiB of stack (-fstack-usage), gcc and
#       clang, -O0 and -O2, with and without the OpenCL part.
#   two-handles/...  two handles of one store in one process exclude each other (one build per key,
#       exact accounting) however the implementation file was built: kcache.h first, <stdio.h>
#       first under -std=gnu11, -std=c11 -D_POSIX_C_SOURCE=200809L; OFD locks on and off.
# Prints "ok NAME" / "FAIL NAME: ..." lines (tests/kt.h's protocol).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
warn="-Wall -Wextra -Werror"
cat >"$tmp/impl.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
int use_decls(void);
int main(void) {
    kcache_key k;
    if (kcache_key_init(&k, "unit") != KCACHE_OK) return 1;
    if (kcache_key_u64(&k, "n", 1) != KCACHE_OK) return 1;
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

# ---- -std=c99 -pedantic-errors ----
pedantic() { # name, compiler
    local name=$1 cc=$2 out
    if ! command -v "$cc" >/dev/null; then echo "FAIL $name: $cc not installed"; return; fi
    if out=$($cc -std=c99 -pedantic-errors $warn -I"$root" -o "$tmp/$name" "$tmp/impl.c" "$tmp/decl.c" -lpthread 2>&1) &&
       "$tmp/$name" &&
       out=$($cc -std=c99 -pedantic-errors $warn -I"$root" -o "$tmp/$name-static" "$tmp/static.c" -lpthread 2>&1) &&
       "$tmp/$name-static"; then
        echo "ok $name"
    else
        echo "FAIL $name: $(echo "$out" | grep -m5 -E 'error|warning' | tr '\n' ' ')"
    fi
}
pedantic gcc-c99-pedantic-errors gcc
pedantic clang-c99-pedantic-errors clang

# run_prefixed LABEL PROGRAM...: runs a kt-protocol program, names prefixed with LABEL/
run_prefixed() {
    local label=$1 rc p f
    shift
    timeout -k 10 "${KT_TIMEOUT:-300}" "$@" >"$tmp/log" 2>&1
    rc=$?
    sed -e "s|^ok |ok $label/|" -e "s|^FAIL |FAIL $label/|" "$tmp/log"
    p=$(grep -c '^ok ' "$tmp/log") f=$(grep -c '^FAIL ' "$tmp/log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $label: exited with status $rc"; fi
    if [ "$rc" -eq 0 ] && [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $label: ran no check"; fi
}

# ---- 32-bit x86 ----
m32="-m32"
probe='#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
int main(void) { return errno; }'
if ! echo "$probe" | gcc $m32 -x c -o "$tmp/probe32" - -lpthread >/dev/null 2>&1 && [ -d /usr/include/x86_64-linux-gnu/asm ]; then
    mkdir -p "$tmp/inc32" && ln -s /usr/include/x86_64-linux-gnu/asm "$tmp/inc32/asm"
    m32="-m32 -idirafter $tmp/inc32"
fi
if ! why=$(echo "$probe" | gcc $m32 -x c -o "$tmp/probe32" - -lpthread 2>&1); then
    echo "skip m32: no 32-bit x86 toolchain (gcc -m32: $(echo "$why" | grep -m1 -E 'error|cannot find')); install libc6-dev-i386 lib32gcc-12-dev" >&2
elif ! "$tmp/probe32" 2>/dev/null && ! command -v qemu-i386-static >/dev/null; then
    echo "skip m32: this kernel does not run 32-bit x86 programs and qemu-i386-static is absent" >&2
else
    runner=()
    "$tmp/probe32" 2>/dev/null || runner=(qemu-i386-static)
    # The store's lock file holds the store lock at byte 0 and build claims at 2^40 + the digest's
    # low 30 bits (kcache.h, ON DISK): that needs a 64-bit off_t in the implementation, which a
    # 32-bit glibc build only has with _FILE_OFFSET_BITS=64 (the same define keeps stat/readdir
    # from failing with EOVERFLOW on 64-bit inode numbers and files over 2 GiB).
    cat >"$tmp/off32.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
int main(void) {
    kcache_hash128 d;
    int bad = 0;
    d.hi = 0;
    for (d.lo = 0; d.lo < ((uint64_t)4 << 30); d.lo += (uint64_t)1 << 29) {
        uint64_t want = ((uint64_t)1 << 40) + (d.lo & ((1u << 30) - 1)), got = (uint64_t)kcache__claim_offset(d);
        if (got != want && !bad++)
            printf("FAIL large_file_offsets: sizeof(off_t) = %u in the implementation: the build claim of a digest with "
                   "lo = 0x%llx is at byte %llu of the lock file, not 2^40 + %llu%s\n", (unsigned)sizeof(off_t),
                   (unsigned long long)d.lo, (unsigned long long)got, (unsigned long long)(want - ((uint64_t)1 << 40)),
                   got == 0 ? " (byte 0 is the store lock)" : "");
    }
    if (!bad) printf("ok large_file_offsets\n");
    return bad != 0;
}
C
    if out=$(gcc $m32 -std=c99 -O2 -Wall -Wextra -Werror -I"$root" -o "$tmp/off32" "$tmp/off32.c" -lpthread 2>&1); then
        run_prefixed m32 "${runner[@]}" "$tmp/off32"
    else
        echo "FAIL m32/large_file_offsets: gcc -m32 failed: $(echo "$out" | grep -m3 -E 'error|warning' | tr '\n' ' ')"
    fi
    for t in test_hash test_key test_lru test_index; do
        # (these tests include system headers before kcache.h: 64-bit off_t is then the build's
        # to ask for, as kcache.h's error says)
        if out=$(gcc $m32 -std=c99 -O2 -D_FILE_OFFSET_BITS=64 -Wall -Wextra -Wpedantic -Werror -I"$root" -I"$root/tests" -o "$tmp/$t-32" \
                 "$root/tests/$t.c" -lpthread 2>&1); then
            run_prefixed "m32/$t" "${runner[@]}" "$tmp/$t-32"
        else
            echo "FAIL m32/$t: gcc -m32 failed: $(echo "$out" | grep -m3 -E 'error|warning' | tr '\n' ' ')"
        fi
    done
fi

# ---- static musl ----
if ! command -v musl-gcc >/dev/null; then
    echo "skip musl: musl-gcc not installed (Debian: musl-tools)" >&2
else
    mflags="-static -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -I$root -I$root/tests"
    if out=$(musl-gcc $mflags -o "$tmp/musl-bare" "$root/tests/test_key.c" -lpthread 2>&1) && "$tmp/musl-bare" >/dev/null 2>&1; then
        echo "ok musl-bare"
    else
        echo "FAIL musl-bare: musl-gcc -static without kernel headers: $(echo "$out" | grep -m2 -E 'error' | tr '\n' ' ')"
    fi
    mkdir -p "$tmp/musl-inc"
    for h in linux asm-generic; do [ -d "/usr/include/$h" ] && ln -s "/usr/include/$h" "$tmp/musl-inc/$h"; done
    a=/usr/include/$(gcc -print-multiarch 2>/dev/null)/asm
    [ -d "$a" ] && ln -s "$a" "$tmp/musl-inc/asm"
    for t in test_key test_index; do
        if out=$(musl-gcc $mflags -idirafter "$tmp/musl-inc" -o "$tmp/$t-musl" "$root/tests/$t.c" -lpthread 2>&1); then
            if readelf -l "$tmp/$t-musl" 2>/dev/null | grep -q INTERP; then
                echo "FAIL musl/$t: musl-gcc -static produced a dynamic executable"
            else
                run_prefixed "musl/$t" "$tmp/$t-musl"
            fi
        else
            echo "FAIL musl/$t: musl-gcc -static failed: $(echo "$out" | grep -m3 -E 'error|warning' | tr '\n' ' ')"
        fi
    done
fi

# ---- stack: no function of kcache.h uses more than 4 KiB of stack ----
# Job systems and fibers run work on 16-64 KiB stacks. -fstack-usage for a file with the
# implementation (and the OpenCL part), gcc and clang, -O0 (debug builds) and -O2; every function
# over 4096 bytes is named. (tests/test_threads.c runs every public call on a 32 KiB stack.)
printf '#define KCACHE_IMPLEMENTATION\n#include "kcache.h"\nint main(void) { return 0; }\n' >"$tmp/su.c"
for cc in gcc clang; do
    for opt in -O0 -O2; do
        for cl in "" -DKCACHE_OPENCL; do
            name="stack/$cc$opt${cl:+-opencl}"
            rm -f "$tmp/su.su"
            if ! out=$(cd "$tmp" && $cc -std=c99 $opt $cl -fstack-usage -I"$root" -c -o su.o su.c 2>&1) || [ ! -s "$tmp/su.su" ]; then
                echo "FAIL $name: $cc -fstack-usage failed: $(echo "$out" | grep -m2 error | tr '\n' ' ')"
                continue
            fi
            big=$(awk -F'\t' '$2 > 4096 { n = split($1, a, ":"); printf "%s (%d bytes) ", a[n], $2 }' "$tmp/su.su")
            top=$(sort -t"$(printf '\t')" -k2,2nr "$tmp/su.su" | head -1 | awk -F'\t' '{ n = split($1, a, ":"); printf "%s %d", a[n], $2 }')
            if [ -n "$big" ]; then echo "FAIL $name: over 4 KiB of stack: $big"; else echo "ok $name (largest: $top bytes)"; fi
        done
    done
done

# ---- two handles of one store in one process, whatever came before kcache.h ----
# The defect this guards: a system header before the implementation turned the OFD locks off, and
# the process-associated locks left did not keep two handles of one process apart (a key built
# twice, the accounting wrong). Built every way: kcache.h first; <stdio.h> first under -std=gnu11;
# under -std=c11 -D_POSIX_C_SOURCE=200809L (no GNU extensions at all); each with OFD locks and with
# them compiled out. 2 handles x 2 threads, 3 rounds of a new key: 3 builds, accounting exact.
cat >"$tmp/two.c" <<'C'
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* nanosleep under -std=c99 */
#endif
#include "kcache.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static long builds;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int slow_build(void *user, void **out, size_t *n) {
    struct timespec ts = {0, 150000000};
    (void)user;
    pthread_mutex_lock(&mu);
    builds++;
    pthread_mutex_unlock(&mu);
    nanosleep(&ts, NULL);
    if ((*out = malloc(64)) == NULL) return 1;
    memset(*out, 'b', 64);
    *n = 64;
    return 0;
}
typedef struct { kcache *kc; unsigned id; int ok; } arg;
static void *caller(void *p) {
    arg *a = (arg *)p;
    kcache_key k;
    const void *d = NULL;
    size_t n = 0;
    kcache_key_init(&k, "two");
    kcache_key_u64(&k, "id", a->id);
    a->ok = kcache_get_or_build(a->kc, &k, slow_build, NULL, &d, &n) == KCACHE_OK && n == 64;
    if (d) kcache_release(a->kc, d);
    kcache_key_free(&k);
    return NULL;
}
int main(int argc, char **argv) {
    kcache_config cfg;
    kcache *kc[2];
    pthread_t th[4];
    arg a[4];
    unsigned round;
    int i, ok = 1;
    kcache_config_defaults(&cfg);
    cfg.dir = argc > 1 ? argv[1] : NULL;
    if (kcache_open(&kc[0], &cfg) != KCACHE_OK || kcache_open(&kc[1], &cfg) != KCACHE_OK || !kcache_dir(kc[0])) {
        printf("FAIL no store\n");
        return 1;
    }
    for (round = 0; round < 3; round++) {
        for (i = 0; i < 4; i++) {
            a[i].kc = kc[i & 1];
            a[i].id = round;
            pthread_create(&th[i], NULL, caller, &a[i]);
        }
        for (i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            ok &= a[i].ok;
        }
    }
    if (!ok || builds != 3 || kcache_verify(kc[0], 0) != KCACHE_OK) {
        printf("FAIL %ld builds for 3 keys (payloads %s)\n", builds, ok ? "right" : "wrong");
        return 1;
    }
    kcache_close(kc[0]);
    kcache_close(kc[1]);
    printf("ok\n");
    return 0;
}
C
printf '#define KCACHE_IMPLEMENTATION\n#include "kcache.h"\n' >"$tmp/two-impl-first.c"
printf '#include <stdio.h>\n#define KCACHE_IMPLEMENTATION\n#include "kcache.h"\n' >"$tmp/two-impl-late.c"
two_case() { # name, flags, implementation file
    local name=$1 flags=$2 impl=$3 out
    rm -rf "$tmp/two-store"
    if ! out=$(gcc $flags -Wall -Wextra -Werror -I"$root" -o "$tmp/two-$name" "$tmp/$impl" "$tmp/two.c" -lpthread 2>&1); then
        echo "FAIL two-handles/$name: does not build: $(echo "$out" | grep -m3 -E 'error|warning' | tr '\n' ' ')"
    elif out=$(timeout 60 "$tmp/two-$name" "$tmp/two-store" 2>&1) && [ "$out" = ok ]; then
        echo "ok two-handles/$name"
    else
        echo "FAIL two-handles/$name: ${out:-no output}"
    fi
}
for lock in ofd noofd; do
    lf=""; [ $lock = noofd ] && lf="-DKCACHE_TEST_NO_OFD"
    two_case "kcache-first-$lock" "-std=c99 $lf" two-impl-first.c
    two_case "stdio-first-gnu11-$lock" "-std=gnu11 $lf" two-impl-late.c
    two_case "posix2008-c11-$lock" "-std=c11 -D_POSIX_C_SOURCE=200809L $lf" two-impl-late.c
done

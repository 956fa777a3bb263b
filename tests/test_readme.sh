#!/usr/bin/env bash
# test_readme.sh - the README's Use snippet compiles as written (C99 with gcc and clang, C++ with
# g++, all at -Werror) and does what it says: run by a driver that supplies compile() and load(),
# the first process compiles, the next one loads from the store, a missing header compiles again.
# Usage: tests/test_readme.sh     Prints "ok NAME" / "FAIL NAME: why" lines.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-readme.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok $1"; }
fail() { echo "FAIL $1: $2"; }

# the first ```c block of the "## Use" section
awk '/^## Use/{use=1} use&&/^```c$/{on=1; next} on&&/^```$/{exit} on{print}' "$root/README.md" >"$tmp/snippet.c"
if grep -q 'KCACHE_IMPLEMENTATION' "$tmp/snippet.c" && grep -q 'kcache_release' "$tmp/snippet.c" &&
   grep -q 'free(binary)' "$tmp/snippet.c"; then ok readme-snippet-found
else fail readme-snippet-found "no Use snippet with get, release and free in README.md ($(wc -l <"$tmp/snippet.c") lines)"; exit 1; fi

cat >"$tmp/driver.c" <<'C'
#include "kcache.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int load_blur(kcache *kc, const char *src);
static int compiled;
void *compile(const char *src, size_t *size) {
    char *b = (char *)malloc(strlen(src) + 8);
    if (!b) return NULL;
    compiled++;
    *size = (size_t)sprintf(b, "bin:%s", src);
    return b;
}
int load(const void *binary, size_t size) {
    return size > 4 && memcmp(binary, "bin:", 4) == 0 ? 0 : 1;
}
int main(void) {
    kcache *kc;
    int rc;
    if (kcache_open(&kc, NULL) != KCACHE_OK) return 2;
    rc = load_blur(kc, "kernel void blur() {}");
    printf("rc=%d compiled=%d\n", rc, compiled);
    kcache_close(kc);
    return 0;
}
C
flags="-Wall -Wextra -Wpedantic -Werror -I$root"
built=1
for cc in gcc clang; do
    if ! command -v $cc >/dev/null; then fail readme-snippet-$cc "no $cc"; built=0; continue; fi
    if $cc -std=c99 $flags -c -o "$tmp/snippet-$cc.o" "$tmp/snippet.c" 2>"$tmp/err"; then ok readme-snippet-compiles-$cc
    else fail readme-snippet-compiles-$cc "$(head -c 600 "$tmp/err" | tr '\n' '|')"; built=0; fi
done
if g++ -std=c++11 $flags -x c++ -fsyntax-only "$tmp/snippet.c" 2>"$tmp/err"; then ok readme-snippet-compiles-c++
else fail readme-snippet-compiles-c++ "$(head -c 600 "$tmp/err" | tr '\n' '|')"; fi
[ $built = 1 ] || exit 1
if ! gcc -std=c99 $flags -o "$tmp/prog" "$tmp/driver.c" "$tmp/snippet-gcc.o" -lpthread 2>"$tmp/err"; then
    fail readme-snippet-links "$(head -c 600 "$tmp/err" | tr '\n' '|')"; exit 1
fi
mkdir -p "$tmp/work"
cd "$tmp/work" || exit 1
echo '#define RADIUS 3' >blur.h
export KCACHE_DIR=$tmp/store
unset KCACHE_ENABLE KCACHE_PERSISTENT KCACHE_DEBUG KCACHE_MAX_SIZE
first=$("$tmp/prog"); second=$("$tmp/prog")
if [ "$first" = "rc=0 compiled=1" ] && [ "$second" = "rc=0 compiled=0" ]; then ok readme-snippet-second-process-loads
else fail readme-snippet-second-process-loads "first '$first', second '$second'"; fi
rm blur.h
third=$("$tmp/prog")
if [ "$third" = "rc=0 compiled=1" ]; then ok readme-snippet-missing-header-compiles
else fail readme-snippet-missing-header-compiles "got '$third'"; fi

#!/usr/bin/env bash
# test_readme.sh - the README's Use program compiles as written (C99 with gcc and clang, C++ with
# g++, all at -Werror) and does what it says when a reader copies it: run twice, from two different
# working directories, the first run compiles and the second loads from the store. And what the
# README says of a relative dependency path: taken against the working directory when the key is
# made; from a directory without the file, the miss says the file cannot be found (not "changed").
# Usage: tests/test_readme.sh     Prints "ok NAME" / "FAIL NAME: why" lines.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-readme.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok $1"; }
fail() { echo "FAIL $1: $2"; }

# the first ```c block of the "## Use" section: a whole program
awk '/^## Use/{use=1} use&&/^```c$/{on=1; next} on&&/^```$/{exit} on{print}' "$root/README.md" >"$tmp/blur.c"
if grep -q 'KCACHE_IMPLEMENTATION' "$tmp/blur.c" && grep -q 'int main' "$tmp/blur.c" && grep -q 'kcache_open' "$tmp/blur.c" &&
   grep -q 'kcache_close' "$tmp/blur.c" && grep -q 'kcache_release' "$tmp/blur.c"; then ok readme-program-found
else fail readme-program-found "no whole program (main, kcache_open, get, release, kcache_close) in README.md's Use ($(wc -l <"$tmp/blur.c") lines)"; exit 1; fi
if grep -q 'kcache_key_file' "$tmp/blur.c"; then
    fail readme-program-needs-no-file "the Use program keys on a file a reader may not have: $(grep -o 'kcache_key_file([^)]*)' "$tmp/blur.c")"
else ok readme-program-needs-no-file; fi

flags="-Wall -Wextra -Wpedantic -Werror -I$root"
built=0
for cc in gcc clang; do
    if ! command -v $cc >/dev/null; then echo "skip readme-program-compiles-$cc: no $cc"; continue; fi
    if $cc -std=c99 $flags -o "$tmp/blur-$cc" "$tmp/blur.c" -lpthread 2>"$tmp/err"; then ok readme-program-compiles-$cc; built=1
    else fail readme-program-compiles-$cc "$(head -c 600 "$tmp/err" | tr '\n' '|')"; fi
done
if g++ -std=c++11 $flags -x c++ -o "$tmp/blur-cxx" "$tmp/blur.c" -lpthread 2>"$tmp/err"; then ok readme-program-compiles-c++
else fail readme-program-compiles-c++ "$(head -c 600 "$tmp/err" | tr '\n' '|')"; fi
[ $built = 1 ] || exit 1
prog=$tmp/blur-gcc; [ -x "$prog" ] || prog=$tmp/blur-clang

unset KCACHE_ENABLE KCACHE_PERSISTENT KCACHE_DEBUG KCACHE_MAX_SIZE KCACHE_LAYERS KCACHE_REMOTE
export KCACHE_DIR=$tmp/store
mkdir -p "$tmp/one" "$tmp/two"
first=$(cd "$tmp/one" && "$prog"); rc1=$?
second=$(cd "$tmp/two" && "$prog"); rc2=$?
case "$first" in
"blur: compiling (miss: cold: unit \"blur\" never stored in $tmp/store)") [ $rc1 = 0 ] && ok readme-program-first-run-compiles ||
    fail readme-program-first-run-compiles "exit $rc1";;
*) fail readme-program-first-run-compiles "got '$first' (exit $rc1)";;
esac
case "$second" in
"blur: loaded from the cache ("*" bytes)") [ $rc2 = 0 ] && ok readme-program-second-run-hits-from-another-directory ||
    fail readme-program-second-run-hits-from-another-directory "exit $rc2";;
*) fail readme-program-second-run-hits-from-another-directory "got '$second' (exit $rc2)";;
esac
# what the README prints for it, byte count included
want=$(awk '/^Run twice, it prints/{on=1; next} on&&/loaded from the cache/{sub(/^ +/, ""); print; exit}' "$root/README.md")
if [ "$second" = "$want" ]; then ok readme-program-output-as-documented
else fail readme-program-output-as-documented "README shows '$want', the program printed '$second'"; fi
third=$(cd "$tmp/one" && "$tmp/blur-cxx" 2>&1)
case "$third" in "blur: loaded from the cache ("*) ok readme-program-c++-build-hits;; *) fail readme-program-c++-build-hits "got '$third'";; esac

# a relative dependency, as the README's Dependencies section describes it
cat >"$tmp/dep.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include <stdio.h>
int main(void) {
    kcache *kc;
    kcache_key key;
    const void *p;
    size_t n;
    char why[1024];
    if (kcache_open(&kc, NULL) != KCACHE_OK) return 2;
    kcache_key_init(&key, "blur");
    kcache_key_str(&key, "source", "kernel void blur() {}");
    kcache_key_file(&key, "header", "blur.h");
    if (kcache_get(kc, &key, &p, &n) == KCACHE_OK) { printf("hit\n"); kcache_release(kc, p); }
    else { kcache_explain(kc, &key, why, sizeof why); printf("%s\n", why); kcache_put(kc, &key, "bin", 3); }
    kcache_key_free(&key);
    kcache_close(kc);
    return 0;
}
C
if gcc -std=c99 $flags -o "$tmp/dep" "$tmp/dep.c" -lpthread 2>"$tmp/err"; then
    echo '#define RADIUS 3' >"$tmp/one/blur.h"
    a=$(cd "$tmp/one" && "$tmp/dep"); b=$(cd "$tmp/one" && "$tmp/dep")
    if [ "$b" = hit ]; then ok readme-relative-dependency-hits-in-its-directory
    else fail readme-relative-dependency-hits-in-its-directory "first '$a', second '$b'"; fi
    c=$(cd "$tmp/two" && KCACHE_DEBUG=1 "$tmp/dep" 2>"$tmp/log")
    case "$c" in
    *"dependency changed"*) fail readme-missing-dependency-not-called-changed "a file that does not exist is called changed: '$c'";;
    *"blur.h"*"does not exist"*"working directory"*) ok readme-missing-dependency-not-called-changed;;
    *) fail readme-missing-dependency-not-called-changed "got '$c'";;
    esac
    if grep -q 'blur.h.*does not exist' "$tmp/log" && ! grep -q 'dependency changed' "$tmp/log"; then ok readme-missing-dependency-logged-as-missing
    else fail readme-missing-dependency-logged-as-missing "$(tr '\n' '|' <"$tmp/log" | head -c 600)"; fi
else fail readme-dependency-program-compiles "$(head -c 600 "$tmp/err" | tr '\n' '|')"; fi

# `make test` makes build/venv-numba before the tests that look for it (test_host said "no
# build/venv-numba/bin/python" three times on a first run, before test_inspect made it)
plan=$(cd "$root" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n test 2>/dev/null)
venv_at=$(grep -n -m1 'scripts/numba-venv.sh' <<<"$plan" | cut -d: -f1)
run_at=$(grep -n -m1 'tests/run.sh' <<<"$plan" | cut -d: -f1)
order="venv at line ${venv_at:-none}, tests/run.sh at ${run_at:-none}"
if [ -n "$venv_at" ] && [ -n "$run_at" ] && [ "$venv_at" -lt "$run_at" ]; then ok make-test-makes-venv-before-the-tests
else fail make-test-makes-venv-before-the-tests "make -n test runs, in order: '$order'"; fi

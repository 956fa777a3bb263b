#!/usr/bin/env bash
# scripts/memcheck.sh valgrind|tsan [TEST...] - the C suite under valgrind memcheck or ThreadSanitizer.
#
# Builds every C test (build/vg: the ordinary -O2 -g build; build/tsan-all: clang -fsanitize=thread),
# runs each under the tool with tests/valgrind.supp or tests/tsan.supp, prints the tests' own
# "ok"/"FAIL" lines for tests/run.sh to count, and one "FAIL <tool>/<test>: ..." line for every
# process with a tool report (the report follows, indented). Exits non-zero on any FAIL.
#
# Forked children: valgrind always follows fork (--trace-children is about exec; what the tests
# exec is sh, python, xxh128sum: not ours), and each process writes its own log, so a child's
# leak or bad read is reported even when the test itself passes. TSan runs in children too; its
# log_path gives one file per process.
#
# KT_QUICK=1 (the default) keeps the run short: test_opencl (PoCL compiles a kernel in every
# child, ~80 s a group under valgrind) runs only the groups named in CL_QUICK_*; KT_QUICK=0 runs
# all of it (some 30 min under valgrind, 100 s under TSan). KT_TIMEOUT bounds each test program (seconds).
set -u
tool=${1:-}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
quick=${KT_QUICK:-1}
limit=${KT_TIMEOUT:-900}
CC=${CC:-cc}
WARN="-Wall -Wextra -Wpedantic -Werror"
TESTS="test_hash test_host test_key test_lru test_threads test_store test_flight test_index test_exchange test_hostile test_backend test_opencl test_remote test_layers test_many"
[ $# -gt 0 ] && TESTS="$*"
# the groups of test_opencl kept in a quick run: under valgrind the paths through kcache's OpenCL
# layer (miss, store, disk hit and explain in a new process, the in-process repeat; a failed
# build's log runs under ASan and TSan, whose runs cost a tenth of valgrind's 50 s a group); under
# TSan the groups where threads share a kcache (kcache_cl_build_many's builder threads compiling on
# one context among them) and the failed build
CL_QUICK_valgrind="cached_binary_right_in_new_process"
CL_QUICK_tsan="threads_compile_once build_failure_logged_not_cached many_programs_spread_over_threads"

case "$tool" in
valgrind)
    out=build/vg
    compile() { nice -n 10 $CC -std=c99 -O2 -g $WARN -I. -Itests -o "$out/$1" "tests/$1.c" $2 -lpthread; }
    supp=tests/valgrind.supp
    command -v valgrind >/dev/null || { echo "FAIL valgrind: valgrind is not installed"; exit 1; }
    ;;
tsan)
    out=build/tsan-all
    compile() { nice -n 10 clang -std=c99 -O1 -g -fsanitize=thread $WARN -I. -Itests -o "$out/$1" "tests/$1.c" $2 -lpthread; }
    supp=tests/tsan.supp
    ;;
*) echo "usage: scripts/memcheck.sh valgrind|tsan [TEST...]" >&2; exit 2 ;;
esac
mkdir -p "$out"
logs=$(mktemp -d "${TMPDIR:-/tmp}/kcache-memcheck.XXXXXX")
trap 'rm -rf "$logs"' EXIT
bad=0

# one process's report, or nothing: valgrind's ERROR SUMMARY (a definite leak counts as an error),
# or for a process killed before it printed one (tests SIGKILL writers) any stack in its log
vg_report() {
    local log=$1 n
    n=$(sed -n 's/^==[0-9]*== ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -1)
    if [ -n "$n" ]; then [ "$n" -gt 0 ]; else grep -q '^==[0-9]*== *at 0x' "$log"; fi
}

run_one() { # label, binary, environment...
    local label=$1 bin=$2 start rc f n=0
    shift 2
    rm -rf "$logs/run" && mkdir -p "$logs/run"
    start=$(date +%s)
    if [ "$tool" = valgrind ]; then
        env KT_VALGRIND=1 "$@" nice -n 10 timeout -k 10 "$limit" valgrind --tool=memcheck --trace-children=no \
            --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite --error-exitcode=99 \
            --num-callers=40 --suppressions="$supp" --log-file="$logs/run/vg.%p" "$bin" >"$logs/out" 2>&1
    else
        env TSAN_OPTIONS="suppressions=$root/$supp log_path=$logs/run/tsan exitcode=66 second_deadlock_stack=1" \
            "$@" nice -n 10 timeout -k 10 "$limit" "$bin" >"$logs/out" 2>&1
    fi
    rc=$?
    cat "$logs/out"
    for f in "$logs"/run/*; do
        [ -e "$f" ] || continue
        if [ "$tool" = valgrind ]; then vg_report "$f" || continue; else [ -s "$f" ] || continue; fi
        n=$((n + 1))
        echo "FAIL $tool/$label: a report from process ${f##*.}:"
        grep -v '^--[0-9]*-- ' "$f" | sed 's/^/    /'
    done
    [ "$n" -gt 0 ] && bad=1
    # a failed check printed its own FAIL line; a crash or a timeout did not
    if [ "$rc" -ne 0 ]; then
        bad=1
        [ "$n" -eq 0 ] && ! grep -q '^FAIL ' "$logs/out" && echo "FAIL $tool/$label: exited with status $rc"
    elif ! grep -q '^ok ' "$logs/out"; then
        echo "FAIL $tool/$label: ran no check"
        bad=1
    fi
    echo "== $tool/$label: exit $rc, $n report(s), $(( $(date +%s) - start )) s"
}

for t in $TESTS; do
    libs=
    [ "$t" = test_opencl ] && libs=-lOpenCL
    [ "$t" = test_remote ] || [ "$t" = test_layers ] || [ "$t" = test_many ] && libs="-lhiredis -lzstd -lssl -lcrypto"
    if [ ! -x "$out/$t" ] || [ "tests/$t.c" -nt "$out/$t" ] || [ kcache.h -nt "$out/$t" ] || [ tests/kt.h -nt "$out/$t" ] ||
       [ tests/kt_remote.h -nt "$out/$t" ] || [ kcache_redis.h -nt "$out/$t" ] || [ kcache_vk.h -nt "$out/$t" ]; then
        compile "$t" "$libs" || { echo "FAIL $tool/$t: does not build"; bad=1; continue; }
    fi
    if [ "$t" = test_opencl ] && [ "$quick" != 0 ]; then
        eval "groups=\$CL_QUICK_$tool"
        for g in $groups; do run_one "$t:$g" "$out/$t" KT_ONLY="$g"; done
    else
        run_one "$t" "$out/$t"
    fi
done
exit "$bad"

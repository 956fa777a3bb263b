#!/usr/bin/env bash
# numba on kcache (issue 36): `pip install ./python` into a venv per numba (PyPI's, from
# build/venv-numba; Debian's python3-numba through a --system-site-packages venv), then real numba
# processes with KCACHE_NUMBA=1 on a project of tests/numba/. Counts numba's own numba:compile
# events, never times: a second process compiles nothing, an edited callee in another file
# recompiles (f(10) = 31), a herd on a cold store compiles each function once with equal results,
# a failing compile hands its claim over at once, KCACHE_ENABLE=0 gives numba's own cache back.
# Usage: tests/test_numba.sh [KCACHE_INSPECT] (default build/kcache-inspect; without it the checks
# of kcache-inspect's numba report are skipped)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
inspect=$(realpath -s "${1:-$top/build/kcache-inspect}")
fails=0
ok() { echo "ok $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<<"$2"; }

# make_venv NAME: a venv under build/ with kcache-numba installed from ./python (no network: the
# venv's own setuptools builds it); prints its python, or nothing (the reason on stderr)
make_venv() {
    local name=$1 dir=$top/build/venv-kn-$1 py
    if [ "$name" = pypi ]; then
        local site=$top/build/venv-numba/lib/python3.11/site-packages
        [ -d "$site/numba" ] || { echo "build/venv-numba has no numba (scripts/numba-venv.sh)" >&2; return; }
        # --system-site-packages while pip builds (Debian's wheel and setuptools: no network);
        # the .pth puts PyPI's numba on the path
        [ -x "$dir/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$dir" >&2 || return
        echo "$site" >"$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/numba-venv.pth"
    else
        /usr/bin/python3 -c 'import numba' 2>/dev/null || { echo "Debian's python3-numba is not installed" >&2; return; }
        [ -x "$dir/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$dir" >&2 || return
    fi
    py=$dir/bin/python
    [ "$name" = pypi ] && sed -i 's/^include-system-site-packages = .*/include-system-site-packages = true/' "$dir/pyvenv.cfg"
    nice -n 5 "$py" -m pip install -q --no-build-isolation --no-index --force-reinstall --no-deps "$top/python" \
        >"$top/build/venv-kn-$name.log" 2>&1 || { echo "pip install ./python failed: $(tail -n 1 "$top/build/venv-kn-$name.log")" >&2; return; }
    # PyPI's numba runs without Debian's packages (Debian's scipy is built for another numpy)
    [ "$name" = pypi ] && sed -i 's/^include-system-site-packages = .*/include-system-site-packages = false/' "$dir/pyvenv.cfg"
    echo "$py"
}

run_flavour() {
    local name=$1 py=$2 t out out2 i sum r
    local v; v=$("$py" -c 'import numba; print(numba.__version__)')
    t=$(mktemp -d)
    cp "$top"/tests/numba/*.py "$t"/
    export KCACHE_DIR=$t/store NUMBA_CACHE_DIR=$t/numba-cache KCACHE_NUMBA=1
    export KCACHE_TRACE=1 # (the misses kcache-inspect explains below)
    unset KCACHE_ENABLE KCACHE_REMOTE
    cd "$t" || return
    out=$("$py" runner.py 2>&1 | tail -n 1)
    if [ "$(field state "$out")" = kcache ] && [ "$(field compiles "$out")" = 5 ] &&
        grep -q "f=21 a=3.802495 b=233475.0 c=285 d=10" <<<"$out"; then
        ok "numba-$v-cold-compiles-each-once"
    else fail "numba-$v-cold-compiles-each-once" "$out"; fi
    out2=$("$py" runner.py 2>&1 | tail -n 1)
    if [ "$(field compiles "$out2")" = 0 ] && grep -q "f=21 a=3.802495 b=233475.0 c=285 d=10" <<<"$out2"; then
        ok "numba-$v-second-process-compiles-nothing"
    else fail "numba-$v-second-process-compiles-nothing" "$out2"; fi
    if [ -z "$(find "$t" -name '*.nb[ic]')" ]; then ok "numba-$v-no-nbi-nbc-files"
    else fail "numba-$v-no-nbi-nbc-files" "$(find "$t" -name '*.nb[ic]' | head -n 3)"; fi
    # the callee in another file, edited: numba alone keeps f(10) = 21 (the dependencies are the
    # module's project files, so every cached function of mod recompiles: 5)
    sed -i 's/x \* 2/x * 3/' helper.py
    out=$("$py" runner.py 2>&1 | tail -n 1)
    if grep -q "results=f=31 " <<<"$out" && [ "$(field compiles "$out")" = 5 ]; then ok "numba-$v-edited-callee-recompiles"
    else fail "numba-$v-edited-callee-recompiles" "$out"; fi
    # kcache-inspect on f's unit: its dependencies with their stamps, numba's fields, and the
    # miss after the edit explained by the file that changed (helper.py, by content)
    if [ -x "$inspect" ]; then
        local unit
        unit=$("$inspect" --json "$t/store" | "$py" -c 'import json, sys; print(*[u["name"] for u in json.load(sys.stdin)["units"] if u["name"].startswith("numba:mod.f-")])')
        out=$("$inspect" --json "$t/store" "$unit" | "$py" inspect_check.py deps 2>&1 | tail -n 1)
        if [ "$out" = ok ]; then ok "numba-$v-inspect-shows-dependencies-and-the-changed-one"
        else fail "numba-$v-inspect-shows-dependencies-and-the-changed-one" "$unit: $out"; fi
        # another CPU name (as NUMBA_CPU_NAME sets it): the miss is explained by numba.cpu_name
        NUMBA_CPU_NAME=generic "$py" runner.py f >/dev/null 2>&1
        out=$("$inspect" --json "$t/store" "$unit" | "$py" inspect_check.py cpu 2>&1 | tail -n 1)
        if [ "$out" = ok ]; then ok "numba-$v-inspect-explains-a-cpu-miss"
        else fail "numba-$v-inspect-explains-a-cpu-miss" "$unit: $out"; fi
    else echo "# skipped numba-$v-inspect: no $inspect"; fi
    unset KCACHE_TRACE
    touch mod.py helper.py # touched, unchanged: the hybrid stamps still hit
    out=$("$py" runner.py 2>&1 | tail -n 1)
    if [ "$(field compiles "$out")" = 0 ] && grep -q "f=31 " <<<"$out"; then ok "numba-$v-touched-source-hits"
    else fail "numba-$v-touched-source-hits" "$out"; fi
    # an installed distribution's new release (its own site-packages directory, found by
    # importlib.metadata): a function calling it recompiles (numba alone keeps k(10) = 11)
    local sp="$t/sp/site-packages"
    mkdir -p "$sp/kn_dist_demo" "$sp/kn_dist_demo-1.0.dist-info"
    printf 'from numba import njit\n\n\n@njit\ndef h(x):\n    return x + 1\n' >"$sp/kn_dist_demo/__init__.py"
    printf 'Metadata-Version: 2.1\nName: kn-dist-demo\nVersion: 1.0\n' >"$sp/kn_dist_demo-1.0.dist-info/METADATA"
    echo kn_dist_demo >"$sp/kn_dist_demo-1.0.dist-info/top_level.txt"
    local d1 d2 d3
    d1=$(PYTHONPATH="$sp" "$py" distcheck.py 2>&1 | tail -n 1)
    sed -i 's/x + 1/x + 2/' "$sp/kn_dist_demo/__init__.py"
    mv "$sp/kn_dist_demo-1.0.dist-info" "$sp/kn_dist_demo-1.1.dist-info"
    sed -i 's/^Version: 1.0/Version: 1.1/' "$sp/kn_dist_demo-1.1.dist-info/METADATA"
    d2=$(PYTHONPATH="$sp" "$py" distcheck.py 2>&1 | tail -n 1)
    d3=$(PYTHONPATH="$sp" "$py" distcheck.py 2>&1 | tail -n 1)
    if [ "$d1" = "compiles=1 k=11" ] && [ "$d2" = "compiles=1 k=12" ] && [ "$d3" = "compiles=0 k=12" ]; then
        ok "numba-$v-new-release-of-a-distribution-recompiles"
    else fail "numba-$v-new-release-of-a-distribution-recompiles" "1.0: $d1; 1.1: $d2; again: $d3"; fi
    # a damaged store: every entry's bytes overwritten in the middle; kcache's checksums make them
    # misses, numba compiles again, the results stay right and nothing is raised
    for e in $(find "$t/store/e" -type f); do
        printf 'DAMAGED-BY-TEST' | dd of="$e" bs=1 seek=$(( $(stat -c %s "$e") / 2 )) conv=notrunc 2>/dev/null
    done
    out=$("$py" runner.py 2>&1 | tail -n 1)
    out2=$("$py" runner.py 2>&1 | tail -n 1)
    if [ "$(field compiles "$out")" = 5 ] && grep -q "f=31 a=3.802495 b=233475.0 c=285 d=10" <<<"$out" &&
        [ "$(field compiles "$out2")" = 0 ]; then ok "numba-$v-damaged-entries-are-misses"
    else fail "numba-$v-damaged-entries-are-misses" "$out / $out2"; fi
    # a herd of 4 on a cold store: each function compiled once in all, every result equal
    export KCACHE_DIR=$t/store-herd
    for i in 1 2 3 4; do "$py" runner.py >"$t/herd.$i" 2>&1 & done
    wait
    sum=0 r=""
    for i in 1 2 3 4; do
        out=$(tail -n 1 "$t/herd.$i")
        sum=$((sum + $(field compiles "$out" | grep -E '^[0-9]+$' || echo 100)))
        r="$r$(sed -n 's/.*results=\(.*\) state=.*/\1/p' <<<"$out")|"
    done
    if [ "$sum" = 5 ] && [ "$r" = "$(printf 'f=31 a=3.802495 b=233475.0 c=285 d=10|%.0s' 1 2 3 4)" ]; then
        ok "numba-$v-herd-of-4-compiles-each-function-once"
    else fail "numba-$v-herd-of-4-compiles-each-function-once" "compiles $sum (want 5); results $r"; fi
    # a failing compile drops its claim at once: the first process stays alive after its
    # TypingError; the second would wait KCACHE_BUILD_WAIT (600 s) on a claim left held
    export KCACHE_BUILD_WAIT=600 KN_TEST_HOLD=60
    "$py" runner.py bad >"$t/bad.1" 2>&1 &
    local holder=$!
    for i in $(seq 1 600); do grep -qs "results=" "$t/bad.1" && break; sleep 0.1; done
    out=$(KN_TEST_HOLD=0 timeout 45 "$py" runner.py bad 2>&1 | tail -n 1)
    kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
    unset KCACHE_BUILD_WAIT KN_TEST_HOLD
    if grep -q "results=bad=TypingError" "$t/bad.1" && grep -q "results=bad=TypingError" <<<"$out"; then
        ok "numba-$v-failed-compile-drops-claim"
    else fail "numba-$v-failed-compile-drops-claim" "first: $(tail -n 1 "$t/bad.1"); second: $out"; fi
    # KCACHE_ENABLE=0: numba's own cache, its files in NUMBA_CACHE_DIR, the second run hits there
    export KCACHE_ENABLE=0
    out=$("$py" runner.py f 2>&1 | tail -n 1)
    out2=$("$py" runner.py f 2>&1 | tail -n 1)
    unset KCACHE_ENABLE
    if grep -q "state=numba" <<<"$out" && [ "$(field compiles "$out2")" = 0 ] &&
        [ -n "$(find "$t/numba-cache" -name 'mod.f-*.nbi')" ]; then
        ok "numba-$v-kcache-enable-0-gives-numbas-cache"
    else fail "numba-$v-kcache-enable-0-gives-numbas-cache" "$out / $out2"; fi
    # a second machine (a store of its own) sharing a redis-server compiles nothing
    if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
        redis-server --port 0 --unixsocket "$t/redis.sock" --save '' --appendonly no >"$t/redis.log" 2>&1 &
        local rpid=$!
        for i in $(seq 1 100); do [ -S "$t/redis.sock" ] && break; sleep 0.1; done
        export KCACHE_REMOTE=unix://$t/redis.sock
        out=$(KCACHE_DIR=$t/machine-1 "$py" runner.py 2>&1 | tail -n 1)
        out2=$(KCACHE_DIR=$t/machine-2 "$py" runner.py 2>&1 | tail -n 1)
        unset KCACHE_REMOTE
        kill "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null
        if [ "$(field compiles "$out")" = 5 ] && [ "$(field compiles "$out2")" = 0 ] && grep -q "f=31 a=3.802495 b=233475.0 c=285 d=10" <<<"$out2"; then
            ok "numba-$v-second-machine-through-redis-compiles-nothing"
        else fail "numba-$v-second-machine-through-redis-compiles-nothing" "first: $out; second: $out2"; fi
    else echo "# skipped numba-$v-second-machine-through-redis: no redis-server"; fi
    # a compiler killed mid-compile (holding the claim) hands over: the waiter compiles
    export KCACHE_DIR=$t/store-killed KCACHE_BUILD_WAIT=600
    KN_SLOW=$t/compiling "$py" killed.py >"$t/killed.1" 2>&1 &
    local victim=$!
    for i in $(seq 1 600); do [ -e "$t/compiling" ] && break; sleep 0.1; done
    timeout 60 "$py" killed.py >"$t/killed.2" 2>&1 &
    local waiter=$!
    sleep 2 # the waiter is waiting on the claim by then (or is still importing: it hits the same path)
    kill -9 "$victim" 2>/dev/null; wait "$victim" 2>/dev/null
    wait "$waiter"
    unset KCACHE_BUILD_WAIT
    out=$(tail -n 1 "$t/killed.2")
    out2=$("$py" killed.py 2>&1 | tail -n 1)
    if [ -e "$t/compiling" ] && [ "$out" = "compiles=1 k=42" ] && [ "$out2" = "compiles=0 k=42" ]; then
        ok "numba-$v-killed-compiler-hands-over"
    else fail "numba-$v-killed-compiler-hands-over" "waiter: $out; next: $out2"; fi
    # every kind: vectorize, guvectorize (kernel and wrapper), cfunc, parallel=True
    export KCACHE_DIR=$t/store-kinds
    out=$("$py" kinds.py 2>&1 | tail -n 1)
    out2=$("$py" kinds.py 2>&1 | tail -n 1)
    if [ "$out" = "12.0 10.0 6.0 45.0 saves=5 store=0 fallbacks=0" ] && [ "$out2" = "12.0 10.0 6.0 45.0 saves=0 store=5 fallbacks=0" ] &&
        [ -z "$(find "$t" -name 'kinds.*.nb[ic]')" ]; then ok "numba-$v-every-kind-through-kcache"
    else fail "numba-$v-every-kind-through-kcache" "first: $out; second: $out2"; fi
    # @kcache_numba.opt_out: numba's own cache for that function, its .nbi written
    export KCACHE_DIR=$t/store
    out=$("$py" optout.py 2>&1 | tail -n 1)
    if [ "$out" = "2 True" ] && [ -n "$(find "$t/numba-cache" -name 'optout.h-*.nbi')" ]; then ok "numba-$v-opt-out-keeps-numbas-cache"
    else fail "numba-$v-opt-out-keeps-numbas-cache" "$out"; fi
    cd "$top" || return
    rm -rf "$t"
}

# the hook does nothing without KCACHE_NUMBA=1: kcache_numba is not even imported
check_inert() {
    local out
    out=$(env -u KCACHE_NUMBA "$1" -c 'import sys, numba.core.caching as c; print("kcache_numba" in sys.modules, c.Cache._load_overload.__module__)' 2>/dev/null | tail -n 1)
    if [ "$out" = "False numba.core.caching" ]; then ok "numba-$2-hook-inert-without-KCACHE_NUMBA"
    else fail "numba-$2-hook-inert-without-KCACHE_NUMBA" "$out"; fi
}

for flavour in pypi debian; do
    py=$(make_venv $flavour 2>"$top/build/venv-kn-why")
    if [ -z "$py" ]; then
        echo "# skipped numba-$flavour: $(tail -n 1 "$top/build/venv-kn-why")"
        continue
    fi
    ok "numba-$flavour-pip-install"
    check_inert "$py" $flavour
    run_flavour $flavour "$py"
done
[ "$fails" -eq 0 ]

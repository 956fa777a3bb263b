#!/usr/bin/env bash
# bench/numba_herd.sh [PYTHON...]: issue 36's figures on its workload, bench/numba10/ (a module of 10
# cached functions of about 0.55 s of compile each), for each PYTHON (a venv's python with
# kcache-numba installed; default: build/venv-kn-pypi's and build/venv-kn-debian's, the venvs
# tests/test_numba.sh makes, those present):
#  - one process alone, cold then warm, with kcache_numba: its compile time is cold minus warm, and
#    the warm one compiles nothing;
#  - herds of N processes at once (HERD_SIZES, default "8 16") on a cold store, then the same herd
#    warm: compiles are numba's numba:compile events summed over the herd (ideal 10), every result
#    must equal the lone process's, the wall ratio is (cold herd - warm herd) / one process's compile
#    time (issue 36's done-when: at most 1.5); then a later process, which must compile nothing;
#    each herd HERD_REPEAT times (default 3) beside a lone process measured just before it, the
#    median ratio printed (the machine's load drifts); then the same herds once with numba's own
#    cache (KCACHE_NUMBA=0, a cold NUMBA_CACHE_DIR), against the median of those lone compile times;
#  - a warm start of the 10 functions, kcache_numba against numba's own warm cache: the median of
#    WARM_RUNS (default 5) process walls each, and of the time in the first calls (the loads).
# Walls are times on a machine others share: read the ratios, rerun for noise. Exit status 1 when a
# count or a result is wrong (not for a ratio: times vary).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -gt 0 ]; then
    pys=()
    for p in "$@"; do pys+=("$(realpath -s "$p")"); done # the runs cd to a temporary directory
else
    pys=()
    for v in pypi debian; do
        p=$top/build/venv-kn-$v/bin/python
        if [ -x "$p" ]; then pys+=("$p"); else echo "# no $p (tests/test_numba.sh makes it): skipped"; fi
    done
    [ ${#pys[@]} -gt 0 ] || exit 0
fi
sizes=${HERD_SIZES:-8 16}
warm_runs=${WARM_RUNS:-5}
repeat=${HERD_REPEAT:-3}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cp "$top"/bench/numba10/*.py "$t"/
cd "$t" || exit 1
bad=0
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<<"$2"; }
median() { tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
check() { # check WHAT CONDITION-STATUS: counts a wrong count or result
    if [ "$2" != 0 ]; then echo "  WRONG: $1"; bad=$((bad + 1)); fi
}
# one: runs one process, prints "wall line"
one() {
    local s e out
    s=$(now); out=$("$py" run.py 2>&1 | tail -n 1); e=$(now)
    echo "$(calc "$e - $s") $out"
}
# herd N: N processes at once; prints "compiles wall equal" (equal: 1 when every result is $want)
herd() {
    local i s e sum=0 eq=1 out
    s=$(now)
    for i in $(seq 1 "$1"); do "$py" run.py >"h.$i" 2>&1 & done
    wait
    e=$(now)
    for i in $(seq 1 "$1"); do
        out=$(tail -n 1 "h.$i")
        sum=$((sum + $(field compiles "$out" | grep -E '^[0-9]+$' || echo 1000)))
        [ "$(field results "$out")" = "$want" ] || eq=0
    done
    echo "$sum $(calc "$e - $s") $eq"
}

for py in "${pys[@]}"; do
    v=$("$py" -c 'import numba; print(numba.__version__)') || { echo "no numba in $py"; bad=$((bad + 1)); continue; }
    unset KCACHE_REMOTE KCACHE_ENABLE
    export KCACHE_NUMBA=1 NUMBA_CACHE_DIR=$t/nc-unused KCACHE_DIR=$t/one-$v
    read -r cold out < <(one)
    want=$(field results "$out")
    [ "$(field state "$out")" = kcache ] && [ "$(field compiles "$out")" = 10 ]; check "one cold process: $out" $?
    read -r warm out2 < <(one)
    [ "$(field compiles "$out2")" = 0 ] && [ "$(field results "$out2")" = "$want" ]; check "one warm process: $out2" $?
    compile=$(calc "$cold - $warm")
    echo "== numba $v ($py), bench/numba10: 10 functions"
    printf 'one process: cold %.2fs (%s compiles, %.2fs in the calls), warm %.2fs: compile time %.2fs\n' \
        "$cold" "$(field compiles "$out")" "$(field calls "$out")" "$warm" "$compile"
    for n in $sizes; do
        # kcache_numba's herd, HERD_REPEAT times, each beside a lone process's compile time measured
        # just before it (the machine's load drifts): the median ratio is the figure
        ratios="" cs="" hcs="" hws="" compiles_alone=""
        for r in $(seq 1 "$repeat"); do
            export KCACHE_NUMBA=1 KCACHE_DIR=$t/one-$v-$n-$r NUMBA_CACHE_DIR=$t/nc-unused
            read -r c1 _ < <(one)
            read -r w1 _ < <(one)
            export KCACHE_DIR=$t/herd-$v-$n-$r
            read -r c hc eq < <(herd "$n")
            read -r cw hw eqw < <(herd "$n")
            later=$(one)
            [ "$c" = 10 ] && [ "$eq" = 1 ] && [ "$eqw" = 1 ] && [ "$cw" = 0 ] && [ "$(field compiles "$later")" = 0 ]
            check "kcache herd of $n: $c compiles, results equal $eq/$eqw, warm compiles $cw, later process: ${later#* }" $?
            ratios="$ratios $(calc "($hc - $hw) / ($c1 - $w1)")" cs="$cs $c" hcs="$hcs $hc" hws="$hws $hw"
            compiles_alone="$compiles_alone $(calc "$c1 - $w1")"
            printf '  (herd of %s, run %s: %s compiles, cold %.1fs, warm %.1fs; one process %.1fs - %.1fs)\n' "$n" "$r" "$c" "$hc" "$hw" "$c1" "$w1"
        done
        printf 'kcache_numba, herd of %2s: %s compiles (ideal 10), results equal, a later process compiles 0; (cold - warm) / compile = %.2fx (median of%s)\n' \
            "$n" "$(tr ' ' '/' <<<"${cs# }")" "$(median <<<"${ratios# }")" "$(sed 's/ /, /g; s/^,//' <<<"$ratios")"
        alone=$(median <<<"${compiles_alone# }") # numba's own herd against the lone compile times just measured
        export KCACHE_NUMBA=0 NUMBA_CACHE_DIR=$t/nc-$v-$n
        read -r c hc eq < <(herd "$n")
        read -r _ hw _ < <(herd "$n")
        printf "numba's own cache, herd of %2s: %3s compiles, results equal: %s; cold %.1fs, warm %.1fs: (cold - warm) / compile = %.2fx\n" \
            "$n" "$c" "$([ "$eq" = 1 ] && echo yes || echo NO)" "$hc" "$hw" "$(calc "($hc - $hw) / $alone")"
    done
    # warm starts, alternating so that the machine's load falls on both alike
    export NUMBA_CACHE_DIR=$t/nc-warm-$v KCACHE_DIR=$t/one-$v
    KCACHE_NUMBA=0 "$py" run.py >/dev/null 2>&1
    kw="" kc="" nw="" nc=""
    for i in $(seq 1 "$warm_runs"); do
        read -r w out < <(KCACHE_NUMBA=1 one)
        [ "$(field compiles "$out")" = 0 ] && [ "$(field state "$out")" = kcache ]; check "kcache warm start: $out" $?
        kw="$kw $w" kc="$kc $(field calls "$out")"
        read -r w out < <(KCACHE_NUMBA=0 one)
        [ "$(field compiles "$out")" = 0 ]; check "numba warm start: $out" $?
        nw="$nw $w" nc="$nc $(field calls "$out")"
    done
    kw=$(median <<<"${kw# }") kc=$(median <<<"${kc# }") nw=$(median <<<"${nw# }") nc=$(median <<<"${nc# }")
    printf "warm start of the 10 functions (median of %s): kcache_numba %.3fs (%.3fs in the calls), numba's own cache %.3fs (%.3fs): %.2fx (calls %.2fx)\n" \
        "$warm_runs" "$kw" "$kc" "$nw" "$nc" "$(calc "$kw / $nw")" "$(calc "$kc / $nc")"
done
[ "$bad" -eq 0 ]

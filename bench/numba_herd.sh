#!/usr/bin/env bash
# bench/numba_herd.sh [PYTHON] [N...]: issue 36's figures on tests/numba's project (5 cached
# functions): herds of N processes (default 8 16) on a cold store, with kcache_numba and with numba's
# own cache; compiles are numba's numba:compile events summed over the herd; walls as ratios:
# (cold herd - warm herd) / one process's compile time (its cold wall minus its warm wall).
# PYTHON: a venv's python with kcache-numba installed (tests/test_numba.sh makes
# build/venv-kn-pypi and build/venv-kn-debian).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
py=$(realpath -s "${1:-$top/build/venv-kn-pypi/bin/python}")
[ -x "$py" ] || { echo "no python at $py (run tests/test_numba.sh first)" >&2; exit 1; }
shift || true
sizes=${*:-8 16}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cp "$top"/tests/numba/*.py "$t"/
cd "$t" || exit 1
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
herd() { # herd N: runs N processes at once, prints "compiles wall"
    local i s e sum=0
    s=$(now)
    for i in $(seq 1 "$1"); do "$py" runner.py >"h.$i" 2>&1 & done
    wait
    e=$(now)
    for i in $(seq 1 "$1"); do sum=$((sum + $(sed -n 's/^compiles=\([0-9]*\).*/\1/p' "h.$i" | tail -n 1))); done
    echo "$sum $(calc "$e - $s")"
}
one() { local s e; s=$(now); "$py" runner.py >/dev/null 2>&1; e=$(now); calc "$e - $s"; }
v=$("$py" -c 'import numba; print(numba.__version__)')
export KCACHE_NUMBA=1 NUMBA_CACHE_DIR=$t/nc
export KCACHE_DIR=$t/one; cold=$(one); warm=$(one)
compile=$(calc "$cold - $warm")
echo "numba $v: one process cold ${cold}s warm ${warm}s: compile ${compile}s"
for n in $sizes; do
    export KCACHE_DIR=$t/herd-$n KCACHE_NUMBA=1
    read -r c hc < <(herd "$n")
    read -r _ hw < <(herd "$n")
    printf 'kcache herd of %s: %s compiles (ideal 5); (cold %.1fs - warm %.1fs) / compile = %.2fx\n' \
        "$n" "$c" "$hc" "$hw" "$(calc "($hc - $hw) / $compile")"
    export KCACHE_NUMBA=0 NUMBA_CACHE_DIR=$t/nc-$n
    read -r c hc < <(herd "$n")
    read -r _ hw < <(herd "$n")
    printf 'numba alone herd of %s: %s compiles; (cold %.1fs - warm %.1fs) / compile = %.2fx\n' \
        "$n" "$c" "$hc" "$hw" "$(calc "($hc - $hw) / $compile")"
done

#!/usr/bin/env bash
# scripts/exchange.sh [NATIVE-BINARY]
#
# A store written on one platform, read on the others: tests/test_exchange.c run natively, under
# wine as a Windows program (mingw-w64) and,
# through qemu-user, as aarch64 (little-endian, NEON hash path) and s390x (big-endian, scalar hash
# path) binaries built by scripts/cross.sh (static, alignment checks trapping). For each writer
# (native, s390x, aarch64):
#     WRITER write DIR; every platform reads DIR (the others first, the writer last);
#     a platform of the other byte order appends an entry to the writer's store; the writer reads
#     everything again (its own entries and the other platform's).
# Prints tests/kt.h's protocol, each name prefixed with what ran it, e.g.
#     ok exchange/s390x>x86_64/exchange_payloads       (written on s390x, read natively)
#     ok exchange/x86_64+s390x/exchange_append          (s390x appending to x86_64's store)
# kcache-inspect too: the native build (build/kcache-inspect, `make tools`) and the aarch64 and
# s390x builds each decode every store right after its write, and every file of tests/data/
# (numba .nbi pickles, damaged entries): exit status and --json output must be the native one's,
# and the store's accounting must match ("exchange/WRITER/inspect-PLATFORM",
# "exchange/inspect-data/PLATFORM"). NUMBA_CPU_NAME/FEATURES are fixed so the host is the same.
# NATIVE-BINARY defaults to build/test_exchange (built with cc when missing or out of date).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
native_bin=${1:-$root/build/test_exchange}
limit=${KT_TIMEOUT:-300}
native=$(uname -m)
archs=(aarch64 s390x)
failed=0

if [ -z "${1:-}" ] && { [ ! -x "$native_bin" ] || [ "$root/tests/test_exchange.c" -nt "$native_bin" ] ||
                          [ "$root/kcache.h" -nt "$native_bin" ] || [ "$root/tests/kt.h" -nt "$native_bin" ]; }; then
    mkdir -p "$(dirname "$native_bin")"
    if ! ${CC:-cc} -std=c99 -O2 -g -Wall -Wextra -Wpedantic -Werror -I"$root" -I"$root/tests" -o "$native_bin" \
            "$root/tests/test_exchange.c" -lpthread; then
        echo "FAIL exchange/build/$native: cc failed"
        exit 1
    fi
fi
[ -x "$native_bin" ] || { echo "FAIL exchange/build/$native: no $native_bin"; exit 1; }

# the emulated builds (scripts/cross.sh prints a FAIL line when a toolchain is missing)
plats=("$native")
for a in "${archs[@]}"; do
    if out=$(bash "$root/scripts/cross.sh" "$a" --build-only test_exchange kcache-inspect) && command -v "qemu-$a-static" >/dev/null; then
        plats+=("$a")
    else
        [ -n "$out" ] && echo "$out" | sed "s|^FAIL |FAIL exchange/|"
        command -v "qemu-$a-static" >/dev/null || echo "FAIL exchange/$a: qemu-$a-static not installed (Debian: qemu-user-static)"
        failed=1
    fi
done

# Windows: test_exchange built with mingw-w64 and run under wine (scripts/windows.sh builds it, runs
# its own write/read/append on Windows alone, and makes the wine prefix); it reads and writes the
# same directories through wine's Z: drive
stores=("${plats[@]}")
if win_out=$(bash "$root/scripts/windows.sh" test_exchange 2>&1); then
    stores+=(windows)
else
    failed=1
fi
echo "$win_out" | grep -E '^(ok|FAIL) ' | sed -e "s|^ok windows/|ok exchange/windows-alone/|" -e "s|^FAIL windows/|FAIL exchange/windows-alone/|"
export WINEPREFIX=$root/build/win/wineprefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
wine=wine
command -v wine >/dev/null || wine=wine64

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-exchange.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log

# run PLATFORM LABEL MODE DIR: one run of test_exchange, names prefixed "exchange/LABEL/"
run() {
    local plat=$1 label=$2 mode=$3 dir=$4 rc p f
    if [ "$plat" = "$native" ]; then
        timeout -k 10 "$limit" "$native_bin" "$mode" "$dir" >"$log" 2>&1
    elif [ "$plat" = windows ]; then
        (DISPLAY= timeout -k 10 "$limit" "$wine" "$root/build/win/test_exchange.exe" "$mode" "$dir" 2>&1 | tr -d '\r') >"$log"
    else
        timeout -k 10 "$limit" "qemu-$plat-static" "$root/build/cross-$plat/test_exchange" "$mode" "$dir" >"$log" 2>&1
    fi
    rc=$?
    sed -e "s|^ok |ok exchange/$label/|" -e "s|^FAIL |FAIL exchange/$label/|" "$log"
    p=$(grep -c '^ok ' "$log") f=$(grep -c '^FAIL ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL exchange/$label: $mode exited with status $rc"; f=1; fi
    if [ "$rc" -eq 0 ] && [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then echo "FAIL exchange/$label: $mode ran no check"; f=1; fi
    [ "$f" -eq 0 ] || failed=1
    return 0
}

# ---- kcache-inspect on every platform: the same verdict, byte for byte ----
native_inspect=$root/build/kcache-inspect
export NUMBA_CPU_NAME=generic NUMBA_CPU_FEATURES=
unset KCACHE_STAMP
inspect() { # PLATFORM FILE-OR-DIR: --json output and exit status
    if [ "$1" = "$native" ]; then timeout -k 5 60 "$native_inspect" --json "$2" 2>&1
    else timeout -k 5 60 "qemu-$1-static" "$root/build/cross-$1/kcache-inspect" --json "$2" 2>&1; fi
    echo "exit status $?"
}
# inspect_store LABEL DIR: each platform's inspect of DIR/store and DIR/small agrees with the native one
inspect_store() {
    local label=$1 dir=$2 r s got why
    local -A want=()
    for r in "${plats[@]}"; do   # the native one first
        why=""
        for s in store small; do
            got=$(inspect "$r" "$dir/$s")
            if [ "$r" = "$native" ]; then
                want[$s]=$got
                grep -q '"accounting_matches": true' <<<"$got" && grep -q '^exit status 0$' <<<"$got" ||
                    why="$why $s: $(grep -m2 -E 'accounting_matches|"problem"|exit status' <<<"$got" | tr '\n' ' ')"
            elif [ "$got" != "${want[$s]}" ]; then
                why="$why $s: --json differs from the native one: $(diff <(echo "${want[$s]}") <(echo "$got") | head -4 | tr '\n' ' ')"
            fi
        done
        if [ -z "$why" ]; then echo "ok exchange/$label/inspect-$r"; else echo "FAIL exchange/$label/inspect-$r:$why"; failed=1; fi
    done
}
if [ ! -x "$native_inspect" ]; then
    echo "skip exchange/*/inspect-*: no $native_inspect (make tools)" >&2
    inspect_store() { :; }
else
    for r in "${plats[@]}"; do
        [ "$r" = "$native" ] && continue
        why="" n=0
        for f in "$root"/tests/data/*/*; do
            [ -f "$f" ] || continue
            n=$((n + 1))
            [ "$(inspect "$r" "$f")" = "$(inspect "$native" "$f")" ] || why="$why ${f#"$root"/}"
        done
        if [ -z "$why" ] && [ $n -gt 0 ]; then echo "ok exchange/inspect-data/$r"
        else echo "FAIL exchange/inspect-data/$r: output differs from the native one for$why"; failed=1; fi
    done
fi

for w in "$native" s390x aarch64 windows; do
    case " ${stores[*]} " in *" $w "*) ;; *) continue ;; esac
    dir=$tmp/by-$w
    run "$w" "$w" write "$dir"
    [ -f "$dir/manifest" ] || continue
    inspect_store "$w" "$dir"
    for r in "${stores[@]}"; do [ "$r" = "$w" ] || run "$r" "$w>$r" read "$dir"; done
    run "$w" "$w>$w" read "$dir"
    # the other byte order writes into this store; the writer reads both
    if [ "$w" = s390x ]; then other=$native; else other=s390x; fi
    case " ${stores[*]} " in *" $other "*) ;; *) continue ;; esac
    run "$other" "$w+$other" append "$dir"
    run "$w" "$w+$other>$w" read "$dir"
done
exit $failed

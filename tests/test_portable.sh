#!/usr/bin/env bash
# tests/test_portable.sh [TEST_EXCHANGE-BINARY]
#
# Portable caches across CPUs: the same program (tests/test_exchange.c's "host" probe: one key with
# kcache_key_host_from, checked equal to kcache_key_host; a get, and on a miss kcache_explain and
# a put) run several times on one store with different CPUs.
#   "Another CPU" is simulated two ways:
#   - KCACHE_CPU_NAME / KCACHE_CPU_FEATURES set to other values (the override replaces what was
#     detected), and
#   - a real other CPU: the same native binary under qemu-x86_64-static -cpu Nehalem (an x86-64
#     host only), where CPUID, and so the detected name and features, differ from this machine's.
# Without overrides a different CPU is a miss whose explanation names host.cpu_name (and
# host.cpu_features) with both values; with KCACHE_CPU_NAME=generic KCACHE_CPU_FEATURES="" an
# entry written on one CPU hits on the other. Prints tests/kt.h's protocol.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/test_exchange}
[ -x "$bin" ] || { echo "FAIL portable: no $bin (make build/test_exchange)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-portable.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
out=""

# probe NAME DIR [env assignments...] [-- qemu -cpu MODEL]: one run; sets $result, $explain, $cpu
probe() {
    local name=$1 dir=$2 rc
    shift 2
    local envs=() cpu_model=""
    while [ $# -gt 0 ]; do
        case "$1" in --cpu) cpu_model=$2; shift 2 ;; *) envs+=("$1"); shift ;; esac
    done
    mkdir -p "$dir"
    if [ -n "$cpu_model" ]; then
        out=$(env -u KCACHE_CPU_NAME -u KCACHE_CPU_FEATURES "${envs[@]}" qemu-x86_64-static -cpu "$cpu_model" "$bin" host "$dir" 2>"$tmp/err")
    else
        out=$(env -u KCACHE_CPU_NAME -u KCACHE_CPU_FEATURES "${envs[@]}" "$bin" host "$dir" 2>"$tmp/err")
    fi
    rc=$?
    result=$(sed -n 's/^result //p' <<<"$out")
    explain=$(sed -n 's/^explain //p' <<<"$out")
    cpu=$(sed -n 's/^tuple [^|]*|\([^|]*\)|.*/\1/p' <<<"$out")
    if [ $rc -ne 0 ] || grep -q '^FAIL ' <<<"$out" || [ -z "$result" ]; then
        grep '^FAIL ' <<<"$out" | sed "s|^FAIL |FAIL $name/|"
        echo "FAIL $name: the probe exited with $rc: $(head -c 300 "$tmp/err")"
        return 1
    fi
    return 0
}

# check NAME CONDITION-TEXT: prints ok, or FAIL with the last probe's output
verdict() {
    local name=$1 ok=$2 why=$3
    if [ "$ok" = 1 ]; then echo "ok $name"; else echo "FAIL $name: $why"; failed=1; fi
}

# ---- overrides: a different CPU name or feature list is a miss that says so; the same one hits ----
d=$tmp/override
ok=1 why=""
probe portable_override "$d" KCACHE_CPU_NAME=haswell KCACHE_CPU_FEATURES=+avx2 || ok=0
[ "$result" = miss ] && [[ "$explain" == "miss: cold: "* ]] || { ok=0; why="first run: $result, $explain"; }
probe portable_override "$d" KCACHE_CPU_NAME=haswell KCACHE_CPU_FEATURES=+avx2 || ok=0
[ "$result" = hit ] || { ok=0; why="second run with the same overrides: $result ($explain)"; }
verdict portable_override_same_cpu_hits $ok "$why"

ok=1 why=""
probe portable_override "$d" KCACHE_CPU_NAME=znver3 KCACHE_CPU_FEATURES=+avx2 || ok=0
want='miss: a field differs: closest of 1 stored overload(s) of unit "portable.kernel": host.cpu_name: "haswell" (stored) vs "znver3" (now)'
[ "$result" = miss ] && [ "$explain" = "$want" ] || { ok=0; why="KCACHE_CPU_NAME=znver3 after haswell: $result; explain: $explain; want: $want"; }
verdict portable_other_cpu_name_explained $ok "$why"

ok=1 why=""
probe portable_override "$d" KCACHE_CPU_NAME=haswell KCACHE_CPU_FEATURES=+avx2,+fma || ok=0
want='miss: a field differs: closest of 2 stored overload(s) of unit "portable.kernel": host.cpu_features: "+avx2" (stored) vs "+avx2,+fma" (now)'
[ "$result" = miss ] && [ "$explain" = "$want" ] || { ok=0; why="KCACHE_CPU_FEATURES=+avx2,+fma after +avx2: $result; explain: $explain; want: $want"; }
verdict portable_other_cpu_features_explained $ok "$why"

# ---- generic: written under one override, hit under the same generic tuple ----
d=$tmp/generic
ok=1 why=""
probe portable_generic "$d" KCACHE_CPU_NAME=generic KCACHE_CPU_FEATURES= || ok=0
[ "$result" = miss ] || { ok=0; why="first generic run: $result"; }
[ "$cpu" = generic ] || { ok=0; why="KCACHE_CPU_NAME=generic gave cpu name '$cpu'"; }
probe portable_generic "$d" KCACHE_CPU_NAME=generic KCACHE_CPU_FEATURES= || ok=0
[ "$result" = hit ] || { ok=0; why="second generic run: $result ($explain)"; }
verdict portable_generic_hits $ok "$why"

# ---- a real other CPU: this machine, then qemu-x86_64 -cpu MODEL (CPUID differs) ----
if [ "$(uname -m)" != x86_64 ] || ! command -v qemu-x86_64-static >/dev/null; then
    echo "skip portable_real_cpu_*: needs an x86-64 host and qemu-x86_64-static (Debian: qemu-user-static)" >&2
else
    d=$tmp/detected
    ok=1 why=""
    probe portable_real_cpu "$d" || ok=0
    here=$cpu
    model="" there=""
    for m in Nehalem core2duo Opteron_G1; do   # the first model whose detected name differs from ours
        probe portable_real_cpu "$tmp/model-$m" --cpu "$m" || continue
        if [ -n "$cpu" ] && [ "$cpu" != "$here" ]; then model=$m there=$cpu; break; fi
    done
    if [ -z "$model" ]; then
        verdict portable_real_cpu_detected 0 "no qemu CPU model is detected differently from this CPU ($here)"
    else
        echo "# this CPU is detected as $here; under qemu-x86_64-static -cpu $model as $there"
        probe portable_real_cpu "$d" --cpu "$model" || ok=0
        [ "$result" = miss ] && [[ "$explain" == *"host.cpu_name: \"$here\" (stored) vs \"$there\" (now)"* ]] ||
            { ok=0; why="detected $here, then $there under qemu -cpu $model: $result; explain: $explain"; }
        verdict portable_real_other_cpu_misses_explained $ok "$why"

        d=$tmp/portable
        ok=1 why=""
        probe portable_real_cpu "$d" KCACHE_CPU_NAME=generic KCACHE_CPU_FEATURES= || ok=0
        [ "$result" = miss ] || { ok=0; why="first run: $result"; }
        probe portable_real_cpu "$d" KCACHE_CPU_NAME=generic KCACHE_CPU_FEATURES= --cpu "$model" || ok=0
        [ "$result" = hit ] || { ok=0; why="written on $here with generic overrides, read on $there ($model) with them: $result ($explain)"; }
        verdict portable_real_other_cpu_generic_hits $ok "$why"

        # the name alone is not enough: the detected features still differ
        d=$tmp/name-only
        ok=1 why=""
        probe portable_real_cpu "$d" KCACHE_CPU_NAME=generic || ok=0
        probe portable_real_cpu "$d" KCACHE_CPU_NAME=generic --cpu "$model" || ok=0
        [ "$result" = miss ] && [[ "$explain" == *"host.cpu_features: "* ]] && [[ "$explain" != *"host.cpu_name"* ]] ||
            { ok=0; why="KCACHE_CPU_NAME=generic alone on $here then $there: $result; explain: $explain"; }
        verdict portable_real_other_cpu_name_only_misses_on_features $ok "$why"
    fi
fi
exit $failed

#!/usr/bin/env bash
# Runs each libFuzzer target for a few seconds from its seed corpus (and over the regression
# inputs in tests/data): "ok fuzz-NAME" when it found nothing, "FAIL fuzz-NAME: ..." otherwise.
set -u
secs=$1; shift
root=$(cd "$(dirname "$0")/.." && pwd)
for f in "$@"; do
    bin=$root/build/$f seeds=$root/fuzz/corpus/${f#fuzz_}
    work=$(mktemp -d)
    mkdir -p "$root/build/fuzz-artifacts" # a crashing input is kept there, not in the working directory
    if [ ! -x "$bin" ]; then echo "FAIL fuzz-$f: $bin not built"; continue; fi
    case $f in fuzz_pickle) regress=$root/tests/data/nbi-regress ;; fuzz_store) regress=$root/tests/data/store-regress ;;
        fuzz_stats) regress=$root/tests/data/stats-regress ;; fuzz_env) regress=$root/tests/data/env-regress ;; *) regress= ;; esac
    if [ -n "$regress" ] && [ -d "$regress" ]; then  # every input a fuzzer once broke us with, run once
        if rout=$("$bin" "$regress"/* 2>&1); then echo "ok fuzz-$f-regressions ($(ls "$regress" | wc -l) inputs)"
        else echo "FAIL fuzz-$f-regressions: $(echo "$rout" | grep -E "ERROR|SUMMARY|Running" | tail -2 | tr '\n' ' ')"; fi
    fi
    if out=$("$bin" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$root/build/fuzz-artifacts/$f-" "$work" "$seeds" 2>&1); then
        execs=$(echo "$out" | sed -n 's/^stat::number_of_executed_units: *//p')
        echo "ok fuzz-$f ($execs inputs in $secs s)"
    else
        echo "FAIL fuzz-$f: $(echo "$out" | grep -E "ERROR|SUMMARY" | head -2 | tr '\n' ' ')"
    fi
    rm -rf "$work"
done

#!/usr/bin/env bash
# Runs every test given on the command line (programs or scripts), each under a time limit,
# and prints the closing line "N passed, N failed".
# A test prints "ok NAME" / "FAIL NAME: ..." lines; a program that exits non-zero without
# printing a FAIL line (a crash, a sanitizer report, a timeout) counts as one failure.
set -u
limit=${KT_TIMEOUT:-900}
passed=0 failed=0
log=$(mktemp)
for t in "$@"; do
    label=$t
    case "$t" in *=*) label=${t%%=*}; t=${t#*=} ;; esac
    start=$(date +%s)
    timeout -k 10 "$limit" $t >"$log" 2>&1
    rc=$?
    cat "$log"
    p=$(grep -c '^ok ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $label: exited with status $rc"
        f=1
    fi
    if [ "$rc" -eq 0 ] && [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $label: ran no check"
        f=1
    fi
    echo "== $label: $p ok, $f failed ($(( $(date +%s) - start )) s)"
    passed=$((passed + p)) failed=$((failed + f))
done
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

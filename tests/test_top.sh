#!/usr/bin/env bash
# test_top.sh - kcache-top against the load generator, whose counts are known in advance.
#
# Usage: tests/test_top.sh [KCACHE_TOP] [KCACHE_LOAD]   (default: build/kcache-top build/kcache_load)
# Prints "ok NAME" / "FAIL NAME: why" lines (tests/kt.h's protocol); exits non-zero on any failure.
# Needs tmux for the interactive checks (it gives kcache-top a terminal, so this runs in CI where
# there is none; without it they fail, or under `make check`, KT_SKIP_MISSING=1, say "skip");
# everything runs on private temp directories and a private tmux server.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
top=${1:-$root/build/kcache-top}
load=${2:-$root/build/kcache_load}
case "$top" in /*) ;; *) top=$PWD/$top ;; esac
case "$load" in /*) ;; *) load=$PWD/$load ;; esac
failures=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-top-test.XXXXXX")
sock=kctop-$$
bg_pids=()
cleanup() {
    local p
    for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    sleep 0.3
    for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    tmux -L "$sock" kill-server 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
unset KCACHE_DIR KCACHE_TRACE KCACHE_STATS KCACHE_DEBUG KCACHE_ENABLE KCACHE_PERSISTENT KCACHE_MAX_SIZE TMUX
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

ok() { echo "ok $1"; }
fail() { echo "FAIL $1: $2"; failures=$((failures + 1)); }

for f in "$top" "$load"; do
    if [ ! -x "$f" ]; then fail prerequisites "$f is not an executable (build it first)"; exit 1; fi
done

# value KEY LINE: the number after KEY= in LINE
value() { sed -n "s/.*[ ]$1=\([0-9][0-9]*\).*/\1/p" <<<"$2" | head -1; }
# same_counts NAME EXPECTED_LINE SHOWN_TOTALS SHOWN_MISSES: every count matches
same_counts() {
    local name=$1 want=$2 tot=$3 mis=$4 k bad=""
    for k in hits hits_mem hits_disk misses puts rejects bytes_read bytes_written; do
        [ "$(value "$k" "$want")" = "$(value "$k" "$tot")" ] || bad="$bad $k: want $(value "$k" "$want") shown $(value "$k" "$tot");"
    done
    for k in cold field stamp rejected evicted; do
        [ "$(value "$k" "$want")" = "$(value "$k" " $mis")" ] || bad="$bad $k: want $(value "$k" "$want") shown $(value "$k" " $mis");"
    done
    if [ -z "$bad" ]; then ok "$name"; else fail "$name" "$bad"; fi
}
# snap DIR: one batch snapshot into $snap; a crash or a non-zero status fails the test
snap() {
    "$top" -b -n 1 "$@" >"$tmp/snap" 2>"$tmp/snap.err"
    local rc=$?
    snap=$(cat "$tmp/snap")
    if [ $rc -ne 0 ]; then fail snapshot "kcache-top -b $* exited $rc: $(head -c 300 "$tmp/snap.err")"; return 1; fi
    return 0
}
line() { grep -m1 "^$1 " <<<"$snap"; }
# wait_for FILE PATTERN SECONDS
wait_for() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# ---- 1. batch mode: the numbers shown are the load generator's known counts ------------------
d1=$tmp/s1
"$load" -d "$d1" -p 3 -t 2 -u 4 -o 3 -n 500 -R -S -C >"$tmp/load1" 2>&1
expect1=$(grep '^expect ' "$tmp/load1")
stats1=$(grep '^stats ' "$tmp/load1")
if [ -n "$expect1" ] && [ "${expect1#expect }" = "${stats1#stats }" ]; then ok load-generator-counts
else fail load-generator-counts "the library's stats differ from the expected counts: $expect1 / $stats1"; fi
if snap "$d1"; then
    same_counts batch-counts-after-exit "$expect1" "$(line totals)" "$(line misses)"
    if grep -q '^stats .* processes 0' <<<"$snap" && ! grep -q ' live ' <<<"$snap"; then ok batch-no-process-left
    else fail batch-no-process-left "$(line stats)"; fi
    # the store's contents: every unit of the load, from the index logs
    n=$(grep -c '^  load\.p[0-9]\.t[0-9]\.u[0-9] ' <<<"$snap")
    if [ "$n" = 24 ] && grep -q '^  load\.p1\.t1\.u3  *[0-9]*  *[0-9]*  *[0-9]*  *[0-9]*  *[0-9]*  *3 ' <<<"$snap"; then ok batch-units-from-index
    else fail batch-units-from-index "$n unit rows of 24, or load.p1.t1.u3 without its 3 overloads"; fi
    entries=$(sed -n 's/.* entries \([0-9]*\).*/\1/p' <<<"$(line store)")
    if [ "$entries" = 75 ]; then ok batch-store-entries; else fail batch-store-entries "entries '$entries', want 75 (72 + 3 fill)"; fi
    if grep -q '^  .* miss  *load\.p[0-9]\.bad  .* rejected$' <<<"$snap" && grep -q '^  .* miss  *load\.p[0-9]\.dep  .* stamp$' <<<"$snap"; then
        ok batch-event-log
    else fail batch-event-log "no rejected / stamp miss events: $(grep -A4 '^EVENTS' <<<"$snap" | tr '\n' '|')"; fi
fi
# a unit's detail: its last miss and why, what left, dependency stamps
out=$("$top" -b -U load.p2.dep "$d1" 2>&1)
if grep -q 'last miss stamp (a dependency changed)' <<<"$out" && grep -q 'GONE (1)' <<<"$out" && grep -q 'stamp (a dependency changed) at' <<<"$out"; then
    ok batch-detail-stamp
else fail batch-detail-stamp "$(head -c 600 <<<"$out")"; fi
out=$("$top" -b -U load.p0.t0.u0 "$d1" 2>&1)
if grep -q 'OVERLOADS (3 stored)' <<<"$out" && grep -q 'opt  *u64   = "2"' <<<"$out" && grep -q 'entry present' <<<"$out"; then ok batch-detail-overloads
else fail batch-detail-overloads "$(head -c 600 <<<"$out")"; fi

# traced misses are explained as kcache_explain explains them
d2=$tmp/s2
KCACHE_TRACE=1 "$load" -d "$d2" -p 1 -u 2 -o 3 -n 10 -q >/dev/null 2>&1
out=$("$top" -b -U load.p0.t0.u1 "$d2" 2>&1)
if grep -q 'miss: a field differs: closest of 1 stored overload(s) of unit "load.p0.t0.u1": opt: "0" (stored) vs "1" (now)' <<<"$out" &&
   grep -q 'miss: cold: unit "load.p0.t0.u1" never stored' <<<"$out"; then ok batch-detail-traced-explained
else fail batch-detail-traced-explained "$(grep -A4 'RECENT MISSES' <<<"$out" | head -c 800)"; fi

# files with a dependency: its stamp as stored and the file now
cat >"$tmp/dep.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
int main(int argc, char **argv) {
    kcache_config c; kcache *kc; kcache_key k;
    kcache_config_init(&c); c.dir = argv[1];
    if (argc < 3 || kcache_open(&kc, &c) != KCACHE_OK) return 1;
    kcache_key_init(&k, "withdep"); kcache_key_str(&k, "source", "x"); kcache_key_file(&k, "header", argv[2]);
    kcache_put(kc, &k, "bin", 3); kcache_key_free(&k); kcache_close(kc); return 0;
}
C
echo '#define A 1' >"$tmp/dep.h"
if cc -std=c99 -I"$root" -o "$tmp/dep" "$tmp/dep.c" -lpthread 2>"$tmp/dep.err" && "$tmp/dep" "$d2" "$tmp/dep.h"; then
    a=$("$top" -b -U withdep "$d2" 2>&1)
    echo '#define A 22' >"$tmp/dep.h"
    b=$("$top" -b -U withdep "$d2" 2>&1)
    if grep -q 'header  *file  = ".*dep.h"' <<<"$a" && grep -q 'now: same' <<<"$a" && grep -q 'now: changed:.* size .*stale' <<<"$b"; then
        ok batch-detail-dependency-stamp
    else fail batch-detail-dependency-stamp "$(grep -A2 header <<<"$a$b" | head -c 600)"; fi
else
    fail batch-detail-dependency-stamp "could not build the helper: $(head -c 300 "$tmp/dep.err")"
fi

# ---- 2. live processes; one killed: its slot is reclaimed and the totals stay right -----------
d3=$tmp/s3
"$load" -d "$d3" -p 3 -u 3 -o 2 -n 300 -R -S -C -H 120 >"$tmp/load3" 2>&1 &
bg_pids+=($!)
lpid3=$!
if ! wait_for "$tmp/load3" '^stats ' 30; then fail live-setup "the load generator did not finish its work: $(cat "$tmp/load3")"; exit 1; fi
expect3=$(grep '^expect ' "$tmp/load3")
mapfile -t kids < <(sed -n 's/^child [0-9]* pid \([0-9]*\)$/\1/p' "$tmp/load3")
if snap "$d3"; then
    same_counts live-counts "$expect3" "$(line totals)" "$(line misses)"
    nlive=$(grep -c '^  [0-9][0-9]*  *[0-9]*  *[^ ]*  *live ' <<<"$snap")
    if grep -q '^stats .* processes 3$' <<<"$snap" && [ "$nlive" = 3 ]; then ok live-processes-attached
    else fail live-processes-attached "$(line stats) / $nlive live rows"; fi
fi
victim=${kids[0]:-}
kill -KILL "$victim" 2>/dev/null
sleep 0.3
if snap "$d3"; then
    same_counts killed-counts-kept "$expect3" "$(line totals)" "$(line misses)"
    if grep -q '^stats .* slots 3 of 64 claimed processes 2$' <<<"$snap" && grep -q "^  [0-9][0-9]*  *$victim  *[^ ]*  *dead " <<<"$snap"; then
        ok killed-process-shown-dead
    else fail killed-process-shown-dead "$(line stats); $(grep "$victim" <<<"$snap")"; fi
fi
"$load" -d "$d3" -P again -p 1 -u 2 -o 2 -n 100 >"$tmp/load4" 2>&1
expect4=$(grep '^expect ' "$tmp/load4")
if snap "$d3"; then
    sum=""
    for k in hits hits_mem hits_disk misses puts rejects bytes_read bytes_written cold field stamp rejected evicted; do
        sum="$sum $k=$(($(value "$k" "$expect3") + $(value "$k" "$expect4")))"
    done
    same_counts reclaimed-counts-folded "$sum" "$(line totals)" "$(line misses)"
    if grep -q '^stats .* slots 2 of 64 claimed processes 2$' <<<"$snap" && ! grep -q "^  [0-9][0-9]*  *$victim " <<<"$snap"; then
        ok killed-slot-reclaimed
    else fail killed-slot-reclaimed "$(line stats); $(grep -A5 '^PROCESSES' <<<"$snap" | tr '\n' '|')"; fi
fi
kill -TERM "$lpid3" 2>/dev/null
wait "$lpid3" 2>/dev/null
if snap "$d3"; then
    same_counts closed-counts-retired "$sum" "$(line totals)" "$(line misses)"
    if grep -q '^stats .* slots 0 of 64 claimed processes 0$' <<<"$snap"; then ok closed-slots-freed; else fail closed-slots-freed "$(line stats)"; fi
fi

# ---- 3. rates over time ----------------------------------------------------------------------
d5=$tmp/s5
"$load" -d "$d5" -p 2 -u 4 -o 2 -n 10 -D 8 -r 100 -m 10 >"$tmp/load5" 2>&1 &
bg_pids+=($!)
lpid5=$!
sleep 1
"$top" -b -n 3 -d 1 "$d5" >"$tmp/rates" 2>&1
r=$(grep '^rates/s' "$tmp/rates" | tail -1)
h=$(sed -n 's/.* hits=\([0-9]*\)\..*/\1/p' <<<"$r")
if [ -n "$h" ] && [ "$h" -ge 100 ] && [ "$h" -le 260 ] && grep -q '^history    hits' "$tmp/rates"; then ok batch-rates
else fail batch-rates "want about 180 hits/s (2 x 100 gets/s, 10% misses): '$r'"; fi

# ---- 4. the interactive view under tmux --------------------------------------------------------
if ! command -v tmux >/dev/null; then
    # `make check` (KT_SKIP_MISSING=1) runs the batch mode only where tmux is missing
    if [ "${KT_SKIP_MISSING:-0}" = 1 ]; then echo "skip tui: no tmux on PATH"
    else fail tmux "tmux is not installed (scripts/deps.sh installs it)"; fi
else
    T() { tmux -L "$sock" "$@"; }
    pane() { T capture-pane -p -t kt 2>/dev/null; }
    # wait_pane PATTERN SECONDS: the pane shows PATTERN (a grep -E regex)
    wait_pane() {
        local i
        for ((i = 0; i < $2 * 10; i++)); do pane | grep -q -E -- "$1" && return 0; sleep 0.1; done
        return 1
    }
    T -f /dev/null new-session -d -s kt -x 120 -y 40 "$top -d 1 '$d5'; echo kcache-top-exited-\$?; sleep 30"
    if wait_pane 'hits/s +[1-9]' 8 && pane | grep -q 'UNITS' && pane | grep -q -E '^ load\.p[01]\.t0\.u[0-3] ' &&
       pane | grep -q -E '(put|miss) +load\.p'; then ok tui-units-rates-events
    else fail tui-units-rates-events "$(pane | head -30 | tr '\n' '|')"; fi
    T send-keys -t kt s
    if wait_pane 'sort: misses' 3; then ok tui-sort-key; else fail tui-sort-key "$(pane | grep UNITS)"; fi
    order_m=$(pane | grep -E '^ load\.' | awk '{print $3}' | head -8 | tr '\n' ' ')
    sorted=$(tr ' ' '\n' <<<"$order_m" | grep . | sort -rn | tr '\n' ' ')
    if [ -n "$order_m" ] && [ "$order_m" = "$sorted" ]; then ok tui-sorted-by-misses; else fail tui-sorted-by-misses "misses column '$order_m'"; fi
    T send-keys -t kt s s s
    wait_pane 'sort: hits' 3
    T send-keys -t kt Down Enter
    if wait_pane '^UNIT load\.p' 3 && wait_pane 'last miss +field \(a field differs\)' 3 && pane | grep -q 'OVERLOADS'; then
        ok tui-enter-detail-last-miss
    else fail tui-enter-detail-last-miss "$(pane | head -12 | tr '\n' '|')"; fi
    T send-keys -t kt Escape
    if wait_pane 'EVENTS newest first' 3; then ok tui-escape-back; else fail tui-escape-back "$(pane | head -5 | tr '\n' '|')"; fi
    T send-keys -t kt p
    if wait_pane 'PAUSED' 3; then ok tui-pause; else fail tui-pause "$(pane | head -1)"; fi
    T send-keys -t kt p '?'
    if wait_pane 'cycle the units' 3; then ok tui-help; else fail tui-help "$(pane | head -5 | tr '\n' '|')"; fi
    T send-keys -t kt x
    T resize-window -t kt -x 60 -y 14
    sleep 1.5
    if pane | grep -q 'kcache-top' && pane | grep -q 'UNITS' && [ "$(pane | wc -l)" -le 14 ] && ! pane | grep -q kcache-top-exited; then
        T resize-window -t kt -x 30 -y 5
        sleep 0.5
        small=$(pane)
        T resize-window -t kt -x 120 -y 40
        if wait_pane 'EVENTS newest first' 4 && ! pane | grep -q kcache-top-exited && grep -q 'too small' <<<"$small"; then ok tui-resize
        else fail tui-resize "after growing again: $(pane | head -3 | tr '\n' '|') / small: $small"; fi
    else
        fail tui-resize "$(pane | tr '\n' '|')"
    fi
    T send-keys -t kt q
    if wait_pane 'kcache-top-exited-0' 4; then ok tui-q-exits; else fail tui-q-exits "$(pane | tail -3 | tr '\n' '|')"; fi
    T kill-server 2>/dev/null
fi
kill -TERM "$lpid5" 2>/dev/null
wait "$lpid5" 2>/dev/null

# ---- 5. errors, and a store never written to ----------------------------------------------------
"$top" -b "$tmp/does-not-exist" >"$tmp/o" 2>"$tmp/e"
rc=$?
if [ $rc -eq 2 ] && grep -q 'never appeared: .*does-not-exist still does not exist after 1 snapshot' "$tmp/o"; then ok missing-dir-exit-2
else fail missing-dir-exit-2 "status $rc: $(cat "$tmp/o" "$tmp/e")"; fi
"$top" -b -n 3 -d 0.05 "$tmp/does-not-exist" >"$tmp/o" 2>"$tmp/e"
rc=$?
if [ $rc -eq 2 ] && [ "$(grep -c 'none yet: .*does not exist; waiting' "$tmp/o")" = 2 ] && [ "$(grep -c '^kcache-top snapshot' "$tmp/o")" = 3 ] &&
   tail -1 "$tmp/o" | grep -q 'never appeared'; then ok batch-waits-each-snapshot-then-says-never-appeared
else fail batch-waits-each-snapshot-then-says-never-appeared "status $rc: $(tr '\n' '|' <"$tmp/o")"; fi

# ---- 5b. kcache-top started before the store exists: it waits, then shows it (issue 28) ----------
d7=$tmp/s7
"$top" -b -n 600 -d 0.1 "$d7" >"$tmp/o7" 2>"$tmp/e7" &
tpid7=$!
bg_pids+=("$tpid7")
if wait_for "$tmp/o7" 'none yet: .*waiting for a program' 20; then
    "$load" -d "$d7" -p 1 -t 1 -u 2 -o 1 -n 5 -q >"$tmp/load7" 2>&1
    if wait_for "$tmp/o7" '^store      bytes [1-9].* entries 2 ' 30; then ok batch-started-before-store-shows-it
    else fail batch-started-before-store-shows-it "$(tail -5 "$tmp/o7" | tr '\n' '|') $(head -c 300 "$tmp/e7")"; fi
else fail batch-started-before-store-shows-it "status: exited early? $(head -c 300 "$tmp/o7" "$tmp/e7" | tr '\n' '|')"; fi
kill -TERM "$tpid7" 2>/dev/null
wait "$tpid7" 2>/dev/null
if command -v tmux >/dev/null; then
    T() { tmux -L "$sock" "$@"; }
    pane() { T capture-pane -p -t kw 2>/dev/null; }
    wait_pane() {
        local i
        for ((i = 0; i < $2 * 10; i++)); do pane | grep -q -E -- "$1" && return 0; sleep 0.1; done
        return 1
    }
    d8=$tmp/s8
    T -f /dev/null new-session -d -s kw -x 120 -y 40 "$top -d 0.2 '$d8'; echo kcache-top-exited-\$?; sleep 30"
    if wait_pane 'does not exist yet: waiting for it to appear' 10; then
        "$load" -d "$d8" -p 1 -t 1 -u 2 -o 1 -n 5 -q >"$tmp/load8" 2>&1
        if wait_pane 'UNITS' 20 && ! pane | grep -q kcache-top-exited; then ok tui-started-before-store-waits-then-shows-it
        else fail tui-started-before-store-waits-then-shows-it "$(pane | head -12 | tr '\n' '|')"; fi
    else fail tui-started-before-store-waits-then-shows-it "no waiting screen: $(pane | head -8 | tr '\n' '|')"; fi
    T send-keys -t kw q
    if wait_pane 'kcache-top-exited-0' 4; then ok tui-waiting-q-exits; else fail tui-waiting-q-exits "$(pane | tail -3 | tr '\n' '|')"; fi
    T kill-server 2>/dev/null
else echo "skip tui-started-before-store: no tmux"; fi

# ---- 5c. -U after the processes exited: the store's own record, said as such (issue 28) ---------
d9=$tmp/s9
"$load" -d "$d9" -p 1 -t 1 -u 1 -o 1 -n 0 -R -q >"$tmp/load9" 2>&1
unit9=load.p0.t0.u0
"$top" -b -U "$unit9" "$d9" >"$tmp/o" 2>"$tmp/e"
disk9=$(grep -c "hit-disk" <("$top" -b "$d9"))
if grep -q '^  in log    hits [1-9][0-9]* (memory [0-9]* sampled, disk [1-9]' "$tmp/o" && grep -q "the store's own record" "$tmp/o" &&
   grep -q 'processes attached while kcache-top ran' "$tmp/o"; then ok detail-after-exit-shows-store-record
else fail detail-after-exit-shows-store-record "($disk9 disk-hit events) $(head -8 "$tmp/o" | tr '\n' '|')"; fi
"$top" -b "$tmp/dep.h" >"$tmp/o" 2>"$tmp/e"
rc=$?
if [ $rc -eq 2 ] && grep -q 'not a directory' "$tmp/e"; then ok file-not-dir-exit-2; else fail file-not-dir-exit-2 "status $rc: $(cat "$tmp/e")"; fi
if [ "$(id -u)" != 0 ]; then
    mkdir -p "$tmp/locked" && chmod 000 "$tmp/locked"
    "$top" -b "$tmp/locked" >"$tmp/o" 2>"$tmp/e"
    rc=$?
    chmod 700 "$tmp/locked"
    if [ $rc -eq 2 ] && grep -q -i 'permission denied' "$tmp/e"; then ok unreadable-dir-exit-2; else fail unreadable-dir-exit-2 "status $rc: $(cat "$tmp/e")"; fi
fi
"$top" "$d1" </dev/null >"$tmp/o" 2>"$tmp/e"
rc=$?
if [ $rc -eq 2 ] && grep -q 'not a terminal' "$tmp/e"; then ok no-terminal-exit-2; else fail no-terminal-exit-2 "status $rc: $(cat "$tmp/e")"; fi
# --help: the options, every interactive key the event loop handles, and the exit status
"$top" --help >"$tmp/o" 2>"$tmp/e"
rc=$?
missing=""
for want in '-d SECS' '-b ' '-n N' 'keys (interactive)' '  q  ' '  p  ' '  s  ' '  Tab  ' '  Enter  ' '  Esc  ' '  ? or h  ' \
            'PgUp' 'exit status: 0; 2 for a usage error'; do
    grep -qF -- "$want" "$tmp/o" || missing="$missing [$want]"
done
if [ $rc -eq 0 ] && [ -z "$missing" ] && [ ! -s "$tmp/e" ]; then ok help-lists-keys-and-exit-status
else fail help-lists-keys-and-exit-status "status $rc, missing:$missing"; fi
mkdir -p "$tmp/empty"
if snap "$tmp/empty" && grep -q 'no config.file' <<<"$snap" && grep -q '^stats .*no stats file.* processes 0' <<<"$snap"; then ok empty-dir
else fail empty-dir "$(head -3 <<<"$snap")"; fi

# kcache_load --help: what it does and every option (not only the usage line), exit 0 (issue 28)
"$load" --help >"$tmp/o" 2>"$tmp/e"
rc=$?
missing=""
for want in 'usage: kcache_load' 'load generator' '-D SECONDS' '-R ' '-S ' '-C ' '-H SECONDS' '-P PREFIX' 'Exit status'; do
    grep -qF -- "$want" "$tmp/o" || missing="$missing [$want]"
done
if [ $rc -eq 0 ] && [ -z "$missing" ]; then ok load-help-explains-options; else fail load-help-explains-options "status $rc, missing:$missing"; fi

# ---- 5d. machine-readable output: --json and --prometheus (issue 35 item 7) ------------------------
# the counters equal what the text snapshot shows (d1: hits, misses of every reason, puts, evictions, rejects)
if snap "$d1"; then
    tot=$(line totals)
    mis=$(line misses)
    "$top" -b --json "$d1" >"$tmp/j1" 2>"$tmp/e"
    rc=$?
    "$top" -b --prometheus "$d1" >"$tmp/p1" 2>>"$tmp/e"
    rc=$((rc + $?))
    if [ $rc -ne 0 ]; then fail metrics-run "status $rc: $(head -c 300 "$tmp/e")"; fi
    # the JSON: one object per line that parses (python3 when present, else its shape)
    if command -v python3 >/dev/null; then
        jcounts=$(python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, "%d lines" % len(lines)
o = json.loads(lines[0])
h = o["hits"]
print("hits=%d hits_mem=%d hits_disk=%d misses=%d puts=%d rejects=%d evictions=%d bytes_read=%d bytes_written=%d store_bytes=%d %s" % (
    sum(h.values()), h["memory"], h["store"], sum(o["misses"].values()), o["puts"], o["rejects"], o["evictions"], o["bytes_read"],
    o["bytes_written"], o["store_bytes"], " ".join("%s=%d" % kv for kv in o["misses"].items())))
assert isinstance(o["shards"], list) and isinstance(o["nodes"], list)
' "$tmp/j1" 2>&1) || { fail metrics-json-parses "$jcounts: $(head -c 300 "$tmp/j1")"; jcounts=""; }
    else
        jcounts=$(sed -e 's/"hits":{"memory":\([0-9]*\),"store":\([0-9]*\),[^}]*}/ hits_mem=\1 hits_disk=\2/' -e 's/"\([a-z_]*\)":/ \1=/g' "$tmp/j1")
        if [ "$(wc -l <"$tmp/j1")" = 1 ] && grep -q '^{"time":[0-9.]*,"dir":".*}$' "$tmp/j1"; then :; else fail metrics-json-parses "shape: $(head -c 300 "$tmp/j1")"; fi
    fi
    if [ -n "$jcounts" ]; then
        bad=""
        for k in hits_mem hits_disk puts rejects evictions bytes_read bytes_written; do
            [ "$(value "$k" " $jcounts")" = "$(value "$k" "$tot")" ] || bad="$bad $k: json $(value "$k" " $jcounts") text $(value "$k" "$tot");"
        done
        for k in cold field stamp rejected evicted; do
            [ "$(value "$k" " $jcounts")" = "$(value "$k" " $mis")" ] || bad="$bad $k: json $(value "$k" " $jcounts") text $(value "$k" " $mis");"
        done
        if [ -z "$bad" ] && [ "$(value hits_mem " $jcounts")" -gt 0 ] && [ "$(value rejected " $jcounts")" -gt 0 ]; then ok metrics-json-counts-as-text
        else fail metrics-json-counts-as-text "$bad ($jcounts)"; fi
    fi
    # Prometheus: every sample after its family's HELP and TYPE, names as DESIGN lists them, counters
    # in _total, labels quoted; the same counts
    pv=$(bash "$root/tests/prom_check.sh" "$tmp/p1" 2>&1)
    if [ $? -eq 0 ]; then ok metrics-prometheus-format; else fail metrics-prometheus-format "$pv"; fi
    pval() { sed -n "s/^$1 \([0-9.]*\)$/\1/p" "$tmp/p1" | head -1; }
    bad=""
    [ "$(pval 'kcache_hits_total{tier="memory"}')" = "$(value hits_mem "$tot")" ] || bad="$bad memory"
    [ "$(pval 'kcache_hits_total{tier="store"}')" = "$(value hits_disk "$tot")" ] || bad="$bad store"
    [ "$(pval kcache_puts_total)" = "$(value puts "$tot")" ] || bad="$bad puts"
    [ "$(pval kcache_evictions_total)" = "$(value evictions "$tot")" ] || bad="$bad evictions"
    [ "$(pval kcache_rejects_total)" = "$(value rejects "$tot")" ] || bad="$bad rejects"
    for k in cold field stamp rejected evicted; do
        [ "$(pval "kcache_misses_total{reason=\"$k\"}")" = "$(value "$k" " $mis")" ] || bad="$bad $k"
    done
    for n in kcache_builds_total kcache_build_waits_total kcache_builds_claimed_elsewhere_total kcache_store_bytes kcache_store_limit_bytes \
             kcache_remote_calls_total kcache_remote_breaker_open; do
        grep -q "^# TYPE $n " "$tmp/p1" || bad="$bad no-$n"
    done
    if [ -z "$bad" ]; then ok metrics-prometheus-counts-as-text; else fail metrics-prometheus-counts-as-text "differ:$bad"; fi
fi
# an evicting store: evictions counted alike
d10=$tmp/s10
KCACHE_MAX_SIZE=24K "$load" -d "$d10" -p 1 -t 1 -u 8 -o 4 -n 2 -s 2048 -q >/dev/null 2>&1
if snap "$d10"; then
    ev=$(value evictions "$(line totals)")
    pe=$("$top" -b --prometheus "$d10" | sed -n 's/^kcache_evictions_total \([0-9]*\)$/\1/p')
    je=$("$top" -b --json "$d10" | sed -n 's/.*,"evictions":\([0-9]*\),.*/\1/p')
    if [ -n "$ev" ] && [ "$ev" -gt 0 ] && [ "$pe" = "$ev" ] && [ "$je" = "$ev" ]; then ok metrics-evictions
    else fail metrics-evictions "text '$ev' prometheus '$pe' json '$je'"; fi
fi
# -n 3: three JSON lines; --output: the file is replaced whole, never seen partial, no temp left
"$top" -b --json -n 3 -d 0.05 "$d1" >"$tmp/j3" 2>&1
if [ "$(grep -c '^{"time":.*}$' "$tmp/j3")" = 3 ] && [ "$(wc -l <"$tmp/j3")" = 3 ]; then ok metrics-json-line-per-snapshot
else fail metrics-json-line-per-snapshot "$(head -c 300 "$tmp/j3")"; fi
mkdir -p "$tmp/textfile"
prom=$tmp/textfile/kcache.prom
"$top" -b --prometheus --output "$prom" -n 100 -d 0.05 "$d1" >"$tmp/o" 2>"$tmp/e" &
tpid=$!
partial=0 reads=0 temps=""
while kill -0 "$tpid" 2>/dev/null; do
    if [ -f "$prom" ]; then
        c=$(cat "$prom" 2>/dev/null)
        reads=$((reads + 1))
        # complete: it starts with the first family and ends with the last one's sample and a newline
        if [ "${c:0:36}" != "# HELP kcache_stats_file_present 1 w" ] || ! grep -q '^kcache_remote_breaker_opened_timestamp_seconds\|^# TYPE kcache_remote_breaker_opened_timestamp_seconds gauge$' <<<"$c" ||
           [ "$(tail -c 1 "$prom" | od -An -c | tr -d ' ')" != '\n' ]; then partial=$((partial + 1)); fi
    fi
    for f in "$tmp/textfile"/* "$tmp/textfile"/.*; do
        case "$f" in */kcache.prom|*/.|*/..|*'/*'|*'/.*') ;; *) temps="$f" ;; esac
    done
done
wait "$tpid"
rc=$?
left=$(ls -A "$tmp/textfile")
if [ $rc -eq 0 ] && [ $partial -eq 0 ] && [ $reads -gt 5 ] && [ "$left" = kcache.prom ] && bash "$root/tests/prom_check.sh" "$prom" >/dev/null 2>&1 &&
   [ ! -s "$tmp/o" ]; then ok metrics-output-atomic
else fail metrics-output-atomic "status $rc, $partial partial of $reads reads, left: $left, temp seen: $temps, $(head -c 200 "$tmp/e")"; fi
case "$temps" in ''|*/.kcache.prom.*) ;; *) fail metrics-output-temp-name "a temp file not named .kcache.prom.*: $temps" ;; esac
"$top" -b --json --output "$tmp/nodir/x.json" "$d1" >/dev/null 2>"$tmp/e"
rc=$?
if [ $rc -eq 2 ] && grep -q 'cannot write' "$tmp/e"; then ok metrics-output-unwritable-exit-2; else fail metrics-output-unwritable-exit-2 "status $rc: $(cat "$tmp/e")"; fi
"$top" -b --json --prometheus "$d1" >/dev/null 2>&1
[ $? -eq 2 ] && "$top" -b --output "$tmp/x" "$d1" >/dev/null 2>&1
if [ $? -eq 2 ]; then ok metrics-usage-errors; else fail metrics-usage-errors "--json --prometheus or --output alone accepted"; fi
# a directory that never appears: the JSON says so, the status is 2
out=$("$top" -b --json "$tmp/never" 2>/dev/null)
rc=$?
if [ $rc -eq 2 ] && grep -q '"stats":null' <<<"$out"; then ok metrics-missing-dir; else fail metrics-missing-dir "status $rc: $out"; fi
# text from the stats file is escaped: a unit and a process name with a quote, a backslash, controls
cat >"$tmp/odd.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
int main(int argc, char **argv) {
    kcache_config c; kcache *kc; kcache_key k; const void *d; size_t n;
    kcache_config_init(&c); c.dir = argv[1];
    if (argc < 2 || kcache_open(&kc, &c) != KCACHE_OK) return 1;
    kcache_key_init(&k, "odd\"unit\\\x01\x1b[31m"); kcache_key_str(&k, "s", "x");
    kcache_get(kc, &k, &d, &n); kcache_put(kc, &k, "b", 1);
    kcache_key_free(&k); kcache_close(kc); return 0;
}
C
if cc -std=c99 -I"$root" -o "$tmp/odd\"q" "$tmp/odd.c" -lpthread 2>"$tmp/odd.err" && "$tmp/odd\"q" "$tmp/s11"; then
    "$top" -b --json "$tmp/s11" >"$tmp/j11" 2>&1
    "$top" -b --prometheus "$tmp/s11" >"$tmp/p11" 2>&1
    if { ! command -v python3 >/dev/null || python3 -c 'import json,sys; json.loads(open(sys.argv[1]).read())' "$tmp/j11"; } &&
       ! grep -q $'[\x01\x1b]' "$tmp/j11" "$tmp/p11" && bash "$root/tests/prom_check.sh" "$tmp/p11" >/dev/null 2>&1; then ok metrics-escaped
    else fail metrics-escaped "$(head -c 300 "$tmp/j11")"; fi
else fail metrics-escaped "could not build the helper: $(head -c 300 "$tmp/odd.err")"; fi

# ---- 5e. KCACHE_STATS_DIR: a memory-only process publishes there (issue 35 item 7) -----------------
sd=$tmp/statsdir
KCACHE_PERSISTENT=0 KCACHE_STATS_DIR=$sd "$load" -d "$tmp/unused" -p 2 -u 2 -o 2 -n 10 -H 60 >"$tmp/load12" 2>&1 &
lpid12=$!
bg_pids+=($lpid12)
if wait_for "$tmp/load12" '^stats ' 30; then
    stats12=$(grep '^stats ' "$tmp/load12")
    out=$("$top" -b --prometheus "$sd" 2>&1)
    if [ ! -e "$tmp/unused" ] && grep -q '^kcache_processes 2$' <<<"$out" &&
       [ "$(sed -n 's/^kcache_hits_total{tier="memory"} //p' <<<"$out")" = "$(value hits_mem "$stats12")" ] &&
       [ "$(sed -n 's/^kcache_puts_total //p' <<<"$out")" = "$(value puts "$stats12")" ] && [ "$(value puts "$stats12")" -gt 0 ] &&
       [ "$(stat -c %a "$sd")" = 700 ] && [ "$(ls -A "$sd" | tr '\n' ' ')" = "stats tmp " ]; then ok stats-dir-memory-only-publishes
    else fail stats-dir-memory-only-publishes "$stats12 / $(grep -E '^kcache_(processes|hits_total|puts_total)' <<<"$out" | tr '\n' '|') / $(ls -lA "$sd" "$tmp/unused" 2>&1 | tr '\n' '|')"; fi
else fail stats-dir-memory-only-publishes "the load generator did not finish: $(head -c 300 "$tmp/load12")"; fi
kill -TERM "$lpid12" 2>/dev/null
wait "$lpid12" 2>/dev/null
# hostile KCACHE_STATS_DIR: a directory others may write, one holding files not kcache's, and (as
# root) another user's directory and a symlink another user owns: refused with a message, nothing
# made there, and the process still runs. (A symlink of one's own is followed, as a store's is.)
mkdir -p "$tmp/real" && chmod 700 "$tmp/real"
mkdir -p "$tmp/open" && chmod 777 "$tmp/open"
mkdir -p "$tmp/notours" && chmod 700 "$tmp/notours" && echo x >"$tmp/notours/precious.txt"
hostile="open notours"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    mkdir -p "$tmp/theirs" && chown nobody "$tmp/theirs" && chmod 700 "$tmp/theirs"
    ln -s "$tmp/real" "$tmp/link" && chown -h nobody "$tmp/link"
    hostile="$hostile theirs link"
fi
for bad in $hostile; do
    out=$(KCACHE_PERSISTENT=0 KCACHE_DEBUG=1 KCACHE_STATS_DIR=$tmp/$bad "$load" -d "$tmp/unused" -p 1 -u 1 -o 1 -n 3 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q '^stats .*hits=3' <<<"$out" && grep -q 'KCACHE_STATS_DIR refused' <<<"$out" && [ -z "$(ls -A "$tmp/real")" ] &&
       [ ! -e "$tmp/$bad/stats" ] && [ ! -e "$tmp/$bad/tmp" ]; then ok "stats-dir-refused-$bad"
    else fail "stats-dir-refused-$bad" "status $rc: $(grep -E 'stats|refused' <<<"$out" | head -3 | tr '\n' '|') $(ls -A "$tmp/$bad" "$tmp/real" | tr '\n' ' ')"; fi
done

# ---- 5f. numba units (issue 36): kcache_numba's unit names ("numba:" and numba's file name base,
# module.qualname-LINE.pyXY) shown as module.qualname[signatures], from the numba.signature fields
# of the unit's overloads, in the lists and the events, live (the writer stays attached)
cat >"$tmp/nb.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include <unistd.h>
static void one(kcache *kc, const char *unit, const char *sig) {
    kcache_key k; const void *d; size_t n;
    kcache_key_init(&k, unit);
    kcache_key_str(&k, "numba.signature", sig);
    kcache_key_str(&k, "numba.cpu_name", "generic");
    if (kcache_get(kc, &k, &d, &n) == KCACHE_OK) kcache_release(kc, d);
    else kcache_put(kc, &k, "code", 4);
    kcache_key_free(&k);
}
int main(int argc, char **argv) {
    kcache_config c; kcache *kc;
    kcache_config_init(&c); c.dir = argv[1];
    if (argc < 2 || kcache_open(&kc, &c) != KCACHE_OK) return 1;
    one(kc, "numba:mod.f-11.py311", "(int64,)");
    one(kc, "numba:mod.f-11.py311", "(float64,)");
    one(kc, "numba:pkg.sub.Grid.step-42.py311", "(array(float64, 2d, C), int64)");
    one(kc, "numba:mod.f-11.py311", "(int64,)"); /* a hit */
    puts("done"); fflush(stdout);
    sleep(60);
    kcache_close(kc); return 0;
}
C
d13=$tmp/s13
if cc -std=c99 -I"$root" -o "$tmp/nb" "$tmp/nb.c" -lpthread 2>"$tmp/nb.err"; then
    "$tmp/nb" "$d13" >"$tmp/nb.out" 2>&1 &
    nbpid=$!
    bg_pids+=($nbpid)
    wait_for "$tmp/nb.out" '^done' 20
    snap "$d13"
    if grep -q -E '^  mod\.f\[(int64\|float64|float64\|int64)\] +[0-9]+ ' <<<"$snap" &&
       grep -q -E '^  pkg\.sub\.Grid\.step\[array\(float64, 2d, C\), int64\] ' <<<"$snap" &&
       grep -q -E ' put +mod\.f\[' <<<"$snap" && ! grep -q 'numba:' <<<"$snap"; then ok numba-units-named-by-function-and-signature
    else fail numba-units-named-by-function-and-signature "$(grep -A4 '^UNITS' <<<"$snap" | tr '\n' '|')"; fi
    "$top" -b -U numba:mod.f-11.py311 "$d13" >"$tmp/nbu" 2>&1
    if grep -q -E '^UNIT numba:mod\.f-11\.py311  \(numba: mod\.f\[' "$tmp/nbu"; then ok numba-unit-detail-names-both
    else fail numba-unit-detail-names-both "$(head -3 "$tmp/nbu" | tr '\n' '|')"; fi
    if command -v tmux >/dev/null; then
        T() { tmux -L "$sock" "$@"; }
        T -f /dev/null new-session -d -s nb -x 120 -y 40 "$top -d 0.5 '$d13'; sleep 30"
        for i in $(seq 1 80); do T capture-pane -p -t nb 2>/dev/null | grep -q -E '^ mod\.f\[' && break; sleep 0.1; done
        pane13=$(T capture-pane -p -t nb 2>/dev/null)
        T kill-session -t nb 2>/dev/null
        if grep -q -E '^ mod\.f\[(int64\|float64|float64\|int64)\] ' <<<"$pane13" && grep -q -E '^ pkg\.sub\.Grid\.step\[' <<<"$pane13"; then
            ok tui-numba-units
        else fail tui-numba-units "$(tr '\n' '|' <<<"$pane13" | head -c 600)"; fi
    fi
    kill -TERM "$nbpid" 2>/dev/null
    wait "$nbpid" 2>/dev/null
else fail numba-units-named-by-function-and-signature "could not build the helper: $(head -c 300 "$tmp/nb.err")"; fi

# ---- 6. kcache-top never writes to the store ------------------------------------------------------
before=$(cd "$d1" && find . -printf '%p %s %T@ %m\n' | sort; md5sum stats config.file 2>/dev/null)
"$top" -b -n 2 -d 0.2 "$d1" >/dev/null 2>&1
"$top" -b -U load.p0.t0.u0 "$d1" >/dev/null 2>&1
after=$(cd "$d1" && find . -printf '%p %s %T@ %m\n' | sort; md5sum stats config.file 2>/dev/null)
if [ "$before" = "$after" ]; then ok read-only; else fail read-only "the store changed: $(diff <(echo "$before") <(echo "$after") | head -5 | tr '\n' '|')"; fi

[ $failures -eq 0 ]

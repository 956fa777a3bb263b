#!/usr/bin/env bash
# test_store_cmds.sh - kcache-inspect's store commands (--evict-older-than AGE, --trim SIZE,
# --remove-unit NAME, --clear; a dry run unless --yes) and the library calls they are made of
# (kcache_evict_older_than, kcache_trim, kcache_remove_unit, kcache_clear): exactly what each
# removes, on stores whose last uses are set (tests/make_store.c's "age"), the exit statuses, another
# user's store refused, and a storm of processes using the store while the commands run, after
# which --verify finds the accounting exact and every entry sound.
# Usage: tests/test_store_cmds.sh KCACHE_INSPECT MAKE_STORE KCACHE_LOAD   Prints "ok NAME" / "FAIL NAME: why".
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
ins=${1:-$root/build/kcache-inspect}
mk=${2:-$root/build/make_store}
load=${3:-$root/build/kcache_load}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-storecmds.XXXXXX")
bg=()
cleanup() {
    local p
    for p in "${bg[@]}"; do kill -TERM -- "$p" 2>/dev/null; done
    chmod -R u+rwx "$tmp" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
unset KCACHE_DIR KCACHE_ENABLE KCACHE_PERSISTENT KCACHE_DEBUG KCACHE_MAX_SIZE KCACHE_LAYERS KCACHE_REMOTE KCACHE_TRACE
failures=0
ok() { echo "ok $1"; }
fail() { echo "FAIL $1: $2"; failures=$((failures + 1)); }
for f in "$ins" "$mk" "$load"; do [ -x "$f" ] || { fail prerequisites "$f is not an executable (build it first)"; exit 1; }; done

# a store of units a (3 overloads), b (2), c (1), 1000 bytes each; some used long ago
fill() {
    local d=$1 u i
    rm -rf "$d"
    for u in a:3 b:2 c:1; do
        for ((i = 0; i < ${u#*:}; i++)); do "$mk" put "$d" "${u%%:*}" 1000 "u:i=$i" || return 1; done
    done
}
hits() { "$mk" get "$1" "$2" "u:i=$3" | grep -q '^hit '; }
entries() { "$ins" "$1" | sed -n 's/^accounted .* in \([0-9]*\) entries.*/\1/p'; }
consistent() { "$ins" --verify "$1" >"$tmp/v" 2>&1 && grep -q '^verdict    consistent' "$tmp/v" && grep -q '^real .*: as accounted' "$tmp/v"; }

# ---- dry runs change nothing, and say what --yes would do ----------------------------------------
d=$tmp/dry
fill "$d" || fail setup "make_store put failed"
before=$(cd "$d" && find . -type f -name '*.kc[ei]' | sort)
out=$("$ins" --clear "$d"); rc=$?
after=$(cd "$d" && find . -type f -name '*.kc[ei]' | sort)
if [ $rc = 0 ] && [ "$before" = "$after" ] && grep -q '^would remove 6 entries ([0-9]* bytes)' <<<"$out" && grep -q -- '--clear --yes' <<<"$out"
then ok dry-run-changes-nothing; else fail dry-run-changes-nothing "status $rc: $out"; fi
out=$("$ins" --remove-unit 'a b' "$d")
if grep -q "^would remove 0 entries" <<<"$out" && grep -qF -- "--remove-unit 'a b' --yes" <<<"$out"; then ok dry-run-command-quoted
else fail dry-run-command-quoted "$out"; fi

# ---- --evict-older-than: exactly the entries unused for longer -------------------------------------
d=$tmp/old
fill "$d"
"$mk" age "$d" a 7200 u:i=0 && "$mk" age "$d" b 90000 u:i=1 && "$mk" age "$d" c 600 u:i=0 || fail setup "make_store age failed"
out=$("$ins" --evict-older-than 1h "$d"); n1=$(entries "$d")
out2=$("$ins" --evict-older-than 1h --yes "$d"); rc=$?
if grep -q '^would remove 2 entries' <<<"$out" && [ "$n1" = 6 ] && [ $rc = 0 ] && grep -q '^removed 2 entries .*; it now holds 4 entries' <<<"$out2" &&
   ! hits "$d" a 0 && ! hits "$d" b 1 && hits "$d" a 1 && hits "$d" b 0 && hits "$d" c 0 && consistent "$d"
then ok evict-older-than-1h; else fail evict-older-than-1h "$out / $out2 / entries $n1 -> $(entries "$d")"; fi
out=$("$ins" --evict-older-than 1d --yes "$d")
if grep -q '^removed 0 entries' <<<"$out"; then ok evict-older-than-1d-none; else fail evict-older-than-1d-none "$out"; fi
for age in 90s 30m 12h 7d 45; do "$ins" --evict-older-than "$age" "$d" >/dev/null 2>&1 || fail "age-$age" "not taken"; done
ok ages-90s-30m-12h-7d

# ---- --trim: least recently used first, down to SIZE ---------------------------------------------------
d=$tmp/trim
fill "$d"
"$mk" age "$d" c 5000 u:i=0; "$mk" age "$d" a 4000 u:i=2; "$mk" age "$d" b 3000 u:i=0
size=$("$ins" "$d" | sed -n 's/^accounted .*(\([0-9]*\) bytes)$/\1/p')
one=$((size / 6))
out=$("$ins" --trim $((size - 2 * one)) --yes "$d"); rc=$?
left=$("$ins" "$d" | sed -n 's/^accounted .*(\([0-9]*\) bytes)$/\1/p')
if [ $rc = 0 ] && grep -q '^removed 2 entries' <<<"$out" && [ "$left" -le $((size - 2 * one)) ] && ! hits "$d" c 0 && ! hits "$d" a 2 &&
   hits "$d" b 0 && hits "$d" a 0 && consistent "$d"
then ok trim-least-recent-first; else fail trim-least-recent-first "$out (store $size -> $left bytes)"; fi
out=$("$ins" --trim 1K --yes "$d")
left=$("$ins" "$d" | sed -n 's/^accounted .*(\([0-9]*\) bytes)$/\1/p')
if [ "$left" -le 1024 ] && consistent "$d"; then ok trim-size-suffix; else fail trim-size-suffix "$out ($left bytes left)"; fi

# ---- --remove-unit and --clear ------------------------------------------------------------------------
d=$tmp/unit
fill "$d"
ix=$(cd "$d" && ls i/*/*.kci | wc -l)
out=$("$ins" --remove-unit a --yes "$d")
if grep -q '^removed 3 entries' <<<"$out" && ! hits "$d" a 0 && ! hits "$d" a 2 && hits "$d" b 1 && hits "$d" c 0 &&
   [ "$(cd "$d" && ls i/*/*.kci | wc -l)" = $((ix - 1)) ] && consistent "$d" && "$mk" get "$d" a u:i=0 | grep -q 'never stored'
then ok remove-unit; else fail remove-unit "$out; $("$mk" get "$d" a u:i=0)"; fi
out=$("$ins" --clear --yes "$d")
if grep -q '^removed 3 entries .*; it now holds 0 entries, 0 bytes' <<<"$out" && ! hits "$d" b 1 && consistent "$d" &&
   [ -z "$(cd "$d" && find e -type f)" ]
then ok clear; else fail clear "$out"; fi

# ---- exit statuses and refusals ------------------------------------------------------------------------
bad() { # NAME WANT-IN-STDERR ARGS...
    local name=$1 want=$2; shift 2
    "$ins" "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?
    if [ $rc = 2 ] && grep -q -- "$want" "$tmp/e"; then ok "$name"; else fail "$name" "status $rc: $(cat "$tmp/o" "$tmp/e" | head -c 300)"; fi
}
bad bad-age 'is not an age' --evict-older-than 5x "$d"
bad bad-size 'is not a size' --trim 12Q "$d"
bad missing-dir 'No such file' --clear "$tmp/nothing"
[ ! -e "$tmp/nothing" ] || fail missing-dir-not-made "a store was made at $tmp/nothing"
mkdir "$tmp/plain"
bad not-a-store 'not a kcache store' --clear --yes "$tmp/plain"
bad two-commands 'one store command' --clear --trim 1K "$d"
bad no-dir 'one store DIR' --clear
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    d=$tmp/theirs
    fill "$d"
    chown -R nobody "$d"
    bad another-users-store 'owned by another user' --clear --yes "$d"
    if [ "$(cd "$d" && find e -type f | wc -l)" = 6 ]; then ok another-users-store-untouched; else fail another-users-store-untouched "entries removed"; fi
else echo "skip another-users-store: needs root and a user nobody to own a store"; fi
d=$tmp/ro
fill "$d"
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
    out=$(unshare -m bash -c 'mount --make-rprivate / && mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && "$2" --clear --yes "$1"; echo "rc=$?"' _ "$d" "$ins" 2>&1)
    if grep -q 'rc=2' <<<"$out" && grep -q 'read-only' <<<"$out"; then ok read-only-store-refused; else fail read-only-store-refused "$out"; fi
else echo "skip read-only-store-refused: needs root and unshare -m for a read-only mount"; fi

# ---- a storm: processes using the store while every command runs, then --verify ------------------
d=$tmp/storm
KCACHE_MAX_SIZE=4M "$load" -d "$d" -p 4 -t 2 -u 6 -o 3 -n 50 -q >/dev/null 2>&1
# its own process group (bash's job control: no setsid needed), ended as a whole; a small limit
# keeps the store and --verify small
set -m
KCACHE_MAX_SIZE=4M "$load" -d "$d" -p 4 -t 2 -u 6 -o 3 -D 3600 -r 0 -m 30 -q -P storm >"$tmp/storm.out" 2>&1 &
lpid=$!
set +m
bg+=("-$lpid")
runs=0 errs=""
for ((r = 0; r < 4; r++)); do
    for cmd in "--trim 40K" "--evict-older-than 0s" "--remove-unit storm.p0.t0.u0" "--remove-unit load.p1.t1.u2" "--clear" "--trim 1M"; do
        # shellcheck disable=SC2086
        "$ins" $cmd --yes "$d" >"$tmp/o" 2>"$tmp/e" || errs="$errs [$cmd: $(head -c 200 "$tmp/e")]"
        "$ins" $cmd "$d" >/dev/null 2>&1 || errs="$errs [$cmd dry run]"
        runs=$((runs + 1))
    done
done
alive=0; kill -0 "$lpid" 2>/dev/null && alive=1
kill -TERM -- "-$lpid" 2>/dev/null
wait "$lpid"; lrc=$?
if [ -z "$errs" ] && [ $alive = 1 ]; then ok storm-commands-done; else fail storm-commands-done "load alive $alive:$errs"; fi
if [ $lrc = 0 ] || [ $lrc = 143 ]; then ok storm-load-unharmed; else fail storm-load-unharmed "kcache_load exited $lrc: $(tail -3 "$tmp/storm.out")"; fi
if consistent "$d"; then ok storm-verify-clean
else fail storm-verify-clean "$(grep -E '^(accounted|real|use table|verify|verdict)' "$tmp/v" | tr '\n' '|')"; fi
echo "# storm: $runs store commands (and as many dry runs) against 8 threads in 4 processes"
[ $failures = 0 ]

#!/usr/bin/env bash
# test_inspect_store.sh - checks kcache-inspect's kcache mode on stores made by the real library.
#
# Usage: tests/test_inspect_store.sh [TOOL [MAKE_STORE]]
#        (defaults: build/kcache-inspect, build/make_store; build the helper with
#         cc -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -I. -o build/make_store tests/make_store.c -lpthread)
# Prints one line per check, "ok NAME" or "FAIL NAME: why" (the tests/kt.h protocol), and exits
# non-zero when any check failed.  Needs python3 for the JSON checks (its parser) and the mutants;
# without it they fail, or under `make check` (KT_SKIP_MISSING=1) print a "skip" line.
# Running as root, the unreadable-file checks run the tool as nobody through setpriv.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tool=${1:-$root/build/kcache-inspect}
mk=${2:-$root/build/make_store}
case "$tool" in /*) ;; *) tool=$PWD/$tool ;; esac
case "$mk" in /*) ;; *) mk=$PWD/$mk ;; esac
failures=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-inspect-store.XXXXXX")
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
unset KCACHE_DIR KCACHE_TRACE KCACHE_MAX_SIZE KCACHE_STAMP KCACHE_CPU_NAME KCACHE_CPU_FEATURES KCACHE_DEBUG KCACHE_WRITE

ok() { echo "ok $1"; }
fail() { echo "FAIL $1: $2"; failures=$((failures + 1)); }

# run NAME ARGS...: runs the tool; sets $out, $err, $rc; a signal or sanitizer report fails NAME
texts=$tmp/texts
: >"$texts"
run() {
    local name=$1; shift
    (cd "${RUN_IN:-.}" && exec "$tool" "$@") >"$tmp/out" 2>"$tmp/err" # RUN_IN=DIR: run from DIR
    rc=$?
    out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
    if [ "$rc" -ge 128 ] || grep -q -E 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$tmp/err"; then
        fail "$name" "crashed (status $rc): $(head -c 300 "$tmp/err")"
        return 1
    fi
    case " $* " in *" --json "*) ;; *) cat "$tmp/out" >>"$texts" ;; esac
    return 0
}
# has NAME PATTERN: $out contains the fixed string PATTERN (a line wrapped at 80 columns is
# joined again: the break and the next line's indentation read as one space)
flat() { sed -e ':a' -e 'N' -e '$!ba' -e 's/\n  */ /g' <<<"$out"; }
has() { if grep -q -F -- "$2" <<<"$out" || grep -q -F -- "$2" <<<"$(flat)"; then return 0; fi; fail "$1" "output lacks '$2'"; return 1; }
hasnt() { if ! grep -q -F -- "$2" <<<"$(flat)"; then return 0; fi; fail "$1" "output has '$2'"; return 1; }
# json EXPR: evaluates EXPR on the last output parsed by python's json module (d)
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$tmp/out" "$1" 2>&1; }
# need_py NAME: false, after a "skip NAME" line, when python3 is missing under `make check`
need_py() {
    if [ "${KT_SKIP_MISSING:-0}" = 1 ] && ! command -v python3 >/dev/null; then echo "skip $1: no python3 on PATH"; return 1; fi
    return 0
}
# flip FILE OFFSET: xors one byte with 0x5a (a negative offset counts from the end)
flip() {
    local at=$2 byte
    [ "$at" -lt 0 ] && at=$(($(wc -c <"$1") + at))
    byte=$(od -An -tu1 -j "$at" -N1 "$1" | tr -d ' \n')
    # shellcheck disable=SC2059 # the format is the escape of the new byte
    printf "$(printf '\\%03o' $((byte ^ 0x5a)))" | dd of="$1" bs=1 seek="$at" conv=notrunc status=none
}
# snap DIR: every path with its type, size, mode, mtime and ctime, and every file's sha256
snap() { (cd "$1" && find . -printf '%p %y %s %m %T@ %C@\n' | LC_ALL=C sort && find . -type f -exec sha256sum {} + | LC_ALL=C sort -k2); }

for b in "$tool" "$mk"; do
    if [ ! -x "$b" ]; then fail build "$b is not an executable (build it first)"; exit 1; fi
done

# ----------------------------------------------------------------------------------------------
# a store: two units, three overloads, a dependency, traced misses
S=$tmp/st
src='__kernel void blur(global float *a) { a[get_global_id(0)] *= 2.0f; }'
printf 'int x;\n' >"$tmp/blur.h"
printf '#define N 4\n' >"$tmp/inc.h"
export KCACHE_TRACE=1
made=1
"$mk" put "$S" blur 1000 "s:source=$src" s:options=-O2 "f:header=$tmp/blur.h" host || made=0
"$mk" put "$S" blur 2000 "s:source=$src" s:options=-O3 "f:header=$tmp/blur.h" "f:inc=$tmp/inc.h" host || made=0
"$mk" put "$S" sharpen 500 s:source=sharpen u:width=64 b:blob=300 || made=0
miss1=$("$mk" get "$S" blur "s:source=$src" s:options=-O1 "f:header=$tmp/blur.h" host)
miss2=$("$mk" get "$S" nothing s:a=b)
hit=$("$mk" get "$S" sharpen s:source=sharpen u:width=64 b:blob=300)
unset KCACHE_TRACE
if [ "$made" = 1 ] && [ "$hit" = "hit 500" ] && grep -q 'options: "-O2" (stored) vs "-O1" (now)' <<<"$miss1"; then ok make_store
else fail make_store "the helper failed: '$miss1' '$hit'"; exit 1; fi
real_bytes=$(find "$S/e" -name '*.kce' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
real_n=$(find "$S/e" -name '*.kce' | wc -l)
before=$(snap "$S")

# the summary: counts, sizes, units, misses
if run summary "$S"; then
    has summary "real       $(awk -v b="$real_bytes" 'BEGIN {printf "%.1f KiB", b / 1024}') in 3 entries ($real_bytes bytes): as accounted" &&
    has summary "accounted  " && has summary "in 3 entries ($real_bytes bytes)" &&
    has summary "limit      1.0 GiB (1073741824 bytes; the last writer's)" &&
    has summary "use table  3 of 4096 slots used" && has summary "every entry has its slot" &&
    has summary "units      3" && grep -q -E '^  blur +2 ' <<<"$out" && grep -q -E '^  sharpen +1 ' <<<"$out" &&
    has summary "misses     2 traced (KCACHE_TRACE), newest first:" &&
    has summary 'closest of 2 live overload(s): options: "-O2" (stored) vs "-O1" (now)' &&
    has summary "nothing  cold" && has summary "verdict    consistent" && [ "$rc" = 0 ] && ok summary
fi
if need_py summary_json && run summary_json --json "$S"; then
    v=$(json '(d["real"]["entries"], d["real"]["bytes"], d["config"]["accounted_entries"], d["config"]["accounted_bytes"], d["accounting_matches"], d["units_total"], sorted((u["name"], u["entries"], u["live"]) for u in d["units"]), d["misses"]["traced"], [m["reason"] for m in d["misses"]["recent"]], d["verdict"]["consistent"])')
    want="(3, $real_bytes, 3, $real_bytes, True, 3, [('blur', 2, 2), ('nothing', 0, 0), ('sharpen', 1, 1)], 2, ['cold', 'field'], True)"
    [ "$v" = "$want" ] && ok summary_json || fail summary_json "got $v, want $want"
fi

# a unit: its overloads, each field with its preview, the dependencies checked, a verdict each
if run unit_overloads "$S" blur; then
    has unit_overloads "unit       blur" && has unit_overloads "overloads  2 live" &&
    has unit_overloads 'options            str   "-O2"' && has unit_overloads 'options            str   "-O3"' &&
    has unit_overloads "source             str   \"__kernel void blur(global float *a) {" &&
    has unit_overloads "header             file  \"$tmp/blur.h\"" &&
    has unit_overloads "now:    mtime same, size same, content same" &&
    has unit_overloads 'host.cpu_name      str   "' && has unit_overloads "verdict: present" &&
    has unit_overloads "misses     1 traced" && has unit_overloads "pid " &&
    has unit_overloads "verdict    2 overloads: 2 present" && ok unit_overloads
fi
if run unit_other "$S" sharpen; then
    has unit_other "blob    bytes <300 bytes xxh128:" && has unit_other "width   u64   64" &&
    has unit_other 'source  str   "sharpen"' && ok unit_other
fi
if need_py unit_json && run unit_json --json "$S" blur; then
    v=$(json '([[(f["name"], f["type"], f["preview"]) for f in o["fields"] if not f["name"].startswith("host.")] for o in d["overloads"]], [o["verdict"]["code"] for o in d["overloads"]], d["unit"], len(d["misses"]), d["misses"][0]["reason"])')
    cut="${src:0:64}..."   # a preview keeps the first 64 bytes
    want="([[('header', 'file', '$tmp/blur.h'), ('options', 'str', '-O2'), ('source', 'str', '$cut')], [('header', 'file', '$tmp/blur.h'), ('inc', 'file', '$tmp/inc.h'), ('options', 'str', '-O3'), ('source', 'str', '$cut')]], ['present', 'present'], 'blur', 1, 'field')"
    [ "$v" = "$want" ] && ok unit_json || fail unit_json "got $v"
fi
ix=$(ls "$S"/i/*/*.kci | while read -r f; do if grep -q -a blur "$f"; then echo "$f"; fi; done | head -1)
if run index_file "$ix"; then
    has index_file "unit       blur" && has index_file "store      $S" && has index_file "verdict    2 overloads: 2 present" && ok index_file
fi
# a unit that has no index: status 2, and the units that do are named
if run unit_unknown "$S" no-such-unit; then
    [ "$rc" = 2 ] && grep -q -F 'no index for unit "no-such-unit"' <<<"$err" && grep -q -F '"blur"' <<<"$err" &&
        ok unit_unknown || fail unit_unknown "status $rc, stderr '$err'"
fi

# an entry file: header, key fields, checksums
kce=$(ls "$S"/e/*/*.kce | while read -r f; do if grep -q -a sharpen "$f"; then echo "$f"; fi; done | head -1)
if run entry_file "$kce"; then
    has entry_file "unit       sharpen" && has entry_file "(the file name's)" &&
    has entry_file "checks     lengths ok, header checksum ok, padding zero," &&
    has entry_file "key record ok (its digest is the header's), payload checksum ok" &&
    has entry_file "payload 500 bytes" && has entry_file "verdict    sound" && ok entry_file
fi
if need_py entry_json && run entry_json --json "$kce"; then
    v=$(json '(d["unit"], d["payload_bytes"], d["checks"], d["verdict"]["code"])')
    [ "$v" = "('sharpen', 500, {'lengths': True, 'header_checksum': True, 'padding': True, 'key_record': True, 'record_digest': True, 'file_name_digest': True, 'payload_checksum': True}, 'sound')" ] &&
        ok entry_json || fail entry_json "got $v"
fi

# nothing above changed the store: same paths, sizes, modes, mtimes, ctimes and contents
run verify_clean --verify "$S" && has verify_clean "verify     3 entries read whole, 3 indexes: 0 bad entries" && ok verify_clean
run any --json --verify "$S"; run any "$S" sharpen; run any --json "$S" sharpen; run any --json "$ix"; run any "$S/config.file"
after=$(snap "$S")
[ "$before" = "$after" ] && ok read_only || fail read_only "the store changed: $(diff <(echo "$before") <(echo "$after") | head -5 | tr '\n' ' ')"

# ----------------------------------------------------------------------------------------------
# a dependency edited: the verdict says which file and what differs
printf '#define N 8\n#define M 2\n' >"$tmp/inc.h"
if run dep_edited "$S" blur; then
    has dep_edited "now:    mtime differs, size differs, content differs" &&
    has dep_edited "verdict: stale: dep inc ($tmp/inc.h) changed (mtime, size, content)" &&
    has dep_edited "verdict    2 overloads: 1 present, 1 stale" && ok dep_edited
fi
if need_py dep_edited_json && run dep_edited_json --json "$S" blur; then
    v=$(json '[(o["verdict"]["code"], [(f["name"], f["now"]["mtime_same"], f["now"]["size_same"], f["now"]["content_same"], f["now"]["stale"]) for f in o["fields"] if f["type"] == "file"]) for o in d["overloads"]]')
    [ "$v" = "[('present', [('header', True, True, True, False)]), ('stale', [('header', True, True, True, False), ('inc', False, False, False, True)])]" ] &&
        ok dep_edited_json || fail dep_edited_json "got $v"
fi
# touched, content the same: hybrid keeps it, --stamp mtime does not
printf '#define N 4\n' >"$tmp/inc.h"
touch -d '2030-01-01 00:00:00' "$tmp/inc.h"
if run dep_touched "$S" blur; then
    has dep_touched "now:    mtime differs, size same, content same (the stamp policy keeps it)" &&
    has dep_touched "verdict    2 overloads: 2 present" && ok dep_touched
fi
if run dep_touched_mtime --stamp mtime "$S" blur; then
    has dep_touched_mtime "stamps     mtime (--stamp)" && has dep_touched_mtime "verdict: stale: dep inc ($tmp/inc.h) changed (mtime)" && ok dep_touched_mtime
fi
if KCACHE_STAMP=content run dep_touched_env "$S" blur; then
    has dep_touched_env "stamps     content (KCACHE_STAMP)" && has dep_touched_env "2 present" && ok dep_touched_env
fi
rm "$tmp/inc.h"
if run dep_missing "$S" blur; then
    has dep_missing "now:    missing now (No such file or directory)" && has dep_missing "verdict: stale: dep inc ($tmp/inc.h) missing" && ok dep_missing
fi
# a path longer than the preview keeps (its last 64 bytes): found again on this machine by its end,
# length and digest, then checked like any other; run from elsewhere (/), so the walk from "/" is
# what finds it
long=$tmp/a-directory-name-that-is-long-enough/and-another-one-to-pass-sixty-four-bytes
mkdir -p "$long" && printf 'x\n' >"$long/dep.h"
"$mk" put "$S" longpath 100 s:source=x "f:dep=$long/dep.h" || fail longpath_put "make_store failed"
if RUN_IN=/ run dep_path_cut "$S" longpath; then
    # (the text wraps the long path inside words: the JSON below checks it whole)
    has dep_path_cut 'dep     file  "...' && has dep_path_cut "path:   $tmp/a-directory" && has dep_path_cut "(found by the end, length and digest kept)" &&
    has dep_path_cut "now:    mtime same, size same, content same" && has dep_path_cut "verdict    1 overload: 1 present" && ok dep_path_cut
fi
if need_py dep_path_cut_json && run dep_path_cut_json --json "$S" longpath; then
    v=$(json '[(f["now"]["path"], f["now"]["path_found"], f["now"]["stale"]) for o in d["overloads"] for f in o["fields"] if f["type"] == "file"]')
    [ "$v" = "[('$long/dep.h', True, False)]" ] && ok dep_path_cut_json || fail dep_path_cut_json "got $v"
fi
printf 'xy\n' >"$long/dep.h"
if run dep_path_cut_edited "$S" longpath; then
    has dep_path_cut_edited "now:    mtime differs, size differs, content differs" &&
    has dep_path_cut_edited "verdict: stale: dep dep ($tmp/a-directory" && ok dep_path_cut_edited
fi
if need_py dep_path_cut_edited_json && run dep_path_cut_edited_json --json "$S" longpath; then
    v=$(json '[(o["verdict"]["code"], [f["now"]["path"] for f in o["fields"] if f["type"] == "file"]) for o in d["overloads"]]')
    [ "$v" = "[('stale', ['$long/dep.h'])]" ] && ok dep_path_cut_edited_json || fail dep_path_cut_edited_json "got $v"
fi
# the directory that held it renamed: no path here has that end, length and digest
mv "$tmp/a-directory-name-that-is-long-enough" "$tmp/b-directory-name-that-is-long-enough"
if run dep_path_cut_gone "$S" longpath; then
    has dep_path_cut_gone "now:    path cut, and not found here by its end, length and digest: cannot check" &&
    has dep_path_cut_gone "1 dependency not checked" && ok dep_path_cut_gone
fi

# the miss of the edited dependency, traced: the index explains it
printf '#define N 5\n' >"$tmp/inc.h"
export KCACHE_TRACE=1
m=$("$mk" get "$S" blur "s:source=$src" s:options=-O3 "f:header=$tmp/blur.h" "f:inc=$tmp/inc.h" host)
unset KCACHE_TRACE
if run traced_stamp "$S" blur; then
    has traced_stamp "gone       1" && has traced_stamp "stamp: a dependency changed" &&
    has traced_stamp "misses     2 traced" && grep -q -E "pid [0-9]+  stamp" <<<"$out" &&
    has traced_stamp "a dependency changed: file inc ($tmp/inc.h): mtime" && ok traced_stamp || echo "# the get said: $m"
fi
if need_py traced_summary && run traced_summary --json "$S"; then
    v=$(json '([(m["unit"], m["reason"]) for m in d["misses"]["recent"]], d["misses"]["traced"])')
    [ "$v" = "([('blur', 'stamp'), ('nothing', 'cold'), ('blur', 'field')], 3)" ] && ok traced_summary || fail traced_summary "got $v"
fi

# ----------------------------------------------------------------------------------------------
# evicted: a small limit that holds 3 entries: each of the last 3 puts evicts one (u1 among them:
# none was used, and the hand reaches it first), and the log says when
E=$tmp/ev
for i in 1 2 3 4 5 6; do KCACHE_MAX_SIZE=20K "$mk" put "$E" "u$i" 5000 "s:a=$i" || fail evict_put "make_store failed"; done
if run evicted "$E" u1; then
    has evicted "verdict: entry missing: evicted by the size limit at" && has evicted "1 overload: 1 missing" && ok evicted
fi
if run evicted_summary "$E"; then
    has evicted_summary "limit      20.0 KiB (20480 bytes; the last writer's)" && has evicted_summary "evictions  3 (the log remembers 3" &&
    has evicted_summary "units      6" && has evicted_summary "3 overloads listed live whose entry is gone" &&
    grep -q -E '^  u1 +0 +0 bytes +1 +1 +0 +0$' <<<"$out" && has evicted_summary "verdict    consistent" && ok evicted_summary
fi
# an entry removed behind kcache's back: missing, maybe evicted, and the accounting now differs
victim=$(ls "$S"/e/*/*.kce | while read -r f; do if grep -q -a sharpen "$f"; then echo "$f"; fi; done | head -1)
cp -p "$victim" "$tmp/victim.kce"
rm "$victim"
if run entry_removed "$S" sharpen; then
    has entry_removed "verdict: entry missing (evicted?)" && ok entry_removed
fi
if run entry_removed_summary "$S"; then
    has entry_removed_summary "DIFFERS from the accounting by -" && has entry_removed_summary "1 slots without an entry" &&
    has entry_removed_summary "problems: the accounting" && ok entry_removed_summary
fi
cp -p "$tmp/victim.kce" "$victim"

# ----------------------------------------------------------------------------------------------
# the accounting damaged (white-box: accounted bytes + 1000, checksum resealed): flagged
cp -R "$S" "$tmp/acc"
"$mk" account "$tmp/acc" 1000 || fail account "make_store account failed"
if run accounting "$tmp/acc"; then
    has accounting "config.file valid" && has accounting "DIFFERS from the accounting by -1000 bytes, +0 entries" &&
    has accounting "problem: the accounting (" && [ "$rc" = 0 ] && ok accounting
fi
if need_py accounting_json && run accounting_json --json "$tmp/acc"; then
    v=$(json '(d["accounting_matches"], d["config"]["accounted_bytes"] - d["real"]["bytes"], d["verdict"]["consistent"], d["verdict"]["problems"][0][:15])')
    [ "$v" = "(False, 1000, False, 'the accounting ')" ] && ok accounting_json || fail accounting_json "got $v"
fi
# ... and not resealed: the checksum fails, kcache would rebuild it; both are said
flip "$tmp/acc/config.file" 25
if run config_damaged "$tmp/acc"; then
    has config_damaged "config.file DAMAGED" && has config_damaged "header checksum fails: its numbers are not trusted" &&
    has config_damaged "config.file damaged (header checksum fails): the next writer rebuilds it by a scan" && ok config_damaged
fi
rm "$tmp/acc/config.file"
if run config_missing "$tmp/acc"; then
    has config_missing "config.file missing" && has config_missing "real       " && [ "$rc" = 0 ] && ok config_missing
fi

# orphaned temp files: a dead writer's, a day-old one; a live writer's is in progress
pid_max=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 4194304)
printf 'half an entry' >"$S/tmp/$((pid_max + 1))-1-2.tmp"
printf 'old' >"$S/tmp/$$-5-6.tmp" && touch -d '3 days ago' "$S/tmp/$$-5-6.tmp"
printf 'being written' >"$S/tmp/$$-7-9.tmp"
if run orphans "$S"; then
    has orphans "temp files 3 in tmp/" && has orphans "2 orphaned (16 bytes;" && has orphans "1 in progress" &&
    has orphans "2 orphaned temp files (16 bytes; the next kcache_open removes them)" && ok orphans
fi
if need_py orphans_json && run orphans_json --json "$S"; then
    v=$(json '(d["temp_files"]["count"], d["temp_files"]["orphaned"], d["temp_files"]["orphaned_bytes"], d["temp_files"]["in_progress"])')
    [ "$v" = "(3, 2, 16, 1)" ] && ok orphans_json || fail orphans_json "got $v"
fi

# --verify finds a flipped byte (the payload's last, then a header byte); the sizes do not change
cp -R "$S" "$tmp/vf"
target=$(ls "$tmp/vf"/e/*/*.kce | while read -r f; do if grep -q -a sharpen "$f"; then echo "$f"; fi; done | head -1)
flip "$target" -1
if run verify_off "$tmp/vf"; then hasnt verify_off "corrupt" && ok verify_off; fi
if run verify_flip --verify "$tmp/vf"; then
    has verify_flip "1 bad entry" && has verify_flip "(unit sharpen): payload checksum fails" &&
    has verify_flip "1 corrupt entry (kcache rejects and removes it at the next lookup)" && [ "$rc" = 0 ] && ok verify_flip
fi
if need_py verify_flip_json && run verify_flip_json --json --verify "$tmp/vf"; then
    v=$(json '(d["verify"]["entries"], d["verify"]["bad"], d["verify"]["bad_entries"][0]["unit"], d["verify"]["bad_entries"][0]["problem"])')
    [ "$v" = "(3, 1, 'sharpen', 'payload checksum fails')" ] && ok verify_flip_json || fail verify_flip_json "got $v"
fi
if run corrupt_unit "$tmp/vf" sharpen; then has corrupt_unit "verdict: entry corrupt: payload checksum fails" && ok corrupt_unit; fi
if run corrupt_entry "$target"; then
    has corrupt_entry "payload checksum FAILS" && has corrupt_entry "verdict    entry corrupt: payload checksum fails" && [ "$rc" = 0 ] && ok corrupt_entry
fi
flip "$target" -1
flip "$target" 80
if run verify_header --verify "$tmp/vf"; then has verify_header "header checksum fails" && ok verify_header; fi
if run corrupt_header "$target"; then has corrupt_header "header checksum FAILS" && [ "$rc" = 0 ] && ok corrupt_header; fi

# an index copied out of its store: decoded, entries not checked
cp "$ix" "$tmp/lone.kci"
if run index_alone "$tmp/lone.kci"; then
    has index_alone "store      none" && has index_alone "entry not checked (no store)" && [ "$rc" = 0 ] && ok index_alone
fi
# a torn tail, and damage in the middle: skipped as kcache skips them (resyncing at the next
# sound record), counted, and the records around them read
cp "$ix" "$tmp/torn.kci" && printf '\x40\x00\x00\x00garbage' >>"$tmp/torn.kci"
if run index_torn "$tmp/torn.kci"; then
    has index_torn "damaged: 11 bytes in 1 place do not decode as records" && has index_torn "verdict    1 overload: 1 unchecked" && ok index_torn
fi
{ head -c $((26 + 4 + 8)) "$ix"; printf '\007junk\000\000\000'; tail -c +$((26 + 4 + 8 + 1)) "$ix"; } >"$tmp/mid.kci"
if run index_damaged_middle "$tmp/mid.kci"; then
    has index_damaged_middle "damaged: 8 bytes in 1 place do not decode as records" && has index_damaged_middle "verdict    1 overload: 1 unchecked" &&
        ok index_damaged_middle
fi

# ----------------------------------------------------------------------------------------------
# every JSON output parses with a real parser
bad=
if need_py json_all; then
    for args in "$S" "--verify $S" "$S blur" "$S longpath" "$ix" "$kce" "$tmp/vf" "--verify $tmp/vf" "$E" "$E u1" "$tmp/acc" "$target" "$tmp/torn.kci" "$tmp/mid.kci" "$tmp/lone.kci"; do
        # shellcheck disable=SC2086
        run json_all --json $args || { bad="$bad [$args]"; continue; }
        python3 -m json.tool <"$tmp/out" >/dev/null 2>&1 || bad="$bad [$args]"
    done
    [ -z "$bad" ] && ok json_all || fail json_all "did not parse:$bad"
fi

# ----------------------------------------------------------------------------------------------
# what cannot be read or decoded: status 2 and a one-line message, never a crash
check_exit2() { # NAME PATTERN ARGS...
    local name=$1 pat=$2; shift 2
    if run "$name" "$@"; then
        if [ "$rc" = 2 ] && grep -q -F -- "$pat" <<<"$err" && [ "$(wc -l <"$tmp/err")" = 1 ] && [ -z "$out" ]; then ok "$name"
        else fail "$name" "status $rc, stderr '$err'"; fi
    fi
}
head -c 4096 /dev/urandom >"$tmp/garbage.kci"
head -c 4096 /dev/urandom >"$tmp/garbage.kce"
printf 'KCINDEX\0\002\0' >"$tmp/short.kci"
printf 'KCENTRY\0\001\0' >"$tmp/short.kce"
: >"$tmp/empty.kce"
mkdir -p "$tmp/notastore/sub" "$tmp/dir.kce"
check_exit2 missing_dir "No such file or directory" "$tmp/no-such-store"
check_exit2 missing_dir_unit "No such file or directory" "$tmp/no-such-store" blur
check_exit2 garbage_kci "not a kcache index (no KCINDEX magic)" "$tmp/garbage.kci"
check_exit2 garbage_kce "not a kcache entry (no KCENTRY magic)" "$tmp/garbage.kce"
check_exit2 short_kci "truncated" "$tmp/short.kci"
check_exit2 short_kce "truncated" "$tmp/short.kce"
check_exit2 empty_kce "not a kcache entry" "$tmp/empty.kce"
check_exit2 not_a_store "not a kcache store (no config.file, e/ or i/)" "$tmp/notastore"
check_exit2 dir_named_kce "not a kcache store" "$tmp/dir.kce"
check_exit2 unknown_file "not a numba index (.nbi), a kcache index (.kci), entry (.kce)" "$tmp/blur.h"
check_exit2 unit_after_file "a UNIT follows a store DIR" "$kce" blur
check_exit2 bad_stamp "'sometimes' is not mtime, content or hybrid" --stamp sometimes "$S"
# unreadable: as another user when this runs as root (root reads everything)
if [ "$(id -u)" = 0 ]; then
    if command -v setpriv >/dev/null; then as_other() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
    else as_other() { return 99; }; fi
else as_other() { "$@"; }; fi
mkdir -p "$tmp/pub" && chmod 755 "$tmp" "$tmp/pub"
cp "$kce" "$tmp/pub/locked.kce" && chmod 000 "$tmp/pub/locked.kce"
cp -R "$S" "$tmp/pub/lockedstore" && chmod 000 "$tmp/pub/lockedstore"
as_other "$tool" "$tmp/pub/locked.kce" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] && grep -q -F "cannot open: Permission denied" "$tmp/err" && ok unreadable_file || fail unreadable_file "status $rc, stderr '$(cat "$tmp/err")'"
as_other "$tool" "$tmp/pub/lockedstore" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] && grep -q -F "cannot open the directory: Permission denied" "$tmp/err" && ok unreadable_store || fail unreadable_store "status $rc, stderr '$(cat "$tmp/err")'"
chmod 700 "$tmp/pub/lockedstore" "$tmp" && chmod 600 "$tmp/pub/locked.kce"

# mutants of a real entry, index and config.file: decoded or refused, never a crash
if need_py mutants_no_crash; then
python3 - "$kce" "$ix" "$S/config.file" "$tmp/mut" <<'EOF'
import os, random, shutil, sys
kce, kci, cf, out = sys.argv[1:5]
os.makedirs(out)
rng = random.Random(7)
n = 0
for src, ext in ((kce, 'kce'), (kci, 'kci')):
    data = open(src, 'rb').read()
    for c in sorted(set([0, 1, 7, 8, 9, 12, 16, 25, 26, 40, 64, 72, 73, 100, len(data) // 2, len(data) - 9, len(data) - 1])):
        if c < len(data):
            open(os.path.join(out, 'trunc%04d.%s' % (n, ext)), 'wb').write(data[:c]); n += 1
    for _ in range(70):
        b = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 4, 16))):
            i = rng.randrange(min(len(b), 600) if rng.random() < 0.7 else len(b))
            b[i] = rng.choice((rng.randrange(256), b[i] ^ (1 << rng.randrange(8)), 0xff, 0x00))
        open(os.path.join(out, 'flip%04d.%s' % (n, ext)), 'wb').write(bytes(b)); n += 1
data = open(cf, 'rb').read()
for k in range(20):
    d = os.path.join(out, 'store%02d' % k)
    os.makedirs(os.path.join(d, 'e'))
    b = bytearray(data if k % 4 else data[:rng.choice((0, 100, 4096, 5000))])
    for _ in range(rng.choice((1, 4, 16))):
        if b:
            i = rng.randrange(min(len(b), 4200))
            b[i] = rng.randrange(256)
    open(os.path.join(d, 'config.file'), 'wb').write(bytes(b))
EOF
total=0 decoded=0 rejected=0 badmsg=0 crashed=0
for f in "$tmp/mut"/*.kce "$tmp/mut"/*.kci "$tmp/mut"/store* "$root"/tests/data/store-regress/*; do
    [ -e "$f" ] || continue
    for mode in "" --json; do
        total=$((total + 1))
        # shellcheck disable=SC2086
        "$tool" $mode "$f" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        if [ "$rc" -ge 128 ] || grep -q -E 'Sanitizer|runtime error:' "$tmp/err" || { [ "$rc" != 0 ] && [ "$rc" != 2 ]; }; then
            crashed=$((crashed + 1))
            [ "$crashed" -le 3 ] && echo "# crash ($rc) on $f: $(head -c 200 "$tmp/err")"
            continue
        fi
        if [ "$rc" = 0 ]; then
            decoded=$((decoded + 1))
            if [ "$mode" = --json ] && ! python3 -m json.tool <"$tmp/out" >/dev/null 2>&1; then badmsg=$((badmsg + 1)); echo "# bad JSON for $f"; fi
        else
            rejected=$((rejected + 1))
            { grep -q '^kcache-inspect: .*: ' "$tmp/err" && [ "$(wc -l <"$tmp/err")" = 1 ]; } || { badmsg=$((badmsg + 1)); echo "# bad message for $f: $(head -c 200 "$tmp/err")"; }
        fi
    done
done
[ "$total" -ge 300 ] && [ "$crashed" = 0 ] && ok "mutants_no_crash_${total}_runs_${decoded}_decoded_${rejected}_rejected" ||
    fail mutants_no_crash "$crashed of $total crashed"
[ "$badmsg" = 0 ] && ok mutants_messages_and_json || fail mutants_messages_and_json "$badmsg bad messages or JSON"
fi

# every text report fits an 80-column terminal
long=$(awk 'length($0) > 80' "$texts" | head -3)
[ -z "$long" ] && ok text_80_columns || fail text_80_columns "lines over 80 columns: $long"

[ "$failures" = 0 ]

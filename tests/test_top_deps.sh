#!/usr/bin/env bash
# test_top_deps.sh - kcache-top's unit view re-checks the dependencies a store's index names, and
# the store's owner chooses what those names point at. Whoever looks at her store (root, or another
# reader of a shared one) must never block on, follow or read what she put there:
#
#   deps-no-hang    kcache-top -b -U ends (under a 10 s watchdog) with a FIFO as a dependency
#   deps-fifo       a FIFO is reported "not a regular file", never opened for reading
#   deps-symlink    a symlink (here to a root-only file) is reported "a symlink: not followed"
#   deps-size       a file of another size than the index records is "changed: size", not read
#   deps-same       her own unchanged file still reads "same" (the check itself still works)
#   deps-foreign    (root) a file owned by a third user is reported "owned by uid N: not read"
#   deps-root-file  (root) a root-owned file of another size: "changed: size", not read
#   inspect-*       kcache-inspect DIR UNIT, which shows the same dependencies, looks at them the
#                   same way: it ends with the FIFO there, says "a symlink: not followed" for the
#                   link to root's file (whose content is her file's: an inspector that followed it
#                   would say "content same", having read it), "owned by uid N: not read", ...
#   nocurses-*      kcache-top built with -DKCACHE_TOP_NO_CURSES and no curses library (what
#                   `make check` builds where no curses header is found): -b prints what the
#                   curses build prints; the interactive view says it is not there and exits 2
#
# Usage: tests/test_top_deps.sh [KCACHE_TOP [MAKE_STORE [KCACHE_INSPECT]]]   (CC: the compiler for nocurses-*)
# As root the store is made by a second user (useradd; removed afterwards, whatever happens) and
# root runs kcache-top on it. Not root, the store is the caller's own: the cases that need other
# users print "skip".
# Prints "ok NAME" / "FAIL NAME: why" lines (tests/kt.h's protocol).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
top=${1:-$root/build/kcache-top}
mk=${2:-$root/build/make_store}
ins=${3:-$root/build/kcache-inspect}
for v in top mk ins; do case "${!v}" in /*) ;; *) printf -v "$v" '%s' "$PWD/${!v}" ;; esac; done
failures=0
# short paths: a dependency's path must fit its preview (64 bytes) for kcache-top to check it
tmp=$(mktemp -d /tmp/kctd.XXXXXX)
chmod 755 "$tmp"
user=kctopdep$$ made_user=0
cleanup() {
    rm -rf "$tmp"
    if [ "$made_user" = 1 ]; then userdel "$user" 2>/dev/null; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
unset KCACHE_DIR KCACHE_TRACE KCACHE_MAX_SIZE KCACHE_STAMP KCACHE_DEBUG KCACHE_SHARED_GROUP KCACHE_LAYERS KCACHE_REMOTE
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
umask 022

ok() { echo "ok $1"; }
fail() { echo "FAIL $1: $2"; failures=$((failures + 1)); }
skip() { echo "skip $1: $2"; }

for b in "$top" "$mk" "$ins"; do
    if [ ! -x "$b" ]; then fail build "$b is not an executable (build it first)"; exit 1; fi
done

if [ "$(id -u)" = 0 ] && command -v useradd >/dev/null && command -v setpriv >/dev/null &&
    useradd -M -N -d /nonexistent -s /usr/sbin/nologin "$user"; then
    made_user=1
fi
# as_her CMD...: runs CMD as the store's owner (the second user as root, else the caller)
as_her() {
    if [ "$made_user" = 1 ]; then setpriv --reuid "$user" --regid "$(id -g "$user")" --clear-groups "$@"; else "$@"; fi
}

S=$tmp/s D=$tmp/d
mkdir "$S" "$D"
[ "$made_user" = 1 ] && chown "$user" "$S" "$D"
for f in fifo link size same foreign rootf; do as_her sh -c "echo '#define X 1' >$D/$f.h"; done
fields=""
for f in fifo link size same foreign rootf; do fields="$fields f:$f=$D/$f.h"; done
if ! as_her "$mk" put "$S" blur 100 $fields >"$tmp/mk.out" 2>&1; then
    fail setup "make_store put failed: $(head -c 300 "$tmp/mk.out")"
    exit 1
fi

# what she does to her dependencies after storing
# root's (or the caller's) own file, holding what her link.h held: only a reader of it can say "same"
echo '#define X 1' >"$tmp/secret" && chmod 600 "$tmp/secret"
as_her sh -c "rm $D/fifo.h && mkfifo $D/fifo.h && rm $D/link.h && ln -s $tmp/secret $D/link.h && echo more >>$D/size.h"
if [ "$made_user" = 1 ]; then
    chown 65534 "$D/foreign.h"                                    # a third user's file
    rm "$D/rootf.h" && head -c 100000 /dev/zero >"$D/rootf.h" # root's, another size
fi

timeout -k 2 10 "$top" -b -n 1 -U blur "$S" >"$tmp/out" 2>&1
rc=$?
out=$(cat "$tmp/out")
if [ $rc = 0 ]; then ok deps-no-hang
elif [ $rc = 124 ] || [ $rc = 137 ]; then fail deps-no-hang "kcache-top -b -U blur did not end within 10 s (blocked on the FIFO?)"
else fail deps-no-hang "kcache-top exited $rc: $(head -c 400 <<<"$out")"; fi

# now_of NAME: the "now:" verdict shown under the dependency field NAME
now_of() { grep -A1 "^ *$1  *file  *=" <<<"$out" | sed -n 's/.*  now: //p' | head -1; }
check() { # NAME PATTERN
    local v
    v=$(now_of "$1")
    if grep -q -- "$2" <<<"$v"; then ok "deps-$3"; else fail "deps-$3" "$1: shown '$v', want /$2/"; fi
}
check fifo 'not a regular file' fifo
check link 'a symlink: not followed' symlink
check size 'changed:.* size' size
check same '^same' same
if [ "$made_user" = 1 ]; then
    check foreign 'owned by uid 65534: not read' foreign
    check rootf 'changed:.* size' root-file
else
    skip deps-foreign "not root (or no useradd/setpriv): no other user"
    skip deps-root-file "not root (or no useradd/setpriv): no other user"
fi

# ---- kcache-inspect DIR UNIT: the same dependencies, the same rule --------------------------------
timeout -k 2 10 "$ins" "$S" blur >"$tmp/ins" 2>&1
rc=$?
ins_out=$(cat "$tmp/ins")
if [ $rc = 0 ]; then ok inspect-no-hang
elif [ $rc = 124 ] || [ $rc = 137 ]; then fail inspect-no-hang "kcache-inspect DIR blur did not end within 10 s (blocked on the FIFO?)"
else fail inspect-no-hang "kcache-inspect exited $rc: $(head -c 400 <<<"$ins_out")"; fi
# ins_now NAME: the "now:" line under the dependency field NAME
ins_now() { grep -A3 "^ *$1  *file  *\"" <<<"$ins_out" | sed -n 's/^ *now: *//p' | head -1; }
ins_check() { # NAME PATTERN CASE
    local v
    v=$(ins_now "$1")
    if grep -q -- "$2" <<<"$v"; then ok "inspect-$3"; else fail "inspect-$3" "$1: shown '$v', want /$2/"; fi
}
ins_check fifo 'not a regular file' fifo
ins_check link '^a symlink: not followed' symlink
ins_check size 'size differs' size
ins_check same '^mtime same, size same, content same' same
if grep -q 'content same' <<<"$(ins_now link)"; then fail inspect-symlink-unread "it read root's file through her link: $(ins_now link)"
else ok inspect-symlink-unread; fi
if [ "$made_user" = 1 ]; then
    ins_check foreign '^owned by uid 65534: not read' foreign
    ins_check rootf 'size differs' root-file
else
    skip inspect-foreign "not root (or no useradd/setpriv): no other user"
    skip inspect-root-file "not root (or no useradd/setpriv): no other user"
fi

# ---- kcache-top without curses: batch mode only --------------------------------------------------
nc=$tmp/kcache-top-nocurses
if ${CC:-cc} -std=c99 -O1 -Wall -Wextra -Wpedantic -Werror -DKCACHE_TOP_NO_CURSES -I"$root" -o "$nc" "$root/tools/kcache-top.c" \
    -lpthread 2>"$tmp/nc.err"; then
    ok nocurses-builds
    timeout -k 2 10 "$nc" -b -n 1 -U blur "$S" >"$tmp/nc.out" 2>&1
    rc=$?
    if [ $rc = 0 ] && cmp -s "$tmp/nc.out" "$tmp/out"; then ok nocurses-batch-detail
    else fail nocurses-batch-detail "exit $rc, or not what the curses build printed: $(diff "$tmp/out" "$tmp/nc.out" | head -c 300)"; fi
    timeout -k 2 10 "$nc" -b -n 1 "$S" >"$tmp/nc.snap" 2>&1
    rc=$?
    if [ $rc = 0 ] && grep -q '^store  *bytes [0-9]* .*entries 1 ' "$tmp/nc.snap" && grep -q '^  blur ' "$tmp/nc.snap"; then ok nocurses-batch-snapshot
    else fail nocurses-batch-snapshot "exit $rc: $(head -c 300 "$tmp/nc.snap")"; fi
    timeout -k 2 10 "$nc" "$S" </dev/null >"$tmp/nc.int" 2>&1
    rc=$?
    if [ $rc = 2 ] && grep -q 'built without curses: only -b' "$tmp/nc.int"; then ok nocurses-interactive-refused
    else fail nocurses-interactive-refused "exit $rc: $(head -c 300 "$tmp/nc.int")"; fi
else
    fail nocurses-builds "$(head -c 600 "$tmp/nc.err")"
fi
[ "$failures" = 0 ]

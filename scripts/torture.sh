#!/usr/bin/env bash
# scripts/torture.sh SECONDS [BINARY]
#
# Runs tests/torture.c (build/torture: 16 processes of random gets, puts, removes and
# get_or_build on a small store, SIGKILLed at random moments) for SECONDS on each filesystem
# this machine offers:
#   disk   the filesystem of the checkout's build/ directory (or $TORTURE_DISK_DIR), its type
#          printed; overlayfs (a container's layer) is said to be that, not ext4
#   ext4   as root, when the disk is not already ext4 (or TORTURE_LOOP=1): a 256 MiB image
#          made with mkfs.ext4 and loop-mounted, removed on exit
#   tmpfs  as root a fresh `mount -t tmpfs`, else /dev/shm
#   remote the remote mode (build/torture_remote, next to BINARY): every process a machine with a
#          store of its own on the disk, all sharing one redis-server started here on a unix socket
#          (its own config: maxmemory, allkeys-lru, no persistence), which is SIGSTOPped for 300 ms
#          now and then; the server is killed on exit. redis-server missing is a FAIL (deps.sh)
# What cannot be had here (not root, no loop device, mount refused) is said on a "# " line and
# skipped: it never counts as a pass or a failure. Prints tests/kt.h's protocol (one "ok
# torture_<fs>" or "FAIL torture_<fs>: ..." per filesystem, from build/torture) and the summary
# line of each run; exits non-zero when any run failed.
#
# BINARY (or $TORTURE_BIN): the torture program, e.g. build/asan/torture; by default build/torture,
# built with cc when missing or out of date. Environment: TORTURE_PROCS (16), TORTURE_LIMIT (2M),
# TORTURE_DISK_DIR (where the disk run goes), TORTURE_LOOP=1 (a loop ext4 even on an ext4 disk).
# `make test` runs it short (make test's entry); `make torture TORTURE_TIME=600` runs it long.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-20}
given=${2:-${TORTURE_BIN:-}}
bin=${given:-$root/build/torture}
procs=${TORTURE_PROCS:-16}
limit=${TORTURE_LIMIT:-2M}
failed=0 ran=0

case "$secs" in ''|*[!0-9]*) echo "usage: scripts/torture.sh SECONDS [BINARY]" >&2; exit 2 ;; esac

# stale BIN: missing, or older than what it is built from
stale() { [ ! -x "$1" ] || [ "$root/tests/torture.c" -nt "$1" ] || [ "$root/tests/kt_remote.h" -nt "$1" ] || [ "$root/kcache.h" -nt "$1" ] ||
          [ "$root/kcache_redis.h" -nt "$1" ]; }
# build BIN FLAGS... : tests/torture.c into BIN (FLAGS: defines, then libraries)
build() {
    local out=$1
    shift
    mkdir -p "$(dirname "$out")"
    ${CC:-cc} -std=c99 -O2 -g -Wall -Wextra -Wpedantic -Werror -I"$root" -o "$out" "$root/tests/torture.c" "$@" -lpthread
}

if [ -z "$given" ] && stale "$bin" && ! build "$bin"; then
    echo "FAIL torture: building $bin failed"
    exit 1
fi
[ -x "$bin" ] || { echo "FAIL torture: no $bin"; exit 1; }

# statfs's name for a directory's filesystem ("ext2/ext3" is ext4's magic too)
fstype() {
    local t
    t=$(stat -f -c %T "$1" 2>/dev/null) || { echo unknown; return; }
    case "$t" in ext2/ext3) echo ext4 ;; overlayfs) echo overlay ;; *) echo "$t" ;; esac
}

work=$(mktemp -d "${TORTURE_DISK_DIR:-$root/build}/torture-work.XXXXXX") || { echo "FAIL torture: mktemp failed"; exit 1; }
mounts=()
rpid=
cleanup() {
    local m
    if [ -n "$rpid" ]; then kill -CONT "$rpid" 2>/dev/null; kill -KILL "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null; fi
    for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run DIR LABEL: one torture run; its output as it comes
run() {
    local dir=$1 label=$2
    ran=$((ran + 1))
    TORTURE_NAME=$label "$bin" "$dir" "$secs" "$procs" "$limit" || failed=1
}

# ---- the disk ----
disk=$work/disk
mkdir -p "$disk"
dtype=$(fstype "$disk")
case "$dtype" in
    overlay) echo "# torture: disk $disk is overlayfs (a container's layer over another filesystem), not a plain ext4" ;;
    tmpfs)   echo "# torture: disk $disk is tmpfs (memory), not a disk filesystem" ;;
    *)       echo "# torture: disk $disk is $dtype" ;;
esac
run "$disk" "$dtype"

# ---- a real ext4, loop-mounted ----
if [ "$(id -u)" != 0 ]; then
    echo "# torture: not root: no loop-mounted ext4 (the disk run above is the only disk filesystem)"
elif [ "$dtype" = ext4 ] && [ "${TORTURE_LOOP:-0}" != 1 ]; then
    echo "# torture: the disk is ext4 already: no loop-mounted ext4 (TORTURE_LOOP=1 adds one)"
else
    img=$work/ext4.img
    mkdir -p "$work/ext4"
    if ! out=$( { truncate -s 256M "$img" && mkfs.ext4 -q -F "$img" && mount -o loop "$img" "$work/ext4"; } 2>&1); then
        echo "# torture: no loop-mounted ext4: $(echo "$out" | tr '\n' ' ')"
    else
        mounts+=("$work/ext4")
        chmod 700 "$work/ext4"
        echo "# torture: loop-mounted ext4 image at $work/ext4"
        run "$work/ext4" ext4-loop
    fi
fi

# ---- tmpfs ----
tdir=
if [ "$(id -u)" = 0 ]; then
    mkdir -p "$work/tmpfs"
    if out=$(mount -t tmpfs -o size=256m,mode=0700 tmpfs "$work/tmpfs" 2>&1); then
        mounts+=("$work/tmpfs")
        tdir=$work/tmpfs
        echo "# torture: tmpfs mounted at $tdir"
    else
        echo "# torture: mount -t tmpfs refused ($out); trying /dev/shm"
    fi
fi
if [ -z "$tdir" ]; then
    if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(fstype /dev/shm)" = tmpfs ]; then
        tdir=$(mktemp -d /dev/shm/kcache-torture-work.XXXXXX) && echo "# torture: tmpfs: $tdir (/dev/shm)"
        trap 'cleanup; rm -rf "$tdir"' EXIT
    else
        echo "# torture: no tmpfs here (not root, and /dev/shm is missing, not writable or not tmpfs)"
    fi
fi
[ -n "$tdir" ] && run "$tdir" tmpfs

# ---- the remote tier ----
rbin=${TORTURE_REMOTE_BIN:-$(dirname "$bin")/torture_remote}
if [ -z "${TORTURE_REMOTE_BIN:-}" ] && [ -z "$given" ] && stale "$rbin" &&
   ! build "$rbin" -DKCACHE_REDIS -DKCACHE_ZSTD -DKCACHE_HMAC_OPENSSL -lhiredis -lzstd -lcrypto; then
    echo "FAIL torture_remote: building $rbin failed"
    failed=1
fi
if [ ! -x "$rbin" ]; then
    echo "# torture: no $rbin (make build/torture_remote): no remote run"
elif ! command -v redis-server >/dev/null; then
    echo "FAIL torture_remote: redis-server is not installed (scripts/deps.sh installs it)"
    failed=1
else
    rdir=$work/redis
    mkdir -p "$rdir"
    printf '%s\n' "port 0" "unixsocket $rdir/redis.sock" "unixsocketperm 700" 'save ""' "appendonly no" "dir $rdir" \
        "logfile $rdir/redis.log" "maxmemory 256mb" "maxmemory-policy allkeys-lru" >"$rdir/redis.conf"
    redis-server "$rdir/redis.conf" &
    rpid=$!
    for _ in $(seq 100); do
        [ "$(redis-cli -s "$rdir/redis.sock" ping 2>/dev/null)" = PONG ] && break
        sleep 0.05
    done
    if [ "$(redis-cli -s "$rdir/redis.sock" ping 2>/dev/null)" != PONG ]; then
        echo "FAIL torture_remote: redis-server did not start: $(tail -3 "$rdir/redis.log" 2>/dev/null | tr '\n' ' ')"
        failed=1
    else
        echo "# torture: remote: redis-server (pid $rpid) on $rdir/redis.sock, stores on $disk"
        ran=$((ran + 1))
        TORTURE_REMOTE=unix://$rdir/redis.sock TORTURE_REMOTE_PID=$rpid TORTURE_NAME=remote \
            "$rbin" "$disk" "$secs" "$procs" "$limit" || failed=1
    fi
    kill -CONT "$rpid" 2>/dev/null
    kill -KILL "$rpid" 2>/dev/null
    wait "$rpid" 2>/dev/null
    rpid=
fi

echo "# torture: $ran run(s) (filesystems, then the remote), ${secs} s each"
[ "$ran" -gt 0 ] || { echo "FAIL torture: no filesystem to run on"; exit 1; }
exit "$failed"

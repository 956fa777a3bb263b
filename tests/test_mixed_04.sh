#!/usr/bin/env bash
# test_mixed_04.sh - 0.4 and this version sharing a Redis during a rolling upgrade (issue 35.8;
# README: "Upgrading a fleet from 0.4 or 0.5.0"): tests/mixed_client.c built against 0.4's kcache.h (git
# 221b66c's, kept as tests/data/kcache-0.4.h.gz) and against this one, with signed claims, on a redis-server started here.
#   mixed-04-waits-for-new   a 0.4 waiter checks this version's tokens (issue time inside the HMAC,
#                            re-issued at every renewal of a 2.5 s build) and waits: 1 build
#   mixed-new-waits-for-04   this version waits for a 0.4 builder's token (no issue time it signs):
#                            1 build (a 0.4 build over 10 claim lifetimes, 30 s, would be built again)
#   mixed-cluster-04-waits-for-new, mixed-cluster-new-waits-for-04   the same on a Redis Cluster of 3
#                            masters whose listed node serves no slot (every command is redirected:
#                            this version knows at once it is a cluster, and listens with SSUBSCRIBE
#                            on the key's node while 0.4 SUBSCRIBEs on the listed one, so this
#                            version's scripts publish on both channels): 1 build each
# Usage: tests/test_mixed_04.sh. Prints "ok NAME" / "FAIL NAME: why" lines.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-mixed.XXXXXX")
pid=
cpids=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; for p in $cpids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/04"
# 0.4's header is kept in tests/data (git 221b66c's kcache.h, gzipped): a shallow clone has no history
if ! gzip -dc "$root/tests/data/kcache-0.4.h.gz" >"$tmp/04/kcache.h" 2>/dev/null; then
    echo "FAIL mixed-04: tests/data/kcache-0.4.h.gz does not decompress"; exit 1
fi
libs="-lhiredis -lzstd -lssl -lcrypto -lpthread"
for v in 04 new; do
    inc=$([ $v = 04 ] && echo "$tmp/04" || echo "$root")
    ${CC:-cc} -std=c99 -O1 -I"$inc" -o "$tmp/client-$v" "$root/tests/mixed_client.c" $libs 2>"$tmp/cc.log" ||
        { echo "FAIL mixed-04: the client does not build against $v: $(head -c 400 "$tmp/cc.log" | tr '\n' '|')"; exit 1; }
done
redis-server --port 0 --unixsocket "$tmp/redis.sock" --save '' --appendonly no >"$tmp/redis.log" 2>&1 &
pid=$!
for i in $(seq 100); do redis-cli -s "$tmp/redis.sock" ping >/dev/null 2>&1 && break; sleep 0.1; done
url="unix://$tmp/redis.sock"
pair() { # name builder waiter key: the builder (2.5 s) starts first, the waiter half a second later
    "$tmp/client-$2" build 2500 "$url" "$4" >"$tmp/b.out" 2>&1 &
    local b=$!
    sleep 0.5
    "$tmp/client-$3" wait 0 "$url" "$4" >"$tmp/w.out" 2>&1
    wait $b
    case "$(cat "$tmp/b.out")|$(cat "$tmp/w.out")" in
    *"build: ok, builds 1, waits 0, payload right|"*"wait: ok, builds 0, waits 1, payload right") echo "ok $1";;
    *) echo "FAIL $1: builder: $(cat "$tmp/b.out"); waiter: $(cat "$tmp/w.out")";;
    esac
}
pair mixed-04-waits-for-new new 04 a
pair mixed-new-waits-for-04 04 new b

# a Redis Cluster: masters A and B hold the slots, C (listed) none. Its ports (and their bus ports,
# + 10000) below the kernel's ephemeral range, free when looked at; tried 3 times over.
free_port() {
    local p
    while :; do
        p=$((10000 + RANDOM % 12000))
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
        (exec 3<>"/dev/tcp/127.0.0.1/$((p + 10000))") 2>/dev/null && continue
        echo $p; return
    done
}
cluster_start() { # sets ports (A, B and C) once the cluster is whole; fails otherwise
    local n p i up
    ports=
    for n in a b c; do
        p=$(free_port)
        rm -rf "$tmp/cl-$n"; mkdir -p "$tmp/cl-$n"
        (cd "$tmp/cl-$n" && exec redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file nodes.conf \
            --cluster-node-timeout 5000 --save '' --appendonly no >redis.log 2>&1) &
        cpids="$cpids $!"
        ports="$ports $p"
    done
    set -- $ports
    for p in "$@"; do for i in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done; done
    redis-cli -p "$1" cluster addslotsrange 0 8191 >/dev/null 2>&1
    redis-cli -p "$2" cluster addslotsrange 8192 16383 >/dev/null 2>&1
    redis-cli -p "$3" cluster meet 127.0.0.1 "$1" >/dev/null 2>&1
    redis-cli -p "$3" cluster meet 127.0.0.1 "$2" >/dev/null 2>&1
    for i in $(seq 100); do
        up=0
        for p in "$@"; do redis-cli -p "$p" cluster info 2>/dev/null | grep -q "cluster_state:ok" && up=$((up + 1)); done
        [ $up = 3 ] && return 0
        sleep 0.1
    done
    for p in $cpids; do kill "$p" 2>/dev/null; done
    cpids= ports=
    return 1
}
for try in 1 2 3; do cluster_start && break; done
if [ -n "$ports" ]; then
    set -- $ports
    url="redis://127.0.0.1:$3"
    pair mixed-cluster-04-waits-for-new new 04 c
    pair mixed-cluster-new-waits-for-04 04 new d
else
    echo "FAIL mixed-cluster: the cluster did not form (3 tries): $(tail -n 2 "$tmp"/cl-*/redis.log 2>/dev/null | tr '\n' '|')"
fi

#!/usr/bin/env bash
# test_mixed_04.sh - 0.4 and this version sharing a Redis during a rolling upgrade (issue 35.8;
# README: "Upgrading a fleet from 0.4 or 0.5.0"): tests/mixed_client.c built against 0.4's kcache.h (git
# 221b66c's, kept as tests/data/kcache-0.4.h.gz) and against this one, with signed claims, on a redis-server started here.
#   mixed-04-waits-for-new   a 0.4 waiter checks this version's tokens (issue time inside the HMAC,
#                            re-issued at every renewal of a 2.5 s build) and waits: 1 build
#   mixed-new-waits-for-04   this version waits for a 0.4 builder's token (no issue time it signs):
#                            1 build (a 0.4 build over 10 claim lifetimes, 30 s, would be built again)
# Usage: tests/test_mixed_04.sh. Prints "ok NAME" / "FAIL NAME: why" lines.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-mixed.XXXXXX")
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
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

#!/usr/bin/env bash
# Runs test_layers (read-only layers, issue 19) with a real second user for its ownership cases: as
# root it makes one with useradd and removes it afterwards, whatever happens (trap). Not root: the
# test runs everything else and prints "skip layer_owners: not root".
# Usage: tests/test_layers.sh BIN [KCACHE_INSPECT [KCACHE_TOP]]
bin=${1:-build/test_layers}
shift
if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null; then exec "$bin" "$@"; fi
user=kclay$$
cleanup() { userdel "$user" 2>/dev/null; }
trap cleanup EXIT
trap 'exit 130' INT TERM
useradd -M -N -d /nonexistent -s /usr/sbin/nologin "$user" || { echo "skip layer_owners: useradd failed"; exec "$bin" "$@"; }
KT_OTHER=$user "$bin" "$@"

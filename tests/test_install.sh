#!/usr/bin/env bash
# make install / uninstall honour PREFIX and DESTDIR; a program builds against the installed header
# through pkg-config, and against each installed companion (kcache_redis.h, kcache_vk.h) through its own
# .pc (kcache-redis, kcache-vk), the new way and the 0.4 way (-DKCACHE_REDIS / -DKCACHE_VULKAN).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest prefix=/opt/kc
if make -s -C "$root" install DESTDIR="$dest" PREFIX="$prefix" >"$tmp/log" 2>&1; then echo "ok install-runs"; else echo "FAIL install-runs: $(tail -3 "$tmp/log" | tr '\n' ' ')"; fi
for f in include/kcache.h include/kcache_redis.h include/kcache_vk.h lib/pkgconfig/kcache.pc lib/pkgconfig/kcache-redis.pc \
         lib/pkgconfig/kcache-vk.pc bin/kcache-inspect share/man/man1/kcache-inspect.1 lib/libkcache_cl.so; do
    if [ -f "$dest$prefix/$f" ]; then echo "ok installed-$(basename "$f")"; else echo "FAIL installed-$(basename "$f"): $dest$prefix/$f missing"; fi
done
cat >"$tmp/use.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include <kcache.h>
int main(void) { kcache_key k; kcache_key_init(&k, "u"); kcache_key_free(&k); return 0; }
C
pc=$dest$prefix/lib/pkgconfig
flags=$(PKG_CONFIG_PATH=$pc PKG_CONFIG_SYSROOT_DIR=$dest pkg-config --cflags --libs kcache 2>&1)
if cc -std=c99 -o "$tmp/use" "$tmp/use.c" $flags -I"$dest$prefix/include" 2>"$tmp/cc.log" && "$tmp/use"; then
    echo "ok builds-against-installed-header"
else
    echo "FAIL builds-against-installed-header: $flags $(head -3 "$tmp/cc.log" | tr '\n' ' ')"
fi
# the companions, each through its .pc (which brings kcache's): the new way, then the 0.4 way
cat >"$tmp/use-redis.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include <kcache_redis.h>
int main(void) { kcache_config c; kcache *kc; int on; kcache_config_defaults(&c); c.persistent = 0; c.remote = "redis://127.0.0.1:1";
                 if (kcache_open(&kc, &c) != KCACHE_OK) return 1; on = kcache_remote_in_use(kc, NULL, 0); kcache_close(kc); return on ? 0 : 1; }
C
cat >"$tmp/use-vk.c" <<'C'
#define KCACHE_IMPLEMENTATION
#include <kcache.h>
#include <kcache_vk.h>
int main(void) { return kcache_vk_key(NULL, NULL) == KCACHE_EINVAL ? 0 : 1; }
C
companion() { # name, .pc, source, extra flags
    local f
    f=$(PKG_CONFIG_PATH=$pc PKG_CONFIG_SYSROOT_DIR=$dest pkg-config --cflags --libs "$2" 2>&1)
    if cc -std=c99 $4 -o "$tmp/$1" "$3" $f -I"$dest$prefix/include" 2>"$tmp/cc.log" && "$tmp/$1"; then echo "ok builds-against-installed-$1"
    else echo "FAIL builds-against-installed-$1: $f $(head -3 "$tmp/cc.log" | tr '\n' ' ')"; fi
}
companion redis kcache-redis "$tmp/use-redis.c" ""
companion redis-0.4 kcache-redis "$tmp/use.c" -DKCACHE_REDIS
if [ -f /usr/include/vulkan/vulkan.h ]; then
    companion vk kcache-vk "$tmp/use-vk.c" ""
    companion vk-0.4 kcache-vk "$tmp/use.c" -DKCACHE_VULKAN
else echo "FAIL builds-against-installed-vk: <vulkan/vulkan.h> missing (Debian: libvulkan-dev)"; fi
if grep -q "^Version: $(sed -n 's/^.define KCACHE_VERSION "\(.*\)"/\1/p' "$root/kcache.h")\$" "$pc/kcache.pc"; then echo "ok pc-version"
else echo "FAIL pc-version: $(grep Version "$pc/kcache.pc")"; fi
if grep -q "^prefix=$prefix\$" "$pc/kcache.pc"; then echo "ok pc-prefix"; else echo "FAIL pc-prefix: $(head -1 "$pc/kcache.pc")"; fi
make -s -C "$root" uninstall DESTDIR="$dest" PREFIX="$prefix" >/dev/null 2>&1
left=$(find "$dest" -type f | wc -l)
if [ "$left" -eq 0 ]; then echo "ok uninstall-removes-all"; else echo "FAIL uninstall-removes-all: $left files left"; fi

# scripts/deps.sh: `demo` asks for the demo's four packages only, the default for the whole
# toolchain (a superset); as root it runs apt-get, otherwise it prints the sudo line and fails.
# Faked dpkg-query (nothing installed), apt-get and id record what would happen.
fake=$tmp/fakebin
mkdir -p "$fake"
printf '#!/bin/sh\nexit 1\n' >"$fake/dpkg-query"
printf '#!/bin/sh\necho "$*" >>"%s/apt.log"\n' "$tmp" >"$fake/apt-get"
printf '#!/bin/sh\necho "${FAKE_UID:-0}"\n' >"$fake/id"
chmod +x "$fake"/*
demo_out=$(PATH=$fake:$PATH bash "$root/scripts/deps.sh" demo 2>&1); demo_rc=$?
demo_pkgs=$(grep '^install ' "$tmp/apt.log" 2>/dev/null | tr ' ' '\n' | grep -v '^-' | grep -v '^install$' | sort | tr '\n' ' ')
if [ $demo_rc -eq 0 ] && [ "$demo_pkgs" = "build-essential ocl-icd-opencl-dev opencl-headers pocl-opencl-icd " ]; then
    echo "ok deps-demo-installs-only-the-demo"
else echo "FAIL deps-demo-installs-only-the-demo: status $demo_rc, packages '$demo_pkgs': $demo_out"; fi
rm -f "$tmp/apt.log"
PATH=$fake:$PATH bash "$root/scripts/deps.sh" >/dev/null 2>&1
all_pkgs=$(grep '^install ' "$tmp/apt.log" 2>/dev/null | tr ' ' '\n' | grep -v '^-' | grep -v '^install$' | sort)
missing_demo=$(for p in $demo_pkgs; do grep -qx "$p" <<<"$all_pkgs" || echo "$p"; done)
if [ "$(wc -l <<<"$all_pkgs")" -gt 20 ] && [ -z "$missing_demo" ] && grep -qx valgrind <<<"$all_pkgs"; then
    echo "ok deps-test-installs-the-toolchain"
else echo "FAIL deps-test-installs-the-toolchain: $(wc -l <<<"$all_pkgs") packages, lacking: $missing_demo"; fi
rm -f "$tmp/apt.log"
user_out=$(FAKE_UID=1000 PATH=$fake:$PATH bash "$root/scripts/deps.sh" demo 2>&1); user_rc=$?
if [ $user_rc -ne 0 ] && grep -q 'sudo apt-get install -y build-essential' <<<"$user_out" && [ ! -e "$tmp/apt.log" ]; then
    echo "ok deps-not-root-prints-the-command"
else echo "FAIL deps-not-root-prints-the-command: status $user_rc: $user_out"; fi

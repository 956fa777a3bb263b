#!/usr/bin/env bash
# make install / uninstall honour PREFIX and DESTDIR; a program builds against the installed header
# through pkg-config.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest prefix=/opt/kc
if make -s -C "$root" install DESTDIR="$dest" PREFIX="$prefix" >"$tmp/log" 2>&1; then echo "ok install-runs"; else echo "FAIL install-runs: $(tail -3 "$tmp/log" | tr '\n' ' ')"; fi
for f in include/kcache.h lib/pkgconfig/kcache.pc bin/kcache-inspect share/man/man1/kcache-inspect.1; do
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
if grep -q "^prefix=$prefix\$" "$pc/kcache.pc"; then echo "ok pc-prefix"; else echo "FAIL pc-prefix: $(head -1 "$pc/kcache.pc")"; fi
make -s -C "$root" uninstall DESTDIR="$dest" PREFIX="$prefix" >/dev/null 2>&1
left=$(find "$dest" -type f | wc -l)
if [ "$left" -eq 0 ]; then echo "ok uninstall-removes-all"; else echo "FAIL uninstall-removes-all: $left files left"; fi

#!/usr/bin/env bash
# examples/vk_pipeline on its own store, run as a reader would run it: the first run compiles the GLSL
# (shaderc) and makes the pipeline cold, the second takes both from the cache, --fresh makes both
# again; every run checks its 256 results. From two working directories, so nothing depends on one.
set -u
ex=${1:-build/vk_pipeline}
ex=$(cd "$(dirname "$ex")" && pwd)/$(basename "$ex")
if [ ! -x "$ex" ]; then echo "skip demo-vulkan: $ex was not built (no vulkan.h or shaderc.h: libvulkan-dev, libshaderc-dev)"; exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KCACHE_DIR=$tmp/store
mkdir -p "$tmp/a" "$tmp/b"
first=$(cd "$tmp/a" && "$ex" 2>&1); rc1=$?
if [ $rc1 -ne 0 ] && echo "$first" | grep -q "no Vulkan"; then echo "skip demo-vulkan: $first"; exit 0; fi
second=$(cd "$tmp/b" && "$ex" 2>&1); rc2=$?
third=$(cd "$tmp/a" && "$ex" --fresh 2>&1); rc3=$?
if [ $rc1 -eq 0 ] && echo "$first" | grep -q "^GLSL to SPIR-V: .* (compiled by shaderc" && echo "$first" | grep -q "^pipeline: .* (made cold, blob stored" &&
   echo "$first" | grep -q "^results: *all right"; then
    echo "ok demo-vulkan-first-run-compiles"; else echo "FAIL demo-vulkan-first-run-compiles: $first"; fi
if [ $rc2 -eq 0 ] && echo "$second" | grep -q "^GLSL to SPIR-V: .* (from the cache" && echo "$second" | grep -q "^pipeline: .* (from the cache" &&
   echo "$second" | grep -q "^results: *all right"; then
    echo "ok demo-vulkan-second-run-hits"; else echo "FAIL demo-vulkan-second-run-hits: $second"; fi
if [ $rc3 -eq 0 ] && echo "$third" | grep -q "(compiled by shaderc" && echo "$third" | grep -q "(made cold" &&
   echo "$third" | grep -q "^results: *all right"; then
    echo "ok demo-vulkan-fresh-remakes"; else echo "FAIL demo-vulkan-fresh-remakes: $third"; fi
if "$ex" --help | grep -q "^usage: vk_pipeline" && ! "$ex" --bogus >/dev/null 2>&1; then
    echo "ok demo-vulkan-options"; else echo "FAIL demo-vulkan-options"; fi

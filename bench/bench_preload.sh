#!/usr/bin/env bash
# The preload library against clFFT's own cache (CLFFT_CACHE_PATH), in one run: Debian's clFFT
# client, ten transforms (1D/2D/3D, float/double, forward/backward, in and out of place), each pass
# with PoCL's own kernel cache off (POCL_KERNEL_CACHE=0, so neither cache is helped by it), then
# again with PoCL's cache on but empty at each pass (a fresh container, CI):
#   none      no cache at all
#   clfft     clFFT's cache, warm (filled by a pass before)
#   kcache    LD_PRELOAD=build/libkcache_cl.so, warm (filled by a pass before)
#   kc-fill   the pass that fills kcache's store
#   kc-pwarm  (PoCL's cache on) kcache warm with PoCL's cache warm too (one directory, filled by a
#             pass before): the empty-cache pass (kcache) against it is the fresh container's cost
# Prints each pass's wall time and the ratios to clFFT's cache; every transform must PASS.
# Usage: bench/bench_preload.sh [build/libkcache_cl.so]
set -u
lib=$(realpath "${1:-build/libkcache_cl.so}")
client=$(command -v clFFT-client) || { echo "bench_preload: clFFT-client missing (apt-get install clfft-client)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
transforms=("-x 1024" "-x 4096 --double" "-x 256 --inv" "-x 2048 -o" "-x 64 -y 64" "-x 128 -y 128 --double"
            "-x 32 -y 32 --inv -o" "-x 16 -y 16 -z 16" "-x 1000" "-x 8 -y 8 -z 8 --double --inv")
now() { date +%s%N; }
one() { # one NAME TRANSFORM ENV...: one run of the client, its ms added to ${ms[NAME]}; it must PASS
    local name=$1 t=$2 t0; shift 2
    t0=$(now)
    # a fresh PoCL cache directory for each run (when PoCL's cache is on: empty, as in a fresh container)
    # shellcheck disable=SC2086
    # (kc-pwarm*: one directory for all its runs, warm after the first)
    case $name in kc-pwarm*) pdir=$tmp/pocl-warm ;; *) pdir=$tmp/pocl-$((++npocl)) ;; esac
    env POCL_CACHE_DIR="$pdir" "$@" "$client" $t >"$tmp/out" 2>&1
    ms[$name]=$(( ${ms[$name]:-0} + ($(now) - t0) / 1000000 ))
    grep -q '\*PASS\*' "$tmp/out" || { echo "bench_preload: $name: $t did not PASS: $(tail -n 3 "$tmp/out")"; exit 1; }
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
npocl=0
for pocl in 0 1; do
    rm -rf "$tmp/clfft" "$tmp/store"; mkdir -p "$tmp/clfft"
    export POCL_KERNEL_CACHE=$pocl
    declare -A ms=()
    # the passes that fill (and no cache), then the warm passes run transform by transform, one
    # cache after the other, so that a change of load on the machine falls on both
    for t in "${transforms[@]}"; do
        one none "$t" KCACHE_CL_PRELOAD=0
        one clfft-fill "$t" CLFFT_CACHE_PATH="$tmp/clfft/"
        one kc-fill "$t" KCACHE_DIR="$tmp/store" LD_PRELOAD="$lib"
    done
    if [ "$pocl" = 1 ]; then
        rm -rf "$tmp/pocl-warm"
        for t in "${transforms[@]}"; do one kc-pwarm-fill "$t" KCACHE_DIR="$tmp/store" LD_PRELOAD="$lib"; done
    fi
    for t in "${transforms[@]}"; do
        one clfft "$t" CLFFT_CACHE_PATH="$tmp/clfft/"
        one kcache "$t" KCACHE_DIR="$tmp/store" LD_PRELOAD="$lib"
        if [ "$pocl" = 1 ]; then one kc-pwarm "$t" KCACHE_DIR="$tmp/store" LD_PRELOAD="$lib"; fi
    done
    none=${ms[none]} clfft=${ms[clfft]} kc=${ms[kcache]} fill=${ms[kc-fill]}
    if [ "$pocl" = 0 ]; then echo "clFFT client, ${#transforms[@]} transforms, PoCL's kernel cache off, all PASS"
    else echo "clFFT client, ${#transforms[@]} transforms, PoCL's kernel cache on and empty at each transform, all PASS"; fi
    printf '  %-38s %8d ms  %s of clFFT'"'"'s cache\n' "no cache" "$none" "$(ratio "$none" "$clfft")"
    printf '  %-38s %8d ms  1.00x\n' "clFFT's own cache (CLFFT_CACHE_PATH)" "$clfft"
    printf '  %-38s %8d ms  %s of clFFT'"'"'s cache\n' "kcache preload, warm" "$kc" "$(ratio "$kc" "$clfft")"
    printf '  %-38s %8d ms  %s of no cache\n' "kcache preload, the filling pass" "$fill" "$(ratio "$fill" "$none")"
    if [ "$pocl" = 1 ]; then
        printf '  %-38s %8d ms  (kcache warm into an empty PoCL cache: %s of this)\n' "kcache preload, warm, PoCL's cache warm" \
            "${ms[kc-pwarm]}" "$(ratio "$kc" "${ms[kc-pwarm]}")"
    fi
done

#!/usr/bin/env bash
# The preload library against clFFT's own cache (CLFFT_CACHE_PATH), in one run: Debian's clFFT
# client, ten transforms (1D/2D/3D, float/double, forward/backward, in and out of place), each pass
# with PoCL's own kernel cache off (POCL_KERNEL_CACHE=0, so neither cache is helped by it), then
# again with PoCL's cache on but empty at each pass (a fresh container, CI):
#   none      no cache at all
#   clfft     clFFT's cache, warm (filled by a pass before)
#   kcache    LD_PRELOAD=build/libkcache_cl.so, warm (filled by a pass before)
#   kc-fill   the pass that fills kcache's store
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
run_pass() { # run_pass NAME ENV...: every transform once, returns ms in $ms; counts PASS
    local name=$1 t t0 fails=0; shift
    t0=$(now)
    for t in "${transforms[@]}"; do
        # a fresh PoCL cache directory for each transform of each pass (when PoCL's cache is on)
        # shellcheck disable=SC2086
        env POCL_CACHE_DIR="$tmp/pocl-$((++npocl))" "$@" "$client" $t >"$tmp/out" 2>&1
        grep -q '\*PASS\*' "$tmp/out" || { fails=$((fails + 1)); echo "bench_preload: $name: $t did not PASS: $(tail -n 3 "$tmp/out")"; }
    done
    ms=$(( ($(now) - t0) / 1000000 ))
    [ "$fails" -eq 0 ] || exit 1
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
npocl=0
for pocl in 0 1; do
    rm -rf "$tmp/clfft" "$tmp/store"; mkdir -p "$tmp/clfft"
    export POCL_KERNEL_CACHE=$pocl
    run_pass none KCACHE_CL_PRELOAD=0; none=$ms
    run_pass clfft-fill CLFFT_CACHE_PATH="$tmp/clfft/"
    run_pass clfft CLFFT_CACHE_PATH="$tmp/clfft/"; clfft=$ms
    run_pass kc-fill KCACHE_DIR="$tmp/store" LD_PRELOAD="$lib"; fill=$ms
    run_pass kcache KCACHE_DIR="$tmp/store" LD_PRELOAD="$lib"; kc=$ms
    if [ "$pocl" = 0 ]; then echo "clFFT client, ${#transforms[@]} transforms, PoCL's kernel cache off, all PASS"
    else echo "clFFT client, ${#transforms[@]} transforms, PoCL's kernel cache on and empty at each transform, all PASS"; fi
    printf '  %-38s %8d ms  %s of clFFT'"'"'s cache\n' "no cache" "$none" "$(ratio "$none" "$clfft")"
    printf '  %-38s %8d ms  1.00x\n' "clFFT's own cache (CLFFT_CACHE_PATH)" "$clfft"
    printf '  %-38s %8d ms  %s of clFFT'"'"'s cache\n' "kcache preload, warm" "$kc" "$(ratio "$kc" "$clfft")"
    printf '  %-38s %8d ms  %s of no cache\n' "kcache preload, the filling pass" "$fill" "$(ratio "$fill" "$none")"
done

/* bench/bench_hash.c - kcache_hash (XXH3-128) throughput against the reference xxHash.
 *
 * Build (from the repository root; while the hash layer lives in wip/, use -Iwip/shim instead
 * of -I.). kcache is compiled with plain -O2 and no -m flag, as programs that vendor it do; the
 * reference (bench/ref_xxh3.c = xxhash.h from libxxhash-dev with XXH_INLINE_ALL) is compiled
 * twice, once for its SSE2 code and once for its AVX2 code:
 *
 *   cc -O3        -I. -DREF_NAME=ref_sse2 -c bench/ref_xxh3.c -o build/ref_sse2.o
 *   cc -O3 -mavx2 -I. -DREF_NAME=ref_avx2 -c bench/ref_xxh3.c -o build/ref_avx2.o
 *   cc -O2        -I. bench/bench_hash.c build/ref_sse2.o build/ref_avx2.o -o build/bench_hash
 *   build/bench_hash
 *
 * (x86-64 only as written: elsewhere build ref_avx2.o without -mavx2; the AVX2 column then
 * measures the reference's default code.) Needs libxxhash-dev (xxhash.h) for the reference.
 *
 * Prints, for 64 B, 1 KiB, 64 KiB and 1 MiB: GB/s of kcache_hash (the path it picks at run time),
 * of kcache forced onto its SSE2 path (what a CPU without AVX2 gets; scalar off x86-64), of the
 * reference built for SSE2 and for AVX2; the ratios kcache/ref_avx2, kcache/ref_sse2 and
 * kcache_sse2/ref_sse2; and the path kcache chose.
 * Each figure is the best of many short batches, the three contenders interleaved, about
 * 100-200 ms per size. Exits 1 if any result differs from the reference. */
#define _POSIX_C_SOURCE 200809L
#define KCACHE_IMPLEMENTATION
#include "kcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

kcache_hash128 ref_sse2(const void *data, size_t len);
kcache_hash128 ref_avx2(const void *data, size_t len);
int ref_sse2_vector(void);
int ref_avx2_vector(void);

typedef kcache_hash128 (*hash_fn)(const void *, size_t);

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static const char *path_name(int path)
{
    switch (path) {
    case KCACHE__HASH_SCALAR: return "scalar";
    case KCACHE__HASH_SSE2: return "sse2";
    case KCACHE__HASH_AVX2: return "avx2";
    case KCACHE__HASH_NEON: return "neon";
    default: return "?";
    }
}

static const char *vector_name(int v)
{
    static const char *const names[] = { "scalar", "sse2", "avx2", "avx512", "neon", "vsx", "sve" };
    return v >= 0 && v < (int)(sizeof names / sizeof names[0]) ? names[v] : "?";
}

static kcache_hash128 kcache_sse2(const void *data, size_t len)
{
    return kcache__hash_with_path(KCACHE__HASH_SSE2, data, len);
}

static volatile uint64_t sink;

/* One batch: `iters` calls on buf through a volatile function pointer (opaque, so no call can
 * be merged or hoisted); returns nanoseconds. The buffer is not written between calls: a store
 * right before the hash's wide loads would time a store-forwarding stall, not the hash. */
static double batch(hash_fn volatile *fn, unsigned char *buf, size_t len, size_t iters)
{
    hash_fn f = *fn;
    uint64_t acc = 0;
    size_t i;
    double t0 = now_ns();
    for (i = 0; i < iters; i++) {
        kcache_hash128 h = f(buf, len);
        acc += h.lo ^ h.hi;
    }
    t0 = now_ns() - t0;
    sink += acc;
    return t0;
}

int main(void)
{
    static const size_t sizes[] = { 64, 1024, 64 * 1024, 1024 * 1024 };
    const size_t batch_bytes = (size_t)2 << 20; /* per batch: ~50-200 us at these speeds */
    const int trials = 150;
    int have_avx2 = kcache__hash_path_supported(KCACHE__HASH_AVX2);
    hash_fn volatile fns[4];
    size_t maxlen = sizes[sizeof sizes / sizeof sizes[0] - 1], i, s;
    unsigned char *buf = (unsigned char *)malloc(maxlen);
    uint32_t x = 12345;
    int bad = 0;

    if (!buf) return 2;
    for (i = 0; i < maxlen; i++) {
        x = x * 1664525u + 1013904223u;
        buf[i] = (unsigned char)(x >> 24);
    }
    fns[0] = kcache_hash;
    fns[1] = kcache_sse2;
    fns[2] = ref_sse2;
    fns[3] = ref_avx2; /* last: left out without AVX2 */

    /* the results must agree before any timing means something */
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t len;
        for (len = sizes[s] - 3; len <= sizes[s] + 3 && len <= maxlen; len++) {
            kcache_hash128 k = kcache_hash(buf, len), k2 = kcache_sse2(buf, len), r1 = ref_sse2(buf, len);
            if (k.lo != r1.lo || k.hi != r1.hi) { printf("MISMATCH vs ref_sse2 at %zu bytes\n", len); bad = 1; }
            if (k2.lo != r1.lo || k2.hi != r1.hi) { printf("MISMATCH (sse2 path) at %zu bytes\n", len); bad = 1; }
            if (have_avx2) {
                kcache_hash128 r2 = ref_avx2(buf, len);
                if (k.lo != r2.lo || k.hi != r2.hi) { printf("MISMATCH vs ref_avx2 at %zu bytes\n", len); bad = 1; }
            }
        }
    }

    printf("XXH3-128 throughput, GB/s (best of %d batches; kcache -O2, reference -O3 [%s] and -O3 -mavx2 [%s])\n",
           trials, vector_name(ref_sse2_vector()), have_avx2 ? vector_name(ref_avx2_vector()) : "not run: no AVX2");
    printf("%8s %8s %8s %8s %8s %12s %12s %12s  %s\n", "size", "kcache", "kc_sse2", "ref_sse2", "ref_avx2",
           "kc/ref_avx2", "kc/ref_sse2", "kc_sse2/ref", "kcache path");
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t len = sizes[s], iters = batch_bytes / len;
        double best[4] = { 1e300, 1e300, 1e300, 1e300 };
        int t, f, nf = have_avx2 ? 4 : 3;
        char label[32];
        for (f = 0; f < nf; f++) batch(&fns[f], buf, len, iters / 4 + 1); /* warm up */
        for (t = 0; t < trials; t++)
            for (f = 0; f < nf; f++) {
                double ns = batch(&fns[f], buf, len, iters);
                if (ns < best[f]) best[f] = ns;
            }
        if (len >= 1024 * 1024) snprintf(label, sizeof label, "%zu MiB", len >> 20);
        else if (len >= 1024) snprintf(label, sizeof label, "%zu KiB", len >> 10);
        else snprintf(label, sizeof label, "%zu B", len);
        {
            double g[4];
            for (f = 0; f < 4; f++) g[f] = f < nf ? (double)len * (double)iters / best[f] : 0.0;
            printf("%8s %8.2f %8.2f %8.2f %8.2f %12.2f %12.2f %12.2f  %s\n", label, g[0], g[1], g[2], g[3],
                   have_avx2 ? g[0] / g[3] : 0.0, g[0] / g[2], g[1] / g[2],
                   len <= KCACHE__MIDSIZE_MAX ? "short (scalar)"
                                              : path_name(kcache__hash_resolve(KCACHE__HASH_AUTO, len)));
        }
    }
    free(buf);
    if (bad) printf("FAIL: kcache_hash differs from the reference\n");
    return bad;
}

/* bench/bench_hash.c - kcache_hash (XXH3-128) throughput against the reference xxHash.
 *
 * Build (from the repository root): `make build/bench_hash`. kcache is compiled with plain -O2
 * and no -m flag, as programs that vendor it do; the reference (bench/ref_xxh3.c = xxhash.h from
 * libxxhash-dev with XXH_INLINE_ALL) is compiled three times, for its SSE2, AVX2 and AVX-512 code:
 *
 *   cc -O3           -I. -DREF_NAME=ref_sse2   -c bench/ref_xxh3.c -o build/ref_sse2.o
 *   cc -O3 -mavx2    -I. -DREF_NAME=ref_avx2   -c bench/ref_xxh3.c -o build/ref_avx2.o
 *   cc -O3 -mavx512f -I. -DREF_NAME=ref_avx512 -c bench/ref_xxh3.c -o build/ref_avx512.o
 *   cc -O2 -I. bench/bench_hash.c build/ref_*.o -o build/bench_hash && build/bench_hash
 *
 * (x86-64 only as written: elsewhere build the ref_avx* objects without -m flags; their columns
 * then measure the reference's default code.) Needs libxxhash-dev (xxhash.h) for the reference.
 *
 * Prints, for 64 B, 1 KiB, 64 KiB and 1 MiB, the GB/s of: kcache_hash (the path it picks at run
 * time), kcache forced onto each of its vector paths this CPU runs, and each reference build this
 * CPU runs; then kcache over the fastest reference build, and the path kcache chose. Each figure
 * is the best of many short batches, all contenders interleaved, about 100-300 ms per size.
 * Exits 1 if any result differs from the reference. */
#define _POSIX_C_SOURCE 200809L
#define KCACHE_IMPLEMENTATION
#define KCACHE_TEST_HASH_PATHS /* kcache_test_hash_path: each of kcache's paths, forced */
#include "kcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

kcache_hash128 ref_sse2(const void *data, size_t len);
kcache_hash128 ref_avx2(const void *data, size_t len);
kcache_hash128 ref_avx512(const void *data, size_t len);
int ref_sse2_vector(void);
int ref_avx2_vector(void);
int ref_avx512_vector(void);

typedef kcache_hash128 (*hash_fn)(const void *, size_t);

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static const char *vector_name(int v)
{
    static const char *const names[] = { "scalar", "sse2", "avx2", "avx512", "neon", "vsx", "sve" };
    return v >= 0 && v < (int)(sizeof names / sizeof names[0]) ? names[v] : "?";
}

/* Whether this CPU runs the reference's AVX-512 build (which needs only AVX512F). */
static int cpu_avx512f(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("avx512f") ? 1 : 0;
#else
    return 1;
#endif
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

typedef struct contender {
    const char *name;
    hash_fn fn;
    int is_ref;
} contender;

int main(void)
{
    static const size_t sizes[] = { 64, 1024, 64 * 1024, 1024 * 1024 };
    const size_t batch_bytes = (size_t)2 << 20; /* per batch: ~30-200 us at these speeds */
    const int trials = 150;
    contender c[8];
    hash_fn volatile fn;
    int nc = 0, f, t, bad = 0;
    size_t maxlen = sizes[sizeof sizes / sizeof sizes[0] - 1], i, s;
    unsigned char *buf = (unsigned char *)malloc(maxlen);
    uint32_t x = 12345;

    if (!buf) return 2;
    for (i = 0; i < maxlen; i++) {
        x = x * 1664525u + 1013904223u;
        buf[i] = (unsigned char)(x >> 24);
    }
    c[nc].name = "kcache", c[nc].fn = kcache_hash, c[nc++].is_ref = 0;
    if (kcache_test_hash_path("avx512")) c[nc].name = "kc_avx512", c[nc].fn = kcache_test_hash_path("avx512"), c[nc++].is_ref = 0;
    if (kcache_test_hash_path("avx2")) c[nc].name = "kc_avx2", c[nc].fn = kcache_test_hash_path("avx2"), c[nc++].is_ref = 0;
    if (kcache_test_hash_path("sse2")) c[nc].name = "kc_sse2", c[nc].fn = kcache_test_hash_path("sse2"), c[nc++].is_ref = 0;
    c[nc].name = "ref_sse2", c[nc].fn = ref_sse2, c[nc++].is_ref = 1;
    if (kcache_test_hash_path("avx2")) c[nc].name = "ref_avx2", c[nc].fn = ref_avx2, c[nc++].is_ref = 1;
    if (kcache_test_hash_path("avx2") && cpu_avx512f())
        c[nc].name = "ref_avx512", c[nc].fn = ref_avx512, c[nc++].is_ref = 1;

    /* the results must agree before any timing means something */
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t len;
        for (len = sizes[s] - 3; len <= sizes[s] + 3 && len <= maxlen; len++) {
            kcache_hash128 r = ref_sse2(buf, len);
            for (f = 0; f < nc; f++) {
                kcache_hash128 h = c[f].fn(buf, len);
                if (h.lo != r.lo || h.hi != r.hi) { printf("MISMATCH: %s at %zu bytes\n", c[f].name, len); bad = 1; }
            }
        }
    }

    printf("XXH3-128 throughput, GB/s (best of %d batches; kcache -O2, reference -O3 built for %s, %s and %s)\n", trials,
           vector_name(ref_sse2_vector()), vector_name(ref_avx2_vector()), vector_name(ref_avx512_vector()));
    printf("%8s", "size");
    for (f = 0; f < nc; f++) printf(" %10s", c[f].name);
    printf(" %14s  %s\n", "kcache/bestref", "kcache path");
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t len = sizes[s], iters = batch_bytes / len;
        double best[8], bestref = 0;
        char label[32];
        for (f = 0; f < nc; f++) {
            best[f] = 1e300;
            fn = c[f].fn;
            batch(&fn, buf, len, iters / 4 + 1); /* warm up */
        }
        for (t = 0; t < trials; t++)
            for (f = 0; f < nc; f++) {
                double ns;
                fn = c[f].fn;
                ns = batch(&fn, buf, len, iters);
                if (ns < best[f]) best[f] = ns;
            }
        if (len >= 1024 * 1024) snprintf(label, sizeof label, "%zu MiB", len >> 20);
        else if (len >= 1024) snprintf(label, sizeof label, "%zu KiB", len >> 10);
        else snprintf(label, sizeof label, "%zu B", len);
        printf("%8s", label);
        for (f = 0; f < nc; f++) {
            double g = (double)len * (double)iters / best[f];
            printf(" %10.2f", g);
            if (c[f].is_ref && g > bestref) bestref = g;
        }
        printf(" %14.2f  %s\n", (double)len * (double)iters / best[0] / bestref,
               kcache_test_hash_path_for(len));
    }
    free(buf);
    if (bad) printf("FAIL: kcache_hash differs from the reference\n");
    return bad;
}

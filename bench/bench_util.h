/* bench_util.h - helpers the benchmarks share: a monotonic clock, removing a temp tree, a
   comparison for qsort, a median and an entry's size in a store. Included after kcache.h (which
   brings the system headers). */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__GNUC__) || defined(__clang__)
#define BENCH_UNUSED __attribute__((unused)) /* not every benchmark uses every helper */
#else
#define BENCH_UNUSED
#endif

BENCH_UNUSED static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

BENCH_UNUSED static void rm_rf(const char *path) {
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "bench: could not remove %s\n", path);
}

BENCH_UNUSED static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The bytes an entry of key k with an n-byte payload takes in a store, as the store accounts them
   (header, key record, payload): one put into a new store under dir, read back from the stats, so
   that a bench sizes its stores through public calls only. 0 when that store cannot be made. */
BENCH_UNUSED static uint64_t entry_bytes(const kcache_key *k, size_t n, const char *dir) {
    char store[4200];
    kcache_config cfg;
    kcache_stats st;
    kcache *kc;
    void *payload = calloc(1, n ? n : 1);
    uint64_t bytes = 0;
    snprintf(store, sizeof store, "%s/entry-bytes", dir);
    kcache_config_defaults(&cfg);
    cfg.dir = store;
    if (payload && kcache_open(&kc, &cfg) == KCACHE_OK) {
        if (kcache_dir(kc) && kcache_put(kc, k, payload, n) == KCACHE_OK) {
            kcache_get_stats(kc, &st);
            bytes = st.disk_bytes;
        }
        kcache_close(kc);
    }
    free(payload);
    rm_rf(store);
    return bytes;
}

/* The median of v[0..n) (sorts v). */
BENCH_UNUSED static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}
#endif

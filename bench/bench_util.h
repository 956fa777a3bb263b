/* bench_util.h - helpers the benchmarks share: a monotonic clock, removing a temp tree, a
   comparison for qsort and a median. Included after kcache.h (which brings the system headers). */
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

/* The median of v[0..n) (sorts v). */
BENCH_UNUSED static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}
#endif

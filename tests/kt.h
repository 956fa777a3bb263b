/* kt.h - the test suite's own tiny runner (no dependency).
 *
 * Each test program prints one line per check group:
 *     ok <name>
 *     FAIL <name>: <file>:<line>: <what>
 * and exits non-zero when anything failed. tests/run.sh counts those lines over every
 * program and prints the closing "N passed, N failed". */
#ifndef KT_H
#define KT_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int kt_failures_total;
static int kt_failures_here;
static const char *kt_current;

#define KT_FAILF(...)                                                                   \
    do {                                                                                \
        kt_failures_here++;                                                             \
        printf("FAIL %s: %s:%d: ", kt_current ? kt_current : "?", __FILE__, __LINE__);  \
        printf(__VA_ARGS__);                                                            \
        printf("\n");                                                                   \
        fflush(stdout);                                                                 \
    } while (0)

/* CHECK records a failure and goes on, so one run reports everything that is wrong. */
#define KT_CHECK(cond)                                                                  \
    do { if (!(cond)) KT_FAILF("%s", #cond); } while (0)
#define KT_CHECK_MSG(cond, ...)                                                         \
    do { if (!(cond)) KT_FAILF(__VA_ARGS__); } while (0)
#define KT_CHECK_EQ_U64(a, b)                                                           \
    do { unsigned long long kt_a_ = (unsigned long long)(a), kt_b_ = (unsigned long long)(b); \
         if (kt_a_ != kt_b_) KT_FAILF("%s == %s (%llu vs %llu)", #a, #b, kt_a_, kt_b_); } while (0)
#define KT_CHECK_STR(a, b)                                                              \
    do { const char *kt_a_ = (a), *kt_b_ = (b);                                          \
         if (!kt_a_ || !kt_b_ || strcmp(kt_a_, kt_b_) != 0)                              \
             KT_FAILF("%s == %s (\"%s\" vs \"%s\")", #a, #b, kt_a_ ? kt_a_ : "(null)",   \
                      kt_b_ ? kt_b_ : "(null)"); } while (0)

/* Runs one named group of checks and prints its verdict line. */
#define KT_RUN(fn)                                                                      \
    do {                                                                                \
        kt_current = #fn;                                                               \
        kt_failures_here = 0;                                                           \
        fn();                                                                           \
        if (kt_failures_here == 0) printf("ok %s\n", #fn);                              \
        kt_failures_total += kt_failures_here;                                          \
        fflush(stdout);                                                                 \
    } while (0)

/* The same for a group that may skip every case it has (no root, filtered out): it sets `ran`
   when a case ran, and prints "ok" only then. */
#define KT_RUN_RAN(fn, ran)                                                             \
    do {                                                                                \
        kt_current = #fn;                                                               \
        kt_failures_here = 0;                                                           \
        (ran) = 0;                                                                      \
        fn();                                                                           \
        if (kt_failures_here == 0 && (ran)) printf("ok %s\n", #fn);                    \
        kt_failures_total += kt_failures_here;                                          \
        fflush(stdout);                                                                 \
        fflush(stderr);                                                                 \
    } while (0)

/* A group this build cannot run (it needs a part a KCACHE_NO_* switch compiled out): one
   "skip NAME: why" line instead of its verdict. The group is still compiled. */
#define KT_SKIP(fn, why)                                                                \
    do {                                                                                \
        printf("skip %s: %s\n", #fn, why);                                              \
        fflush(stdout);                                                                 \
        if (0) fn();                                                                    \
    } while (0)

#define KT_EXIT() return kt_failures_total ? 1 : 0

/* Appends line and a newline to a log the test reads back with strstr (buf holds cap bytes, *len
   of them used, NUL-terminated): kcache's debug lines collected through cfg.log. A line that does
   not fit is dropped. The caller holds its own lock when several threads log. */
static inline void kt_log_append(char *buf, size_t cap, size_t *len, const char *line) {
    size_t n = strlen(line);
    if (*len + n + 2 < cap) {
        memcpy(buf + *len, line, n);
        *len += n;
        buf[(*len)++] = '\n';
        buf[*len] = 0;
    }
}

#endif

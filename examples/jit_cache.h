/* jit_cache.h - what every JIT path around kcache does the same way; the examples share it
   (demo_cc.c: C compiled by cc and loaded with dlopen; nvrtc_ptx.c: CUDA C compiled by NVRTC).

   A compiled artifact is stored with the time its compile took (8 bytes before it), so that a hit
   can say what it saved. The build runs through kcache_get_or_build: threads and processes that
   miss the same key together compile it once. Include after kcache.h (declarations only). */
#ifndef JIT_CACHE_H
#define JIT_CACHE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__GNUC__) || defined(__clang__)
#define JIT_UNUSED __attribute__((unused)) /* each example uses some of the helpers */
#else
#define JIT_UNUSED
#endif

static double jit_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The compiler: fills *out (malloc'd) and *size with the artifact; 0 on success. */
typedef int (*jit_compile_fn)(void *user, unsigned char **out, size_t *size);

typedef struct jit_result {
    const unsigned char *data; /* the artifact (after the 8-byte compile time) */
    size_t size;
    double compile_ms;         /* what compiling took, in the run that compiled it */
    double ready_ms;           /* what this run took to have it */
    int hit;                   /* it came from the cache */
    char why[512];             /* before the lookup: why it hits or misses (kcache_explain) */
    const void *held;          /* what kcache_release gives back */
} jit_result;

typedef struct jit_build { jit_compile_fn compile; void *user; int called; } jit_build;

/* kcache_build_fn: runs the compiler and prefixes its artifact with its compile time. */
static int jit_build_cb(void *user, void **out, size_t *out_size) {
    jit_build *b = (jit_build *)user;
    unsigned char *art = NULL, *p;
    size_t n = 0;
    double t0 = jit_now_ms(), ms;
    b->called = 1;
    if (b->compile(b->user, &art, &n) != 0) return 1;
    ms = jit_now_ms() - t0;
    if ((p = (unsigned char *)malloc(n + 8)) == NULL) { free(art); return 1; }
    memcpy(p, &ms, 8);
    memcpy(p + 8, art, n);
    free(art);
    *out = p;
    *out_size = n + 8;
    return 0;
}

/* Looks key up, compiling on a miss. fresh: drops the entry first, so this run compiles. 0 when the
   artifact is in *r (release it with jit_release); else the compiler failed (its own message said). */
static int jit_get(kcache *kc, const kcache_key *key, int fresh, jit_compile_fn compile, void *user, jit_result *r) {
    jit_build b;
    const void *p = NULL;
    size_t n = 0;
    double t0 = jit_now_ms();
    memset(r, 0, sizeof *r);
    b.compile = compile;
    b.user = user;
    b.called = 0;
    if (fresh) { /* kcache_explain would now say "never stored": true of the store, not of the story */
        kcache_remove(kc, key);
        snprintf(r->why, sizeof r->why, "removed on purpose (--fresh), so this run compiles");
    } else {
        kcache_explain(kc, key, r->why, sizeof r->why);
    }
    if (kcache_get_or_build(kc, key, jit_build_cb, &b, &p, &n) != KCACHE_OK || n < 8) return 1;
    r->ready_ms = jit_now_ms() - t0;
    r->held = p;
    memcpy(&r->compile_ms, p, 8);
    r->data = (const unsigned char *)p + 8;
    r->size = n - 8;
    r->hit = !b.called;
    return 0;
}

static void jit_release(kcache *kc, jit_result *r) {
    if (r->held) kcache_release(kc, r->held);
    r->held = NULL;
}

/* The lines every example prints: the store, why before, and what this run cost. */
static void jit_report_head(kcache *kc, const char *title, const jit_result *r) {
    char why[300];
    printf("%s  (store: %s)\n", title, kcache_store_in_use(kc, why, sizeof why) ? kcache_dir(kc) : why);
    printf("  before : %s\n", r->why);
}
static void jit_report_run(const jit_result *r, const char *compiler) {
    if (r->hit)
        printf("  run    : HIT  - ready in %.2f ms; compiling it took %.1f ms: %.0fx faster\n", r->ready_ms, r->compile_ms,
               r->compile_ms / (r->ready_ms > 0.001 ? r->ready_ms : 0.001));
    else
        printf("  run    : MISS - compiled with %s and cached: ready in %.1f ms (compile %.1f ms)\n", compiler, r->ready_ms,
               r->compile_ms);
}

/* A function's address as kcache_key_library takes it (ISO C has no cast from a function pointer
   to void *; POSIX makes the bytes the same). */
#define JIT_FN_ADDRESS(fn, out)                                                                    \
    do {                                                                                            \
        void *jit_a_ = NULL;                                                                        \
        memcpy(&jit_a_, &(fn), sizeof jit_a_ < sizeof(fn) ? sizeof jit_a_ : sizeof(fn));           \
        (out) = jit_a_;                                                                             \
    } while (0)

/* A program found on PATH, symlinks resolved (the compiler cc runs, for its key). 0 when found. */
static JIT_UNUSED int jit_find_program(const char *name, char *out, size_t cap) {
    const char *path = getenv("PATH");
    char *dir = (char *)malloc(4096), *cand = (char *)malloc(4352);
    int found = 0;
    while (dir && cand && !found && path && *path) {
        size_t n = strcspn(path, ":");
        if (n && n < 4096) {
            memcpy(dir, path, n);
            dir[n] = 0;
            snprintf(cand, 4352, "%s/%s", dir, name);
            if (access(cand, X_OK) == 0 && realpath(cand, dir) && strlen(dir) < cap) {
                strcpy(out, dir);
                found = 1;
            }
        }
        path += n + (path[n] == ':');
    }
    free(dir);
    free(cand);
    return found ? 0 : 1;
}

#endif

/* jit_cache.h - what every JIT path around kcache does the same way; the examples share it
   (demo_cc.c: C compiled by cc and loaded with dlopen; nvrtc_ptx.c: CUDA C compiled by NVRTC).

   A compiled artifact is stored with the time its compile took (8 bytes before it), so that a hit
   can say what it saved. The build runs through kcache_get_or_build: threads and processes that
   miss the same key together compile it once; jit_ranks starts many processes that need the same
   set of kernels (kcache_get_or_build_many: they share the compiles out). Include after kcache.h
   (declarations only). */
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

/* ---- a start-up of many processes at once (MPI ranks, a job array), each needing the same kernels ---- */
#if !defined(_WIN32)
#include <sys/mman.h>
#include <sys/wait.h>

typedef void (*jit_key_fn)(kcache *kc, unsigned kernel, void *user, kcache_key *key); /* kernel's key */
typedef struct jit_kernel { unsigned index; void *user; } jit_kernel; /* jit_ranks' compile gets one as user */
typedef struct jit_rank { int ok, compiles; double compile_ms, end_ms; } jit_rank;

/* `ranks` processes forked here start together, each opening the default store and asking for the
   same `kernels` kernels with one kcache_get_or_build_many on `threads` threads: every kernel is
   compiled once, the compiles shared out among the ranks (and their threads). fresh: the kernels'
   entries are removed first. Prints who compiled what and the wall time; 0 when every rank got
   every kernel. */
static JIT_UNUSED int jit_ranks(const char *title, unsigned ranks, unsigned threads, unsigned kernels, int fresh, jit_key_fn key_of,
                                jit_compile_fn compile, void *user) {
    jit_rank *rep = (jit_rank *)mmap(NULL, sizeof *rep * ranks, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int gate[2], ready[2], bad = 0;
    unsigned r, i, compiles = 0, workers = ranks * (threads ? threads : 1);
    double start, end = 0, compile_ms = 0;
    kcache *kc;
    kcache_key key;
    if (rep == MAP_FAILED || pipe(gate) != 0 || pipe(ready) != 0 || kcache_open(&kc, NULL) != KCACHE_OK) return 1;
    for (i = 0; fresh && i < kernels; i++) {
        key_of(kc, i, user, &key);
        kcache_remove(kc, &key);
        kcache_key_free(&key);
    }
    kcache_close(kc);
    memset(rep, 0, sizeof *rep * ranks);
    for (r = 0; r < ranks; r++) {
        fflush(stdout);
        if (fork() == 0) { /* rank r */
            kcache_key *keys = (kcache_key *)calloc(kernels, sizeof *keys);
            kcache_job *jobs = (kcache_job *)calloc(kernels, sizeof *jobs);
            jit_build *builds = (jit_build *)calloc(kernels, sizeof *builds);
            jit_kernel *ks = (jit_kernel *)calloc(kernels, sizeof *ks);
            char c = 1;
            if (!keys || !jobs || !builds || !ks || kcache_open(&kc, NULL) != KCACHE_OK) _exit(1);
            for (i = 0; i < kernels; i++) {
                key_of(kc, i, user, &keys[i]);
                ks[i].index = i;
                ks[i].user = user;
                builds[i].compile = compile;
                builds[i].user = &ks[i];
                jobs[i].key = &keys[i];
                jobs[i].build = jit_build_cb;
                jobs[i].user = &builds[i];
            }
            close(gate[1]);
            if (write(ready[1], &c, 1) != 1 || read(gate[0], &c, 1) < 0) _exit(1);
            kcache_get_or_build_many(kc, jobs, kernels, threads);
            rep[r].end_ms = jit_now_ms();
            for (i = 0; i < kernels; i++) {
                if (jobs[i].status == KCACHE_OK && jobs[i].size >= 8) {
                    double ms;
                    memcpy(&ms, jobs[i].data, 8);
                    rep[r].ok++;
                    if (builds[i].called) { rep[r].compiles++; rep[r].compile_ms += ms; }
                    kcache_release(kc, jobs[i].data);
                }
                kcache_key_free(&keys[i]);
            }
            kcache_close(kc);
            _exit(0);
        }
    }
    close(gate[0]);
    close(ready[1]);
    for (r = 0; r < ranks; r++) { /* every rank has opened its kcache and made its keys */
        char c;
        if (read(ready[0], &c, 1) != 1) break;
    }
    start = jit_now_ms();
    close(gate[1]); /* go */
    while (wait(NULL) > 0) {
    }
    close(ready[0]);
    printf("%s: %u processes x %u thread(s) start together, each needing the same %u kernels\n", title, ranks, threads ? threads : 1, kernels);
    printf("  compiled : per process");
    for (r = 0; r < ranks; r++) {
        printf(" %d", rep[r].compiles);
        compiles += (unsigned)rep[r].compiles;
        compile_ms += rep[r].compile_ms;
        bad += rep[r].ok != (int)kernels;
        if (rep[r].end_ms > end) end = rep[r].end_ms;
    }
    printf(" = %u compiles of %u kernels%s\n", compiles, kernels, compiles == 0 ? " (all from the cache)" : compiles == kernels ? " (each once)" : "");
    if (compiles)
        printf("  wall     : %.0f ms from the start to the last process ready; the compiles took %.0f ms in all: %.2fx that over %u workers\n",
               end - start, compile_ms, (end - start) / (compile_ms / workers), workers);
    else
        printf("  wall     : %.1f ms from the start to the last process ready\n", end - start);
    if (bad) printf("  FAILED   : %d process(es) did not get every kernel\n", bad);
    munmap(rep, sizeof *rep * ranks);
    return bad != 0;
}
#endif

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

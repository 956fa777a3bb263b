/* bench_flight - single flight (kcache_get_or_build), as ratios measured in the same run.
 *
 *   N = 1, 8, 32 processes miss one key together, a 500 ms build (a sleep):
 *       builds (goal 1), wall time / one build (goal ~1x), and how long after the build ended the
 *       last waiter returned (the waiters poll the claim, 1 ms doubling to 50 ms)
 *   kcache_get_or_build over kcache_get on a hit (goal: no measurable overhead)
 *       memory hit (4 KiB payload), disk hit (64 KiB payload, memory LRU of 1 entry)
 *
 * Each process opens the store itself (after the fork); a pipe the parent closes releases them
 * all at once. Builds are counted in a MAP_SHARED page. Timings are the best of several rounds;
 * the machine is noisy, so read the ratios. Build: make build/bench_flight. */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define BUILD_MS 500
#define MAXP 32

typedef struct shared {
    long builds;
    double build_end;   /* when the (last) build returned */
    double release;     /* when the parent released the processes */
    double end[MAXP];   /* when each process's call returned */
    int ok[MAXP];
} shared;
static shared *S;

static void sleep_ms(unsigned ms) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static char root[4096];
static kcache *open_store(const char *dir, uint32_t mem_entries) {
    kcache_config cfg;
    kcache *kc;
    kcache_config_init(&cfg);
    cfg.dir = dir;
    cfg.max_size = 0;
    cfg.mem_entries = mem_entries;
    cfg.mem_size = 0;
    cfg.debug = 0;
    cfg.build_wait_ms = 60000;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kcache_dir(kc)) { fprintf(stderr, "bench: no store in %s\n", dir); exit(1); }
    return kc;
}

static void make_key(kcache_key *k, unsigned id) {
    kcache_key_init(k, "bench_flight");
    kcache_key_u64(k, "id", id);
    kcache_key_str(k, "options", "-O2 -cl-fast-relaxed-math");
}

#define PAYLOAD 4096
static int build_sleep(void *user, void **out, size_t *n) {
    void *p = malloc(PAYLOAD);
    (void)user;
    __atomic_fetch_add(&S->builds, 1, __ATOMIC_SEQ_CST);
    sleep_ms(BUILD_MS);
    if (!p) return 1;
    memset(p, 0x5a, PAYLOAD);
    *out = p;
    *n = PAYLOAD;
    S->build_end = now_s();
    return 0;
}

/* One round: n processes, one key, a fresh store. Returns the wall time; *builds, *after. */
static double flight_round(int n, int round, long *builds, double *after) {
    char dir[4200];
    int barrier[2], ready[2], i, bad = 0;
    pid_t pids[MAXP];
    double last = 0;
    char c;
    snprintf(dir, sizeof dir, "%s/flight-%d-%d", root, n, round);
    memset(S, 0, sizeof *S);
    if (pipe(barrier) != 0 || pipe(ready) != 0) { perror("pipe"); exit(1); }
    fflush(stdout);
    for (i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] < 0) { perror("fork"); exit(1); }
        if (pids[i] == 0) {
            kcache *kc;
            kcache_key k;
            const void *p;
            size_t sz;
            close(barrier[1]);
            close(ready[0]);
            kc = open_store(dir, 64);
            make_key(&k, 1);
            if (write(ready[1], "r", 1) != 1) _exit(2);
            while (read(barrier[0], &c, 1) > 0) {
            }
            if (kcache_get_or_build(kc, &k, build_sleep, NULL, &p, &sz) == KCACHE_OK) {
                S->ok[i] = sz == PAYLOAD;
                kcache_release(kc, p);
            }
            S->end[i] = now_s();
            kcache_key_free(&k);
            kcache_close(kc);
            _exit(0);
        }
    }
    close(ready[1]);
    for (i = 0; i < n; i++)
        if (read(ready[0], &c, 1) != 1) { fprintf(stderr, "bench: a process did not get ready\n"); exit(1); }
    S->release = now_s();
    close(barrier[1]);
    for (i = 0; i < n; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !S->ok[i]) bad = 1;
        if (S->end[i] > last) last = S->end[i];
    }
    close(barrier[0]);
    close(ready[0]);
    rm_rf(dir);
    if (bad) { fprintf(stderr, "bench: a caller did not get the payload\n"); exit(1); }
    *builds = S->builds;
    *after = last - S->build_end;
    return last - S->release;
}

/* ---- hit overhead ---- */

static double hits(kcache *kc, kcache_key *keys, int nkeys, int iters, int gob) {
    double t0 = now_s();
    int i;
    for (i = 0; i < iters; i++) {
        const void *p;
        size_t n;
        kcache_status s = gob ? kcache_get_or_build(kc, &keys[i % nkeys], build_sleep, NULL, &p, &n)
                              : kcache_get(kc, &keys[i % nkeys], &p, &n);
        if (s != KCACHE_OK) { fprintf(stderr, "bench: a hit missed\n"); exit(1); }
        kcache_release(kc, p);
    }
    return (now_s() - t0) / iters;
}

/* Best of rounds, get and get_or_build interleaved so that drift hits both alike. */
static void hit_overhead(kcache *kc, kcache_key *keys, int nkeys, int iters, int rounds, double *get, double *gob) {
    int r;
    *get = *gob = 1e9;
    hits(kc, keys, nkeys, iters / 4 + 1, 0); /* warm up */
    for (r = 0; r < rounds; r++) {
        double a = hits(kc, keys, nkeys, iters, r & 1), b = hits(kc, keys, nkeys, iters, !(r & 1));
        double tg = (r & 1) ? b : a, tb = (r & 1) ? a : b;
        if (tg < *get) *get = tg;
        if (tb < *gob) *gob = tb;
    }
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    static const int ns[] = {1, 8, 32};
    int i, r;
    S = (shared *)mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED) { perror("mmap"); return 1; }
    unsetenv("KCACHE_BUILD_WAIT");
    unsetenv("KCACHE_WRITE");
    unsetenv("KCACHE_ENABLE");
    unsetenv("KCACHE_PERSISTENT");
    unsetenv("KCACHE_DEBUG");
    snprintf(root, sizeof root, "%s/kcache-bench-flight-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) { perror("mkdtemp"); return 1; }

    printf("single flight: N processes miss one key together; one build = %d ms (3 rounds each)\n", BUILD_MS);
    printf("  %4s  %9s  %20s  %20s  %28s\n", "N", "builds", "wall/build best", "wall/build worst", "last return after build end");
    for (i = 0; i < 3; i++) {
        double best = 1e9, worst = 0, after_best = 1e9, after_worst = 0;
        long bmin = 1L << 30, bmax = 0;
        for (r = 0; r < 3; r++) {
            long b;
            double after, w = flight_round(ns[i], r, &b, &after);
            if (w < best) best = w;
            if (w > worst) worst = w;
            if (after < after_best) after_best = after;
            if (after > after_worst) after_worst = after;
            if (b < bmin) bmin = b;
            if (b > bmax) bmax = b;
        }
        char bs[48], as[64];
        if (bmin == bmax) snprintf(bs, sizeof bs, "%ld", bmin);
        else snprintf(bs, sizeof bs, "%ld..%ld", bmin, bmax);
        snprintf(as, sizeof as, "%.1f..%.1f ms", after_best * 1e3, after_worst * 1e3);
        printf("  %4d  %9s  %19.3fx  %19.3fx  %28s\n", ns[i], bs, best / (BUILD_MS / 1e3), worst / (BUILD_MS / 1e3), as);
        fflush(stdout);
    }

    {
        char dir[4200];
        kcache *kc;
        kcache_key keys[64];
        double get, gob;
        unsigned char *payload = (unsigned char *)malloc(65536);
        memset(payload, 0x33, 65536);
        for (i = 0; i < 64; i++) make_key(&keys[i], 100 + (unsigned)i);

        printf("\nhit overhead: kcache_get_or_build vs kcache_get on the same hit (best of 9 rounds, interleaved)\n");
        printf("  %-26s  %12s  %18s  %8s\n", "", "kcache_get", "kcache_get_or_build", "ratio");
        snprintf(dir, sizeof dir, "%s/hits-mem", root);
        kc = open_store(dir, 1024);
        kcache_put(kc, &keys[0], payload, 4096);
        hit_overhead(kc, keys, 1, 1000000, 9, &get, &gob);
        printf("  %-26s  %9.1f ns  %15.1f ns  %7.3fx\n", "memory hit, 4 KiB", get * 1e9, gob * 1e9, gob / get);
        kcache_close(kc);

        snprintf(dir, sizeof dir, "%s/hits-disk", root);
        kc = open_store(dir, 1); /* one entry in memory, 64 keys in turn: every get reads the store */
        for (i = 0; i < 64; i++) kcache_put(kc, &keys[i], payload, 65536);
        hit_overhead(kc, keys, 64, 4000, 9, &get, &gob);
        printf("  %-26s  %9.2f us  %15.2f us  %7.3fx\n", "disk hit, 64 KiB", get * 1e6, gob * 1e6, gob / get);
        {
            kcache_stats st;
            kcache_get_stats(kc, &st);
            if (st.builds != 0) { fprintf(stderr, "bench: a hit built\n"); return 1; }
        }
        kcache_close(kc);
        for (i = 0; i < 64; i++) kcache_key_free(&keys[i]);
        free(payload);
    }
    rm_rf(root);
    return 0;
}

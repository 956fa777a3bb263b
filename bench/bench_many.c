/* bench_many - a cooperative cold start (kcache_get_or_build_many) as ratios measured in one run.
   P processes x T threads start together and each needs the same K keys of build time B; the
   floor is ceil(K / (P x T)) x B (every worker building a share, each key once). Goal: at most
   1.5x the floor, each key built once:
     1. one store, 8 processes x 64 keys of 30 ms: the batch call, and the same keys one
        kcache_get_or_build at a time (before the batch call: one builds, the others wait, key
        after key)
     2. 8 stores of their own sharing a redis-server (the remote tier's claims), the case:
        8 processes x 64 keys of 100 ms, with the builds each key got (each exactly once); here the
        8 "machines" share one machine's cores, so the reads of the values the others built (a
        warm start of 8 new stores, measured too) weigh on it as they would not on 8
     3. threads: 2 processes x 4 threads, 64 keys of 30 ms (builds that wait on something else: a
        remote compiler, a driver); and builds that use the CPU, 16 keys of 40 ms of CPU: the floor
        is over min(P x T, cores) workers, and the peer the same builds shared out by hand (no
        cache) on the same processes and threads, under whatever else runs here
     4. the warm start: everything in the store, a new process's batch call of 64 keys against 64
        kcache_get_or_build hits (goal: at most 1.2x)
     5. case 2's cold start (8 processes x 64 keys of 100 ms, the batch call on one builder each)
        through a proxy that adds 0, 1, 20 and 100 ms of round-trip time (tests/kt_delay.h), and the
        round trips it counted per key (every process's, summed); goal: at most 1.5x the floor at
        0-20 ms, 2.5x at 100 ms. BENCH_MANY_RTTS="0 20" picks the RTTs (ms). The stores are on
        /dev/shm where it can be written (the 8 here share one disk: case 2 measures that).
   The machine is shared and noisy: read the ratios. Build: make build/bench_many.
   BENCH_MANY_CASES=24 runs only those cases; BENCH_MANY_BUILD_MS=30 another build time for case 2; BENCH_MANY_TRACE=1 prints each build's timeline and
   each process's share (builds, waits, remote hits and calls, its last build's end and its own). */
#define KCACHE_IMPLEMENTATION
#define KCACHE_REDIS
#define KCACHE_ZSTD
#define KCACHE_HMAC_OPENSSL
#include "kcache.h"
#include "bench_util.h"
#include "tests/kt_remote.h"
#include "tests/kt_delay.h"

#include <pthread.h>
#include <sys/mman.h>

#define PMAX 8
#define KMAX 64
#define PAYLOAD 4096

typedef struct shared {
    int builds[KMAX];
    double bstart[KMAX], bend[KMAX]; /* the first build of each key (BENCH_MANY_TRACE=1 prints them) */
    int bproc[KMAX];
    int ok[PMAX];
    double end[PMAX];
    kcache_stats st[PMAX]; /* each process's counters at its end */
    unsigned build_ms;
    int cpu; /* builds spin on the CPU instead of sleeping */
} shared;
static shared *S;
static char g_root[300];
static kt_redis R;
static int g_bmin, g_bmax; /* the fewest and most builds a key got in the last cold_start */

static int bench_build(void *user, void **out, size_t *out_size) {
    unsigned id = *(const unsigned *)user;
    unsigned char *p = (unsigned char *)malloc(PAYLOAD);
    __atomic_add_fetch(&S->builds[id], 1, __ATOMIC_SEQ_CST);
    S->bstart[id] = now_s();
    S->bproc[id] = (int)getpid();
    if (S->cpu) { /* B ms of this thread's CPU */
        struct timespec t0, t;
        volatile unsigned long spin = 0;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        do {
            int i;
            for (i = 0; i < 10000; i++) spin++;
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        } while ((t.tv_sec - t0.tv_sec) * 1000.0 + (t.tv_nsec - t0.tv_nsec) / 1e6 < S->build_ms);
    } else {
        kt_sleep_ms(S->build_ms);
    }
    S->bend[id] = now_s();
    if (!p) return 1;
    kt_payload(p, PAYLOAD, id);
    *out = p;
    *out_size = PAYLOAD;
    return 0;
}

static kcache *open_store(const char *name, const char *remote) {
    kcache_config cfg;
    char dir[400];
    kcache *kc = NULL;
    kt_config(&cfg, dir, sizeof dir, g_root, name);
    cfg.remote = remote;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return NULL;
    return kc;
}

/* Runs K jobs of unit `unit` on kc: the batch call on `threads` threads, or (serial) one
   kcache_get_or_build at a time. Returns how many payloads were right (all released). */
static int run_jobs(kcache *kc, const char *unit, int k, unsigned threads, int serial) {
    kcache_job jobs[KMAX];
    kcache_key keys[KMAX];
    unsigned ids[KMAX];
    int i, ok = 0;
    for (i = 0; i < k; i++) {
        kt_key(&keys[i], unit, (unsigned)i);
        ids[i] = (unsigned)i;
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].key = &keys[i];
        jobs[i].build = bench_build;
        jobs[i].user = &ids[i];
    }
    if (serial) {
        for (i = 0; i < k; i++)
            jobs[i].status = kcache_get_or_build(kc, &keys[i], bench_build, &ids[i], &jobs[i].data, &jobs[i].size);
    } else {
        kcache_get_or_build_many(kc, jobs, (size_t)k, threads);
    }
    for (i = 0; i < k; i++) {
        if (jobs[i].status == KCACHE_OK) {
            ok += kt_payload_ok(jobs[i].data, jobs[i].size, PAYLOAD, (unsigned)i);
            kcache_release(kc, jobs[i].data);
        }
        kcache_key_free(&keys[i]);
    }
    return ok;
}

/* P processes (each its own store when own_stores) x T threads start together on K keys of B ms:
   the wall time from the start to the last process's end, in seconds. Exits on a wrong result. */
static double cold_start(const char *name, const char *unit, int p, unsigned t, int k, unsigned b, int cpu, int own_stores, const char *remote,
                         int serial) {
    pid_t pid[PMAX];
    int gate[2], i, total = 0;
    double start, last = 0;
    memset(S, 0, sizeof *S);
    S->build_ms = b;
    S->cpu = cpu;
    if (pipe(gate) != 0) exit(1);
    for (i = 0; i < p; i++) {
        fflush(stdout);
        pid[i] = fork();
        if (pid[i] == 0) {
            char store[96], c;
            kcache *kc;
            snprintf(store, sizeof store, own_stores ? "%s-%d" : "%s", name, i);
            kc = open_store(store, remote);
            close(gate[1]);
            if (!kc || read(gate[0], &c, 1) < 0) _exit(2);
            S->ok[i] = run_jobs(kc, unit ? unit : name, k, t, serial); /* each case keys of its own (the remote keeps them) */
            S->end[i] = now_s();
            kcache_get_stats(kc, &S->st[i]);
            kcache_close(kc);
            _exit(0);
        }
    }
    close(gate[0]);
    kt_sleep_ms(300); /* every process has opened its store */
    start = now_s();
    close(gate[1]);
    for (i = 0; i < p; i++) waitpid(pid[i], NULL, 0);
    for (i = 0; i < p; i++) {
        if (S->ok[i] != k) { fprintf(stderr, "bench: %s: process %d got %d of %d payloads\n", name, i, S->ok[i], k); exit(1); }
        if (S->end[i] > last) last = S->end[i];
    }
    for (i = 0; i < k; i++) total += S->builds[i];
    if (getenv("BENCH_MANY_TRACE")) {
        printf("   %s: builds (key: process, start-end ms):", name);
        for (i = 0; i < k; i++) printf(" %d:%d,%.0f-%.0f", i, S->bproc[i] % 1000, (S->bstart[i] - start) * 1e3, (S->bend[i] - start) * 1e3);
        printf("\n   ends:");
        for (i = 0; i < p; i++) printf(" %.0f", (S->end[i] - start) * 1e3);
        printf("\n");
        for (i = 0; i < p; i++) {
            double lastb = 0;
            int j, nb = 0;
            for (j = 0; j < k; j++)
                if (S->bproc[j] == (int)pid[i]) {
                    nb++;
                    if (S->bend[j] > lastb) lastb = S->bend[j];
                }
            printf("   process %d (%d): %d builds, last ends %.0f ms, done %.0f ms; waits %llu, remote hits %llu, remote calls %llu (%.1f ms in all)\n",
                   i, (int)pid[i] % 1000, nb, lastb ? (lastb - start) * 1e3 : 0, (S->end[i] - start) * 1e3,
                   (unsigned long long)S->st[i].build_waits, (unsigned long long)S->st[i].hits_remote,
                   (unsigned long long)S->st[i].remote_calls, (double)S->st[i].remote_latency_ns / 1e6);
        }
    }
    if (total != k && !(unit && total == 0)) printf("   (%s: %d builds of %d keys: each key should be built once)\n", name, total, k);
    g_bmin = g_bmax = k ? S->builds[0] : 0;
    for (i = 0; i < k; i++) {
        if (S->builds[i] < g_bmin) g_bmin = S->builds[i];
        if (S->builds[i] > g_bmax) g_bmax = S->builds[i];
    }
    return last - start;
}

/* The peer of CPU builds: P processes x T threads, no cache, worker w building keys w, w + P x T, ...
   (a perfect share-out on the same cores, under the same load): the wall time in seconds. */
typedef struct share { int first, step, k; } share;
static void *share_thread(void *arg) {
    const share *sh = (const share *)arg;
    int i;
    for (i = sh->first; i < sh->k; i += sh->step) {
        unsigned id = (unsigned)i;
        void *out;
        size_t n;
        if (bench_build(&id, &out, &n) == 0) free(out);
    }
    return NULL;
}
static double shared_out(int p, unsigned t, int k, unsigned b) {
    pid_t pid[PMAX];
    int gate[2], i;
    double start, last = 0;
    memset(S, 0, sizeof *S);
    S->build_ms = b;
    S->cpu = 1;
    if (pipe(gate) != 0) exit(1);
    for (i = 0; i < p; i++) {
        fflush(stdout);
        if ((pid[i] = fork()) == 0) {
            pthread_t th[16];
            share sh[16];
            unsigned j;
            char c;
            close(gate[1]);
            if (read(gate[0], &c, 1) < 0) _exit(2);
            for (j = 0; j < t && j < 16; j++) {
                sh[j].first = i * (int)t + (int)j;
                sh[j].step = p * (int)t;
                sh[j].k = k;
                pthread_create(&th[j], NULL, share_thread, &sh[j]);
            }
            for (j = 0; j < t && j < 16; j++) pthread_join(th[j], NULL);
            S->end[i] = now_s();
            _exit(0);
        }
    }
    close(gate[0]);
    kt_sleep_ms(100);
    start = now_s();
    close(gate[1]);
    for (i = 0; i < p; i++) waitpid(pid[i], NULL, 0);
    for (i = 0; i < p; i++)
        if (S->end[i] > last) last = S->end[i];
    return last - start;
}

/* The floor: ceil(K / workers) builds of b ms each, over min(P x T, cores) workers when cores. */
static double floor_of(int p, unsigned t, int k, unsigned b, int cores) {
    int workers = (int)((unsigned)p * t), w = cores && cores < workers ? cores : workers;
    return (double)((k + w - 1) / w) * b / 1e3;
}
static void report(const char *what, double wall, double floor_s) {
    printf("   %-62s %6.0f ms = %5.2fx the floor of %.0f ms (goal <= 1.5x)\n", what, wall * 1e3, wall / floor_s, floor_s * 1e3);
}

/* 4: a new process's hits on a full store, the batch call against single calls (medians). */
static void warm_start(void) {
    double batch[15], single[15];
    kcache *kc = open_store("warm", NULL);
    int r;
    memset(S, 0, sizeof *S);
    S->build_ms = 0;
    if (!kc || run_jobs(kc, "warm", KMAX, 1, 0) != KMAX) { fprintf(stderr, "bench: warm: fill\n"); exit(1); }
    kcache_close(kc);
    for (r = 0; r < 15; r++) {
        double t;
        int order;
        for (order = 0; order < 2; order++) { /* alternately first: neither gets the warmer page cache */
            int serial = (order + r) & 1;
            kc = open_store("warm", NULL);
            t = now_s();
            if (run_jobs(kc, "warm", KMAX, 1, serial) != KMAX) { fprintf(stderr, "bench: warm: a miss\n"); exit(1); }
            t = now_s() - t;
            kcache_close(kc);
            if (serial) single[r] = t;
            else batch[r] = t;
        }
    }
    {
        double mb = median_of(batch, 15), ms = median_of(single, 15);
        int builds = 0, i;
        for (i = 0; i < KMAX; i++) builds += S->builds[i];
        printf("4. warm start, 64 keys in the store, a new handle each time (medians of 15): batch %.0f us, 64 single hits %.0f us: "
               "%.2fx (goal <= 1.2x; %d builds after the fill)\n", mb * 1e6, ms * 1e6, mb / ms, builds - KMAX);
    }
}

/* Whether case c is to run (BENCH_MANY_CASES: the digits of the cases; unset: all). */
static int run_case(char c) {
    const char *only = getenv("BENCH_MANY_CASES");
    return !only || !*only || strchr(only, c) != NULL;
}

int main(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double w;
    S = (shared *)mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED || !kt_mktemp(g_root, sizeof g_root, "bench-many")) { fprintf(stderr, "bench: setup\n"); return 1; }
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (run_case('1')) {
        printf("1. one store, 8 processes x 64 keys of 30 ms\n");
        w = cold_start("one", NULL, 8, 1, 64, 30, 0, 0, NULL, 0);
        report("kcache_get_or_build_many", w, floor_of(8, 1, 64, 30, 0));
        w = cold_start("one-serial", NULL, 8, 1, 64, 30, 0, 0, NULL, 1);
        report("one kcache_get_or_build at a time (before it)", w, floor_of(8, 1, 64, 30, 0));
    }

    if (!run_case('2')) {
    } else if (kt_redis_start(&R, g_root, 0, NULL)) {
        double fetch;
        /* the case: 8 machines with stores of their own sharing Redis, 64 kernels of 100 ms */
        unsigned b = getenv("BENCH_MANY_BUILD_MS") ? (unsigned)atoi(getenv("BENCH_MANY_BUILD_MS")) : 100;
        printf("2. 8 stores of their own sharing a redis-server, 8 processes x 64 keys of %u ms\n", b);
        w = cold_start("remote", NULL, 8, 1, 64, b, 0, 1, R.url, 0);
        report("kcache_get_or_build_many", w, floor_of(8, 1, 64, b, 0));
        printf("   %-62s %d to %d (goal: exactly 1)\n", "builds per key", g_bmin, g_bmax);
        /* the 8 "machines" share this machine's cores: each must still read the 56 or so values the
           others built, so the same reads into 8 new stores are measured too, as a peer */
        fetch = cold_start("remote-read", "remote", 8, 1, 64, b, 0, 1, R.url, 0);
        printf("   %-62s %6.0f ms: with it, %.2fx the floor\n", "(8 new stores reading the 64 values: a warm start of 8 here)",
               fetch * 1e3, w / (floor_of(8, 1, 64, b, 0) + fetch));
        w = cold_start("remote-serial", NULL, 8, 1, 64, 30, 0, 1, R.url, 1);
        report("one kcache_get_or_build at a time, 64 keys of 30 ms (before it)", w, floor_of(8, 1, 64, 30, 0));
        kt_redis_stop(&R);
    } else {
        printf("2. skipped: redis-server did not start (scripts/deps.sh installs it)\n");
    }

    if (run_case('3')) {
        printf("3. threads: 2 processes x 4 threads (one store)\n");
        w = cold_start("threads", NULL, 2, 4, 64, 30, 0, 0, NULL, 0);
        report("64 keys of 30 ms that wait (sleep)", w, floor_of(2, 4, 64, 30, 0));
        {
            /* builds on the CPU: the floor is over min(P x T, cores), and the cores are shared with
               whatever else runs here, so the peer is the same builds shared out perfectly (no cache)
               on as many processes and threads, measured here */
            double peer = shared_out(2, 4, 16, 40);
            w = cold_start("cpu", NULL, 2, 4, 16, 40, 1, 0, NULL, 0);
            report("16 keys of 40 ms of CPU", w, floor_of(2, 4, 16, 40, (int)cores));
            printf("   %-62s %6.0f ms: %.2fx that (goal <= 1.5x)\n", "(the same builds shared out by hand, no cache, on this machine now)", peer * 1e3,
                   w / peer);
        }
    }
    if (run_case('4')) warm_start();
    if (!run_case('5')) {
    } else if (kt_redis_start(&R, g_root, 0, NULL)) {
        const char *rtts = getenv("BENCH_MANY_RTTS") ? getenv("BENCH_MANY_RTTS") : "0 1 20 100";
        unsigned b = getenv("BENCH_MANY_BUILD_MS") ? (unsigned)atoi(getenv("BENCH_MANY_BUILD_MS")) : 100;
        char *end, disk_root[sizeof g_root];
        long rtt;
        int shm = 0;
        /* the stores on a tmpfs where there is one: the 8 "machines" here share one disk, and each
           writes the 56 values it reads back (case 2 measures that); this case measures round trips */
        memcpy(disk_root, g_root, sizeof g_root);
        snprintf(g_root, sizeof g_root, "/dev/shm/kcache-bench-many.XXXXXX");
        if (!mkdtemp(g_root)) memcpy(g_root, disk_root, sizeof g_root);
        else shm = 1;
        printf("5. case 2 through a proxy adding round-trip time: 8 processes x 64 keys of %u ms (stores on %s)\n", b,
               shm ? "tmpfs: /dev/shm" : "the disk");
        while ((rtt = strtol(rtts, &end, 10)), end != rtts) {
            kt_delay d;
            char name[64], what[96];
            rtts = end;
            if (!kt_delay_start(&d, R.sock, (unsigned)rtt * 1000u)) { printf("   skipped: the proxy did not start\n"); break; }
            /* a remote timeout above the RTT, as anyone would set it on such a network */
            snprintf(name, sizeof name, "%ld", 500 + 3 * rtt);
            setenv("KCACHE_REMOTE_TIMEOUT", name, 1);
            snprintf(name, sizeof name, "rtt%ld", rtt);
            w = cold_start(name, NULL, 8, 1, 64, b, 0, 1, d.url, 0);
            snprintf(what, sizeof what, "RTT %3ld ms: kcache_get_or_build_many", rtt);
            printf("   %-62s %6.0f ms = %5.2fx the floor of %.0f ms (goal <= %s)\n", what, w * 1e3, w / floor_of(8, 1, 64, b, 0),
                   floor_of(8, 1, 64, b, 0) * 1e3, rtt > 20 ? "2.5x" : "1.5x");
            printf("   %-62s %6.1f (builds per key %d to %d)\n", "round trips per key (all processes)", (double)d.stats->round_trips / 64, g_bmin, g_bmax);
            unsetenv("KCACHE_REMOTE_TIMEOUT");
            kt_delay_stop(&d);
        }
        kt_redis_stop(&R);
        if (shm) kt_rm_tree(g_root);
        memcpy(g_root, disk_root, sizeof g_root);
    } else {
        printf("5. skipped: redis-server did not start (scripts/deps.sh installs it)\n");
    }
    kt_rm_tree(g_root);
    return 0;
}

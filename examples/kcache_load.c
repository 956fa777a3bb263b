/* kcache_load - a load generator for a kcache store: processes and threads doing gets, puts and
 * misses of every kind, with counts known in advance, for kcache-top's demo, its tests and anyone
 * who wants to watch a store under load.
 *
 *   kcache_load [-d DIR] [-p PROCS] [-t THREADS] [-u UNITS] [-o OVERLOADS] [-n HITS] [-s BYTES]
 *               [-R] [-S] [-C] [-D SECONDS [-r RATE] [-m PERCENT]] [-H SECONDS] [-P PREFIX] [-q]
 *
 * Every thread works on units of its own ("load.p<P>.t<T>.u<U>"; -P changes "load"), so what each
 * get does is known whatever the other processes do (and whatever ran before, with another -P):
 *   populate   each overload of each unit: a get (the unit's first overload misses "cold", the
 *              others "field"), then a put
 *   hits       -n gets of those keys, all hits in memory
 *   -R         the process closes and reopens its cache, then gets every key twice: a disk hit,
 *              then a memory hit
 *   -S         a key with a file dependency is stored, the file changes: a "cold" and a "stamp" miss
 *   -C         an entry is damaged on disk (through a second cache holding one entry in memory):
 *              a "cold" and a "rejected" miss, two puts
 *   -D SECS    then, for that long, random gets at -r gets/s per thread (0: as fast as it can), of
 *              which -m percent ask for a new overload (a "field" miss and a put); counts then
 *              depend on timing, and only the "stats" line (the library's own) is exact
 *   -P PREFIX  the units' names begin with PREFIX instead of "load"
 *   -H SECS    stay attached (cache open, doing nothing) that long after the work; SIGTERM or
 *              SIGINT end the wait early and close cleanly
 * Output: "child N pid PID" per process, "done" when every process has finished its work (before
 * -H), then "expect ..." (the counts computed from the options; without -D) and "stats ..." (the
 * sum of every process's kcache_get_stats), as key=value words.
 *
 * Build: cc -std=c99 -O2 -I. -o build/kcache_load examples/kcache_load.c -lpthread */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct opts {
    const char *dir, *prefix;
    int procs, threads, units, overloads, reopen, stamp, corrupt, quiet;
    long hits;
    size_t size;
    double duration, rate, miss_pct, hold;
} opts;

static opts O;
static volatile sig_atomic_t stop_flag;

static void on_stop(int sig) { (void)sig; stop_flag = 1; }

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
static void sleep_s(double s) {
    struct timespec ts;
    if (s <= 0) return;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

#define KL_USAGE                                                                                      \
    "usage: kcache_load [-d DIR] [-p PROCS] [-t THREADS] [-u UNITS] [-o OVERLOADS] [-n HITS] [-s BYTES]\n"    \
    "                   [-R] [-S] [-C] [-D SECONDS [-r RATE] [-m PERCENT]] [-H SECONDS] [-P PREFIX] [-q]\n"
static void usage(void) {
    fprintf(stderr, KL_USAGE "(kcache_load --help says what each does)\n");
    exit(2);
}
/* --help: what it does and every option, on stdout, exit 0 */
static void help(void) {
    printf(KL_USAGE
           "A load generator for a kcache store: processes and threads doing gets, puts and misses of every\n"
           "kind, with counts known in advance (for kcache-top's demo and tests). Each thread works on units\n"
           "of its own, \"load.p<P>.t<T>.u<U>\", so what each get does is known whatever else runs.\n"
           "  -d DIR       the store (default: KCACHE_DIR, else the default store)\n"
           "  -p PROCS     processes (default 2)            -t THREADS  threads per process (default 1)\n"
           "  -u UNITS     units per thread (default 4)     -o OVERLOADS  overloads per unit (default 2)\n"
           "  -n HITS      memory hits per thread after populating (default 1000)\n"
           "  -s BYTES     payload size (default 1024)\n"
           "  -R           close and reopen the cache, then get every key twice: a disk hit, then a memory hit\n"
           "  -S           a key with a file dependency is stored, then the file changes: a cold and a stamp miss\n"
           "  -C           an entry is damaged on disk: a cold and a rejected miss, two puts\n"
           "  -D SECONDS   then random gets for that long, at -r RATE gets/s per thread (default 100; 0: as fast\n"
           "               as it can), of which -m PERCENT (default 5) ask for a new overload (a miss and a put)\n"
           "  -H SECONDS   stay attached that long after the work (SIGTERM or SIGINT end it early)\n"
           "  -P PREFIX    units named PREFIX.p<P>... instead of load.p<P>...\n"
           "  -q           quiet\n"
           "  -h, --help   this text\n"
           "Output: \"child N pid PID\" per process, \"done\", then \"expect ...\" (the counts computed from the\n"
           "options; without -D) and \"stats ...\" (the sum of every process's kcache_get_stats).\n"
           "Exit status: 0; 1 when kcache cannot be opened or a process cannot be started; 2 for a usage error.\n");
    exit(0);
}

static void make_key(kcache_key *k, int p, int t, int u, int o) {
    char unit[96], src[128];
    snprintf(unit, sizeof unit, "%s.p%d.t%d.u%d", O.prefix, p, t, u);
    snprintf(src, sizeof src, "__kernel void k%d(__global float *x) { x[get_global_id(0)] *= %d; }", u, u + 2);
    kcache_key_init(k, unit);
    kcache_key_str(k, "source", src);
    kcache_key_u64(k, "opt", (uint64_t)o);
}

static void fill(unsigned char *buf, size_t n, unsigned seed) {
    size_t i;
    for (i = 0; i < n; i++) buf[i] = (unsigned char)(seed * 131u + i * 7u);
}

typedef struct worker {
    kcache *kc;
    int p, t;
    unsigned rng;
    int extra; /* overloads added in the timed phase */
} worker;

static unsigned rnd(unsigned *x) {
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

static void *work(void *arg) {
    worker *w = (worker *)arg;
    unsigned char *buf = (unsigned char *)malloc(O.size ? O.size : 1);
    kcache_key k;
    const void *d;
    size_t n;
    int u, o;
    long i;
    for (u = 0; u < O.units; u++)
        for (o = 0; o < O.overloads; o++) {
            make_key(&k, w->p, w->t, u, o);
            if (kcache_get(w->kc, &k, &d, &n) == KCACHE_OK) kcache_release(w->kc, d); /* a miss, normally */
            fill(buf, O.size, (unsigned)(u * 64 + o));
            kcache_put(w->kc, &k, buf, O.size);
            kcache_key_free(&k);
        }
    for (i = 0; i < O.hits; i++) {
        u = (int)(i % O.units);
        o = (int)((i / O.units) % O.overloads);
        make_key(&k, w->p, w->t, u, o);
        if (kcache_get(w->kc, &k, &d, &n) == KCACHE_OK) kcache_release(w->kc, d);
        kcache_key_free(&k);
    }
    if (O.duration > 0) {
        double end = mono() + O.duration, next = mono();
        while (!stop_flag && mono() < end) {
            u = (int)(rnd(&w->rng) % (unsigned)O.units);
            if ((double)(rnd(&w->rng) % 10000u) < O.miss_pct * 100.0) {
                o = O.overloads + w->extra++;
                make_key(&k, w->p, w->t, u, o);
                if (kcache_get(w->kc, &k, &d, &n) == KCACHE_OK) kcache_release(w->kc, d);
                fill(buf, O.size, (unsigned)(u * 64 + o));
                kcache_put(w->kc, &k, buf, O.size);
            } else {
                o = (int)(rnd(&w->rng) % (unsigned)O.overloads);
                make_key(&k, w->p, w->t, u, o);
                if (kcache_get(w->kc, &k, &d, &n) == KCACHE_OK) kcache_release(w->kc, d);
            }
            kcache_key_free(&k);
            if (O.rate > 0) {
                next += 1.0 / O.rate;
                sleep_s(next - mono());
            }
        }
    }
    free(buf);
    return NULL;
}

typedef struct counts { uint64_t v[16]; } counts;
enum { C_HITS_MEM, C_HITS_DISK, C_MISSES, C_COLD, C_FIELD, C_STAMP, C_REJECTED, C_EVICTED, C_PUTS, C_REJECTS, C_EVICTIONS,
       C_BYTES_READ, C_BYTES_WRITTEN, C_N };
static const char *const cnames[C_N] = {"hits_mem", "hits_disk", "misses", "cold", "field", "stamp", "rejected", "evicted",
                                        "puts", "rejects", "evictions", "bytes_read", "bytes_written"};

static void add_stats(counts *c, kcache *kc) {
    kcache_stats s;
    kcache_get_stats(kc, &s);
    c->v[C_HITS_MEM] += s.hits_mem;
    c->v[C_HITS_DISK] += s.hits_disk;
    c->v[C_MISSES] += s.misses;
    c->v[C_COLD] += s.misses_by_reason[KCACHE_REASON_COLD];
    c->v[C_FIELD] += s.misses_by_reason[KCACHE_REASON_FIELD];
    c->v[C_STAMP] += s.misses_by_reason[KCACHE_REASON_STAMP];
    c->v[C_REJECTED] += s.misses_by_reason[KCACHE_REASON_REJECTED];
    c->v[C_EVICTED] += s.misses_by_reason[KCACHE_REASON_EVICTED];
    c->v[C_PUTS] += s.puts;
    c->v[C_REJECTS] += s.rejects;
    c->v[C_EVICTIONS] += s.evictions;
    c->v[C_BYTES_READ] += s.bytes_read;
    c->v[C_BYTES_WRITTEN] += s.bytes_written;
}

static void print_counts(const char *label, const counts *c) {
    int i;
    printf("%s hits=%llu", label, (unsigned long long)(c->v[C_HITS_MEM] + c->v[C_HITS_DISK]));
    for (i = 0; i < C_N; i++) printf(" %s=%llu", cnames[i], (unsigned long long)c->v[i]);
    printf("\n");
}

static kcache *open_cache(uint32_t mem_entries) {
    kcache_config cfg;
    kcache *kc;
    kcache_config_init(&cfg);
    if (O.dir) cfg.dir = O.dir;
    cfg.mem_entries = mem_entries;
    cfg.mem_size = 0;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) { fprintf(stderr, "kcache_load: kcache_open failed\n"); exit(1); }
    if (!kcache_dir(kc)) fprintf(stderr, "kcache_load: warning: no store (memory only)\n");
    return kc;
}

/* -S: a key with a file dependency; the file changes; the same key misses "stamp". */
static void stamp_phase(kcache *kc, int p) {
    char path[4200];
    const char *tmpdir = getenv("TMPDIR");
    kcache_key k;
    const void *d;
    size_t n;
    FILE *f;
    struct timespec times[2];
    char unit[64];
    snprintf(path, sizeof path, "%s/kcache_load.%d.%d.dep", tmpdir && *tmpdir ? tmpdir : "/tmp", (int)getpid(), p);
    snprintf(unit, sizeof unit, "%s.p%d.dep", O.prefix, p);
    f = fopen(path, "w");
    if (!f) { perror(path); return; }
    fputs("#define N 1\n", f);
    fclose(f);
    kcache_key_init(&k, unit);
    kcache_key_str(&k, "source", "#include \"dep.h\"\n__kernel void k(void) {}");
    kcache_key_file(&k, "header", path);
    if (kcache_get(kc, &k, &d, &n) == KCACHE_OK) kcache_release(kc, d);
    kcache_put(kc, &k, "binary", 6);
    kcache_key_free(&k);
    f = fopen(path, "w");
    if (f) { fputs("#define N 22\n", f); fclose(f); }
    times[0].tv_sec = times[1].tv_sec = time(NULL) + 5; /* a stamp that differs even on a coarse clock */
    times[0].tv_nsec = times[1].tv_nsec = 0;
    utimensat(AT_FDCWD, path, times, 0);
    kcache_key_init(&k, unit);
    kcache_key_str(&k, "source", "#include \"dep.h\"\n__kernel void k(void) {}");
    kcache_key_file(&k, "header", path);
    if (kcache_get(kc, &k, &d, &n) == KCACHE_OK) kcache_release(kc, d);
    kcache_key_free(&k);
    unlink(path);
}

/* -C: an entry damaged on disk misses "rejected" (a cache with room for one entry in memory). */
static void corrupt_phase(counts *c, int p) {
    kcache *kc2 = open_cache(1);
    kcache_key k, f;
    const void *d;
    size_t n;
    char unit[64], hex[33], path[4300];
    unsigned char payload[256];
    int fd;
    fill(payload, sizeof payload, 99);
    snprintf(unit, sizeof unit, "%s.p%d.bad", O.prefix, p);
    kcache_key_init(&k, unit);
    kcache_key_str(&k, "source", "__kernel void bad(void) {}");
    if (kcache_get(kc2, &k, &d, &n) == KCACHE_OK) kcache_release(kc2, d);
    kcache_put(kc2, &k, payload, sizeof payload);
    snprintf(unit, sizeof unit, "%s.p%d.fill", O.prefix, p);
    kcache_key_init(&f, unit);
    kcache_key_str(&f, "source", "__kernel void fill(void) {}");
    kcache_put(kc2, &f, payload, sizeof payload); /* pushes the first out of memory */
    kcache_key_free(&f);
    if (kcache_dir(kc2)) {
        kcache_hash_hex(kcache_key_digest(&k), hex);
        snprintf(path, sizeof path, "%s/e/%.2s/%s.kce", kcache_dir(kc2), hex, hex);
        fd = open(path, O_RDWR);
        if (fd >= 0) {
            struct stat st;
            unsigned char b = 0;
            if (fstat(fd, &st) == 0 && pread(fd, &b, 1, st.st_size - 1) == 1) {
                b ^= 0xff;
                if (pwrite(fd, &b, 1, st.st_size - 1) != 1) perror(path);
            }
            close(fd);
        } else {
            perror(path);
        }
    }
    if (kcache_get(kc2, &k, &d, &n) == KCACHE_OK) kcache_release(kc2, d);
    kcache_key_free(&k);
    add_stats(c, kc2);
    kcache_close(kc2);
}

static void child(int p, int fd) {
    uint32_t keys = (uint32_t)(O.threads * O.units * O.overloads);
    uint32_t mem = keys * 2 + 1024;
    kcache *kc;
    pthread_t *th = (pthread_t *)calloc((size_t)O.threads, sizeof *th);
    worker *w = (worker *)calloc((size_t)O.threads, sizeof *w);
    counts c;
    int t;
    memset(&c, 0, sizeof c);
    if (O.duration > 0) mem += (uint32_t)(O.duration * (O.rate > 0 ? O.rate : 1e5) * O.miss_pct / 100.0 * O.threads) + 1024;
    kc = open_cache(mem);
    for (t = 0; t < O.threads; t++) {
        w[t].kc = kc;
        w[t].p = p;
        w[t].t = t;
        w[t].rng = (unsigned)(p * 7919 + t * 104729 + 1);
        pthread_create(&th[t], NULL, work, &w[t]);
    }
    for (t = 0; t < O.threads; t++) pthread_join(th[t], NULL);
    if (O.reopen) {
        int pass, u, o;
        add_stats(&c, kc);
        kcache_close(kc);
        kc = open_cache(mem);
        for (pass = 0; pass < 2; pass++)
            for (t = 0; t < O.threads; t++)
                for (u = 0; u < O.units; u++)
                    for (o = 0; o < O.overloads; o++) {
                        kcache_key k;
                        const void *d;
                        size_t n;
                        make_key(&k, p, t, u, o);
                        if (kcache_get(kc, &k, &d, &n) == KCACHE_OK) kcache_release(kc, d);
                        kcache_key_free(&k);
                    }
    }
    if (O.stamp) stamp_phase(kc, p);
    if (O.corrupt) corrupt_phase(&c, p);
    add_stats(&c, kc);
    if (write(fd, &c, sizeof c) != (ssize_t)sizeof c) perror("kcache_load: pipe");
    close(fd);
    if (O.hold > 0) {
        double end = mono() + O.hold;
        while (!stop_flag && mono() < end) sleep_s(0.05);
    }
    kcache_close(kc);
    free(th);
    free(w);
}

static double num(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || v < 0) usage();
    return v;
}

int main(int argc, char **argv) {
    int i, p, fds[2];
    pid_t *pids;
    counts total, expect;
    struct sigaction sa;
    memset(&O, 0, sizeof O);
    O.procs = 2;
    O.threads = 1;
    O.units = 4;
    O.overloads = 2;
    O.hits = 1000;
    O.size = 1024;
    O.rate = 100;
    O.miss_pct = 5;
    O.prefix = "load";
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-R") == 0) { O.reopen = 1; continue; }
        if (strcmp(a, "-S") == 0) { O.stamp = 1; continue; }
        if (strcmp(a, "-C") == 0) { O.corrupt = 1; continue; }
        if (strcmp(a, "-q") == 0) { O.quiet = 1; continue; }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) help();
        if (!v || a[0] != '-' || a[1] == 0 || a[2] != 0) usage();
        i++;
        switch (a[1]) {
        case 'd': O.dir = v; break;
        case 'p': O.procs = (int)num(v); break;
        case 't': O.threads = (int)num(v); break;
        case 'u': O.units = (int)num(v); break;
        case 'o': O.overloads = (int)num(v); break;
        case 'n': O.hits = (long)num(v); break;
        case 's': O.size = (size_t)num(v); break;
        case 'D': O.duration = num(v); break;
        case 'r': O.rate = num(v); break;
        case 'm': O.miss_pct = num(v); break;
        case 'H': O.hold = num(v); break;
        case 'P': O.prefix = v; break;
        default: usage();
        }
    }
    if (O.procs < 1 || O.procs > 1000 || O.threads < 1 || O.threads > 256 || O.units < 1 || O.overloads < 1 || !O.prefix[0] ||
        strlen(O.prefix) > 40)
        usage();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!O.quiet)
        printf("kcache_load: dir %s, %d process(es) x %d thread(s), %d units x %d overloads, %ld hits, %zu bytes%s%s%s\n",
               O.dir ? O.dir : "(default)", O.procs, O.threads, O.units, O.overloads, O.hits, O.size, O.reopen ? ", reopen" : "",
               O.stamp ? ", stamp" : "", O.corrupt ? ", corrupt" : "");
    if (pipe(fds) != 0) { perror("pipe"); return 1; }
    pids = (pid_t *)calloc((size_t)O.procs, sizeof *pids);
    for (p = 0; p < O.procs; p++) {
        pids[p] = fork();
        if (pids[p] < 0) { perror("fork"); return 1; }
        if (pids[p] == 0) {
            close(fds[0]);
            child(p, fds[1]);
            _exit(0);
        }
        printf("child %d pid %d\n", p, (int)pids[p]);
    }
    close(fds[1]);
    memset(&total, 0, sizeof total);
    for (p = 0; p < O.procs; p++) {
        counts c;
        size_t got = 0;
        while (got < sizeof c) {
            ssize_t r = read(fds[0], (char *)&c + got, sizeof c - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (got != sizeof c) break; /* a child died before reporting */
        for (i = 0; i < C_N; i++) total.v[i] += c.v[i];
    }
    printf("done\n");
    {
        uint64_t P = (uint64_t)O.procs, T = (uint64_t)O.threads, U = (uint64_t)O.units, OV = (uint64_t)O.overloads;
        memset(&expect, 0, sizeof expect);
        expect.v[C_COLD] = P * T * U + P * (uint64_t)O.stamp + P * (uint64_t)O.corrupt;
        expect.v[C_FIELD] = P * T * U * (OV - 1);
        expect.v[C_STAMP] = P * (uint64_t)O.stamp;
        expect.v[C_REJECTED] = P * (uint64_t)O.corrupt;
        expect.v[C_REJECTS] = expect.v[C_REJECTED];
        expect.v[C_MISSES] = expect.v[C_COLD] + expect.v[C_FIELD] + expect.v[C_STAMP] + expect.v[C_REJECTED];
        expect.v[C_PUTS] = P * T * U * OV + P * (uint64_t)O.stamp + 2 * P * (uint64_t)O.corrupt;
        expect.v[C_HITS_MEM] = P * T * (uint64_t)O.hits + (O.reopen ? P * T * U * OV : 0);
        expect.v[C_HITS_DISK] = O.reopen ? P * T * U * OV : 0;
        expect.v[C_BYTES_WRITTEN] = P * T * U * OV * O.size + P * 6 * (uint64_t)O.stamp + P * 512 * (uint64_t)O.corrupt;
        expect.v[C_BYTES_READ] = (expect.v[C_HITS_MEM] + expect.v[C_HITS_DISK]) * O.size;
        if (O.duration <= 0) print_counts("expect", &expect);
    }
    print_counts("stats", &total);
    for (p = 0; p < O.procs; p++) {
        int st;
        for (;;) {
            if (stop_flag == 1) { /* pass SIGTERM / SIGINT on: the children close their caches */
                for (i = 0; i < O.procs; i++) kill(pids[i], SIGTERM);
                stop_flag = 2;
            }
            if (waitpid(pids[p], &st, 0) >= 0 || errno != EINTR) break;
        }
    }
    free(pids);
    return 0;
}

/* bench_pub - what publishing to DIR/stats (for kcache-top) costs, as ratios measured in one run.
 *
 *   memory hit with publishing vs the same with KCACHE_STATS=0, alternating rounds   goal <= 1.05x
 *     (two stores: 10k keys in 1250 units, more than a slot's unit table holds; 64 keys in 8 units)
 *   the publishing call alone (kcache_test_pub_hit_mem, a KCACHE_TEST_PUB hook), as a share of a
 *     memory hit
 *   kcache-top's own CPU at its default refresh, on a pseudo-terminal, while 8 writer processes
 *     use the store (and, for comparison, batch mode at the same interval): % of one core
 *
 * Usage: bench_pub [KCACHE_TOP [SECONDS]]   (default build/kcache-top, 20 s of kcache-top)
 * Runs in a temp directory under $TMPDIR (default /tmp). The machine is noisy: read the ratios. */
#define KCACHE_IMPLEMENTATION
#define KCACHE_TEST_PUB /* kcache_test_pub_switch: one handle timed publishing and not */
#include "kcache.h"
#include "bench_util.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifdef KCACHE_NO_PUB
#error "bench_pub needs a kcache.h with the publishing layer (>>pub)"
#endif

static char root[4096];

static kcache *open_store(const char *name, int publish, uint32_t mem_entries) {
    kcache_config cfg;
    kcache *kc;
    void *counters;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    kcache_config_init(&cfg);
    cfg.dir = dir;
    cfg.max_size = 0;
    cfg.mem_entries = mem_entries;
    cfg.mem_size = 0;
    if (publish) unsetenv("KCACHE_STATS");
    else setenv("KCACHE_STATS", "0", 1);
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kcache_dir(kc)) { fprintf(stderr, "bench_pub: no store\n"); exit(1); }
    unsetenv("KCACHE_STATS");
    counters = kcache_test_pub_switch(kc, NULL); /* read, then put back */
    kcache_test_pub_switch(kc, counters);
    if (publish != (counters != NULL)) { fprintf(stderr, "bench_pub: publishing is %s\n", counters ? "on" : "off"); exit(1); }
    return kc;
}

static void make_key(kcache_key *k, unsigned id, unsigned per_unit) {
    char unit[64];
    snprintf(unit, sizeof unit, "bench.pub.%u", id / per_unit);
    kcache_key_init(k, unit);
    kcache_key_u64(k, "id", id);
    kcache_key_str(k, "options", "-O2 -cl-fast-relaxed-math");
}

/* One memory hit, published and not: the same cache and the same entries, publishing switched off
   and on between rounds (a kcache whose slot pointer is NULL publishes nothing, as with
   KCACHE_STATS=0), so that memory layout and cache state are the same for both. Reports the
   median of the per-round ratios and the ratio of the best rounds. */
static void mem_hits(const char *label, unsigned nkeys, unsigned per_unit) {
    static unsigned char payload[1024];
    enum { ROUNDS = 41 };
    kcache *kc;
    kcache_key *keys = (kcache_key *)malloc(sizeof(kcache_key) * nkeys);
    double best[2] = {1e9, 1e9}, ratio[ROUNDS], per_call = 1e9, t0, t[2];
    unsigned i, side, round, iters = nkeys > 1000 ? 100000 : 400000;
    void *counters;
    const void *d;
    size_t n;
    char name[64];
    snprintf(name, sizeof name, "mem-%u", nkeys);
    kc = open_store(name, 1, nkeys + 16);
    counters = kcache_test_pub_switch(kc, NULL); /* its slot's counters (put back in each round) */
    for (i = 0; i < nkeys; i++) {
        make_key(&keys[i], i, per_unit);
        kcache_put(kc, &keys[i], payload, sizeof payload);
    }
    for (round = 0; round < ROUNDS; round++) {
        for (side = 0; side < 2; side++) {
            unsigned which = (side + round) % 2; /* 0: published; which goes first alternates */
            kcache_test_pub_switch(kc, which == 0 ? counters : NULL);
            t0 = now_s();
            for (i = 0; i < iters; i++) {
                if (kcache_get(kc, &keys[(i * 7919u) % nkeys], &d, &n) != KCACHE_OK) { fprintf(stderr, "bench_pub: miss\n"); exit(1); }
                kcache_release(kc, d);
            }
            t[which] = (now_s() - t0) / iters;
            if (t[which] < best[which]) best[which] = t[which];
        }
        ratio[round] = t[0] / t[1];
    }
    kcache_test_pub_switch(kc, counters);
    qsort(ratio, ROUNDS, sizeof ratio[0], cmp_double);
    /* the call the memory-hit path makes, alone (the slot and unit table as the hits left them) */
    for (round = 0; round < 10; round++) {
        uint64_t h = kcache_hash(keys[0].unit, strlen(keys[0].unit)).lo;
        t0 = now_s();
        for (i = 0; i < 2000000; i++) {
            kcache_test_pub_hit_mem(kc, h, 1024);
            __asm__ __volatile__("" ::: "memory");
        }
        t0 = (now_s() - t0) / 2000000;
        if (t0 < per_call) per_call = t0;
    }
    printf("memory hit, %-21s: %6.1f ns published, %6.1f ns not: median ratio %.3fx, best-round ratio %.3fx   (goal <= 1.05x)\n",
           label, best[0] * 1e9, best[1] * 1e9, ratio[ROUNDS / 2], best[0] / best[1]);
    printf("  the publishing call alone       : %.2f ns = %.1f%% of that memory hit\n", per_call * 1e9, 100.0 * per_call / best[1]);
    for (i = 0; i < nkeys; i++) kcache_key_free(&keys[i]);
    free(keys);
    kcache_close(kc);
}

/* ---- kcache-top's CPU with 8 writers ---- */

static volatile sig_atomic_t stop;
static void on_term(int s) { (void)s; stop = 1; }

/* A writer: 16 units x 4 overloads, then gets at about 1000/s of which 2% new overloads (miss, put).
   At SIGTERM it reports its gets and puts per second on fd. */
static void writer(const char *dir, int id, int fd) {
    kcache_config cfg;
    kcache *kc;
    static unsigned char payload[4096];
    unsigned x = (unsigned)id * 2654435761u + 1, extra = 0, i = 0, puts = 0;
    double start = now_s(), next = start, rates[2];
    kcache_config_init(&cfg);
    cfg.dir = dir;
    cfg.mem_entries = 1 << 16;
    cfg.mem_size = 0;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) _exit(1);
    while (!stop) {
        kcache_key k;
        const void *d;
        size_t n;
        char unit[64];
        unsigned u, o;
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        u = x % 16;
        o = (i < 64) ? i % 4 : (x >> 8) % 100 < 2 ? 4 + extra++ : (x >> 16) % 4;
        snprintf(unit, sizeof unit, "w%d.unit%u", id, u);
        kcache_key_init(&k, unit);
        kcache_key_u64(&k, "opt", o);
        if (kcache_get(kc, &k, &d, &n) == KCACHE_OK) kcache_release(kc, d);
        else { kcache_put(kc, &k, payload, sizeof payload); puts++; }
        kcache_key_free(&k);
        if (++i % 10 == 0) {
            struct timespec ts;
            next += 0.01;
            ts.tv_sec = 0;
            ts.tv_nsec = (long)((next - now_s()) * 1e9);
            if (ts.tv_nsec > 0) nanosleep(&ts, NULL);
        }
    }
    rates[0] = i / (now_s() - start);
    rates[1] = puts / (now_s() - start);
    if (write(fd, rates, sizeof rates) != (ssize_t)sizeof rates) _exit(1);
    kcache_close(kc);
    _exit(0);
}

/* Starts kcache-top on a pseudo-terminal (interactive) or with stdout to /dev/null (batch). */
static pid_t start_top(const char *top, const char *dir, int batch, int *master) {
    pid_t pid;
    int m = -1;
    char *slave = NULL;
    *master = -1;
    if (!batch) {
        struct winsize ws;
        m = posix_openpt(O_RDWR | O_NOCTTY);
        if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0 || !(slave = ptsname(m))) return -1;
        memset(&ws, 0, sizeof ws);
        ws.ws_row = 40;
        ws.ws_col = 120;
        ioctl(m, TIOCSWINSZ, &ws);
    }
    pid = fork();
    if (pid == 0) {
        if (batch) {
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 1);
            execl(top, top, "-b", "-n", "100000", dir, (char *)NULL);
        } else {
            int s;
            setsid();
            s = open(slave, O_RDWR);
            if (s < 0) _exit(127);
            ioctl(s, TIOCSCTTY, 0);
            dup2(s, 0);
            dup2(s, 1);
            dup2(s, 2);
            setenv("TERM", "xterm-256color", 1);
            execl(top, top, dir, (char *)NULL);
        }
        _exit(127);
    }
    *master = m;
    return pid;
}

/* Keeps the terminal drained for secs. */
static void drain(int master, double secs) {
    double t0 = now_s();
    char buf[8192];
    while (now_s() - t0 < secs) {
        struct pollfd pf;
        pf.fd = master;
        pf.events = POLLIN;
        if (master < 0) { usleep(100000); continue; }
        if (poll(&pf, 1, 100) > 0 && read(master, buf, sizeof buf) <= 0) usleep(100000);
    }
}

/* kcache-top's CPU (user + system, from wait4) as a percentage of one core over its run. */
static double reap(pid_t pid, double started) {
    struct rusage ru;
    int st;
    double wall;
    if (wait4(pid, &st, 0, &ru) != pid) return -1;
    wall = now_s() - started;
    return 100.0 * ((double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6) / wall;
}

static void top_cpu(const char *top, double secs) {
    char dir[4200], n[32];
    pid_t w[8], t;
    int i, master, st, fds[2];
    double cpu_i, cpu_b, t0, gets = 0, puts = 0;
    struct sigaction sa;
    if (access(top, X_OK) != 0) { printf("kcache-top CPU: skipped (%s not built)\n", top); return; }
    snprintf(dir, sizeof dir, "%s/top", root);
    if (pipe(fds) != 0) return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < 8; i++) {
        w[i] = fork();
        if (w[i] == 0) { close(fds[0]); sigaction(SIGTERM, &sa, NULL); writer(dir, i, fds[1]); }
    }
    close(fds[1]);
    sleep(1);
    /* interactive, on a terminal of its own, quit with q */
    t0 = now_s();
    t = start_top(top, dir, 0, &master);
    drain(master, secs);
    if (write(master, "q", 1) != 1) kill(t, SIGTERM);
    {
        double q0 = now_s();
        siginfo_t si;
        for (;;) { /* until it exits (not reaped: reap() takes its rusage), draining its output */
            memset(&si, 0, sizeof si);
            if (waitid(P_PID, (id_t)t, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == t) break;
            if (now_s() - q0 >= 3) { kill(t, SIGKILL); break; }
            drain(master, 0.1);
        }
    }
    cpu_i = reap(t, t0);
    close(master);
    /* batch, the same interval */
    snprintf(n, sizeof n, "%d", (int)(secs / 2 > 3 ? secs / 2 : 3));
    t0 = now_s();
    t = fork();
    if (t == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        execl(top, top, "-b", "-n", n, dir, (char *)NULL);
        _exit(127);
    }
    cpu_b = reap(t, t0);
    for (i = 0; i < 8; i++) kill(w[i], SIGTERM);
    for (i = 0; i < 8; i++) {
        double r[2];
        if (read(fds[0], r, sizeof r) == (ssize_t)sizeof r) { gets += r[0]; puts += r[1]; }
        waitpid(w[i], &st, 0);
    }
    close(fds[0]);
    printf("kcache-top CPU at its default refresh (2 s), 8 writer processes (%.0f gets/s, %.0f puts/s in all):\n", gets, puts);
    printf("  interactive on a 120x40 pty, %3.0f s : %.2f%% of one core\n", secs, cpu_i);
    printf("  batch (-b -n %s), same interval    : %.2f%% of one core\n", n, cpu_b);
}

int main(int argc, char **argv) {
    const char *top = argc > 1 ? argv[1] : "build/kcache-top";
    double secs = argc > 2 ? atof(argv[2]) : 20;
    const char *t = getenv("TMPDIR");
    char cmd[4300];
    snprintf(root, sizeof root, "%s/bench_pub.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(root)) { perror("mkdtemp"); return 1; }
    if (secs < 4) secs = 4;
    mem_hits("10k keys, 1250 units", 10000, 8);
    mem_hits("64 keys, 8 units", 64, 8);
    top_cpu(top, secs);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "bench_pub: could not remove %s\n", root);
    return 0;
}

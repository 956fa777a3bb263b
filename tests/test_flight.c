/* tests/test_flight.c - single flight: kcache_get_or_build across threads and processes.
 *
 * Every case runs in its own mkdtemp store. Builds are counted across processes in a shared
 * anonymous page (MAP_SHARED | MAP_ANONYMOUS, __atomic ops); processes and threads are released
 * together by a pipe the parent closes (every blocked read() returns 0 at once).
 *
 *   flight_8procs_8threads   8 processes x 8 threads miss one key, 1 s build: 1 build, 64 exact
 *                            payloads, nobody waited for a timeout (KCACHE_BUILD_WAIT = 60 s)
 *   flight_builder_killed    the builder SIGKILLed mid-build: another process takes over at once,
 *                            every survivor gets the payload, 2 builds
 *   flight_build_fails_once  a build that fails once: its caller gets KCACHE_EBUILD, everyone
 *                            else the payload, 2 builds, nothing cached from the failure
 *   flight_build_null        a build returning 0 with *out NULL and size 10: KCACHE_EINVAL for its
 *                            caller, the waiters (threads, processes) build in turn, 2 builds
 *   flight_keys_parallel     16 keys from 16 processes: 16 builds, at least 2 in flight at once
 *   flight_wait_bounded      build_wait_ms = 200 and a 2 s builder: the waiter builds on its own
 *   flight_wait_no_cpu       waiting processes use < 10% of a CPU during a 1 s build
 *   flight_write_evict       KCACHE_WRITE=evict: still one build across processes
 *   flight_fork_after_open   processes forked after kcache_open (a pre-fork worker pool)
 *   flight_keys_threads      16 keys from 16 threads of one process: not serialised
 *   flight_memory_only       cfg.persistent = 0, and a store path that is unusable: 8 threads, 1 build
 *   flight_late_arrival      a caller that missed just before the build ended (held at that point
 *                            by its debug-log callback) reads the result, not build again
 *   flight_hit_no_build      a hit (memory, disk) through kcache_get_or_build never calls build
 *   flight_two_handles       two kcache handles on one store in one process, 2 threads each, 5
 *                            rounds of one new key: 1 build per round (the handles share the lock
 *                            file through the process's registry; with process-associated locks,
 *                            KCACHE_TEST_NO_OFD, nothing else would make them exclude each other)
 *   flight_two_steps         kcache_get_or_claim: 4 processes, then 4 threads, on one key: 1
 *                            claim, 3 payloads BUILT_ELSEWHERE; drop_claim, a SIGKILLed holder and
 *                            kcache_close with a ticket open each hand the claim to a waiter at
 *                            once (a 20 s watchdog, KCACHE_BUILD_WAIT 60 s); two processes holding
 *                            mutually dependent claims both go on; caching off: CLAIMED, a put
 *                            that says KCACHE_EDISABLED
 *
 * The checks are behaviour checks (build counts, payloads, who finished before whom, CPU used
 * against wall time), with generous bounds; none asserts a speed. Measurements are printed on
 * "# " lines. Build: make build/test_flight build/asan/test_flight build/tsan/test_flight. */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define MAXPROCS 32
#define MAXCALLERS 128
#define WAIT_LONG_MS 60000u   /* KCACHE_BUILD_WAIT of the cases that must never reach it */
#define REAP_LIMIT_MS 25000   /* a case whose processes outlive this is killed and fails */

/* ---- time ------------------------------------------------------------------------------------ */

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* system-wide: comparable between processes */
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- the shared page: what every process of a case reports -------------------------------- */

typedef struct caller_rec {
    int done, status, ok;
    int64_t start_us, end_us;
} caller_rec;

typedef struct proc_rec {
    int done;
    int64_t cpu_us, wall_us; /* CPU this process used from the release to its last caller's return */
} proc_rec;

typedef struct shared {
    long builds;         /* build calls started, every process */
    long in_flight;      /* builds running now */
    long max_in_flight;  /* the most seen at once */
    int builder_pid;     /* the process that started the first build */
    int64_t build_start_us[64];
    int build_pid[64];
    int64_t release_us;  /* when the parent released everyone */
    caller_rec callers[MAXCALLERS];
    proc_rec procs[MAXPROCS];
} shared;

static shared *S;

static void reset_shared(void) { memset(S, 0, sizeof *S); }

/* ---- keys and payloads --------------------------------------------------------------------- */

static size_t payload_len(unsigned id) { return 4096 + (size_t)id * 13; }
static void payload_fill(unsigned char *p, unsigned id)
{
    size_t i, n = payload_len(id);
    for (i = 0; i < n; i++) p[i] = (unsigned char)(i * 31 + id * 7 + (i >> 8));
}
static int payload_ok(unsigned id, const void *p, size_t n)
{
    const unsigned char *q = (const unsigned char *)p;
    size_t i;
    if (!p || n != payload_len(id)) return 0;
    for (i = 0; i < n; i++)
        if (q[i] != (unsigned char)(i * 31 + id * 7 + (i >> 8))) return 0;
    return 1;
}

static void make_key(kcache_key *k, unsigned id)
{
    kcache_key_init(k, "flight");
    kcache_key_str(k, "source", "__kernel void f(__global float *x) { x[get_global_id(0)] *= 2; }");
    kcache_key_u64(k, "id", id);
}

/* ---- the build -------------------------------------------------------------------------------- */

enum { B_OK = 0, B_FAIL_FIRST = 1, B_HANG_FIRST = 2, B_NULL_FIRST = 3 };

typedef struct build_spec {
    int mode;          /* B_FAIL_FIRST: the first build of the case fails; B_HANG_FIRST: it never ends */
    unsigned first_ms; /* how long the first build of the case takes */
    unsigned later_ms; /* how long every later one takes */
    unsigned key_id;   /* the payload it makes */
    int notify_fd;     /* >= 0: the first build writes a byte here as it starts */
} build_spec;

static int flight_build(void *user, void **out, size_t *out_size)
{
    const build_spec *b = (const build_spec *)user;
    long nth = __atomic_fetch_add(&S->builds, 1, __ATOMIC_SEQ_CST);
    long inf = __atomic_add_fetch(&S->in_flight, 1, __ATOMIC_SEQ_CST);
    long m = __atomic_load_n(&S->max_in_flight, __ATOMIC_SEQ_CST);
    unsigned char *p;
    while (inf > m && !__atomic_compare_exchange_n(&S->max_in_flight, &m, inf, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    if (nth < 64) {
        __atomic_store_n(&S->build_start_us[nth], now_us(), __ATOMIC_SEQ_CST);
        __atomic_store_n(&S->build_pid[nth], (int)getpid(), __ATOMIC_SEQ_CST);
    }
    if (nth == 0) {
        __atomic_store_n(&S->builder_pid, (int)getpid(), __ATOMIC_SEQ_CST);
        if (b->notify_fd >= 0 && write(b->notify_fd, "b", 1) != 1) perror("notify");
        if (b->mode == B_HANG_FIRST) sleep_ms(30000); /* the parent kills this process meanwhile */
    }
    sleep_ms(nth == 0 ? b->first_ms : b->later_ms);
    __atomic_sub_fetch(&S->in_flight, 1, __ATOMIC_SEQ_CST);
    p = (unsigned char *)malloc(payload_len(b->key_id));
    if (!p) return 1;
    if (nth == 0 && b->mode == B_FAIL_FIRST) {
        memset(p, 0xEE, payload_len(b->key_id)); /* garbage that must never be cached */
        *out = p;
        *out_size = payload_len(b->key_id);
        return 1;
    }
    if (nth == 0 && b->mode == B_NULL_FIRST) { /* "success" with no bytes for a size: a bad result */
        free(p);
        *out = NULL;
        *out_size = 10;
        return 0;
    }
    payload_fill(p, b->key_id);
    *out = p;
    *out_size = payload_len(b->key_id);
    return 0;
}

/* ---- stores ------------------------------------------------------------------------------------ */

static char tmproot[512];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

static const char *new_store(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s-XXXXXX", tmproot, name);
    if (!mkdtemp(buf)) {
        printf("FAIL setup: mkdtemp %s: %s\n", buf, strerror(errno));
        exit(1);
    }
    return buf;
}

static kcache *open_cache(const char *dir, int persistent, uint32_t build_wait_ms, int write_policy)
{
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_config_init(&cfg);
    cfg.dir = dir;
    cfg.persistent = persistent;
    cfg.build_wait_ms = build_wait_ms;
    cfg.write_policy = write_policy;
    cfg.debug = 0;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) return NULL;
    return kc;
}

/* ---- a process of callers -------------------------------------------------------------------- */

typedef struct proc_spec {
    const char *dir;
    int persistent;
    uint32_t build_wait_ms;
    int write_policy;
    int nthreads;
    int index;           /* this process's slot in S->procs; its callers use index*nthreads+i */
    int barrier_fd;      /* read end of the release pipe */
    int ready_fd;        /* write end: one byte once set up; -1: none */
    int close_fds[4];    /* the parent's ends of the pipes, closed in the child (-1: none) */
    build_spec build;
    kcache *inherited;   /* not NULL: use this kcache, opened before the fork */
    unsigned linger_ms;  /* keep the kcache open this long after the callers return */
} proc_spec;

typedef struct caller_arg {
    kcache *kc;
    const kcache_key *k;
    const proc_spec *ps;
    int slot;
} caller_arg;

static void wait_release(int fd)
{
    char c;
    ssize_t r;
    if (fd < 0) return;
    do r = read(fd, &c, 1);
    while (r > 0 || (r < 0 && errno == EINTR));
}

static void *caller_thread(void *arg)
{
    caller_arg *a = (caller_arg *)arg;
    caller_rec *rec = &S->callers[a->slot];
    const void *p = NULL;
    size_t n = 0;
    kcache_status s;
    wait_release(a->ps->barrier_fd);
    rec->start_us = now_us();
    s = kcache_get_or_build(a->kc, a->k, flight_build, (void *)&a->ps->build, &p, &n);
    rec->end_us = now_us();
    rec->status = (int)s;
    rec->ok = s == KCACHE_OK && payload_ok(a->ps->build.key_id, p, n);
    if (s == KCACHE_OK) kcache_release(a->kc, p);
    __atomic_store_n(&rec->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static int64_t cpu_us_self(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/* Runs in the child: open, set up the callers, say ready, wait for the release, run, report. */
static void child_main(const proc_spec *ps)
{
    pthread_t th[MAXCALLERS];
    caller_arg args[MAXCALLERS];
    kcache_key k;
    kcache *kc = ps->inherited;
    int i, bad = 0;
    int64_t cpu0;
    for (i = 0; i < 4; i++)
        if (ps->close_fds[i] >= 0) close(ps->close_fds[i]);
    if (!kc) kc = open_cache(ps->dir, ps->persistent, ps->build_wait_ms, ps->write_policy);
    if (!kc) exit(3);
    make_key(&k, ps->build.key_id);
    for (i = 0; i < ps->nthreads; i++) {
        args[i].kc = kc;
        args[i].k = &k;
        args[i].ps = ps;
        args[i].slot = ps->index * ps->nthreads + i;
        if (pthread_create(&th[i], NULL, caller_thread, &args[i]) != 0) exit(4);
    }
    cpu0 = cpu_us_self();
    if (ps->ready_fd >= 0 && write(ps->ready_fd, "r", 1) != 1) exit(5);
    wait_release(ps->barrier_fd);
    for (i = 0; i < ps->nthreads; i++) pthread_join(th[i], NULL);
    S->procs[ps->index].cpu_us = cpu_us_self() - cpu0;
    S->procs[ps->index].wall_us = now_us() - S->release_us;
    __atomic_store_n(&S->procs[ps->index].done, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < ps->nthreads; i++)
        if (!S->callers[args[i].slot].ok) bad = 1;
    kcache_key_free(&k);
    if (ps->linger_ms) sleep_ms(ps->linger_ms); /* a program goes on using its cache */
    kcache_close(kc);
    exit(bad ? 1 : 0);
}

static pid_t spawn(const proc_spec *ps)
{
    pid_t pid;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) child_main(ps);
    return pid;
}

/* Reads n bytes from fd within ms milliseconds; the number read. */
static int read_bytes(int fd, int n, int ms)
{
    int got = 0;
    int64_t deadline = now_us() + (int64_t)ms * 1000;
    char buf[64];
    while (got < n) {
        struct pollfd pf;
        int64_t left = (deadline - now_us()) / 1000;
        ssize_t r;
        if (left <= 0) break;
        pf.fd = fd;
        pf.events = POLLIN;
        if (poll(&pf, 1, (int)left) <= 0) continue;
        r = read(fd, buf, (size_t)(n - got) < sizeof buf ? (size_t)(n - got) : sizeof buf);
        if (r <= 0) break;
        got += (int)r;
    }
    return got;
}

/* Waits for every process, at most REAP_LIMIT_MS; the late ones are killed. Returns how many
   were late (each then has status -1). */
static int reap(const pid_t *pids, int n, int *status)
{
    int64_t deadline = now_us() + (int64_t)REAP_LIMIT_MS * 1000;
    int left = n, i, late = 0;
    for (i = 0; i < n; i++) status[i] = -2;
    while (left > 0 && now_us() < deadline) {
        for (i = 0; i < n; i++) {
            int st;
            if (status[i] != -2) continue;
            if (waitpid(pids[i], &st, WNOHANG) == pids[i]) {
                status[i] = st;
                left--;
            }
        }
        if (left) sleep_ms(5);
    }
    for (i = 0; i < n; i++) {
        int st;
        if (status[i] != -2) continue;
        kill(pids[i], SIGKILL);
        waitpid(pids[i], &st, 0);
        status[i] = -1;
        late++;
    }
    return late;
}

static int exited_ok(int st) { return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0; }

/* A group of processes on one key: pipes, spawn, wait until all are ready, release. */
typedef struct proc_group {
    int nprocs;
    pid_t pids[MAXPROCS];
    int status[MAXPROCS];
    int barrier[2], ready[2], notify[2];
} group;

static void group_init(group *g)
{
    memset(g, 0, sizeof *g);
    if (pipe(g->barrier) != 0 || pipe(g->ready) != 0 || pipe(g->notify) != 0) {
        printf("FAIL setup: pipe: %s\n", strerror(errno));
        exit(1);
    }
}

static void spec_init(proc_spec *ps, const group *g, const char *dir, int nthreads)
{
    memset(ps, 0, sizeof *ps);
    ps->dir = dir;
    ps->persistent = 1;
    ps->build_wait_ms = WAIT_LONG_MS;
    ps->write_policy = KCACHE_WRITE_THROUGH;
    ps->nthreads = nthreads;
    ps->barrier_fd = g->barrier[0];
    ps->ready_fd = g->ready[1];
    ps->close_fds[0] = g->barrier[1];
    ps->close_fds[1] = g->ready[0];
    ps->close_fds[2] = g->notify[0];
    ps->close_fds[3] = -1;
    ps->build.notify_fd = g->notify[1];
}

/* Spawns a process; returns 0 when it could not be forked. */
static int group_spawn(group *g, proc_spec *ps)
{
    pid_t pid;
    ps->index = g->nprocs;
    pid = spawn(ps);
    if (pid < 0) return 0;
    g->pids[g->nprocs++] = pid;
    return 1;
}

/* Waits until the processes are ready, then releases them all at once. */
static int group_release(group *g, int nready)
{
    int got = read_bytes(g->ready[0], nready, 20000);
    S->release_us = now_us();
    close(g->barrier[1]);
    g->barrier[1] = -1;
    return got == nready;
}

static void group_finish(group *g)
{
    int i;
    int *fds[] = {&g->barrier[0], &g->barrier[1], &g->ready[0], &g->ready[1], &g->notify[0], &g->notify[1]};
    for (i = 0; i < 6; i++)
        if (*fds[i] >= 0) { close(*fds[i]); *fds[i] = -1; }
}

/* Callers in [from, to) that returned KCACHE_OK with the exact payload / KCACHE_EBUILD. */
static int count_ok(int from, int to)
{
    int i, n = 0;
    for (i = from; i < to; i++) n += S->callers[i].done && S->callers[i].ok;
    return n;
}
static int count_status(int from, int to, kcache_status s)
{
    int i, n = 0;
    for (i = from; i < to; i++) n += S->callers[i].done && S->callers[i].status == (int)s;
    return n;
}
static int64_t last_end_us(int from, int to)
{
    int i;
    int64_t e = 0;
    for (i = from; i < to; i++)
        if (S->callers[i].end_us > e) e = S->callers[i].end_us;
    return e;
}

/* Opens the store again in this process and checks it holds payload id (and nothing else). */
static void check_store_holds(const char *dir, unsigned id)
{
    kcache *kc = open_cache(dir, 1, WAIT_LONG_MS, KCACHE_WRITE_THROUGH);
    kcache_key k;
    const void *p = NULL;
    size_t n = 0;
    kcache_stats st;
    KT_CHECK(kc != NULL && kcache_dir(kc) != NULL);
    if (!kc) return;
    make_key(&k, id);
    KT_CHECK_MSG(kcache_get(kc, &k, &p, &n) == KCACHE_OK && payload_ok(id, p, n), "the store does not hold the payload");
    if (p) kcache_release(kc, p);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_disk, 1);
    KT_CHECK_EQ_U64(st.disk_entries, 1);
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_key_free(&k);
    kcache_close(kc);
}

/* ---- (a)(b) 8 processes x 8 threads, one key, 1 s build ------------------------------------- */

static void flight_8procs_8threads(void)
{
    char dir[600];
    group g;
    proc_spec ps;
    int i;
    int64_t wall;
    reset_shared();
    group_init(&g);
    new_store(dir, sizeof dir, "a");
    spec_init(&ps, &g, dir, 8);
    ps.build.first_ms = ps.build.later_ms = 1000;
    ps.build.key_id = 1;
    for (i = 0; i < 8; i++) KT_CHECK(group_spawn(&g, &ps));
    KT_CHECK_MSG(group_release(&g, g.nprocs), "not every process got ready");
    KT_CHECK_EQ_U64(reap(g.pids, g.nprocs, g.status), 0);
    group_finish(&g);
    for (i = 0; i < g.nprocs; i++) KT_CHECK_MSG(exited_ok(g.status[i]), "process %d: status %d", i, g.status[i]);
    KT_CHECK_EQ_U64(S->builds, 1);
    KT_CHECK_EQ_U64(count_ok(0, 64), 64);
    wall = last_end_us(0, 64) - S->release_us;
    /* one build is 1 s and KCACHE_BUILD_WAIT is 60 s: anyone who waited for the bound instead of
       the build would be far past 5 s */
    KT_CHECK_MSG(wall < 5000000, "the last caller returned %.2f s after the release", wall / 1e6);
    printf("# flight_8procs_8threads: %ld build(s), 64 callers, wall %.2f s for a 1 s build\n", S->builds, wall / 1e6);
    check_store_holds(dir, 1);
}

/* ---- (c) the builder is SIGKILLed mid-build ------------------------------------------------------ */

static void flight_builder_killed(void)
{
    char dir[600];
    group g;
    proc_spec ps;
    int i, victim = -1, killed_ok = 0;
    int64_t t_kill = 0, takeover;
    reset_shared();
    group_init(&g);
    new_store(dir, sizeof dir, "c");
    spec_init(&ps, &g, dir, 2);
    ps.build.mode = B_HANG_FIRST;
    ps.build.first_ms = 0;
    ps.build.later_ms = 300;
    ps.build.key_id = 2;
    for (i = 0; i < 6; i++) KT_CHECK(group_spawn(&g, &ps));
    KT_CHECK_MSG(group_release(&g, g.nprocs), "not every process got ready");
    if (read_bytes(g.notify[0], 1, 20000) == 1) {
        int pid = __atomic_load_n(&S->builder_pid, __ATOMIC_SEQ_CST);
        for (i = 0; i < g.nprocs; i++)
            if (g.pids[i] == pid) victim = i;
        KT_CHECK_MSG(victim >= 0, "the builder %d is none of ours", pid);
        sleep_ms(400); /* mid-build: the waiters are down to their slowest poll by now */
        t_kill = now_us();
        if (victim >= 0) kill(g.pids[victim], SIGKILL);
    } else {
        KT_FAILF("no build started");
    }
    KT_CHECK_EQ_U64(reap(g.pids, g.nprocs, g.status), 0);
    group_finish(&g);
    for (i = 0; i < g.nprocs; i++) {
        if (i == victim) {
            killed_ok = g.status[i] >= 0 && WIFSIGNALED(g.status[i]) && WTERMSIG(g.status[i]) == SIGKILL;
            continue;
        }
        KT_CHECK_MSG(exited_ok(g.status[i]), "survivor %d: status %d", i, g.status[i]);
        KT_CHECK_MSG(count_ok(i * 2, i * 2 + 2) == 2, "survivor %d: a caller did not get the payload", i);
    }
    KT_CHECK_MSG(killed_ok, "the builder did not die of SIGKILL");
    KT_CHECK_EQ_U64(S->builds, 2);
    KT_CHECK(S->build_pid[1] != S->build_pid[0]);
    takeover = S->build_start_us[1] - t_kill;
    /* the claim dies with its holder: the next builder starts within the waiters' poll interval
       (50 ms), not after KCACHE_BUILD_WAIT (60 s) */
    KT_CHECK_MSG(S->builds >= 2 && takeover < 3000000, "the next build started %.2f s after the kill", takeover / 1e6);
    printf("# flight_builder_killed: %ld builds, the next build started %.1f ms after SIGKILL\n", S->builds, takeover / 1e3);
    KT_CHECK_MSG(takeover > 0, "a second build started %.1f ms before the builder was killed", -takeover / 1e3);
    check_store_holds(dir, 2);
}

/* ---- (d) a build that fails once ------------------------------------------------------------------- */

static void flight_build_fails_once(void)
{
    char dir[600];
    group g;
    proc_spec ps;
    int i;
    reset_shared();

    /* one caller alone: the failure is returned, nothing is cached, the next call builds */
    {
        kcache *kc = open_cache(new_store(dir, sizeof dir, "d1"), 1, WAIT_LONG_MS, KCACHE_WRITE_THROUGH);
        kcache_key k;
        build_spec b;
        const void *p = (const void *)1;
        size_t n = 1;
        kcache_stats st;
        memset(&b, 0, sizeof b);
        b.mode = B_FAIL_FIRST;
        b.key_id = 3;
        b.notify_fd = -1;
        KT_CHECK(kc != NULL);
        if (!kc) return;
        make_key(&k, 3);
        KT_CHECK(kcache_get_or_build(kc, &k, flight_build, &b, &p, &n) == KCACHE_EBUILD);
        KT_CHECK(p == NULL && n == 0);
        KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS);
        kcache_get_stats(kc, &st);
        KT_CHECK_EQ_U64(st.puts, 0);
        KT_CHECK_EQ_U64(st.disk_entries, 0);
        KT_CHECK(kcache_get_or_build(kc, &k, flight_build, &b, &p, &n) == KCACHE_OK && payload_ok(3, p, n));
        if (p) kcache_release(kc, p);
        KT_CHECK_EQ_U64(S->builds, 2);
        kcache_key_free(&k);
        kcache_close(kc);
    }

    /* 4 processes x 4 threads: the failing caller sees the failure, the 15 others the payload */
    reset_shared();
    group_init(&g);
    new_store(dir, sizeof dir, "d");
    spec_init(&ps, &g, dir, 4);
    ps.build.mode = B_FAIL_FIRST;
    ps.build.first_ms = ps.build.later_ms = 300;
    ps.build.key_id = 4;
    for (i = 0; i < 4; i++) KT_CHECK(group_spawn(&g, &ps));
    KT_CHECK_MSG(group_release(&g, g.nprocs), "not every process got ready");
    KT_CHECK_EQ_U64(reap(g.pids, g.nprocs, g.status), 0);
    group_finish(&g);
    KT_CHECK_EQ_U64(count_status(0, 16, KCACHE_EBUILD), 1);
    KT_CHECK_EQ_U64(count_ok(0, 16), 15);
    /* the others built again one at a time: one more build, not one per waiter */
    KT_CHECK_EQ_U64(S->builds, 2);
    for (i = 0; i < g.nprocs; i++) {
        int failing = count_status(i * 4, i * 4 + 4, KCACHE_EBUILD) > 0;
        KT_CHECK_MSG(failing ? !exited_ok(g.status[i]) : exited_ok(g.status[i]), "process %d: status %d", i, g.status[i]);
    }
    check_store_holds(dir, 4); /* the good payload, not the failed build's bytes */
}

/* A build that returns 0 with *out NULL and a size of 10 (issue 24): KCACHE_EINVAL for its caller,
   as kcache_put refuses the same, never a crash; its waiters (threads, processes) treat it as a
   failed build: one of them builds next, nothing of the bad result is stored. */
static void flight_build_null(void)
{
    char dir[600];
    group g;
    proc_spec ps;
    int i;
    reset_shared();
    {
        kcache *kc = open_cache(new_store(dir, sizeof dir, "n1"), 1, WAIT_LONG_MS, KCACHE_WRITE_THROUGH);
        kcache_key k;
        build_spec b;
        const void *p = (const void *)1;
        size_t n = 1;
        kcache_stats st;
        memset(&b, 0, sizeof b);
        b.mode = B_NULL_FIRST;
        b.key_id = 5;
        b.notify_fd = -1;
        KT_CHECK(kc != NULL);
        if (!kc) return;
        make_key(&k, 5);
        KT_CHECK(kcache_get_or_build(kc, &k, flight_build, &b, &p, &n) == KCACHE_EINVAL);
        KT_CHECK(p == NULL && n == 0);
        KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS);
        kcache_get_stats(kc, &st);
        KT_CHECK_EQ_U64(st.puts, 0);
        KT_CHECK_EQ_U64(st.disk_entries, 0);
        KT_CHECK(kcache_get_or_build(kc, &k, flight_build, &b, &p, &n) == KCACHE_OK && payload_ok(5, p, n));
        if (p) kcache_release(kc, p);
        KT_CHECK_EQ_U64(S->builds, 2);
        kcache_key_free(&k);
        kcache_close(kc);
    }
    /* 4 processes x 4 threads: the builder's caller gets KCACHE_EINVAL, the 15 others the payload */
    reset_shared();
    group_init(&g);
    new_store(dir, sizeof dir, "n");
    spec_init(&ps, &g, dir, 4);
    ps.build.mode = B_NULL_FIRST;
    ps.build.first_ms = ps.build.later_ms = 300;
    ps.build.key_id = 6;
    for (i = 0; i < 4; i++) KT_CHECK(group_spawn(&g, &ps));
    KT_CHECK_MSG(group_release(&g, g.nprocs), "not every process got ready");
    KT_CHECK_EQ_U64(reap(g.pids, g.nprocs, g.status), 0);
    group_finish(&g);
    KT_CHECK_EQ_U64(count_status(0, 16, KCACHE_EINVAL), 1);
    KT_CHECK_EQ_U64(count_ok(0, 16), 15);
    KT_CHECK_EQ_U64(S->builds, 2);
    for (i = 0; i < g.nprocs; i++) {
        int failing = count_status(i * 4, i * 4 + 4, KCACHE_EINVAL) > 0;
        KT_CHECK_MSG(failing ? !exited_ok(g.status[i]) : exited_ok(g.status[i]), "process %d: status %d", i, g.status[i]);
    }
    check_store_holds(dir, 6);
}

/* ---- (e) 16 keys from 16 processes: no serialisation between keys ------------------------------ */

static void flight_keys_parallel(void)
{
    char dir[600];
    group g;
    proc_spec ps;
    int i;
    int64_t wall;
    reset_shared();
    group_init(&g);
    new_store(dir, sizeof dir, "e");
    spec_init(&ps, &g, dir, 1);
    ps.build.first_ms = ps.build.later_ms = 300;
    ps.build.notify_fd = -1;
    for (i = 0; i < 16; i++) {
        ps.build.key_id = 100 + (unsigned)i;
        KT_CHECK(group_spawn(&g, &ps));
    }
    KT_CHECK_MSG(group_release(&g, g.nprocs), "not every process got ready");
    KT_CHECK_EQ_U64(reap(g.pids, g.nprocs, g.status), 0);
    group_finish(&g);
    for (i = 0; i < g.nprocs; i++) KT_CHECK_MSG(exited_ok(g.status[i]), "process %d: status %d", i, g.status[i]);
    KT_CHECK_EQ_U64(count_ok(0, 16), 16);
    KT_CHECK_EQ_U64(S->builds, 16);
    KT_CHECK_MSG(S->max_in_flight >= 2, "builds of different keys never overlapped (max in flight %ld)", S->max_in_flight);
    wall = last_end_us(0, 16) - S->release_us;
    printf("# flight_keys_parallel: 16 keys, %ld builds, up to %ld at once, wall %.2f s (serialised: 4.8 s)\n", S->builds,
           S->max_in_flight, wall / 1e6);
}

/* ---- (g) the wait is bounded: past build_wait_ms the waiter builds on its own ------------------ */

static void flight_wait_bounded(void)
{
    char dir[600];
    group g, g2;
    proc_spec a, b;
    int st[2];
    pid_t pids[2];
    reset_shared();
    group_init(&g);
    group_init(&g2);
    new_store(dir, sizeof dir, "g");
    /* A starts alone and builds for 2 s (it waits 60 s if it must) */
    spec_init(&a, &g, dir, 1);
    a.build.first_ms = 2000;
    a.build.later_ms = 50;
    a.build.key_id = 5;
    a.close_fds[3] = g2.barrier[1];
    KT_CHECK(group_spawn(&g, &a));
    /* B waits 200 ms at most */
    spec_init(&b, &g2, dir, 1);
    b.build = a.build;
    b.build_wait_ms = 200;
    b.close_fds[3] = -1; /* g's barrier is closed before B is forked */
    b.index = 1;
    pids[0] = g.pids[0];
    if (!group_release(&g, 1) || read_bytes(g.notify[0], 1, 20000) != 1) KT_FAILF("A never started building");
    pids[1] = spawn(&b);
    KT_CHECK_MSG(group_release(&g2, 1), "B did not get ready");
    KT_CHECK_EQ_U64(reap(pids, 2, st), 0);
    group_finish(&g);
    group_finish(&g2);
    KT_CHECK_MSG(exited_ok(st[0]) && exited_ok(st[1]), "status %d %d", st[0], st[1]);
    KT_CHECK(S->callers[0].ok && S->callers[1].ok);
    KT_CHECK_EQ_U64(S->builds, 2);
    KT_CHECK_MSG(S->callers[1].end_us - S->callers[1].start_us >= 200000, "B returned after %.0f ms, before its 200 ms wait",
                 (S->callers[1].end_us - S->callers[1].start_us) / 1e3);
    KT_CHECK_MSG(S->callers[1].end_us < S->callers[0].end_us, "B waited for A's 2 s build instead of building on its own");
    printf("# flight_wait_bounded: B (wait 200 ms) returned after %.0f ms, A (2 s build) after %.0f ms; %ld builds\n",
           (S->callers[1].end_us - S->callers[1].start_us) / 1e3, (S->callers[0].end_us - S->callers[0].start_us) / 1e3,
           S->builds);
}

/* ---- (h) waiting costs no CPU to speak of ----------------------------------------------------- */

static void flight_wait_no_cpu(void)
{
    char dir[600];
    group g;
    proc_spec ps;
    int i;
    double worst = 0;
    reset_shared();
    group_init(&g);
    new_store(dir, sizeof dir, "h");
    spec_init(&ps, &g, dir, 2);
    ps.build.first_ms = ps.build.later_ms = 1000;
    ps.build.key_id = 6;
    ps.build.notify_fd = -1;
    for (i = 0; i < 6; i++) KT_CHECK(group_spawn(&g, &ps));
    KT_CHECK_MSG(group_release(&g, g.nprocs), "not every process got ready");
    KT_CHECK_EQ_U64(reap(g.pids, g.nprocs, g.status), 0);
    group_finish(&g);
    KT_CHECK_EQ_U64(S->builds, 1);
    KT_CHECK_EQ_U64(count_ok(0, 12), 12);
    for (i = 0; i < g.nprocs; i++) {
        double r = S->procs[i].wall_us > 0 ? (double)S->procs[i].cpu_us / (double)S->procs[i].wall_us : 1.0;
        KT_CHECK_MSG(S->procs[i].done && r < 0.10, "process %d used %.0f ms of CPU in %.0f ms waiting (%.1f%%)", i,
                     S->procs[i].cpu_us / 1e3, S->procs[i].wall_us / 1e3, 100 * r);
        if (r > worst) worst = r;
    }
    printf("# flight_wait_no_cpu: the busiest of 6 processes (2 callers each) used %.2f%% of a CPU over a 1 s build\n",
           100 * worst);
}

/* ---- (j) KCACHE_WRITE=evict: the built entry must still reach the other processes ------------ */

static void flight_write_evict(void)
{
    char dir[600];
    group g;
    proc_spec ps;
    int i;
    reset_shared();
    group_init(&g);
    new_store(dir, sizeof dir, "j");
    spec_init(&ps, &g, dir, 1);
    ps.write_policy = KCACHE_WRITE_EVICT;
    ps.linger_ms = 1500; /* the builder keeps running (a close would flush the entry) */
    ps.build.first_ms = ps.build.later_ms = 300;
    ps.build.key_id = 7;
    ps.build.notify_fd = -1;
    for (i = 0; i < 4; i++) KT_CHECK(group_spawn(&g, &ps));
    KT_CHECK_MSG(group_release(&g, g.nprocs), "not every process got ready");
    KT_CHECK_EQ_U64(reap(g.pids, g.nprocs, g.status), 0);
    group_finish(&g);
    KT_CHECK_EQ_U64(count_ok(0, 4), 4);
    KT_CHECK_MSG(S->builds == 1, "4 processes with KCACHE_WRITE=evict built %ld times, one after another (%.2f s)", S->builds,
                 (last_end_us(0, 4) - S->release_us) / 1e6);
}

/* ---- (k) processes forked after kcache_open (a pre-fork worker pool) ------------------------ */

static void flight_fork_after_open(void)
{
    char dir[600];
    group g;
    proc_spec ps;
    int i;
    kcache *kc;
    reset_shared();
    group_init(&g);
    kc = open_cache(new_store(dir, sizeof dir, "k"), 1, WAIT_LONG_MS, KCACHE_WRITE_THROUGH);
    KT_CHECK(kc != NULL);
    if (!kc) return;
    spec_init(&ps, &g, dir, 1);
    ps.inherited = kc;
    ps.build.first_ms = ps.build.later_ms = 300;
    ps.build.key_id = 8;
    ps.build.notify_fd = -1;
    for (i = 0; i < 4; i++) KT_CHECK(group_spawn(&g, &ps));
    KT_CHECK_MSG(group_release(&g, g.nprocs), "not every process got ready");
    KT_CHECK_EQ_U64(reap(g.pids, g.nprocs, g.status), 0);
    group_finish(&g);
    kcache_close(kc);
    KT_CHECK_EQ_U64(count_ok(0, 4), 4);
    KT_CHECK_MSG(S->builds == 1, "4 processes forked after kcache_open built %ld times (max %ld at once)", S->builds,
                 S->max_in_flight);
}

/* ---- in-process cases (threads only; run after every fork) ---------------------------------- */

typedef struct thread_arg {
    kcache *kc;
    unsigned key_id;
    build_spec build;
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    int *go;
    int status, ok;
} thread_arg;

static void *key_thread(void *p)
{
    thread_arg *a = (thread_arg *)p;
    kcache_key k;
    const void *d = NULL;
    size_t n = 0;
    make_key(&k, a->key_id);
    pthread_mutex_lock(a->mu);
    while (!*a->go) pthread_cond_wait(a->cv, a->mu);
    pthread_mutex_unlock(a->mu);
    a->status = (int)kcache_get_or_build(a->kc, &k, flight_build, &a->build, &d, &n);
    a->ok = a->status == KCACHE_OK && payload_ok(a->key_id, d, n);
    if (d) kcache_release(a->kc, d);
    kcache_key_free(&k);
    return NULL;
}

/* n threads; thread i asks kcs[i % nkc] for key first_id + (distinct ? i : 0). Returns callers with the payload. */
static int run_threads_on(kcache **kcs, int nkc, int n, unsigned first_id, int distinct, unsigned build_ms)
{
    pthread_t th[32];
    thread_arg a[32];
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    int go = 0, i, ok = 0;
    for (i = 0; i < n; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].kc = kcs[i % nkc];
        a[i].key_id = first_id + (distinct ? (unsigned)i : 0);
        a[i].build.first_ms = a[i].build.later_ms = build_ms;
        a[i].build.key_id = a[i].key_id;
        a[i].build.notify_fd = -1;
        a[i].mu = &mu;
        a[i].cv = &cv;
        a[i].go = &go;
        if (pthread_create(&th[i], NULL, key_thread, &a[i]) != 0) { KT_FAILF("pthread_create"); n = i; break; }
    }
    pthread_mutex_lock(&mu);
    go = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        ok += a[i].ok;
    }
    pthread_mutex_destroy(&mu);
    pthread_cond_destroy(&cv);
    return ok;
}
static int run_threads(kcache *kc, int n, unsigned first_id, int distinct, unsigned build_ms)
{
    return run_threads_on(&kc, 1, n, first_id, distinct, build_ms);
}

static void flight_keys_threads(void)
{
    char dir[600];
    kcache *kc = open_cache(new_store(dir, sizeof dir, "e2"), 1, WAIT_LONG_MS, KCACHE_WRITE_THROUGH);
    KT_CHECK(kc != NULL);
    if (!kc) return;
    reset_shared();
    KT_CHECK_EQ_U64(run_threads(kc, 16, 200, 1, 300), 16);
    KT_CHECK_EQ_U64(S->builds, 16);
    KT_CHECK_MSG(S->max_in_flight >= 2, "builds of different keys never overlapped (max in flight %ld)", S->max_in_flight);
    printf("# flight_keys_threads: 16 keys from 16 threads, up to %ld builds at once\n", S->max_in_flight);
    kcache_close(kc);
}

static void flight_memory_only(void)
{
    char dir[600], file[700];
    kcache *kc;
    kcache_stats st;
    FILE *f;

    /* cfg.persistent = 0 */
    reset_shared();
    kc = open_cache(new_store(dir, sizeof dir, "f"), 0, WAIT_LONG_MS, KCACHE_WRITE_THROUGH);
    KT_CHECK(kc != NULL);
    if (!kc) return;
    KT_CHECK(kcache_dir(kc) == NULL);
    KT_CHECK_EQ_U64(run_threads(kc, 8, 9, 0, 500), 8);
    KT_CHECK_EQ_U64(S->builds, 1);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.builds, 1);
    kcache_close(kc);

    /* a store that cannot be used (the path is a regular file): memory only, still one build */
    reset_shared();
    snprintf(file, sizeof file, "%s/not-a-dir", dir);
    f = fopen(file, "w");
    if (f) fclose(f);
    kc = open_cache(file, 1, WAIT_LONG_MS, KCACHE_WRITE_THROUGH);
    KT_CHECK(kc != NULL);
    if (!kc) return;
    KT_CHECK(kcache_dir(kc) == NULL);
    KT_CHECK_EQ_U64(run_threads(kc, 8, 10, 0, 500), 8);
    KT_CHECK_EQ_U64(S->builds, 1);
    kcache_close(kc);
}

/* ---- a caller that missed just before the build ended ----------------------------------------
 * T2 misses while T1 builds, then is held (in its own debug-log callback, which kcache calls on
 * the miss with no lock held) until T1's kcache_get_or_build has returned. T2 then finds no build
 * in flight; it must see T1's result, not build again. Deterministic: no timing window. */

static pthread_mutex_t la_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t la_cv = PTHREAD_COND_INITIALIZER;
static int la_armed, la_paused, la_go, la_building;
static pthread_t la_thread;

static void la_log(void *user, const char *line)
{
    (void)user;
    if (strncmp(line, "miss ", 5) != 0) return;
    pthread_mutex_lock(&la_mu);
    if (la_armed && pthread_equal(la_thread, pthread_self())) {
        la_armed = 0;
        la_paused = 1;
        pthread_cond_broadcast(&la_cv);
        while (!la_go) pthread_cond_wait(&la_cv, &la_mu);
    }
    pthread_mutex_unlock(&la_mu);
}

/* Waits (at most 3 s) until flag is set; the flag's value. */
static int la_wait(int *flag)
{
    struct timespec until;
    int v;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 3;
    pthread_mutex_lock(&la_mu);
    while (!*flag && pthread_cond_timedwait(&la_cv, &la_mu, &until) == 0) {
    }
    v = *flag;
    pthread_mutex_unlock(&la_mu);
    return v;
}

static int la_build(void *user, void **out, size_t *out_size)
{
    unsigned char *p;
    (void)user;
    __atomic_fetch_add(&S->builds, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&la_mu);
    la_building = 1;
    pthread_cond_broadcast(&la_cv);
    pthread_mutex_unlock(&la_mu);
    la_wait(&la_paused); /* T1: until T2 has missed */
    p = (unsigned char *)malloc(payload_len(12));
    if (!p) return 1;
    payload_fill(p, 12);
    *out = p;
    *out_size = payload_len(12);
    return 0;
}

typedef struct la_arg { kcache *kc; int second; int status, ok; } la_arg;

static void *la_thread_fn(void *p)
{
    la_arg *a = (la_arg *)p;
    kcache_key k;
    const void *d = NULL;
    size_t n = 0;
    make_key(&k, 12);
    if (a->second) {
        la_wait(&la_building);
        pthread_mutex_lock(&la_mu);
        la_thread = pthread_self();
        la_armed = 1;
        pthread_mutex_unlock(&la_mu);
    }
    a->status = (int)kcache_get_or_build(a->kc, &k, la_build, NULL, &d, &n);
    a->ok = a->status == KCACHE_OK && payload_ok(12, d, n);
    if (d) kcache_release(a->kc, d);
    kcache_key_free(&k);
    return NULL;
}

/* builds of the late caller's key under one configuration */
static long late_arrival(int persistent)
{
    char dir[600];
    kcache_config cfg;
    kcache *kc = NULL;
    pthread_t t1, t2;
    la_arg a1, a2;
    reset_shared();
    la_armed = la_paused = la_go = la_building = 0;
    kcache_config_init(&cfg);
    cfg.dir = new_store(dir, sizeof dir, persistent ? "l" : "lm");
    cfg.persistent = persistent;
    cfg.build_wait_ms = WAIT_LONG_MS;
    cfg.debug = 1;
    cfg.log = la_log;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) { KT_FAILF("kcache_open"); return -1; }
    KT_CHECK(persistent ? kcache_dir(kc) != NULL : kcache_dir(kc) == NULL);
    memset(&a1, 0, sizeof a1);
    memset(&a2, 0, sizeof a2);
    a1.kc = a2.kc = kc;
    a2.second = 1;
    pthread_create(&t1, NULL, la_thread_fn, &a1);
    pthread_create(&t2, NULL, la_thread_fn, &a2);
    pthread_join(t1, NULL); /* T1 has returned: its build is no longer in flight */
    KT_CHECK_MSG(la_paused, "the late caller never missed while the build ran");
    pthread_mutex_lock(&la_mu);
    la_go = 1;
    pthread_cond_broadcast(&la_cv);
    pthread_mutex_unlock(&la_mu);
    pthread_join(t2, NULL);
    KT_CHECK(a1.ok && a2.ok);
    kcache_close(kc);
    return S->builds;
}

static void flight_late_arrival(void)
{
    long with_store = late_arrival(1), memory_only = late_arrival(0);
    KT_CHECK_MSG(with_store == 1, "with a store: a caller that missed just before the build ended built again (%ld builds)",
                 with_store);
    KT_CHECK_MSG(memory_only == 1,
                 "memory only: a caller that missed just before the build ended built again (%ld builds)", memory_only);
}

static void flight_hit_no_build(void)
{
    char dir[600];
    kcache *kc;
    kcache_key k;
    build_spec b;
    const void *p = NULL;
    size_t n = 0;
    kcache_stats st;
    unsigned char *want = (unsigned char *)malloc(payload_len(11));
    reset_shared();
    memset(&b, 0, sizeof b);
    b.key_id = 11;
    b.notify_fd = -1;
    payload_fill(want, 11);
    make_key(&k, 11);

    kc = open_cache(new_store(dir, sizeof dir, "i"), 1, WAIT_LONG_MS, KCACHE_WRITE_THROUGH);
    KT_CHECK(kc != NULL);
    if (!kc) { free(want); kcache_key_free(&k); return; }
    KT_CHECK(kcache_put(kc, &k, want, payload_len(11)) == KCACHE_OK);
    KT_CHECK(kcache_get_or_build(kc, &k, flight_build, &b, &p, &n) == KCACHE_OK && payload_ok(11, p, n)); /* memory hit */
    if (p) kcache_release(kc, p);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_mem, 1);
    KT_CHECK_EQ_U64(st.builds, 0);
    KT_CHECK_EQ_U64(st.build_waits, 0);
    kcache_close(kc);

    kc = open_cache(dir, 1, WAIT_LONG_MS, KCACHE_WRITE_THROUGH); /* a fresh memory: a disk hit */
    KT_CHECK(kc != NULL);
    if (kc) {
        p = NULL;
        KT_CHECK(kcache_get_or_build(kc, &k, flight_build, &b, &p, &n) == KCACHE_OK && payload_ok(11, p, n));
        if (p) kcache_release(kc, p);
        kcache_get_stats(kc, &st);
        KT_CHECK_EQ_U64(st.hits_disk, 1);
        KT_CHECK_EQ_U64(st.builds, 0);
        KT_CHECK_EQ_U64(st.build_waits, 0);
        kcache_close(kc);
    }
    KT_CHECK_EQ_U64(S->builds, 0);
    kcache_key_free(&k);
    free(want);
}

/* ---- two handles on one store in one process ---------------------------------------------- */

static void flight_two_handles(void)
{
    char dir[600];
    kcache *kcs[2];
    kcache_stats st[2];
    int round, once = 0;
    kcs[0] = open_cache(new_store(dir, sizeof dir, "two"), 1, WAIT_LONG_MS, KCACHE_WRITE_THROUGH);
    kcs[1] = open_cache(dir, 1, WAIT_LONG_MS, KCACHE_WRITE_THROUGH);
    KT_CHECK(kcs[0] && kcs[1] && kcache_dir(kcs[0]) && kcache_dir(kcs[1]));
    if (!kcs[0] || !kcs[1]) { kcache_close(kcs[0]); kcache_close(kcs[1]); return; }
    for (round = 0; round < 5; round++) {
        reset_shared();
        KT_CHECK_EQ_U64(run_threads_on(kcs, 2, 4, 300 + (unsigned)round, 0, 200), 4);
        if (S->builds != 1) once++;
        KT_CHECK_MSG(S->builds == 1, "round %d: 4 threads on 2 handles of one store built %ld times", round, S->builds);
    }
    kcache_get_stats(kcs[0], &st[0]);
    kcache_get_stats(kcs[1], &st[1]);
    KT_CHECK_EQ_U64(st[0].builds + st[1].builds, 5);
    printf("# flight_two_handles: %d of 5 rounds built more than once\n", once);
    KT_CHECK(kcache_verify(kcs[0], 0) == KCACHE_OK);
    kcache_close(kcs[0]);
    kcache_close(kcs[1]);
}

/* ---- main ------------------------------------------------------------------------------------- */

/* ---- get-or-build in two steps: kcache_get_or_claim, then put_claimed or drop_claim ---- */

typedef struct claim_shared {
    int status[8], origin[8], ok[8], claimed, done[8];
} claim_shared;
static claim_shared *CS;

/* One caller of the two-step form on key id: a claim builds (hold_ms) and puts, or drops when
   drop; a payload is checked. Records status, origin and payload check in slot. */
static void claim_call(kcache *kc, unsigned id, int slot, unsigned hold_ms, int drop) {
    kcache_key k;
    const void *d = NULL;
    size_t n = 0;
    kcache_origin o = (kcache_origin)99;
    kcache_ticket *t = NULL;
    kcache_status s;
    make_key(&k, id);
    s = kcache_get_or_claim(kc, &k, &d, &n, &o, &t);
    CS->status[slot] = s;
    if (s == KCACHE_OK) {
        CS->origin[slot] = o;
        CS->ok[slot] = payload_ok(id, d, n);
        kcache_release(kc, d);
    } else if (s == KCACHE_CLAIMED) {
        __atomic_add_fetch(&CS->claimed, 1, __ATOMIC_SEQ_CST);
        sleep_ms(hold_ms);
        if (drop) {
            kcache_drop_claim(kc, t);
        } else {
            unsigned char *p = (unsigned char *)malloc(payload_len(id));
            payload_fill(p, id);
            CS->ok[slot] = kcache_put_claimed(kc, t, p, payload_len(id)) == KCACHE_OK;
            free(p);
        }
    }
    __atomic_store_n(&CS->done[slot], 1, __ATOMIC_SEQ_CST);
    kcache_key_free(&k);
}

typedef struct claim_arg { kcache *kc; unsigned id; int slot; int gate; } claim_arg;
static void *claim_thread(void *p) {
    claim_arg *a = (claim_arg *)p;
    wait_release(a->gate);
    claim_call(a->kc, a->id, a->slot, 300, 0);
    return NULL;
}

/* n callers released together (threads of one process, or processes): exactly one claims and
   builds, the others get its payload, saying BUILT_ELSEWHERE. */
static void claim_herd(const char *dir, int procs) {
    int gate[2], i, claimed = 0, elsewhere = 0;
    pid_t pids[4];
    memset(CS, 0, sizeof *CS);
    if (pipe(gate) != 0) { KT_FAILF("pipe"); return; }
    if (procs) {
        for (i = 0; i < 4; i++)
            if ((pids[i] = fork()) == 0) {
                kcache *kc = open_cache(dir, 1, 60000, KCACHE_WRITE_THROUGH);
                close(gate[1]);
                alarm(60);
                wait_release(gate[0]);
                if (kc) claim_call(kc, 41, i, 300, 0);
                kcache_close(kc);
                _exit(0);
            }
        close(gate[0]);
        sleep_ms(100);
        close(gate[1]);
        for (i = 0; i < 4; i++) waitpid(pids[i], NULL, 0);
    } else {
        kcache *kc = open_cache(dir, 1, 60000, KCACHE_WRITE_THROUGH);
        pthread_t th[4];
        claim_arg a[4];
        for (i = 0; i < 4; i++) {
            a[i].kc = kc;
            a[i].id = 42;
            a[i].slot = i;
            a[i].gate = gate[0];
            pthread_create(&th[i], NULL, claim_thread, &a[i]);
        }
        sleep_ms(100);
        close(gate[1]);
        for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
        close(gate[0]);
        kcache_close(kc);
    }
    for (i = 0; i < 4; i++) {
        KT_CHECK_MSG(CS->ok[i], "caller %d: payload wrong or not stored (status %d)", i, CS->status[i]);
        claimed += CS->status[i] == KCACHE_CLAIMED;
        elsewhere += CS->status[i] == KCACHE_OK && CS->origin[i] == KCACHE_BUILT_ELSEWHERE;
    }
    KT_CHECK_MSG(claimed == 1 && elsewhere == 3, "%s: %d claimed, %d BUILT_ELSEWHERE", procs ? "processes" : "threads", claimed,
                 elsewhere);
}

/* A waiter in a process of its own (build wait 60 s, a 20 s watchdog): forked now, blocked on the
   claim until the claim's end hands it over; returns its pid (slot 1). */
static pid_t claim_waiter(const char *dir, int ready_fd) {
    pid_t pid = fork();
    if (pid == 0) {
        kcache *kc = open_cache(dir, 1, 60000, KCACHE_WRITE_THROUGH);
        alarm(20); /* the watchdog: a waiter that waits out the build wait never reports */
        if (write(ready_fd, "r", 1) != 1) _exit(3);
        if (kc) claim_call(kc, 43, 1, 0, 1);
        kcache_close(kc);
        _exit(0);
    }
    return pid;
}

/* How the holder (slot 0, a process of its own) ends: 0 drop_claim; 1 killed; 2 kcache_close with
   the ticket open (then it lives on). Each time the waiter builds next (CLAIMED), without waiting
   out the build wait (its watchdog). */
static void claim_handover(const char *dir, int how) {
    int ready[2], st = -1;
    char c;
    pid_t holder, waiter;
    memset(CS, 0, sizeof *CS);
    if (pipe(ready) != 0) { KT_FAILF("pipe"); return; }
    if ((holder = fork()) == 0) {
        kcache *kc = open_cache(dir, 1, 60000, KCACHE_WRITE_THROUGH);
        kcache_key k;
        const void *d;
        size_t n;
        kcache_ticket *t = NULL;
        alarm(30);
        make_key(&k, 43);
        CS->status[0] = kc ? kcache_get_or_claim(kc, &k, &d, &n, NULL, &t) : KCACHE_EINVAL;
        if (write(ready[1], "h", 1) != 1) _exit(3);
        sleep_ms(500); /* the waiter starts waiting meanwhile */
        if (how == 0) kcache_drop_claim(kc, t);
        if (how == 1) sleep_ms(30000); /* killed here */
        if (how == 2) kcache_close(kc);
        else kcache_close(kc);
        kcache_key_free(&k);
        if (how == 2) sleep_ms(30000); /* still alive: only kcache_close let the claim go */
        _exit(0);
    }
    if (read(ready[0], &c, 1) != 1) KT_FAILF("holder did not start");
    KT_CHECK_EQ_U64(CS->status[0], KCACHE_CLAIMED);
    waiter = claim_waiter(dir, ready[1]);
    if (read(ready[0], &c, 1) != 1) KT_FAILF("waiter did not start");
    if (how == 1) {
        sleep_ms(300);
        kill(holder, SIGKILL);
    }
    waitpid(waiter, &st, 0);
    if (how != 0) kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    close(ready[0]);
    close(ready[1]);
    KT_CHECK_MSG(exited_ok(st) && CS->done[1], "waiter did not finish (watchdog: it waited for the build wait)");
    KT_CHECK_MSG(CS->status[1] == KCACHE_CLAIMED, "waiter: status %d, not KCACHE_CLAIMED", CS->status[1]);
}

/* Mutually dependent keys in two processes: each holds a claim on its key, then asks for the
   other's. A holder only tries the next claim, so both go on (else: a deadlock until the watchdog). */
static void claim_no_deadlock(const char *dir) {
    int gate[2], i, st[2];
    pid_t pids[2];
    memset(CS, 0, sizeof *CS);
    if (pipe(gate) != 0) { KT_FAILF("pipe"); return; }
    for (i = 0; i < 2; i++)
        if ((pids[i] = fork()) == 0) {
            kcache *kc = open_cache(dir, 1, 60000, KCACHE_WRITE_THROUGH);
            kcache_key mine, other;
            const void *d;
            size_t n;
            kcache_ticket *t1 = NULL, *t2 = NULL;
            kcache_status s;
            close(gate[1]);
            alarm(20);
            make_key(&mine, 50 + (unsigned)i);
            make_key(&other, 51 - (unsigned)i);
            s = kcache_get_or_claim(kc, &mine, &d, &n, NULL, &t1);
            __atomic_add_fetch(&CS->claimed, 1, __ATOMIC_SEQ_CST);
            while (__atomic_load_n(&CS->claimed, __ATOMIC_SEQ_CST) < 2) sleep_ms(1); /* both hold theirs */
            CS->status[i] = kcache_get_or_claim(kc, &other, &d, &n, NULL, &t2);
            if (CS->status[i] == KCACHE_CLAIMED) kcache_drop_claim(kc, t2);
            else if (CS->status[i] == KCACHE_OK) kcache_release(kc, d);
            if (s == KCACHE_CLAIMED) kcache_drop_claim(kc, t1);
            CS->done[i] = 1;
            kcache_key_free(&mine);
            kcache_key_free(&other);
            kcache_close(kc);
            _exit(0);
        }
    close(gate[0]);
    close(gate[1]);
    for (i = 0; i < 2; i++) waitpid(pids[i], &st[i], 0);
    for (i = 0; i < 2; i++) {
        KT_CHECK_MSG(exited_ok(st[i]) && CS->done[i], "process %d deadlocked (watchdog)", i);
        KT_CHECK_EQ_U64(CS->status[i], KCACHE_CLAIMED);
    }
}

static void flight_two_steps(void)
{
    char dir[600];
    CS = (claim_shared *)mmap(NULL, sizeof *CS, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (CS == MAP_FAILED) { KT_FAILF("mmap"); return; }
    claim_herd(new_store(dir, sizeof dir, "claim-procs"), 1);
    claim_handover(new_store(dir, sizeof dir, "claim-drop"), 0);
    claim_handover(new_store(dir, sizeof dir, "claim-killed"), 1);
    claim_handover(new_store(dir, sizeof dir, "claim-close"), 2);
    claim_no_deadlock(new_store(dir, sizeof dir, "claim-dep"));
    claim_herd(new_store(dir, sizeof dir, "claim-threads"), 0); /* (threads last: forks are done) */
    { /* caching off: still KCACHE_CLAIMED, with a ticket that claims nothing; put_claimed says why */
        kcache_config cfg;
        kcache *kc = NULL;
        kcache_key k;
        const void *d;
        size_t n;
        kcache_ticket *t = NULL;
        kcache_config_init(&cfg);
        cfg.enable = 0;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
        make_key(&k, 60);
        KT_CHECK(kcache_get_or_claim(kc, &k, &d, &n, NULL, &t) == KCACHE_CLAIMED);
        KT_CHECK(kcache_put_claimed(kc, t, "x", 1) == KCACHE_EDISABLED);
        kcache_key_free(&k);
        kcache_close(kc);
    }
    munmap(CS, sizeof *CS);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    static const char *const vars[] = {"KCACHE_DIR", "KCACHE_MAX_SIZE", "KCACHE_MEM_ENTRIES", "KCACHE_MEM_SIZE",
                                       "KCACHE_ENABLE", "KCACHE_PERSISTENT", "KCACHE_DEBUG", "KCACHE_TRACE",
                                       "KCACHE_FSYNC", "KCACHE_WRITE", "KCACHE_BUILD_WAIT", "KCACHE_STAMP", NULL};
    int i;
    for (i = 0; vars[i]; i++) unsetenv(vars[i]);
    signal(SIGPIPE, SIG_IGN);
    S = (shared *)mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED) { printf("FAIL setup: mmap: %s\n", strerror(errno)); return 1; }
    snprintf(tmproot, sizeof tmproot, "%s/kcache-flight-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmproot)) { printf("FAIL setup: mkdtemp: %s\n", strerror(errno)); return 1; }

    /* processes first: this process forks only while it runs no thread of its own */
    KT_RUN(flight_8procs_8threads);
    KT_RUN(flight_builder_killed);
    KT_RUN(flight_build_fails_once);
    KT_RUN(flight_build_null);
    KT_RUN(flight_keys_parallel);
    KT_RUN(flight_wait_bounded);
    KT_RUN(flight_wait_no_cpu);
    KT_RUN(flight_write_evict);
    KT_RUN(flight_fork_after_open);
    KT_RUN(flight_keys_threads);
    KT_RUN(flight_memory_only);
    KT_RUN(flight_late_arrival);
    KT_RUN(flight_hit_no_build);
    KT_RUN(flight_two_handles);
    KT_RUN(flight_two_steps);

    nftw(tmproot, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    munmap(S, sizeof *S);
    KT_EXIT();
}

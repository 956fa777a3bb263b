/* tests/test_many.c - the batch call, kcache_get_or_build_many: a cold start that P processes x T
 * threads need at once is built once per key, and spread over them.
 *
 * Builds are counted across processes in a shared anonymous page (MAP_SHARED | MAP_ANONYMOUS,
 * __atomic ops); processes start together when the parent closes a pipe. "Rounds" builds prove
 * that nobody waits while a key is left that nobody builds: build number b (0-based, over every
 * process) blocks until min(K, (b / W + 1) x W) builds have started, W = P x T workers. Builds go
 * on only when every worker builds at once; a worker that waited on someone else's key while a
 * free one was left stalls its round until the watchdog (GATE_MS) gives up, and that is counted.
 *
 *   many_duplicates    jobs with the same key: built once (1 thread and 3 threads), the same
 *                      payload for each; a second call: all hits, no build
 *   many_failures      failed builds and invalid jobs fail their own jobs only; the return is the
 *                      lowest failed job's status; nothing of a failure is cached
 *   many_procs         4 processes x 12 keys on one store, rounds of 4: each key built once, every
 *                      process built, nobody stalled
 *   many_threads       1 process x 4 threads, then 2 processes x 2 threads, rounds of 4
 *   many_killed        the builder of one key SIGKILLed mid-build: the others build the rest, then
 *                      take its key over; every survivor gets every payload
 *   many_build_forks   a build that forks (threads 1): the child returns from it and gets every
 *                      payload by itself; the parent too
 *   many_remote        3 processes on stores of their own sharing a redis-server (its claims):
 *                      each key built once over the cluster, rounds of 3 (skipped without redis)
 *   many_remote_killed many_killed on stores of their own sharing the server: the key is taken
 *                      over when the dead builder's claim ends (a 1 s lifetime here)
 *   many_remote_readback  the values another machine stored while this one built are read back
 *                      (each by its try, after its claim: issue 35's 2 GETs per key); the one
 *                      still missing is built here
 *
 * KT_MANY_SERIAL=1 in the environment runs the processes' jobs one kcache_get_or_build at a time
 * (what a caller did before the batch call): many_procs, many_threads, many_remote fail so.
 * Build: make build/test_many build/asan/test_many. */
#define KCACHE_IMPLEMENTATION
#ifndef KT_NO_REDIS /* `make check` builds it without hiredis: the many_remote groups say skip */
#define KCACHE_REDIS
#define KCACHE_ZSTD
#define KCACHE_HMAC_OPENSSL
#endif
#include "kcache.h"
#include "kt.h"
#include "kt_remote.h"

#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>

#define KMAX 64
#define PMAX 8
#define GATE_MS 15000      /* a round that does not fill in this long: someone waited instead */
#define REAP_MS 60000      /* a case whose processes outlive this is killed and fails */
#define PAYLOAD(id) (3000 + (size_t)(id) * 7)

typedef struct shared {
    int builds[KMAX];           /* builds of each key id */
    int built_by[KMAX][4];      /* the process index of each build of a key */
    int proc_builds[PMAX];      /* builds per process */
    int started;                /* builds started, every process */
    int workers, keys;          /* rounds: W workers, K keys (0: builds do not wait) */
    int stalled;                /* a round that did not fill */
    int hang_first;             /* the first build notifies notify_fd and never ends */
    int notify_fd;
    int hung_pid;
    int64_t kill_us, takeover_us;
    int fork_in_build;          /* the build of key 0 in this process forks (the child returns from it) */
    int fork_parent, fork_child;
    int ok[PMAX];               /* jobs with the right payload, per process */
    int status[PMAX];           /* each process's return */
} shared;
static shared *S;
static char g_root[300];
static uint32_t g_claim_ms; /* the remote's claim lifetime, when not the default */

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

typedef struct spec { unsigned id; int proc, fail; } spec;

static int many_build(void *user, void **out, size_t *out_size) {
    const spec *sp = (const spec *)user;
    int b = __atomic_fetch_add(&S->started, 1, __ATOMIC_SEQ_CST);
    int nth = __atomic_fetch_add(&S->builds[sp->id], 1, __ATOMIC_SEQ_CST), none = 0;
    unsigned char *p;
    if (nth < 4) S->built_by[sp->id][nth] = sp->proc;
    __atomic_add_fetch(&S->proc_builds[sp->proc], 1, __ATOMIC_SEQ_CST);
    if (S->hang_first && nth == 0 && __atomic_compare_exchange_n(&S->hung_pid, &none, (int)getpid(), 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        if (write(S->notify_fd, "h", 1) != 1) perror("notify");
        kt_sleep_ms(30000); /* killed meanwhile */
    }
    if (S->hang_first && nth == 1) S->takeover_us = now_us();
    if (S->fork_in_build && sp->id == 0 && getpid() == (pid_t)S->fork_parent) {
        pid_t pid = fork();
        if (pid == 0) alarm(30); /* the child returns from here into kcache_get_or_build_many */
        else S->fork_child = (int)pid;
    }
    if (S->workers) { /* rounds: wait for this build's round to fill */
        int w = S->workers, want = (b / w + 1) * w;
        int64_t until = now_us() + (int64_t)GATE_MS * 1000;
        if (want > S->keys) want = S->keys;
        while (__atomic_load_n(&S->started, __ATOMIC_SEQ_CST) < want && !__atomic_load_n(&S->stalled, __ATOMIC_SEQ_CST)) {
            if (now_us() > until) { __atomic_store_n(&S->stalled, 1, __ATOMIC_SEQ_CST); break; }
            kt_sleep_ms(1);
        }
    }
    if (sp->fail) return 1;
    if ((p = (unsigned char *)malloc(PAYLOAD(sp->id))) == NULL) return 1;
    kt_payload(p, PAYLOAD(sp->id), sp->id);
    *out = p;
    *out_size = PAYLOAD(sp->id);
    return 0;
}

static kcache *open_store(const char *name, const char *remote) {
    kcache_config cfg;
    char dir[400];
    kcache *kc = NULL;
    kt_config(&cfg, dir, sizeof dir, g_root, name);
    cfg.build_wait_ms = 120000;
    cfg.remote = remote;
    if (g_claim_ms) cfg.remote_claim_ms = g_claim_ms;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return NULL;
    return kc;
}

/* K jobs with keys 0..K-1 of unit `unit` for process proc; keys and specs are the caller's. */
static void make_jobs(kcache_job *jobs, kcache_key *keys, spec *specs, int k, const char *unit, int proc) {
    int i;
    for (i = 0; i < k; i++) {
        kt_key(&keys[i], unit, (unsigned)i);
        specs[i].id = (unsigned)i;
        specs[i].proc = proc;
        specs[i].fail = 0;
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].key = &keys[i];
        jobs[i].build = many_build;
        jobs[i].user = &specs[i];
    }
}

/* Runs the jobs as the batch call does, or one kcache_get_or_build at a time (KT_MANY_SERIAL). */
static kcache_status run_jobs(kcache *kc, kcache_job *jobs, size_t n, unsigned threads) {
    const char *serial = getenv("KT_MANY_SERIAL");
    size_t i;
    kcache_status first = KCACHE_OK;
    if (!serial || strcmp(serial, "1") != 0) return kcache_get_or_build_many(kc, jobs, n, threads);
    for (i = 0; i < n; i++) {
        jobs[i].status = kcache_get_or_build(kc, jobs[i].key, jobs[i].build, jobs[i].user, &jobs[i].data, &jobs[i].size);
        if (jobs[i].status != KCACHE_OK && first == KCACHE_OK) first = jobs[i].status;
    }
    return first;
}

/* ---- processes ---- */

typedef struct pgroup { int nprocs; pid_t pids[PMAX]; int status[PMAX]; int gate[2]; } pgroup;

/* Process proc: opens its store, waits for the gate, runs K jobs (keys 0..K-1 of unit) on `threads`
   threads, checks and releases every payload, reports in S. */
static void child(int proc, const char *store, const char *unit, const char *remote, int k, unsigned threads, int gate_fd) {
    kcache_job jobs[KMAX];
    kcache_key keys[KMAX];
    spec specs[KMAX];
    kcache *kc = open_store(store, remote);
    char c;
    int i, ok = 0;
    kcache_status s;
    if (!kc) _exit(3);
    make_jobs(jobs, keys, specs, k, unit, proc);
    if (read(gate_fd, &c, 1) < 0) _exit(4);
    s = run_jobs(kc, jobs, (size_t)k, threads);
    for (i = 0; i < k; i++) {
        if (jobs[i].status == KCACHE_OK) {
            ok += kt_payload_ok(jobs[i].data, jobs[i].size, PAYLOAD(i), (unsigned)i);
            kcache_release(kc, jobs[i].data);
        }
        kcache_key_free(&keys[i]);
    }
    S->ok[proc] = ok;
    S->status[proc] = (int)s;
    kcache_close(kc);
    _exit(0);
}

static void group_run(pgroup *g, int nprocs, const char *store_prefix, int own_stores, const char *remote, int k, unsigned threads) {
    int i;
    g->nprocs = nprocs;
    if (pipe(g->gate) != 0) { perror("pipe"); exit(1); }
    for (i = 0; i < nprocs; i++) {
        char store[64];
        if (own_stores) snprintf(store, sizeof store, "%s-%d", store_prefix, i);
        else snprintf(store, sizeof store, "%s", store_prefix);
        fflush(stdout);
        g->pids[i] = fork();
        if (g->pids[i] == 0) {
            close(g->gate[1]);
            child(i, store, store_prefix, remote, k, threads, g->gate[0]); /* keys of the case's own */
        }
    }
    close(g->gate[0]);
}
static void group_go(pgroup *g) { close(g->gate[1]); }

/* Waits for every process (killing what outlives REAP_MS): how many were killed so. */
static int group_reap(pgroup *g) {
    int64_t until = now_us() + (int64_t)REAP_MS * 1000;
    int left = g->nprocs, killed = 0, i;
    for (i = 0; i < g->nprocs; i++) g->status[i] = -1;
    while (left > 0) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            for (i = 0; i < g->nprocs; i++)
                if (g->pids[i] == p) { g->status[i] = st; left--; }
            continue;
        }
        if (now_us() > until) {
            for (i = 0; i < g->nprocs; i++)
                if (g->status[i] == -1) { kill(g->pids[i], SIGKILL); waitpid(g->pids[i], &g->status[i], 0); killed++; left--; }
            break;
        }
        kt_sleep_ms(5);
    }
    return killed;
}
static int exited_ok(int st) { return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0; }

static void reset(int workers, int keys) {
    memset(S, 0, sizeof *S);
    S->workers = workers;
    S->keys = keys;
    S->notify_fd = -1;
}

/* Checks a case of P processes over K keys: each built once, every process with every payload,
   nobody stalled, each process built at least once (K >= P). */
static void check_cooperation(pgroup *g, int k, const char *what) {
    int i, total = 0;
    KT_CHECK_MSG(group_reap(g) == 0, "%s: processes hung", what);
    for (i = 0; i < g->nprocs; i++) {
        KT_CHECK_MSG(exited_ok(g->status[i]), "%s: process %d: status %d", what, i, g->status[i]);
        KT_CHECK_MSG(S->status[i] == KCACHE_OK, "%s: process %d: %s", what, i, kcache_strerror((kcache_status)S->status[i]));
        KT_CHECK_MSG(S->ok[i] == k, "%s: process %d: %d of %d payloads right", what, i, S->ok[i], k);
        if (k >= g->nprocs) KT_CHECK_MSG(S->proc_builds[i] >= 1, "%s: process %d built nothing", what, i);
    }
    for (i = 0; i < k; i++) {
        KT_CHECK_MSG(S->builds[i] == 1, "%s: key %d built %d times", what, i, S->builds[i]);
        total += S->builds[i];
    }
    KT_CHECK_MSG(!S->stalled, "%s: a round of builds did not fill: a worker waited while a key nobody built was left", what);
    printf("# %s: %d builds of %d keys; per process:", what, total, k);
    for (i = 0; i < g->nprocs; i++) printf(" %d", S->proc_builds[i]);
    printf("\n");
}

/* ---- the cases ---- */

static void many_duplicates(void) {
    static const unsigned ids[] = {0, 1, 0, 2, 0, 1};
    unsigned threads;
    for (threads = 1; threads <= 3; threads += 2) {
        char name[32];
        kcache_job jobs[6];
        kcache_key keys[6];
        spec specs[6];
        kcache *kc;
        size_t i;
        int round;
        snprintf(name, sizeof name, "dup%u", threads);
        if ((kc = open_store(name, NULL)) == NULL) { KT_FAILF("open"); return; }
        reset(0, 0);
        for (round = 0; round < 2; round++) { /* the second: everything is there */
            for (i = 0; i < 6; i++) {
                kt_key(&keys[i], "dup", ids[i]);
                specs[i].id = ids[i];
                specs[i].proc = 0;
                specs[i].fail = 0;
                memset(&jobs[i], 0, sizeof jobs[i]);
                jobs[i].key = &keys[i];
                jobs[i].build = many_build;
                jobs[i].user = &specs[i];
            }
            KT_CHECK_EQ_U64(kcache_get_or_build_many(kc, jobs, 6, threads), KCACHE_OK);
            for (i = 0; i < 6; i++) {
                KT_CHECK_MSG(jobs[i].status == KCACHE_OK && kt_payload_ok(jobs[i].data, jobs[i].size, PAYLOAD(ids[i]), ids[i]),
                             "threads %u round %d job %zu: %s", threads, round, i, kcache_strerror(jobs[i].status));
            }
            if (round == 0) { /* one payload for the same key's jobs */
                KT_CHECK(jobs[0].data == jobs[2].data && jobs[0].data == jobs[4].data && jobs[1].data == jobs[5].data);
            }
            for (i = 0; i < 6; i++) {
                if (jobs[i].status == KCACHE_OK) kcache_release(kc, jobs[i].data);
                kcache_key_free(&keys[i]);
            }
            for (i = 0; i < 3; i++) KT_CHECK_MSG(S->builds[i] == 1, "threads %u round %d: key %zu built %d times", threads, round, i, S->builds[i]);
        }
        kcache_close(kc);
    }
}

static void many_failures(void) {
    kcache_job jobs[6];
    kcache_key keys[6];
    spec specs[6];
    kcache *kc = open_store("fail", NULL);
    const void *d;
    size_t i, n;
    int round;
    if (!kc) { KT_FAILF("open"); return; }
    for (round = 0; round < 2; round++) {
        reset(0, 0);
        make_jobs(jobs, keys, specs, 6, round ? "fail1" : "fail0", 0);
        /* job 5: the failing build's key again (built once, failed for both) */
        specs[5].id = round ? 3 : 1;
        kcache_key_free(&keys[5]);
        kt_key(&keys[5], round ? "fail1" : "fail0", specs[5].id);
        if (round == 0) { /* job 1 fails its build, job 3 has no build: EBUILD */
            specs[1].fail = specs[5].fail = 1;
            jobs[3].build = NULL;
        } else { /* job 1 has no build, job 3 fails its build: EINVAL */
            jobs[1].build = NULL;
            specs[3].fail = specs[5].fail = 1;
        }
        KT_CHECK_EQ_U64(kcache_get_or_build_many(kc, jobs, 6, round ? 4 : 1), round ? KCACHE_EINVAL : KCACHE_EBUILD);
        KT_CHECK_EQ_U64(jobs[1].status, round ? KCACHE_EINVAL : KCACHE_EBUILD);
        KT_CHECK_EQ_U64(jobs[3].status, round ? KCACHE_EBUILD : KCACHE_EINVAL);
        KT_CHECK_EQ_U64(jobs[5].status, KCACHE_EBUILD);
        KT_CHECK(jobs[1].data == NULL && jobs[3].data == NULL && jobs[5].data == NULL);
        for (i = 0; i < 6; i += 2)
            KT_CHECK_MSG(jobs[i].status == KCACHE_OK && kt_payload_ok(jobs[i].data, jobs[i].size, PAYLOAD(i), (unsigned)i),
                         "round %d job %zu: %s", round, i, kcache_strerror(jobs[i].status));
        KT_CHECK_MSG(S->builds[1] == (round ? 0 : 1), "round %d: key 1 built %d times", round, S->builds[1]);
        KT_CHECK_MSG(S->builds[3] == (round ? 1 : 0), "round %d: key 3 built %d times", round, S->builds[3]);
        /* nothing of a failure is kept */
        KT_CHECK_EQ_U64(kcache_get(kc, &keys[round ? 3 : 1], &d, &n), KCACHE_MISS);
        for (i = 0; i < 6; i++) {
            if (jobs[i].status == KCACHE_OK) kcache_release(kc, jobs[i].data);
            kcache_key_free(&keys[i]);
        }
    }
    /* nothing to do, and bad arguments */
    KT_CHECK_EQ_U64(kcache_get_or_build_many(kc, NULL, 0, 2), KCACHE_OK);
    KT_CHECK_EQ_U64(kcache_get_or_build_many(kc, NULL, 3, 2), KCACHE_EINVAL);
    make_jobs(jobs, keys, specs, 1, "fail2", 0);
    KT_CHECK_EQ_U64(kcache_get_or_build_many(NULL, jobs, 1, 1), KCACHE_EINVAL);
    KT_CHECK(jobs[0].status == KCACHE_EINVAL && jobs[0].data == NULL);
    kcache_key_free(&keys[0]);
    kcache_close(kc);
}

static void many_procs(void) {
    pgroup g;
    reset(4, 12);
    group_run(&g, 4, "procs", 0, NULL, 12, 1);
    kt_sleep_ms(100);
    group_go(&g);
    check_cooperation(&g, 12, "4 processes x 12 keys");
}

static void many_threads(void) {
    pgroup g;
    reset(4, 8);
    group_run(&g, 1, "threads1", 0, NULL, 8, 4);
    group_go(&g);
    check_cooperation(&g, 8, "1 process x 4 threads x 8 keys");
    reset(4, 12);
    group_run(&g, 2, "threads2", 0, NULL, 12, 2);
    kt_sleep_ms(100);
    group_go(&g);
    check_cooperation(&g, 12, "2 processes x 2 threads x 12 keys");
}

/* The builder of the first key SIGKILLed mid-build: the other processes build the rest, then take
   its key over (the store's claim dies with it; the remote's ends with its lifetime). */
static void killed_case(const char *store, int own_stores, const char *remote, const char *what) {
    pgroup g;
    int notify[2], i, victim = -1, total = 0;
    char c;
    struct pollfd pf;
    reset(0, 0);
    if (pipe(notify) != 0) { KT_FAILF("pipe"); return; }
    S->hang_first = 1;
    S->notify_fd = notify[1];
    group_run(&g, 3, store, own_stores, remote, 6, 1);
    kt_sleep_ms(100);
    group_go(&g);
    pf.fd = notify[0];
    pf.events = POLLIN;
    if (poll(&pf, 1, 20000) == 1 && read(notify[0], &c, 1) == 1) {
        for (i = 0; i < g.nprocs; i++)
            if (g.pids[i] == (pid_t)S->hung_pid) victim = i;
        KT_CHECK_MSG(victim >= 0, "the hung builder %d is none of ours", S->hung_pid);
        kt_sleep_ms(300); /* the others build the rest meanwhile, then wait on its key */
        S->kill_us = now_us();
        if (victim >= 0) kill(g.pids[victim], SIGKILL);
    } else {
        KT_FAILF("no build started");
    }
    KT_CHECK_MSG(group_reap(&g) == 0, "processes hung");
    close(notify[0]);
    close(notify[1]);
    for (i = 0; i < g.nprocs; i++) {
        if (i == victim) {
            KT_CHECK_MSG(WIFSIGNALED(g.status[i]) && WTERMSIG(g.status[i]) == SIGKILL, "the builder did not die of SIGKILL");
            continue;
        }
        KT_CHECK_MSG(exited_ok(g.status[i]) && S->status[i] == KCACHE_OK && S->ok[i] == 6, "survivor %d: status %d, %s, %d of 6 payloads",
                     i, g.status[i], kcache_strerror((kcache_status)S->status[i]), S->ok[i]);
    }
    for (i = 0; i < 6; i++) total += S->builds[i];
    KT_CHECK_MSG(total == 7, "%d builds of 6 keys (want 7: the killed one's key twice): %d %d %d %d %d %d, victim %d, per process %d %d %d", total,
                 S->builds[0], S->builds[1], S->builds[2], S->builds[3], S->builds[4], S->builds[5], victim, S->proc_builds[0], S->proc_builds[1], S->proc_builds[2]);
    for (i = 0; i < 6; i++)
        if (S->builds[i] == 2) {
            KT_CHECK_MSG(S->built_by[i][1] != S->built_by[i][0], "the killed builder's key was built again by the same process");
            KT_CHECK_MSG(S->takeover_us > S->kill_us, "the hung key was built again before its builder was killed");
            printf("# %s: the killed builder's key taken over %.1f ms after SIGKILL\n", what, (S->takeover_us - S->kill_us) / 1e3);
        }
}

static void many_killed(void) { killed_case("killed", 0, NULL, "many_killed"); }

/* A build that forks, the child returning from it (threads 1): the child gets every payload, by
   itself (nothing of the parent's batch is waited on), and so does the parent. */
static void many_build_forks(void) {
    kcache_job jobs[4];
    kcache_key keys[4];
    spec specs[4];
    kcache *kc = open_store("forks", NULL);
    int i, ok = 0, st = -1;
    kcache_status s;
    int64_t until;
    if (!kc) { KT_FAILF("open"); return; }
    reset(0, 0);
    S->fork_in_build = 1;
    S->fork_parent = (int)getpid();
    make_jobs(jobs, keys, specs, 4, "forks", 0);
    s = kcache_get_or_build_many(kc, jobs, 4, 1);
    for (i = 0; i < 4; i++) ok += jobs[i].status == KCACHE_OK && kt_payload_ok(jobs[i].data, jobs[i].size, PAYLOAD(i), (unsigned)i);
    if (getpid() != (pid_t)S->fork_parent) _exit(s == KCACHE_OK && ok == 4 ? 0 : 1); /* the child */
    KT_CHECK_EQ_U64(s, KCACHE_OK);
    KT_CHECK_EQ_U64(ok, 4);
    for (i = 0; i < 4; i++) {
        if (jobs[i].status == KCACHE_OK) kcache_release(kc, jobs[i].data);
        kcache_key_free(&keys[i]);
    }
    until = now_us() + (int64_t)REAP_MS * 1000;
    while (S->fork_child > 0 && waitpid((pid_t)S->fork_child, &st, WNOHANG) == 0 && now_us() < until) kt_sleep_ms(5);
    KT_CHECK_MSG(S->fork_child > 0 && exited_ok(st), "the child of the build that forked: status %d", st);
    kcache_close(kc);
}

#ifdef KCACHE_REDIS
static kt_redis R;
static int have_redis;

static void many_remote_killed(void) {
    g_claim_ms = 1000; /* a dead builder's claim ends within a second */
    killed_case("remote-killed", 1, R.url, "many_remote_killed");
    g_claim_ms = 0;
}

/* Another machine's builds landing on the remote while this one builds: process B (a store of
   its own) needs K keys; during its first build, "machine" A (another store, the same server)
   stores all but B's key and one more, X. B must read those K - 2 back, then build X: 2 builds.
   Since issue 35 (item 9: at most 2 GETs per key) a key nobody was seen building is asked again
   only by its try, after its claim is taken, not by an exchange after every build: each value read
   back costs its claim (K claims released on the server: the EVALs of the release script), and
   the keys left are no longer asked after each build (K x K GETs). */
#define READBACK_K 6
static kcache *g_readback_a;
static int g_readback_first = -1, g_readback_x = -1;
static int readback_build(void *user, void **out, size_t *out_size) {
    const spec *sp = (const spec *)user;
    if (g_readback_first < 0) {
        int i;
        g_readback_first = (int)sp->id;
        g_readback_x = (g_readback_first + 1) % READBACK_K;
        for (i = 0; i < READBACK_K; i++)
            if (i != g_readback_first && i != g_readback_x && kt_put(g_readback_a, "readback", (unsigned)i, (unsigned)i, PAYLOAD(i)) != KCACHE_OK)
                printf("# readback: A's put of key %d failed\n", i);
    }
    return many_build(user, out, out_size);
}
static void many_remote_readback(void) {
    kcache_job jobs[READBACK_K];
    kcache_key keys[READBACK_K];
    spec specs[READBACK_K];
    kcache *b;
    kcache_stats st;
    long long evals;
    int i, ok = 0;
    g_claim_ms = 30000; /* no renewal (an EVAL) while the test runs, however slowly */
    g_readback_a = open_store("readback-a", R.url);
    b = open_store("readback-b", R.url);
    g_claim_ms = 0;
    if (!g_readback_a || !b) { KT_FAILF("open"); return; }
    reset(0, 0);
    make_jobs(jobs, keys, specs, READBACK_K, "readback", 0);
    for (i = 0; i < READBACK_K; i++) jobs[i].build = readback_build;
    evals = kt_redis_calls(&R, "eval") - kt_redis_calls(&R, "exists");
    KT_CHECK_EQ_U64(kcache_get_or_build_many(b, jobs, READBACK_K, 1), KCACHE_OK);
    evals = kt_redis_calls(&R, "eval") - kt_redis_calls(&R, "exists") - evals; /* (a claim's take is a script too, the one that calls EXISTS) */
    for (i = 0; i < READBACK_K; i++) {
        if (jobs[i].status == KCACHE_OK) {
            ok += kt_payload_ok(jobs[i].data, jobs[i].size, PAYLOAD(i), (unsigned)i);
            kcache_release(b, jobs[i].data);
        }
        kcache_key_free(&keys[i]);
    }
    kcache_get_stats(b, &st);
    KT_CHECK_MSG(ok == READBACK_K, "%d of %d payloads right", ok, READBACK_K);
    KT_CHECK_MSG(g_readback_x >= 0 && S->builds[g_readback_first] == 1 && S->builds[g_readback_x] == 1 && S->proc_builds[0] == 2,
                 "B built %d keys (its first %d, X %d): want those 2", S->proc_builds[0], g_readback_first, g_readback_x);
    KT_CHECK_MSG(st.hits_remote == READBACK_K - 2, "B's remote hits: %llu, want %d", (unsigned long long)st.hits_remote, READBACK_K - 2);
    KT_CHECK_MSG(evals <= READBACK_K, "claims released on the server during B's batch: %lld, want at most one per key", evals);
    kcache_close(b);
    kcache_close(g_readback_a);
    g_readback_a = NULL;
}

static void many_remote(void) {
    pgroup g;
    reset(3, 9);
    group_run(&g, 3, "remote", 1, R.url, 9, 1);
    kt_sleep_ms(100);
    group_go(&g);
    check_cooperation(&g, 9, "3 processes x 9 keys on stores of their own, one redis-server");
}
#endif

/* ---- where a payload came from (kcache_job.origin; a one-job batch is the single-key form) ---- */

typedef struct origin_shared { int origin[8], status[8], builds; } origin_shared;
static origin_shared *OS;
static int origin_build(void *user, void **out, size_t *out_size) {
    unsigned id = *(const unsigned *)user;
    unsigned char *p = (unsigned char *)malloc(PAYLOAD(id));
    __atomic_add_fetch(&OS->builds, 1, __ATOMIC_SEQ_CST);
    kt_sleep_ms(300); /* long enough that every caller released together misses at its first look */
    if (!p) return 1;
    kt_payload(p, PAYLOAD(id), id);
    *out = p;
    *out_size = PAYLOAD(id);
    return 0;
}
/* One job: its status, and where its payload came from in *origin (released here). */
static kcache_status origin_one(kcache *kc, const char *unit, unsigned id, kcache_origin *origin) {
    kcache_job job;
    kcache_key k;
    kcache_status s;
    kt_key(&k, unit, id);
    memset(&job, 0, sizeof job);
    job.key = &k;
    job.build = origin_build;
    job.user = &id;
    job.origin = (kcache_origin)99;
    s = kcache_get_or_build_many(kc, &job, 1, 1);
    *origin = job.origin;
    if (s == KCACHE_OK && !kt_payload_ok(job.data, job.size, PAYLOAD(id), id)) s = KCACHE_ECORRUPT;
    if (job.status == KCACHE_OK) kcache_release(kc, job.data);
    kcache_key_free(&k);
    return s;
}
typedef struct origin_arg { kcache *kc; int slot; pthread_barrier_t *go; } origin_arg;
static void *origin_thread(void *p) {
    origin_arg *a = (origin_arg *)p;
    kcache_origin o;
    pthread_barrier_wait(a->go);
    OS->status[a->slot] = origin_one(a->kc, "origin", 2, &o);
    OS->origin[a->slot] = o;
    return NULL;
}
static void count_origins(int n, int *here, int *elsewhere) {
    int i;
    *here = *elsewhere = 0;
    for (i = 0; i < n; i++) {
        KT_CHECK_EQ_U64(OS->status[i], KCACHE_OK);
        *here += OS->origin[i] == KCACHE_BUILT_HERE;
        *elsewhere += OS->origin[i] == KCACHE_BUILT_ELSEWHERE;
    }
}

static void many_origin(void) {
    kcache *kc = open_store("origin", NULL), *kc2 = open_store("origin", NULL), *kl;
    kcache_config cfg;
    char ldir[400], dir[400];
    kcache_origin o = KCACHE_FROM_MEMORY;
    int i, here, elsewhere, gate[2];
    pid_t pids[3];
    KT_CHECK(kc && kc2);
    if (!kc || !kc2) return;
    OS = (origin_shared *)mmap(NULL, sizeof *OS, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    KT_CHECK(OS != MAP_FAILED);
    if (OS == MAP_FAILED) return;
    /* one caller: built by this call, then from memory; another handle on the store: from the store */
    KT_CHECK(origin_one(kc, "origin", 1, &o) == KCACHE_OK && o == KCACHE_BUILT_HERE);
    KT_CHECK(origin_one(kc, "origin", 1, &o) == KCACHE_OK && o == KCACHE_FROM_MEMORY);
    KT_CHECK(origin_one(kc2, "origin", 1, &o) == KCACHE_OK && o == KCACHE_FROM_STORE);
    KT_CHECK_EQ_U64(OS->builds, 1);
    /* four threads on one key: one builds it, the three others got its result */
    {
        pthread_t th[4];
        origin_arg a[4];
        pthread_barrier_t go;
        memset(OS, 0, sizeof *OS);
        pthread_barrier_init(&go, NULL, 4);
        for (i = 0; i < 4; i++) {
            a[i].kc = kc;
            a[i].slot = i;
            a[i].go = &go;
            pthread_create(&th[i], NULL, origin_thread, &a[i]);
        }
        for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
        pthread_barrier_destroy(&go);
        count_origins(4, &here, &elsewhere);
        KT_CHECK_MSG(here == 1 && elsewhere == 3 && OS->builds == 1, "threads: %d built here, %d elsewhere, %d builds", here, elsewhere,
                     OS->builds);
    }
    kcache_close(kc);
    kcache_close(kc2);
    /* three processes on one key (one store): one builds, two got its result */
    memset(OS, 0, sizeof *OS);
    KT_CHECK(pipe(gate) == 0);
    for (i = 0; i < 3; i++) {
        if ((pids[i] = fork()) == 0) {
            kcache *c = open_store("origin", NULL);
            char ch;
            close(gate[1]);
            alarm(60);
            if (read(gate[0], &ch, 1) < 0) _exit(2);
            OS->status[i] = c ? origin_one(c, "origin", 3, &o) : KCACHE_EINVAL;
            OS->origin[i] = o;
            kcache_close(c);
            _exit(0);
        }
    }
    close(gate[0]);
    kt_sleep_ms(100);
    close(gate[1]);
    for (i = 0; i < 3; i++) waitpid(pids[i], NULL, 0);
    count_origins(3, &here, &elsewhere);
    KT_CHECK_MSG(here == 1 && elsewhere == 2 && OS->builds == 1, "processes: %d built here, %d elsewhere, %d builds", here, elsewhere,
                 OS->builds);
    /* a read-only layer: a store of its own that has the key, searched after this one */
    kl = open_store("origin-layer", NULL);
    KT_CHECK(kl && origin_one(kl, "origin", 4, &o) == KCACHE_OK && o == KCACHE_BUILT_HERE);
    kcache_close(kl);
    snprintf(ldir, sizeof ldir, "%s/origin-layer", g_root);
    kt_config(&cfg, dir, sizeof dir, g_root, "origin-over-layer");
    cfg.layers = ldir;
    kl = NULL;
    KT_CHECK(kcache_open(&kl, &cfg) == KCACHE_OK && kl);
    KT_CHECK(kl && origin_one(kl, "origin", 4, &o) == KCACHE_OK && o == KCACHE_FROM_LAYER);
    kcache_close(kl);
    /* the remote: another store's put there, read by a store of its own */
#ifdef KT_NO_REDIS
    printf("skip many_origin remote: built without Redis (KT_NO_REDIS)\n");
#else
    if (have_redis) {
        kcache *ka = open_store("origin-ra", R.url), *kb = open_store("origin-rb", R.url);
        KT_CHECK(ka && kb);
        KT_CHECK(ka && origin_one(ka, "origin", 5, &o) == KCACHE_OK && o == KCACHE_BUILT_HERE);
        KT_CHECK(kb && origin_one(kb, "origin", 5, &o) == KCACHE_OK && o == KCACHE_FROM_REMOTE);
        kcache_close(ka);
        kcache_close(kb);
    }
#endif
    munmap(OS, sizeof *OS);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    S = (shared *)mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED || !kt_mktemp(g_root, sizeof g_root, "test-many")) { printf("FAIL setup\n"); return 1; }
    KT_RUN(many_duplicates);
    KT_RUN(many_failures);
    KT_RUN(many_procs);
    KT_RUN(many_threads);
    KT_RUN(many_killed);
    KT_RUN(many_build_forks);
#ifdef KCACHE_REDIS
    have_redis = kt_redis_start(&R, g_root, 0, NULL);
    if (have_redis) {
        KT_RUN(many_remote);
        KT_RUN(many_remote_readback);
        KT_RUN(many_remote_killed);
        KT_RUN(many_origin); /* (with the remote's case) */
        kt_redis_stop(&R);
    } else {
        printf("skip many_remote: redis-server did not start (scripts/deps.sh installs it)\n");
        KT_RUN(many_origin);
    }
#else
    printf("skip many_remote: built without Redis (KT_NO_REDIS)\n");
    KT_RUN(many_origin); /* (without the remote's case) */
#endif
    kt_rm_tree(g_root);
    KT_EXIT();
}

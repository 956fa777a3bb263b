/* test_netfaults.c - the remote tier's claims and read-backs against real network faults (issue 35,
 * items 4 and 9), counted, never timed.
 *
 * The program moves into a network namespace of its own (unshare(CLONE_NEWNET): root), brings its
 * lo up and starts redis-server there, so that tc's faults touch nothing outside it: loss through a
 * classic BPF filter in direct-action mode on lo's egress (drop every packet whose IP id is a
 * multiple of 20: 5%, the same packets every run; this kernel has no netem) and rate through tbf
 * (10 Mbit/s). Without root, tc or the BPF classifier, the fault groups print a `skip` line naming
 * what is missing; the groups without faults run anyway.
 *
 *   net_many_gets     one process, 64 keys in one batch on a healthy server: at most 2 GETs per key
 *                     (INFO commandstats; the old batch asked every open key again after each
 *                     build: 2,210 GETs)
 *   net_many_slow     a server answering each command after 90 ms, remote timeout 100 ms: the
 *                     batch's read-back is one exchange with one deadline, so it times out once and
 *                     the breaker opens (the old code gave each pipelined reply a fresh timeout: 561
 *                     GETs for 32 keys, and no breaker)
 *   net_cold_loss     the cold start of 8 processes x 64 keys (30 ms builds of 4 KiB, stores of
 *                     their own, one redis-server; the batch on 2 threads) at 5% loss with a 200 ms
 *                     timeout (one retransmission on lo outlasts it): at most 1.1 builds per key
 *                     (the old code: 6.5-7.5; a failed call or a skipped one sent the caller off to
 *                     build, and the breaker skipped most calls)
 *   net_cold_loss_single  the same with kcache_get_or_build per key: at most 1.1 (old: 8.0)
 *   net_waiters_share 8 threads of a process waiting on another's 8 builds share one subscribed
 *                     connection (CLIENT LIST on the server; old: one per waiting thread)
 *   net_cold_clean    the batch's cold start without faults: at most 30 commands per key, everything
 *                     INFO commandstats counts (issue 35.6: the processes hear through pub/sub which
 *                     claims were taken and which builds ended; old: 40)
 *   net_cold_rate     the batch's cold start on a 10 Mbit/s link (tbf; 8 KiB values, 100 ms
 *                     timeout): at most 1.1 builds per key (old: 4.9-5.6)
 *
 * NF_ONLY=word runs only the groups whose name holds it; NF_STATS=1 prints the cold starts' INFO commandstats.
 * NF_LOG=1 in the environment writes every process's debug lines (pid, time) and builds to stderr;
 * NF_BUILD_MS, NF_PAYLOAD, NF_TIMEOUT change the cold starts' build time, value size and timeout.
 */
#define _GNU_SOURCE
#define KCACHE_IMPLEMENTATION
#define KCACHE_REDIS
#define KCACHE_ZSTD
#define KCACHE_HMAC_OPENSSL
#include "kcache.h"
#include "kt.h"
#include "kt_remote.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#define KEYS 64
#define PROCS 8

typedef struct shared {
    int builds[KEYS];   /* builds of each key, every process */
    int wrong;          /* payloads that were not their key's */
    int done[PROCS];    /* each process's jobs that ended with the right payload */
    long long served;   /* the slow server: GETs of values it answered */
} shared;
static shared *S;
static char g_root[300];
static unsigned g_build_ms;   /* how long a build takes */
static size_t g_payload;      /* its size */

static int net_build(void *user, void **out, size_t *out_size) {
    unsigned id = (unsigned)(uintptr_t)user;
    unsigned char *p;
    __atomic_add_fetch(&S->builds[id], 1, __ATOMIC_SEQ_CST);
    if (getenv("NF_LOG")) fprintf(stderr, "%d %.3f BUILD %u\n", (int)getpid(), kt_now(), id);
    if (g_build_ms) kt_sleep_ms(g_build_ms);
    if (!(p = (unsigned char *)malloc(g_payload))) return 1;
    kt_payload(p, g_payload, id);
    *out = p;
    *out_size = g_payload;
    return 0;
}

static void pid_log(void *user, const char *line) {
    (void)user;
    fprintf(stderr, "%d %.3f %s\n", (int)getpid(), kt_now(), line);
}

static kcache *open_store(const char *name, const char *remote, uint32_t timeout_ms) {
    kcache_config cfg;
    char dir[400];
    kcache *kc = NULL;
    kt_config(&cfg, dir, sizeof dir, g_root, name);
    if (getenv("NF_LOG")) cfg.log = pid_log, cfg.debug = 1; /* (a process's debug lines, to see what it did) */
    cfg.build_wait_ms = 60000;
    cfg.remote = remote;
    cfg.remote_timeout_ms = timeout_ms;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return NULL;
    return kc;
}

/* One batch of keys 0..n-1 of unit on threads; returns the jobs that ended with the right payload. */
static int run_batch(kcache *kc, const char *unit, int n, unsigned threads) {
    kcache_job jobs[KEYS];
    kcache_key keys[KEYS];
    int i, ok = 0;
    for (i = 0; i < n; i++) {
        kt_key(&keys[i], unit, (unsigned)i);
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].key = &keys[i];
        jobs[i].build = net_build;
        jobs[i].user = (void *)(uintptr_t)i;
    }
    kcache_get_or_build_many(kc, jobs, (size_t)n, threads);
    for (i = 0; i < n; i++) {
        if (jobs[i].status == KCACHE_OK) {
            if (kt_payload_ok(jobs[i].data, jobs[i].size, g_payload, (unsigned)i)) ok++;
            else __atomic_add_fetch(&S->wrong, 1, __ATOMIC_SEQ_CST);
            kcache_release(kc, jobs[i].data);
        }
        kcache_key_free(&keys[i]);
    }
    return ok;
}

static void reset(void) { memset(S, 0, sizeof *S); }
static int total_builds(int n) {
    int i, t = 0;
    for (i = 0; i < n; i++) t += S->builds[i];
    return t;
}

/* ---- item 9: the batch's read-back ---- */

static void net_many_gets(void) {
    kt_redis R;
    kcache *kc;
    long long gets;
    int ok;
    if (!kt_redis_start(&R, g_root, 1, NULL)) { KT_FAILF("redis-server did not start"); return; }
    reset();
    g_build_ms = 1, g_payload = 2000;
    if (!(kc = open_store("gets", R.url, 0))) { KT_FAILF("open"); kt_redis_stop(&R); return; }
    /* the client's GETs: commandstats counts the GET inside each claim script (EVAL) too */
    gets = kt_redis_calls(&R, "get") - kt_redis_calls(&R, "eval");
    ok = run_batch(kc, "gets", KEYS, 2);
    gets = kt_redis_calls(&R, "get") - kt_redis_calls(&R, "eval") - gets;
    kcache_close(kc);
    printf("# net_many_gets: %d keys, %lld GETs, %d builds\n", KEYS, gets, total_builds(KEYS));
    KT_CHECK_MSG(ok == KEYS && S->wrong == 0, "%d of %d payloads right, %d wrong", ok, KEYS, S->wrong);
    KT_CHECK_MSG(total_builds(KEYS) == KEYS, "%d builds for %d keys", total_builds(KEYS), KEYS);
    /* (+ 2: the server's identity, read once by a kcache's first call) */
    KT_CHECK_MSG(gets >= 0 && gets <= 2 * KEYS + 2, "%lld GETs for %d keys: want at most 2 per key", gets, KEYS);
    kt_redis_stop(&R);
}

/* A server that answers every command 90 ms after it reads it, one after the other (a pipeline of
   n GETs takes n x 90 ms): GET is a miss (nil) and counted when it names a value, SET says OK,
   EVAL 1, PTTL -2 (no claim), anything else OK. Speaks just enough RESP for kcache's commands. */
static void slow_serve(int c) {
    static char buf[1 << 16];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(c, buf + have, sizeof buf - have);
        if (n <= 0) return;
        have += (size_t)n;
        for (;;) { /* every whole command in the buffer: *N\r\n then N x $len\r\n bytes\r\n */
            char *p = buf, *end = buf + have, *args[8];
            size_t alen[8];
            long argc, i;
            const char *reply;
            if (have < 4 || *p != '*') break;
            argc = strtol(p + 1, &p, 10);
            if (p + 2 > end || argc < 1) break;
            p += 2;
            for (i = 0; i < argc; i++) {
                long len;
                if (p >= end || *p != '$') break;
                len = strtol(p + 1, &p, 10);
                if (p + 2 + len + 2 > end) break;
                p += 2;
                if (i < 8) args[i] = p, alen[i] = (size_t)len;
                p += len + 2;
            }
            if (i < argc) break; /* not all there yet */
            kt_sleep_ms(90);
            if (alen[0] == 3 && strncasecmp(args[0], "GET", 3) == 0) {
                if (argc > 1 && memmem(args[1], alen[1], "kcache:1:", 9)) __atomic_add_fetch(&S->served, 1, __ATOMIC_SEQ_CST);
                reply = "$-1\r\n";
            } else if (alen[0] == 4 && strncasecmp(args[0], "EVAL", 4) == 0) {
                reply = ":1\r\n";
            } else if (alen[0] == 4 && strncasecmp(args[0], "PTTL", 4) == 0) {
                reply = ":-2\r\n";
            } else {
                reply = "+OK\r\n";
            }
            if (write(c, reply, strlen(reply)) < 0) return;
            memmove(buf, p, (size_t)(end - p));
            have = (size_t)(end - p);
        }
        if (have == sizeof buf) return;
    }
}
static pid_t slow_start(int *port) {
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    pid_t pid;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    fflush(stdout);
    if ((pid = fork()) == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGCHLD, SIG_IGN); /* (its connections' children reap themselves) */
        for (;;) {
            int c = accept(fd, NULL, NULL);
            if (c < 0) continue;
            if (fork() == 0) {
                close(fd);
                slow_serve(c);
                _exit(0);
            }
            close(c);
        }
    }
    close(fd);
    if (pid > 0) kt_track(pid);
    return pid;
}

static void net_many_slow(void) {
    char url[64];
    kcache *kc;
    kcache_stats st;
    int port = 0, ok;
    pid_t srv = slow_start(&port);
    if (srv < 0) { KT_FAILF("the slow server did not start"); return; }
    reset();
    g_build_ms = 1, g_payload = 2000;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    if (!(kc = open_store("slow", url, 100))) { KT_FAILF("open"); kill(srv, SIGKILL); return; }
    ok = run_batch(kc, "slow", 32, 1);
    kcache_get_stats(kc, &st);
    kcache_close(kc);
    kill(srv, SIGKILL);
    waitpid(srv, NULL, 0);
    kt_untrack(srv);
    printf("# net_many_slow: 32 keys, %lld GETs answered, %llu timeouts, breaker opened %llu times\n", S->served,
           (unsigned long long)st.remote_timeouts, (unsigned long long)st.remote_breaker_opens);
    KT_CHECK_MSG(ok == 32 && S->wrong == 0, "%d of 32 payloads right", ok);
    KT_CHECK_MSG(st.remote_breaker_opens >= 1, "the breaker never opened (%llu timeouts)", (unsigned long long)st.remote_timeouts);
    KT_CHECK_MSG(st.remote_timeouts <= 4, "%llu timeouts: want a few (one per exchange)", (unsigned long long)st.remote_timeouts);
    KT_CHECK_MSG(S->served <= 3 * 32, "%lld GETs answered for 32 keys: want at most 3 per key", S->served);
}

/* ---- item 4: the cold start under faults ---- */

/* Runs cmd (tc, ip) through the shell, quietly: 1 when it succeeded. */
static int sh(const char *cmd) {
    char line[600];
    snprintf(line, sizeof line, "%s >/dev/null 2>&1", cmd);
    return system(line) == 0;
}

/* Why the fault groups cannot run here (NULL: they can): root, a namespace of our own, tc. */
static const char *g_no_faults;

/* Moves this process into a network namespace of its own with lo up (MTU 1500, so that tbf's
   burst holds a packet); g_no_faults says what is missing when that cannot be done. */
static void netns_enter(void) {
    if (geteuid() != 0) { g_no_faults = "not root (a network namespace and tc need it)"; return; }
    if (!sh("command -v tc") || !sh("command -v ip")) { g_no_faults = "no tc or ip (iproute2)"; return; }
    if (unshare(CLONE_NEWNET) != 0) { g_no_faults = "unshare(CLONE_NEWNET) refused"; return; }
    if (!sh("ip link set lo up") || !sh("ip link set lo mtu 1500")) { g_no_faults = "lo could not be brought up in the namespace"; return; }
    if (!sh("tc qdisc add dev lo clsact")) { g_no_faults = "no clsact qdisc"; return; }
    if (!sh("tc filter add dev lo egress bpf da bytecode \"1,6 0 0 0\"")) { g_no_faults = "no BPF classifier (cls_bpf)"; }
    sh("tc qdisc del dev lo clsact");
}

/* 5% loss: every IPv4 packet whose IP id is a multiple of 20 (not 0: a SYN's) is dropped on lo's
   egress, by a classic BPF program in direct-action mode (2: TC_ACT_SHOT). The bytes seen there
   start at the Ethernet header lo carries: ethertype at 12, the IP id at 14 + 4. */
#define LOSS_BPF "8,40 0 0 12,21 0 5 2048,40 0 0 18,21 3 0 0,148 0 0 20,21 0 1 0,6 0 0 2,6 0 0 0"
static int fault_loss(int on) {
    if (!on) return sh("tc qdisc del dev lo clsact");
    return sh("tc qdisc add dev lo clsact") && sh("tc filter add dev lo egress bpf da bytecode \"" LOSS_BPF "\"");
}
/* A shared 10 Mbit/s link: tbf on lo. */
static int fault_rate(int on) {
    if (!on) return sh("tc qdisc del dev lo root");
    return sh("tc qdisc add dev lo root tbf rate 10mbit burst 32kbit latency 400ms");
}

static uint32_t g_timeout_ms; /* the remote's timeout in the cold starts (0: the default) */
static int no_fault(int on);
static int g_single;          /* 1: the cold start's processes call kcache_get_or_build per key */

/* kcache_get_or_build for keys 0..n-1 of unit, from key `from` round: the jobs with the right payload. */
static int run_single(kcache *kc, const char *unit, int n, int from) {
    int i, ok = 0;
    for (i = 0; i < n; i++) {
        unsigned id = (unsigned)((from + i) % n);
        kcache_key k;
        const void *d;
        size_t sz;
        kt_key(&k, unit, id);
        if (kcache_get_or_build(kc, &k, net_build, (void *)(uintptr_t)id, &d, &sz) == KCACHE_OK) {
            if (kt_payload_ok(d, sz, g_payload, id)) ok++;
            else __atomic_add_fetch(&S->wrong, 1, __ATOMIC_SEQ_CST);
            kcache_release(kc, d);
        }
        kcache_key_free(&k);
    }
    return ok;
}

/* PROCS processes (stores of their own, one server) start the same batch of KEYS keys at once;
   returns the builds per key x 100, or -1 when the processes failed. */
static int cold_start(const char *url, const char *tag, unsigned threads) {
    pid_t pid[PROCS];
    int gate[2], i, bad = 0, ok = 0;
    if (pipe(gate) != 0) return -1;
    fflush(stdout);
    for (i = 0; i < PROCS; i++) {
        if ((pid[i] = fork()) == 0) {
            char name[64], c;
            kcache *kc;
            close(gate[1]);
            snprintf(name, sizeof name, "%s-%d", tag, i);
            kc = open_store(name, url, g_timeout_ms);
            if (read(gate[0], &c, 1) < 0) _exit(3);
            if (!kc) _exit(2);
            S->done[i] = g_single ? run_single(kc, tag, KEYS, i * KEYS / PROCS) : run_batch(kc, tag, KEYS, threads);
            kcache_close(kc);
            _exit(0);
        }
    }
    close(gate[0]);
    kt_sleep_ms(200);
    close(gate[1]); /* go */
    for (i = 0; i < PROCS; i++) {
        int st = 0;
        if (pid[i] <= 0 || waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
        ok += S->done[i];
    }
    if (bad || ok != PROCS * KEYS || S->wrong) {
        KT_FAILF("%s: %d processes failed, %d of %d jobs right, %d wrong payloads", tag, bad, ok, PROCS * KEYS, S->wrong);
        return -1;
    }
    return total_builds(KEYS) * 100 / KEYS;
}

/* The cold start under a fault: at most 1.1 builds per key. timeout_ms: the remote's (short, so
   that one retransmission, about 200 ms on lo, outlasts it as a lost packet's does a 500 ms
   timeout on a real network); payload: each value's size. */
static void cold_case(const char *tag, int (*fault)(int), uint32_t timeout_ms, size_t payload, int single) {
    kt_redis R;
    int per100;
    long long cmds;
    double t0;
    if (!kt_redis_start(&R, g_root, 1, NULL)) { KT_FAILF("redis-server did not start"); return; }
    reset();
    g_build_ms = 30, g_payload = payload, g_timeout_ms = timeout_ms, g_single = single;
    if (getenv("NF_BUILD_MS")) g_build_ms = (unsigned)atoi(getenv("NF_BUILD_MS"));
    if (getenv("NF_PAYLOAD")) g_payload = (size_t)atoi(getenv("NF_PAYLOAD"));
    if (getenv("NF_TIMEOUT")) g_timeout_ms = (uint32_t)atoi(getenv("NF_TIMEOUT"));
    if (!fault(1)) { KT_FAILF("%s: tc refused the fault", tag); kt_redis_stop(&R); return; }
    t0 = kt_now();
    per100 = cold_start(R.url, tag, 2);
    fault(0);
    cmds = kt_redis_all_calls(&R);
    if (getenv("NF_STATS")) { /* which commands: the cold start's cost, command by command */
        redisReply *rep = kt_redis_cmd(&R, "INFO commandstats");
        if (rep && rep->type == REDIS_REPLY_STRING) printf("%s\n", rep->str);
        if (rep) freeReplyObject(rep);
    }
    if (per100 >= 0) {
        printf("# %s: %d processes x %d keys (%s): %d builds (%.2f per key); %.1f commands per key; %.1f s\n", tag, PROCS, KEYS,
               single ? "kcache_get_or_build" : "the batch, 2 threads", total_builds(KEYS), per100 / 100.0, (double)cmds / KEYS, kt_now() - t0);
        KT_CHECK_MSG(per100 <= 110, "%s: %.2f builds per key, want at most 1.1", tag, per100 / 100.0);
        /* waiters told (item 6): the batch's processes hear which claims were taken and which builds
           ended instead of asking each key's claim (the old batch: 40 commands per key) */
        if (fault == no_fault && !single)
            KT_CHECK_MSG(cmds >= 0 && cmds <= 30 * KEYS, "%s: %.1f commands per key, want at most 30", tag, (double)cmds / KEYS);
    }
    kt_redis_stop(&R);
}
static void net_cold_loss(void) { cold_case("net_cold_loss", fault_loss, 200, 4096, 0); }
static void net_cold_loss_single(void) { cold_case("net_cold_loss_single", fault_loss, 200, 4096, 1); }
static void net_cold_rate(void) { cold_case("net_cold_rate", fault_rate, 100, 8192, 0); }
static int no_fault(int on) { (void)on; return 1; }
static void net_cold_clean(void) { cold_case("net_cold_clean", no_fault, 0, 4096, 0); }
static void net_cold_clean_single(void) { cold_case("net_cold_clean_single", no_fault, 0, 4096, 1); }

/* ---- item 6: waiters share one subscriber ---- */

typedef struct waiter { kcache *kc; int id, ok; } waiter;
static void *waiter_run(void *arg) {
    waiter *w = (waiter *)arg;
    kcache_key k;
    const void *d;
    size_t sz;
    kt_key(&k, "share", (unsigned)w->id);
    if (kcache_get_or_build(w->kc, &k, net_build, (void *)(uintptr_t)(unsigned)w->id, &d, &sz) == KCACHE_OK) {
        w->ok = kt_payload_ok(d, sz, g_payload, (unsigned)w->id);
        kcache_release(w->kc, d);
    }
    kcache_key_free(&k);
    return NULL;
}

/* One process builds 8 keys (800 ms each, 8 threads); another's 8 threads each want one of them
   and wait for its claim: they share the process's one subscriber connection (the old code opened
   one per waiting thread: 8). Counted on the server while they wait. */
static void net_waiters_share(void) {
    kt_redis R;
    pid_t b, a;
    int st = 0, subs, ok = 1;
    if (!kt_redis_start(&R, g_root, 1, NULL)) { KT_FAILF("redis-server did not start"); return; }
    reset();
    g_build_ms = 800, g_payload = 1000;
    fflush(stdout);
    if ((b = fork()) == 0) {
        kcache *kc = open_store("share-b", R.url, 0);
        if (!kc) _exit(2);
        S->done[0] = run_batch(kc, "share", 8, 8);
        kcache_close(kc);
        _exit(0);
    }
    kt_sleep_ms(200);
    if ((a = fork()) == 0) {
        kcache *kc = open_store("share-a", R.url, 0);
        pthread_t th[8];
        waiter w[8];
        int i, good = 0;
        if (!kc) _exit(2);
        for (i = 0; i < 8; i++) w[i].kc = kc, w[i].id = i, w[i].ok = 0, pthread_create(&th[i], NULL, waiter_run, &w[i]);
        for (i = 0; i < 8; i++) pthread_join(th[i], NULL), good += w[i].ok;
        kcache_close(kc);
        _exit(good == 8 ? 0 : 1);
    }
    kt_sleep_ms(350); /* (the waiters wait now: the builds end at 800 ms) */
    subs = kt_redis_subscribers(&R);
    ok &= waitpid(a, &st, 0) == a && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    ok &= waitpid(b, &st, 0) == b && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    printf("# net_waiters_share: 8 threads waiting on another process's 8 builds: %d subscribed connections, %d builds\n", subs,
           total_builds(8));
    KT_CHECK_MSG(ok && S->done[0] == 8 && !S->wrong, "the processes failed or got wrong payloads");
    KT_CHECK_MSG(total_builds(8) == 8, "%d builds of 8 keys", total_builds(8));
    KT_CHECK_MSG(subs >= 0 && subs <= 2, "%d subscribed connections, want at most 2 (one per process)", subs);
    kt_redis_stop(&R);
}

/* NF_ONLY=word in the environment runs only the groups whose name holds it. */
#define NF_RUN(fn) do { if (!getenv("NF_ONLY") || strstr(#fn, getenv("NF_ONLY"))) KT_RUN(fn); } while (0)

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    S = (shared *)mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED || !kt_mktemp(g_root, sizeof g_root, "test-netfaults")) { printf("FAIL setup\n"); return 1; }
    signal(SIGPIPE, SIG_IGN);
    netns_enter(); /* (before any server starts: they all live in the namespace) */
    NF_RUN(net_many_gets);
    NF_RUN(net_many_slow);
    NF_RUN(net_waiters_share);
    NF_RUN(net_cold_clean);
    NF_RUN(net_cold_clean_single);
    if (g_no_faults) {
        printf("skip net_cold_loss, net_cold_loss_single, net_cold_rate: %s\n", g_no_faults);
    } else {
        NF_RUN(net_cold_loss);
        NF_RUN(net_cold_loss_single);
        NF_RUN(net_cold_rate);
    }
    kt_rm_tree(g_root);
    KT_EXIT();
}

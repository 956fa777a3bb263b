/* tests/test_scale.c - a fleet of short-lived clients against a Redis Cluster (issue 35, item 12).
 *
 *   scale_fleet   1,000 client processes (fork; at most 200 alive at once, so that they overlap),
 *                 each opening a memory-only kcache (KCACHE_PERSISTENT=0) with KCACHE_REMOTE at a
 *                 3-node cluster started here (3 masters, no replicas; one node listed, which
 *                 serves every key through MOVED and CLUSTER SLOTS; SCALE_ALL_SEEDS=1 lists all
 *                 three, each then a shard object of its own: see the README's scale section), getting
 *                 the same 16 keys with kcache_get_or_build (each starting at another key), and
 *                 closing: 16 builds in all, 0 wrong payloads, and at most 2.2 connections per
 *                 process per node (INFO stats total_connections_received on every node, all the
 *                 server saw: pooled connections, the claim waits' own, subscriptions). It prints
 *                 the costs the README's scale section computes with: commands (INFO commandstats,
 *                 commands inside scripts included), bytes in and out and connections, per key
 *                 fetched and per process.
 *
 * Counts only, no time asserted. Usage: test_scale [PROCESSES [KEYS]] (default 1000 16); make bench
 * runs it with --bench (2,000 processes), which also prints the rates. Build: make build/test_scale
 * (KCACHE_REDIS; -lhiredis). */
#define KCACHE_IMPLEMENTATION
#define KCACHE_REDIS
#include "kcache.h"
#include "kt.h"
#include "kt_remote.h"

#include <sys/mman.h>
#include <sys/resource.h>

#define SCALE_MAX_KEYS 64
#define SCALE_ALIVE 200       /* children alive at once: overlapping, yet no fork storm on 2 cores */
#define SCALE_PAYLOAD 4096
#define SCALE_BUILD_MS 100    /* a build's time: long enough that others meet its claim */

typedef struct scale_shared {
    int builds[SCALE_MAX_KEYS];
    int wrong, failed, done;
    unsigned long long claimed_elsewhere, remote_errors, remote_timeouts, hits_remote;
} scale_shared;
static scale_shared *S;
static int g_keys = 16;

static int scale_build(void *user, void **out, size_t *out_size) {
    unsigned id = (unsigned)(uintptr_t)user;
    __atomic_add_fetch(&S->builds[id], 1, __ATOMIC_SEQ_CST);
    kt_sleep_ms(SCALE_BUILD_MS);
    *out = KCACHE_MALLOC(SCALE_PAYLOAD);
    if (!*out) return 1;
    kt_payload((unsigned char *)*out, SCALE_PAYLOAD, 7000 + id);
    *out_size = SCALE_PAYLOAD;
    return 0;
}

/* One client: open, 16 get_or_build calls (from key `first` on), close. */
static void scale_client(const char *urls, int first) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_stats st;
    int i;
    alarm(120); /* a hang is a failure (the child dies, the parent counts it), not a stuck test */
    kcache_config_init(&cfg);
    cfg.no_env = 1;
    cfg.persistent = 0;
    cfg.remote = urls;
    cfg.remote_timeout_ms = 3000; /* 2 loaded cores: a slow answer is no broken server */
    cfg.build_wait_ms = 60000;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) { __atomic_add_fetch(&S->failed, 1, __ATOMIC_SEQ_CST); _exit(1); }
    for (i = 0; i < g_keys; i++) {
        unsigned id = (unsigned)((first + i) % g_keys);
        kcache_key k;
        const void *d = NULL;
        size_t n = 0;
        kt_key(&k, "scale", 7000 + id);
        if (kcache_get_or_build(kc, &k, scale_build, (void *)(uintptr_t)id, &d, &n) != KCACHE_OK || !kt_payload_ok(d, n, SCALE_PAYLOAD, 7000 + id))
            __atomic_add_fetch(&S->wrong, 1, __ATOMIC_SEQ_CST);
        if (d) kcache_release(kc, d);
        kcache_key_free(&k);
    }
    kcache_get_stats(kc, &st);
    __atomic_add_fetch(&S->claimed_elsewhere, st.builds_claimed_elsewhere, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&S->remote_errors, st.remote_errors, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&S->remote_timeouts, st.remote_timeouts, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&S->hits_remote, st.hits_remote, __ATOMIC_SEQ_CST);
    kcache_close(kc);
    __atomic_add_fetch(&S->done, 1, __ATOMIC_SEQ_CST);
    _exit(0);
}

/* What a node has counted: connections received, commands (every cmdstat_*:calls), bytes in and out. */
typedef struct node_counts { long long conns, cmds, in, out; } node_counts;
static long long info_field(const char *info, const char *name) {
    const char *at = strstr(info, name);
    return at ? atoll(at + strlen(name)) : -1;
}
static int node_read(const kt_redis *n, node_counts *c) { /* one connection, one command */
    redisReply *r = kt_redis_cmd(n, "INFO all");
    const char *p;
    memset(c, 0, sizeof *c);
    if (!r || r->type != REDIS_REPLY_STRING) { if (r) freeReplyObject(r); return 0; }
    c->conns = info_field(r->str, "total_connections_received:");
    c->in = info_field(r->str, "total_net_input_bytes:");
    c->out = info_field(r->str, "total_net_output_bytes:");
    for (p = r->str; (p = strstr(p, "cmdstat_")) != NULL; p++) {
        const char *calls = strstr(p, ":calls=");
        if (calls) c->cmds += atoll(calls + 7);
    }
    freeReplyObject(r);
    return c->conns >= 0 && c->in >= 0 && c->out >= 0;
}

static char g_root[300];
static int g_procs = 1000, g_bench;

static void scale_fleet(void) {
    kt_redis N[3];
    const char *why;
    node_counts before[3], after[3];
    char urls[1400];
    int i, started = 0, alive = 0, builds = 0, exited_bad = 0;
    long long conns = 0, cmds = 0, bytes = 0, max_conns = 0;
    double t0, wall;
    if ((why = kt_cluster3_start(N, g_root, "maxclients 10000")) != NULL) {
        KT_FAILF("%s", why);
        return;
    }
    if (getenv("SCALE_ALL_SEEDS")) snprintf(urls, sizeof urls, "%s %s %s", N[0].url, N[1].url, N[2].url); /* every node listed */
    else snprintf(urls, sizeof urls, "%s", N[0].url); /* one node listed: it serves every key (MOVED, CLUSTER SLOTS) */
    for (i = 0; i < 3; i++)
        if (!node_read(&N[i], &before[i])) { KT_FAILF("INFO of node %d", i); goto out; }

    t0 = kt_now();
    while (started < g_procs || alive > 0) {
        if (started < g_procs && alive < SCALE_ALIVE) {
            pid_t p;
            fflush(stdout);
            if ((p = fork()) == 0) scale_client(urls, started % g_keys);
            if (p < 0) { KT_FAILF("fork: %s", strerror(errno)); break; }
            started++, alive++;
            continue;
        }
        {
            int st;
            pid_t p = waitpid(-1, &st, 0);
            if (p < 0 && errno == EINTR) continue;
            if (p < 0) break;
            alive--;
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) exited_bad++;
        }
    }
    wall = kt_now() - t0;
    for (i = 0; i < 3; i++)
        if (!node_read(&N[i], &after[i])) { KT_FAILF("INFO of node %d", i); goto out; }

    for (i = 0; i < g_keys; i++) builds += S->builds[i];
    KT_CHECK_MSG(builds == g_keys, "%d builds of %d keys by %d processes (claimed elsewhere: %llu)", builds, g_keys, g_procs, S->claimed_elsewhere);
    KT_CHECK_MSG(S->wrong == 0 && S->failed == 0 && exited_bad == 0 && S->done == g_procs, "%d wrong payloads, %d opens failed, %d processes died, %d of %d done",
                 S->wrong, S->failed, exited_bad, S->done, g_procs);
    for (i = 0; i < 3; i++) {
        long long c = after[i].conns - before[i].conns - 1; /* less the INFO's own connection */
        conns += c;
        if (c > max_conns) max_conns = c;
        cmds += after[i].cmds - before[i].cmds - 1;
        bytes += (after[i].in - before[i].in) + (after[i].out - before[i].out);
        printf("# node %d: %lld connections (%.2f per process), %lld commands, %lld bytes in, %lld out\n", i, c, (double)c / g_procs,
               after[i].cmds - before[i].cmds - 1, after[i].in - before[i].in, after[i].out - before[i].out);
    }
    KT_CHECK_MSG((double)max_conns / g_procs <= 2.2, "%.2f connections per process on the busiest node (at most 2.2)", (double)max_conns / g_procs);
    printf("# %d processes x %d keys of %d bytes: %d builds, %llu remote hits, %llu builds of keys claimed elsewhere, %llu remote errors, %llu timeouts\n",
           g_procs, g_keys, SCALE_PAYLOAD, builds, S->hits_remote, S->claimed_elsewhere, S->remote_errors, S->remote_timeouts);
    printf("# per process: %.2f connections per node, %.1f commands, %.0f bytes; per key fetched: %.2f commands, %.0f bytes\n",
           (double)conns / 3 / g_procs, (double)cmds / g_procs, (double)bytes / g_procs, (double)cmds / ((double)g_procs * g_keys),
           (double)bytes / ((double)g_procs * g_keys));
    if (g_bench)
        printf("%-44s %8.2f s  %8.0f processes/s  %8.0f keys/s  %8.0f commands/s\n", "fleet: processes x keys on a 3-node cluster", wall,
               g_procs / wall, (double)g_procs * g_keys / wall, (double)cmds / wall);
out:
    for (i = 0; i < 3; i++) kt_redis_stop(&N[i]);
}

int main(int argc, char **argv) {
    struct rlimit rl;
    int a = 1;
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) g_bench = 1, g_procs = 2000, a++;
    if (argc > a) g_procs = atoi(argv[a]);
    if (argc > a + 1) g_keys = atoi(argv[a + 1]);
    if (g_procs < 1 || g_keys < 1 || g_keys > SCALE_MAX_KEYS) { fprintf(stderr, "usage: test_scale [--bench] [PROCESSES [KEYS (1-64)]]\n"); return 2; }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) { /* the servers: a few thousand clients each */
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (!kt_mktemp(g_root, sizeof g_root, "scale")) { printf("FAIL setup: mkdtemp\n"); return 1; }
    S = (scale_shared *)mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED) { printf("FAIL setup: mmap\n"); return 1; }
    KT_RUN(scale_fleet);
    kt_rm_tree(g_root);
    KT_EXIT();
}

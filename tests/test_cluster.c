/* tests/test_cluster.c - the Redis backend against real Redis Clusters started here (issue 35, items
 * 1-3): failover that heals, a breaker per node, TLS clusters as they are deployed.
 *
 *   cluster_failover     3 masters + 3 replicas (cluster-node-timeout 2000): a reader process
 *                        listing only the first master reads 60 keys from 3 threads; the listed
 *                        master is SIGKILLed, then another: once its replica is promoted every key
 *                        written (and replicated) before the kill is a hit again, the slot map read
 *                        from a node that is alive (the listed one is dead); a slot half-migrated
 *                        (MIGRATING/IMPORTING, its key MIGRATEd) is read through -ASK and ASKING,
 *                        counted by the importing node's INFO commandstats
 *   cluster_node_breaker 3 masters, no replicas: one is SIGKILLed (or SIGSTOPped: a timeout); every
 *                        key of the other two keeps hitting, and the shard's breaker stays closed;
 *                        kcache-top --json and --prometheus show the dead node's breaker open in
 *                        its node row (the node label), the shard's and the live nodes' closed
 *   cluster_tls_name     a cluster over TLS whose certificate names kcache-cluster.test and
 *                        localhost (DNS names only) while its nodes announce 127.0.0.1: listed by
 *                        IP, nothing verifies without KCACHE_REMOTE_TLS_NAME and every key hits with
 *                        it; listed as rediss://localhost every node is verified against localhost;
 *                        one node whose certificate is of a CA the client does not trust: the other
 *                        nodes' keys hit and the shard's breaker stays closed
 *   cluster_waiters_share (35.6) 8 threads of a process waiting on another's 8 builds, keys on
 *                        every node: at most one subscribed connection per process on each node
 *                        (sharded pub/sub, SSUBSCRIBE on the key's node; old: 9 on the listed
 *                        node, one per waiting thread); the releases wake them: 8 builds
 *   cluster_waiters_failover (35.6) 3 masters + 3 replicas: a master holding keys waited for
 *                        fails over to its replica (CLUSTER FAILOVER) while 8 threads wait: it
 *                        ends their subscriptions (sunsubscribe), they look again and subscribe on
 *                        the new master; all wake: 8 builds
 *   cluster_cold_commands (35.6) the batch's cold start, 8 processes x 64 keys: at most 38
 *                        commands per key summed over the nodes (INFO commandstats; old: 41.5-42.4)
 *
 * Counts, never times: the times printed ("# ...") are for people. Usage: test_cluster [KCACHE_TOP]
 * (default build/kcache-top). Build: make build/test_cluster
 * (KCACHE_REDIS, KCACHE_TLS_OPENSSL; -lhiredis -lssl -lcrypto). */
#define KCACHE_IMPLEMENTATION
#define KCACHE_REDIS
#define KCACHE_TLS_OPENSSL
#include "kcache.h"
#include "kt.h"
#include "kt_remote.h"

#include <pthread.h>
#include <sys/mman.h>

static char g_root[300];
static const char *g_top = "build/kcache-top";
#define NKEYS 60
#define PAYLOAD 700

static const int g_range[3][2] = {{0, 5460}, {5461, 10922}, {10923, 16383}};

/* ---- a cluster of masters (the slots split in three) and replicas, started here ---- */

typedef struct cl {
    kt_redis n[6];
    int nn, masters;
    char id[6][64];
    int tls_port[6];
} cl;

static int reply_has(redisReply *r, const char *what) {
    int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, what) != NULL;
    if (r) freeReplyObject(r);
    return ok;
}

/* Whether node i answers CLUSTER INFO with state ok and all nodes known. */
static int node_ok(cl *c, int i) {
    char known[64];
    redisReply *r = kt_redis_cmd(&c->n[i], "CLUSTER INFO");
    int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
    snprintf(known, sizeof known, "cluster_known_nodes:%d", c->nn);
    ok = ok && strstr(r->str, known);
    if (r) freeReplyObject(r);
    return ok;
}

/* Starts masters + replicas nodes (replica i of master i), extra config lines for every node; 1 when
   the cluster is whole (state ok everywhere, every replica's link up). */
/* kt_redis_start, not inlined: gcc -O1 inlined into cluster_start2 takes r->sock and r->dir, one
   struct's members, for a possible overlap (-Wrestrict) */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int node_start(kt_redis *r, const char *conf) { return kt_redis_start(r, g_root, 1, conf); }
static int cluster_start2(cl *c, int masters, int replicas, const char *extra, const char *extra2);
static int cluster_start(cl *c, int masters, int replicas, const char *extra) { return cluster_start2(c, masters, replicas, extra, NULL); }
/* The same, node 2 with extra2 in place of extra (when not NULL). */
static int cluster_start2(cl *c, int masters, int replicas, const char *extra, const char *extra2) {
    char conf[sizeof c->n[0].extra];
    int i, tries, ok = 0;
    memset(c, 0, sizeof *c);
    c->masters = masters;
    for (i = 0; i < masters + replicas; i++) {
        int cport = kt_free_port();
        char tls[32] = "";
        const char *x = i == 2 && extra2 ? extra2 : extra;
        c->tls_port[i] = x && strstr(x, "tls-cert-file") ? kt_free_port() : 0;
        if (c->tls_port[i]) snprintf(tls, sizeof tls, "tls-port %d\n", c->tls_port[i]);
        if (snprintf(conf, sizeof conf, "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 2000\ncluster-port %d\n%s%s", cport,
                     tls, x ? x : "") >= (int)sizeof conf ||
            !node_start(&c->n[i], conf)) {
            KT_FAILF("cluster node %d did not start", i);
            return 0;
        }
        c->nn = i + 1;
        {
            redisReply *r = kt_redis_cmd(&c->n[i], "CLUSTER MYID");
            snprintf(c->id[i], sizeof c->id[i], "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "?");
            if (r) freeReplyObject(r);
        }
    }
    for (i = 0; i < masters; i++) {
        redisReply *r = kt_redis_cmd(&c->n[i], "CLUSTER ADDSLOTSRANGE %d %d", g_range[i][0], g_range[i][1]);
        if (r) freeReplyObject(r);
    }
    for (i = 1; i < c->nn; i++) {
        char line[64];
        redisReply *r;
        const char *p = strstr(c->n[i].extra, "cluster-port ");
        int cport = p ? atoi(p + 13) : 0;
        snprintf(line, sizeof line, "%d", cport);
        r = kt_redis_cmd(&c->n[0], "CLUSTER MEET 127.0.0.1 %d %s", c->n[i].port, line);
        if (r) freeReplyObject(r);
    }
    for (tries = 0; tries < 400; tries++) { /* every node knows every other */
        char known[64];
        snprintf(known, sizeof known, "cluster_known_nodes:%d", c->nn);
        for (ok = 0, i = 0; i < c->nn; i++) ok += reply_has(kt_redis_cmd(&c->n[i], "CLUSTER INFO"), known);
        if (ok == c->nn) break;
        kt_sleep_ms(50);
    }
    for (i = masters; i < c->nn; i++) {
        redisReply *r = kt_redis_cmd(&c->n[i], "CLUSTER REPLICATE %s", c->id[i - masters]);
        if (r) freeReplyObject(r);
    }
    for (tries = 0; tries < 400; tries++) {
        for (ok = 0, i = 0; i < c->nn; i++)
            ok += node_ok(c, i) && (i < masters || reply_has(kt_redis_cmd(&c->n[i], "INFO replication"), "master_link_status:up"));
        if (ok == c->nn) return 1;
        kt_sleep_ms(50);
    }
    KT_FAILF("the cluster did not form (%d of %d nodes ready)", ok, c->nn);
    return 0;
}
static void cluster_stop(cl *c) {
    int i;
    for (i = 0; i < c->nn; i++) kt_redis_stop(&c->n[i]);
}

/* The entry name of key id (kt_key(.., "cl", id)), and the master (0..2) whose slots hold it. */
static void name_of(unsigned id, char out[33]) {
    kcache_key k;
    kt_key(&k, "cl", id);
    kcache_hash_hex(kcache_key_digest(&k), out);
    kcache_key_free(&k);
}
static long long slot_of(cl *c, int via, unsigned id) {
    char name[33];
    name_of(id, name);
    return kt_redis_int(&c->n[via], "CLUSTER KEYSLOT kcache:1:%s", name);
}
static int master_of(cl *c, int via, unsigned id) {
    long long s = slot_of(c, via, id);
    int i;
    for (i = 0; i < 3; i++)
        if (s >= g_range[i][0] && s <= g_range[i][1]) return i;
    return -1;
}

static kcache *open_reader(const char *url, uint32_t timeout_ms) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.mem_entries = 1; /* every pass over the keys asks the remote */
    cfg.remote = url;
    if (timeout_ms) cfg.remote_timeout_ms = timeout_ms;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return NULL;
    return kc;
}
/* Puts keys 0..NKEYS-1 through url: how many were stored on the remote. */
static int put_keys(const char *url) {
    kcache *kc = open_reader(url, 2000);
    kcache_stats st;
    unsigned i;
    if (!kc) return -1;
    for (i = 0; i < NKEYS; i++) kt_put(kc, "cl", i, i, PAYLOAD);
    kcache_get_stats(kc, &st);
    kcache_close(kc);
    return (int)st.remote_puts;
}
/* One pass over the keys whose master is `only` (-1: every key); of them, hits into *hits, wrong
   payloads into *wrong; returns how many were asked. */
static int pass(kcache *kc, const int *owner, int only, int *hits, int *wrong) {
    unsigned i;
    int asked = 0;
    *hits = 0;
    for (i = 0; i < NKEYS; i++) {
        int r;
        if (only >= 0 && owner[i] != only) continue;
        asked++;
        r = kt_get(kc, "cl", i, i, PAYLOAD);
        *hits += r == 1;
        *wrong += r < 0;
    }
    return asked;
}

/* ---- cluster_failover ---- */

typedef struct loadgen {
    kcache *kc;
    int stop; /* (m) */
    int wrong;
    unsigned long hits, misses;
    pthread_mutex_t m;
} loadgen;
static int load_stopped(loadgen *g) {
    int stop;
    pthread_mutex_lock(&g->m);
    stop = g->stop;
    pthread_mutex_unlock(&g->m);
    return stop;
}
static void *load_thread(void *arg) {
    loadgen *g = (loadgen *)arg;
    unsigned i = 0;
    int wrong = 0;
    unsigned long h = 0, m = 0;
    while (!load_stopped(g)) {
        unsigned id = i++ % NKEYS;
        int r = kt_get(g->kc, "cl", id, id, PAYLOAD);
        h += r == 1, m += r == 0, wrong += r < 0;
        if (r == 0) kt_sleep_ms(2); /* a miss costs nothing: keep the load near the hits' */
    }
    pthread_mutex_lock(&g->m);
    g->hits += h, g->misses += m, g->wrong += wrong;
    pthread_mutex_unlock(&g->m);
    return NULL;
}

/* Whether node i says it is a master now (ROLE). */
static int is_master(cl *c, int i) {
    redisReply *r = kt_redis_cmd(&c->n[i], "ROLE");
    int m = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[0]->str, "master") == 0;
    if (r) freeReplyObject(r);
    return m;
}

/* Kills master `victim` under the load, waits for its replica's promotion, then passes over every
   key until one hits all NKEYS (a watchdog of 20 s: healing takes node-timeout + a few hundred
   ms). Returns the hits of that last pass. */
static int kill_and_heal(cl *c, kcache *kc, int victim, const char *what) {
    int replica = victim + c->masters, hits = 0, wrong = 0, passes = 0;
    double t0, tp = 0, th = 0;
    kt_redis_kill(&c->n[victim]);
    t0 = kt_now();
    while (kt_now() - t0 < 20 && !is_master(c, replica)) kt_sleep_ms(50);
    if (!is_master(c, replica)) { KT_FAILF("%s: the replica was not promoted", what); return 0; }
    tp = kt_now();
    while (kt_now() - tp < 20) {
        passes++;
        pass(kc, NULL, -1, &hits, &wrong);
        if (hits == NKEYS) break;
        kt_sleep_ms(20);
    }
    th = kt_now();
    KT_CHECK_MSG(wrong == 0, "%s: %d wrong payloads", what, wrong);
    printf("# cluster_failover %s: promoted %.2f s after the kill, all %d keys hit %.2f s after that (%d passes)\n", what, tp - t0, hits, th - tp,
           passes);
    return hits;
}

static void cluster_failover(void) {
    cl c;
    kcache *kc = NULL;
    loadgen g;
    pthread_t th[3];
    int i, hits, wrong = 0, stored;
    if (!cluster_start(&c, 3, 3, NULL)) { cluster_stop(&c); return; }
    stored = put_keys(c.n[0].url);
    KT_CHECK_MSG(stored == NKEYS, "%d of %d keys stored", stored, NKEYS);
    for (i = 0; i < 400; i++) { /* replicated: each replica holds what its master holds */
        int m, same = 0;
        for (m = 0; m < 3; m++) same += kt_redis_int(&c.n[m], "DBSIZE") == kt_redis_int(&c.n[m + 3], "DBSIZE");
        if (same == 3) break;
        kt_sleep_ms(25);
    }
    if (!(kc = open_reader(c.n[0].url, 0))) { KT_FAILF("kcache_open"); cluster_stop(&c); return; }
    pass(kc, NULL, -1, &hits, &wrong);
    KT_CHECK_MSG(hits == NKEYS, "before any kill: %d of %d hits", hits, NKEYS);

    memset(&g, 0, sizeof g);
    g.kc = kc;
    pthread_mutex_init(&g.m, NULL);
    for (i = 0; i < 3; i++) pthread_create(&th[i], NULL, load_thread, &g);
    kt_sleep_ms(200);
    hits = kill_and_heal(&c, kc, 0, "the listed master");
    KT_CHECK_MSG(hits == NKEYS, "the listed master SIGKILLed: after its replica's promotion %d of %d keys hit", hits, NKEYS);
    hits = kill_and_heal(&c, kc, 1, "another master");
    KT_CHECK_MSG(hits == NKEYS, "another master SIGKILLed: after its replica's promotion %d of %d keys hit", hits, NKEYS);
    pthread_mutex_lock(&g.m);
    g.stop = 1;
    pthread_mutex_unlock(&g.m);
    for (i = 0; i < 3; i++) pthread_join(th[i], NULL);
    KT_CHECK_MSG(g.wrong == 0, "the load threads saw %d wrong payloads", g.wrong);
    printf("# cluster_failover under 3 threads: %lu hits, %lu misses\n", g.hits, g.misses);

    { /* ASK: key 0's slot half-way from its master to another; the key moved already */
        int src = -1, dst, m, asked = 0, node_of[3];
        long long slot = slot_of(&c, 2, 0), before, after;
        char name[33];
        for (m = 0; m < 3; m++) node_of[m] = is_master(&c, m + 3) ? m + 3 : m; /* 0 and 1 failed over */
        src = node_of[master_of(&c, 2, 0)];
        dst = node_of[(master_of(&c, 2, 0) + 1) % 3];
        name_of(0, name);
        {
            redisReply *r1 = kt_redis_cmd(&c.n[dst], "CLUSTER SETSLOT %lld IMPORTING %s", slot, c.id[src]);
            redisReply *r2 = kt_redis_cmd(&c.n[src], "CLUSTER SETSLOT %lld MIGRATING %s", slot, c.id[dst]);
            redisReply *r3 = kt_redis_cmd(&c.n[src], "MIGRATE 127.0.0.1 %d kcache:1:%s 0 5000", c.n[dst].port, name);
            KT_CHECK_MSG(r1 && r2 && r3 && r3->type == REDIS_REPLY_STATUS, "migrating the slot: %s", r3 && r3->str ? r3->str : "no reply");
            if (r1) freeReplyObject(r1);
            if (r2) freeReplyObject(r2);
            if (r3) freeReplyObject(r3);
        }
        before = kt_redis_calls(&c.n[dst], "asking");
        for (i = 0; i < 3; i++) { /* key 0, then another (the memory tier holds one entry) */
            asked += kt_get(kc, "cl", 0, 0, PAYLOAD) == 1;
            kt_get(kc, "cl", 1, 1, PAYLOAD);
        }
        after = kt_redis_calls(&c.n[dst], "asking");
        KT_CHECK_MSG(asked == 3, "the key in a migrating slot: %d of 3 hits", asked);
        KT_CHECK_MSG(before >= 0 && after - before >= 3, "ASKING sent %lld times for 3 lookups answered -ASK", after - before);
    }
    kcache_close(kc);
    pthread_mutex_destroy(&g.m);
    cluster_stop(&c);
}

/* ---- cluster_node_breaker ---- */

/* What `kcache-top -b MODE DIR` prints (NUL-terminated, cut at cap), or "" when it could not run. */
static void top_output(const char *mode, const char *dir, char *out, size_t cap) {
    char cmd[800];
    FILE *f;
    size_t n = 0;
    snprintf(cmd, sizeof cmd, "'%s' -b %s '%s' 2>&1", g_top, mode, dir);
    out[0] = 0;
    if (!(f = popen(cmd, "r"))) return;
    n = fread(out, 1, cap - 1, f);
    out[n] = 0;
    pclose(f);
}
/* The value after `"field":` in the JSON object of node `node` (its first occurrence after it), or -1. */
static int json_node_field(const char *json, const char *node, const char *field) {
    char want[120];
    const char *p;
    snprintf(want, sizeof want, "\"node\":\"%s\"", node);
    if (!(p = strstr(json, want))) return -1;
    snprintf(want, sizeof want, "\"%s\":", field);
    if (!(p = strstr(p, want))) return -1;
    return atoi(p + strlen(want));
}

static void cluster_node_breaker(void) {
    cl c;
    kcache *kc = NULL;
    int owner[NKEYS], i, hits, wrong = 0, asked, stored, round;
    kcache_remote_shard sh;
    kcache_config cfg;
    char sdir[400], node[64], line[300];
    static char out[1 << 18];
    if (!cluster_start(&c, 3, 0, "cluster-require-full-coverage no\n")) { cluster_stop(&c); return; }
    stored = put_keys(c.n[0].url);
    KT_CHECK_MSG(stored == NKEYS, "%d of %d keys stored", stored, NKEYS);
    for (i = 0; i < NKEYS; i++) owner[i] = master_of(&c, 0, (unsigned)i);
    snprintf(sdir, sizeof sdir, "%s/stats", g_root); /* a memory-only reader publishing there, for kcache-top */
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.mem_entries = 1;
    cfg.remote = c.n[0].url;
    cfg.remote_timeout_ms = 300;
    cfg.stats_dir = sdir;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) { KT_FAILF("kcache_open"); cluster_stop(&c); return; }
    pass(kc, NULL, -1, &hits, &wrong);
    KT_CHECK_MSG(hits == NKEYS, "before the kill: %d of %d hits", hits, NKEYS);

    kt_redis_kill(&c.n[2]); /* dead: refused connections */
    for (round = 0; round < 2; round++) {
        int m;
        for (m = 0; m < 2; m++) {
            asked = pass(kc, owner, m, &hits, &wrong);
            KT_CHECK_MSG(hits == asked, "master 2 dead, pass %d: %d of master %d's %d keys hit", round, hits, m, asked);
        }
        pass(kc, owner, 2, &hits, &wrong);
        KT_CHECK_MSG(hits == 0, "the dead master's keys: %d hits", hits);
    }
    KT_CHECK(kcache_get_remote_shards(kc, &sh, 1) == 1 && !sh.open);
    /* the dead node's breaker in kcache-top's node rows; the shard's and the live nodes' closed */
    snprintf(node, sizeof node, "127.0.0.1:%d", c.n[2].port);
    top_output("--json", sdir, out, sizeof out);
    KT_CHECK_MSG(json_node_field(out, node, "remote_breaker_open") == 1, "kcache-top --json, node %s: %.2000s", node, out);
    KT_CHECK_MSG(json_node_field(out, node, "error") > 0, "kcache-top --json: no errors of node %s", node);
    snprintf(node, sizeof node, "127.0.0.1:%d", c.n[0].port);
    KT_CHECK_MSG(json_node_field(out, node, "remote_breaker_open") == 0 && json_node_field(out, node, "ok") > 0, "kcache-top --json, node %s: %.2000s",
                 node, out);
    KT_CHECK_MSG(strstr(out, "\"node\":\"\",\"remote_calls\"") && strstr(out, "\"remote_breaker_open\":0"), "the shard's row: %.2000s", out);
    top_output("--prometheus", sdir, out, sizeof out);
    snprintf(line, sizeof line, "kcache_remote_breaker_open{shard=\"redis://127.0.0.1:%d/0\",node=\"127.0.0.1:%d\"} 1\n", c.n[0].port, c.n[2].port);
    KT_CHECK_MSG(strstr(out, line) != NULL, "kcache-top --prometheus has no %s", line);
    snprintf(line, sizeof line, "kcache_remote_breaker_open{shard=\"redis://127.0.0.1:%d/0\",node=\"\"} 0\n", c.n[0].port);
    KT_CHECK_MSG(strstr(out, line) != NULL, "kcache-top --prometheus has no %s", line);

    kill(c.n[1].pid, SIGSTOP); /* hung: timeouts */
    for (round = 0; round < 2; round++) {
        asked = pass(kc, owner, 0, &hits, &wrong); /* (first: the memory tier's one entry is master 0's) */
        KT_CHECK_MSG(hits == asked, "master 1 stopped, master 2 dead, pass %d: %d of master 0's %d keys hit", round, hits, asked);
        pass(kc, owner, 1, &hits, &wrong);
        KT_CHECK_MSG(hits == 0, "the stopped master's keys: %d hits", hits);
    }
    asked = pass(kc, owner, 0, &hits, &wrong);
    KT_CHECK_MSG(hits == asked, "after the stopped master's timeouts: %d of master 0's %d keys hit", hits, asked);
    kill(c.n[1].pid, SIGCONT);
    KT_CHECK(kcache_get_remote_shards(kc, &sh, 1) == 1 && !sh.open);
    KT_CHECK_MSG(wrong == 0, "%d wrong payloads", wrong);
    kcache_close(kc);
    cluster_stop(&c);
}

/* ---- cluster_tls_name ---- */

/* Two CAs (ca, ca2; both.crt holds the two) and a certificate of each (node, node2) for the DNS
   names kcache-cluster.test and localhost (no IP), for servers and for the cluster bus (client
   too), in dir. 0: openssl failed. */
static int tls_certs(char *dir, size_t cap) {
    char cmd[3000];
    snprintf(dir, cap, "%s/tls", g_root);
    mkdir(dir, 0700);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && exec >openssl.log 2>&1 && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=kt-ca && "
             "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout node.key -out node.csr -subj /CN=kcache-cluster.test && "
             "printf 'subjectAltName=DNS:kcache-cluster.test,DNS:localhost\\nextendedKeyUsage=serverAuth,clientAuth\\n' > node.ext && "
             "openssl x509 -req -in node.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out node.crt -days 2 -extfile node.ext && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca2.key -out ca2.crt -days 2 -subj /CN=kt-ca2 && "
             "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout node2.key -out node2.csr -subj /CN=kcache-cluster.test && "
             "openssl x509 -req -in node2.csr -CA ca2.crt -CAkey ca2.key -CAcreateserial -out node2.crt -days 2 -extfile node.ext && "
             "cat ca.crt ca2.crt > both.crt",
             dir);
    return system(cmd) == 0;
}

/* Keys first..first+NKEYS-1 put through one kcache on url and read through another: the hits (of
   the keys whose master is not `skip`, when skip >= 0); *open: the shard's breaker after it. */
static int tls_keys_but(cl *c, const char *url, const char *ca, unsigned first, int skip, int *open) {
    kcache_config cfg;
    kcache *a = NULL, *b = NULL;
    unsigned i;
    int hits = 0;
    kcache_config_init(&cfg); /* (KCACHE_REMOTE_TLS_NAME from the environment) */
    cfg.persistent = 0;
    cfg.mem_entries = 1;
    cfg.remote = url;
    cfg.remote_ca = ca;
    cfg.remote_timeout_ms = 2000;
    if (kcache_open(&a, &cfg) != KCACHE_OK || kcache_open(&b, &cfg) != KCACHE_OK) {
        if (a) kcache_close(a);
        return -1;
    }
    for (i = first; i < first + NKEYS; i++) kt_put(a, "cl", i, i, PAYLOAD);
    for (i = first; i < first + NKEYS; i++) hits += (skip < 0 || master_of(c, 0, i) != skip) && kt_get(b, "cl", i, i, PAYLOAD) == 1;
    if (open) {
        kcache_remote_shard sh;
        *open = kcache_get_remote_shards(b, &sh, 1) == 1 ? sh.open : -1;
    }
    kcache_close(a);
    kcache_close(b);
    return hits;
}
static int tls_keys(const char *url, const char *ca, unsigned first) { return tls_keys_but(NULL, url, ca, first, -1, NULL); }

static void cluster_tls_name(void) {
    char dir[310], extra[1400], extra2[1400], ca[330], ca1[330], url[300];
    cl c;
    int hits, open = -1, others = 0;
    unsigned i;
    if (!tls_certs(dir, sizeof dir)) { printf("skip cluster_tls_name: openssl could not make the certificates (see %s/openssl.log)\n", dir); return; }
    snprintf(ca, sizeof ca, "%s/both.crt", dir); /* node 2's certificate is of the second CA */
    snprintf(ca1, sizeof ca1, "%s/ca.crt", dir);
    snprintf(extra, sizeof extra, "tls-cert-file %s/node.crt\ntls-key-file %s/node.key\ntls-ca-cert-file %s\ntls-auth-clients no\ntls-cluster yes\n",
             dir, dir, ca);
    snprintf(extra2, sizeof extra2, "tls-cert-file %s/node2.crt\ntls-key-file %s/node2.key\ntls-ca-cert-file %s\ntls-auth-clients no\ntls-cluster yes\n",
             dir, dir, ca);
    if (!cluster_start2(&c, 3, 0, extra, extra2)) { cluster_stop(&c); return; }

    unsetenv("KCACHE_REMOTE_TLS_NAME");
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", c.tls_port[0]);
    hits = tls_keys(url, ca, 0);
    KT_CHECK_MSG(hits == 0, "listed by IP, no KCACHE_REMOTE_TLS_NAME: %d hits (a certificate without the IP verifies nothing)", hits);
    setenv("KCACHE_REMOTE_TLS_NAME", "kcache-cluster.test", 1);
    hits = tls_keys(url, ca, 100);
    KT_CHECK_MSG(hits == NKEYS, "listed by IP, KCACHE_REMOTE_TLS_NAME=kcache-cluster.test: %d of %d hits", hits, NKEYS);
    setenv("KCACHE_REMOTE_TLS_NAME", "other.test", 1);
    hits = tls_keys(url, ca, 200);
    KT_CHECK_MSG(hits == 0, "KCACHE_REMOTE_TLS_NAME=other.test: %d hits", hits);
    unsetenv("KCACHE_REMOTE_TLS_NAME");
    snprintf(url, sizeof url, "rediss://localhost:%d", c.tls_port[1]);
    hits = tls_keys(url, ca, 300);
    KT_CHECK_MSG(hits == NKEYS, "listed as rediss://localhost, nodes announcing 127.0.0.1: %d of %d hits", hits, NKEYS);
    /* one node whose certificate does not verify (the client trusts the first CA only): the other
       nodes' keys hit, the shard's breaker stays closed */
    for (i = 400; i < 400 + NKEYS; i++) others += master_of(&c, 0, i) != 2;
    hits = tls_keys_but(&c, url, ca1, 400, 2, &open);
    KT_CHECK_MSG(hits == others && open == 0, "node 2 unverifiable: %d of the other nodes' %d keys hit, the shard's breaker %d", hits, others, open);
    cluster_stop(&c);
}

/* ---- waiters told: sharded pub/sub (issue 35.6) ---- */

/* Counted across the processes of a test (a shared page). */
typedef struct told_shared {
    int builds[64];
    int wrong;
} told_shared;
static told_shared *TS;
static unsigned g_told_ms; /* a build's time */

static int told_build(void *user, void **out, size_t *out_size) {
    unsigned id = (unsigned)(uintptr_t)user;
    unsigned char *p = (unsigned char *)malloc(PAYLOAD);
    __atomic_add_fetch(&TS->builds[id % 64], 1, __ATOMIC_SEQ_CST);
    kt_sleep_ms(g_told_ms);
    if (!p) return 1;
    kt_payload(p, PAYLOAD, id);
    *out = p;
    *out_size = PAYLOAD;
    return 0;
}
static kcache *open_told(const char *url) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.remote = url;
    cfg.remote_timeout_ms = 2000; /* (2 loaded cores: a slow answer is no broken node) */
    cfg.build_wait_ms = 60000;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return NULL;
    return kc;
}
/* A batch of keys first..first+n-1 on `threads` threads: the jobs with the right payload. */
static int told_batch(kcache *kc, unsigned first, int n, unsigned threads) {
    kcache_job jobs[64];
    kcache_key keys[64];
    int i, good = 0;
    for (i = 0; i < n; i++) {
        kt_key(&keys[i], "cl", first + (unsigned)i);
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].key = &keys[i], jobs[i].build = told_build, jobs[i].user = (void *)(uintptr_t)(first + (unsigned)i);
    }
    kcache_get_or_build_many(kc, jobs, (size_t)n, threads);
    for (i = 0; i < n; i++) {
        if (jobs[i].status == KCACHE_OK) {
            if (kt_payload_ok(jobs[i].data, jobs[i].size, PAYLOAD, first + (unsigned)i)) good++;
            else __atomic_add_fetch(&TS->wrong, 1, __ATOMIC_SEQ_CST);
            kcache_release(kc, jobs[i].data);
        }
        kcache_key_free(&keys[i]);
    }
    return good;
}
typedef struct told_waiter { kcache *kc; unsigned id; int ok; } told_waiter;
static void *told_wait(void *arg) {
    told_waiter *w = (told_waiter *)arg;
    kcache_key k;
    const void *d;
    size_t n;
    kt_key(&k, "cl", w->id);
    if (kcache_get_or_build(w->kc, &k, told_build, (void *)(uintptr_t)w->id, &d, &n) == KCACHE_OK) {
        w->ok = kt_payload_ok(d, n, PAYLOAD, w->id);
        kcache_release(w->kc, d);
    }
    kcache_key_free(&k);
    return NULL;
}

/* Forks the two processes of a waiters' test on the cluster listed by url: *builder builds keys
   first..first+7 (a batch on 8 threads), then, gap_ms later, *waiters has 8 threads each wait for
   one of them (kcache_get_or_build). Each exits 0 when its 8 payloads were right. */
static void told_start(const char *url, unsigned first, unsigned gap_ms, pid_t *builder, pid_t *waiters) {
    int i;
    fflush(stdout);
    if ((*builder = fork()) == 0) {
        kcache *kc = open_told(url);
        int good = kc ? told_batch(kc, first, 8, 8) : 0;
        if (kc) kcache_close(kc);
        _exit(good == 8 ? 0 : 1);
    }
    kt_sleep_ms(gap_ms);
    if ((*waiters = fork()) == 0) {
        kcache *kc = open_told(url);
        pthread_t th[8];
        told_waiter w[8];
        int good = 0;
        if (!kc) _exit(2);
        for (i = 0; i < 8; i++) w[i].kc = kc, w[i].id = first + (unsigned)i, w[i].ok = 0, pthread_create(&th[i], NULL, told_wait, &w[i]);
        for (i = 0; i < 8; i++) pthread_join(th[i], NULL), good += w[i].ok;
        kcache_close(kc);
        _exit(good == 8 ? 0 : 1);
    }
}

/* 3 masters: one process builds 8 keys (a batch on 8 threads, 800 ms each; their slots on every
   node); another's 8 threads each want one of them and wait for its claim: on each node the
   processes hold at most one subscribed connection each (SSUBSCRIBE on the node of the key's
   slot; the old code SUBSCRIBEd a connection per waiting thread on the listed node: 8 there),
   and the releases wake them: 8 builds, every payload right. */
static void cluster_waiters_share(void) {
    cl c;
    pid_t b, a;
    int i, st = 0, ok = 1, subs[3], nodes_used = 0, owner[8];
    unsigned first = 1000;
    if (!cluster_start(&c, 3, 0, NULL)) { cluster_stop(&c); return; }
    memset(TS, 0, sizeof *TS);
    g_told_ms = 800;
    for (i = 0; i < 8; i++) owner[i] = master_of(&c, 0, first + (unsigned)i);
    for (i = 0; i < 3; i++) { int k, has = 0; for (k = 0; k < 8; k++) has |= owner[k] == i; nodes_used += has; }
    told_start(c.n[0].url, first, 250, &b, &a);
    for (i = 0; i < 3; i++) subs[i] = 0;
    for (;;) { /* the most seen at once on each node, every 50 ms while the waiters run */
        pid_t done = waitpid(a, &st, WNOHANG);
        for (i = 0; i < 3; i++) {
            int now = kt_redis_subscribers(&c.n[i]);
            if (now > subs[i] || now < 0) subs[i] = now < 0 ? 99 : now;
        }
        if (done == a || done < 0) {
            ok &= done == a && WIFEXITED(st) && WEXITSTATUS(st) == 0;
            break;
        }
        kt_sleep_ms(50);
    }
    ok &= waitpid(b, &st, 0) == b && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    {
        int builds = 0;
        for (i = 0; i < 8; i++) builds += TS->builds[(first + (unsigned)i) % 64];
        printf("# cluster_waiters_share: 8 threads waiting on another process's 8 builds (keys on %d nodes): at most %d %d %d subscribed connections on the nodes, %d builds\n",
               nodes_used, subs[0], subs[1], subs[2], builds);
        KT_CHECK_MSG(ok && TS->wrong == 0, "a process failed or got wrong payloads");
        KT_CHECK_MSG(builds == 8, "%d builds of 8 keys", builds);
    }
    for (i = 0; i < 3; i++) KT_CHECK_MSG(subs[i] <= 2, "node %d: %d subscribed connections, want at most 2 (one per process; 99: no answer)", i, subs[i]);
    cluster_stop(&c);
}

/* The cold start of 8 processes x 64 keys (30 ms builds; memory-only, one node listed; the batch
   on 2 threads) on 3 masters: every command the nodes counted (INFO commandstats, inside scripts
   too), summed over the nodes, per key: at most 38 (measured 35.5-36.2; the old code, whose batch
   heard nothing on a cluster and asked each claim again: 41.5-42.4). The processes hear on each
   node which claims were taken and which builds ended (sharded pub/sub). Not 30 as on one server
   (test_netfaults' net_cold_clean: 26): a cluster's subscription is a command per key and process
   (SSUBSCRIBE's channels must share a slot; a plain SUBSCRIBE names a batch's keys at once), 8 per
   key here, and each claim's taking and end are published twice (SPUBLISH, and PUBLISH for the
   waiters of 0.6.0 and before). About 1 build per key (at most 1.1). CL_PROCS, CL_KEYS, CL_MS
   change the shape (the bound is asserted for the default only); CL_STATS=1 prints the nodes'
   INFO commandstats. */
static int TOLD_PROCS = 8, TOLD_KEYS = 64;
static void cluster_cold_commands(void) {
    cl c;
    pid_t pid[64];
    int gate[2], i, bad = 0, builds = 0;
    long long before[3], cmds = 0;
    unsigned first = 2000;
    if (!cluster_start(&c, 3, 0, NULL)) { cluster_stop(&c); return; }
    memset(TS, 0, sizeof *TS);
    g_told_ms = 30;
    if (getenv("CL_PROCS")) TOLD_PROCS = atoi(getenv("CL_PROCS")) < 1 ? 1 : atoi(getenv("CL_PROCS")) > 64 ? 64 : atoi(getenv("CL_PROCS"));
    if (getenv("CL_KEYS")) TOLD_KEYS = atoi(getenv("CL_KEYS")) < 1 ? 1 : atoi(getenv("CL_KEYS")) > 64 ? 64 : atoi(getenv("CL_KEYS"));
    if (getenv("CL_MS")) g_told_ms = (unsigned)atoi(getenv("CL_MS"));
    for (i = 0; i < 3; i++) before[i] = kt_redis_all_calls(&c.n[i]);
    if (pipe(gate) != 0) { KT_FAILF("pipe"); cluster_stop(&c); return; }
    fflush(stdout);
    for (i = 0; i < TOLD_PROCS; i++)
        if ((pid[i] = fork()) == 0) {
            kcache *kc;
            char go;
            close(gate[1]);
            kc = open_told(c.n[0].url);
            if (read(gate[0], &go, 1) < 0 || !kc) _exit(2);
            _exit(told_batch(kc, first, TOLD_KEYS, 2) == TOLD_KEYS ? (kcache_close(kc), 0) : 1);
        }
    close(gate[0]);
    kt_sleep_ms(200);
    close(gate[1]); /* go */
    for (i = 0; i < TOLD_PROCS; i++) {
        int st = 0;
        if (pid[i] <= 0 || waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
    }
    for (i = 0; i < 3; i++) {
        long long after = kt_redis_all_calls(&c.n[i]);
        cmds += before[i] >= 0 && after >= 0 ? after - before[i] - 1 : 1000000; /* (less the INFO's own) */
    }
    for (i = 0; i < TOLD_KEYS; i++) builds += TS->builds[(first + (unsigned)i) % 64];
    if (getenv("CL_STATS")) /* which commands, node by node */
        for (i = 0; i < 3; i++) {
            redisReply *r = kt_redis_cmd(&c.n[i], "INFO commandstats");
            if (r && r->type == REDIS_REPLY_STRING) printf("node %d:\n%s\n", i, r->str);
            if (r) freeReplyObject(r);
        }
    printf("# cluster_cold_commands: %d processes x %d keys on 3 masters: %d builds, %.1f commands per key\n", TOLD_PROCS, TOLD_KEYS, builds,
           (double)cmds / TOLD_KEYS);
    KT_CHECK_MSG(!bad && TS->wrong == 0, "%d processes failed, %d wrong payloads", bad, TS->wrong);
    KT_CHECK_MSG(builds * 10 <= TOLD_KEYS * 11, "%d builds of %d keys (at most 1.1 per key)", builds, TOLD_KEYS);
    if (TOLD_PROCS == 8 && TOLD_KEYS == 64 && g_told_ms == 30)
        KT_CHECK_MSG(cmds <= 38 * TOLD_KEYS, "%.1f commands per key, want at most 38", (double)cmds / TOLD_KEYS);
    cluster_stop(&c);
}

/* 3 masters + 3 replicas: one process builds 8 keys (2.5 s each, a batch on 8 threads), another's 8
   threads wait for them; meanwhile a master holding some of the keys hands its slots to its replica
   (CLUSTER FAILOVER): it tells its subscribers sunsubscribe, and the waiters of its keys look
   again, then wait subscribed on the new master (SSUBSCRIBE counted there). Every waiter wakes
   with its key's payload: 8 builds. */
static void cluster_waiters_failover(void) {
    cl c;
    pid_t b, a;
    int i, st = 0, ok = 1, owner[8], victim = -1, builds = 0;
    long long ssub;
    unsigned first = 3000;
    if (!cluster_start(&c, 3, 3, NULL)) { cluster_stop(&c); return; }
    memset(TS, 0, sizeof *TS);
    g_told_ms = 2500;
    for (i = 0; i < 8; i++) owner[i] = master_of(&c, 0, first + (unsigned)i);
    for (i = 0; i < 8 && victim < 0; i++)
        if (owner[i] != 0) victim = owner[i]; /* (not the listed node: the seed keeps answering as before) */
    if (victim < 0) victim = owner[0];
    told_start(c.n[0].url, first, 300, &b, &a);
    kt_sleep_ms(700); /* (the waiters wait now, subscribed: the builds end at 2.5 s) */
    ssub = kt_redis_calls(&c.n[victim + 3], "ssubscribe");
    {
        redisReply *r = kt_redis_cmd(&c.n[victim + 3], "CLUSTER FAILOVER");
        KT_CHECK_MSG(r && r->type == REDIS_REPLY_STATUS, "CLUSTER FAILOVER: %s", r && r->str ? r->str : "no reply");
        if (r) freeReplyObject(r);
    }
    for (i = 0; i < 100 && !is_master(&c, victim + 3); i++) kt_sleep_ms(20);
    ok &= waitpid(a, &st, 0) == a && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    ok &= waitpid(b, &st, 0) == b && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    ssub = kt_redis_calls(&c.n[victim + 3], "ssubscribe") - ssub;
    for (i = 0; i < 8; i++) builds += TS->builds[(first + (unsigned)i) % 64];
    printf("# cluster_waiters_failover: master %d failed over to its replica while 8 threads waited: %d builds, %lld SSUBSCRIBEs on the new master\n",
           victim, builds, ssub);
    KT_CHECK_MSG(is_master(&c, victim + 3), "the replica was not promoted");
    KT_CHECK_MSG(ok && TS->wrong == 0, "a process failed or got wrong payloads");
    KT_CHECK_MSG(builds == 8, "%d builds of 8 keys", builds);
    KT_CHECK_MSG(ssub > 0, "no SSUBSCRIBE on the new master: the waiters did not subscribe again there");
    cluster_stop(&c);
}

int main(int argc, char **argv) {
    if (argc > 1) g_top = argv[1];
    signal(SIGPIPE, SIG_DFL);
    if (!kt_mktemp(g_root, sizeof g_root, "test-cluster")) { printf("FAIL setup: mkdtemp\n"); return 1; }
    TS = (told_shared *)mmap(NULL, sizeof *TS, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (TS == MAP_FAILED) { printf("FAIL setup: mmap\n"); return 1; }
    {
        static const char *const vars[] = {"KCACHE_DIR", "KCACHE_REMOTE", "KCACHE_REMOTE_MODE", "KCACHE_REMOTE_TIMEOUT", "KCACHE_REMOTE_SECRET",
                                           "KCACHE_REMOTE_TLS_NAME", "KCACHE_DEBUG", "KCACHE_ENABLE", "KCACHE_PERSISTENT", NULL};
        int i;
        for (i = 0; vars[i]; i++) unsetenv(vars[i]);
    }
    KT_RUN(cluster_failover);
    KT_RUN(cluster_node_breaker);
    KT_RUN(cluster_tls_name);
    KT_RUN(cluster_waiters_share);
    KT_RUN(cluster_cold_commands);
    KT_RUN(cluster_waiters_failover);
    if (!kt_failures_total) kt_rm_tree(g_root);
    else printf("# kept %s\n", g_root);
    KT_EXIT();
}

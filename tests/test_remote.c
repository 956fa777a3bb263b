/* tests/test_remote.c - the Redis remote tier against real redis-server processes (issue 19).
 *
 * Every server is started here (tests/kt_remote.h: a free port on 127.0.0.1 or a unix socket, a
 * config of its own with maxmemory and allkeys-lru, no persistence, in a temp directory) and
 * stopped at the end, also when the test fails or is killed. Every "machine" is a process of its
 * own on a store of its own; they count into a shared page. Every fault is caused for real.
 *
 *   remote_urls               URLs: the forms accepted and how they are shown (never a password),
 *                             the ones refused with a reason; duplicate shards refused; 20000
 *                             mutated URLs never crash the parser
 *   remote_tcp / remote_unix  a put on one machine is a remote hit on another (validated, written
 *                             into its store: the next process there hits the disk), explain says
 *                             "hit: remote (URL)", the value on the server is signed-off zstd
 *   remote_db_auth            /DB selects the database; a password in the URL; a wrong one fails
 *                             cleanly; a handle used in a forked child keeps both
 *   remote_url_escapes        percent-escapes in user and password (%40 for '@'), a raw '@'; no
 *                             message shows a password; kcache_remote_in_use and kcache_explain
 *                             say why a refused URL left the remote off
 *   remote_tls                rediss:// to redis-server's TLS port with certificates made here: the
 *                             test's CA (3 MiB too), refused with another CA, a wrong server name,
 *                             no client certificate where one is asked for; unusable files said
 *   remote_rejects            a value changed on the server (a byte, garbage, another key's) is a
 *                             miss, a reject, and deleted there
 *   remote_signed             HMAC-SHA-256 (RFC 4231 vector); the same secret hits, another secret
 *                             and unsigned values are rejected; no secret reads signed values
 *   remote_gmac               signed values are version 2, GMAC (the tag checked against EVP_MAC's
 *                             GMAC); read with the secret, by an HMAC signer and without a secret;
 *                             another secret or a changed byte rejected; version 1 (HMAC) still read
 *   remote_mac_early          a signed GET's MAC computed while the value arrives is the value's own;
 *                             used only under the value's nonce (another: checked again; a wrong
 *                             MAC: rejected); none without a secret or for a version 1 value
 *   remote_value_framing      a value not ended by \r\n, or followed by a reply no command asked for:
 *                             a failed call (a server speaking garbage), not a reject
 *   remote_empty_host         an empty host (or NULL endpoint) in MOVED or CLUSTER SLOTS: the
 *                             answering node's; a unix seed has none: a miss, not a crash
 *   remote_identity_copied    a writer of shard B copies A's kcache:id into B: B stays in the ring
 *                             (one identity is one shard only when a claim on one is held on the other)
 *   remote_ro_max_entry       mode ro never writes; entries over the limit stay local; a larger
 *                             value (another client's limit) is a miss, not a reject
 *   remote_shards             3 shards take a third of the keys each; a 4th moves about a quarter
 *   remote_killed             the server SIGKILLed: lookups at local speed after one failure, puts
 *                             go on locally, the process survives writes into the dead socket
 *   remote_sigstop            the server SIGSTOPped: one timeout, then skipped; SIGCONT: back
 *   remote_debug_sleep        DEBUG SLEEP: the call times out at the bound, then recovers
 *   remote_full               maxmemory with noeviction: OOM errors skip puts, reads go on; with
 *                             allkeys-lru the server evicts and puts keep landing (which keys it
 *                             evicts is Redis's sampled choice, not asserted)
 *   remote_restart            the server restarted under a running machine: it reconnects
 *   remote_garbage            a server speaking garbage (text, hang-ups, silence, a 3 GB string,
 *                             deep arrays, junk values, wrong types): misses, no crash, no SIGPIPE
 *   remote_partition          an address nobody answers: one connect timeout
 *   remote_cluster_build      8 machines miss one key together: 1 build, 8 right payloads
 *   remote_cluster            a 3-node Redis Cluster started here: one listed node serves all 60
 *                             keys (MOVED, CLUSTER SLOTS), three listed are seeds of it, a build
 *                             claim is one per cluster, a slot half-migrated is followed (ASK)
 *   remote_spellings          two servers spelled localhost, LOCALHOST, 127.0.0.1, /0, by socket,
 *                             one listed twice: 200 keys stored through one, all found through
 *                             every other (each server's identity, kcache:id, places it)
 *   remote_ttl_prefix         KCACHE_REMOTE_PREFIX: a namespace of its own; KCACHE_REMOTE_TTL: an
 *                             expiry on every put (7d, 12h...); from the environment; a bad prefix
 *   remote_shard_counters     kcache_get_remote_shards: hits, misses per shard; a killed one's
 *                             errors, skipped calls, open breaker; a shard listed twice is "same"
 *   remote_builder_killed     the cluster's builder SIGKILLed: its claim runs out, one other builds
 *   remote_claim_renewed      a build longer than the claim's lifetime keeps it (renewed): 1 build
 *   remote_build_fails        a failed build abandons the claim: the waiters build themselves
 *   remote_claim_planted      a claim planted by a client without the secret (or unsigned, for 10^8
 *                             ms), or by a fake server that says every claim is held: the machine
 *                             builds at once instead of waiting KCACHE_BUILD_WAIT; a short unsigned
 *                             claim is still waited for (what an unsigned fleet cannot tell)
 *   remote_claim_replayed     (35.8) a signed claim's token read once and planted again every
 *                             quarter of a claim's life: a signed waiter builds after 3 claim
 *                             lifetimes of the token's issue (the server's clock), a few claim
 *                             takes, not its whole KCACHE_BUILD_WAIT; a 0.4 token after 10
 *   remote_signed_cluster     signed claims are honoured (1 build of 4); a claim lives 3 s by
 *                             default and a builder killed with -9 is taken over after it
 *   remote_endless_reply      an array of 10^8 elements streamed without end, for a GET and on the
 *                             claim's channel: one failed call, a few hundred KiB of memory
 *   remote_read_only_user     a redis ACL user who may only read: mode ro sends nothing the ACL
 *                             refuses and keeps 10 of 10 hits; mode rw has its writes refused and
 *                             keeps its reads (the breaker stays closed)
 *   remote_dns_silent         redis://localhost works; a name whose DNS server never answers (as
 *                             root: resolv.conf bind-mounted in a private mount namespace) costs
 *                             each lookup and breaker probe the connect timeout, not 20 s
 *   remote_slow_link          a 1 MiB value through a 2 MiB/s proxy with a 350 ms timeout is a hit;
 *                             a server dripping a byte per 20 ms is a timeout soon after 350 ms; 16
 *                             processes fetch one hot 1 MiB value over one 20 MB/s link: 16 hits
 *   remote_tls_waiters        (35.6) 8 threads of a process waiting over TLS on another's 8 builds
 *                             share one subscribed connection (old: one each); the releases wake
 *                             them: 8 builds
 *   remote_tls_bounds         the same bounds over TLS (rediss://): 1 MiB through a 2 MiB/s proxy in
 *                             front of a TLS port with a 350 ms timeout is a hit; an endless array
 *                             from `openssl s_server` is one failed call, not memory
 *   remote_lookups            GETs sent to the server (counted under the backend): a cold get and
 *                             a cold get_or_build send one; a caller that waits for another
 *                             thread's or another kcache's build on its store sends one, for
 *                             another machine's (the cluster claim) two
 *   remote_put_unanswered     a builder's put and release, sent without waiting for the answers,
 *                             are lost (the server closes the connection unanswered): the put is
 *                             sent again on another connection (2 SETs read, the second answered)
 *   remote_take_64            a batch of 64 keys on one builder: its first take names all 64 (the
 *                             script's argument list was one short: a failed call, out of bounds
 *                             under ASan); every key built once, no remote error
 *   remote_explain_stats      kcache_explain of a remote hit, miss, reject, a remote down, a breaker
 *                             open: kcache_stats and the stats file unchanged, no breaker moved
 *   compress_local            KCACHE_COMPRESS=1: version-2 entries, smaller, read back exact (also by
 *                             a reader that does not compress), sound to kcache-inspect, a damaged
 *                             one rejected; incompressible payloads stay version 1
 *   top_remote                kcache-top -b shows the remote tier of a live process (hits,
 *                             lookups, errors, its breaker open), its shard's own counters,
 *                             and a hit-remote event; the
 *                             breaker is no longer open once the process closed its cache; its
 *                             --prometheus and --json: calls by result, the breaker's gauge
 *   top_metrics_secret        a memory-only process (KCACHE_STATS_DIR) on a Redis with a password
 *                             in its URL: kcache-top's JSON, Prometheus and text outputs and the
 *                             stats file never hold the password; the shard's calls are there
 *
 * No check asserts a speed; the bounds are generous ("under a second" for what takes a
 * millisecond). Usage: test_remote [KCACHE_TOP] (default build/kcache-top). Build: make
 * build/test_remote build/asan/test_remote (KCACHE_REDIS, KCACHE_ZSTD, KCACHE_HMAC_OPENSSL;
 * -lhiredis -lzstd -lcrypto). */
#define KCACHE_IMPLEMENTATION
#define KCACHE_REDIS
#define KCACHE_ZSTD
#define KCACHE_HMAC_OPENSSL
#define KCACHE_TLS_OPENSSL
#include "kcache.h"
#include "kt.h"
#include "kt_remote.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sched.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/un.h>

/* ---- machines: processes of their own on stores of their own ------------------------------------- */

typedef struct mconf {
    const char *url, *secret;
    int ro, compress;
    uint32_t timeout_ms, backoff_ms, claim_ms;
    uint64_t max_entry;
} mconf;

typedef struct result {
    int status, ok;
    double secs;
    kcache_stats st;
    char why[512];
} result;

typedef struct shared {
    result r[16];
    int builds, building;
    double build_start, build_end;
    int seq; /* store names: shared, so that names made in children never repeat either */
    int fake_sets, fake_sets_ok; /* FAKE_PUT_LOST: the value SETs it read, and answered */
} shared;
static shared *S;
static char g_root[300];
static const char *g_top = "build/kcache-top"; /* kcache-inspect is beside it */

static kcache *open_machine(const char *store, const mconf *mc) {
    char dir[400];
    kcache_config cfg;
    kcache *kc = NULL;
    kt_config(&cfg, dir, sizeof dir, g_root, store);
    cfg.remote = mc->url;
    cfg.remote_secret = mc->secret;
    cfg.remote_mode = mc->ro ? KCACHE_REMOTE_RO : KCACHE_REMOTE_RW;
    cfg.remote_timeout_ms = mc->timeout_ms ? mc->timeout_ms : 300;
    cfg.remote_backoff_ms = mc->backoff_ms ? mc->backoff_ms : 300;
    cfg.remote_claim_ms = mc->claim_ms;
    cfg.remote_max_entry = mc->max_entry;
    cfg.compress = mc->compress;
    cfg.build_wait_ms = 20000;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) { printf("FAIL setup: kcache_open %s\n", dir); fflush(stdout); _exit(1); }
    return kc;
}

enum { DO_PUT, DO_GET, DO_EXPLAIN, DO_PUT_RANDOM };

/* Random bytes that zstd cannot shrink (seeded by id). */
static void random_payload(unsigned char *p, size_t n, unsigned id) {
    uint64_t x = 0x9e3779b97f4a7c15ull * (id + 1);
    size_t i;
    for (i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
}

/* One call on a machine, in this process: what it returned goes to S->r[slot]. */
static void act(kcache *kc, int slot, int what, unsigned id, size_t len) {
    result *r = &S->r[slot];
    kcache_key k;
    double t = kt_now();
    kt_key(&k, "remote", id);
    if (what == DO_PUT || what == DO_PUT_RANDOM) {
        unsigned char *p = (unsigned char *)malloc(len ? len : 1);
        if (what == DO_PUT) kt_payload(p, len, id);
        else random_payload(p, len, id);
        r->status = kcache_put(kc, &k, p, len);
        r->ok = r->status == KCACHE_OK;
        free(p);
    } else if (what == DO_GET) {
        const void *d = NULL;
        size_t n = 0;
        r->status = kcache_get(kc, &k, &d, &n);
        r->ok = r->status == KCACHE_OK && kt_payload_ok(d, n, len, id);
        if (d) kcache_release(kc, d);
    } else {
        kcache_explain(kc, &k, r->why, sizeof r->why);
        r->status = KCACHE_OK;
    }
    r->secs = kt_now() - t;
    kcache_get_stats(kc, &r->st);
    kcache_key_free(&k);
}

/* The same in a new process on the store `store` (a machine starting up): waits for it. */
static void job(int slot, const char *store, const mconf *mc, int what, unsigned id, size_t len) {
    pid_t p;
    int st;
    memset(&S->r[slot], 0, sizeof S->r[slot]);
    S->r[slot].status = -1;
    fflush(stdout);
    p = fork();
    if (p == 0) {
        kcache *kc = open_machine(store, mc);
        act(kc, slot, what, id, len);
        kcache_close(kc);
        fflush(stdout);
        _exit(0);
    }
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        KT_FAILF("machine %s (%d) %s %d", store, (int)p, WIFSIGNALED(st) ? "died of signal" : "exited with", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/* A machine stepped by the parent: it runs in a child up to a point, waits there while the parent
   changes the world (kills or stops the server, runs kcache-top), then goes on. */
typedef struct stepper { int up[2], down[2]; pid_t pid; } stepper;
/* 1 in the child, 0 in the parent, -1 on failure (said). */
static int step_fork(stepper *s) {
    if (pipe(s->up) != 0 || pipe(s->down) != 0) { KT_FAILF("pipe"); return -1; }
    fflush(stdout);
    if ((s->pid = fork()) < 0) { KT_FAILF("fork"); return -1; }
    close(s->pid == 0 ? s->up[0] : s->up[1]); /* a child that dies ends the parent's read */
    close(s->pid == 0 ? s->down[1] : s->down[0]);
    return s->pid == 0;
}
static void step_here(stepper *s) { /* child */
    char c = 0;
    if (write(s->up[1], "x", 1) != 1 || read(s->down[0], &c, 1) != 1) _exit(2);
}
static int step_reached(stepper *s) { /* parent: 1 when the child waits at its next step */
    char c;
    return read(s->up[0], &c, 1) == 1;
}
static void step_go(stepper *s) { /* parent */
    if (write(s->down[1], "x", 1) != 1) KT_FAILF("the machine is gone");
}
static int step_end(stepper *s) { /* parent: the child's wait status */
    int st = 0;
    close(s->down[1]);
    while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR) {
    }
    close(s->up[0]);
    return st;
}

static void name_of(unsigned id, char out[33]) {
    kcache_key k;
    kt_key(&k, "remote", id);
    kcache_hash_hex(kcache_key_digest(&k), out);
    kcache_key_free(&k);
}

/* The entries on a server: its keys, less the identity kcache keeps there (kcache:id), or -1. */
static long long data_keys(const kt_redis *srv) {
    long long n = kt_redis_int(srv, "DBSIZE"), id = kt_redis_int(srv, "EXISTS kcache:id");
    return n < 0 || id < 0 ? -1 : n - id;
}

static const char *fresh(const char *what) { /* a store name nobody used yet */
    static char names[8][64];
    static int at;
    char *n = names[at++ % 8];
    snprintf(n, 64, "%s-%d", what, __atomic_add_fetch(&S->seq, 1, __ATOMIC_SEQ_CST));
    return n;
}

/* ---- URLs ---------------------------------------------------------------------------------------- */

static void remote_urls(void) {
    static const char *const good[][2] = {
        {"redis://127.0.0.1", "redis://127.0.0.1:6379/0"},
        {"redis://localhost:7000/2", "redis://localhost:7000/2"},
        {"redis://:hunter2@cache-1.example.org:6380/3", "redis://cache-1.example.org:6380/3"},
        {"redis://user:hunter2@h", "redis://h:6379/0"},
        {"redis://[::1]:6380", "redis://[::1]:6380/0"},
        {"redis://h/", "redis://h:6379/0"},
        {"unix:///run/redis/redis.sock", "unix:///run/redis/redis.sock"},
    };
    static const char *const bad[] = {"", "redis://", "redis://:6379", "redis://h:0", "redis://h:65536", "redis://h:12x", "redis://h/abc",
                                      "redis://h/1/2", "http://h", "unix://relative.sock", "redis://h\x01", "redis://[::1", "redis://pw@h",
                                      "redis://h:99999999999999999999", "redis://h/99999999999", "unix:///tmp/x.sock?db=1", "redis://a b"};
    char shown[400], why[400], url[512];
    unsigned i, j;
    uint64_t x = 12345;
    for (i = 0; i < sizeof good / sizeof *good; i++) {
        kcache_redis__server *rb = kcache_redis__parse(good[i][0], strlen(good[i][0]), shown, sizeof shown, why, sizeof why);
        KT_CHECK_MSG(rb && strcmp(shown, good[i][1]) == 0, "%s: %s", good[i][0], rb ? shown : why);
        KT_CHECK_MSG(!strstr(shown, "hunter2"), "a password shown: %s", shown);
        kcache_redis__free(rb);
    }
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        kcache_redis__server *rb;
        why[0] = 0;
        rb = kcache_redis__parse(bad[i], strlen(bad[i]), shown, sizeof shown, why, sizeof why);
        KT_CHECK_MSG(!rb && why[0], "\"%s\" was taken (%s)", bad[i], rb ? shown : "no reason given");
        kcache_redis__free(rb);
    }
    { /* through kcache_open: a bad URL is no remote, said why; a shard twice is refused */
        static const char *const lists[] = {"redis://a:1 redis://b:2 garbage", "redis://a:1 redis://a:1/0", "  \t "};
        for (i = 0; i < 3; i++) {
            kcache_config cfg;
            kcache *kc;
            kcache_stats st;
            kcache_config_init(&cfg);
            cfg.persistent = 0;
            cfg.remote = lists[i];
            KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
            KT_CHECK_MSG(kc->remote == NULL && (i == 2 || kc->remote_why[0]), "%s: remote %p, why \"%s\"", lists[i], (void *)kc->remote, kc->remote_why);
            kcache_get_stats(kc, &st);
            KT_CHECK(st.remote_open == 0);
            kcache_close(kc);
        }
    }
    for (i = 0; i < 20000; i++) { /* mutations of good URLs: taken or refused, never a crash */
        const char *base = good[i % (sizeof good / sizeof *good)][0];
        size_t n = strlen(base);
        kcache_redis__server *rb;
        memcpy(url, base, n + 1);
        for (j = 0; j < 1 + i % 4; j++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            switch (x % 3) {
            case 0: if (n) url[x % n] = (char)(x >> 8); break;                               /* a byte changed */
            case 1: if (n) { n = (size_t)(x >> 16) % n; url[n] = 0; } break;                 /* cut */
            default: if (n + 1 < sizeof url) { url[n] = "0123456789:/@[]%?.x"[(x >> 8) % 19]; url[++n] = 0; } /* grown */
            }
        }
        rb = kcache_redis__parse(url, n, shown, sizeof shown, why, sizeof why);
        kcache_redis__free(rb);
    }
}

/* ---- round trips ---------------------------------------------------------------------------------- */

static kt_redis T, U; /* a TCP server and a unix-socket server for the cases that do not hurt them */

static void roundtrip(kt_redis *srv) {
    mconf mc;
    char name[33], url_shown[500];
    const char *a = fresh("rt-a"), *b = fresh("rt-b"), *c = fresh("rt-c");
    redisReply *v;
    memset(&mc, 0, sizeof mc);
    mc.url = srv->url;
    name_of(1, name);
    job(0, a, &mc, DO_PUT, 1, 60000);
    KT_CHECK(S->r[0].ok);
    KT_CHECK_EQ_U64(S->r[0].st.remote_puts, 1);
    KT_CHECK_EQ_U64(kt_redis_int(srv, "EXISTS kcache:1:%s", name), 1);
    v = kt_redis_cmd(srv, "GET kcache:1:%s", name);
    KT_CHECK_MSG(v && v->type == REDIS_REPLY_STRING && v->len > 16 && memcmp(v->str, "KCREMOTE", 8) == 0,
                 "the value on the server is not a kcache value");
    KT_CHECK_MSG(v && v->len < 30000, "the value is not compressed: %zu bytes for a 60000-byte payload", v ? v->len : 0);
    if (v) freeReplyObject(v);
    if (srv->port) snprintf(url_shown, sizeof url_shown, "hit: remote (redis://127.0.0.1:%d/0)", srv->port);
    else snprintf(url_shown, sizeof url_shown, "hit: remote (unix://%s)", srv->sock);
    job(1, c, &mc, DO_EXPLAIN, 1, 0);
    KT_CHECK_MSG(strncmp(S->r[1].why, url_shown, strlen(url_shown)) == 0, "explain: %s (want %s)", S->r[1].why, url_shown);
    job(2, b, &mc, DO_GET, 1, 60000);
    KT_CHECK(S->r[2].ok);
    KT_CHECK_EQ_U64(S->r[2].st.hits_remote, 1);
    KT_CHECK_EQ_U64(S->r[2].st.remote_lookups, 1);
    KT_CHECK_EQ_U64(S->r[2].st.misses, 0);
    job(3, b, &mc, DO_GET, 1, 60000); /* the next process on b: its store has it now */
    KT_CHECK(S->r[3].ok);
    KT_CHECK_EQ_U64(S->r[3].st.hits_disk, 1);
    KT_CHECK_EQ_U64(S->r[3].st.remote_lookups, 0);
    job(4, c, &mc, DO_GET, 2, 10); /* nothing there: one lookup, a miss */
    KT_CHECK(S->r[4].status == KCACHE_MISS && S->r[4].st.remote_lookups == 1 && S->r[4].st.remote_errors == 0);
}
static void remote_tcp(void) { roundtrip(&T); }
static void remote_unix(void) { roundtrip(&U); }

static void remote_db_auth(void) {
    kt_redis A;
    mconf mc;
    char url[400];
    memset(&mc, 0, sizeof mc);
    mc.url = url;
    if (!kt_redis_start(&A, g_root, 1, "requirepass hunter2")) { KT_FAILF("redis-server with a password did not start"); return; }
    snprintf(url, sizeof url, "redis://:hunter2@127.0.0.1:%d/3", A.port);
    job(0, fresh("db-a"), &mc, DO_PUT, 3, 500);
    KT_CHECK(S->r[0].ok && S->r[0].st.remote_puts == 1 && S->r[0].st.remote_errors == 0);
    job(1, fresh("db-b"), &mc, DO_GET, 3, 500);
    KT_CHECK(S->r[1].ok && S->r[1].st.hits_remote == 1);
    { /* a handle used in a process forked from its opener: the child's own keeps password and database */
        pid_t p;
        int st = 0;
        memset(&S->r[5], 0, sizeof S->r[5]);
        fflush(stdout);
        if ((p = fork()) == 0) {
            kcache *kc = open_machine(fresh("db-f"), &mc);
            pid_t q;
            fflush(stdout);
            if ((q = fork()) == 0) {
                act(kc, 5, DO_GET, 3, 500);
                _exit(0);
            }
            while (q > 0 && waitpid(q, NULL, 0) < 0 && errno == EINTR) {
            }
            kcache_close(kc);
            _exit(0);
        }
        while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
        }
        KT_CHECK_MSG(S->r[5].ok && S->r[5].st.hits_remote == 1 && S->r[5].st.remote_errors == 0,
                     "a forked child's handle: status %d, %llu remote hits, %llu remote errors", S->r[5].status,
                     (unsigned long long)S->r[5].st.hits_remote, (unsigned long long)S->r[5].st.remote_errors);
    }
    snprintf(url, sizeof url, "redis://:hunter2@127.0.0.1:%d/0", A.port);
    job(2, fresh("db-c"), &mc, DO_GET, 3, 500); /* database 0 does not have it */
    KT_CHECK(S->r[2].status == KCACHE_MISS && S->r[2].st.remote_lookups == 1 && S->r[2].st.remote_errors == 0);
    snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d/3", A.port);
    job(3, fresh("db-d"), &mc, DO_GET, 3, 500);
    KT_CHECK(S->r[3].status == KCACHE_MISS && S->r[3].st.remote_errors == 1 && S->r[3].st.remote_open == 1);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/3", A.port); /* no password */
    job(4, fresh("db-e"), &mc, DO_PUT, 4, 500);
    KT_CHECK(S->r[4].ok && S->r[4].st.remote_errors == 1 && S->r[4].st.remote_puts == 0);
    kt_redis_stop(&A);
}

/* ---- URLs as operators write them (issue 26.4) ---- */

typedef struct logbuf { char text[16384]; size_t len; } logbuf;
static void log_into(void *user, const char *line) {
    logbuf *lb = (logbuf *)user;
    size_t n = strlen(line);
    if (lb->len + n + 2 < sizeof lb->text) { memcpy(lb->text + lb->len, line, n); lb->len += n; lb->text[lb->len++] = '\n'; lb->text[lb->len] = 0; }
}

/* A password with '@', ':', '%' and '/' given percent-encoded works (and one with a raw '@'); a
   malformed escape is refused; no message, debug line, kcache_remote_in_use or kcache_explain
   shows a password; a refused URL is said by kcache_remote_in_use and kcache_explain. */
static void remote_url_escapes(void) {
    static const char *const bad[] = {"redis://:%4@h", "redis://:%zz@h", "redis://:ab%00cd@h", "redis://:abc%@h", "redis://us%r:pw@h"};
    kt_redis A;
    char url[400], shown[400], why[400];
    unsigned i;
    const char *enc = "redis://a%40b:p%40ss%3Aw%25rd%2Fx@127.0.0.1:7";
    kcache_redis__server *rb = kcache_redis__parse(enc, strlen(enc), shown, sizeof shown, why, sizeof why);
    KT_CHECK_MSG(rb && rb->user && rb->pass && strcmp(rb->user, "a@b") == 0 && strcmp(rb->pass, "p@ss:w%rd/x") == 0, "decoded: user %s, password %s (%s)",
                 rb && rb->user ? rb->user : "-", rb && rb->pass ? rb->pass : "-", rb ? shown : why);
    kcache_redis__free(rb);
    rb = kcache_redis__parse("redis://:p@ss@h", 15, shown, sizeof shown, why, sizeof why); /* a raw '@': the last one ends the user-info */
    KT_CHECK_MSG(rb && rb->pass && strcmp(rb->pass, "p@ss") == 0 && strcmp(rb->host, "h") == 0, "raw @: %s", rb ? shown : why);
    kcache_redis__free(rb);
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        why[0] = 0;
        rb = kcache_redis__parse(bad[i], strlen(bad[i]), shown, sizeof shown, why, sizeof why);
        KT_CHECK_MSG(!rb && why[0], "%s was taken", bad[i]);
        kcache_redis__free(rb);
    }
    { /* refused URLs: nothing shows the password; kcache_remote_in_use and kcache_explain say why */
        static const char *const refused[] = {"redis://:s3cretpw@h:99999", "redis://user:s3cretpw@h\x01x", "redis://:s3cretpw@h/x", "rediss-nope://:s3cretpw@h"};
        for (i = 0; i < sizeof refused / sizeof *refused; i++) {
            logbuf lb;
            kcache_config cfg;
            kcache *kc = NULL;
            kcache_key k;
            char ex[1024];
            memset(&lb, 0, sizeof lb);
            kcache_config_init(&cfg);
            cfg.persistent = 0;
            cfg.debug = 1;
            cfg.log = log_into;
            cfg.log_user = &lb;
            cfg.remote = refused[i];
            KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK && kc);
            if (!kc) continue;
            why[0] = 0;
            KT_CHECK_MSG(kcache_remote_in_use(kc, why, sizeof why) == 0 && why[0], "%s: in use, or no reason", refused[i]);
            KT_CHECK_MSG(!strstr(why, "s3cretpw") && !strstr(lb.text, "s3cretpw"), "the password shown: why \"%s\", log \"%s\"", why, lb.text);
            KT_CHECK_MSG(strstr(lb.text, "***") != NULL || !strstr(refused[i], "@"), "the debug line: %s", lb.text);
            kt_key(&k, "remote", 4000 + i);
            kcache_explain(kc, &k, ex, sizeof ex);
            kcache_key_free(&k);
            KT_CHECK_MSG(strstr(ex, "remote off") && !strstr(ex, "s3cretpw"), "explain: %s", ex);
            kcache_close(kc);
        }
    }
    if (!kt_redis_start(&A, g_root, 1, "requirepass \"p@ss:w%rd/x\"\nuser ktremops1 on >u@s:e%r ~* &* +@all")) {
        KT_FAILF("redis-server with a password did not start");
        return;
    }
    for (i = 0; i < 2; i++) { /* the default user's password, then an ACL user's, both percent-encoded */
        kcache_config cfg;
        kcache *a = NULL, *b = NULL;
        if (i == 0) snprintf(url, sizeof url, "redis://:p%%40ss%%3Aw%%25rd%%2Fx@127.0.0.1:%d", A.port);
        else snprintf(url, sizeof url, "redis://ktremops1:u%%40s%%3ae%%25r@127.0.0.1:%d", A.port);
        kcache_config_init(&cfg);
        cfg.persistent = 0;
        cfg.remote = url;
        KT_CHECK(kcache_open(&a, &cfg) == KCACHE_OK && kcache_open(&b, &cfg) == KCACHE_OK);
        KT_CHECK(kcache_remote_in_use(a, why, sizeof why) == 1 && strstr(why, "127.0.0.1") && !strstr(why, "p@ss") && !strstr(why, "u@s"));
        KT_CHECK_EQ_U64((uint64_t)kt_put(a, "escapes", 10 + i, 1, 3000), KCACHE_OK);
        KT_CHECK_MSG(kt_get(b, "escapes", 10 + i, 1, 3000) == 1, "%s: no remote hit through the encoded password", i ? "ACL user" : "requirepass");
        kcache_close(a);
        kcache_close(b);
    }
    KT_CHECK_EQ_U64((uint64_t)kcache_remote_in_use(NULL, why, sizeof why), 0);
    kt_redis_stop(&A);
}

/* ---- TLS (issue 26.5) ---- */

/* A handle of its own (memory only) on url with rediss://'s files. */
static kcache *open_tls(const char *url, const char *ca, const char *cert, const char *key) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.remote = url;
    cfg.remote_ca = ca;
    cfg.remote_cert = cert;
    cfg.remote_key = key;
    cfg.remote_timeout_ms = 2000;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return NULL;
    return kc;
}

/* kcache_get_or_build_many of keys first..first+n-1 (unit, payloads of `size` bytes naming their
   id, as kt_put writes them) on kc, whose builds fail: how many jobs got the right payload (all of
   them from the remote, in exchanges of many keys: get_many). */
static int batch_fail_build(void *user, void **out, size_t *out_size) {
    (void)user; (void)out; (void)out_size;
    return 1;
}
static int batch_read(kcache *kc, const char *unit, unsigned first, int n, size_t size) {
    kcache_job jobs[64];
    kcache_key keys[64];
    int i, ok = 0;
    if (!kc || n > 64) return -1;
    for (i = 0; i < n; i++) {
        kt_key(&keys[i], unit, first + (unsigned)i);
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].key = &keys[i];
        jobs[i].build = batch_fail_build;
    }
    kcache_get_or_build_many(kc, jobs, (size_t)n, 1);
    for (i = 0; i < n; i++) {
        if (jobs[i].status == KCACHE_OK) {
            ok += kt_payload_ok(jobs[i].data, jobs[i].size, size, first + (unsigned)i);
            kcache_release(kc, jobs[i].data);
        }
        kcache_key_free(&keys[i]);
    }
    return ok;
}

/* Puts an incompressible payload of n bytes under id through a handle on url, gets it through
   another: 1 the same bytes came back from the remote, 0 a miss, -1 wrong bytes. */
static int tls_roundtrip(const char *url, const char *ca, const char *cert, const char *key, unsigned id, size_t n, uint64_t *errors) {
    kcache *a = open_tls(url, ca, cert, key), *b = open_tls(url, ca, cert, key);
    unsigned char *p = (unsigned char *)malloc(n);
    kcache_key k;
    const void *d = NULL;
    size_t got = 0;
    kcache_stats st;
    int r = -1;
    *errors = 0;
    if (a && b && p) {
        random_payload(p, n, id);
        kt_key(&k, "tls", id);
        kcache_put(a, &k, p, n);
        r = kcache_get(b, &k, &d, &got) == KCACHE_OK ? (got == n && memcmp(d, p, n) == 0 ? 1 : -1) : 0;
        if (d) kcache_release(b, d);
        kcache_key_free(&k);
        kcache_get_stats(a, &st);
        *errors += st.remote_errors;
        kcache_get_stats(b, &st);
        *errors += st.remote_errors;
    }
    free(p);
    kcache_close(a);
    kcache_close(b);
    return r;
}

/* The connections a server has accepted (INFO's total_connections_received, less this one), or -1. */
static long long tls_connections(const kt_redis *srv) {
    redisReply *r = kt_redis_cmd(srv, "INFO stats");
    const char *at = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "total_connections_received:") : NULL;
    long long n = at ? atoll(at + 27) - 1 : -1;
    if (r) freeReplyObject(r);
    return n;
}

/* Certificates for rediss:// tests, made in dir (g_root/tls): a CA, a server certificate for
   127.0.0.1, one for the name localhost only, a client certificate, and another CA. 0: openssl failed. */
static int tls_certs(char *dir, size_t cap) {
    char cmd[4096];
    snprintf(dir, cap, "%s/tls", g_root);
    mkdir(dir, 0700);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && exec >openssl.log 2>&1 && "
             "mk() { openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $1.key -out $1.csr -subj /CN=$1 && "
             "printf 'subjectAltName=%%s\\nextendedKeyUsage=%%s\\n' \"$2\" \"$3\" > $1.ext && "
             "openssl x509 -req -in $1.csr -CA $4.crt -CAkey $4.key -CAcreateserial -out $1.crt -days 2 -extfile $1.ext; } && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=kt-ca && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca2.key -out ca2.crt -days 2 -subj /CN=kt-other-ca && "
             "mk ip IP:127.0.0.1 serverAuth ca && mk name DNS:localhost serverAuth ca && mk client DNS:client clientAuth ca",
             dir);
    return system(cmd) == 0;
}
/* rediss:// against redis-server's own TLS port, with the certificates of tls_certs (the "localhost"
   one on a server that asks clients for a certificate). */
static void remote_tls(void) {
    char dir[310], ca[330], ca2[330], cert[330], key[330], url[300], extra[2][1200], why[400];
    kt_redis A, B;
    int port[2], i, r;
    uint64_t errs;
    if (!tls_certs(dir, sizeof dir)) { printf("skip remote_tls: openssl could not make the test's certificates (see %s/openssl.log)\n", dir); return; }
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    snprintf(ca2, sizeof ca2, "%s/ca2.crt", dir);
    snprintf(cert, sizeof cert, "%s/client.crt", dir);
    snprintf(key, sizeof key, "%s/client.key", dir);
    for (i = 0; i < 2; i++) {
        port[i] = kt_free_port();
        snprintf(extra[i], sizeof extra[i], "tls-port %d\ntls-cert-file %s/%s.crt\ntls-key-file %s/%s.key\ntls-ca-cert-file %s\ntls-auth-clients %s", port[i],
                 dir, i ? "name" : "ip", dir, i ? "name" : "ip", ca, i ? "yes" : "no");
    }
    if (strlen(extra[0]) >= sizeof A.extra || strlen(extra[1]) >= sizeof A.extra) { KT_FAILF("TMPDIR is too long for the servers' config"); return; }
    if (!kt_redis_start(&A, g_root, 1, extra[0])) { printf("skip remote_tls: redis-server did not start with TLS (built without it?)\n"); return; }
    if (!kt_redis_start(&B, g_root, 1, extra[1])) { KT_FAILF("the second TLS redis-server did not start"); kt_redis_stop(&A); return; }

    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", port[0]);
    { /* in use, shown as rediss:// */
        kcache *kc = open_tls(url, ca, NULL, NULL);
        KT_CHECK_MSG(kc && kcache_remote_in_use(kc, why, sizeof why) == 1 && strncmp(why, "rediss://127.0.0.1:", 19) == 0, "in use: %s", why);
        kcache_close(kc);
    }
    r = tls_roundtrip(url, ca, NULL, NULL, 1, 3000, &errs);
    KT_CHECK_MSG(r == 1 && errs == 0, "rediss:// with the CA: %d, %llu errors", r, (unsigned long long)errs);
    KT_CHECK_EQ_U64((uint64_t)data_keys(&A), 1); /* it went to the server (seen on its plain port) */
    r = tls_roundtrip(url, ca, NULL, NULL, 2, (size_t)3 << 20, &errs); /* many records, partial writes */
    KT_CHECK_MSG(r == 1 && errs == 0, "3 MiB over TLS: %d, %llu errors", r, (unsigned long long)errs);
    { /* pooled TLS connections are reused (the session tickets that follow a handshake do not make
         them look closed): 30 lookups, a connection or two */
        kcache *kc = open_tls(url, ca, NULL, NULL);
        long long before = tls_connections(&A), after;
        for (i = 0; i < 30; i++) KT_CHECK(kt_get(kc, "tls-pool", (unsigned)i, 1, 10) == 0);
        after = tls_connections(&A);
        KT_CHECK_MSG(before >= 0 && after - before <= 2, "30 lookups opened %lld connections", after - before);
        kcache_close(kc);
    }
    { /* a batch's read-back over TLS (one GET after another): every value */
        kcache *a = open_tls(url, ca, NULL, NULL), *b = open_tls(url, ca, NULL, NULL);
        for (i = 0; i < 12; i++) KT_CHECK(a && kt_put(a, "tls-batch", (unsigned)i, (unsigned)i, 1000) == KCACHE_OK);
        r = batch_read(b, "tls-batch", 0, 12, 1000);
        KT_CHECK_MSG(r == 12, "a batch over TLS: %d of 12 values read back", r);
        if (a) kcache_close(a);
        if (b) kcache_close(b);
    }
    r = tls_roundtrip(url, ca2, NULL, NULL, 3, 3000, &errs);
    KT_CHECK_MSG(r == 0 && errs > 0, "another CA: %d (want a miss), %llu errors", r, (unsigned long long)errs);
    { /* the debug line says why */
        logbuf lb;
        kcache_config cfg;
        kcache *kc = NULL;
        memset(&lb, 0, sizeof lb);
        kcache_config_init(&cfg);
        cfg.persistent = 0;
        cfg.remote = url;
        cfg.remote_ca = ca2;
        cfg.debug = 1;
        cfg.log = log_into;
        cfg.log_user = &lb;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
        KT_CHECK(kt_get(kc, "tls", 3, 1, 10) == 0);
        KT_CHECK_MSG(strstr(lb.text, "TLS certificate does not verify"), "debug: %s", lb.text);
        kcache_close(kc);
    }
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port[0]); /* plain text to the TLS port */
    r = tls_roundtrip(url, ca, NULL, NULL, 4, 3000, &errs);
    KT_CHECK_MSG(r == 0 && errs > 0, "redis:// to a TLS port: %d, %llu errors", r, (unsigned long long)errs);

    /* B: certificate for "localhost" only, client certificates required */
    snprintf(url, sizeof url, "rediss://localhost:%d", port[1]);
    r = tls_roundtrip(url, ca, cert, key, 5, 3000, &errs);
    KT_CHECK_MSG(r == 1 && errs == 0, "by name, with a client certificate: %d, %llu errors", r, (unsigned long long)errs);
    r = tls_roundtrip(url, ca, NULL, NULL, 6, 3000, &errs);
    KT_CHECK_MSG(r == 0 && errs > 0, "no client certificate: %d, %llu errors", r, (unsigned long long)errs);
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", port[1]); /* the same server by a name its certificate does not hold */
    r = tls_roundtrip(url, ca, cert, key, 7, 3000, &errs);
    KT_CHECK_MSG(r == 0 && errs > 0, "the wrong server name: %d, %llu errors", r, (unsigned long long)errs);
    KT_CHECK_EQ_U64((uint64_t)data_keys(&B), 1);

    { /* files that cannot be used: no remote, and the reason */
        static const char *const what[] = {"KCACHE_REMOTE_CA", "KCACHE_REMOTE_KEY", "KCACHE_REMOTE_CERT"};
        for (i = 0; i < 3; i++) {
            kcache *kc = open_tls(url, i == 0 ? "/nonexistent/ca.pem" : ca, cert, i == 1 ? ca : i == 2 ? NULL : key);
            why[0] = 0;
            KT_CHECK_MSG(kc && kcache_remote_in_use(kc, why, sizeof why) == 0 && strstr(why, what[i]), "%s: %s", what[i], why);
            kcache_close(kc);
        }
    }
    { /* the environment */
        kcache_config cfg;
        setenv("KCACHE_REMOTE_CA", ca, 1);
        setenv("KCACHE_REMOTE_CERT", cert, 1);
        setenv("KCACHE_REMOTE_KEY", key, 1);
        kcache_config_init(&cfg);
        KT_CHECK(cfg.remote_ca && strcmp(cfg.remote_ca, ca) == 0 && cfg.remote_cert && strcmp(cfg.remote_cert, cert) == 0 && cfg.remote_key &&
                 strcmp(cfg.remote_key, key) == 0);
        unsetenv("KCACHE_REMOTE_CA");
        unsetenv("KCACHE_REMOTE_CERT");
        unsetenv("KCACHE_REMOTE_KEY");
    }
    kt_redis_stop(&A);
    kt_redis_stop(&B);
}

static void remote_rejects(void) {
    mconf mc;
    char name[33], other[33];
    int round;
    memset(&mc, 0, sizeof mc);
    mc.url = T.url;
    name_of(5, name);
    name_of(6, other);
    job(0, fresh("rj-w"), &mc, DO_PUT, 6, 3000);
    for (round = 0; round < 3; round++) {
        redisReply *x;
        job(0, fresh("rj-w"), &mc, DO_PUT, 5, 3000);
        KT_CHECK(kt_redis_int(&T, "EXISTS kcache:1:%s", name) == 1);
        if (round == 0) x = kt_redis_cmd(&T, "SETRANGE kcache:1:%s 2000 Z", name); /* a byte of the payload */
        else if (round == 1) x = kt_redis_cmd(&T, "SET kcache:1:%s %s", name, "not a value at all");
        else x = kt_redis_cmd(&T, "COPY kcache:1:%s kcache:1:%s REPLACE", other, name); /* another key's */
        if (x) freeReplyObject(x);
        job(1, fresh("rj-r"), &mc, DO_GET, 5, 3000);
        KT_CHECK_MSG(S->r[1].status == KCACHE_MISS && S->r[1].st.rejects == 1 && S->r[1].st.remote_rejects == 1,
                     "round %d: %s, rejects %llu", round, kcache_strerror((kcache_status)S->r[1].status), (unsigned long long)S->r[1].st.rejects);
        KT_CHECK_MSG(kt_redis_int(&T, "EXISTS kcache:1:%s", name) == 0, "round %d: the bad value was not deleted", round);
    }
    KT_CHECK_MSG(kt_redis_int(&T, "EXISTS kcache:1:%s", other) == 1, "a good value was deleted");
}

static void remote_signed(void) {
    static const unsigned char want[32] = {0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
                                           0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43};
    unsigned char mac[32];
    mconf s, t, none;
    char name[33];
    /* RFC 4231, test case 2 */
    KT_CHECK(kcache__hmac((const unsigned char *)"Jefe", 4, (const unsigned char *)"what do ya want for nothing?", 28, mac));
    KT_CHECK_MSG(memcmp(mac, want, 32) == 0, "HMAC-SHA-256 differs from RFC 4231's test vector");
    memset(&s, 0, sizeof s);
    s.url = T.url;
    t = none = s;
    s.secret = "cluster secret";
    t.secret = "another secret";
    name_of(7, name);
    job(0, fresh("sg-a"), &s, DO_PUT, 7, 9000);
    job(1, fresh("sg-b"), &s, DO_GET, 7, 9000);
    KT_CHECK(S->r[1].ok && S->r[1].st.hits_remote == 1);
    job(2, fresh("sg-c"), &none, DO_GET, 7, 9000); /* no secret: signed values read as any */
    KT_CHECK(S->r[2].ok && S->r[2].st.hits_remote == 1);
    job(3, fresh("sg-d"), &t, DO_GET, 7, 9000);
    KT_CHECK(S->r[3].status == KCACHE_MISS && S->r[3].st.remote_rejects == 1);
    KT_CHECK_MSG(kt_redis_int(&T, "EXISTS kcache:1:%s", name) == 0, "a value signed with another secret was kept");
    job(4, fresh("sg-e"), &none, DO_PUT, 7, 9000); /* unsigned */
    job(5, fresh("sg-f"), &s, DO_EXPLAIN, 7, 0);
    KT_CHECK_MSG(strstr(S->r[5].why, "fails validation"), "explain: %s", S->r[5].why);
    job(5, fresh("sg-f"), &s, DO_GET, 7, 9000);
    KT_CHECK(S->r[5].status == KCACHE_MISS && S->r[5].st.remote_rejects == 1);
    KT_CHECK_MSG(kt_redis_int(&T, "EXISTS kcache:1:%s", name) == 0, "an unsigned value was kept by a client with a secret");
}

/* ---- a faster MAC, a new value version (issue 26.8) ---- */

static kcache *open_signed(const char *secret, int mac) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.remote = T.url;
    cfg.remote_secret = secret;
    cfg.remote_mac = mac;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return NULL;
    return kc;
}
/* The value of key id on T (freeReplyObject it), or NULL. */
static redisReply *value_of(unsigned id) {
    char name[33];
    name_of(id, name);
    return kt_redis_cmd(&T, "GET kcache:1:%s", name);
}

/* Values signed with a secret are version 2, GMAC: a nonce and a tag that OpenSSL's own GMAC
   (EVP_MAC, another path) computes the same; read back with the secret, rejected under another one
   or when changed; version 1 (HMAC, KCACHE_REMOTE_MAC=hmac, an older writer) still read, so a mixed
   fleet works. */
static void remote_gmac(void) {
    kcache *g = open_signed("cluster secret", KCACHE_REMOTE_MAC_GMAC), *h = open_signed("cluster secret", KCACHE_REMOTE_MAC_HMAC);
    kcache *other = open_signed("another secret", KCACHE_REMOTE_MAC_GMAC), *none = open_signed(NULL, 0), *g2 = open_signed("cluster secret", 0);
    redisReply *v;
    kcache_stats st;
    if (!g || !h || !other || !none || !g2) { KT_FAILF("kcache_open"); goto out; }
    KT_CHECK_EQ_U64((uint64_t)kt_put(g, "remote", 34000, 1, 5000), KCACHE_OK);
    v = value_of(34000);
    KT_CHECK_MSG(v && v->type == REDIS_REPLY_STRING && v->len > 16 && kcache__get_u16((const unsigned char *)v->str + 8) == 2 &&
                     kcache__get_u16((const unsigned char *)v->str + 10) == 2 &&
                     v->len == 16 + (size_t)kcache__get_u32((const unsigned char *)v->str + 12) + 12 + 16,
                 "a GMAC value: version %u, flags %u", v && v->len > 12 ? kcache__get_u16((const unsigned char *)v->str + 8) : 0,
                 v && v->len > 12 ? kcache__get_u16((const unsigned char *)v->str + 10) : 0);
    if (v && v->type == REDIS_REPLY_STRING && v->len > 44) { /* the tag, by EVP_MAC's GMAC under the documented key */
        static const char label[] = "kcache remote gmac v2";
        unsigned char key[32], tag[16], *buf = (unsigned char *)malloc(sizeof label + 14);
        size_t e = v->len - 28, tl = 0;
        EVP_MAC *m = EVP_MAC_fetch(NULL, "GMAC", NULL);
        EVP_MAC_CTX *c = m ? EVP_MAC_CTX_new(m) : NULL;
        OSSL_PARAM ps[3];
        unsigned int kl = 0;
        memcpy(buf, label, sizeof label);
        memcpy(buf + sizeof label, "cluster secret", 14);
        EVP_Digest(buf, sizeof label + 14, key, &kl, EVP_sha256(), NULL);
        ps[0] = OSSL_PARAM_construct_utf8_string("cipher", (char *)"AES-256-GCM", 0);
        ps[1] = OSSL_PARAM_construct_octet_string("iv", v->str + e, 12);
        ps[2] = OSSL_PARAM_construct_end();
        KT_CHECK(c && EVP_MAC_init(c, key, 32, ps) == 1 && EVP_MAC_update(c, (const unsigned char *)v->str, e) == 1 &&
                 EVP_MAC_final(c, tag, &tl, sizeof tag) == 1 && tl == 16);
        KT_CHECK_MSG(memcmp(tag, v->str + e + 12, 16) == 0, "the tag is not GMAC's under SHA-256(label, secret)");
        EVP_MAC_CTX_free(c);
        EVP_MAC_free(m);
        free(buf);
    }
    if (v) freeReplyObject(v);
    KT_CHECK_MSG(kt_get(g2, "remote", 34000, 1, 5000) == 1, "a GMAC value not read with its secret");
    KT_CHECK_MSG(kt_get(h, "remote", 34000, 1, 5000) == 1, "a GMAC value not read by a client that signs with HMAC");
    KT_CHECK_MSG(kt_get(none, "remote", 34000, 1, 5000) == 1, "a GMAC value not read without a secret");
    KT_CHECK_MSG(kt_get(other, "remote", 34000, 1, 5000) == 0, "a GMAC value read under another secret");
    kcache_get_stats(other, &st);
    KT_CHECK_EQ_U64(st.remote_rejects, 1);

    KT_CHECK_EQ_U64((uint64_t)kt_put(h, "remote", 34001, 1, 5000), KCACHE_OK); /* version 1, HMAC: an older writer */
    v = value_of(34001);
    KT_CHECK(v && v->type == REDIS_REPLY_STRING && v->len > 16 && kcache__get_u16((const unsigned char *)v->str + 8) == 1 &&
             kcache__get_u16((const unsigned char *)v->str + 10) == 1);
    if (v) freeReplyObject(v);
    KT_CHECK_MSG(kt_get(g2, "remote", 34001, 1, 5000) == 1, "an HMAC value not read by a GMAC client (a mixed fleet)");

    { /* a changed nonce, tag or entry byte: rejected */
        static const int at[3] = {-20, -3, 40};
        int i;
        for (i = 0; i < 3; i++) {
            char name[33];
            kt_put(g, "remote", 34010 + (unsigned)i, 1, 5000);
            v = value_of(34010 + (unsigned)i);
            name_of(34010 + (unsigned)i, name);
            if (v && v->type == REDIS_REPLY_STRING && v->len > 60) {
                size_t pos = at[i] < 0 ? v->len - (size_t)-at[i] : (size_t)at[i];
                redisReply *w;
                v->str[pos] ^= 1;
                w = kt_redis_cmd(&T, "SET kcache:1:%s %b", name, v->str, v->len);
                if (w) freeReplyObject(w);
            }
            if (v) freeReplyObject(v);
            KT_CHECK_MSG(kt_get(g2, "remote", 34010 + (unsigned)i, 1, 5000) == 0, "a changed byte at %d was accepted", at[i]);
        }
    }
    {
        kcache_config cfg;
        setenv("KCACHE_REMOTE_MAC", "hmac", 1);
        kcache_config_init(&cfg);
        KT_CHECK(cfg.remote_mac == KCACHE_REMOTE_MAC_HMAC && cfg.env_bad == 0);
        setenv("KCACHE_REMOTE_MAC", "sha1", 1);
        kcache_config_init(&cfg);
        KT_CHECK(cfg.remote_mac == KCACHE_REMOTE_MAC_GMAC && cfg.env_bad != 0);
        unsetenv("KCACHE_REMOTE_MAC");
    }
out:
    kcache_close(g);
    kcache_close(h);
    kcache_close(other);
    kcache_close(none);
    kcache_close(g2);
}

/* A signed GET computes a GMAC value's MAC while the value arrives (its nonce asked first, with
   GETRANGE), and reads the value straight into memory of kcache's: the MAC so computed is the
   value's own (a 300 KiB value and a 3-byte one, over TCP); it is used only under the value's own
   nonce (one a writer replaced in between is checked the slow way, and a wrong one is never taken
   for the right one); a client without a secret, or a value of version 1, computes none. */
static void remote_mac_early(void) {
    kcache *g = open_signed("early secret", KCACHE_REMOTE_MAC_GMAC), *h = open_signed("early secret", KCACHE_REMOTE_MAC_HMAC);
    kcache *none = open_signed(NULL, 0);
    static const size_t sizes[2] = {300000, 3};
    int i;
    if (!g || !h || !none) { KT_FAILF("kcache_open"); goto out; }
    for (i = 0; i < 2; i++) {
        kcache__shard *s = &g->remote->shard[0];
        kcache_key k;
        char name[33];
        const void *v = NULL;
        size_t n = 0;
        void *hold = NULL;
        const unsigned char *pre;
        KT_CHECK_EQ_U64((uint64_t)kt_put(g, "remote", 35000 + (unsigned)i, 1, sizes[i]), KCACHE_OK);
        name_of(35000 + (unsigned)i, name);
        kt_key(&k, "remote", 35000 + (unsigned)i);
        KT_CHECK_EQ_U64((uint64_t)s->ops->get(s->user, name, &v, &n, &hold), KCACHE_OK);
        pre = hold ? (s->premac ? s->premac(s->user, hold) : NULL) : NULL;
        KT_CHECK_MSG(pre && n > 28 && memcmp(pre, (const unsigned char *)v + n - 28, 28) == 0,
                     "%zu bytes: the MAC computed while the value arrived is not the value's nonce and tag", sizes[i]);
        if (pre && n > 28) {
            unsigned char alt[28];
            kcache__read rd;
            const char *why = "";
            kcache__remote_unpack(g->remote, &k, KCACHE_STAMP_HYBRID, 0, (const unsigned char *)v, n, pre, &rd, &why);
            KT_CHECK_MSG(rd.status == KCACHE_OK && rd.blob && kt_payload_ok(rd.blob->data, rd.blob->size, sizes[i], 1),
                         "%zu bytes: not a hit with the MAC computed early: %s", sizes[i], why);
            if (rd.blob) kcache__blob_unref(rd.blob);
            memcpy(alt, pre, 28);
            alt[27] ^= 1; /* the value's nonce, a wrong MAC: a forgery is not taken for the value's */
            kcache__remote_unpack(g->remote, &k, KCACHE_STAMP_HYBRID, 0, (const unsigned char *)v, n, alt, &rd, &why);
            KT_CHECK_MSG(rd.status == KCACHE_ECORRUPT && !rd.blob, "%zu bytes: a wrong early MAC under the value's nonce accepted", sizes[i]);
            if (rd.blob) kcache__blob_unref(rd.blob);
            memcpy(alt, pre, 28);
            alt[0] ^= 1; /* another nonce (the value replaced in between): the MAC computed again, a hit */
            kcache__remote_unpack(g->remote, &k, KCACHE_STAMP_HYBRID, 0, (const unsigned char *)v, n, alt, &rd, &why);
            KT_CHECK_MSG(rd.status == KCACHE_OK && rd.blob, "%zu bytes: an early MAC under another nonce not checked again: %s", sizes[i], why);
            if (rd.blob) kcache__blob_unref(rd.blob);
        }
        if (hold) s->ops->release(s->user, hold);
        hold = NULL;
        s = &none->remote->shard[0]; /* no secret: no MAC computed */
        KT_CHECK_EQ_U64((uint64_t)s->ops->get(s->user, name, &v, &n, &hold), KCACHE_OK);
        KT_CHECK(hold && !(s->premac ? s->premac(s->user, hold) : NULL));
        if (hold) s->ops->release(s->user, hold);
        kcache_key_free(&k);
        KT_CHECK_MSG(kt_get(g, "remote", 35000 + (unsigned)i, 1, sizes[i]) == 1, "%zu bytes: no signed hit", sizes[i]);
    }
    { /* version 1 (HMAC): nothing computed early, still read */
        kcache__shard *s = &g->remote->shard[0];
        char name[33];
        const void *v = NULL;
        size_t n = 0;
        void *hold = NULL;
        KT_CHECK_EQ_U64((uint64_t)kt_put(h, "remote", 35002, 1, 200000), KCACHE_OK);
        name_of(35002, name);
        KT_CHECK_EQ_U64((uint64_t)s->ops->get(s->user, name, &v, &n, &hold), KCACHE_OK);
        KT_CHECK(hold && !(s->premac ? s->premac(s->user, hold) : NULL));
        if (hold) s->ops->release(s->user, hold);
        KT_CHECK(kt_get(g, "remote", 35002, 1, 200000) == 1);
    }
out:
    if (g) kcache_close(g);
    if (h) kcache_close(h);
    if (none) kcache_close(none);
}

static void remote_ro_max_entry(void) {
    mconf mc, ro, small;
    char name[33];
    memset(&mc, 0, sizeof mc);
    mc.url = T.url;
    ro = small = mc;
    ro.ro = 1;
    small.max_entry = 16384;
    job(0, fresh("ro-w"), &mc, DO_PUT, 8, 100);
    job(1, fresh("ro-r"), &ro, DO_GET, 8, 100);
    KT_CHECK(S->r[1].ok && S->r[1].st.hits_remote == 1);
    name_of(9, name);
    job(2, fresh("ro-p"), &ro, DO_PUT, 9, 100);
    KT_CHECK(S->r[2].ok && S->r[2].st.remote_puts == 0 && kt_redis_int(&T, "EXISTS kcache:1:%s", name) == 0);
    name_of(10, name);
    job(3, fresh("me-a"), &small, DO_PUT_RANDOM, 10, 65536);
    KT_CHECK(S->r[3].ok && S->r[3].st.remote_puts == 0 && kt_redis_int(&T, "EXISTS kcache:1:%s", name) == 0);
    name_of(11, name);
    job(4, fresh("me-b"), &small, DO_PUT_RANDOM, 11, 4096);
    KT_CHECK(S->r[4].ok && S->r[4].st.remote_puts == 1 && kt_redis_int(&T, "EXISTS kcache:1:%s", name) == 1);
    /* a value larger than this client's limit (another client's is larger): a miss, nothing judged */
    name_of(12, name);
    job(5, fresh("me-c"), &mc, DO_PUT_RANDOM, 12, 65536);
    job(6, fresh("me-d"), &small, DO_GET, 12, 65536);
    KT_CHECK_MSG(S->r[6].status == KCACHE_MISS && S->r[6].st.remote_errors == 0 && S->r[6].st.remote_rejects == 0 &&
                     S->r[6].st.remote_open == 0 && kt_redis_int(&T, "EXISTS kcache:1:%s", name) == 1,
                 "a value over this client's KCACHE_REMOTE_MAX_ENTRY: %s, %llu errors, %llu rejects", kcache_strerror((kcache_status)S->r[6].status),
                 (unsigned long long)S->r[6].st.remote_errors, (unsigned long long)S->r[6].st.remote_rejects);
}

/* ---- shards --------------------------------------------------------------------------------------- */

#define SHARD_KEYS 240
static int gob_build(void *user, void **out, size_t *out_size) {
    unsigned id = *(unsigned *)user;
    *out = KCACHE_MALLOC(200);
    kt_payload((unsigned char *)*out, 200, id);
    *out_size = 200;
    return 0;
}
/* In a new process on a new store: get_or_build of every key; S->r[slot].st: its stats. */
static void all_keys(int slot, const mconf *mc) {
    const char *store = fresh("sh");
    pid_t p;
    fflush(stdout);
    p = fork();
    if (p == 0) {
        kcache *kc = open_machine(store, mc);
        unsigned id;
        int ok = 1;
        for (id = 1000; id < 1000 + SHARD_KEYS; id++) {
            kcache_key k;
            const void *d = NULL;
            size_t n = 0;
            kt_key(&k, "remote", id);
            ok &= kcache_get_or_build(kc, &k, gob_build, &id, &d, &n) == KCACHE_OK && kt_payload_ok(d, n, 200, id);
            if (d) kcache_release(kc, d);
            kcache_key_free(&k);
        }
        S->r[slot].ok = ok;
        kcache_get_stats(kc, &S->r[slot].st);
        kcache_close(kc);
        _exit(0);
    }
    waitpid(p, NULL, 0);
}

static void remote_shards(void) {
    kt_redis sv[4];
    char urls[4][2000];
    mconf mc;
    long long n[4], sum = 0;
    int i, up = 0;
    for (i = 0; i < 4; i++) up += kt_redis_start(&sv[i], g_root, 1, NULL);
    if (up != 4) { KT_FAILF("only %d of 4 servers started", up); for (i = 0; i < 4; i++) kt_redis_stop(&sv[i]); return; }
    snprintf(urls[0], sizeof urls[0], "%s %s  %s", sv[0].url, sv[1].url, sv[2].url);
    snprintf(urls[1], sizeof urls[1], "%s\t%s %s", sv[2].url, sv[0].url, sv[1].url); /* another order, the same shards */
    snprintf(urls[2], sizeof urls[2], "%s %s %s %s", sv[0].url, sv[1].url, sv[2].url, sv[3].url);
    memset(&mc, 0, sizeof mc);
    mc.url = urls[0];
    all_keys(0, &mc);
    KT_CHECK(S->r[0].ok && S->r[0].st.builds == SHARD_KEYS && S->r[0].st.remote_puts == SHARD_KEYS);
    for (i = 0; i < 3; i++) {
        n[i] = data_keys(&sv[i]);
        sum += n[i];
        KT_CHECK_MSG(n[i] >= SHARD_KEYS / 3 / 2, "shard %d holds %lld of %d keys", i, n[i], SHARD_KEYS);
    }
    KT_CHECK_EQ_U64(sum, SHARD_KEYS);
    mc.url = urls[1];
    all_keys(1, &mc);
    KT_CHECK_MSG(S->r[1].ok && S->r[1].st.hits_remote == SHARD_KEYS && S->r[1].st.builds == 0,
                 "the same shards listed in another order: %llu remote hits", (unsigned long long)S->r[1].st.hits_remote);
    mc.url = urls[2];
    all_keys(2, &mc);
    n[3] = data_keys(&sv[3]);
    KT_CHECK(S->r[2].ok);
    KT_CHECK_MSG(S->r[2].st.hits_remote + (uint64_t)n[3] == SHARD_KEYS && S->r[2].st.builds == (uint64_t)n[3],
                 "a 4th shard: %llu remote hits, %llu builds, %lld keys on the new shard", (unsigned long long)S->r[2].st.hits_remote,
                 (unsigned long long)S->r[2].st.builds, n[3]);
    KT_CHECK_MSG(n[3] >= SHARD_KEYS / 8 && n[3] <= SHARD_KEYS * 3 / 8, "a 4th shard moved %lld of %d keys (about a quarter expected)", n[3], SHARD_KEYS);
    for (i = 0; i < 3; i++) KT_CHECK_EQ_U64(data_keys(&sv[i]), n[i]); /* nothing moved between the old ones */
    printf("# remote_shards: 3 shards held %lld/%lld/%lld of %d keys; a 4th took %lld\n", n[0], n[1], n[2], SHARD_KEYS, n[3]);
    for (i = 0; i < 4; i++) kt_redis_stop(&sv[i]);
}

/* Finding 11: a writer of shard B's server copies A's kcache:id into B. The two then have one
   identity, and B left the ring (all keys on A). Shards of one identity are now one shard only when
   a claim taken on one is seen held on the other: B stays in the ring, with a secret or without. */
static void remote_identity_copied(void) {
    kt_redis A, B;
    char urls[1000];
    mconf mc;
    int sig;
    if (!kt_redis_start(&A, g_root, 1, NULL) || !kt_redis_start(&B, g_root, 1, NULL)) { KT_FAILF("redis-server did not start"); return; }
    snprintf(urls, sizeof urls, "%s %s", A.url, B.url);
    for (sig = 0; sig < 2; sig++) {
        redisReply *id, *r;
        long long a, b;
        memset(&mc, 0, sizeof mc);
        mc.url = urls; /* (a client of two shards: one of one shard asks no identity) */
        mc.secret = sig ? "identity secret" : NULL;
        job(0, fresh("id-a"), &mc, DO_PUT, 35100, 100); /* A and B get their ids */
        id = kt_redis_cmd(&A, "GET kcache:id");
        if (!id || id->type != REDIS_REPLY_STRING) { KT_FAILF("no kcache:id on A"); if (id) freeReplyObject(id); break; }
        r = kt_redis_cmd(&B, "SET kcache:id %b", id->str, id->len); /* the copy */
        if (r) freeReplyObject(r);
        freeReplyObject(id);
        mc.url = urls;
        all_keys(1, &mc);
        a = data_keys(&A), b = data_keys(&B);
        KT_CHECK_MSG(S->r[1].ok && a >= SHARD_KEYS / 4 && b >= SHARD_KEYS / 4, "%s: A's id copied into B: A holds %lld, B %lld of %d keys (want both in the ring)",
                     sig ? "signed" : "unsigned", a, b, SHARD_KEYS);
        printf("# remote_identity_copied (%s): A's id copied into B; A holds %lld, B %lld of %d keys\n", sig ? "signed" : "unsigned", a, b, SHARD_KEYS);
        kt_redis_int(&A, "FLUSHDB");
        kt_redis_int(&B, "FLUSHDB");
    }
    kt_redis_stop(&A);
    kt_redis_stop(&B);
}

/* ---- faults --------------------------------------------------------------------------------------- */

/* A server of the case's own (TCP), the machines' settings for it, and key id put by a first
   machine (0: none). 0 when the server did not start (said). */
static int fault_setup(kt_redis *srv, mconf *mc, const char *extra, uint32_t timeout_ms, uint32_t backoff_ms, unsigned id) {
    if (!kt_redis_start(srv, g_root, 1, extra)) { KT_FAILF("redis-server did not start"); return 0; }
    memset(mc, 0, sizeof *mc);
    mc->url = srv->url;
    mc->timeout_ms = timeout_ms;
    mc->backoff_ms = backoff_ms;
    if (id) job(0, fresh("writer"), mc, DO_PUT, id, 1000);
    return 1;
}

/* A machine that does `rounds` lookups of keys nobody has and `puts` puts, timing the first call
   and the rest: what a dead or hung remote costs it. */
static void lookups(kcache *kc, int slot, int rounds, int puts, double *first, double *rest) {
    double t0 = kt_now(), t1 = 0;
    int i;
    for (i = 0; i < rounds; i++) {
        act(kc, slot, DO_GET, 5000u + (unsigned)i, 10);
        if (i == 0) t1 = kt_now();
    }
    for (i = 0; i < puts; i++) {
        act(kc, slot, DO_PUT, 6000u + (unsigned)i, 2000);
        if (!S->r[slot].ok) break;
    }
    *first = t1 - t0;
    *rest = kt_now() - t1;
}

static void remote_killed(void) {
    kt_redis K;
    mconf mc;
    stepper m;
    int st, child;
    if (!fault_setup(&K, &mc, NULL, 200, 5000, 12)) return;
    if ((child = step_fork(&m)) < 0) { kt_redis_stop(&K); return; }
    if (child) { /* a machine already talking to the server (a pooled connection) when it dies */
        kcache *kc = open_machine(fresh("kl-b"), &mc);
        double first, rest;
        act(kc, 1, DO_GET, 12, 1000);
        S->r[2].ok = S->r[1].ok && S->r[1].st.hits_remote == 1;
        step_here(&m);
        lookups(kc, 3, 50, 10, &first, &rest);
        S->r[4].secs = first;
        S->r[5].secs = rest;
        act(kc, 6, DO_GET, 6005, 2000); /* what it put meanwhile is there, locally */
        kcache_close(kc);
        _exit(0);
    }
    if (step_reached(&m)) kt_redis_kill(&K);
    step_go(&m);
    st = step_end(&m);
    KT_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the machine died (status %d) when the server did", st);
    KT_CHECK_MSG(S->r[2].ok, "no remote hit before the kill");
    KT_CHECK_MSG(S->r[3].ok, "a put while the server is dead failed: %s", kcache_strerror((kcache_status)S->r[3].status));
    KT_CHECK(S->r[6].ok);
    KT_CHECK_MSG(S->r[3].st.remote_errors == 1 && S->r[3].st.remote_skipped >= 58, "errors %llu skipped %llu",
                 (unsigned long long)S->r[3].st.remote_errors, (unsigned long long)S->r[3].st.remote_skipped);
    /* bounds that catch a hang on the dead server, not a slow machine (CI: 2 loaded cores) */
    KT_CHECK_MSG(S->r[4].secs < 5.0 && S->r[5].secs < 10.0, "first lookup %.3f s, then 49 lookups and 10 puts %.3f s", S->r[4].secs, S->r[5].secs);
    printf("# remote_killed: first lookup after the kill %.2f ms, then 49 lookups + 10 puts in %.2f ms\n", S->r[4].secs * 1e3, S->r[5].secs * 1e3);
    kt_redis_stop(&K);
}

static void remote_sigstop(void) {
    kt_redis H;
    mconf mc;
    stepper m;
    int child;
    if (!fault_setup(&H, &mc, NULL, 200, 400, 13)) return;
    if ((child = step_fork(&m)) < 0) { kt_redis_stop(&H); return; }
    if (child) {
        kcache *kc = open_machine(fresh("st-b"), &mc);
        double first, rest, t;
        act(kc, 1, DO_GET, 99, 10); /* connected and pooled */
        step_here(&m);
        lookups(kc, 2, 40, 5, &first, &rest);
        S->r[3].secs = first;
        S->r[4].secs = rest;
        act(kc, 5, DO_EXPLAIN, 13, 0); /* explain with the breaker open: the local reason, at once */
        step_here(&m);
        for (t = kt_now(); kt_now() - t < 5.0; kt_sleep_ms(50)) { /* SIGCONT: back after the back-off */
            act(kc, 6, DO_GET, 13, 1000);
            if (S->r[6].ok) break;
        }
        kcache_close(kc);
        _exit(0);
    }
    if (step_reached(&m)) kill(H.pid, SIGSTOP);
    step_go(&m);
    if (step_reached(&m)) kill(H.pid, SIGCONT);
    step_go(&m);
    step_end(&m);
    KT_CHECK_MSG(S->r[2].st.remote_timeouts == 1, "%llu timeouts while stopped (want 1)", (unsigned long long)S->r[2].st.remote_timeouts);
    /* the timeout is waited, and then given up (a stopped server never answers): not a speed check */
    KT_CHECK_MSG(S->r[3].secs >= 0.15 && S->r[3].secs < 3.0, "the first lookup took %.3f s (timeout 0.2 s)", S->r[3].secs);
    /* the breaker open: 44 calls waiting out the timeout would take 8.8 s */
    KT_CHECK_MSG(S->r[4].secs < 4.0, "39 lookups and 5 puts with the breaker open took %.3f s", S->r[4].secs);
    KT_CHECK_MSG(S->r[2].ok, "a put while the server was stopped failed");
    /* (that explain makes no call while the breaker is open is counted in remote_explain_stats) */
    KT_CHECK_MSG(strncmp(S->r[5].why, "miss: ", 6) == 0, "explain: %s (%.3f s)", S->r[5].why, S->r[5].secs);
    KT_CHECK_MSG(S->r[6].ok && S->r[6].st.hits_remote == 1 && S->r[6].st.remote_open == 0, "after SIGCONT: hit %d, remote hits %llu, open %llu",
                 S->r[6].ok, (unsigned long long)S->r[6].st.hits_remote, (unsigned long long)S->r[6].st.remote_open);
    printf("# remote_sigstop: one timeout %.0f ms, then 39 lookups + 5 puts in %.2f ms\n", S->r[3].secs * 1e3, S->r[4].secs * 1e3);
    kill(H.pid, SIGCONT);
    kt_redis_stop(&H);
}

static void remote_debug_sleep(void) {
    kt_redis D;
    mconf mc;
    pid_t sleeper;
    double t;
    if (!fault_setup(&D, &mc, NULL, 200, 300, 14)) return;
    fflush(stdout);
    sleeper = fork();
    if (sleeper == 0) {
        redisReply *r = kt_redis_cmd(&D, "DEBUG SLEEP 1.5");
        if (r) freeReplyObject(r);
        _exit(0);
    }
    kt_sleep_ms(100);
    job(1, fresh("ds-b"), &mc, DO_GET, 14, 1000);
    KT_CHECK_MSG(S->r[1].status == KCACHE_MISS && S->r[1].st.remote_timeouts == 1, "during DEBUG SLEEP: %s, %llu timeouts",
                 kcache_strerror((kcache_status)S->r[1].status), (unsigned long long)S->r[1].st.remote_timeouts);
    KT_CHECK_MSG(S->r[1].secs < 1.4, "the lookup took %.3f s (timeout 0.2 s, the server asleep 1.5 s)", S->r[1].secs);
    waitpid(sleeper, NULL, 0);
    t = kt_now();
    job(2, fresh("ds-c"), &mc, DO_GET, 14, 1000);
    KT_CHECK(S->r[2].ok && S->r[2].st.hits_remote == 1);
    (void)t;
    kt_redis_stop(&D);
}

/* In a new process on a new store: n puts of `size` random (incompressible) bytes from key first;
   S->r[slot]: the last put's result, S->r[slot + 1].ok: every put returned KCACHE_OK. */
static void put_many(int slot, const mconf *mc, unsigned first, int n, size_t size) {
    const char *store = fresh("many");
    pid_t p;
    fflush(stdout);
    p = fork();
    if (p == 0) {
        kcache *kc = open_machine(store, mc);
        int i, ok = 1;
        for (i = 0; i < n; i++) {
            act(kc, slot, DO_PUT_RANDOM, first + (unsigned)i, size);
            ok &= S->r[slot].ok;
        }
        S->r[slot + 1].ok = ok;
        kcache_close(kc);
        _exit(0);
    }
    waitpid(p, NULL, 0);
}

static void remote_full(void) {
    kt_redis F;
    mconf mc;
    long long keys;
    if (!fault_setup(&F, &mc, "maxmemory-policy noeviction", 300, 200, 0)) return;
    { redisReply *r = kt_redis_cmd(&F, "CONFIG SET maxmemory 3mb"); if (r) freeReplyObject(r); }
    put_many(0, &mc, 7000, 60, 100000); /* 100 KiB that zstd cannot shrink, until the server is full */
    KT_CHECK_MSG(S->r[1].ok, "a put failed for the caller when the remote was full");
    KT_CHECK_MSG(S->r[0].st.remote_errors >= 1 && S->r[0].st.remote_skipped >= 1 && S->r[0].st.remote_open == 0,
                 "full server: errors %llu skipped %llu open %llu", (unsigned long long)S->r[0].st.remote_errors,
                 (unsigned long long)S->r[0].st.remote_skipped, (unsigned long long)S->r[0].st.remote_open);
    keys = kt_redis_int(&F, "DBSIZE");
    KT_CHECK_MSG(keys > 0 && keys < 60, "%lld keys on a 3 MB server after 60 puts of 100 KB", keys);
    /* reads go on: the first key is there (random bytes, not kt_payload's: only the status counts) */
    job(2, fresh("fu-b"), &mc, DO_GET, 7000, 100000);
    KT_CHECK_MSG(S->r[2].status == KCACHE_OK && S->r[2].st.hits_remote == 1, "a read from the full server: %s",
                 kcache_strerror((kcache_status)S->r[2].status));
    /* allkeys-lru: the server evicts, the puts land */
    { redisReply *r = kt_redis_cmd(&F, "CONFIG SET maxmemory-policy allkeys-lru"); if (r) freeReplyObject(r); }
    put_many(3, &mc, 8000, 60, 100000);
    KT_CHECK(S->r[4].ok);
    KT_CHECK_MSG(S->r[3].st.remote_errors == 0 && S->r[3].st.remote_puts == 60, "with allkeys-lru: %llu errors, %llu puts",
                 (unsigned long long)S->r[3].st.remote_errors, (unsigned long long)S->r[3].st.remote_puts);
    {
        /* What kcache promises: once the server can evict, puts land (above: no errors) and the
           newest is served. Which older key Redis evicted is Redis's choice (its LRU samples keys),
           so no particular one is asserted gone: only that it did evict (issue 28). */
        char name[33];
        name_of(8059, name);
        KT_CHECK(kt_redis_int(&F, "EXISTS kcache:1:%s", name) == 1);
        keys = kt_redis_int(&F, "DBSIZE");
        KT_CHECK_MSG(keys > 0 && keys < 120, "%lld keys on a 3 MB server after 120 puts of 100 KB: nothing was evicted", keys);
        job(5, fresh("fu-c"), &mc, DO_GET, 8059, 100000);
        KT_CHECK_MSG(S->r[5].status == KCACHE_OK && S->r[5].st.hits_remote == 1, "the newest put, read from the evicting server: %s",
                     kcache_strerror((kcache_status)S->r[5].status));
    }
    kt_redis_stop(&F);
}

static void remote_restart(void) {
    kt_redis R;
    mconf mc;
    pid_t p;
    if (!fault_setup(&R, &mc, NULL, 200, 100, 0)) return;
    S->building = 1; /* the machine runs while this is set */
    fflush(stdout);
    p = fork();
    if (p == 0) { /* puts and gets for as long as the parent says, through the kill and the restart */
        kcache *kc = open_machine(fresh("rs-a"), &mc);
        unsigned id = 9000;
        int ok = 1;
        while (__atomic_load_n(&S->building, __ATOMIC_RELAXED)) {
            act(kc, 0, DO_PUT, id, 3000);
            ok &= S->r[0].ok;
            act(kc, 0, DO_GET, id, 3000);
            ok &= S->r[0].ok;
            id++;
            kt_sleep_ms(5);
        }
        S->r[1].ok = ok;
        S->r[1].status = (int)id;
        kcache_close(kc);
        _exit(0);
    }
    kt_sleep_ms(300);
    kt_redis_kill(&R);
    kt_sleep_ms(300);
    KT_CHECK_MSG(kt_redis_restart(&R), "redis-server did not start again");
    kt_sleep_ms(600);
    __atomic_store_n(&S->building, 0, __ATOMIC_RELAXED);
    waitpid(p, NULL, 0);
    KT_CHECK_MSG(S->r[1].ok, "a put or get failed for the caller through the restart");
    KT_CHECK_MSG(S->r[0].st.remote_errors >= 1 && S->r[0].st.remote_open == 0, "errors %llu, open at the end %llu",
                 (unsigned long long)S->r[0].st.remote_errors, (unsigned long long)S->r[0].st.remote_open);
    KT_CHECK_MSG(kt_redis_int(&R, "DBSIZE") > 0, "nothing reached the restarted server");
    kt_redis_stop(&R);
}

static int build_once(void *user, void **out, size_t *out_size) {
    (void)user;
    *out = KCACHE_MALLOC(500);
    kt_payload((unsigned char *)*out, 500, 77);
    *out_size = 500;
    return 0;
}

static void remote_garbage(void) {
    int mode;
    for (mode = 0; mode < KT_GARBAGE_COUNT; mode++) {
        mconf mc;
        char url[100];
        int port = 0, st;
        pid_t g = kt_garbage_start(mode, &port), p;
        if (!g) { KT_FAILF("%s: garbage server did not start", kt_garbage_name[mode]); continue; }
        snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
        memset(&mc, 0, sizeof mc);
        mc.url = url;
        mc.timeout_ms = 200;
        mc.backoff_ms = 50; /* every call goes to it (one at a time): each is a fault */
        mc.max_entry = 16 << 20;
        memset(&S->r[0], 0, sizeof S->r[0]);
        fflush(stdout);
        p = fork();
        if (p == 0) {
            kcache *kc = open_machine(fresh("gb"), &mc);
            kcache_key k;
            const void *d = NULL;
            size_t n = 0;
            int ok = 1, i;
            double t = kt_now();
            for (i = 0; i < 3; i++) {
                kt_sleep_ms(60);
                act(kc, 1, DO_PUT_RANDOM, 100u + (unsigned)i, 6 << 20); /* more than a socket buffer: a write after the hang-up */
                ok &= S->r[1].ok;
                kt_sleep_ms(60);
                act(kc, 1, DO_GET, 200u + (unsigned)i, 10);
                ok &= S->r[1].status == KCACHE_MISS;
            }
            kt_sleep_ms(60);
            kt_key(&k, "remote", 77);
            ok &= kcache_get_or_build(kc, &k, build_once, NULL, &d, &n) == KCACHE_OK && kt_payload_ok(d, n, 500, 77);
            if (d) kcache_release(kc, d);
            kcache_key_free(&k);
            act(kc, 1, DO_GET, 101, 6 << 20);
            S->r[0].ok = ok && S->r[1].status == KCACHE_OK; /* the local store is intact */
            S->r[0].secs = kt_now() - t;
            kcache_get_stats(kc, &S->r[0].st);
            kcache_close(kc);
            _exit(0);
        }
        waitpid(p, &st, 0);
        KT_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: the machine %s %d", kt_garbage_name[mode],
                     WIFSIGNALED(st) ? "died of signal" : "exited with", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        KT_CHECK_MSG(S->r[0].ok, "%s: a call failed or a payload was wrong", kt_garbage_name[mode]);
        KT_CHECK_MSG(S->r[0].st.remote_errors + S->r[0].st.remote_rejects >= 3 && S->r[0].st.hits_remote == 0,
                     "%s: errors %llu rejects %llu remote hits %llu", kt_garbage_name[mode], (unsigned long long)S->r[0].st.remote_errors,
                     (unsigned long long)S->r[0].st.remote_rejects, (unsigned long long)S->r[0].st.hits_remote);
        KT_CHECK_MSG(S->r[0].secs < 8.0, "%s: the calls took %.1f s", kt_garbage_name[mode], S->r[0].secs);
        printf("# remote_garbage %-6s %5.2f s for 3 puts, 3 gets and a get_or_build: %llu errors (%llu timeouts), %llu rejects\n",
               kt_garbage_name[mode], S->r[0].secs, (unsigned long long)S->r[0].st.remote_errors,
               (unsigned long long)S->r[0].st.remote_timeouts, (unsigned long long)S->r[0].st.remote_rejects);
        kt_garbage_stop(g);
    }
}

static void remote_partition(void) {
    mconf mc;
    memset(&mc, 0, sizeof mc);
    mc.url = "redis://192.0.2.1:6379"; /* TEST-NET-1: nobody answers (or there is no route at all) */
    mc.timeout_ms = 500;
    job(0, fresh("pt"), &mc, DO_GET, 15, 10);
    KT_CHECK(S->r[0].status == KCACHE_MISS && S->r[0].st.remote_errors == 1);
    /* a connect without kcache's timeout waits out the kernel's (minutes) */
    KT_CHECK_MSG(S->r[0].secs < 3.0, "an unreachable server cost %.3f s (connect timeout 0.1 s)", S->r[0].secs);
    printf("# remote_partition: %.1f ms for a lookup on an address nobody answers\n", S->r[0].secs * 1e3);
}

/* ---- one build per cluster ------------------------------------------------------------------------ */

typedef struct bplan { int ms, fail_first; } bplan; /* the first build takes ms, later ones 0.2 s */
static int cluster_build(void *user, void **out, size_t *out_size) {
    bplan *b = (bplan *)user;
    int nth = __atomic_add_fetch(&S->builds, 1, __ATOMIC_SEQ_CST);
    S->build_start = kt_now();
    __atomic_store_n(&S->building, 1, __ATOMIC_SEQ_CST);
    kt_sleep_ms(nth == 1 ? (unsigned)b->ms : 200u);
    S->build_end = kt_now();
    if (b->fail_first && nth == 1) return 1;
    *out = KCACHE_MALLOC(30000);
    kt_payload((unsigned char *)*out, 30000, 16);
    *out_size = 30000;
    return 0;
}
/* n machines (processes, stores of their own) call get_or_build of key 16 at once; the first
   `early` start before the others. Returns the wall time; S->r[i]: each one's result. */
static double cluster(int n, int early, const mconf *mc, bplan *bp, int kill_first_after_ms) {
    pid_t p[16];
    int gate[2], i;
    double t0;
    S->builds = S->building = 0;
    if (pipe(gate) != 0) return -1;
    for (i = 0; i < n; i++) {
        memset(&S->r[i], 0, sizeof S->r[i]);
        S->r[i].status = -1;
        fflush(stdout);
        p[i] = fork();
        if (p[i] == 0) {
            char store[32];
            kcache *kc;
            kcache_key k;
            const void *d = NULL;
            size_t len = 0;
            char c;
            double t;
            snprintf(store, sizeof store, "cl%d-%d", S->seq, i);
            kc = open_machine(store, mc);
            close(gate[1]);
            if (i >= early && read(gate[0], &c, 1) < 0) _exit(2); /* released together */
            kt_key(&k, "remote", 16);
            t = kt_now();
            S->r[i].status = kcache_get_or_build(kc, &k, cluster_build, bp, &d, &len);
            S->r[i].secs = kt_now() - t;
            S->r[i].ok = S->r[i].status == KCACHE_OK && kt_payload_ok(d, len, 30000, 16);
            if (d) kcache_release(kc, d);
            kcache_get_stats(kc, &S->r[i].st);
            kcache_key_free(&k);
            kcache_close(kc);
            _exit(0);
        }
    }
    close(gate[0]);
    if (early) { /* the early ones build before the others arrive */
        double w = kt_now();
        while (!__atomic_load_n(&S->building, __ATOMIC_SEQ_CST) && kt_now() - w < 5) kt_sleep_ms(2);
        kt_sleep_ms(50);
    } else {
        kt_sleep_ms(150); /* everyone opened its store */
    }
    t0 = kt_now();
    close(gate[1]);
    if (kill_first_after_ms) {
        kt_sleep_ms((unsigned)kill_first_after_ms);
        kill(p[0], SIGKILL);
    }
    for (i = 0; i < n; i++) waitpid(p[i], NULL, 0);
    S->seq++;
    return kt_now() - t0;
}

static void remote_cluster_build(void) {
    mconf mc;
    bplan bp = {400, 0};
    double wall;
    int i, good = 0, waited = 0;
    memset(&mc, 0, sizeof mc);
    mc.url = T.url;
    { redisReply *r = kt_redis_cmd(&T, "FLUSHALL"); if (r) freeReplyObject(r); }
    wall = cluster(8, 0, &mc, &bp, 0);
    for (i = 0; i < 8; i++) { good += S->r[i].ok; waited += S->r[i].st.build_waits > 0; }
    KT_CHECK_EQ_U64(S->builds, 1);
    KT_CHECK_EQ_U64(good, 8);
    /* how long it took is bench_remote's figure, not a check: one build and seven waiters is */
    printf("# remote_cluster_build: 8 machines and one 0.4 s build: %.2f s\n", wall);
    KT_CHECK_MSG(waited == 7, "%d machines waited for the build (want 7)", waited);
    {
        char name[33];
        name_of(16, name);
        KT_CHECK_MSG(kt_redis_int(&T, "EXISTS {kcache:1:%s}:claim", name) == 0, "the claim was not released");
    }
    printf("# remote_cluster_build: 8 machines, %d build of 0.4 s, %.3f s wall (%.2fx one build)\n", S->builds, wall, wall / 0.4);
}

/* ---- Redis Cluster (issue 26.6) ---- */

/* Memory-only handles on url: n keys (from first) put through one, read through another; the hits. */
static int cluster_keys(const char *url, const char *read_url, unsigned first, int n) {
    kcache_config cfg;
    kcache *a = NULL, *b = NULL;
    int i, hits = 0;
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.remote_timeout_ms = 2000;
    cfg.remote = url;
    if (kcache_open(&a, &cfg) != KCACHE_OK) return -1;
    cfg.remote = read_url;
    if (kcache_open(&b, &cfg) != KCACHE_OK) { kcache_close(a); return -1; }
    for (i = 0; i < n; i++) kt_put(a, "remote", first + (unsigned)i, first + (unsigned)i, 2000);
    for (i = 0; i < n; i++) hits += kt_get(b, "remote", first + (unsigned)i, first + (unsigned)i, 2000) == 1;
    kcache_close(a);
    kcache_close(b);
    return hits;
}

/* A node's id (CLUSTER MYID) into out. */
static void node_id(const kt_redis *n, char out[64]) {
    redisReply *r = kt_redis_cmd(n, "CLUSTER MYID");
    snprintf(out, 64, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "?");
    if (r) freeReplyObject(r);
}

/* A 3-node cluster started here (slots split in three, CLUSTER MEET): one listed node serves every
   key; three listed nodes are seeds of one cluster; a build claim is one per cluster; a key whose
   slot is being migrated is followed through ASK. */
static void remote_cluster(void) {
    static const int range[3][2] = {{0, 5460}, {5461, 10922}, {10923, 16383}};
    kt_redis N[3];
    const char *why;
    char all[1400], name[33], key[64], src_id[64], dst_id[64];
    int i, ok = 0, hits, src = -1, dst;
    long long slot;
    mconf mc;
    bplan bp = {400, 0};
    if ((why = kt_cluster3_start(N, g_root, NULL)) != NULL) {
        KT_FAILF("%s", why);
        return;
    }

    hits = cluster_keys(N[1].url, N[1].url, 5000, 60); /* one listed node */
    KT_CHECK_MSG(hits == 60, "one node listed: %d of 60 keys read back", hits);
    for (i = 0; i < 3; i++) KT_CHECK_MSG(kt_redis_int(&N[i], "DBSIZE") > 5, "node %d holds %lld keys", i, kt_redis_int(&N[i], "DBSIZE"));
    snprintf(all, sizeof all, "%s %s %s", N[2].url, N[0].url, N[1].url); /* seeds: written through all three, read through one */
    hits = cluster_keys(all, N[0].url, 6000, 60);
    KT_CHECK_MSG(hits == 60, "three nodes listed, read through one: %d of 60", hits);
    hits = cluster_keys(N[2].url, all, 7000, 60);
    KT_CHECK_MSG(hits == 60, "one node listed, read through three: %d of 60", hits);
    { /* a batch's read-back through one node, the slot map not known yet: its pipeline of GETs gets
         MOVED for the keys of the other nodes, which are asked again there */
        kcache_config cfg;
        kcache *kc = NULL;
        kcache_config_init(&cfg);
        cfg.persistent = 0;
        cfg.remote_timeout_ms = 2000;
        cfg.remote = N[0].url;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
        hits = batch_read(kc, "remote", 5000, 60, 2000);
        KT_CHECK_MSG(hits == 60, "a batch read through one node: %d of 60", hits);
        kcache_close(kc);
    }
    { /* the three listed nodes are seeds of one cluster: one shard holds the keys, the others repeat it */
        kcache_config cfg;
        kcache *kc = NULL;
        kcache_remote_shard sh[3];
        kcache_config_init(&cfg);
        cfg.persistent = 0;
        cfg.remote = all;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
        KT_CHECK(kt_get(kc, "remote", 7000, 7000, 2000) == 1);
        KT_CHECK_MSG(kcache_get_remote_shards(kc, sh, 3) == 3 && !sh[0].same && sh[1].same && sh[2].same, "seeds: same %d %d %d", sh[0].same,
                     sh[1].same, sh[2].same);
        kcache_close(kc);
    }

    memset(&mc, 0, sizeof mc); /* build claims: 4 machines, 1 build */
    mc.url = N[2].url;
    mc.timeout_ms = 2000;
    cluster(4, 0, &mc, &bp, 0);
    for (ok = 0, i = 0; i < 4; i++) ok += S->r[i].ok;
    KT_CHECK_MSG(S->builds == 1 && ok == 4, "4 machines on a cluster: %d builds, %d right payloads", S->builds, ok);
    name_of(16, name);
    for (i = 0; i < 3; i++) KT_CHECK(kt_redis_int(&N[i], "EXISTS {kcache:1:%s}:claim", name) <= 0);

    /* ASK: key 8000's slot is half-way from its node to the next one (the value moved already) */
    KT_CHECK_EQ_U64((uint64_t)cluster_keys(N[0].url, N[0].url, 8000, 1), 1);
    name_of(8000, name);
    snprintf(key, sizeof key, "kcache:1:%s", name);
    slot = kt_redis_int(&N[0], "CLUSTER KEYSLOT %s", key);
    for (i = 0; i < 3; i++)
        if (slot >= range[i][0] && slot <= range[i][1]) src = i;
    if (src < 0) { KT_FAILF("no node for slot %lld", slot); goto out; }
    dst = (src + 1) % 3;
    node_id(&N[src], src_id);
    node_id(&N[dst], dst_id);
    {
        redisReply *r1 = kt_redis_cmd(&N[dst], "CLUSTER SETSLOT %lld IMPORTING %s", slot, src_id);
        redisReply *r2 = kt_redis_cmd(&N[src], "CLUSTER SETSLOT %lld MIGRATING %s", slot, dst_id);
        redisReply *r3 = kt_redis_cmd(&N[src], "MIGRATE 127.0.0.1 %d %s 0 5000", N[dst].port, key);
        KT_CHECK_MSG(r1 && r2 && r3 && r3->type == REDIS_REPLY_STATUS, "migrating the slot: %s", r3 && r3->str ? r3->str : "no reply");
        if (r1) freeReplyObject(r1);
        if (r2) freeReplyObject(r2);
        if (r3) freeReplyObject(r3);
    }
    KT_CHECK(kt_redis_int(&N[src], "EXISTS %s", key) <= 0); /* (an ASK error there: gone from it) */
    {
        kcache_config cfg;
        kcache *kc = NULL;
        kcache_stats st;
        kcache_config_init(&cfg);
        cfg.persistent = 0;
        cfg.remote = N[src].url;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
        KT_CHECK_MSG(kt_get(kc, "remote", 8000, 8000, 2000) == 1, "a key in a slot being migrated (ASK) was not found");
        kcache_get_stats(kc, &st);
        KT_CHECK_EQ_U64(st.remote_errors, 0);
        kcache_close(kc);
    }
out:
    for (i = 0; i < 3; i++) kt_redis_stop(&N[i]);
}

/* ---- the same shards spelled differently (issue 26.3) ---- */

/* Two servers listed as localhost, LOCALHOST, 127.0.0.1, with and without /0, by their unix
   sockets, in any order, one of them twice: 200 keys stored through one spelling are all found
   through every other. */
static void remote_spellings(void) {
    kt_redis A, B;
    char sp[6][1000];
    int i, hits;
    if (!kt_redis_start(&A, g_root, 1, NULL) || !kt_redis_start(&B, g_root, 1, NULL)) { KT_FAILF("redis-server did not start"); return; }
    snprintf(sp[0], sizeof sp[0], "redis://localhost:%d redis://127.0.0.1:%d", A.port, B.port);
    snprintf(sp[1], sizeof sp[1], "redis://127.0.0.1:%d/0 redis://LOCALHOST:%d/0", B.port, A.port);
    snprintf(sp[2], sizeof sp[2], "redis://LocalHost:%d/ redis://localhost:%d", A.port, B.port);
    snprintf(sp[3], sizeof sp[3], "unix://%s unix://%s", B.sock, A.sock);
    snprintf(sp[4], sizeof sp[4], "redis://127.0.0.1:%d unix://%s redis://localhost:%d", A.port, B.sock, B.port); /* B twice */
    snprintf(sp[5], sizeof sp[5], "redis://127.0.0.1:%d redis://127.0.0.1:%d", A.port, B.port);
    for (i = 1; i < 6; i++) {
        hits = cluster_keys(sp[0], sp[i], 9000 + 200 * (unsigned)i, 200);
        KT_CHECK_MSG(hits == 200, "stored through \"%s\", read through \"%s\": %d of 200", sp[0], sp[i], hits);
        hits = cluster_keys(sp[i], sp[0], 20000 + 200 * (unsigned)i, 200);
        KT_CHECK_MSG(hits == 200, "stored through \"%s\", read through \"%s\": %d of 200", sp[i], sp[0], hits);
    }
    KT_CHECK_MSG(data_keys(&A) > 400 && data_keys(&B) > 400, "the keys were not spread over both: %lld and %lld", data_keys(&A), data_keys(&B));
    kt_redis_stop(&A);
    kt_redis_stop(&B);
}

/* ---- an expiry and a namespace (issue 26.9) ---- */

static kcache *open_ns(const kt_redis *srv, const char *prefix, uint32_t ttl_s) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.remote = srv->url;
    cfg.remote_prefix = prefix;
    cfg.remote_ttl_s = ttl_s;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return NULL;
    return kc;
}

/* KCACHE_REMOTE_PREFIX puts every key in a namespace of its own (another prefix, or none, does not
   see it); KCACHE_REMOTE_TTL sets an expiry on every put; both read from the environment; a prefix
   that would break a key is refused, with the reason. */
static void remote_ttl_prefix(void) {
    kcache *a = open_ns(&T, "team-a/", 3600), *b = open_ns(&T, "team-b/", 0), *c = open_ns(&T, NULL, 0), *a2 = open_ns(&T, "team-a/", 0);
    char name[33], why[400];
    long long ttl;
    KT_CHECK(a && b && c && a2);
    if (!a || !b || !c || !a2) goto out;
    KT_CHECK_EQ_U64((uint64_t)kt_put(a, "remote", 31000, 1, 500), KCACHE_OK);
    KT_CHECK_EQ_U64((uint64_t)kt_put(c, "remote", 31001, 1, 500), KCACHE_OK);
    name_of(31000, name);
    KT_CHECK_EQ_U64((uint64_t)kt_redis_int(&T, "EXISTS team-a/kcache:1:%s", name), 1);
    KT_CHECK_EQ_U64((uint64_t)kt_redis_int(&T, "EXISTS kcache:1:%s", name), 0);
    ttl = kt_redis_int(&T, "TTL team-a/kcache:1:%s", name);
    KT_CHECK_MSG(ttl > 3000 && ttl <= 3600, "TTL of an entry put with KCACHE_REMOTE_TTL=3600: %lld", ttl);
    name_of(31001, name);
    KT_CHECK_EQ_U64((uint64_t)kt_redis_int(&T, "TTL kcache:1:%s", name) + 1, 0); /* -1: no expiry without a TTL */
    KT_CHECK_MSG(kt_get(a2, "remote", 31000, 1, 500) == 1, "the same prefix did not find it");
    KT_CHECK_MSG(kt_get(b, "remote", 31000, 1, 500) == 0 && kt_get(c, "remote", 31000, 1, 500) == 0, "another namespace found it");
    KT_CHECK_MSG(kt_get(b, "remote", 31001, 1, 500) == 0, "a prefixed client found an unprefixed entry");
    {
        kcache_config cfg;
        static const char *const ttls[][2] = {{"7d", "604800"}, {"12h", "43200"}, {"30m", "1800"}, {"90s", "90"}, {"3600", "3600"},
                                              {"5x", "0"}, {"-1", "0"}, {"0", "0"}, {"99999d", "0"}};
        unsigned i;
        for (i = 0; i < sizeof ttls / sizeof *ttls; i++) {
            setenv("KCACHE_REMOTE_TTL", ttls[i][0], 1);
            kcache_config_init(&cfg);
            KT_CHECK_MSG(cfg.remote_ttl_s == (uint32_t)atol(ttls[i][1]), "KCACHE_REMOTE_TTL=%s: %u", ttls[i][0], (unsigned)cfg.remote_ttl_s);
            KT_CHECK_MSG((cfg.env_bad != 0) == (ttls[i][1][0] == '0'), "KCACHE_REMOTE_TTL=%s: bad %u", ttls[i][0], (unsigned)cfg.env_bad);
        }
        unsetenv("KCACHE_REMOTE_TTL");
        setenv("KCACHE_REMOTE_PREFIX", "ci/", 1);
        kcache_config_init(&cfg);
        KT_CHECK(cfg.remote_prefix && strcmp(cfg.remote_prefix, "ci/") == 0);
        unsetenv("KCACHE_REMOTE_PREFIX");
    }
    {
        kcache *bad = open_ns(&T, "a b", 0);
        KT_CHECK_MSG(bad && kcache_remote_in_use(bad, why, sizeof why) == 0 && strstr(why, "KCACHE_REMOTE_PREFIX"), "a prefix with a space: %s", why);
        kcache_close(bad);
    }
out:
    kcache_close(a);
    kcache_close(b);
    kcache_close(c);
    kcache_close(a2);
}

/* ---- per-shard counters (issue 26.9) ---- */

/* Two shards: hits and misses counted on the shard that answered; after one is killed, its errors
   and skipped calls, and its breaker open; no password shown; B listed twice is "same". */
static void remote_shard_counters(void) {
    kt_redis A, B;
    char url[1200];
    kcache_config cfg;
    kcache *a = NULL, *b = NULL;
    kcache_remote_shard sh[4];
    unsigned n, i;
    uint64_t hits = 0, misses = 0;
    if (!kt_redis_start(&A, g_root, 1, "requirepass hunter2") || !kt_redis_start(&B, g_root, 1, "requirepass hunter2")) {
        KT_FAILF("redis-server did not start");
        return;
    }
    snprintf(url, sizeof url, "redis://:hunter2@127.0.0.1:%d redis://:hunter2@127.0.0.1:%d redis://:hunter2@localhost:%d", A.port, B.port, B.port);
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.remote = url;
    cfg.remote_timeout_ms = 300;
    cfg.remote_backoff_ms = 60000;
    KT_CHECK(kcache_open(&a, &cfg) == KCACHE_OK && kcache_open(&b, &cfg) == KCACHE_OK);
    if (!a || !b) goto out;
    KT_CHECK_EQ_U64(kcache_get_remote_shards(a, NULL, 0), 3);
    for (i = 0; i < 40; i++) kt_put(a, "remote", 32000 + i, 1, 300);
    for (i = 0; i < 40; i++) KT_CHECK(kt_get(b, "remote", 32000 + i, 1, 300) == 1);
    for (i = 0; i < 10; i++) KT_CHECK(kt_get(b, "remote", 33000 + i, 1, 300) == 0);
    n = kcache_get_remote_shards(b, sh, 4);
    KT_CHECK_EQ_U64(n, 3);
    for (i = 0; i < 3; i++) {
        hits += sh[i].hits, misses += sh[i].misses;
        KT_CHECK_MSG(!strstr(sh[i].url, "hunter2") && strncmp(sh[i].url, "redis://", 8) == 0, "shard %u: %s", i, sh[i].url);
        KT_CHECK(sh[i].errors == 0 && sh[i].open == 0);
    }
    KT_CHECK_MSG(hits == 40 && misses == 10 && sh[0].hits > 0 && sh[1].hits > 0, "hits %llu + %llu, misses %llu", (unsigned long long)sh[0].hits,
                 (unsigned long long)sh[1].hits, (unsigned long long)misses);
    KT_CHECK_MSG(sh[2].same && !sh[1].same && !sh[0].same && sh[2].hits == 0, "B listed twice: same %d %d %d", sh[0].same, sh[1].same, sh[2].same);
    kt_redis_kill(&B);
    kcache_close(b);
    b = NULL;
    KT_CHECK(kcache_open(&b, &cfg) == KCACHE_OK);
    for (i = 0; i < 40; i++) kt_get(b, "remote", 32000 + i, 1, 300);
    n = kcache_get_remote_shards(b, sh, 4);
    KT_CHECK_MSG(n == 3 && sh[0].hits > 0 && sh[0].errors == 0 && sh[1].errors >= 1 && sh[1].skipped >= 1 && sh[1].open == 1 && sh[1].hits == 0,
                 "after B was killed: A %llu hits %llu errors; B %llu errors %llu skipped open %d", (unsigned long long)sh[0].hits,
                 (unsigned long long)sh[0].errors, (unsigned long long)sh[1].errors, (unsigned long long)sh[1].skipped, sh[1].open);
out:
    kcache_close(a);
    kcache_close(b);
    kt_redis_stop(&A);
    kt_redis_stop(&B);
}

static void remote_builder_killed(void) {
    mconf mc;
    bplan bp = {3000, 0};
    int i, good = 0;
    double wall;
    memset(&mc, 0, sizeof mc);
    mc.url = T.url;
    mc.claim_ms = 600;
    { redisReply *r = kt_redis_cmd(&T, "FLUSHALL"); if (r) freeReplyObject(r); }
    wall = cluster(5, 1, &mc, &bp, 200);
    for (i = 1; i < 5; i++) good += S->r[i].ok;
    KT_CHECK_EQ_U64(good, 4);
    KT_CHECK_MSG(S->builds == 2, "%d builds (the killed one, then one other)", S->builds);
    KT_CHECK_MSG(wall < 6.0, "took %.2f s", wall);
    printf("# remote_builder_killed: the builder killed at 0.2 s, claim 0.6 s: survivors done in %.2f s, %d builds\n", wall, S->builds);
}

static void remote_claim_renewed(void) {
    mconf mc;
    bplan bp = {1200, 0};
    int i, good = 0;
    memset(&mc, 0, sizeof mc);
    mc.url = T.url;
    mc.claim_ms = 300;
    { redisReply *r = kt_redis_cmd(&T, "FLUSHALL"); if (r) freeReplyObject(r); }
    cluster(4, 1, &mc, &bp, 0);
    for (i = 0; i < 4; i++) good += S->r[i].ok;
    KT_CHECK_EQ_U64(good, 4);
    KT_CHECK_MSG(S->builds == 1, "%d builds: the 0.3 s claim was not renewed during a 1.2 s build", S->builds);
}

static void remote_build_fails(void) {
    mconf mc;
    bplan bp = {300, 1};
    int i, good = 0, failed = 0;
    memset(&mc, 0, sizeof mc);
    mc.url = T.url;
    { redisReply *r = kt_redis_cmd(&T, "FLUSHALL"); if (r) freeReplyObject(r); }
    cluster(4, 1, &mc, &bp, 0);
    for (i = 0; i < 4; i++) { good += S->r[i].ok; failed += S->r[i].status == KCACHE_EBUILD; }
    KT_CHECK_EQ_U64(failed, 1);
    KT_CHECK_EQ_U64(good, 3);
    KT_CHECK_MSG(S->builds >= 2 && S->builds <= 4, "%d builds", S->builds);
}

/* ---- planted claims, hostile replies, refused writes, names, slow links (issues 25 and 26) --------- */

/* A fake server: speaks enough RESP to pass for Redis, and lies as its mode says. */
enum {
    FAKE_ENDLESS,     /* every command: an array of 10^8 elements, then ":1" elements without end */
    FAKE_HELD,        /* every claim is held (SET NX: nil) and lives 10^8 ms; no value anywhere */
    FAKE_GONE,        /* every claim is held, yet gone when looked at (PTTL -2, GET nil) */
    FAKE_SUB_ENDLESS, /* claims held for a second; the claim's channel then streams an endless array */
    FAKE_DRIP,        /* GET: a 1 MiB string, one byte every 20 ms */
    FAKE_BADEND,      /* GET: a 100000-byte string ended by "XY", not \r\n */
    FAKE_EXTRA,       /* GET: a 100000-byte string, then a reply nobody asked for, in one write */
    FAKE_PUT_LOST,    /* claims taken; the first value SET ever read closes its connection unanswered (the
                         later ones are answered, S->fake_sets_ok) */
    FAKE_MOVED_EMPTY, /* (these last: redirects) GET: -MOVED 7 :<g_fake_to> (an empty host: the node that answered) */
    FAKE_SLOTS_EMPTY, /* GET: -MOVED 7 127.0.0.1:<g_fake_to>; CLUSTER SLOTS: every slot at ":<g_fake_to>" */
    FAKE_SLOTS_NIL    /* the same with a NULL endpoint in CLUSTER SLOTS */
};
static int g_fake_to; /* the port a redirecting fake names (set before fake_start: its children copy it) */

static int fake_write(int c, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(c, p, n);
        if (w <= 0) return 0;
        p += w;
        n -= (size_t)w;
    }
    return 1;
}
static void fake_endless(int c) {
    static char buf[65536];
    size_t i;
    for (i = 0; i + 4 <= sizeof buf; i += 4) memcpy(buf + i, ":1\r\n", 4);
    if (!fake_write(c, "*100000000\r\n", 12)) return;
    while (fake_write(c, buf, sizeof buf)) {
    }
}
/* Parses one command (an array of bulk strings) at b: its arguments into arg/len (8 at most); the
   bytes it took, 0 when incomplete, -1 when it is not one. */
static long fake_parse(const char *b, size_t n, const char **arg, size_t *len, int *argc) {
    const char *p = b, *e = b + n;
    long count, i;
    char *q;
    if (n < 4 || *p != '*' || !memchr(p, '\n', n)) return n < 4 || !memchr(p, '\n', n) ? 0 : -1;
    count = strtol(p + 1, &q, 10);
    if (count < 1 || count > 16) return -1; /* (the callers' arrays: 16) */
    p = (const char *)memchr(p, '\n', n) + 1;
    for (i = 0; i < count; i++) {
        long l;
        const char *nl;
        if (p >= e) return 0;
        if (*p != '$') return -1;
        if (!(nl = (const char *)memchr(p, '\n', (size_t)(e - p)))) return 0;
        l = strtol(p + 1, &q, 10);
        if (l < 0) return -1;
        p = nl + 1;
        if (e - p < l + 2) return 0;
        arg[i] = p;
        len[i] = (size_t)l;
        p += l + 2;
    }
    *argc = (int)count;
    return (long)(p - b);
}
static int fake_is(const char *a, size_t n, const char *word) { return n == strlen(word) && strncasecmp(a, word, n) == 0; }
static void fake_serve(int c, int mode) {
    size_t cap = 16 << 20, have = 0;
    char *buf = (char *)malloc(cap);
    signal(SIGPIPE, SIG_IGN);
    while (buf) {
        const char *arg[16];
        size_t len[16];
        int argc = 0;
        long used;
        ssize_t n = read(c, buf + have, cap - have);
        if (n <= 0) break;
        have += (size_t)n;
        while ((used = fake_parse(buf, have, arg, len, &argc)) > 0) {
            char out[256];
            const char *rep = out;
            int sub_endless = 0;
            if (mode == FAKE_ENDLESS) { fake_endless(c); free(buf); return; }
            if (mode >= FAKE_MOVED_EMPTY && fake_is(arg[0], len[0], "CLUSTER"))
                snprintf(out, sizeof out, "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n%s:%d\r\n", mode == FAKE_SLOTS_NIL ? "$-1\r\n" : "$0\r\n\r\n", g_fake_to);
            else if (mode >= FAKE_MOVED_EMPTY && !fake_is(arg[0], len[0], "PING"))
                snprintf(out, sizeof out, "-MOVED 7 %s:%d\r\n", mode == FAKE_MOVED_EMPTY ? "" : "127.0.0.1", g_fake_to);
            else if (mode == FAKE_PUT_LOST && fake_is(arg[0], len[0], "SET")) {
                if (__atomic_add_fetch(&S->fake_sets, 1, __ATOMIC_SEQ_CST) == 1) break; /* (gone with what followed it) */
                __atomic_add_fetch(&S->fake_sets_ok, 1, __ATOMIC_SEQ_CST);
                rep = "+OK\r\n";
            } else if (fake_is(arg[0], len[0], "SET")) rep = argc > 3 ? "$-1\r\n" : "+OK\r\n";
            else if (fake_is(arg[0], len[0], "EVAL") && argc > 2 && len[2] == 1 && arg[2][0] == '2') /* a claim's take (2 keys): held */
                rep = mode == FAKE_PUT_LOST ? ":1\r\n" : ":0\r\n";
            else if (fake_is(arg[0], len[0], "GET")) {
                if (mode == FAKE_DRIP && len[1] < 50) { /* the value, a byte at a time */
                    int i;
                    if (!fake_write(c, "$1048576\r\n", 10)) break;
                    for (i = 0; i < 1048576; i++) {
                        if (!fake_write(c, "k", 1)) break;
                        kt_sleep_ms(20);
                    }
                    free(buf);
                    return;
                }
                if ((mode == FAKE_BADEND || mode == FAKE_EXTRA) && len[1] < 50) {
                    static char v[100000 + 32];
                    memcpy(v, "$100000\r\n", 10);
                    memset(v + 10, 'v', 100000);
                    memcpy(v + 100010, mode == FAKE_BADEND ? "XY" : "\r\n+OK\r\n", mode == FAKE_BADEND ? 2 : 7);
                    if (!fake_write(c, v, 100010 + (mode == FAKE_BADEND ? 2 : 7))) break;
                    memmove(buf, buf + used, have - (size_t)used);
                    have -= (size_t)used;
                    continue;
                }
                rep = "$-1\r\n";
            } else if (fake_is(arg[0], len[0], "PTTL")) rep = mode == FAKE_HELD ? ":100000000\r\n" : mode == FAKE_GONE ? ":-2\r\n" : ":1000\r\n";
            else if (fake_is(arg[0], len[0], "SUBSCRIBE") && argc == 2 && len[1] < 100) {
                snprintf(out, sizeof out, "*3\r\n$9\r\nsubscribe\r\n$%zu\r\n%.*s\r\n:1\r\n", len[1], (int)len[1], arg[1]);
                sub_endless = mode == FAKE_SUB_ENDLESS;
            } else if (fake_is(arg[0], len[0], "EVAL") || fake_is(arg[0], len[0], "DEL")) rep = ":1\r\n";
            else if (fake_is(arg[0], len[0], "PING")) rep = "+PONG\r\n";
            else rep = "-ERR unknown command\r\n";
            if (!fake_write(c, rep, strlen(rep))) { free(buf); return; }
            if (sub_endless) { /* the message never ends */
                kt_sleep_ms(100);
                fake_endless(c);
                free(buf);
                return;
            }
            memmove(buf, buf + used, have - (size_t)used);
            have -= (size_t)used;
        }
        if (used < 0 || have == cap) break;
    }
    free(buf);
}

/* Starts a listener on a free port whose every connection is served by serve(c, arg) in a child
   of its own (a process group: stop it with kt_garbage_stop). Its pid, or 0. */
static pid_t fake_run(int fd, void (*serve)(int, int), int arg);
static pid_t fake_start(void (*serve)(int, int), int arg, int *port) {
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    socklen_t len = sizeof a;
    if (fd < 0) return 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return 0;
    }
    *port = ntohs(a.sin_port);
    return fake_run(fd, serve, arg);
}
/* The same on a unix socket at path. */
static pid_t fake_start_unix(void (*serve)(int, int), int arg, const char *path) {
    struct sockaddr_un a;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || strlen(path) >= sizeof a.sun_path) { if (fd >= 0) close(fd); return 0; }
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, path, strlen(path) + 1);
    unlink(path);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0) { close(fd); return 0; }
    return fake_run(fd, serve, arg);
}
/* Serves the listening socket fd (see fake_start). */
static pid_t fake_run(int fd, void (*serve)(int, int), int arg) {
    pid_t p;
    fflush(stdout);
    if ((p = fork()) < 0) { close(fd); return 0; }
    if (p == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGCHLD, SIG_IGN);
        for (;;) {
            int c = accept(fd, NULL, NULL);
            if (c < 0) continue;
            if (fork() == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(fd);
                serve(c, arg);
                _exit(0);
            }
            close(c);
        }
    }
    close(fd);
    setpgid(p, p);
    kt_track(p);
    return p;
}

/* The link every connection of a throttling proxy shares when set (an mmap shared with its
   children): the monotonic ns at which it is free again, and its bytes per second. */
typedef struct shared_link { int64_t free_at; int64_t rate; } shared_link;
static shared_link *g_link;

/* Waits for n bytes' turn on the shared link. */
static void link_take(size_t n) {
    int64_t want, at, now;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    at = __atomic_load_n(&g_link->free_at, __ATOMIC_SEQ_CST);
    do {
        want = (at > now ? at : now) + (int64_t)n * 1000000000 / g_link->rate;
    } while (!__atomic_compare_exchange_n(&g_link->free_at, &at, want, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    if (want - now > 0) kt_sleep_ms((unsigned)((want - now) / 1000000));
}

/* A TCP proxy to 127.0.0.1:arg that passes the server's bytes on at 2 MiB/s per connection (a busy
   link), or, with g_link set, at g_link->rate for all its connections together. */
static void throttle_serve(int c, int to_port) {
    struct sockaddr_in a;
    char buf[65536];
    int u = socket(AF_INET, SOCK_STREAM, 0);
    signal(SIGPIPE, SIG_IGN);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)to_port);
    if (u < 0 || connect(u, (struct sockaddr *)&a, sizeof a) != 0) return;
    for (;;) {
        struct pollfd p[2];
        ssize_t n;
        p[0].fd = c, p[0].events = POLLIN, p[0].revents = 0;
        p[1].fd = u, p[1].events = POLLIN, p[1].revents = 0;
        if (poll(p, 2, -1) < 0) return;
        if (p[0].revents) {
            if ((n = read(c, buf, sizeof buf)) <= 0 || !fake_write(u, buf, (size_t)n)) return;
        }
        if (p[1].revents) {
            if ((n = read(u, buf, 4096)) <= 0) return;
            if (g_link) link_take((size_t)n);
            if (!fake_write(c, buf, (size_t)n)) return;
            if (!g_link) kt_sleep_ms(2); /* 4 KiB per 2 ms */
        }
    }
}

/* A value is read straight into kcache's memory once hiredis has parsed its length: a value not
   framed as the protocol says (not ended by \r\n, or with bytes after it that no command asked
   for) is a server speaking garbage, a failed call, not a value to judge (before, hiredis took any
   two bytes as the end and left the extra reply for the next command: a reject, and deleted). With
   a secret as well (the GET then goes with a GETRANGE). */
static void remote_value_framing(void) {
    int mode, sig;
    for (mode = FAKE_BADEND; mode <= FAKE_EXTRA; mode++) {
        for (sig = 0; sig < 2; sig++) {
            int port = 0;
            pid_t srv = fake_start(fake_serve, mode, &port);
            char url[64];
            kcache_config cfg;
            kcache *kc = NULL;
            kcache_key k;
            const void *d = NULL;
            size_t n = 0;
            kcache_status st;
            kcache_stats stats;
            if (!srv) { KT_FAILF("fake server"); return; }
            snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
            kcache_config_init(&cfg);
            cfg.persistent = 0;
            cfg.remote = url;
            cfg.remote_secret = sig ? "framing secret" : NULL;
            cfg.remote_timeout_ms = 2000;
            if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) { KT_FAILF("kcache_open"); kt_garbage_stop(srv); return; }
            kt_key(&k, "remote", 36000);
            st = kcache_get(kc, &k, &d, &n);
            if (st == KCACHE_OK) kcache_release(kc, d);
            kcache_get_stats(kc, &stats);
            KT_CHECK_MSG(st == KCACHE_MISS && stats.remote_errors >= 1 && stats.remote_rejects == 0,
                         "%s%s: %s, %llu errors, %llu rejects (want a miss by a failed call)", mode == FAKE_BADEND ? "a value not ended by CRLF" : "a value with a reply after it",
                         sig ? " (signed)" : "", kcache_strerror(st), (unsigned long long)stats.remote_errors, (unsigned long long)stats.remote_rejects);
            kcache_key_free(&k);
            kcache_close(kc);
            kt_garbage_stop(srv);
        }
    }
}

/* Finding 10: an empty host in MOVED or CLUSTER SLOTS means the node that answered. A unix-socket
   seed has no host to take: the node is unusable, a miss (it was strlen(NULL), a crash). A TCP seed
   that answers -MOVED 7 :PORT sends the command to its own host at PORT (here the real server T). */
static void remote_empty_host(void) {
    static const int modes[] = {FAKE_MOVED_EMPTY, FAKE_SLOTS_EMPTY, FAKE_SLOTS_NIL};
    static const char *const said[] = {"-MOVED with an empty host", "CLUSTER SLOTS with an empty host", "CLUSTER SLOTS with a NULL endpoint"};
    mconf mc;
    char sock[400], url[450];
    int i, port = 0;
    pid_t g;
    memset(&mc, 0, sizeof mc);
    mc.url = url;
    g_fake_to = T.port;
    for (i = 0; i < 3; i++) {
        snprintf(sock, sizeof sock, "%s/fake-%d.sock", g_root, i);
        if (!(g = fake_start_unix(fake_serve, modes[i], sock))) { KT_FAILF("fake server"); return; }
        snprintf(url, sizeof url, "unix://%s", sock);
        job(0, fresh("empty-host"), &mc, DO_GET, 35010 + (unsigned)i, 100);
        KT_CHECK_MSG(S->r[0].status == KCACHE_MISS, "a unix seed answering %s: %s (want a miss)", said[i],
                     S->r[0].status < 0 ? "the process died" : kcache_strerror((kcache_status)S->r[0].status));
        kt_garbage_stop(g);
    }
    /* a TCP seed: the empty host is its own (127.0.0.1), the port T's, which has the value */
    memset(&mc, 0, sizeof mc);
    mc.url = T.url;
    job(0, fresh("empty-host-put"), &mc, DO_PUT, 35020, 1000);
    KT_CHECK(S->r[0].ok);
    if (!(g = fake_start(fake_serve, FAKE_MOVED_EMPTY, &port))) { KT_FAILF("fake server"); return; }
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    mc.url = url;
    job(1, fresh("empty-host-get"), &mc, DO_GET, 35020, 1000);
    KT_CHECK_MSG(S->r[1].ok && S->r[1].st.hits_remote == 1, "a TCP seed answering -MOVED 7 :%d: %s, %llu remote hits (want the value from 127.0.0.1:%d)",
                 T.port, S->r[1].status < 0 ? "the process died" : kcache_strerror((kcache_status)S->r[1].status),
                 (unsigned long long)S->r[1].st.hits_remote, T.port);
    kt_garbage_stop(g);
}

/* In a child: the peak memory (KiB) this process reached. */
static long peak_kib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int plain_build(void *user, void **out, size_t *out_size) {
    (void)user;
    __atomic_add_fetch(&S->builds, 1, __ATOMIC_SEQ_CST);
    *out = KCACHE_MALLOC(3000);
    kt_payload((unsigned char *)*out, 3000, 16);
    *out_size = 3000;
    return 0;
}
/* get_or_build of key 16 in a new process: S->r[slot] (secs, ok, stats; why: its explain). The
   child ends itself after `watchdog` seconds (then status stays -1). plant_ms: first, set a claim
   "x" on key 16 that lives this long (0: none), from the child once its kcache is open. */
static void gob_job(int slot, const mconf *mc, unsigned watchdog, int plant_ms) {
    pid_t p;
    memset(&S->r[slot], 0, sizeof S->r[slot]);
    S->r[slot].status = -1;
    fflush(stdout);
    if ((p = fork()) == 0) {
        kcache *kc;
        kcache_key k;
        const void *d = NULL;
        size_t n = 0;
        double t;
        int st;
        alarm(watchdog);
        kc = open_machine(fresh("gob"), mc);
        kt_key(&k, "remote", 16);
        if (plant_ms) {
            char name[33];
            redisReply *r;
            name_of(16, name);
            r = kt_redis_cmd(&T, "SET {kcache:1:%s}:claim x PX %d", name, plant_ms);
            if (r) freeReplyObject(r);
        }
        t = kt_now();
        st = kcache_get_or_build(kc, &k, plain_build, NULL, &d, &n);
        S->r[slot].secs = kt_now() - t;
        S->r[slot].ok = st == KCACHE_OK && kt_payload_ok(d, n, 3000, 16);
        if (d) kcache_release(kc, d);
        kcache_get_stats(kc, &S->r[slot].st);
        kcache_explain(kc, &k, S->r[slot].why, sizeof S->r[slot].why);
        kcache_key_free(&k);
        kcache_close(kc);
        S->r[slot].status = st;
        _exit(0);
    }
    while (waitpid(p, NULL, 0) < 0 && errno == EINTR) {
    }
}

/* 25.1: a claim planted by a client without the secret (junk value, a claim for 10^8 ms), or by a
   server that says every claim is held, costs nothing: the machine builds at once instead of
   waiting its whole build wait (20 s here). A signed claim of a real builder is still waited for
   (remote_signed_cluster). */
static void remote_claim_planted(void) {
    static const char secret[] = "planted-claims-test-secret";
    char name[33];
    mconf mc;
    int i, port = 0;
    name_of(16, name);
    memset(&mc, 0, sizeof mc);
    mc.url = T.url;
    for (i = 0; i < 3; i++) {
        /* signed, with claims of a minute (so that only the signature can tell: a planted claim of
           50 s is no longer than its own); unsigned; unsigned with a claim as short as kcache's own (set once
           the machine is open: a slow start, under valgrind, must not outlive it) */
        redisReply *r = kt_redis_cmd(&T, "FLUSHALL");
        if (r) freeReplyObject(r);
        mc.secret = i == 0 ? secret : NULL;
        mc.claim_ms = i == 0 ? 60000 : 0;
        r = kt_redis_cmd(&T, "SET kcache:1:%s junk-from-someone-without-the-secret", name);
        if (r) freeReplyObject(r);
        S->builds = 0;
        gob_job(0, &mc, 19, i == 2 ? 1500 : i == 0 ? 50000 : 100000000);
        if (i < 2) {
            KT_CHECK_MSG(S->r[0].ok && S->r[0].secs < 10.0 && S->builds == 1,
                         "%s: %s after %.1f s, %d builds", i ? "unsigned, a planted claim of 10^8 ms" : "signed, an unsigned claim of 50 s",
                         S->r[0].status < 0 ? "still waiting (killed)" : kcache_strerror((kcache_status)S->r[0].status), S->r[0].secs, S->builds);
        } else { /* a claim no longer than kcache's own is waited for: an unsigned fleet cannot tell it from a builder's */
            KT_CHECK_MSG(S->r[0].ok && S->builds == 1 && S->r[0].st.build_waits == 1, "unsigned, a 1 s claim: %s, %d builds, %llu waits",
                         kcache_strerror((kcache_status)S->r[0].status), S->builds, (unsigned long long)S->r[0].st.build_waits);
        }
    }
    for (i = 0; i < 2; i++) { /* a fake server: every claim held for 10^8 ms; or held, and gone whenever looked at */
        pid_t g = fake_start(fake_serve, i ? FAKE_GONE : FAKE_HELD, &port);
        char url[64];
        snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
        mc.url = url;
        mc.secret = NULL;
        mc.claim_ms = 0;
        S->builds = 0;
        gob_job(0, &mc, 19, 0);
        KT_CHECK_MSG(S->r[0].ok && S->r[0].secs < 10.0 && S->builds == 1 && S->r[0].st.remote_open == 0,
                     "a server whose claims are %s: %s after %.1f s, %d builds, breaker %s", i ? "held and gone" : "all held",
                     S->r[0].status < 0 ? "still waiting (killed)" : kcache_strerror((kcache_status)S->r[0].status), S->r[0].secs, S->builds,
                     S->r[0].st.remote_open ? "open" : "closed");
        kt_garbage_stop(g);
    }
}

/* 35.5: a claim holder's put and release go out without waiting for their answers, which are read
   with the connection's next reply; answers that never come (the connection closed after the
   put was read, nothing stored) have the put sent again on another connection: the value lands. */
static void remote_put_unanswered(void) {
    mconf mc;
    char url[64];
    int port = 0;
    pid_t g = fake_start(fake_serve, FAKE_PUT_LOST, &port);
    if (!g) { KT_FAILF("fake server"); return; }
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    memset(&mc, 0, sizeof mc);
    mc.url = url;
    S->builds = 0;
    S->fake_sets = S->fake_sets_ok = 0;
    gob_job(0, &mc, 19, 0);
    kt_garbage_stop(g);
    printf("# remote_put_unanswered: %d builds, %d value SETs read, %d answered\n", S->builds, S->fake_sets, S->fake_sets_ok);
    KT_CHECK_MSG(S->r[0].ok && S->builds == 1, "%s, %d builds", kcache_strerror((kcache_status)S->r[0].status), S->builds);
    KT_CHECK_MSG(S->fake_sets == 2 && S->fake_sets_ok == 1, "%d value SETs read, %d answered: want the lost one sent again", S->fake_sets,
                 S->fake_sets_ok);
}

static int slow_build(void *user, void **out, size_t *out_size) {
    kt_sleep_ms(800);
    return plain_build(user, out, out_size);
}

/* 35.8: a signed claim read once and planted again. A signed builder builds key 16 holding its
   claim; an attacker without the secret (write access to the Redis) reads the claim's token while
   it builds, deletes the value afterwards and sets that token again (PX just under a claim's life)
   every quarter of a claim's life. A signed waiter honours the token for 3 claim lifetimes of its
   issue (the server's clock) and then builds: one build, after a few claim takes, where the old
   code took one every claim lifetime until its whole KCACHE_BUILD_WAIT (20 s here) was spent.
   Then a 0.4 token (time in ns, no issue time it signs), planted fresh every time: honoured for
   10 claim lifetimes from this process's first look, then built. */
static void remote_claim_replayed(void) {
    static const char secret[] = "replayed-claims-test-secret";
    char name[33];
    mconf mc;
    int round;
    name_of(16, name);
    memset(&mc, 0, sizeof mc);
    mc.url = T.url;
    mc.secret = secret;
    mc.claim_ms = 500; /* 3 lifetimes: 1.5 s; 10: 5 s */
    for (round = 0; round < 2; round++) {
        char token[256];
        redisReply *r = kt_redis_cmd(&T, "FLUSHALL");
        pid_t builder, attacker;
        long long takes;
        double w;
        int i;
        if (r) freeReplyObject(r);
        token[0] = 0;
        S->builds = 0;
        if (round == 0) { /* the real builder, whose token is read while it builds */
            fflush(stdout);
            if ((builder = fork()) == 0) {
                kcache *kc = open_machine(fresh("replay-b"), &mc);
                kcache_key k;
                const void *d = NULL;
                size_t n = 0;
                alarm(30);
                kt_key(&k, "remote", 16);
                kcache_get_or_build(kc, &k, slow_build, NULL, &d, &n);
                if (d) kcache_release(kc, d);
                kcache_key_free(&k);
                kcache_close(kc);
                _exit(0);
            }
            for (w = kt_now(); !token[0] && kt_now() - w < 15; ) { /* (a slow start, under valgrind, takes seconds) */
                r = kt_redis_cmd(&T, "GET {kcache:1:%s}:claim", name);
                if (r && r->type == REDIS_REPLY_STRING && r->len < sizeof token) snprintf(token, sizeof token, "%s", r->str);
                if (r) freeReplyObject(r);
                if (!token[0]) kt_sleep_ms(5);
            }
            while (waitpid(builder, NULL, 0) < 0 && errno == EINTR) {
            }
            KT_CHECK_MSG(token[0] && S->builds == 1, "the builder: %d builds, token %s", S->builds, token[0] ? token : "never seen");
            if (!token[0]) return;
        } else { /* a token of 0.4's form, signed with the secret (the attacker read one of a 0.4 builder) */
            unsigned char msg[300], mac[32];
            unsigned maclen = 32;
            int n = snprintf(token, 120, "oldhost:77:1:%llx", (unsigned long long)(kt_now() * 1e9));
            memcpy(msg, "kcache claim\n", 13);
            memcpy(msg + 13, name, 32);
            msg[45] = '\n';
            memcpy(msg + 46, token, (size_t)n);
            HMAC(EVP_sha256(), secret, (int)strlen(secret), msg, 46 + (size_t)n, mac, &maclen);
            token[n] = '.';
            for (i = 0; i < 32; i++) snprintf(token + n + 1 + 2 * i, 3, "%02x", mac[i]);
        }
        r = kt_redis_cmd(&T, "DEL kcache:1:%s", name);
        if (r) freeReplyObject(r);
        S->builds = 0;
        S->r[15].ok = 0; /* the attacker's SETs */
        fflush(stdout);
        if ((attacker = fork()) == 0) {
            alarm(30);
            for (;;) {
                r = kt_redis_cmd(&T, "SET {kcache:1:%s}:claim %s PX 480", name, token);
                if (r) freeReplyObject(r);
                __atomic_add_fetch(&S->r[15].ok, 1, __ATOMIC_SEQ_CST);
                kt_sleep_ms(125);
            }
        }
        kt_sleep_ms(100);
        takes = kt_redis_calls(&T, "set") - __atomic_load_n(&S->r[15].ok, __ATOMIC_SEQ_CST);
        gob_job(0, &mc, 19, 0);
        takes = kt_redis_calls(&T, "set") - __atomic_load_n(&S->r[15].ok, __ATOMIC_SEQ_CST) - takes;
        kill(attacker, SIGKILL);
        while (waitpid(attacker, NULL, 0) < 0 && errno == EINTR) {
        }
        KT_CHECK_MSG(S->r[0].ok && S->builds == 1 && S->r[0].st.build_waits == 1,
                     "%s: %s, %d builds, %llu waits", round ? "a 0.4 token planted again" : "a token read once and planted again",
                     S->r[0].status < 0 ? "still waiting after 19 s (killed)" : kcache_strerror((kcache_status)S->r[0].status), S->builds,
                     (unsigned long long)S->r[0].st.build_waits);
        printf("# %s: built after %.1f s, %lld claim takes and puts (SETs)\n", round ? "a 0.4 token planted again" : "a token planted again",
               S->r[0].secs, takes);
        /* takes: one per claim lifetime waited (the claim's PTTL bounds a wait), and the put; 20 s would be 40 */
        KT_CHECK_MSG(takes >= 2 && takes <= (round ? 20 : 8), "%s: %lld claims taken (SETs) by the waiter",
                     round ? "a 0.4 token planted again" : "a token read once and planted again", takes);
    }
}

/* Claims of kcache's own, signed, are waited for (1 build among 4 machines); the claim's value on
   the server carries the signature; a claim lives 3 s by default and a builder killed with -9 is
   taken over after it. */
static void remote_signed_cluster(void) {
    mconf mc;
    bplan bp = {400, 0};
    char name[33];
    int i, good = 0;
    pid_t p;
    memset(&mc, 0, sizeof mc);
    mc.url = T.url;
    mc.secret = "signed-cluster-secret";
    { redisReply *r = kt_redis_cmd(&T, "FLUSHALL"); if (r) freeReplyObject(r); }
    cluster(4, 1, &mc, &bp, 0);
    for (i = 0; i < 4; i++) good += S->r[i].ok;
    KT_CHECK_EQ_U64(good, 4);
    KT_CHECK_MSG(S->builds == 1, "%d builds: signed claims were not honoured", S->builds);
    /* the default lifetime: a builder that never ends, then killed */
    { redisReply *r = kt_redis_cmd(&T, "FLUSHALL"); if (r) freeReplyObject(r); }
    mc.secret = NULL;
    S->building = 0;
    S->builds = 0;
    name_of(16, name);
    fflush(stdout);
    if ((p = fork()) == 0) {
        bplan forever = {60000, 0};
        kcache *kc = open_machine(fresh("killed"), &mc);
        kcache_key k;
        const void *d;
        size_t n;
        kt_key(&k, "remote", 16);
        kcache_get_or_build(kc, &k, cluster_build, &forever, &d, &n);
        _exit(0);
    }
    {
        double w = kt_now();
        long long left = -3;
        redisReply *r;
        while (!__atomic_load_n(&S->building, __ATOMIC_SEQ_CST) && kt_now() - w < 10) kt_sleep_ms(5);
        left = kt_redis_int(&T, "PTTL {kcache:1:%s}:claim", name);
        r = kt_redis_cmd(&T, "GET {kcache:1:%s}:claim", name);
        KT_CHECK_MSG(left > 0 && left <= 3000, "a builder's claim lives %lld ms (want at most 3000)", left);
        KT_CHECK_MSG(r && r->type == REDIS_REPLY_STRING && !strchr(r->str, '.'), "an unsigned claim's token: %s", r && r->str ? r->str : "none");
        if (r) freeReplyObject(r);
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
        gob_job(0, &mc, 19, 0);
        KT_CHECK_MSG(S->r[0].ok && S->r[0].secs < 8.0, "after the builder's kill -9: %s after %.1f s (its claim should end within 3 s)",
                     kcache_strerror((kcache_status)S->r[0].status), S->r[0].secs);
        printf("# remote_signed_cluster: a builder killed with -9, taken over after %.2f s\n", S->r[0].secs);
    }
}

/* 25.2: a server answering an array of 10^8 elements, then elements without end, for a lookup and
   on the claim's channel: a failure, at no more memory than a small reply's. */
static void remote_endless_reply(void) {
    int i;
    for (i = 0; i < 2; i++) {
        int port = 0, st = 0;
        pid_t g = fake_start(fake_serve, i ? FAKE_SUB_ENDLESS : FAKE_ENDLESS, &port), p;
        char url[64];
        snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
        memset(&S->r[0], 0, sizeof S->r[0]);
        S->r[0].status = -1;
        fflush(stdout);
        if ((p = fork()) == 0) {
            mconf mc;
            kcache *kc;
            kcache_key k;
            const void *d = NULL;
            size_t n = 0;
            long before;
            memset(&mc, 0, sizeof mc);
            mc.url = url;
            mc.timeout_ms = 3000; /* time enough for the old reader to keep 100s of MB */
            alarm(30);
            kc = open_machine(fresh("endless"), &mc);
            kt_key(&k, "remote", 16);
            before = peak_kib();
            S->r[0].status = i ? kcache_get_or_build(kc, &k, plain_build, NULL, &d, &n) : kcache_get(kc, &k, &d, &n);
            snprintf(S->r[0].why, sizeof S->r[0].why, "%ld", peak_kib() - before);
            if (d) kcache_release(kc, d);
            kcache_get_stats(kc, &S->r[0].st);
            kcache_key_free(&k);
            kcache_close(kc);
            _exit(0);
        }
        while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
        }
        KT_CHECK_MSG(WIFEXITED(st) && S->r[0].status == (i ? KCACHE_OK : KCACHE_MISS) && S->r[0].st.remote_errors >= 1 && atol(S->r[0].why) < 16384,
                     "an endless array (%s): %s, %s, %llu errors, %s KiB more memory", i ? "on the claim's channel" : "for a GET",
                     WIFEXITED(st) ? "exited" : "killed", kcache_strerror((kcache_status)S->r[0].status), (unsigned long long)S->r[0].st.remote_errors,
                     S->r[0].why);
        printf("# remote_endless_reply %s: %s KiB more memory\n", i ? "claim wait" : "get", S->r[0].why);
        kt_garbage_stop(g);
    }
}

/* 25.7 and 26.2: a user the server's ACL lets read but not write. Mode ro writes nothing (no claim,
   no delete, no publish: the ACL log stays empty) and keeps its reads; mode rw has its writes
   refused, skips writes, and keeps its reads too (the breaker stays closed). */
static void remote_read_only_user(void) {
    kt_redis A;
    mconf admin, reader;
    char url[200];
    int mode;
    if (!kt_redis_start(&A, g_root, 1, "user reader on >rpw ~* &* -@all +@read +@connection")) { KT_FAILF("redis-server with an ACL user did not start"); return; }
    memset(&admin, 0, sizeof admin);
    admin.url = A.url;
    snprintf(url, sizeof url, "redis://reader:rpw@127.0.0.1:%d", A.port);
    reader = admin;
    reader.url = url;
    {
        const char *store = fresh("admin");
        unsigned i;
        for (i = 0; i < 10; i++) {
            job(0, store, &admin, DO_PUT, 300 + i, 2000);
            KT_CHECK(S->r[0].ok && S->r[0].st.remote_puts == 1);
        }
    }
    for (mode = 0; mode < 2; mode++) {
        pid_t p;
        int st = 0;
        long long denied;
        redisReply *r = kt_redis_cmd(&A, "ACL LOG RESET");
        if (r) freeReplyObject(r);
        reader.ro = mode == 0;
        memset(&S->r[0], 0, sizeof S->r[0]);
        fflush(stdout);
        if ((p = fork()) == 0) {
            kcache *kc = open_machine(fresh("reader"), &reader);
            kcache_key k;
            const void *d = NULL;
            size_t n = 0;
            unsigned i;
            alarm(20);
            kt_key(&k, "remote", 16); /* cold: rw would claim it (refused), ro must not */
            kcache_get_or_build(kc, &k, plain_build, NULL, &d, &n);
            if (d) kcache_release(kc, d);
            kcache_key_free(&k);
            if (mode) kt_put(kc, "remote", 399, 399, 2000); /* refused */
            for (i = 0; i < 10; i++) S->r[0].ok += kt_get(kc, "remote", 300 + i, 300 + i, 2000) == 1;
            kcache_get_stats(kc, &S->r[0].st);
            kcache_close(kc);
            _exit(0);
        }
        while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
        }
        r = kt_redis_cmd(&A, "ACL LOG");
        denied = r && r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : -1;
        if (r) freeReplyObject(r);
        KT_CHECK_MSG(S->r[0].ok == 10 && S->r[0].st.remote_open == 0, "mode %s, a user who may only read: %d of 10 remote hits, breaker %s",
                     mode ? "rw" : "ro", S->r[0].ok, S->r[0].st.remote_open ? "open" : "closed");
        if (mode == 0) KT_CHECK_MSG(denied == 0, "mode ro sent %lld commands the ACL refused (a write)", denied);
        else KT_CHECK_MSG(denied >= 1 && S->r[0].st.remote_errors >= 1, "mode rw: %lld refused, %llu errors", denied, (unsigned long long)S->r[0].st.remote_errors);
    }
    kt_redis_stop(&A);
}

/* 26.1: a host name whose DNS server never answers (a UDP socket that reads nothing, named in a
   resolv.conf bind-mounted in a private mount namespace): a lookup gives up within its deadline,
   a breaker probe after the back-off too. Without the namespace (not root): a name that resolves
   (localhost) works through the same path. */
static void remote_dns_silent(void) {
    mconf mc;
    char url[100];
    int st = 0, fd = -1, tries;
    pid_t p;
    struct sockaddr_in a;
    memset(&mc, 0, sizeof mc);
    mc.url = T.url;
    job(0, fresh("dns-put"), &mc, DO_PUT, 40, 500);
    snprintf(url, sizeof url, "redis://localhost:%d", T.port);
    mc.url = url;
    memset(&S->r[1], 0, sizeof S->r[1]);
    fflush(stdout);
    if ((p = fork()) == 0) { /* a first resolution slower than the connect timeout (valgrind) is a miss: the next try has it */
        kcache *kc = open_machine(fresh("dns-ok"), &mc);
        int i;
        for (i = 0; i < 10 && !S->r[1].ok; i++) {
            if (i) kt_sleep_ms(350);
            S->r[1].ok = kt_get(kc, "remote", 40, 40, 500) == 1;
        }
        kcache_close(kc);
        _exit(0);
    }
    waitpid(p, NULL, 0);
    KT_CHECK_MSG(S->r[1].ok, "redis://localhost: no hit");
    if (geteuid() != 0) { printf("skip remote_dns_silent: not root (a private mount namespace for resolv.conf needs it)\n"); return; }
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(53);
    for (tries = 0; tries < 20 && fd < 0; tries++) { /* 127.x.y.z:53, chosen so that parallel runs do not meet */
        uint32_t r = (uint32_t)getpid() * 2654435761u + (uint32_t)tries * 40503u;
        a.sin_addr.s_addr = htonl(0x7f000000u | (((r >> 8) % 250 + 2) << 16) | (((r >> 16) % 250 + 2) << 8) | ((r % 250) + 2));
        fd = socket(AF_INET, SOCK_DGRAM, 0);
        if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) != 0) { close(fd); fd = -1; }
    }
    if (fd < 0) { printf("skip remote_dns_silent: no UDP port 53 on 127/8 to bind\n"); return; }
    memset(&S->r[0], 0, sizeof S->r[0]);
    fflush(stdout);
    if ((p = fork()) == 0) {
        char conf[400], ip[32];
        FILE *f;
        double t, worst = 0;
        int i;
        kcache *kc;
        if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) _exit(77);
        snprintf(conf, sizeof conf, "%s/resolv.conf", g_root);
        inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
        if (!(f = fopen(conf, "w"))) _exit(78);
        fprintf(f, "nameserver %s\noptions timeout:4 attempts:3\n", ip);
        fclose(f);
        if (mount(conf, "/etc/resolv.conf", NULL, MS_BIND, NULL) != 0) _exit(77);
        alarm(10); /* the watchdog: a lookup bound by 500 ms that takes 10 s is a hang */
        mc.url = "redis://kt-remsec-never-answers.example:6379";
        mc.timeout_ms = 500; /* the default op timeout; connects 100 ms */
        mc.backoff_ms = 100;
        kc = open_machine(fresh("dns"), &mc);
        for (i = 0; i < 3; i++) { /* the first lookup, then breaker probes */
            if (i) kt_sleep_ms(450);
            t = kt_now();
            if (kt_get(kc, "remote", 41, 41, 10) != 0) _exit(79);
            if (kt_now() - t > worst) worst = kt_now() - t;
        }
        kcache_get_stats(kc, &S->r[0].st);
        S->r[0].secs = worst;
        kcache_close(kc);
        _exit(0);
    }
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
    close(fd);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) { printf("skip remote_dns_silent: no private mount namespace (unshare, mount --bind)\n"); return; }
    KT_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0 && S->r[0].secs < 5.0 && S->r[0].st.remote_errors >= 2,
                 "a name whose DNS never answers: %s %d, the slowest lookup %.2f s, %llu errors", WIFEXITED(st) ? "exit" : "killed by signal",
                 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), S->r[0].secs, (unsigned long long)S->r[0].st.remote_errors);
    printf("# remote_dns_silent: the slowest of 3 lookups on a name never resolved: %.0f ms\n", S->r[0].secs * 1e3);
}

/* 26.7: a 1 MiB value over a link of 2 MiB/s (0.5 s) with a 350 ms timeout is a hit (the transfer
   makes progress); a server dripping it a byte per 20 ms is a timeout, soon after the 350 ms. */
static void remote_slow_link(void) {
    static unsigned char val[1 << 20];
    mconf mc;
    char url[64];
    int port = 0, i;
    pid_t proxy = fake_start(throttle_serve, T.port, &port);
    random_payload(val, sizeof val, 42);
    memset(&mc, 0, sizeof mc);
    mc.url = T.url;
    job(0, fresh("slow-put"), &mc, DO_PUT_RANDOM, 42, sizeof val);
    KT_CHECK(S->r[0].ok && S->r[0].st.remote_puts == 1);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    for (i = 0; i < 2; i++) {
        pid_t p, drip = 0;
        int st = 0;
        if (i) {
            drip = fake_start(fake_serve, FAKE_DRIP, &port);
            snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
        }
        memset(&S->r[0], 0, sizeof S->r[0]);
        fflush(stdout);
        if ((p = fork()) == 0) {
            kcache *kc;
            kcache_key k;
            const void *d = NULL;
            size_t n = 0;
            double t;
            mc.url = url;
            mc.timeout_ms = 350; /* under the 0.5 s the value takes: the old single deadline missed it */
            alarm(10);
            kc = open_machine(fresh("slow-get"), &mc);
            kt_key(&k, "remote", 42);
            t = kt_now();
            S->r[0].status = kcache_get(kc, &k, &d, &n);
            S->r[0].secs = kt_now() - t;
            S->r[0].ok = S->r[0].status == KCACHE_OK && n == sizeof val && memcmp(d, val, n) == 0;
            if (d) kcache_release(kc, d);
            kcache_get_stats(kc, &S->r[0].st);
            kcache_key_free(&k);
            kcache_close(kc);
            _exit(0);
        }
        while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
        }
        if (!i) KT_CHECK_MSG(S->r[0].ok && S->r[0].st.hits_remote == 1, "1 MiB at 2 MiB/s, 350 ms timeout: %s after %.2f s, %llu timeouts",
                             kcache_strerror((kcache_status)S->r[0].status), S->r[0].secs, (unsigned long long)S->r[0].st.remote_timeouts);
        else KT_CHECK_MSG(WIFEXITED(st) && S->r[0].status == KCACHE_MISS && S->r[0].st.remote_timeouts == 1 && S->r[0].secs < 3.5,
                          "a byte per 20 ms: %s after %.2f s (want a timeout soon after 350 ms)", kcache_strerror((kcache_status)S->r[0].status), S->r[0].secs);
        printf("# remote_slow_link %s: %.2f s\n", i ? "drip" : "1 MiB at 2 MiB/s", S->r[0].secs);
        kt_garbage_stop(drip);
    }
    kt_garbage_stop(proxy);
    /* the issue's hot key: 16 processes fetch the same 1 MiB value over one 20 MB/s link, with the
       default 500 ms timeout (each gets 1.25 MB/s: 0.84 s for its value); before, all 16 timed out */
    g_link = (shared_link *)mmap(NULL, sizeof *g_link, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_link == MAP_FAILED) { g_link = NULL; KT_FAILF("mmap"); return; }
    g_link->free_at = 0;
    g_link->rate = 20000000;
    proxy = fake_start(throttle_serve, T.port, &port);
    g_link = NULL; /* the proxy's children have it */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    {
        pid_t p[16];
        int hits = 0;
        double t0 = kt_now();
        for (i = 0; i < 16; i++) {
            memset(&S->r[i], 0, sizeof S->r[i]);
            fflush(stdout);
            if ((p[i] = fork()) == 0) {
                kcache *kc;
                kcache_key k;
                const void *d = NULL;
                size_t n = 0;
                mc.url = url;
                mc.timeout_ms = 500;
                mc.backoff_ms = 0;
                alarm(20);
                kc = open_machine(fresh("hot"), &mc);
                kt_key(&k, "remote", 42);
                {
                    double t = kt_now();
                    S->r[i].status = kcache_get(kc, &k, &d, &n);
                    S->r[i].secs = kt_now() - t;
                    S->r[i].ok = S->r[i].status == KCACHE_OK && n == sizeof val && memcmp(d, val, n) == 0;
                    S->r[i].why[0] = 0;
                    kcache_get_stats(kc, &S->r[i].st);
                }
                if (d) kcache_release(kc, d);
                kcache_key_free(&k);
                kcache_close(kc);
                _exit(0);
            }
        }
        for (i = 0; i < 16; i++) {
            waitpid(p[i], NULL, 0);
            hits += S->r[i].ok;
        }
        printf("# remote_slow_link hot key: %d of 16 processes got the 1 MiB value over one 20 MB/s link in %.2f s\n", hits, kt_now() - t0);
        for (i = 0; i < 16 && !getenv("KT_VALGRIND"); i++)
            KT_CHECK_MSG(S->r[i].ok, "process %d of 16, a hot 1 MiB value over a shared 20 MB/s link: %s after %.2f s (%llu errors, %llu timeouts)", i,
                         kcache_strerror((kcache_status)S->r[i].status), S->r[i].secs, (unsigned long long)S->r[i].st.remote_errors,
                         (unsigned long long)S->r[i].st.remote_timeouts);
    }
    kt_garbage_stop(proxy);
}

/* In a child: a GET of key "remote" 42 through rediss://127.0.0.1:port (the CA of tls_certs), with
   timeout_ms; the outcome in S->r[0] (ok: the 1 MiB value of remote_slow_link; why: KiB more memory;
   secs: the open and the GET). */
static void tls_get_child(const char *dir, int port, uint32_t timeout_ms, const unsigned char *val, size_t n_val) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_key k;
    const void *d = NULL;
    char url[64], ca[330];
    size_t n = 0;
    long before;
    double t;
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", port);
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.remote = url;
    cfg.remote_ca = ca;
    cfg.remote_timeout_ms = timeout_ms;
    alarm(30);
    before = peak_kib(); /* (the server's identity may be read at the open) */
    t = kt_now();
    if (kcache_open(&kc, &cfg) != KCACHE_OK) _exit(1);
    kt_key(&k, "remote", 42);
    S->r[0].status = kcache_get(kc, &k, &d, &n);
    S->r[0].secs = kt_now() - t;
    snprintf(S->r[0].why, sizeof S->r[0].why, "%ld", peak_kib() - before);
    S->r[0].ok = S->r[0].status == KCACHE_OK && n == n_val && memcmp(d, val, n) == 0;
    if (d) kcache_release(kc, d);
    kcache_get_stats(kc, &S->r[0].st);
    kcache_key_free(&k);
    kcache_close(kc);
    _exit(0);
}

/* ---- waiters told over TLS (issue 35.6) ---- */

/* A build of 800 ms of key id (user), counted in S->builds. */
static int told_build(void *user, void **out, size_t *out_size) {
    unsigned id = (unsigned)(uintptr_t)user;
    unsigned char *p = (unsigned char *)malloc(1000);
    __atomic_add_fetch(&S->builds, 1, __ATOMIC_SEQ_CST);
    kt_sleep_ms(800);
    if (!p) return 1;
    kt_payload(p, 1000, id);
    *out = p;
    *out_size = 1000;
    return 0;
}
typedef struct told_waiter { kcache *kc; unsigned id; int ok; } told_waiter;
static void *told_wait(void *arg) {
    told_waiter *w = (told_waiter *)arg;
    kcache_key k;
    const void *d;
    size_t n;
    kt_key(&k, "told", w->id);
    if (kcache_get_or_build(w->kc, &k, told_build, (void *)(uintptr_t)w->id, &d, &n) == KCACHE_OK) {
        w->ok = kt_payload_ok(d, n, 1000, w->id);
        kcache_release(w->kc, d);
    }
    kcache_key_free(&k);
    return NULL;
}

/* rediss://: one process builds 8 keys (a batch on 8 threads, 800 ms each); another's 8 threads
   each want one of them and wait for its claim: they share the process's one subscribed TLS
   connection (the old code opened one per waiting thread over TLS: 8), and the releases wake
   them: 8 builds in all, every payload right. Counted on the server (its plain port) while they
   wait: the most subscribed connections seen at once. */
static void remote_tls_waiters(void) {
    char dir[310], ca[330], url[300], extra[1200];
    kt_redis A;
    pid_t b, a;
    int port = kt_free_port(), st = 0, subs, ok = 1;
    if (!tls_certs(dir, sizeof dir)) { printf("skip remote_tls_waiters: openssl could not make the test's certificates (see %s/openssl.log)\n", dir); return; }
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    snprintf(extra, sizeof extra, "tls-port %d\ntls-cert-file %s/ip.crt\ntls-key-file %s/ip.key\ntls-ca-cert-file %s\ntls-auth-clients no", port, dir, dir, ca);
    if (strlen(extra) >= sizeof A.extra) { KT_FAILF("TMPDIR is too long for the server's config"); return; }
    if (!kt_redis_start(&A, g_root, 1, extra)) { printf("skip remote_tls_waiters: redis-server did not start with TLS (built without it?)\n"); return; }
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", port);
    S->builds = 0;
    fflush(stdout);
    if ((b = fork()) == 0) { /* the builder: a batch of the 8 keys */
        kcache *kc = open_tls(url, ca, NULL, NULL);
        kcache_job jobs[8];
        kcache_key keys[8];
        int i, good = 0;
        if (!kc) _exit(2);
        for (i = 0; i < 8; i++) {
            kt_key(&keys[i], "told", (unsigned)i);
            memset(&jobs[i], 0, sizeof jobs[i]);
            jobs[i].key = &keys[i], jobs[i].build = told_build, jobs[i].user = (void *)(uintptr_t)i;
        }
        kcache_get_or_build_many(kc, jobs, 8, 8);
        for (i = 0; i < 8; i++) {
            if (jobs[i].status == KCACHE_OK) good += kt_payload_ok(jobs[i].data, jobs[i].size, 1000, (unsigned)i), kcache_release(kc, jobs[i].data);
            kcache_key_free(&keys[i]);
        }
        kcache_close(kc);
        _exit(good == 8 ? 0 : 1);
    }
    kt_sleep_ms(250);
    if ((a = fork()) == 0) { /* the waiters: a thread per key */
        kcache *kc = open_tls(url, ca, NULL, NULL);
        pthread_t th[8];
        told_waiter w[8];
        int i, good = 0;
        if (!kc) _exit(2);
        for (i = 0; i < 8; i++) w[i].kc = kc, w[i].id = (unsigned)i, w[i].ok = 0, pthread_create(&th[i], NULL, told_wait, &w[i]);
        for (i = 0; i < 8; i++) pthread_join(th[i], NULL), good += w[i].ok;
        kcache_close(kc);
        _exit(good == 8 ? 0 : 1);
    }
    for (subs = 0;;) { /* the most seen at once, every 50 ms while the waiters run (a slow start, as under valgrind, is seen too) */
        pid_t done = waitpid(a, &st, WNOHANG);
        int now = kt_redis_subscribers(&A);
        if (now > subs) subs = now;
        if (done == a || done < 0) {
            ok &= done == a && WIFEXITED(st) && WEXITSTATUS(st) == 0;
            break;
        }
        kt_sleep_ms(50);
    }
    ok &= waitpid(b, &st, 0) == b && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    printf("# remote_tls_waiters: 8 threads waiting over TLS on another process's 8 builds: at most %d subscribed connections, %d builds\n", subs,
           S->builds);
    KT_CHECK_MSG(ok, "a process failed or got wrong payloads");
    KT_CHECK_MSG(S->builds == 8, "%d builds of 8 keys", S->builds);
    KT_CHECK_MSG(subs >= 1 && subs <= 2, "%d subscribed connections over TLS, want at most 2 (one per process)", subs);
    kt_redis_stop(&A);
}

/* The reply bounds and the idle-time deadline hold over TLS too (kcache_redis__tls_io: its SSL and the
   reply budget share the connection's reader field): 1 MiB at 2 MiB/s through a proxy in front of
   redis-server's TLS port, 350 ms timeout: a hit; an endless array from `openssl s_server`: one
   failed call, not memory. */
static void remote_tls_bounds(void) {
    static unsigned char val[1 << 20];
    char dir[310], extra[1200], cmd[1400];
    kt_redis A;
    int tport = kt_free_port(), port = 0, sport, st = 0, i;
    pid_t proxy, p, srv;
    if (!tls_certs(dir, sizeof dir)) { printf("skip remote_tls_bounds: openssl could not make the test's certificates (see %s/openssl.log)\n", dir); return; }
    snprintf(extra, sizeof extra, "tls-port %d\ntls-cert-file %s/ip.crt\ntls-key-file %s/ip.key\ntls-ca-cert-file %s/ca.crt\ntls-auth-clients no", tport, dir,
             dir, dir);
    if (strlen(extra) >= sizeof A.extra) { KT_FAILF("TMPDIR is too long for the server's config"); return; }
    if (!kt_redis_start(&A, g_root, 1, extra)) { printf("skip remote_tls_bounds: redis-server did not start with TLS (built without it?)\n"); return; }
    random_payload(val, sizeof val, 42);
    memset(&S->r[0], 0, sizeof S->r[0]);
    fflush(stdout);
    if ((p = fork()) == 0) { /* the value, put over TLS directly */
        kcache_config cfg;
        kcache *kc = NULL;
        kcache_key k;
        char url[64], ca[330];
        snprintf(url, sizeof url, "rediss://127.0.0.1:%d", tport);
        snprintf(ca, sizeof ca, "%s/ca.crt", dir);
        kcache_config_init(&cfg);
        cfg.persistent = 0;
        cfg.remote = url;
        cfg.remote_ca = ca;
        cfg.remote_timeout_ms = 5000;
        alarm(30);
        if (kcache_open(&kc, &cfg) != KCACHE_OK) _exit(1);
        kt_key(&k, "remote", 42);
        S->r[0].status = kcache_put(kc, &k, val, sizeof val);
        kcache_get_stats(kc, &S->r[0].st);
        kcache_key_free(&k);
        kcache_close(kc);
        _exit(0);
    }
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
    KT_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0 && S->r[0].st.remote_puts == 1, "the 1 MiB put over TLS: %llu puts",
                 (unsigned long long)S->r[0].st.remote_puts);
    proxy = fake_start(throttle_serve, tport, &port);
    memset(&S->r[0], 0, sizeof S->r[0]);
    fflush(stdout);
    if ((p = fork()) == 0) tls_get_child(dir, port, 350, val, sizeof val); /* under the 0.5 s the value takes */
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
    KT_CHECK_MSG(WIFEXITED(st) && S->r[0].ok && S->r[0].st.hits_remote == 1, "1 MiB over TLS at 2 MiB/s, 350 ms timeout: %s after %.2f s, %llu timeouts",
                 kcache_strerror((kcache_status)S->r[0].status), S->r[0].secs, (unsigned long long)S->r[0].st.remote_timeouts);
    printf("# remote_tls_bounds 1 MiB at 2 MiB/s over TLS: %.2f s\n", S->r[0].secs);
    kt_garbage_stop(proxy);
    kt_redis_stop(&A);

    /* a TLS server whose every reply is an array announced 100 million long, sent without end */
    sport = kt_free_port();
    snprintf(cmd, sizeof cmd,
             "cd '%s' && { printf '*100000000\\r\\n'; exec yes \"$(printf ':1\\r')\"; } | "
             "exec openssl s_server -quiet -accept 127.0.0.1:%d -cert ip.crt -key ip.key >/dev/null 2>s_server.log",
             dir, sport);
    fflush(stdout);
    if ((srv = fork()) == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(srv, srv);
    kt_track(srv);
    for (i = 0; i < 500; i++) { /* listening? (seen in /proc/net/tcp: a connection would take the start of the stream) */
        FILE *f = fopen("/proc/net/tcp", "r");
        char line[256];
        int up = 0;
        while (f && !up && fgets(line, sizeof line, f)) {
            unsigned lport = 0, state = 0;
            up = sscanf(line, " %*d: %*x:%x %*x:%*x %x", &lport, &state) == 2 && lport == (unsigned)sport && state == 0x0A;
        }
        if (f) fclose(f);
        if (up) break;
        kt_sleep_ms(20);
    }
    if (i == 500) { printf("skip remote_tls_bounds endless: openssl s_server did not listen (see %s/s_server.log)\n", dir); kt_garbage_stop(srv); return; }
    memset(&S->r[0], 0, sizeof S->r[0]);
    S->r[0].status = -1;
    fflush(stdout);
    if ((p = fork()) == 0) tls_get_child(dir, sport, 3000, val, sizeof val); /* time enough for an unbounded reader to keep 100s of MB */
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
    KT_CHECK_MSG(WIFEXITED(st) && S->r[0].status == KCACHE_MISS && S->r[0].st.remote_errors >= 1 && atol(S->r[0].why) < 16384,
                 "an endless array over TLS: %s, %s, %llu errors, %s KiB more memory", WIFEXITED(st) ? "exited" : "killed",
                 kcache_strerror((kcache_status)S->r[0].status), (unsigned long long)S->r[0].st.remote_errors, S->r[0].why);
    printf("# remote_tls_bounds endless array over TLS: %s KiB more memory, %.2f s, %llu errors (%llu timeouts)\n", S->r[0].why, S->r[0].secs,
           (unsigned long long)S->r[0].st.remote_errors, (unsigned long long)S->r[0].st.remote_timeouts);
    kt_garbage_stop(srv);
}

/* ---- how often one call asks the remote ---------------------------------------------------------- */

/* The built-in Redis backend with its GETs counted: a handle's shard is switched to this table
   after kcache_open (this file has the implementation), so every count is a real round trip. */
static int g_gets;
static kcache_status counting_get(void *user, const char *name, const void **data, size_t *size, void **hold) {
    __atomic_add_fetch(&g_gets, 1, __ATOMIC_SEQ_CST);
    return kcache_redis__ops.get(user, name, data, size, hold);
}
static const kcache_remote_ops counting_ops = {counting_get, kcache_redis__release, kcache_redis__put, kcache_redis__remove,
                                               kcache_redis__claim, NULL, /* (no get_many: every GET counted) */
                                               kcache_redis__claim_reissue, kcache_redis__server_time, kcache_redis__put_release,
                                               kcache_redis__claim_take_many};
static kcache *open_counted(const char *store, const char *url, int publish) {
    char dir[400];
    kcache_config cfg;
    kcache *kc = NULL;
    kt_config(&cfg, dir, sizeof dir, g_root, store);
    cfg.remote = url;
    cfg.remote_timeout_ms = 2000;
    cfg.build_wait_ms = 20000;
    cfg.publish = publish;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc || !kc->remote || kc->remote->n != 1) {
        KT_FAILF("kcache_open %s with a remote", dir);
        if (kc) kcache_close(kc);
        return NULL;
    }
    kc->remote->shard[0].ops = &counting_ops;
    return kc;
}
static int gets_since(int *mark) {
    int now = __atomic_load_n(&g_gets, __ATOMIC_SEQ_CST), n = now - *mark;
    *mark = now;
    return n;
}

/* A build that holds on until told to go, so that another caller surely arrives while it runs. */
typedef struct held { int in, go, builds; unsigned id; } held;
static int held_build(void *user, void **out, size_t *out_size) {
    held *h = (held *)user;
    double t = kt_now();
    __atomic_add_fetch(&h->builds, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&h->in, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&h->go, __ATOMIC_SEQ_CST) && kt_now() - t < 20) kt_sleep_ms(1);
    *out = KCACHE_MALLOC(300);
    kt_payload((unsigned char *)*out, 300, h->id);
    *out_size = 300;
    return 0;
}
typedef struct caller { kcache *kc; held *h; int ok; pthread_t th; } caller;
static void *caller_run(void *arg) {
    caller *c = (caller *)arg;
    kcache_key k;
    const void *d = NULL;
    size_t n = 0;
    kt_key(&k, "lookups", c->h->id);
    c->ok = kcache_get_or_build(c->kc, &k, held_build, c->h, &d, &n) == KCACHE_OK && kt_payload_ok(d, n, 300, c->h->id);
    if (d) kcache_release(c->kc, d);
    kcache_key_free(&k);
    return NULL;
}
/* a on kcache a builds key id (held); b on kcache b asks for it meanwhile and waits (its
   build_waits), then a's build ends. 1 when both got the payload from one build. */
static int build_while_waiting(kcache *a, kcache *b, unsigned id) {
    held h;
    caller ca, cb;
    kcache_stats st;
    double t;
    int waiting = 0;
    memset(&h, 0, sizeof h);
    h.id = id;
    ca.kc = a, ca.h = &h, ca.ok = 0;
    cb.kc = b, cb.h = &h, cb.ok = 0;
    if (pthread_create(&ca.th, NULL, caller_run, &ca) != 0) return 0;
    for (t = kt_now(); !__atomic_load_n(&h.in, __ATOMIC_SEQ_CST) && kt_now() - t < 10;) kt_sleep_ms(1);
    if (pthread_create(&cb.th, NULL, caller_run, &cb) != 0) { h.go = 1; pthread_join(ca.th, NULL); return 0; }
    for (t = kt_now(); !waiting && kt_now() - t < 10; kt_sleep_ms(1)) {
        kcache_get_stats(b, &st);
        waiting = st.build_waits == 1;
    }
    KT_CHECK_MSG(waiting, "key %u: the second caller never waited for the build", id);
    __atomic_store_n(&h.go, 1, __ATOMIC_SEQ_CST);
    pthread_join(ca.th, NULL);
    pthread_join(cb.th, NULL);
    KT_CHECK_MSG(ca.ok && cb.ok && h.builds == 1, "key %u: payloads %d %d, %d builds", id, ca.ok, cb.ok, h.builds);
    return ca.ok && cb.ok && h.builds == 1;
}

/* A batch of 64 keys of its own on one builder: the first take_many names 64 keys (5 + 4 x 64
   arguments; the array held 4 + 4 x 64, and the call failed or wrote past it). */
static int take64_build(void *user, void **out, size_t *out_size) {
    unsigned id = *(const unsigned *)user;
    __atomic_add_fetch(&S->builds, 1, __ATOMIC_SEQ_CST);
    *out = KCACHE_MALLOC(200);
    kt_payload((unsigned char *)*out, 200, id);
    *out_size = 200;
    return 0;
}
static void remote_take_64(void) {
    kcache_job jobs[64];
    kcache_key keys[64];
    unsigned ids[64];
    kcache_stats st;
    kcache *kc = open_tls(T.url, NULL, NULL, NULL); /* (a memory-only handle on the plain server) */
    const char *unit = fresh("take64");
    int i, ok = 0;
    if (!kc) { KT_FAILF("open"); return; }
    S->builds = 0;
    for (i = 0; i < 64; i++) {
        kt_key(&keys[i], unit, (unsigned)i);
        ids[i] = (unsigned)i;
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].key = &keys[i];
        jobs[i].build = take64_build;
        jobs[i].user = &ids[i];
    }
    kcache_get_or_build_many(kc, jobs, 64, 1);
    for (i = 0; i < 64; i++) {
        if (jobs[i].status == KCACHE_OK) {
            ok += kt_payload_ok(jobs[i].data, jobs[i].size, 200, (unsigned)i);
            kcache_release(kc, jobs[i].data);
        }
        kcache_key_free(&keys[i]);
    }
    kcache_get_stats(kc, &st);
    kcache_close(kc);
    printf("# remote_take_64: %d of 64 right, %d builds, %llu remote errors\n", ok, S->builds, (unsigned long long)st.remote_errors);
    KT_CHECK_MSG(ok == 64 && S->builds == 64, "%d of 64 right, %d builds", ok, S->builds);
    KT_CHECK_MSG(st.remote_errors == 0, "%llu remote errors (the first take of 64 keys failed)", (unsigned long long)st.remote_errors);
}

static void remote_lookups(void) {
    kcache *a, *b;
    kcache_key k;
    kcache_stats st;
    held h;
    const void *d = NULL;
    size_t n = 0;
    int mark = 0, got;
    const char *sa = fresh("lk-a"), *sb = fresh("lk-b");
    if (!(a = open_counted(sa, T.url, 0))) return;
    gets_since(&mark);
    /* a cold kcache_get: one GET */
    kt_key(&k, "lookups", 1);
    KT_CHECK(kcache_get(a, &k, &d, &n) == KCACHE_MISS);
    kcache_key_free(&k);
    KT_CHECK_MSG((got = gets_since(&mark)) == 1, "a cold kcache_get sent %d GETs to the remote (want 1)", got);
    /* a cold kcache_get_or_build: one GET, then the build (the stats as before: one miss, one lookup) */
    memset(&h, 0, sizeof h);
    h.id = 2;
    h.go = 1;
    kt_key(&k, "lookups", 2);
    KT_CHECK(kcache_get_or_build(a, &k, held_build, &h, &d, &n) == KCACHE_OK && kt_payload_ok(d, n, 300, 2) && h.builds == 1);
    if (d) kcache_release(a, d);
    kcache_key_free(&k);
    KT_CHECK_MSG((got = gets_since(&mark)) == 1, "a cold kcache_get_or_build sent %d GETs to the remote (want 1)", got);
    kcache_get_stats(a, &st);
    KT_CHECK(st.misses == 2 && st.remote_lookups == 2 && st.builds == 1 && st.remote_puts == 1 && st.hits_remote == 0);
    /* another thread builds the key meanwhile: the waiter asked once, before it knew; after the
       wait, memory has it */
    KT_CHECK(build_while_waiting(a, a, 3));
    KT_CHECK_MSG((got = gets_since(&mark)) == 2, "a build and a thread waiting for it sent %d GETs to the remote (want 2: one each)", got);
    kcache_close(a);
    /* another kcache on the same store builds it: after waiting for its claim, the store has it */
    a = open_counted(sa, T.url, 0);
    b = open_counted(sa, T.url, 0);
    if (a && b) {
        gets_since(&mark);
        KT_CHECK(build_while_waiting(a, b, 4));
        KT_CHECK_MSG((got = gets_since(&mark)) == 2, "a build and a process waiting for its store claim sent %d GETs (want 2: one each)", got);
        kcache_get_stats(b, &st);
        KT_CHECK(st.remote_lookups == 1 && st.hits_disk == 1 && st.builds == 0);
    }
    if (b) kcache_close(b);
    /* another machine (another store) builds it: after waiting for its cluster claim, only the
       remote has it; that is the waiter's second GET */
    b = open_counted(sb, T.url, 0);
    if (a && b) {
        gets_since(&mark);
        KT_CHECK(build_while_waiting(a, b, 5));
        KT_CHECK_MSG((got = gets_since(&mark)) == 3, "a build and a machine waiting for its cluster claim sent %d GETs (want 3)", got);
        kcache_get_stats(b, &st);
        KT_CHECK(st.remote_lookups == 2 && st.hits_remote == 1 && st.builds == 0);
    }
    if (a) kcache_close(a);
    if (b) kcache_close(b);
}

/* kcache_explain is a diagnostic: its look at the remote changes no counter (kcache_stats, the
   stats file kcache-top reads) and no breaker. */
static int same_counters(kcache *kc, const kcache_stats *st, const uint64_t *ctr, const char *what) {
    kcache_stats now;
    int i, same = 1;
    kcache_get_stats(kc, &now);
    KT_CHECK_MSG(memcmp(st, &now, sizeof now) == 0, "%s changed kcache_stats (remote lookups %llu -> %llu, calls %llu -> %llu, errors %llu -> %llu)",
                 what, (unsigned long long)st->remote_lookups, (unsigned long long)now.remote_lookups, (unsigned long long)st->remote_calls,
                 (unsigned long long)now.remote_calls, (unsigned long long)st->remote_errors, (unsigned long long)now.remote_errors);
    same = memcmp(st, &now, sizeof now) == 0;
    for (i = 0; kc->pub.ctr && i < KCACHE__PUB_COUNTERS; i++)
        if (kcache__pub_ld(&kc->pub.ctr[i]) != ctr[i]) {
            KT_FAILF("%s changed counter %d of the stats file: %llu -> %llu", what, i, (unsigned long long)ctr[i],
                     (unsigned long long)kcache__pub_ld(&kc->pub.ctr[i]));
            same = 0;
        }
    return same;
}
static void snap(kcache *kc, kcache_stats *st, uint64_t *ctr) {
    int i;
    kcache_get_stats(kc, st);
    for (i = 0; i < KCACHE__PUB_COUNTERS; i++) ctr[i] = kc->pub.ctr ? kcache__pub_ld(&kc->pub.ctr[i]) : 0;
}
static void explain_counted(kcache *kc, unsigned id, const char *want, const char *what) {
    kcache_stats st;
    uint64_t ctr[KCACHE__PUB_COUNTERS];
    kcache_key k;
    char why[512];
    snap(kc, &st, ctr);
    kt_key(&k, "lookups", id);
    kcache_explain(kc, &k, why, sizeof why);
    kcache_key_free(&k);
    KT_CHECK_MSG(strncmp(why, want, strlen(want)) == 0, "%s: explain says \"%s\" (want \"%s...\")", what, why, want);
    same_counters(kc, &st, ctr, what);
}
static void remote_explain_stats(void) {
    kcache *w, *kc;
    kcache_key k;
    kcache_stats st;
    const void *d = NULL;
    size_t n = 0;
    unsigned char p[700];
    char url[100], name[33];
    int mark = 0;
    redisReply *x;
    if (!(w = open_counted(fresh("xs-w"), T.url, 0))) return;
    kt_payload(p, sizeof p, 10);
    kt_key(&k, "lookups", 10);
    KT_CHECK(kcache_put(w, &k, p, sizeof p) == KCACHE_OK); /* on the remote */
    kcache_hash_hex(kcache_key_digest(&k), name);
    kcache_key_free(&k);
    kt_key(&k, "lookups", 12);
    KT_CHECK(kcache_put(w, &k, p, sizeof p) == KCACHE_OK);
    kcache_key_free(&k);
    kcache_close(w);
    { /* key 12's value on the server: another key's bytes */
        char other[33];
        kt_key(&k, "lookups", 12);
        kcache_hash_hex(kcache_key_digest(&k), other);
        kcache_key_free(&k);
        if ((x = kt_redis_cmd(&T, "COPY kcache:1:%s kcache:1:%s REPLACE", name, other))) freeReplyObject(x);
    }
    if (!(kc = open_counted(fresh("xs-r"), T.url, 1))) return;
    KT_CHECK_MSG(kc->pub.ctr != NULL, "no stats file to compare");
    explain_counted(kc, 10, "hit: remote (", "explain of a remote hit");
    explain_counted(kc, 11, "miss: ", "explain of a remote miss");
    explain_counted(kc, 12, "miss: rejected", "explain of a value that fails validation on the remote");
    kt_key(&k, "lookups", 12);
    KT_CHECK(kcache_get(kc, &k, &d, &n) == KCACHE_MISS); /* the get judges it: a reject, deleted */
    kcache_key_free(&k);
    kcache_get_stats(kc, &st);
    KT_CHECK(st.remote_rejects == 1 && st.remote_lookups == 1);
    kt_key(&k, "lookups", 10);
    KT_CHECK(kcache_get(kc, &k, &d, &n) == KCACHE_OK && kt_payload_ok(d, n, sizeof p, 10)); /* the hit explain saw */
    if (d) kcache_release(kc, d);
    kcache_key_free(&k);
    kcache_close(kc);
    /* a remote nobody answers: explain's failed look neither counts nor opens the breaker; once a
       get has opened it, explain does not call at all */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", kt_free_port());
    if (!(kc = open_counted(fresh("xs-d"), url, 1))) return;
    gets_since(&mark);
    explain_counted(kc, 11, "miss: ", "explain with the remote down");
    kcache_get_stats(kc, &st);
    KT_CHECK_MSG(st.remote_open == 0, "explain opened the breaker");
    kt_key(&k, "lookups", 11);
    KT_CHECK(kcache_get(kc, &k, &d, &n) == KCACHE_MISS);
    kcache_key_free(&k);
    kcache_get_stats(kc, &st);
    KT_CHECK(st.remote_errors == 1 && st.remote_open == 1);
    gets_since(&mark);
    explain_counted(kc, 11, "miss: ", "explain with the breaker open");
    KT_CHECK_MSG(gets_since(&mark) == 0, "explain called a remote whose breaker is open");
    kcache_close(kc);
}

/* ---- KCACHE_COMPRESS ------------------------------------------------------------------------------ */

static long entry_file(const char *store, unsigned id, unsigned char head[16]) {
    char path[600], hex[33];
    FILE *f;
    long n;
    name_of(id, hex);
    snprintf(path, sizeof path, "%s/%s/e/%.2s/%s.kce", g_root, store, hex, hex);
    if (!(f = fopen(path, "r+b"))) return -1;
    if (fread(head, 1, 16, f) != 16) memset(head, 0, 16);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fclose(f);
    return n;
}
static void damage_entry_tail(const char *store, unsigned id) {
    char path[600], hex[33];
    FILE *f;
    name_of(id, hex);
    snprintf(path, sizeof path, "%s/%s/e/%.2s/%s.kce", g_root, store, hex, hex);
    if ((f = fopen(path, "r+b")) != NULL) {
        int c;
        fseek(f, -5, SEEK_END);
        c = fgetc(f);
        fseek(f, -5, SEEK_END);
        fputc(c ^ 0x10, f);
        fclose(f);
    }
}

static void compress_local(void) {
    mconf mc;
    const char *s = fresh("cz");
    unsigned char head[16];
    long size;
    memset(&mc, 0, sizeof mc);
    mc.compress = 1;
    job(0, s, &mc, DO_PUT, 20, 100000);
    size = entry_file(s, 20, head);
    KT_CHECK_MSG(size > 0 && size < 30000, "a compressible 100000-byte payload takes %ld bytes", size);
    KT_CHECK(kcache__get_u16(head + 8) == KCACHE__ENTRY_VERSION_ZSTD && kcache__get_u16(head + 10) == KCACHE__ENTRY_ZSTD);
    job(1, s, &mc, DO_GET, 20, 100000);
    KT_CHECK(S->r[1].ok && S->r[1].st.hits_disk == 1);
    mc.compress = 0; /* a reader that does not compress reads them too */
    job(2, s, &mc, DO_GET, 20, 100000);
    KT_CHECK(S->r[2].ok);
    mc.compress = 1;
    job(3, s, &mc, DO_PUT_RANDOM, 21, 50000);
    size = entry_file(s, 21, head);
    KT_CHECK_MSG(size > 50000 && kcache__get_u16(head + 8) == KCACHE__ENTRY_VERSION, "an incompressible payload: %ld bytes, version %u", size,
                 kcache__get_u16(head + 8));
    { /* kcache-inspect (beside kcache-top) reads such a store, and such an entry, as sound */
        char cmd[1600], out[8192], hex[33];
        const char *slash = strrchr(g_top, '/');
        int round;
        name_of(20, hex);
        for (round = 0; round < 2; round++) {
            FILE *f;
            size_t n;
            int rc;
            if (round == 0) snprintf(cmd, sizeof cmd, "%.*skcache-inspect '%s/%s' 2>&1", slash ? (int)(slash - g_top + 1) : 0, g_top, g_root, s);
            else snprintf(cmd, sizeof cmd, "%.*skcache-inspect '%s/%s/e/%.2s/%s.kce' 2>&1", slash ? (int)(slash - g_top + 1) : 0, g_top, g_root, s, hex, hex);
            f = popen(cmd, "r");
            n = f ? fread(out, 1, sizeof out - 1, f) : 0;
            out[n] = 0;
            rc = f ? pclose(f) : -1;
            KT_CHECK_MSG(rc == 0 && strstr(out, round ? "verdict    sound" : "verdict    consistent"), "kcache-inspect on a compressed %s (%d): %.300s",
                         round ? "entry" : "store", rc, out);
        }
    }
    damage_entry_tail(s, 20);
    job(4, s, &mc, DO_GET, 20, 100000);
    KT_CHECK(S->r[4].status == KCACHE_MISS && S->r[4].st.rejects == 1);
    KT_CHECK(entry_file(s, 20, head) < 0); /* removed */
}

/* ---- kcache-top ---------------------------------------------------------------------------------- */

/* One batch snapshot of the store's view; the line starting with `what`, or "". */
static void top_line(const char *store, const char *what, char *out, size_t cap, int *saw_event) {
    char cmd[1200], line[2048];
    FILE *f;
    out[0] = 0;
    snprintf(cmd, sizeof cmd, "%s -b -n 1 '%s/%s' 2>&1", g_top, g_root, store);
    if (!(f = popen(cmd, "r"))) return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, what, strlen(what)) == 0 && !out[0]) snprintf(out, cap, "%s", line);
        if (saw_event && strstr(line, "hit-remote")) *saw_event = 1;
    }
    pclose(f);
}
static long long top_value(const char *line, const char *key) {
    char k[64];
    const char *p;
    snprintf(k, sizeof k, " %s=", key);
    p = strstr(line, k);
    return p ? atoll(p + strlen(k)) : -1;
}

/* The first line of `kcache-top -b FORMAT` on the store that starts with `start` and holds `has`. */
static void top_metric(const char *store, const char *format, const char *start, const char *has, char *out, size_t cap) {
    char cmd[1200], line[8192];
    FILE *f;
    out[0] = 0;
    snprintf(cmd, sizeof cmd, "%s -b %s '%s/%s' 2>&1", g_top, format, g_root, store);
    if (!(f = popen(cmd, "r"))) return;
    while (fgets(line, sizeof line, f))
        if (!out[0] && strncmp(line, start, strlen(start)) == 0 && strstr(line, has)) {
            size_t n = strlen(line) < cap ? strlen(line) : cap - 1; /* (cut to fit) */
            memcpy(out, line, n);
            out[n] = 0;
        }
    pclose(f);
}
/* A Prometheus sample's value. */
static double top_number(const char *line) {
    const char *sp = strrchr(line, ' ');
    return sp ? atof(sp + 1) : -1;
}

static void top_remote(void) {
    kt_redis K;
    mconf mc;
    stepper m;
    int ev = 0, child;
    char line[2048];
    if (access(g_top, X_OK) != 0) { KT_FAILF("%s is not an executable (make build/kcache-top)", g_top); return; }
    if (!fault_setup(&K, &mc, NULL, 200, 60000, 30)) return; /* a breaker that opens stays open for the rest */
    if ((child = step_fork(&m)) < 0) { kt_redis_stop(&K); return; }
    if (child) {
        char dir[400];
        kcache_config cfg;
        kcache *kc;
        kt_config(&cfg, dir, sizeof dir, g_root, "top");
        cfg.publish = 1;
        cfg.remote = mc.url;
        cfg.remote_timeout_ms = mc.timeout_ms;
        cfg.remote_backoff_ms = mc.backoff_ms;
        if (kcache_open(&kc, &cfg) != KCACHE_OK) _exit(2);
        act(kc, 1, DO_GET, 30, 1000); /* a remote hit */
        act(kc, 1, DO_GET, 31, 10);   /* a remote miss */
        step_here(&m);
        act(kc, 1, DO_GET, 32, 10);   /* the server is gone: an error, the breaker opens */
        step_here(&m);
        kcache_close(kc);
        _exit(0);
    }
    {
        if (step_reached(&m)) kt_redis_kill(&K);
        step_go(&m);
        if (step_reached(&m)) {
            top_line("top", "remote ", line, sizeof line, &ev);
            KT_CHECK_MSG(top_value(line, "hits_remote") == 1 && top_value(line, "lookups") == 3 && top_value(line, "errors") == 1 &&
                             top_value(line, "breakers_open") == 1 && top_value(line, "breaker_opens") == 1,
                         "kcache-top's remote line: %s", line);
            KT_CHECK_MSG(ev, "no hit-remote event in kcache-top's snapshot");
            top_line("top", "totals ", line, sizeof line, NULL);
            KT_CHECK_MSG(top_value(line, "hits") == 1, "totals: %s", line);
            top_line("top", "shard ", line, sizeof line, NULL); /* per shard (issue 26.9) */
            KT_CHECK_MSG(strstr(line, mc.url + 8) && top_value(line, "hits") == 1 && top_value(line, "misses") == 1 && top_value(line, "errors") == 1,
                         "kcache-top's shard line: %s", line);
            /* the metrics (issue 35.7): calls by result and the shard's breaker, open now */
            top_metric("top", "--prometheus", "kcache_remote_calls_total{", "result=\"ok\"}", line, sizeof line);
            KT_CHECK_MSG(top_number(line) == 2, "ok calls: %s", line);
            top_metric("top", "--prometheus", "kcache_remote_calls_total{", "result=\"error\"}", line, sizeof line);
            KT_CHECK_MSG(top_number(line) == 1, "failed calls: %s", line);
            top_metric("top", "--prometheus", "kcache_remote_breaker_open{", "", line, sizeof line);
            KT_CHECK_MSG(strstr(line, mc.url + 8) && top_number(line) == 1, "breaker gauge: %s", line);
            top_metric("top", "--prometheus", "kcache_remote_breaker_opened_timestamp_seconds{", "", line, sizeof line);
            KT_CHECK_MSG(top_number(line) > 1.7e9, "breaker opened at: %s", line);
            top_metric("top", "--json", "{", "", line, sizeof line);
            KT_CHECK_MSG(strstr(line, "\"remote_calls\":{\"ok\":2,\"error\":1,\"timeout\":0,\"skipped\":0}") &&
                             strstr(line, "\"remote_breaker_open\":1") && strstr(line, "\"remote_breakers_open\":1"),
                         "kcache-top --json: %.600s", line);
        }
        step_go(&m);
        step_end(&m);
    }
    top_line("top", "remote ", line, sizeof line, NULL);
    KT_CHECK_MSG(top_value(line, "breakers_open") == 0 && top_value(line, "hits_remote") == 1, "after the process closed its cache: %s", line);
    kt_redis_stop(&K);
}

/* No secret reaches the metrics (issue 35.7): a memory-only process (KCACHE_STATS_DIR) on a Redis
   with a password in its URL; kcache-top's JSON and Prometheus outputs and the stats file itself
   hold the shard's URL without it, and its calls. */
static void top_metrics_secret(void) {
    kt_redis A;
    char url[400], sdir[600], out[8192], cmd[4096];
    pid_t p;
    int st = 0;
    FILE *f;
    size_t n;
    if (access(g_top, X_OK) != 0) { KT_FAILF("%s is not an executable (make build/kcache-top)", g_top); return; }
    if (!kt_redis_start(&A, g_root, 1, "requirepass hunter2")) { KT_FAILF("redis-server with a password did not start"); return; }
    snprintf(url, sizeof url, "redis://:hunter2@127.0.0.1:%d/2", A.port);
    snprintf(sdir, sizeof sdir, "%s/metrics-stats", g_root);
    fflush(stdout);
    if ((p = fork()) == 0) {
        kcache_config cfg;
        kcache *kc;
        kcache_key k;
        const void *d;
        size_t sz;
        kcache_config_defaults(&cfg);
        cfg.persistent = 0;
        cfg.stats_dir = sdir;
        cfg.remote = url;
        cfg.remote_timeout_ms = 1000;
        if (kcache_open(&kc, &cfg) != KCACHE_OK) _exit(2);
        kcache_key_init(&k, "metrics");
        kcache_key_u64(&k, "n", 1);
        kcache_put(kc, &k, "payload", 7);
        kcache_close(kc);
        if (kcache_open(&kc, &cfg) != KCACHE_OK) _exit(2);
        if (kcache_get(kc, &k, &d, &sz) != KCACHE_OK) _exit(3); /* a remote hit: memory only, a new handle */
        kcache_release(kc, d);
        kcache_key_free(&k);
        kcache_close(kc);
        _exit(0);
    }
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
    KT_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the memory-only process: status %d", st);
    snprintf(cmd, sizeof cmd, "%s -b --json '%s'; %s -b --prometheus '%s'; %s -b '%s'", g_top, sdir, g_top, sdir, g_top, sdir);
    out[0] = 0;
    if ((f = popen(cmd, "r")) != NULL) {
        n = fread(out, 1, sizeof out - 1, f);
        out[n] = 0;
        pclose(f);
    }
    KT_CHECK_MSG(!strstr(out, "hunter2"), "a password in kcache-top's output: %.600s", out);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/2", A.port); /* as shown */
    KT_CHECK_MSG(strstr(out, url) && strstr(out, "\"remote_calls\":{\"ok\":2,") && strstr(out, "\"hits\":{\"memory\":0,\"store\":0,\"layer\":0,\"remote\":1}"),
                 "the shard and its calls in the JSON: %.600s", out);
    snprintf(cmd, sizeof cmd, "grep -c hunter2 '%s/stats'", sdir);
    if ((f = popen(cmd, "r")) != NULL) {
        n = fread(out, 1, sizeof out - 1, f);
        out[n] = 0;
        pclose(f);
        KT_CHECK_MSG(atoi(out) == 0, "the password is in the stats file (%s)", out);
    }
    kt_redis_stop(&A);
}

int main(int argc, char **argv) {
    if (argc > 1) g_top = argv[1];
    signal(SIGPIPE, SIG_DFL); /* a write into a dead socket must not kill a machine: kcache sees to it */
    if (!kt_mktemp(g_root, sizeof g_root, "test-remote")) { printf("FAIL setup: mkdtemp\n"); return 1; }
    S = (shared *)mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED) { printf("FAIL setup: mmap\n"); return 1; }
    {
        static const char *const vars[] = {"KCACHE_DIR", "KCACHE_REMOTE", "KCACHE_REMOTE_MODE", "KCACHE_REMOTE_TIMEOUT", "KCACHE_REMOTE_SECRET",
                                           "KCACHE_REMOTE_MAX_ENTRY", "KCACHE_COMPRESS", "KCACHE_DEBUG", "KCACHE_ENABLE", "KCACHE_PERSISTENT", NULL};
        int i;
        for (i = 0; vars[i]; i++) unsetenv(vars[i]);
    }
    if (!kt_redis_start(&T, g_root, 1, NULL) || !kt_redis_start(&U, g_root, 0, NULL)) {
        printf("FAIL setup: redis-server did not start (scripts/deps.sh installs it)\n");
        return 1;
    }
    KT_RUN(remote_urls);
    KT_RUN(remote_tcp);
    KT_RUN(remote_unix);
    KT_RUN(remote_db_auth);
    KT_RUN(remote_url_escapes);
    KT_RUN(remote_tls);
    KT_RUN(remote_tls_waiters);
    KT_RUN(remote_rejects);
    KT_RUN(remote_signed);
    KT_RUN(remote_gmac);
    KT_RUN(remote_mac_early);
    KT_RUN(remote_ro_max_entry);
    KT_RUN(remote_shards);
    KT_RUN(remote_killed);
    KT_RUN(remote_sigstop);
    KT_RUN(remote_debug_sleep);
    KT_RUN(remote_full);
    KT_RUN(remote_restart);
    KT_RUN(remote_garbage);
    KT_RUN(remote_partition);
    KT_RUN(remote_cluster_build);
    KT_RUN(remote_cluster);
    KT_RUN(remote_spellings);
    KT_RUN(remote_identity_copied);
    KT_RUN(remote_ttl_prefix);
    KT_RUN(remote_shard_counters);
    KT_RUN(remote_builder_killed);
    KT_RUN(remote_claim_renewed);
    KT_RUN(remote_build_fails);
    KT_RUN(remote_claim_planted);
    KT_RUN(remote_claim_replayed);
    KT_RUN(remote_signed_cluster);
    KT_RUN(remote_endless_reply);
    KT_RUN(remote_read_only_user);
    KT_RUN(remote_dns_silent);
    KT_RUN(remote_slow_link);
    KT_RUN(remote_value_framing);
    KT_RUN(remote_empty_host);
    KT_RUN(remote_tls_bounds);
    KT_RUN(remote_take_64);
    KT_RUN(remote_put_unanswered);
    KT_RUN(remote_lookups);
    KT_RUN(remote_explain_stats);
    KT_RUN(compress_local);
    KT_RUN(top_remote);
    KT_RUN(top_metrics_secret);
    kt_redis_stop(&T);
    kt_redis_stop(&U);
    if (!kt_failures_total) kt_rm_tree(g_root);
    else printf("# stores kept in %s\n", g_root);
    KT_EXIT();
}

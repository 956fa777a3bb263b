/* tests/test_backend.c - the remote tier through a backend of the caller's own (kcache_config's
 * remote_ops table), built without KCACHE_REDIS: the interface every build has, and the proof that
 * the core gives any backend what it gives Redis (shards with a breaker each, signed and
 * compressed values, signed claims).
 *
 * The backend here keeps values in this process's memory and implements the claim calls with a
 * mutex and a condition variable; each "machine" is a kcache of its own on a store of its own.
 *
 *   backend_roundtrip       a put reaches the backend under the key's digest; another machine hits it
 *                           (counted as a remote hit, written into its store: a third kcache on that
 *                           store hits the disk with the remote gone); explain says "hit: remote (NAME)"
 *   backend_mem_cap         a remote hit over KCACHE_MEM_SIZE: served, written into the store, not kept
 *                           in memory (the next get is a disk hit)
 *   backend_rejects         tampered, truncated, foreign and garbage values: a miss, a reject, deleted
 *                           on the backend; explain names the remote; a zstd (v2) value this build
 *                           cannot read is a miss and is left alone
 *   backend_breaker         a failing backend costs one call: then it is skipped until the back-off
 *                           ends, one call finds out, and the breaker closes when it answers again;
 *                           timeouts counted apart; remote_open says how many are open
 *   backend_shard_counters  kcache_get_remote_shards: a shard's hits, misses, a timeout, skipped calls,
 *                           its breaker open; kcache_remote_in_use names it
 *   backend_full            a backend that refuses puts (ENOSPC) is left alone for puts only
 *   backend_ro_max_entry    mode ro writes nothing and deletes nothing; entries over remote_max_entry
 *                           stay local
 *   backend_cluster_build   8 machines miss one key together: one build, every payload right, the
 *                           claim released; a build that fails abandons the claim and the waiters
 *                           build on their own; without a claim callback every machine builds
 *   backend_remove          kcache_remove deletes the remote copy too (rw), not in ro
 *   no_redis_build          KCACHE_REMOTE in a build without KCACHE_REDIS, and a secret without
 *                           KCACHE_HMAC_OPENSSL: no remote, said why, caching as before
 *   remote_env              KCACHE_REMOTE_* and KCACHE_COMPRESS parsed, bad values keep the default;
 *                           an empty KCACHE_REMOTE_SECRET is no remote (said why), never unsigned
 *   backend_no_writes       mode ro takes no claim (get_or_build of a cold key calls no claim op) and
 *                           deletes no rejected value (counted); a backend that refuses writes
 *                           (EROFS) has claims skipped with the puts while lookups go on
 *   backend_shards          one backend of two servers (remote_open_shard): each key on one shard, both
 *                           used; one shard failing opens its breaker (one call, then skipped) while
 *                           the other keeps serving lookups and puts; each shard closed at close; a
 *                           URL the backend refuses is no remote, said why
 *   backend_kit             a backend on the backend kit (kcache_config.remote_backend), as Redis is:
 *                           one shard per URL shown as the backend says (no credentials), the same
 *                           server spelled twice one shard (identity), a refused URL no remote (the
 *                           backend's words), the tier's parameters with defaults resolved, claims
 *                           honoured by their life and (signed build) by their signature, and the
 *                           MAC the backend computed while a value arrived used in place of the
 *                           core's own (a wrong one rejects the value)
 *   backend_claim_reissue   (issue 35.8) a build longer than a claim's life: with claim_reissue each
 *                           renewal re-issues the token with the server's time (server_time_ns), the
 *                           claim stays held (a waiter gets the result) and is released; without it
 *                           one token is renewed, as in 0.4. backend_kit: a signed token is honoured
 *                           within 3 claim lifetimes of its issue by the server's clock only
 *   backend_signed          (KCACHE_HMAC_OPENSSL) with a secret (cfg or KCACHE_REMOTE_SECRET) values
 *                           are GMAC-signed (HMAC with remote_mac): read back with the secret, by an
 *                           HMAC signer and without a secret; a changed entry, nonce or tag, another
 *                           secret, a signature taken off, an unsigned writer's value: rejected and
 *                           deleted; build claims' tokens carry HMAC-SHA-256 of their id, none
 *                           without a secret
 *   backend_compressed      (KCACHE_ZSTD) a compressible payload reaches the backend as a zstd entry
 *                           under a quarter of its size and is read back whole; random bytes go as
 *                           they are
 *   relative_paths          the debug log says that a relative KCACHE_DIR and KCACHE_LAYERS are taken
 *                           against the working directory and a relative XDG_CACHE_HOME is ignored
 *
 * Build: make build/test_backend build/asan/test_backend (plain C99 + pthreads: the signing and
 * zstd groups say "skip"), and build/test_backend_signed build/asan/test_backend_signed (with
 * KCACHE_HMAC_OPENSSL and KCACHE_ZSTD, -lcrypto -lzstd: every group). */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"
#include "kt_remote.h"

#include <pthread.h>

/* ---- the backend: values in memory, claims with a mutex and a condition variable ---------------- */

#define MB_VALUES 512
typedef struct mb_value { char name[33]; unsigned char *data; size_t len; } mb_value;
typedef struct mem_backend {
    pthread_mutex_t m;
    pthread_cond_t c;
    mb_value v[MB_VALUES];
    int n;
    /* one claim at a time is enough here */
    char claim_name[33], claim_token[200]; /* (a token is under 200 bytes) */
    double claim_until;      /* kt_now() seconds; 0: none */
    unsigned long ends;      /* releases and abandons so far */
    int last_stored;         /* the latest end: 1 released, 0 abandoned */
    /* what was called */
    int gets, puts, removes, takes, waits, renews, releases, abandons, reissues;
    int put_releases, take_manys; /* the 0.6 exchanges of two steps in one (put_release, claim_take_many) */
    int closes;              /* remote_close_shard calls (a shard of several) */
    kcache_status fail;      /* every call fails with this while set (KCACHE_OK: none) */
    kcache_status put_fail;  /* puts fail with this while set */
} mem_backend;

static mem_backend *mb_new(void) {
    mem_backend *b = (mem_backend *)calloc(1, sizeof *b);
    pthread_mutex_init(&b->m, NULL);
    pthread_cond_init(&b->c, NULL);
    return b;
}
static void mb_free(mem_backend *b) {
    int i;
    for (i = 0; i < b->n; i++) free(b->v[i].data);
    pthread_mutex_destroy(&b->m);
    pthread_cond_destroy(&b->c);
    free(b);
}
static mb_value *mb_find(mem_backend *b, const char *name) {
    int i;
    for (i = 0; i < b->n; i++)
        if (strcmp(b->v[i].name, name) == 0) return &b->v[i];
    return NULL;
}
/* Replaces (or adds) a value: what a tamperer or another client would do on the server. */
static void mb_set(mem_backend *b, const char *name, const void *p, size_t n) {
    mb_value *v;
    pthread_mutex_lock(&b->m);
    if (!(v = mb_find(b, name)) && b->n < MB_VALUES) { v = &b->v[b->n++]; snprintf(v->name, sizeof v->name, "%s", name); v->data = NULL; }
    if (v) {
        free(v->data);
        v->data = (unsigned char *)malloc(n ? n : 1);
        memcpy(v->data, p, n);
        v->len = n;
    }
    pthread_mutex_unlock(&b->m);
}
/* A copy of a value (free it), or NULL. */
static unsigned char *mb_copy(mem_backend *b, const char *name, size_t *n) {
    unsigned char *p = NULL;
    mb_value *v;
    pthread_mutex_lock(&b->m);
    if ((v = mb_find(b, name)) != NULL && (p = (unsigned char *)malloc(v->len ? v->len : 1)) != NULL) {
        memcpy(p, v->data, v->len);
        *n = v->len;
    }
    pthread_mutex_unlock(&b->m);
    return p;
}
static int mb_has(mem_backend *b, const char *name) {
    int has;
    pthread_mutex_lock(&b->m);
    has = mb_find(b, name) != NULL;
    pthread_mutex_unlock(&b->m);
    return has;
}

static kcache_status mb_get(void *user, const char *name, const void **data, size_t *size, void **hold) {
    mem_backend *b = (mem_backend *)user;
    mb_value *v;
    kcache_status s = KCACHE_MISS;
    pthread_mutex_lock(&b->m);
    b->gets++;
    if (b->fail != KCACHE_OK) s = b->fail;
    else if ((v = mb_find(b, name)) != NULL) {
        unsigned char *copy = (unsigned char *)malloc(v->len ? v->len : 1);
        memcpy(copy, v->data, v->len);
        *data = copy;
        *size = v->len;
        *hold = copy;
        s = KCACHE_OK;
    }
    pthread_mutex_unlock(&b->m);
    return s;
}
static void mb_release(void *user, void *hold) {
    (void)user;
    free(hold);
}
static kcache_status mb_put(void *user, const char *name, const void *data, size_t size) {
    mem_backend *b = (mem_backend *)user;
    kcache_status s;
    pthread_mutex_lock(&b->m);
    b->puts++;
    s = b->fail != KCACHE_OK ? b->fail : b->put_fail;
    pthread_mutex_unlock(&b->m);
    if (s == KCACHE_OK) mb_set(b, name, data, size);
    return s;
}
static kcache_status mb_remove(void *user, const char *name) {
    mem_backend *b = (mem_backend *)user;
    mb_value *v;
    kcache_status s = KCACHE_MISS;
    pthread_mutex_lock(&b->m);
    b->removes++;
    if (b->fail != KCACHE_OK) s = b->fail;
    else if ((v = mb_find(b, name)) != NULL) {
        free(v->data);
        *v = b->v[--b->n];
        s = KCACHE_OK;
    }
    pthread_mutex_unlock(&b->m);
    return s;
}
static int mb_claimed(mem_backend *b, const char *name) {
    if (b->claim_until && kt_now() >= b->claim_until) b->claim_until = 0; /* ran out */
    return b->claim_until && strcmp(b->claim_name, name) == 0;
}
static kcache_status mb_claim(void *user, const char *name, int op, const char *token, uint32_t ms) {
    mem_backend *b = (mem_backend *)user;
    kcache_status s = KCACHE_OK;
    pthread_mutex_lock(&b->m);
    if (b->fail != KCACHE_OK) { pthread_mutex_unlock(&b->m); return b->fail; }
    switch (op) {
    case KCACHE_CLAIM_TAKE:
        b->takes++;
        if (mb_claimed(b, name) || (b->claim_until && strcmp(b->claim_name, name) != 0)) s = KCACHE_EEXIST;
        else {
            snprintf(b->claim_name, sizeof b->claim_name, "%s", name);
            snprintf(b->claim_token, sizeof b->claim_token, "%s", token);
            b->claim_until = kt_now() + ms / 1000.0;
        }
        break;
    case KCACHE_CLAIM_RENEW:
        b->renews++;
        if (mb_claimed(b, name) && strcmp(b->claim_token, token) == 0) b->claim_until = kt_now() + ms / 1000.0;
        else s = KCACHE_MISS;
        break;
    case KCACHE_CLAIM_RELEASE:
    case KCACHE_CLAIM_ABANDON:
        if (op == KCACHE_CLAIM_RELEASE) b->releases++; else b->abandons++;
        if (mb_claimed(b, name) && strcmp(b->claim_token, token) == 0) b->claim_until = 0;
        b->ends++;
        b->last_stored = op == KCACHE_CLAIM_RELEASE;
        pthread_cond_broadcast(&b->c);
        break;
    case KCACHE_CLAIM_WAIT: {
        unsigned long seen = b->ends;
        double until = kt_now() + ms / 1000.0;
        b->waits++;
        while (mb_claimed(b, name) && b->ends == seen && kt_now() < until) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 5000000; /* a claim may run out without a release: look again in 5 ms */
            if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
            pthread_cond_timedwait(&b->c, &b->m, &ts);
        }
        s = b->ends != seen ? (b->last_stored ? KCACHE_OK : KCACHE_MISS) : mb_claimed(b, name) ? KCACHE_EEXIST : KCACHE_OK;
        break;
    }
    default: s = KCACHE_EINVAL; break;
    }
    pthread_mutex_unlock(&b->m);
    return s;
}

/* The 0.6 form: a renewal re-issues the token (its issue time inside its signature), and the
   server's clock is an hour ahead of this client's, so that a token's time shows whose clock made it. */
static kcache_status mb_reissue(void *user, const char *name, const char *token, const char *new_token, uint32_t ms) {
    mem_backend *b = (mem_backend *)user;
    kcache_status s = KCACHE_MISS;
    pthread_mutex_lock(&b->m);
    if (b->fail != KCACHE_OK) { pthread_mutex_unlock(&b->m); return b->fail; }
    b->reissues++;
    if (mb_claimed(b, name) && strcmp(b->claim_token, token) == 0) {
        snprintf(b->claim_token, sizeof b->claim_token, "%s", new_token);
        b->claim_until = kt_now() + ms / 1000.0;
        s = KCACHE_OK;
    }
    pthread_mutex_unlock(&b->m);
    return s;
}
#define MB_CLOCK_AHEAD_NS ((int64_t)3600 * 1000000000)
static int64_t mb_clock(void *user, const char *name) {
    struct timespec ts;
    (void)user; (void)name;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + MB_CLOCK_AHEAD_NS;
}

/* The 0.6 exchanges: a put and the claim's release in one call, and takes that look at the value. */
static kcache_status mb_put_release(void *user, const char *name, const void *data, size_t size, const char *token, uint32_t ms) {
    mem_backend *b = (mem_backend *)user;
    kcache_status s = mb_put(user, name, data, size);
    pthread_mutex_lock(&b->m);
    b->put_releases++;
    pthread_mutex_unlock(&b->m);
    mb_claim(user, name, KCACHE_CLAIM_RELEASE, token, ms);
    return s;
}
static kcache_status mb_take_many(void *user, const char *const *names, const char *const *tokens, size_t n, size_t want, uint32_t ms,
                                  kcache_status *st) {
    mem_backend *b = (mem_backend *)user;
    size_t i, got = 0;
    pthread_mutex_lock(&b->m);
    b->take_manys++;
    pthread_mutex_unlock(&b->m);
    for (i = 0; i < n; i++) {
        st[i] = got >= want ? KCACHE_MISS : mb_has(b, names[i]) ? KCACHE_EEXIST : mb_claim(user, names[i], KCACHE_CLAIM_TAKE, tokens[i], ms);
        got += st[i] == KCACHE_OK;
    }
    return KCACHE_OK;
}

static const kcache_remote_ops mb_ops = {mb_get, mb_release, mb_put, mb_remove, mb_claim, NULL, NULL, NULL, NULL, NULL};
static const kcache_remote_ops mb_ops_no_claim = {mb_get, mb_release, mb_put, mb_remove, NULL, NULL, NULL, NULL, NULL, NULL};
static const kcache_remote_ops mb_ops_reissue = {mb_get, mb_release, mb_put, mb_remove, mb_claim, NULL, mb_reissue, mb_clock, NULL, NULL};
static const kcache_remote_ops mb_ops_paired = {mb_get, mb_release, mb_put, mb_remove, mb_claim, NULL, NULL, NULL, mb_put_release, mb_take_many};

/* ---- machines ------------------------------------------------------------------------------------ */

static char g_root[300];

static void unset_env(void) {
    static const char *const vars[] = {"KCACHE_DIR", "KCACHE_REMOTE", "KCACHE_REMOTE_MODE", "KCACHE_REMOTE_TIMEOUT",
                                       "KCACHE_REMOTE_SECRET", "KCACHE_REMOTE_MAX_ENTRY", "KCACHE_COMPRESS", "KCACHE_DEBUG",
                                       "KCACHE_ENABLE", "KCACHE_PERSISTENT", "KCACHE_BUILD_WAIT", NULL};
    int i;
    for (i = 0; vars[i]; i++) unsetenv(vars[i]);
}

/* A store of its own under the test's root (name: which machine), on the backend b. */
static kcache *machine(const char *name, mem_backend *b, const kcache_remote_ops *ops, void (*tune)(kcache_config *)) {
    char dir[400];
    kcache_config cfg;
    kcache *kc = NULL;
    kt_config(&cfg, dir, sizeof dir, g_root, name);
    cfg.remote = "mem://test";
    cfg.remote_ops = ops;
    cfg.remote_user = b;
    cfg.remote_backoff_ms = 200;
    cfg.build_wait_ms = 20000;
    if (tune) tune(&cfg);
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) { printf("FAIL setup: kcache_open %s\n", dir); exit(1); }
    return kc;
}

static void name_of(const kcache_key *k, char out[33]) { kcache_hash_hex(kcache_key_digest(k), out); }

static int get_ok(kcache *kc, unsigned id, size_t len) { return kt_get(kc, "backend", id, id, len) == 1; }
static kcache_status put_id(kcache *kc, unsigned id, size_t len) { return kt_put(kc, "backend", id, id, len); }

/* ---- the cases ------------------------------------------------------------------------------------ */

static void backend_roundtrip(void) {
    mem_backend *b = mb_new();
    kcache *a = machine("rt-a", b, &mb_ops, NULL), *m = machine("rt-b", b, &mb_ops, NULL), *c;
    kcache_stats st;
    kcache_key k;
    char name[33], why[512];
    kt_key(&k, "backend", 1);
    name_of(&k, name);
    KT_CHECK(put_id(a, 1, 40000) == KCACHE_OK);
    KT_CHECK_MSG(mb_has(b, name), "the put did not reach the backend under the key's digest %s", name);
    kcache_get_stats(a, &st);
    KT_CHECK_EQ_U64(st.remote_puts, 1);
    kcache_explain(m, &k, why, sizeof why);
    KT_CHECK_MSG(strncmp(why, "hit: remote (mem://test)", 24) == 0, "explain: %s", why);
    KT_CHECK(get_ok(m, 1, 40000));
    kcache_get_stats(m, &st);
    KT_CHECK_EQ_U64(st.hits_remote, 1);
    KT_CHECK_EQ_U64(st.hits_disk, 0);
    KT_CHECK_EQ_U64(st.remote_lookups, 1);
    KT_CHECK_EQ_U64(st.misses, 0);
    KT_CHECK_EQ_U64(st.remote_puts, 0); /* a remote hit is not sent back */
    KT_CHECK(get_ok(m, 1, 40000));
    kcache_get_stats(m, &st);
    KT_CHECK_EQ_U64(st.hits_mem, 1);
    kcache_close(m);
    /* the hit was written into b's store: without the backend, the disk has it */
    {
        char dir[400];
        kcache_config cfg;
        kt_config(&cfg, dir, sizeof dir, g_root, "rt-b");
        KT_CHECK(kcache_open(&c, &cfg) == KCACHE_OK);
        KT_CHECK(get_ok(c, 1, 40000));
        kcache_get_stats(c, &st);
        KT_CHECK_EQ_U64(st.hits_disk, 1);
        kcache_close(c);
    }
    /* a key nobody put: one lookup, a cold miss */
    {
        const void *d;
        size_t n;
        kcache_key k2;
        kt_key(&k2, "backend", 2);
        KT_CHECK(kcache_get(a, &k2, &d, &n) == KCACHE_MISS);
        kcache_get_stats(a, &st);
        KT_CHECK_EQ_U64(st.remote_lookups, 1);
        KT_CHECK_EQ_U64(st.misses, 1);
        KT_CHECK_EQ_U64(st.misses_by_reason[KCACHE_REASON_FIELD], 1); /* the unit is there, with another id */
        kcache_key_free(&k2);
    }
    kcache_key_free(&k);
    kcache_close(a);
    mb_free(b);
}

/* KCACHE_MEM_SIZE is a hard cap for remote hits too (issue 24): a remote hit over the memory budget
   is served and written into the store, never kept in memory; the next get reads the disk. */
static void small_memory(kcache_config *cfg) { cfg->mem_size = 16384; }
static void backend_mem_cap(void) {
    mem_backend *b = mb_new();
    kcache *a = machine("cap-a", b, &mb_ops, NULL), *m = machine("cap-b", b, &mb_ops, small_memory);
    kcache_stats st;
    KT_CHECK(put_id(a, 3, 40000) == KCACHE_OK);
    KT_CHECK(get_ok(m, 3, 40000));
    kcache_get_stats(m, &st);
    KT_CHECK_EQ_U64(st.hits_remote, 1);
    KT_CHECK_MSG(st.mem_bytes <= 16384, "a 40,000-byte remote hit against a 16 KiB budget: mem_bytes %llu", (unsigned long long)st.mem_bytes);
    KT_CHECK(get_ok(m, 3, 40000));
    kcache_get_stats(m, &st);
    KT_CHECK_EQ_U64(st.hits_mem, 0);
    KT_CHECK_EQ_U64(st.hits_disk, 1);
    kcache_close(m);
    kcache_close(a);
    mb_free(b);
}

/* A v1 value turned into what a zstd build would send (version 2, the zstd flag), with every
   checksum right: a build without KCACHE_ZSTD must miss it and leave it alone. */
static void make_v2(unsigned char *v, size_t n) {
    unsigned char *e = v + KCACHE__RV_HEADER;
    uint32_t rlen = kcache__get_u32(e + 64);
    (void)n;
    kcache__put_u16(e + 8, KCACHE__ENTRY_VERSION_ZSTD);
    kcache__put_u16(e + 10, KCACHE__ENTRY_ZSTD);
    kcache__put_u64(e + KCACHE__ENTRY_FIXED + rlen, kcache_hash(e, KCACHE__ENTRY_FIXED + rlen).lo);
}

static void backend_rejects(void) {
    mem_backend *b = mb_new();
    kcache *a = machine("rj-a", b, &mb_ops, NULL);
    unsigned char *good, *v;
    size_t n = 0, n2 = 0;
    char name[33], name2[33], why[512];
    kcache_key k, k2;
    kcache_stats st;
    int round, rounds = 7;
    kt_key(&k, "backend", 10);
    kt_key(&k2, "backend", 11);
    name_of(&k, name);
    name_of(&k2, name2);
    KT_CHECK(put_id(a, 10, 5000) == KCACHE_OK);
    KT_CHECK(put_id(a, 11, 5000) == KCACHE_OK);
    good = mb_copy(b, name, &n);
    KT_CHECK(good && n > KCACHE__RV_HEADER + 100);
#ifdef KCACHE_ZSTD
    rounds = 6; /* (a zstd value is one this build reads: round 6 is the build without KCACHE_ZSTD's) */
#endif
    for (round = 0; good && round < rounds; round++) {
        kcache *m;
        char store[32];
        const void *d = NULL;
        size_t dn = 0;
        kcache_status s;
        v = (unsigned char *)malloc(n + 64);
        memcpy(v, good, n);
        n2 = n;
        switch (round) {
        case 0: v[n - 100] ^= 1; break;                  /* a payload byte */
        case 1: n2 = n - 7; break;                        /* truncated */
        case 2: v[16 + 30] ^= 0x80; break;               /* the entry's digest */
        case 3: memcpy(v, "KCREMOTX", 8); break;         /* not our magic */
        case 4: { size_t i; for (i = 0; i < n; i++) v[i] = (unsigned char)(i * 7); } break; /* garbage */
        case 5: { size_t fn = 0; unsigned char *f = mb_copy(b, name2, &fn); memcpy(v, f, fn); n2 = fn; free(f); } break; /* another key's */
        default: make_v2(v, n); break;                    /* a format this build cannot read */
        }
        mb_set(b, name, v, n2);
        snprintf(store, sizeof store, "rj-m%d", round);
        m = machine(store, b, &mb_ops, NULL);
        kcache_explain(m, &k, why, sizeof why);
        if (round < 6) KT_CHECK_MSG(strstr(why, "rejected") && strstr(why, "mem://test"), "round %d: explain: %s", round, why);
        else KT_CHECK_MSG(strncmp(why, "miss: cold", 10) == 0, "round %d: explain: %s", round, why);
        KT_CHECK_MSG(mb_has(b, name), "round %d: explain deleted the value", round);
        s = kcache_get(m, &k, &d, &dn);
        KT_CHECK_MSG(s == KCACHE_MISS, "round %d: get %s", round, kcache_strerror(s));
        if (d) kcache_release(m, d);
        kcache_get_stats(m, &st);
        if (round < 6) {
            KT_CHECK_MSG(st.rejects == 1 && st.remote_rejects == 1, "round %d: rejects %llu remote %llu", round,
                         (unsigned long long)st.rejects, (unsigned long long)st.remote_rejects);
            KT_CHECK_MSG(!mb_has(b, name), "round %d: the bad value is still on the backend", round);
        } else {
            KT_CHECK_MSG(st.rejects == 0 && mb_has(b, name), "round %d: a value of a newer build was judged (rejects %llu)", round,
                         (unsigned long long)st.rejects);
        }
        KT_CHECK_EQ_U64(st.hits_remote, 0);
        kcache_close(m);
        free(v);
    }
    /* the owner's next put repairs it */
    KT_CHECK(put_id(a, 10, 5000) == KCACHE_OK);
    {
        kcache *m = machine("rj-after", b, &mb_ops, NULL);
        KT_CHECK(get_ok(m, 10, 5000));
        kcache_close(m);
    }
    free(good);
    kcache_key_free(&k);
    kcache_key_free(&k2);
    kcache_close(a);
    mb_free(b);
}

static void set_fail(mem_backend *b, kcache_status s) {
    pthread_mutex_lock(&b->m);
    b->fail = s;
    pthread_mutex_unlock(&b->m);
}
static int calls_of(mem_backend *b) {
    int n;
    pthread_mutex_lock(&b->m);
    n = b->gets + b->puts + b->removes + b->takes + b->waits;
    pthread_mutex_unlock(&b->m);
    return n;
}

static void backend_breaker(void) {
    mem_backend *b = mb_new();
    kcache *a = machine("br-a", b, &mb_ops, NULL);
    kcache_stats st;
    int i, before;
    double t;
    KT_CHECK(put_id(a, 20, 1000) == KCACHE_OK);
    set_fail(b, KCACHE_ETIMEOUT);
    before = calls_of(b);
    for (i = 0; i < 50; i++) KT_CHECK(!get_ok(a, 100 + (unsigned)i, 10));
    KT_CHECK_MSG(calls_of(b) - before == 1, "50 lookups on a failing backend made %d calls (want 1)", calls_of(b) - before);
    kcache_get_stats(a, &st);
    KT_CHECK_EQ_U64(st.remote_errors, 1);
    KT_CHECK_EQ_U64(st.remote_timeouts, 1);
    KT_CHECK_EQ_U64(st.remote_skipped, 49);
    KT_CHECK_EQ_U64(st.remote_breaker_opens, 1);
    KT_CHECK_EQ_U64(st.remote_open, 1);
    KT_CHECK_EQ_U64(st.misses, 50);
    /* a put while it is open: stored locally, not sent */
    KT_CHECK(put_id(a, 21, 1000) == KCACHE_OK);
    KT_CHECK(get_ok(a, 21, 1000));
    /* after the back-off one call finds it still down: open again, for twice as long */
    kt_sleep_ms(260);
    before = calls_of(b);
    for (i = 0; i < 20; i++) get_ok(a, 200 + (unsigned)i, 10);
    KT_CHECK_MSG(calls_of(b) - before == 1, "after the back-off: %d calls (want 1)", calls_of(b) - before);
    kcache_get_stats(a, &st);
    KT_CHECK_EQ_U64(st.remote_errors, 2);
    KT_CHECK_EQ_U64(st.remote_breaker_opens, 1); /* still the same opening */
    kt_sleep_ms(260);                            /* 400 ms now: not over yet */
    before = calls_of(b);
    get_ok(a, 300, 10);
    KT_CHECK_MSG(calls_of(b) == before, "the second back-off was not longer than the first");
    /* back: the next call after the back-off closes it */
    set_fail(b, KCACHE_OK);
    for (t = kt_now(); kt_now() - t < 3.0; kt_sleep_ms(20)) {
        kcache_get_stats(a, &st);
        if (!st.remote_open) break;
        get_ok(a, 301, 10);
    }
    kcache_get_stats(a, &st);
    KT_CHECK_MSG(st.remote_open == 0, "the breaker did not close when the backend came back");
    before = calls_of(b);
    for (i = 0; i < 5; i++) get_ok(a, 400 + (unsigned)i, 10);
    KT_CHECK_EQ_U64(calls_of(b) - before, 5);
    /* an error that is not a timeout */
    set_fail(b, KCACHE_EIO);
    get_ok(a, 500, 10);
    kcache_get_stats(a, &st);
    KT_CHECK_EQ_U64(st.remote_open, 1);
    KT_CHECK_MSG(st.remote_errors >= 3 && st.remote_timeouts == 2, "errors %llu timeouts %llu", (unsigned long long)st.remote_errors,
                 (unsigned long long)st.remote_timeouts);
    kcache_close(a);
    mb_free(b);
}

/* kcache_get_remote_shards for a backend of the caller's: its hits, misses, errors, timeouts and
   skipped calls, its breaker (issue 26.9). */
static void backend_shard_counters(void) {
    mem_backend *b = mb_new();
    kcache *a = machine("sc-a", b, &mb_ops, NULL), *c = machine("sc-c", b, &mb_ops, NULL);
    kcache_remote_shard sh[2];
    char why[200];
    int i;
    for (i = 0; i < 5; i++) KT_CHECK(put_id(a, 600 + (unsigned)i, 300) == KCACHE_OK);
    for (i = 0; i < 5; i++) KT_CHECK(get_ok(c, 600 + (unsigned)i, 300));
    for (i = 0; i < 3; i++) KT_CHECK(!get_ok(c, 700 + (unsigned)i, 300));
    KT_CHECK_EQ_U64(kcache_get_remote_shards(c, sh, 2), 1);
    KT_CHECK_STR(sh[0].url, "mem://test");
    KT_CHECK_MSG(sh[0].hits == 5 && sh[0].misses == 3 && sh[0].errors == 0 && sh[0].skipped == 0 && !sh[0].open && !sh[0].same,
                 "hits %llu misses %llu errors %llu", (unsigned long long)sh[0].hits, (unsigned long long)sh[0].misses,
                 (unsigned long long)sh[0].errors);
    set_fail(b, KCACHE_ETIMEOUT);
    for (i = 0; i < 4; i++) KT_CHECK(!get_ok(c, 800 + (unsigned)i, 300));
    KT_CHECK_EQ_U64(kcache_get_remote_shards(c, sh, 2), 1);
    KT_CHECK_MSG(sh[0].errors == 1 && sh[0].timeouts == 1 && sh[0].skipped == 3 && sh[0].open && sh[0].hits == 5 && sh[0].misses == 3,
                 "after a timeout: errors %llu timeouts %llu skipped %llu open %d", (unsigned long long)sh[0].errors,
                 (unsigned long long)sh[0].timeouts, (unsigned long long)sh[0].skipped, sh[0].open);
    KT_CHECK(kcache_remote_in_use(c, why, sizeof why) == 1 && strcmp(why, "mem://test") == 0);
    KT_CHECK_EQ_U64(kcache_get_remote_shards(NULL, sh, 2), 0);
    kcache_close(a);
    kcache_close(c);
    mb_free(b);
}

static void backend_full(void) {
    mem_backend *b = mb_new();
    kcache *a = machine("full-a", b, &mb_ops, NULL), *m = machine("full-b", b, &mb_ops, NULL);
    kcache_stats st;
    int puts0, gets0;
    KT_CHECK(put_id(a, 30, 3000) == KCACHE_OK);
    pthread_mutex_lock(&b->m);
    b->put_fail = KCACHE_ENOSPC;
    pthread_mutex_unlock(&b->m);
    KT_CHECK(put_id(a, 31, 3000) == KCACHE_OK); /* the local store has it: the caller never sees the remote */
    pthread_mutex_lock(&b->m);
    puts0 = b->puts;
    gets0 = b->gets;
    pthread_mutex_unlock(&b->m);
    KT_CHECK(put_id(a, 32, 3000) == KCACHE_OK);
    KT_CHECK(put_id(a, 33, 3000) == KCACHE_OK);
    KT_CHECK(get_ok(m, 30, 3000)); /* lookups go on */
    pthread_mutex_lock(&b->m);
    KT_CHECK_MSG(b->puts == puts0, "puts to a full backend were not skipped (%d more)", b->puts - puts0);
    KT_CHECK(b->gets == gets0 + 1);
    pthread_mutex_unlock(&b->m);
    kcache_get_stats(a, &st);
    KT_CHECK_EQ_U64(st.remote_open, 0);
    KT_CHECK_EQ_U64(st.remote_skipped, 2);
    KT_CHECK_EQ_U64(st.remote_errors, 1);
    KT_CHECK(get_ok(a, 31, 3000) && get_ok(a, 32, 3000));
    kcache_close(a);
    kcache_close(m);
    mb_free(b);
}

static void ro_mode(kcache_config *cfg) { cfg->remote_mode = KCACHE_REMOTE_RO; }
static void small_entries(kcache_config *cfg) { cfg->remote_max_entry = 8192; }

static void backend_ro_max_entry(void) {
    mem_backend *b = mb_new();
    kcache *w = machine("ro-w", b, &mb_ops, NULL), *r = machine("ro-r", b, &mb_ops, ro_mode), *s = machine("ro-s", b, &mb_ops, small_entries);
    kcache_stats st;
    char name[33];
    kcache_key k;
    KT_CHECK(put_id(w, 40, 2000) == KCACHE_OK);
    KT_CHECK(get_ok(r, 40, 2000)); /* reads */
    KT_CHECK(put_id(r, 41, 2000) == KCACHE_OK);
    kt_key(&k, "backend", 41);
    name_of(&k, name);
    KT_CHECK_MSG(!mb_has(b, name), "mode ro wrote the remote");
    kcache_key_free(&k);
    kcache_get_stats(r, &st);
    KT_CHECK_EQ_U64(st.remote_puts, 0);
    /* an entry over remote_max_entry stays local; a small one goes */
    KT_CHECK(put_id(s, 42, 20000) == KCACHE_OK);
    KT_CHECK(put_id(s, 43, 2000) == KCACHE_OK);
    kcache_get_stats(s, &st);
    KT_CHECK_EQ_U64(st.remote_puts, 1);
    KT_CHECK(get_ok(s, 42, 20000));
    KT_CHECK(!get_ok(w, 42, 20000) && get_ok(w, 43, 2000));
    kcache_close(w);
    kcache_close(r);
    kcache_close(s);
    mb_free(b);
}

static void backend_remove(void) {
    mem_backend *b = mb_new();
    kcache *w = machine("rm-w", b, &mb_ops, NULL), *r = machine("rm-r", b, &mb_ops, ro_mode);
    kcache_key k;
    char name[33];
    kt_key(&k, "backend", 50);
    name_of(&k, name);
    KT_CHECK(put_id(w, 50, 100) == KCACHE_OK);
    KT_CHECK(kcache_remove(r, &k) == KCACHE_MISS);
    KT_CHECK_MSG(mb_has(b, name), "a remove in mode ro deleted the remote value");
    KT_CHECK(kcache_remove(w, &k) == KCACHE_OK);
    KT_CHECK_MSG(!mb_has(b, name), "kcache_remove left the remote value (the next lookup would bring it back)");
    KT_CHECK(!get_ok(r, 50, 100));
    kcache_key_free(&k);
    kcache_close(w);
    kcache_close(r);
    mb_free(b);
}

/* ---- one build per cluster ---- */

typedef struct cluster_run {
    mem_backend *b;
    const kcache_remote_ops *ops;
    pthread_barrier_t start;
    int builds, fail_first, ok[8], status[8], round;
    uint64_t claimed_elsewhere; /* the machines' kcache_stats.builds_claimed_elsewhere, summed */
    pthread_mutex_t m;
} cluster_run;
typedef struct machine_arg { cluster_run *run; int me; } machine_arg;

static int slow_build(void *user, void **out, size_t *out_size) {
    cluster_run *run = (cluster_run *)user;
    int nth;
    pthread_mutex_lock(&run->m);
    nth = ++run->builds;
    pthread_mutex_unlock(&run->m);
    kt_sleep_ms(300);
    if (run->fail_first && nth == 1) return 1;
    *out = KCACHE_MALLOC(30000);
    kt_payload((unsigned char *)*out, 30000, 60);
    *out_size = 30000;
    return 0;
}
static void *machine_thread(void *p) {
    machine_arg *a = (machine_arg *)p;
    char name[32];
    kcache *kc;
    kcache_key k;
    const void *d = NULL;
    size_t n = 0;
    snprintf(name, sizeof name, "cl-%d-%d", a->run->round, a->me); /* every round on empty stores */
    kc = machine(name, a->run->b, a->run->ops, NULL);
    kt_key(&k, "backend", 60);
    pthread_barrier_wait(&a->run->start);
    a->run->status[a->me] = kcache_get_or_build(kc, &k, slow_build, a->run, &d, &n);
    a->run->ok[a->me] = a->run->status[a->me] == KCACHE_OK && kt_payload_ok(d, n, 30000, 60);
    if (d) kcache_release(kc, d);
    {
        kcache_stats st;
        kcache_get_stats(kc, &st);
        pthread_mutex_lock(&a->run->m);
        a->run->claimed_elsewhere += st.builds_claimed_elsewhere;
        pthread_mutex_unlock(&a->run->m);
    }
    kcache_key_free(&k);
    kcache_close(kc);
    return NULL;
}
static void cluster(cluster_run *run) {
    pthread_t th[8];
    machine_arg args[8];
    int i;
    pthread_barrier_init(&run->start, NULL, 8);
    pthread_mutex_init(&run->m, NULL);
    for (i = 0; i < 8; i++) {
        args[i].run = run;
        args[i].me = i;
        pthread_create(&th[i], NULL, machine_thread, &args[i]);
    }
    for (i = 0; i < 8; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&run->start);
    pthread_mutex_destroy(&run->m);
}

static void backend_cluster_build(void) {
    cluster_run run;
    int i, good = 0, failed = 0;
    double t;
    memset(&run, 0, sizeof run);
    run.b = mb_new();
    run.ops = &mb_ops;
    t = kt_now();
    cluster(&run);
    t = kt_now() - t;
    for (i = 0; i < 8; i++) good += run.ok[i];
    KT_CHECK_EQ_U64(run.builds, 1);
    KT_CHECK_EQ_U64(good, 8);
    KT_CHECK_EQ_U64(run.b->releases, 1);
    KT_CHECK_MSG(run.b->claim_until == 0, "the claim was left held");
    KT_CHECK_EQ_U64(run.claimed_elsewhere, 0); /* one build, by the claim's holder */
    KT_CHECK_MSG(t < 5.0, "8 machines and one 0.3 s build took %.1f s", t);
    printf("# backend_cluster_build: 8 machines, 1 build of 0.3 s, %.2f s wall, %d waits\n", t, run.b->waits);
    mb_free(run.b);

    /* a backend with put_release and claim_take_many (issue 35: fewer round trips): the holder's put
       and release in one call (no release of its own), every take through claim_take_many */
    memset(&run, 0, sizeof run);
    run.b = mb_new();
    run.ops = &mb_ops_paired;
    run.round = 3;
    cluster(&run);
    for (i = 0, good = 0; i < 8; i++) good += run.ok[i];
    KT_CHECK_EQ_U64(run.builds, 1);
    KT_CHECK_EQ_U64(good, 8);
    KT_CHECK_EQ_U64(run.b->put_releases, 1);
    KT_CHECK_EQ_U64(run.b->puts, 1);
    KT_CHECK_EQ_U64(run.b->releases, 1); /* (the one inside put_release) */
    KT_CHECK_MSG(run.b->take_manys >= 1 && run.b->takes == run.b->take_manys, "takes %d, of them by claim_take_many %d", run.b->takes,
                 run.b->take_manys);
    KT_CHECK_MSG(run.b->claim_until == 0, "the claim was left held");
    mb_free(run.b);

    /* the first build fails: its claim is abandoned, the waiters build on their own */
    memset(&run, 0, sizeof run);
    run.b = mb_new();
    run.ops = &mb_ops;
    run.fail_first = 1;
    run.round = 1;
    cluster(&run);
    for (i = 0; i < 8; i++) { good += run.ok[i]; failed += run.status[i] == KCACHE_EBUILD; }
    KT_CHECK_EQ_U64(failed, 1);
    KT_CHECK_EQ_U64(good, 8 + 7);
    KT_CHECK_EQ_U64(run.b->abandons, 1);
    KT_CHECK_MSG(run.builds >= 2, "builds %d", run.builds);
    /* every build after the abandoned one was of a key another machine had claimed (issue 35.7) */
    KT_CHECK_MSG(run.claimed_elsewhere >= 1 && run.claimed_elsewhere <= (uint64_t)run.builds - 1, "builds %d, of them claimed elsewhere %llu",
                 run.builds, (unsigned long long)run.claimed_elsewhere);
    mb_free(run.b);

    /* no claim callback: every machine builds, and each gets its payload */
    memset(&run, 0, sizeof run);
    run.b = mb_new();
    run.ops = &mb_ops_no_claim;
    run.round = 2;
    cluster(&run);
    for (i = 0, good = 0; i < 8; i++) good += run.ok[i];
    KT_CHECK_EQ_U64(good, 8);
    KT_CHECK_MSG(run.builds >= 2, "builds %d without claims", run.builds);
    mb_free(run.b);
}

/* ---- builds without the optional parts ---- */

static char g_logged[2048];
static void log_line(void *user, const char *line) {
    size_t n = strlen(g_logged);
    (void)user;
    snprintf(g_logged + n, sizeof g_logged - n, "%s\n", line);
}

static void no_redis_build(void) {
    char dir[400];
    kcache_config cfg;
    kcache *kc;
    kcache_stats st;
    snprintf(dir, sizeof dir, "%s/plain", g_root);
    setenv("KCACHE_REMOTE", "redis://127.0.0.1:6379", 1);
    kcache_config_init(&cfg);
    unsetenv("KCACHE_REMOTE");
    KT_CHECK_STR(cfg.remote, "redis://127.0.0.1:6379");
    cfg.dir = dir;
    cfg.publish = 0;
    cfg.debug = 1;
    cfg.log = log_line;
    g_logged[0] = 0;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    KT_CHECK_MSG(strstr(g_logged, "without KCACHE_REDIS"), "the log does not say why there is no remote: %s", g_logged);
    { /* and so do kcache_remote_in_use and kcache_explain (issue 26.4), without the log */
        char why[400], ex[800];
        kcache_key k;
        KT_CHECK_MSG(kcache_remote_in_use(kc, why, sizeof why) == 0 && strstr(why, "without KCACHE_REDIS"), "kcache_remote_in_use: %s", why);
        kt_key(&k, "backend", 79);
        kcache_explain(kc, &k, ex, sizeof ex);
        kcache_key_free(&k);
        KT_CHECK_MSG(strstr(ex, "remote off") && strstr(ex, "without KCACHE_REDIS"), "explain: %s", ex);
    }
    KT_CHECK(put_id(kc, 70, 100) == KCACHE_OK);
    KT_CHECK(get_ok(kc, 70, 100));
    kcache_get_stats(kc, &st);
    KT_CHECK(st.remote_lookups == 0 && st.remote_puts == 0 && st.remote_calls == 0 && st.hits_mem == 1);
    kcache_close(kc);
#ifndef KCACHE_HMAC_OPENSSL
    /* a secret without a way to check it: no remote at all, rather than unchecked values */
    {
        mem_backend *b = mb_new();
        kcache_config_init(&cfg);
        cfg.dir = dir;
        cfg.publish = 0;
        cfg.debug = 1;
        cfg.log = log_line;
        cfg.remote_ops = &mb_ops;
        cfg.remote_user = b;
        cfg.remote_secret = "s3cret";
        g_logged[0] = 0;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
        KT_CHECK_MSG(strstr(g_logged, "KCACHE_HMAC_OPENSSL"), "log: %s", g_logged);
        KT_CHECK(put_id(kc, 71, 100) == KCACHE_OK);
        KT_CHECK_MSG(b->puts == 0 && b->gets == 0, "the unsigned remote was used");
        kcache_close(kc);
        mb_free(b);
    }
#endif
    /* a table without get or put is refused */
    {
        static const kcache_remote_ops half = {NULL, NULL, mb_put, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
        kcache_config_init(&cfg);
        cfg.dir = dir;
        cfg.publish = 0;
        cfg.remote_ops = &half;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
        KT_CHECK(put_id(kc, 72, 100) == KCACHE_OK && get_ok(kc, 72, 100));
        kcache_close(kc);
    }
}

static void remote_env(void) {
    kcache_config cfg;
    kcache_config_init(&cfg);
    KT_CHECK(cfg.remote == NULL && cfg.remote_mode == KCACHE_REMOTE_RW && cfg.remote_timeout_ms == 500 &&
             cfg.remote_max_entry == ((uint64_t)4 << 20) && cfg.remote_secret == NULL && cfg.compress == 0);
    setenv("KCACHE_REMOTE", "redis://a redis://b", 1);
    setenv("KCACHE_REMOTE_MODE", "ro", 1);
    setenv("KCACHE_REMOTE_TIMEOUT", "250", 1);
    setenv("KCACHE_REMOTE_SECRET", "xyz", 1);
    setenv("KCACHE_REMOTE_MAX_ENTRY", "1M", 1);
    setenv("KCACHE_COMPRESS", "1", 1);
    kcache_config_init(&cfg);
    KT_CHECK_STR(cfg.remote, "redis://a redis://b");
    KT_CHECK_STR(cfg.remote_secret, "xyz");
    KT_CHECK(cfg.remote_mode == KCACHE_REMOTE_RO && cfg.remote_timeout_ms == 250 && cfg.remote_max_entry == (1u << 20) && cfg.compress == 1);
    setenv("KCACHE_REMOTE_TIMEOUT", "2s", 1);
    kcache_config_init(&cfg);
    KT_CHECK_EQ_U64(cfg.remote_timeout_ms, 2000);
    setenv("KCACHE_REMOTE_TIMEOUT", "40ms", 1);
    kcache_config_init(&cfg);
    KT_CHECK_EQ_U64(cfg.remote_timeout_ms, 40);
    {
        static const char *const bad_timeouts[] = {"abc", "0", "-5", "10x", "700s", "99999999999999999999", " 5", ""};
        static const char *const bad_sizes[] = {"12Q", "0", "100", "1T"};
        int i;
        setenv("KCACHE_REMOTE_MODE", "readonly", 1);
        setenv("KCACHE_COMPRESS", "maybe", 1);
        for (i = 0; i < (int)(sizeof bad_timeouts / sizeof *bad_timeouts); i++) {
            setenv("KCACHE_REMOTE_TIMEOUT", bad_timeouts[i], 1);
            setenv("KCACHE_REMOTE_MAX_ENTRY", bad_sizes[i % 4], 1);
            kcache_config_init(&cfg);
            KT_CHECK_MSG(cfg.remote_timeout_ms == 500, "KCACHE_REMOTE_TIMEOUT=%s gave %u", bad_timeouts[i], (unsigned)cfg.remote_timeout_ms);
            KT_CHECK_MSG(cfg.remote_max_entry == ((uint64_t)4 << 20), "KCACHE_REMOTE_MAX_ENTRY=%s gave %llu", bad_sizes[i % 4],
                         (unsigned long long)cfg.remote_max_entry);
            KT_CHECK(cfg.remote_mode == KCACHE_REMOTE_RW && cfg.compress == 0);
        }
    }
    setenv("KCACHE_REMOTE_SECRET", "", 1); /* a typo in a deployment script: refused, not unsigned */
    kcache_config_init(&cfg);
    KT_CHECK_MSG(cfg.remote_secret && !cfg.remote_secret[0], "an empty KCACHE_REMOTE_SECRET was dropped");
    KT_CHECK_EQ_U64(cfg.remote_claim_ms, 3000);
    {
        mem_backend *b = mb_new();
        char dir[400];
        kcache *kc;
        snprintf(dir, sizeof dir, "%s/empty-secret", g_root);
        cfg.dir = dir;
        cfg.publish = 0;
        cfg.debug = 1;
        cfg.log = log_line;
        cfg.remote_ops = &mb_ops;
        cfg.remote_user = b;
        g_logged[0] = 0;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
        KT_CHECK_MSG(strstr(g_logged, "KCACHE_REMOTE_SECRET is set but empty"), "log: %s", g_logged);
        {
            char why[600];
            kcache_key k;
            kt_key(&k, "backend", 74);
            kcache_explain(kc, &k, why, sizeof why);
            KT_CHECK_MSG(strstr(why, "remote off: KCACHE_REMOTE_SECRET is set but empty"), "explain: %s", why);
            kcache_key_free(&k);
        }
        KT_CHECK(put_id(kc, 73, 100) == KCACHE_OK && get_ok(kc, 73, 100));
        KT_CHECK_MSG(b->puts == 0 && b->gets == 0, "a remote with an empty secret was used");
        kcache_close(kc);
        mb_free(b);
    }
    unset_env();
}

/* 25.7: mode ro writes nothing, claims included; 26.2: a refused write is not a broken backend. */
static int one_build(void *user, void **out, size_t *out_size) {
    (void)user;
    *out = KCACHE_MALLOC(100);
    kt_payload((unsigned char *)*out, 100, 80);
    *out_size = 100;
    return 0;
}
static void backend_no_writes(void) {
    mem_backend *b = mb_new();
    kcache *r = machine("nw-r", b, &mb_ops, ro_mode), *w = machine("nw-w", b, &mb_ops, NULL);
    kcache_stats st;
    kcache_key k;
    const void *d = NULL;
    size_t n = 0;
    char name[33];
    kt_key(&k, "backend", 80);
    KT_CHECK(kcache_get_or_build(r, &k, one_build, NULL, &d, &n) == KCACHE_OK && kt_payload_ok(d, n, 100, 80));
    if (d) kcache_release(r, d);
    pthread_mutex_lock(&b->m);
    KT_CHECK_MSG(b->takes + b->renews + b->releases + b->abandons + b->puts + b->removes == 0,
                 "mode ro: %d claims taken, %d renewed, %d released, %d abandoned, %d puts, %d removes", b->takes, b->renews, b->releases,
                 b->abandons, b->puts, b->removes);
    pthread_mutex_unlock(&b->m);
    kcache_key_free(&k);
    /* a value that fails validation: counted, left where it is */
    kt_key(&k, "backend", 81);
    name_of(&k, name);
    mb_set(b, name, "not a kcache value", 18);
    KT_CHECK(!get_ok(r, 81, 100));
    kcache_get_stats(r, &st);
    KT_CHECK_EQ_U64(st.remote_rejects, 1);
    KT_CHECK_MSG(mb_has(b, name) && b->removes == 0, "mode ro deleted a rejected value");
    kcache_key_free(&k);
    /* a backend that refuses writes: the put's EROFS skips the next claim too, and lookups go on */
    KT_CHECK(put_id(w, 82, 100) == KCACHE_OK);
    pthread_mutex_lock(&b->m);
    b->put_fail = KCACHE_EROFS;
    pthread_mutex_unlock(&b->m);
    KT_CHECK(put_id(w, 83, 100) == KCACHE_OK);
    kt_key(&k, "backend", 84);
    KT_CHECK(kcache_get_or_build(w, &k, one_build, NULL, &d, &n) == KCACHE_OK);
    if (d) kcache_release(w, d);
    kcache_key_free(&k);
    pthread_mutex_lock(&b->m);
    KT_CHECK_MSG(b->takes == 0, "%d claims taken on a backend that refuses writes", b->takes);
    b->put_fail = KCACHE_OK;
    pthread_mutex_unlock(&b->m);
    KT_CHECK(get_ok(r, 82, 100));
    kcache_get_stats(w, &st);
    KT_CHECK(st.remote_open == 0);
    kcache_close(r);
    kcache_close(w);
    mb_free(b);
}

/* ---- what the core does for any backend: shards with a breaker each, signatures, compression ---- */

/* Two servers of one backend, one shard each (kcache_config.remote_open_shard). */
static mem_backend *g_shard[2];
static void *mb_open_shard(void *user, const char *url, char *why, size_t cap) {
    (void)user;
    if (strcmp(url, "mem://a") == 0) return g_shard[0];
    if (strcmp(url, "mem://b") == 0) return g_shard[1];
    snprintf(why, cap, "no such server here");
    return NULL;
}
static void mb_close_shard(void *shard) {
    mem_backend *b = (mem_backend *)shard;
    pthread_mutex_lock(&b->m);
    b->closes++;
    pthread_mutex_unlock(&b->m);
}
/* Long back-offs: an open breaker stays open for the whole group, however slow the machine. */
static void two_shards(kcache_config *cfg) {
    cfg->remote = "mem://a mem://b";
    cfg->remote_user = NULL;
    cfg->remote_open_shard = mb_open_shard;
    cfg->remote_close_shard = mb_close_shard;
    cfg->remote_backoff_ms = 60000;
}
static void two_shards_one_unknown(kcache_config *cfg) {
    two_shards(cfg);
    cfg->remote = "mem://a mem://nowhere";
}

static void backend_shards(void) {
    kcache *w, *m, *x;
    kcache_remote_shard sh[3];
    kcache_stats st;
    char why[300];
    int on_a[40], n_a = 0, n_b = 0, hits = 0, put_b = 0, calls_a, puts_b;
    unsigned i;
    g_shard[0] = mb_new();
    g_shard[1] = mb_new();
    w = machine("sh-w", NULL, &mb_ops, two_shards);
    m = machine("sh-m", NULL, &mb_ops, two_shards);
    /* each key on exactly one shard, the keys spread over both */
    for (i = 0; i < 40; i++) {
        kcache_key k;
        char name[33];
        KT_CHECK(put_id(w, 900 + i, 500) == KCACHE_OK);
        kt_key(&k, "backend", 900 + i);
        name_of(&k, name);
        kcache_key_free(&k);
        on_a[i] = mb_has(g_shard[0], name);
        KT_CHECK_MSG(on_a[i] + mb_has(g_shard[1], name) == 1, "key %u is on %d shards", 900 + i, on_a[i] + mb_has(g_shard[1], name));
        n_a += on_a[i];
    }
    n_b = 40 - n_a;
    KT_CHECK_MSG(n_a >= 5 && n_b >= 5, "40 keys placed %d on mem://a, %d on mem://b", n_a, n_b);
    KT_CHECK_EQ_U64(kcache_get_remote_shards(m, sh, 3), 2);
    KT_CHECK_STR(sh[0].url, "mem://a");
    KT_CHECK_STR(sh[1].url, "mem://b");
    KT_CHECK(kcache_remote_in_use(m, why, sizeof why) == 1 && strcmp(why, "mem://a mem://b") == 0);
    /* shard a fails: one call opens its breaker, its keys are skipped; shard b keeps serving */
    set_fail(g_shard[0], KCACHE_ETIMEOUT);
    calls_a = calls_of(g_shard[0]);
    for (i = 0; i < 40; i++) {
        int r = get_ok(m, 900 + i, 500);
        if (on_a[i]) KT_CHECK_MSG(r == 0, "key %u of the failing shard: %d", 900 + i, r);
        else hits += r == 1;
    }
    KT_CHECK_EQ_U64(hits, n_b);
    KT_CHECK_MSG(calls_of(g_shard[0]) - calls_a == 1, "%d lookups on a failing shard made %d calls (want 1)", n_a,
                 calls_of(g_shard[0]) - calls_a);
    KT_CHECK_EQ_U64(kcache_get_remote_shards(m, sh, 3), 2);
    KT_CHECK_MSG(sh[0].open && sh[0].errors == 1 && sh[0].timeouts == 1 && (int)sh[0].skipped == n_a - 1 && sh[0].hits == 0,
                 "mem://a: open %d errors %llu timeouts %llu skipped %llu hits %llu", sh[0].open, (unsigned long long)sh[0].errors,
                 (unsigned long long)sh[0].timeouts, (unsigned long long)sh[0].skipped, (unsigned long long)sh[0].hits);
    KT_CHECK_MSG(!sh[1].open && (int)sh[1].hits == n_b && sh[1].errors == 0 && sh[1].skipped == 0,
                 "mem://b: open %d hits %llu errors %llu skipped %llu", sh[1].open, (unsigned long long)sh[1].hits,
                 (unsigned long long)sh[1].errors, (unsigned long long)sh[1].skipped);
    kcache_get_stats(m, &st);
    KT_CHECK_EQ_U64(st.remote_open, 1);
    KT_CHECK_EQ_U64(st.remote_breaker_opens, 1);
    KT_CHECK_EQ_U64(st.hits_remote, n_b);
    /* puts while a's breaker is open: b's keys still go to b, a's are skipped */
    calls_a = calls_of(g_shard[0]);
    pthread_mutex_lock(&g_shard[1]->m);
    puts_b = g_shard[1]->puts;
    pthread_mutex_unlock(&g_shard[1]->m);
    for (i = 0; i < 20; i++) {
        kcache_key k;
        char name[33];
        KT_CHECK(put_id(m, 1900 + i, 500) == KCACHE_OK);
        kt_key(&k, "backend", 1900 + i);
        name_of(&k, name);
        kcache_key_free(&k);
        put_b += mb_has(g_shard[1], name);
    }
    pthread_mutex_lock(&g_shard[1]->m);
    KT_CHECK_MSG(put_b > 0 && g_shard[1]->puts - puts_b == put_b, "20 puts: %d reached mem://b in %d calls", put_b, g_shard[1]->puts - puts_b);
    pthread_mutex_unlock(&g_shard[1]->m);
    KT_CHECK_MSG(calls_of(g_shard[0]) == calls_a, "puts were sent to the shard whose breaker is open");
    /* another machine's breakers are its own: its first call to a finds out for itself */
    set_fail(g_shard[0], KCACHE_OK);
    KT_CHECK(get_ok(w, 900 + (unsigned)(on_a[0] ? 0 : 1), 500)); /* (a local hit: the remote is not asked) */
    kcache_get_stats(w, &st);
    KT_CHECK_EQ_U64(st.remote_open, 0);
    kcache_close(w);
    kcache_close(m);
    KT_CHECK_MSG(g_shard[0]->closes == 2 && g_shard[1]->closes == 2, "remote_close_shard: %d and %d calls (want 2 each)", g_shard[0]->closes,
                 g_shard[1]->closes);
    /* a URL the backend refuses: no remote at all (said why), the shards opened before it closed */
    x = machine("sh-x", NULL, &mb_ops, two_shards_one_unknown);
    KT_CHECK_EQ_U64(g_shard[0]->closes, 3);
    KT_CHECK_MSG(kcache_remote_in_use(x, why, sizeof why) == 0 && strstr(why, "mem://nowhere: no such server here"), "kcache_remote_in_use: %s",
                 why);
    KT_CHECK(put_id(x, 950, 100) == KCACHE_OK && get_ok(x, 950, 100));
    kcache_close(x);
    mb_free(g_shard[0]);
    mb_free(g_shard[1]);
}

/* Issue 35.8: a build longer than a claim's life, on a backend with claim_reissue: every renewal
   re-issues the token (each with the server's time: the backend's clock), the claim stays held
   (one build, a waiter on another machine gets its result) and is released under the latest
   token; without claim_reissue (mb_ops) the claim is renewed under one token, as in 0.4. */
static mem_backend *g_ri;
static char g_ri_tokens[8][200];
static int g_ri_seen;
static int reissue_build(void *user, void **out, size_t *out_size) {
    int i;
    (void)user;
    for (i = 0; i < 20; i++) { /* 1 s, with the claim's life 300 ms: renewed every 100 ms */
        pthread_mutex_lock(&g_ri->m);
        if (g_ri_seen < 8 && (!g_ri_seen || strcmp(g_ri_tokens[g_ri_seen - 1], g_ri->claim_token) != 0))
            snprintf(g_ri_tokens[g_ri_seen++], sizeof g_ri_tokens[0], "%s", g_ri->claim_token);
        pthread_mutex_unlock(&g_ri->m);
        kt_sleep_ms(50);
    }
    *out = KCACHE_MALLOC(100);
    kt_payload((unsigned char *)*out, 100, 81);
    *out_size = 100;
    return 0;
}
static void short_claims(kcache_config *cfg) { cfg->remote_claim_ms = 300; }
typedef struct ri_wait { kcache *kc; int ok; } ri_wait;
static void *ri_waiter(void *arg) {
    ri_wait *w = (ri_wait *)arg;
    kcache_key k;
    const void *d = NULL;
    size_t n = 0;
    kt_sleep_ms(300);
    kt_key(&k, "backend", 81);
    w->ok = kcache_get_or_build(w->kc, &k, reissue_build, NULL, &d, &n) == KCACHE_OK && kt_payload_ok(d, n, 100, 81);
    if (d) kcache_release(w->kc, d);
    kcache_key_free(&k);
    return NULL;
}
static void backend_claim_reissue(void) {
    int form;
    for (form = 0; form < 2; form++) {
        kcache *a, *m;
        kcache_key k;
        kcache_stats st;
        const void *d = NULL;
        size_t n = 0;
        pthread_t th;
        ri_wait w;
        int i;
        g_ri = mb_new();
        g_ri_seen = 0;
        a = machine(form ? "ri-a" : "ri-a0", g_ri, form ? &mb_ops_reissue : &mb_ops, short_claims);
        m = machine(form ? "ri-m" : "ri-m0", g_ri, form ? &mb_ops_reissue : &mb_ops, short_claims);
        w.kc = m, w.ok = 0;
        pthread_create(&th, NULL, ri_waiter, &w);
        kt_key(&k, "backend", 81);
        KT_CHECK(kcache_get_or_build(a, &k, reissue_build, NULL, &d, &n) == KCACHE_OK && kt_payload_ok(d, n, 100, 81));
        if (d) kcache_release(a, d);
        kcache_key_free(&k);
        pthread_join(th, NULL);
        KT_CHECK_MSG(w.ok, "%s: the waiter's payload is wrong", form ? "reissue" : "renew");
        kcache_get_stats(m, &st);
        KT_CHECK_MSG(st.builds == 0 && st.build_waits == 1, "%s: the waiter built %llu, waited %llu", form ? "reissue" : "renew",
                     (unsigned long long)st.builds, (unsigned long long)st.build_waits);
        pthread_mutex_lock(&g_ri->m);
        KT_CHECK_MSG(g_ri->claim_until == 0 && g_ri->releases == 1, "%s: the claim was left held (%d releases)", form ? "reissue" : "renew",
                     g_ri->releases);
        if (form) { /* one token per renewal, each with the server's time (an hour ahead of this client's) */
            long long server = (long long)(mb_clock(NULL, NULL) / 1000000);
            KT_CHECK_MSG(g_ri->reissues >= 3 && g_ri->renews == 0 && g_ri_seen >= 3, "reissue: %d reissues, %d renews, %d tokens seen",
                         g_ri->reissues, g_ri->renews, g_ri_seen);
            for (i = 0; i < g_ri_seen; i++) {
                const char *t = strrchr(g_ri_tokens[i], ':');
                long long issued = t && t[1] == 't' ? strtoll(t + 2, NULL, 16) : -1;
                KT_CHECK_MSG(issued > server - 60000 && issued <= server, "token %d: issue time %lld, the server's clock %lld: %s", i, issued,
                             server, g_ri_tokens[i]);
            }
        } else {
            KT_CHECK_MSG(g_ri->renews >= 3 && g_ri->reissues == 0 && g_ri_seen == 1, "renew: %d renews, %d reissues, %d tokens seen",
                         g_ri->renews, g_ri->reissues, g_ri_seen);
        }
        pthread_mutex_unlock(&g_ri->m);
        kcache_close(a);
        kcache_close(m);
        mb_free(g_ri);
    }
}

/* ---- a backend on the kit (kcache_config.remote_backend): what the Redis backend is built on ---- */

static mem_backend *g_kit[2];
static kcache_remote_params g_kit_params;
static const kcache_remote *g_kit_remote;
static int g_kit_bad_tag, g_kit_premacs;
typedef struct kit_hold { void *inner; int has_mac; unsigned char mac[KCACHE_REMOTE_MAC_NONCE + KCACHE_REMOTE_MAC_TAG]; } kit_hold;

static void *kit_open(void *user, const kcache_remote *remote, const char *url, char *shown, size_t shown_cap, char *why, size_t cap) {
    (void)user;
    g_kit_remote = remote;
    kcache_remote_get_params(remote, &g_kit_params);
    if (strcmp(url, "mem://user:pw@a") == 0) { snprintf(shown, shown_cap, "mem://a"); return g_kit[0]; }
    if (strcmp(url, "mem://a-again") == 0) return g_kit[0]; /* the same server, spelled another way */
    if (strcmp(url, "mem://b") == 0) return g_kit[1];
    snprintf(why, cap, "mem URL %s: no such server", url);
    return NULL;
}
static int kit_identity(void *shard, int ro, char *out, size_t cap) {
    (void)ro;
    snprintf(out, cap, "%s", shard == g_kit[0] ? "server-a" : "server-b");
    return 1;
}
/* The value as mb_get returns it, with its MAC computed the way a backend computes it while the
   bytes arrive (here: at once), through the kit; g_kit_bad_tag spoils the tag. */
static kcache_status kit_get(void *user, const char *name, const void **data, size_t *size, void **hold) {
    kit_hold *h;
    kcache_status s = mb_get(user, name, data, size, hold);
    if (s != KCACHE_OK) return s;
    h = (kit_hold *)calloc(1, sizeof *h);
    h->inner = *hold;
    *hold = h;
    if (*size > KCACHE_REMOTE_MAC_NONCE + KCACHE_REMOTE_MAC_TAG) {
        const unsigned char *v = (const unsigned char *)*data, *tail = v + *size - KCACHE_REMOTE_MAC_NONCE - KCACHE_REMOTE_MAC_TAG;
        kcache_remote_mac *m = kcache_remote_mac_begin(g_kit_remote, v, *size, tail);
        if (m && kcache_remote_mac_add(m, v, (size_t)(tail - v)) && kcache_remote_mac_end(m, h->mac + KCACHE_REMOTE_MAC_NONCE)) {
            memcpy(h->mac, tail, KCACHE_REMOTE_MAC_NONCE);
            if (g_kit_bad_tag) h->mac[KCACHE_REMOTE_MAC_NONCE] ^= 1;
            h->has_mac = 1;
        } else if (m) {
            kcache_remote_mac_end(m, NULL);
        }
    }
    return KCACHE_OK;
}
static void kit_release(void *user, void *hold) {
    kit_hold *h = (kit_hold *)hold;
    mb_release(user, h->inner);
    free(h);
}
static const unsigned char *kit_premac(void *shard, const void *hold) {
    const kit_hold *h = (const kit_hold *)hold;
    (void)shard;
    if (!h->has_mac) return NULL;
    __atomic_add_fetch(&g_kit_premacs, 1, __ATOMIC_SEQ_CST);
    return h->mac;
}
static const kcache_remote_ops kit_ops = {kit_get, kit_release, mb_put, mb_remove, mb_claim, NULL, mb_reissue, mb_clock, NULL, NULL};
static const kcache_remote_backend kit_backend = {&kit_ops, kit_open, mb_close_shard, kit_identity, kit_premac};
static void kit_shards(kcache_config *cfg) {
    cfg->remote = "mem://user:pw@a mem://b mem://a-again";
    cfg->remote_ops = NULL;
    cfg->remote_user = NULL;
    cfg->remote_backend = &kit_backend;
    cfg->remote_ttl_s = 90;
    cfg->remote_prefix = "ns:";
    cfg->remote_backoff_ms = 60000;
#ifdef KCACHE_HMAC_OPENSSL
    cfg->remote_secret = "kit secret";
#endif
}
static void kit_refused(kcache_config *cfg) {
    kit_shards(cfg);
    cfg->remote = "mem://b mem://zzz";
}

#ifdef KCACHE_HMAC_OPENSSL
/* A claim token as kcache signs one with the kit's secret: the id (a format and a time) and
   ".HMAC-SHA-256(secret, "kcache claim\n" name "\n" id)". */
static void kit_token(char out[200], const char *name, const char *fmt, long long t) {
    unsigned char msg[300], mac[32];
    unsigned maclen = 32, i;
    int n = snprintf(out, 120, fmt, t);
    memcpy(msg, "kcache claim\n", 13);
    memcpy(msg + 13, name, 32);
    msg[45] = '\n';
    memcpy(msg + 46, out, (size_t)n);
    HMAC(EVP_sha256(), "kit secret", 10, msg, 46 + (size_t)n, mac, &maclen);
    out[n] = '.';
    for (i = 0; i < 32; i++) snprintf(out + n + 1 + 2 * i, 3, "%02x", mac[i]);
}
#endif

/* A build that looks at the claim its caller holds meanwhile. */
static char g_kit_token[200], g_kit_name[33];
static int kit_build(void *user, void **out, size_t *out_size) {
    int i;
    (void)user;
    for (i = 0; i < 2; i++) {
        pthread_mutex_lock(&g_kit[i]->m);
        if (g_kit[i]->claim_until) {
            snprintf(g_kit_token, sizeof g_kit_token, "%s", g_kit[i]->claim_token);
            snprintf(g_kit_name, sizeof g_kit_name, "%s", g_kit[i]->claim_name);
        }
        pthread_mutex_unlock(&g_kit[i]->m);
    }
    *out = KCACHE_MALLOC(100);
    kt_payload((unsigned char *)*out, 100, 9700);
    *out_size = 100;
    return 0;
}

static void backend_kit(void) {
    kcache *w, *m, *x;
    kcache_remote_shard sh[4];
    kcache_stats st;
    kcache_key k;
    const void *d = NULL;
    size_t n = 0;
    char why[300], name[33];
    int on[2] = {0, 0};
    unsigned i;
    g_kit[0] = mb_new();
    g_kit[1] = mb_new();
    w = machine("kit-w", NULL, NULL, kit_shards);
    m = machine("kit-m", NULL, NULL, kit_shards);
    /* the tier's parameters, defaults resolved */
    KT_CHECK_MSG(g_kit_params.timeout_ms == 500 && g_kit_params.connect_ms == 100 && g_kit_params.claim_ms == 3000 &&
                     g_kit_params.max_entry == ((uint64_t)4 << 20) && g_kit_params.ttl_s == 90 && !g_kit_params.ro,
                 "params: timeout %u connect %u claim %u max %llu ttl %u ro %d", g_kit_params.timeout_ms, g_kit_params.connect_ms,
                 g_kit_params.claim_ms, (unsigned long long)g_kit_params.max_entry, g_kit_params.ttl_s, g_kit_params.ro);
    KT_CHECK(g_kit_params.prefix && strcmp(g_kit_params.prefix, "ns:") == 0);
#ifdef KCACHE_HMAC_OPENSSL
    KT_CHECK(g_kit_params.is_signed);
#else
    KT_CHECK(!g_kit_params.is_signed);
#endif
    /* every key on a or b; the URL as the backend shows it; a-again is server a: no keys of its own */
    for (i = 0; i < 30; i++) {
        KT_CHECK(put_id(w, 9000 + i, 400) == KCACHE_OK);
        kt_key(&k, "backend", 9000 + i);
        name_of(&k, name);
        kcache_key_free(&k);
        on[0] += mb_has(g_kit[0], name);
        on[1] += mb_has(g_kit[1], name);
    }
    KT_CHECK_MSG(on[0] + on[1] == 30 && on[0] >= 3 && on[1] >= 3, "30 keys: %d on a, %d on b", on[0], on[1]);
    KT_CHECK_EQ_U64(kcache_get_remote_shards(w, sh, 4), 3);
    KT_CHECK_STR(sh[0].url, "mem://a");
    KT_CHECK_STR(sh[2].url, "mem://a-again");
    KT_CHECK_MSG(!sh[0].same && !sh[1].same && sh[2].same, "same: %d %d %d", sh[0].same, sh[1].same, sh[2].same);
    KT_CHECK(kcache_remote_in_use(w, why, sizeof why) == 1 && strcmp(why, "mem://a mem://b mem://a-again") == 0);
    /* another machine reads them back */
    for (i = 0; i < 30; i++) KT_CHECK(get_ok(m, 9000 + i, 400));
    kcache_get_stats(m, &st);
    KT_CHECK_EQ_U64(st.hits_remote, 30);
    /* claims: honoured by their life; signed ones only with this secret and name */
    KT_CHECK(kcache_remote_claim_honoured(g_kit_remote, "0123456789abcdef0123456789abcdef", "host:1:2:3", 10, 1000) == !g_kit_params.is_signed);
    KT_CHECK(kcache_remote_claim_honoured(g_kit_remote, "0123456789abcdef0123456789abcdef", "host:1:2:3", 10, -1) == 0);
    KT_CHECK(kcache_remote_claim_honoured(g_kit_remote, "0123456789abcdef0123456789abcdef", "host:1:2:3", 10, 3001) == 0);
    g_kit_token[0] = 0;
    kt_key(&k, "backend", 9700);
    KT_CHECK(kcache_get_or_build(w, &k, kit_build, NULL, &d, &n) == KCACHE_OK);
    if (d) kcache_release(w, d);
    kcache_key_free(&k);
    KT_CHECK_MSG(g_kit_token[0] != 0, "no claim was held during the build");
    if (g_kit_token[0]) {
        size_t len = strlen(g_kit_token);
        KT_CHECK(kcache_remote_claim_honoured(g_kit_remote, g_kit_name, g_kit_token, len, 1000) == 1);
#ifdef KCACHE_HMAC_OPENSSL
        g_kit_token[len - 1] = g_kit_token[len - 1] == '0' ? '1' : '0';
        KT_CHECK(kcache_remote_claim_honoured(g_kit_remote, g_kit_name, g_kit_token, len, 1000) == 0);
        g_kit_token[len - 1] = g_kit_token[len - 1] == '0' ? '1' : '0';
        KT_CHECK(kcache_remote_claim_honoured(g_kit_remote, "0123456789abcdef0123456789abcdef", g_kit_token, len, 1000) == 0);
#endif
        { /* issue 35.8: the token's time is the server's (the backend's clock, an hour ahead of this client's), in ms */
            const char *t = strrchr(g_kit_token, ':');
            long long issued = t && t[1] == 't' ? strtoll(t + 2, NULL, 16) : -1, server = (long long)(mb_clock(NULL, NULL) / 1000000);
            KT_CHECK_MSG(issued > server - 60000 && issued <= server, "the claim's issue time %lld is not the server's clock (%lld): %s", issued,
                         server, g_kit_token);
        }
    }
#ifdef KCACHE_HMAC_OPENSSL
    { /* issue 35.8: a signed token is honoured only while its issue time (the server's clock) is within 3 claim lifetimes of
         now: one read once and planted again stops holding waiters; the client's clock does not count. A 0.4 token (its
         time in ns, no "t") is honoured for a while after it is first judged. */
        static const char nm[] = "0123456789abcdef0123456789abcdef";
        long long server = (long long)(mb_clock(NULL, NULL) / 1000000), client = server - MB_CLOCK_AHEAD_NS / 1000000;
        char tok[200];
        kit_token(tok, nm, "host:1:2:t%llx", server);
        KT_CHECK_MSG(kcache_remote_claim_honoured(g_kit_remote, nm, tok, strlen(tok), 1000) == 1, "a token issued now: not honoured");
        kit_token(tok, nm, "host:1:2:t%llx", server - 2 * 3000);
        KT_CHECK_MSG(kcache_remote_claim_honoured(g_kit_remote, nm, tok, strlen(tok), 1000) == 1, "a token 2 claim lifetimes old: not honoured");
        kit_token(tok, nm, "host:1:2:t%llx", server - 4 * 3000);
        KT_CHECK_MSG(kcache_remote_claim_honoured(g_kit_remote, nm, tok, strlen(tok), 1000) == 0, "a token 4 claim lifetimes old: honoured");
        kit_token(tok, nm, "host:1:2:t%llx", server + 4 * 3000);
        KT_CHECK_MSG(kcache_remote_claim_honoured(g_kit_remote, nm, tok, strlen(tok), 1000) == 0, "a token from 4 claim lifetimes ahead: honoured");
        kit_token(tok, nm, "host:1:2:t%llx", client);
        KT_CHECK_MSG(kcache_remote_claim_honoured(g_kit_remote, nm, tok, strlen(tok), 1000) == 0,
                     "a token of the client's clock (an hour behind the server's): honoured");
        kit_token(tok, nm, "host:1:2:%llx", client * 1000000); /* 0.4's form */
        KT_CHECK_MSG(kcache_remote_claim_honoured(g_kit_remote, nm, tok, strlen(tok), 1000) == 1 &&
                         kcache_remote_claim_honoured(g_kit_remote, nm, tok, strlen(tok), 1000) == 1,
                     "a 0.4 token, judged twice at once: not honoured");
    }
#endif
#ifdef KCACHE_HMAC_OPENSSL
    /* the MAC the backend computed is the one checked: right, the values hit (above; g_kit_remote is the newest handle's); spoiled, a
       valid value is rejected */
    KT_CHECK_MSG(__atomic_load_n(&g_kit_premacs, __ATOMIC_SEQ_CST) >= 30, "premac asked %d times", g_kit_premacs);
    g_kit_bad_tag = 1;
    x = machine("kit-x", NULL, NULL, kit_shards);
    KT_CHECK(!get_ok(x, 9000, 400));
    kcache_get_stats(x, &st);
    KT_CHECK_EQ_U64(st.remote_rejects, 1);
    g_kit_bad_tag = 0;
    kcache_close(x);
#endif
    kcache_close(w);
    kcache_close(m);
    /* a URL the backend refuses: no remote, in the backend's words; the shard opened before it closed */
    i = (unsigned)g_kit[1]->closes;
    x = machine("kit-r", NULL, NULL, kit_refused);
    KT_CHECK_EQ_U64(g_kit[1]->closes, i + 1);
    KT_CHECK_MSG(kcache_remote_in_use(x, why, sizeof why) == 0 && strstr(why, "mem URL mem://zzz: no such server"), "kcache_remote_in_use: %s",
                 why);
    kcache_close(x);
    mb_free(g_kit[0]);
    mb_free(g_kit[1]);
}

#ifdef KCACHE_HMAC_OPENSSL
static void secret_a(kcache_config *cfg) { cfg->remote_secret = "cluster secret"; }
static void secret_b(kcache_config *cfg) { cfg->remote_secret = "another secret"; }
static void secret_hmac(kcache_config *cfg) {
    cfg->remote_secret = "cluster secret";
    cfg->remote_mac = KCACHE_REMOTE_MAC_HMAC;
}

/* The value stored under key id's name (free it), with its envelope's version, flags and entry
   length; NULL when there is none. */
static unsigned char *value_of(mem_backend *b, unsigned id, size_t *n, unsigned *version, unsigned *flags, size_t *e) {
    kcache_key k;
    char name[33];
    unsigned char *v;
    kt_key(&k, "backend", id);
    name_of(&k, name);
    kcache_key_free(&k);
    *n = 0;
    v = mb_copy(b, name, n);
    if (!v || *n < KCACHE__RV_HEADER || memcmp(v, "KCREMOTE", 8) != 0) { free(v); return NULL; }
    *version = kcache__get_u16(v + 8);
    *flags = kcache__get_u16(v + 10);
    *e = kcache__get_u32(v + 12);
    return v;
}

/* A fresh machine with the secret asks for key id: 1 a hit, 0 a miss counted as a remote reject. */
static int fresh_get(mem_backend *b, const char *store, void (*tune)(kcache_config *), unsigned id, size_t len, uint64_t *rejects) {
    kcache *m = machine(store, b, &mb_ops, tune);
    kcache_stats st;
    int r = get_ok(m, id, len);
    kcache_get_stats(m, &st);
    *rejects = st.remote_rejects;
    kcache_close(m);
    return r;
}

static void backend_signed(void) {
    mem_backend *b = mb_new();
    kcache *w = machine("sg-w", b, &mb_ops, secret_a), *n = machine("sg-n", b, &mb_ops, NULL), *h = machine("sg-h", b, &mb_ops, secret_hmac);
    unsigned char *v, *t;
    size_t len, e;
    unsigned version, flags;
    uint64_t rejects;
    int round;
    char store[32];
    /* a writer with the secret signs: version 2, GMAC (the entry, then a nonce and a tag) */
    KT_CHECK(put_id(w, 1000, 5000) == KCACHE_OK);
    v = value_of(b, 1000, &len, &version, &flags, &e);
    KT_CHECK_MSG(v && version == 2 && flags == 2 && len == KCACHE__RV_HEADER + e + 12 + 16, "a signed value: version %u flags %u, %zu bytes",
                 v ? version : 0, v ? flags : 0, len);
    /* read with the secret (from KCACHE_REMOTE_SECRET here), by an HMAC signer, and without one */
    setenv("KCACHE_REMOTE_SECRET", "cluster secret", 1);
    KT_CHECK_MSG(fresh_get(b, "sg-env", NULL, 1000, 5000, &rejects) == 1 && rejects == 0, "KCACHE_REMOTE_SECRET: not read back");
    unsetenv("KCACHE_REMOTE_SECRET");
    KT_CHECK(fresh_get(b, "sg-hr", secret_hmac, 1000, 5000, &rejects) == 1 && rejects == 0);
    KT_CHECK(fresh_get(b, "sg-none", NULL, 1000, 5000, &rejects) == 1 && rejects == 0);
    /* changed bytes, another secret, a signature taken off: rejected and deleted */
    for (round = 0; v && round < 5; round++) {
        size_t n2 = len;
        void (*tune)(kcache_config *) = secret_a;
        t = (unsigned char *)malloc(len);
        memcpy(t, v, len);
        switch (round) {
        case 0: t[KCACHE__RV_HEADER + e - 1] ^= 1; break; /* the entry's last byte */
        case 1: t[KCACHE__RV_HEADER + e] ^= 1; break;     /* the nonce */
        case 2: t[len - 1] ^= 0x80; break;                /* the tag */
        case 3: tune = secret_b; break;                   /* another secret */
        default:                                          /* made to look unsigned */
            kcache__put_u16(t + 8, 1);
            kcache__put_u16(t + 10, 0);
            n2 = KCACHE__RV_HEADER + e;
            break;
        }
        {
            kcache_key k;
            char name[33];
            kt_key(&k, "backend", 1000);
            name_of(&k, name);
            kcache_key_free(&k);
            mb_set(b, name, t, n2);
            snprintf(store, sizeof store, "sg-t%d", round);
            KT_CHECK_MSG(fresh_get(b, store, tune, 1000, 5000, &rejects) == 0 && rejects == 1, "round %d: read, or not counted (rejects %llu)",
                         round, (unsigned long long)rejects);
            KT_CHECK_MSG(!mb_has(b, name), "round %d: the rejected value was left on the backend", round);
        }
        free(t);
    }
    free(v);
    /* a client without a secret writes unsigned values (version 1, no MAC): a reader with one rejects them */
    KT_CHECK(put_id(n, 1001, 3000) == KCACHE_OK);
    v = value_of(b, 1001, &len, &version, &flags, &e);
    KT_CHECK_MSG(v && version == 1 && flags == 0 && len == KCACHE__RV_HEADER + e, "an unsigned value: version %u flags %u", v ? version : 0,
                 v ? flags : 0);
    free(v);
    KT_CHECK(fresh_get(b, "sg-u", secret_a, 1001, 3000, &rejects) == 0 && rejects == 1);
    /* KCACHE_REMOTE_MAC=hmac: version 1 with an HMAC-SHA-256, read with the secret, not with another */
    KT_CHECK(put_id(h, 1002, 3000) == KCACHE_OK);
    v = value_of(b, 1002, &len, &version, &flags, &e);
    KT_CHECK_MSG(v && version == 1 && flags == 1 && len == KCACHE__RV_HEADER + e + 32, "an HMAC value: version %u flags %u", v ? version : 0,
                 v ? flags : 0);
    free(v);
    KT_CHECK(fresh_get(b, "sg-hmac", secret_a, 1002, 3000, &rejects) == 1 && rejects == 0);
    KT_CHECK(fresh_get(b, "sg-hmac-o", secret_b, 1002, 3000, &rejects) == 0 && rejects == 1);
    /* build claims carry the holder's id and an HMAC of it under the secret */
    {
        kcache_key k;
        const void *d = NULL;
        size_t dn = 0;
        char name[33], hex[65];
        const char *dot;
        unsigned char msg[300], mac[32];
        unsigned maclen = 32, i;
        size_t idlen;
        kt_key(&k, "backend", 1003);
        name_of(&k, name);
        KT_CHECK(kcache_get_or_build(w, &k, one_build, NULL, &d, &dn) == KCACHE_OK);
        if (d) kcache_release(w, d);
        kcache_key_free(&k);
        pthread_mutex_lock(&b->m);
        KT_CHECK_MSG(b->takes == 1 && b->releases == 1 && strcmp(b->claim_name, name) == 0, "takes %d releases %d", b->takes, b->releases);
        dot = strlen(b->claim_token) > 65 ? b->claim_token + strlen(b->claim_token) - 65 : NULL;
        KT_CHECK_MSG(dot && *dot == '.', "the claim token is not signed: %s", b->claim_token);
        if (dot && *dot == '.') {
            idlen = (size_t)(dot - b->claim_token);
            memcpy(msg, "kcache claim\n", 13);
            memcpy(msg + 13, name, 32);
            msg[45] = '\n';
            memcpy(msg + 46, b->claim_token, idlen);
            HMAC(EVP_sha256(), "cluster secret", 14, msg, 46 + idlen, mac, &maclen);
            for (i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", mac[i]);
            KT_CHECK_MSG(strcmp(dot + 1, hex) == 0, "the claim's signature is not HMAC-SHA-256(secret, \"kcache claim\", name, id): %s", dot + 1);
        }
        pthread_mutex_unlock(&b->m);
    }
    /* and without a secret, no signature: the id alone (host:pid:sequence:time; the time "t" and hex ms since 0.6) */
    {
        kcache_key k;
        const void *d = NULL;
        size_t dn = 0;
        const char *last;
        kt_key(&k, "backend", 1004);
        KT_CHECK(kcache_get_or_build(n, &k, one_build, NULL, &d, &dn) == KCACHE_OK);
        if (d) kcache_release(n, d);
        kcache_key_free(&k);
        pthread_mutex_lock(&b->m);
        last = strrchr(b->claim_token, ':');
        KT_CHECK_MSG(b->takes == 2 && last && last[1] == 't' && strspn(last + 2, "0123456789abcdef") == strlen(last + 2), "an unsigned claim token: %s",
                     b->claim_token);
        pthread_mutex_unlock(&b->m);
    }
    kcache_close(w);
    kcache_close(n);
    kcache_close(h);
    mb_free(b);
}
#endif

#ifdef KCACHE_ZSTD
static void backend_compressed(void) {
    static const char text[] = "__kernel void saxpy(float a, __global const float *x, __global float *y) { y[get_global_id(0)] += a * x[get_global_id(0)]; }\n";
    mem_backend *b = mb_new();
    kcache *w = machine("z-w", b, &mb_ops, NULL), *m = machine("z-m", b, &mb_ops, NULL);
    size_t n = 200000, i, len = 0, got = 0;
    unsigned char *p = (unsigned char *)malloc(n), *v;
    const void *d = NULL;
    kcache_key k;
    kcache_stats st;
    char name[33];
    uint32_t x = 12345;
    for (i = 0; i < n; i++) p[i] = (unsigned char)text[i % (sizeof text - 1)];
    kt_key(&k, "backend", 1100);
    name_of(&k, name);
    KT_CHECK(kcache_put(w, &k, p, n) == KCACHE_OK);
    v = mb_copy(b, name, &len);
    KT_CHECK_MSG(v && len < n / 4, "a compressible %zu-byte payload went to the backend as %zu bytes", n, len);
    KT_CHECK_MSG(v && len > KCACHE__RV_HEADER + 12 && kcache__get_u16(v + KCACHE__RV_HEADER + 8) == KCACHE__ENTRY_VERSION_ZSTD &&
                     kcache__get_u16(v + KCACHE__RV_HEADER + 10) == KCACHE__ENTRY_ZSTD,
                 "the value's entry is not a zstd one");
    free(v);
    KT_CHECK(kcache_get(m, &k, &d, &got) == KCACHE_OK && got == n && memcmp(d, p, n) == 0);
    if (d) kcache_release(m, d);
    kcache_get_stats(m, &st);
    KT_CHECK_EQ_U64(st.hits_remote, 1);
    kcache_key_free(&k);
    /* what does not shrink goes as it is */
    for (i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = (unsigned char)x;
    }
    kt_key(&k, "backend", 1101);
    name_of(&k, name);
    KT_CHECK(kcache_put(w, &k, p, n) == KCACHE_OK);
    v = mb_copy(b, name, &len);
    KT_CHECK_MSG(v && len > n && kcache__get_u16(v + KCACHE__RV_HEADER + 8) == KCACHE__ENTRY_VERSION, "random bytes: %zu bytes, entry version %u",
                 len, v ? (unsigned)kcache__get_u16(v + KCACHE__RV_HEADER + 8) : 0);
    free(v);
    d = NULL;
    KT_CHECK(kcache_get(m, &k, &d, &got) == KCACHE_OK && got == n && memcmp(d, p, n) == 0);
    if (d) kcache_release(m, d);
    kcache_key_free(&k);
    free(p);
    kcache_close(w);
    kcache_close(m);
    mb_free(b);
}
#endif

/* "Also seen" of issue 25: what relative paths do, said in the debug log. */
static void relative_paths(void) {
    char cwd[1024], home[400], old_home[1024];
    const char *h = getenv("HOME");
    kcache_config cfg;
    kcache *kc;
    snprintf(old_home, sizeof old_home, "%s", h ? h : "");
    if (!getcwd(cwd, sizeof cwd) || chdir(g_root) != 0) { KT_FAILF("chdir %s", g_root); return; }
    kcache_config_init(&cfg);
    cfg.dir = "rel-store";
    cfg.layers = "/nonexistent-layer:rel-layer";
    cfg.publish = 0;
    cfg.debug = 1;
    cfg.log = log_line;
    g_logged[0] = 0;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    KT_CHECK_MSG(strstr(g_logged, "KCACHE_DIR rel-store is relative: taken against the working directory") &&
                     strstr(g_logged, "KCACHE_LAYERS: rel-layer is relative") && !strstr(g_logged, "nonexistent-layer is relative"),
                 "log: %s", g_logged);
    kcache_close(kc);
    snprintf(home, sizeof home, "%s/home", g_root);
    mkdir(home, 0700);
    setenv("HOME", home, 1);
    setenv("XDG_CACHE_HOME", "relative-xdg", 1);
    kcache_config_init(&cfg);
    cfg.dir = NULL;
    cfg.publish = 0;
    cfg.debug = 1;
    cfg.log = log_line;
    g_logged[0] = 0;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    KT_CHECK_MSG(strstr(g_logged, "XDG_CACHE_HOME relative-xdg is relative: ignored") && kcache_dir(kc) && strstr(kcache_dir(kc), "/home/.cache/kcache"),
                 "log: %s; store %s", g_logged, kcache_dir(kc) ? kcache_dir(kc) : "none");
    kcache_close(kc);
    unsetenv("XDG_CACHE_HOME");
    if (h) setenv("HOME", old_home, 1);
    else unsetenv("HOME");
    if (chdir(cwd) != 0) KT_FAILF("chdir back");
}

int main(void) {
    unset_env();
    if (!kt_mktemp(g_root, sizeof g_root, "test-backend")) { printf("FAIL setup: mkdtemp\n"); return 1; }
    KT_RUN(backend_roundtrip);
    KT_RUN(backend_mem_cap);
    KT_RUN(backend_rejects);
    KT_RUN(backend_breaker);
    KT_RUN(backend_shard_counters);
    KT_RUN(backend_full);
    KT_RUN(backend_ro_max_entry);
    KT_RUN(backend_remove);
    KT_RUN(backend_cluster_build);
    KT_RUN(no_redis_build);
    KT_RUN(remote_env);
    KT_RUN(backend_no_writes);
    KT_RUN(backend_shards);
    KT_RUN(backend_kit);
    KT_RUN(backend_claim_reissue);
#ifdef KCACHE_HMAC_OPENSSL
    KT_RUN(backend_signed);
#else
    printf("skip backend_signed: built without KCACHE_HMAC_OPENSSL (build/test_backend_signed runs it)\n");
#endif
#ifdef KCACHE_ZSTD
    KT_RUN(backend_compressed);
#else
    printf("skip backend_compressed: built without KCACHE_ZSTD (build/test_backend_signed runs it)\n");
#endif
    KT_RUN(relative_paths);
    if (!kt_failures_total) kt_rm_tree(g_root);
    else printf("# stores kept in %s\n", g_root);
    KT_EXIT();
}

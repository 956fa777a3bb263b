/* tests/test_threads.c - one kcache shared by 8 threads: mixed get/put/remove/explain/stats over
 * 200 keys with a small memory LRU (eviction races with gets), memory only and with a store in a
 * temp directory; single flight (kcache_get_or_build from 8 threads builds once); and
 * read-your-writes: a put that returned is never undone by a concurrent get that read the store;
 * two handles on one store (their updates exclude each other: the accounting stays exact); 500
 * forks while 4 threads are inside kcache calls (no child hangs, none takes over its parent's
 * build claim, a build function that forks gets its payload back in the child); every public call
 * on a 32 KiB thread stack.
 *
 * Build: make build/test_threads build/asan/test_threads build/tsan/test_threads (clang TSan).
 * Each phase runs for a fixed wall-clock budget (no timing assertion). */
#define _GNU_SOURCE
#include <stddef.h>
/* The allocator hook lets one test stop a get at a precise point: the first allocation a get
   makes on a memory miss is the buffer for the entry it has just opened in the store. */
static void *hook_malloc(size_t n);
#define KCACHE_MALLOC(n) hook_malloc(n)
#define KCACHE_REALLOC(p, n) realloc(p, n)
#define KCACHE_FREE(p) free(p)
#define KCACHE_FAULT_INJECTION kt_fault /* never fails a call: stops a thread at a chosen one */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
#include <limits.h>
#include <ftw.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define NTHREADS 8
#define NKEYS 200
#define MAXLEN 3000
#define HAMMER_MS 700

/* ---- helpers ------------------------------------------------------------------------------ */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static uint64_t rng_next(uint64_t *s) /* splitmix64, one state per thread */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static char tmproot[512];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}
static void rm_tree(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) == 0 && nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

static void clear_env(void)
{
    static const char *const vars[] = {"KCACHE_DIR", "KCACHE_MAX_SIZE", "KCACHE_MEM_ENTRIES", "KCACHE_MEM_SIZE",
                                       "KCACHE_ENABLE", "KCACHE_PERSISTENT", "KCACHE_DEBUG", "KCACHE_TRACE",
                                       "KCACHE_FSYNC", "KCACHE_WRITE", "KCACHE_BUILD_WAIT", "KCACHE_STAMP", NULL};
    int i;
    for (i = 0; vars[i]; i++) unsetenv(vars[i]);
}

/* A configuration for a store in tmproot/name (dir: room for its path). */
static void cfg_store(kcache_config *cfg, char *dir, size_t cap, const char *name)
{
    snprintf(dir, cap, "%s/%s", tmproot, name);
    kcache_config_init(cfg);
    cfg->dir = dir;
}

/* ---- the allocator hook: a thread that armed it stops in its next kcache allocation until
   released (mutex + condition variable, so TSan sees the hand-off) ---- */

static pthread_mutex_t hook_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hook_cv = PTHREAD_COND_INITIALIZER;
static pthread_t hook_thread;
static int hook_armed, hook_paused, hook_go;
static size_t hook_size;     /* not 0: the armed thread stops at its next allocation of this size */
static const char *hook_op;  /* not NULL: at its next file operation of this kind (KCACHE_FAULT_INJECTION) */
static int hook_skip;        /* ... after letting this many of them pass */

static void hook_pause(void) /* hook_mu held */
{
    hook_armed = 0;
    hook_paused = 1;
    pthread_cond_broadcast(&hook_cv);
    while (!hook_go) pthread_cond_wait(&hook_cv, &hook_mu);
}

static void *hook_malloc(size_t n)
{
    if (__atomic_load_n(&hook_armed, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&hook_mu);
        if (hook_armed && pthread_equal(hook_thread, pthread_self()) && !hook_op && (!hook_size || n == hook_size)) hook_pause();
        pthread_mutex_unlock(&hook_mu);
    }
    return malloc(n);
}

int kt_fault(const char *op, int line)
{
    (void)line;
    if (__atomic_load_n(&hook_armed, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&hook_mu);
        if (hook_armed && pthread_equal(hook_thread, pthread_self()) && hook_op && strcmp(op, hook_op) == 0 && hook_skip-- == 0)
            hook_pause();
        pthread_mutex_unlock(&hook_mu);
    }
    return 0;
}

/* ---- keys and payloads: payload i names i and has its own length ------------------------------ */

static kcache_key keys[NKEYS];
static unsigned char payload[NKEYS][MAXLEN];
static size_t plen[NKEYS];

static void setup_keys(void)
{
    int i;
    size_t j;
    for (i = 0; i < NKEYS; i++) {
        char unit[32], src[64];
        snprintf(unit, sizeof unit, "unit%d", i % 10);
        snprintf(src, sizeof src, "__kernel void k%d(void) {}", i);
        kcache_key_init(&keys[i], unit);
        kcache_key_str(&keys[i], "src", src);
        kcache_key_u64(&keys[i], "index", (uint64_t)i);
        plen[i] = 1 + (size_t)(i * 97) % (MAXLEN - 1);
        for (j = 0; j < plen[i]; j++) payload[i][j] = (unsigned char)(i ^ (j * 7) ^ ((j >> 8) * 13));
        if (plen[i] >= 4) memcpy(payload[i], &i, 4);
    }
}

static void free_keys(void)
{
    int i;
    for (i = 0; i < NKEYS; i++) kcache_key_free(&keys[i]);
}

static int payload_ok(int i, const void *p, size_t n) { return n == plen[i] && memcmp(p, payload[i], n) == 0; }

/* What the build functions here hand kcache: payload idx in a new buffer (kcache takes it). */
static int give_payload(int idx, void **out, size_t *n)
{
    unsigned char *p = (unsigned char *)malloc(plen[idx]);
    if (!p) return 1;
    memcpy(p, payload[idx], plen[idx]);
    *out = p;
    *n = plen[idx];
    return 0;
}

/* ---- the hammer ---------------------------------------------------------------------------- */

typedef struct held { const void *p; size_t n; int idx; } held;

typedef struct worker {
    pthread_t th;
    kcache *kc;
    int id;
    int64_t deadline;
    uint64_t gets, hits, misses, puts, removes, explains, bytes_read, bytes_written;
    uint64_t bad_payload, bad_status, bad_explain, bad_stats, put_fail;
    char first_bad[256];
} worker;

static void note(worker *w, const char *what, int idx, const char *detail)
{
    if (!w->first_bad[0]) snprintf(w->first_bad, sizeof w->first_bad, "thread %d: %s (key %d) %s", w->id, what, idx, detail);
}

static void *hammer(void *arg)
{
    worker *w = (worker *)arg;
    uint64_t rs = 0x1234567ULL * (uint64_t)(w->id + 1);
    held hold[4];
    int nh = 0, i;
    char buf[512];
    while (now_ms() < w->deadline) {
        int it;
        for (it = 0; it < 64; it++) {
            int op = (int)(rng_next(&rs) % 100), idx = (int)(rng_next(&rs) % NKEYS);
            if (op < 55) {
                const void *p;
                size_t n;
                kcache_status s = kcache_get(w->kc, &keys[idx], &p, &n);
                w->gets++;
                if (s == KCACHE_OK) {
                    w->hits++;
                    w->bytes_read += n;
                    if (!payload_ok(idx, p, n)) { w->bad_payload++; note(w, "wrong payload", idx, ""); }
                    if (nh < 4 && (rng_next(&rs) & 3) == 0) {
                        hold[nh].p = p; hold[nh].n = n; hold[nh].idx = idx; nh++;
                    } else kcache_release(w->kc, p);
                } else if (s == KCACHE_MISS) {
                    w->misses++;
                    if (p != NULL || n != 0) { w->bad_status++; note(w, "miss with data", idx, ""); }
                } else {
                    w->bad_status++;
                    note(w, "get", idx, kcache_strerror(s));
                }
            } else if (op < 80) {
                kcache_status s = kcache_put(w->kc, &keys[idx], payload[idx], plen[idx]);
                w->puts++;
                w->bytes_written += plen[idx];
                if (s != KCACHE_OK) { w->put_fail++; note(w, "put", idx, kcache_strerror(s)); }
            } else if (op < 87) {
                kcache_status s = kcache_remove(w->kc, &keys[idx]);
                w->removes++;
                if (s != KCACHE_OK && s != KCACHE_MISS) { w->bad_status++; note(w, "remove", idx, kcache_strerror(s)); }
            } else if (op < 92) {
                size_t n = kcache_explain(w->kc, &keys[idx], buf, sizeof buf);
                w->explains++;
                if (n == 0 || n != strlen(buf) || (strncmp(buf, "hit: ", 5) != 0 && strncmp(buf, "miss: ", 6) != 0)) {
                    w->bad_explain++;
                    note(w, "explain", idx, buf);
                }
            } else if (op < 96) {
                kcache_stats st;
                uint64_t sum = 0;
                int r;
                kcache_get_stats(w->kc, &st);
                for (r = 0; r < KCACHE_REASON_COUNT; r++) sum += st.misses_by_reason[r];
                if (sum != st.misses || st.misses_by_reason[KCACHE_REASON_HIT] != 0) {
                    w->bad_stats++;
                    note(w, "stats snapshot inconsistent", -1, "");
                }
            } else if (nh > 0) { /* give back a held payload, checking it is still intact */
                nh--;
                if (!payload_ok(hold[nh].idx, hold[nh].p, hold[nh].n)) {
                    w->bad_payload++;
                    note(w, "held payload changed", hold[nh].idx, "");
                }
                kcache_release(w->kc, hold[nh].p);
            }
        }
    }
    for (i = 0; i < nh; i++) {
        if (!payload_ok(hold[i].idx, hold[i].p, hold[i].n)) { w->bad_payload++; note(w, "held payload changed", hold[i].idx, ""); }
        kcache_release(w->kc, hold[i].p);
    }
    return NULL;
}

static void run_hammer(kcache *kc, int store)
{
    worker w[NTHREADS];
    kcache_stats st;
    uint64_t gets = 0, hits = 0, misses = 0, puts = 0, br = 0, bw = 0, ops = 0;
    int i, r;
    int64_t deadline = now_ms() + HAMMER_MS;
    memset(w, 0, sizeof w);
    for (i = 0; i < NTHREADS; i++) {
        w[i].kc = kc;
        w[i].id = i;
        w[i].deadline = deadline;
        if (pthread_create(&w[i].th, NULL, hammer, &w[i]) != 0) { KT_FAILF("pthread_create"); exit(1); }
    }
    for (i = 0; i < NTHREADS; i++) pthread_join(w[i].th, NULL);
    for (i = 0; i < NTHREADS; i++) {
        gets += w[i].gets;
        hits += w[i].hits;
        misses += w[i].misses;
        puts += w[i].puts;
        br += w[i].bytes_read;
        bw += w[i].bytes_written;
        ops += w[i].gets + w[i].puts + w[i].removes + w[i].explains;
        KT_CHECK_MSG(w[i].bad_payload == 0, "%llu wrong payloads: %s", (unsigned long long)w[i].bad_payload, w[i].first_bad);
        KT_CHECK_MSG(w[i].bad_status == 0, "%llu bad statuses: %s", (unsigned long long)w[i].bad_status, w[i].first_bad);
        KT_CHECK_MSG(w[i].bad_explain == 0, "%llu bad explains: %s", (unsigned long long)w[i].bad_explain, w[i].first_bad);
        KT_CHECK_MSG(w[i].bad_stats == 0, "%llu bad stats: %s", (unsigned long long)w[i].bad_stats, w[i].first_bad);
        KT_CHECK_MSG(w[i].put_fail == 0, "%llu failed puts: %s", (unsigned long long)w[i].put_fail, w[i].first_bad);
    }
    KT_CHECK(hits > 0 && misses > 0 && puts > 0); /* the mix really mixed */
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_mem + st.hits_disk, hits);
    KT_CHECK_EQ_U64(st.misses, misses);
    KT_CHECK_EQ_U64(st.hits_mem + st.hits_disk + st.misses, gets);
    KT_CHECK_EQ_U64(st.puts, puts);
    KT_CHECK_EQ_U64(st.bytes_read, br);
    KT_CHECK_EQ_U64(st.bytes_written, bw);
    {
        uint64_t sum = 0;
        for (r = 0; r < KCACHE_REASON_COUNT; r++) sum += st.misses_by_reason[r];
        KT_CHECK_EQ_U64(sum, st.misses);
    }
    KT_CHECK(st.mem_entries <= 16);
    KT_CHECK(st.mem_evictions > 0);
    KT_CHECK_EQ_U64(st.rejects, 0);
    if (!store) {
        KT_CHECK_EQ_U64(st.hits_disk, 0);
        KT_CHECK_EQ_U64(st.evictions, st.mem_evictions);
    } else {
        KT_CHECK(st.hits_disk > 0);
        KT_CHECK_EQ_U64(st.store_errors, 0);
        KT_CHECK(st.disk_bytes <= 256 * 1024);
        KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK); /* the accounting equals the entries on disk */
    }
    /* memory holds only correct payloads now */
    for (i = 0; i < NKEYS; i++) {
        const void *p;
        size_t n;
        if (kcache_get(kc, &keys[i], &p, &n) == KCACHE_OK) {
            KT_CHECK_MSG(payload_ok(i, p, n), "key %d: wrong payload after the storm", i);
            kcache_release(kc, p);
        }
    }
    (void)ops;
}

static void test_hammer_memory(void)
{
    kcache_config cfg;
    kcache *kc;
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.mem_entries = 16;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    run_hammer(kc, 0);
    kcache_close(kc);
}

static void hammer_store(int policy)
{
    kcache_config cfg;
    kcache *kc;
    char dir[600];
    int i, hits = 0;
    snprintf(dir, sizeof dir, "%s/store%d", tmproot, policy);
    kcache_config_init(&cfg);
    cfg.dir = dir;
    cfg.write_policy = policy;
    cfg.mem_entries = 16;
    cfg.max_size = 256 * 1024; /* about half the keys fit: the store evicts too */
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    KT_CHECK_MSG(kcache_dir(kc) != NULL, "no store in %s", dir);
    if (!kcache_dir(kc)) { kcache_close(kc); return; }
    run_hammer(kc, 1);
    kcache_close(kc);
    /* a fresh open reads only correct payloads from the store */
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    for (i = 0; i < NKEYS; i++) {
        const void *p;
        size_t n;
        kcache_status s = kcache_get(kc, &keys[i], &p, &n);
        if (s == KCACHE_OK) {
            hits++;
            KT_CHECK_MSG(payload_ok(i, p, n), "key %d: wrong payload from the store", i);
            kcache_release(kc, p);
        } else KT_CHECK_MSG(s == KCACHE_MISS, "key %d: %s", i, kcache_strerror(s));
    }
    KT_CHECK(hits > 0);
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_close(kc);
}

static void test_hammer_store(void) { hammer_store(KCACHE_WRITE_THROUGH); }
static void test_hammer_store_write_evict(void) { hammer_store(KCACHE_WRITE_EVICT); }

/* ---- single flight ------------------------------------------------------------------------- */

static int sf_calls;
static pthread_barrier_t sf_barrier;

static int slow_build(void *user, void **out, size_t *n)
{
    __atomic_fetch_add(&sf_calls, 1, __ATOMIC_SEQ_CST);
    sleep_ms(200);
    return give_payload(*(const int *)user, out, n);
}

typedef struct sf_arg { kcache *kc; int idx; kcache_status s; int ok; } sf_arg;

static void *sf_thread(void *arg)
{
    sf_arg *a = (sf_arg *)arg;
    const void *p;
    size_t n;
    pthread_barrier_wait(&sf_barrier);
    a->s = kcache_get_or_build(a->kc, &keys[a->idx], slow_build, &a->idx, &p, &n);
    if (a->s == KCACHE_OK) {
        a->ok = payload_ok(a->idx, p, n);
        kcache_release(a->kc, p);
    }
    return NULL;
}

static void single_flight(kcache *kc, int idx)
{
    pthread_t th[NTHREADS];
    sf_arg a[NTHREADS];
    kcache_stats st;
    int i;
    sf_calls = 0;
    pthread_barrier_init(&sf_barrier, NULL, NTHREADS);
    for (i = 0; i < NTHREADS; i++) {
        a[i].kc = kc;
        a[i].idx = idx;
        a[i].s = KCACHE_EINVAL;
        a[i].ok = 0;
        pthread_create(&th[i], NULL, sf_thread, &a[i]);
    }
    for (i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&sf_barrier);
    KT_CHECK_MSG(__atomic_load_n(&sf_calls, __ATOMIC_SEQ_CST) == 1, "the build ran %d times", sf_calls);
    for (i = 0; i < NTHREADS; i++) {
        KT_CHECK_MSG(a[i].s == KCACHE_OK, "thread %d: %s", i, kcache_strerror(a[i].s));
        KT_CHECK_MSG(a[i].ok, "thread %d: wrong payload", i);
    }
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.builds, 1);
    KT_CHECK_EQ_U64(st.puts, 1);
    /* and afterwards it is a plain hit */
    {
        const void *p;
        size_t n;
        KT_CHECK(kcache_get(kc, &keys[idx], &p, &n) == KCACHE_OK);
        if (p) { KT_CHECK(payload_ok(idx, p, n)); kcache_release(kc, p); }
    }
}

static void test_single_flight_memory(void)
{
    kcache_config cfg;
    kcache *kc;
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    single_flight(kc, 123);
    kcache_close(kc);
}

static void test_single_flight_store(void)
{
    kcache_config cfg;
    kcache *kc;
    char dir[600];
    cfg_store(&cfg, dir, sizeof dir, "sf");
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    KT_CHECK(kcache_dir(kc) != NULL);
    single_flight(kc, 77);
    kcache_close(kc);
}

/* ---- read your writes ------------------------------------------------------------------------
 * One writer owns key K: it puts version n, then gets K and must see version n (nobody else
 * writes K); now and then it removes K and must then miss. Readers get K (from the store, since
 * they keep pushing it out of a 1-entry memory with puts of their own keys). A reader that read
 * version n-1 from the store must not put it back into memory over the writer's version n, nor
 * bring back a K the writer removed. */

typedef struct ryw { kcache *kc; int64_t deadline; int id; uint64_t rounds, stale, resurrected, reads; uint64_t last_seen, got; } ryw;
static kcache_key ryw_key;
static int ryw_stop;

static void *ryw_writer(void *arg)
{
    ryw *r = (ryw *)arg;
    unsigned char buf[256];
    uint64_t n;
    for (n = 1; now_ms() < r->deadline; n++) {
        const void *p;
        size_t len;
        memset(buf, (int)(n & 0xff), sizeof buf);
        memcpy(buf, &n, 8);
        if (kcache_put(r->kc, &ryw_key, buf, sizeof buf) != KCACHE_OK) continue;
        if (kcache_get(r->kc, &ryw_key, &p, &len) == KCACHE_OK) {
            uint64_t v;
            memcpy(&v, p, 8);
            if (v != n && !r->stale) { r->last_seen = v; r->got = n; }
            if (v != n) r->stale++;
            kcache_release(r->kc, p);
        }
        if (n % 8 == 0) {
            kcache_remove(r->kc, &ryw_key);
            if (kcache_get(r->kc, &ryw_key, &p, &len) == KCACHE_OK) {
                r->resurrected++;
                kcache_release(r->kc, p);
            }
        }
        r->rounds++;
    }
    __atomic_store_n(&ryw_stop, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void *ryw_reader(void *arg)
{
    ryw *r = (ryw *)arg;
    kcache_key mine;
    char name[32];
    snprintf(name, sizeof name, "reader%d", r->id);
    kcache_key_init(&mine, "ryw");
    kcache_key_str(&mine, "who", name);
    while (!__atomic_load_n(&ryw_stop, __ATOMIC_SEQ_CST)) {
        const void *p;
        size_t len;
        if (kcache_get(r->kc, &ryw_key, &p, &len) == KCACHE_OK) {
            r->reads++;
            kcache_release(r->kc, p);
        }
        kcache_put(r->kc, &mine, "x", 1); /* pushes K out of the 1-entry memory */
    }
    kcache_key_free(&mine);
    return NULL;
}

static void test_read_your_writes_store(void)
{
    kcache_config cfg;
    kcache *kc;
    char dir[600];
    pthread_t th[4];
    ryw r[4];
    int i;
    cfg_store(&cfg, dir, sizeof dir, "ryw");
    cfg.mem_entries = 1;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    kcache_key_init(&ryw_key, "ryw");
    kcache_key_str(&ryw_key, "who", "writer");
    ryw_stop = 0;
    memset(r, 0, sizeof r);
    for (i = 0; i < 4; i++) {
        r[i].kc = kc;
        r[i].id = i;
        r[i].deadline = now_ms() + HAMMER_MS;
        pthread_create(&th[i], NULL, i == 0 ? ryw_writer : ryw_reader, &r[i]);
    }
    for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
    KT_CHECK(r[0].rounds > 0);
    KT_CHECK_MSG(r[0].stale == 0,
                 "%llu of %llu gets right after a put returned an older payload (first: put %llu, got %llu): a "
                 "concurrent get put a payload it read from the store back over a newer one",
                 (unsigned long long)r[0].stale, (unsigned long long)r[0].rounds, (unsigned long long)r[0].got,
                 (unsigned long long)r[0].last_seen);
    KT_CHECK_MSG(r[0].resurrected == 0,
                 "%llu of %llu gets right after a remove hit: a concurrent get put back what it had read from "
                 "the store before the remove",
                 (unsigned long long)r[0].resurrected, (unsigned long long)(r[0].rounds / 8));
    kcache_key_free(&ryw_key);
    kcache_close(kc);
}

/* The same races made deterministic with the allocator hook: a reader's get is stopped right
   after it opened K's entry in the store, the main thread then puts a newer K (or removes K), and
   the reader goes on. */
typedef struct paused_get { kcache *kc; const kcache_key *k; kcache_status s; unsigned char first; } paused_get;

static void *paused_get_thread(void *arg)
{
    paused_get *g = (paused_get *)arg;
    const void *p;
    size_t n;
    pthread_mutex_lock(&hook_mu);
    hook_thread = pthread_self();
    __atomic_store_n(&hook_armed, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&hook_mu);
    g->s = kcache_get(g->kc, g->k, &p, &n);
    if (g->s == KCACHE_OK) {
        g->first = *(const unsigned char *)p;
        kcache_release(g->kc, p);
    }
    return NULL;
}

static void start_paused_get(pthread_t *th, paused_get *g)
{
    pthread_mutex_lock(&hook_mu);
    hook_paused = hook_go = 0;
    pthread_mutex_unlock(&hook_mu);
    pthread_create(th, NULL, paused_get_thread, g);
}

/* 1 when the reader stopped in the hook (it waits there until let_go). */
static int wait_paused(void)
{
    int64_t give_up = now_ms() + 5000;
    int paused;
    pthread_mutex_lock(&hook_mu);
    while (!hook_paused && now_ms() < give_up) {
        pthread_mutex_unlock(&hook_mu);
        sleep_ms(1);
        pthread_mutex_lock(&hook_mu);
    }
    paused = hook_paused;
    pthread_mutex_unlock(&hook_mu);
    return paused;
}

static void let_go(void)
{
    pthread_mutex_lock(&hook_mu);
    hook_armed = 0;
    hook_go = 1;
    pthread_cond_broadcast(&hook_cv);
    pthread_mutex_unlock(&hook_mu);
}

static void test_store_read_vs_put_remove(void)
{
    kcache_config cfg;
    kcache *kc;
    char dir[600];
    kcache_key k, j;
    const void *p;
    size_t n;
    pthread_t th;
    paused_get g;
    int paused;
    cfg_store(&cfg, dir, sizeof dir, "paused");
    cfg.mem_entries = 1;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    kcache_key_init(&k, "race");
    kcache_key_str(&k, "who", "K");
    kcache_key_init(&j, "race");
    kcache_key_str(&j, "who", "J");

    /* 1. a put that returned is undone by a get that had read the older entry */
    KT_CHECK(kcache_put(kc, &k, "1111", 4) == KCACHE_OK);
    KT_CHECK(kcache_put(kc, &j, "j", 1) == KCACHE_OK); /* K now only in the store */
    g.kc = kc; g.k = &k; g.s = KCACHE_EINVAL; g.first = 0;
    start_paused_get(&th, &g);
    paused = wait_paused();
    KT_CHECK_MSG(paused, "the reader's get did not reach the store");
    KT_CHECK(kcache_put(kc, &k, "2222", 4) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK);
    if (p) { KT_CHECK(memcmp(p, "2222", 4) == 0); kcache_release(kc, p); }
    let_go();
    pthread_join(th, NULL);
    KT_CHECK(g.s == KCACHE_OK && (g.first == '1' || g.first == '2')); /* either is right for the reader */
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK);
    if (p) {
        KT_CHECK_MSG(memcmp(p, "2222", 4) == 0,
                     "after put(K, 2222) returned, get(K) gives \"%.4s\": a get that read K from the store "
                     "before the put inserted its older payload over the newer one in memory",
                     (const char *)p);
        kcache_release(kc, p);
    }

    /* 2. a remove that returned is undone by a get that had opened the entry before it */
    KT_CHECK(kcache_put(kc, &j, "j", 1) == KCACHE_OK); /* K only in the store again */
    g.s = KCACHE_EINVAL;
    start_paused_get(&th, &g);
    paused = wait_paused();
    KT_CHECK_MSG(paused, "the reader's get did not reach the store");
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS);
    let_go();
    pthread_join(th, NULL);
    p = NULL;
    KT_CHECK_MSG(kcache_get(kc, &k, &p, &n) == KCACHE_MISS,
                 "after remove(K) returned, get(K) hits \"%.4s\": a get that had opened K's entry before the "
                 "remove put it back in memory", p ? (const char *)p : "");
    if (p) kcache_release(kc, p);

    kcache_key_free(&k);
    kcache_key_free(&j);
    kcache_close(kc);
}

/* ---- two handles on one store in one process -------------------------------------------------
 * Each handle shares the lock file through the process's registry, so their locked updates
 * (accounting, eviction) exclude each other whatever lock kind the system has: with
 * process-associated locks alone (KCACHE_TEST_NO_OFD) they would not, and the accounting would
 * drift from the entries on disk. */

static void test_two_handles_accounting(void)
{
    kcache_config cfg;
    kcache *kc[2];
    char dir[600], name[16];
    worker w[4];
    int i, round;
    for (round = 0; round < 3; round++) {
        snprintf(name, sizeof name, "two%d", round);
        cfg_store(&cfg, dir, sizeof dir, name);
        cfg.mem_entries = 16;
        cfg.max_size = 256 * 1024; /* eviction all the time */
        KT_CHECK(kcache_open(&kc[0], &cfg) == KCACHE_OK && kcache_open(&kc[1], &cfg) == KCACHE_OK);
        if (!kc[0] || !kc[1] || !kcache_dir(kc[0]) || !kcache_dir(kc[1])) { KT_FAILF("no store in %s", dir); return; }
        memset(w, 0, sizeof w);
        for (i = 0; i < 4; i++) {
            w[i].kc = kc[i & 1];
            w[i].id = i;
            w[i].deadline = now_ms() + HAMMER_MS / 2;
            if (pthread_create(&w[i].th, NULL, hammer, &w[i]) != 0) { KT_FAILF("pthread_create"); exit(1); }
        }
        for (i = 0; i < 4; i++) pthread_join(w[i].th, NULL);
        for (i = 0; i < 4; i++) {
            KT_CHECK_MSG(w[i].bad_payload == 0 && w[i].bad_status == 0 && w[i].put_fail == 0, "%s", w[i].first_bad);
        }
        KT_CHECK_MSG(kcache_verify(kc[0], 0) == KCACHE_OK,
                     "round %d: the accounting of a store used by two handles of one process is not the entries on disk", round);
        KT_CHECK(kcache_verify(kc[1], 0) == KCACHE_OK);
        kcache_close(kc[0]);
        kcache_close(kc[1]);
    }
}

/* ---- fork under load ---------------------------------------------------------------------------
 * 4 threads keep one kcache busy (gets, puts, removes, explains, stats, get_or_build) while the
 * main thread forks, FORKS times: each child uses the inherited handle (a get of what the parent
 * stored, a put and get of its own, a get_or_build, stats, explain) and closes it, under alarm().
 * A child killed by the alarm hung: a mutex held by one of its parent's threads, or a wait on the
 * parent's lock. Then: a child forked while a parent thread holds a build claim waits for that
 * build instead of taking the claim over, and a build function that forks gets its payload back
 * in the child without touching the cache. */

#define FORK_KEYS 32
static kcache_key fork_keys[FORK_KEYS];
static int fork_stop;
static long *fork_builds; /* shared with the children (MAP_SHARED) */

static int fork_build(void *user, void **out, size_t *n)
{
    __atomic_fetch_add(fork_builds, 1, __ATOMIC_SEQ_CST);
    return give_payload(*(const int *)user, out, n);
}

static void *fork_load(void *arg)
{
    worker *w = (worker *)arg;
    uint64_t rs = 0x5151ULL * (uint64_t)(w->id + 1);
    char buf[256];
    while (!__atomic_load_n(&fork_stop, __ATOMIC_ACQUIRE)) {
        int op = (int)(rng_next(&rs) % 100), idx = (int)(rng_next(&rs) % NKEYS);
        const void *p;
        size_t n;
        kcache_status s;
        if (op < 50) {
            s = kcache_get(w->kc, &keys[idx], &p, &n);
            if (s == KCACHE_OK) {
                if (!payload_ok(idx, p, n)) { w->bad_payload++; note(w, "wrong payload", idx, ""); }
                kcache_release(w->kc, p);
            } else if (s != KCACHE_MISS) { w->bad_status++; note(w, "get", idx, kcache_strerror(s)); }
        } else if (op < 70) {
            if ((s = kcache_put(w->kc, &keys[idx], payload[idx], plen[idx])) != KCACHE_OK) {
                w->put_fail++;
                note(w, "put", idx, kcache_strerror(s));
            }
        } else if (op < 85) {
            s = kcache_get_or_build(w->kc, &keys[idx], fork_build, &idx, &p, &n);
            if (s != KCACHE_OK || !payload_ok(idx, p, n)) { w->bad_status++; note(w, "get_or_build", idx, kcache_strerror(s)); }
            if (s == KCACHE_OK) kcache_release(w->kc, p);
        } else if (op < 92) {
            s = kcache_remove(w->kc, &keys[idx]);
            if (s != KCACHE_OK && s != KCACHE_MISS) { w->bad_status++; note(w, "remove", idx, kcache_strerror(s)); }
        } else if (op < 96) {
            kcache_explain(w->kc, &keys[idx], buf, sizeof buf);
        } else {
            kcache_stats st;
            kcache_get_stats(w->kc, &st);
        }
    }
    return NULL;
}

/* The keys a parent stores before forking (its children must find them); 1 when every put worked. */
static int fork_keys_put(kcache *kc)
{
    int i, ok = 1;
    for (i = 0; i < FORK_KEYS; i++) {
        kcache_key_init(&fork_keys[i], "forked");
        kcache_key_u64(&fork_keys[i], "i", (uint64_t)i);
        ok &= kcache_put(kc, &fork_keys[i], payload[i], plen[i]) == KCACHE_OK;
    }
    return ok;
}
static void fork_keys_free(void)
{
    int i;
    for (i = 0; i < FORK_KEYS; i++) kcache_key_free(&fork_keys[i]);
}

/* What a child does with the handle it inherited; 0 when everything was right. put_status: what
   its puts return (KCACHE_ELOCK when its parent holds the store lock the whole time). */
static int fork_child_puts(kcache *kc, int i, kcache_status put_status)
{
    const void *p = NULL;
    size_t n = 0;
    int idx = i % NKEYS, bad = 0;
    char buf[256];
    kcache_stats st;
    kcache_status s = kcache_get(kc, &fork_keys[i % FORK_KEYS], &p, &n); /* stored by the parent */
    if (s != KCACHE_OK || !payload_ok(i % FORK_KEYS, p, n)) bad |= 1;
    if (s == KCACHE_OK) kcache_release(kc, p);
    if (kcache_put(kc, &keys[idx], payload[idx], plen[idx]) != put_status) bad |= 2; /* kept in memory anyway */
    p = NULL;
    if (kcache_get(kc, &keys[idx], &p, &n) != KCACHE_OK || !payload_ok(idx, p, n)) bad |= 4;
    if (p) kcache_release(kc, p);
    p = NULL;
    idx = (i * 7 + 3) % NKEYS;
    if (kcache_get_or_build(kc, &keys[idx], fork_build, &idx, &p, &n) != KCACHE_OK || !payload_ok(idx, p, n)) bad |= 8;
    if (p) kcache_release(kc, p);
    kcache_explain(kc, &keys[idx], buf, sizeof buf);
    kcache_get_stats(kc, &st);
    if (st.puts < 1) bad |= 16;
    kcache_close(kc);
    return bad;
}
static int fork_child(kcache *kc, int i) { return fork_child_puts(kc, i, KCACHE_OK); }

/* A child's end: 0 ok, 1 a check failed, 2 it hung (killed by its alarm), 3 anything else. */
static int fork_reap(pid_t pid)
{
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 3;
    if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 ? 0 : 1;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? 2 : 3;
}

/* The sanitizer under which this runs, or NULL. Their allocators (GCC 12's and LLVM 14's ASan,
   TSan) take a lock of their own that a fork does not reset: a child forked while another thread
   is inside malloc hangs in the runtime, whatever the program does. */
static const char *sanitizer(void)
{
    const char *v = getenv("KT_VALGRIND");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return "a sanitizer";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    return "a sanitizer";
#endif
#endif
    return v && *v == '1' ? "valgrind" : NULL;
}

static void test_fork_under_load(void)
{
    kcache_config cfg;
    kcache *kc;
    char dir[600];
    worker w[4];
    int i, forks = 500, hung = 0, failed = 0, other = 0, first_bad = 0;
    int64_t t0 = now_ms();
    if (sanitizer()) { /* test_fork_ghost_locks runs the same paths deterministically there */
        printf("# fork_under_load: not run under %s (its allocator hangs a child forked during a malloc)\n", sanitizer());
        return;
    }
    cfg_store(&cfg, dir, sizeof dir, "fork");
    cfg.mem_entries = 64;
    cfg.max_size = 4 << 20;
    cfg.build_wait_ms = 20000;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK && kcache_dir(kc) != NULL);
    if (!kc) return;
    KT_CHECK(fork_keys_put(kc));
    fork_stop = 0;
    memset(w, 0, sizeof w);
    for (i = 0; i < 4; i++) {
        w[i].kc = kc;
        w[i].id = i;
        if (pthread_create(&w[i].th, NULL, fork_load, &w[i]) != 0) { KT_FAILF("pthread_create"); exit(1); }
    }
    for (i = 0; i < forks; i++) {
        pid_t pid;
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            alarm(20);
            _exit(fork_child(kc, i) ? 1 : 0);
        }
        if (pid < 0) { KT_FAILF("fork: %s", strerror(errno)); break; }
        switch (fork_reap(pid)) {
        case 0: break;
        case 1: if (!failed++) first_bad = i; break;
        case 2: hung++; break;
        default: other++; break;
        }
    }
    __atomic_store_n(&fork_stop, 1, __ATOMIC_RELEASE);
    for (i = 0; i < 4; i++) pthread_join(w[i].th, NULL);
    for (i = 0; i < 4; i++)
        KT_CHECK_MSG(w[i].bad_payload == 0 && w[i].bad_status == 0 && w[i].put_fail == 0, "%s", w[i].first_bad);
    KT_CHECK_MSG(hung == 0, "%d of %d children forked under a 4-thread load hung", hung, forks);
    KT_CHECK_MSG(failed == 0, "%d of %d children got a wrong answer from their inherited handle (first: fork %d)", failed,
                 forks, first_bad);
    KT_CHECK_MSG(other == 0, "%d of %d children crashed", other, forks);
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    printf("# fork_under_load: %d forks in %lld ms, %d hung\n", forks, (long long)(now_ms() - t0), hung);
    fork_keys_free();
    kcache_close(kc);
}

/* ---- fork while a thread holds one of kcache's locks ------------------------------------------
 * Deterministic: a thread is stopped (in the allocator or file hook, before the real call, so no
 * runtime lock is held) at a point where it holds kc->lock, the store lock, the registry or a lock
 * file's in-process lock; the process forks; the child uses the inherited handle under alarm().
 * Runs under every tool (the free-running test above cannot under sanitizers). */
typedef struct ghost_arg { kcache *kc; int what; const char *dir; kcache_status s; } ghost_arg;
enum { GHOST_KC_LOCK, GHOST_STORE_LOCKING, GHOST_STORE_HELD, GHOST_REGISTRY, GHOST_CLAIMS };

static void *ghost_thread(void *arg)
{
    ghost_arg *g = (ghost_arg *)arg;
    const void *p = NULL;
    size_t n = 0;
    int idx = 40 + g->what;
    pthread_mutex_lock(&hook_mu);
    hook_thread = pthread_self();
    hook_size = g->what == GHOST_KC_LOCK ? sizeof(kcache__flight) : g->what == GHOST_REGISTRY ? sizeof(kcache__lockfile)
              : g->what == GHOST_CLAIMS ? 8 * sizeof(uint64_t) : 0;
    hook_op = g->what == GHOST_STORE_LOCKING || g->what == GHOST_STORE_HELD ? "lock" : NULL;
    hook_skip = g->what == GHOST_STORE_HELD; /* the second: the unlock, with the update done */
    __atomic_store_n(&hook_armed, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&hook_mu);
    if (g->what == GHOST_STORE_LOCKING || g->what == GHOST_STORE_HELD) {
        g->s = kcache_put(g->kc, &keys[idx], payload[idx], plen[idx]);
    } else if (g->what == GHOST_REGISTRY) {
        kcache_config cfg;
        kcache *other = NULL;
        kcache_config_init(&cfg);
        cfg.dir = g->dir;
        g->s = kcache_open(&other, &cfg);
        kcache_close(other);
    } else {
        g->s = kcache_get_or_build(g->kc, &keys[idx], fork_build, &idx, &p, &n);
        if (p) kcache_release(g->kc, p);
    }
    return NULL;
}

static void test_fork_ghost_locks(void)
{
    static const char *const names[] = {"kc->lock (a flight being added)",
                                        "the store's mutex and in-process lock (taking the file lock for a put)",
                                        "the store lock (a put done, about to unlock)",
                                        "the registry (a lock file being registered)", "a lock file's claims"};
    kcache_config cfg;
    kcache *kc;
    char dir[600], other[600], name[32];
    int what;
    for (what = GHOST_KC_LOCK; what <= GHOST_CLAIMS; what++) {
        pthread_t th;
        ghost_arg g;
        pid_t pid;
        int r;
        snprintf(name, sizeof name, "ghost%d", what);
        cfg_store(&cfg, dir, sizeof dir, name);
        snprintf(other, sizeof other, "%s/ghost-other%d", tmproot, what);
        cfg.build_wait_ms = 20000;
        cfg.lock_timeout_ms = 500;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK && kcache_dir(kc) != NULL);
        if (!kc) return;
        KT_CHECK(fork_keys_put(kc));
        memset(&g, 0, sizeof g);
        g.kc = kc;
        g.what = what;
        g.dir = other;
        pthread_mutex_lock(&hook_mu);
        hook_paused = hook_go = 0;
        pthread_mutex_unlock(&hook_mu);
        pthread_create(&th, NULL, ghost_thread, &g);
        KT_CHECK_MSG(wait_paused(), "the thread never stopped holding %s", names[what]);
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            /* the parent process holds the store lock all along (its thread is alive there): the
               child's puts must wait for it and give up (lock_timeout_ms), never take it over */
            alarm(20);
            _exit(fork_child_puts(kc, what, what == GHOST_STORE_HELD ? KCACHE_ELOCK : KCACHE_OK) ? 1 : 0);
        }
        r = pid > 0 ? fork_reap(pid) : 3;
        KT_CHECK_MSG(r == 0, "forked while a thread held %s: the child %s", names[what],
                     r == 1 ? (what == GHOST_STORE_HELD ? "got a wrong answer (or took over the parent's store lock)"
                                                        : "got a wrong answer") : r == 2 ? "hung" : "crashed");
        let_go();
        pthread_join(th, NULL);
        pthread_mutex_lock(&hook_mu);
        hook_size = 0;
        hook_op = NULL;
        hook_skip = 0;
        pthread_mutex_unlock(&hook_mu);
        KT_CHECK_MSG(g.s == KCACHE_OK, "%s: %s", names[what], kcache_strerror(g.s));
        fork_keys_free();
        kcache_close(kc);
    }
}

/* A parent thread holds the build claim of a key (its build waits for a pipe) while the process
   forks. The child's get_or_build of that key must wait for the parent's build, not build; and a
   build function that forks returns its payload to the child without the cache being touched. */
static int claim_pipe[2] = {-1, -1};
static pid_t claim_parent;
static int claim_in_build_fork;

static int held_build(void *user, void **out, size_t *n)
{
    char c;
    __atomic_fetch_add(fork_builds, 1, __ATOMIC_SEQ_CST);
    if (claim_in_build_fork) {
        pid_t pid = fork();
        if (pid == 0) alarm(20); /* the child returns from here into kcache_get_or_build */
        else if (pid > 0) claim_in_build_fork = (int)pid;
    } else if (read(claim_pipe[0], &c, 1) < 0) {
        return 1;
    }
    return give_payload(*(const int *)user, out, n);
}

typedef struct claim_arg { kcache *kc; int idx; kcache_status s; int ok; } claim_arg;
static void *claim_thread(void *arg)
{
    claim_arg *a = (claim_arg *)arg;
    const void *p = NULL;
    size_t n = 0;
    a->s = kcache_get_or_build(a->kc, &keys[a->idx], held_build, &a->idx, &p, &n);
    a->ok = a->s == KCACHE_OK && payload_ok(a->idx, p, n);
    if (p) kcache_release(a->kc, p);
    if (getpid() != claim_parent) _exit(a->ok ? 0 : 1); /* the child of a build that forked */
    return NULL;
}

static void test_fork_keeps_parent_claims(void)
{
    kcache_config cfg;
    kcache *kc;
    char dir[600];
    pthread_t th;
    claim_arg a;
    pid_t pid;
    int r;
    cfg_store(&cfg, dir, sizeof dir, "claims");
    cfg.build_wait_ms = 20000;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK && kcache_dir(kc) != NULL);
    if (!kc || pipe(claim_pipe) != 0) { kcache_close(kc); return; }
    claim_parent = getpid();
    *fork_builds = 0;
    claim_in_build_fork = 0;
    a.kc = kc;
    a.idx = 17;
    pthread_create(&th, NULL, claim_thread, &a);
    while (__atomic_load_n(fork_builds, __ATOMIC_SEQ_CST) == 0) sleep_ms(1); /* the thread holds the claim */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        const void *p = NULL;
        size_t n = 0;
        int idx = 17;
        kcache_status s;
        alarm(20);
        s = kcache_get_or_build(kc, &keys[17], fork_build, &idx, &p, &n); /* waits for the parent's build */
        _exit(s == KCACHE_OK && payload_ok(17, p, n) ? 0 : 1);
    }
    sleep_ms(300); /* the child is waiting on the claim by now */
    KT_CHECK(write(claim_pipe[1], "x", 1) == 1);
    pthread_join(th, NULL);
    KT_CHECK(a.ok);
    r = pid > 0 ? fork_reap(pid) : 3;
    KT_CHECK_MSG(r == 0, "the child of a process holding a build claim: %s",
                 r == 1 ? "got no payload" : r == 2 ? "hung" : "crashed");
    KT_CHECK_MSG(*fork_builds == 1, "the key was built %ld times: a child forked while its parent held the build claim "
                 "took the claim over", *fork_builds);

    /* a build function that forks: the child gets the payload back from kcache_get_or_build */
    claim_in_build_fork = 1;
    a.idx = 18;
    pthread_create(&th, NULL, claim_thread, &a);
    pthread_join(th, NULL);
    KT_CHECK(a.ok);
    r = claim_in_build_fork > 1 ? fork_reap((pid_t)claim_in_build_fork) : 3;
    KT_CHECK_MSG(r == 0, "the child of a build function that forked: %s",
                 r == 1 ? "got no payload" : r == 2 ? "hung" : "crashed");
    close(claim_pipe[0]);
    close(claim_pipe[1]);
    kcache_close(kc);
}

/* ---- every public call on a 32 KiB thread stack ------------------------------------------------
 * Job systems and fibers give work 16-64 KiB of stack. kcache keeps its own frames under 4 KiB
 * (tests/compile_more.sh reads -fstack-usage) and everything bigger on the heap; this runs every
 * public call, down its deep paths (a disk hit, a stamp miss explained, a verify that rebuilds),
 * on a thread with 32 KiB of stack, below which lies 1 MiB of inaccessible memory: a frame that
 * does not fit is a SIGSEGV here (a default guard page is one page: a big frame could jump it). */
#define SMALL_STACK (32 * 1024)

static int small_build(void *user, void **out, size_t *n)
{
    unsigned char *p = (unsigned char *)malloc(100);
    (void)user;
    if (!p) return 1;
    memset(p, 7, 100);
    *out = p;
    *n = 100;
    return 0;
}

typedef struct small_arg { const char *dir; int bad; char why[200]; } small_arg;

static void *small_stack_calls(void *arg)
{
    small_arg *a = (small_arg *)arg;
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_key *k = (kcache_key *)calloc(1, sizeof *k), *k2 = (kcache_key *)calloc(1, sizeof *k2); /* zero: freeable */
    kcache_hash_state *hs = (kcache_hash_state *)malloc(sizeof *hs);
    char *buf = (char *)malloc(4096), path[700], hex[33];
    unsigned char *big = (unsigned char *)malloc(300000);
    const void *p;
    size_t n;
    kcache_stats st;
    FILE *f;
#define SMALL_CHECK(c) do { if (!(c) && !a->bad++) snprintf(a->why, sizeof a->why, "line %d: %s", __LINE__, #c); } while (0)
    if (!k || !k2 || !hs || !buf || !big) { a->bad = 1; goto out; }
    memset(big, 3, 300000);
    snprintf(path, sizeof path, "%s/dep.h", a->dir);
    SMALL_CHECK(kcache_version() != NULL && kcache_strerror(KCACHE_EIO)[0] && kcache_reason_name(KCACHE_REASON_STAMP)[0]);
    kcache_hash_hex(kcache_hash(big, 300000), hex);
    kcache_hash_init(hs);
    kcache_hash_update(hs, big, 300000);
    SMALL_CHECK(kcache_hash_final(hs).lo == kcache_hash(big, 300000).lo);
    kcache_config_defaults(&cfg);
    kcache_config_init(&cfg);
    cfg.dir = a->dir;
    SMALL_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK && kcache_dir(kc) != NULL);
    if (!kc) goto out;
    SMALL_CHECK(kcache_store_in_use(kc, buf, 4096) == 1);
    if ((f = fopen(path, "w")) != NULL) { fwrite(big, 1, 200000, f); fclose(f); }
    kcache_key_init(k, "small");
    kcache_key_str(k, "src", "__kernel void f(void) {}");
    kcache_key_bytes(k, "bin", big, 1000);
    kcache_key_u64(k, "n", 1);
    SMALL_CHECK(kcache_key_file(k, "dep", path) == KCACHE_OK);
    SMALL_CHECK(kcache_key_library(k, "libc", (const void *)stderr) == KCACHE_OK);
    SMALL_CHECK(kcache_key_host(k) == KCACHE_OK);
    kcache_key_digest(k);
    SMALL_CHECK(kcache_put(kc, k, big, 5000) == KCACHE_OK);
    SMALL_CHECK(kcache_get(kc, k, &p, &n) == KCACHE_OK && n == 5000);
    if (n == 5000) kcache_release(kc, p);
    SMALL_CHECK(kcache_explain(kc, k, buf, 4096) > 0 && strncmp(buf, "hit", 3) == 0);
    kcache_close(kc); /* a disk hit next */
    SMALL_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) goto out;
    SMALL_CHECK(kcache_get(kc, k, &p, &n) == KCACHE_OK && n == 5000);
    if (n == 5000) kcache_release(kc, p);
    kcache_key_init(k2, "small"); /* another overload: explained by the field that differs */
    kcache_key_str(k2, "src", "__kernel void g(void) {}");
    kcache_key_host_from(k2, kc);
    SMALL_CHECK(kcache_get(kc, k2, &p, &n) == KCACHE_MISS);
#ifndef KCACHE_NO_EXPLAIN
    SMALL_CHECK(kcache_explain(kc, k2, buf, 4096) > 0 && strstr(buf, "field") != NULL);
#else /* no index names the field that differs */
    SMALL_CHECK(kcache_explain(kc, k2, buf, 4096) > 0 && strstr(buf, "miss") != NULL);
#endif
    SMALL_CHECK(kcache_get_or_build(kc, k2, small_build, NULL, &p, &n) == KCACHE_OK && n == 100);
    if (n == 100) kcache_release(kc, p);
    if ((f = fopen(path, "w")) != NULL) { fwrite(big, 1, 100000, f); fclose(f); } /* the dependency changes */
    kcache_key_free(k);
    kcache_key_init(k, "small");
    kcache_key_str(k, "src", "__kernel void f(void) {}");
    kcache_key_bytes(k, "bin", big, 1000);
    kcache_key_u64(k, "n", 1);
    kcache_key_file(k, "dep", path);
    kcache_key_library(k, "libc", (const void *)stderr);
    kcache_key_host(k);
    SMALL_CHECK(kcache_explain(kc, k, buf, 4096) > 0 && strstr(buf, "dependency") != NULL);
    SMALL_CHECK(kcache_get(kc, k, &p, &n) == KCACHE_MISS);
    SMALL_CHECK(kcache_explain(kc, k, buf, 4096) > 0);
    SMALL_CHECK(kcache_remove(kc, k2) == KCACHE_OK);
    kcache_get_stats(kc, &st);
    SMALL_CHECK(st.puts >= 1);
    SMALL_CHECK(kcache_verify(kc, 1) == KCACHE_OK);
    kcache_close(kc);
out:
    if (k) kcache_key_free(k);
    if (k2) kcache_key_free(k2);
    free(k);
    free(k2);
    free(hs);
    free(buf);
    free(big);
    return NULL;
#undef SMALL_CHECK
}

static void test_small_stack(void)
{
    pthread_attr_t at;
    pthread_t th;
    small_arg a;
    char dir[600];
    size_t stack = SMALL_STACK, guard = (size_t)1 << 20;
    unsigned char *mem;
#ifdef PTHREAD_STACK_MIN
    if (stack < (size_t)PTHREAD_STACK_MIN) { /* glibc on aarch64 (64 KiB pages) allows no less than 128 KiB */
        printf("# small_stack: %zu KiB, the least this system's threads may have\n", (size_t)PTHREAD_STACK_MIN / 1024);
        stack = (size_t)PTHREAD_STACK_MIN;
    }
#endif
    /* sanitizers widen every frame (ASan's redzones) and want room of their own on each thread
       (TSan): the instrumented builds get 512 KiB; the claim is the plain build's */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    stack = (size_t)512 << 10;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    stack = (size_t)512 << 10;
#endif
#endif
    snprintf(dir, sizeof dir, "%s/small", tmproot);
    memset(&a, 0, sizeof a);
    a.dir = dir;
    mem = (unsigned char *)mmap(NULL, guard + stack, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) { KT_FAILF("mmap: %s", strerror(errno)); return; }
    KT_CHECK(mprotect(mem + guard, stack, PROT_READ | PROT_WRITE) == 0);
    pthread_attr_init(&at);
    KT_CHECK(pthread_attr_setstack(&at, mem + guard, stack) == 0);
    KT_CHECK(pthread_create(&th, &at, small_stack_calls, &a) == 0);
    pthread_join(th, NULL);
    pthread_attr_destroy(&at);
    munmap(mem, guard + stack);
    KT_CHECK_MSG(a.bad == 0, "on a %zu KiB stack: %d checks failed, first %s", stack / 1024, a.bad, a.why);
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    clear_env();
    snprintf(tmproot, sizeof tmproot, "%s/kcache-test-threads-XXXXXX", t && t[0] == '/' ? t : "/tmp");
    if (!mkdtemp(tmproot)) { perror("mkdtemp"); return 2; }
    setup_keys();
    KT_RUN(test_hammer_memory);
    KT_RUN(test_hammer_store);
    KT_RUN(test_hammer_store_write_evict);
    KT_RUN(test_single_flight_memory);
    KT_RUN(test_single_flight_store);
    KT_RUN(test_read_your_writes_store);
    KT_RUN(test_store_read_vs_put_remove);
    KT_RUN(test_two_handles_accounting);
    KT_RUN(test_small_stack);
    fork_builds = (long *)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (fork_builds == MAP_FAILED) { printf("FAIL setup: mmap: %s\n", strerror(errno)); return 1; }
    KT_RUN(test_fork_under_load);
    KT_RUN(test_fork_ghost_locks);
    KT_RUN(test_fork_keeps_parent_claims);
    free_keys();
    rm_tree(tmproot);
    KT_EXIT();
}

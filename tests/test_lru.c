/* tests/test_lru.c - the cache in memory-only mode (cfg.persistent = 0) and its configuration:
 * round trips, zero copy, capacity by entries and by bytes, LRU order, payloads held across
 * eviction / replacement / removal, enable=0, exact stats, kcache_explain word by word, the
 * environment variables, NULL arguments, kcache_get_or_build, status and reason names.
 *
 * Build: make build/test_lru build/asan/test_lru; also runs under valgrind (leak-check=full).
 * Never touches a real cache directory: every cache here is memory only. */
/* KCACHE_MALLOC counted (test_allocator_memory_only). Declared, not included: kcache.h comes
   before any system header (<stddef.h> is the compiler's own). */
#include <stddef.h>
void *malloc(size_t n);
void *realloc(void *p, size_t n);
void free(void *p);
static int kt_macro_counting;
static long kt_macro_allocs;
static int kt_macro_line; /* kcache.h's line of the first one counted: what the message names */
static void kt_macro_count(int line) {
    if (kt_macro_counting && kt_macro_allocs++ == 0) kt_macro_line = line;
}
static void *kt_macro_malloc(size_t n, int line) { kt_macro_count(line); return malloc(n); }
void *kt_macro_realloc(void *p, size_t n, int line); /* (not static: the core build may not use it) */
void *kt_macro_realloc(void *p, size_t n, int line) { kt_macro_count(line); return realloc(p, n); }
#define KCACHE_MALLOC(n) kt_macro_malloc(n, __LINE__)
#define KCACHE_REALLOC(p, n) kt_macro_realloc(p, n, __LINE__)
#define KCACHE_FREE(p) free(p)
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <time.h>
#include <sys/stat.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static const char *const env_vars[] = {
    "KCACHE_DIR", "KCACHE_MAX_SIZE", "KCACHE_MEM_ENTRIES", "KCACHE_MEM_SIZE", "KCACHE_ENABLE",
    "KCACHE_PERSISTENT", "KCACHE_DEBUG", "KCACHE_TRACE", "KCACHE_CPU_NAME", "KCACHE_CPU_FEATURES",
    "KCACHE_FSYNC", "KCACHE_WRITE", "KCACHE_BUILD_WAIT", "KCACHE_STAMP", NULL};

static void clear_env(void)
{
    int i;
    for (i = 0; env_vars[i]; i++) unsetenv(env_vars[i]);
}

static kcache *open_mem(uint32_t entries, uint64_t bytes)
{
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.mem_entries = entries;
    cfg.mem_size = bytes;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) {
        printf("FAIL setup: kcache_open\n");
        exit(1);
    }
    return kc;
}

/* Key i of a unit: one str field "src" = "kernel <i>" and one u64 "opt". */
static void mk(kcache_key *k, const char *unit, int i)
{
    char src[64];
    snprintf(src, sizeof src, "kernel %d", i);
    kcache_key_init(k, unit);
    kcache_key_str(k, "src", src);
    kcache_key_u64(k, "opt", 2);
}

/* Payload i: `len` bytes of a pattern that names i. */
static void pattern(unsigned char *p, size_t len, int i)
{
    size_t j;
    for (j = 0; j < len; j++) p[j] = (unsigned char)(i * 31 + j * 7 + (j >> 8));
}

static int put_n(kcache *kc, const char *unit, int i, size_t len)
{
    kcache_key k;
    unsigned char *p = (unsigned char *)malloc(len ? len : 1);
    kcache_status s;
    pattern(p, len, i);
    mk(&k, unit, i);
    s = kcache_put(kc, &k, p, len);
    kcache_key_free(&k);
    free(p);
    return s == KCACHE_OK;
}

/* The memory an entry of key i holds beyond its payload (node, key record, blob header): what
   KCACHE_MEM_SIZE and mem_bytes count besides the payload bytes. */
static uint64_t ovh(const char *unit, int i)
{
    kcache *kc = open_mem(4, 0);
    kcache_stats st;
    put_n(kc, unit, i, 0);
    kcache_get_stats(kc, &st);
    kcache_close(kc);
    return st.mem_bytes;
}

/* 1 when key i of the unit hits with the right payload, 0 when it misses, -1 when it is wrong. */
static int has(kcache *kc, const char *unit, int i, size_t len)
{
    kcache_key k;
    const void *p;
    size_t n;
    kcache_status s;
    int r = 0;
    mk(&k, unit, i);
    s = kcache_get(kc, &k, &p, &n);
    if (s == KCACHE_OK) {
        unsigned char *want = (unsigned char *)malloc(len ? len : 1);
        pattern(want, len, i);
        r = (n == len && memcmp(p, want, len) == 0) ? 1 : -1;
        free(want);
        kcache_release(kc, p);
    } else if (s != KCACHE_MISS) r = -1;
    kcache_key_free(&k);
    return r;
}

static size_t explain(kcache *kc, const kcache_key *k, char *buf, size_t cap)
{
    size_t n = kcache_explain(kc, k, buf, cap);
    return n;
}

/* ---- round trips -------------------------------------------------------------------------- */

static void test_roundtrip(void)
{
    kcache *kc = open_mem(16, 0);
    kcache_key k;
    const void *p, *q;
    size_t n, m;
    static const char msg[] = "compiled kernel bytes";
    KT_CHECK(kcache_dir(kc) == NULL);
    mk(&k, "rt", 1);
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS);
    KT_CHECK(p == NULL && n == 0);
    KT_CHECK(kcache_put(kc, &k, msg, sizeof msg) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK);
    KT_CHECK(n == sizeof msg && p && memcmp(p, msg, sizeof msg) == 0);
    KT_CHECK(p != (const void *)msg); /* copied at put */
    /* zero copy: a second get hands out the same bytes, 16-byte aligned */
    KT_CHECK(kcache_get(kc, &k, &q, &m) == KCACHE_OK);
    KT_CHECK(p == q && m == n);
    KT_CHECK(((uintptr_t)p & 15) == 0);
    kcache_release(kc, p);
    kcache_release(kc, q);
    kcache_key_free(&k);
    /* alignment for every size around the boundaries, including empty */
    {
        size_t sizes[] = {0, 1, 15, 16, 17, 31, 32, 33, 4095, 4096, 100000};
        size_t i;
        for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            KT_CHECK(put_n(kc, "align", (int)i, sizes[i]));
            mk(&k, "align", (int)i);
            if (kcache_get(kc, &k, &p, &n) == KCACHE_OK) {
                KT_CHECK_MSG(((uintptr_t)p & 15) == 0, "size %zu not aligned", sizes[i]);
                KT_CHECK_EQ_U64(n, sizes[i]);
                kcache_release(kc, p);
            } else KT_FAILF("size %zu: no hit", sizes[i]);
            kcache_key_free(&k);
        }
    }
    /* a NULL payload of 0 bytes is an empty payload */
    mk(&k, "empty", 0);
    KT_CHECK(kcache_put(kc, &k, NULL, 0) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK);
    KT_CHECK(n == 0 && p != NULL);
    if (p) kcache_release(kc, p);
    kcache_key_free(&k);
    kcache_close(kc);
}

/* ---- capacity ------------------------------------------------------------------------------ */

static void test_capacity_entries(void)
{
    kcache *kc = open_mem(4, 0);
    kcache_stats st;
    int i;
    for (i = 0; i < 4; i++) KT_CHECK(put_n(kc, "cap", i, 100));
    for (i = 0; i < 4; i++) KT_CHECK(has(kc, "cap", i, 100) == 1); /* order now 3 2 1 0 (0 oldest) */
    KT_CHECK(has(kc, "cap", 0, 100) == 1);                          /* a get refreshes: 0 newest, 1 oldest */
    KT_CHECK(put_n(kc, "cap", 4, 100));                              /* evicts 1 */
    KT_CHECK(has(kc, "cap", 1, 100) == 0);
    KT_CHECK(has(kc, "cap", 0, 100) == 1);
    KT_CHECK(has(kc, "cap", 2, 100) == 1);
    KT_CHECK(has(kc, "cap", 3, 100) == 1);
    KT_CHECK(has(kc, "cap", 4, 100) == 1);
    /* order now 4 3 2 0; put 5, 6 evicts 0 then 2 */
    KT_CHECK(put_n(kc, "cap", 5, 100));
    KT_CHECK(put_n(kc, "cap", 6, 100));
    KT_CHECK(has(kc, "cap", 0, 100) == 0);
    KT_CHECK(has(kc, "cap", 2, 100) == 0);
    for (i = 3; i <= 6; i++) KT_CHECK(has(kc, "cap", i, 100) == 1);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.mem_entries, 4);
    KT_CHECK_EQ_U64(st.mem_bytes, 400 + ovh("cap", 3) + ovh("cap", 4) + ovh("cap", 5) + ovh("cap", 6));
    KT_CHECK_EQ_U64(st.mem_evictions, 3);
    /* a flood: exactly the last four survive */
    for (i = 100; i < 300; i++) KT_CHECK(put_n(kc, "cap", i, (size_t)i));
    for (i = 100; i < 296; i++) KT_CHECK(has(kc, "cap", i, (size_t)i) == 0);
    for (i = 296; i < 300; i++) KT_CHECK(has(kc, "cap", i, (size_t)i) == 1);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.mem_entries, 4);
    KT_CHECK_EQ_U64(st.mem_bytes, 296 + 297 + 298 + 299 + 4 * ovh("cap", 296));
    kcache_close(kc);

    /* mem_entries 0 is taken as 1 */
    kc = open_mem(0, 0);
    KT_CHECK(put_n(kc, "one", 1, 10));
    KT_CHECK(put_n(kc, "one", 2, 10));
    KT_CHECK(has(kc, "one", 1, 10) == 0);
    KT_CHECK(has(kc, "one", 2, 10) == 1);
    kcache_close(kc);
}

static void test_capacity_bytes(void)
{
    /* every key here has the same record: each entry holds its payload and o bytes more, and the
       limit leaves room for three entries' o */
    uint64_t o = ovh("bytes", 0);
    kcache *kc = open_mem(100, 1000 + 3 * o);
    kcache_stats st;
    int i;
    KT_CHECK(o > 0 && o < 1000);
    for (i = 0; i < 3; i++) KT_CHECK(put_n(kc, "bytes", i, 300));
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.mem_entries, 3);
    KT_CHECK_EQ_U64(st.mem_bytes, 900 + 3 * o);
    KT_CHECK(has(kc, "bytes", 0, 300) == 1); /* order 0 2 1 */
    KT_CHECK(put_n(kc, "bytes", 3, 300));     /* 1200 + 4o > 1000 + 3o: evicts 1 */
    KT_CHECK(has(kc, "bytes", 1, 300) == 0);
    KT_CHECK(has(kc, "bytes", 0, 300) == 1);
    KT_CHECK(has(kc, "bytes", 2, 300) == 1);
    KT_CHECK(has(kc, "bytes", 3, 300) == 1);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.mem_bytes, 900 + 3 * o);
    KT_CHECK_EQ_U64(st.mem_evictions, 1);
    /* order 3 2 0; a 700-byte entry must push out 0 and 2 (300+300+300+700 > 1000, 300+700 = 1000) */
    KT_CHECK(put_n(kc, "bytes", 4, 700));
    KT_CHECK(has(kc, "bytes", 0, 300) == 0);
    KT_CHECK(has(kc, "bytes", 2, 300) == 0);
    KT_CHECK(has(kc, "bytes", 3, 300) == 1);
    KT_CHECK(has(kc, "bytes", 4, 700) == 1);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.mem_bytes, 1000 + 2 * o);
    KT_CHECK_EQ_U64(st.mem_entries, 2);
    /* one entry over the whole limit (a hard cap, issue 24): never kept, so in a memory-only cache
       it is cached nowhere (KCACHE_ETOOBIG); it pushes nothing out */
    {
        kcache_key k;
        unsigned char *p = (unsigned char *)malloc(5000);
        pattern(p, 5000, 5);
        mk(&k, "bytes", 5);
        KT_CHECK(kcache_put(kc, &k, p, 5000) == KCACHE_ETOOBIG);
        kcache_key_free(&k);
        free(p);
    }
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.mem_bytes, 1000 + 2 * o);
    KT_CHECK(has(kc, "bytes", 5, 5000) == 0);
    KT_CHECK(has(kc, "bytes", 3, 300) == 1);
    KT_CHECK(has(kc, "bytes", 4, 700) == 1);
    /* and a key that held a small entry, put again over the limit: the small one goes too */
    KT_CHECK(put_n(kc, "bytes", 6, 100));
    KT_CHECK(has(kc, "bytes", 6, 100) == 1);
    {
        kcache_key k;
        unsigned char *p = (unsigned char *)malloc(5000);
        pattern(p, 5000, 6);
        mk(&k, "bytes", 6);
        KT_CHECK(kcache_put(kc, &k, p, 5000) == KCACHE_ETOOBIG);
        kcache_key_free(&k);
        free(p);
    }
    KT_CHECK(has(kc, "bytes", 6, 100) == 0);
    KT_CHECK(has(kc, "bytes", 6, 5000) == 0);
    kcache_close(kc);
}

/* Empty payloads still hold memory (issue 16 found 2 M of them taking 795 MB with mem_bytes 0):
   KCACHE_MEM_SIZE bounds what the entries hold, not only their payloads. */
static void test_capacity_empty_payloads(void)
{
    kcache *kc = open_mem(1u << 24, 1u << 20);
    kcache_stats st;
    int i;
    for (i = 0; i < 20000; i++) KT_CHECK(put_n(kc, "empty", i, 0));
    kcache_get_stats(kc, &st);
    KT_CHECK_MSG(st.mem_bytes > 0 && st.mem_bytes <= (1u << 20), "20000 empty payloads: mem_bytes %llu", (unsigned long long)st.mem_bytes);
    KT_CHECK_MSG(st.mem_entries < 20000 && st.mem_entries > 1000, "20000 empty payloads under 1 MiB: %llu entries kept",
                 (unsigned long long)st.mem_entries);
    KT_CHECK(has(kc, "empty", 19999, 0) == 1);
    KT_CHECK(has(kc, "empty", 0, 0) == 0);
    kcache_close(kc);
}

/* ---- payloads held by callers ------------------------------------------------------------- */

static void test_held_payloads(void)
{
    kcache *kc = open_mem(2, 0);
    kcache_key k;
    const void *held, *p2;
    size_t n, n2;
    unsigned char want[5000];
    int i;

    /* evicted while held */
    KT_CHECK(put_n(kc, "held", 0, sizeof want));
    mk(&k, "held", 0);
    KT_CHECK(kcache_get(kc, &k, &held, &n) == KCACHE_OK);
    for (i = 1; i <= 5; i++) KT_CHECK(put_n(kc, "held", i, 3000)); /* 0 is long gone */
    KT_CHECK(has(kc, "held", 0, sizeof want) == 0);
    pattern(want, sizeof want, 0);
    KT_CHECK(held && n == sizeof want && memcmp(held, want, n) == 0);
    kcache_release(kc, held);
    kcache_key_free(&k);

    /* replaced while held: the holder keeps the old bytes, a new get sees the new ones */
    mk(&k, "held", 9);
    KT_CHECK(kcache_put(kc, &k, "old payload", 11) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &k, &held, &n) == KCACHE_OK);
    KT_CHECK(kcache_put(kc, &k, "new payload!", 12) == KCACHE_OK); /* put replaces */
    KT_CHECK(kcache_get(kc, &k, &p2, &n2) == KCACHE_OK);
    KT_CHECK(n2 == 12 && p2 && memcmp(p2, "new payload!", 12) == 0);
    KT_CHECK(n == 11 && held && memcmp(held, "old payload", 11) == 0);
    KT_CHECK(held != p2);
    kcache_release(kc, p2);
    /* removed while held */
    KT_CHECK(kcache_get(kc, &k, &p2, &n2) == KCACHE_OK);
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_OK);
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_MISS);
    KT_CHECK(memcmp(p2, "new payload!", 12) == 0); /* still valid after the remove */
    kcache_release(kc, p2);
    KT_CHECK(kcache_get(kc, &k, &p2, &n2) == KCACHE_MISS);
    KT_CHECK(memcmp(held, "old payload", 11) == 0);
    kcache_release(kc, held);
    kcache_key_free(&k);

    /* held across close is not allowed by the contract; held across many gets and puts is */
    mk(&k, "held", 20);
    KT_CHECK(kcache_put(kc, &k, "x", 1) == KCACHE_OK);
    {
        const void *ps[10];
        for (i = 0; i < 10; i++) KT_CHECK(kcache_get(kc, &k, &ps[i], &n) == KCACHE_OK);
        for (i = 0; i < 10; i++) KT_CHECK(ps[i] == ps[0]);
        for (i = 0; i < 10; i++) kcache_release(kc, ps[i]);
    }
    kcache_key_free(&k);
    kcache_close(kc);
}

static void test_put_replace_remove(void)
{
    kcache *kc = open_mem(8, 0);
    kcache_key k;
    const void *p;
    size_t n;
    kcache_stats st;
    mk(&k, "rep", 1);
    KT_CHECK(kcache_put(kc, &k, "aaaa", 4) == KCACHE_OK);
    KT_CHECK(kcache_put(kc, &k, "bbbbbb", 6) == KCACHE_OK);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.mem_entries, 1);
    KT_CHECK_EQ_U64(st.mem_bytes, 6 + ovh("rep", 1));
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK);
    KT_CHECK(n == 6 && memcmp(p, "bbbbbb", 6) == 0);
    kcache_release(kc, p);
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_OK);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.mem_entries, 0);
    KT_CHECK_EQ_U64(st.mem_bytes, 0);
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS);
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_MISS);
    KT_CHECK(kcache_put(kc, &k, "cc", 2) == KCACHE_OK); /* stored again after a remove */
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK);
    KT_CHECK(n == 2 && memcmp(p, "cc", 2) == 0);
    kcache_release(kc, p);
    kcache_key_free(&k);
    kcache_close(kc);
}

static void test_disabled(void)
{
    kcache_config cfg;
    kcache *kc;
    kcache_key k;
    const void *p;
    size_t n;
    char buf[256];
    kcache_stats st;
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.enable = 0;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    mk(&k, "off", 1);
    KT_CHECK(kcache_put(kc, &k, "abc", 3) == KCACHE_EDISABLED);
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS);
    KT_CHECK(p == NULL && n == 0);
    explain(kc, &k, buf, sizeof buf);
    KT_CHECK_STR(buf, "miss: caching off (KCACHE_ENABLE=0)");
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.misses, 1);
    KT_CHECK_EQ_U64(st.misses_by_reason[KCACHE_REASON_OFF], 1);
    KT_CHECK_EQ_U64(st.puts, 0);
    KT_CHECK_EQ_U64(st.mem_entries, 0);
    kcache_key_free(&k);
    kcache_close(kc);
}

/* ---- stats --------------------------------------------------------------------------------- */

static void test_stats_exact(void)
{
    kcache *kc = open_mem(3, 0);
    kcache_stats st;
    kcache_key k;
    const void *p;
    size_t n;
    int r;
    kcache_get_stats(kc, &st);
    KT_CHECK(st.hits_mem == 0 && st.hits_disk == 0 && st.misses == 0 && st.puts == 0 && st.mem_entries == 0);
    KT_CHECK(put_n(kc, "st", 0, 10));  /* A */
    KT_CHECK(put_n(kc, "st", 1, 20));  /* B */
    KT_CHECK(put_n(kc, "st", 2, 30));  /* C */
    KT_CHECK(has(kc, "st", 0, 10) == 1); /* hit A: order A C B */
    KT_CHECK(put_n(kc, "st", 3, 40));  /* D evicts B */
    KT_CHECK(has(kc, "st", 1, 20) == 0); /* miss: evicted */
    KT_CHECK(has(kc, "cold", 7, 5) == 0); /* miss: cold */
    mk(&k, "st", 0);
    kcache_key_str(&k, "extra", "x");   /* same unit, another field set */
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS); /* miss: field */
    kcache_key_free(&k);
    KT_CHECK(has(kc, "st", 2, 30) == 1); /* hit C */
    mk(&k, "st", 3);
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_OK);
    kcache_key_free(&k);
    r = has(kc, "st", 3, 40);            /* miss (removed) */
    KT_CHECK(r == 0);
    KT_CHECK(put_n(kc, "st", 0, 15));    /* replace A */
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_mem, 2);
    KT_CHECK_EQ_U64(st.hits_disk, 0);
    KT_CHECK_EQ_U64(st.misses, 4);
    KT_CHECK_EQ_U64(st.misses_by_reason[KCACHE_REASON_HIT], 0);
    KT_CHECK_EQ_U64(st.misses_by_reason[KCACHE_REASON_EVICTED], 1);
    KT_CHECK_EQ_U64(st.misses_by_reason[KCACHE_REASON_COLD] + st.misses_by_reason[KCACHE_REASON_FIELD], 3);
    KT_CHECK(st.misses_by_reason[KCACHE_REASON_COLD] >= 1);
    KT_CHECK(st.misses_by_reason[KCACHE_REASON_FIELD] >= 1);
    KT_CHECK_EQ_U64(st.misses_by_reason[KCACHE_REASON_OFF], 0);
    KT_CHECK_EQ_U64(st.puts, 5);
    KT_CHECK_EQ_U64(st.bytes_written, 10 + 20 + 30 + 40 + 15);
    KT_CHECK_EQ_U64(st.bytes_read, 10 + 30);
    KT_CHECK_EQ_U64(st.mem_entries, 2);
    KT_CHECK_EQ_U64(st.mem_bytes, 15 + 30 + ovh("st", 0) + ovh("st", 2));
    KT_CHECK_EQ_U64(st.mem_evictions, 1);
    KT_CHECK_EQ_U64(st.evictions, 1);
    KT_CHECK_EQ_U64(st.rejects, 0);
    KT_CHECK_EQ_U64(st.disk_entries, 0);
    KT_CHECK_EQ_U64(st.disk_bytes, 0);
    KT_CHECK_EQ_U64(st.builds, 0);
    KT_CHECK_EQ_U64(st.store_errors, 0);
    {
        uint64_t sum = 0;
        int i;
        for (i = 0; i < KCACHE_REASON_COUNT; i++) sum += st.misses_by_reason[i];
        KT_CHECK_EQ_U64(sum, st.misses);
    }
    kcache_close(kc);
}

/* ---- explain -------------------------------------------------------------------------------- */

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static void test_explain(void)
{
    kcache *kc = open_mem(2, 0);
    kcache_key k, k2;
    char buf[1024], small[10];
    size_t n, full;
    const void *p;
    size_t len;

    /* cold */
    mk(&k, "X", 1);
    n = explain(kc, &k, buf, sizeof buf);
    KT_CHECK_MSG(starts(buf, "miss: cold: unit \"X\" never stored"), "cold: %s", buf);
    KT_CHECK_EQ_U64(n, strlen(buf));
    KT_CHECK(kcache_get(kc, &k, &p, &len) == KCACHE_MISS);

    /* hit */
    KT_CHECK(kcache_put(kc, &k, "0123456789", 10) == KCACHE_OK);
    explain(kc, &k, buf, sizeof buf);
    KT_CHECK_MSG(starts(buf, "hit: memory"), "hit: %s", buf);
    KT_CHECK_MSG(strstr(buf, "\"X\"") && strstr(buf, "10 bytes"), "hit: %s", buf);

    /* snprintf rules: truncated, terminated, full length returned */
    full = kcache_explain(kc, &k, NULL, 0);
    KT_CHECK_EQ_U64(full, strlen(buf));
    memset(small, '#', sizeof small);
    n = kcache_explain(kc, &k, small, sizeof small);
    KT_CHECK_EQ_U64(n, full);
    KT_CHECK(small[sizeof small - 1] == 0 && strlen(small) == sizeof small - 1 && strncmp(small, buf, 9) == 0);
    small[0] = '#';
    KT_CHECK_EQ_U64(kcache_explain(kc, &k, small, 1), full);
    KT_CHECK(small[0] == 0);

    /* a field differs: names the field, both previews */
    kcache_key_init(&k2, "X");
    kcache_key_str(&k2, "src", "kernel 2");
    kcache_key_u64(&k2, "opt", 2);
    explain(kc, &k2, buf, sizeof buf);
    KT_CHECK_MSG(starts(buf, "miss: a field differs"), "field: %s", buf);
    KT_CHECK_MSG(strstr(buf, "src: \"kernel 1\" (stored) vs \"kernel 2\" (now)") != NULL, "field: %s", buf);
    KT_CHECK_MSG(strstr(buf, "opt") == NULL, "field: an equal field is named: %s", buf);
    KT_CHECK(kcache_get(kc, &k2, &p, &len) == KCACHE_MISS);
    kcache_key_free(&k2);
    /* a field only in the key now */
    mk(&k2, "X", 1);
    kcache_key_str(&k2, "defines", "-DN=4");
    explain(kc, &k2, buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "defines: absent (stored) vs \"-DN=4\" (now)") != NULL, "absent: %s", buf);
    kcache_key_free(&k2);
    /* a field only in the stored key */
    kcache_key_init(&k2, "X");
    kcache_key_str(&k2, "src", "kernel 1");
    explain(kc, &k2, buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "opt: \"2\" (stored) vs absent (now)") != NULL, "absent: %s", buf);
    kcache_key_free(&k2);
    /* the same type changed: u64 3 against 2 */
    kcache_key_init(&k2, "X");
    kcache_key_str(&k2, "src", "kernel 1");
    kcache_key_u64(&k2, "opt", 3);
    explain(kc, &k2, buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "opt: \"2\" (stored) vs \"3\" (now)") != NULL, "u64: %s", buf);
    KT_CHECK_MSG(strstr(buf, "src") == NULL, "u64: %s", buf);
    kcache_key_free(&k2);
    /* long values that share their first 64 bytes: the digests tell them apart */
    {
        char a[200], b[200];
        kcache_key k3;
        memset(a, 'q', 150); a[150] = 0;
        memcpy(b, a, sizeof a); b[149] = 'r';
        kcache_key_init(&k3, "L");
        kcache_key_str(&k3, "src", a);
        KT_CHECK(kcache_put(kc, &k3, "z", 1) == KCACHE_OK);
        kcache_key_init(&k2, "L");
        kcache_key_str(&k2, "src", b);
        explain(kc, &k2, buf, sizeof buf);
        KT_CHECK_MSG(strstr(buf, "src: ") && strstr(buf, "(stored) vs") && strstr(buf, "(now)"), "long: %s", buf);
        KT_CHECK_MSG(strstr(buf, "xxh128") != NULL, "long: %s", buf);
        kcache_key_free(&k2);
        kcache_key_free(&k3);
    }

    /* evicted: two more units push X out (capacity 2) */
    KT_CHECK(put_n(kc, "Y", 1, 5));
    KT_CHECK(put_n(kc, "Z", 1, 5));
    explain(kc, &k, buf, sizeof buf);
    KT_CHECK_MSG(starts(buf, "miss: evicted by the size limit"), "evicted: %s", buf);
    KT_CHECK_MSG(strstr(buf, "dropped from memory") != NULL, "evicted: %s", buf);
    KT_CHECK(kcache_get(kc, &k, &p, &len) == KCACHE_MISS);
    {
        kcache_stats st;
        kcache_get_stats(kc, &st);
        KT_CHECK(st.misses_by_reason[KCACHE_REASON_EVICTED] >= 1);
    }

    /* an incomplete key */
    kcache_key_init(&k2, "X");
    kcache_key_str(&k2, "src", "kernel 1");
    kcache_key_str(&k2, "src", "kernel 1");
    explain(kc, &k2, buf, sizeof buf);
    KT_CHECK_MSG(starts(buf, "miss: the key of unit \"X\" is incomplete"), "incomplete: %s", buf);
    KT_CHECK_MSG(strstr(buf, kcache_strerror(KCACHE_EEXIST)) && strstr(buf, "never matches"), "incomplete: %s", buf);
    kcache_key_free(&k2);

    /* invalid arguments */
    explain(NULL, &k, buf, sizeof buf);
    KT_CHECK(starts(buf, "miss: "));
    explain(kc, NULL, buf, sizeof buf);
    KT_CHECK(starts(buf, "miss: "));
    kcache_key_free(&k);
    kcache_close(kc);
}

/* Every miss gets its debug line, a key that could not be built completely too: a dependency
   file that does not exist is a dependency that changed, named in the line, the explanation and
   the stats; a key with another error is logged with that error. */
typedef struct log_capture { char lines[8][512]; int n; } log_capture;
static void capture_line(void *user, const char *line)
{
    log_capture *c = (log_capture *)user;
    if (c->n < 8) snprintf(c->lines[c->n++], sizeof c->lines[0], "%s", line);
}

static void test_incomplete_key_logged(void)
{
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_key k;
    kcache_stats st;
    log_capture cap;
    const void *p;
    size_t len;
    char buf[512];
    memset(&cap, 0, sizeof cap);
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.debug = 1;
    cfg.log = capture_line;
    cfg.log_user = &cap;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    cap.n = 0; /* what opening said */

    kcache_key_init(&k, "blur");
    kcache_key_str(&k, "src", "kernel");
    KT_CHECK(kcache_key_file(&k, "header", "/nonexistent/kcache-test/blur.h") == KCACHE_ENOENT);
    KT_CHECK(kcache_get(kc, &k, &p, &len) == KCACHE_ENOENT);
    KT_CHECK_MSG(cap.n == 1 && strstr(cap.lines[0], "miss blur: a dependency is missing: file header") &&
                     strstr(cap.lines[0], "blur.h") && strstr(cap.lines[0], "does not exist") && !strstr(cap.lines[0], "relative"),
                 "%d lines: %s", cap.n, cap.lines[0]);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.misses, 1);
    KT_CHECK_EQ_U64(st.misses_by_reason[KCACHE_REASON_STAMP], 1);
    explain(kc, &k, buf, sizeof buf);
    KT_CHECK_MSG(starts(buf, "miss: a dependency is missing: file header (") && strstr(buf, "blur.h) does not exist"),
                 "explain: %s", buf);
    kcache_key_free(&k);

    kcache_key_init(&k, "twice");
    kcache_key_str(&k, "src", "a");
    kcache_key_str(&k, "src", "b");
    cap.n = 0;
    KT_CHECK(kcache_get(kc, &k, &p, &len) == KCACHE_EEXIST);
    KT_CHECK_MSG(cap.n == 1 && strstr(cap.lines[0], "miss twice: the key is incomplete") &&
                     strstr(cap.lines[0], kcache_strerror(KCACHE_EEXIST)),
                 "%d lines: %s", cap.n, cap.lines[0]);
    kcache_key_free(&k);
    kcache_close(kc);
}

/* A key evicted once, stored again, then removed by the caller: its miss is not an eviction. */
static void test_explain_after_remove(void)
{
    kcache *kc = open_mem(1, 0);
    kcache_key k;
    char buf[512];
    const void *p;
    size_t n;
    kcache_stats st;
    mk(&k, "R", 1);
    KT_CHECK(kcache_put(kc, &k, "x", 1) == KCACHE_OK);
    KT_CHECK(put_n(kc, "S", 1, 5)); /* evicts R/1 */
    explain(kc, &k, buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "evicted") != NULL, "evicted: %s", buf);
    KT_CHECK(kcache_put(kc, &k, "x", 1) == KCACHE_OK); /* stored again */
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_OK);      /* and removed by the caller */
    explain(kc, &k, buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "evicted") == NULL,
                 "after put + remove the miss is still blamed on an older eviction: %s", buf);
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS);
    kcache_get_stats(kc, &st);
    KT_CHECK_MSG(st.misses_by_reason[KCACHE_REASON_EVICTED] == 0, "misses counted as evicted: %llu",
                 (unsigned long long)st.misses_by_reason[KCACHE_REASON_EVICTED]);
    kcache_key_free(&k);
    kcache_close(kc);
}

/* ---- configuration from the environment ---------------------------------------------------- */

static void check_defaults(const kcache_config *c, const char *why)
{
    KT_CHECK_MSG(c->dir == NULL, "%s: dir", why);
    KT_CHECK_MSG(c->max_size == (uint64_t)1 << 30, "%s: max_size %llu", why, (unsigned long long)c->max_size);
    KT_CHECK_MSG(c->mem_entries == 1024, "%s: mem_entries %u", why, c->mem_entries);
    KT_CHECK_MSG(c->mem_size == (uint64_t)256 << 20, "%s: mem_size", why);
    KT_CHECK_MSG(c->enable == 1 && c->persistent == 1 && c->debug == 0 && c->trace == 0 && c->fsync == 0, "%s: flags",
                 why);
    KT_CHECK_MSG(c->write_policy == KCACHE_WRITE_THROUGH, "%s: write", why);
    KT_CHECK_MSG(c->stamp == KCACHE_STAMP_HYBRID, "%s: stamp", why);
    KT_CHECK_MSG(c->build_wait_ms == 300000, "%s: build_wait_ms %u", why, c->build_wait_ms);
    KT_CHECK_MSG(c->log == NULL && c->log_user == NULL, "%s: log", why);
}

static kcache_config cfg_with(const char *var, const char *val)
{
    kcache_config c;
    clear_env();
    if (val) setenv(var, val, 1);
    kcache_config_init(&c);
    clear_env();
    return c;
}

static void test_config_env(void)
{
    kcache_config c;
    struct { const char *val; uint64_t want; } sizes[] = {
        {"512M", (uint64_t)512 << 20}, {"2G", (uint64_t)2 << 30}, {"100K", 100 << 10}, {"0", 0},
        {"12345", 12345},              {"1", 1},                  {"64M", (uint64_t)64 << 20}};
    const char *bad_sizes[] = {"-1", "12Q", "", "99999999999999999999G", "17179869184G", "1.5G", " 1G", "G",
                               "0x10", "1G ", "1 G", "+5", "1GG", "abc", NULL};
    size_t i;

    clear_env();
    kcache_config_init(&c);
    check_defaults(&c, "no environment");
    kcache_config_init(NULL); /* no-op */

    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        c = cfg_with("KCACHE_MAX_SIZE", sizes[i].val);
        KT_CHECK_MSG(c.max_size == sizes[i].want, "KCACHE_MAX_SIZE=%s: %llu", sizes[i].val, (unsigned long long)c.max_size);
        c = cfg_with("KCACHE_MEM_SIZE", sizes[i].val);
        KT_CHECK_MSG(c.mem_size == sizes[i].want, "KCACHE_MEM_SIZE=%s: %llu", sizes[i].val, (unsigned long long)c.mem_size);
    }
    for (i = 0; bad_sizes[i]; i++) {
        char why[64];
        snprintf(why, sizeof why, "KCACHE_MAX_SIZE=\"%s\"", bad_sizes[i]);
        c = cfg_with("KCACHE_MAX_SIZE", bad_sizes[i]);
        check_defaults(&c, why);
        snprintf(why, sizeof why, "KCACHE_MEM_SIZE=\"%s\"", bad_sizes[i]);
        c = cfg_with("KCACHE_MEM_SIZE", bad_sizes[i]);
        check_defaults(&c, why);
        snprintf(why, sizeof why, "KCACHE_MEM_ENTRIES=\"%s\"", bad_sizes[i]);
        c = cfg_with("KCACHE_MEM_ENTRIES", bad_sizes[i]);
        check_defaults(&c, why);
        snprintf(why, sizeof why, "KCACHE_BUILD_WAIT=\"%s\"", bad_sizes[i]);
        c = cfg_with("KCACHE_BUILD_WAIT", bad_sizes[i]);
        check_defaults(&c, why);
    }

    c = cfg_with("KCACHE_MEM_ENTRIES", "7");
    KT_CHECK_EQ_U64(c.mem_entries, 7);
    c = cfg_with("KCACHE_MEM_ENTRIES", "1");
    KT_CHECK_EQ_U64(c.mem_entries, 1);
    c = cfg_with("KCACHE_MEM_ENTRIES", "0");
    check_defaults(&c, "KCACHE_MEM_ENTRIES=0");
    c = cfg_with("KCACHE_MEM_ENTRIES", "99999999999");
    check_defaults(&c, "KCACHE_MEM_ENTRIES=99999999999");

    c = cfg_with("KCACHE_DIR", "/nonexistent/kcache-test");
    KT_CHECK(c.dir && strcmp(c.dir, "/nonexistent/kcache-test") == 0);
    c = cfg_with("KCACHE_DIR", "");
    KT_CHECK(c.dir == NULL);

    c = cfg_with("KCACHE_ENABLE", "0");
    KT_CHECK_EQ_U64(c.enable, 0);
    c = cfg_with("KCACHE_ENABLE", "1");
    KT_CHECK_EQ_U64(c.enable, 1);
    c = cfg_with("KCACHE_ENABLE", "maybe");
    check_defaults(&c, "KCACHE_ENABLE=maybe");
    c = cfg_with("KCACHE_ENABLE", "2");
    check_defaults(&c, "KCACHE_ENABLE=2");
    c = cfg_with("KCACHE_PERSISTENT", "0");
    KT_CHECK_EQ_U64(c.persistent, 0);
    c = cfg_with("KCACHE_PERSISTENT", "no way");
    check_defaults(&c, "KCACHE_PERSISTENT=no way");
    c = cfg_with("KCACHE_DEBUG", "1");
    KT_CHECK_EQ_U64(c.debug, 1);
    c = cfg_with("KCACHE_TRACE", "1");
    KT_CHECK_EQ_U64(c.trace, 1);
    c = cfg_with("KCACHE_FSYNC", "1");
    KT_CHECK_EQ_U64(c.fsync, 1);
    c = cfg_with("KCACHE_FSYNC", "0");
    check_defaults(&c, "KCACHE_FSYNC=0");

    c = cfg_with("KCACHE_WRITE", "evict");
    KT_CHECK_EQ_U64(c.write_policy, KCACHE_WRITE_EVICT);
    c = cfg_with("KCACHE_WRITE", "through");
    KT_CHECK_EQ_U64(c.write_policy, KCACHE_WRITE_THROUGH);
    c = cfg_with("KCACHE_WRITE", "sideways");
    check_defaults(&c, "KCACHE_WRITE=sideways");
    c = cfg_with("KCACHE_WRITE", "EVICT ");
    check_defaults(&c, "KCACHE_WRITE=EVICT ");

    c = cfg_with("KCACHE_STAMP", "mtime");
    KT_CHECK_EQ_U64(c.stamp, KCACHE_STAMP_MTIME);
    c = cfg_with("KCACHE_STAMP", "content");
    KT_CHECK_EQ_U64(c.stamp, KCACHE_STAMP_CONTENT);
    c = cfg_with("KCACHE_STAMP", "hybrid");
    KT_CHECK_EQ_U64(c.stamp, KCACHE_STAMP_HYBRID);
    c = cfg_with("KCACHE_STAMP", "atime");
    check_defaults(&c, "KCACHE_STAMP=atime");

    c = cfg_with("KCACHE_BUILD_WAIT", "5");
    KT_CHECK_EQ_U64(c.build_wait_ms, 5000);
    c = cfg_with("KCACHE_BUILD_WAIT", "0");
    KT_CHECK_EQ_U64(c.build_wait_ms, 0);
    c = cfg_with("KCACHE_BUILD_WAIT", "86400");
    KT_CHECK_EQ_U64(c.build_wait_ms, 86400000u);
    c = cfg_with("KCACHE_BUILD_WAIT", "86401");
    check_defaults(&c, "KCACHE_BUILD_WAIT=86401");

    /* several at once */
    clear_env();
    setenv("KCACHE_MAX_SIZE", "2G", 1);
    setenv("KCACHE_MEM_ENTRIES", "33", 1);
    setenv("KCACHE_WRITE", "evict", 1);
    setenv("KCACHE_STAMP", "content", 1);
    setenv("KCACHE_ENABLE", "0", 1);
    kcache_config_init(&c);
    KT_CHECK(c.max_size == (uint64_t)2 << 30 && c.mem_entries == 33 && c.write_policy == KCACHE_WRITE_EVICT &&
             c.stamp == KCACHE_STAMP_CONTENT && c.enable == 0);
    clear_env();
}

/* A bad value is said by kcache_open (kcache_config_init writes nothing: the log callback is set
   after it) through the callback, or on stderr without one: when KCACHE_DEBUG=1, and for a bad
   KCACHE_DEBUG itself always; with a callback, nothing on stderr. kcache_config_defaults reads no
   environment, and a kcache opened with it ignores KCACHE_CPU_NAME too. */
static char env_lines[4][200];
static int env_nlines;
static void env_log(void *user, const char *line)
{
    (void)user;
    if (env_nlines < 4) snprintf(env_lines[env_nlines], sizeof env_lines[0], "%s", line);
    env_nlines++;
}

/* Runs kcache_config_init (and kcache_open with it when open, with log as the callback) with
   stderr going to a file; that file's text. */
static void env_run(int open, kcache_log_fn log, kcache_config *c, char *text, size_t cap)
{
    char path[] = "/tmp/kcache-test-lru-XXXXXX";
    int fd = mkstemp(path), saved;
    ssize_t r;
    text[0] = 0;
    if (fd < 0) { KT_FAILF("mkstemp"); return; }
    fflush(stderr);
    saved = dup(2);
    dup2(fd, 2);
    kcache_config_init(c);
    if (open) {
        kcache *kc = NULL;
        c->persistent = 0;
        c->log = log;
        if (kcache_open(&kc, c) == KCACHE_OK) kcache_close(kc);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    r = pread(fd, text, cap - 1, 0);
    close(fd);
    unlink(path);
    text[r > 0 ? r : 0] = 0;
}

static void test_config_env_message(void)
{
    char text[2048];
    kcache_config c;
    kcache *kc = NULL;
    kcache_key a, b;
    clear_env();
    setenv("KCACHE_MAX_SIZE", "12Q", 1);
    env_run(0, NULL, &c, text, sizeof text);
    KT_CHECK_MSG(text[0] == 0, "kcache_config_init wrote: %s", text);
    KT_CHECK(c.env_bad != 0 && c.max_size == (uint64_t)1 << 30);
    env_run(1, NULL, &c, text, sizeof text);
    KT_CHECK_MSG(text[0] == 0, "a message without KCACHE_DEBUG: %s", text);
    setenv("KCACHE_DEBUG", "1", 1);
    setenv("KCACHE_WRITE", "sideways", 1);
    env_run(0, NULL, &c, text, sizeof text);
    KT_CHECK_MSG(text[0] == 0, "kcache_config_init wrote: %s", text);
    env_run(1, NULL, &c, text, sizeof text); /* two messages, on stderr: no callback */
    KT_CHECK_MSG(strstr(text, "KCACHE_MAX_SIZE") && strstr(text, "12Q"), "stderr: %s", text);
    KT_CHECK_MSG(strstr(text, "KCACHE_WRITE") && strstr(text, "sideways"), "stderr: %s", text);
    KT_CHECK(c.max_size == (uint64_t)1 << 30 && c.write_policy == KCACHE_WRITE_THROUGH && c.debug == 1);
    env_nlines = 0;
    env_run(1, env_log, &c, text, sizeof text); /* the same through the callback, nothing on stderr */
    KT_CHECK_MSG(text[0] == 0, "stderr with a log callback: %s", text);
    KT_CHECK(env_nlines >= 2 && strstr(env_lines[0], "KCACHE_MAX_SIZE") && strstr(env_lines[0], "12Q"));
    setenv("KCACHE_DEBUG", "please", 1); /* a bad switch for messages: said anyway, and only it */
    env_nlines = 0;
    env_run(1, env_log, &c, text, sizeof text);
    KT_CHECK_MSG(text[0] == 0, "stderr with a log callback: %s", text);
    KT_CHECK_MSG(env_nlines == 1 && strstr(env_lines[0], "KCACHE_DEBUG") && strstr(env_lines[0], "please"),
                 "%d lines, first: %s", env_nlines, env_lines[0]);
    env_run(1, NULL, &c, text, sizeof text);
    KT_CHECK_MSG(strstr(text, "KCACHE_DEBUG") && strstr(text, "please") && !strstr(text, "KCACHE_MAX_SIZE"), "stderr: %s", text);

    /* the program's configuration alone */
    setenv("KCACHE_ENABLE", "0", 1);
    setenv("KCACHE_CPU_NAME", "not-this-cpu", 1);
    kcache_config_defaults(&c);
    KT_CHECK(c.no_env == 1 && c.env_bad == 0 && c.enable == 1 && c.max_size == (uint64_t)1 << 30 && c.debug == 0 &&
             c.write_policy == KCACHE_WRITE_THROUGH);
    c.persistent = 0;
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK);
    kcache_key_init(&a, "u");
    kcache_key_init(&b, "u");
    KT_CHECK(kcache_key_host(&a) == KCACHE_OK && kcache_key_host_from(&b, kc) == KCACHE_OK);
    KT_CHECK_MSG(kcache_key_digest(&a).lo != kcache_key_digest(&b).lo, "a kcache opened with no_env used KCACHE_CPU_NAME");
    KT_CHECK(put_n(kc, "noenv", 1, 10) && has(kc, "noenv", 1, 10) == 1); /* KCACHE_ENABLE=0 did not turn it off */
    kcache_key_free(&a);
    kcache_key_free(&b);
    kcache_close(kc);
    clear_env();
}

static void test_open_config(void)
{
    kcache_config cfg;
    kcache *kc = (kcache *)&cfg;
    /* NULL config: the environment's (memory only here, never the real cache directory) */
    clear_env();
    setenv("KCACHE_PERSISTENT", "0", 1);
    setenv("KCACHE_MEM_ENTRIES", "2", 1);
    KT_CHECK(kcache_open(&kc, NULL) == KCACHE_OK);
    KT_CHECK(kc != NULL && kcache_dir(kc) == NULL);
    {
        char why[200];
        KT_CHECK(kc && kcache_store_in_use(kc, why, sizeof why) == 0 && strstr(why, "KCACHE_PERSISTENT=0") != NULL);
        KT_CHECK(kcache_store_in_use(NULL, why, sizeof why) == 0 && why[0] == 0);
    }
    clear_env();
    if (kc) {
        KT_CHECK(put_n(kc, "env", 1, 10) && put_n(kc, "env", 2, 10) && put_n(kc, "env", 3, 10));
        KT_CHECK(has(kc, "env", 1, 10) == 0 && has(kc, "env", 3, 10) == 1);
        kcache_close(kc);
    }
    /* bad policies in a config */
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.write_policy = 7;
    kc = (kcache *)&cfg;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_EINVAL);
    KT_CHECK(kc == NULL);
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.stamp = -1;
    kc = (kcache *)&cfg;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_EINVAL);
    KT_CHECK(kc == NULL);
    KT_CHECK(kcache_open(NULL, &cfg) == KCACHE_EINVAL);
    /* the config is copied: changing it after open changes nothing */
    kcache_config_init(&cfg);
    cfg.persistent = 0;
    cfg.mem_entries = 1;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    cfg.mem_entries = 100;
    cfg.enable = 0;
    if (kc) {
        KT_CHECK(put_n(kc, "copy", 1, 10) && put_n(kc, "copy", 2, 10));
        KT_CHECK(has(kc, "copy", 1, 10) == 0 && has(kc, "copy", 2, 10) == 1);
        kcache_close(kc);
    }
}

/* ---- NULL arguments ------------------------------------------------------------------------ */

static void test_null_args(void)
{
    kcache *kc = open_mem(4, 0);
    kcache_key k;
    const void *p = (const void *)&k;
    size_t n = 99;
    kcache_stats st;
    char buf[64];
    mk(&k, "null", 1);
    kcache_close(NULL);
    kcache_release(kc, NULL);
    kcache_release(NULL, NULL);
    memset(&st, 0xab, sizeof st);
    kcache_get_stats(NULL, &st);
    KT_CHECK(st.hits_mem == 0 && st.misses == 0 && st.puts == 0 && st.mem_entries == 0);
    kcache_get_stats(kc, NULL);
    kcache_get_stats(NULL, NULL);
    KT_CHECK(kcache_dir(NULL) == NULL);
    KT_CHECK(kcache_get(NULL, &k, &p, &n) == KCACHE_EINVAL);
    KT_CHECK(p == NULL && n == 0);
    KT_CHECK(kcache_get(kc, NULL, &p, &n) == KCACHE_EINVAL);
    KT_CHECK(kcache_get(kc, &k, NULL, &n) == KCACHE_EINVAL);
    KT_CHECK(kcache_get(kc, &k, &p, NULL) == KCACHE_EINVAL);
    KT_CHECK(kcache_put(NULL, &k, "a", 1) == KCACHE_EINVAL);
    KT_CHECK(kcache_put(kc, NULL, "a", 1) == KCACHE_EINVAL);
    KT_CHECK(kcache_put(kc, &k, NULL, 1) == KCACHE_EINVAL);
    KT_CHECK(kcache_remove(NULL, &k) == KCACHE_EINVAL);
    KT_CHECK(kcache_remove(kc, NULL) == KCACHE_EINVAL);
    KT_CHECK(kcache_get_or_build(NULL, &k, NULL, NULL, &p, &n) == KCACHE_EINVAL);
    KT_CHECK(kcache_get_or_build(kc, &k, NULL, NULL, &p, &n) == KCACHE_EINVAL);
    KT_CHECK(kcache_get_or_build(kc, NULL, NULL, NULL, &p, &n) == KCACHE_EINVAL);
    KT_CHECK(kcache_verify(NULL, 0) == KCACHE_EINVAL);
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK); /* memory only: nothing to check */
    KT_CHECK(kcache_explain(NULL, NULL, NULL, 0) > 0);
    KT_CHECK(kcache_explain(kc, NULL, buf, sizeof buf) > 0);
    KT_CHECK(kcache_key_host_from(&k, kc) == KCACHE_OK);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.misses, 0); /* invalid calls count nothing */
    KT_CHECK_EQ_U64(st.puts, 0);
    kcache_key_free(&k);
    kcache_close(kc);
}

/* ---- get_or_build -------------------------------------------------------------------------- */

typedef struct build_ctx { int calls; int fail; size_t size; } build_ctx;

static int build_fn(void *user, void **out, size_t *out_size)
{
    build_ctx *b = (build_ctx *)user;
    unsigned char *p = (unsigned char *)malloc(b->size ? b->size : 1);
    b->calls++;
    if (!p) return 1;
    pattern(p, b->size, 77);
    *out = p;
    *out_size = b->size;
    return b->fail; /* a failing build may still have allocated: kcache frees it */
}

static void test_get_or_build(void)
{
    kcache *kc = open_mem(8, 0);
    kcache_key k;
    const void *p, *q;
    size_t n, m;
    build_ctx b;
    kcache_stats st;
    unsigned char want[1000];
    pattern(want, sizeof want, 77);
    memset(&b, 0, sizeof b);
    b.size = sizeof want;
    mk(&k, "gob", 1);
    KT_CHECK(kcache_get_or_build(kc, &k, build_fn, &b, &p, &n) == KCACHE_OK);
    KT_CHECK_EQ_U64(b.calls, 1);
    KT_CHECK(p && n == sizeof want && memcmp(p, want, n) == 0);
    KT_CHECK(((uintptr_t)p & 15) == 0);
    KT_CHECK(kcache_get_or_build(kc, &k, build_fn, &b, &q, &m) == KCACHE_OK);
    KT_CHECK_EQ_U64(b.calls, 1); /* a hit: no build */
    KT_CHECK(q == p && m == n);
    kcache_release(kc, p);
    kcache_release(kc, q);
    KT_CHECK(kcache_get(kc, &k, &q, &m) == KCACHE_OK); /* stored: a plain get hits */
    if (q == p) kcache_release(kc, q);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.builds, 1);
    KT_CHECK_EQ_U64(st.puts, 1);
    KT_CHECK_EQ_U64(st.hits_mem, 2);
    KT_CHECK_EQ_U64(st.misses, 1);
    kcache_key_free(&k);

    /* a failing build: KCACHE_EBUILD, nothing cached, the next call builds again */
    mk(&k, "gob", 2);
    b.calls = 0;
    b.fail = 1;
    KT_CHECK(kcache_get_or_build(kc, &k, build_fn, &b, &p, &n) == KCACHE_EBUILD);
    KT_CHECK(p == NULL && n == 0);
    KT_CHECK_EQ_U64(b.calls, 1);
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS);
    KT_CHECK(kcache_get_or_build(kc, &k, build_fn, &b, &p, &n) == KCACHE_EBUILD);
    KT_CHECK_EQ_U64(b.calls, 2);
    b.fail = 0;
    KT_CHECK(kcache_get_or_build(kc, &k, build_fn, &b, &p, &n) == KCACHE_OK);
    KT_CHECK_EQ_U64(b.calls, 3);
    if (p) kcache_release(kc, p);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.puts, 2);
    KT_CHECK_EQ_U64(st.mem_entries, 2);
    kcache_key_free(&k);

    /* a key with an error: built every time, never cached, the payload still handed out */
    kcache_key_init(&k, "gob");
    kcache_key_str(&k, "a", "1");
    kcache_key_str(&k, "a", "1");
    b.calls = 0;
    KT_CHECK(kcache_get_or_build(kc, &k, build_fn, &b, &p, &n) == KCACHE_OK);
    KT_CHECK(p && n == sizeof want && memcmp(p, want, n) == 0);
    if (p) kcache_release(kc, p);
    KT_CHECK(kcache_get_or_build(kc, &k, build_fn, &b, &p, &n) == KCACHE_OK);
    if (p) kcache_release(kc, p);
    KT_CHECK_EQ_U64(b.calls, 2);
    kcache_key_free(&k);
    kcache_close(kc);

    /* caching off: built every time, handed out, released */
    {
        kcache_config cfg;
        kcache_config_init(&cfg);
        cfg.persistent = 0;
        cfg.enable = 0;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
        mk(&k, "gob", 3);
        b.calls = 0;
        KT_CHECK(kcache_get_or_build(kc, &k, build_fn, &b, &p, &n) == KCACHE_OK);
        KT_CHECK(p && n == sizeof want && memcmp(p, want, n) == 0);
        if (p) kcache_release(kc, p);
        KT_CHECK(kcache_get_or_build(kc, &k, build_fn, &b, &p, &n) == KCACHE_OK);
        if (p) kcache_release(kc, p);
        KT_CHECK_EQ_U64(b.calls, 2);
        kcache_key_free(&k);
        kcache_close(kc);
    }
}

/* ---- file dependencies in memory: the stamp policies ------------------------------------------ */

static void write_file(const char *path, const char *text, long long mtime_s)
{
    FILE *f = fopen(path, "wb");
    struct timespec ts[2];
    if (!f) { perror(path); exit(2); }
    fputs(text, f);
    fclose(f);
    ts[0].tv_sec = ts[1].tv_sec = (time_t)mtime_s;
    ts[0].tv_nsec = ts[1].tv_nsec = 0;
    utimensat(AT_FDCWD, path, ts, 0);
}

static kcache_status get_dep(kcache *kc, const char *path, char *why, size_t cap)
{
    kcache_key k;
    const void *p;
    size_t n;
    kcache_status s;
    kcache_key_init(&k, "dep");
    kcache_key_str(&k, "opt", "-O2");
    kcache_key_file(&k, "src", path);
    kcache_explain(kc, &k, why, cap);
    s = kcache_get(kc, &k, &p, &n);
    if (s == KCACHE_OK) kcache_release(kc, p);
    kcache_key_free(&k);
    return s;
}

static void put_dep(kcache *kc, const char *path)
{
    kcache_key k;
    kcache_key_init(&k, "dep");
    kcache_key_str(&k, "opt", "-O2");
    kcache_key_file(&k, "src", path);
    KT_CHECK(kcache_put(kc, &k, "bin", 3) == KCACHE_OK);
    kcache_key_free(&k);
}

static void test_stamp_memory(void)
{
    char dir[] = "/tmp/kcache-test-lru-XXXXXX", path[128], why[512];
    int policy;
    if (!mkdtemp(dir)) { KT_FAILF("mkdtemp"); return; }
    snprintf(path, sizeof path, "%s/k.cl", dir);
    for (policy = KCACHE_STAMP_HYBRID; policy <= KCACHE_STAMP_CONTENT; policy++) {
        kcache_config cfg;
        kcache *kc;
        kcache_stats st;
        kcache_config_init(&cfg);
        cfg.persistent = 0;
        cfg.stamp = policy;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
        if (!kc) continue;
        write_file(path, "kernel A", 1000000000LL);
        put_dep(kc, path);
        KT_CHECK(get_dep(kc, path, why, sizeof why) == KCACHE_OK);
        /* touched, content unchanged: only the mtime policy recompiles */
        write_file(path, "kernel A", 1000000100LL);
        if (policy == KCACHE_STAMP_MTIME) {
            KT_CHECK_MSG(get_dep(kc, path, why, sizeof why) == KCACHE_MISS, "policy %d touched", policy);
            KT_CHECK_MSG(strstr(why, "a dependency changed") && strstr(why, "src") && strstr(why, "mtime"),
                         "touched: %s", why);
            put_dep(kc, path);
        } else {
            KT_CHECK_MSG(get_dep(kc, path, why, sizeof why) == KCACHE_OK, "policy %d touched: %s", policy, why);
            KT_CHECK_MSG(strncmp(why, "hit: memory", 11) == 0, "touched: %s", why);
        }
        /* same size, other content, another mtime: every policy recompiles */
        write_file(path, "kernel B", 1000000200LL);
        KT_CHECK_MSG(get_dep(kc, path, why, sizeof why) == KCACHE_MISS, "policy %d changed", policy);
        KT_CHECK_MSG(strstr(why, "a dependency changed") && strstr(why, "k.cl"), "changed: %s", why);
        if (policy != KCACHE_STAMP_MTIME) KT_CHECK_MSG(strstr(why, "content") != NULL, "changed: %s", why);
        kcache_get_stats(kc, &st);
        KT_CHECK(st.misses_by_reason[KCACHE_REASON_STAMP] >= 1);
        /* stored again for the new content: hits */
        put_dep(kc, path);
        KT_CHECK(get_dep(kc, path, why, sizeof why) == KCACHE_OK);
        kcache_close(kc);
    }
    unlink(path);
    rmdir(dir);
}

/* ---- the allocator callbacks: with cfg.alloc_fn / free_fn set, a memory-only cache's calls
   allocate only through them (the kcache, payloads, the keys and buffers a call needs for a
   while); KCACHE_MALLOC stays for what has no kcache (keys the caller builds) and a build
   function's buffer ---- */
static long al_allocs, al_live;
/* (16 bytes ahead of malloc's block: memory from one given to the other's free fails loudly) */
static void *al_alloc(void *user, size_t n) {
    unsigned char *p = (unsigned char *)malloc(n + 16);
    (void)user;
    if (!p) return NULL;
    al_allocs++;
    al_live++;
    return p + 16;
}
static void al_free(void *user, void *p) { (void)user; if (p) { al_live--; free((unsigned char *)p - 16); } }
static int al_build(void *user, void **out, size_t *n) {
    (void)user;
    if ((*out = malloc(10)) == NULL) return 1;
    memset(*out, 1, 10);
    *n = 10;
    return 0;
}
static void test_allocator_memory_only(void)
{
    char path[] = "/tmp/kcache-test-lru-dep-XXXXXX", why[1024];
    kcache_config cfg;
    kcache *kc;
    kcache_key k, kf, kb;
    const void *p;
    size_t n;
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, "kernel", 6) != 6) { KT_FAILF("mkstemp"); return; }
    close(fd);
    kcache_key_init(&k, "al");   /* the caller's keys, before counting */
    kcache_key_str(&k, "src", "x");
    kcache_key_host(&k);
    kcache_key_init(&kf, "al");
    kcache_key_file(&kf, "dep", path);
    kcache_key_init(&kb, "al");
    kcache_key_str(&kb, "src", "built");
    kcache_config_defaults(&cfg);
    cfg.persistent = 0;
    cfg.stamp = KCACHE_STAMP_CONTENT; /* the dependency's content is read at each lookup */
    cfg.alloc_fn = al_alloc;
    cfg.free_fn = al_free;
    kt_macro_allocs = 0;
    kt_macro_counting = 1;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) { kt_macro_counting = 0; return; }
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS);
    KT_CHECK(kcache_explain(kc, &k, why, sizeof why) > 0);
    KT_CHECK(kcache_put(kc, &k, "bin", 3) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK);
    if (n == 3) kcache_release(kc, p);
    KT_CHECK(kcache_get(kc, &kf, &p, &n) == KCACHE_MISS);
    KT_CHECK(kcache_put(kc, &kf, "dep", 3) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &kf, &p, &n) == KCACHE_OK);
    if (n == 3) kcache_release(kc, p);
    KT_CHECK(kcache_explain(kc, &kf, why, sizeof why) > 0);
    KT_CHECK(kcache_get_or_build(kc, &kb, al_build, NULL, &p, &n) == KCACHE_OK && n == 10);
    if (n == 10) kcache_release(kc, p);
    KT_CHECK(kcache_explain(kc, &kb, why, sizeof why) > 0);
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_OK);
    KT_CHECK(kcache_explain(kc, &k, why, sizeof why) > 0);
    kcache_close(kc);
    kt_macro_counting = 0;
    KT_CHECK_MSG(kt_macro_allocs == 0, "%ld allocations through KCACHE_MALLOC with alloc_fn set (the first at kcache.h:%d)",
                 kt_macro_allocs, kt_macro_line);
    KT_CHECK_MSG(al_allocs > 3 && al_live == 0, "%ld allocations through alloc_fn, %ld not freed", al_allocs, al_live);
    kcache_key_free(&k);
    kcache_key_free(&kf);
    kcache_key_free(&kb);
    unlink(path);
}

/* The same on a store: once a kcache is open, its calls (memory and disk hits, explain reading
   the index files, remove, get_or_build, verify) allocate only through alloc_fn. Counting pauses
   over open and close, and a first build warms up: opening a store joins the process-wide registry
   (its lock file and that file's list of build claims, the stamps), which outlives any one kcache
   and so stays on KCACHE_MALLOC. */
static void test_allocator_store(void)
{
    char dir[] = "/tmp/kcache-test-lru-al-XXXXXX", cmd[64], why[2048];
    kcache_config cfg;
    kcache *kc;
    kcache_key k, k2, kb, kw;
    const void *p;
    size_t n;
    long before = al_allocs;
    if (!mkdtemp(dir)) { KT_FAILF("mkdtemp"); return; }
    kcache_key_init(&k, "al");   /* the caller's keys, before counting */
    kcache_key_str(&k, "src", "x");
    kcache_key_u64(&k, "opt", 2);
    kcache_key_host(&k);
    kcache_key_init(&k2, "al"); /* k with one field changed: explain reads the index to name it */
    kcache_key_str(&k2, "src", "x");
    kcache_key_u64(&k2, "opt", 3);
    kcache_key_host(&k2);
    kcache_key_init(&kb, "al");
    kcache_key_str(&kb, "src", "built");
    kcache_key_init(&kw, "al");
    kcache_key_str(&kw, "src", "warm");
    kcache_config_defaults(&cfg);
    cfg.dir = dir;
    cfg.alloc_fn = al_alloc;
    cfg.free_fn = al_free;
    kt_macro_allocs = 0;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    KT_CHECK(kcache_get_or_build(kc, &kw, al_build, NULL, &p, &n) == KCACHE_OK); /* the registry's claim list */
    if (n == 10) kcache_release(kc, p);
    kt_macro_counting = 1;
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS);
    KT_CHECK(kcache_put(kc, &k, "bin", 3) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK && n == 3); /* from memory */
    if (n == 3) kcache_release(kc, p);
    KT_CHECK(kcache_explain(kc, &k, why, sizeof why) > 0);
    KT_CHECK(kcache_get_or_build(kc, &kb, al_build, NULL, &p, &n) == KCACHE_OK && n == 10);
    if (n == 10) kcache_release(kc, p);
    kt_macro_counting = 0;
    kcache_close(kc);
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (kc) {
        KT_CHECK(kcache_get_or_build(kc, &kw, al_build, NULL, &p, &n) == KCACHE_OK);
        if (n == 10) kcache_release(kc, p);
        kt_macro_counting = 1;
        KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK && n == 3); /* from disk */
        if (n == 3) kcache_release(kc, p);
        KT_CHECK(kcache_get_or_build(kc, &kb, al_build, NULL, &p, &n) == KCACHE_OK && n == 10);
        if (n == 10) kcache_release(kc, p);
        KT_CHECK(kcache_get(kc, &k2, &p, &n) == KCACHE_MISS);
        KT_CHECK(kcache_explain(kc, &k2, why, sizeof why) > 0);
#ifndef KCACHE_NO_EXPLAIN
        KT_CHECK_MSG(strstr(why, "opt") != NULL, "explain names the field that differs: %s", why);
#endif
        KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
        KT_CHECK(kcache_verify(kc, 1) == KCACHE_OK);
        KT_CHECK(kcache_remove(kc, &k) == KCACHE_OK);
        KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS);
        KT_CHECK(kcache_explain(kc, &k, why, sizeof why) > 0);
        kt_macro_counting = 0;
        kcache_close(kc);
    }
    KT_CHECK_MSG(kt_macro_allocs == 0, "%ld allocations through KCACHE_MALLOC with alloc_fn set (the first at kcache.h:%d)",
                 kt_macro_allocs, kt_macro_line);
    KT_CHECK_MSG(al_allocs > before + 3 && al_live == 0, "%ld allocations through alloc_fn, %ld not freed", al_allocs - before, al_live);
    kcache_key_free(&k);
    kcache_key_free(&k2);
    kcache_key_free(&kb);
    kcache_key_free(&kw);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    KT_CHECK(system(cmd) == 0);
}

/* ---- a part compiled out (KCACHE_NO_REMOTE, _LAYERS, _PUB, _EXPLAIN) whose setting is set: the
   debug log says so, and kcache_explain for the tiers; caching goes on ---- */
static char co_log[8192];
static size_t co_len;
static void co_sink(void *user, const char *line) { (void)user; kt_log_append(co_log, sizeof co_log, &co_len, line); }
static void test_compiled_out(void)
{
    char dir[] = "/tmp/kcache-test-lru-XXXXXX", cmd[64], why[1024];
    kcache_config cfg;
    kcache *kc;
    kcache_key k;
    const void *p;
    size_t n;
    if (!mkdtemp(dir)) { KT_FAILF("mkdtemp"); return; }
    co_len = 0;
    co_log[0] = 0;
    kcache_config_defaults(&cfg);
    cfg.dir = dir;
    cfg.debug = 1;
    cfg.log = co_sink;
    cfg.remote = "redis://127.0.0.1:1";
    cfg.layers = dir; /* (itself: a layer is never the store, but only a build with layers knows) */
    cfg.trace = 1;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    kcache_key_init(&k, "co");
    kcache_key_str(&k, "src", "x");
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_MISS);
    KT_CHECK(kcache_explain(kc, &k, why, sizeof why) > 0);
#ifdef KCACHE_NO_REMOTE
    KT_CHECK_MSG(strstr(co_log, "compiled out (KCACHE_NO_REMOTE)") != NULL, "log: %s", co_log);
    KT_CHECK_MSG(strstr(why, "compiled out (KCACHE_NO_REMOTE)") != NULL, "explain: %s", why);
#endif
#ifdef KCACHE_NO_LAYERS
    KT_CHECK_MSG(strstr(co_log, "compiled out (KCACHE_NO_LAYERS)") != NULL, "log: %s", co_log);
    KT_CHECK_MSG(strstr(why, "compiled out (KCACHE_NO_LAYERS)") != NULL, "explain: %s", why);
#endif
#ifdef KCACHE_NO_PUB
    KT_CHECK_MSG(strstr(co_log, "KCACHE_NO_PUB") != NULL, "log: %s", co_log);
#endif
#ifdef KCACHE_NO_EXPLAIN
    KT_CHECK_MSG(strstr(co_log, "KCACHE_NO_EXPLAIN") != NULL, "log: %s", co_log);
    KT_CHECK_MSG(strstr(why, "KCACHE_NO_EXPLAIN") != NULL, "explain: %s", why);
#endif
    KT_CHECK(kcache_put(kc, &k, "bin", 3) == KCACHE_OK);
    kcache_close(kc);
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK); /* from the store, in a new handle */
    if (kc) {
        KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK && n == 3);
        if (n == 3) kcache_release(kc, p);
        kcache_close(kc);
    }
    kcache_key_free(&k);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    KT_CHECK(system(cmd) == 0);
}

/* ---- names ----------------------------------------------------------------------------------- */

static void test_names(void)
{
    static const char *const words[] = {"hit", "cold", "field", "stamp", "evicted", "rejected", "off", "unwritable"};
    int i, j;
    KT_CHECK_EQ_U64(KCACHE_REASON_COUNT, 8);
    for (i = 0; i < KCACHE_REASON_COUNT; i++) KT_CHECK_STR(kcache_reason_name((kcache_reason)i), words[i]);
    KT_CHECK_STR(kcache_reason_name(KCACHE_REASON_COUNT), "unknown");
    KT_CHECK_STR(kcache_reason_name((kcache_reason)-1), "unknown");
    KT_CHECK_STR(kcache_reason_name((kcache_reason)100000), "unknown");
    KT_CHECK_STR(kcache_strerror(KCACHE_OK), "ok");
    KT_CHECK_STR(kcache_strerror(KCACHE_MISS), "not in the cache");
    for (i = 0; i < KCACHE_STATUS_COUNT; i++) {
        const char *s = kcache_strerror((kcache_status)i);
        KT_CHECK(s != NULL && s[0] != 0);
        KT_CHECK(strcmp(s, "unknown status") != 0);
        for (j = 0; j < i; j++) KT_CHECK(strcmp(s, kcache_strerror((kcache_status)j)) != 0);
    }
    KT_CHECK_STR(kcache_strerror(KCACHE_STATUS_COUNT), "unknown status");
    KT_CHECK_STR(kcache_strerror((kcache_status)-1), "unknown status");
    KT_CHECK_STR(kcache_strerror((kcache_status)100000), "unknown status");
    /* the public codes keep their values (programs store and compare them) */
    KT_CHECK_EQ_U64(KCACHE_OK, 0);
    KT_CHECK_EQ_U64(KCACHE_MISS, 1);
}

int main(void)
{
    clear_env();
    KT_RUN(test_roundtrip);
    KT_RUN(test_capacity_entries);
    KT_RUN(test_capacity_bytes);
    KT_RUN(test_capacity_empty_payloads);
    KT_RUN(test_held_payloads);
    KT_RUN(test_put_replace_remove);
    KT_RUN(test_disabled);
    KT_RUN(test_stats_exact);
    KT_RUN(test_explain);
    KT_RUN(test_explain_after_remove);
    KT_RUN(test_incomplete_key_logged);
#ifdef KCACHE_NO_ENV
    KT_SKIP(test_config_env, "the environment is compiled out (KCACHE_NO_ENV)");
#else
    KT_RUN(test_config_env);
#endif
#ifdef KCACHE_NO_ENV
    KT_SKIP(test_config_env_message, "the environment is compiled out (KCACHE_NO_ENV)");
#else
    KT_RUN(test_config_env_message);
#endif
#ifdef KCACHE_NO_ENV
    KT_SKIP(test_open_config, "the environment is compiled out (KCACHE_NO_ENV)");
#else
    KT_RUN(test_open_config);
#endif
    KT_RUN(test_null_args);
    KT_RUN(test_get_or_build);
    KT_RUN(test_stamp_memory);
    KT_RUN(test_names);
#if !defined(_WIN32)
    KT_RUN(test_allocator_memory_only);
    KT_RUN(test_allocator_store);
#else /* the Win32 layer converts every path it is given to UTF-16 with KCACHE_MALLOC (README: Memory) */
    KT_SKIP(test_allocator_memory_only, "Windows: each file call's path is converted with KCACHE_MALLOC (no kcache in the platform layer)");
    KT_SKIP(test_allocator_store, "Windows: each file call's path is converted with KCACHE_MALLOC (no kcache in the platform layer)");
#endif
#if defined(KCACHE_NO_REMOTE) || defined(KCACHE_NO_LAYERS) || defined(KCACHE_NO_PUB) || defined(KCACHE_NO_EXPLAIN)
    KT_RUN(test_compiled_out);
#else
    KT_SKIP(test_compiled_out, "nothing is compiled out in this build");
#endif
    KT_EXIT();
}

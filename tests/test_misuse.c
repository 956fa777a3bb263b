/* tests/test_misuse.c - misuse of the API caught in a debug build (issue 24), before any damage.
 *
 * KCACHE_ASSERT is overridden here to count instead of abort, so that each misuse can be made and
 * what kcache did about it checked: exactly one message through the log (stderr where there is no
 * log to reach), naming the call, then one KCACHE_ASSERT, and nothing done. Run under ASan (make
 * build/asan/test_misuse), a check that read or freed memory it should not have is a report.
 *
 *   misuse_double_release   a payload released twice: the second release is reported, the payload
 *                           of the entry still in memory is intact; the same once the entry left
 *                           memory (the second release would free freed memory)
 *   misuse_foreign_release  a payload of another kcache, a pointer kcache never handed out: reported,
 *                           never read
 *   misuse_closed           every call on a closed kcache (the release of a payload held at close
 *                           included): reported through the log that kcache had, never a hang
 *                           (before: > 20 s) or a read of the freed handle
 *   misuse_never_opened     a pointer that never was a kcache: reported (on stderr: no log to reach)
 *   misuse_key_freed        a key used after kcache_key_free, or never initialised, by each call
 *   misuse_many_held        1,000 hand-outs of one payload and 200 of others, released in another
 *                           order: no report; one more release is reported
 *   misuse_fork             a payload got before a fork, released in the child; the child's own
 *                           gets and releases: no report
 *   misuse_ticket_twice     a ticket of kcache_get_or_claim ended twice, or through another kcache:
 *                           reported, never read; one left open at close: dropped, no report
 *   misuse_none             a normal life (puts, gets, get_or_build from 4 threads, explain, stats,
 *                           remove, close): no message, no assertion
 *
 * Build: make build/test_misuse build/asan/test_misuse. */
static void kt_assert_failed(const char *what); /* (kcache.h comes before any system header) */
#define KCACHE_ASSERT(x) ((x) ? (void)0 : kt_assert_failed(#x))
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#include <stdio.h>
#include <string.h>

static int kt_asserts;
static char kt_assert_what[256];
static void kt_assert_failed(const char *what)
{
    kt_asserts++;
    snprintf(kt_assert_what, sizeof kt_assert_what, "%s", what);
}

#include <stdlib.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>

/* ---- the log: what kcache said ---------------------------------------------------------------- */

typedef struct logbuf { pthread_mutex_t mu; char text[16384]; size_t len; int lines; } logbuf;
static logbuf g_log = {PTHREAD_MUTEX_INITIALIZER, "", 0, 0};
static void log_cb(void *user, const char *line)
{
    logbuf *l = (logbuf *)user;
    pthread_mutex_lock(&l->mu);
    kt_log_append(l->text, sizeof l->text, &l->len, line);
    l->lines++;
    pthread_mutex_unlock(&l->mu);
}
static void reset(void)
{
    pthread_mutex_lock(&g_log.mu);
    g_log.text[0] = 0;
    g_log.len = 0;
    g_log.lines = 0;
    pthread_mutex_unlock(&g_log.mu);
    kt_asserts = 0;
    kt_assert_what[0] = 0;
}
/* Exactly one message, starting with call, holding what, and one assertion since reset(). */
#define EXPECT_ONE(call, what)                                                                            \
    do {                                                                                                  \
        KT_CHECK_MSG(g_log.lines == 1 && strncmp(g_log.text, call ": ", strlen(call) + 2) == 0 &&          \
                         strstr(g_log.text, what) != NULL,                                                \
                     "%s: want one message naming it (\"%s\"), got %d: %s", call, what, g_log.lines, g_log.text); \
        KT_CHECK_MSG(kt_asserts == 1, "%s: %d assertions (want 1)", call, kt_asserts);                    \
        reset();                                                                                          \
    } while (0)
#define EXPECT_NONE(what)                                                                                 \
    do {                                                                                                  \
        KT_CHECK_MSG(g_log.lines == 0 && kt_asserts == 0, "%s: %d messages, %d assertions: %s", what,      \
                     g_log.lines, kt_asserts, g_log.text);                                                \
        reset();                                                                                          \
    } while (0)

/* ---- caches, keys, payloads ------------------------------------------------------------------- */

static char g_root[256];
static int g_stores;

static kcache *open_cache(int persistent)
{
    kcache_config c;
    kcache *kc = NULL;
    char dir[300];
    kcache_config_defaults(&c);
    if (persistent) {
        snprintf(dir, sizeof dir, "%s/s%d", g_root, g_stores++);
        c.dir = dir;
    } else {
        c.persistent = 0;
    }
    c.log = log_cb;
    c.log_user = &g_log;
    if (kcache_open(&kc, &c) != KCACHE_OK || !kc) {
        printf("FAIL setup: kcache_open\n");
        exit(1);
    }
    return kc;
}
static void mkkey(kcache_key *k, int id)
{
    kcache_key_init(k, "misuse");
    kcache_key_u64(k, "id", (uint64_t)id);
}
static void put_id(kcache *kc, int id, size_t n)
{
    kcache_key k;
    unsigned char *p = (unsigned char *)malloc(n);
    size_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)(id * 7 + i);
    mkkey(&k, id);
    KT_CHECK(kcache_put(kc, &k, p, n) == KCACHE_OK);
    kcache_key_free(&k);
    free(p);
}
static const void *get_id(kcache *kc, int id, size_t n)
{
    kcache_key k;
    const void *d = NULL;
    size_t got = 0, i;
    mkkey(&k, id);
    KT_CHECK(kcache_get(kc, &k, &d, &got) == KCACHE_OK && got == n);
    kcache_key_free(&k);
    for (i = 0; d && i < got; i++)
        if (((const unsigned char *)d)[i] != (unsigned char)(id * 7 + i)) { KT_FAILF("key %d: wrong byte %zu", id, i); break; }
    return d;
}

/* ---- the cases ---------------------------------------------------------------------------------- */

static void misuse_double_release(void)
{
    kcache *kc = open_cache(0);
    kcache_key k;
    const void *d;
    reset();
    put_id(kc, 1, 4000);
    d = get_id(kc, 1, 4000);
    kcache_release(kc, d);
    EXPECT_NONE("a get and its release");
    kcache_release(kc, d); /* the memory LRU's reference would go: the entry freed under it */
    EXPECT_ONE("kcache_release", "released already");
    d = get_id(kc, 1, 4000); /* still intact in memory */
    kcache_release(kc, d);
    /* the entry removed while a caller holds it: that caller's release frees it; a second one
       would free freed memory */
    d = get_id(kc, 1, 4000);
    mkkey(&k, 1);
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_OK);
    kcache_key_free(&k);
    kcache_release(kc, d);
    EXPECT_NONE("a release after remove");
    kcache_release(kc, d);
    EXPECT_ONE("kcache_release", "released already");
    kcache_close(kc);
    EXPECT_NONE("close");
}

static void misuse_foreign_release(void)
{
    kcache *a = open_cache(0), *b = open_cache(1);
    const void *d;
    unsigned char *mine = (unsigned char *)malloc(64);
    reset();
    put_id(b, 2, 100);
    d = get_id(b, 2, 100);
    kcache_release(a, d); /* b's payload through a */
    EXPECT_ONE("kcache_release", "not handed out by this kcache");
    kcache_release(b, d);
    EXPECT_NONE("the release through its own kcache");
    memset(mine, 0, 64);
    kcache_release(a, mine + 32); /* never a payload: its bytes before it are not a blob pointer */
    EXPECT_ONE("kcache_release", "not handed out by this kcache");
    kcache_release(NULL, mine); /* (no log to reach: the message goes to stderr) */
    KT_CHECK_MSG(kt_asserts == 1 && g_log.lines == 0, "kcache_release(NULL, p): %d assertions", kt_asserts);
    reset();
    kcache_release(a, NULL); /* NULL: nothing to give back, not misuse */
    EXPECT_NONE("kcache_release(kc, NULL)");
    free(mine);
    kcache_close(a);
    kcache_close(b);
}

static int build_one(void *user, void **out, size_t *n)
{
    (void)user;
    *out = malloc(8);
    if (!*out) return 1;
    memset(*out, 1, 8);
    *n = 8;
    return 0;
}

static const void *g_held_at_close; /* (reachable: LeakSanitizer does not call what kcache cannot free a leak) */
static void misuse_closed(void)
{
    kcache *kc = open_cache(1), *other;
    kcache_key k;
    kcache_stats st;
    const void *d = (const void *)1;
    size_t n = 1;
    char buf[256];
    reset();
    put_id(kc, 3, 100);
    g_held_at_close = get_id(kc, 3, 100);
    mkkey(&k, 3);
    other = open_cache(0); /* (another handle open meanwhile: the check is per handle; opened before the
                              close, else malloc may give it kc's address: kc would be open again) */
    kcache_close(kc);
    EXPECT_NONE("close with a payload still held");
    KT_CHECK(kcache_get(kc, &k, &d, &n) == KCACHE_EINVAL && d == NULL && n == 0);
    EXPECT_ONE("kcache_get", "closed");
    KT_CHECK(kcache_put(kc, &k, "x", 1) == KCACHE_EINVAL);
    EXPECT_ONE("kcache_put", "closed");
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_EINVAL);
    EXPECT_ONE("kcache_remove", "closed");
    KT_CHECK(kcache_get_or_build(kc, &k, build_one, NULL, &d, &n) == KCACHE_EINVAL);
    EXPECT_ONE("kcache_get_or_build", "closed");
    KT_CHECK(kcache_explain(kc, &k, buf, sizeof buf) == 0 && buf[0] == 0);
    EXPECT_ONE("kcache_explain", "closed");
    kcache_get_stats(kc, &st);
    KT_CHECK(st.puts == 0);
    EXPECT_ONE("kcache_get_stats", "closed");
    KT_CHECK(kcache_verify(kc, 1) == KCACHE_EINVAL);
    EXPECT_ONE("kcache_verify", "closed");
    KT_CHECK(kcache_dir(kc) == NULL);
    EXPECT_ONE("kcache_dir", "closed");
    KT_CHECK(kcache_store_in_use(kc, buf, sizeof buf) == 0);
    EXPECT_ONE("kcache_store_in_use", "closed");
    KT_CHECK(kcache_key_host_from(&k, kc) == KCACHE_EINVAL);
    EXPECT_ONE("kcache_key_host_from", "closed");
    kcache_release(kc, g_held_at_close); /* the payload's allocator was the closed kcache's */
    EXPECT_ONE("kcache_release", "closed");
    kcache_close(kc);
    EXPECT_ONE("kcache_close", "closed");
    kcache_key_free(&k);
    kcache_close(other);
    EXPECT_NONE("the other handle");
}

static void misuse_never_opened(void)
{
    static long not_a_kcache[64];
    kcache_key k;
    const void *d;
    size_t n;
    kcache *kc = open_cache(0); /* one open: a lookup that misses is a real miss */
    reset();
    mkkey(&k, 4);
    KT_CHECK(kcache_get((kcache *)(void *)not_a_kcache, &k, &d, &n) == KCACHE_EINVAL);
    /* no log to reach: the message went to stderr; the assertion is here */
    KT_CHECK_MSG(kt_asserts == 1 && g_log.lines == 0, "a never-opened kcache: %d assertions, %d lines in kc's log", kt_asserts, g_log.lines);
    reset();
    kcache_key_free(&k);
    kcache_close(kc);
}

static void misuse_key_freed(void)
{
    kcache *kc = open_cache(1);
    kcache_key k, junk;
    const void *d = (const void *)1;
    size_t n = 1;
    char buf[128];
    reset();
    mkkey(&k, 5);
    kcache_key_free(&k);
    KT_CHECK(kcache_get(kc, &k, &d, &n) == KCACHE_EINVAL && d == NULL);
    EXPECT_ONE("kcache_get", "kcache_key_free");
    KT_CHECK(kcache_put(kc, &k, "x", 1) == KCACHE_EINVAL);
    EXPECT_ONE("kcache_put", "kcache_key_free");
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_EINVAL);
    EXPECT_ONE("kcache_remove", "kcache_key_free");
    KT_CHECK(kcache_get_or_build(kc, &k, build_one, NULL, &d, &n) == KCACHE_EINVAL);
    EXPECT_ONE("kcache_get_or_build", "kcache_key_free");
    KT_CHECK(kcache_explain(kc, &k, buf, sizeof buf) == 0);
    EXPECT_ONE("kcache_explain", "kcache_key_free");
    KT_CHECK(kcache_key_host_from(&k, kc) == KCACHE_EINVAL);
    EXPECT_ONE("kcache_key_host_from", "kcache_key_free");
    kcache_key_free(&k); /* freeing twice is allowed (a no-op) */
    EXPECT_NONE("kcache_key_free twice");
    /* the key-building calls have no kcache: their message goes to stderr */
    KT_CHECK(kcache_key_str(&k, "a", "b") == KCACHE_EINVAL && kt_asserts == 1);
    reset();
    KT_CHECK(kcache_key_u64(&k, "a", 1) == KCACHE_EINVAL && kt_asserts == 1);
    reset();
    memset(&junk, 0xab, sizeof junk); /* never initialised */
    KT_CHECK(kcache_get(kc, &junk, &d, &n) == KCACHE_EINVAL);
    EXPECT_ONE("kcache_get", "never initialised");
    kcache_close(kc);
    EXPECT_NONE("close");
}

static void misuse_many_held(void)
{
    static const void *held[1200];
    kcache *kc = open_cache(0);
    int i;
    reset();
    for (i = 0; i < 5; i++) put_id(kc, 100 + i, 64 + (size_t)i);
    for (i = 0; i < 1000; i++) held[i] = get_id(kc, 100, 64);
    for (i = 1000; i < 1200; i++) held[i] = get_id(kc, 101 + i % 4, 65 + (size_t)(i % 4));
    for (i = 1199; i >= 0; i -= 2) kcache_release(kc, held[i]);
    for (i = 0; i < 1200; i += 2) kcache_release(kc, held[i]);
    EXPECT_NONE("1,200 hand-outs released");
    kcache_release(kc, held[0]);
    EXPECT_ONE("kcache_release", "released already");
    kcache_release(kc, held[1100]);
    EXPECT_ONE("kcache_release", "released already");
    kcache_close(kc);
}

static void misuse_fork(void)
{
    kcache *kc = open_cache(1);
    const void *d;
    pid_t p;
    int st = 0;
    put_id(kc, 6, 100);
    put_id(kc, 7, 100);
    d = get_id(kc, 6, 100);
    reset();
    fflush(stdout);
    p = fork();
    if (p == 0) {
        const void *e;
        kcache_release(kc, d);                 /* got by the parent */
        e = get_id(kc, 7, 100);                /* the child's own handle hands it out */
        kcache_release(kc, e);
        _exit(g_log.lines == 0 && kt_asserts == 0 && kt_failures_here == 0 ? 0 : 1);
    }
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
    KT_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child reported misuse (or died): status %d", st);
    kcache_release(kc, d);
    EXPECT_NONE("the parent's release");
    kcache_close(kc);
}

static void *storm(void *arg)
{
    kcache *kc = (kcache *)arg;
    int i;
    for (i = 0; i < 200; i++) {
        kcache_key k;
        const void *d;
        size_t n;
        mkkey(&k, 1000 + i % 13);
        if (kcache_get_or_build(kc, &k, build_one, NULL, &d, &n) == KCACHE_OK) kcache_release(kc, d);
        if (kcache_get(kc, &k, &d, &n) == KCACHE_OK) kcache_release(kc, d);
        kcache_key_free(&k);
    }
    return NULL;
}
static void misuse_none(void)
{
    kcache *kc = open_cache(1);
    pthread_t t[4];
    kcache_stats st;
    kcache_key k;
    char buf[256];
    int i;
    reset();
    for (i = 0; i < 4; i++) pthread_create(&t[i], NULL, storm, kc);
    for (i = 0; i < 4; i++) pthread_join(t[i], NULL);
    mkkey(&k, 1000);
    kcache_explain(kc, &k, buf, sizeof buf);
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_OK);
    kcache_key_free(&k);
    kcache_get_stats(kc, &st);
    KT_CHECK(st.builds == 13);
    kcache_close(kc);
    EXPECT_NONE("a normal life");
}

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f)
{
    (void)s; (void)flag; (void)f;
    remove(p);
    return 0;
}

/* a ticket of kcache_get_or_claim ended twice (put twice, put then dropped), or ended through
   another kcache: reported, nothing done (the ticket is freed at its first end: never read) */
static void misuse_ticket_twice(void)
{
    kcache *kc = open_cache(1), *other = open_cache(0);
    kcache_key k;
    const void *d;
    size_t n;
    kcache_ticket *t = NULL;
    reset();
    mkkey(&k, 70);
    KT_CHECK(kcache_get_or_claim(kc, &k, &d, &n, NULL, &t) == KCACHE_CLAIMED && t);
    KT_CHECK(kcache_put_claimed(other, t, "abc", 3) == KCACHE_EINVAL); /* not other's */
    EXPECT_ONE("kcache_put_claimed", "not this kcache's");
    KT_CHECK(kcache_put_claimed(kc, t, "abc", 3) == KCACHE_OK);
    EXPECT_NONE("a claim and its put");
    KT_CHECK(kcache_put_claimed(kc, t, "abc", 3) == KCACHE_EINVAL);
    EXPECT_ONE("kcache_put_claimed", "ended already");
    kcache_drop_claim(kc, t);
    EXPECT_ONE("kcache_drop_claim", "ended already");
    KT_CHECK(kcache_get_or_claim(kc, &k, &d, &n, NULL, &t) == KCACHE_OK && n == 3 && memcmp(d, "abc", 3) == 0);
    kcache_release(kc, d);
    kcache_key_free(&k);
    mkkey(&k, 71); /* a ticket left open at close: dropped, no report */
    KT_CHECK(kcache_get_or_claim(kc, &k, &d, &n, NULL, &t) == KCACHE_CLAIMED && t);
    kcache_key_free(&k);
    kcache_close(kc);
    kcache_close(other);
    EXPECT_NONE("close with a ticket open");
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    setvbuf(stdout, NULL, _IOLBF, 0);
    alarm(120); /* a call on a closed kcache used to hang (> 20 s): the whole program has 120 s */
    snprintf(g_root, sizeof g_root, "%s/kcache-misuse-XXXXXX", t && t[0] == '/' ? t : "/tmp");
    if (!mkdtemp(g_root)) { perror("mkdtemp"); return 2; }
#ifdef NDEBUG
    printf("skip test_misuse: built with NDEBUG (KCACHE_CHECKS 0): nothing is checked\n");
    return 0;
#endif
    KT_RUN(misuse_double_release);
    KT_RUN(misuse_foreign_release);
    KT_RUN(misuse_closed);
    KT_RUN(misuse_never_opened);
    KT_RUN(misuse_key_freed);
    KT_RUN(misuse_many_held);
    KT_RUN(misuse_fork);
    KT_RUN(misuse_ticket_twice);
    KT_RUN(misuse_none);
    nftw(g_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    KT_EXIT();
}

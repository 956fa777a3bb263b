/* test_index.c - per-unit index files and explained misses, as users meet them.
 *
 * Every miss reason produced for real, most of them across two processes (one stores, another
 * misses and asks why), and kcache_explain's sentence checked word by word: cold, a field differs
 * (the closest overload, every differing field with both previews), a dependency's stamp changed
 * (the file; mtime, size, content), evicted (when, and that the size limit did it), rejected (a
 * corrupt entry), caching off, the store unusable; hits from memory and from disk. Stamps under
 * KCACHE_STAMP=hybrid/mtime/content (a touch or a checkout-style rewrite is a hit under hybrid, a
 * miss under mtime). An edited dependency purges the unit's overloads that depend on it and leaves
 * the others and other units alone. misses_by_reason in the stats, KCACHE_DEBUG lines (through
 * cfg.log and on stderr), KCACHE_TRACE's traced misses read from another process. 8 processes
 * adding overloads to one unit at once while another reads the index without the lock; a unit of
 * 3,000 overloads; a unit stored 600 times keeps a small index. Damaged index files (garbage,
 * truncated, a torn last record, a flipped byte, empty, short, another unit's, a damaged header,
 * hostile content with valid checksums, 65 MiB, a symlink, a directory, a FIFO): gets, puts and
 * explain keep working, nothing blocks, and the next put writes a valid index.
 *
 * The index's on-disk format is not assumed: damage is done to files kcache wrote, and hostile
 * content is written through kcache__ix_write.
 *
 * White-box where it helps: kcache__ix_read and kcache__record_parse read the index as kcache does,
 * kcache__ix_name names its file. "Another process" is a fork that opens its own kcache (a kcache
 * is never used across a fork). Every group has its own mkdtemp directory, removed at its end.
 *
 * KT_ONLY=substring runs only the groups whose name contains it; KT_TIMES=1 prints group times.
 *
 * Build: make build/test_index build/asan/test_index */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#include <ftw.h>
#include <sys/wait.h>

#define RUN(fn)                                                                           \
    do {                                                                                  \
        struct timespec t0_, t1_;                                                         \
        if (getenv("KT_ONLY") && !strstr(#fn, getenv("KT_ONLY"))) break;                  \
        clock_gettime(CLOCK_MONOTONIC, &t0_);                                             \
        KT_RUN(fn);                                                                       \
        clock_gettime(CLOCK_MONOTONIC, &t1_);                                             \
        if (getenv("KT_TIMES"))                                                           \
            fprintf(stderr, "  (%s: %.2f s)\n", #fn,                                     \
                    (double)(t1_.tv_sec - t0_.tv_sec) + (t1_.tv_nsec - t0_.tv_nsec) / 1e9); \
    } while (0)

/* ---- the case's directory ----------------------------------------------------------------- */

static char R[128];  /* the case's temp root */
static char S[160];  /* its store: R/st */
static char F[160];  /* a dependency: R/f.cl */
static char G[160];  /* another one: R/g.cl */

static void case_begin(void) {
    snprintf(R, sizeof R, "/tmp/kti.XXXXXX");
    if (!mkdtemp(R)) { perror("mkdtemp"); exit(2); }
    snprintf(S, sizeof S, "%s/st", R);
    snprintf(F, sizeof F, "%s/f.cl", R);
    snprintf(G, sizeof G, "%s/g.cl", R);
}
static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s; (void)f;
    if (flag == FTW_DP) rmdir(p);
    else unlink(p);
    return 0;
}
static void case_end(void) {
    chmod(S, 0700);
    nftw(R, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- another process: the block runs in a fork and reports through its exit status --------- */

static void child_wait(pid_t pid, int line) {
    int st = 0;
    if (pid < 0) { KT_FAILF("line %d: fork: %s", line, strerror(errno)); return; }
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 42) kt_failures_here++; /* it printed its FAIL lines */
    else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        KT_FAILF("line %d: the child process %s %d", line, WIFSIGNALED(st) ? "was killed by signal" : "exited with",
                 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}
#define CHILD_BEGIN                                                                       \
    do {                                                                                  \
        pid_t pid_;                                                                       \
        fflush(NULL);                                                                     \
        pid_ = fork();                                                                    \
        if (pid_ == 0) {                                                                  \
            kt_failures_here = 0;
#define CHILD_END                                                                         \
            fflush(NULL);                                                                 \
            _exit(kt_failures_here ? 42 : 0);                                             \
        }                                                                                 \
        child_wait(pid_, __LINE__);                                                       \
    } while (0)

/* ---- opening, keys, lookups ---------------------------------------------------------------- */

#define HYB KCACHE_STAMP_HYBRID
#define MTIME KCACHE_STAMP_MTIME
#define CONTENT KCACHE_STAMP_CONTENT

typedef struct logbuf { char line[512][400]; int n; } logbuf;
static void log_collect(void *user, const char *line) {
    logbuf *b = (logbuf *)user;
    if (b->n < 512) snprintf(b->line[b->n++], sizeof b->line[0], "%s", line);
}
/* Lines of b starting with prefix. */
static int log_count(const logbuf *b, const char *prefix) {
    int i, c = 0;
    for (i = 0; i < b->n; i++) c += strncmp(b->line[i], prefix, strlen(prefix)) == 0;
    return c;
}
static int log_has(const logbuf *b, const char *line) {
    int i;
    for (i = 0; i < b->n; i++)
        if (strcmp(b->line[i], line) == 0) return 1;
    return 0;
}
static int log_has_prefix(const logbuf *b, const char *start) {
    int i;
    for (i = 0; i < b->n; i++)
        if (strncmp(b->line[i], start, strlen(start)) == 0) return 1;
    return 0;
}
static void log_dump(const logbuf *b) {
    int i;
    for (i = 0; i < b->n; i++) printf("    log: %s\n", b->line[i]);
}

static kcache *kopen_dir(const char *dir, uint64_t max_size, int stamp, int trace, logbuf *lb) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_config_init(&cfg);
    cfg.dir = dir;
    cfg.max_size = max_size;
    cfg.stamp = stamp;
    cfg.trace = trace;
    cfg.lock_timeout_ms = 30000;
    if (lb) { cfg.debug = 1; cfg.log = log_collect; cfg.log_user = lb; }
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) { printf("FAIL %s: kcache_open\n", kt_current); exit(2); }
    return kc;
}
static kcache *kopen(uint64_t max_size, int stamp, int trace, logbuf *lb) {
    kcache *kc = kopen_dir(S, max_size, stamp, trace, lb);
    if (!kcache_dir(kc)) KT_FAILF("no store in %s", S);
    return kc;
}
#define LIMIT ((uint64_t)16 << 20)

static const char *SRC =
    "kernel void blur(global const float *in, global float *out, int w) { int i = get_global_id(0); "
    "out[i] = (in[i - 1] + in[i] + in[i + 1]) / 3.0f; }";
static const char *SRC2 = /* the same first 64 bytes, another end */
    "kernel void blur(global const float *in, global float *out, int w) { int i = get_global_id(0); "
    "out[i] = (in[i - 2] + in[i] + in[i + 2]) / 3.0f; }";
static const char *DEVICE = "pthread-Intel(R) Xeon(R) CPU";

/* A kernel's key: unit, source, options, device, driver. */
static void key_std(kcache_key *k, const char *unit, const char *options) {
    kcache_key_init(k, unit);
    kcache_key_str(k, "source", SRC);
    kcache_key_str(k, "options", options);
    kcache_key_str(k, "device", DEVICE);
    kcache_key_u64(k, "driver", 30100);
}
/* The same with a dependency on a file, under the field name fname. */
static void key_dep(kcache_key *k, const char *unit, const char *options, const char *fname, const char *path) {
    key_std(k, unit, options);
    if (kcache_key_file(k, fname, path) != KCACHE_OK) KT_FAILF("kcache_key_file(%s)", path);
}
static void key_id(kcache_key *k, const char *unit, uint64_t id) {
    key_std(k, unit, "-O2");
    kcache_key_u64(k, "id", id);
}

static kcache_status put_s(kcache *kc, const kcache_key *k, const char *payload) {
    return kcache_put(kc, k, payload, strlen(payload));
}
static kcache_status get_s(kcache *kc, const kcache_key *k) {
    const void *d = NULL;
    size_t n = 0;
    kcache_status s = kcache_get(kc, k, &d, &n);
    if (s == KCACHE_OK) kcache_release(kc, d);
    return s;
}

static char g_ex[8192];
static const char *explain(kcache *kc, const kcache_key *k) {
    size_t n = kcache_explain(kc, k, g_ex, sizeof g_ex);
    if (n != strlen(g_ex)) KT_FAILF("kcache_explain returned %zu for a %zu-character line", n, strlen(g_ex));
    return g_ex;
}

static kcache_stats stats_of(kcache *kc) {
    kcache_stats s;
    kcache_get_stats(kc, &s);
    return s;
}
/* misses_by_reason as expected, in the order of KCACHE_REASONS (hit first: always 0), and misses
   their sum. */
static void check_reasons_at(kcache *kc, int line, uint64_t cold, uint64_t field, uint64_t stamp, uint64_t evicted,
                             uint64_t rejected, uint64_t off, uint64_t unwritable) {
    kcache_stats s = stats_of(kc);
    uint64_t want[KCACHE_REASON_COUNT] = {0};
    uint64_t sum = 0;
    int r;
    want[KCACHE_REASON_COLD] = cold;
    want[KCACHE_REASON_FIELD] = field;
    want[KCACHE_REASON_STAMP] = stamp;
    want[KCACHE_REASON_EVICTED] = evicted;
    want[KCACHE_REASON_REJECTED] = rejected;
    want[KCACHE_REASON_OFF] = off;
    want[KCACHE_REASON_UNWRITABLE] = unwritable;
    for (r = 0; r < KCACHE_REASON_COUNT; r++) {
        if (s.misses_by_reason[r] != want[r])
            KT_FAILF("line %d: misses_by_reason[%s] is %llu, expected %llu", line, kcache_reason_name((kcache_reason)r),
                     (unsigned long long)s.misses_by_reason[r], (unsigned long long)want[r]);
        sum += want[r];
    }
    if (s.misses != sum) KT_FAILF("line %d: misses is %llu, expected %llu", line, (unsigned long long)s.misses, (unsigned long long)sum);
}
#define CHECK_REASONS(kc, cold, field, stamp, evicted, rejected, off, unwritable) \
    check_reasons_at(kc, __LINE__, cold, field, stamp, evicted, rejected, off, unwritable)

/* Copies s into out with its first "YYYY-MM-DD HH:MM:SS" replaced by "<T>"; that time (local) or -1. */
static time_t cut_time(const char *s, char *out, size_t cap) {
    static const char pat[] = "dddd-dd-dd dd:dd:dd";
    size_t n = strlen(s), i, j;
    for (i = 0; i + 19 <= n; i++) {
        for (j = 0; j < 19; j++) {
            char c = s[i + j];
            if (pat[j] == 'd' ? !(c >= '0' && c <= '9') : c != pat[j]) break;
        }
        if (j == 19) {
            struct tm tmv;
            memset(&tmv, 0, sizeof tmv);
            if (sscanf(s + i, "%4d-%2d-%2d %2d:%2d:%2d", &tmv.tm_year, &tmv.tm_mon, &tmv.tm_mday, &tmv.tm_hour, &tmv.tm_min,
                       &tmv.tm_sec) != 6)
                break;
            tmv.tm_year -= 1900;
            tmv.tm_mon -= 1;
            tmv.tm_isdst = -1;
            snprintf(out, cap, "%.*s<T>%s", (int)i, s, s + i + 19);
            return mktime(&tmv);
        }
    }
    snprintf(out, cap, "%s", s);
    return (time_t)-1;
}
/* got must read want word by word, its time ("<T>" in want) between lo and hi. */
#define CHECK_EXPLAIN_T(got, want, lo, hi)                                                          \
    do {                                                                                          \
        char cut_[8192];                                                                          \
        const char *got_ = (got);                                                                 \
        time_t t_ = cut_time(got_, cut_, sizeof cut_);                                            \
        KT_CHECK_STR(cut_, (want));                                                               \
        KT_CHECK_MSG(t_ != (time_t)-1 && t_ >= (lo) - 1 && t_ <= (hi) + 1,                        \
                     "the time in \"%s\" is not between %ld and %ld", got_, (long)(lo), (long)(hi)); \
    } while (0)

/* ---- files ---------------------------------------------------------------------------------- */

static void write_file(const char *p, const void *data, size_t n) {
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) KT_FAILF("cannot write %s", p);
}
static void set_mtime(const char *p, time_t t) {
    struct timespec ts[2];
    ts[0].tv_sec = t;
    ts[0].tv_nsec = 0;
    ts[1] = ts[0];
    if (utimensat(AT_FDCWD, p, ts, 0) != 0) KT_FAILF("utimensat %s: %s", p, strerror(errno));
}
/* Writes text with a given mtime. */
static void dep_write(const char *p, const char *text, time_t mtime) {
    write_file(p, text, strlen(text));
    set_mtime(p, mtime);
}
static unsigned char *read_file(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    unsigned char *b;
    long len;
    *n = 0;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = (unsigned char *)malloc((size_t)len + 1);
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) { free(b); b = NULL; }
    fclose(f);
    if (b) *n = (size_t)len;
    return b;
}
static int exists(const char *p) {
    struct stat s;
    return lstat(p, &s) == 0;
}
static void entry_path(const kcache_key *k, char *out, size_t cap) {
    char hex[33];
    kcache_hash_hex(kcache_key_digest(k), hex);
    snprintf(out, cap, "%s/e/%.2s/%s.kce", S, hex, hex);
}
static int entry_exists(const kcache_key *k) {
    char p[400];
    entry_path(k, p, sizeof p);
    return exists(p);
}
static void index_path(const char *unit, char *out, size_t cap) {
    char rel[48];
    kcache__ix_name(unit, rel);
    snprintf(out, cap, "%s/%s", S, rel);
}
/* Flips the last payload byte of k's entry (its payload checksum then fails). */
static void corrupt_entry(const kcache_key *k) {
    char p[400];
    size_t n;
    unsigned char *b;
    entry_path(k, p, sizeof p);
    b = read_file(p, &n);
    if (!b || n < 100) { KT_FAILF("no entry to corrupt at %s", p); free(b); return; }
    b[n - 1] ^= 0x5a;
    write_file(p, b, n);
    free(b);
}
static int same_digest(kcache_hash128 a, kcache_hash128 b) { return a.lo == b.lo && a.hi == b.hi; }
/* Wall-clock seconds from the clock kcache stamps with. time() reads the coarse clock, which can
   lag a tick behind: a stamp taken before it may then fall in the next second (seen under qemu). */
static time_t wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec;
}

/* The unit's index as kcache reads it (ECORRUPT, ENOENT or OK). */
static kcache_status ix_read(kcache *kc, const char *unit, kcache__ix *ix) {
    return kcache__ix_read(kc->store, unit, ix);
}
static int ix_has(const kcache__ix *ix, int list, const kcache_key *k) {
    return kcache__ix_find(ix, list, kcache_key_digest(k)) >= 0;
}
static uint32_t ix_reason(const kcache__ix *ix, int list, const kcache_key *k) {
    int at = kcache__ix_find(ix, list, kcache_key_digest(k));
    return at >= 0 ? ix->items[list][at].reason : 0xffffffffu;
}

/* ============================================================================================== */
/* cold                                                                                           */
/* ============================================================================================== */

static void reason_cold(void) {
    kcache *kc;
    kcache_key k;
    char want[512];
    case_begin();
    kc = kopen(LIMIT, HYB, 0, NULL); /* one process stores another unit */
    key_std(&k, "sharpen", "-O2");
    KT_CHECK(put_s(kc, &k, "sharpen binary") == KCACHE_OK);
    kcache_key_free(&k);
    kcache_close(kc);
    snprintf(want, sizeof want, "miss: cold: unit \"blur\" never stored in %s", S);
    CHILD_BEGIN
        kc = kopen(LIMIT, HYB, 0, NULL);
        key_std(&k, "blur", "-O2");
        KT_CHECK_STR(explain(kc, &k), want);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        KT_CHECK_STR(explain(kc, &k), want);
        CHECK_REASONS(kc, 1, 0, 0, 0, 0, 0, 0);
        KT_CHECK_EQ_U64(stats_of(kc).rejects, 0);
        kcache_key_free(&k);
        kcache_close(kc);
    CHILD_END;
    case_end();
}

/* ============================================================================================== */
/* a field differs                                                                               */
/* ============================================================================================== */

static void reason_field(void) {
    kcache *kc;
    kcache_key k;
    char want[2048], small[16];
    case_begin();
    kc = kopen(LIMIT, HYB, 0, NULL);
    key_std(&k, "blur", "-cl-fast-relaxed-math"); /* O1 */
    KT_CHECK(put_s(kc, &k, "o1") == KCACHE_OK);
    kcache_key_free(&k);
    kcache_key_init(&k, "blur"); /* O2: two fields from the key below differ */
    kcache_key_str(&k, "source", SRC);
    kcache_key_str(&k, "options", "-cl-fast-relaxed-math");
    kcache_key_str(&k, "device", "gpu-other");
    kcache_key_u64(&k, "driver", 1);
    KT_CHECK(put_s(kc, &k, "o2") == KCACHE_OK);
    kcache_key_free(&k);
    kcache_key_init(&k, "blur"); /* O3 */
    kcache_key_str(&k, "source", "kernel void other(void) {}");
    kcache_key_str(&k, "options", "-cl-opt-disable");
    kcache_key_str(&k, "device", DEVICE);
    kcache_key_u64(&k, "driver", 30100);
    KT_CHECK(put_s(kc, &k, "o3") == KCACHE_OK);
    kcache_key_free(&k);
    kcache_close(kc);

    CHILD_BEGIN
        const char *pre = "miss: a field differs: closest of 3 stored overload(s) of unit \"blur\": ";
        char x[33], y[33];
        size_t full;
        kc = kopen(LIMIT, HYB, 0, NULL);
        /* one field: the issue's own example */
        key_std(&k, "blur", "-cl-mad-enable");
        snprintf(want, sizeof want, "%soptions: \"-cl-fast-relaxed-math\" (stored) vs \"-cl-mad-enable\" (now)", pre);
        KT_CHECK_STR(explain(kc, &k), want);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        KT_CHECK_STR(explain(kc, &k), want);
        full = strlen(want); /* snprintf-style: the full length, cut and terminated */
        KT_CHECK_EQ_U64(kcache_explain(kc, &k, small, sizeof small), full);
        KT_CHECK(memcmp(small, want, sizeof small - 1) == 0 && small[sizeof small - 1] == 0);
        KT_CHECK_EQ_U64(kcache_explain(kc, &k, NULL, 0), full);
        kcache_key_free(&k);
        /* two fields, one of them absent from the stored overload */
        kcache_key_init(&k, "blur");
        kcache_key_str(&k, "source", SRC);
        kcache_key_str(&k, "options", "-cl-fast-relaxed-math");
        kcache_key_str(&k, "device", DEVICE);
        kcache_key_u64(&k, "driver", 30200);
        kcache_key_str(&k, "defines", "-DN=4");
        snprintf(want, sizeof want, "%sdefines: absent (stored) vs \"-DN=4\" (now); driver: \"30100\" (stored) vs \"30200\" (now)", pre);
        KT_CHECK_STR(explain(kc, &k), want);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        kcache_key_free(&k);
        /* a field stored but absent now */
        kcache_key_init(&k, "blur");
        kcache_key_str(&k, "source", SRC);
        kcache_key_str(&k, "options", "-cl-fast-relaxed-math");
        kcache_key_str(&k, "device", DEVICE);
        snprintf(want, sizeof want, "%sdriver: \"30100\" (stored) vs absent (now)", pre);
        KT_CHECK_STR(explain(kc, &k), want);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        kcache_key_free(&k);
        /* values alike in their first 64 bytes: the digests are shown */
        kcache_key_init(&k, "blur");
        kcache_key_str(&k, "source", SRC2);
        kcache_key_str(&k, "options", "-cl-fast-relaxed-math");
        kcache_key_str(&k, "device", DEVICE);
        kcache_key_u64(&k, "driver", 30100);
        kcache_hash_hex(kcache_hash(SRC, strlen(SRC)), x);
        kcache_hash_hex(kcache_hash(SRC2, strlen(SRC2)), y);
        snprintf(want, sizeof want, "%ssource: same first bytes, xxh128 %s (stored) vs %s (now)", pre, x, y);
        KT_CHECK_STR(explain(kc, &k), want);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        kcache_key_free(&k);
        CHECK_REASONS(kc, 0, 4, 0, 0, 0, 0, 0);
        kcache_close(kc);
    CHILD_END;
    case_end();
}

/* ============================================================================================== */
/* a dependency's stamp changed                                                                  */
/* ============================================================================================== */

#define T0 ((time_t)1600000000)

static void reason_stamp_edited(void) {
    kcache *kc;
    kcache_key k;
    char want[1024];
    time_t t0;
    case_begin();
    dep_write(F, "kernel v1", T0);
    kc = kopen(LIMIT, HYB, 0, NULL);
    key_dep(&k, "dep", "-O2", "src", F);
    KT_CHECK(put_s(kc, &k, "v1 binary") == KCACHE_OK);
    kcache_key_free(&k);
    kcache_close(kc);

    dep_write(F, "kernel v2, longer", T0 + 100); /* an edit: mtime, size and content */
    t0 = wall_s();
    CHILD_BEGIN
        kc = kopen(LIMIT, HYB, 0, NULL);
        key_dep(&k, "dep", "-O2", "src", F);
        snprintf(want, sizeof want, "miss: a dependency changed: file src (%s): mtime size content differ", F);
        KT_CHECK_STR(explain(kc, &k), want);
        KT_CHECK(entry_exists(&k));
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        KT_CHECK_MSG(!entry_exists(&k), "the stale entry is still on disk after the miss");
        snprintf(want, sizeof want, "miss: a dependency changed (entry removed at <T>): file src (%s): mtime size content differ", F);
        CHECK_EXPLAIN_T(explain(kc, &k), want, t0, wall_s());
        CHECK_REASONS(kc, 0, 0, 1, 0, 0, 0, 0);
        /* the entry is gone: the next get of the same key misses for the same reason */
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        CHECK_REASONS(kc, 0, 0, 2, 0, 0, 0, 0);
        kcache_key_free(&k);
        kcache_close(kc);
    CHILD_END;
    CHILD_BEGIN /* and from a third process */
        kc = kopen(LIMIT, HYB, 0, NULL);
        key_dep(&k, "dep", "-O2", "src", F);
        snprintf(want, sizeof want, "miss: a dependency changed (entry removed at <T>): file src (%s): mtime size content differ", F);
        CHECK_EXPLAIN_T(explain(kc, &k), want, t0, wall_s());
        /* rebuilt and stored again: a hit */
        KT_CHECK(put_s(kc, &k, "v2 binary") == KCACHE_OK);
        kcache_key_free(&k);
        kcache_close(kc);
    CHILD_END;

    dep_write(F, "kernel v3, LONGER", T0 + 200); /* the same size */
    CHILD_BEGIN
        kc = kopen(LIMIT, HYB, 0, NULL);
        key_dep(&k, "dep", "-O2", "src", F);
        snprintf(want, sizeof want, "miss: a dependency changed: file src (%s): mtime content differ", F);
        KT_CHECK_STR(explain(kc, &k), want);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        CHECK_REASONS(kc, 0, 0, 1, 0, 0, 0, 0);
        kcache_key_free(&k);
        kcache_close(kc);
    CHILD_END;
    case_end();
}

/* A touch or a checkout-style rewrite of an unchanged dependency: a hit under hybrid and content,
   a miss under mtime (explained); an edit that keeps mtime and size: a miss under content only. */
static void stamp_touch_policies(void) {
    kcache *kc;
    kcache_key k;
    char want[1024];
    time_t t0;
    case_begin();
    dep_write(F, "kernel v1", T0);
    kc = kopen(LIMIT, HYB, 0, NULL);
    key_dep(&k, "dep", "-O2", "src", F);
    KT_CHECK(put_s(kc, &k, "v1 bin") == KCACHE_OK);
    kcache_key_free(&k);
    kcache_close(kc);

    set_mtime(F, T0 + 50); /* touch */
    CHILD_BEGIN
        kc = kopen(LIMIT, HYB, 0, NULL);
        key_dep(&k, "dep", "-O2", "src", F);
        snprintf(want, sizeof want, "hit: disk (unit \"dep\", 6 bytes, in %s)", S);
        KT_CHECK_STR(explain(kc, &k), want);
        KT_CHECK(get_s(kc, &k) == KCACHE_OK);
        KT_CHECK_STR(explain(kc, &k), "hit: memory (unit \"dep\", 6 bytes)");
        KT_CHECK_EQ_U64(stats_of(kc).hits_disk, 1);
        CHECK_REASONS(kc, 0, 0, 0, 0, 0, 0, 0);
        kcache_key_free(&k);
        kcache_close(kc);
    CHILD_END;
    CHILD_BEGIN
        kc = kopen(LIMIT, CONTENT, 0, NULL);
        key_dep(&k, "dep", "-O2", "src", F);
        KT_CHECK(get_s(kc, &k) == KCACHE_OK);
        kcache_key_free(&k);
        kcache_close(kc);
    CHILD_END;
    dep_write(F, "kernel v1", T0 + 60); /* git checkout: the same bytes written again */
    CHILD_BEGIN
        kc = kopen(LIMIT, HYB, 0, NULL);
        key_dep(&k, "dep", "-O2", "src", F);
        KT_CHECK(get_s(kc, &k) == KCACHE_OK);
        CHECK_REASONS(kc, 0, 0, 0, 0, 0, 0, 0);
        kcache_key_free(&k);
        kcache_close(kc);
    CHILD_END;
    t0 = wall_s();
    CHILD_BEGIN
        kc = kopen(LIMIT, MTIME, 0, NULL);
        key_dep(&k, "dep", "-O2", "src", F);
        snprintf(want, sizeof want, "miss: a dependency changed: file src (%s): mtime differ", F);
        KT_CHECK_STR(explain(kc, &k), want);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        CHECK_REASONS(kc, 0, 0, 1, 0, 0, 0, 0);
        snprintf(want, sizeof want, "miss: a dependency changed (entry removed at <T>): file src (%s): mtime differ", F);
        CHECK_EXPLAIN_T(explain(kc, &k), want, t0, wall_s());
        kcache_key_free(&k);
        kcache_close(kc);
    CHILD_END;

    /* content: an edit that keeps mtime and size */
    kc = kopen(LIMIT, CONTENT, 0, NULL);
    key_dep(&k, "dep", "-O2", "src", F);
    KT_CHECK(put_s(kc, &k, "v1 bin") == KCACHE_OK);
    kcache_key_free(&k);
    kcache_close(kc);
    dep_write(F, "kernel v9", T0 + 60);
    CHILD_BEGIN
        kc = kopen(LIMIT, MTIME, 0, NULL); /* numba's rule: mtime and size decide */
        key_dep(&k, "dep", "-O2", "src", F);
        KT_CHECK(get_s(kc, &k) == KCACHE_OK);
        kcache_key_free(&k);
        kcache_close(kc);
    CHILD_END;
    CHILD_BEGIN
        kc = kopen(LIMIT, CONTENT, 0, NULL);
        key_dep(&k, "dep", "-O2", "src", F);
        snprintf(want, sizeof want, "miss: a dependency changed: file src (%s): content differ", F);
        KT_CHECK_STR(explain(kc, &k), want);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        CHECK_REASONS(kc, 0, 0, 1, 0, 0, 0, 0);
        kcache_key_free(&k);
        kcache_close(kc);
    CHILD_END;
    case_end();
}

/* The process that stored the entry sees the edit first (its memory holds the entry): the miss
   must still be explained with the file, here and in any other process. */
static void stamp_seen_in_memory(void) {
    kcache *kc;
    kcache_key k, k2;
    char want[1024];
    time_t t0;
    case_begin();
    dep_write(F, "kernel v1", T0);
    kc = kopen(LIMIT, HYB, 0, NULL);
    key_dep(&k, "dep", "-O2", "src", F);
    key_dep(&k2, "dep", "-O3", "src", F);
    KT_CHECK(put_s(kc, &k, "v1 bin") == KCACHE_OK);
    KT_CHECK(put_s(kc, &k2, "v1 bin O3") == KCACHE_OK);
    kcache_key_free(&k);
    kcache_key_free(&k2);
    dep_write(F, "kernel v2, longer", T0 + 100);
    t0 = wall_s();
    key_dep(&k, "dep", "-O2", "src", F);
    key_dep(&k2, "dep", "-O3", "src", F);
    snprintf(want, sizeof want, "miss: a dependency changed: file src (%s): mtime size content differ", F);
    KT_CHECK_STR(explain(kc, &k), want);
    KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
    CHECK_REASONS(kc, 0, 0, 1, 0, 0, 0, 0);
    KT_CHECK(!entry_exists(&k));
    KT_CHECK_MSG(!entry_exists(&k2), "the other overload depending on the edited file was not purged");
    snprintf(want, sizeof want, "miss: a dependency changed (entry removed at <T>): file src (%s): mtime size content differ", F);
    CHECK_EXPLAIN_T(explain(kc, &k), want, t0, wall_s());
    kcache_close(kc);
    CHILD_BEGIN
        kc = kopen(LIMIT, HYB, 0, NULL);
        CHECK_EXPLAIN_T(explain(kc, &k), want, t0, wall_s());
        CHECK_EXPLAIN_T(explain(kc, &k2), want, t0, wall_s());
        kcache_close(kc);
    CHILD_END;
    kcache_key_free(&k);
    kcache_key_free(&k2);
    case_end();
}

/* ============================================================================================== */
/* the purge: an edited dependency takes the unit's overloads that depend on it, not the others  */
/* ============================================================================================== */

static void purge_dependents(void) {
    kcache *kc;
    kcache_key o1, o2, o3, o4, o5, o6, v, w;
    char want[1024];
    time_t t0;
    case_begin();
    dep_write(F, "#define N 4\n", T0);
    dep_write(G, "#define M 8\n", T0);
    kc = kopen(LIMIT, HYB, 0, NULL);
    key_dep(&o1, "pu", "-DA", "src", F);
    key_dep(&o2, "pu", "-DB", "src", F);
    key_dep(&o3, "pu", "-DC", "src", G); /* another file under the same field name */
    key_std(&o4, "pu", "-DD");            /* no file */
    key_dep(&o5, "pu", "-DE", "inc", F); /* the same file under another field name */
    key_dep(&v, "pv", "-DA", "src", F);   /* another unit on the same file */
    key_std(&w, "pw", "-DA");             /* another unit, no file */
    KT_CHECK(put_s(kc, &o1, "o1") == KCACHE_OK);
    KT_CHECK(put_s(kc, &o2, "o2") == KCACHE_OK);
    KT_CHECK(put_s(kc, &o3, "o3") == KCACHE_OK);
    KT_CHECK(put_s(kc, &o4, "o4") == KCACHE_OK);
    KT_CHECK(put_s(kc, &o5, "o5") == KCACHE_OK);
    KT_CHECK(put_s(kc, &v, "v") == KCACHE_OK);
    KT_CHECK(put_s(kc, &w, "w") == KCACHE_OK);
    kcache_close(kc);
    kcache_key_free(&o1); kcache_key_free(&o2); kcache_key_free(&o3); kcache_key_free(&o4);
    kcache_key_free(&o5); kcache_key_free(&v); kcache_key_free(&w);

    dep_write(F, "#define N 16\n", T0 + 100); /* the edit */
    /* an overload stored after the edit depends on F as it is now: it must survive */
    kc = kopen(LIMIT, HYB, 0, NULL);
    key_dep(&o6, "pu", "-DF", "src", F);
    KT_CHECK(put_s(kc, &o6, "o6") == KCACHE_OK);
    kcache_key_free(&o6);
    kcache_close(kc);

    key_dep(&o1, "pu", "-DA", "src", F);
    key_dep(&o2, "pu", "-DB", "src", F);
    key_dep(&o3, "pu", "-DC", "src", G);
    key_std(&o4, "pu", "-DD");
    key_dep(&o5, "pu", "-DE", "inc", F);
    key_dep(&o6, "pu", "-DF", "src", F);
    key_dep(&v, "pv", "-DA", "src", F);
    key_std(&w, "pw", "-DA");
    t0 = wall_s();
    CHILD_BEGIN /* the first process to meet the edit */
        kc = kopen(LIMIT, HYB, 0, NULL);
        KT_CHECK(get_s(kc, &o1) == KCACHE_MISS);
        CHECK_REASONS(kc, 0, 0, 1, 0, 0, 0, 0);
        kcache_close(kc);
    CHILD_END;
    KT_CHECK(!entry_exists(&o1));
    KT_CHECK_MSG(!entry_exists(&o2), "o2 (same unit, depends on the edited file) was not purged");
    KT_CHECK_MSG(!entry_exists(&o5), "o5 (same unit, depends on the edited file as \"inc\") was not purged");
    KT_CHECK_MSG(entry_exists(&o3), "o3 (depends on another file) was purged");
    KT_CHECK_MSG(entry_exists(&o4), "o4 (no dependency) was purged");
    KT_CHECK_MSG(entry_exists(&o6), "o6 (stored after the edit) was purged");
    KT_CHECK_MSG(entry_exists(&v), "another unit's entry on the same file was purged by this unit's miss");
    KT_CHECK_MSG(entry_exists(&w), "another unit's entry was purged");
    CHILD_BEGIN /* another process: explained, the survivors hit, the other unit misses on its own */
        kcache__ix ix;
        kc = kopen(LIMIT, HYB, 0, NULL);
        snprintf(want, sizeof want, "miss: a dependency changed (entry removed at <T>): file src (%s): mtime size content differ", F);
        CHECK_EXPLAIN_T(explain(kc, &o1), want, t0, wall_s());
        CHECK_EXPLAIN_T(explain(kc, &o2), want, t0, wall_s());
        snprintf(want, sizeof want, "miss: a dependency changed (entry removed at <T>): file inc (%s): mtime size content differ", F);
        if (!entry_exists(&o5)) CHECK_EXPLAIN_T(explain(kc, &o5), want, t0, wall_s()); /* else reported above */
        KT_CHECK(ix_read(kc, "pu", &ix) == KCACHE_OK);
        KT_CHECK(!ix_has(&ix, KCACHE__IX_LIVE, &o1) && ix_reason(&ix, KCACHE__IX_GONE, &o1) == KCACHE_REASON_STAMP);
        KT_CHECK(!ix_has(&ix, KCACHE__IX_LIVE, &o2) && ix_reason(&ix, KCACHE__IX_GONE, &o2) == KCACHE_REASON_STAMP);
        KT_CHECK(ix_has(&ix, KCACHE__IX_LIVE, &o3) && ix_has(&ix, KCACHE__IX_LIVE, &o4) && ix_has(&ix, KCACHE__IX_LIVE, &o6));
        kcache__ix_free(&ix);
        KT_CHECK(get_s(kc, &o2) == KCACHE_MISS);
        KT_CHECK(get_s(kc, &o3) == KCACHE_OK);
        KT_CHECK(get_s(kc, &o4) == KCACHE_OK);
        KT_CHECK(get_s(kc, &o6) == KCACHE_OK);
        KT_CHECK(get_s(kc, &w) == KCACHE_OK);
        snprintf(want, sizeof want, "miss: a dependency changed: file src (%s): mtime size content differ", F);
        KT_CHECK_STR(explain(kc, &v), want);
        KT_CHECK(get_s(kc, &v) == KCACHE_MISS);
        KT_CHECK(!entry_exists(&v));
        CHECK_REASONS(kc, 0, 0, 2, 0, 0, 0, 0);
        KT_CHECK_EQ_U64(stats_of(kc).hits_disk, 4);
        kcache_close(kc);
    CHILD_END;
    kcache_key_free(&o1); kcache_key_free(&o2); kcache_key_free(&o3); kcache_key_free(&o4);
    kcache_key_free(&o5); kcache_key_free(&o6); kcache_key_free(&v); kcache_key_free(&w);
    case_end();
}

/* ============================================================================================== */
/* evicted                                                                                       */
/* ============================================================================================== */

#define EV_LIMIT ((uint64_t)64 << 10)
#define EV_PAYLOAD 8000

/* The first of a unit's overloads 0..3 whose entry is gone, or -1. */
static int gone_of(const char *unit) {
    kcache_key k;
    int i, gone = -1;
    for (i = 0; i < 4 && gone < 0; i++) {
        key_id(&k, unit, (uint64_t)i);
        if (!entry_exists(&k)) gone = i;
        kcache_key_free(&k);
    }
    return gone;
}

static void reason_evicted(void) {
    kcache *kc;
    kcache_key k;
    static char payload[EV_PAYLOAD];
    static logbuf lb;
    char want[1024];
    int i, evicted_a = 0, evicted_c = 0, named = 0;
    uint64_t evictions = 0;
    time_t t0, t1;
    case_begin();
    memset(payload, 'x', sizeof payload);
    memset(&lb, 0, sizeof lb);
    t0 = wall_s();
    kc = kopen(EV_LIMIT, HYB, 0, &lb);
    for (i = 0; i < 4; i++) { key_id(&k, "ev.a", (uint64_t)i); KT_CHECK(kcache_put(kc, &k, payload, sizeof payload) == KCACHE_OK); kcache_key_free(&k); }
    for (i = 0; i < 4; i++) { key_id(&k, "ev.c", (uint64_t)i); KT_CHECK(kcache_put(kc, &k, payload, sizeof payload) == KCACHE_OK); kcache_key_free(&k); }
    for (i = 0; i < 60 && (gone_of("ev.a") < 0 || gone_of("ev.c") < 0); i++) { /* until both units lost an overload */
        key_id(&k, "ev.b", (uint64_t)i);
        KT_CHECK(kcache_put(kc, &k, payload, sizeof payload) == KCACHE_OK);
        kcache_key_free(&k);
    }
    key_id(&k, "ev.a", 99); /* ev.a's index notices its evicted overloads now; ev.c's never does */
    KT_CHECK(kcache_put(kc, &k, payload, sizeof payload) == KCACHE_OK);
    kcache_key_free(&k);
    evictions = stats_of(kc).evictions;
    kcache_close(kc);
    t1 = wall_s();
    /* the debug lines: every eviction named with its unit */
    for (i = 0; i < lb.n; i++) {
        unsigned long long n = 0, bytes = 0;
        char units[400];
        const char *p;
        if (strncmp(lb.line[i], "evict ", 6) != 0) continue;
        units[0] = 0;
        if (sscanf(lb.line[i], "evict %llu entries (%llu bytes) to stay under the limit: %399[^\n]", &n, &bytes, units) < 2) {
            KT_FAILF("eviction line \"%s\"", lb.line[i]);
            continue;
        }
        for (p = units; (p = strstr(p, "ev.")) != NULL; p += 3) named++;
        KT_CHECK_MSG(strstr(units, "ev.a") || strstr(units, "ev.c") || strstr(units, "ev.b"), "eviction line without its units: \"%s\"", lb.line[i]);
    }
    KT_CHECK_MSG(evictions > 0, "no eviction under a %llu-byte limit", (unsigned long long)EV_LIMIT);
    KT_CHECK_MSG((uint64_t)named == evictions, "%d units named in the eviction lines for %llu evictions", named, (unsigned long long)evictions);
    for (i = 0; i < 4; i++) {
        key_id(&k, "ev.a", (uint64_t)i); evicted_a += !entry_exists(&k); kcache_key_free(&k);
        key_id(&k, "ev.c", (uint64_t)i); evicted_c += !entry_exists(&k); kcache_key_free(&k);
    }
    KT_CHECK_MSG(evicted_a >= 1 && evicted_c >= 1, "evicted: %d of ev.a, %d of ev.c (never used, all of them: the hand takes them as it comes)",
                 evicted_a, evicted_c);

    CHILD_BEGIN
        kcache__ix ix;
        int misses = 0;
        kc = kopen(EV_LIMIT, HYB, 0, NULL);
        /* the indexes still know them: listed live with the entry gone (ev.c's, never written since),
           or moved to the gone list as evicted (ev.a's, if the put after rewrote it) */
        for (i = 0; i < 2; i++) {
            KT_CHECK(ix_read(kc, i ? "ev.c" : "ev.a", &ix) == KCACHE_OK);
            key_id(&k, i ? "ev.c" : "ev.a", (uint64_t)(gone_of(i ? "ev.c" : "ev.a") < 0 ? 0 : gone_of(i ? "ev.c" : "ev.a")));
            KT_CHECK_MSG(ix_has(&ix, KCACHE__IX_LIVE, &k) || ix_reason(&ix, KCACHE__IX_GONE, &k) == KCACHE_REASON_EVICTED,
                         "%s's index forgot its evicted overload", i ? "ev.c" : "ev.a");
            kcache_key_free(&k);
            kcache__ix_free(&ix);
        }
        snprintf(want, sizeof want, "miss: evicted by the size limit: removed from %s at <T> (store limit %llu bytes)", S,
                 (unsigned long long)EV_LIMIT);
        for (i = 0; i < 8; i++) {
            key_id(&k, i < 4 ? "ev.a" : "ev.c", (uint64_t)(i % 4));
            if (!entry_exists(&k)) {
                CHECK_EXPLAIN_T(explain(kc, &k), want, t0, t1);
                KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
                misses++;
                CHECK_EXPLAIN_T(explain(kc, &k), want, t0, t1);
            }
            kcache_key_free(&k);
        }
        CHECK_REASONS(kc, 0, 0, 0, (uint64_t)misses, 0, 0, 0);
        kcache_close(kc);
    CHILD_END;
    if (kt_failures_here) log_dump(&lb);
    case_end();
}

/* ============================================================================================== */
/* rejected                                                                                      */
/* ============================================================================================== */

static void reason_rejected(void) {
    kcache *kc;
    kcache_key k;
    char want[1024];
    time_t t0;
    case_begin();
    kc = kopen(LIMIT, HYB, 0, NULL);
    key_std(&k, "rj", "-O2");
    KT_CHECK(put_s(kc, &k, "a binary of some length, long enough") == KCACHE_OK);
    kcache_close(kc);
    corrupt_entry(&k);
    t0 = wall_s();
    CHILD_BEGIN
        kc = kopen(LIMIT, HYB, 0, NULL);
        snprintf(want, sizeof want,
                 "miss: rejected: a corrupt entry or a binary the driver refused: the entry for unit \"rj\" in %s fails validation; "
                 "the next get removes it", S);
        KT_CHECK_STR(explain(kc, &k), want);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        KT_CHECK(!entry_exists(&k));
        KT_CHECK_EQ_U64(stats_of(kc).rejects, 1);
        CHECK_REASONS(kc, 0, 0, 0, 0, 1, 0, 0);
        kcache_close(kc);
    CHILD_END;
    CHILD_BEGIN /* later, elsewhere */
        kc = kopen(LIMIT, HYB, 0, NULL);
        snprintf(want, sizeof want, "miss: rejected: a corrupt entry or a binary the driver refused: the entry of unit \"rj\" was removed at <T>");
        CHECK_EXPLAIN_T(explain(kc, &k), want, t0, wall_s());
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        CHECK_REASONS(kc, 0, 0, 0, 0, 1, 0, 0);
        /* stored again: a hit, and the gone record is forgotten */
        KT_CHECK(put_s(kc, &k, "rebuilt") == KCACHE_OK);
        kcache_close(kc);
    CHILD_END;
    CHILD_BEGIN
        kc = kopen(LIMIT, HYB, 0, NULL);
        KT_CHECK(get_s(kc, &k) == KCACHE_OK);
        CHECK_REASONS(kc, 0, 0, 0, 0, 0, 0, 0);
        kcache_close(kc);
    CHILD_END;
    kcache_key_free(&k);
    case_end();
}

/* ============================================================================================== */
/* caching off, the store unusable                                                               */
/* ============================================================================================== */

static void reason_off(void) {
    kcache_config cfg;
    kcache *kc;
    kcache_key k;
    case_begin();
    kcache_config_init(&cfg);
    cfg.dir = S;
    cfg.enable = 0;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    key_std(&k, "off", "-O2");
    KT_CHECK(put_s(kc, &k, "x") == KCACHE_EDISABLED);
    KT_CHECK_STR(explain(kc, &k), "miss: caching off (KCACHE_ENABLE=0)");
    KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
    CHECK_REASONS(kc, 0, 0, 0, 0, 0, 1, 0);
    kcache_close(kc);
    CHILD_BEGIN /* the environment's switch */
        setenv("KCACHE_ENABLE", "0", 1);
        kcache_config_init(&cfg);
        cfg.dir = S;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        KT_CHECK_STR(explain(kc, &k), "miss: caching off (KCACHE_ENABLE=0)");
        CHECK_REASONS(kc, 0, 0, 0, 0, 0, 1, 0);
        kcache_close(kc);
    CHILD_END;
    kcache_key_free(&k);
    case_end();
}

/* A process stored the key; another finds the store unusable: its miss is not "cold". */
static void reason_unwritable(void) {
    kcache *kc;
    kcache_key k;
    case_begin();
    kc = kopen(LIMIT, HYB, 0, NULL);
    key_std(&k, "uw", "-O2");
    KT_CHECK(put_s(kc, &k, "stored") == KCACHE_OK);
    kcache_close(kc);
    chmod(S, 0777); /* writable by others: refused */
    CHILD_BEGIN
        const char *e;
        kc = kopen_dir(S, LIMIT, HYB, 0, NULL);
        KT_CHECK(kcache_dir(kc) == NULL);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        e = explain(kc, &k);
        KT_CHECK_MSG(strncmp(e, "miss: the store is unusable", 27) == 0 && strstr(e, "writable by group or others"),
                     "a miss because the store is refused reads \"%s\"", e);
        CHECK_REASONS(kc, 0, 0, 0, 0, 0, 0, 1);
        kcache_close(kc);
    CHILD_END;
    chmod(S, 0700);
    CHILD_BEGIN /* KCACHE_DIR names a regular file */
        char file[300];
        const char *e;
        snprintf(file, sizeof file, "%s/plainfile", R);
        write_file(file, "x", 1);
        kc = kopen_dir(file, LIMIT, HYB, 0, NULL);
        KT_CHECK(kcache_dir(kc) == NULL);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        e = explain(kc, &k);
        KT_CHECK_MSG(strncmp(e, "miss: the store is unusable", 27) == 0, "a miss because the store cannot be created reads \"%s\"", e);
        CHECK_REASONS(kc, 0, 0, 0, 0, 0, 0, 1);
        kcache_close(kc);
    CHILD_END;
    kcache_key_free(&k);
    case_end();
}

/* ============================================================================================== */
/* hits                                                                                          */
/* ============================================================================================== */

static void hits_explained(void) {
    kcache *kc;
    kcache_key k;
    char want[512];
    case_begin();
    kc = kopen(LIMIT, HYB, 0, NULL);
    key_std(&k, "hx", "-O2");
    KT_CHECK(put_s(kc, &k, "12345") == KCACHE_OK);
    KT_CHECK_STR(explain(kc, &k), "hit: memory (unit \"hx\", 5 bytes)");
    kcache_close(kc);
    CHILD_BEGIN
        kc = kopen(LIMIT, HYB, 0, NULL);
        snprintf(want, sizeof want, "hit: disk (unit \"hx\", 5 bytes, in %s)", S);
        KT_CHECK_STR(explain(kc, &k), want);
        KT_CHECK(get_s(kc, &k) == KCACHE_OK);
        KT_CHECK_STR(explain(kc, &k), "hit: memory (unit \"hx\", 5 bytes)");
        KT_CHECK_EQ_U64(stats_of(kc).hits_disk, 1);
        KT_CHECK(get_s(kc, &k) == KCACHE_OK);
        KT_CHECK_EQ_U64(stats_of(kc).hits_mem, 1);
        CHECK_REASONS(kc, 0, 0, 0, 0, 0, 0, 0);
        kcache_close(kc);
    CHILD_END;
    kcache_key_free(&k);
    case_end();
}

/* ============================================================================================== */
/* misses by reason: one process meets each reason once                                          */
/* ============================================================================================== */

static void stats_by_reason(void) {
    kcache *kc;
    kcache_key cold, field, stamp, ev, rej, filler;
    static char payload[EV_PAYLOAD];
    int i;
    case_begin();
    memset(payload, 'y', sizeof payload);
    dep_write(F, "v1", T0);
    kc = kopen(EV_LIMIT, HYB, 0, NULL);
    key_id(&ev, "s.ev", 0); /* never used: fillers, never used either, evict it as the hand comes by */
    KT_CHECK(kcache_put(kc, &ev, payload, sizeof payload) == KCACHE_OK);
    for (i = 0; i < 100 && (i < 10 || entry_exists(&ev)); i++) {
        key_id(&filler, "s.filler", (uint64_t)i);
        KT_CHECK(kcache_put(kc, &filler, payload, sizeof payload) == KCACHE_OK);
        kcache_key_free(&filler);
    }
    key_std(&field, "s.field", "-O2");
    KT_CHECK(put_s(kc, &field, "f") == KCACHE_OK);
    kcache_key_free(&field);
    key_dep(&stamp, "s.stamp", "-O2", "src", F);
    KT_CHECK(put_s(kc, &stamp, "s") == KCACHE_OK);
    kcache_key_free(&stamp);
    key_std(&rej, "s.rej", "-O2");
    KT_CHECK(put_s(kc, &rej, "a rejected binary, some bytes") == KCACHE_OK);
    kcache_close(kc);
    KT_CHECK(!entry_exists(&ev));
    corrupt_entry(&rej);
    dep_write(F, "v2 edited", T0 + 10);
    CHILD_BEGIN
        kc = kopen(EV_LIMIT, HYB, 0, NULL);
        key_std(&cold, "s.cold", "-O2");
        key_std(&field, "s.field", "-O3");
        key_dep(&stamp, "s.stamp", "-O2", "src", F);
        KT_CHECK(get_s(kc, &cold) == KCACHE_MISS);
        KT_CHECK(get_s(kc, &field) == KCACHE_MISS);
        KT_CHECK(get_s(kc, &stamp) == KCACHE_MISS);
        KT_CHECK(get_s(kc, &ev) == KCACHE_MISS);
        KT_CHECK(get_s(kc, &rej) == KCACHE_MISS);
        CHECK_REASONS(kc, 1, 1, 1, 1, 1, 0, 0);
        KT_CHECK_EQ_U64(stats_of(kc).rejects, 1);
        KT_CHECK_EQ_U64(stats_of(kc).misses_by_reason[KCACHE_REASON_HIT], 0);
        kcache_key_free(&cold);
        kcache_key_free(&field);
        kcache_key_free(&stamp);
        kcache_close(kc);
    CHILD_END;
    kcache_key_free(&ev);
    kcache_key_free(&rej);
    case_end();
}

/* ============================================================================================== */
/* KCACHE_DEBUG                                                                                  */
/* ============================================================================================== */

static void debug_lines(void) {
    static logbuf lb;
    static char payload[EV_PAYLOAD];
    kcache *kc, *kc2;
    kcache_key k, k3, x;
    int i, ev_lines;
    case_begin();
    memset(&lb, 0, sizeof lb);
    memset(payload, 'z', sizeof payload);
    dep_write(F, "v1", T0);
    kc = kopen(EV_LIMIT, HYB, 0, &lb);
    key_std(&k, "dbg", "-O2");
    KT_CHECK(put_s(kc, &k, "0123456789") == KCACHE_OK);
    KT_CHECK(log_has(&lb, "put dbg (10 bytes)"));
    KT_CHECK(get_s(kc, &k) == KCACHE_OK);
    KT_CHECK(log_has(&lb, "hit memory dbg (10 bytes)"));
    key_std(&k3, "dbg.rej", "-O2");
    KT_CHECK(put_s(kc, &k3, "a binary to be damaged on disk") == KCACHE_OK);
    key_dep(&x, "dbg.dep", "-O2", "src", F);
    KT_CHECK(put_s(kc, &x, "dep") == KCACHE_OK);
    kcache_key_free(&x);
    kcache_close(kc);
    corrupt_entry(&k3);
    dep_write(F, "v2 edited", T0 + 10);

    kc2 = kopen(EV_LIMIT, HYB, 0, &lb);
    KT_CHECK(get_s(kc2, &k) == KCACHE_OK);
    KT_CHECK(log_has(&lb, "hit disk dbg (10 bytes)"));
    key_std(&x, "dbg.none", "-O2");
    KT_CHECK(get_s(kc2, &x) == KCACHE_MISS);
    KT_CHECK(log_has(&lb, "miss dbg.none: never stored"));
    kcache_key_free(&x);
    key_std(&x, "dbg", "-O3");
    KT_CHECK(get_s(kc2, &x) == KCACHE_MISS);
    /* the line names the field, as kcache_explain does */
    KT_CHECK(log_has(&lb, "miss dbg: a field differs: closest of 1 stored overload(s) of unit \"dbg\": options: \"-O2\" (stored) vs \"-O3\" (now)"));
    kcache_key_free(&x);
    /* a key never stored under a unit of many overloads (by id): said to be a new overload, the closest named */
    for (i = 0; i < 5; i++) {
        key_id(&x, "dbg.ids", (uint64_t)i);
        KT_CHECK(put_s(kc2, &x, "id") == KCACHE_OK);
        kcache_key_free(&x);
    }
    key_id(&x, "dbg.ids", 9);
    KT_CHECK(get_s(kc2, &x) == KCACHE_MISS);
    KT_CHECK(log_has_prefix(&lb, "miss dbg.ids: a field differs: never stored: a new overload (the unit's stored overloads differ among themselves where it differs from them): closest of 5 stored overload(s) of unit \"dbg.ids\": "));
    kcache_key_free(&x);
    KT_CHECK(get_s(kc2, &k3) == KCACHE_MISS);
    KT_CHECK(log_has(&lb, "reject dbg.rej: the stored entry is corrupt; removed"));
    KT_CHECK(log_has(&lb, "miss dbg.rej: rejected: a corrupt entry or a binary the driver refused"));
    key_dep(&x, "dbg.dep", "-O2", "src", F);
    KT_CHECK(get_s(kc2, &x) == KCACHE_MISS);
    KT_CHECK(log_has(&lb, "miss dbg.dep: a dependency changed"));
    kcache_key_free(&x);
    for (i = 0; i < 10; i++) {
        key_id(&x, "dbg.big", (uint64_t)i);
        KT_CHECK(kcache_put(kc2, &x, payload, sizeof payload) == KCACHE_OK);
        kcache_key_free(&x);
    }
    ev_lines = log_count(&lb, "evict ");
    KT_CHECK_MSG(ev_lines >= 1, "no eviction line");
    for (i = 0; i < lb.n; i++)
        if (strncmp(lb.line[i], "evict ", 6) == 0)
            KT_CHECK_MSG(strstr(lb.line[i], " to stay under the limit: dbg") != NULL, "eviction line without its unit: \"%s\"", lb.line[i]);
    /* exactly one line per event */
    KT_CHECK_EQ_U64(log_count(&lb, "put "), 18);
    KT_CHECK_EQ_U64(log_count(&lb, "hit "), 2);
    KT_CHECK_EQ_U64(log_count(&lb, "miss "), 5);
    KT_CHECK_EQ_U64(log_count(&lb, "reject "), 1);
    KT_CHECK_EQ_U64((uint64_t)ev_lines > 0 ? 1 : 0, 1);
    kcache_close(kc2);
    if (kt_failures_here) log_dump(&lb);

    CHILD_BEGIN /* KCACHE_DEBUG=1 from the environment: stderr, prefixed */
        char errpath[300];
        size_t n;
        unsigned char *text;
        kcache_config cfg;
        int fd;
        snprintf(errpath, sizeof errpath, "%s/stderr.txt", R);
        fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        close(fd);
        setenv("KCACHE_DEBUG", "1", 1);
        kcache_config_init(&cfg);
        cfg.dir = S;
        cfg.max_size = EV_LIMIT;
        kcache_open(&kc, &cfg);
        key_std(&x, "dbg2", "-O2");
        put_s(kc, &x, "hello");
        get_s(kc, &x);
        kcache_key_free(&x);
        key_std(&x, "dbg2.none", "-O2");
        get_s(kc, &x);
        kcache_key_free(&x);
        kcache_close(kc);
        fflush(stderr);
        text = read_file(errpath, &n);
        KT_CHECK(text != NULL);
        if (text) {
            text[n] = 0;
            KT_CHECK_MSG(strstr((char *)text, "kcache: put dbg2 (5 bytes)\n") != NULL, "stderr: %s", text);
            KT_CHECK_MSG(strstr((char *)text, "kcache: hit memory dbg2 (5 bytes)\n") != NULL, "stderr: %s", text);
            KT_CHECK_MSG(strstr((char *)text, "kcache: miss dbg2.none: never stored\n") != NULL, "stderr: %s", text);
        }
        free(text);
    CHILD_END;
    kcache_key_free(&k);
    kcache_key_free(&k3);
    case_end();
}

/* ============================================================================================== */
/* KCACHE_TRACE                                                                                  */
/* ============================================================================================== */

static void trace_misses(void) {
    kcache *kc;
    kcache_key k, miss_key, cold_key;
    pid_t me = getpid();
    time_t t0, t1;
    int i;
    case_begin();
    t0 = wall_s();
    kc = kopen(LIMIT, HYB, 1, NULL);
    key_std(&k, "tr", "-O2");
    KT_CHECK(put_s(kc, &k, "stored") == KCACHE_OK);
    kcache_key_free(&k);
    key_std(&miss_key, "tr", "-O3 -cl-std=CL2.0");
    kcache_key_bytes(&miss_key, "spirv", "\x03\x02\x23\x07\x00\x01\x00\x00", 8);
    KT_CHECK(get_s(kc, &miss_key) == KCACHE_MISS);
    key_std(&cold_key, "tr.cold", "-O2");
    KT_CHECK(get_s(kc, &cold_key) == KCACHE_MISS);
    kcache_close(kc);
    t1 = wall_s();
    CHILD_BEGIN /* another process, tracing off itself, reads what the first one missed */
        kcache__ix ix;
        kcache_key rec;
        char want[512];
        kc = kopen(LIMIT, HYB, 0, NULL);
        KT_CHECK(ix_read(kc, "tr", &ix) == KCACHE_OK);
        KT_CHECK_EQ_U64(ix.n[KCACHE__IX_MISSED], 1);
        KT_CHECK_EQ_U64(ix.n[KCACHE__IX_LIVE], 1);
        if (ix.n[KCACHE__IX_MISSED] == 1) {
            const kcache__ix_item *it = &ix.items[KCACHE__IX_MISSED][0];
            KT_CHECK(same_digest(it->digest, kcache_key_digest(&miss_key)));
            KT_CHECK_EQ_U64(it->reason, KCACHE_REASON_FIELD);
            KT_CHECK_EQ_U64(it->pid, (uint64_t)me);
            KT_CHECK_MSG(it->when >= (int64_t)(t0 - 1) * 1000000000 && it->when <= (int64_t)(t1 + 1) * 1000000000,
                         "when %lld, t0 %lld, t1 %lld", (long long)it->when, (long long)t0, (long long)t1);
            KT_CHECK(kcache__record_parse(it->rec, it->rec_len, &rec) == KCACHE_OK);
            if (rec.error == KCACHE_OK) {
                const kcache_key_field *a = kcache__key_fields(&rec), *b = kcache__key_fields(&miss_key);
                uint32_t j;
                KT_CHECK_STR(rec.unit, "tr");
                KT_CHECK_EQ_U64(rec.count, miss_key.count);
                for (j = 0; j < rec.count && j < miss_key.count; j++) {
                    KT_CHECK_STR(a[j].name, b[j].name);
                    KT_CHECK_STR(a[j].preview, b[j].preview);
                    KT_CHECK(a[j].type == b[j].type && a[j].size == b[j].size && same_digest(a[j].digest, b[j].digest));
                }
                KT_CHECK(same_digest(kcache_key_digest(&rec), kcache_key_digest(&miss_key)));
            }
            kcache_key_free(&rec);
        }
        kcache__ix_free(&ix);
        KT_CHECK(ix_read(kc, "tr.cold", &ix) == KCACHE_OK);
        KT_CHECK(ix.n[KCACHE__IX_LIVE] == 0 && ix.n[KCACHE__IX_MISSED] == 1);
        if (ix.n[KCACHE__IX_MISSED] == 1) KT_CHECK_EQ_U64(ix.items[KCACHE__IX_MISSED][0].reason, KCACHE_REASON_COLD);
        kcache__ix_free(&ix);
        /* a unit with only traced misses is still cold */
        snprintf(want, sizeof want, "miss: cold: unit \"tr.cold\" never stored in %s", S);
        KT_CHECK_STR(explain(kc, &cold_key), want);
        /* without tracing, a miss writes nothing */
        key_std(&k, "tr.none", "-O2");
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        KT_CHECK(ix_read(kc, "tr.none", &ix) == KCACHE_ENOENT);
        kcache_key_free(&k);
        kcache_close(kc);
    CHILD_END;
    CHILD_BEGIN /* KCACHE_TRACE=1 from the environment; the list is bounded, newest last */
        kcache_config cfg;
        kcache__ix ix;
        setenv("KCACHE_TRACE", "1", 1);
        kcache_config_init(&cfg);
        cfg.dir = S;
        cfg.max_size = LIMIT;
        kcache_open(&kc, &cfg);
        for (i = 0; i < 40; i++) {
            key_id(&k, "tr", (uint64_t)i);
            KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
            kcache_key_free(&k);
        }
        KT_CHECK(ix_read(kc, "tr", &ix) == KCACHE_OK);
        KT_CHECK_EQ_U64(ix.n[KCACHE__IX_MISSED], KCACHE__IX_KEEP);
        key_id(&k, "tr", 39);
        KT_CHECK(ix.n[KCACHE__IX_MISSED] > 0 && same_digest(ix.items[KCACHE__IX_MISSED][ix.n[KCACHE__IX_MISSED] - 1].digest, kcache_key_digest(&k)));
        kcache_key_free(&k);
        KT_CHECK_EQ_U64(ix.n[KCACHE__IX_LIVE], 1);
        kcache__ix_free(&ix);
        kcache_close(kc);
    CHILD_END;
    kcache_key_free(&miss_key);
    kcache_key_free(&cold_key);
    case_end();
}

/* ============================================================================================== */
/* 8 processes adding overloads to one unit at once; a reader without the lock                   */
/* ============================================================================================== */

#define WRITERS 8
#define PER_WRITER 25

static void key_hot(kcache_key *k, int proc, int i) {
    kcache_key_init(k, "hot");
    kcache_key_str(k, "source", SRC);
    kcache_key_u64(k, "proc", (uint64_t)proc);
    kcache_key_u64(k, "i", (uint64_t)i);
}

static void concurrent_overloads(void) {
    kcache *kc;
    kcache_key k;
    int go[2], p, i;
    volatile int *shared;
    pid_t pids[WRITERS + 1];
    kcache__ix ix;
    case_begin();
    shared = (volatile int *)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if ((void *)shared == MAP_FAILED || pipe(go) != 0) { KT_FAILF("mmap/pipe"); case_end(); return; }
    shared[0] = 0; /* done */
    kc = kopen(LIMIT, HYB, 0, NULL); /* the store exists before the storm */
    kcache_close(kc);
    fflush(NULL);
    for (p = 0; p <= WRITERS; p++) {
        pids[p] = fork();
        if (pids[p] == 0) {
            char c;
            int bad = 0;
            close(go[1]);
            if (read(go[0], &c, 1) != 0) bad++; /* everyone starts when the pipe closes */
            kc = kopen(LIMIT, HYB, 0, NULL);
            if (p < WRITERS) {
                for (i = 0; i < PER_WRITER; i++) {
                    kcache_status s;
                    key_hot(&k, p, i);
                    s = kcache_put(kc, &k, &i, sizeof i);
                    if (s != KCACHE_OK) { printf("FAIL %s: writer %d put %d: %s\n", kt_current, p, i, kcache_strerror(s)); bad++; }
                    kcache_key_free(&k);
                }
            } else { /* the reader: never a torn index, the overloads only grow */
                uint32_t last = 0;
                long reads = 0, torn = 0;
                char buf[2048];
                key_hot(&k, 99, 0);
                while (!shared[0]) {
                    kcache_status s = ix_read(kc, "hot", &ix);
                    if (s == KCACHE_OK) {
                        if (ix.n[KCACHE__IX_LIVE] < last) { printf("FAIL %s: the index went from %u to %u overloads\n", kt_current, last, ix.n[KCACHE__IX_LIVE]); bad++; }
                        last = ix.n[KCACHE__IX_LIVE];
                        kcache__ix_free(&ix);
                        reads++;
                    } else if (s != KCACHE_ENOENT) torn++;
                    kcache_explain(kc, &k, buf, sizeof buf);
                    if (strstr(buf, "damaged")) torn++;
                }
                if (torn) { printf("FAIL %s: the reader saw a damaged index %ld times (%ld good reads)\n", kt_current, torn, reads); bad++; }
                if (reads == 0) { printf("FAIL %s: the reader never read the index during the storm\n", kt_current); bad++; }
                kcache_key_free(&k);
            }
            kcache_close(kc);
            fflush(NULL);
            _exit(bad ? 42 : 0);
        }
    }
    close(go[0]);
    close(go[1]);
    for (p = 0; p < WRITERS; p++) child_wait(pids[p], __LINE__);
    shared[0] = 1;
    child_wait(pids[WRITERS], __LINE__);

    kc = kopen(LIMIT, HYB, 0, NULL);
    KT_CHECK(ix_read(kc, "hot", &ix) == KCACHE_OK);
    KT_CHECK_EQ_U64(ix.n[KCACHE__IX_LIVE], WRITERS * PER_WRITER);
    KT_CHECK_EQ_U64(ix.n[KCACHE__IX_GONE], 0);
    {
        int missing = 0, notlive = 0;
        for (p = 0; p < WRITERS; p++)
            for (i = 0; i < PER_WRITER; i++) {
                key_hot(&k, p, i);
                notlive += !ix_has(&ix, KCACHE__IX_LIVE, &k);
                missing += get_s(kc, &k) != KCACHE_OK;
                kcache_key_free(&k);
            }
        KT_CHECK_MSG(notlive == 0, "%d overloads lost from the index", notlive);
        KT_CHECK_MSG(missing == 0, "%d overloads do not hit", missing);
    }
    kcache__ix_free(&ix);
    /* and a miss in that unit names the closest of all of them */
    key_hot(&k, 0, 999);
    KT_CHECK_MSG(strstr(explain(kc, &k), "closest of 200 stored overload(s) of unit \"hot\": i: \"") != NULL, "%s", g_ex);
    kcache_key_free(&k);
    kcache_close(kc);
    munmap((void *)shared, 4096);
    case_end();
}

/* ============================================================================================== */
/* damaged index files                                                                           */
/* ============================================================================================== */

enum { DMG_GARBAGE, DMG_TRUNCATED, DMG_TORN_TAIL, DMG_FLIPPED, DMG_EMPTY, DMG_SHORT, DMG_OTHER_UNIT, DMG_HEADER, DMG_CRAFTED,
       DMG_SPARSE_HUGE, DMG_SYMLINK, DMG_DIR_EMPTY, DMG_DIR_FULL, DMG_KINDS };
static const char *const dmg_name[DMG_KINDS] = {"garbage", "truncated", "torn tail", "flipped", "empty", "short", "another unit's",
                                                "garbage after the magic", "crafted items (valid checksums)",
                                                "sparse 65 MiB", "symlink", "empty directory", "directory with a file"};
/* Kinds whose header is damaged: explain must say the index is damaged. A truncated or flipped
   index may instead be read as far as it is sound (a log read up to a torn record). */
static int dmg_header_bad(int kind) {
    return kind != DMG_TRUNCATED && kind != DMG_TORN_TAIL && kind != DMG_FLIPPED && kind != DMG_CRAFTED;
}

/* An index written by kcache's own writer (whatever its format) with hostile content: every key
   record garbage, times and sizes absurd, a huge pid, and gone items for `absent` with an unknown
   reason and with reason "hit" (the newest, the one a lookup finds). */
static void craft_index(kcache *kc, const char *unit, const kcache_key *absent) {
    static const unsigned char junk[40] = {0xff, 0xff, 'x', 'y', 0, 9, 1, 2, 3};
    kcache__ix ix;
    kcache__ix_item it;
    memset(&ix, 0, sizeof ix);
    memset(&it, 0, sizeof it);
    it.when = -5;
    it.size = (uint64_t)-1;
    it.pid = 0xffffffffu;
    it.rec = junk;
    it.rec_len = sizeof junk;
    it.digest = kcache_key_digest(absent);
    it.digest.lo ^= 1;
    it.reason = KCACHE_REASON_FIELD;
    kcache__ix_push(&ix, KCACHE__IX_LIVE, &it);
    it.digest = kcache_key_digest(absent);
    it.reason = 77;
    kcache__ix_push(&ix, KCACHE__IX_MISSED, &it);
    it.reason = 77;
    kcache__ix_push(&ix, KCACHE__IX_GONE, &it);
    it.digest.hi ^= 1;
    kcache__ix_push(&ix, KCACHE__IX_GONE, &it);
    it.digest = kcache_key_digest(absent);
    it.reason = KCACHE_REASON_HIT;
    kcache__ix_push(&ix, KCACHE__IX_GONE, &it);
    if (kcache__ix_write(kc->store, unit, &ix) != KCACHE_OK) KT_FAILF("could not write the crafted index");
    ix.file = NULL;
    kcache__ix_free(&ix);
}

static void corrupt_index(void) {
    int kind;
    for (kind = 0; kind < DMG_KINDS; kind++) {
        kcache *kc;
        kcache_key x0, x1, x2, absent;
        char ip[400], outside[300];
        /* static: a forked child's leak check (valgrind) must still find the parent's buffer, which
           an optimised child no longer holds in a register */
        static unsigned char *valid;
        unsigned char buf[4096];
        size_t vn = 0;
        struct stat before, after;
        case_begin();
        kc = kopen(LIMIT, HYB, 0, NULL);
        key_id(&x0, "cx", 0);
        key_id(&x1, "cx", 1);
        key_id(&x2, "cx", 2);
        key_id(&absent, "cx", 9);
        KT_CHECK(put_s(kc, &x0, "x0") == KCACHE_OK);
        KT_CHECK(put_s(kc, &x1, "x1") == KCACHE_OK);
        {
            kcache_key o;
            key_id(&o, "cx.other", 0);
            KT_CHECK(put_s(kc, &o, "o") == KCACHE_OK);
            kcache_key_free(&o);
        }
        kcache_close(kc);
        index_path("cx", ip, sizeof ip);
        valid = read_file(ip, &vn);
        KT_CHECK(valid != NULL && vn > 40 && vn + 64 < sizeof buf);
        if (!valid) { case_end(); continue; }
        snprintf(outside, sizeof outside, "%s/outside.kci", R);
        unlink(ip);
        switch (kind) {
        case DMG_GARBAGE: {
            uint64_t s = 42;
            size_t i;
            for (i = 0; i < 300; i++) { s = s * 6364136223846793005ull + 1442695040888963407ull; buf[i] = (unsigned char)(s >> 33); }
            write_file(ip, buf, 300);
            break;
        }
        case DMG_TRUNCATED: write_file(ip, valid, vn / 2); break;
        case DMG_TORN_TAIL: /* a writer that died in the middle of adding to it */
            memcpy(buf, valid, vn);
            memcpy(buf + vn, valid + vn / 3, 30);
            write_file(ip, buf, vn + 30);
            break;
        case DMG_FLIPPED: valid[vn / 2] ^= 0x10; write_file(ip, valid, vn); valid[vn / 2] ^= 0x10; break;
        case DMG_EMPTY: write_file(ip, "", 0); break;
        case DMG_SHORT: write_file(ip, "KCINDEX\0\1\0", 10); break;
        case DMG_OTHER_UNIT: {
            char op[400];
            size_t on;
            unsigned char *other;
            index_path("cx.other", op, sizeof op);
            other = read_file(op, &on);
            if (other) write_file(ip, other, on);
            free(other);
            break;
        }
        case DMG_HEADER: memset(valid + 10, 0xff, 14); write_file(ip, valid, vn); break;
        case DMG_CRAFTED:
            kc = kopen(LIMIT, HYB, 0, NULL);
            craft_index(kc, "cx", &absent);
            kcache_close(kc);
            break;
        case DMG_SPARSE_HUGE: {
            int fd = open(ip, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd < 0 || ftruncate(fd, (off_t)65 << 20) != 0) KT_FAILF("sparse file");
            if (fd >= 0) close(fd);
            break;
        }
        case DMG_SYMLINK:
            write_file(outside, valid, vn); /* a valid index, outside the store: never read, never written */
            if (symlink(outside, ip) != 0) KT_FAILF("symlink: %s", strerror(errno));
            break;
        case DMG_DIR_EMPTY: mkdir(ip, 0700); break;
        case DMG_DIR_FULL: {
            char inner[500];
            mkdir(ip, 0700);
            snprintf(inner, sizeof inner, "%s/junk", ip);
            write_file(inner, "junk", 4);
            break;
        }
        }
        memset(&before, 0, sizeof before);
        if (kind == DMG_SYMLINK) stat(outside, &before);
        CHILD_BEGIN
            kcache__ix ix;
            const char *e;
            kcache_stats st;
            kc = kopen(LIMIT, HYB, 0, NULL);
            KT_CHECK_MSG(get_s(kc, &x0) == KCACHE_OK, "%s index: a stored overload does not hit", dmg_name[kind]);
            KT_CHECK_MSG(get_s(kc, &absent) == KCACHE_MISS, "%s index: an absent overload does not miss", dmg_name[kind]);
            e = explain(kc, &absent);
            KT_CHECK_MSG(strncmp(e, "miss: ", 6) == 0, "%s index: explain says \"%s\"", dmg_name[kind], e);
            if (dmg_header_bad(kind))
                KT_CHECK_MSG(strstr(e, "damaged index") != NULL, "%s index: explain says \"%s\"", dmg_name[kind], e);
            st = stats_of(kc);
            KT_CHECK_MSG(st.misses_by_reason[KCACHE_REASON_HIT] == 0, "%s index: a miss counted with reason \"hit\"", dmg_name[kind]);
            KT_CHECK_EQ_U64(st.misses, 1);
            /* the next put writes a valid index */
            KT_CHECK_MSG(put_s(kc, &x2, "x2") == KCACHE_OK, "%s index: put failed", dmg_name[kind]);
            KT_CHECK_MSG(ix_read(kc, "cx", &ix) == KCACHE_OK, "%s index: the put after it did not write a valid index", dmg_name[kind]);
            if (ix.file) {
                KT_CHECK(ix_has(&ix, KCACHE__IX_LIVE, &x2));
                kcache__ix_free(&ix);
            }
            KT_CHECK(get_s(kc, &x1) == KCACHE_OK);
            kcache_close(kc);
        CHILD_END;
        CHILD_BEGIN /* a fresh process: the index works again */
            kc = kopen(LIMIT, HYB, 0, NULL);
            KT_CHECK(get_s(kc, &x2) == KCACHE_OK);
            explain(kc, &absent);
            if (kind != DMG_CRAFTED) /* a crafted index may say anything, as long as it is a miss */
                KT_CHECK_MSG(strncmp(g_ex, "miss: a field differs: ", 23) == 0, /* (the overloads are read) */
                             "%s index, then a put: explain says \"%s\"", dmg_name[kind], g_ex);
            else
                KT_CHECK_MSG(strncmp(g_ex, "miss: ", 6) == 0, "%s index, then a put: explain says \"%s\"", dmg_name[kind], g_ex);
            kcache_close(kc);
        CHILD_END;
        if (kind == DMG_SYMLINK) {
            size_t on;
            unsigned char *o = read_file(outside, &on);
            struct stat ls;
            stat(outside, &after);
            KT_CHECK_MSG(o && on == vn && memcmp(o, valid, vn) == 0 && after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
                             after.st_mtim.tv_nsec == before.st_mtim.tv_nsec,
                         "the symlink's target outside the store was modified");
            KT_CHECK(lstat(ip, &ls) == 0 && S_ISREG(ls.st_mode));
            free(o);
        }
        free(valid);
        kcache_key_free(&x0);
        kcache_key_free(&x1);
        kcache_key_free(&x2);
        kcache_key_free(&absent);
        case_end();
    }
}

/* A unit with thousands of overloads, in a store without a size limit: every one listed, every one
   hits, none evicted, and a miss in it is explained. */
#define MANY 3000
static void many_overloads(void) {
    case_begin();
    CHILD_BEGIN
        kcache *kc;
        kcache_key k;
        kcache__ix ix;
        int i, listed = 0, hits = 0;
        kc = kopen(0, HYB, 0, NULL);
        for (i = 0; i < MANY; i++) {
            key_id(&k, "many", (uint64_t)i);
            KT_CHECK(put_s(kc, &k, "p") == KCACHE_OK);
            kcache_key_free(&k);
        }
        KT_CHECK_EQ_U64(stats_of(kc).evictions, 0);
        kcache_close(kc);
        kc = kopen(0, HYB, 0, NULL);
        KT_CHECK(ix_read(kc, "many", &ix) == KCACHE_OK);
        for (i = 0; i < MANY; i++) {
            key_id(&k, "many", (uint64_t)i);
            listed += ix.file && ix_has(&ix, KCACHE__IX_LIVE, &k);
            hits += get_s(kc, &k) == KCACHE_OK;
            kcache_key_free(&k);
        }
        if (ix.file) kcache__ix_free(&ix);
        KT_CHECK_MSG(listed == MANY && hits == MANY, "%d of %d overloads listed, %d hit", listed, MANY, hits);
        key_id(&k, "many", MANY + 1);
        /* a new id among 3000 overloads that differ only by id: a field differs (the unit was stored),
           said to be a new overload rather than a changed one */
        KT_CHECK_MSG(strstr(explain(kc, &k), "miss: a field differs: never stored: a new overload") == g_ex, "%s", g_ex);
        KT_CHECK(get_s(kc, &k) == KCACHE_MISS);
        KT_CHECK_EQ_U64(stats_of(kc).misses_by_reason[KCACHE_REASON_FIELD], 1);
        kcache_key_free(&k);
        kcache_close(kc);
    CHILD_END;
    case_end();
}

/* A unit stored again and again (replacing its overloads, removing some) keeps a small index that
   lists exactly what is stored. */
static void index_stays_bounded(void) {
    kcache *kc;
    kcache_key k;
    char ip[400];
    struct stat sb;
    kcache__ix ix;
    int i;
    case_begin();
    kc = kopen(LIMIT, HYB, 0, NULL);
    for (i = 0; i < 600; i++) {
        key_id(&k, "bd", (uint64_t)(i % 3));
        KT_CHECK(put_s(kc, &k, "payload") == KCACHE_OK);
        kcache_key_free(&k);
    }
    key_id(&k, "bd", 1);
    KT_CHECK(kcache_remove(kc, &k) == KCACHE_OK);
    kcache_key_free(&k);
    kcache_close(kc);
    index_path("bd", ip, sizeof ip);
    KT_CHECK(stat(ip, &sb) == 0);
    KT_CHECK_MSG(sb.st_size < 128 * 1024, "the index of a unit with 3 overloads is %lld bytes after 600 puts", (long long)sb.st_size);
    CHILD_BEGIN
        kc = kopen(LIMIT, HYB, 0, NULL);
        KT_CHECK(ix_read(kc, "bd", &ix) == KCACHE_OK);
        KT_CHECK_EQ_U64(ix.n[KCACHE__IX_LIVE], 2);
        KT_CHECK_EQ_U64(ix.n[KCACHE__IX_GONE], 0);
        for (i = 0; i < 3; i++) {
            key_id(&k, "bd", (uint64_t)i);
            KT_CHECK(ix_has(&ix, KCACHE__IX_LIVE, &k) == (i != 1));
            KT_CHECK(get_s(kc, &k) == (i != 1 ? KCACHE_OK : KCACHE_MISS));
            kcache_key_free(&k);
        }
        kcache__ix_free(&ix);
        kcache_close(kc);
    CHILD_END;
    case_end();
}

/* A FIFO where an index (or an entry) should be: nothing may block on it. */
static void index_fifo(void) {
    kcache *kc;
    kcache_key x0, absent;
    char ip[400], ep[400];
    int step;
    case_begin();
    kc = kopen(LIMIT, HYB, 0, NULL);
    key_id(&x0, "ff", 0);
    key_id(&absent, "ff", 9);
    KT_CHECK(put_s(kc, &x0, "x0") == KCACHE_OK);
    kcache_close(kc);
    index_path("ff", ip, sizeof ip);
    unlink(ip);
    if (mkfifo(ip, 0600) != 0) KT_FAILF("mkfifo: %s", strerror(errno));
    for (step = 0; step < 4; step++) {
        if (step == 3) { /* an entry that is a FIFO */
            entry_path(&x0, ep, sizeof ep);
            unlink(ep);
            if (mkfifo(ep, 0600) != 0) KT_FAILF("mkfifo: %s", strerror(errno));
        }
        CHILD_BEGIN
            static const char *const what[] = {"a get that misses", "kcache_explain", "a put", "a get of an entry"};
            kcache_key k2;
            kc = kopen(LIMIT, HYB, 0, NULL);
            alarm(1); /* a blocked call dies here, and the parent says so */
            printf("  (index_fifo: %s)\n", what[step]);
            fflush(stdout);
            if (step == 0) KT_CHECK(get_s(kc, &absent) == KCACHE_MISS);
            if (step == 1) KT_CHECK(strncmp(explain(kc, &absent), "miss: ", 6) == 0);
            if (step == 2) { key_id(&k2, "ff", 2); KT_CHECK(put_s(kc, &k2, "x2") == KCACHE_OK); kcache_key_free(&k2); }
            if (step == 3) KT_CHECK(get_s(kc, &x0) == KCACHE_MISS);
            alarm(0);
            kcache_close(kc);
        CHILD_END;
    }
    kcache_key_free(&x0);
    kcache_key_free(&absent);
    case_end();
}

/* KCACHE_NO_EXPLAIN compiles the indexes out (and KCACHE_NO_ENV the variables some groups set):
   those groups are skipped, the rest run. */
#if defined(KCACHE_NO_EXPLAIN) || defined(KCACHE_NO_ENV)
#define RUN_IX(fn) KT_SKIP(fn, "per-unit indexes or the environment compiled out (KCACHE_NO_EXPLAIN, KCACHE_NO_ENV)")
#else
#define RUN_IX(fn) RUN(fn)
#endif

int main(void) {
    static const char *const env[] = {"KCACHE_DIR", "KCACHE_MAX_SIZE", "KCACHE_MEM_ENTRIES", "KCACHE_MEM_SIZE", "KCACHE_ENABLE",
                                      "KCACHE_PERSISTENT", "KCACHE_DEBUG", "KCACHE_TRACE", "KCACHE_FSYNC", "KCACHE_WRITE",
                                      "KCACHE_BUILD_WAIT", "KCACHE_STAMP", "KCACHE_CPU_NAME", "KCACHE_CPU_FEATURES"};
    size_t i;
    for (i = 0; i < sizeof env / sizeof env[0]; i++) unsetenv(env[i]);
    umask(022);
    setvbuf(stdout, NULL, _IOLBF, 0);

    RUN_IX(reason_cold);
    RUN_IX(reason_field);
    RUN_IX(reason_stamp_edited);
    RUN_IX(stamp_touch_policies);
    RUN_IX(stamp_seen_in_memory);
    RUN_IX(purge_dependents);
    RUN_IX(reason_evicted);
    RUN_IX(reason_rejected);
    RUN_IX(reason_off);
    RUN(reason_unwritable);
    RUN(hits_explained);
    RUN_IX(stats_by_reason);
    RUN_IX(debug_lines);
    RUN_IX(trace_misses);
    RUN_IX(concurrent_overloads);
    RUN_IX(many_overloads);
    RUN_IX(index_stays_bounded);
    RUN_IX(corrupt_index);
    RUN_IX(index_fifo);
    KT_EXIT();
}

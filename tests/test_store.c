/* test_store.c - the persistent store as users rely on it: real files, real processes.
 *
 * Persistence across kcache objects and processes; a storm of forked writers and readers over a
 * small size limit; SIGKILLs at random moments of puts and evictions; corrupt entries and a
 * damaged config.file; digest collisions; eviction by kcache's own use record (also on a
 * noatime tmpfs; exact survivors against a model of the policy; small steps; a full bucket;
 * concurrent evictions); the evict write policy; degradation (read-only, full disk, no $HOME, the
 * directory deleted, unsafe directories, symlinks); two kcache objects and threads on one store.
 *
 * White-box where it helps: the on-disk layout documented in kcache.h's >>store section is read
 * and written here directly (config.file's accounted bytes at offset 24 and entry count at 32,
 * entry headers), and kcache_verify is called. Every test has its own mkdtemp directory.
 *
 * Some cases need root (mount, chown, setuid): run as root they are real; otherwise they print
 * "skip NAME: why" on stderr and no "ok" line (a skip never looks like a pass).
 *
 * Environment (for working on it): KT_ONLY=substring runs only the groups whose name contains it;
 * KT_TIMES=1 prints each group's time on stderr.
 *
 * Build: make build/test_store build/asan/test_store */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#include <ftw.h>
#include <poll.h>
#include <sched.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/wait.h>

/* ---- small helpers ----------------------------------------------------------------------- */

#define NOBODY 65534

static const char *g_skip; /* set by a group that could not run for real here */

/* Like KT_RUN, but a group that set g_skip prints "skip" (on stderr) instead of "ok". */
#define RUN(fn)                                                                           \
    do {                                                                                  \
        struct timespec t0_, t1_;                                                         \
        if (getenv("KT_ONLY") && !strstr(#fn, getenv("KT_ONLY"))) break;                  \
        clock_gettime(CLOCK_MONOTONIC, &t0_);                                             \
        kt_current = #fn;                                                                 \
        kt_failures_here = 0;                                                             \
        g_skip = NULL;                                                                    \
        fn();                                                                             \
        if (kt_failures_here == 0 && g_skip) fprintf(stderr, "skip %s: %s\n", #fn, g_skip); \
        else if (kt_failures_here == 0) printf("ok %s\n", #fn);                           \
        kt_failures_total += kt_failures_here;                                            \
        clock_gettime(CLOCK_MONOTONIC, &t1_);                                             \
        if (getenv("KT_TIMES"))                                                           \
            fprintf(stderr, "  (%s: %.2f s)\n", #fn,                                     \
                    (double)(t1_.tv_sec - t0_.tv_sec) + (t1_.tv_nsec - t0_.tv_nsec) / 1e9); \
        fflush(stdout);                                                                   \
        fflush(stderr);                                                                   \
    } while (0)

static char g_skip_buf[512];
static void skip_because(const char *fmt, const char *arg) {
    snprintf(g_skip_buf, sizeof g_skip_buf, fmt, arg);
    g_skip = g_skip_buf;
}

/* Failures seen by forked children that may be SIGKILLed before they can report by exit status. */
static int *g_shared_bad;

static uint64_t sm64(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }
static void wr32(unsigned char *p, uint32_t v) {
    int i;
    for (i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void wr64(unsigned char *p, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* A payload is a function of (key id, version): a 16-byte header "KTPL", id, version, length,
   then a stream seeded by (id, version). A reader that finds version v checks every byte against
   what (id, v) must hold: a stale version is fine, a wrong byte is not. */
static size_t pl_len(uint32_t id, uint32_t ver, size_t lo, size_t hi) {
    uint64_t s = ((uint64_t)id << 32) ^ ver ^ 0x5eedull;
    return lo + (size_t)(sm64(&s) % (hi - lo + 1));
}
static void pl_stream(unsigned char *p, size_t from, size_t n, uint32_t id, uint32_t ver) {
    uint64_t s = ((uint64_t)id << 32) | ver, w = 0;
    size_t i;
    for (i = from; i < n; i++) {
        if (((i - from) & 7) == 0) w = sm64(&s);
        p[i] = (unsigned char)(w >> (8 * ((i - from) & 7)));
    }
}
static void pl_fill(unsigned char *p, size_t n, uint32_t id, uint32_t ver) {
    if (n < 16) { pl_stream(p, 0, n, id, ver); return; }
    memcpy(p, "KTPL", 4);
    wr32(p + 4, id);
    wr32(p + 8, ver);
    wr32(p + 12, (uint32_t)n);
    pl_stream(p, 16, n, id, ver);
}
/* 0 when p is a payload that key id may hold (any version); else a short reason. */
static const char *pl_check(const void *data, size_t n, uint32_t id) {
    const unsigned char *p = (const unsigned char *)data;
    uint64_t s;
    uint64_t w = 0;
    size_t i;
    uint32_t ver;
    if (!p) return "NULL data";
    if (n < 16) return "too short for a payload";
    if (memcmp(p, "KTPL", 4) != 0) return "no payload magic";
    if (rd32(p + 4) != id) return "another key's payload";
    if (rd32(p + 12) != n) return "length differs from the payload's own";
    ver = rd32(p + 8);
    s = ((uint64_t)id << 32) | ver;
    for (i = 16; i < n; i++) {
        if (((i - 16) & 7) == 0) w = sm64(&s);
        if (p[i] != (unsigned char)(w >> (8 * ((i - 16) & 7)))) return "wrong bytes";
    }
    return NULL;
}
/* The exact payload for (id, ver), compared byte for byte. */
static int pl_exact(const void *data, size_t n, uint32_t id, uint32_t ver, size_t want_n) {
    unsigned char *x;
    int ok;
    if (n != want_n) return 0;
    if (n == 0) return data != NULL;
    x = (unsigned char *)malloc(n);
    if (!x) return 0;
    pl_fill(x, n, id, ver);
    ok = data && memcmp(data, x, n) == 0;
    free(x);
    return ok;
}

static void mkkey(kcache_key *k, const char *unit, uint64_t id) {
    kcache_key_init(k, unit);
    kcache_key_u64(k, "id", id);
    kcache_key_str(k, "src", "kernel void f(global float *x) { x[get_global_id(0)] *= 2; }");
}

/* Puts (id, ver) with a payload of n bytes. */
static kcache_status put_pl(kcache *kc, const char *unit, uint32_t id, uint32_t ver, size_t n) {
    unsigned char *p = (unsigned char *)malloc(n ? n : 1);
    kcache_key k;
    kcache_status s;
    if (!p) return KCACHE_ENOMEM;
    pl_fill(p, n, id, ver);
    mkkey(&k, unit, id);
    s = kcache_put(kc, &k, p, n);
    kcache_key_free(&k);
    free(p);
    return s;
}

/* Gets key id: 1 exact (id, ver, n), 0 miss, -1 wrong bytes or an unexpected status. */
static int get_exact(kcache *kc, const char *unit, uint32_t id, uint32_t ver, size_t n) {
    kcache_key k;
    const void *d = NULL;
    size_t sz = 0;
    kcache_status s;
    int r;
    mkkey(&k, unit, id);
    s = kcache_get(kc, &k, &d, &sz);
    kcache_key_free(&k);
    if (s == KCACHE_MISS) return 0;
    if (s != KCACHE_OK) return -1;
    r = pl_exact(d, sz, id, ver, n) ? 1 : -1;
    kcache_release(kc, d);
    return r;
}

static size_t explain_key(kcache *kc, const char *unit, uint32_t id, char *buf, size_t cap) {
    kcache_key k;
    size_t n;
    mkkey(&k, unit, id);
    n = kcache_explain(kc, &k, buf, cap);
    kcache_key_free(&k);
    return n;
}

static void entry_path(const char *dir, const char *unit, uint32_t id, char *out, size_t cap) {
    kcache_key k;
    char hex[33];
    mkkey(&k, unit, id);
    kcache_hash_hex(kcache_key_digest(&k), hex);
    kcache_key_free(&k);
    snprintf(out, cap, "%s/e/%.2s/%s.kce", dir, hex, hex);
}

static int exists_nofollow(const char *path) {
    struct stat s;
    return lstat(path, &s) == 0;
}
static int entry_exists(const char *dir, const char *unit, uint32_t id) {
    char p[4096];
    entry_path(dir, unit, id, p, sizeof p);
    return exists_nofollow(p);
}

static unsigned char *read_all(const char *path, size_t *n) {
    struct stat s;
    unsigned char *buf;
    size_t have = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW);
    *n = 0;
    if (fd < 0) return NULL;
    if (fstat(fd, &s) != 0) { close(fd); return NULL; }
    buf = (unsigned char *)malloc((size_t)s.st_size + 1);
    if (!buf) { close(fd); return NULL; }
    while (have < (size_t)s.st_size) {
        ssize_t r = read(fd, buf + have, (size_t)s.st_size - have);
        if (r <= 0) break;
        have += (size_t)r;
    }
    close(fd);
    *n = have;
    return buf;
}
static int write_all(const char *path, const void *p, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    size_t done = 0;
    if (fd < 0) return -1;
    while (done < n) {
        ssize_t w = write(fd, (const unsigned char *)p + done, n - done);
        if (w <= 0) { close(fd); return -1; }
        done += (size_t)w;
    }
    return close(fd);
}

/* A file's identity for "untouched" checks: type, size, mtime, content hash. */
typedef struct fsig { int exists; mode_t mode; off_t size; struct timespec mtime; kcache_hash128 h; } fsig;
static fsig sig_of(const char *path) {
    fsig f;
    struct stat s;
    memset(&f, 0, sizeof f);
    if (lstat(path, &s) != 0) return f;
    f.exists = 1;
    f.mode = s.st_mode;
    f.size = s.st_size;
    f.mtime = s.st_mtim;
    if (S_ISREG(s.st_mode)) {
        size_t n;
        unsigned char *b = read_all(path, &n);
        f.h = kcache_hash(b, n);
        free(b);
    }
    return f;
}
static int sig_same(fsig a, fsig b) {
    return a.exists == b.exists && a.mode == b.mode && a.size == b.size && a.mtime.tv_sec == b.mtime.tv_sec &&
           a.mtime.tv_nsec == b.mtime.tv_nsec && a.h.lo == b.h.lo && a.h.hi == b.h.hi;
}

static int count_dir(const char *path) { /* entries other than . and .., -1 if unreadable */
    DIR *d = opendir(path);
    struct dirent *de;
    int n = 0;
    if (!d) return -1;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

/* Gets keys 0..n-1 of unit: the number that hit, each hit's payload checked (any version). */
static int hits_checked(kcache *kc, const char *unit, uint32_t n, const char *where) {
    uint32_t i;
    int hits = 0, wrong = 0;
    for (i = 0; i < n; i++) {
        kcache_key k;
        const void *d;
        size_t sz;
        mkkey(&k, unit, i);
        if (kcache_get(kc, &k, &d, &sz) == KCACHE_OK) {
            const char *why = pl_check(d, sz, i);
            hits++;
            if (why && wrong++ < 5) KT_FAILF("%s: key %u: %s", where, i, why);
            kcache_release(kc, d);
        }
        kcache_key_free(&k);
    }
    return hits;
}

/* ---- test directories ---- */

static void tdir_new(char *out, size_t cap) {
    const char *t = getenv("TMPDIR");
    snprintf(out, cap, "%s/kcache-store-XXXXXX", t && t[0] == '/' ? t : "/tmp");
    if (!mkdtemp(out)) {
        perror("mkdtemp");
        exit(2);
    }
}
static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s;
    (void)flag;
    (void)f;
    remove(p);
    return 0;
}
static void tdir_rm(const char *path) { nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT); }

/* ---- the store as it really is ---- */

/* config.file's accounted bytes (offset 24) and entry count (offset 32). 0 when readable. */
static int cf_read(const char *dir, uint64_t *bytes, uint64_t *count) {
    char p[4096];
    unsigned char h[40];
    int fd;
    snprintf(p, sizeof p, "%s/config.file", dir);
    fd = open(p, O_RDONLY | O_NOFOLLOW);
    *bytes = *count = 0;
    if (fd < 0) return -1;
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h) { close(fd); return -1; }
    close(fd);
    *bytes = rd64(h + 24);
    *count = rd64(h + 32);
    return 0;
}

/* The entry files' real total size and count (our own walk of e/XX, not kcache's). */
static void real_scan(const char *dir, uint64_t *bytes, uint64_t *count) {
    char p[4096];
    int shard;
    *bytes = *count = 0;
    for (shard = 0; shard < 256; shard++) {
        DIR *d;
        struct dirent *de;
        struct stat s;
        snprintf(p, sizeof p, "%s/e/%02x", dir, shard);
        if (lstat(p, &s) != 0 || !S_ISDIR(s.st_mode)) continue;
        d = opendir(p);
        if (!d) continue;
        while ((de = readdir(d)) != NULL) {
            char f[4400];
            size_t l = strlen(de->d_name);
            snprintf(f, sizeof f, "%s/%s", p, de->d_name);
            if (l != 36 || strcmp(de->d_name + 32, ".kce") != 0) continue;
            if (lstat(f, &s) != 0 || !S_ISREG(s.st_mode)) continue;
            *bytes += (uint64_t)s.st_size;
            (*count)++;
        }
        closedir(d);
    }
}

/* The accounting equals the real entries, kcache_verify(kc, 0) agrees, and (limit > 0) it holds. */
static void check_accounting(kcache *kc, const char *dir, uint64_t limit, const char *where) {
    uint64_t ab, ac, rb, rc;
    kcache_status v = kc ? kcache_verify(kc, 0) : KCACHE_OK;
    KT_CHECK_MSG(v == KCACHE_OK, "%s: kcache_verify(kc, 0) = %s", where, kcache_strerror(v));
    KT_CHECK_MSG(cf_read(dir, &ab, &ac) == 0, "%s: config.file unreadable", where);
    real_scan(dir, &rb, &rc);
    KT_CHECK_MSG(ab == rb, "%s: accounted bytes %llu, real %llu", where, (unsigned long long)ab, (unsigned long long)rb);
    KT_CHECK_MSG(ac == rc, "%s: accounted entries %llu, real %llu", where, (unsigned long long)ac, (unsigned long long)rc);
    if (limit) KT_CHECK_MSG(ab <= limit, "%s: accounted %llu over the limit %llu", where, (unsigned long long)ab, (unsigned long long)limit);
}

static void cfg_for(kcache_config *c, const char *dir, uint64_t limit, uint32_t mem_entries) {
    kcache_config_init(c);
    c->dir = dir;
    c->max_size = limit;
    c->mem_entries = mem_entries;
}

static kcache *open_store(const char *dir, uint64_t limit, uint32_t mem_entries) {
    kcache_config c;
    kcache *kc = NULL;
    cfg_for(&c, dir, limit, mem_entries);
    if (kcache_open(&kc, &c) != KCACHE_OK || !kc) {
        KT_FAILF("kcache_open(%s) failed", dir);
        return NULL;
    }
    KT_CHECK_MSG(kcache_dir(kc) != NULL, "store %s refused", dir);
    return kc;
}

/* Debug lines captured through cfg.log. */
typedef struct logcap { pthread_mutex_t mu; char buf[32768]; size_t len; } logcap;
static void log_cb(void *user, const char *line) {
    logcap *l = (logcap *)user;
    pthread_mutex_lock(&l->mu);
    kt_log_append(l->buf, sizeof l->buf, &l->len, line);
    pthread_mutex_unlock(&l->mu);
}
static void logcap_init(logcap *l) {
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
}

/* Runs fn(arg) in a forked child. The child's failures print their own FAIL lines; here they
   count, and a crash is a failure. Exit status 77 from the child means "could not run here". */
#define CHILD_SKIP 77
#define CHILD_FAILED 42 /* the child printed its own FAIL lines (not 1: a sanitizer exits 1) */
static char g_child_skip[512];
static int *g_child_skip_shared; /* the child's reason, written to shared memory */
static void in_child(const char *what, void (*fn)(void *), void *arg) {
    pid_t p;
    int st = 0;
    fflush(stdout);
    fflush(stderr);
    if (g_child_skip_shared) memset(g_child_skip_shared, 0, 512);
    p = fork();
    if (p < 0) { KT_FAILF("%s: fork: %s", what, strerror(errno)); return; }
    if (p == 0) {
        kt_failures_here = 0;
        fn(arg);
        fflush(stdout);
        fflush(stderr);
        _exit(kt_failures_here ? CHILD_FAILED : 0);
    }
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return;
    if (WIFEXITED(st) && WEXITSTATUS(st) == CHILD_FAILED) { kt_failures_here++; return; }
    if (WIFEXITED(st) && WEXITSTATUS(st) == CHILD_SKIP) {
        snprintf(g_child_skip, sizeof g_child_skip, "%s", g_child_skip_shared ? (const char *)g_child_skip_shared : "?");
        g_skip = g_child_skip;
        return;
    }
    if (WIFSIGNALED(st)) KT_FAILF("%s: the process died of signal %d (%s)", what, WTERMSIG(st), strsignal(WTERMSIG(st)));
    else KT_FAILF("%s: the process exited with status %d (a sanitizer report above?)", what, WEXITSTATUS(st));
}
/* Runs fn(dir, i) for i in 0..n-1, each in its own forked process, all at once, and waits for
   them: a child's FAIL lines count here, and so does a child that dies. */
static void in_children(int n, void (*fn)(const char *dir, int idx), const char *dir) {
    pid_t pids[64];
    int i;
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < n && i < 64; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            kt_failures_here = 0;
            fn(dir, i);
            fflush(stdout);
            _exit(kt_failures_here ? CHILD_FAILED : 0);
        }
        if (pids[i] < 0) KT_FAILF("fork: %s", strerror(errno));
    }
    for (i = 0; i < n && i < 64; i++) {
        int st = 0;
        if (pids[i] <= 0) continue;
        while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR) {
        }
        if (WIFEXITED(st) && WEXITSTATUS(st) == CHILD_FAILED) kt_failures_here++;
        else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            KT_FAILF("process %d: %s %d", i, WIFSIGNALED(st) ? "signal" : "exit status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
}
static void child_skip(const char *fmt, const char *a, const char *b) {
    if (g_child_skip_shared) snprintf((char *)g_child_skip_shared, 512, fmt, a, b);
    fflush(stdout);
    _exit(CHILD_SKIP);
}

/* In a child: a private mount namespace (mounts vanish when the child exits). */
static void private_mounts_or_skip(void) {
    if (unshare(CLONE_NEWNS) != 0) child_skip("unshare(CLONE_NEWNS): %s%s", strerror(errno), "");
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) child_skip("mount --make-rprivate /: %s%s", strerror(errno), "");
}
static void mount_tmpfs_or_skip(const char *at, unsigned long flags, const char *opts) {
    if (mount("tmpfs", at, "tmpfs", flags, opts) != 0) child_skip("mount -t tmpfs -o %s: %s", opts, strerror(errno));
}

static void sleep_us(long us) {
    struct timespec ts;
    ts.tv_sec = us / 1000000;
    ts.tv_nsec = (us % 1000000) * 1000;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ============================================================================================ */
/* persistence                                                                                   */
/* ============================================================================================ */

static const size_t persist_sizes[] = {0, 1, 4095, 65536, 3u << 20};
#define NPERSIST (sizeof persist_sizes / sizeof persist_sizes[0])

/* A second kcache (in this or another process) hits every size from disk, then from memory. */
static void persist_read(void *arg) {
    const char *dir = (const char *)arg;
    kcache *kc = open_store(dir, 64u << 20, 64);
    kcache_stats st;
    char buf[1024];
    size_t i;
    if (!kc) return;
    for (i = 0; i < NPERSIST; i++) {
        kcache_key k;
        const void *d = NULL;
        size_t n = 0;
        kcache_status s;
        mkkey(&k, "persist", (uint32_t)i);
        kcache_explain(kc, &k, buf, sizeof buf);
        KT_CHECK_MSG(strncmp(buf, "hit: disk", 9) == 0, "size %zu: explain before the first get: \"%s\"", persist_sizes[i], buf);
        s = kcache_get(kc, &k, &d, &n);
        KT_CHECK_MSG(s == KCACHE_OK, "size %zu: first get: %s", persist_sizes[i], kcache_strerror(s));
        if (s == KCACHE_OK) {
            KT_CHECK_MSG(pl_exact(d, n, (uint32_t)i, 7, persist_sizes[i]), "size %zu: disk hit bytes differ (got %zu bytes)",
                         persist_sizes[i], n);
            /* entries are written with 64-byte headers and read into 64-byte aligned memory, so
               the checksum's wide loads never split a cache line */
            KT_CHECK_MSG(((uintptr_t)d & 63) == 0, "size %zu: disk hit payload not 64-byte aligned", persist_sizes[i]);
            kcache_release(kc, d);
        }
        kcache_get_stats(kc, &st);
        KT_CHECK_EQ_U64(st.hits_disk, i + 1);
        KT_CHECK_EQ_U64(st.hits_mem, i);
        kcache_explain(kc, &k, buf, sizeof buf);
        KT_CHECK_MSG(strncmp(buf, "hit: memory", 11) == 0, "size %zu: explain after the get: \"%s\"", persist_sizes[i], buf);
        s = kcache_get(kc, &k, &d, &n);
        KT_CHECK_MSG(s == KCACHE_OK, "size %zu: second get: %s", persist_sizes[i], kcache_strerror(s));
        if (s == KCACHE_OK) {
            KT_CHECK_MSG(pl_exact(d, n, (uint32_t)i, 7, persist_sizes[i]), "size %zu: memory hit bytes differ", persist_sizes[i]);
            kcache_release(kc, d);
        }
        kcache_get_stats(kc, &st);
        KT_CHECK_EQ_U64(st.hits_disk, i + 1);
        KT_CHECK_EQ_U64(st.hits_mem, i + 1);
        kcache_key_free(&k);
    }
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.misses, 0);
    KT_CHECK_EQ_U64(st.rejects, 0);
    check_accounting(kc, dir, 64u << 20, "after reading");
    kcache_close(kc);
}

static void persistence(void) {
    char dir[256];
    kcache *kc;
    size_t i;
    tdir_new(dir, sizeof dir);
    kc = open_store(dir, 64u << 20, 64);
    if (!kc) { tdir_rm(dir); return; }
    for (i = 0; i < NPERSIST; i++) {
        kcache_status s = put_pl(kc, "persist", (uint32_t)i, 7, persist_sizes[i]);
        char path[4096];
        unsigned char *file;
        size_t flen = 0;
        kcache_key k;
        const void *d;
        size_t n;
        KT_CHECK_MSG(s == KCACHE_OK, "put of %zu bytes: %s", persist_sizes[i], kcache_strerror(s));
        KT_CHECK_MSG(entry_exists(dir, "persist", (uint32_t)i), "no entry file after a put of %zu bytes", persist_sizes[i]);
        entry_path(dir, "persist", (uint32_t)i, path, sizeof path);
        if ((file = read_all(path, &flen)) != NULL && flen >= 16)
            KT_CHECK_MSG(rd32(file + 12) % 64 == 0, "size %zu: header length %u is not a multiple of 64", persist_sizes[i],
                         (unsigned)rd32(file + 12));
        free(file);
        mkkey(&k, "persist", (uint32_t)i);
        if (kcache_get(kc, &k, &d, &n) == KCACHE_OK) { /* from memory: the put's own copy */
            KT_CHECK_MSG(((uintptr_t)d & 63) == 0, "size %zu: memory hit payload not 64-byte aligned", persist_sizes[i]);
            kcache_release(kc, d);
        }
        kcache_key_free(&k);
    }
    check_accounting(kc, dir, 64u << 20, "after the puts");
    kcache_close(kc);
    persist_read(dir);              /* another kcache in this process */
    in_child("reader process", persist_read, dir); /* and in another process */
    tdir_rm(dir);
}

/* Entries written before headers were padded to 64 bytes (any multiple of 16 is valid): they
   still hit, with the exact payload, and are read through the path that checks the file's size. */
static void old_header_layout(void) {
    static const size_t sizes[] = { 0, 1, 100, 4096, 65536 };
    char dir[256], path[4096];
    kcache *kc;
    size_t i;
    tdir_new(dir, sizeof dir);
    kc = open_store(dir, 64u << 20, 64);
    if (!kc) { tdir_rm(dir); return; }
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        KT_CHECK(put_pl(kc, "oldhdr", (uint32_t)i, 3, sizes[i]) == KCACHE_OK);
    kcache_close(kc);
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = 0, r, old_h, h, plen;
        unsigned char *f, *g;
        entry_path(dir, "oldhdr", (uint32_t)i, path, sizeof path);
        f = read_all(path, &n);
        if (!f || n < 80) { KT_FAILF("entry %zu unreadable", i); free(f); continue; }
        h = rd32(f + 12);
        r = rd32(f + 64);
        plen = (size_t)rd64(f + 16);
        old_h = ((72 + r + 8 + 15) & ~(size_t)15) + 16; /* the earlier writer's padding */
        KT_CHECK_MSG(old_h != h, "entry %zu: the old padding (%zu) equals the new one: the key needs another length", i, old_h);
        g = (unsigned char *)calloc(1, old_h + plen);
        if (!g) { KT_FAILF("entry %zu: out of memory", i); free(f); continue; }
        memcpy(g, f, 72 + r);
        wr32(g + 12, (uint32_t)old_h);
        wr64(g + 72 + r, kcache_hash(g, 72 + r).lo);
        memcpy(g + old_h, f + h, plen);
        KT_CHECK(write_all(path, g, old_h + plen) == 0);
        free(f);
        free(g);
    }
    kc = open_store(dir, 64u << 20, 1);
    if (kc) {
        kcache_stats st;
        for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            kcache_key k;
            const void *d = NULL;
            size_t n = 0;
            kcache_status s;
            mkkey(&k, "oldhdr", (uint32_t)i);
            s = kcache_get(kc, &k, &d, &n);
            KT_CHECK_MSG(s == KCACHE_OK, "size %zu: %s", sizes[i], kcache_strerror(s));
            if (s == KCACHE_OK) {
                KT_CHECK_MSG(pl_exact(d, n, (uint32_t)i, 3, sizes[i]), "size %zu: payload differs", sizes[i]);
                KT_CHECK_MSG(((uintptr_t)d & 15) == 0, "size %zu: payload not 16-byte aligned", sizes[i]);
                kcache_release(kc, d);
            }
            kcache_key_free(&k);
        }
        kcache_get_stats(kc, &st);
        KT_CHECK_EQ_U64(st.rejects, 0);
        KT_CHECK_EQ_U64(st.hits_disk, sizeof sizes / sizeof sizes[0]);
        kcache_close(kc);
    }
    tdir_rm(dir);
}

/* ============================================================================================ */
/* 8 processes x 5,000 mixed operations on ~300 keys worth ~10x the limit                        */
/* ============================================================================================ */

#define STORM_PROCS 8
#define STORM_OPS 5000
#define STORM_KEYS 300
#define STORM_LIMIT (128u << 10)
#define STORM_MIN 256
#define STORM_MAX 8192 /* ~4.2 KiB average: 300 keys ~ 1.25 MiB ~ 10x the limit */

static void storm_child(const char *dir, int idx) {
    kcache *kc = open_store(dir, STORM_LIMIT, 16);
    uint64_t rng = 0x51077ull + (uint64_t)idx * 7919;
    uint32_t op;
    kcache_stats st;
    int bad = 0, badput = 0;
    if (!kc) return;
    for (op = 0; op < STORM_OPS; op++) {
        uint64_t r = sm64(&rng);
        uint32_t id = (uint32_t)(r % STORM_KEYS), what = (uint32_t)((r >> 32) % 100);
        uint32_t ver = ((uint32_t)(idx + 1) << 24) | op;
        kcache_key k;
        mkkey(&k, "storm", id);
        if (what < 62) {
            const void *d;
            size_t n;
            kcache_status s = kcache_get(kc, &k, &d, &n);
            if (s == KCACHE_OK) {
                const char *why = pl_check(d, n, id);
                if (why && bad++ < 5) KT_FAILF("process %d: key %u: %s (%zu bytes)", idx, id, why, n);
                kcache_release(kc, d);
            } else if (s == KCACHE_MISS && (r & 0x100)) { /* half the misses compile and put */
                s = put_pl(kc, "storm", id, ver, pl_len(id, ver, STORM_MIN, STORM_MAX));
                if (s != KCACHE_OK && badput++ < 5) KT_FAILF("process %d: put after a miss: %s", idx, kcache_strerror(s));
            } else if (s != KCACHE_MISS && bad++ < 5) {
                KT_FAILF("process %d: get: %s", idx, kcache_strerror(s));
            }
        } else if (what < 92) {
            kcache_status s = put_pl(kc, "storm", id, ver, pl_len(id, ver, STORM_MIN, STORM_MAX));
            if (s != KCACHE_OK && badput++ < 5) KT_FAILF("process %d: put: %s", idx, kcache_strerror(s));
        } else {
            kcache_status s = kcache_remove(kc, &k);
            if (s != KCACHE_OK && s != KCACHE_MISS && bad++ < 5) KT_FAILF("process %d: remove: %s", idx, kcache_strerror(s));
        }
        kcache_key_free(&k);
    }
    kcache_get_stats(kc, &st);
    KT_CHECK_MSG(st.rejects == 0, "process %d: %llu entries rejected in a storm without corruption", idx,
                 (unsigned long long)st.rejects);
    KT_CHECK_MSG(st.hits_disk > 0 && st.evictions > 0, "process %d: the storm did not exercise the store (%llu disk hits, %llu evictions)",
                 idx, (unsigned long long)st.hits_disk, (unsigned long long)st.evictions);
    kcache_close(kc);
}

static void storm_many_processes(void) {
    char dir[256], tmp[300];
    int hits;
    kcache *kc;
    uint64_t ab, ac, rb, rc;
    tdir_new(dir, sizeof dir);
    kc = open_store(dir, STORM_LIMIT, 16); /* creates the store before the storm */
    kcache_close(kc);
    in_children(STORM_PROCS, storm_child, dir);
    /* Before any new kcache opens (which could repair): the accounting as the writers left it. */
    KT_CHECK(cf_read(dir, &ab, &ac) == 0);
    real_scan(dir, &rb, &rc);
    KT_CHECK_MSG(ab == rb, "after the storm: accounted bytes %llu, real %llu", (unsigned long long)ab, (unsigned long long)rb);
    KT_CHECK_MSG(ac == rc, "after the storm: accounted entries %llu, real %llu", (unsigned long long)ac, (unsigned long long)rc);
    KT_CHECK_MSG(ab <= STORM_LIMIT, "after the storm: accounted %llu over the limit", (unsigned long long)ab);
    KT_CHECK_MSG(rc > 0, "after the storm: the store is empty");
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    KT_CHECK_MSG(count_dir(tmp) == 0, "after the storm: %d files left in tmp/", count_dir(tmp));
    kc = open_store(dir, STORM_LIMIT, 1024);
    if (!kc) { tdir_rm(dir); return; }
    check_accounting(kc, dir, STORM_LIMIT, "after the storm, a new kcache");
    hits = hits_checked(kc, "storm", STORM_KEYS, "after the storm");
    KT_CHECK_MSG((uint64_t)hits == rc, "after the storm: %d keys hit, %llu entries on disk", hits, (unsigned long long)rc);
    kcache_close(kc);
    tdir_rm(dir);
}

/* ============================================================================================ */
/* SIGKILL at random moments of puts and evictions                                               */
/* ============================================================================================ */

#define KILL_LIMIT (64u << 10)
#define KILL_KEYS 64
#define KILL_COUNT 240

static void killed_writer(const char *dir, uint64_t seed, int ready_fd) {
    kcache_config c;
    kcache *kc = NULL;
    uint32_t op;
    int evicted = 0;
    cfg_for(&c, dir, KILL_LIMIT, 8);
    if (kcache_open(&kc, &c) != KCACHE_OK || !kc || !kcache_dir(kc)) _exit(3);
    for (op = 0; op < 1000000; op++) {
        uint64_t r = sm64(&seed);
        uint32_t id = (uint32_t)(r % KILL_KEYS), what = (uint32_t)((r >> 32) % 100);
        uint32_t ver = (uint32_t)(seed >> 40) ^ op;
        if (what < 85) {
            kcache_stats st;
            if (put_pl(kc, "kill", id, ver, pl_len(id, ver, 512, 12288)) == KCACHE_OK) {
                __atomic_add_fetch(&g_shared_bad[1], 1, __ATOMIC_SEQ_CST);
                if (ready_fd >= 0) { /* the parent may start its random delay now */
                    if (write(ready_fd, "r", 1) != 1) { /* the parent went away */ }
                    close(ready_fd);
                    ready_fd = -1;
                }
            }
            kcache_get_stats(kc, &st);
            if (st.evictions > (uint64_t)evicted) {
                __atomic_add_fetch(&g_shared_bad[2], (int)(st.evictions - (uint64_t)evicted), __ATOMIC_SEQ_CST);
                evicted = (int)st.evictions;
            }
        } else if (what < 95) {
            kcache_key k;
            const void *d;
            size_t n;
            mkkey(&k, "kill", id);
            if (kcache_get(kc, &k, &d, &n) == KCACHE_OK) {
                const char *why = pl_check(d, n, id);
                if (why) {
                    __atomic_add_fetch(g_shared_bad, 1, __ATOMIC_SEQ_CST);
                    printf("FAIL sigkill_storm: writer %d: key %u: %s\n", (int)getpid(), id, why);
                    fflush(stdout);
                }
                kcache_release(kc, d);
            }
            kcache_key_free(&k);
        } else {
            kcache_key k;
            mkkey(&k, "kill", id);
            kcache_remove(kc, &k);
            kcache_key_free(&k);
        }
    }
    kcache_close(kc);
    _exit(0);
}

/* A writer, and the read end of a pipe it writes a byte to after its first completed put. */
static pid_t spawn_killed_writer(const char *dir, uint64_t seed, int *ready) {
    pid_t p;
    int fds[2];
    if (pipe(fds) != 0) { fds[0] = fds[1] = -1; }
    fflush(stdout);
    fflush(stderr);
    p = fork();
    if (p == 0) {
        if (fds[0] >= 0) close(fds[0]);
        killed_writer(dir, seed, fds[1]);
    }
    if (fds[1] >= 0) close(fds[1]);
    *ready = fds[0];
    return p;
}

static void kill_reader(void *arg) {
    const char *dir = (const char *)arg;
    kcache *kc = open_store(dir, KILL_LIMIT, 1024);
    kcache_stats st;
    uint32_t i;
    int hits = 0;
    kcache_status v;
    if (!kc) return;
    for (i = 0; i < KILL_KEYS; i++) {
        kcache_key k;
        const void *d;
        size_t n;
        mkkey(&k, "kill", i);
        if (kcache_get(kc, &k, &d, &n) == KCACHE_OK) {
            const char *why = pl_check(d, n, i);
            hits++;
            KT_CHECK_MSG(why == NULL, "after the kills: key %u: %s", i, why);
            kcache_release(kc, d);
        }
        kcache_key_free(&k);
    }
    KT_CHECK_MSG(hits > 0, "after the kills: no key hits");
    kcache_get_stats(kc, &st);
    KT_CHECK_MSG(st.rejects == 0, "after the kills: %llu entries rejected (a torn entry was visible)", (unsigned long long)st.rejects);
    v = kcache_verify(kc, 1);
    KT_CHECK_MSG(v == KCACHE_OK, "kcache_verify(kc, 1) = %s", kcache_strerror(v));
    check_accounting(kc, dir, 0, "after kcache_verify(kc, 1)");
    /* one more put: the limit holds again after the next writer */
    KT_CHECK(put_pl(kc, "kill", 1000, 1, 4096) == KCACHE_OK);
    check_accounting(kc, dir, KILL_LIMIT, "after the kills and one put");
    kcache_close(kc);
}

static void sigkill_storm(void) {
    char dir[256], tmp[300], path[512];
    pid_t kids[2], dead_pid = 0;
    int kills = 0, i, early_exits = 0, orphans = 0, live_kept, ready[2], waited = 0;
    uint64_t rng = 0xdeadull;
    kcache *kc;
    DIR *d;
    struct dirent *de;
    tdir_new(dir, sizeof dir);
    kc = open_store(dir, KILL_LIMIT, 8);
    kcache_close(kc);
    g_shared_bad[0] = g_shared_bad[1] = g_shared_bad[2] = 0;
    for (i = 0; i < 2; i++) kids[i] = spawn_killed_writer(dir, sm64(&rng), &ready[i]);
    while (kills < KILL_COUNT) {
        int s = kills & 1, st = 0;
        uint64_t r = sm64(&rng);
        /* Three kills in four land among puts and evictions: after the writer's first put, a random
           delay. The fourth lands anywhere, kcache_open included. */
        if ((r >> 40) % 4 != 0 && ready[s] >= 0) {
            struct pollfd pf;
            char c;
            pf.fd = ready[s];
            pf.events = POLLIN;
            if (poll(&pf, 1, 30000) == 1 && read(ready[s], &c, 1) == 1) waited++;
        }
        sleep_us((long)(r % 3000));
        kill(kids[s], SIGKILL);
        waitpid(kids[s], &st, 0);
        if (ready[s] >= 0) close(ready[s]);
        if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) early_exits++;
        dead_pid = kids[s];
        kills++;
        kids[s] = spawn_killed_writer(dir, r, &ready[s]);
    }
    for (i = 0; i < 2; i++) {
        int st;
        kill(kids[i], SIGKILL);
        waitpid(kids[i], &st, 0);
        if (ready[i] >= 0) close(ready[i]);
    }
    KT_CHECK_MSG(early_exits == 0, "%d writers ended other than by SIGKILL", early_exits);
    KT_CHECK_MSG(*g_shared_bad == 0, "writers read %d wrong payloads", *g_shared_bad);
    /* the kills landed among puts and evictions, not only in process start-up */
    KT_CHECK_MSG(waited >= KILL_COUNT / 2 && g_shared_bad[1] >= waited && g_shared_bad[2] > 0,
                 "%d kills after a put; %d puts and %d evictions completed in all", waited, g_shared_bad[1], g_shared_bad[2]);
    if (getenv("KT_TIMES"))
        fprintf(stderr, "  (%d kills, %d after a put; %d puts, %d evictions completed)\n", kills, waited, g_shared_bad[1],
                g_shared_bad[2]);

    /* Temp files of dead writers go when a new kcache opens; a live writer's stay. Add a dead
       writer's entry and config temps by hand too, so the check never depends on luck. */
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    orphans = count_dir(tmp);
    if (getenv("KT_TIMES")) fprintf(stderr, "  (%d temp files of killed writers)\n", orphans);
    snprintf(path, sizeof path, "%s/%u-1-2.tmp", tmp, (unsigned)dead_pid);
    write_all(path, "x", 1);
    snprintf(path, sizeof path, "%s/%u-cf-3.tmp", tmp, (unsigned)dead_pid);
    write_all(path, "y", 1);
    snprintf(path, sizeof path, "%s/%u-4-5.tmp", tmp, (unsigned)getpid());
    write_all(path, "z", 1);
    kc = open_store(dir, KILL_LIMIT, 8);
    live_kept = exists_nofollow(path);
    KT_CHECK_MSG(live_kept, "a live writer's temp file was removed");
    d = opendir(tmp);
    while (d && (de = readdir(d)) != NULL) {
        unsigned long pid;
        if (de->d_name[0] == '.') continue;
        pid = strtoul(de->d_name, NULL, 10);
        if (pid == (unsigned long)getpid()) continue;
        if (pid > 0 && kill((pid_t)pid, 0) == 0) continue; /* the pid was reused by a live process */
        KT_FAILF("a dead writer's temp file survived a new kcache: tmp/%s (%d orphans were there)", de->d_name, orphans);
    }
    if (d) closedir(d);
    unlink(path);
    kcache_close(kc);

    in_child("reader after the kills", kill_reader, dir);
    tdir_rm(dir);
}

/* ============================================================================================ */
/* corruption                                                                                   */
/* ============================================================================================ */

#define CORRUPT_PAYLOAD 1000

/* Writes bytes as key 1's entry, then: explain says rejected, the get misses (never wrong or
   even right bytes from a corrupt file), the file is removed and counted, the accounting holds. */
static void expect_rejected(const char *dir, const unsigned char *bytes, size_t n, const char *what, size_t at) {
    char path[512], buf[1024];
    kcache *kc;
    kcache_key k;
    const void *d = NULL;
    size_t sz = 0;
    kcache_status s;
    kcache_stats st;
    entry_path(dir, "corrupt", 1, path, sizeof path);
    if (write_all(path, bytes, n) != 0) { KT_FAILF("cannot write %s", path); return; }
    kc = open_store(dir, 1u << 20, 64);
    if (!kc) return;
    mkkey(&k, "corrupt", 1);
    kcache_explain(kc, &k, buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "rejected") != NULL, "%s at %zu: explain before the get: \"%s\"", what, at, buf);
    s = kcache_get(kc, &k, &d, &sz);
    if (s == KCACHE_OK) {
        KT_FAILF("%s at %zu: the get hit (%s bytes) instead of rejecting the entry", what, at,
                 pl_exact(d, sz, 1, 1, CORRUPT_PAYLOAD) ? "the right" : "WRONG");
        kcache_release(kc, d);
    } else {
        KT_CHECK_MSG(s == KCACHE_MISS, "%s at %zu: get returned %s", what, at, kcache_strerror(s));
    }
    kcache_get_stats(kc, &st);
    KT_CHECK_MSG(st.rejects == (s == KCACHE_OK ? 0u : 1u), "%s at %zu: stats.rejects = %llu", what, at, (unsigned long long)st.rejects);
    KT_CHECK_MSG(s == KCACHE_OK || !exists_nofollow(path), "%s at %zu: the rejected entry file is still there", what, at);
    if (s != KCACHE_OK) check_accounting(kc, dir, 1u << 20, what);
    kcache_key_free(&k);
    kcache_close(kc);
}

/* A store holding key 1 (and a few neighbours); returns key 1's entry bytes. */
static unsigned char *corrupt_setup(char *dir, size_t cap, size_t *n, size_t *hlen, size_t *rlen) {
    kcache *kc;
    char path[512];
    unsigned char *e;
    uint32_t i;
    tdir_new(dir, cap);
    kc = open_store(dir, 1u << 20, 64);
    if (!kc) return NULL;
    for (i = 0; i < 4; i++) put_pl(kc, "corrupt", i, 1, CORRUPT_PAYLOAD);
    kcache_close(kc);
    entry_path(dir, "corrupt", 1, path, sizeof path);
    e = read_all(path, n);
    if (!e || *n < 88) { KT_FAILF("no entry file for key 1"); free(e); return NULL; }
    *hlen = rd32(e + 12);
    *rlen = rd32(e + 64);
    KT_CHECK_MSG(*hlen + CORRUPT_PAYLOAD == *n, "entry size %zu, header %zu, payload %d", *n, *hlen, CORRUPT_PAYLOAD);
    KT_CHECK_MSG(72 + *rlen + 8 <= *hlen, "header length %zu, record %zu", *hlen, *rlen);
    return e;
}

static void corrupt_flip(void) {
    char dir[256];
    size_t n, hlen, rlen, i;
    unsigned char *e = corrupt_setup(dir, sizeof dir, &n, &hlen, &rlen), *c;
    uint64_t rng = 77;
    int failures_before;
    if (!e) { tdir_rm(dir); return; }
    c = (unsigned char *)malloc(n);
    for (i = 0; i < n && c; i++) {
        const char *what;
        if (i >= 72 + rlen + 8 && i < hlen) continue; /* the padding: corrupt_flip_padding */
        if (i >= hlen && i != hlen && i != hlen + 1 && i != n - 1 && sm64(&rng) % 20 != 0) continue; /* ~50 payload bytes */
        what = i < 72 ? "flip in the fixed header" : i < 72 + rlen ? "flip in the key record"
             : i < 72 + rlen + 8 ? "flip in the header checksum" : "flip in the payload";
        memcpy(c, e, n);
        c[i] ^= (unsigned char)(i % 3 == 0 ? 0x01 : i % 3 == 1 ? 0x80 : 0xff);
        failures_before = kt_failures_here;
        expect_rejected(dir, c, n, what, i);
        if (kt_failures_here - failures_before > 0 && kt_failures_here > 12) break; /* enough said */
    }
    free(c);
    free(e);
    tdir_rm(dir);
}

/* Bytes between the header checksum and the payload (zero padding, the 16 spare bytes included)
   are written as zeros; the issue asks that a flip there is a miss like any other. */
static void corrupt_flip_padding(void) {
    char dir[256];
    size_t n, hlen, rlen, i;
    unsigned char *e = corrupt_setup(dir, sizeof dir, &n, &hlen, &rlen), *c;
    if (!e) { tdir_rm(dir); return; }
    c = (unsigned char *)malloc(n);
    for (i = 72 + rlen + 8; i < hlen && c; i++) {
        int before = kt_failures_here;
        KT_CHECK_MSG(e[i] == 0, "padding byte %zu is %u, not 0", i, e[i]);
        memcpy(c, e, n);
        c[i] ^= 0x5a;
        expect_rejected(dir, c, n, "flip in the header padding", i);
        if (kt_failures_here != before) { /* one position says it; the others are alike */
            KT_FAILF("(the padding is bytes %zu..%zu of the entry; stopped at the first accepted flip)", 72 + rlen + 8, hlen - 1);
            break;
        }
    }
    free(c);
    free(e);
    tdir_rm(dir);
}

static void corrupt_truncate(void) {
    char dir[256];
    size_t n, hlen, rlen, i, cuts[64], ncut = 0;
    unsigned char *e = corrupt_setup(dir, sizeof dir, &n, &hlen, &rlen), *c;
    uint64_t rng = 99;
    if (!e) { tdir_rm(dir); return; }
    cuts[ncut++] = 0; cuts[ncut++] = 1; cuts[ncut++] = 7; cuts[ncut++] = 8; cuts[ncut++] = 15; cuts[ncut++] = 16;
    cuts[ncut++] = 23; cuts[ncut++] = 24; cuts[ncut++] = 71; cuts[ncut++] = 72; cuts[ncut++] = 95; cuts[ncut++] = 96;
    cuts[ncut++] = 72 + rlen; cuts[ncut++] = 72 + rlen + 4; cuts[ncut++] = 72 + rlen + 8;
    cuts[ncut++] = hlen - 16; cuts[ncut++] = hlen - 1; cuts[ncut++] = hlen; cuts[ncut++] = hlen + 1;
    cuts[ncut++] = hlen + 16; cuts[ncut++] = n / 2; cuts[ncut++] = n - 8; cuts[ncut++] = n - 1;
    while (ncut < 48) cuts[ncut++] = (size_t)(sm64(&rng) % n);
    for (i = 0; i < ncut; i++) expect_rejected(dir, e, cuts[i], "truncated to", cuts[i]);
    /* one byte too many, and a payload that grew by a block */
    c = (unsigned char *)calloc(1, n + 4096);
    if (c) {
        memcpy(c, e, n);
        expect_rejected(dir, c, n + 1, "extended to", n + 1);
        expect_rejected(dir, c, n + 4096, "extended to", n + 4096);
    }
    free(c);
    free(e);
    tdir_rm(dir);
}

/* ---- a digest collision never returns another key's payload ---- */

static void digest_collision(void) {
    char dir[256], pa[512], pb[512], buf[1024], sdir[600];
    kcache *kc;
    kcache_key kb;
    size_t n, rlen;
    unsigned char *e;
    kcache_hash128 db;
    kcache_stats st;
    int round;
    tdir_new(dir, sizeof dir);
    kc = open_store(dir, 1u << 20, 64);
    if (!kc) { tdir_rm(dir); return; }
    KT_CHECK(put_pl(kc, "collide", 1, 1, 3000) == KCACHE_OK); /* key A */
    kcache_close(kc);
    entry_path(dir, "collide", 1, pa, sizeof pa);
    entry_path(dir, "collide", 2, pb, sizeof pb); /* key B, never stored */
    e = read_all(pa, &n);
    if (!e) { KT_FAILF("no entry for A"); tdir_rm(dir); return; }
    rlen = rd32(e + 64);
    mkkey(&kb, "collide", 2);
    db = kcache_key_digest(&kb);
    snprintf(sdir, sizeof sdir, "%s", pb);
    *strrchr(sdir, '/') = 0;
    mkdir(sdir, 0700);
    for (round = 0; round < 2; round++) {
        const void *d = NULL;
        size_t sz = 0;
        kcache_status s;
        const char *what = round == 0 ? "A's file under B's name" : "A's file with B's digest and a fixed header checksum";
        unsigned char *c = (unsigned char *)malloc(n);
        memcpy(c, e, n);
        if (round >= 1) { /* patch the digest, then make the header checksum right again */
            wr64(c + 24, db.lo);
            wr64(c + 32, db.hi);
            wr64(c + 72 + rlen, kcache_hash(c, 72 + rlen).lo);
        }
        write_all(pb, c, n);
        free(c);
        kc = open_store(dir, 1u << 20, 64);
        if (!kc) break;
        kcache_explain(kc, &kb, buf, sizeof buf);
        KT_CHECK_MSG(strncmp(buf, "hit", 3) != 0, "%s: explain says \"%s\"", what, buf);
        s = kcache_get(kc, &kb, &d, &sz);
        if (s == KCACHE_OK) {
            KT_FAILF("%s: get of B hit, %s", what, pl_check(d, sz, 1) == NULL ? "returning A's payload" : "returning other bytes");
            kcache_release(kc, d);
        }
        KT_CHECK_MSG(s == KCACHE_MISS, "%s: get of B: %s", what, kcache_strerror(s));
        kcache_get_stats(kc, &st);
        KT_CHECK_MSG(st.rejects == 1, "%s: stats.rejects = %llu", what, (unsigned long long)st.rejects);
        KT_CHECK_MSG(!exists_nofollow(pb), "%s: the colliding file was not removed", what);
        KT_CHECK_MSG(get_exact(kc, "collide", 1, 1, 3000) == 1, "%s: A itself no longer hits", what);
        check_accounting(kc, dir, 1u << 20, what);
        kcache_close(kc);
    }
    kcache_key_free(&kb);
    free(e);
    tdir_rm(dir);
}

/* ---- config.file: garbage, truncated, zero-length, missing, a dead holder's busy flag ---- */

#define CF_KEYS 20

static void cf_populate(const char *dir) {
    kcache *kc = open_store(dir, 1u << 20, 4);
    uint32_t i;
    if (!kc) return;
    for (i = 0; i < CF_KEYS; i++) put_pl(kc, "cf", i, 3, pl_len(i, 3, 100, 9000));
    kcache_close(kc);
}

static void cf_damage(const char *dir, int kind) {
    char p[512];
    unsigned char *b;
    size_t n = 0, i;
    uint64_t rng = 1234 + (uint64_t)kind;
    snprintf(p, sizeof p, "%s/config.file", dir);
    b = read_all(p, &n);
    switch (kind) {
    case 0: /* garbage of the right size */
        for (i = 0; i < n; i++) b[i] = (unsigned char)sm64(&rng);
        write_all(p, b, n);
        break;
    case 1: /* garbage, short */
        for (i = 0; i < 1000 && i < n; i++) b[i] = (unsigned char)sm64(&rng);
        write_all(p, b, 1000);
        break;
    case 2: write_all(p, b, 10); break; /* truncated to 10 bytes */
    case 3: write_all(p, b, 0); break;  /* zero-length */
    case 4: unlink(p); break;           /* missing */
    case 5: /* sound, but a holder died mid-update: busy set, checksum resealed */
        wr32(b + 48, 1);
        wr64(b + 120, kcache_hash(b, 120).lo);
        write_all(p, b, n);
        break;
    case 6: /* the header says 3 entries and 5 bytes, the checksum is wrong */
        wr64(b + 24, 5);
        wr64(b + 32, 3);
        write_all(p, b, n);
        break;
    default: break;
    }
    free(b);
}
static const char *const cf_kind_name[] = {"garbage", "short garbage", "truncated to 10 bytes", "zero-length", "missing",
                                            "busy flag of a dead holder", "wrong accounting, bad checksum"};
#define CF_KINDS 7

static void config_file_damaged(void) {
    int kind;
    for (kind = 0; kind < CF_KINDS; kind++) {
        char dir[256], buf[1024];
        kcache *kc;
        uint32_t i;
        int hits = 0;
        tdir_new(dir, sizeof dir);
        cf_populate(dir);
        cf_damage(dir, kind);
        kc = open_store(dir, 1u << 20, 64);
        if (!kc) { tdir_rm(dir); continue; }
        explain_key(kc, "cf", 0, buf, sizeof buf);
        KT_CHECK_MSG(strncmp(buf, "hit: disk", 9) == 0, "%s: explain: \"%s\"", cf_kind_name[kind], buf);
        KT_CHECK_MSG(put_pl(kc, "cf", 100, 1, 2000) == KCACHE_OK, "%s: a put failed", cf_kind_name[kind]);
        check_accounting(kc, dir, 1u << 20, cf_kind_name[kind]);
        for (i = 0; i < CF_KEYS; i++) {
            int r = get_exact(kc, "cf", i, 3, pl_len(i, 3, 100, 9000));
            KT_CHECK_MSG(r >= 0, "%s: key %u: wrong payload", cf_kind_name[kind], i);
            hits += r == 1;
        }
        KT_CHECK_MSG(hits == CF_KEYS, "%s: %d of %d stored keys hit", cf_kind_name[kind], hits, CF_KEYS);
        KT_CHECK_MSG(get_exact(kc, "cf", 100, 1, 2000) == 1, "%s: the new key does not hit", cf_kind_name[kind]);
        kcache_close(kc);
        tdir_rm(dir);
    }
}

/* The same damage while a kcache has config.file mapped (another process, or a user, writes it). */
typedef struct cf_open_arg { const char *dir; int kind; } cf_open_arg;
static void cf_damage_open_child(void *arg) {
    cf_open_arg *a = (cf_open_arg *)arg;
    kcache *kc = open_store(a->dir, 1u << 20, 4); /* 4 in memory, the rest only on disk */
    uint32_t i;
    int r;
    if (!kc) return;
    for (i = 0; i < 4; i++) get_exact(kc, "cf", i, 3, pl_len(i, 3, 100, 9000));
    cf_damage(a->dir, a->kind);
    for (i = 0; i < CF_KEYS; i++) {
        r = get_exact(kc, "cf", i, 3, pl_len(i, 3, 100, 9000));
        KT_CHECK_MSG(r >= 0, "%s while open: key %u: wrong payload", cf_kind_name[a->kind], i);
    }
    KT_CHECK_MSG(put_pl(kc, "cf", 100, 1, 2000) == KCACHE_OK, "%s while open: a put failed", cf_kind_name[a->kind]);
    check_accounting(kc, a->dir, 1u << 20, cf_kind_name[a->kind]);
    kcache_close(kc);
}
static void config_file_damaged_while_open(void) {
    int kind;
    for (kind = 0; kind < CF_KINDS; kind++) {
        char dir[256], what[128];
        cf_open_arg a;
        /* Shrinking config.file in place under a live mapping is outside the contract (kcache.h,
           config.file notes: a hit records its use through the mapping without a system call);
           damage of the same size, removal and replacement by rename are checked. */
        if (kind >= 1 && kind <= 3) continue;
        tdir_new(dir, sizeof dir);
        cf_populate(dir);
        a.dir = dir;
        a.kind = kind;
        snprintf(what, sizeof what, "config.file %s while a kcache has it mapped", cf_kind_name[kind]);
        in_child(what, cf_damage_open_child, &a);
        tdir_rm(dir);
    }
}

/* ============================================================================================ */
/* eviction                                                                                      */
/* ============================================================================================ */

#define LRU_LIMIT (256u << 10)
#define LRU_PAYLOAD (LRU_LIMIT / 4 - 512) /* an entry is just under a quarter of the limit */

/* A, B, C, D fill the store; A used again (from another kcache, or from memory over a second
   later); E: exactly one of B, C, D goes (the smallest step that makes room for E), A and E stay,
   whatever atime says. */
static void use_scenario(const char *dir, int touch_from_other_kcache) {
    kcache *kc = open_store(dir, LRU_LIMIT, 64), *kc2;
    char buf[1024], path[512];
    kcache_stats st;
    uint32_t i, gone = 0, ngone = 0;
    uint64_t before, ab, ac;
    struct timespec tv[2];
    if (!kc) return;
    for (i = 0; i < 4; i++) KT_CHECK(put_pl(kc, "lru", i, 1, LRU_PAYLOAD) == KCACHE_OK);
    check_accounting(kc, dir, LRU_LIMIT, "after A..D");
    for (i = 0; i < 4; i++) KT_CHECK_MSG(entry_exists(dir, "lru", i), "entry %u missing before E", i);
    if (touch_from_other_kcache) { /* a disk hit marks the entry used at once */
        kc2 = open_store(dir, LRU_LIMIT, 64);
        KT_CHECK_MSG(get_exact(kc2, "lru", 0, 1, LRU_PAYLOAD) == 1, "A does not hit from disk");
        kcache_close(kc2);
    } else {
        int g;
        sleep_us(1100000); /* memory hits tell the store at most once a second per entry */
        for (g = 0; g < 64; g++) /* a few gets: kcache may look at the clock on only some memory hits */
            KT_CHECK_MSG(get_exact(kc, "lru", 0, 1, LRU_PAYLOAD) == 1, "A does not hit from memory");
    }
    /* atime says the opposite: A never read, B, C, D read just now (kcache must not care) */
    tv[0].tv_sec = 1000; tv[0].tv_nsec = 0; tv[1].tv_sec = 0; tv[1].tv_nsec = UTIME_OMIT;
    entry_path(dir, "lru", 0, path, sizeof path);
    utimensat(AT_FDCWD, path, tv, AT_SYMLINK_NOFOLLOW);
    clock_gettime(CLOCK_REALTIME, &tv[0]);
    tv[0].tv_sec += 86400;
    for (i = 1; i < 4; i++) {
        entry_path(dir, "lru", i, path, sizeof path);
        utimensat(AT_FDCWD, path, tv, AT_SYMLINK_NOFOLLOW);
    }
    kcache_get_stats(kc, &st);
    before = st.evictions;
    KT_CHECK(put_pl(kc, "lru", 4, 1, LRU_PAYLOAD) == KCACHE_OK); /* E */
    KT_CHECK_MSG(entry_exists(dir, "lru", 0), "A (the one used) was evicted");
    KT_CHECK_MSG(entry_exists(dir, "lru", 4), "E (just put) is not in the store");
    for (i = 1; i < 4; i++)
        if (!entry_exists(dir, "lru", i)) { gone = i; ngone++; }
    KT_CHECK_MSG(ngone == 1, "%u of B, C, D were evicted to make room for one entry, not 1", ngone);
    kcache_get_stats(kc, &st);
    KT_CHECK_MSG(st.evictions - before == 1, "stats.evictions grew by %llu, not 1", (unsigned long long)(st.evictions - before));
    check_accounting(kc, dir, LRU_LIMIT - (LRU_LIMIT >> 10), "after E (just under the limit, less its 1/1024 margin)");
    KT_CHECK(cf_read(dir, &ab, &ac) == 0 && ac == 4);

    /* an entry larger than the limit is not stored; memory still serves it */
    {
        size_t big = LRU_LIMIT + 1;
        uint64_t ab0, ac0, ab1, ac1;
        kcache_status s;
        cf_read(dir, &ab0, &ac0);
        s = put_pl(kc, "lru", 9, 1, big);
        KT_CHECK_MSG(s == KCACHE_ETOOBIG, "put over the limit: %s", kcache_strerror(s));
        KT_CHECK_MSG(!entry_exists(dir, "lru", 9), "an entry over the limit is in the store");
        KT_CHECK_MSG(get_exact(kc, "lru", 9, 1, big) == 1, "the memory copy of an entry over the limit does not serve");
        cf_read(dir, &ab1, &ac1);
        KT_CHECK(ab0 == ab1 && ac0 == ac1);
        KT_CHECK_MSG(entry_exists(dir, "lru", 0) && entry_exists(dir, "lru", 4), "a put over the limit evicted entries");
    }
    kcache_close(kc);

    /* a new kcache: the evicted one explains as evicted by the size limit, the others hit */
    kc = open_store(dir, LRU_LIMIT, 64);
    if (!kc || !gone) { kcache_close(kc); return; }
    explain_key(kc, "lru", gone, buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "evicted by the size limit") != NULL, "explain of evicted %c: \"%s\"", 'A' + gone, buf);
    KT_CHECK(get_exact(kc, "lru", gone, 1, LRU_PAYLOAD) == 0);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.misses_by_reason[KCACHE_REASON_EVICTED], 1);
    for (i = 0; i < 5; i++)
        if (i != gone) KT_CHECK_MSG(get_exact(kc, "lru", i, 1, LRU_PAYLOAD) == 1, "%c does not hit in a new kcache", 'A' + i);
    kcache_close(kc);
}

static void eviction_by_use(void) {
    char dir[256];
    tdir_new(dir, sizeof dir);
    use_scenario(dir, 0);
    tdir_rm(dir);
}

static void use_noatime_child(void *arg) {
    const char *base = (const char *)arg;
    char mnt[300], dir[320];
    private_mounts_or_skip();
    snprintf(mnt, sizeof mnt, "%s/mnt", base);
    mkdir(mnt, 0700);
    mount_tmpfs_or_skip(mnt, MS_NOATIME, "size=16m,mode=0700");
    {
        struct statvfs v;
        KT_CHECK_MSG(statvfs(mnt, &v) == 0 && (v.f_flag & ST_NOATIME), "the tmpfs is not mounted noatime");
    }
    snprintf(dir, sizeof dir, "%s/store", mnt);
    use_scenario(dir, 1);
}
static void eviction_by_use_noatime(void) {
    char base[256];
    tdir_new(base, sizeof base);
    in_child("eviction by use on a noatime tmpfs", use_noatime_child, base);
    tdir_rm(base);
}

/* ---- the policy against a model of it ---- */

/* config.file read whole: the use table's slot of digest d (-1: none) and its last-use word. */
typedef struct cf_image { unsigned char *b; size_t n; uint64_t nslots; } cf_image;
static int cf_image_read(const char *dir, cf_image *c) {
    char p[4096];
    snprintf(p, sizeof p, "%s/config.file", dir);
    c->b = read_all(p, &c->n);
    c->nslots = c->b && c->n >= 4096 ? (uint64_t)4 << rd32(c->b + 16) : 0;
    return c->b && c->n == 4096 + c->nslots * 32 ? 0 : -1;
}
static int64_t cf_image_slot(const cf_image *c, kcache_hash128 d, uint64_t *use) {
    uint64_t b = (d.lo & ((c->nslots / 4) - 1)) * 4, w;
    for (w = 0; w < 4; w++) {
        const unsigned char *sl = c->b + 4096 + (b + w) * 32;
        if (rd64(sl) == d.lo && rd64(sl + 8) == d.hi) {
            if (use) *use = rd64(sl + 16);
            return (int64_t)(b + w);
        }
    }
    return -1;
}

#define MODEL_KEYS 12
#define MODEL_FIT 6 /* entries the limit holds */
#define MODEL_OPS 600
#define MODEL_PAYLOAD 3000

/* A deterministic trace of gets (a put after each miss) over 12 keys of one size in a store that
   holds 6, checked after every operation against a model of the documented policy: CLOCK over the
   use table in slot order from the hand in config.file, a hit marks, a pass clears a mark, the
   first unmarked entry goes, the least recent one when every entry is marked; just enough goes to
   make room. The model reads only where each entry landed in the table (its bucket's free way) and,
   for the all-marked case, the last uses; it predicts the marks, the hand and the survivors. The
   memory LRU holds one entry, so the trace never asks twice in a row for the same key. */
static void eviction_exact_survivors(void) {
    char dir[256];
    kcache_key k;
    kcache_hash128 d[MODEL_KEYS];
    int resident[MODEL_KEYS] = {0}, mark[MODEL_KEYS] = {0};
    int64_t slot[MODEL_KEYS];
    uint64_t entry = 0, limit, margin, hand = 0, rng = 0x5eed5ull, nslots = 0;
    uint64_t evictions = 0, all_marked = 0, marked_passes = 0;
    int last = -1, op, i, bad = 0, count = 0;
    kcache *kc;
    tdir_new(dir, sizeof dir);
    for (i = 0; i < MODEL_KEYS; i++) {
        mkkey(&k, "model", (uint64_t)i);
        d[i] = kcache_key_digest(&k);
        if (i == 0) entry = MODEL_PAYLOAD + kcache__entry_header_len(kcache__record_size(&k));
        kcache_key_free(&k);
    }
    limit = MODEL_FIT * entry + entry / 2;
    margin = limit >> 10;
    kc = open_store(dir, limit, 1);
    if (!kc) { tdir_rm(dir); return; }
    for (op = 0; op < MODEL_OPS && !bad; op++) {
        uint64_t r = sm64(&rng) % 100;
        int key = r < 45 ? (int)(r % 3) : r < 75 ? 3 + (int)(r % 4) : 7 + (int)(r % 5), got;
        if (key == last) key = (key + 1) % MODEL_KEYS; /* never the entry memory holds */
        last = key;
        got = get_exact(kc, "model", (uint32_t)key, 1, MODEL_PAYLOAD);
        if (got != (resident[key] ? 1 : 0)) {
            KT_FAILF("op %d: get of key %d: %d, the model says %s", op, key, got, resident[key] ? "a hit" : "a miss");
            bad = 1;
            break;
        }
        if (got == 1) { mark[key] = 1; continue; }
        /* a miss: the put makes room first, down to the limit less the new entry and the margin */
        if ((uint64_t)count * entry > limit - entry) {
            cf_image c;
            if (cf_image_read(dir, &c) != 0) { KT_FAILF("op %d: config.file unreadable", op); free(c.b); bad = 1; break; }
            nslots = c.nslots;
            for (i = 0; i < MODEL_KEYS; i++) { /* the marks as the model has them, before this eviction */
                uint64_t use = 0;
                int64_t at;
                if (!resident[i]) continue;
                at = cf_image_slot(&c, d[i], &use);
                if (at != slot[i] || (int)(use & 1) != mark[i]) {
                    KT_FAILF("op %d: key %d: slot %lld mark %d in config.file, the model says slot %lld mark %d", op, i, (long long)at,
                             (int)(use & 1), (long long)slot[i], mark[i]);
                    bad = 1;
                }
            }
            if (rd64(c.b + 112) % nslots != hand) {
                KT_FAILF("op %d: the hand is at %llu, the model's at %llu", op, (unsigned long long)(rd64(c.b + 112) % nslots),
                         (unsigned long long)hand);
                bad = 1;
            }
            while ((uint64_t)count * entry > limit - entry - margin) {
                uint64_t hand0 = hand;
                int64_t oldest_t = 0;
                int victim = -1, oldest = -1, passed;
                for (passed = 0; passed < count; passed++) { /* the next resident entry from the hand, in slot order */
                    uint64_t use = 0;
                    int next = -1;
                    for (i = 0; i < MODEL_KEYS; i++)
                        if (resident[i] && (next < 0 || ((uint64_t)slot[i] + nslots - hand) % nslots < ((uint64_t)slot[next] + nslots - hand) % nslots))
                            next = i;
                    hand = ((uint64_t)slot[next] + 1) % nslots;
                    if (!mark[next]) { victim = next; break; }
                    cf_image_slot(&c, d[next], &use); /* passed: its mark cleared; the least recent kept in mind */
                    if (oldest < 0 || (int64_t)(use & ~(uint64_t)1) < oldest_t) { oldest = next; oldest_t = (int64_t)(use & ~(uint64_t)1); }
                    mark[next] = 0;
                    marked_passes++;
                }
                if (victim < 0) { /* a whole turn, every entry marked: the least recent goes, the hand is back */
                    victim = oldest;
                    hand = hand0;
                    all_marked++;
                }
                resident[victim] = 0;
                count--;
                evictions++;
            }
            free(c.b);
        }
        KT_CHECK(put_pl(kc, "model", (uint32_t)key, 1, MODEL_PAYLOAD) == KCACHE_OK);
        resident[key] = 1;
        mark[key] = 0;
        count++;
        {
            cf_image c;
            if (cf_image_read(dir, &c) != 0) { KT_FAILF("op %d: config.file unreadable", op); free(c.b); bad = 1; break; }
            slot[key] = cf_image_slot(&c, d[key], NULL);
            free(c.b);
            if (slot[key] < 0) { KT_FAILF("op %d: key %d put but not in the use table", op, key); bad = 1; }
        }
        for (i = 0; i < MODEL_KEYS && !bad; i++)
            if (entry_exists(dir, "model", (uint32_t)i) != resident[i]) {
                KT_FAILF("op %d (put of key %d): key %d is %s the store; the model says it is %s", op, key, i,
                         resident[i] ? "not in" : "in", resident[i] ? "there" : "evicted");
                bad = 1;
            }
    }
    KT_CHECK_MSG(evictions >= 100 && marked_passes >= 50 && all_marked >= 1, "the trace evicted %llu entries, passing %llu marked ones, %llu times all marked: too few to say much",
                 (unsigned long long)evictions, (unsigned long long)marked_passes, (unsigned long long)all_marked);
    check_accounting(kc, dir, limit, "after the model's trace");
    kcache_close(kc);
    tdir_rm(dir);
}

/* A full bucket of the use table when the table may not grow (4096 slots, the most a 4 MiB limit
   allows): the new entry takes the place of the least recent entry not used since the hand passed,
   not of the least recent one. A is put and used, then B, C, D (never used) fill its bucket: E drops
   B, though A's last use is older. */
static void eviction_full_bucket(void) {
    const uint64_t limit = 4u << 20;
    char dir[256];
    uint32_t ids[5], found = 1, id, i;
    kcache_key k;
    kcache_stats st;
    kcache *kc, *kc2;
    uint64_t bucket;
    mkkey(&k, "bucket", 0);
    bucket = kcache_key_digest(&k).lo & 1023; /* 1024 buckets of 4 */
    kcache_key_free(&k);
    ids[0] = 0;
    for (id = 1; found < 5 && id < 1000000; id++) {
        mkkey(&k, "bucket", id);
        if ((kcache_key_digest(&k).lo & 1023) == bucket) ids[found++] = id;
        kcache_key_free(&k);
    }
    if (found < 5) { KT_FAILF("no five keys share a bucket in the first million ids"); return; }
    tdir_new(dir, sizeof dir);
    kc = open_store(dir, limit, 1);
    if (!kc) { tdir_rm(dir); return; }
    KT_CHECK(put_pl(kc, "bucket", ids[0], 1, 100) == KCACHE_OK);
    kc2 = open_store(dir, limit, 1);
    KT_CHECK_MSG(kc2 && get_exact(kc2, "bucket", ids[0], 1, 100) == 1, "A does not hit from disk");
    kcache_close(kc2);
    for (i = 1; i < 4; i++) {
        sleep_us(2000); /* distinct last uses, all after A's */
        KT_CHECK(put_pl(kc, "bucket", ids[i], 1, 100) == KCACHE_OK);
    }
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.evictions, 0);
    KT_CHECK(put_pl(kc, "bucket", ids[4], 1, 100) == KCACHE_OK);
    KT_CHECK_MSG(entry_exists(dir, "bucket", ids[0]), "A (used) was dropped from its full bucket");
    KT_CHECK_MSG(!entry_exists(dir, "bucket", ids[1]), "B (the least recent of those never used) is still there");
    for (i = 2; i < 5; i++) KT_CHECK_MSG(entry_exists(dir, "bucket", ids[i]), "%c is not in the store", 'A' + i);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.evictions, 1);
    check_accounting(kc, dir, limit, "after the full bucket");
    kcache_close(kc);
    tdir_rm(dir);
}

/* The size of key id's entry file (0 when absent). */
static uint64_t entry_size(const char *dir, const char *unit, uint32_t id) {
    char p[4096];
    struct stat sb;
    entry_path(dir, unit, id, p, sizeof p);
    return lstat(p, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Small steps: a put that overflows evicts just enough for the new entry to fit under the limit
   less limit/1024, so the store stays just under it (the old rule left it at 2/3). Entries of
   1 - 16 KiB in a 256 KiB store: after each put that evicted, the store is at most limit - margin
   and more than that less one entry (without the last victim the new entry would not have fit). */
static void eviction_small_steps(void) {
    const uint64_t limit = 256u << 10, margin = limit >> 10;
    char dir[256];
    uint64_t rng = 0x57e9ull, biggest = 0, evicting = 0;
    kcache_stats st;
    uint32_t id;
    kcache *kc;
    tdir_new(dir, sizeof dir);
    kc = open_store(dir, limit, 1);
    if (!kc) { tdir_rm(dir); return; }
    for (id = 0; id < 300; id++) {
        size_t n = 1000 + (size_t)(sm64(&rng) % 15000);
        uint64_t before, ab, ac, sz;
        kcache_get_stats(kc, &st);
        before = st.evictions;
        KT_CHECK(put_pl(kc, "steps", id, 1, n) == KCACHE_OK);
        sz = entry_size(dir, "steps", id);
        if (sz > biggest) biggest = sz;
        kcache_get_stats(kc, &st);
        KT_CHECK(cf_read(dir, &ab, &ac) == 0);
        if (st.evictions == before) {
            KT_CHECK_MSG(ab <= limit, "put %u: %llu accounted, over the limit without an eviction", id, (unsigned long long)ab);
            continue;
        }
        evicting++;
        KT_CHECK_MSG(ab <= limit - margin && ab + biggest > limit - margin,
                     "put %u evicted %llu entries and left %llu bytes: want (%llu, %llu] (the limit less the margin, less one entry)", id,
                     (unsigned long long)(st.evictions - before), (unsigned long long)ab, (unsigned long long)(limit - margin - biggest),
                     (unsigned long long)(limit - margin));
    }
    KT_CHECK_MSG(evicting > 150, "only %llu of 300 puts evicted", (unsigned long long)evicting);
    check_accounting(kc, dir, limit - margin, "after 300 puts");
    kcache_close(kc);
    tdir_rm(dir);
}

/* Four processes putting distinct keys into one small store at once, every put evicting: the
   accounting is exact after, the store just under its limit (small steps under contention too),
   every entry that left is counted as an eviction, and every entry still there reads back whole. */
#define CONC_PROCS 4
#define CONC_PUTS 150
#define CONC_LIMIT (128u << 10)
#define CONC_MAX 6000

static void conc_child(const char *dir, int idx) {
    kcache *kc = open_store(dir, CONC_LIMIT, 1);
    uint64_t rng = 0xc0c0ull + (uint64_t)idx;
    uint32_t i;
    int bad = 0;
    if (!kc) return;
    for (i = 0; i < CONC_PUTS; i++) {
        uint32_t id = (uint32_t)idx * CONC_PUTS + i;
        kcache_status s = put_pl(kc, "conc", id, 1, 500 + (size_t)(sm64(&rng) % (CONC_MAX - 500)));
        if (s != KCACHE_OK && bad++ < 3) KT_FAILF("process %d: put %u: %s", idx, i, kcache_strerror(s));
    }
    kcache_close(kc);
}

static void eviction_concurrent(void) {
    const uint64_t margin = CONC_LIMIT >> 10, biggest = CONC_MAX + 1024; /* payload + a header under 1 KiB */
    char dir[256], cf[300];
    uint64_t ab, ac, evictions = 0;
    int hits;
    kcache *kc;
    tdir_new(dir, sizeof dir);
    kc = open_store(dir, CONC_LIMIT, 1);
    kcache_close(kc);
    in_children(CONC_PROCS, conc_child, dir);
    /* before any kcache opens it again (which could repair): as the writers left it */
    /* within the limit: an eviction goes down to the limit less the margin, but a last put that
       fits without one may end anywhere up to the limit itself */
    check_accounting(NULL, dir, CONC_LIMIT, "after the concurrent puts");
    KT_CHECK(cf_read(dir, &ab, &ac) == 0);
    KT_CHECK_MSG(ab + biggest > CONC_LIMIT - margin, "after the concurrent puts the store holds %llu bytes of %llu: more went than needed",
                 (unsigned long long)ab, (unsigned long long)CONC_LIMIT);
    snprintf(cf, sizeof cf, "%s/config.file", dir);
    {
        size_t n;
        unsigned char *b = read_all(cf, &n);
        if (b && n >= 72) evictions = rd64(b + 64);
        free(b);
    }
    KT_CHECK_MSG(evictions + ac == (uint64_t)CONC_PROCS * CONC_PUTS, "%llu evictions + %llu entries left != %u distinct puts",
                 (unsigned long long)evictions, (unsigned long long)ac, CONC_PROCS * CONC_PUTS);
    kc = open_store(dir, CONC_LIMIT, 1);
    if (kc) {
        hits = hits_checked(kc, "conc", CONC_PROCS * CONC_PUTS, "after the concurrent puts");
        KT_CHECK_MSG((uint64_t)hits == ac, "%d keys hit, %llu entries accounted", hits, (unsigned long long)ac);
        kcache_close(kc);
    }
    tdir_rm(dir);
}

/* ---- write policy evict ---- */

static void write_evict_reader(void *arg) {
    const char *dir = (const char *)arg;
    kcache *kc = open_store(dir, 64u << 20, 64);
    kcache_stats st;
    uint32_t i;
    if (!kc) return;
    for (i = 0; i < 10; i++)
        KT_CHECK_MSG(get_exact(kc, "wev", i, 2, pl_len(i, 2, 1000, 5000)) == 1, "key %u does not hit in a new process", i);
    KT_CHECK_MSG(get_exact(kc, "wev", 10, 2, 100) == 0, "a removed key was written at close");
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_disk, 10);
    check_accounting(kc, dir, 64u << 20, "after close");
    kcache_close(kc);
}

static void write_policy_evict(void) {
    char dir[256];
    kcache_config c;
    kcache *kc = NULL;
    uint32_t i;
    tdir_new(dir, sizeof dir);
    cfg_for(&c, dir, 64u << 20, 4);
    c.write_policy = KCACHE_WRITE_EVICT;
    if (kcache_open(&kc, &c) != KCACHE_OK || !kc || !kcache_dir(kc)) { KT_FAILF("open"); tdir_rm(dir); return; }
    for (i = 0; i < 10; i++) KT_CHECK(put_pl(kc, "wev", i, 2, pl_len(i, 2, 1000, 5000)) == KCACHE_OK);
    for (i = 0; i < 6; i++) KT_CHECK_MSG(entry_exists(dir, "wev", i), "key %u left memory but is not in the store", i);
    for (i = 6; i < 10; i++) KT_CHECK_MSG(!entry_exists(dir, "wev", i), "key %u is still in memory but already in the store", i);
    KT_CHECK(get_exact(kc, "wev", 9, 2, pl_len(9, 2, 1000, 5000)) == 1);
    KT_CHECK(!entry_exists(dir, "wev", 9));
    KT_CHECK(put_pl(kc, "wev", 10, 2, 100) == KCACHE_OK);
    KT_CHECK(kcache_remove(kc, NULL) == KCACHE_EINVAL);
    {
        kcache_key k;
        mkkey(&k, "wev", 10);
        KT_CHECK(kcache_remove(kc, &k) == KCACHE_OK);
        kcache_key_free(&k);
    }
    kcache_close(kc);
    for (i = 0; i < 10; i++) KT_CHECK_MSG(entry_exists(dir, "wev", i), "key %u not in the store after close", i);
    KT_CHECK(!entry_exists(dir, "wev", 10));
    in_child("reader of an evict-policy store", write_evict_reader, dir);
    tdir_rm(dir);
}

/* KCACHE_MEM_SIZE is a hard cap (issue 24): an entry larger than the whole memory budget is stored
   on disk (KCACHE_OK) and never kept in memory, whichever path brought it (a put, a disk hit, a
   layer hit, KCACHE_WRITE=evict, which writes it through); a payload handed out stays valid until
   released. */
static void mem_cap_get(kcache *kc, const char *unit, uint32_t id, size_t n, uint64_t budget, const char *what) {
    kcache_key k;
    const void *d = NULL;
    size_t sz = 0;
    kcache_stats st;
    mkkey(&k, unit, id);
    KT_CHECK_MSG(kcache_get(kc, &k, &d, &sz) == KCACHE_OK, "%s: the get misses", what);
    kcache_get_stats(kc, &st);
    KT_CHECK_MSG(st.mem_bytes <= budget, "%s: mem_bytes %llu over the budget %llu while the payload is held", what,
                 (unsigned long long)st.mem_bytes, (unsigned long long)budget);
    KT_CHECK_MSG(d && pl_exact(d, sz, id, 1, n), "%s: wrong payload", what);
    if (d) kcache_release(kc, d);
    kcache_key_free(&k);
}
static void mem_cap(void) {
    char dir[256], layer[256];
    kcache_config c;
    kcache *kc = NULL;
    kcache_stats st;
    uint64_t budget = 16u << 20;
    tdir_new(dir, sizeof dir);
    /* the issue's case: KCACHE_MEM_SIZE 16 MiB, a 64 MiB put */
    cfg_for(&c, dir, 0, 64);
    c.mem_size = budget;
    if (kcache_open(&kc, &c) != KCACHE_OK || !kc || !kcache_dir(kc)) { KT_FAILF("open"); tdir_rm(dir); return; }
    KT_CHECK(put_pl(kc, "cap", 1, 1, 64u << 20) == KCACHE_OK);
    kcache_get_stats(kc, &st);
    KT_CHECK_MSG(st.mem_bytes <= budget, "a 64 MiB put against 16 MiB: mem_bytes %llu", (unsigned long long)st.mem_bytes);
    KT_CHECK_EQ_U64(st.disk_entries, 1);
    mem_cap_get(kc, "cap", 1, 64u << 20, budget, "first get");
    mem_cap_get(kc, "cap", 1, 64u << 20, budget, "second get");
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_mem, 0);
    KT_CHECK_EQ_U64(st.hits_disk, 2); /* the disk hit was not kept in memory either */
    /* two payloads of the big entry held at once, then the key replaced by a small one: both stay valid */
    {
        kcache_key k;
        const void *a = NULL, *b = NULL;
        size_t an = 0, bn = 0;
        mkkey(&k, "cap", 1);
        KT_CHECK(kcache_get(kc, &k, &a, &an) == KCACHE_OK && kcache_get(kc, &k, &b, &bn) == KCACHE_OK);
        KT_CHECK(put_pl(kc, "cap", 1, 2, 1000) == KCACHE_OK);
        KT_CHECK(a && pl_exact(a, an, 1, 1, 64u << 20) && b && pl_exact(b, bn, 1, 1, 64u << 20));
        if (a) kcache_release(kc, a);
        if (b) kcache_release(kc, b);
        KT_CHECK(get_exact(kc, "cap", 1, 2, 1000) == 1);
        /* and a small entry in memory replaced by a big one: memory must not serve the small one */
        KT_CHECK(put_pl(kc, "cap", 1, 1, 20u << 20) == KCACHE_OK);
        KT_CHECK(get_exact(kc, "cap", 1, 1, 20u << 20) == 1);
        kcache_key_free(&k);
    }
    kcache_close(kc);
    kc = NULL;

    /* KCACHE_WRITE=evict keeps entries in memory until they are evicted: one over the budget is
       written through at once (memory would have dropped it, lost) */
    cfg_for(&c, dir, 0, 64);
    c.mem_size = 1u << 20;
    c.write_policy = KCACHE_WRITE_EVICT;
    if (kcache_open(&kc, &c) != KCACHE_OK || !kc || !kcache_dir(kc)) { KT_FAILF("open (evict)"); tdir_rm(dir); return; }
    KT_CHECK(put_pl(kc, "capev", 2, 1, 4u << 20) == KCACHE_OK);
    KT_CHECK_MSG(entry_exists(dir, "capev", 2), "write-evict: the entry over the budget is not in the store");
    KT_CHECK(put_pl(kc, "capev", 3, 1, 1000) == KCACHE_OK);
    KT_CHECK_MSG(!entry_exists(dir, "capev", 3), "write-evict: a small entry was written at once");
    mem_cap_get(kc, "capev", 2, 4u << 20, 1u << 20, "write-evict get");
    kcache_close(kc);
    kc = NULL;

#ifdef KCACHE_NO_LAYERS
    printf("# mem_cap: the layer case skipped (KCACHE_NO_LAYERS)\n");
    (void)layer;
    tdir_rm(dir);
    return;
#endif
    /* a layer hit larger than the budget: served, copied into the store, not kept in memory */
    tdir_new(layer, sizeof layer);
    kc = open_store(layer, 0, 64);
    if (kc) { KT_CHECK(put_pl(kc, "caply", 4, 1, 4u << 20) == KCACHE_OK); kcache_close(kc); }
    kc = NULL;
    cfg_for(&c, dir, 0, 64);
    c.mem_size = 1u << 20;
    c.layers = layer;
    if (kcache_open(&kc, &c) != KCACHE_OK || !kc) { KT_FAILF("open (layer)"); tdir_rm(dir); tdir_rm(layer); return; }
    mem_cap_get(kc, "caply", 4, 4u << 20, 1u << 20, "layer hit");
    mem_cap_get(kc, "caply", 4, 4u << 20, 1u << 20, "after the layer hit");
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_layer, 1);
    KT_CHECK_EQ_U64(st.hits_disk, 1);
    KT_CHECK_EQ_U64(st.hits_mem, 0);
    kcache_close(kc);
    tdir_rm(layer);
    tdir_rm(dir);
}

/* Every name kcache was given is printed escaped (issues 24, 25): a unit, a dependency's path, the
   store's path, in the debug log, kcache_explain and kcache_store_in_use. Printed raw, these would
   forge a whole "kcache: hit disk ..." line, retitle or clear a terminal, reorder the text. */
static int raw_bytes(const char *s, int lines) { /* a byte that is not printable ASCII ('\n' between log lines) */
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c < 0x20 && !(lines && c == '\n')) || c >= 0x7f) return 1;
    }
    return 0;
}
static void escaped_names(void) {
    static const char unit[] = "u\nkcache: hit disk forged (1 bytes)\x1b]0;pwn\x07\xff\xe2\x80\xae";
    char dir[256], bad[400], dep[600], buf[2048];
    logcap *lg = (logcap *)malloc(sizeof *lg);
    kcache_config c;
    kcache *kc = NULL;
    kcache_key k;
    const void *d;
    size_t n;
    FILE *f;
    tdir_new(dir, sizeof dir);
    logcap_init(lg);
    snprintf(dep, sizeof dep, "%s/dep\n\x1b[2J.h", dir);
    f = fopen(dep, "w");
    if (f) { fputs("int x;\n", f); fclose(f); }
    snprintf(bad, sizeof bad, "%s/store", dir);
    cfg_for(&c, bad, 0, 64);
    c.debug = 1;
    c.log = log_cb;
    c.log_user = lg;
    if (kcache_open(&kc, &c) != KCACHE_OK || !kc || !kcache_dir(kc)) { KT_FAILF("open"); free(lg); tdir_rm(dir); return; }
    kcache_key_init(&k, unit);
    kcache_key_file(&k, "dep", dep);
    KT_CHECK(kcache_put(kc, &k, "x", 1) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &k, &d, &n) == KCACHE_OK);
    if (d) kcache_release(kc, d);
    kcache_explain(kc, &k, buf, sizeof buf);
    KT_CHECK_MSG(!raw_bytes(buf, 0) && strstr(buf, "\\x0akcache: hit disk forged") && strstr(buf, "\\u{202e}"), "explain of a hit: %s", buf);
    f = fopen(dep, "a"); /* the dependency changes: a stamp miss that names its file */
    if (f) { fputs("int y;\n", f); fclose(f); }
    kcache_key_free(&k);
    kcache_key_init(&k, unit);
    kcache_key_file(&k, "dep", dep);
    kcache_explain(kc, &k, buf, sizeof buf);
    KT_CHECK_MSG(!raw_bytes(buf, 0) && strstr(buf, "\\x1b[2J.h"), "explain of a stamp miss: %s", buf);
    KT_CHECK(kcache_get(kc, &k, &d, &n) == KCACHE_MISS);
    kcache_remove(kc, &k); /* (its debug line names the unit too) */
    kcache_explain(kc, &k, buf, sizeof buf);
    KT_CHECK_MSG(!raw_bytes(buf, 0), "explain of a miss: %s", buf);
    kcache_key_free(&k);
    kcache_close(kc);
    pthread_mutex_lock(&lg->mu);
    KT_CHECK_MSG(strstr(lg->buf, "hit memory u\\x0akcache: hit disk forged") != NULL, "the debug log: %s", lg->buf);
    KT_CHECK_MSG(!raw_bytes(lg->buf, 1) && !strstr(lg->buf, "\nkcache: hit disk forged") && strncmp(lg->buf, "kcache: hit", 11) != 0,
                 "a unit name reached the debug log raw: %s", lg->buf);
    pthread_mutex_unlock(&lg->mu);
    /* a store path of the caller's own, refused (writable by others): its name in every message */
    snprintf(bad, sizeof bad, "%s/s\x1b[31m\nkcache: hit disk forged", dir);
    mkdir(bad, 0777);
    chmod(bad, 0777);
    logcap_init(lg);
    cfg_for(&c, bad, 0, 64);
    c.debug = 1;
    c.log = log_cb;
    c.log_user = lg;
    kc = NULL;
    if (kcache_open(&kc, &c) != KCACHE_OK || !kc) { KT_FAILF("open (refused)"); free(lg); tdir_rm(dir); return; }
    KT_CHECK(kcache_dir(kc) == NULL);
    KT_CHECK(kcache_store_in_use(kc, buf, sizeof buf) == 0);
    KT_CHECK_MSG(!raw_bytes(buf, 0) && strstr(buf, "\\x1b[31m\\x0akcache"), "kcache_store_in_use: %s", buf);
    kcache_key_init(&k, "plain");
    kcache_explain(kc, &k, buf, sizeof buf);
    kcache_key_free(&k);
    KT_CHECK_MSG(!raw_bytes(buf, 0) && strstr(buf, "\\x1b[31m"), "explain with the store refused: %s", buf);
    kcache_close(kc);
    KT_CHECK_MSG(!raw_bytes(lg->buf, 1) && strstr(lg->buf, "\\x1b[31m\\x0akcache"), "the refusal in the debug log: %s", lg->buf);
    free(lg);
    tdir_rm(dir);
}

/* ============================================================================================ */
/* degradation: the caller's work goes on                                                        */
/* ============================================================================================ */

/* Memory works: a put is OK (or an error status), the get hits memory with exact bytes. */
static void memory_works(kcache *kc, const char *what) {
    kcache_status s = put_pl(kc, "mem", 1, 1, 3000);
    KT_CHECK_MSG(s == KCACHE_OK || s == KCACHE_EROFS || s == KCACHE_ENOSPC || s == KCACHE_EIO || s == KCACHE_ENOENT ||
                     s == KCACHE_EUNSAFE,
                 "%s: put returned %s", what, kcache_strerror(s));
    KT_CHECK_MSG(get_exact(kc, "mem", 1, 1, 3000) == 1, "%s: memory does not serve a put key", what);
}

typedef struct ro_arg { const char *dir; int lock_readonly; } ro_arg;
static void readonly_child(void *arg) {
    ro_arg *a = (ro_arg *)arg;
    kcache_config c;
    kcache *kc = NULL;
    logcap *lg = (logcap *)malloc(sizeof *lg);
    char buf[1024];
    uint32_t i;
    kcache_status s;
    logcap_init(lg);
    if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0) {
        KT_FAILF("cannot become nobody: %s", strerror(errno));
        return;
    }
    cfg_for(&c, a->dir, 1u << 20, 64);
    c.debug = 1;
    c.log = log_cb;
    c.log_user = lg;
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
    if (!kc) return;
    if (a->lock_readonly) { /* a lock file it may not open: read-only, hits served without a lock */
        KT_CHECK_MSG(kcache_dir(kc) != NULL, "a store whose lock cannot be opened is not used read-only");
        explain_key(kc, "cold", 99, buf, sizeof buf);
        KT_CHECK_MSG(strncmp(buf, "miss", 4) == 0, "explain: \"%s\"", buf);
    }
    for (i = 0; i < 6; i++) {
        int r = get_exact(kc, "ro", i, 1, 2000 + i);
        KT_CHECK_MSG(r >= 0, "key %u: wrong payload from a read-only store", i);
        if (i != 5) KT_CHECK_MSG(r == 1, "key %u does not hit from a read-only store", i);
        if (i == 5) KT_CHECK_MSG(r == 0, "the corrupt key hits");
    }
    s = put_pl(kc, "ro", 50, 1, 2000);
    KT_CHECK_MSG(get_exact(kc, "ro", 50, 1, 2000) == 1, "memory does not serve a put the store refused");
    KT_CHECK_MSG(s == KCACHE_EROFS, "a put into a read-only store: %s", kcache_strerror(s));
    KT_CHECK_MSG(strstr(lg->buf, "read-only") != NULL || strstr(lg->buf, "not writable") != NULL,
                 "the debug log does not say the store is read-only:\n%s", lg->buf);
    KT_CHECK(kcache_remove(kc, NULL) == KCACHE_EINVAL);
    kcache_verify(kc, 1); /* must not crash */
    kcache_close(kc);
    free(lg);
}

static void readonly_store(void) {
    int variant;
    if (geteuid() != 0) { skip_because("needs root (%s) to chown the store to nobody and setuid", "not root"); return; }
    for (variant = 0; variant < 2; variant++) {
        char dir[256], cmd[2048], path[512];
        kcache *kc;
        ro_arg a;
        uint32_t i;
        size_t n;
        unsigned char *e;
        tdir_new(dir, sizeof dir);
        kc = open_store(dir, 1u << 20, 64);
        if (!kc) { tdir_rm(dir); return; }
        for (i = 0; i < 6; i++) put_pl(kc, "ro", i, 1, 2000 + i);
        kcache_close(kc);
        entry_path(dir, "ro", 5, path, sizeof path); /* key 5 corrupt: rejecting it cannot remove it */
        e = read_all(path, &n);
        if (e) { e[n - 1] ^= 1; write_all(path, e, n); free(e); }
        /* the store belongs to nobody, every directory 0500 (and, variant 1, the lock 0400) */
        snprintf(cmd, sizeof cmd, "chown -R %d:%d '%s' && find '%s' -type d -exec chmod 0500 {} + %s%s%s", NOBODY, NOBODY, dir, dir,
                 variant ? "&& chmod 0400 '" : "", variant ? dir : "", variant ? "/lock'" : "");
        if (system(cmd) != 0) { KT_FAILF("%s failed", cmd); tdir_rm(dir); return; }
        a.dir = dir;
        a.lock_readonly = variant;
        in_child(variant ? "nobody, read-only store and lock" : "nobody, read-only store", readonly_child, &a);
        KT_CHECK_MSG(exists_nofollow(path), "the read-only store lost a file");
        tdir_rm(dir);
    }
}

/* A read-only mount of a store (root cannot write it either). */
static void readonly_mount_child(void *arg) {
    const char *dir = (const char *)arg;
    kcache_config c;
    kcache *kc = NULL;
    char buf[1024];
    uint32_t i;
    private_mounts_or_skip();
    if (mount(dir, dir, NULL, MS_BIND, NULL) != 0) child_skip("mount --bind: %s%s", strerror(errno), "");
    if (mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0) child_skip("remount read-only: %s%s", strerror(errno), "");
    cfg_for(&c, dir, 1u << 20, 64);
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
    if (!kc) return;
    for (i = 0; i < 4; i++) KT_CHECK_MSG(get_exact(kc, "rom", i, 1, 1500) >= 0, "key %u: wrong payload", i);
    memory_works(kc, "read-only mount");
    explain_key(kc, "cold", 77, buf, sizeof buf);
    if (!kcache_dir(kc)) KT_CHECK_MSG(strstr(buf, "memory only") && strstr(buf, "ead-only"), "explain: \"%s\"", buf);
    kcache_close(kc);
}
static void readonly_mount(void) {
    char dir[256];
    kcache *kc;
    uint32_t i;
    tdir_new(dir, sizeof dir);
    kc = open_store(dir, 1u << 20, 64);
    for (i = 0; i < 4 && kc; i++) put_pl(kc, "rom", i, 1, 1500);
    kcache_close(kc);
    in_child("read-only bind mount", readonly_mount_child, dir);
    tdir_rm(dir);
}

/* A small disk: a 256 KiB tmpfs, the default 1 GiB limit (a large, sparse use table): the store
   keeps working by evicting, and never takes the filesystem's last 5 %. */
static void enospc_child(void *arg) {
    const char *base = (const char *)arg;
    char mnt[300], dir[320], tmp[340];
    kcache_config c;
    kcache *kc = NULL;
    logcap *lg = (logcap *)malloc(sizeof *lg);
    uint32_t i, nospc = 0, ok = 0, after = 0;
    int hits = 0;
    private_mounts_or_skip();
    snprintf(mnt, sizeof mnt, "%s/mnt", base);
    mkdir(mnt, 0700);
    mount_tmpfs_or_skip(mnt, 0, "size=256k,mode=0700");
    snprintf(dir, sizeof dir, "%s/store", mnt);
    logcap_init(lg);
    cfg_for(&c, dir, (uint64_t)1 << 30, 4096);
    c.debug = 1;
    c.log = log_cb;
    c.log_user = lg;
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
    if (!kc) return;
    KT_CHECK_MSG(kcache_dir(kc) != NULL, "the store on a small tmpfs was refused");
    for (i = 0; i < 400 && after < 60; i++) {
        /* entries of one to three pages, so the disk fills at every possible boundary */
        kcache_status s = put_pl(kc, "full", i, 1, 3500 + (i % 13) * 409);
        if (s == KCACHE_OK) ok++;
        else if (s == KCACHE_ENOSPC) nospc++;
        else KT_CHECK_MSG(s == KCACHE_EIO, "put %u on a full disk: %s", i, kcache_strerror(s));
        if (nospc) after++;
        KT_CHECK_MSG(get_exact(kc, "full", i, 1, 3500 + (i % 13) * 409) == 1, "put %u: memory does not serve it", i);
    }
    { /* kcache leaves the filesystem its reserve (5 %): it evicts rather than fill the disk */
        struct statvfs v;
        KT_CHECK_MSG(statvfs(mnt, &v) == 0 && (uint64_t)v.f_bavail * v.f_frsize >= (uint64_t)v.f_blocks * v.f_frsize / 20,
                     "the store left its filesystem under the reserve");
    }
    KT_CHECK_MSG(ok > nospc, "on a small disk only %u of %u puts were stored", ok, i);
    KT_CHECK_MSG(nospc == 0 || strstr(lg->buf, "reserve") || strstr(lg->buf, "no space"), "puts failed and the log does not say why");
    KT_CHECK_MSG(strstr(lg->buf, "evict") != NULL, "the store did not evict to make room:\n%s", lg->buf);
    kcache_close(kc);
    kc = NULL;
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
    if (!kc) return;
    for (i = 0; i < 400; i++) {
        int r = get_exact(kc, "full", i, 1, 3500 + (i % 13) * 409);
        KT_CHECK_MSG(r >= 0, "key %u: wrong payload after a full disk", i);
        hits += r == 1;
    }
    KT_CHECK_MSG(hits > 0, "nothing that was stored hits");
    check_accounting(kc, dir, 0, "after a full disk");
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    KT_CHECK_MSG(count_dir(tmp) == 0, "failed writes left %d temp files", count_dir(tmp));
    kcache_close(kc);
    free(lg);
}
static void enospc(void) {
    char base[256];
    tdir_new(base, sizeof base);
    in_child("full disk", enospc_child, base);
    tdir_rm(base);
}

/* The same, made exact: the disk is filled by another file until exactly one page is free, then
   an entry of exactly one page is put. Writing the entry takes that page; recording it in the use
   table (config.file, mapped and sparse) needs another. */
static void enospc_exact_child(void *arg) {
    const char *base = (const char *)arg;
    char mnt[300], dir[320], filler[320], path[512];
    kcache_config c;
    kcache *kc = NULL;
    unsigned char *page = (unsigned char *)calloc(1, 4096), *e;
    size_t n, hlen;
    uint32_t id;
    int fd, puts_ok = 0;
    private_mounts_or_skip();
    snprintf(mnt, sizeof mnt, "%s/mnt", base);
    mkdir(mnt, 0700);
    mount_tmpfs_or_skip(mnt, 0, "size=256k,mode=0700");
    snprintf(dir, sizeof dir, "%s/store", mnt);
    snprintf(filler, sizeof filler, "%s/filler", mnt);
    cfg_for(&c, dir, (uint64_t)1 << 30, 64);
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
    if (!kc || !page) return;
    if (!kcache_dir(kc)) { memory_works(kc, "full disk, store refused"); kcache_close(kc); free(page); return; }
    KT_CHECK(put_pl(kc, "exact", 1, 1, 100) == KCACHE_OK);
    entry_path(dir, "exact", 1, path, sizeof path);
    e = read_all(path, &n);
    if (!e || n < 100) { KT_FAILF("no entry for key 1"); free(e); kcache_close(kc); free(page); return; }
    hlen = rd32(e + 12);
    free(e);
    fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    for (id = 2; id < 10 && fd >= 0; id++) {
        off_t at = lseek(fd, 0, SEEK_END);
        kcache_status s;
        while (write(fd, page, 4096) == 4096) at += 4096; /* fill the disk... */
        if (ftruncate(fd, at >= 4096 ? at - 4096 : 0) != 0) break; /* ...then free exactly one page */
        s = put_pl(kc, "exact", id, 1, 4096 - hlen);
        KT_CHECK_MSG(s == KCACHE_OK || s == KCACHE_ENOSPC || s == KCACHE_EIO, "put %u: %s", id, kcache_strerror(s));
        puts_ok += s == KCACHE_OK;
        KT_CHECK_MSG(get_exact(kc, "exact", id, 1, 4096 - hlen) == 1, "key %u: memory does not serve it", id);
    }
    if (fd >= 0) close(fd);
    unlink(filler);
    for (id = 1; id < 10; id++) KT_CHECK_MSG(get_exact(kc, "exact", id, 1, id == 1 ? 100 : 4096 - hlen) == 1, "key %u lost", id);
    if (getenv("KT_TIMES")) fprintf(stderr, "  (%d of 8 puts onto a disk with one free page stored)\n", puts_ok);
    check_accounting(kc, dir, 0, "after filling the disk exactly");
    kcache_close(kc);
    free(page);
}
static void enospc_exact(void) {
    char base[256];
    tdir_new(base, sizeof base);
    in_child("disk full to the page", enospc_exact_child, base);
    tdir_rm(base);
}

/* No KCACHE_DIR, XDG_CACHE_HOME or HOME: memory only, and it works. */
static void no_home_child(void *arg) {
    kcache *kc = NULL;
    kcache_config c;
    char buf[1024];
    (void)arg;
    unsetenv("HOME");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("KCACHE_DIR");
    KT_CHECK(kcache_open(&kc, NULL) == KCACHE_OK && kc);
    if (kc) {
        KT_CHECK(kcache_dir(kc) == NULL);
        memory_works(kc, "no home, cfg NULL");
        KT_CHECK(get_exact(kc, "mem", 2, 1, 10) == 0);
        explain_key(kc, "cold", 2, buf, sizeof buf);
        KT_CHECK_MSG(strstr(buf, "memory only") != NULL, "explain: \"%s\"", buf);
        kcache_close(kc);
    }
    kcache_config_init(&c);
    KT_CHECK(c.dir == NULL);
    kc = NULL;
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
    if (kc) {
        KT_CHECK(kcache_dir(kc) == NULL);
        memory_works(kc, "no home, cfg from kcache_config_init");
        kcache_close(kc);
    }
    setenv("XDG_CACHE_HOME", "relative/path", 1); /* not absolute: ignored, as the XDG spec says */
    kc = NULL;
    KT_CHECK(kcache_open(&kc, NULL) == KCACHE_OK && kc);
    if (kc) {
        KT_CHECK(kcache_dir(kc) == NULL);
        memory_works(kc, "relative XDG_CACHE_HOME");
        kcache_close(kc);
    }
}
static void no_home(void) { in_child("no home", no_home_child, NULL); }

/* The tidying calls (kcache-inspect's store commands are made of them): a dry run removes nothing;
   each removes exactly its entries from the store and from this process's memory, under the lock,
   with the accounting exact (kcache_verify); a cache without a store says so (issue 28). */
#ifdef KCACHE_NO_TIDY
/* With the store commands compiled out the calls are still there and say so. */
static void tidy_compiled_out(void) {
    char dir[256];
    kcache *kc;
    kcache_config c;
    kcache_tidy t;
    tdir_new(dir, sizeof dir);
    kcache_config_defaults(&c);
    c.dir = dir;
    if (kcache_open(&kc, &c) != KCACHE_OK) { KT_FAILF("open"); return; }
    t.entries = t.bytes = 7;
    KT_CHECK(kcache_trim(kc, 0, 0, &t) == KCACHE_EDISABLED && t.entries == 0 && t.bytes == 0);
    KT_CHECK(kcache_clear(kc, 0, NULL) == KCACHE_EDISABLED);
    KT_CHECK(kcache_remove_unit(kc, "u", 1, NULL) == KCACHE_EDISABLED);
    KT_CHECK(kcache_evict_older_than(kc, 1, 0, NULL) == KCACHE_EDISABLED);
    kcache_close(kc);
}
#endif

static void tidy_calls(void) {
    char dir[256];
    kcache *kc, *other;
    kcache_tidy t;
    kcache_stats st;
    uint32_t i;
    kcache_config c;
    tdir_new(dir, sizeof dir);
    kc = open_store(dir, 1u << 20, 64);
    other = open_store(dir, 1u << 20, 64); /* a second user of the store, with its own memory */
    if (!kc || !other) { KT_FAILF("setup: open"); kcache_close(kc); kcache_close(other); tdir_rm(dir); return; }
    for (i = 0; i < 4; i++) KT_CHECK(put_pl(kc, "ta", i, 1, 3000) == KCACHE_OK);
    for (i = 0; i < 3; i++) KT_CHECK(put_pl(kc, "tb", i, 1, 3000) == KCACHE_OK);
    KT_CHECK(get_exact(other, "ta", 0, 1, 3000) == 1); /* now in other's memory too */
    KT_CHECK(kcache_remove_unit(kc, "ta", 1, &t) == KCACHE_OK && t.entries == 4);
    KT_CHECK(get_exact(kc, "ta", 1, 1, 3000) == 1);
    KT_CHECK(kcache_remove_unit(kc, "ta", 0, &t) == KCACHE_OK && t.entries == 4 && t.bytes >= 4 * 3000);
    KT_CHECK_MSG(get_exact(kc, "ta", 1, 1, 3000) == 0, "kcache_remove_unit left the unit in this process's memory");
    KT_CHECK(get_exact(kc, "tb", 1, 1, 3000) == 1);
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.disk_entries, 3);
    KT_CHECK(kcache_trim(kc, 0, 1, &t) == KCACHE_OK && t.entries == 3);
    KT_CHECK(kcache_evict_older_than(kc, 3600, 0, &t) == KCACHE_OK && t.entries == 0);
    KT_CHECK(kcache_trim(kc, 0, 0, &t) == KCACHE_OK && t.entries == 3);
    KT_CHECK(kcache_verify(kc, 0) == KCACHE_OK);
    for (i = 0; i < 3; i++) KT_CHECK(put_pl(other, "tc", i, 1, 2000) == KCACHE_OK);
    KT_CHECK(kcache_clear(kc, 0, &t) == KCACHE_OK && t.entries == 3);
    kcache_get_stats(kc, &st);
    KT_CHECK(st.disk_entries == 0 && st.disk_bytes == 0 && kcache_verify(kc, 0) == KCACHE_OK);
    KT_CHECK(kcache_remove_unit(kc, "", 1, &t) == KCACHE_EINVAL && kcache_remove_unit(kc, NULL, 1, NULL) == KCACHE_EINVAL);
    KT_CHECK(kcache_clear(NULL, 1, &t) == KCACHE_EINVAL);
    kcache_close(other);
    kcache_close(kc);
    kcache_config_init(&c);
    c.persistent = 0;
    kc = NULL;
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
    if (kc) KT_CHECK(kcache_clear(kc, 0, &t) == KCACHE_EDISABLED && t.entries == 0);
    kcache_close(kc);
    tdir_rm(dir);
}

/* KCACHE_DIR='~/kc' (quoted in a script, so no shell expanded it): ~/ is $HOME, as a shell takes
   it, never a directory named "~" in the working directory; ~user and ~ without HOME are refused
   with a message (issue 28). */
static void tilde_dir_child(void *arg) {
    const char *base = (const char *)arg;
    char want[400], cwd[300], tilde[320], buf[1024];
    struct stat sb;
    kcache *kc = NULL;
    snprintf(cwd, sizeof cwd, "%s/cwd", base);
    if (mkdir(cwd, 0700) != 0 || chdir(cwd) != 0) { KT_FAILF("setup: %s: %s", cwd, strerror(errno)); return; }
    setenv("HOME", base, 1);
    setenv("KCACHE_DIR", "~/kc", 1);
    KT_CHECK(kcache_open(&kc, NULL) == KCACHE_OK && kc);
    if (!kc) return;
    snprintf(want, sizeof want, "%s/kc", base);
    KT_CHECK_MSG(kcache_dir(kc) && strcmp(kcache_dir(kc), want) == 0, "KCACHE_DIR=~/kc is the store %s", kcache_dir(kc) ? kcache_dir(kc) : "(none)");
    snprintf(tilde, sizeof tilde, "%s/~", cwd);
    KT_CHECK_MSG(lstat(tilde, &sb) != 0, "KCACHE_DIR=~/kc made a directory named ~ in the working directory");
    memory_works(kc, "KCACHE_DIR=~/kc");
    kcache_close(kc);
    kc = NULL;
    setenv("KCACHE_DIR", "~nosuchuser/kc", 1);
    KT_CHECK(kcache_open(&kc, NULL) == KCACHE_OK && kc);
    if (kc) {
        KT_CHECK(kcache_dir(kc) == NULL);
        kcache_store_in_use(kc, buf, sizeof buf);
        KT_CHECK_MSG(strstr(buf, "~nosuchuser") && strstr(buf, "to fix"), "~user: \"%s\"", buf);
        kcache_close(kc);
    }
    kc = NULL;
    unsetenv("HOME");
    setenv("KCACHE_DIR", "~/kc", 1);
    KT_CHECK(kcache_open(&kc, NULL) == KCACHE_OK && kc);
    if (kc) {
        KT_CHECK(kcache_dir(kc) == NULL);
        kcache_store_in_use(kc, buf, sizeof buf);
        KT_CHECK_MSG(strstr(buf, "HOME") && strstr(buf, "to fix"), "~ without HOME: \"%s\"", buf);
        kcache_close(kc);
    }
    KT_CHECK_MSG(lstat(tilde, &sb) != 0, "a directory named ~ appeared in the working directory");
}
static void tilde_dir(void) {
    char base[256];
    tdir_new(base, sizeof base);
    in_child("KCACHE_DIR=~/kc", tilde_dir_child, base);
    tdir_rm(base);
}

/* The directory removed (rm -rf) under an open kcache. */
static void dir_deleted(void) {
    char dir[256], cmd[300], buf[1024];
    kcache *kc;
    uint32_t i;
    kcache_status s;
    kcache_config c;
    logcap *lg = (logcap *)malloc(sizeof *lg);
    tdir_new(dir, sizeof dir);
    kc = open_store(dir, 1u << 20, 64);
    for (i = 0; i < 8 && kc; i++) put_pl(kc, "gone", i, 1, 2500);
    kcache_close(kc);
    logcap_init(lg);
    cfg_for(&c, dir, 1u << 20, 64);
    c.debug = 1;
    c.log = log_cb;
    c.log_user = lg;
    kc = NULL;
    if (kcache_open(&kc, &c) != KCACHE_OK || !kc || !kcache_dir(kc)) { KT_FAILF("open"); kcache_close(kc); free(lg); tdir_rm(dir); return; }
    KT_CHECK(get_exact(kc, "gone", 0, 1, 2500) == 1); /* key 0 in memory, the rest on disk only */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    KT_CHECK(system(cmd) == 0);
    KT_CHECK_MSG(get_exact(kc, "gone", 0, 1, 2500) >= 0, "the memory copy is wrong");
    for (i = 1; i < 8; i++) KT_CHECK_MSG(get_exact(kc, "gone", i, 1, 2500) == 0, "key %u hits from a deleted store", i);
    s = put_pl(kc, "gone", 20, 1, 2500);
    KT_CHECK_MSG(s != KCACHE_OK || exists_nofollow(dir), "a put into a deleted store says OK but nothing was recreated");
    KT_CHECK_MSG(s == KCACHE_OK || strstr(lg->buf, "refused"), "a put failed (%s) and the debug log does not say why:\n%s",
                 kcache_strerror(s), lg->buf);
    KT_CHECK(get_exact(kc, "gone", 20, 1, 2500) == 1);
    KT_CHECK(kcache_remove(kc, NULL) == KCACHE_EINVAL);
    {
        kcache_key k;
        mkkey(&k, "gone", 3);
        s = kcache_remove(kc, &k);
        KT_CHECK_MSG(s != KCACHE_OK, "remove of a key in a deleted store: %s", kcache_strerror(s));
        kcache_key_free(&k);
    }
    explain_key(kc, "gone", 4, buf, sizeof buf);
    KT_CHECK_MSG(strncmp(buf, "miss", 4) == 0, "explain: \"%s\"", buf);
    kcache_verify(kc, 0);
    kcache_verify(kc, 1);
    /* the directory back, empty: caching goes on or stays off, but nothing breaks */
    mkdir(dir, 0700);
    s = put_pl(kc, "gone", 21, 1, 2500);
    KT_CHECK(get_exact(kc, "gone", 21, 1, 2500) == 1);
    kcache_close(kc);
    free(lg);
    tdir_rm(dir);
}

/* A directory writable by others, or owned by another user: refused, memory works, nothing
   written into it. */
static void unsafe_dirs(void) {
    int variant;
    for (variant = 0; variant < 3; variant++) {
        char dir[256], buf[1024];
        kcache_config c;
        kcache *kc = NULL;
        const char *what = variant == 0 ? "mode 0777" : variant == 1 ? "mode 0770" : "owned by nobody";
        tdir_new(dir, sizeof dir);
        if (variant == 0) chmod(dir, 0777);
        if (variant == 1) chmod(dir, 0770);
        if (variant == 2 && geteuid() != 0) { skip_because("another user's directory needs root to make (%s)", "not root"); tdir_rm(dir); continue; }
        if (variant == 2 && chown(dir, NOBODY, NOBODY) != 0) { skip_because("chown: %s", strerror(errno)); tdir_rm(dir); continue; }
        cfg_for(&c, dir, 1u << 20, 64);
        KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
        if (!kc) { tdir_rm(dir); continue; }
        KT_CHECK_MSG(kcache_dir(kc) == NULL, "%s: the store was accepted", what);
        memory_works(kc, what);
        explain_key(kc, "cold", 5, buf, sizeof buf);
        KT_CHECK_MSG(strstr(buf, variant == 2 ? "another user" : "writable by") != NULL, "%s: explain: \"%s\"", what, buf);
        /* and asked directly: not in use, and why */
        KT_CHECK_MSG(kcache_store_in_use(kc, buf, sizeof buf) == 0 && strstr(buf, variant == 2 ? "another user" : "writable by"),
                     "%s: kcache_store_in_use: \"%s\"", what, buf);
        KT_CHECK_MSG(count_dir(dir) == 0, "%s: %d files created in a refused directory", what, count_dir(dir));
        kcache_close(kc);
        tdir_rm(dir);
    }
}

/* ---- symlinks pointing outside the store ---- */

typedef struct symcase { char base[256], dir[300], out[300]; } symcase;

/* A store (base/s) holding keys 0..7, and an outside directory (base/out). */
static int sym_setup(symcase *sc) {
    kcache *kc;
    uint32_t i;
    tdir_new(sc->base, sizeof sc->base);
    snprintf(sc->dir, sizeof sc->dir, "%s/s", sc->base);
    snprintf(sc->out, sizeof sc->out, "%s/out", sc->base);
    mkdir(sc->out, 0700);
    kc = open_store(sc->dir, 1u << 20, 64);
    if (!kc) return -1;
    for (i = 0; i < 8; i++) put_pl(kc, "sym", i, 1, 1200 + i);
    kcache_close(kc);
    return 0;
}
/* Gets key id: 1 a payload that key may hold (any version), 0 miss, -1 wrong bytes or status. */
static int get_valid(kcache *kc, const char *unit, uint32_t id) {
    kcache_key k;
    const void *d = NULL;
    size_t sz = 0;
    kcache_status s;
    int r;
    mkkey(&k, unit, id);
    s = kcache_get(kc, &k, &d, &sz);
    kcache_key_free(&k);
    if (s == KCACHE_MISS) return 0;
    if (s != KCACHE_OK) return -1;
    r = pl_check(d, sz, id) == NULL ? 1 : -1;
    kcache_release(kc, d);
    return r;
}
/* Gets of every key: never wrong bytes. */
static void sym_gets(kcache *kc, const char *what) {
    uint32_t i;
    for (i = 0; i < 8; i++) KT_CHECK_MSG(get_valid(kc, "sym", i) >= 0, "%s: key %u: wrong payload", what, i);
}
static void sym_replace(const char *target, const char *link) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && ln -s '%s' '%s'", link, target, link);
    if (system(cmd) != 0) KT_FAILF("%s failed", cmd);
}

static void symlink_config_file(void) {
    symcase sc;
    char link[400], target[400], cf[400];
    fsig before;
    kcache *kc;
    int when;
    for (when = 0; when < 2; when++) { /* 0: before open, 1: while open */
        unsigned char *b;
        size_t n;
        if (sym_setup(&sc) != 0) { tdir_rm(sc.base); return; }
        snprintf(link, sizeof link, "%s/config.file", sc.dir);
        snprintf(target, sizeof target, "%s/config.file", sc.out);
        b = read_all(link, &n); /* the outside file is a sound copy: tempting to use */
        write_all(target, b, n);
        free(b);
        before = sig_of(target);
        kc = NULL;
        if (when == 0) sym_replace(target, link);
        kc = open_store(sc.dir, 1u << 20, 64);
        if (!kc) { tdir_rm(sc.base); return; }
        if (when == 1) sym_replace(target, link);
        sym_gets(kc, "config.file symlink");
        KT_CHECK(put_pl(kc, "sym", 100, 1, 3000) == KCACHE_OK);
        KT_CHECK(get_exact(kc, "sym", 100, 1, 3000) == 1);
        {
            kcache_key k;
            mkkey(&k, "sym", 2);
            kcache_remove(kc, &k);
            kcache_key_free(&k);
        }
        check_accounting(kc, sc.dir, 1u << 20, when ? "config.file symlinked while open" : "config.file symlinked");
        kcache_close(kc);
        KT_CHECK_MSG(sig_same(before, sig_of(target)), "the file config.file pointed to outside the store changed (%s)",
                     when ? "while open" : "before open");
        snprintf(cf, sizeof cf, "%s/config.file", sc.dir);
        {
            struct stat s;
            KT_CHECK_MSG(lstat(cf, &s) == 0 && S_ISREG(s.st_mode), "config.file is not a regular file again");
        }
        tdir_rm(sc.base);
    }
}

static void symlink_lock(void) {
    symcase sc;
    char link[400], target[400], dangling[400];
    fsig before;
    kcache *kc = NULL;
    kcache_config c;
    if (sym_setup(&sc) != 0) { tdir_rm(sc.base); return; }
    snprintf(link, sizeof link, "%s/lock", sc.dir);
    snprintf(target, sizeof target, "%s/lock", sc.out);
    write_all(target, "outside", 7);
    before = sig_of(target);
    sym_replace(target, link);
    cfg_for(&c, sc.dir, 1u << 20, 64);
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
    if (kc) {
        sym_gets(kc, "lock symlink");
        memory_works(kc, "lock symlink");
        kcache_close(kc);
    }
    KT_CHECK_MSG(sig_same(before, sig_of(target)), "the file lock pointed to outside the store changed");
    /* dangling: nothing may be created at the target */
    snprintf(dangling, sizeof dangling, "%s/newlock", sc.out);
    sym_replace(dangling, link);
    kc = NULL;
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
    if (kc) {
        sym_gets(kc, "dangling lock symlink");
        memory_works(kc, "dangling lock symlink");
        kcache_close(kc);
    }
    KT_CHECK_MSG(!exists_nofollow(dangling), "a file was created outside the store through the lock symlink");
    tdir_rm(sc.base);
}

static void symlink_entry(void) {
    symcase sc;
    char link[400], target[400];
    unsigned char *b;
    size_t n;
    fsig before;
    kcache *kc;
    kcache_stats st;
    if (sym_setup(&sc) != 0) { tdir_rm(sc.base); return; }
    entry_path(sc.dir, "sym", 3, link, sizeof link);
    snprintf(target, sizeof target, "%s/entry.kce", sc.out);
    b = read_all(link, &n); /* a valid entry for the very key: reading it would be a hit */
    write_all(target, b, n);
    free(b);
    before = sig_of(target);
    sym_replace(target, link);
    kc = open_store(sc.dir, 1u << 20, 64);
    if (!kc) { tdir_rm(sc.base); return; }
    KT_CHECK_MSG(get_exact(kc, "sym", 3, 1, 1203) == 0, "the get read an entry through a symlink");
    kcache_get_stats(kc, &st);
    sym_gets(kc, "entry symlink");
    KT_CHECK(put_pl(kc, "sym", 3, 2, 1203) == KCACHE_OK);
    KT_CHECK(get_exact(kc, "sym", 3, 2, 1203) == 1);
    check_accounting(kc, sc.dir, 1u << 20, "entry symlink");
    kcache_close(kc);
    KT_CHECK_MSG(sig_same(before, sig_of(target)), "the file an entry symlink pointed to changed");
    tdir_rm(sc.base);
}

/* A shard directory e/XX (what = 0, before the kcache opens) or e itself (what = 1, while it is
   open: before, the store is refused) replaced by a symlink to an outside directory holding valid
   copies of the entries: nothing there is read, written or removed, whichever path reaches it
   (step 0: a get of a key in it, 1: a put of that key, 2: puts that evict it). */
static void symlink_dir_case(int what, int step) {
    static const char *const steps[] = {"a get of a key in it", "a put of a key in it", "puts that evict its entries"};
    symcase sc;
    char ep[400], shard[400], e[400], outdir[400], cmd[4096], copy[500], odir[500];
    const char *name = what ? "e symlink" : "shard symlink";
    fsig before;
    int before_n;
    kcache *kc = NULL;
    uint32_t i, victim = 5;
    if (sym_setup(&sc) != 0) { tdir_rm(sc.base); return; }
    entry_path(sc.dir, "sym", victim, ep, sizeof ep);
    snprintf(shard, sizeof shard, "%s", ep);
    *strrchr(shard, '/') = 0; /* .../s/e/XX */
    snprintf(e, sizeof e, "%s/e", sc.dir);
    snprintf(outdir, sizeof outdir, "%s/%s", sc.out, what == 0 ? "shard" : "e");
    if (what == 0) snprintf(copy, sizeof copy, "%s/%s", outdir, strrchr(ep, '/') + 1);
    else snprintf(copy, sizeof copy, "%s/%s", outdir, ep + strlen(e) + 1);
    snprintf(odir, sizeof odir, "%s", copy);
    *strrchr(odir, '/') = 0;
    if (what == 1 && step == 0) {
        kcache_config c;
        /* before open: refused (or harmless) */
        snprintf(cmd, sizeof cmd, "cp -a '%s' '%s.real' && rm -rf '%s' && ln -s '%s.real' '%s'", e, e, e, e, e);
        if (system(cmd) != 0) { KT_FAILF("%s failed", cmd); tdir_rm(sc.base); return; }
        cfg_for(&c, sc.dir, 1u << 20, 64);
        KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
        if (kc) { sym_gets(kc, "e symlink before open"); memory_works(kc, "e symlink before open"); kcache_close(kc); }
        kc = NULL;
        snprintf(cmd, sizeof cmd, "rm -f '%s' && mv '%s.real' '%s'", e, e, e);
        if (system(cmd) != 0) { KT_FAILF("%s failed", cmd); tdir_rm(sc.base); return; }
    }
    if (what == 1) {
        kc = open_store(sc.dir, 1u << 20, 64);
        if (!kc) { tdir_rm(sc.base); return; }
    }
    /* move the real directory outside, put a symlink in its place */
    snprintf(cmd, sizeof cmd, "mv '%s' '%s' && ln -s '%s' '%s'", what == 0 ? shard : e, outdir, outdir, what == 0 ? shard : e);
    if (system(cmd) != 0) { KT_FAILF("%s failed", cmd); kcache_close(kc); tdir_rm(sc.base); return; }
    before = sig_of(copy);
    KT_CHECK_MSG(before.exists, "setup: %s missing", copy);
    before_n = count_dir(odir);
    if (what == 0) kc = open_store(sc.dir, 1u << 20, 64);
    if (!kc) { tdir_rm(sc.base); return; }
    if (step == 0) {
        KT_CHECK_MSG(get_exact(kc, "sym", victim, 1, 1200 + victim) == 0, "%s: the get read an entry through it", name);
        KT_CHECK_MSG(get_exact(kc, "sym", victim, 1, 1200 + victim) == 0, "%s: the second get read an entry through it", name);
    } else if (step == 1) {
        put_pl(kc, "sym", victim, 2, 1200 + victim);
        KT_CHECK_MSG(get_exact(kc, "sym", victim, 2, 1200 + victim) == 1, "%s: memory lost the put", name);
    } else {
        for (i = 0; i < 40; i++) put_pl(kc, "sym", 200 + i, 1, 60000); /* 2.4 MB through a 1 MiB limit */
    }
    KT_CHECK_MSG(sig_same(before, sig_of(copy)), "%s: %s changed or removed %s, outside the store", name, steps[step], copy);
    sym_gets(kc, name);
    kcache_verify(kc, 1);
    kcache_close(kc);
    KT_CHECK_MSG(count_dir(odir) == before_n, "%s: %s, then gets of every key, kcache_verify and close: the outside directory "
                 "holds %d files, not %d", name, steps[step], count_dir(odir), before_n);
    tdir_rm(sc.base);
}
static void symlink_shard(void) {
    int step;
    for (step = 0; step < 3; step++) symlink_dir_case(0, step);
}
static void symlink_e(void) {
    int step;
    for (step = 0; step < 3; step++) symlink_dir_case(1, step);
}

static void symlink_tmp(void) {
    symcase sc;
    char link[400], target[400], planted[500];
    fsig before;
    kcache *kc = NULL;
    kcache_config c;
    kcache_status s;
    if (sym_setup(&sc) != 0) { tdir_rm(sc.base); return; }
    snprintf(link, sizeof link, "%s/tmp", sc.dir);
    snprintf(target, sizeof target, "%s/tmpdir", sc.out);
    mkdir(target, 0700);
    /* looks like a dead writer's temp file: a sweep through the symlink would remove it */
    snprintf(planted, sizeof planted, "%s/999999999-1-1.tmp", target);
    write_all(planted, "keep", 4);
    before = sig_of(planted);
    /* while open: puts must not write through it */
    kc = open_store(sc.dir, 1u << 20, 64);
    if (!kc) { tdir_rm(sc.base); return; }
    sym_replace(target, link);
    s = put_pl(kc, "sym", 300, 1, 5000);
    KT_CHECK_MSG(count_dir(target) == 1, "a put wrote %d files through the tmp symlink", count_dir(target) - 1);
    KT_CHECK(get_exact(kc, "sym", 300, 1, 5000) == 1);
    (void)s;
    sym_gets(kc, "tmp symlink while open");
    kcache_close(kc);
    /* before open: refused or harmless; the planted file stays */
    cfg_for(&c, sc.dir, 1u << 20, 64);
    kc = NULL;
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
    if (kc) {
        sym_gets(kc, "tmp symlink");
        memory_works(kc, "tmp symlink");
        kcache_close(kc);
    }
    KT_CHECK_MSG(sig_same(before, sig_of(planted)), "a file behind the tmp symlink was changed or removed");
    KT_CHECK_MSG(count_dir(target) == 1, "files were created behind the tmp symlink");
    tdir_rm(sc.base);
}

/* ============================================================================================ */
/* two kcache objects in one process, and threads, on one store                                  */
/* ============================================================================================ */

#define TH_THREADS 4
#define TH_OPS 2000
#define TH_KEYS 40
#define TH_LIMIT (32u << 10)

typedef struct th_arg { kcache *kc; int idx; int bad; } th_arg;
static void *th_main(void *p) {
    th_arg *a = (th_arg *)p;
    uint64_t rng = 0x7777ull + (uint64_t)a->idx;
    uint32_t op;
    for (op = 0; op < TH_OPS; op++) {
        uint64_t r = sm64(&rng);
        uint32_t id = (uint32_t)(r % TH_KEYS), what = (uint32_t)((r >> 32) % 100);
        uint32_t ver = ((uint32_t)(a->idx + 1) << 24) | op;
        kcache_key k;
        mkkey(&k, "th", id);
        if (what < 50) {
            if (put_pl(a->kc, "th", id, ver, pl_len(id, ver, 100, 3000)) != KCACHE_OK) a->bad++;
        } else if (what < 85) {
            const void *d;
            size_t n;
            kcache_status s = kcache_get(a->kc, &k, &d, &n);
            if (s == KCACHE_OK) {
                if (pl_check(d, n, id)) a->bad++;
                kcache_release(a->kc, d);
            } else if (s != KCACHE_MISS) a->bad++;
        } else {
            kcache_status s = kcache_remove(a->kc, &k);
            if (s != KCACHE_OK && s != KCACHE_MISS) a->bad++;
        }
        kcache_key_free(&k);
    }
    return NULL;
}

/* Allocator callbacks: what a kcache holds (the kcache, its memory cache and every payload in it,
   single-flight records, the store's state) goes through cfg.alloc_fn / free_fn with alloc_user,
   all of it given back by kcache_close; one callback without the other is refused. */
typedef struct counting { long allocs, frees, live; size_t bytes, biggest; int wrong_user; } counting;
static counting g_alloc;
static void *count_alloc(void *user, size_t n) {
    counting *c = (counting *)user;
    size_t *p = (size_t *)malloc(n + 16);
    if (c != &g_alloc) g_alloc.wrong_user = 1;
    if (!p) return NULL;
    p[0] = n;
    c->allocs++;
    c->live++;
    c->bytes += n;
    if (n > c->biggest) c->biggest = n;
    return (unsigned char *)p + 16;
}
static void count_free(void *user, void *ptr) {
    counting *c = (counting *)user;
    if (c != &g_alloc) g_alloc.wrong_user = 1;
    if (!ptr) return;
    c->frees++;
    c->live--;
    free((unsigned char *)ptr - 16);
}
static int alloc_build(void *user, void **out, size_t *n) {
    (void)user;
    if ((*out = malloc(70000)) == NULL) return 1; /* (a build's buffer: KCACHE_MALLOC, as documented) */
    memset(*out, 9, 70000);
    *n = 70000;
    return 0;
}
static void allocator_callbacks(void) {
    char dir[256];
    kcache_config c;
    kcache *kc = NULL;
    kcache_key k;
    const void *p;
    size_t n;
    unsigned char *big = (unsigned char *)malloc(200000);
    tdir_new(dir, sizeof dir);
    memset(&g_alloc, 0, sizeof g_alloc);
    memset(big, 5, 200000);
    cfg_for(&c, dir, 0, 8);
    c.alloc_fn = count_alloc; /* one without the other */
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_EINVAL && kc == NULL);
    c.free_fn = count_free;
    c.alloc_user = &g_alloc;
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc && kcache_dir(kc));
    if (!kc) { free(big); return; }
    mkkey(&k, "alloc", 1);
    KT_CHECK(kcache_put(kc, &k, big, 200000) == KCACHE_OK);
    KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK && n == 200000);
    if (n == 200000) kcache_release(kc, p);
    kcache_key_free(&k);
    mkkey(&k, "alloc", 2);
    KT_CHECK(kcache_get_or_build(kc, &k, alloc_build, NULL, &p, &n) == KCACHE_OK && n == 70000);
    if (n == 70000) kcache_release(kc, p);
    kcache_key_free(&k);
    kcache_close(kc);
    kc = NULL; /* a disk hit: the payload read from the store is the kcache's too */
    KT_CHECK(kcache_open(&kc, &c) == KCACHE_OK && kc);
    if (kc) {
        size_t before = g_alloc.biggest;
        mkkey(&k, "alloc", 1);
        g_alloc.biggest = 0;
        KT_CHECK(kcache_get(kc, &k, &p, &n) == KCACHE_OK && n == 200000);
        if (n == 200000) kcache_release(kc, p);
        KT_CHECK_MSG(g_alloc.biggest >= 200000, "a payload read from the store did not go through alloc_fn");
        g_alloc.biggest = before;
        kcache_key_free(&k);
        kcache_close(kc);
    }
    KT_CHECK_MSG(g_alloc.allocs > 5 && g_alloc.biggest >= 200000, "%ld allocations through alloc_fn, the biggest %zu bytes",
                 g_alloc.allocs, g_alloc.biggest);
    KT_CHECK_MSG(g_alloc.live == 0 && g_alloc.allocs == g_alloc.frees, "%ld allocations, %ld freed", g_alloc.allocs, g_alloc.frees);
    KT_CHECK(!g_alloc.wrong_user);
    free(big);
    tdir_rm(dir);
}

static void two_objects_threads(void) {
    char dir[256];
    kcache *kc[2], *kc3;
    pthread_t t[TH_THREADS];
    th_arg a[TH_THREADS];
    int i;
    tdir_new(dir, sizeof dir);
    kc[0] = open_store(dir, TH_LIMIT, 8);
    kc[1] = open_store(dir, TH_LIMIT, 8);
    if (!kc[0] || !kc[1]) { kcache_close(kc[0]); kcache_close(kc[1]); tdir_rm(dir); return; }
    for (i = 0; i < TH_THREADS; i++) {
        a[i].kc = kc[i & 1];
        a[i].idx = i;
        a[i].bad = 0;
        pthread_create(&t[i], NULL, th_main, &a[i]);
    }
    for (i = 0; i < TH_THREADS; i++) {
        pthread_join(t[i], NULL);
        KT_CHECK_MSG(a[i].bad == 0, "thread %d: %d wrong payloads or failed calls", i, a[i].bad);
    }
    check_accounting(kc[0], dir, TH_LIMIT, "first kcache, after the threads");
    check_accounting(kc[1], dir, TH_LIMIT, "second kcache, after the threads");
    kcache_close(kc[0]);
    kcache_close(kc[1]);
    kc3 = open_store(dir, TH_LIMIT, 64);
    if (kc3) {
        for (i = 0; i < TH_KEYS; i++) {
            kcache_key k;
            const void *d;
            size_t n;
            mkkey(&k, "th", (uint32_t)i);
            if (kcache_get(kc3, &k, &d, &n) == KCACHE_OK) {
                KT_CHECK_MSG(pl_check(d, n, (uint32_t)i) == NULL, "key %d: wrong payload", i);
                kcache_release(kc3, d);
            }
            kcache_key_free(&k);
        }
        check_accounting(kc3, dir, TH_LIMIT, "a third kcache");
        kcache_close(kc3);
    }
    tdir_rm(dir);
}

int main(void) {
    static const char *const env[] = {"KCACHE_DIR", "KCACHE_MAX_SIZE", "KCACHE_MEM_ENTRIES", "KCACHE_MEM_SIZE", "KCACHE_ENABLE",
                                      "KCACHE_PERSISTENT", "KCACHE_DEBUG", "KCACHE_TRACE", "KCACHE_FSYNC", "KCACHE_WRITE",
                                      "KCACHE_BUILD_WAIT", "KCACHE_STAMP", "KCACHE_CPU_NAME", "KCACHE_CPU_FEATURES"};
    size_t i;
    void *shared;
    for (i = 0; i < sizeof env / sizeof env[0]; i++) unsetenv(env[i]);
    umask(022);
    shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) { perror("mmap"); return 2; }
    g_shared_bad = (int *)shared;
    g_child_skip_shared = (int *)((char *)shared + 1024);
    setvbuf(stdout, NULL, _IOLBF, 0);

    RUN(persistence);
    RUN(old_header_layout);
    RUN(storm_many_processes);
    RUN(sigkill_storm);
    RUN(corrupt_flip);
    RUN(corrupt_flip_padding);
    RUN(corrupt_truncate);
    RUN(digest_collision);
    RUN(config_file_damaged);
    RUN(config_file_damaged_while_open);
    RUN(eviction_by_use);
    RUN(eviction_by_use_noatime);
    RUN(eviction_exact_survivors);
    RUN(eviction_small_steps);
    RUN(eviction_full_bucket);
    RUN(eviction_concurrent);
    RUN(write_policy_evict);
    RUN(mem_cap);
    RUN(escaped_names);
    RUN(readonly_store);
    RUN(readonly_mount);
    RUN(enospc);
    RUN(enospc_exact);
    RUN(no_home);
#ifndef KCACHE_NO_ENV
    RUN(tilde_dir);
#else
    KT_SKIP(tilde_dir, "it sets KCACHE_DIR, which KCACHE_NO_ENV does not read");
#endif
#ifndef KCACHE_NO_TIDY
    RUN(tidy_calls);
#else
    KT_SKIP(tidy_calls, "the store commands are compiled out (KCACHE_NO_TIDY)");
    RUN(tidy_compiled_out);
#endif
    RUN(dir_deleted);
    RUN(unsafe_dirs);
    RUN(symlink_config_file);
    RUN(symlink_lock);
    RUN(symlink_entry);
    RUN(symlink_shard);
    RUN(symlink_e);
    RUN(symlink_tmp);
    RUN(two_objects_threads);
    RUN(allocator_callbacks);
    KT_EXIT();
}

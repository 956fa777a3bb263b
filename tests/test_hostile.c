/* test_hostile.c - kcache in hostile directories (issue #10).
 *
 * Each case plants one hostile object in or around a populated store: a symlink, a FIFO, a
 * directory where a file belongs, a regular file where a directory belongs, a device node, a
 * store owned by another user or writable by others, a full or read-only filesystem. A plain
 * caller then runs in a forked child under alarm(), and:
 *   (a) it does not hang (SIGALRM) or crash;
 *   (b) its work goes on: kcache_open succeeds, a cold get misses, stored keys hit with their
 *       own bytes or miss, a put then a get returns the bytes (from memory at least), close;
 *   (c) the debug log (cfg.log) names the problem: the path or the reason;
 *   (d) nothing outside the store is written, read or created: a sibling "outside" directory
 *       holds valid-looking copies of an entry, an index, config.file and stats; its listing,
 *       contents, mtimes and (where the filesystem updates them) atimes are compared after;
 *       a payload from there is never returned, an index from there never explains a miss;
 *   (e) after the object is removed (or the mode or owner put back), a new process stores, and
 *       another reads it back from disk.
 * Where kcache is expected to repair the object itself (a FIFO where config.file belongs), the
 * case also checks what is left in its place, and that another process reads the put back.
 *
 * test_store.c covers symlinks in place of config.file, lock, an entry, e, e/XX and tmp, empty
 * unsafe directories, a read-only store and mount, and a full disk's entries; this file covers
 * the rest.
 *
 * Root is needed for chown, mknod, setuid and mounts (made in a private mount namespace); without
 * it those cases print "skip CASE: why" on stderr and the rest of their group still runs.
 *
 * KT_ONLY=substring runs only the cases whose name contains it; KT_VERBOSE=1 prints every case's
 * debug log on stderr.
 *
 * Build: make build/test_hostile build/asan/test_hostile */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOBODY 65534
#define CHILD_FAILED 42 /* the child printed its own FAIL lines (not 1: a sanitizer exits 1) */
#define CHILD_SKIP 77
#define CHILD_ALARM 10  /* seconds a child may take before it counts as hung */
#define LIMIT (1u << 20)

/* ---- shared with the children: the debug log and a skip reason ---------------------------- */

typedef struct shared {
    char log[60000];
    size_t len;
    char skip[512];
} shared;
static shared *g_sh;
static char g_index_rel[64], g_entry3_rel[64], g_cold_rel[64]; /* store-relative names (see main) */

static void log_cb(void *user, const char *line) {
    (void)user;
    kt_log_append(g_sh->log, sizeof g_sh->log, &g_sh->len, line);
}
/* Whether the log holds one of the '|'-separated needles. */
static int log_has(const char *needles) {
    char one[200];
    const char *p = needles;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n >= sizeof one) n = sizeof one - 1;
        memcpy(one, p, n);
        one[n] = 0;
        if (strcmp(one, "@eshard") == 0) snprintf(one, sizeof one, "%.4s", g_entry3_rel); /* "e/XX" */
        if (strcmp(one, "@ishard") == 0) snprintf(one, sizeof one, "%.4s", g_index_rel);  /* "i/XX" */
        if (strstr(g_sh->log, one)) return 1;
        if (!bar) break;
        p = bar + 1;
    }
    return 0;
}

static int g_ran; /* cases of the group that ran */
static int g_can_chown, g_can_mknod; /* root, and (in a container) allowed to */
static void skip_case(const char *name, const char *why) { fprintf(stderr, "skip %s: %s\n", name, why); }

/* ---- payloads and keys -------------------------------------------------------------------- */

/* A payload is a function of (key id, version); its length of the id only, so that another
   version of an entry has the same size as the one it impersonates. */
static size_t pl_len(uint32_t id) { return 900 + (id * 37u) % 700; }
static void pl_fill(unsigned char *p, size_t n, uint32_t id, uint32_t ver) {
    uint64_t s = ((uint64_t)id << 32) ^ ver ^ 0x9e3779b97f4a7c15ull;
    size_t i;
    for (i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (unsigned char)(s >> 56);
    }
}

#define SRC "kernel void f(global int *x) { x[get_global_id(0)] += 1; }"
#define MARKER "OUTSIDE-MARKER"

static void mkkey(kcache_key *k, const char *unit, uint32_t id, const char *extra) {
    kcache_key_init(k, unit);
    kcache_key_u64(k, "id", id);
    kcache_key_str(k, "src", SRC);
    if (extra) kcache_key_str(k, "outside", extra);
}
static kcache_status put_x(kcache *kc, const char *unit, uint32_t id, uint32_t ver, const char *extra, size_t n) {
    unsigned char *p = (unsigned char *)malloc(n);
    kcache_key k;
    kcache_status s;
    if (!p) return KCACHE_ENOMEM;
    pl_fill(p, n, id, ver);
    mkkey(&k, unit, id, extra);
    s = kcache_put(kc, &k, p, n);
    kcache_key_free(&k);
    free(p);
    return s;
}
static kcache_status put_v(kcache *kc, const char *unit, uint32_t id, uint32_t ver) {
    return put_x(kc, unit, id, ver, NULL, pl_len(id));
}
/* 1: the exact payload of (id, ver) of want bytes; 0: a miss; -1: other bytes or an error status. */
static int get_n(kcache *kc, const char *unit, uint32_t id, uint32_t ver, size_t want) {
    kcache_key k;
    const void *d = NULL;
    size_t n = 0;
    kcache_status s;
    int r;
    mkkey(&k, unit, id, NULL);
    s = kcache_get(kc, &k, &d, &n);
    kcache_key_free(&k);
    if (s == KCACHE_MISS) return 0;
    if (s != KCACHE_OK) return -1;
    r = -1;
    if (n == want) {
        unsigned char *x = (unsigned char *)malloc(want);
        if (x) {
            pl_fill(x, want, id, ver);
            r = memcmp(x, d, want) == 0 ? 1 : -1;
            free(x);
        }
    }
    kcache_release(kc, d);
    return r;
}
static int get_v(kcache *kc, const char *unit, uint32_t id, uint32_t ver) { return get_n(kc, unit, id, ver, pl_len(id)); }
static void explain(kcache *kc, const char *unit, uint32_t id, char *buf, size_t cap) {
    kcache_key k;
    mkkey(&k, unit, id, NULL);
    kcache_explain(kc, &k, buf, cap);
    kcache_key_free(&k);
}

/* Store-relative names of key h/id's entry and of a unit's index (kcache.h's layout). */
static void entry_rel(uint32_t id, char *out, size_t cap) {
    kcache_key k;
    char hex[33];
    mkkey(&k, "h", id, NULL);
    kcache_hash_hex(kcache_key_digest(&k), hex);
    kcache_key_free(&k);
    snprintf(out, cap, "e/%.2s/%s.kce", hex, hex);
}
static void index_rel(const char *unit, char *out, size_t cap) {
    char hex[33];
    kcache_hash_hex(kcache_hash(unit, strlen(unit)), hex);
    snprintf(out, cap, "i/%.2s/%s.kci", hex, hex);
}

/* ---- files -------------------------------------------------------------------------------- */

static unsigned char *read_file(const char *path, size_t *n) {
    struct stat s;
    unsigned char *b;
    size_t have = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    *n = 0;
    if (fd < 0) return NULL;
    if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode) || !(b = (unsigned char *)malloc((size_t)s.st_size + 1))) {
        close(fd);
        return NULL;
    }
    while (have < (size_t)s.st_size) {
        ssize_t r = read(fd, b + have, (size_t)s.st_size - have);
        if (r <= 0) break;
        have += (size_t)r;
    }
    close(fd);
    *n = have;
    return b;
}
static int write_file(const char *path, const void *p, size_t n) {
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
static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s; (void)flag; (void)f;
    remove(p);
    return 0;
}
static void rm_rf(const char *path) {
    struct stat s;
    if (lstat(path, &s) != 0) return;
    if (!S_ISDIR(s.st_mode)) { unlink(path); return; }
    nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}
static int own_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s; (void)flag; (void)f;
    return lchown(p, 0, 0) != 0 ? -1 : 0;
}
static int nobody_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s; (void)flag; (void)f;
    return lchown(p, NOBODY, NOBODY) != 0 ? -1 : 0;
}
static int count_dir(const char *path) { /* entries but . and ..; -1 when unreadable */
    DIR *d = opendir(path);
    struct dirent *de;
    int n = 0;
    if (!d) return -1;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}
static int count_nondirs(const char *path) { /* names that are not directories (junk dirs may stay) */
    DIR *d = opendir(path);
    struct dirent *de;
    int n = 0;
    if (!d) return 0;
    while ((de = readdir(d)) != NULL) {
        struct stat s;
        if (fstatat(dirfd(d), de->d_name, &s, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(s.st_mode)) n++;
    }
    closedir(d);
    return n;
}
static char type_of(const char *path) { /* 'f' file, 'd' directory, 'l' symlink, 'p' FIFO, 'x' none, '?' else */
    struct stat s;
    if (lstat(path, &s) != 0) return 'x';
    return S_ISREG(s.st_mode) ? 'f' : S_ISDIR(s.st_mode) ? 'd' : S_ISLNK(s.st_mode) ? 'l' : S_ISFIFO(s.st_mode) ? 'p' : '?';
}

/* ---- "untouched": a tree's names, types, sizes, contents, mtimes and atimes --------------- */

/* Whether reading a file or listing a directory updates its atime here (relatime does when the
   atime is older than the mtime; noatime never): then "nothing read" is checked too. */
static int g_atime_works;

#define SNAP_MAX 128
typedef struct snap_item { char path[480]; struct stat st; kcache_hash128 h; int entries; } snap_item;
typedef struct snap { int n, overflow; snap_item it[SNAP_MAX]; } snap;
static snap *g_filling;

static int snap_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    snap_item *it;
    (void)flag; (void)f;
    if (g_filling->n == SNAP_MAX) { g_filling->overflow = 1; return 0; }
    it = &g_filling->it[g_filling->n++];
    memset(it, 0, sizeof *it);
    snprintf(it->path, sizeof it->path, "%s", p);
    it->st = *s;
    if (S_ISREG(s->st_mode)) {
        size_t n;
        unsigned char *b = read_file(p, &n);
        it->h = kcache_hash(b, n);
        free(b);
    }
    if (S_ISDIR(s->st_mode)) it->entries = count_dir(p);
    return 0;
}
/* Records a tree, then ages every time in it (atime 3 days ago, mtime 2 days ago: older than any
   change this test makes, and an atime a read would refresh). */
static void snap_take(snap *sn, const char *root) {
    struct timespec ts[2];
    int i;
    memset(sn, 0, sizeof *sn);
    g_filling = sn;
    nftw(root, snap_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT); /* children before their directory */
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[1] = ts[0];
    ts[0].tv_sec -= 3 * 86400;
    ts[1].tv_sec -= 2 * 86400;
    for (i = 0; i < sn->n; i++) utimensat(AT_FDCWD, sn->it[i].path, ts, AT_SYMLINK_NOFOLLOW);
    for (i = 0; i < sn->n; i++) lstat(sn->it[i].path, &sn->it[i].st);
}
/* Every recorded name is as it was (stat first: reading contents refreshes atimes), nothing new. */
static void snap_check(const snap *sn, const char *cname, const char *what) {
    int i;
    if (sn->overflow) KT_FAILF("%s: %s: too many files to compare", cname, what);
    for (i = 0; i < sn->n; i++) {
        const snap_item *it = &sn->it[i];
        struct stat s;
        if (lstat(it->path, &s) != 0) { KT_FAILF("%s: %s was removed (%s)", cname, it->path, what); continue; }
        if (s.st_mode != it->st.st_mode || s.st_ino != it->st.st_ino || s.st_size != it->st.st_size ||
            s.st_uid != it->st.st_uid || s.st_nlink != it->st.st_nlink)
            KT_FAILF("%s: %s was replaced or changed (%s)", cname, it->path, what);
        else if (s.st_mtim.tv_sec != it->st.st_mtim.tv_sec || s.st_mtim.tv_nsec != it->st.st_mtim.tv_nsec)
            KT_FAILF("%s: %s was modified: its mtime changed (%s)", cname, it->path, what);
        else if (g_atime_works && !S_ISLNK(s.st_mode) &&
                 (s.st_atim.tv_sec != it->st.st_atim.tv_sec || s.st_atim.tv_nsec != it->st.st_atim.tv_nsec))
            KT_FAILF("%s: %s was %s: its atime changed (%s)", cname, it->path, S_ISDIR(s.st_mode) ? "listed" : "read", what);
    }
    for (i = 0; i < sn->n; i++) {
        const snap_item *it = &sn->it[i];
        if (S_ISREG(it->st.st_mode)) {
            size_t n;
            unsigned char *b = read_file(it->path, &n);
            kcache_hash128 h = kcache_hash(b, n);
            free(b);
            if (h.lo != it->h.lo || h.hi != it->h.hi) KT_FAILF("%s: the content of %s changed (%s)", cname, it->path, what);
        }
        if (S_ISDIR(it->st.st_mode) && count_dir(it->path) != it->entries)
            KT_FAILF("%s: %s holds %d names, not %d: something was created or removed there (%s)", cname, it->path,
                     count_dir(it->path), it->entries, what);
    }
}

static void probe_atime(const char *base) {
    char f[400], d[400];
    struct timespec ts[2];
    struct stat a, b, c, e;
    size_t n;
    snprintf(f, sizeof f, "%s/probe", base);
    snprintf(d, sizeof d, "%s/probedir", base);
    write_file(f, "x", 1);
    mkdir(d, 0700);
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[1] = ts[0];
    ts[0].tv_sec -= 3 * 86400;
    ts[1].tv_sec -= 2 * 86400;
    utimensat(AT_FDCWD, f, ts, 0);
    utimensat(AT_FDCWD, d, ts, 0);
    lstat(f, &a);
    lstat(d, &c);
    free(read_file(f, &n));
    count_dir(d);
    lstat(f, &b);
    lstat(d, &e);
    g_atime_works = a.st_atim.tv_sec != b.st_atim.tv_sec && c.st_atim.tv_sec != e.st_atim.tv_sec;
    if (!g_atime_works)
        fprintf(stderr, "note: reads do not update atimes under %s: \"nothing read outside\" is checked by contents only\n", base);
    unlink(f);
    rmdir(d);
}

/* Whether this process may give a file to nobody and make a device node (root may not, in some
   containers): cases that need it are skipped otherwise, never failed. */
static void probe_powers(const char *base) {
    char f[400];
    snprintf(f, sizeof f, "%s/probe", base);
    write_file(f, "x", 1);
    g_can_chown = geteuid() == 0 && lchown(f, NOBODY, NOBODY) == 0;
    unlink(f);
    g_can_mknod = geteuid() == 0 && mknod(f, S_IFCHR | 0600, makedev(1, 5)) == 0;
    unlink(f);
}

/* ---- a forked child under alarm() --------------------------------------------------------- */

static void become_nobody(void) {
    if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0) {
        snprintf(g_sh->skip, sizeof g_sh->skip, "cannot become nobody: %s", strerror(errno));
        _exit(CHILD_SKIP);
    }
}
static void child_skip(const char *why, int e) {
    snprintf(g_sh->skip, sizeof g_sh->skip, "%s: %s", why, strerror(e));
    fflush(stdout);
    _exit(CHILD_SKIP);
}

/* Runs fn(arg) in a child that SIGALRM ends after CHILD_ALARM seconds. 0: it ran and passed its
   checks; 1: it failed (reported here); 2: it could not run here (g_sh->skip says why). */
static int in_child(const char *cname, const char *what, void (*fn)(void *), void *arg) {
    pid_t p;
    int st = 0;
    fflush(stdout);
    fflush(stderr);
    g_sh->skip[0] = 0;
    p = fork();
    if (p < 0) { KT_FAILF("%s: fork: %s", cname, strerror(errno)); return 1; }
    if (p == 0) {
        kt_failures_here = 0;
        alarm(CHILD_ALARM);
        fn(arg);
        fflush(stdout);
        fflush(stderr);
        _exit(kt_failures_here ? CHILD_FAILED : 0);
    }
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == CHILD_SKIP) return 2;
    if (WIFEXITED(st) && WEXITSTATUS(st) == CHILD_FAILED) { kt_failures_here++; return 1; }
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
        KT_FAILF("%s: %s: hung (no result in %d s)", cname, what, CHILD_ALARM);
    else if (WIFSIGNALED(st))
        KT_FAILF("%s: %s: died of signal %d (%s)", cname, what, WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        KT_FAILF("%s: %s: exited with status %d (a sanitizer report above?)", cname, what, WEXITSTATUS(st));
    return 1;
}

/* ---- the things planted outside the store --------------------------------------------------- */

/* Valid-looking store files made by another store: key h/3's entry with payload version 9 (the
   same length as the real one), an index of unit "h" whose only overload has a field "outside"
   = MARKER, and that store's config.file and stats. */
static unsigned char *g_v9_entry, *g_out_index, *g_out_cf, *g_out_stats;
static size_t g_v9_entry_n, g_out_index_n, g_out_cf_n, g_out_stats_n;

static void cfg_for(kcache_config *c, const char *dir) {
    kcache_config_init(c);
    c->dir = dir;
    c->max_size = LIMIT;
    c->mem_entries = 64;
    c->lock_timeout_ms = 2000;
}

static int make_outside_copies(const char *base) {
    char dir[400], p[500];
    kcache_config c;
    kcache *kc = NULL;
    kcache_key k;
    snprintf(dir, sizeof dir, "%s/scratch", base);
    cfg_for(&c, dir);
    if (kcache_open(&kc, &c) != KCACHE_OK || !kcache_dir(kc)) { kcache_close(kc); return -1; }
    put_v(kc, "h", 3, 9);
    snprintf(p, sizeof p, "%s/%s", dir, g_entry3_rel);
    g_v9_entry = read_file(p, &g_v9_entry_n);
    mkkey(&k, "h", 3, NULL);
    kcache_remove(kc, &k); /* the index then lists only the marker overload */
    kcache_key_free(&k);
    put_x(kc, "h", 3, 9, MARKER, pl_len(3));
    kcache_close(kc);
    snprintf(p, sizeof p, "%s/%s", dir, g_index_rel);
    g_out_index = read_file(p, &g_out_index_n);
    snprintf(p, sizeof p, "%s/config.file", dir);
    g_out_cf = read_file(p, &g_out_cf_n);
    snprintf(p, sizeof p, "%s/stats", dir);
    g_out_stats = read_file(p, &g_out_stats_n);
    rm_rf(dir);
    return g_v9_entry && g_out_index && g_out_cf && g_out_stats ? 0 : -1;
}

/* ---- the cases ---------------------------------------------------------------------------- */

enum {
    OBJ_SYMLINK = 1, /* to target (relative to the case's base directory) */
    OBJ_FIFO,
    OBJ_DIR,         /* a directory holding a file */
    OBJ_EMPTYDIR,
    OBJ_FILE,        /* a regular file */
    OBJ_DEV,         /* a character device node (the one /dev/zero is) */
    OBJ_MODE,        /* the store's mode set to `mode` */
    OBJ_OWNER,       /* the whole store chowned to nobody */
    OBJ_TMPNAMES     /* `sub` planted (FIFO, directory or symlink) at the temp names this process uses */
};
enum {
    F_ROOT = 1,        /* needs root */
    F_OPEN = 2,        /* planted while the kcache is open (else before) */
    F_HOLD = 4,        /* a FIFO held open by a writer that filled it with a valid-looking file */
    F_NOBODY = 8,      /* the caller runs as nobody */
    F_SNAPSTORE = 16,  /* the store itself must be left untouched (a refused store) */
    F_ENV = 32,        /* the directory comes from KCACHE_DIR (kcache_config_init) */
    F_PUTFAIL = 64,    /* puts into the store may fail: do not require h/100 on disk */
    F_ATTACKER = 128,  /* the store path is base/att/s: base/att and the symlink s are nobody's */
    F_CHOWN = 256      /* needs to give files to nobody */
};

typedef struct hcase {
    const char *name;
    const char *where; /* a path in the store; "@entry": key h/3's entry (stored); "@cold": key h/100's
                          entry (not stored); "@eshard": h/3's shard; "@index": unit h's index;
                          "@ishard": its shard; ".": the store directory itself */
    int obj, sub;
    const char *target;
    unsigned mode;
    int flags;
    int expect_store;  /* 1: in use; 0: refused (memory only); -1: either */
    char after;        /* what `where` holds after the caller ran: a type_of() letter, 0: any */
    const char *needle; /* the debug log must hold one of these ('|'-separated); NULL: no line needed */
} hcase;

typedef struct ctx {
    const hcase *c;
    char base[256], store[320], dir[320], out[320], where[480], target[480], saved[320];
    int holdfd;
} ctx;

/* The content a planted object impersonates. */
static const unsigned char *fake_for(const char *where, size_t *n) {
    if (strcmp(where, "@entry") == 0 || strcmp(where, "@cold") == 0) { *n = g_v9_entry_n; return g_v9_entry; }
    if (strcmp(where, "@index") == 0) { *n = g_out_index_n; return g_out_index; }
    if (strcmp(where, "config.file") == 0) { *n = g_out_cf_n; return g_out_cf; }
    if (strcmp(where, "stats") == 0) { *n = g_out_stats_n; return g_out_stats; }
    *n = 8;
    return (const unsigned char *)"outside\n";
}

static void resolve_where(ctx *x) {
    const char *w = x->c->where;
    char rel[128];
    if (strcmp(w, "@entry") == 0) snprintf(rel, sizeof rel, "%s", g_entry3_rel);
    else if (strcmp(w, "@cold") == 0) snprintf(rel, sizeof rel, "%s", g_cold_rel);
    else if (strcmp(w, "@eshard") == 0) snprintf(rel, sizeof rel, "%.4s", g_entry3_rel);
    else if (strcmp(w, "@index") == 0) snprintf(rel, sizeof rel, "%s", g_index_rel);
    else if (strcmp(w, "@ishard") == 0) snprintf(rel, sizeof rel, "%.4s", g_index_rel);
    else snprintf(rel, sizeof rel, "%s", w);
    if (strcmp(rel, ".") == 0) snprintf(x->where, sizeof x->where, "%s", x->dir);
    else snprintf(x->where, sizeof x->where, "%s/%s", x->store, rel);
}

/* The outside directory: valid-looking copies of everything a store holds, under the names a
   symlink would point to. */
static void make_outside(ctx *x) {
    char p[600], q[600];
    const char *slash = strrchr(g_index_rel, '/');
    mkdir(x->out, 0700);
    snprintf(p, sizeof p, "%s/entry.kce", x->out);
    write_file(p, g_v9_entry, g_v9_entry_n);
    snprintf(p, sizeof p, "%s/index.kci", x->out);
    write_file(p, g_out_index, g_out_index_n);
    snprintf(p, sizeof p, "%s/config.file", x->out);
    write_file(p, g_out_cf, g_out_cf_n);
    snprintf(p, sizeof p, "%s/stats", x->out);
    write_file(p, g_out_stats, g_out_stats_n);
    snprintf(p, sizeof p, "%s/lock", x->out);
    write_file(p, "outside\n", 8);
    snprintf(p, sizeof p, "%s/plain", x->out);
    write_file(p, "outside\n", 8);
    snprintf(p, sizeof p, "%s/ishard", x->out); /* stands in for i/XX */
    mkdir(p, 0700);
    snprintf(q, sizeof q, "%s%s", p, slash);
    write_file(q, g_out_index, g_out_index_n);
    snprintf(p, sizeof p, "%s/i", x->out); /* stands in for i */
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/i/%.2s", x->out, g_index_rel + 2);
    mkdir(p, 0700);
    snprintf(q, sizeof q, "%s%s", p, slash);
    write_file(q, g_out_index, g_out_index_n);
    snprintf(p, sizeof p, "%s/victim", x->out); /* a directory of ours a store path might be led to */
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/victim/secret", x->out);
    write_file(p, "secret\n", 7);
    snprintf(p, sizeof p, "%s/victim777", x->out);
    mkdir(p, 0700);
    chmod(p, 0777);
    snprintf(p, sizeof p, "%s/victim777/file", x->out);
    write_file(p, "v\n", 2);
    snprintf(p, sizeof p, "%s/afile", x->out);
    write_file(p, "a regular file\n", 15);
    if (g_can_chown) {
        snprintf(p, sizeof p, "%s/victimnobody", x->out);
        mkdir(p, 0700);
        snprintf(q, sizeof q, "%s/victimnobody/file", x->out);
        write_file(q, "n\n", 2);
        if (lchown(q, NOBODY, NOBODY) != 0 || lchown(p, NOBODY, NOBODY) != 0) perror("chown");
    }
}

/* Plants the case's object at x->where (in the caller's process: the parent, or the child for
   objects planted while open or named after the child's pid). */
static int plant(ctx *x) {
    const hcase *c = x->c;
    char p[600];
    int i;
    if (c->obj == OBJ_MODE) return chmod(x->store, c->mode);
    if (c->obj == OBJ_OWNER) return nftw(x->store, nobody_one, 32, FTW_PHYS);
    if (c->obj == OBJ_TMPNAMES) {
        /* the names a put and an index rewrite of this process use: <pid>-<seq>-..., <pid>-ix-<seq>,
           <pid>-grow-<seq>, <pid>-junk-<seq> (a sequence per store, from 1) */
        static const char *const pat[] = {"%s/tmp/%u-ix-%x.tmp", "%s/tmp/%u-grow-%x.tmp", "%s/tmp/%u-junk-%x"};
        unsigned seq;
        for (i = 0; i < 3; i++)
            for (seq = 1; seq <= 40; seq++) {
                snprintf(p, sizeof p, pat[i], x->store, (unsigned)getpid(), seq);
                if (c->sub == OBJ_FIFO && mkfifo(p, 0600) != 0) return -1;
                if (c->sub == OBJ_DIR && mkdir(p, 0700) != 0) return -1;
                if (c->sub == OBJ_SYMLINK && symlink(x->target, p) != 0) return -1;
            }
        return 0;
    }
    if (type_of(x->where) != 'x' && rename(x->where, x->saved) != 0) return -1; /* put back by undo() */
    if (strcmp(c->where, "@cold") == 0) { /* its shard may not exist yet */
        snprintf(p, sizeof p, "%s/%.4s", x->store, g_cold_rel);
        mkdir(p, 0700);
    }
    switch (c->obj) {
    case OBJ_SYMLINK: return symlink(x->target, x->where);
    case OBJ_FIFO: return mkfifo(x->where, 0600);
    case OBJ_EMPTYDIR: return mkdir(x->where, 0700);
    case OBJ_DIR:
        if (mkdir(x->where, 0700) != 0) return -1;
        snprintf(p, sizeof p, "%s/x", x->where);
        return write_file(p, "x", 1);
    case OBJ_FILE: return write_file(x->where, "hostile\n", 8);
    case OBJ_DEV: return mknod(x->where, S_IFCHR | 0600, makedev(1, 5));
    default: return -1;
    }
}
/* A writer holds the FIFO open and has filled it with what the file it replaces would hold: a
   reader that blocks would block for ever, one that reads it sees valid-looking bytes. */
static void hold(ctx *x) {
    size_t n;
    const unsigned char *b = fake_for(x->c->where, &n);
    x->holdfd = open(x->where, O_RDWR | O_NONBLOCK);
    if (x->holdfd < 0) { KT_FAILF("%s: setup: open the FIFO: %s", x->c->name, strerror(errno)); return; }
    if (write(x->holdfd, b, n) < 0) KT_FAILF("%s: setup: fill the FIFO: %s", x->c->name, strerror(errno));
}

static const char *status_ok_for_put(kcache_status s) {
    return s == KCACHE_OK || s == KCACHE_EROFS || s == KCACHE_ENOSPC || s == KCACHE_EIO || s == KCACHE_ENOENT ||
                   s == KCACHE_EUNSAFE || s == KCACHE_ELOCK
               ? NULL
               : kcache_strerror(s);
}

/* The caller: a program that uses kcache as documented, and checks what it gets. */
static void hostile_child(void *arg) {
    ctx *x = (ctx *)arg;
    const hcase *c = x->c;
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_status s, s100;
    char buf[2048];
    uint32_t i;
    int used, r;
    x->holdfd = -1;
    if (c->flags & F_NOBODY) become_nobody();
    if ((c->flags & F_HOLD) && !(c->flags & F_OPEN)) hold(x);
    if (c->flags & F_ENV) {
        setenv("KCACHE_DIR", x->dir, 1);
        kcache_config_init(&cfg);
        cfg.max_size = LIMIT;
        cfg.mem_entries = 64;
        cfg.lock_timeout_ms = 2000;
    } else {
        cfg_for(&cfg, x->dir);
    }
    cfg.debug = 1;
    cfg.log = log_cb;
    s = kcache_open(&kc, &cfg);
    KT_CHECK_MSG(s == KCACHE_OK && kc, "%s: kcache_open: %s", c->name, kcache_strerror(s));
    if (!kc) return;
    if ((c->flags & F_OPEN) || c->obj == OBJ_TMPNAMES) {
        if (plant(x) != 0) KT_FAILF("%s: setup: plant: %s", c->name, strerror(errno));
        if (c->flags & F_HOLD) hold(x);
    }
    used = kcache_dir(kc) != NULL;
    if (c->expect_store == 1) KT_CHECK_MSG(used, "%s: the store was refused (memory only)", c->name);
    if (c->expect_store == 0) KT_CHECK_MSG(!used, "%s: the store was used", c->name);
    if (!used) { /* a refusal names the path, the reason and the command that fixes it, once (issue 28) */
        const char *mo;
        kcache_store_in_use(kc, buf, sizeof buf);
        mo = strstr(buf, "memory only");
        KT_CHECK_MSG(strstr(buf, "; to fix") && strstr(buf, x->base) && mo && !strstr(mo + 1, "memory only"),
                     "%s: the refusal gives no fix, or repeats itself: \"%s\"", c->name, buf);
    }
    /* stored keys hit with their own bytes or miss, never anything else; cold keys miss. Key h/3
       first: a FIFO in place of its entry holds a valid entry of version 9 (a store may hold it:
       it is inside; a symlink's target, outside, never) */
    r = get_v(kc, "h", 3, 1);
    if (r < 0 && c->obj == OBJ_FIFO && strcmp(c->where, "@entry") == 0 && get_v(kc, "h", 3, 9) == 1) r = 0;
    KT_CHECK_MSG(r >= 0, "%s: key h/3: a get returned other bytes than its own (%s)", c->name,
                 get_v(kc, "h", 3, 9) == 1 ? "the valid-looking entry the planted object held" : "or an error");
    for (i = 0; i < 8; i++) {
        r = i == 3 ? 0 : get_v(kc, "h", i, 1);
        KT_CHECK_MSG(r >= 0, "%s: key h/%u: a get returned other bytes than its own (or an error)", c->name, i);
    }
    KT_CHECK_MSG(get_v(kc, "cold", 1, 1) == 0, "%s: a cold key did not miss", c->name);
    KT_CHECK_MSG(get_v(kc, "h", 100, 1) == 0, "%s: a key never stored did not miss", c->name);
    /* explanations never come from an index outside the store */
    explain(kc, "h", 3, buf, sizeof buf);
    KT_CHECK_MSG(!strstr(buf, MARKER), "%s: explain read an index outside the store: \"%s\"", c->name, buf);
    KT_CHECK_MSG(strncmp(buf, "miss", 4) == 0 || strncmp(buf, "hit", 3) == 0, "%s: explain: \"%s\"", c->name, buf);
    explain(kc, "h", 101, buf, sizeof buf);
    KT_CHECK_MSG(!strstr(buf, MARKER), "%s: explain read an index outside the store: \"%s\"", c->name, buf);
    KT_CHECK_MSG(strncmp(buf, "miss", 4) == 0, "%s: explain of a key never stored: \"%s\"", c->name, buf);
    /* puts work, from memory at least */
    s100 = put_v(kc, "h", 100, 1);
    KT_CHECK_MSG(!status_ok_for_put(s100), "%s: put h/100: %s", c->name, status_ok_for_put(s100));
    KT_CHECK_MSG(get_v(kc, "h", 100, 1) == 1, "%s: a put key does not come back", c->name);
    s = put_v(kc, "h", 3, 2);
    KT_CHECK_MSG(!status_ok_for_put(s), "%s: put h/3: %s", c->name, status_ok_for_put(s));
    KT_CHECK_MSG(get_v(kc, "h", 3, 2) == 1, "%s: a put key (in place of the object) does not come back", c->name);
    s = put_v(kc, "fresh", 1, 1);
    KT_CHECK_MSG(!status_ok_for_put(s), "%s: put fresh/1: %s", c->name, status_ok_for_put(s));
    KT_CHECK_MSG(get_v(kc, "fresh", 1, 1) == 1, "%s: a put of a new unit does not come back", c->name);
    explain(kc, "h", 102, buf, sizeof buf);
    KT_CHECK_MSG(!strstr(buf, MARKER), "%s: explain read an index outside the store: \"%s\"", c->name, buf);
    kcache_verify(kc, 0); /* walks every shard: must cope with whatever is there (and changes nothing) */
    if (used && c->expect_store == 1 && !(c->flags & F_PUTFAIL)) {
        char p[600];
        KT_CHECK_MSG(s100 == KCACHE_OK, "%s: a put into the store in use failed: %s", c->name, kcache_strerror(s100));
        snprintf(p, sizeof p, "%s/%s", x->store, g_cold_rel);
        KT_CHECK_MSG(type_of(p) == 'f', "%s: the put did not reach the disk", c->name);
    }
    kcache_close(kc);
    if (x->holdfd >= 0) close(x->holdfd);
}

/* Another process reads back from disk what the caller put. */
static void reader_child(void *arg) {
    ctx *x = (ctx *)arg;
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_stats st;
    cfg_for(&cfg, x->dir);
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) { KT_FAILF("%s: reader: kcache_open failed", x->c->name); return; }
    KT_CHECK_MSG(get_v(kc, "h", 100, 1) == 1, "%s: another process does not read back the put (from %s)", x->c->name,
                 kcache_dir(kc) ? kcache_dir(kc) : "memory only");
    kcache_get_stats(kc, &st);
    KT_CHECK_MSG(st.hits_disk == 1, "%s: another process: %llu disk hits, not 1", x->c->name, (unsigned long long)st.hits_disk);
    kcache_close(kc);
}

/* After the object is gone: a new process stores, and another reads it from disk. */
static void recover_put(void *arg) {
    ctx *x = (ctx *)arg;
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_status s;
    uint32_t i;
    cfg_for(&cfg, x->dir); /* as the store's owner */
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) { KT_FAILF("%s: recovery: kcache_open failed", x->c->name); return; }
    KT_CHECK_MSG(kcache_dir(kc) != NULL, "%s: recovery: the store is still refused once the object is gone", x->c->name);
    for (i = 0; i < 8; i++) /* h/3: the caller put version 2 */
        KT_CHECK_MSG(get_v(kc, "h", i, i == 3 ? 2 : 1) >= 0 || (i == 3 && get_v(kc, "h", 3, 1) == 1),
                     "%s: recovery: key h/%u: other bytes", x->c->name, i);
    s = put_v(kc, "h", 200, 1);
    KT_CHECK_MSG(s == KCACHE_OK, "%s: recovery: put: %s", x->c->name, kcache_strerror(s));
    KT_CHECK_MSG(get_v(kc, "h", 200, 1) == 1, "%s: recovery: get after put", x->c->name);
    kcache_close(kc);
}
static void recover_get(void *arg) {
    ctx *x = (ctx *)arg;
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_stats st;
    kcache_status v;
    char buf[1024];
    cfg_for(&cfg, x->dir);
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) { KT_FAILF("%s: recovery: kcache_open failed", x->c->name); return; }
    KT_CHECK_MSG(get_v(kc, "h", 200, 1) == 1, "%s: recovery: another process does not read the put back", x->c->name);
    kcache_get_stats(kc, &st);
    KT_CHECK_MSG(st.hits_disk == 1, "%s: recovery: %llu disk hits, not 1", x->c->name, (unsigned long long)st.hits_disk);
    v = kcache_verify(kc, 0);
    KT_CHECK_MSG(v == KCACHE_OK, "%s: recovery: kcache_verify: %s", x->c->name, kcache_strerror(v));
    explain(kc, "h", 201, buf, sizeof buf); /* the index works again: the unit has overloads */
    KT_CHECK_MSG(strstr(buf, "a field differs") != NULL, "%s: recovery: explain: \"%s\"", x->c->name, buf);
    kcache_close(kc);
}

/* Puts the store's mode and owner back; removes the object and puts back what it replaced, unless
   kcache replaced the object with its own file already. Names planted in tmp/ stay: the next
   open's sweep must clear them. */
static void undo(ctx *x) {
    const hcase *c = x->c;
    static const char planted[] = {0, 'l', 'p', 'd', 'd', 'f', '?'}; /* by OBJ_ */
    if (c->obj == OBJ_MODE) chmod(x->store, 0700);
    else if (c->obj == OBJ_OWNER) nftw(x->store, own_one, 32, FTW_PHYS);
    else if (c->obj < OBJ_MODE && type_of(x->where) == planted[c->obj]) {
        rm_rf(x->where);
        if (type_of(x->saved) != 'x') rename(x->saved, x->where);
    }
    rm_rf(x->saved);
    if (c->flags & F_ATTACKER) { /* the path is ours again, and leads to the store */
        char p[400];
        snprintf(p, sizeof p, "%s/att", x->base);
        rm_rf(p);
        mkdir(p, 0700);
        symlink(x->store, x->dir);
    }
}

static int g_base_seq;
static void run_case(const hcase *c) {
    ctx *x = (ctx *)calloc(1, sizeof *x);
    snap *outside = (snap *)malloc(sizeof *outside), *store = NULL;
    const char *t = getenv("TMPDIR");
    kcache_config cfg;
    kcache *kc = NULL;
    uint32_t i;
    int rc;
    if (!x || !outside) { KT_FAILF("%s: out of memory", c->name); free(x); free(outside); return; }
    if (getenv("KT_ONLY") && !strstr(c->name, getenv("KT_ONLY"))) { free(x); free(outside); return; }
    if (((c->flags & F_ROOT) && geteuid() != 0) || ((c->flags & F_CHOWN) && !g_can_chown) || (c->obj == OBJ_DEV && !g_can_mknod)) {
        skip_case(c->name, geteuid() != 0 ? "needs root" : c->obj == OBJ_DEV ? "mknod not allowed here" : "chown not allowed here");
        free(x);
        free(outside);
        return;
    }
    x->c = c;
    snprintf(x->base, sizeof x->base, "%s/kcache-hostile-%d-XXXXXX", t && t[0] == '/' ? t : "/tmp", g_base_seq++);
    if (!mkdtemp(x->base)) { KT_FAILF("%s: mkdtemp: %s", c->name, strerror(errno)); free(x); free(outside); return; }
    if (c->flags & F_NOBODY) chmod(x->base, 0711); /* nobody reaches the store, and no further */
    snprintf(x->store, sizeof x->store, "%s/s", x->base);
    snprintf(x->out, sizeof x->out, "%s/out", x->base);
    snprintf(x->saved, sizeof x->saved, "%s/saved", x->base);
    if (c->flags & F_ATTACKER) snprintf(x->dir, sizeof x->dir, "%s/att/s", x->base);
    else if (c->obj == OBJ_SYMLINK && strcmp(c->where, ".") == 0) snprintf(x->dir, sizeof x->dir, "%s/link", x->base);
    else snprintf(x->dir, sizeof x->dir, "%s", x->store);
    if (c->target) snprintf(x->target, sizeof x->target, "%s/%s", x->base, c->target);
    resolve_where(x);
    /* a populated store: keys h/0..7, unit h's index, stats */
    cfg_for(&cfg, x->store);
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kcache_dir(kc)) {
        KT_FAILF("%s: setup: the store cannot be opened", c->name);
        kcache_close(kc);
        goto done;
    }
    for (i = 0; i < 8; i++) put_v(kc, "h", i, 1);
    kcache_close(kc);
    make_outside(x);
    if (c->flags & F_ATTACKER) {
        /* the store's path goes through another user's directory (a team's project directory),
           where that user made the store's name a symlink to a directory of ours. Not a sticky
           world-writable directory: there fs.protected_symlinks would stop the kernel following it. */
        char att[400];
        snprintf(att, sizeof att, "%s/att", x->base);
        chmod(x->base, 0711);
        mkdir(att, 0755);
        if (symlink(x->target, x->dir) != 0 || lchown(x->dir, NOBODY, NOBODY) != 0 || lchown(att, NOBODY, NOBODY) != 0) {
            KT_FAILF("%s: setup: %s", c->name, strerror(errno));
            goto done;
        }
    } else if (!(c->flags & F_OPEN) && c->obj != OBJ_TMPNAMES && plant(x) != 0) {
        KT_FAILF("%s: setup: plant %s: %s", c->name, x->where, strerror(errno));
        goto done;
    }
    snap_take(outside, x->out);
    if (c->flags & F_SNAPSTORE) {
        store = (snap *)malloc(sizeof *store);
        if (store) snap_take(store, x->store);
    }
    g_sh->len = 0;
    g_sh->log[0] = 0;
    rc = in_child(c->name, "the caller", hostile_child, x);
    if (getenv("KT_VERBOSE")) fprintf(stderr, "---- %s: log:\n%s", c->name, g_sh->log);
    if (rc == 2) { skip_case(c->name, g_sh->skip); goto done; }
    g_ran++;
    if (c->needle && !log_has(c->needle))
        KT_FAILF("%s: the debug log does not say what is wrong (wanted \"%s\"):\n%s", c->name, c->needle,
                 g_sh->log[0] ? g_sh->log : "(empty)\n");
    snap_check(outside, c->name, "outside the store");
    if (store) snap_check(store, c->name, "in a store that was refused");
    if (c->after && type_of(x->where) != c->after)
        KT_FAILF("%s: %s is of type '%c' after the caller ran, not '%c'", c->name, x->where, type_of(x->where), c->after);
    if (c->expect_store == 1 && !(c->flags & F_PUTFAIL)) in_child(c->name, "a reader", reader_child, x);
    undo(x);
    if (in_child(c->name, "recovery (put)", recover_put, x) == 0) in_child(c->name, "recovery (get)", recover_get, x);
    {
        char p[400];
        int n;
        /* the sweep removes only regular files with kcache's temp names: FIFOs and symlinks planted at
           those names (3 x 40) are not kcache's, and stay */
        int planted = c->obj == OBJ_TMPNAMES && c->sub != OBJ_DIR ? 120 : 0;
        snprintf(p, sizeof p, "%s/tmp", x->store);
        n = count_nondirs(p);
        KT_CHECK_MSG(n == planted, "%s: %d files left in %s after the recovery, not %d", c->name, n, p, planted);
    }
done:
    if (c->obj == OBJ_OWNER || c->obj == OBJ_MODE) undo(x);
    rm_rf(x->base);
    free(store);
    free(outside);
    free(x);
}

static void run_cases(const hcase *cs, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) run_case(&cs[i]);
}

/* ---- groups ------------------------------------------------------------------------------- */

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Symlinks test_store.c does not plant: the index, its shard, i, stats, and the store itself. */
static void hostile_symlinks(void) {
    static const hcase cs[] = {
        {"symlink index", "@index", OBJ_SYMLINK, 0, "out/index.kci", 0, 0, 1, 'f', NULL},
        {"symlink index while open", "@index", OBJ_SYMLINK, 0, "out/index.kci", 0, F_OPEN, 1, 'f', NULL},
        {"dangling symlink index", "@index", OBJ_SYMLINK, 0, "out/newindex.kci", 0, 0, 1, 'f', NULL},
        {"symlink index shard", "@ishard", OBJ_SYMLINK, 0, "out/ishard", 0, 0, 1, 0, "@ishard|index"},
        {"symlink index shard while open", "@ishard", OBJ_SYMLINK, 0, "out/ishard", 0, F_OPEN, 1, 0, "@ishard|index"},
        {"symlink i", "i", OBJ_SYMLINK, 0, "out/i", 0, 0, 1, 0, "@ishard|index"},
        {"symlink stats", "stats", OBJ_SYMLINK, 0, "out/stats", 0, 0, 1, 0, "stats"},
        {"dangling symlink stats", "stats", OBJ_SYMLINK, 0, "out/newstats", 0, 0, 1, 0, "stats"},
        {"symlink temp names", "tmp", OBJ_TMPNAMES, OBJ_SYMLINK, "out/plain", 0, 0, 1, 0, NULL},
    };
    run_cases(cs, N(cs));
}

/* KCACHE_DIR naming a symlink. A symlink of ours to a directory of ours is followed (a cache dir
   moved to another disk is common), and the checks apply to the directory it leads to: owned by
   another user or writable by others, it is refused. A symlink that another user made (in a
   shared sticky directory, before we first ran) is refused too, or it could lead kcache into any
   directory of ours; nothing is created there. */
static void hostile_dir_symlink(void) {
    static const hcase cs[] = {
        {"KCACHE_DIR symlink to our directory", ".", OBJ_SYMLINK, 0, "s", 0, F_ENV, 1, 'l', NULL},
        {"KCACHE_DIR symlink to a directory writable by others", ".", OBJ_SYMLINK, 0, "out/victim777", 0, F_ENV, 0, 'l',
         "writable by"},
        {"KCACHE_DIR symlink to another user's directory", ".", OBJ_SYMLINK, 0, "out/victimnobody", 0, F_ENV | F_CHOWN, 0, 'l',
         "another user"},
        {"KCACHE_DIR dangling symlink", ".", OBJ_SYMLINK, 0, "out/nothing", 0, F_ENV, 0, 'l', "No such file"},
        {"KCACHE_DIR symlink to a file", ".", OBJ_SYMLINK, 0, "out/afile", 0, F_ENV, 0, 'l', "Not a directory"},
        {"KCACHE_DIR symlink loop", ".", OBJ_SYMLINK, 0, "link", 0, F_ENV, 0, 'l', "symbolic links"},
        {"KCACHE_DIR symlink made by another user", ".", OBJ_SYMLINK, 0, "out/victim", 0, F_ENV | F_CHOWN | F_ATTACKER, 0, 'l',
         "symlink|another user"},
    };
    run_cases(cs, N(cs));
}

/* A FIFO where a file belongs, held open by a writer that filled it (a reader that blocks would
   block for ever), or planted while the store is open. */
static void hostile_fifos(void) {
    static const hcase cs[] = {
        {"fifo config.file", "config.file", OBJ_FIFO, 0, NULL, 0, F_HOLD, 1, 'f', NULL},
        {"fifo config.file while open", "config.file", OBJ_FIFO, 0, NULL, 0, F_HOLD | F_OPEN, 1, 'f', NULL},
        {"fifo lock", "lock", OBJ_FIFO, 0, NULL, 0, F_HOLD, 0, 'p', "lock file"},
        {"fifo entry", "@entry", OBJ_FIFO, 0, NULL, 0, F_HOLD, 1, 'f', NULL},
        {"fifo entry while open", "@entry", OBJ_FIFO, 0, NULL, 0, F_HOLD | F_OPEN, 1, 'f', NULL},
        {"fifo entry of a key never stored", "@cold", OBJ_FIFO, 0, NULL, 0, F_HOLD, 1, 'f', NULL},
        {"fifo index", "@index", OBJ_FIFO, 0, NULL, 0, F_HOLD, 1, 'f', NULL},
        {"fifo stats", "stats", OBJ_FIFO, 0, NULL, 0, F_HOLD, 1, 'f', "stats"},
        {"fifo temp names", "tmp", OBJ_TMPNAMES, OBJ_FIFO, NULL, 0, 0, 1, 0, NULL},
        {"fifo in place of the store", ".", OBJ_FIFO, 0, NULL, 0, F_HOLD, 0, 'p', "Not a directory"},
    };
    run_cases(cs, N(cs));
}

/* A directory where a file belongs (holding a file, so that it cannot simply be rmdir'ed). */
static void hostile_dirs(void) {
    static const hcase cs[] = {
        {"directory config.file", "config.file", OBJ_DIR, 0, NULL, 0, 0, -1, 0, "config.file"},
        {"empty directory config.file", "config.file", OBJ_EMPTYDIR, 0, NULL, 0, 0, -1, 0, "config.file"},
        {"directory lock", "lock", OBJ_DIR, 0, NULL, 0, 0, 0, 'd', "lock file"},
        {"directory entry", "@entry", OBJ_DIR, 0, NULL, 0, 0, 1, 'f', NULL},
        {"directory entry of a key never stored", "@cold", OBJ_DIR, 0, NULL, 0, 0, 1, 'f', NULL},
        {"directory index", "@index", OBJ_DIR, 0, NULL, 0, 0, 1, 'f', NULL},
        {"directory index while open", "@index", OBJ_DIR, 0, NULL, 0, F_OPEN, 1, 'f', NULL},
        {"directory stats", "stats", OBJ_DIR, 0, NULL, 0, 0, 1, 0, "stats"},
        {"directory temp names", "tmp", OBJ_TMPNAMES, OBJ_DIR, NULL, 0, 0, 1, 0, NULL},
    };
    run_cases(cs, N(cs));
}

/* A regular file where a directory belongs. */
static void hostile_files(void) {
    static const hcase cs[] = {
        {"file e", "e", OBJ_FILE, 0, NULL, 0, 0, 0, 'f', "not a directory"},
        {"file e/XX", "@eshard", OBJ_FILE, 0, NULL, 0, F_PUTFAIL, 1, 0, "@eshard|not a directory"},
        {"file e/XX while open", "@eshard", OBJ_FILE, 0, NULL, 0, F_OPEN | F_PUTFAIL, 1, 0, "@eshard|not a directory"},
        {"file i", "i", OBJ_FILE, 0, NULL, 0, 0, 1, 0, "@ishard|index"},
        {"file i/XX", "@ishard", OBJ_FILE, 0, NULL, 0, 0, 1, 0, "@ishard|index"},
        {"file tmp", "tmp", OBJ_FILE, 0, NULL, 0, 0, 0, 'f', "not a directory"},
        {"file in place of the store", ".", OBJ_FILE, 0, NULL, 0, 0, 0, 'f', "Not a directory"},
    };
    run_cases(cs, N(cs));
}

/* A device node where a file belongs (what /dev/zero is: endless zeros, never end of file). */
static void hostile_devices(void) {
    static const hcase cs[] = {
        {"device config.file", "config.file", OBJ_DEV, 0, NULL, 0, 0, 1, 'f', NULL},
        {"device lock", "lock", OBJ_DEV, 0, NULL, 0, 0, 0, '?', "lock file"},
        {"device entry", "@entry", OBJ_DEV, 0, NULL, 0, 0, 1, 'f', NULL},
        {"device index", "@index", OBJ_DEV, 0, NULL, 0, 0, 1, 'f', NULL},
        {"device stats", "stats", OBJ_DEV, 0, NULL, 0, 0, 1, 'f', "stats"},
    };
    run_cases(cs, N(cs));
}

/* A populated store owned by another user or writable by others: refused, and nothing in it is
   read or changed (test_store.c's unsafe_dirs has the empty ones). */
static void hostile_owner_mode(void) {
    static const hcase cs[] = {
        {"store owned by nobody", ".", OBJ_OWNER, 0, NULL, 0, F_CHOWN | F_SNAPSTORE, 0, 'd', "another user"},
        {"store mode 0777", ".", OBJ_MODE, 0, NULL, 0777, F_SNAPSTORE, 0, 'd', "writable by"},
        {"store mode 0770", ".", OBJ_MODE, 0, NULL, 0770, F_SNAPSTORE, 0, 'd', "writable by"},
        {"store mode 0720", ".", OBJ_MODE, 0, NULL, 0720, F_SNAPSTORE, 0, 'd', "writable by"},
        {"store mode 1777", ".", OBJ_MODE, 0, NULL, 01777, F_SNAPSTORE, 0, 'd', "writable by"},
        {"store mode 0755 (readable by others)", ".", OBJ_MODE, 0, NULL, 0755, 0, 1, 'd', NULL},
        /* root's store is used read-only by others (a site-wide store), but only its top is 0755 here:
           its directories (0700) cannot be read, and it is refused (test_attack reads a whole one) */
        {"store of root, 0755, used by nobody", ".", OBJ_MODE, 0, NULL, 0755, F_ROOT | F_NOBODY | F_SNAPSTORE, 0, 'd',
         "Permission denied"},
        {"store of root, 0700, used by nobody", ".", OBJ_MODE, 0, NULL, 0700, F_ROOT | F_NOBODY | F_SNAPSTORE, 0, 'd',
         "Permission denied"},
    };
    run_cases(cs, N(cs));
}

/* ---- filesystems: full, read-only (in a private mount namespace) --------------------------- */

typedef struct fsarg { char base[256]; } fsarg;

static void fs_private(void) {
    if (unshare(CLONE_NEWNS) != 0) child_skip("unshare(CLONE_NEWNS)", errno);
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) child_skip("mount --make-rprivate /", errno);
}
static kcache *fs_open(const char *dir) {
    kcache_config c;
    kcache *kc = NULL;
    cfg_for(&c, dir);
    c.debug = 1;
    c.log = log_cb;
    if (kcache_open(&kc, &c) != KCACHE_OK || !kc) { KT_FAILF("kcache_open(%s) failed", dir); return NULL; }
    return kc;
}

/* A full filesystem: the stats file (1 MiB) cannot be made on a 256 KiB tmpfs; then every put of
   new units while the disk fills (entries and index rewrites failing at every boundary), then
   space again: no temp file is left, and every unit's index works. */
static void full_child(void *arg) {
    fsarg *a = (fsarg *)arg;
    char mnt[300], dir[320], p[400], buf[4096], unit[32];
    kcache *kc;
    uint32_t i, nospc = 0, after = 0, used_units;
    kcache_status s;
    fs_private();
    snprintf(mnt, sizeof mnt, "%s/mnt", a->base);
    mkdir(mnt, 0700);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=256k,mode=0700") != 0) child_skip("mount -t tmpfs -o size=256k", errno);
    snprintf(dir, sizeof dir, "%s/s", mnt);
    snprintf(p, sizeof p, "%s/filler", mnt);
    /* 64 pages: config.file takes 33, the filler 16 (given back later), entries and indexes the rest */
    if (write_file(p, g_out_stats, 64 << 10) != 0) KT_FAILF("setup: filler");
    kc = fs_open(dir);
    if (!kc) return;
    KT_CHECK_MSG(kcache_dir(kc) != NULL, "the store on a small tmpfs was refused");
    KT_CHECK_MSG(strstr(g_sh->log, "stats") && strstr(g_sh->log, strerror(ENOSPC)),
                 "full disk: the log does not say the stats file cannot be made for lack of space:\n%s", g_sh->log);
    snprintf(p, sizeof p, "%s/stats", dir);
    KT_CHECK_MSG(type_of(p) == 'x', "full disk: a partial stats file was left");
    for (i = 0; i < 300 && after < 40; i++) {
        size_t n = 300 + (i * 1361u) % 7000; /* entries of one or two pages, index records in between */
        snprintf(unit, sizeof unit, "u%u", i % 8);
        s = put_x(kc, unit, i, 1, NULL, n);
        KT_CHECK_MSG(s == KCACHE_OK || s == KCACHE_ENOSPC || s == KCACHE_EIO, "put %u on a full disk: %s", i, kcache_strerror(s));
        if (s != KCACHE_OK) nospc++;
        if (nospc) after++;
        KT_CHECK_MSG(get_n(kc, unit, i, 1, n) == 1, "put %u on a full disk: memory does not serve it", i);
        explain(kc, unit, 100000 + i, buf, sizeof buf);
        KT_CHECK_MSG(strncmp(buf, "miss", 4) == 0, "explain on a full disk: \"%s\"", buf);
    }
    used_units = i < 8 ? i : 8;
    KT_CHECK_MSG(nospc > 0, "the disk never filled");
    KT_CHECK_MSG(strstr(g_sh->log, "no space") != NULL, "the log does not say the disk is full");
    snprintf(p, sizeof p, "%s/tmp", dir);
    KT_CHECK_MSG(count_dir(p) == 0, "full disk: %d temp files left behind", count_dir(p));
    /* space again: every unit stores, and its index knows its overloads */
    snprintf(p, sizeof p, "%s/filler", mnt);
    unlink(p);
    for (i = 0; i < used_units; i++) {
        snprintf(unit, sizeof unit, "u%u", i);
        s = put_v(kc, unit, 5000 + i, 1);
        KT_CHECK_MSG(s == KCACHE_OK, "unit %s: a put once there is space again: %s", unit, kcache_strerror(s));
        explain(kc, unit, 9000 + i, buf, sizeof buf);
        KT_CHECK_MSG(strstr(buf, "a field differs") != NULL, "unit %s: its index after a full disk: \"%s\"", unit, buf);
    }
    KT_CHECK_MSG(kcache_verify(kc, 0) == KCACHE_OK, "the accounting is off after a full disk");
    /* exactly one free page: a new unit's entry takes it, its index cannot be written */
    {
        int fd;
        off_t at = 0;
        snprintf(p, sizeof p, "%s/filler", mnt);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        while (fd >= 0 && write(fd, g_out_stats, 4096) == 4096) at += 4096;
        if (fd < 0 || ftruncate(fd, at - 4096) != 0) KT_FAILF("setup: the filler");
        if (fd >= 0) close(fd);
        size_t mark = g_sh->len;
        char ix[64];
        s = put_x(kc, "solo", 1, 1, NULL, 3000);
        KT_CHECK_MSG(s == KCACHE_OK || s == KCACHE_ENOSPC || s == KCACHE_EIO, "put onto the last page: %s", kcache_strerror(s));
        index_rel("solo", ix, sizeof ix);
        snprintf(p, sizeof p, "%s/%s", dir, ix);
        if (s == KCACHE_OK && type_of(p) != 'f') /* stored, and its unit's index could not be written */
            KT_CHECK_MSG(strstr(g_sh->log + mark, "index") || strstr(g_sh->log + mark, ix),
                         "one free page: the entry was stored, its index not, and the log does not say so:\n%s", g_sh->log + mark);
        KT_CHECK_MSG(get_n(kc, "solo", 1, 1, 3000) == 1, "put onto the last page: memory does not serve it");
        explain(kc, "solo", 2, buf, sizeof buf);
        KT_CHECK_MSG(strncmp(buf, "miss", 4) == 0, "explain with the disk full: \"%s\"", buf);
        snprintf(p, sizeof p, "%s/filler", mnt);
        unlink(p);
        s = put_x(kc, "solo", 3, 1, NULL, 3000);
        KT_CHECK_MSG(s == KCACHE_OK, "a put once there is space again: %s", kcache_strerror(s));
        explain(kc, "solo", 2, buf, sizeof buf);
        KT_CHECK_MSG(strstr(buf, "a field differs") != NULL, "unit solo: its index after a full disk: \"%s\"", buf);
        if (getenv("KT_VERBOSE")) fprintf(stderr, "one free page: explain after: %s\n", buf);
    }
    kcache_close(kc);
    /* another process reads back what was stored once there was room */
    kc = fs_open(dir);
    if (!kc) return;
    for (i = 0; i < used_units; i++) {
        snprintf(unit, sizeof unit, "u%u", i);
        KT_CHECK_MSG(get_v(kc, unit, 5000 + i, 1) == 1, "unit %s: not read back after a full disk", unit);
    }
    KT_CHECK_MSG(get_n(kc, "solo", 3, 1, 3000) == 1, "unit solo: not read back after a full disk");
    kcache_close(kc);
    snprintf(p, sizeof p, "%s/tmp", dir);
    KT_CHECK_MSG(count_dir(p) == 0, "%d temp files left behind", count_dir(p));
}
static void hostile_full_fs(void) {
    fsarg a;
    const char *t = getenv("TMPDIR");
    if (getenv("KT_ONLY") && !strstr("full filesystem", getenv("KT_ONLY"))) return;
    if (geteuid() != 0) { skip_case("full filesystem", "needs root to mount a tmpfs"); return; }
    snprintf(a.base, sizeof a.base, "%s/kcache-hostile-fs-XXXXXX", t && t[0] == '/' ? t : "/tmp");
    if (!mkdtemp(a.base)) { KT_FAILF("mkdtemp: %s", strerror(errno)); return; }
    g_sh->len = 0;
    if (in_child("full filesystem", "the caller", full_child, &a) == 2) skip_case("full filesystem", g_sh->skip);
    else g_ran++;
    if (getenv("KT_VERBOSE")) fprintf(stderr, "---- full filesystem: log:\n%s", g_sh->log);
    rm_rf(a.base);
}

/* A store the caller can read but not write (another user's, directories 0500), without a stats
   file: kcache reads entries and indexes, cannot make the stats file, and says so; a read-only
   mount of a populated store. */
static void ro_child(void *arg) {
    fsarg *a = (fsarg *)arg;
    char dir[300], buf[2048], p[400];
    kcache *kc;
    uint32_t i;
    snprintf(dir, sizeof dir, "%s/s", a->base);
    become_nobody();
    kc = fs_open(dir);
    if (!kc) return;
    KT_CHECK_MSG(kcache_dir(kc) != NULL, "a read-only store (its lock writable) was refused");
    KT_CHECK_MSG(strstr(g_sh->log, "stats") != NULL, "the log does not say the stats file cannot be made:\n%s", g_sh->log);
    for (i = 0; i < 8; i++) KT_CHECK_MSG(get_v(kc, "h", i, 1) == 1, "key h/%u does not hit from a read-only store", i);
    explain(kc, "h", 101, buf, sizeof buf);
    KT_CHECK_MSG(strstr(buf, "a field differs") != NULL, "the index of a read-only store is not read: \"%s\"", buf);
    KT_CHECK_MSG(put_v(kc, "h", 100, 1) != KCACHE_OK, "a put into a read-only store says OK");
    KT_CHECK_MSG(get_v(kc, "h", 100, 1) == 1, "memory does not serve a put the store refused");
    kcache_close(kc);
    snprintf(p, sizeof p, "%s/stats", dir);
    KT_CHECK_MSG(type_of(p) == 'x', "a stats file appeared in a read-only store");
}
static void ro_mount_child(void *arg) {
    fsarg *a = (fsarg *)arg;
    char dir[300], buf[2048];
    kcache *kc;
    uint32_t i;
    snprintf(dir, sizeof dir, "%s/s", a->base);
    fs_private();
    if (mount(dir, dir, NULL, MS_BIND, NULL) != 0) child_skip("mount --bind", errno);
    if (mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0) child_skip("remount read-only", errno);
    kc = fs_open(dir);
    if (!kc) return;
    /* said once, plainly: not "in use" and nothing else (issue 28) */
    KT_CHECK_MSG(kcache_store_in_use(kc, buf, sizeof buf) == 1 && strstr(buf, "read-only") && strstr(buf, "puts are kept in memory only"),
                 "kcache_store_in_use says \"%s\"", buf);
    for (i = 0; i < 8; i++) KT_CHECK_MSG(get_v(kc, "h", i, 1) >= 0, "key h/%u: other bytes from a read-only mount", i);
    KT_CHECK_MSG(get_v(kc, "cold", 1, 1) == 0, "a cold key did not miss");
    explain(kc, "cold", 1, buf, sizeof buf);
    KT_CHECK_MSG(strncmp(buf, "miss: cold", 10) == 0 && strstr(buf, "read-only: puts are kept in memory only"), "explain: \"%s\"", buf);
    KT_CHECK_MSG(strstr(g_sh->log, "is read-only") != NULL, "the log does not say the store is read-only:\n%s", g_sh->log);
    g_sh->len = 0;
    g_sh->log[0] = 0;
    put_v(kc, "h", 100, 1);
    KT_CHECK_MSG(strstr(g_sh->log, "put h (") && strstr(g_sh->log, "kept in memory only: the store") &&
                     strstr(g_sh->log, "is read-only") && !strstr(g_sh->log, "refused") && !strchr(strchr(g_sh->log, '\n') ? strchr(g_sh->log, '\n') + 1 : "", '\n'),
                 "a put into a read-only store is logged as:\n%s", g_sh->log);
    KT_CHECK_MSG(get_v(kc, "h", 100, 1) == 1, "memory does not serve a put");
    explain(kc, "h", 101, buf, sizeof buf);
    KT_CHECK_MSG(strncmp(buf, "miss", 4) == 0 && strstr(buf, "read-only: puts are kept in memory only"), "explain: \"%s\"", buf);
    kcache_close(kc);
}
static void hostile_readonly_fs(void) {
    fsarg a;
    const char *t = getenv("TMPDIR");
    char dir[300], p[400], cmd[800];
    kcache_config c;
    kcache *kc = NULL;
    uint32_t i;
    if (getenv("KT_ONLY") && !strstr("read-only store", getenv("KT_ONLY"))) return;
    if (!g_can_chown) { skip_case("read-only store", "needs root to chown the store and mount"); return; }
    snprintf(a.base, sizeof a.base, "%s/kcache-hostile-ro-XXXXXX", t && t[0] == '/' ? t : "/tmp");
    if (!mkdtemp(a.base)) { KT_FAILF("mkdtemp: %s", strerror(errno)); return; }
    chmod(a.base, 0711);
    snprintf(dir, sizeof dir, "%s/s", a.base);
    cfg_for(&c, dir);
    if (kcache_open(&kc, &c) != KCACHE_OK || !kcache_dir(kc)) { KT_FAILF("setup: open"); kcache_close(kc); rm_rf(a.base); return; }
    for (i = 0; i < 8; i++) put_v(kc, "h", i, 1);
    kcache_close(kc);
    g_sh->len = 0;
    if (in_child("read-only mount", "the caller", ro_mount_child, &a) == 2) skip_case("read-only mount", g_sh->skip);
    else g_ran++;
    /* another user's store, directories 0500, files 0600, no stats file yet */
    snprintf(p, sizeof p, "%s/stats", dir);
    unlink(p);
    snprintf(cmd, sizeof cmd, "chown -R %d:%d '%s' && find '%s' -type d -exec chmod 0500 {} +", NOBODY, NOBODY, dir, dir);
    if (system(cmd) != 0) KT_FAILF("setup: %s failed", cmd);
    g_sh->len = 0;
    if (in_child("read-only store", "the caller", ro_child, &a) == 2) skip_case("read-only store", g_sh->skip);
    else g_ran++;
    if (getenv("KT_VERBOSE")) fprintf(stderr, "---- read-only store: log:\n%s", g_sh->log);
    snprintf(cmd, sizeof cmd, "%s/tmp", dir);
    KT_CHECK_MSG(count_dir(cmd) == 0, "read-only store: files left in tmp/");
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s'", a.base);
    if (system(cmd) != 0) KT_FAILF("cleanup: %s failed", cmd);
    rm_rf(a.base);
}

/* ---- main --------------------------------------------------------------------------------- */

/* A group none of whose cases ran (skipped, or filtered by KT_ONLY) prints no "ok". */
#define RUN(fn) KT_RUN_RAN(fn, g_ran)

int main(void) {
    static const char *const env[] = {"KCACHE_DIR", "KCACHE_MAX_SIZE", "KCACHE_MEM_ENTRIES", "KCACHE_MEM_SIZE", "KCACHE_ENABLE",
                                      "KCACHE_PERSISTENT", "KCACHE_DEBUG", "KCACHE_TRACE", "KCACHE_FSYNC", "KCACHE_WRITE",
                                      "KCACHE_BUILD_WAIT", "KCACHE_STAMP", "KCACHE_STATS", "KCACHE_CPU_NAME",
                                      "KCACHE_CPU_FEATURES"};
    char base[256];
    const char *t = getenv("TMPDIR");
    size_t i;
    void *m;
    for (i = 0; i < N(env); i++) unsetenv(env[i]);
    umask(022);
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    m = mmap(NULL, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { perror("mmap"); return 2; }
    g_sh = (shared *)m;
    entry_rel(3, g_entry3_rel, sizeof g_entry3_rel);
    entry_rel(100, g_cold_rel, sizeof g_cold_rel);
    index_rel("h", g_index_rel, sizeof g_index_rel);
    snprintf(base, sizeof base, "%s/kcache-hostile-XXXXXX", t && t[0] == '/' ? t : "/tmp");
    if (!mkdtemp(base)) { perror("mkdtemp"); return 2; }
    probe_atime(base);
    probe_powers(base);
    if (make_outside_copies(base) != 0) { printf("FAIL setup: cannot make the outside copies\n"); rm_rf(base); return 1; }
    rm_rf(base);

    RUN(hostile_symlinks);
    RUN(hostile_dir_symlink);
    RUN(hostile_fifos);
    RUN(hostile_dirs);
    RUN(hostile_files);
    RUN(hostile_devices);
    RUN(hostile_owner_mode);
    RUN(hostile_full_fs);
    RUN(hostile_readonly_fs);
    free(g_v9_entry);
    free(g_out_index);
    free(g_out_cf);
    free(g_out_stats);
    KT_EXIT();
}

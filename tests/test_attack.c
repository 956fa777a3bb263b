/* test_attack.c - another local user against someone's store (issue 16), run by test_attack.sh.
 *
 * The victim is this process (root in CI); the attacker is a real second user that the driver
 * script made with useradd (KT_ATTACKER=name; removed by the script's trap), and a member of a
 * group made for the shared-store case (KT_MEMBER, KT_GROUP). Each attack is the one that worked
 * against kcache before:
 *   swap_race        the attacker swaps, in a loop (renameat2 RENAME_EXCHANGE), a directory of
 *                    hers with a symlink to a directory of the victim's, at the store's path: in
 *                    her own directory and in a sticky world-writable one. 5,000+ opens each: not
 *                    one may use the store, and the victim's directory is left as it was.
 *   read_lock        a store of 0755: the attacker may not open its lock (nor config.file, stats),
 *                    so she cannot take a read lock, and the victim's put does not wait; a lock
 *                    file left 0644 by an older kcache is made 0600 at open.
 *   foreign_entry    a world-writable e/ or shard holding an entry the attacker made for the
 *                    victim's key (both checksums are plain XXH3): the store is refused, her bytes
 *                    never served.
 *   symlinked_parent a symlink of hers on the way to the store (in her directory, in a sticky
 *                    one), and a FIFO of hers as the store: refused, nothing made where it points.
 *   sticky_tmp       tmp/ made sticky and world-writable: refused while it holds her files (none
 *                    of them removed), repaired (0700) when it holds only ours.
 *   loose_level      a loose tmp/ or e/ (0777) where she dropped a file named to forge a log line:
 *                    refused at the first open and at every later one until its owner removes her
 *                    file (then repaired, 0700); her file name printed escaped (log, explain,
 *                    kcache_store_in_use) (issue 25)
 *   small_fs         a 16 MiB tmpfs and the default 1 GiB limit: every put works, by evicting,
 *                    and the filesystem never falls under kcache's reserve (5 %), also when
 *                    another program fills it.
 *   read_only        a site-wide store (root's, made readable) read by the attacker: hits, no
 *                    lock file, nothing written; a read-only bind mount: hits.
 *   shared_group     KCACHE_SHARED_GROUP: a member reads and writes the group's store (02770,
 *                    files 0660), the attacker (not a member) cannot, and without the variable the
 *                    store is refused.
 *   temp_counted     8 writers of 1 MiB entries under a 4 MiB limit: entries and temp files on disk
 *                    (sampled under the store lock) stay within the limit (the temp files of writes
 *                    in flight count).
 *   modes            files 0600 and directories 0700 whatever the umask (no second user needed).
 * Without root (or without the users) the cases that need them print "skip NAME: why".
 *
 * Build: make build/test_attack; run: bash tests/test_attack.sh build/test_attack */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#include "kt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define RACE_OPENS 5000

static char g_base[256];
static uid_t g_mal = (uid_t)-1, g_mem = (uid_t)-1;
static gid_t g_mal_gid, g_mem_gid, g_grp = (gid_t)-1;

/* ---- small helpers ---------------------------------------------------------------------------- */

static int g_ran; /* the group ran (was not skipped) */
static void skip(const char *name, const char *why) { printf("skip %s: %s\n", name, why); }
static int need_attacker(const char *name) {
    if (geteuid() != 0) { skip(name, "not root"); return 0; }
    if (g_mal == (uid_t)-1) { skip(name, "no attacker user (run through tests/test_attack.sh)"); return 0; }
    g_ran = 1;
    return 1;
}

static int write_file(const char *path, const void *p, size_t n, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode);
    ssize_t w;
    if (fd < 0) return -1;
    w = write(fd, p, n);
    close(fd);
    return w == (ssize_t)n ? 0 : -1;
}
static unsigned char *read_file(const char *path, size_t *n) {
    struct stat s;
    unsigned char *b;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    *n = 0;
    if (fd < 0) return NULL;
    if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode) || !(b = (unsigned char *)malloc((size_t)s.st_size + 1))) { close(fd); return NULL; }
    *n = (size_t)read(fd, b, (size_t)s.st_size);
    close(fd);
    return b;
}
static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s; (void)flag; (void)f;
    remove(p);
    return 0;
}
static void rm_rf(const char *path) { nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT); }
static int count_dir(const char *path) {
    DIR *d = opendir(path);
    struct dirent *de;
    int n = 0;
    if (!d) return -1;
    while ((de = readdir(d)) != NULL) n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}
static unsigned mode_of(const char *path) {
    struct stat s;
    return lstat(path, &s) == 0 ? (unsigned)(s.st_mode & 07777) : 0xffffu;
}

/* A tree's names, types, owners, sizes, inodes and contents, as one digest: "left as it was". */
static kcache_hash_state g_tree;
static int tree_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    uint64_t v[6];
    (void)flag; (void)f;
    kcache_hash_update(&g_tree, p, strlen(p) + 1);
    v[0] = (uint64_t)s->st_mode; v[1] = (uint64_t)s->st_uid; v[2] = (uint64_t)s->st_size; v[3] = (uint64_t)s->st_ino;
    v[4] = (uint64_t)s->st_mtim.tv_sec; v[5] = (uint64_t)s->st_mtim.tv_nsec;
    kcache_hash_update(&g_tree, v, sizeof v);
    if (S_ISREG(s->st_mode)) {
        size_t n;
        unsigned char *b = read_file(p, &n);
        kcache_hash_update(&g_tree, b, n);
        free(b);
    }
    return 0;
}
static kcache_hash128 tree_sig(const char *root) {
    kcache_hash_init(&g_tree);
    nftw(root, tree_one, 32, FTW_PHYS | FTW_MOUNT);
    return kcache_hash_final(&g_tree);
}
static int same(kcache_hash128 a, kcache_hash128 b) { return a.lo == b.lo && a.hi == b.hi; }

/* ---- keys, payloads, caches --------------------------------------------------------------------- */

static char g_log[16384];
static size_t g_log_len;
static void log_cb(void *user, const char *line) {
    (void)user;
    kt_log_append(g_log, sizeof g_log, &g_log_len, line);
}
static kcache *open_at(const char *dir, uint64_t limit, const char *group) {
    kcache_config c;
    kcache *kc = NULL;
    kcache_config_init(&c);
    c.dir = dir;
    c.max_size = limit;
    c.mem_entries = 4;
    c.lock_timeout_ms = 2000;
    c.debug = 1;
    c.log = log_cb;
    c.shared_group = group;
    g_log_len = 0;
    g_log[0] = 0;
    if (kcache_open(&kc, &c) != KCACHE_OK) return NULL;
    return kc;
}
static void mkkey(kcache_key *k, uint32_t id) {
    kcache_key_init(k, "prog");
    kcache_key_u64(k, "id", id);
    kcache_key_str(k, "src", "kernel void f(global int *x) { x[0] = 1; }");
}
static void pl_fill(unsigned char *p, size_t n, uint32_t id, uint32_t who) {
    size_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)(id * 31 + who * 101 + i * 7);
}
static kcache_status put_id(kcache *kc, uint32_t id, uint32_t who, size_t n) {
    unsigned char *p = (unsigned char *)malloc(n ? n : 1);
    kcache_key k;
    kcache_status s;
    pl_fill(p, n, id, who);
    mkkey(&k, id);
    s = kcache_put(kc, &k, p, n);
    kcache_key_free(&k);
    free(p);
    return s;
}
/* 1: the bytes `who` put; 0: a miss; -1: anything else (another's bytes, an error). */
static int get_id(kcache *kc, uint32_t id, uint32_t who, size_t n) {
    kcache_key k;
    const void *d;
    size_t got;
    int r = -1;
    mkkey(&k, id);
    if (kcache_get(kc, &k, &d, &got) == KCACHE_OK) {
        unsigned char *want = (unsigned char *)malloc(n ? n : 1);
        pl_fill(want, n, id, who);
        r = got == n && memcmp(want, d, n) == 0 ? 1 : -1;
        free(want);
        kcache_release(kc, d);
    } else {
        r = 0;
    }
    kcache_key_free(&k);
    return r;
}
static void entry_rel(uint32_t id, char *out, size_t cap) {
    kcache_key k;
    char hex[33];
    mkkey(&k, id);
    kcache_hash_hex(kcache_key_digest(&k), hex);
    kcache_key_free(&k);
    snprintf(out, cap, "e/%.2s/%s.kce", hex, hex);
}

/* ---- the attacker: a forked child that became the second user ------------------------------------ */

static void become(uid_t uid, gid_t gid, int with_group) {
    gid_t g = g_grp;
    if (setgroups(with_group ? 1 : 0, &g) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
        fprintf(stderr, "cannot become uid %u: %s\n", (unsigned)uid, strerror(errno));
        _exit(99);
    }
}
/* Runs fn in a child as uid; its exit status (0: its checks held). */
static int as_user(uid_t uid, gid_t gid, int with_group, int (*fn)(void *), void *arg) {
    pid_t p;
    int st = 0;
    fflush(stdout);
    p = fork();
    if (p == 0) {
        become(uid, gid, with_group);
        _exit(fn(arg));
    }
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
static pid_t start_as(uid_t uid, gid_t gid, int (*fn)(void *), void *arg) {
    pid_t p;
    fflush(stdout);
    p = fork();
    if (p == 0) {
        become(uid, gid, 0);
        _exit(fn(arg));
    }
    return p;
}
static void stop(pid_t p) {
    int st;
    kill(p, SIGKILL);
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
}

/* A directory of the victim's that a redirected store would damage: what the trial
   found deleted or replaced (tmp/ with a file, a dead-writer-looking name, a symlink, a FIFO, an
   empty directory; config.file, stats, i). */
static void make_victim_dir(const char *v) {
    char p[512];
    mkdir(v, 0700);
    snprintf(p, sizeof p, "%s/tmp", v); mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/tmp/old-thesis.txt", v); write_file(p, "chapter 1\n", 10, 0600);
    snprintf(p, sizeof p, "%s/tmp/99999-notes.txt", v); write_file(p, "notes\n", 6, 0600);
    snprintf(p, sizeof p, "%s/tmp/99999-1-1.tmp", v); write_file(p, "looks like a temp file\n", 23, 0600);
    snprintf(p, sizeof p, "%s/tmp/link", v); if (symlink("/etc/hostname", p) != 0) perror("symlink");
    snprintf(p, sizeof p, "%s/tmp/fifo", v); mkfifo(p, 0600);
    snprintf(p, sizeof p, "%s/tmp/emptydir", v); mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/config.file", v); write_file(p, "my config\n", 10, 0600);
    snprintf(p, sizeof p, "%s/stats", v); write_file(p, "my stats\n", 9, 0600);
    snprintf(p, sizeof p, "%s/i", v); write_file(p, "my i\n", 5, 0600);
}

/* ---- swap race --------------------------------------------------------------------------------- */

typedef struct swap_arg { char dir[400]; volatile uint64_t *swaps; } swap_arg;
static int swapper(void *arg) {
    swap_arg *a = (swap_arg *)arg;
    int fd = open(a->dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return 2;
    for (;;) {
        if (syscall(SYS_renameat2, fd, "s", fd, "x", RENAME_EXCHANGE) == 0) __atomic_add_fetch(a->swaps, 1, __ATOMIC_RELAXED);
    }
    return 0;
}
typedef struct prep_arg { char dir[400], target[400]; } prep_arg;
static int prepare_swap(void *arg) { /* as the attacker: her directory "s" and her symlink "x" */
    prep_arg *a = (prep_arg *)arg;
    char s[512], x[512];
    snprintf(s, sizeof s, "%s/s", a->dir);
    snprintf(x, sizeof x, "%s/x", a->dir);
    if (mkdir(s, 0755) != 0 || symlink(a->target, x) != 0) return 1;
    return 0;
}

static void race_variant(const char *what, int sticky) {
    char dir[400], victim[400], store[420];
    prep_arg pa;
    swap_arg sa;
    kcache_hash128 before;
    uint64_t *swaps = (uint64_t *)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    unsigned used = 0, as_link = 0, as_dir = 0, other = 0, i;
    char other_why[600] = "";
    pid_t att;
    snprintf(dir, sizeof dir, "%s/race-%s", g_base, sticky ? "sticky" : "hers");
    snprintf(victim, sizeof victim, "%s/victim-%s", g_base, sticky ? "sticky" : "hers");
    make_victim_dir(victim);
    mkdir(dir, 0755);
    if (sticky) chmod(dir, 01777); /* a shared temp directory, as /tmp */
    else if (chown(dir, g_mal, g_mal_gid) != 0) KT_FAILF("chown: %s", strerror(errno));
    snprintf(pa.dir, sizeof pa.dir, "%s", dir);
    snprintf(pa.target, sizeof pa.target, "%s", victim);
    if (as_user(g_mal, g_mal_gid, 0, prepare_swap, &pa) != 0) { KT_FAILF("%s: the attacker's setup failed", what); return; }
    before = tree_sig(victim);
    *swaps = 0;
    snprintf(sa.dir, sizeof sa.dir, "%s", dir);
    sa.swaps = swaps;
    att = start_as(g_mal, g_mal_gid, swapper, &sa);
    snprintf(store, sizeof store, "%s/s", dir);
    while (*swaps < 10) sched_yield(); /* the attacker is swapping */
    for (i = 0; i < RACE_OPENS; i++) {
        kcache *kc = open_at(store, 1u << 20, NULL);
        if (!kc) { other++; continue; }
        if (kcache_dir(kc)) {
            used++;
            put_id(kc, i, 0, 100); /* what a victim would do: harm shows in the victim's directory */
        } else if (strstr(g_log, "symlink owned by another user")) as_link++;
        else if (strstr(g_log, "owned by another user")) as_dir++;
        else if (other++ == 0) snprintf(other_why, sizeof other_why, "%.500s", g_log);
        kcache_close(kc);
    }
    stop(att);
    KT_CHECK_MSG(used == 0, "%s: %u of %d opens used a store the attacker steered", what, used, RACE_OPENS);
    KT_CHECK_MSG(same(before, tree_sig(victim)), "%s: the victim's directory was changed", what);
    KT_CHECK_MSG(as_link + as_dir == RACE_OPENS, "%s: %u opens refused for another reason (the first: %s)", what, other, other_why);
    KT_CHECK_MSG(*swaps > RACE_OPENS, "%s: the attacker swapped only %llu times", what, (unsigned long long)*swaps);
    printf("# swap race (%s): %d opens against %llu swaps: %u used, %u refused as her symlink, %u as her directory\n", what,
           RACE_OPENS, (unsigned long long)*swaps, used, as_link, as_dir);
    munmap(swaps, 4096);
}
static void swap_race(void) {
    if (!need_attacker("swap_race")) return;
    race_variant("in her own directory", 0);
    race_variant("in a sticky world-writable directory", 1);
}

/* ---- read lock ---------------------------------------------------------------------------------- */

typedef struct lock_arg { char dir[400]; int hold; } lock_arg;
static int try_files(void *arg) { /* as the attacker: 0 when she could open none of them */
    lock_arg *a = (lock_arg *)arg;
    static const char *const names[] = {"lock", "config.file", "stats"};
    int i, n = 0;
    for (i = 0; i < 3; i++) {
        char p[512];
        int fd;
        snprintf(p, sizeof p, "%s/%s", a->dir, names[i]);
        if ((fd = open(p, O_RDONLY)) >= 0) {
            struct flock fl;
            memset(&fl, 0, sizeof fl);
            fl.l_type = F_RDLCK; /* the whole file: every byte kcache locks */
            if (i == 0 && a->hold && fcntl(fd, F_SETLK, &fl) == 0) {
                printf("# the attacker holds a read lock on %s\n", p);
                fflush(stdout);
                pause(); /* held until killed */
            }
            close(fd);
            n++;
        }
    }
    return n;
}
static int hold_lock(void *arg) { return try_files(arg); }

static void read_lock(void) {
    char dir[400], p[512];
    lock_arg la;
    kcache *kc;
    pid_t att;
    int variant;
    if (!need_attacker("read_lock")) return;
    for (variant = 0; variant < 2; variant++) { /* 0: a new store; 1: left by an older kcache, lock 0644 */
        snprintf(dir, sizeof dir, "%s/lockstore%d", g_base, variant);
        mkdir(dir, 0755); /* readable by others: the user's choice */
        if (variant) {
            snprintf(p, sizeof p, "%s/lock", dir);
            write_file(p, "", 0, 0644);
            chmod(p, 0644);
        }
        kc = open_at(dir, 1u << 20, NULL);
        KT_CHECK_MSG(kc && kcache_dir(kc), "lock variant %d: the store was refused: %s", variant, g_log);
        if (!kc) continue;
        snprintf(p, sizeof p, "%s/lock", dir);
        KT_CHECK_MSG(mode_of(p) == 0600, "lock variant %d: the lock file is %o", variant, mode_of(p));
        snprintf(p, sizeof p, "%s/config.file", dir);
        KT_CHECK_MSG(mode_of(p) == 0600, "lock variant %d: config.file is %o", variant, mode_of(p));
        snprintf(p, sizeof p, "%s/stats", dir);
        KT_CHECK_MSG(mode_of(p) == 0600, "lock variant %d: stats is %o", variant, mode_of(p));
        snprintf(la.dir, sizeof la.dir, "%s", dir);
        la.hold = 0;
        KT_CHECK_MSG(as_user(g_mal, g_mal_gid, 0, try_files, &la) == 0, "lock variant %d: the attacker opened a file of the store", variant);
        la.hold = 1;
        att = start_as(g_mal, g_mal_gid, hold_lock, &la);
        usleep(100000);
        /* the victim's puts and removes take the lock: they must not wait for her */
        KT_CHECK_MSG(put_id(kc, 1, 0, 5000) == KCACHE_OK, "lock variant %d: the victim's put failed (%s)", variant, g_log);
        KT_CHECK_MSG(put_id(kc, 2, 0, 5000) == KCACHE_OK, "lock variant %d: the victim's second put failed", variant);
        stop(att);
        kcache_close(kc);
        kc = open_at(dir, 1u << 20, NULL);
        KT_CHECK_MSG(kc && get_id(kc, 2, 0, 5000) == 1, "lock variant %d: the put is not read back", variant);
        kcache_close(kc);
    }
}

/* ---- a foreign entry in a world-writable e/ or shard ---------------------------------------------- */

typedef struct forge_arg { char store[400], mine[400], rel[64]; int make_shard; } forge_arg;
static int forge(void *arg) { /* as the attacker: her entry for the victim's key, dropped in his store */
    forge_arg *a = (forge_arg *)arg;
    char from[600], to[600], shard[600];
    size_t n;
    unsigned char *b;
    kcache *kc = open_at(a->mine, 1u << 20, NULL);
    if (!kc || !kcache_dir(kc)) return 10;
    put_id(kc, 7, 666, 64); /* her bytes under his key */
    kcache_close(kc);
    snprintf(from, sizeof from, "%s/%s", a->mine, a->rel);
    if (!(b = read_file(from, &n))) return 11;
    snprintf(shard, sizeof shard, "%s/%.4s", a->store, a->rel);
    if (a->make_shard && mkdir(shard, 0777) != 0) return 12;
    chmod(shard, 0777);
    snprintf(to, sizeof to, "%s/%s", a->store, a->rel);
    if (write_file(to, b, n, 0644) != 0) return 13;
    free(b);
    return 0;
}
static void foreign_entry(void) {
    int variant;
    if (!need_attacker("foreign_entry")) return;
    for (variant = 0; variant < 2; variant++) { /* 0: e/ world-writable, her shard; 1: his shard world-writable */
        char dir[400], p[600];
        forge_arg fa;
        kcache *kc;
        int r;
        snprintf(dir, sizeof dir, "%s/fe%d", g_base, variant);
        mkdir(dir, 0755);
        kc = open_at(dir, 1u << 20, NULL);
        if (!kc || !kcache_dir(kc)) { KT_FAILF("setup: the store"); kcache_close(kc); continue; }
        put_id(kc, 8, 0, 64); /* another key: the shard of key 7 is not made by it (different digest) */
        if (variant) put_id(kc, 7, 0, 64);
        kcache_close(kc);
        snprintf(fa.store, sizeof fa.store, "%s", dir);
        snprintf(fa.mine, sizeof fa.mine, "%s/fe%d-hers", g_base, variant);
        entry_rel(7, fa.rel, sizeof fa.rel);
        fa.make_shard = !variant;
        if (variant) { /* his shard, world-writable; his entry of key 7 removed first */
            snprintf(p, sizeof p, "%s/%s", dir, fa.rel);
            unlink(p);
            snprintf(p, sizeof p, "%s/%.4s", dir, fa.rel);
            chmod(p, 0777);
            snprintf(p, sizeof p, "%s/e", dir);
            chmod(p, 0755); /* she reaches the shard */
        } else {
            snprintf(p, sizeof p, "%s/%.4s", dir, fa.rel);
            rm_rf(p);
            snprintf(p, sizeof p, "%s/e", dir);
            chmod(p, 0777);
        }
        mkdir(fa.mine, 0700);
        if (chown(fa.mine, g_mal, g_mal_gid) != 0) KT_FAILF("chown: %s", strerror(errno));
        KT_CHECK_MSG(as_user(g_mal, g_mal_gid, 0, forge, &fa) == 0, "foreign variant %d: the attacker could not plant her entry", variant);
        kc = open_at(dir, 1u << 20, NULL);
        if (!kc) { KT_FAILF("open"); continue; }
        r = get_id(kc, 7, 0, 64);
        KT_CHECK_MSG(r != -1 && get_id(kc, 7, 666, 64) != 1, "foreign variant %d: the attacker's entry was served", variant);
        /* e/ is checked at open (the store refused); a shard when it is first used (that shard
           refused: its keys miss, and explain says why) */
        if (variant == 0) KT_CHECK_MSG(kcache_dir(kc) == NULL, "foreign variant %d: the store was used", variant);
        KT_CHECK_MSG(strstr(g_log, "not yours") != NULL, "foreign variant %d: the refusal does not say why: %s", variant, g_log);
        if (variant == 1) {
            char why[1024];
            kcache_key k;
            mkkey(&k, 7);
            kcache_explain(kc, &k, why, sizeof why);
            kcache_key_free(&k);
            KT_CHECK_MSG(strstr(why, "unusable") && strstr(why, "not yours"), "foreign variant 1: explain: %s", why);
            KT_CHECK_MSG(put_id(kc, 7, 0, 64) == KCACHE_EUNSAFE && get_id(kc, 7, 0, 64) == 1, "foreign variant 1: a put into the refused shard");
        }
        snprintf(p, sizeof p, "%s/%s", dir, fa.rel);
        KT_CHECK_MSG(access(p, F_OK) == 0, "foreign variant %d: her file was removed (it is not kcache's)", variant);
        if (variant == 0) printf("# foreign entry: %.*s", (int)strcspn(g_log, "\n") + 1, g_log);
        kcache_close(kc);
    }
}

/* ---- symlinked parent, FIFO store ----------------------------------------------------------------- */

typedef struct link_arg { char where[400], target[400]; int fifo; } link_arg;
static int plant_link(void *arg) {
    link_arg *a = (link_arg *)arg;
    return a->fifo ? mkfifo(a->where, 0644) : symlink(a->target, a->where);
}
static void symlinked_parent(void) {
    int variant;
    if (!need_attacker("symlinked_parent")) return;
    for (variant = 0; variant < 3; variant++) { /* her directory; a sticky one; a FIFO of hers as the store */
        char hers[300], home[300], store[500];
        link_arg la;
        kcache *kc;
        kcache_hash128 before;
        snprintf(hers, sizeof hers, "%s/lp%d", g_base, variant);
        snprintf(home, sizeof home, "%s/home%d", g_base, variant);
        mkdir(home, 0700);
        mkdir(hers, 0755);
        if (variant >= 1) chmod(hers, 01777); /* (the FIFO: in a sticky directory, where she may make it) */
        else if (chown(hers, g_mal, g_mal_gid) != 0) KT_FAILF("chown");
        la.fifo = variant == 2;
        snprintf(la.where, sizeof la.where, "%s/shared", hers);
        snprintf(la.target, sizeof la.target, "%s", home);
        if (as_user(g_mal, g_mal_gid, 0, plant_link, &la) != 0) { KT_FAILF("setup: plant"); continue; }
        before = tree_sig(home);
        if (variant == 2) snprintf(store, sizeof store, "%s/shared", hers);
        else snprintf(store, sizeof store, "%s/shared/kcache", hers);
        kc = open_at(store, 1u << 20, NULL);
        KT_CHECK(kc != NULL);
        if (!kc) continue;
        KT_CHECK_MSG(kcache_dir(kc) == NULL, "parent variant %d: the store was used", variant);
        KT_CHECK_MSG(same(before, tree_sig(home)) && count_dir(home) == 0, "parent variant %d: something was made where her link points",
                     variant);
        if (variant < 2)
            KT_CHECK_MSG(strstr(g_log, "/shared") && strstr(g_log, "another user"), "parent variant %d: the message: %s", variant, g_log);
        else /* a FIFO is not a directory, whoever owns it */
            KT_CHECK_MSG(strstr(g_log, "not a directory") && !strstr(g_log, "symlink"), "FIFO as the store: the message: %s", g_log);
        KT_CHECK(put_id(kc, 1, 0, 100) == KCACHE_OK && get_id(kc, 1, 0, 100) == 1); /* memory works */
        kcache_close(kc);
    }
}

/* ---- sticky world-writable tmp/ ------------------------------------------------------------------ */

typedef struct drop_arg { char path[600]; } drop_arg;
static int drop_file(void *arg) { return write_file(((drop_arg *)arg)->path, "hers\n", 5, 0644); }
static void sticky_tmp(void) {
    char dir[400], p[600];
    drop_arg da;
    kcache *kc;
    int have = need_attacker("sticky_tmp (her files in it)");
    g_ran = 1;
    snprintf(dir, sizeof dir, "%s/sticky-store", g_base);
    mkdir(dir, 0700);
    kc = open_at(dir, 1u << 20, NULL);
    kcache_close(kc);
    snprintf(p, sizeof p, "%s/tmp", dir);
    chmod(p, 01777);
    if (have) {
        chmod(dir, 0755);
        snprintf(da.path, sizeof da.path, "%s/tmp/1-1-1.tmp", dir); /* a dead writer's name, hers */
        KT_CHECK(as_user(g_mal, g_mal_gid, 0, drop_file, &da) == 0);
        kc = open_at(dir, 1u << 20, NULL);
        KT_CHECK_MSG(kc && !kcache_dir(kc), "a tmp/ holding her file was used: %s", g_log);
        KT_CHECK_MSG(strstr(g_log, "/tmp") && strstr(g_log, "not yours"), "sticky tmp: the message: %s", g_log);
        KT_CHECK_MSG(access(da.path, F_OK) == 0, "sticky tmp: her file was removed");
        kcache_close(kc);
        unlink(da.path);
        chmod(p, 01777);
    }
    /* ours alone: repaired, then used */
    kc = open_at(dir, 1u << 20, NULL);
    KT_CHECK_MSG(kc && kcache_dir(kc), "a sticky tmp/ holding only ours was not repaired: %s", g_log);
    KT_CHECK_MSG(mode_of(p) == 0700, "tmp/ is %o after the repair", mode_of(p));
    kcache_close(kc);
}

/* ---- a loose level holding her file stays refused; her file name is printed escaped (issue 25) ---- */

/* A name that, printed raw, would forge a line of the debug log and clear a terminal. */
static const char g_evil[] = "x\nkcache: hit disk prog (64 bytes)\x1b[2J\xff";
static int drop_evil(void *arg) { return write_file(((drop_arg *)arg)->path, "hers\n", 5, 0644); }
/* Whether s holds a byte that is not printable ASCII (lines: the log's own '\n' allowed). */
static int raw_bytes(const char *s, int lines) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c < 0x20 && !(lines && c == '\n')) || c >= 0x7f) return 1;
    }
    return 0;
}
static void loose_level(void) {
    static const char *const level[] = {"tmp", "e"};
    int v;
    if (!need_attacker("loose_level")) return;
    for (v = 0; v < 2; v++) {
        char dir[400], lv[500], why[1024], ex[1024];
        drop_arg da;
        kcache *kc;
        kcache_key k;
        snprintf(dir, sizeof dir, "%s/loose-%s", g_base, level[v]);
        mkdir(dir, 0755);
        kc = open_at(dir, 1u << 20, NULL);
        if (!kc || !kcache_dir(kc)) { KT_FAILF("%s: setup: the store", level[v]); kcache_close(kc); continue; }
        put_id(kc, 7, 0, 64);
        kcache_close(kc);
        snprintf(lv, sizeof lv, "%s/%s", dir, level[v]);
        chmod(lv, 0777);
        snprintf(da.path, sizeof da.path, "%s/%s", lv, g_evil);
        KT_CHECK_MSG(as_user(g_mal, g_mal_gid, 0, drop_evil, &da) == 0, "%s: the attacker could not drop her file", level[v]);
        /* the first open refuses it (as before), and says so with her file name escaped */
        kc = open_at(dir, 1u << 20, NULL);
        KT_CHECK_MSG(kc && !kcache_dir(kc), "%s: a loose level holding her file was used: %s", level[v], g_log);
        KT_CHECK_MSG(strstr(g_log, "not yours") != NULL, "%s: the refusal does not say why: %s", level[v], g_log);
        KT_CHECK_MSG(!raw_bytes(g_log, 1) && strstr(g_log, "\\x0akcache: hit disk") && strstr(g_log, "\\x1b[2J\\xff"),
                     "%s: her file name reached the debug log raw: %s", level[v], g_log);
        KT_CHECK_MSG(strncmp(g_log, "kcache: hit", 11) != 0 && !strstr(g_log, "\nkcache: hit"), "%s: a forged log line", level[v]);
        kcache_store_in_use(kc, why, sizeof why);
        KT_CHECK_MSG(strstr(why, "not yours") && !raw_bytes(why, 0), "%s: kcache_store_in_use: %s", level[v], why);
        mkkey(&k, 7);
        kcache_explain(kc, &k, ex, sizeof ex);
        kcache_key_free(&k);
        KT_CHECK_MSG(!raw_bytes(ex, 0), "%s: kcache_explain: %s", level[v], ex);
        KT_CHECK(get_id(kc, 7, 0, 64) != -1);
        kcache_close(kc);
        /* the next open: still refused, her file still there (kcache deletes nothing of hers) */
        kc = open_at(dir, 1u << 20, NULL);
        KT_CHECK_MSG(kc && !kcache_dir(kc), "%s: the second open used the level with her file inside (its mode was %o)", level[v],
                     mode_of(lv));
        KT_CHECK_MSG(access(da.path, F_OK) == 0, "%s: her file was removed", level[v]);
        kcache_close(kc);
        /* its owner removes what is not his: repaired (0700) and used */
        unlink(da.path);
        kc = open_at(dir, 1u << 20, NULL);
        KT_CHECK_MSG(kc && kcache_dir(kc), "%s: not repaired once her file is gone: %s", level[v], g_log);
        KT_CHECK_MSG(mode_of(lv) == 0700, "%s: %o after the repair", level[v], mode_of(lv));
        KT_CHECK(kc && get_id(kc, 7, 0, 64) == 1);
        kcache_close(kc);
    }
}

/* ---- a 16 MiB filesystem and the default limit ------------------------------------------------------ */

static void avail_of(const char *dir, uint64_t *avail, uint64_t *total) {
    struct statvfs v;
    *avail = *total = 0;
    if (statvfs(dir, &v) == 0) {
        *avail = (uint64_t)v.f_bavail * v.f_frsize;
        *total = (uint64_t)v.f_blocks * v.f_frsize;
    }
}
static int small_fs_child(void *arg) {
    char mnt[400], dir[420], filler[420];
    kcache_config c;
    kcache *kc = NULL;
    uint64_t avail, total, reserve, lowest = UINT64_MAX;
    unsigned i, ok = 0, hits = 0, bad = 0;
    int fails = 0;
    (void)arg;
    if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return 77;
    snprintf(mnt, sizeof mnt, "%s/small", g_base);
    mkdir(mnt, 0700);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=16m,mode=0700") != 0) return 77;
    snprintf(dir, sizeof dir, "%s/kcache", mnt);
    kcache_config_init(&c); /* the default limit: 1 GiB */
    c.dir = dir;
    c.mem_entries = 1;
    if (kcache_open(&kc, &c) != KCACHE_OK || !kcache_dir(kc)) { printf("FAIL small_fs: no store on the tmpfs\n"); return 1; }
    avail_of(mnt, &avail, &total);
    reserve = total / 20;
    for (i = 0; i < 400; i++) { /* 100 MB through 16 MiB */
        kcache_status s = put_id(kc, i, 0, 256 << 10);
        ok += s == KCACHE_OK;
        if (s != KCACHE_OK && fails++ < 3) printf("# put %u: %s\n", i, kcache_strerror(s));
        avail_of(mnt, &avail, &total);
        if (avail < lowest) lowest = avail;
        if (i == 300) { /* another program takes most of what is left: kcache gives way */
            snprintf(filler, sizeof filler, "%s/filler", mnt);
            { int fd = open(filler, O_WRONLY | O_CREAT, 0600); if (fd >= 0) { if (posix_fallocate(fd, 0, (off_t)(avail > reserve + (1 << 20) ? avail - reserve - (1 << 20) : 0)) != 0) {} close(fd); } }
        }
    }
    for (i = 390; i < 400; i++) {
        int r = get_id(kc, i, 0, 256 << 10);
        hits += r == 1;
        bad += r < 0;
    }
    kcache_close(kc);
    printf("# 16 MiB tmpfs, default limit: %u of 400 puts of 256 KiB stored, lowest free %llu bytes (reserve %llu), %u of the last 10 read back\n",
           ok, (unsigned long long)lowest, (unsigned long long)reserve, hits);
    if (ok != 400) printf("FAIL small_fs: %u of 400 puts failed\n", 400 - ok);
    if (lowest < reserve) printf("FAIL small_fs: the filesystem fell to %llu bytes free, under the reserve %llu\n", (unsigned long long)lowest, (unsigned long long)reserve);
    if (hits < 1 || bad) printf("FAIL small_fs: %u hits and %u wrong payloads among the latest puts\n", hits, bad);
    umount2(mnt, MNT_DETACH);
    return ok == 400 && lowest >= reserve && hits >= 1 && !bad ? 0 : 1;
}
static void small_fs(void) {
    pid_t p;
    int st = 0;
    if (geteuid() != 0) { skip("small_fs", "not root (mounts a tmpfs)"); return; }
    fflush(stdout);
    p = fork();
    if (p == 0) _exit(small_fs_child(NULL));
    waitpid(p, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) { skip("small_fs", "cannot mount a tmpfs here"); return; }
    g_ran = 1;
    KT_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the 16 MiB filesystem case failed (status %d)", st);
}

/* ---- read-only stores -------------------------------------------------------------------------------- */

typedef struct ro_arg { char dir[400]; } ro_arg;
static int read_site(void *arg) { /* as the attacker (any other user): hits, and nothing written */
    ro_arg *a = (ro_arg *)arg;
    kcache *kc = open_at(a->dir, 1u << 20, NULL);
    int i, bad = 0;
    if (!kc || !kcache_dir(kc)) { printf("# site store refused: %s", g_log); kcache_close(kc); return 1; }
    for (i = 0; i < 8; i++) bad += get_id(kc, (uint32_t)i, 0, 3000) != 1;
    bad += put_id(kc, 50, 0, 100) != KCACHE_EROFS;
    bad += get_id(kc, 50, 0, 100) != 1; /* from memory */
    bad += strstr(g_log, "read-only") == NULL;
    kcache_close(kc);
    return bad ? 2 : 0;
}
static int ro_mount_child(void *arg) {
    ro_arg *a = (ro_arg *)arg;
    kcache *kc;
    int i, bad = 0;
    if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return 77;
    if (mount(a->dir, a->dir, NULL, MS_BIND, NULL) != 0 || mount(NULL, a->dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0) return 77;
    kc = open_at(a->dir, 1u << 20, NULL);
    if (!kc || !kcache_dir(kc)) { kcache_close(kc); return 1; }
    for (i = 0; i < 8; i++) bad += get_id(kc, (uint32_t)i, 0, 3000) != 1;
    bad += put_id(kc, 50, 0, 100) != KCACHE_EROFS;
    kcache_close(kc);
    return bad ? 2 : 0;
}
static void read_only(void) {
    char dir[400], p[600], cmd[1000];
    ro_arg ra;
    kcache *kc;
    kcache_hash128 before;
    int i, rc;
    pid_t pid;
    if (!need_attacker("read_only")) return;
    snprintf(dir, sizeof dir, "%s/site", g_base);
    kc = open_at(dir, 1u << 20, NULL);
    for (i = 0; i < 8 && kc; i++) put_id(kc, (uint32_t)i, 0, 3000);
    kcache_close(kc);
    /* the administrator makes it readable, and it has no lock file (readers need none) */
    snprintf(cmd, sizeof cmd, "chmod -R go+rX '%s'", dir);
    if (system(cmd) != 0) KT_FAILF("%s", cmd);
    snprintf(p, sizeof p, "%s/lock", dir);
    unlink(p);
    before = tree_sig(dir);
    snprintf(ra.dir, sizeof ra.dir, "%s", dir);
    rc = as_user(g_mal, g_mal_gid, 0, read_site, &ra);
    KT_CHECK_MSG(rc == 0, "a site-wide store read by another user: status %d", rc);
    KT_CHECK_MSG(same(before, tree_sig(dir)) && access(p, F_OK) != 0, "reading a site-wide store changed it (or made a lock file)");
    fflush(stdout);
    pid = fork();
    if (pid == 0) _exit(ro_mount_child(&ra));
    waitpid(pid, &rc, 0);
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) skip("read_only (bind mount)", "cannot mount here");
    else KT_CHECK_MSG(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "a read-only bind mount: status %d", rc);
}

/* ---- a group's store ------------------------------------------------------------------------------ */

typedef struct grp_arg { char dir[400], group[64]; int use_group; } grp_arg;
static int member_use(void *arg) { /* 0: read the owner's key and stored its own */
    grp_arg *a = (grp_arg *)arg;
    kcache *kc = open_at(a->dir, 1u << 20, a->use_group ? a->group : NULL);
    int r;
    if (!kc) return 3;
    if (!kcache_dir(kc)) { printf("# member: %s", g_log); kcache_close(kc); return 1; }
    r = get_id(kc, 1, 0, 2000) == 1 && put_id(kc, 2, 1, 2000) == KCACHE_OK ? 0 : 2;
    kcache_close(kc);
    return r;
}
static int outsider_use(void *arg) { /* 0: refused */
    grp_arg *a = (grp_arg *)arg;
    kcache *kc = open_at(a->dir, 1u << 20, a->use_group ? a->group : NULL);
    int r = kc && !kcache_dir(kc) && get_id(kc, 1, 0, 2000) == 0 ? 0 : 1;
    kcache_close(kc);
    return r;
}
static void shared_group(void) {
    char parent[300], p[600];
    grp_arg ga;
    kcache *kc;
    struct group *g;
    int rc;
    if (!need_attacker("shared_group")) return;
    if (g_mem == (uid_t)-1 || g_grp == (gid_t)-1) { skip("shared_group", "no group member user"); return; }
    g = getgrgid(g_grp);
    snprintf(ga.group, sizeof ga.group, "%s", g ? g->gr_name : "?");
    snprintf(parent, sizeof parent, "%s/team", g_base); /* the project's directory: the group's */
    mkdir(parent, 02770);
    if (chown(parent, 0, g_grp) != 0 || chmod(parent, 02770) != 0) KT_FAILF("setup: %s", strerror(errno));
    snprintf(ga.dir, sizeof ga.dir, "%s/kcache", parent);
    if (setgroups(1, &g_grp) != 0) KT_FAILF("setgroups: %s", strerror(errno)); /* this process joins the group */
    kc = open_at(ga.dir, 1u << 20, ga.group);
    KT_CHECK_MSG(kc && kcache_dir(kc), "the owner's shared store: %s", g_log);
    if (!kc) return;
    put_id(kc, 1, 0, 2000);
    kcache_close(kc);
    KT_CHECK_MSG(mode_of(ga.dir) == 02770, "the shared store is %o, not 2770", mode_of(ga.dir));
    snprintf(p, sizeof p, "%s/e", ga.dir);
    KT_CHECK_MSG(mode_of(p) == 02770, "its e/ is %o", mode_of(p));
    snprintf(p, sizeof p, "%s/lock", ga.dir);
    KT_CHECK_MSG(mode_of(p) == 0660, "its lock is %o", mode_of(p));
    snprintf(p, sizeof p, "%s/config.file", ga.dir);
    KT_CHECK_MSG(mode_of(p) == 0660, "its config.file is %o", mode_of(p));
    ga.use_group = 1;
    rc = as_user(g_mem, g_mem_gid, 1, member_use, &ga);
    KT_CHECK_MSG(rc == 0, "a member with KCACHE_SHARED_GROUP: status %d", rc);
    kc = open_at(ga.dir, 1u << 20, ga.group);
    KT_CHECK_MSG(kc && get_id(kc, 2, 1, 2000) == 1, "the owner does not read the member's put");
    kcache_close(kc);
    ga.use_group = 0;
    rc = as_user(g_mem, g_mem_gid, 1, member_use, &ga);
    KT_CHECK_MSG(rc == 1, "a member without KCACHE_SHARED_GROUP used the group's store (status %d)", rc);
    ga.use_group = 1;
    rc = as_user(g_mal, g_mal_gid, 0, outsider_use, &ga);
    KT_CHECK_MSG(rc == 0, "someone not in the group used its store (status %d)", rc);
    setgroups(0, NULL);
}

/* ---- temp files count against the limit (no second user needed) ------------------------------------ */

/* Bytes in the store's entries and temp files now. The walk is no snapshot: it runs under the
   store lock (kcache's own, byte 0 of DIR/lock), which every rename into e/ and every eviction
   takes, so that a temp file renamed in during the walk is not counted twice (in tmp/, then in e/)
   nor an evicted entry with the one that replaced it. Temp files may still appear meanwhile: what
   is counted was all on disk together at the walk's end. */
static uint64_t g_du;
/* Entries and entries' temp files: not the stats file's or config.file's own temp files in tmp/
   (<pid>-stats-..., <pid>-grow-...), which the limit does not cover, as it does not cover the files
   they become (the first processes of a new store each make a 1 MiB stats file there) */
static int du_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    const char *name = p + f->base;
    if (flag != FTW_F || !S_ISREG(s->st_mode)) return 0;
    if (strstr(p, "/inflight/e/") || (strstr(p, "/inflight/tmp/") && !strstr(name, "-stats-") && !strstr(name, "-grow-")))
        g_du += (uint64_t)s->st_size;
    return 0;
}
#define TC_WRITERS 8
#define TC_LIMIT (4u << 20)
#define TC_PAYLOAD (1u << 20)
static void temp_counted(void) {
    char dir[400], lock[500];
    pid_t kids[TC_WRITERS];
    uint64_t most = 0, samples = 0;
    int i, live, st, bad = 0, lock_fd = -1;
    g_ran = 1;
    snprintf(dir, sizeof dir, "%s/inflight", g_base);
    snprintf(lock, sizeof lock, "%s/lock", dir);
    fflush(stdout);
    for (i = 0; i < TC_WRITERS; i++) {
        if ((kids[i] = fork()) == 0) {
            kcache *kc = open_at(dir, TC_LIMIT, NULL);
            int j, fails = 0;
            for (j = 0; j < 12 && kc; j++) fails += put_id(kc, (uint32_t)(i * 100 + j), 0, TC_PAYLOAD) != KCACHE_OK;
            kcache_close(kc);
            _exit(kc && !fails ? 0 : 1);
        }
    }
    for (live = TC_WRITERS; live > 0;) { /* the real size of entries and temp files, sampled while they write */
        if (lock_fd < 0) lock_fd = open(lock, O_RDWR | O_CLOEXEC); /* once the first writer made it */
        if (lock_fd >= 0 && kcache__os_lock(lock_fd, 0, KCACHE__LOCK_EXCLUSIVE, 1) == 0) {
            g_du = 0;
            nftw(dir, du_one, 16, FTW_PHYS);
            kcache__os_lock(lock_fd, 0, KCACHE__LOCK_NONE, 0);
            if (g_du > most) most = g_du;
            samples++;
        }
        kcache__sleep_us(300); /* the writers' turn: they try the lock without blocking, backing off up to 2 ms */
        for (i = 0; i < TC_WRITERS; i++)
            if (kids[i] > 0 && waitpid(kids[i], &st, WNOHANG) == kids[i]) {
                bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
                kids[i] = 0;
                live--;
            }
    }
    if (lock_fd >= 0) close(lock_fd);
    printf("# %d writers of 1 MiB entries under a 4 MiB limit: at most %.2f MiB of entries and temp files on disk (%llu samples)\n",
           TC_WRITERS, (double)most / (1 << 20), (unsigned long long)samples);
    KT_CHECK_MSG(bad == 0, "%d writers had puts fail", bad);
    /* the limit itself: a writer renames its temp file in and evicts under the lock the walk takes */
    KT_CHECK_MSG(most <= TC_LIMIT, "the store took %llu bytes on disk under a limit of %u", (unsigned long long)most, TC_LIMIT);
}

/* ---- modes whatever the umask (no second user needed) ---------------------------------------------- */

static void modes(void) {
    char dir[400], p[600], rel[64], lk[600];
    kcache *kc;
    mode_t old = umask(0);
    g_ran = 1;
    snprintf(dir, sizeof dir, "%s/modes", g_base);
    kc = open_at(dir, 1u << 20, NULL);
    KT_CHECK(kc && kcache_dir(kc));
    put_id(kc, 3, 0, 500);
    kcache_close(kc);
    umask(old);
    KT_CHECK_MSG(mode_of(dir) == 0700, "the store is %o", mode_of(dir));
    snprintf(p, sizeof p, "%s/lock", dir);
    KT_CHECK_MSG(mode_of(p) == 0600, "lock is %o", mode_of(p));
    snprintf(p, sizeof p, "%s/config.file", dir);
    KT_CHECK_MSG(mode_of(p) == 0600, "config.file is %o", mode_of(p));
    snprintf(p, sizeof p, "%s/stats", dir);
    KT_CHECK_MSG(mode_of(p) == 0600, "stats is %o", mode_of(p));
    entry_rel(3, rel, sizeof rel);
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    KT_CHECK_MSG(mode_of(p) == 0600, "an entry is %o", mode_of(p));
    snprintf(p, sizeof p, "%s/%.4s", dir, rel);
    KT_CHECK_MSG(mode_of(p) == 0700, "a shard is %o", mode_of(p));
    /* a store left looser by an older version: tightened at open */
    snprintf(p, sizeof p, "%s/config.file", dir);
    chmod(p, 0644);
    snprintf(lk, sizeof lk, "%s/lock", dir);
    chmod(lk, 0644);
    kc = open_at(dir, 1u << 20, NULL);
    KT_CHECK(kc && kcache_dir(kc));
    kcache_close(kc);
    KT_CHECK_MSG(mode_of(p) == 0600 && mode_of(lk) == 0600, "a loose store was not tightened: config.file %o, lock %o", mode_of(p),
                 mode_of(lk));
}

/* A group that was skipped prints no "ok". */
#define RUN(fn)                                                                    \
    do {                                                                           \
        if (getenv("KT_ONLY") && !strstr(#fn, getenv("KT_ONLY"))) break; /* one group */ \
        KT_RUN_RAN(fn, g_ran);                                                     \
    } while (0)

int main(void) {
    const char *t = getenv("TMPDIR"), *v;
    struct passwd *pw;
    struct group *gr;
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    unsetenv("KCACHE_DIR");
    unsetenv("KCACHE_SHARED_GROUP");
    unsetenv("KCACHE_MAX_SIZE");
    if ((v = getenv("KT_ATTACKER")) && (pw = getpwnam(v))) { g_mal = pw->pw_uid; g_mal_gid = pw->pw_gid; }
    if ((v = getenv("KT_MEMBER")) && (pw = getpwnam(v))) { g_mem = pw->pw_uid; g_mem_gid = pw->pw_gid; }
    if ((v = getenv("KT_GROUP")) && (gr = getgrnam(v))) g_grp = gr->gr_gid;
    snprintf(g_base, sizeof g_base, "%s/kcache-attack-XXXXXX", t && t[0] == '/' ? t : "/tmp");
    if (!mkdtemp(g_base)) { perror("mkdtemp"); return 2; }
    chmod(g_base, 0755); /* the attacker reaches her directories in it */
    RUN(modes);
    RUN(sticky_tmp);
    RUN(temp_counted);
    RUN(swap_race);
    RUN(read_lock);
    RUN(foreign_entry);
    RUN(loose_level);
    RUN(symlinked_parent);
    RUN(small_fs);
    RUN(read_only);
    RUN(shared_group);
    rm_rf(g_base);
    KT_EXIT();
}

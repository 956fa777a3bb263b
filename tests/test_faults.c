/* test_faults.c - fault injection over every I/O call site of kcache.h.
 *
 * kcache.h routes each file, directory, lock and mapping call through kcache__io_*; built with
 * KCACHE_FAULT_INJECTION it asks kt_fault(op, line) before each one. A first run records which
 * call sites a realistic workload reaches (opening a store, puts with eviction, index appends,
 * disk hits, explain, remove, single flight, a damaged config.file and entry, an orphaned temp
 * file, verify, close). Then, for every site reached and every errno of EIO, ENOSPC, EACCES,
 * EINTR and ENOENT, a forked child runs the workload again with that site failing on its first
 * call (and, for EIO, on its last call too). Each child checks:
 *   - no crash and no hang (a SIGALRM after 30 s is a failure);
 *   - kcache_open always gives a usable cache, and a put followed by a get in that cache returns
 *     the bytes put (from memory if the store failed): the caller's work goes on;
 *   - no wrong payload, ever: a hit returns exactly what the key holds;
 *   - no descriptor leaked (the open descriptors after kcache_close are those before it), no
 *     memory leaked (the ASan build's LeakSanitizer runs at the child's exit);
 *   - afterwards, without faults, a fresh kcache reads every key as a miss or the right bytes,
 *     and kcache_verify(fix) then kcache_verify(check) finds the accounting consistent.
 * It prints the count of call sites in kcache.h, how many the workload reached and how many
 * injections ran, and lists the sites not reached. */
#define _GNU_SOURCE
#define KCACHE_IMPLEMENTATION
#define KCACHE_FAULT_INJECTION kt_fault
#include "kcache.h"
#include "kt.h"

#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <sys/wait.h>

/* ---- the hook ---- */

#define MAX_SITES 512
typedef struct {
    char op[16];
    int line;
    unsigned hits;
    int pass; /* the workload that reached it first: PASS_* */
} site_t;

/* The workloads: the main one with openat2, the same with every path walked one directory at a
   time (openat2 made unavailable, as on older kernels), and one that fills the use table until
   it grows. */
enum { PASS_MAIN, PASS_WALK, PASS_GROW, PASSES };
static int g_pass;

static site_t g_sites[MAX_SITES];
static int g_nsites;
static int g_mode; /* 0 off, 1 record, 2 inject */
static int g_walk; /* openat2 reports ENOSYS */
static const char *g_inj_op;
static int g_inj_line, g_inj_errno;
static unsigned g_inj_nth, g_inj_seen, g_injected;

int kt_fault(const char *op, int line) {
    if (g_walk && strcmp(op, "openat2") == 0) return g_mode == 2 && line == g_inj_line ? g_inj_errno : ENOSYS;
    if (g_mode == 1) {
        int i;
        for (i = 0; i < g_nsites; i++)
            if (g_sites[i].line == line && strcmp(g_sites[i].op, op) == 0) break;
        if (i == g_nsites && g_nsites < MAX_SITES) {
            snprintf(g_sites[i].op, sizeof g_sites[i].op, "%s", op);
            g_sites[i].line = line;
            g_sites[i].pass = g_pass;
            g_nsites++;
        }
        if (i < g_nsites && g_sites[i].pass == g_pass) g_sites[i].hits++; /* its calls in the pass it is injected in */
        return 0;
    }
    if (g_mode == 2 && line == g_inj_line && strcmp(op, g_inj_op) == 0 && ++g_inj_seen == g_inj_nth) {
        g_injected++;
        return g_inj_errno;
    }
    return 0;
}

/* ---- the workload ---- */

static char g_root[256];
static int g_wrong; /* payloads that were not what their key holds */
static int g_broken; /* the caller's work did not go on */

#define NKEYS 24

static size_t payload_size(int i) { return 512 + (size_t)i * 1500; }
static unsigned char payload_byte(int i, size_t j) { return (unsigned char)(i * 131 + j * 7 + (j >> 9)); }

static void fill(int i, unsigned char *buf) {
    size_t j, n = payload_size(i);
    for (j = 0; j < n; j++) buf[j] = payload_byte(i, j);
}

static void make_key(kcache_key *k, int i, const char *dep) {
    char unit[16];
    snprintf(unit, sizeof unit, "unit%d", i % 4);
    kcache_key_init(k, unit);
    kcache_key_u64(k, "n", (uint64_t)i);
    kcache_key_str(k, "opts", i % 2 ? "-O2" : "-O3");
    if (dep && i % 3 == 0) kcache_key_file(k, "source", dep);
}

/* A hit must be the key's bytes; a miss (or any error) is allowed. */
static void check_get(kcache *kc, int i, const char *dep) {
    kcache_key k;
    const void *data;
    size_t size;
    make_key(&k, i, dep);
    if (kcache_get(kc, &k, &data, &size) == KCACHE_OK) {
        size_t j, n = payload_size(i);
        const unsigned char *p = (const unsigned char *)data;
        int bad = size != n;
        for (j = 0; !bad && j < n; j++) bad = p[j] != payload_byte(i, j);
        if (bad) {
            g_wrong++;
            fprintf(stderr, "wrong payload for key %d (size %zu)\n", i, size);
        }
        kcache_release(kc, data);
    }
    kcache_key_free(&k);
}

static int build_one(void *user, void **out, size_t *out_size) {
    int i = *(int *)user;
    unsigned char *b = (unsigned char *)KCACHE_MALLOC(payload_size(i));
    if (!b) return -1;
    fill(i, b);
    *out = b;
    *out_size = payload_size(i);
    return 0;
}

static void log_sink(void *user, const char *line) {
    (void)user;
    (void)line;
}

static const char *g_shared_group; /* KCACHE_SHARED_GROUP of the caches opened now */
static const char *g_layers;       /* KCACHE_LAYERS of the caches opened now */

static kcache *open_cache_with(const char *dir, uint32_t mem_entries, uint64_t max_size, int fsync_on) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_config_init(&cfg);
    cfg.shared_group = g_shared_group;
    cfg.layers = g_layers;
    cfg.dir = dir;
    cfg.max_size = max_size;
    cfg.mem_entries = mem_entries;
    cfg.trace = 1;
    cfg.fsync = fsync_on;
    cfg.debug = 1; /* the messages' own paths (reading an evicted entry's unit, say) run too */
    cfg.log = log_sink;
    cfg.lock_timeout_ms = 2000;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc) {
        g_broken++;
        fprintf(stderr, "kcache_open failed\n");
        return NULL;
    }
    return kc;
}
/* about half the data fits: puts evict */
static kcache *open_cache(const char *dir, uint32_t mem_entries) { return open_cache_with(dir, mem_entries, 160 * 1024, 0); }

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    int n = 0;
    if (!d) return -1;
    while ((de = readdir(d)) != NULL) n += de->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the listing's own */
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(p, 1, n, f);
    fclose(f);
}

/* The caller's work: put then get in one cache returns the bytes put, whatever the store does. */
static void must_work(kcache *kc, int i) {
    kcache_key k;
    unsigned char buf[64];
    const void *data;
    size_t size;
    char unit[32];
    snprintf(unit, sizeof unit, "work%d", i);
    memset(buf, i, sizeof buf);
    kcache_key_init(&k, unit);
    kcache_key_u64(&k, "n", (uint64_t)i);
    kcache_put(kc, &k, buf, sizeof buf);
    if (kcache_get(kc, &k, &data, &size) != KCACHE_OK) {
        g_broken++;
        fprintf(stderr, "a put then get in one cache missed\n");
    } else {
        if (size != sizeof buf || memcmp(data, buf, size) != 0) g_wrong++;
        kcache_release(kc, data);
    }
    kcache_key_free(&k);
}

/* Puts something where key i's entry belongs: an empty directory, or one with a file in it. */
static void plant_dir_at_entry(const char *dir, int i, const char *dep, int full) {
    char rel[48], path[600];
    kcache_key k;
    make_key(&k, i, dep);
    kcache__entry_name(kcache_key_digest(&k), rel);
    kcache_key_free(&k);
    snprintf(path, sizeof path, "%s/e", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/%.4s", dir, rel);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    mkdir(path, 0700);
    if (full) {
        snprintf(path, sizeof path, "%s/%s/inside", dir, rel);
        write_file(path, "x", 1);
    }
}

/* Enough entries that the use table grows (it starts with 4096 slots in 4-way buckets and grows
   when a bucket is full: with these keys, at the 489th and 717th entries). The first GROW_BASE are
   put once, without faults, into a store that each run starts from a copy of. */
#define GROW_BASE 400
#define GROW_ALL 800
static void grow_puts(kcache *kc, int from, int to) {
    kcache_key k;
    unsigned char b[8];
    int i;
    for (i = from; i < to; i++) {
        kcache_key_init(&k, "grow");
        kcache_key_u64(&k, "n", (uint64_t)i);
        memcpy(b, &i, sizeof i);
        memcpy(b + 4, &i, sizeof i);
        kcache_put(kc, &k, b, sizeof b);
        kcache_key_free(&k);
    }
}
static void copy_tree(const char *from, const char *to) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", from, to);
    if (system(cmd) != 0) fprintf(stderr, "cp failed\n");
}
static void workload_grow(const char *dir) {
    char base[300];
    kcache *kc;
    kcache_key k;
    int i;
    snprintf(base, sizeof base, "%s/grow-base", g_root);
    copy_tree(base, dir);
    kc = open_cache_with(dir, 1, 0, 0);
    if (!kc) return;
    grow_puts(kc, GROW_BASE, GROW_ALL);
    for (i = 0; i < GROW_ALL; i += 97) {
        const void *data;
        size_t size;
        kcache_key_init(&k, "grow");
        kcache_key_u64(&k, "n", (uint64_t)i);
        if (kcache_get(kc, &k, &data, &size) == KCACHE_OK) {
            int v;
            memcpy(&v, (const unsigned char *)data + 4, sizeof v);
            if (size != 8 || v != i) g_wrong++;
            kcache_release(kc, data);
        }
        kcache_key_free(&k);
    }
    must_work(kc, 9);
    kcache_close(kc);
}

static void workload(const char *dir) {
    char dep[300], path[400], line[512];
    unsigned char *buf;
    kcache *a, *b;
    kcache_key k;
    int i;
    if (g_pass == PASS_GROW) {
        workload_grow(dir);
        return;
    }
    buf = (unsigned char *)malloc(payload_size(NKEYS));
    snprintf(dep, sizeof dep, "%s.dep.c", dir);
    write_file(dep, "kernel void f() {}\n", 19);
    /* an orphaned temp file of a dead writer, swept at open */
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/tmp", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/tmp/999999-dead.tmp", dir);
    write_file(path, "x", 1);
    plant_dir_at_entry(dir, 1, dep, 0); /* cleared by its put: removed */
    plant_dir_at_entry(dir, 2, dep, 1); /* cleared by its put: moved aside into tmp/ */
    a = open_cache(dir, 64);
    if (a) {
        for (i = 0; i < NKEYS; i++) {
            fill(i, buf);
            make_key(&k, i, dep);
            kcache_put(a, &k, buf, payload_size(i));
            kcache_key_free(&k);
        }
        for (i = 0; i < NKEYS; i++) check_get(a, i, dep);
        must_work(a, 1);
    }
    /* a second cache on the same store: disk hits, misses explained, removes, single flight */
    b = open_cache_with(dir, 1, 160 * 1024, 1); /* fsync on: its puts sync the file and the shard */
    if (b) {
        for (i = 0; i < NKEYS; i++) check_get(b, i, dep);
        make_key(&k, NKEYS + 5, dep);
        kcache_explain(b, &k, line, sizeof line);
        kcache_key_free(&k);
        for (i = 0; i < NKEYS; i += 5) {
            make_key(&k, i, dep);
            kcache_remove(b, &k);
            kcache_key_free(&k);
        }
        for (i = 0; i < 6; i++) { /* puts from b: evictions, fsyncs */
            fill(i + 6, buf);
            make_key(&k, i + 6, dep);
            kcache_put(b, &k, buf, payload_size(i + 6));
            kcache_key_free(&k);
        }
        for (i = 0; i < 3; i++) {
            const void *data;
            size_t size;
            int n = NKEYS + i;
            make_key(&k, n, NULL);
            if (kcache_get_or_build(b, &k, build_one, &n, &data, &size) == KCACHE_OK) {
                if (size != payload_size(n) || ((const unsigned char *)data)[1] != payload_byte(n, 1)) g_wrong++;
                kcache_release(b, data);
            }
            kcache_key_free(&k);
        }
        must_work(b, 2);
    }
    kcache_close(a);
    kcache_close(b);
    /* the store as a read-only layer of another (KCACHE_LAYERS): layer hits copied, misses explained */
    snprintf(path, sizeof path, "%s.local", dir);
    g_layers = dir;
    a = open_cache(path, 1);
    if (a) {
        for (i = 0; i < NKEYS + 3; i++) check_get(a, i, dep);
        make_key(&k, NKEYS + 7, dep);
        kcache_explain(a, &k, line, sizeof line);
        kcache_key_free(&k);
        must_work(a, 7);
    }
    kcache_close(a);
    g_layers = NULL;
    /* a damaged config.file and a damaged entry: repaired by the next opener */
    snprintf(path, sizeof path, "%s/config.file", dir);
    {
        FILE *f = fopen(path, "r+b");
        if (f) {
            fseek(f, 30, SEEK_SET);
            fputc(0x5a, f);
            fclose(f);
        }
    }
    snprintf(path, sizeof path, "%s/e/00", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/e/00/junk", dir); /* not kcache's name: left alone */
    write_file(path, "junk", 4);
    /* a FIFO at an entry's name: the rebuild's scan removes it (never opened) */
    snprintf(path, sizeof path, "%s/e/00/00112233445566778899aabbccddeeff.kce", dir);
    mkfifo(path, 0600);
    /* a file of the user's beside kcache's: the store is proven by its config.file (repaired below) */
    snprintf(path, sizeof path, "%s/README", dir);
    write_file(path, "mine", 4);
    for (i = 7; i < NKEYS; i++) { /* an entry cut short: its size no longer matches the use table's, so the read asks fstat */
        char rel[48];
        make_key(&k, i, dep);
        kcache__entry_name(kcache_key_digest(&k), rel);
        kcache_key_free(&k);
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        if (truncate(path, 100) == 0) break; /* (evicted already: the next one) */
    }
    snprintf(path, sizeof path, "%s/stats", dir); /* damaged: replaced */
    write_file(path, "KCSTATS\0garbage", 15);
    a = open_cache(dir, 1);
    if (a) {
        for (i = 0; i < NKEYS + 3; i++) check_get(a, i, dep);
        fill(3, buf);
        make_key(&k, 3, dep);
        kcache_put(a, &k, buf, payload_size(3));
        kcache_key_free(&k);
        kcache_verify(a, 0);
        kcache_verify(a, 1);
        /* the tidying calls' I/O (each entry's header read, the lock), removing nothing here */
        kcache_remove_unit(a, "no-such-unit", 0, NULL);
        kcache_evict_older_than(a, 86400, 0, NULL);
        kcache_trim(a, UINT64_MAX, 0, NULL);
        kcache_clear(a, 1, NULL);
        must_work(a, 3);
    }
    kcache_close(a);
    snprintf(path, sizeof path, "%s/README", dir); /* (without a config.file it would not be a store) */
    unlink(path);
    /* config.file gone: a new one is made, and gets before the first scan read entries by fstat */
    snprintf(path, sizeof path, "%s/config.file", dir);
    unlink(path);
    a = open_cache(dir, 1);
    if (a) {
        for (i = 0; i < NKEYS + 3; i++) check_get(a, i, dep);
        must_work(a, 4);
    }
    kcache_close(a);
    /* the store reached through a symlink of ours, its e/ and a shard left group-writable (made
       0700 again once nothing of anyone else's is found in them), its lock and config.file
       readable by others (made 0600) */
    snprintf(path, sizeof path, "%s.link", dir);
    if (symlink(dir, path) != 0) fprintf(stderr, "symlink failed\n");
    snprintf(line, sizeof line, "%s/e", dir);
    chmod(line, 0770);
    snprintf(line, sizeof line, "%s/e/00", dir);
    chmod(line, 0777);
    snprintf(line, sizeof line, "%s/lock", dir);
    chmod(line, 0644);
    snprintf(line, sizeof line, "%s/config.file", dir);
    chmod(line, 0644);
    snprintf(line, sizeof line, "%s/stats", dir);
    chmod(line, 0644);
    a = open_cache(path, 1);
    if (a) {
        for (i = 0; i < NKEYS; i += 4) check_get(a, i, dep);
        must_work(a, 5);
    }
    kcache_close(a);
    unlink(path);
    /* a group's store (KCACHE_SHARED_GROUP: this process's own group) */
    snprintf(path, sizeof path, "%s.shared", dir);
    snprintf(line, sizeof line, "%u", (unsigned)getegid());
    g_shared_group = line;
    a = open_cache(path, 1);
    if (a) {
        for (i = 0; i < 4; i++) {
            fill(i, buf);
            make_key(&k, i, NULL);
            kcache_put(a, &k, buf, payload_size(i));
            kcache_key_free(&k);
        }
        for (i = 0; i < 4; i++) check_get(a, i, NULL);
        must_work(a, 6);
    }
    kcache_close(a);
    g_shared_group = NULL;
    free(buf);
}

/* Without faults: every key reads as a miss or the right bytes, and the accounting is sound. */
static int afterwards_sound(const char *dir) {
    char dep[300];
    kcache *kc;
    int i, ok = 1;
    snprintf(dep, sizeof dep, "%s.dep.c", dir);
    kc = open_cache(dir, 1);
    if (!kc) return 0;
    for (i = 0; i < NKEYS + 3; i++) check_get(kc, i, dep);
    if (kcache_dir(kc)) { /* the store is usable again: its accounting is repaired, then exact */
        if (kcache_verify(kc, 1) != KCACHE_OK || kcache_verify(kc, 0) != KCACHE_OK) {
            fprintf(stderr, "accounting still wrong after repair\n");
            ok = 0;
        }
    }
    kcache_close(kc);
    return ok;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)ftw;
    if (flag == FTW_DP) rmdir(path);
    else unlink(path);
    return 0;
}
static void rm_rf(const char *path) {
    char dep[400];
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    snprintf(dep, sizeof dep, "%s.dep.c", path);
    unlink(dep);
    snprintf(dep, sizeof dep, "%s.link", path);
    unlink(dep);
    snprintf(dep, sizeof dep, "%s.shared", path);
    nftw(dep, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    snprintf(dep, sizeof dep, "%s.local", path);
    nftw(dep, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* One injection in a child: 0 when everything held. */
static int run_injection(const site_t *s, int err, unsigned nth, int idx, char *why, size_t why_cap) {
    char dir[300];
    pid_t pid;
    int status;
    (void)idx;
    snprintf(dir, sizeof dir, "%s/run", g_root); /* one name: the keys (whose dependency lives beside it) are the same in every run */
    fflush(stdout); /* the child must not print the parent's buffered lines again */
    fflush(stderr);
    pid = fork();
    if (pid < 0) { snprintf(why, why_cap, "fork failed"); return 1; }
    if (pid == 0) {
        int fds_before, fds_after, ok;
        alarm(30);
        g_pass = s->pass;
        g_walk = g_pass == PASS_WALK;
        fds_before = count_fds();
        g_mode = 2;
        g_inj_op = s->op;
        g_inj_line = s->line;
        g_inj_errno = err;
        g_inj_nth = nth;
        workload(dir);
        g_mode = 0;
        g_walk = 0;
        fds_after = count_fds();
        ok = afterwards_sound(dir);
        if (fds_after != fds_before) fprintf(stderr, "descriptors: %d before, %d after\n", fds_before, fds_after);
        if (!g_injected) fprintf(stderr, "the fault was never injected\n");
        exit(g_wrong ? 3 : g_broken ? 4 : !ok ? 5 : fds_after != fds_before ? 6 : !g_injected ? 7 : 0);
    }
    {
        int64_t t0 = kcache__mono_ns();
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (getenv("KT_SLOW") && kcache__mono_ns() - t0 > 300000000)
            printf("# slow: %s at kcache.h:%d errno %d call %u: %.0f ms\n", s->op, s->line, err, nth, (double)(kcache__mono_ns() - t0) / 1e6);
    }
    rm_rf(dir);
    if (WIFSIGNALED(status)) {
        snprintf(why, why_cap, "signal %d%s", WTERMSIG(status), WTERMSIG(status) == SIGALRM ? " (hang)" : "");
        return 1;
    }
    if (WEXITSTATUS(status) != 0) {
        static const char *what[] = {"", "", "", "a wrong payload", "the caller's work failed", "accounting unsound after",
                                     "a descriptor leaked", "fault not reached"};
        int e = WEXITSTATUS(status);
        snprintf(why, why_cap, "%s", e < 8 ? what[e] : "exit status (a sanitizer report?)");
        if (e >= 8 || !what[e][0]) snprintf(why, why_cap, "exit status %d (a sanitizer report?)", e);
        return 1;
    }
    return 0;
}

/* Call sites in kcache.h: every kcache__io_ call that can fail, outside the macros that define
   them. */
static int count_sites_in_header(int *lines, int cap) {
    FILE *f = fopen("kcache.h", "r");
    char buf[4096];
    int n = 0, lineno = 0;
    if (!f) return -1;
    while (fgets(buf, sizeof buf, f)) {
        const char *p = buf;
        lineno++;
        if (strncmp(buf, "#define", 7) == 0) continue;
        while ((p = strstr(p, "kcache__io_")) != NULL) {
            const char *q = p + 11;
            while ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_') q++;
            if (*q == '(' && strncmp(p + 11, "unmap", 5) != 0 && strncmp(p + 11, "dir_next", 8) != 0 &&
                strncmp(p + 11, "dir_close", 9) != 0) {
                if (n < cap) lines[n] = lineno;
                n++;
            }
            p = q;
        }
    }
    fclose(f);
    return n;
}

static void fault_sites(void) {
    static const int errnos[] = {EIO, ENOSPC, EACCES, EINTR, ENOENT};
    static const char *names[] = {"EIO", "ENOSPC", "EACCES", "EINTR", "ENOENT"};
    char dir[300], why[128];
    int i, e, runs = 0, failures = 0, idx = 0, total, header_lines[1024], reached_lines = 0;
    const char *quick = getenv("KT_QUICK");
    { /* the grow workload's starting point */
        kcache *kc;
        snprintf(dir, sizeof dir, "%s/grow-base", g_root);
        kc = open_cache_with(dir, 1, 0, 0);
        KT_CHECK(kc != NULL);
        if (kc) grow_puts(kc, 0, GROW_BASE);
        kcache_close(kc);
    }
    for (g_pass = 0; g_pass < PASSES; g_pass++) {
        snprintf(dir, sizeof dir, "%s/run", g_root);
        g_walk = g_pass == PASS_WALK;
        g_mode = 1;
        {
            int64_t t0 = kcache__mono_ns();
            workload(dir);
            printf("# workload %s: %.1f ms\n", g_pass == PASS_MAIN ? "main" : g_pass == PASS_WALK ? "walk" : "grow",
                   (double)(kcache__mono_ns() - t0) / 1e6);
        }
        g_mode = 0;
        KT_CHECK(g_wrong == 0);
        KT_CHECK(g_broken == 0);
        KT_CHECK(afterwards_sound(dir));
        g_walk = 0;
        rm_rf(dir);
    }
    KT_CHECK_MSG(g_nsites >= 40, "the workload reached only %d call sites", g_nsites);
    for (i = 0; i < g_nsites; i++) {
        for (e = 0; e < 5; e++) {
            if (quick && e % 2 && e != 3) continue; /* KT_QUICK: EIO, EACCES, EINTR, ENOENT only */
            runs++;
            if (run_injection(&g_sites[i], errnos[e], 1, idx++, why, sizeof why)) {
                failures++;
                KT_FAILF("%s at kcache.h:%d failing with %s: %s", g_sites[i].op, g_sites[i].line, names[e], why);
            }
        }
        if (g_sites[i].hits > 1) { /* the last call too: the state deep in the workload */
            runs++;
            if (run_injection(&g_sites[i], EIO, g_sites[i].hits, idx++, why, sizeof why)) {
                failures++;
                KT_FAILF("%s at kcache.h:%d failing with EIO on call %u: %s", g_sites[i].op, g_sites[i].line, g_sites[i].hits, why);
            }
        }
    }
    total = count_sites_in_header(header_lines, 1024);
    KT_CHECK(total > 0);
    for (i = 0; i < total && i < 1024; i++) {
        int j, hit = 0;
        for (j = 0; j < g_nsites && !hit; j++) hit = g_sites[j].line == header_lines[i];
        reached_lines += hit;
        if (!hit) printf("# not reached by the workload: kcache.h:%d\n", header_lines[i]);
    }
    printf("# fault injection: %d call sites in kcache.h, %d reached by the workload, %d injections, %d failed\n", total,
           reached_lines, runs, failures);
}

int main(void) {
    const char *base = getenv("TMPDIR");
    snprintf(g_root, sizeof g_root, "%s/kt-faults-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(g_root)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("KCACHE_STATS", "1", 1);
    KT_RUN(fault_sites);
    rm_rf(g_root);
    KT_EXIT();
}

/* tests/torture.c - kcache under a storm of processes and SIGKILLs (issue #10).
 *
 *     torture DIR SECONDS [NPROC=16] [LIMIT_BYTES=2M]
 *
 * A parent forks NPROC workers. For SECONDS each does a random mix of kcache_get, kcache_put,
 * kcache_remove and kcache_get_or_build on NKEYS keys whose payloads (0 bytes to ~200 KiB) are a
 * function of the key and a version, in a store whose small limit (2 MiB by default, the keys are
 * worth several times that) keeps eviction going all the time. Meanwhile the parent SIGKILLs a
 * random worker every 1 to 40 ms and forks a replacement, so kills land in opens, puts, evictions,
 * index appends, single-flight claims and closes; during the first three quarters of the run it also
 * replaces or deletes config.file now and then (the store's rebuild path, and kills inside it).
 *
 * Every payload a worker reads is checked byte for byte: it must be exactly what its key holds at
 * one of its versions (a stale version or a miss after a remove is fine, a wrong byte never is).
 * Workers count into a shared anonymous mapping (atomics), so the counts of killed workers stay.
 *
 * At the end the survivors stop cleanly and a fresh process checks the store: no temp file of a
 * dead writer is left once it opens, kcache_explain agrees with kcache_get for every key, every
 * entry on disk hits with a right payload, nothing was rejected, kcache_verify(kc, 0) holds before
 * any repair, kcache_verify(kc, 1) then (kc, 0) are OK, the accounted bytes and entries equal our
 * own walk of e/XX (drift 0) and the accounted size is within the limit. Output:
 *
 *     torture: fs=ext4 procs=16 seconds=20 ops=N gets=.. hits=.. puts=.. removes=.. kills=K wrong=0 drift=0 bytes
 *     torture: detail: ...            (what the counts above do not say)
 *     ok torture_ext4                 or   FAIL torture_ext4: why     (tests/kt.h's protocol)
 *
 * Exit status 0 when every check held. The store is made in a fresh DIR/kcache-torture.XXXXXX and
 * removed on success (kept for digging on failure). Environment: TORTURE_SEED (the run's seed),
 * TORTURE_NAME (the label after "torture_"; default the filesystem type), TORTURE_CF_DAMAGE=0
 * (leave config.file alone), TORTURE_KEEP=1 (keep the store).
 *
 * The remote mode (built with KCACHE_REDIS, run with TORTURE_REMOTE=URL): every worker slot has a
 * store of its own (DIR/.../wN: a machine) and all share the remote tier at URL, so payloads also
 * travel worker -> server -> worker; with TORTURE_REMOTE_PID the parent also SIGSTOPs that server
 * for 300 ms every second or so (timeouts, open breakers, mid-storm). The final check then runs on
 * every worker's store and on a fresh one that can only hit the remote: every payload right, explain
 * and get agree, nothing rejected (locally or remotely), each store's accounting exact.
 *
 * Build: cc -std=c99 -O2 -g -Wall -Wextra -Wpedantic -Werror -I. -o build/torture tests/torture.c -lpthread
 * (remote mode: make build/torture_remote) */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"
#ifdef KCACHE_REDIS
#include "kt_remote.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#define NKEYS 320u
#define NVER 4u            /* versions a key's payload may have */
#define PMAX (200u << 10)  /* the largest payload (smaller when the limit is small) */
#define MAXPROCS 64
#define NMSG 8             /* wrong-payload messages kept for the report */
#define CHECK_FAILED 42     /* the checking process printed FAIL lines (not 1: a sanitizer exits 1) */
#define STOP_WAIT_S 120    /* survivors that do not stop in this long are hung (a deadlock) */

/* ---- shared counters --------------------------------------------------------------------------- */

enum {
    C_OPS, C_GETS, C_HITS, C_MISSES, C_PUTS, C_PUT_OK, C_REMOVES, C_REMOVED, C_GOB, C_GOB_OK, C_BUILT,
    C_WRONG, C_ERRORS, C_CHECKED_BYTES, C_OPEN_FAIL,
    C_ERR_BY_STATUS, /* + status: errors by kcache_status */
    C_COUNT = C_ERR_BY_STATUS + 32
};
/* What a worker was doing: the parent reads it just before a kill to say where kills landed. */
enum { PH_START, PH_OPEN, PH_GET, PH_PUT, PH_REMOVE, PH_BUILD, PH_IDLE, PH_CLOSE, PH_COUNT };
static const char *const ph_name[PH_COUNT] = {"start", "open", "get", "put", "remove", "build", "idle", "close"};

/* A worker's kcache_get_stats, published after every call: the parent adds it up once the worker
   is dead (so no race: the slot's only writer is gone). */
enum { S_REJECTS, S_EVICTIONS, S_HITS_DISK, S_HITS_MEM, S_STORE_ERRORS, S_BUILD_WAITS, S_HITS_REMOTE, S_REMOTE_PUTS, S_REMOTE_ERRORS,
       S_COUNT };

typedef struct slot {
    int phase;
    int pad;
    uint64_t st[S_COUNT];
} slot;

typedef struct shared {
    int stop;
    int nmsg;
    uint64_t c[C_COUNT];
    slot slots[MAXPROCS];
    char msg[NMSG][200];
    /* the final checker's findings */
    uint64_t fin_real_bytes, fin_real_entries, fin_acc_bytes, fin_acc_entries, fin_hits, fin_pre_acc_bytes;
    int fin_done;
} shared;

static shared *g_sh;

static void add(int i, uint64_t v) { __atomic_add_fetch(&g_sh->c[i], v, __ATOMIC_RELAXED); }
static uint64_t get_c(int i) { return __atomic_load_n(&g_sh->c[i], __ATOMIC_RELAXED); }

/* ---- payloads ---------------------------------------------------------------------------------- */

static uint64_t sm64(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t g_pmax = PMAX;

/* One key in 16 has a tiny payload (0 to 15 bytes, the same at every version: too short for a
   header); the others have a header and sizes spread evenly on a log scale from 16 bytes to
   g_pmax, growing a little with the version, so a replaced entry changes size. */
static int is_tiny(uint32_t id) { return id % 16 == 0; }
static size_t tiny_len(uint32_t id) { return (size_t)((id / 16) % 16); }
static size_t pl_size(uint32_t id, uint32_t ver) {
    uint64_t s = 0x70b7ull ^ ((uint64_t)id << 20);
    double u = (double)(sm64(&s) >> 11) / 9007199254740992.0, x, n;
    size_t m = g_pmax;
    int bits = 0, whole;
    if (is_tiny(id)) return tiny_len(id);
    while (m > 16) { m >>= 1; bits++; } /* about log2(g_pmax / 16) */
    x = u * (bits + 1);
    whole = (int)x;
    n = (double)((size_t)16 << whole) * (1.0 + (x - whole)); /* 16 * 2^x, near enough */
    n = n * (4.0 + ver) / 4.0;
    return n > (double)g_pmax ? g_pmax : n < 16.0 ? 16 : (size_t)n;
}
static void wr32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}
static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t stream_seed(uint32_t id, uint32_t ver) { return ((uint64_t)id << 32) ^ ((uint64_t)ver << 8) ^ 0x7041ull; }

/* Fills p with (id, ver)'s payload of pl_size(id, ver) bytes; returns the size. */
static size_t pl_fill(unsigned char *p, uint32_t id, uint32_t ver) {
    size_t n = pl_size(id, ver), i = 0, j;
    uint64_t s, w = 0;
    if (is_tiny(id)) ver = 0;
    s = stream_seed(id, ver);
    if (!is_tiny(id)) {
        memcpy(p, "KTOR", 4);
        wr32(p + 4, id);
        wr32(p + 8, ver);
        wr32(p + 12, (uint32_t)n);
        i = 16;
    }
    for (j = 0; i < n; i++, j++) {
        if ((j & 7) == 0) w = sm64(&s);
        p[i] = (unsigned char)(w >> (8 * (j & 7)));
    }
    return n;
}
/* NULL when (p, n) is exactly key id's payload at one of its versions; else what is wrong. */
static const char *pl_check(const void *data, size_t n, uint32_t id) {
    static unsigned char *want; /* one buffer per process: workers are single-threaded */
    const unsigned char *p = (const unsigned char *)data;
    uint32_t ver = 0;
    if (!want && !(want = (unsigned char *)malloc(PMAX))) return "out of memory to check";
    if (!p && n) return "NULL data";
    if (is_tiny(id)) {
        if (n != tiny_len(id)) return "wrong length for a tiny payload";
    } else {
        if (n < 16) return "too short for this key's payload";
        if (memcmp(p, "KTOR", 4) != 0) return "no payload magic";
        if (rd32(p + 4) != id) return "another key's payload";
        ver = rd32(p + 8);
        if (ver >= NVER) return "a version never written";
        if (rd32(p + 12) != n || pl_size(id, ver) != n) return "length differs from the version's";
    }
    if (n == 0) return NULL;
    if (pl_fill(want, id, ver) != n || memcmp(want, p, n) != 0) return "wrong bytes";
    return NULL;
}

/* ---- keys -------------------------------------------------------------------------------------- */

/* Eight units, so that index appends and rewrites are spread over several index files. */
static void mkkey(kcache_key *k, uint32_t id) {
    char unit[32];
    snprintf(unit, sizeof unit, "torture.u%u", id % 8);
    kcache_key_init(k, unit);
    kcache_key_u64(k, "id", id);
    kcache_key_str(k, "src", "kernel void t(global int *x) { x[get_global_id(0)] ^= 0x5a; }");
}

/* ---- workers ----------------------------------------------------------------------------------- */

static const char *g_store;
static uint64_t g_limit;
static const char *g_remote; /* TORTURE_REMOTE: every worker a machine of its own on this remote */

/* A worker's (or the checker's) configuration: the shared store, or in remote mode a store of its own. */
static void worker_config(kcache_config *cfg, char *dir, size_t cap, const char *name) {
    kcache_config_init(cfg);
    if (g_remote) {
        snprintf(dir, cap, "%s/%s", g_store, name);
        cfg->dir = dir;
        cfg->remote = g_remote;
        cfg->remote_timeout_ms = 200;
        cfg->remote_backoff_ms = 100;
        cfg->remote_claim_ms = 2000; /* a killed builder's claim runs out soon */
    } else {
        cfg->dir = g_store;
    }
    cfg->max_size = g_limit;
    cfg->enable = 1;
    cfg->persistent = 1;
    cfg->debug = 0;
}

static void set_phase(int me, int ph) { __atomic_store_n(&g_sh->slots[me].phase, ph, __ATOMIC_RELAXED); }

static void wrong(int me, uint32_t id, const char *how, const char *why, size_t n) {
    int i = __atomic_fetch_add(&g_sh->nmsg, 1, __ATOMIC_RELAXED);
    add(C_WRONG, 1);
    if (i < NMSG)
        snprintf(g_sh->msg[i], sizeof g_sh->msg[i], "worker %d (pid %d): %s of key %u: %s (%zu bytes)", me, (int)getpid(),
                 how, id, why, n);
}
/* A payload handed out for key id: counted and checked against what the key may hold. */
static void check_payload(int me, uint32_t id, const char *how, const void *d, size_t n) {
    const char *why = pl_check(d, n, id);
    add(C_CHECKED_BYTES, n);
    if (why) wrong(me, id, how, why, n);
}
static void error_status(kcache_status s) {
    add(C_ERRORS, 1);
    add(C_ERR_BY_STATUS + ((unsigned)s < 32 ? (int)s : 31), 1);
}

typedef struct build_arg { uint32_t id, ver; } build_arg;
static int build_fn(void *user, void **out, size_t *out_size) {
    build_arg *a = (build_arg *)user;
    unsigned char *p = (unsigned char *)KCACHE_MALLOC(pl_size(a->id, a->ver) + 1);
    if (!p) return 1;
    *out_size = pl_fill(p, a->id, a->ver);
    *out = p;
    add(C_BUILT, 1);
    return 0;
}

/* base: what this worker's earlier kcache objects counted (it closes and reopens now and then) */
static uint64_t g_base[S_COUNT];
static void publish_stats(kcache *kc, int me, int fold) {
    kcache_stats st;
    uint64_t v[S_COUNT], *d = g_sh->slots[me].st;
    int i;
    kcache_get_stats(kc, &st);
    v[S_REJECTS] = st.rejects;
    v[S_EVICTIONS] = st.evictions;
    v[S_HITS_DISK] = st.hits_disk;
    v[S_HITS_MEM] = st.hits_mem;
    v[S_STORE_ERRORS] = st.store_errors;
    v[S_BUILD_WAITS] = st.build_waits;
    v[S_HITS_REMOTE] = st.hits_remote;
    v[S_REMOTE_PUTS] = st.remote_puts;
    v[S_REMOTE_ERRORS] = st.remote_errors;
    for (i = 0; i < S_COUNT; i++) {
        __atomic_store_n(&d[i], g_base[i] + v[i], __ATOMIC_RELAXED);
        if (fold) g_base[i] += v[i];
    }
}

static void do_put(kcache *kc, kcache_key *k, uint32_t id, uint32_t ver, unsigned char *buf) {
    size_t n = pl_fill(buf, id, ver);
    kcache_status s = kcache_put(kc, k, buf, n);
    add(C_PUTS, 1);
    if (s == KCACHE_OK) add(C_PUT_OK, 1);
    else error_status(s);
}

static void worker(int me, uint64_t seed) {
    kcache_config cfg;
    kcache *kc = NULL;
    unsigned char *buf = (unsigned char *)malloc(PMAX);
    char dir[4200], name[16];
    set_phase(me, PH_OPEN);
    snprintf(name, sizeof name, "w%d", me);
    worker_config(&cfg, dir, sizeof dir, name);
    cfg.mem_entries = me % 3 == 0 ? 1 : me % 3 == 1 ? 8 : 64; /* mostly disk hits, some memory hits */
    cfg.trace = me % 4 == 1;                                   /* misses appended to the indexes too */
    if (me % 5 == 3) cfg.write_policy = KCACHE_WRITE_EVICT;    /* writes when leaving memory, and at close */
    if (!buf || kcache_open(&kc, &cfg) != KCACHE_OK || !kc || !kcache_dir(kc)) {
        add(C_OPEN_FAIL, 1);
        _exit(3);
    }
    while (!__atomic_load_n(&g_sh->stop, __ATOMIC_RELAXED)) {
        uint64_t r = sm64(&seed);
        if (r % 400 == 0) { /* now and then a close and a new open, so that kills land there too */
            publish_stats(kc, me, 1);
            set_phase(me, PH_CLOSE);
            kcache_close(kc);
            kc = NULL;
            set_phase(me, PH_OPEN);
            if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc || !kcache_dir(kc)) {
                add(C_OPEN_FAIL, 1);
                _exit(3);
            }
            r = sm64(&seed);
        }
        /* half the operations on a hot fifth of the keys, so that some entries live long enough to hit */
        uint32_t id = (uint32_t)((r & 1) ? (r >> 8) % (NKEYS / 5) : (r >> 8) % NKEYS);
        uint32_t what = (uint32_t)((r >> 40) % 100), ver = (uint32_t)((r >> 56) % NVER);
        kcache_key k;
        mkkey(&k, id);
        if (what < 55) {
            const void *d = NULL;
            size_t n = 0;
            kcache_status s;
            set_phase(me, PH_GET);
            s = kcache_get(kc, &k, &d, &n);
            add(C_GETS, 1);
            if (s == KCACHE_OK) {
                add(C_HITS, 1);
                check_payload(me, id, "get", d, n);
                kcache_release(kc, d);
            } else if (s == KCACHE_MISS) {
                add(C_MISSES, 1);
                if (r & 2) { set_phase(me, PH_PUT); do_put(kc, &k, id, ver, buf); } /* compile, then put */
            } else {
                error_status(s);
            }
        } else if (what < 77) {
            set_phase(me, PH_PUT);
            do_put(kc, &k, id, ver, buf);
        } else if (what < 87) {
            kcache_status s;
            set_phase(me, PH_REMOVE);
            s = kcache_remove(kc, &k);
            add(C_REMOVES, 1);
            if (s == KCACHE_OK) add(C_REMOVED, 1);
            else if (s != KCACHE_MISS) error_status(s);
        } else {
            build_arg a;
            const void *d = NULL;
            size_t n = 0;
            kcache_status s;
            a.id = id;
            a.ver = ver;
            set_phase(me, PH_BUILD);
            s = kcache_get_or_build(kc, &k, build_fn, &a, &d, &n);
            add(C_GOB, 1);
            if (s == KCACHE_OK) {
                add(C_GOB_OK, 1);
                check_payload(me, id, "get_or_build", d, n);
                kcache_release(kc, d);
            } else {
                error_status(s);
            }
        }
        set_phase(me, PH_IDLE);
        kcache_key_free(&k);
        add(C_OPS, 1);
        publish_stats(kc, me, 0);
    }
    set_phase(me, PH_CLOSE);
    publish_stats(kc, me, 0);
    kcache_close(kc);
    free(buf);
    _exit(0);
}

/* ---- the parent -------------------------------------------------------------------------------- */

static char g_label[64];
static int g_failed;

static void fail(const char *fmt, ...) {
    va_list ap;
    printf("FAIL torture_%s: ", g_label);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    g_failed++;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static void sleep_us(long us) {
    struct timespec ts;
    ts.tv_sec = us / 1000000;
    ts.tv_nsec = (us % 1000000) * 1000;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static const char *fs_name(const char *path) {
    struct statfs s;
    static char other[32];
    if (statfs(path, &s) != 0) return "unknown";
    switch ((unsigned long)s.f_type) {
    case 0xEF53ul: return "ext4"; /* ext2/3/4 share the magic; kcache's users have ext4 */
    case 0x58465342ul: return "xfs";
    case 0x9123683Eul: return "btrfs";
    case 0x01021994ul: return "tmpfs";
    case 0x794c7630ul: return "overlay";
    case 0x2fc12fc1ul: return "zfs";
    case 0x6969ul: return "nfs";
    default: snprintf(other, sizeof other, "fs%lx", (unsigned long)s.f_type); return other;
    }
}

static pid_t g_pid[MAXPROCS];
static uint64_t g_gen, g_seed;
static uint64_t g_kills, g_kill_phase[PH_COUNT], g_crashes, g_st[S_COUNT];

static pid_t spawn(int me) {
    pid_t p;
    uint64_t s = g_seed ^ (++g_gen * 0x9e3779b97f4a7c15ull);
    memset(&g_sh->slots[me], 0, sizeof g_sh->slots[me]);
    fflush(stdout);
    fflush(stderr);
    p = fork();
    if (p == 0) worker(me, s);
    if (p < 0) fail("fork: %s", strerror(errno));
    return p;
}
/* A worker is gone: its counts join the totals; anything but our SIGKILL or a clean stop is a crash. */
static void reaped(int me, int status, int killed) {
    int i;
    for (i = 0; i < S_COUNT; i++) g_st[i] += g_sh->slots[me].st[i];
    memset(&g_sh->slots[me], 0, sizeof g_sh->slots[me]);
    g_pid[me] = 0;
    if (killed && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) return;
    if (!killed && WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
    g_crashes++;
    if (WIFSIGNALED(status)) fail("worker %d died of signal %d (%s)", me, WTERMSIG(status), strsignal(WTERMSIG(status)));
    else fail("worker %d exited with status %d%s", me, WEXITSTATUS(status),
              WEXITSTATUS(status) == 3 ? " (kcache_open failed or refused the store)" : " (a sanitizer report above?)");
}

/* Replaces config.file the ways a user or a crash could (never truncating it in place, which the
   header forbids): deleted; garbage renamed over it; a copy with one accounting byte changed. */
static uint64_t g_cf_damage;
static void damage_config(const char *parent, const char *store, uint64_t r) {
    char cf[4300], junk[4200];
    unsigned char *b;
    size_t n = 0;
    int fd;
    snprintf(cf, sizeof cf, "%s/config.file", store);
    snprintf(junk, sizeof junk, "%s/torture-cf.tmp", parent);
    if (r % 3 == 0) {
        if (unlink(cf) == 0) g_cf_damage++;
        return;
    }
    b = (unsigned char *)malloc(1 << 20);
    if (!b) return;
    if (r % 3 == 1) {
        uint64_t s = r;
        n = 4096 + (size_t)(r >> 20) % 8192;
        for (fd = 0; fd < (int)n; fd++) b[fd] = (unsigned char)sm64(&s);
    } else {
        ssize_t got;
        fd = open(cf, O_RDONLY);
        if (fd < 0) { free(b); return; }
        while ((got = read(fd, b + n, (1 << 20) - n)) > 0) n += (size_t)got;
        close(fd);
        if (n < 40) { free(b); return; }
        b[24] ^= 0x40; /* accounted bytes: the header checksum no longer matches */
    }
    fd = open(junk, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        int ok = write(fd, b, n) == (ssize_t)n;
        close(fd);
        if (ok && rename(junk, cf) == 0) g_cf_damage++;
        else unlink(junk);
    }
    free(b);
}

/* ---- the final check (a fresh process) ------------------------------------------------------------ */

static int count_files(const char *path) {
    DIR *d = opendir(path);
    struct dirent *de;
    int n = 0;
    if (!d) return -1;
    while ((de = readdir(d)) != NULL) {
        unsigned long pid;
        if (de->d_name[0] == '.') continue;
        pid = strtoul(de->d_name, NULL, 10);
        if (pid > 0 && (pid_t)pid != getpid() && kill((pid_t)pid, 0) == 0) continue; /* a reused pid, alive */
        n++;
    }
    closedir(d);
    return n;
}
/* Entry files in e/XX: our own walk, not kcache's. */
static void real_scan(const char *store, uint64_t *bytes, uint64_t *count) {
    char p[4200];
    int shard;
    *bytes = *count = 0;
    for (shard = 0; shard < 256; shard++) {
        DIR *d;
        struct dirent *de;
        snprintf(p, sizeof p, "%s/e/%02x", store, shard);
        if (!(d = opendir(p))) continue;
        while ((de = readdir(d)) != NULL) {
            char f[4500];
            struct stat s;
            size_t l = strlen(de->d_name);
            if (l != 36 || strcmp(de->d_name + 32, ".kce") != 0) continue;
            snprintf(f, sizeof f, "%s/%s", p, de->d_name);
            if (lstat(f, &s) != 0 || !S_ISREG(s.st_mode)) continue;
            *bytes += (uint64_t)s.st_size;
            (*count)++;
        }
        closedir(d);
    }
}

/* Checks one store (a worker's, by its name in remote mode; NULL: the shared one) as a local store,
   or (remote_only) a fresh store whose every hit comes from the remote. */
static void check_one(const char *name, int remote_only) {
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_stats st;
    kcache_status v;
    char tmp[4300], why[512], dir[4200];
    const char *store;
    uint64_t rb, rc, hits = 0;
    uint32_t id;
    int left, bad = 0;
    worker_config(&cfg, dir, sizeof dir, name ? name : "");
    if (!remote_only) cfg.remote = NULL; /* the store as it is, with nothing from elsewhere */
    cfg.remote_timeout_ms = 5000;        /* a slow moment of the server is not a miss here */
    cfg.mem_entries = NKEYS * 2;
    store = cfg.dir;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kc || !kcache_dir(kc)) { fail("check: kcache_open refused the store %s", store); _exit(CHECK_FAILED); }
    snprintf(tmp, sizeof tmp, "%s/tmp", store);
    left = count_files(tmp);
    if (left != 0) fail("check: %d temp files of dead writers left in %s/tmp/ after a new kcache_open", left, store);
    real_scan(store, &rb, &rc);
    kcache_get_stats(kc, &st);
    g_sh->fin_pre_acc_bytes += st.disk_bytes;
    for (id = 0; id < NKEYS; id++) {
        kcache_key k;
        const void *d = NULL;
        size_t n = 0;
        kcache_status s;
        int said_hit;
        mkkey(&k, id);
        kcache_explain(kc, &k, why, sizeof why);
        said_hit = strncmp(why, "hit", 3) == 0;
        s = kcache_get(kc, &k, &d, &n);
        if (s == KCACHE_OK) {
            const char *w = pl_check(d, n, id);
            hits++;
            if (w) { add(C_WRONG, 1); if (bad++ < 5) fail("check: key %u: %s (%zu bytes)", id, w, n); }
            kcache_release(kc, d);
        } else if (s != KCACHE_MISS) {
            fail("check: key %u: kcache_get: %s", id, kcache_strerror(s));
        }
        if (said_hit != (s == KCACHE_OK) && bad++ < 5)
            fail("check: key %u: kcache_explain said \"%s\" but kcache_get returned %s", id, why, kcache_strerror(s));
        kcache_key_free(&k);
    }
    g_sh->fin_hits += hits;
    kcache_get_stats(kc, &st);
    if (!remote_only && hits != rc) fail("check: %llu keys hit but %llu entries are on disk", (unsigned long long)hits, (unsigned long long)rc);
    if (remote_only && (st.hits_remote != hits || !hits || st.remote_errors))
        fail("check: a fresh store on the remote: %llu hits, %llu from the remote, %llu remote errors", (unsigned long long)hits,
             (unsigned long long)st.hits_remote, (unsigned long long)st.remote_errors);
    if (st.rejects) fail("check: %llu entries rejected (a torn or corrupt entry was visible)", (unsigned long long)st.rejects);
    /* Before any repair: a writer that died mid-update left the busy mark, which the next locked
       update (this verify) repairs by a scan; otherwise the accounting must already be exact. */
    v = kcache_verify(kc, 0);
    if (v != KCACHE_OK) fail("check: kcache_verify(kc, 0) before repair = %s (accounted %llu bytes / %llu entries, real %llu / %llu)",
                             kcache_strerror(v), (unsigned long long)st.disk_bytes, (unsigned long long)st.disk_entries,
                             (unsigned long long)rb, (unsigned long long)rc);
    v = kcache_verify(kc, 1);
    if (v != KCACHE_OK) fail("check: kcache_verify(kc, 1) = %s", kcache_strerror(v));
    v = kcache_verify(kc, 0);
    if (v != KCACHE_OK) fail("check: kcache_verify(kc, 0) after repair = %s", kcache_strerror(v));
    real_scan(store, &rb, &rc);
    kcache_get_stats(kc, &st);
    g_sh->fin_real_bytes += rb;
    g_sh->fin_real_entries += rc;
    g_sh->fin_acc_bytes += st.disk_bytes;
    g_sh->fin_acc_entries += st.disk_entries;
    if (st.disk_bytes != rb || st.disk_entries != rc)
        fail("check: accounted %llu bytes / %llu entries, real %llu / %llu", (unsigned long long)st.disk_bytes,
             (unsigned long long)st.disk_entries, (unsigned long long)rb, (unsigned long long)rc);
    if (st.disk_bytes > g_limit) fail("check: accounted %llu bytes, over the limit %llu", (unsigned long long)st.disk_bytes, (unsigned long long)g_limit);
    if (rb > g_limit) fail("check: entries take %llu bytes, over the limit %llu", (unsigned long long)rb, (unsigned long long)g_limit);
    if (rc == 0) fail("check: the store %s is empty after the storm", store);
    kcache_close(kc);
}

static int g_nproc;
static void check_store(void) {
    int i;
    if (!g_remote) check_one(NULL, 0);
    for (i = 0; g_remote && i < g_nproc; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        check_one(name, 0);
    }
    if (g_remote) check_one("fresh", 1);
    g_sh->fin_done = 1;
    fflush(stdout);
    _exit(g_failed ? CHECK_FAILED : 0);
}

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s;
    (void)flag;
    (void)f;
    remove(p);
    return 0;
}

static uint64_t parse_size(const char *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'K' || *end == 'k') v <<= 10;
    else if (*end == 'M' || *end == 'm') v <<= 20;
    else if (*end == 'G' || *end == 'g') v <<= 30;
    return (uint64_t)v;
}

int main(int argc, char **argv) {
    const char *parent, *e;
    char store[4096];
    int nproc = 16, seconds, i, st, cf_on;
    int64_t t0, end, cf_until, next_cf, next_stop = 0, stopped_until = 0;
    pid_t server = 0;
    uint64_t stops = 0;
    uint64_t rng, total = 0, drift;
    pid_t chk;
    if (argc < 3) {
        fprintf(stderr, "usage: torture DIR SECONDS [NPROC=16] [LIMIT_BYTES=2M]\n");
        return 2;
    }
    parent = argv[1];
    seconds = atoi(argv[2]);
    if (argc > 3) nproc = atoi(argv[3]);
    g_limit = argc > 4 ? parse_size(argv[4]) : (uint64_t)2 << 20;
    if (seconds < 1 || nproc < 1 || nproc > MAXPROCS || g_limit < (64u << 10)) {
        fprintf(stderr, "torture: SECONDS >= 1, 1 <= NPROC <= %d, LIMIT >= 64K\n", MAXPROCS);
        return 2;
    }
    if (g_pmax > g_limit / 8) g_pmax = (size_t)(g_limit / 8); /* every entry fits well within the limit */
    e = getenv("TORTURE_NAME");
    snprintf(g_label, sizeof g_label, "%s", e && *e ? e : fs_name(parent));
    e = getenv("TORTURE_SEED");
    g_seed = e && *e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
    rng = g_seed;
    e = getenv("TORTURE_CF_DAMAGE");
    cf_on = !(e && strcmp(e, "0") == 0);
    g_nproc = nproc;
    e = getenv("TORTURE_REMOTE");
    if (e && *e) {
#ifdef KCACHE_REDIS
        g_remote = e;
        e = getenv("TORTURE_REMOTE_PID");
        server = e && *e ? (pid_t)atol(e) : 0;
#else
        fail("TORTURE_REMOTE is set but this torture was built without KCACHE_REDIS (make build/torture_remote)");
        return 1;
#endif
    }
    snprintf(store, sizeof store, "%s/kcache-torture.XXXXXX", parent);
    if (!mkdtemp(store)) { fail("mkdtemp in %s: %s", parent, strerror(errno)); return 1; }
    g_store = store;
    g_sh = (shared *)mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED) { fail("mmap: %s", strerror(errno)); return 1; }
    memset(g_sh, 0, sizeof *g_sh);
    for (i = 0; i < (int)NKEYS; i++) total += pl_size((uint32_t)i, 0);
    printf("# torture: store %s (%s), %d processes, %d s, limit %llu bytes, %u keys worth %.1fx the limit, seed %llu\n",
           store, fs_name(parent), nproc, seconds, (unsigned long long)g_limit, NKEYS, (double)total / (double)g_limit,
           (unsigned long long)g_seed);
    fflush(stdout);

    for (i = 0; i < nproc; i++) g_pid[i] = spawn(i);
    t0 = now_ns();
    end = t0 + (int64_t)seconds * 1000000000;
    cf_until = t0 + (int64_t)seconds * 750000000; /* the last quarter runs on an undamaged config.file */
    next_cf = t0 + 200000000;
    while (now_ns() < end) {
        uint64_t r = sm64(&rng);
        int me = (int)(r % (uint64_t)nproc), ph;
        pid_t p;
        /* 1 to 40 ms, spread evenly on a log scale: many kills close together, some far apart */
        long us = 1000;
        int steps = (int)((r >> 16) % 54);
        while (steps-- > 0) us = us * 107 / 100;
        sleep_us(us);
        /* a worker that died on its own: report, replace */
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            int j;
            for (j = 0; j < nproc; j++)
                if (g_pid[j] == p) { reaped(j, st, 0); g_pid[j] = spawn(j); }
        }
        if (server > 0 && now_ns() >= stopped_until && stopped_until) { kill(server, SIGCONT); stopped_until = 0; }
        if (server > 0 && now_ns() >= next_stop && now_ns() < cf_until) { /* a hung server, mid-storm */
            if (next_stop && kill(server, SIGSTOP) == 0) { stops++; stopped_until = now_ns() + 300000000; }
            next_stop = now_ns() + 700000000 + (int64_t)(sm64(&rng) % 800000000u);
        }
        if (cf_on && now_ns() >= next_cf && now_ns() < cf_until) {
            char w[4200];
            snprintf(w, sizeof w, "%s/w%d", store, (int)(sm64(&rng) % (uint64_t)nproc));
            damage_config(parent, g_remote ? w : store, sm64(&rng));
            next_cf = now_ns() + 300000000 + (int64_t)(sm64(&rng) % 1200000000u);
        }
        if (g_pid[me] <= 0) { g_pid[me] = spawn(me); continue; }
        ph = __atomic_load_n(&g_sh->slots[me].phase, __ATOMIC_RELAXED);
        kill(g_pid[me], SIGKILL);
        while (waitpid(g_pid[me], &st, 0) < 0 && errno == EINTR) {
        }
        g_kills++;
        g_kill_phase[ph >= 0 && ph < PH_COUNT ? ph : PH_START]++;
        reaped(me, st, 1);
        g_pid[me] = spawn(me);
    }
    /* the survivors finish the call they are in and close */
    if (server > 0) kill(server, SIGCONT);
    __atomic_store_n(&g_sh->stop, 1, __ATOMIC_RELAXED);
    {
        int64_t limit = now_ns() + (int64_t)STOP_WAIT_S * 1000000000;
        int alive = nproc;
        while (alive > 0) {
            alive = 0;
            for (i = 0; i < nproc; i++) {
                pid_t p;
                if (g_pid[i] <= 0) continue;
                p = waitpid(g_pid[i], &st, WNOHANG);
                if (p == g_pid[i]) reaped(i, st, 0);
                else alive++;
            }
            if (alive && now_ns() > limit) {
                for (i = 0; i < nproc; i++)
                    if (g_pid[i] > 0) {
                        fail("worker %d (pid %d) did not stop within %d s, in %s (hung?)", i, (int)g_pid[i], STOP_WAIT_S,
                             ph_name[g_sh->slots[i].phase]);
                        kill(g_pid[i], SIGKILL);
                        waitpid(g_pid[i], &st, 0);
                        reaped(i, st, 1);
                    }
                break;
            }
            if (alive) sleep_us(10000);
        }
    }

    /* the final check, in a process that never opened this store */
    fflush(stdout);
    chk = fork();
    if (chk == 0) check_store();
    if (chk < 0) fail("fork: %s", strerror(errno));
    else {
        while (waitpid(chk, &st, 0) < 0 && errno == EINTR) {
        }
        if (WIFEXITED(st) && WEXITSTATUS(st) == CHECK_FAILED) g_failed++; /* it printed its FAIL lines */
        else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail("the checking process %s %d", WIFSIGNALED(st) ? "died of signal" : "exited with status",
                 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        else if (!g_sh->fin_done) fail("the checking process did not finish");
    }

    for (i = 0; i < g_sh->nmsg && i < NMSG; i++) fail("%s", g_sh->msg[i]);
    if (get_c(C_WRONG)) fail("%llu wrong payloads", (unsigned long long)get_c(C_WRONG));
    if (get_c(C_OPEN_FAIL)) fail("kcache_open failed or refused the store %llu times", (unsigned long long)get_c(C_OPEN_FAIL));
    if (g_st[S_REJECTS]) fail("workers rejected %llu entries (a torn or corrupt entry was visible)", (unsigned long long)g_st[S_REJECTS]);
    if (get_c(C_ERRORS)) {
        char b[600];
        size_t o = 0;
        b[0] = 0;
        for (i = 0; i < 32; i++)
            if (get_c(C_ERR_BY_STATUS + i) && o < sizeof b - 80)
                o += (size_t)snprintf(b + o, sizeof b - o, " %s: %llu;", kcache_strerror((kcache_status)i),
                                      (unsigned long long)get_c(C_ERR_BY_STATUS + i));
        fail("%llu calls failed:%s", (unsigned long long)get_c(C_ERRORS), b);
    }
    /* the run exercised what it is for */
    if (g_remote && (!g_st[S_HITS_REMOTE] || !g_st[S_REMOTE_PUTS]))
        fail("the storm did not exercise the remote: %llu remote hits, %llu remote puts", (unsigned long long)g_st[S_HITS_REMOTE],
             (unsigned long long)g_st[S_REMOTE_PUTS]);
    if (!g_kills || !get_c(C_HITS) || !get_c(C_PUT_OK) || !get_c(C_REMOVED) || !get_c(C_GOB_OK) || !g_st[S_EVICTIONS] ||
        !g_st[S_HITS_DISK])
        fail("the storm did not exercise the store: %llu kills, %llu hits (%llu from disk), %llu puts, %llu removes, "
             "%llu get_or_build, %llu evictions",
             (unsigned long long)g_kills, (unsigned long long)get_c(C_HITS), (unsigned long long)g_st[S_HITS_DISK],
             (unsigned long long)get_c(C_PUT_OK), (unsigned long long)get_c(C_REMOVED), (unsigned long long)get_c(C_GOB_OK),
             (unsigned long long)g_st[S_EVICTIONS]);

    drift = g_sh->fin_acc_bytes > g_sh->fin_real_bytes ? g_sh->fin_acc_bytes - g_sh->fin_real_bytes
                                                         : g_sh->fin_real_bytes - g_sh->fin_acc_bytes;
    printf("torture: fs=%s procs=%d seconds=%d ops=%llu gets=%llu hits=%llu puts=%llu removes=%llu kills=%llu wrong=%llu drift=%llu bytes\n",
           g_label, nproc, seconds, (unsigned long long)get_c(C_OPS), (unsigned long long)get_c(C_GETS), (unsigned long long)get_c(C_HITS),
           (unsigned long long)get_c(C_PUTS), (unsigned long long)get_c(C_REMOVES), (unsigned long long)g_kills,
           (unsigned long long)get_c(C_WRONG), (unsigned long long)drift);
    printf("torture: detail: get_or_build=%llu (built %llu, waited %llu) disk_hits=%llu mem_hits=%llu evictions=%llu "
           "rejects=%llu errors=%llu checked=%.1f MiB config_damage=%llu crashes=%llu; kills in",
           (unsigned long long)get_c(C_GOB), (unsigned long long)get_c(C_BUILT), (unsigned long long)g_st[S_BUILD_WAITS],
           (unsigned long long)g_st[S_HITS_DISK], (unsigned long long)g_st[S_HITS_MEM], (unsigned long long)g_st[S_EVICTIONS],
           (unsigned long long)g_st[S_REJECTS], (unsigned long long)get_c(C_ERRORS),
           (double)get_c(C_CHECKED_BYTES) / 1048576.0, (unsigned long long)g_cf_damage, (unsigned long long)g_crashes);
    for (i = 0; i < PH_COUNT; i++) printf(" %s %llu", ph_name[i], (unsigned long long)g_kill_phase[i]);
    if (g_remote)
        printf("; remote: %llu hits, %llu puts, %llu errors, server stopped %llu times", (unsigned long long)g_st[S_HITS_REMOTE],
               (unsigned long long)g_st[S_REMOTE_PUTS], (unsigned long long)g_st[S_REMOTE_ERRORS], (unsigned long long)stops);
    printf("; final: %llu entries, %llu bytes (accounted %llu before repair), %llu hit\n",
           (unsigned long long)g_sh->fin_real_entries, (unsigned long long)g_sh->fin_real_bytes,
           (unsigned long long)g_sh->fin_pre_acc_bytes, (unsigned long long)g_sh->fin_hits);
    if (!g_failed) printf("ok torture_%s\n", g_label);
    fflush(stdout);
    e = getenv("TORTURE_KEEP");
    if (!g_failed && !(e && strcmp(e, "1") == 0)) nftw(store, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    else printf("# torture: store kept in %s\n", store);
    return g_failed ? 1 : 0;
}

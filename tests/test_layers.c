/* tests/test_layers.c - read-only layers (KCACHE_LAYERS, issue 19) and kcache-inspect --make-layer.
 *
 * A layer is a store that is only ever read: searched after the local store and before the
 * remote, its hits validated as local ones and copied into the store. Every "layer" here is a
 * real store made by kcache (or by the tool), every refusal a real directory with the wrong mode
 * or owner, every remote a real redis-server (tests/kt_remote.h).
 *
 *   layer_hit            a hit from a layer: the payload, hits_layer, the copy into the store (a
 *                        later process hits its disk), KCACHE_LAYERS_COPY=0 (no copy), explain
 *                        "hit: layer DIR", the debug line, a field miss explained from the layer's
 *                        index, the environment variables, a memory-only cache
 *   layer_validation     a damaged, truncated or swapped entry in a layer is a miss and a reject,
 *                        left in place; a good copy in the next layer is the one stored locally;
 *                        a dependency that changed is a stamp miss, a touched one still hits
 *   layer_never_written  gets, puts, removes, evictions, get_or_build, verify, explain, traced
 *                        misses, the evict write policy, threads: the layer's tree (names, modes,
 *                        owners, inodes, mtimes, bytes) is exactly what it was
 *   layer_refusals       world- or group-writable layer, e/ or shard; missing path, a file, the
 *                        store itself, the same layer twice, more than 16, empty components, a
 *                        symlink of the caller's
 *   layer_owners         (root, with a second user from test_layers.sh) root's layer read by the
 *                        user; the user's layer refused by root and used by its owner; another
 *                        user's entry in root's layer is never read nor removed
 *   layer_order          several layers in the order given; the store before any layer
 *   layer_remote         layer before remote (no remote call for a layer hit); a corrupt layer
 *                        entry falls through to the remote; puts reach the remote, never the layer
 *   make_layer           kcache-inspect --make-layer: a subset of units, all of them, --private;
 *                        modes, no lock or tmp/, consistent to kcache-inspect, units readable,
 *                        dependency stamps kept, corrupt entries left out; refusals that make
 *                        nothing; the source store untouched
 *   layer_top            kcache-top -b shows a live process's layer hits and a hit-layer event
 *   layer_threads        threads hitting layers while copies evict each other: right payloads
 *   layer_lookups        a cold get and a cold get_or_build look at a layer once (counted by its
 *                        corrupt entry's debug line); explain of a layer hit or a corrupt layer
 *                        entry changes no counter (kcache_stats, the stats file)
 *
 * Usage: test_layers [KCACHE_INSPECT [KCACHE_TOP]] (default build/kcache-inspect, build/kcache-top).
 * Build: make build/test_layers build/asan/test_layers. Run as root through tests/test_layers.sh,
 * which makes the second user (KT_OTHER) and removes it after; without root that group prints
 * "skip layer_owners: ...". */
#define KCACHE_IMPLEMENTATION
#define KCACHE_ZSTD
#define KCACHE_HMAC_OPENSSL
#include "kcache_redis.h" /* the new way (it includes kcache.h); test_remote.c builds the 0.4 way */
#include "kt.h"
#include "kt_remote.h"

#include <dirent.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>

static char g_root[300];
static const char *g_inspect = "build/kcache-inspect", *g_top = "build/kcache-top";
static uid_t g_other = (uid_t)-1;
static gid_t g_other_gid;
static int g_ran;

/* ---- helpers ---------------------------------------------------------------------------------- */

static char g_log[65536];
static size_t g_log_len;
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static void log_cb(void *user, const char *line) {
    (void)user;
    pthread_mutex_lock(&g_log_mu);
    kt_log_append(g_log, sizeof g_log, &g_log_len, line);
    pthread_mutex_unlock(&g_log_mu);
}
static void log_clear(void) {
    g_log_len = 0;
    g_log[0] = 0;
}

static void path_of(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", g_root, name); }

/* A cache on g_root/name (NULL: memory only) with these layers (NULL: none), debug lines into g_log. */
static kcache *open_cache(const char *name, const char *layers, int copy) {
    kcache_config cfg;
    kcache *kc = NULL;
    char dir[400];
    kt_config(&cfg, dir, sizeof dir, g_root, name ? name : "-");
    if (!name) cfg.persistent = 0;
    cfg.layers = layers;
    cfg.layers_copy = copy;
    cfg.debug = 1;
    cfg.log = log_cb;
    cfg.mem_entries = 64;
    if (kcache_open(&kc, &cfg) != KCACHE_OK) return NULL;
    return kc;
}

/* The payload of key (unit, id) in variant v (so that two stores can hold different bytes for one key). */
static unsigned pid_of(unsigned id, unsigned v) { return id + 1000 * v; }

static kcache_status put_one(kcache *kc, const char *unit, unsigned id, unsigned v, size_t n) {
    return kt_put(kc, unit, id, pid_of(id, v), n);
}
/* 1: the variant-v payload; 0: a miss; -1: anything else (other bytes, an error). */
static int get_one(kcache *kc, const char *unit, unsigned id, unsigned v, size_t n) {
    return kt_get(kc, unit, id, pid_of(id, v), n);
}
static void explain_one(kcache *kc, const char *unit, unsigned id, char *out, size_t cap) {
    kcache_key k;
    kt_key(&k, unit, id);
    kcache_explain(kc, &k, out, cap);
    kcache_key_free(&k);
}
/* A store g_root/name holding unit's ids [from, to] in variant v, n bytes each. */
static int fill(const char *name, const char *unit, unsigned from, unsigned to, unsigned v, size_t n) {
    kcache *kc = open_cache(name, NULL, 1);
    unsigned id;
    int ok = kc != NULL;
    for (id = from; ok && id <= to; id++) ok = put_one(kc, unit, id, v, n) == KCACHE_OK;
    kcache_close(kc);
    return ok;
}
static void entry_path(const char *store, const char *unit, unsigned id, char *out, size_t cap) {
    kcache_key k;
    char hex[33];
    kt_key(&k, unit, id);
    kcache_hash_hex(kcache_key_digest(&k), hex);
    kcache_key_free(&k);
    snprintf(out, cap, "%s/%s/e/%.2s/%s.kce", g_root, store, hex, hex);
}
static long file_size(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0 ? (long)sb.st_size : -1;
}
static int flip_byte(const char *path, long at) { /* at < 0: from the end */
    unsigned char c = 0;
    int fd = open(path, O_RDWR);
    long size = file_size(path), pos = at < 0 ? size + at : at;
    int ok = fd >= 0 && pread(fd, &c, 1, pos) == 1;
    c ^= 0x40;
    ok = ok && pwrite(fd, &c, 1, pos) == 1;
    if (fd >= 0) close(fd);
    return ok;
}
static int copy_file(const char *from, const char *to) {
    char buf[65536];
    ssize_t n;
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_TRUNC), ok = in >= 0 && out >= 0;
    while (ok && (n = read(in, buf, sizeof buf)) > 0) ok = write(out, buf, (size_t)n) == n;
    if (in >= 0) close(in);
    if (out >= 0) close(out);
    return ok;
}
static int same_sig(kcache_hash128 a, kcache_hash128 b) { return a.lo == b.lo && a.hi == b.hi; }
static unsigned mode_of(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0 ? (unsigned)(sb.st_mode & 07777) : 0xffffu;
}
static int exists(const char *path) { return access(path, F_OK) == 0; }

/* Runs a shell command, its output (stdout and stderr) in out; the exit status. */
static int run(char *out, size_t cap, const char *fmt, ...) {
    char cmd[3000];
    va_list ap;
    FILE *f;
    size_t n = 0;
    int st;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    strncat(cmd, " 2>&1", sizeof cmd - strlen(cmd) - 1);
    fflush(stdout);
    if (!(f = popen(cmd, "r"))) { out[0] = 0; return -1; }
    n = fread(out, 1, cap - 1, f);
    out[n] = 0;
    st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
/* kcache-inspect --make-layer [options] SRC DEST (names under g_root); its exit status. */
static int make_layer(const char *src, const char *dest, const char *opts, char *out, size_t cap) {
    return run(out, cap, "%s --make-layer %s '%s/%s' '%s/%s'", g_inspect, opts ? opts : "", g_root, src, g_root, dest);
}

/* Every directory under root has mode dmode and every file fmode; the first that does not, or "". */
static char g_mode_bad[600];
static unsigned g_dmode, g_fmode;
static int mode_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    unsigned m = (unsigned)(s->st_mode & 07777);
    (void)f;
    if (!g_mode_bad[0] && ((flag == FTW_D && m != g_dmode) || (flag == FTW_F && m != g_fmode)))
        snprintf(g_mode_bad, sizeof g_mode_bad, "%s is %o", p, m);
    return 0;
}
static const char *modes_wrong(const char *root, unsigned dmode, unsigned fmode) {
    g_mode_bad[0] = 0;
    g_dmode = dmode;
    g_fmode = fmode;
    nftw(root, mode_one, 32, FTW_PHYS);
    return g_mode_bad;
}

/* ---- the second user (root only) ---------------------------------------------------------------- */

typedef int (*as_fn)(void *);
/* Runs fn in a child that became the second user; its exit status (0: its checks held). */
static int as_other(as_fn fn, void *arg) {
    pid_t p;
    int st = 0;
    fflush(stdout);
    p = fork();
    if (p == 0) {
        if (setgroups(0, NULL) != 0 || setgid(g_other_gid) != 0 || setuid(g_other) != 0) _exit(99);
        _exit(fn(arg));
    }
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- layer_hit -------------------------------------------------------------------------------- */

static void layer_hit(void) {
    char src[400], line[1024];
    kcache *kc;
    kcache_stats st;
    kcache_config cfg;
    path_of(src, sizeof src, "h_src");
    KT_CHECK(fill("h_src", "blur", 1, 3, 1, 5000));

    kc = open_cache("h_local", src, 1);
    KT_CHECK(kc != NULL);
    if (!kc) return;
    explain_one(kc, "blur", 1, line, sizeof line);
    KT_CHECK_MSG(strncmp(line, "hit: layer ", 11) == 0 && strstr(line, src), "explain before the first get: %s", line);
    log_clear();
    KT_CHECK(get_one(kc, "blur", 1, 1, 5000) == 1);
    KT_CHECK_MSG(strstr(g_log, "hit layer blur (5000 bytes) from ") != NULL, "debug log: %s", g_log);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_layer, 1);
    KT_CHECK_EQ_U64(st.hits_disk, 0);
    KT_CHECK_EQ_U64(st.misses, 0);
    KT_CHECK_EQ_U64(st.bytes_read, 5000);
    KT_CHECK(get_one(kc, "blur", 1, 1, 5000) == 1); /* memory now */
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_mem, 1);
    kcache_close(kc);

    /* an overload the layer does not have: a field miss, explained from the layer's index */
    kc = open_cache("h_field", src, 1);
    explain_one(kc, "blur", 99, line, sizeof line);
    KT_CHECK_MSG(strstr(line, "miss: a field differs: closest of 3 overload(s) of unit \"blur\" in layer ") && strstr(line, "id: \"1\" (stored) vs \"99\" (now)"),
                 "explain of another overload: %s", line);
    KT_CHECK(get_one(kc, "blur", 99, 1, 5000) == 0);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.misses_by_reason[KCACHE_REASON_FIELD], 1);
    kcache_close(kc);

    /* the copy: a process without the layer hits its own disk */
    kc = open_cache("h_local", NULL, 1);
    KT_CHECK(get_one(kc, "blur", 1, 1, 5000) == 1);
    explain_one(kc, "blur", 1, line, sizeof line);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_disk, 1);
    kcache_close(kc);
    kc = open_cache("h_local", src, 1); /* and with it, the store comes first */
    explain_one(kc, "blur", 1, line, sizeof line);
    KT_CHECK_MSG(strncmp(line, "hit: disk", 9) == 0, "explain after the copy: %s", line);
    kcache_close(kc);

    /* KCACHE_LAYERS_COPY=0: memory keeps it, the store does not */
    kc = open_cache("h_nocopy", src, 0);
    KT_CHECK(get_one(kc, "blur", 2, 1, 5000) == 1);
    KT_CHECK(get_one(kc, "blur", 2, 1, 5000) == 1);
    kcache_get_stats(kc, &st);
    KT_CHECK(st.hits_layer == 1 && st.hits_mem == 1);
    kcache_close(kc);
    kc = open_cache("h_nocopy", NULL, 1);
    KT_CHECK(get_one(kc, "blur", 2, 1, 5000) == 0);
    kcache_close(kc);

    /* a cache without a store still reads its layers */
    kc = open_cache(NULL, src, 1);
    KT_CHECK(kc && get_one(kc, "blur", 3, 1, 5000) == 1);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_layer, 1);
    kcache_close(kc);

    /* the environment */
    setenv("KCACHE_LAYERS", src, 1);
    setenv("KCACHE_LAYERS_COPY", "0", 1);
    kcache_config_init(&cfg);
    KT_CHECK(cfg.layers && strcmp(cfg.layers, src) == 0 && cfg.layers_copy == 0);
    setenv("KCACHE_LAYERS_COPY", "sometimes", 1);
    kcache_config_init(&cfg);
    KT_CHECK(cfg.layers_copy == 1); /* a bad value keeps the default */
    unsetenv("KCACHE_LAYERS");
    unsetenv("KCACHE_LAYERS_COPY");
    kcache_config_init(&cfg);
    KT_CHECK(cfg.layers == NULL && cfg.layers_copy == 1);
}

/* ---- layer_validation ------------------------------------------------------------------------- */

static void layer_validation(void) {
    char src[400], good[400], both[820], p1[500], p2[500], p3[500], p4[500], line[1024], dep[400], deps[400];
    kcache_hash128 before;
    kcache_stats st;
    kcache *kc;
    kcache_key k;
    const void *d;
    size_t n;
    FILE *f;
    path_of(src, sizeof src, "v_src");
    path_of(good, sizeof good, "v_good");
    KT_CHECK(fill("v_src", "prog", 1, 4, 1, 3000));
    KT_CHECK(fill("v_good", "prog", 1, 1, 1, 3000));
    entry_path("v_src", "prog", 1, p1, sizeof p1);
    entry_path("v_src", "prog", 2, p2, sizeof p2);
    entry_path("v_src", "prog", 3, p3, sizeof p3);
    entry_path("v_src", "prog", 4, p4, sizeof p4);
    KT_CHECK(flip_byte(p1, -10));                                   /* a payload byte */
    KT_CHECK(truncate(p2, file_size(p2) / 2) == 0);                 /* cut in half */
    KT_CHECK(copy_file(p4, p3) && file_size(p3) == file_size(p4)); /* another key's entry under its name */
    before = kt_tree_sig(src);

    kc = open_cache("v_local", src, 1);
    explain_one(kc, "prog", 1, line, sizeof line);
    KT_CHECK_MSG(strstr(line, "miss: rejected") && strstr(line, "in layer ") && strstr(line, "stays there"), "explain of a damaged layer entry: %s", line);
    log_clear();
    KT_CHECK(get_one(kc, "prog", 1, 1, 3000) == 0);
    KT_CHECK(get_one(kc, "prog", 2, 1, 3000) == 0);
    KT_CHECK(get_one(kc, "prog", 3, 1, 3000) == 0); /* never id 4's bytes */
    KT_CHECK(get_one(kc, "prog", 4, 1, 3000) == 1);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.rejects, 3);
    KT_CHECK_EQ_U64(st.hits_layer, 1);
    KT_CHECK_MSG(strstr(g_log, "left there (a layer is read-only)") != NULL, "debug log: %s", g_log);
    kcache_close(kc);
    KT_CHECK_MSG(same_sig(before, kt_tree_sig(src)), "a damaged layer entry was changed or removed");
    entry_path("v_local", "prog", 1, line, sizeof line);
    KT_CHECK_MSG(!exists(line), "a damaged layer entry was copied into the store");

    /* the next layer's good copy is the one served and stored */
    snprintf(both, sizeof both, "%s:%s", src, good);
    kc = open_cache("v_local2", both, 1);
    KT_CHECK(get_one(kc, "prog", 1, 1, 3000) == 1);
    kcache_get_stats(kc, &st);
    KT_CHECK(st.rejects == 1 && st.hits_layer == 1);
    kcache_close(kc);
    kc = open_cache("v_local2", NULL, 1);
    KT_CHECK(get_one(kc, "prog", 1, 1, 3000) == 1);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_disk, 1);
    kcache_close(kc);
    KT_CHECK(same_sig(before, kt_tree_sig(src)));

    /* dependency stamps: checked on a layer's entry as on a local one */
    path_of(dep, sizeof dep, "v_dep.h");
    path_of(deps, sizeof deps, "v_deps");
    f = fopen(dep, "w");
    if (f) { fputs("#define A 1\n", f); fclose(f); }
    kc = open_cache("v_deps", NULL, 1);
    kt_key(&k, "withdep", 1);
    KT_CHECK(kcache_key_file(&k, "inc", dep) == KCACHE_OK);
    KT_CHECK(kcache_put(kc, &k, "binary", 6) == KCACHE_OK);
    kcache_key_free(&k);
    kcache_close(kc);
    before = kt_tree_sig(deps);
    {
        struct timespec ts[2];
        kt_sleep_ms(20);
        clock_gettime(CLOCK_REALTIME, &ts[0]);
        ts[1] = ts[0];
        KT_CHECK(utimensat(AT_FDCWD, dep, ts, 0) == 0); /* touched, same content: still a hit */
    }
    kc = open_cache("v_deps_l1", deps, 0);
    kt_key(&k, "withdep", 1);
    kcache_key_file(&k, "inc", dep);
    KT_CHECK(kcache_get(kc, &k, &d, &n) == KCACHE_OK && n == 6 && memcmp(d, "binary", 6) == 0);
    if (n == 6) kcache_release(kc, d);
    kcache_key_free(&k);
    kcache_close(kc);
    f = fopen(dep, "w");
    if (f) { fputs("#define A 2 /* changed */\n", f); fclose(f); }
    kc = open_cache("v_deps_l2", deps, 1);
    kt_key(&k, "withdep", 1);
    kcache_key_file(&k, "inc", dep);
    kcache_explain(kc, &k, line, sizeof line);
    KT_CHECK_MSG(strstr(line, "miss: a dependency changed: file inc") && strstr(line, "size") && strstr(line, "(the entry in layer "),
                 "explain of a stale layer entry: %s", line);
    KT_CHECK(kcache_get(kc, &k, &d, &n) == KCACHE_MISS);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.misses_by_reason[KCACHE_REASON_STAMP], 1);
    KT_CHECK_EQ_U64(st.rejects, 0);
    kcache_key_free(&k);
    kcache_close(kc);
    KT_CHECK_MSG(same_sig(before, kt_tree_sig(deps)), "a stale layer entry was changed or removed");
}

/* ---- layer_never_written ---------------------------------------------------------------------- */

static int build_fn(void *user, void **out, size_t *out_size) {
    unsigned id = *(unsigned *)user;
    unsigned char *p = (unsigned char *)KCACHE_MALLOC(4000);
    if (!p) return 1;
    kt_payload(p, 4000, pid_of(id, 1));
    *out = p;
    *out_size = 4000;
    return 0;
}
typedef struct hammer { kcache *kc; unsigned seed; int bad; } hammer;
static void *hammer_run(void *arg) {
    hammer *h = (hammer *)arg;
    int i;
    for (i = 0; i < 300; i++) {
        unsigned id = 1 + rand_r(&h->seed) % 20;
        if (get_one(h->kc, "u", id, 1, 4000) != 1) h->bad++;
    }
    return NULL;
}
/* n threads (at most 8) each getting 300 random ids of unit "u" 1..20 (variant 1) from kc. */
static void hammer_all(kcache *kc, int n, unsigned seed) {
    hammer h[8];
    pthread_t t[8];
    int i;
    for (i = 0; i < n; i++) {
        h[i].kc = kc;
        h[i].seed = seed + (unsigned)i;
        h[i].bad = 0;
        pthread_create(&t[i], NULL, hammer_run, &h[i]);
    }
    for (i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        KT_CHECK_MSG(h[i].bad == 0, "thread %d: %d wrong lookups", i, h[i].bad);
    }
}

static void layer_never_written(void) {
    char src[400], line[1024];
    kcache_hash128 before;
    kcache_config cfg;
    kcache_stats st;
    kcache *kc;
    char dir[400];
    unsigned id;
    int policy;
    path_of(src, sizeof src, "w_src");
    KT_CHECK(fill("w_src", "u", 1, 20, 1, 4000));
    before = kt_tree_sig(src); /* ours, 0700: writable by us, and still never written */
    for (policy = 0; policy < 2; policy++) {
        const char *name = policy ? "w_local_evict" : "w_local";
        kt_config(&cfg, dir, sizeof dir, g_root, name);
        cfg.layers = src;
        cfg.max_size = 40 << 10; /* about 9 entries: the copies evict each other */
        cfg.trace = 1;
        cfg.write_policy = policy ? KCACHE_WRITE_EVICT : KCACHE_WRITE_THROUGH;
        cfg.mem_entries = 4;
        cfg.debug = 1;
        cfg.log = log_cb;
        cfg.publish = 1;
        kc = NULL;
        KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK && kc);
        if (!kc) return;
        for (id = 1; id <= 20; id++) KT_CHECK(get_one(kc, "u", id, 1, 4000) == 1);
        for (id = 1; id <= 5; id++) KT_CHECK(put_one(kc, "u", id, 2, 4000) == KCACHE_OK);    /* the layer's keys, new bytes */
        for (id = 100; id <= 110; id++) KT_CHECK(put_one(kc, "u", id, 1, 4000) == KCACHE_OK); /* new keys */
        for (id = 1; id <= 10; id++) {
            kcache_key k;
            kt_key(&k, "u", id);
            kcache_remove(kc, &k); /* the store's and memory's copy go; the layer's stays */
            kcache_key_free(&k);
        }
        KT_CHECK(get_one(kc, "u", 3, 1, 4000) == 1); /* from the layer again */
        for (id = 15; id <= 200; id += 185) {
            kcache_key k;
            const void *d;
            size_t n;
            kt_key(&k, "u", id);
            KT_CHECK(kcache_get_or_build(kc, &k, build_fn, &id, &d, &n) == KCACHE_OK && kt_payload_ok(d, n, 4000, pid_of(id, 1)));
            if (d) kcache_release(kc, d);
            kcache_key_free(&k);
        }
        KT_CHECK(get_one(kc, "u", 300, 1, 4000) == 0); /* a traced miss */
        explain_one(kc, "u", 300, line, sizeof line);
        explain_one(kc, "u", 12, line, sizeof line);
        KT_CHECK(kcache_verify(kc, 1) == KCACHE_OK);
        hammer_all(kc, 3, 1);
        kcache_get_stats(kc, &st);
        KT_CHECK(st.evictions > 0 && st.hits_layer >= 20);
        kcache_close(kc);
        KT_CHECK_MSG(same_sig(before, kt_tree_sig(src)), "the layer changed (%s)", policy ? "evict policy" : "write-through");
    }
    /* the same directory as store and layer: the store is written, the layer is left out */
    log_clear();
    kc = open_cache("w_src", src, 1);
    KT_CHECK_MSG(strstr(g_log, "it is the store itself") != NULL, "debug log: %s", g_log);
    KT_CHECK(get_one(kc, "u", 1, 1, 4000) == 1);
    kcache_get_stats(kc, &st);
    KT_CHECK(st.hits_disk == 1 && st.hits_layer == 0);
    kcache_close(kc);
}

/* ---- layer_refusals --------------------------------------------------------------------------- */

/* Whether a cache with these layers hits id (variant 1) of unit "r" (1, 0, -1 as get_one); its
   debug lines are in g_log. */
static int hits_with(const char *layers, unsigned id) {
    kcache *kc;
    int r;
    log_clear();
    kc = open_cache(NULL, layers, 1);
    r = kc ? get_one(kc, "r", id, 1, 1000) : -1;
    kcache_close(kc);
    return r;
}

static void layer_refusals(void) {
    char src[400], e[500], shard[500], link[600], file[400], spec[8192], line[2048], p[500], want[2000];
    kcache *kc;
    int i;
    path_of(src, sizeof src, "r_src");
    KT_CHECK(fill("r_src", "r", 1, 2, 1, 1000));
    KT_CHECK(hits_with(src, 1) == 1);
    chmod(src, 0777);
    KT_CHECK(hits_with(src, 1) == 0);
    KT_CHECK_MSG(strstr(g_log, "not used") && strstr(g_log, "writable by group or others"), "a world-writable layer: %s", g_log);
    kc = open_cache(NULL, src, 1);
    explain_one(kc, "r", 1, line, sizeof line);
    KT_CHECK_MSG(strstr(line, "miss: cold") && strstr(line, "not used") && strstr(line, "writable"), "explain names the refused layer: %s", line);
    /* the reason only, nothing of what it would mean for a store (refusing it, memory only) */
    snprintf(want, sizeof want, "(layer %s not used: %s is writable by group or others)", src, src);
    KT_CHECK_MSG(strstr(line, want) != NULL, "a refused layer's reason, want \"%s\": %s", want, line);
    kcache_close(kc);
    chmod(src, 0770);
    KT_CHECK(hits_with(src, 1) == 0);
    chmod(src, 0755); /* readable by others, writable by no one else: fine */
    KT_CHECK(hits_with(src, 1) == 1);
    /* a directory on the way to the layer writable by others: that directory named, not "the store" */
    path_of(p, sizeof p, "r_way");
    mkdir(p, 0700);
    KT_CHECK(fill("r_way/l", "r", 1, 1, 1, 1000));
    chmod(p, 0777);
    snprintf(link, sizeof link, "%s/l", p);
    kc = open_cache("r_way_store", link, 1);
    KT_CHECK(kc && kcache_dir(kc)); /* the store itself is used */
    explain_one(kc, "r", 1, line, sizeof line);
    kcache_close(kc);
    chmod(p, 0700);
    snprintf(want, sizeof want, "(layer %s not used: %s (on the way to %s) is writable by others and not sticky)", link, p, link);
    KT_CHECK_MSG(strstr(line, want) != NULL, "a layer under a loose directory, want \"%s\": %s", want, line);
    snprintf(e, sizeof e, "%s/e", src);
    chmod(e, 0777);
    KT_CHECK(hits_with(src, 1) == 0);
    KT_CHECK_MSG(strstr(g_log, "/e is writable by group or others") != NULL, "a world-writable e/: %s", g_log);
    chmod(e, 0700);
    entry_path("r_src", "r", 1, p, sizeof p);
    snprintf(shard, sizeof shard, "%.*s", (int)(strrchr(p, '/') - p), p);
    chmod(shard, 0777); /* that shard only: its entries miss, never repaired */
    KT_CHECK(hits_with(src, 1) == 0);
    KT_CHECK_MSG(strstr(g_log, "is writable by group or others; not used") != NULL, "a world-writable shard: %s", g_log);
    entry_path("r_src", "r", 2, line, sizeof line);
    if (strncmp(line, shard, strlen(shard)) != 0) KT_CHECK(hits_with(src, 2) == 1); /* (another shard: 255 times in 256) */
    KT_CHECK_MSG(mode_of(shard) == 0777, "a layer's shard was repaired: %o", mode_of(shard));
    chmod(shard, 0700);
    KT_CHECK(hits_with(src, 1) == 1);

    path_of(link, sizeof link, "r_link");
    KT_CHECK(symlink(src, link) == 0); /* the caller's own symlink is followed, as for a store */
    KT_CHECK(hits_with(link, 1) == 1);
    path_of(file, sizeof file, "r_file");
    {
        FILE *f = fopen(file, "w");
        if (f) fclose(f);
    }
    KT_CHECK(hits_with(file, 1) == 0);
    KT_CHECK_MSG(strstr(g_log, "not used") != NULL, "a file as a layer: %s", g_log);
    snprintf(spec, sizeof spec, "%s/r_missing", g_root);
    KT_CHECK(hits_with(spec, 1) == 0);
    KT_CHECK_MSG(strstr(g_log, "not used: cannot open") != NULL, "a missing layer: %s", g_log);
    snprintf(spec, sizeof spec, ":::%s/r_missing::%s::", g_root, src); /* empty components skipped, the rest searched */
    KT_CHECK(hits_with(spec, 2) == 1);
    snprintf(spec, sizeof spec, "%s:%s", src, link); /* the same layer twice */
    KT_CHECK(hits_with(spec, 1) == 1);
    KT_CHECK_MSG(strstr(g_log, "named before") != NULL, "a layer named twice: %s", g_log);
    /* 17 layers: the last one (the one holding the entry) is left out */
    spec[0] = 0;
    for (i = 0; i < 16; i++) {
        char d[400];
        snprintf(d, sizeof d, "%s/r_empty%d", g_root, i);
        mkdir(d, 0700);
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "%s:", d);
    }
    strcat(spec, src);
    KT_CHECK(hits_with(spec, 1) == 0);
    KT_CHECK_MSG(strstr(g_log, "only the first 16 layers are used") && strstr(g_log, "holds no entries (no e/)"), "17 layers: %s", g_log);
}

/* ---- layer_owners (root) ---------------------------------------------------------------------- */

typedef struct owner_case { const char *layers; const char *store; unsigned id; int want; } owner_case;
static int other_gets(void *arg) {
    owner_case *c = (owner_case *)arg;
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_stats st;
    char dir[400];
    int r;
    kt_config(&cfg, dir, sizeof dir, g_root, c->store);
    cfg.layers = c->layers;
    if (kcache_open(&kc, &cfg) != KCACHE_OK || !kcache_dir(kc)) return 10;
    r = get_one(kc, "o", c->id, 1, 2000);
    kcache_get_stats(kc, &st);
    if (r != c->want) { kcache_close(kc); return 11; }
    if (r == 1 && st.hits_layer != 1) { kcache_close(kc); return 12; }
    if (put_one(kc, "o", 500, 1, 100) != KCACHE_OK) { kcache_close(kc); return 13; } /* its own store takes puts */
    kcache_close(kc);
    return 0;
}
static int other_inspects(void *arg) {
    char out[8192];
    int rc = run(out, sizeof out, "'%s/kcache-inspect' '%s'", g_root, (const char *)arg);
    return rc == 0 && strstr(out, "verdict    consistent") && strstr(out, "root's: kcache reads it") ? 0 : 20;
}

static void layer_owners(void) {
    char out[4096], l1[400], l2[400], ustore[400], p[500];
    owner_case c;
    kcache_hash128 before;
    int rc;
    if (geteuid() != 0) { printf("skip layer_owners: not root\n"); return; }
    if (g_other == (uid_t)-1) { printf("skip layer_owners: no second user (run through tests/test_layers.sh)\n"); return; }
    g_ran = 1;
    KT_CHECK(fill("o_src", "o", 1, 3, 1, 2000));
    KT_CHECK(make_layer("o_src", "o_l1", NULL, out, sizeof out) == 0);
    KT_CHECK(make_layer("o_src", "o_l2", NULL, out, sizeof out) == 0);
    path_of(l1, sizeof l1, "o_l1");
    path_of(l2, sizeof l2, "o_l2");
    path_of(ustore, sizeof ustore, "o_user");
    KT_CHECK(mkdir(ustore, 0700) == 0 && chown(ustore, g_other, g_other_gid) == 0);
    KT_CHECK(run(out, sizeof out, "cp '%s' '%s/kcache-inspect' && chmod 755 '%s/kcache-inspect'", g_inspect, g_root, g_root) == 0);

    /* root's layer (0755 / 0644, as --make-layer leaves it): the user reads it, and so does kcache-inspect */
    before = kt_tree_sig(l1);
    c.layers = l1; c.store = "o_user/s"; c.id = 1; c.want = 1;
    KT_CHECK_MSG((rc = as_other(other_gets, &c)) == 0, "the user on root's layer: %d", rc);
    KT_CHECK_MSG((rc = as_other(other_inspects, l1)) == 0, "kcache-inspect on root's layer, as the user: %d", rc);
    KT_CHECK(same_sig(before, kt_tree_sig(l1)));

    /* another user's entry in root's layer: root never reads it (nor removes it); its owner may */
    entry_path("o_l1", "o", 2, p, sizeof p);
    KT_CHECK(chown(p, g_other, g_other_gid) == 0);
    before = kt_tree_sig(l1);
    log_clear();
    {
        kcache *kc = open_cache("o_root", l1, 1);
        KT_CHECK(get_one(kc, "o", 2, 1, 2000) == 0);
        KT_CHECK(get_one(kc, "o", 3, 1, 2000) == 1);
        kcache_close(kc);
    }
    KT_CHECK_MSG(strstr(g_log, "not yours or root's") != NULL, "debug log: %s", g_log);
    KT_CHECK(same_sig(before, kt_tree_sig(l1)) && exists(p));
    c.store = "o_user/s2"; c.id = 2; c.want = 1;
    KT_CHECK_MSG((rc = as_other(other_gets, &c)) == 0, "the user on its own entry in root's layer: %d", rc);

    /* the user's layer: root refuses it (another user could choose what root loads); its owner uses it */
    KT_CHECK(run(out, sizeof out, "chown -R %u:%u '%s'", (unsigned)g_other, (unsigned)g_other_gid, l2) == 0);
    {
        kcache *kc = open_cache("o_root2", l2, 1);
        char line[1024], want[1000];
        KT_CHECK(get_one(kc, "o", 1, 1, 2000) == 0);
        explain_one(kc, "o", 1, line, sizeof line);
        snprintf(want, sizeof want, "(layer %s not used: %s is owned by another user)", l2, l2);
        KT_CHECK_MSG(strstr(line, want) != NULL, "root on the user's layer, want \"%s\": %s", want, line);
        kcache_close(kc);
    }
    c.layers = l2; c.store = "o_user/s3"; c.id = 3; c.want = 1;
    KT_CHECK_MSG((rc = as_other(other_gets, &c)) == 0, "the user on its own layer: %d", rc);
}

/* ---- layer_order ------------------------------------------------------------------------------ */

static void layer_order(void) {
    char a[400], b[400], c[400], spec[1300];
    kcache *kc;
    kcache_stats st;
    path_of(a, sizeof a, "ord_a");
    path_of(b, sizeof b, "ord_b");
    path_of(c, sizeof c, "ord_c");
    KT_CHECK(fill("ord_a", "ord", 1, 1, 1, 1500));
    KT_CHECK(fill("ord_b", "ord", 1, 2, 2, 1500));
    KT_CHECK(fill("ord_c", "ord", 1, 3, 3, 1500));
    snprintf(spec, sizeof spec, "%s:%s:%s", a, b, c);
    kc = open_cache("ord_l1", spec, 1);
    KT_CHECK(get_one(kc, "ord", 1, 1, 1500) == 1);
    KT_CHECK(get_one(kc, "ord", 2, 2, 1500) == 1);
    KT_CHECK(get_one(kc, "ord", 3, 3, 1500) == 1);
    kcache_close(kc);
    snprintf(spec, sizeof spec, "%s:%s:%s", c, b, a);
    kc = open_cache("ord_l2", spec, 1);
    KT_CHECK(get_one(kc, "ord", 1, 3, 1500) == 1);
    KT_CHECK(get_one(kc, "ord", 2, 3, 1500) == 1);
    kcache_close(kc);
    /* the store comes before any layer */
    KT_CHECK(fill("ord_l3", "ord", 1, 1, 9, 1500));
    kc = open_cache("ord_l3", spec, 1);
    KT_CHECK(get_one(kc, "ord", 1, 9, 1500) == 1);
    kcache_get_stats(kc, &st);
    KT_CHECK(st.hits_disk == 1 && st.hits_layer == 0);
    kcache_close(kc);
}

/* ---- layer_remote ----------------------------------------------------------------------------- */

static kcache *open_remote(const char *name, const char *layers, const char *url) {
    kcache_config cfg;
    kcache *kc = NULL;
    char dir[400];
    kt_config(&cfg, dir, sizeof dir, g_root, name);
    cfg.layers = layers;
    cfg.remote = url;
    cfg.remote_timeout_ms = 2000;
    cfg.debug = 1;
    cfg.log = log_cb;
    return kcache_open(&kc, &cfg) == KCACHE_OK ? kc : NULL;
}

static void layer_remote(void) {
    kt_redis R;
    char layer[400], p[500], line[1024];
    kcache_hash128 before;
    kcache_stats st;
    kcache *kc;
    if (!kt_redis_start(&R, g_root, 0, NULL)) { KT_FAILF("redis-server did not start (scripts/deps.sh installs it)"); return; }
    kc = open_remote("lr_a", NULL, R.url); /* another machine fills the remote: variant 2 */
    KT_CHECK(kc && put_one(kc, "lr", 1, 2, 2500) == KCACHE_OK && put_one(kc, "lr", 2, 2, 2500) == KCACHE_OK &&
             put_one(kc, "lr", 3, 2, 2500) == KCACHE_OK);
    kcache_close(kc);
    path_of(layer, sizeof layer, "lr_layer");
    KT_CHECK(fill("lr_layer", "lr", 1, 3, 1, 2500)); /* the layer: variant 1, id 3 damaged */
    entry_path("lr_layer", "lr", 3, p, sizeof p);
    KT_CHECK(flip_byte(p, -1));
    before = kt_tree_sig(layer);

    kc = open_remote("lr_c", layer, R.url);
    explain_one(kc, "lr", 1, line, sizeof line);
    KT_CHECK_MSG(strncmp(line, "hit: layer ", 11) == 0, "explain, in the layer and on the remote: %s", line);
    explain_one(kc, "lr", 3, line, sizeof line);
    KT_CHECK_MSG(strncmp(line, "hit: remote (", 13) == 0, "explain, damaged in the layer and on the remote: %s", line);
    kcache_close(kc);

    kc = open_remote("lr_b", layer, R.url);
    KT_CHECK(get_one(kc, "lr", 1, 1, 2500) == 1);
    kcache_get_stats(kc, &st);
    KT_CHECK_MSG(st.hits_layer == 1 && st.hits_remote == 0 && st.remote_lookups == 0, "a layer hit asks no remote: layer %llu remote %llu lookups %llu",
                 (unsigned long long)st.hits_layer, (unsigned long long)st.hits_remote, (unsigned long long)st.remote_lookups);
    KT_CHECK(get_one(kc, "lr", 2, 1, 2500) == 1); /* in the layer too */
    KT_CHECK(get_one(kc, "lr", 3, 2, 2500) == 1); /* damaged in the layer: the remote's */
    kcache_get_stats(kc, &st);
    KT_CHECK(st.hits_layer == 2 && st.hits_remote == 1 && st.rejects == 1 && st.remote_rejects == 0);
    KT_CHECK(put_one(kc, "lr", 4, 1, 2500) == KCACHE_OK);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.remote_puts, 1);
    kcache_close(kc);
    kc = open_remote("lr_d", layer, R.url);
    KT_CHECK(get_one(kc, "lr", 4, 1, 2500) == 1); /* from the remote: the put never went into the layer */
    kcache_get_stats(kc, &st);
    KT_CHECK(st.hits_remote == 1 && st.hits_layer == 0);
    kcache_close(kc);
    KT_CHECK_MSG(same_sig(before, kt_tree_sig(layer)), "the layer changed");
    kt_redis_stop(&R);
}

/* ---- make_layer ------------------------------------------------------------------------------- */

static void make_layer_cmd(void) {
    char out[8192], src[400], l1[400], l2[400], l3[400], l5[400], dep[400], p[500], line[1024];
    kcache_hash128 src_sig, l1_sig;
    kcache_stats st;
    kcache_key k;
    kcache *kc;
    const void *d;
    size_t n;
    FILE *f;
    int rc;
    if (access(g_inspect, X_OK) != 0) { KT_FAILF("%s is not an executable (make build/kcache-inspect)", g_inspect); return; }
    path_of(src, sizeof src, "m_src");
    path_of(l1, sizeof l1, "m_l1");
    path_of(l2, sizeof l2, "m_l2");
    path_of(l3, sizeof l3, "m_l3");
    path_of(l5, sizeof l5, "m_l5");
    KT_CHECK(fill("m_src", "a", 1, 3, 1, 2100) && fill("m_src", "b", 1, 2, 1, 2200) && fill("m_src", "c", 1, 1, 1, 2300));
    path_of(dep, sizeof dep, "m_dep.h");
    if ((f = fopen(dep, "w")) != NULL) { fputs("int x;\n", f); fclose(f); }
    kc = open_cache("m_src", NULL, 1);
    kt_key(&k, "d", 1);
    kcache_key_file(&k, "inc", dep);
    KT_CHECK(kcache_put(kc, &k, "dep-binary", 10) == KCACHE_OK);
    kcache_key_free(&k);
    kcache_close(kc);
    src_sig = kt_tree_sig(src);

    /* a subset of units */
    rc = make_layer("m_src", "m_l1", "--unit a --unit d", out, sizeof out);
    KT_CHECK_MSG(rc == 0 && strstr(out, "copied     4 entries of 2 units") && strstr(out, "KCACHE_LAYERS="), "make-layer a, d: %d: %s", rc, out);
    KT_CHECK_MSG(!*modes_wrong(l1, 0755, 0644), "the layer's modes: %s", g_mode_bad);
    snprintf(p, sizeof p, "%s/lock", l1);
    KT_CHECK(!exists(p));
    snprintf(p, sizeof p, "%s/tmp", l1);
    KT_CHECK(!exists(p));
    rc = run(out, sizeof out, "%s '%s'", g_inspect, l1);
    KT_CHECK_MSG(rc == 0 && strstr(out, "verdict    consistent") && strstr(out, "4 entries"), "kcache-inspect on the layer: %d: %s", rc, out);
    rc = run(out, sizeof out, "%s '%s' a", g_inspect, l1);
    KT_CHECK_MSG(rc == 0 && strstr(out, "3 live"), "kcache-inspect on a unit of the layer: %d: %s", rc, out);
    l1_sig = kt_tree_sig(l1);
    kc = open_cache("m_use1", l1, 1);
    KT_CHECK(get_one(kc, "a", 1, 1, 2100) == 1 && get_one(kc, "a", 3, 1, 2100) == 1);
    KT_CHECK(get_one(kc, "b", 1, 1, 2200) == 0 && get_one(kc, "c", 1, 1, 2300) == 0);
    kt_key(&k, "d", 1);
    kcache_key_file(&k, "inc", dep);
    KT_CHECK(kcache_get(kc, &k, &d, &n) == KCACHE_OK && n == 10 && memcmp(d, "dep-binary", 10) == 0); /* the stamp came along */
    if (n == 10) kcache_release(kc, d);
    kcache_key_free(&k);
    kcache_get_stats(kc, &st);
    KT_CHECK_EQ_U64(st.hits_layer, 3);
    kcache_close(kc);
    if ((f = fopen(dep, "w")) != NULL) { fputs("int x, y;\n", f); fclose(f); }
    kc = open_cache("m_use2", l1, 1);
    kt_key(&k, "d", 1);
    kcache_key_file(&k, "inc", dep);
    KT_CHECK(kcache_get(kc, &k, &d, &n) == KCACHE_MISS);
    kcache_explain(kc, &k, line, sizeof line);
    KT_CHECK_MSG(strstr(line, "a dependency changed") != NULL, "a stale dependency in a made layer: %s", line);
    kcache_key_free(&k);
    kcache_close(kc);
    KT_CHECK(same_sig(l1_sig, kt_tree_sig(l1)));

    /* everything; --private */
    rc = make_layer("m_src", "m_l2", NULL, out, sizeof out);
    KT_CHECK_MSG(rc == 0 && strstr(out, "copied     7 entries of 4 units"), "make-layer of all: %d: %s", rc, out);
    rc = run(out, sizeof out, "%s '%s'", g_inspect, l2);
    KT_CHECK_MSG(rc == 0 && strstr(out, "verdict    consistent"), "kcache-inspect on the whole layer: %s", out);
    mkdir(l3, 0700); /* an empty directory is fine */
    rc = make_layer("m_src", "m_l3", "--private --unit c", out, sizeof out);
    KT_CHECK_MSG(rc == 0 && strstr(out, "copied     1 entry of 1 unit"), "make-layer --private: %d: %s", rc, out);
    KT_CHECK_MSG(!*modes_wrong(l3, 0700, 0600), "a private layer's modes: %s", g_mode_bad);

    /* refusals: nothing made, nothing changed */
    KT_CHECK(make_layer("m_src", "m_l1", NULL, out, sizeof out) == 2 && strstr(out, "not an empty directory"));
    KT_CHECK(same_sig(l1_sig, kt_tree_sig(l1)));
    KT_CHECK(make_layer("m_src", "m_l4", "--unit nosuch", out, sizeof out) == 2 && strstr(out, "no entry of unit \"nosuch\""));
    path_of(p, sizeof p, "m_l4");
    KT_CHECK(!exists(p));
    KT_CHECK(make_layer("m_src", "m_src/inside", NULL, out, sizeof out) == 2 && strstr(out, "inside the store"));
    KT_CHECK(make_layer("m_src", "m_nodir/l", NULL, out, sizeof out) == 2 && strstr(out, "does not exist"));
    KT_CHECK(make_layer("m_nosrc", "m_l6", NULL, out, sizeof out) == 2);
    KT_CHECK(run(out, sizeof out, "%s --make-layer '%s'", g_inspect, src) == 2);
    KT_CHECK(run(out, sizeof out, "%s --unit a '%s'", g_inspect, src) == 2);
    KT_CHECK_MSG(same_sig(src_sig, kt_tree_sig(src)), "make-layer changed its source store");

    /* a damaged entry in the source is left out, and counted */
    entry_path("m_src", "b", 2, p, sizeof p);
    KT_CHECK(flip_byte(p, -3));
    rc = make_layer("m_src", "m_l5", NULL, out, sizeof out);
    KT_CHECK_MSG(rc == 0 && strstr(out, "copied     6 entries of 4 units") && strstr(out, "1 corrupt"), "make-layer past a damaged entry: %d: %s", rc, out);
    rc = run(out, sizeof out, "%s --verify '%s'", g_inspect, l5);
    KT_CHECK_MSG(rc == 0 && strstr(out, "verdict    consistent"), "kcache-inspect --verify on it: %s", out);
}

/* ---- layer_top -------------------------------------------------------------------------------- */

/* kcache-top's interactive header (in tmux: it needs a terminal) on a store whose live process
   hit a layer twice: the layer hits are the layers', not the remote's (there is none). */
static void top_header(const char *dir) {
    char sock[64], out[16384], pane[16384];
    const char *total = NULL, *eol;
    int i;
    if (run(out, sizeof out, "command -v tmux") != 0) {
        KT_FAILF("tmux is not installed (scripts/deps.sh installs it)");
        return;
    }
    snprintf(sock, sizeof sock, "kclt-%ld", (long)getpid()); /* a private tmux server */
    if (run(out, sizeof out, "tmux -L %s -f /dev/null new-session -d -s kt -x 160 -y 40 \"'%s' -d 0.2 '%s'; sleep 30\"", sock, g_top,
            dir) != 0) {
        KT_FAILF("tmux would not start kcache-top: %s", out);
        return;
    }
    pane[0] = 0;
    for (i = 0; i < 100 && !total; i++) { /* the first frame with the totals in it */
        kt_sleep_ms(100);
        run(pane, sizeof pane, "tmux -L %s capture-pane -p -t kt", sock);
        total = strstr(pane, "Total ");
        if (total && !strstr(total, "ratio")) total = NULL; /* drawn halfway */
    }
    run(out, sizeof out, "tmux -L %s kill-server", sock);
    KT_CHECK_MSG(total != NULL, "kcache-top showed no totals: %s", pane);
    if (!total) return;
    eol = strchr(total, '\n');
    snprintf(out, sizeof out, "%.*s", eol ? (int)(eol - total) : 300, total);
    KT_CHECK_MSG(strncmp(out, "Total hits 2 (mem 0, disk 0, layer 2)  ", 39) == 0 && !strstr(out, "remote"),
                 "kcache-top's header, 2 layer hits and no remote: %s", out);
    KT_CHECK_MSG(!strstr(pane, "\nRemote "), "kcache-top shows a Remote line with no remote tier: %s", pane);
}

static void layer_top(void) {
    char src[400], out[16384];
    kcache_config cfg;
    kcache *kc = NULL;
    char dir[400];
    const char *line;
    int rc;
    if (access(g_top, X_OK) != 0) { KT_FAILF("%s is not an executable (make build/kcache-top)", g_top); return; }
    path_of(src, sizeof src, "t_src");
    KT_CHECK(fill("t_src", "top", 1, 3, 1, 800));
    kt_config(&cfg, dir, sizeof dir, g_root, "t_local");
    cfg.publish = 1;
    cfg.layers = src;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    KT_CHECK(get_one(kc, "top", 1, 1, 800) == 1 && get_one(kc, "top", 2, 1, 800) == 1);
    rc = run(out, sizeof out, "%s -b -n 1 '%s'", g_top, dir); /* while this process has its cache open */
    line = strstr(out, "\nremote ");
    KT_CHECK_MSG(rc == 0 && line && strstr(line, " hits_layer=2 "), "kcache-top's line for the tiers below: %s", out);
    KT_CHECK_MSG(strstr(out, "hit-layer") != NULL, "no hit-layer event in kcache-top's snapshot: %s", out);
    line = strstr(out, "\ntotals ");
    KT_CHECK_MSG(line && strncmp(line, "\ntotals     hits=2 ", 19) == 0, "totals: %s", out);
    top_header(dir);
    kcache_close(kc);
}

/* ---- layer_lookups ---------------------------------------------------------------------------- */

/* How often the layers were asked: each look at a corrupt layer entry says so in the debug log. */
static int log_count(const char *needle) {
    const char *p = g_log;
    int n = 0;
    pthread_mutex_lock(&g_log_mu);
    while ((p = strstr(p, needle)) != NULL) { n++; p += strlen(needle); }
    pthread_mutex_unlock(&g_log_mu);
    return n;
}
static int lk_build(void *user, void **out, size_t *out_size) {
    unsigned id = *(unsigned *)user;
    *out = KCACHE_MALLOC(900);
    kt_payload((unsigned char *)*out, 900, pid_of(id, 2));
    *out_size = 900;
    return 0;
}
/* kcache_explain of (unit, id) starts with want and leaves every counter as it was: kcache_stats
   and the stats file kcache-top reads. */
static void explain_unchanged(kcache *kc, const char *unit, unsigned id, const char *want) {
    kcache_stats a, b;
    uint64_t ctr[KCACHE__PUB_COUNTERS];
    char why[1024];
    int i;
    kcache_get_stats(kc, &a);
    for (i = 0; i < KCACHE__PUB_COUNTERS; i++) ctr[i] = kc->pub.ctr ? kcache__pub_ld(&kc->pub.ctr[i]) : 0;
    explain_one(kc, unit, id, why, sizeof why);
    kcache_get_stats(kc, &b);
    KT_CHECK_MSG(strncmp(why, want, strlen(want)) == 0, "explain of %s %u: %s (want %s...)", unit, id, why, want);
    KT_CHECK_MSG(memcmp(&a, &b, sizeof a) == 0, "explain of %s %u changed kcache_stats", unit, id);
    for (i = 0; kc->pub.ctr && i < KCACHE__PUB_COUNTERS; i++)
        KT_CHECK_MSG(kcache__pub_ld(&kc->pub.ctr[i]) == ctr[i], "explain of %s %u changed counter %d of the stats file", unit, id, i);
}

static void layer_lookups(void) {
    char layer[400], p[500], dir[400];
    const char *corrupt = "is corrupt; left there";
    kcache_config cfg;
    kcache_stats st;
    kcache_key k;
    kcache *kc = NULL;
    const void *d = NULL;
    size_t n = 0;
    unsigned id = 3;
    int asks;
    path_of(layer, sizeof layer, "lk_layer");
    KT_CHECK(fill("lk_layer", "lk", 1, 3, 1, 900)); /* ids 2 and 3 damaged there */
    entry_path("lk_layer", "lk", 2, p, sizeof p);
    KT_CHECK(flip_byte(p, -1));
    entry_path("lk_layer", "lk", 3, p, sizeof p);
    KT_CHECK(flip_byte(p, -1));
    kt_config(&cfg, dir, sizeof dir, g_root, "lk_local");
    cfg.layers = layer;
    cfg.publish = 1; /* the stats file too */
    cfg.debug = 1;
    cfg.log = log_cb;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    if (!kc) return;
    KT_CHECK_MSG(kc->pub.ctr != NULL, "no stats file to compare");
    /* explain changes no counter: a layer hit, a corrupt layer entry */
    explain_unchanged(kc, "lk", 1, "hit: layer ");
    explain_unchanged(kc, "lk", 2, "miss: rejected");
    /* a cold kcache_get asks the layer once */
    log_clear();
    KT_CHECK(get_one(kc, "lk", 2, 1, 900) == 0);
    KT_CHECK_MSG((asks = log_count(corrupt)) == 1, "a cold kcache_get looked at the layer %d times (want 1)", asks);
    /* so does a cold kcache_get_or_build, before it builds */
    log_clear();
    kt_key(&k, "lk", id);
    KT_CHECK(kcache_get_or_build(kc, &k, lk_build, &id, &d, &n) == KCACHE_OK && kt_payload_ok(d, n, 900, pid_of(id, 2)));
    if (d) kcache_release(kc, d);
    kcache_key_free(&k);
    KT_CHECK_MSG((asks = log_count(corrupt)) == 1, "a cold kcache_get_or_build looked at the layer %d times (want 1)", asks);
    kcache_get_stats(kc, &st);
    KT_CHECK(st.rejects == 2 && st.misses == 2 && st.builds == 1 && st.hits_layer == 0);
    KT_CHECK(get_one(kc, "lk", 1, 1, 900) == 1); /* the hit explain saw */
    kcache_close(kc);
}

/* ---- layer_threads ---------------------------------------------------------------------------- */

static void layer_threads(void) {
    char a[400], b[400], spec[820];
    kcache_config cfg;
    kcache_stats st;
    kcache *kc = NULL;
    char dir[400];
    path_of(a, sizeof a, "th_a");
    path_of(b, sizeof b, "th_b");
    KT_CHECK(fill("th_a", "u", 1, 10, 1, 4000) && fill("th_b", "u", 11, 20, 1, 4000));
    snprintf(spec, sizeof spec, "%s:%s", a, b);
    kt_config(&cfg, dir, sizeof dir, g_root, "th_local");
    cfg.layers = spec;
    cfg.max_size = 24 << 10; /* copies evict each other */
    cfg.mem_entries = 2;
    KT_CHECK(kcache_open(&kc, &cfg) == KCACHE_OK);
    hammer_all(kc, 4, 100);
    kcache_get_stats(kc, &st);
    KT_CHECK(st.hits_mem + st.hits_disk + st.hits_layer == 1200 && st.misses == 0 && st.hits_layer >= 20);
    kcache_close(kc);
}

#define RUN_ROOT(fn) KT_RUN_RAN(fn, g_ran)

int main(int argc, char **argv) {
    const char *v;
    struct passwd *pw;
    if (argc > 1) g_inspect = argv[1];
    if (argc > 2) g_top = argv[2];
    setvbuf(stdout, NULL, _IOLBF, 0);
    {
        static const char *const vars[] = {"KCACHE_DIR", "KCACHE_LAYERS", "KCACHE_LAYERS_COPY", "KCACHE_REMOTE", "KCACHE_DEBUG", "KCACHE_ENABLE",
                                           "KCACHE_PERSISTENT", "KCACHE_MAX_SIZE", "KCACHE_COMPRESS", "KCACHE_SHARED_GROUP", "KCACHE_STAMP", NULL};
        int i;
        for (i = 0; vars[i]; i++) unsetenv(vars[i]);
    }
    if ((v = getenv("KT_OTHER")) && (pw = getpwnam(v))) { g_other = pw->pw_uid; g_other_gid = pw->pw_gid; }
    if (!kt_mktemp(g_root, sizeof g_root, "test-layers")) { printf("FAIL setup: mkdtemp\n"); return 1; }
    chmod(g_root, 0755); /* the second user reaches its directory in it */
    KT_RUN(layer_hit);
    KT_RUN(layer_validation);
    KT_RUN(layer_never_written);
    KT_RUN(layer_refusals);
    RUN_ROOT(layer_owners);
    KT_RUN(layer_order);
    KT_RUN(layer_remote);
    KT_RUN(make_layer_cmd);
    KT_RUN(layer_top);
    KT_RUN(layer_threads);
    KT_RUN(layer_lookups);
    if (!kt_failures_total) kt_rm_tree(g_root);
    else printf("# stores kept in %s\n", g_root);
    KT_EXIT();
}

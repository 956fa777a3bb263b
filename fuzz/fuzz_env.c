/* fuzz_env.c - libFuzzer target for kcache's environment: every variable kcache reads, set from
 * the input, then configuration, open, put, get, close and the host tuple (KCACHE_SHARED_GROUP
 * too: a group this process is not in never gets a store).
 *
 *   clang -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I. \
 *         -o build/fuzz_env fuzz/fuzz_env.c -lpthread
 *   build/fuzz_env -max_total_time=600 build/fuzz-work/env fuzz/corpus/env
 *
 * Input: one flag byte, then one value per variable in the order of env_names below, separated
 * by '\n' (a value starting with \001, or one past the end of the input, leaves the variable
 * unset; an empty one sets it to ""; a NUL ends a value). Flags: 1 opens with a NULL config
 * (kcache reads the environment itself, debug lines go to stderr), 2 opens a second time and
 * reads the entry back from the store, 4 makes XDG_CACHE_HOME and HOME relative paths, which
 * kcache must ignore.
 *
 * The paths stay in this process's temp tree: KCACHE_DIR, XDG_CACHE_HOME and HOME become
 * ROOT/t/<value>, '/', "." and ".." kept except a ".." that would climb out of ROOT/t (it becomes
 * "."); nothing there is a symlink, so a path that does not climb out lexically stays in. After
 * each input ROOT must hold only t/ and the stderr capture (nothing written beside the tree) and
 * ROOT/t is emptied. A relative path is <unique name>/<value> with the same rule, and the working
 * directory must not gain that name.
 *
 * Properties, against kcache.h's documentation (the ENVIRONMENT block and kcache__parse_size's
 * grammar), checked by a parser written here:
 *   - kcache_config_init: each field is the variable's value when it is valid, else the
 *     documented default; it writes nothing and notes each bad value (cfg.env_bad); kcache_open
 *     says one "using the default" line per bad value when debugging (KCACHE_DEBUG's own bad
 *     value always), none otherwise: on stderr without a log callback, through it (and nothing
 *     on stderr) with one; a NULL-config open configures the same way.
 *     (A capacity over 65536 entries is checked as configured but opened as 65536: see
 *     MEM_ENTRIES_OPEN.)
 *   - kcache_open never fails and, when it has a store, it is the directory the documentation
 *     names (KCACHE_DIR, else $XDG_CACHE_HOME/kcache when absolute, else $HOME/.cache/kcache when
 *     absolute); a plain path (short names of letters, digits, '.', '_' and '-', no "..") always
 *     gets its store.
 *   - a get after a put hits with the bytes put (a miss when KCACHE_ENABLE=0, and when the put
 *     failed with the entry over KCACHE_MEM_SIZE, a hard cap); after a reopen a
 *     hit returns the same bytes, and must happen when the store took the put (limit 0 or at
 *     least 1 MiB).
 *   - kcache_key_host's fields are the overrides (KCACHE_CPU_NAME when not empty, cut to 63
 *     bytes; KCACHE_CPU_FEATURES when set, even empty) else the detected values, and
 *     kcache_key_host_from gives the same digest.
 * libFuzzer keeps its own output on a copy of stderr and points fd 2 at /dev/null
 * (-close_fd_mask=2, and -timeout=30, are added to a command line that has none); kcache's lines
 * go to a capture file while it runs. */
#define KCACHE_IMPLEMENTATION
#include "kcache.h"

#include <grp.h>
#include <limits.h>
#include "fuzz_tmp.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

enum {
    V_DEBUG, V_ENABLE, V_PERSISTENT, V_TRACE, V_FSYNC, V_STATS, V_DIR, V_MAX_SIZE, V_MEM_SIZE, V_MEM_ENTRIES,
    V_BUILD_WAIT, V_WRITE, V_STAMP, V_XDG, V_HOME, V_CPU_NAME, V_CPU_FEATURES, V_SHARED, V_N
};
/* Every variable kcache.h reads (grep getenv; POCL_KERNEL_CACHE is read by the OpenCL layer only). */
static const char *const env_names[V_N] = {
    "KCACHE_DEBUG", "KCACHE_ENABLE", "KCACHE_PERSISTENT", "KCACHE_TRACE", "KCACHE_FSYNC", "KCACHE_STATS",
    "KCACHE_DIR", "KCACHE_MAX_SIZE", "KCACHE_MEM_SIZE", "KCACHE_MEM_ENTRIES", "KCACHE_BUILD_WAIT", "KCACHE_WRITE",
    "KCACHE_STAMP", "XDG_CACHE_HOME", "HOME", "KCACHE_CPU_NAME", "KCACHE_CPU_FEATURES", "KCACHE_SHARED_GROUP"};

static char g_root[512];      /* ROOT: private, so a listing of it sees only this process's files */
static char g_tree[600];      /* ROOT/t: where every path points */
static char g_rel[64];        /* the unique first name of a relative path */
static char g_log[600];       /* ROOT/log: stderr while kcache runs */
static int g_log_fd = -1;
static char g_os_arch[64], g_cpu_name[64];
static char *g_cpu_features;  /* the detected host, once */
static unsigned long g_sink_lines, g_sink_bad;

/* ---- the temp tree ---- */

static void at_exit_clean(void)
{
    empty_dir(g_root);
    rmdir(g_root);
}

static void init_once(void)
{
    const char *t;
    int i;
    if (g_log_fd >= 0) return;
    t = getenv("TMPDIR");
    if (!t || t[0] != '/' || strlen(t) >= 400) t = "/tmp";
    sweep_stale(t, "kcache-fuzz-env-");
    for (i = 0; i < V_N; i++) unsetenv(env_names[i]);
    /* the host as detected, before any override */
    kcache__host_os_arch(g_os_arch, sizeof g_os_arch);
    kcache__host_cpu_name(g_cpu_name, sizeof g_cpu_name);
    g_cpu_features = (char *)malloc(KCACHE__HOST_FEATURES_MAX);
    CHECK(g_cpu_features != NULL);
    kcache__host_cpu_features(g_cpu_features, KCACHE__HOST_FEATURES_MAX);
    snprintf(g_root, sizeof g_root, "%s/kcache-fuzz-env-%u-XXXXXX", t, (unsigned)getpid());
    CHECK(mkdtemp(g_root) != NULL);
    snprintf(g_tree, sizeof g_tree, "%s/t", g_root);
    snprintf(g_log, sizeof g_log, "%s/log", g_root);
    snprintf(g_rel, sizeof g_rel, "kcache-fuzz-env-rel-%u", (unsigned)getpid());
    CHECK(mkdir(g_tree, 0700) == 0);
    g_log_fd = open(g_log, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(g_log_fd >= 0);
    atexit(at_exit_clean);
}

/* ---- stderr capture ---- */

static int g_saved_err = -1;
static void capture_begin(void)
{
    CHECK(ftruncate(g_log_fd, 0) == 0 && lseek(g_log_fd, 0, SEEK_SET) == 0);
    fflush(stderr);
    g_saved_err = dup(2);
    CHECK(g_saved_err >= 0 && dup2(g_log_fd, 2) == 2);
}
/* Ends the capture; returns how many lines kcache wrote saying a bad value fell back to the default. */
static unsigned capture_end(void)
{
    static char buf[1 << 16];
    ssize_t n;
    unsigned count = 0;
    char *p, *e, *nl;
    fflush(stderr);
    CHECK(dup2(g_saved_err, 2) == 2);
    close(g_saved_err);
    n = pread(g_log_fd, buf, sizeof buf - 1, 0);
    CHECK(n >= 0 && (size_t)n < sizeof buf - 1);
    buf[n] = 0;
    for (p = buf, e = buf + n; p < e; p = nl + 1) {
        static const char tail[] = "; using the default";
        size_t len;
        nl = memchr(p, '\n', (size_t)(e - p));
        if (!nl) nl = e;
        len = (size_t)(nl - p);
        if (len >= sizeof tail - 1 && memcmp(nl - (sizeof tail - 1), tail, sizeof tail - 1) == 0) count++;
    }
    return count;
}

static void log_sink(void *user, const char *line)
{
    (void)user;
    CHECK(line != NULL && strlen(line) < 1024);
    g_sink_lines++;
    if (strlen(line) > 19 && strcmp(line + strlen(line) - 19, "; using the default") == 0) g_sink_bad++;
}

/* ---- the documented grammar, parsed here ---- */

static int doc_bool(const char *s, int *out)
{
    if (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "true") || !strcmp(s, "on")) { *out = 1; return 1; }
    if (!strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "false") || !strcmp(s, "off")) { *out = 0; return 1; }
    return 0;
}
/* Digits with an optional K, M, G or T (powers of 1024; either case), then optionally "i" after a
   suffix and a B (either case); nothing else, and the value fits in 64 bits. */
static int doc_size(const char *s, uint64_t *out)
{
    uint64_t v = 0, mul = 1;
    size_t i = 0;
    int shift = 0;
    while (s[i] >= '0' && s[i] <= '9') {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > UINT64_MAX / 10 || v * 10 > UINT64_MAX - d) return 0;
        v = v * 10 + d;
        i++;
    }
    if (i == 0) return 0;
    switch (s[i] | 0x20) {
    case 'k': shift = 10; break;
    case 'm': shift = 20; break;
    case 'g': shift = 30; break;
    case 't': shift = 40; break;
    default: break;
    }
    if (shift) {
        i++;
        if (s[i] == 'i') i++;
    }
    if (s[i] == 'B' || s[i] == 'b') i++;
    if (s[i]) return 0;
    mul = (uint64_t)1 << shift;
    if (v > UINT64_MAX / mul) return 0;
    *out = v * mul;
    return 1;
}

/* What kcache_config_init must make of the environment, and how many bad values it must report. */
static void expect_config(const char *const *val, kcache_config *x, unsigned *bad_lines, unsigned *all_bad)
{
    unsigned bad = 0, debug_bad = 0;
    uint64_t n;
    int b;
    memset(x, 0, sizeof *x);
    x->max_size = (uint64_t)1 << 30;   /* KCACHE_MAX_SIZE default 1G */
    x->mem_entries = 1024;             /* KCACHE_MEM_ENTRIES default 1024 */
    x->mem_size = (uint64_t)256 << 20; /* KCACHE_MEM_SIZE default 256M */
    x->enable = 1;
    x->persistent = 1;
    x->publish = 1;
    x->build_wait_ms = 300 * 1000;     /* KCACHE_BUILD_WAIT default 300 s */
    x->write_policy = KCACHE_WRITE_THROUGH;
    x->stamp = KCACHE_STAMP_HYBRID;
#define SET(v) (val[v] && val[v][0])
    if (SET(V_DEBUG)) { if (doc_bool(val[V_DEBUG], &b)) x->debug = b; else debug_bad = 1; }
    if (SET(V_ENABLE)) { if (doc_bool(val[V_ENABLE], &b)) x->enable = b; else bad++; }
    if (SET(V_PERSISTENT)) { if (doc_bool(val[V_PERSISTENT], &b)) x->persistent = b; else bad++; }
    if (SET(V_TRACE)) { if (doc_bool(val[V_TRACE], &b)) x->trace = b; else bad++; }
    if (SET(V_FSYNC)) { if (doc_bool(val[V_FSYNC], &b)) x->fsync = b; else bad++; }
    if (SET(V_STATS)) { if (doc_bool(val[V_STATS], &b)) x->publish = b; else bad++; }
    if (SET(V_DIR)) x->dir = val[V_DIR];
    if (SET(V_SHARED)) x->shared_group = val[V_SHARED];
    if (SET(V_MAX_SIZE)) { if (doc_size(val[V_MAX_SIZE], &n)) x->max_size = n; else bad++; }
    if (SET(V_MEM_SIZE)) { if (doc_size(val[V_MEM_SIZE], &n)) x->mem_size = n; else bad++; }
    if (SET(V_MEM_ENTRIES)) {
        if (doc_size(val[V_MEM_ENTRIES], &n) && n >= 1 && n <= ((uint64_t)1 << 24)) x->mem_entries = (uint32_t)n;
        else bad++;
    }
    if (SET(V_BUILD_WAIT)) {
        if (doc_size(val[V_BUILD_WAIT], &n) && n <= 86400) x->build_wait_ms = (uint32_t)n * 1000;
        else bad++;
    }
    if (SET(V_WRITE)) {
        if (!strcmp(val[V_WRITE], "through")) x->write_policy = KCACHE_WRITE_THROUGH;
        else if (!strcmp(val[V_WRITE], "evict")) x->write_policy = KCACHE_WRITE_EVICT;
        else bad++;
    }
    if (SET(V_STAMP)) {
        if (!strcmp(val[V_STAMP], "hybrid")) x->stamp = KCACHE_STAMP_HYBRID;
        else if (!strcmp(val[V_STAMP], "mtime")) x->stamp = KCACHE_STAMP_MTIME;
        else if (!strcmp(val[V_STAMP], "content")) x->stamp = KCACHE_STAMP_CONTENT;
        else bad++;
    }
    *bad_lines = debug_bad + (x->debug ? bad : 0);
    *all_bad = debug_bad + bad;
}

static void check_config(const kcache_config *c, const kcache_config *x)
{
    CHECK(c->max_size == x->max_size && c->mem_entries == x->mem_entries && c->mem_size == x->mem_size);
    CHECK(c->enable == x->enable && c->persistent == x->persistent && c->debug == x->debug && c->trace == x->trace);
    CHECK(c->fsync == x->fsync && c->publish == x->publish && c->write_policy == x->write_policy && c->stamp == x->stamp);
    CHECK(c->build_wait_ms == x->build_wait_ms);
}

/* Whether KCACHE_SHARED_GROUP (set) names a group this process is in, as the documentation has it:
   a group's name, or its number (1 to 9 digits). Unset: the store is the caller's alone. */
static int shared_ok(const char *g)
{
    size_t digits;
    gid_t gid, list[256];
    int n, i;
    if (!g || !g[0]) return 1;
    digits = strspn(g, "0123456789");
    if (digits && digits <= 9 && g[digits] == 0) gid = (gid_t)strtoul(g, NULL, 10);
    else {
        struct group *gr = getgrnam(g);
        if (!gr) return 0;
        gid = gr->gr_gid;
    }
    if (gid == getegid()) return 1;
    n = getgroups(256, list);
    for (i = 0; i < n; i++)
        if (list[i] == gid) return 1;
    return 0;
}

/* Whether a group's store (KCACHE_SHARED_GROUP) can be at p: a directory already there that is not
   setgid is refused (kcache does not turn a private directory into a shared one); none is made. */
static int shared_store_ok(const char *p)
{
    struct stat sb;
    return stat(p, &sb) != 0 || (S_ISDIR(sb.st_mode) && (sb.st_mode & S_ISGID));
}

/* The store directory the documentation names, or NULL for memory only. */
static const char *expect_dir(const char *const *val, const kcache_config *x, char *buf, size_t cap)
{
    int n;
    if (!x->enable || !x->persistent) return NULL;
    if (SET(V_DIR)) return strlen(val[V_DIR]) < 4096 ? val[V_DIR] : NULL;
    if (val[V_XDG] && val[V_XDG][0] == '/') n = snprintf(buf, cap, "%s/kcache", val[V_XDG]);
    else if (val[V_HOME] && val[V_HOME][0] == '/') n = snprintf(buf, cap, "%s/.cache/kcache", val[V_HOME]);
    else return NULL;
    return n > 0 && (size_t)n < cap && (size_t)n < 4096 ? buf : NULL;
}

/* A path every filesystem takes: short names of letters, digits, '.', '_' and '-', and no ".."
   (with one, a store path can name a directory where kcache's own files go: a/lock/.. ). */
static int plain_path(const char *p)
{
    size_t comp = 0;
    if (strlen(p) > 1024 || strstr(p, "/../") || (strlen(p) >= 3 && strcmp(p + strlen(p) - 3, "/..") == 0)) return 0;
    for (; *p; p++) {
        if (*p == '/') { comp = 0; continue; }
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
              *p == '-'))
            return 0;
        if (++comp > 64) return 0;
    }
    return 1;
}

/* base + "/" + the value, each ".." that would climb above base made "." (see the top). */
static char *confine(const char *base, const char *v, size_t n)
{
    size_t bl = strlen(base), o, i = 0;
    long depth = 0;
    char *out = (char *)malloc(bl + 1 + 2 * n + 1);
    CHECK(out != NULL);
    memcpy(out, base, bl);
    o = bl;
    out[o++] = '/';
    while (i <= n) {
        size_t j = i;
        while (j < n && v[j] != '/') j++;
        if (j - i == 2 && v[i] == '.' && v[i + 1] == '.') {
            if (depth > 0) { depth--; memcpy(out + o, "..", 2); o += 2; }
            else out[o++] = '.';
        } else {
            if (!(j - i == 0 || (j - i == 1 && v[i] == '.'))) depth++;
            memcpy(out + o, v + i, j - i);
            o += j - i;
        }
        if (j < n) out[o++] = '/';
        i = j + 1;
    }
    out[o] = 0;
    return out;
}

/* ---- the host tuple ---- */

static kcache_hash128 host_digest(const char *name, const char *features)
{
    kcache_key k;
    kcache_hash128 d;
    CHECK(kcache_key_init(&k, "envfuzz") == KCACHE_OK);
    CHECK(kcache_key_str(&k, "host.os_arch", g_os_arch) == KCACHE_OK);
    CHECK(kcache_key_str(&k, "host.cpu_name", name) == KCACHE_OK);
    CHECK(kcache_key_str(&k, "host.cpu_features", features) == KCACHE_OK);
    d = kcache_key_digest(&k);
    kcache_key_free(&k);
    return d;
}

static void check_host(const char *const *val, const kcache *kc)
{
    char name[64];
    char *feat = (char *)malloc(KCACHE__HOST_FEATURES_MAX);
    kcache_key k;
    kcache_hash128 want, got;
    CHECK(feat != NULL);
    snprintf(name, sizeof name, "%s", val[V_CPU_NAME] && val[V_CPU_NAME][0] ? val[V_CPU_NAME] : g_cpu_name);
    snprintf(feat, KCACHE__HOST_FEATURES_MAX, "%s", val[V_CPU_FEATURES] ? val[V_CPU_FEATURES] : g_cpu_features);
    want = host_digest(name, feat);
    CHECK(kcache_key_init(&k, "envfuzz") == KCACHE_OK);
    CHECK(kcache_key_host(&k) == KCACHE_OK);
    got = kcache_key_digest(&k);
    CHECK(got.lo == want.lo && got.hi == want.hi);
    kcache_key_free(&k);
    CHECK(kcache_key_init(&k, "envfuzz") == KCACHE_OK);
    CHECK(kcache_key_host_from(&k, kc) == KCACHE_OK);
    got = kcache_key_digest(&k);
    CHECK(got.lo == want.lo && got.hi == want.hi);
    kcache_key_free(&k);
    free(feat);
}

/* ---- one input ---- */

/* Only t/ and the capture file in ROOT, and the working directory without the relative name. */
static void check_nothing_outside(void)
{
    DIR *dp = opendir(g_root);
    struct dirent *de;
    struct stat sb;
    CHECK(dp != NULL);
    while ((de = readdir(dp)) != NULL)
        CHECK(!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, "t") || !strcmp(de->d_name, "log"));
    closedir(dp);
    if (lstat(g_rel, &sb) == 0) { /* kcache used a relative XDG_CACHE_HOME or HOME: clean up, then fail */
        rm_tree_at(AT_FDCWD, g_rel);
        CHECK(0);
    }
}

/* The memory LRU's buckets are sized by KCACHE_MEM_ENTRIES and zeroed at open: 256 MB for 16M
   entries, a second an input. Configuration is checked with the value as it is; the caches open
   with this many at most. */
#define MEM_ENTRIES_OPEN 65536u

static unsigned bits(uint32_t v)
{
    unsigned n = 0;
    for (; v; v &= v - 1) n++;
    return n;
}

static kcache *open_checked(int null_cfg, kcache_config *x, unsigned bad_lines, unsigned all_bad, const char *want_dir, int plain)
{
    kcache_config cfg;
    kcache *kc = NULL;
    kcache_status s;
    if (!null_cfg || x->mem_entries > MEM_ENTRIES_OPEN) {
        capture_begin();
        kcache_config_init(&cfg);
        CHECK(capture_end() == 0); /* said by kcache_open, through the log */
        CHECK(bits(cfg.env_bad) == all_bad);
        check_config(&cfg, x);
        CHECK((cfg.dir == NULL) == (x->dir == NULL) && (!cfg.dir || strcmp(cfg.dir, x->dir) == 0));
        CHECK((cfg.shared_group == NULL) == (x->shared_group == NULL) && (!cfg.shared_group || strcmp(cfg.shared_group, x->shared_group) == 0));
        CHECK(cfg.lock_timeout_ms > 0 && cfg.log == NULL);
        if (x->mem_entries > MEM_ENTRIES_OPEN) {
            CHECK(setenv(env_names[V_MEM_ENTRIES], "65536", 1) == 0);
            x->mem_entries = cfg.mem_entries = MEM_ENTRIES_OPEN;
        }
    }
    if (null_cfg) {
        capture_begin();
        s = kcache_open(&kc, NULL);
        CHECK(capture_end() == bad_lines); /* its debug lines never end that way */
    } else {
        cfg.log = log_sink;
        g_sink_bad = 0;
        capture_begin();
        s = kcache_open(&kc, &cfg);
        CHECK(capture_end() == 0); /* with a log callback, nothing on stderr */
        CHECK(g_sink_bad == bad_lines);
    }
    CHECK(s == KCACHE_OK && kc != NULL);
    check_config(&kc->cfg, x);
    if (kcache_dir(kc)) {
        CHECK(want_dir && strcmp(kcache_dir(kc), want_dir) == 0);
    } else {
        CHECK(!want_dir || !plain);
    }
    return kc;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* kcache writes bad values and debug lines to stderr: libFuzzer keeps its own output on a
       copy of stderr and closes it (unless the command line already chose) */
    static char *args[512];
    static char mask[] = "-close_fd_mask=2", timeout[] = "-timeout=30";
    int i, n = 0, have_mask = 0, have_timeout = 0;
    for (i = 0; i < *argc; i++) {
        if (strncmp((*argv)[i], "-close_fd_mask=", 15) == 0) have_mask = 1;
        if (strncmp((*argv)[i], "-timeout=", 9) == 0) have_timeout = 1;
    }
    if (*argc + 3 > (int)(sizeof args / sizeof args[0])) return 0;
    for (i = 0; i < *argc; i++) args[n++] = (*argv)[i];
    if (!have_mask) args[n++] = mask;
    if (!have_timeout) args[n++] = timeout; /* a hung input is a finding, not a stalled run */
    args[n] = NULL;
    *argc = n;
    *argv = args;
    return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    const char *val[V_N];
    char *own[V_N];
    char dirbuf[4200];
    const char *want_dir;
    kcache_config x;
    unsigned bad_lines, all_bad, flags;
    size_t pos = 1, i;
    int v, plain;
    kcache *kc;
    kcache_key k;
    unsigned char payload[64];
    size_t plen;
    const void *got;
    size_t got_n;
    kcache_status put_s;

    if (size < 1 || size > 16384) return 0;
    init_once();
    flags = data[0];
    memset(own, 0, sizeof own);
    for (v = 0; v < V_N; v++) {
        const unsigned char *p = data + pos, *nl;
        size_t n;
        val[v] = NULL;
        if (pos > size) continue;
        nl = (const unsigned char *)memchr(p, '\n', size - pos);
        n = nl ? (size_t)(nl - p) : size - pos;
        pos += n + 1;
        if (n && p[0] == 1) continue; /* unset */
        if (memchr(p, 0, n)) n = (size_t)((const unsigned char *)memchr(p, 0, n) - p); /* values end at a NUL */
        if (n && (v == V_DIR || v == V_XDG || v == V_HOME)) {
            if ((flags & 4) && v != V_DIR && p[0] != '/') {
                char base[600];
                snprintf(base, sizeof base, "%s", g_rel);
                own[v] = confine(base, (const char *)p, n);
            } else {
                own[v] = confine(g_tree, (const char *)p, n);
            }
        } else {
            own[v] = (char *)malloc(n + 1);
            CHECK(own[v] != NULL);
            memcpy(own[v], p, n);
            own[v][n] = 0;
        }
        val[v] = own[v];
    }
    for (v = 0; v < V_N; v++) {
        if (val[v]) CHECK(setenv(env_names[v], val[v], 1) == 0);
        else CHECK(unsetenv(env_names[v]) == 0);
    }

    expect_config(val, &x, &bad_lines, &all_bad);
    want_dir = expect_dir(val, &x, dirbuf, sizeof dirbuf);

    plain = want_dir && plain_path(want_dir) && shared_ok(x.shared_group) &&
            (!x.shared_group || !x.shared_group[0] || shared_store_ok(want_dir));
    kc = open_checked((int)(flags & 1), &x, bad_lines, all_bad, want_dir, plain);
    if (!shared_ok(x.shared_group)) CHECK(kcache_dir(kc) == NULL); /* a group it is not in: never a store */
    check_host(val, kc);

    /* put, then get: the same bytes (a miss when caching is off) */
    plen = size < sizeof payload ? size : sizeof payload;
    memcpy(payload, data, plen);
    CHECK(kcache_key_init(&k, "envfuzz") == KCACHE_OK);
    CHECK(kcache_key_str(&k, "source", "__kernel void k(void) {}") == KCACHE_OK);
    CHECK(kcache_key_host(&k) == KCACHE_OK);
    capture_begin();
    put_s = kcache_put(kc, &k, payload, plen);
    v = kcache_get(kc, &k, &got, &got_n) == KCACHE_OK;
    (void)capture_end();
    if (x.enable) {
        /* KCACHE_MEM_SIZE is a hard cap: an entry over it that the store did not take (none, or
           refused: an error status) is kept nowhere. The entry's memory is its payload, its key
           record and bookkeeping: well under 64 KiB more for this key. */
        int may_miss = put_s != KCACHE_OK && x.mem_size && x.mem_size < (uint64_t)plen + 65536;
        CHECK(v || may_miss);
        if (v) {
            CHECK(got_n == plen && memcmp(got, payload, plen) == 0);
            kcache_release(kc, got);
        }
    } else {
        CHECK(!v && put_s == KCACHE_EDISABLED);
    }
    {
        kcache_stats st;
        kcache_get_stats(kc, &st);
        CHECK(st.puts == (x.enable ? 1u : 0u) && st.hits_mem + st.hits_disk == (v ? 1u : 0u));
    }
    want_dir = kcache_dir(kc) ? want_dir : NULL; /* the store it got, if any */
    capture_begin();
    kcache_close(kc);
    (void)capture_end();

    /* again: the entry comes back from the store */
    if (flags & 2) {
        int stored = want_dir && put_s == KCACHE_OK && (x.max_size == 0 || x.max_size >= ((uint64_t)1 << 20));
        kc = open_checked((int)(flags & 1), &x, bad_lines, all_bad, want_dir, want_dir != NULL);
        capture_begin();
        v = kcache_get(kc, &k, &got, &got_n) == KCACHE_OK;
        (void)capture_end();
        if (v) {
            CHECK(got_n == plen && memcmp(got, payload, plen) == 0);
            kcache_release(kc, got);
        }
        if (stored && kcache_dir(kc)) CHECK(v);
        capture_begin();
        kcache_close(kc);
        (void)capture_end();
    }
    kcache_key_free(&k);

    check_nothing_outside();
    empty_dir(g_tree);
    for (i = 0; i < V_N; i++) free(own[i]);
    return 0;
}
